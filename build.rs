//! Marks the real-transcript tests ignored (with a reason) when `../shared/realdata`
//! is absent, as in a user's clone: they then show as `ignored`, never as `ok`.
//! `.ci/run` refuses to run without the folder, so in CI they always run. The same for
//! the test that holds docs/spec.md equal to `../shared/SPEC.md`.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(realdata_absent)");
    println!("cargo::rustc-check-cfg=cfg(shared_spec_absent)");
    println!("cargo::rerun-if-changed=../shared/SPEC.md");
    // The parent too: its time changes when the folder appears or goes.
    println!("cargo::rerun-if-changed=../shared");
    println!("cargo::rerun-if-changed=../shared/realdata");
    if !std::path::Path::new("../shared/realdata").is_dir() {
        println!("cargo::rustc-cfg=realdata_absent");
    }
    if !std::path::Path::new("../shared/SPEC.md").is_file() {
        println!("cargo::rustc-cfg=shared_spec_absent");
    }
}
