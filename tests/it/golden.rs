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

/// No snapshot outlives what it pins: a golden case that was removed, or an output a
/// case no longer writes, would leave a file no test reads (insta does not fail on it).
#[test]
fn every_snapshot_is_read_by_a_test() {
    let sources: String = std::fs::read_dir(root().join("tests/it"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .collect();
    let mut unread = Vec::new();
    for e in std::fs::read_dir(root().join("snapshots")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".snap") else {
            unread.push(format!("{name}: not a snapshot (a pending .snap.new is reviewed, then renamed or removed)"));
            continue;
        };
        match stem.split_once('@') {
            Some((file, case)) => {
                let case = case.strip_suffix("__input.jsonl").unwrap_or(case);
                let listing = root().join(format!("snapshots/outputs@{case}__input.jsonl.snap"));
                let listed = std::fs::read_to_string(&listing).unwrap_or_default();
                let body = listed.split("---").last().unwrap_or("");
                if !root().join("testdata/cases").join(case).join("input.jsonl").exists() {
                    unread.push(format!("{name}: no golden case {case}"));
                } else if file != "outputs" && !body.lines().any(|l| l == file) {
                    unread.push(format!("{name}: case {case} does not write {file}"));
                }
            }
            None if sources.contains(&format!("\"{stem}\"")) => {}
            // `realdata.rs` names one snapshot per file of ../shared/realdata/<agent>/.
            None => match realdata_file(stem) {
                Some(true) => {}
                Some(false) => unread.push(format!("{name}: no file of ../shared/realdata gives {stem}")),
                None => eprintln!("{name}: skipped: ../shared/realdata is absent, so its snapshots cannot be matched"),
            },
        }
    }
    assert!(unread.is_empty(), "snapshots no test reads:\n{}", unread.join("\n"));
}

/// Whether `realdata-<agent>-<file stem>` names a file of ../shared/realdata (`None`
/// when that folder is absent: a user's clone).
fn realdata_file(stem: &str) -> Option<bool> {
    let data = root().join("../shared/realdata");
    if !data.is_dir() {
        return None;
    }
    let Some(rest) = stem.strip_prefix("realdata-") else { return Some(false) };
    Some(["claude-code", "codex", "openhands", "swe-agent"].iter().any(|sub| {
        rest.strip_prefix(sub).and_then(|r| r.strip_prefix('-')).is_some_and(|file| {
            std::fs::read_dir(data.join(sub)).into_iter().flatten().flatten().any(|e| {
                let p = e.path();
                p.file_stem().is_some_and(|f| f.to_string_lossy() == file)
            })
        })
    }))
}
