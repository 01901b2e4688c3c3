//! `check` (golden-file regression) and `validate` (invariants), end to end.

use crate::support::{cmd, path_str, root, run, stderr, stdout};

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            copy_dir(&p, &to.join(p.file_name().unwrap()));
        } else {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

#[test]
fn the_projects_own_golden_cases_pass() {
    let o = run(&["check", "testdata/check"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).ends_with("4 case(s), 0 differ\n"), "{}", stdout(&o));
}

#[test]
fn a_difference_is_a_unified_diff_and_exit_1_and_bless_fixes_it() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&root().join("testdata/check"), dir.path());
    let case = dir.path().join("fallback-applied");
    let expected = std::fs::read_to_string(case.join("reanchor.md")).unwrap();
    std::fs::write(case.join("reanchor.md"), expected.replace("- src/range.rs\n", "- src/other.rs\n")).unwrap();
    std::fs::remove_file(case.join("summary.md")).unwrap();
    std::fs::write(dir.path().join("reanchor-caps/reanchor.md.orig"), "x").unwrap();
    std::fs::copy(case.join("decision.json"), dir.path().join("conversation-manual-checkpoint/decision.json")).unwrap();
    let o = run(&["check", path_str(dir.path())]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    let d = dir.path().display();
    // Headers as `git diff` writes them, with paths a CI log can link.
    assert!(
        out.contains(&format!("--- a/{d}/fallback-applied/reanchor.md\n+++ b/{d}/fallback-applied/reanchor.md\n@@ ")),
        "{out}"
    );
    assert!(out.contains("\n-- src/other.rs\n") && out.contains("\n+- src/range.rs\n"), "{out}");
    assert!(out.contains("fallback-applied/summary.md: missing expected file"), "{out}");
    assert!(out.contains(&format!("+++ b/{d}/conversation-manual-checkpoint/decision.json\n")), "{out}");
    assert!(!out.contains("\x1b["), "no colour when stdout is not a terminal");
    // How to accept it, as a command to copy.
    assert!(
        out.ends_with(&format!(
            "4 case(s), 2 differ\nto review them as NAME.new files, run: rivumi-compact check --pending {d}\n\
             to accept the actual outputs as expected, run: rivumi-compact check --bless {d}\n"
        )),
        "{out}"
    );
    let o = run(&["check", path_str(dir.path()), "--bless"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("fallback-applied/reanchor.md: blessed (changed)"), "{}", stdout(&o));
    assert!(stdout(&o).contains("fallback-applied/summary.md: blessed (new)"), "{}", stdout(&o));
    let o = run(&["check", path_str(dir.path())]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert_eq!(std::fs::read_to_string(case.join("reanchor.md")).unwrap(), expected);
}

#[test]
fn check_for_ci_colour_json_subsets_and_args_files() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&root().join("testdata/check"), dir.path());
    let case = dir.path().join("fallback-applied");
    let expected = std::fs::read_to_string(case.join("reanchor.md")).unwrap();
    std::fs::write(case.join("reanchor.md"), expected.replace("- src/range.rs\n", "- src/other.rs\n")).unwrap();
    let d = path_str(dir.path());

    // --color always colours a diff going into a log; never and NO_COLOR (under auto) do not.
    let colored = stdout(&run(&["check", d, "--color", "always"]));
    assert!(
        colored.contains("\x1b[31m-- src/other.rs\x1b[0m") && colored.contains("\x1b[32m+- src/range.rs"),
        "{colored}"
    );
    assert!(!stdout(&run(&["check", d, "--color=never"])).contains("\x1b["));
    let o = cmd().args(["check", d, "--color", "auto"]).env("NO_COLOR", "1").output().unwrap();
    assert!(!stdout(&o).contains("\x1b["));

    // A subset by name or glob; a pattern naming no case is a usage error.
    let o = run(&["check", d, "reanchor-*"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).ends_with("1 case(s), 0 differ\n"), "{}", stdout(&o));
    let o = run(&["check", d, "fallback-applied", "reanchor-caps"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("2 case(s), 1 differ\n"), "{}", stdout(&o));
    assert!(stdout(&o).contains(&format!("check --bless {d} fallback-applied reanchor-caps\n")), "{}", stdout(&o));
    let o = run(&["check", d, "no-such-case"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no case below") && stderr(&o).contains("`no-such-case`"), "{}", stderr(&o));

    // --json: one document with every case, its status and the diff.
    let o = run(&["check", d, "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    assert_eq!((v["total"].as_u64(), v["differ"].as_u64(), v["errors"].as_u64()), (Some(4), Some(1), Some(0)));
    let fa = v["cases"].as_array().unwrap().iter().find(|c| c["name"] == "fallback-applied").unwrap();
    assert_eq!(fa["status"], "differ");
    assert_eq!(fa["files"][0]["file"], "reanchor.md");
    assert_eq!(fa["files"][0]["status"], "changed");
    assert!(fa["files"][0]["diff"].as_str().unwrap().contains("\n+- src/range.rs\n"), "{fa}");
    assert!(v["cases"].as_array().unwrap().iter().filter(|c| c["status"] == "ok").count() == 3);

    // An args file: a flag and its value on one line; an error names the file and line.
    let caps = dir.path().join("reanchor-caps");
    let args = std::fs::read_to_string(caps.join("args")).unwrap_or_default();
    std::fs::write(caps.join("args"), format!("# one flag per line\n{args}\n--threshold 0.85\n")).unwrap();
    let o = run(&["check", d, "reanchor-caps"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    std::fs::write(caps.join("args"), format!("{args}\n--threshold 0.85\n--max-total-tokens lots\n")).unwrap();
    let o = run(&["check", d, "reanchor-caps"]);
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    let line = args.lines().filter(|l| !l.trim().is_empty()).count() + 3;
    let want = format!("reanchor-caps: error: {}:{line}:1: invalid value 'lots'", caps.join("args").display());
    assert!(stdout(&o).contains(&want), "{want}\n{}", stdout(&o));
}

#[test]
fn an_extra_expected_file_is_a_difference() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&root().join("testdata/check/fallback-applied"), dir.path());
    std::fs::write(
        dir.path().join("input.jsonl"),
        "{\"type\":\"message\",\"id\":\"m\",\"turn\":\"t\",\"role\":\"user\",\"content\":\"x\"}\n",
    )
    .unwrap();
    let o = run(&["check", path_str(dir.path())]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("summary.md: extra expected file"), "{}", stdout(&o));
}

#[test]
fn an_unreadable_case_is_exit_3_even_with_differences() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&root().join("testdata/check"), dir.path());
    std::fs::write(dir.path().join("reanchor-caps/input.jsonl"), "{not json\n").unwrap();
    std::fs::write(dir.path().join("fallback-applied/decision.json"), "{}\n").unwrap();
    let o = run(&["check", path_str(dir.path())]);
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    assert!(stdout(&o).contains("reanchor-caps: error: input.jsonl:1:2:"), "{}", stdout(&o));
}

#[test]
fn validate_reports_each_invariant_with_file_and_line() {
    let o = run(&["validate", "testdata/validate", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    let found: Vec<(String, u64, String)> = v
        .iter()
        .map(|x| {
            let file = x["file"].as_str().unwrap().rsplit('/').next().unwrap().to_string();
            (file, x["line"].as_u64().unwrap(), x["code"].as_str().unwrap().to_string())
        })
        .collect();
    for (file, line, code) in [
        ("bad-lines.jsonl", 2, "bad_line"),
        ("bad-lines.jsonl", 3, "bad_line"),
        ("bad-lines.jsonl", 4, "bad_line"),
        ("session-not-first.jsonl", 4, "bad_line"),
        ("duplicate-id.jsonl", 2, "duplicate_id"),
        ("result-without-call.jsonl", 2, "result_without_call"),
        ("result-of-summarized-call.jsonl", 3, "result_of_summarized_call"),
        ("multiple-fallbacks.jsonl", 3, "multiple_fallbacks"),
        ("multiple-reminders.jsonl", 3, "multiple_reminders"),
        ("checkpoint-turns-overlap.jsonl", 2, "checkpoint_turns_overlap"),
        ("checkpoint-occupancy-grows.jsonl", 2, "checkpoint_occupancy_grows"),
        ("compaction-never-completed.jsonl", 2, "compaction_never_completed"),
    ] {
        assert!(
            found.contains(&(file.to_string(), line, code.to_string())),
            "{file}:{line} {code} not reported: {found:?}"
        );
    }
    assert_eq!(found.len(), 12, "{found:?}");
    assert!(!found.iter().any(|(f, _, _)| f == "valid.jsonl"), "a pending request with nothing after it is fine");
}

#[test]
fn validate_is_clean_on_the_tools_own_outputs_and_3_on_unreadable_input() {
    let o = run(&["validate", "testdata/validate/valid.jsonl", "testdata/check/fallback-applied/transcript.jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert_eq!(stdout(&o), "0 violation(s) in 2 transcript(s)\n");
    let o = cmd().args(["validate", "testdata/validate/duplicate-id.jsonl", "missing.jsonl"]).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "3 wins over 1");
}
