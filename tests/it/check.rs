//! `check` (golden-file regression) and `validate` (invariants), end to end.

use crate::support::{cmd, path_str, root, run, stderr, stdout};

pub(crate) fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
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
    assert!(stdout(&o).ends_with("9 case(s), 0 differ\n"), "{}", stdout(&o));
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
            "9 case(s), 2 differ\nto review them as NAME.new files, run: rivumi-compact check --pending {d}\n\
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
    assert_eq!((v["total"].as_u64(), v["differ"].as_u64(), v["errors"].as_u64()), (Some(9), Some(1), Some(0)));
    let fa = v["cases"].as_array().unwrap().iter().find(|c| c["name"] == "fallback-applied").unwrap();
    assert_eq!(fa["status"], "differ");
    assert_eq!(fa["files"][0]["file"], "reanchor.md");
    assert_eq!(fa["files"][0]["status"], "changed");
    assert!(fa["files"][0]["diff"].as_str().unwrap().contains("\n+- src/range.rs\n"), "{fa}");
    assert!(v["cases"].as_array().unwrap().iter().filter(|c| c["status"] == "ok").count() == 8);

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

/// A copy of the project's check cases in a temporary folder.
fn cases() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&root().join("testdata/check"), dir.path());
    dir
}

#[test]
fn every_case_kind_runs_and_a_folder_without_input_is_an_error() {
    let dir = cases();
    let d = path_str(dir.path());
    let o = run(&["check", d, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let kind = |name: &str| {
        v["cases"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap()["kind"].as_str().unwrap().to_string()
    };
    assert_eq!(kind("dataset-rows"), "dataset");
    assert_eq!(kind("replay-claude-code"), "replay");
    assert_eq!(kind("swe-agent-traj"), "transcript", "an input.traj runs");
    assert_eq!(kind("compressed-openai-output"), "transcript", "a compressed input runs");
    // A folder whose input is gone is an error naming it, never a silent skip.
    std::fs::remove_file(dir.path().join("swe-agent-traj/input.traj")).unwrap();
    let o = run(&["check", d]);
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("swe-agent-traj: error:") && stdout(&o).contains("a case folder without an input"),
        "{}",
        stdout(&o)
    );
    let o = run(&["check", d, "swe-agent-traj"]);
    assert_eq!(o.status.code(), Some(3), "naming it runs it: {}", stdout(&o));
}

#[test]
fn pending_files_are_reviewed_and_accepted_like_insta_snapshots() {
    let dir = cases();
    let d = path_str(dir.path());
    let case = dir.path().join("fallback-applied");
    let expected = std::fs::read_to_string(case.join("decision.json")).unwrap();
    std::fs::write(case.join("decision.json"), expected.replace("19455", "19000")).unwrap();
    let rows = dir.path().join("dataset-rows/output.jsonl");
    let good_rows = std::fs::read(&rows).unwrap();
    std::fs::write(&rows, b"{}\n").unwrap();
    // --pending writes NAME.new beside what differs and leaves the expected files.
    let o = run(&["check", d, "--pending"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains(&format!("to accept them, run: rivumi-compact check --accept {d}")), "{}", stdout(&o));
    assert_eq!(std::fs::read_to_string(case.join("decision.json.new")).unwrap(), expected);
    assert!(std::fs::read_to_string(case.join("decision.json")).unwrap().contains("19000"));
    // A plain check after --pending offers the .new files for review, and says --accept.
    let o = run(&["check", d]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("fallback-applied/decision.json.new: pending review"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("--pending"), "never --pending again: {}", stdout(&o));
    assert!(stdout(&o).contains(&format!("to accept them, run: rivumi-compact check --accept {d}")), "{}", stdout(&o));
    // Once the expected files are what the cases produce, a .new is stale: dropped by a
    // plain check, never offered (accepting it would install outdated outputs).
    std::fs::write(case.join("decision.json"), &expected).unwrap();
    std::fs::write(&rows, &good_rows).unwrap();
    std::fs::write(dir.path().join("dataset-rows/output.jsonl.new"), b"stale\n").unwrap();
    let o = run(&["check", d]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("fallback-applied/decision.json.new: note: removed, stale"), "{}", stdout(&o));
    assert!(!case.join("decision.json.new").exists() && !dir.path().join("dataset-rows/output.jsonl.new").exists());
    // A .new the case no longer produces is refused by --accept, which runs the case again.
    std::fs::write(case.join("decision.json"), expected.replace("19455", "19000")).unwrap();
    assert_eq!(run(&["check", d, "--pending", "fallback-applied"]).status.code(), Some(1));
    std::fs::write(case.join("decision.json.new"), expected.replace("19455", "18000")).unwrap();
    let o = run(&["check", d, "--accept", "fallback-applied"]);
    assert_ne!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("decision.json.new: stale: the case produces something else now"), "{}", stdout(&o));
    assert!(std::fs::read_to_string(case.join("decision.json")).unwrap().contains("19000"), "nothing accepted");
    std::fs::write(case.join("decision.json"), &expected).unwrap();
    assert_eq!(run(&["check", d]).status.code(), Some(0));
    // --accept CASE turns that case's pending files into expected ones; --accept-file one file.
    std::fs::write(&rows, b"{}\n").unwrap();
    std::fs::write(case.join("decision.json"), expected.replace("19455", "19000")).unwrap();
    assert_eq!(run(&["check", d, "--pending"]).status.code(), Some(1));
    let o = run(&["check", d, "--accept", "fallback-applied"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("fallback-applied/decision.json: accepted"), "{}", stdout(&o));
    assert_eq!(std::fs::read_to_string(case.join("decision.json")).unwrap(), expected);
    assert_eq!(run(&["check", d]).status.code(), Some(1), "dataset-rows still waits");
    let o = run(&["check", d, "--accept-file", path_str(&rows)]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(std::fs::read(&rows).unwrap(), good_rows);
    assert_eq!(run(&["check", d]).status.code(), Some(0));
    // A pending file is never written through a link.
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("t");
    std::fs::write(&target, "mine").unwrap();
    std::os::unix::fs::symlink(&target, case.join("decision.json.new")).unwrap();
    std::fs::write(case.join("decision.json"), expected.replace("19455", "1")).unwrap();
    let o = run(&["check", d, "--pending"]);
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine");
}

#[test]
fn a_changed_field_in_a_jsonl_line_is_marked() {
    let dir = cases();
    let d = path_str(dir.path());
    let t = dir.path().join("fallback-applied/transcript.jsonl");
    let text = std::fs::read_to_string(&t).unwrap();
    std::fs::write(&t, text.replacen("\"turn\":\"t1\"", "\"turn\":\"t0\"", 1)).unwrap();
    let out = stdout(&run(&["check", d, "fallback-applied"]));
    // Inside a changed string, only the characters that changed, in marks no JSON has.
    assert!(out.contains("-{\"type\":\"message\",\"id\":\"m1\",\"turn\":\"t⟦-0-⟧\""), "{out}");
    assert!(out.contains("+{\"type\":\"message\",\"id\":\"m1\",\"turn\":\"t⟦+1+⟧\""), "{out}");
    let colored = stdout(&run(&["check", d, "fallback-applied", "--color", "always"]));
    assert!(colored.contains("\"t\x1b[7;31m0\x1b[0m\"") && colored.contains("\"t\x1b[7;32m1\x1b[0m\""), "{colored}");
    // The JSON report holds the file and line of the first difference.
    let v: serde_json::Value = serde_json::from_slice(&run(&["check", d, "--format", "json"]).stdout).unwrap();
    let fa = v["cases"].as_array().unwrap().iter().find(|c| c["name"] == "fallback-applied").unwrap();
    assert_eq!((fa["files"][0]["file"].as_str(), fa["files"][0]["line"].as_u64()), (Some("transcript.jsonl"), Some(2)));
}

/// A path as a GitHub annotation's property holds it.
fn gh(s: &str) -> String {
    s.replace('%', "%25").replace(':', "%3A").replace(',', "%2C")
}

#[test]
fn reports_for_github_and_junit() {
    let dir = cases();
    let d = path_str(dir.path());
    let t = dir.path().join("fallback-applied/decision.json");
    let text = std::fs::read_to_string(&t).unwrap();
    std::fs::write(&t, text.replace("19455", "19000")).unwrap();
    let o = run(&["check", d, "--format", "github"]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    let want = format!(
        "::error file={}/fallback-applied/decision.json,line=4,title=rivumi-compact check::fallback-applied/decision.json differs",
        d.replace(':', "%3A").replace(',', "%2C")
    );
    assert!(out.contains(&want), "{want}\n{out}");
    // A case that cannot be read is annotated at its file and line too: a bad flag in
    // `args` at the line that holds it.
    let args = dir.path().join("swe-agent-traj/args");
    let mut text = std::fs::read_to_string(&args).unwrap();
    let line = text.lines().count() + 1;
    text.push_str("--no-such-flag\n");
    std::fs::write(&args, text).unwrap();
    let o = run(&["check", d, "--format", "github"]);
    let want = format!("::error file={},line={line},", gh(path_str(&args)));
    assert!(stdout(&o).contains(&want), "{want}\n{}", stdout(&o));
    assert!(stdout(&o).lines().filter(|l| l.starts_with("::error")).all(|l| l.contains(",line=")), "{}", stdout(&o));
    std::fs::write(&args, std::fs::read_to_string(root().join("testdata/check/swe-agent-traj/args")).unwrap()).unwrap();
    let o = run(&["check", d, "--format", "junit"]);
    let xml = stdout(&o);
    assert!(
        xml.starts_with(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"9\" failures=\"1\" errors=\"0\">"
        ),
        "{xml}"
    );
    assert_eq!(xml.matches("<testcase ").count(), 9);
    assert!(
        xml.contains("name=\"fallback-applied\"")
            && xml.contains("<failure message=\"differs: decision.json (changed)\">"),
        "{xml}"
    );
}

#[test]
fn case_files_are_regular_files_inside_the_folder_read_with_a_bound() {
    let dir = cases();
    let d = path_str(dir.path());
    let case = dir.path().join("fallback-applied");
    // An expected file, args or config that is a link to an endless device, a FIFO, a
    // folder: the case is an error, found at once (no read of /dev/zero, no block).
    let start = std::time::Instant::now();
    std::fs::remove_file(case.join("summary.md")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", case.join("summary.md")).unwrap();
    std::fs::create_dir(case.join("config.json")).unwrap();
    let caps = dir.path().join("reanchor-caps");
    assert!(std::process::Command::new("mkfifo").arg(caps.join("args")).status().unwrap().success());
    let conv = dir.path().join("conversation-manual-checkpoint");
    std::fs::write(conv.join("args"), "--config /dev/zero\n").unwrap();
    let o = run(&["check", d]);
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(out.contains("fallback-applied: error:") && out.contains("config.json: a folder"), "{out}");
    assert!(out.contains("reanchor-caps: error:") && out.contains("args: not a regular file"), "{out}");
    assert!(
        out.contains("conversation-manual-checkpoint: error:") && out.contains("a link out of the checked folder")
            || out.contains("not a regular file"),
        "{out}"
    );
    std::fs::remove_dir(case.join("config.json")).unwrap();
    let o = run(&["check", d, "fallback-applied"]);
    assert!(
        stdout(&o).contains("summary.md: a link out of the checked folder")
            || stdout(&o).contains("not a regular file"),
        "{}",
        stdout(&o)
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(20));
}

#[test]
fn an_args_comment_after_a_flag_is_a_comment_and_names_stay_inert() {
    let dir = cases();
    let d = path_str(dir.path());
    let caps = dir.path().join("reanchor-caps");
    std::fs::write(caps.join("args"), "--threshold 0.85 # the default\n").unwrap();
    assert_eq!(run(&["check", d, "reanchor-caps"]).status.code(), Some(0));
    // A case folder named like a workflow command: every line escapes it.
    let evil = dir.path().join("x\n::error file=README.md::injected");
    std::fs::rename(dir.path().join("fallback-applied"), &evil).unwrap();
    let t = evil.join("decision.json");
    let text = std::fs::read_to_string(&t).unwrap();
    std::fs::write(&t, text.replace("19455", "19000")).unwrap();
    for format in ["text", "github"] {
        let out = stdout(&run(&["check", d, "--format", format]));
        assert!(!out.lines().any(|l| l.starts_with("::error file=README.md")), "{format}: {out}");
    }
}

#[test]
fn a_case_reads_nothing_out_of_the_checked_folder_whatever_the_path() {
    let dir = cases();
    let d = path_str(dir.path());
    // Outside DIR: a valid config, and a valid case that would pass.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("config.json"), "{}\n").unwrap();
    copy_dir(&dir.path().join("fallback-applied"), &outside.path().join("stray"));
    let case = dir.path().join("fallback-applied");
    std::os::unix::fs::symlink(outside.path(), case.join("elsewhere")).unwrap();
    let absolute = outside.path().join("config.json");
    let up = format!("../../{}/config.json", outside.path().file_name().unwrap().to_str().unwrap());
    for (how, config) in
        [("absolute", path_str(&absolute)), ("through ..", &up[..]), ("through a link", "elsewhere/config.json")]
    {
        std::fs::write(case.join("args"), format!("--config {config}\n")).unwrap();
        let o = run(&["check", d, "fallback-applied"]);
        assert_eq!(o.status.code(), Some(3), "{how}: {}", stdout(&o));
        assert!(
            stdout(&o).contains("a path out of the checked folder: a case file must be inside it"),
            "{how}: {}",
            stdout(&o)
        );
    }
    // The walk does not follow the link out: it is one case that fails, and the stray
    // case behind it is neither run nor written.
    std::fs::remove_file(case.join("args")).unwrap();
    for bless in [false, true] {
        let o = if bless { run(&["check", "--bless", d]) } else { run(&["check", d]) };
        assert_eq!(o.status.code(), Some(3), "{}{}", stdout(&o), stderr(&o));
        assert!(!stdout(&o).contains("stray"), "{}", stdout(&o));
        assert!(
            stdout(&o).contains("fallback-applied/elsewhere: error:")
                && stdout(&o).contains("the case folder is a symbolic link out of the checked folder"),
            "{}",
            stdout(&o)
        );
    }
    let stray: Vec<_> = std::fs::read_dir(outside.path().join("stray")).unwrap().collect();
    assert_eq!(stray.len(), std::fs::read_dir(case.as_path()).unwrap().count() - 1, "a file was written outside DIR");
}

#[test]
fn an_output_the_run_no_longer_produces_is_reviewed_and_removed_like_the_others() {
    let dir = cases();
    let d = path_str(dir.path());
    let case = dir.path().join("fallback-applied");
    let summary = std::fs::read(case.join("summary.md")).unwrap();
    let reanchor = std::fs::read(case.join("reanchor.md")).unwrap();
    // A budget the transcript stays below: no fallback, so no summary.md or reanchor.md.
    std::fs::write(case.join("config.json"), r#"{"task":{"max_total_tokens":100000000}}"#).unwrap();
    // --pending marks the files the run no longer produces, beside the .new files.
    let o = run(&["check", d, "--pending", "fallback-applied"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("NAME.removed where the run no longer produces NAME"), "{}", stdout(&o));
    let note = std::fs::read_to_string(case.join("summary.md.removed")).unwrap();
    assert!(note.contains("no longer produces summary.md"), "{note}");
    assert!(case.join("reanchor.md.removed").exists() && case.join("decision.json.new").exists());
    assert_eq!(std::fs::read(case.join("summary.md")).unwrap(), summary, "nothing removed before review");
    // A plain check offers the removal for review and says --accept, never --bless.
    let o = run(&["check", d, "fallback-applied"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o)
            .contains("fallback-applied/summary.md.removed: pending review: the run no longer produces summary.md"),
        "{}",
        stdout(&o)
    );
    assert!(!stdout(&o).contains("--bless") && stdout(&o).contains("--accept"), "{}", stdout(&o));
    // So do the annotations: what waits for review is accepted next, not written again.
    let o = run(&["check", d, "fallback-applied", "--format", "github"]);
    let annotations = stdout(&o);
    let notes: Vec<&str> = annotations.lines().filter(|l| l.starts_with("::error")).collect();
    assert!(notes.iter().any(|l| l.contains("summary.md has a pending .removed file to review")), "{notes:?}");
    assert!(notes.len() == 5 && notes.iter().all(|l| l.contains("(rivumi-compact check --accept ")), "{notes:?}");
    // --accept-file takes the mark, and --accept the rest: the loop ends on a clean check.
    let o = run(&["check", d, "--accept-file", path_str(&case.join("summary.md.removed"))]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("summary.md: accepted (removed: the run no longer produces it)"), "{}", stdout(&o));
    assert!(!case.join("summary.md").exists() && !case.join("summary.md.removed").exists());
    let o = run(&["check", d, "--accept", "fallback-applied"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("fallback-applied/reanchor.md: accepted (removed)"), "{}", stdout(&o));
    let o = run(&["check", d, "fallback-applied"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let left: Vec<_> = std::fs::read_dir(&case).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(!left.iter().any(|f| f.to_string_lossy().ends_with(".removed") || f.to_string_lossy().ends_with(".new")));
    // A mark is stale once the case produces the file again: a plain check drops it,
    // and --accept refuses one that the case contradicts (nothing removed).
    std::fs::remove_file(case.join("config.json")).unwrap();
    std::fs::write(case.join("summary.md"), &summary).unwrap();
    std::fs::write(case.join("reanchor.md"), &reanchor).unwrap();
    std::fs::write(case.join("summary.md.removed"), "x").unwrap();
    let o = run(&["check", d, "fallback-applied"]);
    assert!(stdout(&o).contains("summary.md.removed: note: removed, stale"), "{}", stdout(&o));
    assert!(!case.join("summary.md.removed").exists());
    std::fs::write(case.join("summary.md"), b"an older summary\n").unwrap();
    std::fs::write(case.join("summary.md.removed"), "x").unwrap();
    let o = run(&["check", d, "--accept", "fallback-applied"]);
    assert_ne!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("summary.md.removed: stale: the case produces this file again"), "{}", stdout(&o));
    assert_eq!(std::fs::read(case.join("summary.md")).unwrap(), b"an older summary\n");
    // --bless removes a mark with the file it names.
    std::fs::write(case.join("config.json"), r#"{"task":{"max_total_tokens":100000000}}"#).unwrap();
    std::fs::write(case.join("reanchor.md"), "x").unwrap();
    std::fs::write(case.join("reanchor.md.removed"), "x").unwrap();
    assert_eq!(run(&["check", d, "--bless", "fallback-applied"]).status.code(), Some(0));
    assert!(!case.join("reanchor.md").exists() && !case.join("reanchor.md.removed").exists());
    // A mark is never followed through a link.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("t"), "mine").unwrap();
    std::fs::write(case.join("reanchor.md"), "x").unwrap();
    std::os::unix::fs::symlink(outside.path().join("t"), case.join("reanchor.md.removed")).unwrap();
    assert_eq!(run(&["check", d, "--pending", "fallback-applied"]).status.code(), Some(3));
    assert_eq!(std::fs::read_to_string(outside.path().join("t")).unwrap(), "mine");
}
