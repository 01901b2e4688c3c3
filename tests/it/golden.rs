//! Golden cases: every `testdata/cases/*/input.jsonl` is run with `--out-dir`, and
//! each output is one snapshot in `snapshots/`. A case folder may hold `config.json`
//! (passed as `--config`) and `args` (extra flags, read by the parser `check` reads
//! them with: one flag per line, its value on the same line or the next, `#` comments).

use crate::support::{cmd, path_str, root};
use std::path::Path;

const OUTPUTS: &[&str] = &["transcript.jsonl", "decision.json", "journal.jsonl", "summary.md", "reanchor.md"];

fn case_args(case: &Path) -> Vec<String> {
    let mut args = Vec::new();
    let config = case.join("config.json");
    if config.exists() {
        args.push("--config".to_string());
        args.push(config.to_string_lossy().into_owned());
    }
    if let Ok(extra) = std::fs::read_to_string(case.join("args")) {
        let (replay, groups) = rivumi_compact::check::args_lines(&extra);
        assert!(!replay, "{}: a golden case is no replay case", case.display());
        args.extend(groups.into_iter().flat_map(|(_, words)| words));
    }
    args
}

#[test]
fn golden_cases() {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(root().join("snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        insta::glob!("../../testdata/cases", "*/input.jsonl", |input| {
            let case = input.parent().unwrap();
            let out = tempfile::tempdir().unwrap();
            let extra = case_args(case);
            let o =
                cmd().args(["run", path_str(input), "--out-dir", path_str(out.path())]).args(&extra).output().unwrap();
            assert!(o.status.success(), "{}: {}", case.display(), String::from_utf8_lossy(&o.stderr));
            let dir = out.path().join("input");
            let present: Vec<&str> = OUTPUTS.iter().copied().filter(|f| dir.join(f).exists()).collect();
            insta::assert_snapshot!("outputs", present.join("\n"));
            for file in &present {
                let text = std::fs::read_to_string(dir.join(file)).unwrap();
                insta::assert_snapshot!(*file, text);
            }
            // Running the tool on its own output changes nothing (SPEC 4).
            let first = std::fs::read(dir.join("transcript.jsonl")).unwrap();
            let again = cmd().args(["run", path_str(&dir.join("transcript.jsonl"))]).args(&extra).output().unwrap();
            assert!(again.status.success());
            assert!(again.stdout == first, "{}: a second run changed the transcript", case.display());
        });
    });
}
