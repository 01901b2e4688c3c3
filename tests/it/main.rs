//! The one integration-test binary: runs the real executable with a clean environment.

mod accounting;
mod batch;
mod built;
mod check;
mod cli;
mod compressed;
mod current;
mod dataset;
mod docs;
mod errors;
mod fidelity;
mod golden;
mod hooks;
mod hostile;
mod hostile_surfaces;
mod mapped;
mod names;
mod properties;
mod readme;
mod realdata;
mod replay;
mod reported;
mod resume;
mod robust;
mod support;

/// A property's number of cases: `default`, or `PROPTEST_CASES` when it is set (proptest's
/// own variable, which an explicit count would otherwise ignore), to run them at a scale
/// CI has no time for: `PROPTEST_CASES=20000 cargo test --test it properties`.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(default)
}
