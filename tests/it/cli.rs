//! The smaller commands and flags: `config` provenance, `decide --json`, `--tokenizer`,
//! `--dry-run`, `--emit`.

use crate::support::{path_str, run, stderr, stdout, temp_file};

const CASE: &str = "testdata/cases/fallback-applied/input.jsonl";

#[test]
fn config_shows_each_layer() {
    let (dir, cfg) = temp_file(
        "cfg.json",
        br#"{"threshold":0.9,"reanchor":{"max_entries":5},"workspace":{"allowed_paths":["lib/**"]}}"#,
    );
    let o = run(&[
        "config",
        CASE,
        "--config",
        path_str(&cfg),
        "--threshold",
        "0.95",
        "--allow",
        "a/*",
        "--allow",
        "b/*",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let layer = |k: &str| (v[k]["value"].clone(), v[k]["from"].as_str().unwrap().to_string());
    assert_eq!(layer("runtime.kind"), (serde_json::json!("agent-runner"), "default".into()));
    assert_eq!(layer("task.max_total_tokens"), (serde_json::json!(20000), "session".into()));
    assert_eq!(layer("reanchor.max_entries"), (serde_json::json!(5), "config file".into()));
    assert_eq!(layer("threshold"), (serde_json::json!(0.95), "flag".into()));
    // Repeated flags build one list, which replaces the file's and the session's.
    assert_eq!(layer("workspace.allowed_paths"), (serde_json::json!(["a/*", "b/*"]), "flag".into()));
    let text = stdout(&run(&["config", CASE]));
    assert!(
        text.contains("task.max_total_tokens")
            && text.lines().any(|l| l.starts_with("verification") && l.ends_with("session")),
        "{text}"
    );
    drop(dir);
}

#[test]
fn tokenizers_count_real_tokens() {
    let case = "testdata/cases/usage-estimated/input.jsonl";
    let used = |tok: &str| -> u64 {
        let o = run(&["decide", case, "--json", "--tokenizer", tok]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["estimated"], true);
        v["used"].as_u64().unwrap()
    };
    let (h, o200k, cl100k) = (used("heuristic"), used("o200k"), used("cl100k"));
    assert_eq!(h, 587, "the bytes/4 estimate is pinned by the golden case");
    assert_ne!(o200k, h);
    assert!(o200k > 100 && o200k < 2000 && cl100k > 100 && cl100k < 2000, "{o200k} {cl100k}");
    assert_eq!(o200k, used("o200k"), "deterministic");
}

#[test]
fn dry_run_prints_the_decision_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("hook-ran");
    let o = run(&[
        "run",
        CASE,
        "--dry-run",
        "--out-dir",
        path_str(dir.path()),
        "--pre-compact-hook",
        &format!("touch {}", marker.display()),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("the decision on stdout");
    assert_eq!(v["action"], "history_fallback");
    assert!(!marker.exists(), "no hooks in a dry run");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no files in a dry run");
    let o = run(&["run", CASE, "--dry-run"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["action"], "history_fallback");
    let o = run(&["run", CASE, "--dry-run", "--emit", "summary"]);
    assert!(stdout(&o).starts_with("[rivumi] History summary fallback."));
}

#[test]
fn every_emit_choice() {
    for (emit, start) in [
        ("transcript", "{\"type\":\"session\""),
        ("decision", "{\n  \"path\""),
        ("journal", "{\"seq\":0"),
        ("summary", "[rivumi] History"),
        ("reanchor", "[rivumi] Re-anchor"),
    ] {
        let o = run(&["run", CASE, "--emit", emit]);
        assert!(o.status.success());
        assert!(stdout(&o).starts_with(start), "{emit}: {}", stdout(&o));
        assert!(stderr(&o).contains("-> history_fallback"), "one line for people on stderr");
    }
}

#[test]
fn decide_groups_long_transcripts_into_forty_rows() {
    let mut text = String::from("{\"type\":\"session\",\"id\":\"s\",\"task\":{\"max_total_tokens\":100000}}\n");
    for k in 1..=100 {
        text.push_str(&format!(
            "{{\"type\":\"message\",\"id\":\"u{k}\",\"turn\":\"t{k}\",\"role\":\"user\",\"content\":\"go\"}}\n"
        ));
        text.push_str(&format!("{{\"type\":\"message\",\"id\":\"a{k}\",\"turn\":\"t{k}\",\"role\":\"assistant\",\"content\":\"ok\",\"usage\":{{\"input_tokens\":1000}}}}\n"));
    }
    let (_d, path) = temp_file("long.jsonl", text.as_bytes());
    let out = stdout(&run(&["decide", path_str(&path)]));
    let rows: Vec<&str> = out.lines().skip_while(|l| !l.starts_with("per turn")).skip(1).collect();
    assert_eq!(rows.len(), 40, "{out}");
    // Bucket labels are ordinals, never cut.
    assert!(rows[0].trim_start().starts_with("1..2 ") || rows[0].trim_start().starts_with("1..3 "), "{}", rows[0]);
    assert!(rows[39].trim_start().starts_with("98..100 ") && rows[39].ends_with(" 100000  >= trigger"), "{}", rows[39]);
    // `--json` has every turn, unbucketed.
    let d: serde_json::Value = serde_json::from_slice(&run(&["decide", "--json", path_str(&path)]).stdout).unwrap();
    let turns = d["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 100);
    assert_eq!((turns[99]["turn"].as_u64(), turns[99]["id"].as_str()), (Some(100), Some("t100")));
    assert_eq!((turns[84]["used"].as_u64(), turns[84]["over"].as_bool()), (Some(85_000), Some(true)));
    assert_eq!((turns[83]["used"].as_u64(), turns[83]["over"].as_bool()), (Some(84_000), Some(false)));
}

#[test]
fn emit_with_out_dir_prints_and_still_writes_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(&["run", CASE, "--out-dir", path_str(dir.path()), "--emit", "reanchor"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let written = std::fs::read_to_string(dir.path().join("input/reanchor.md")).unwrap();
    assert_eq!(stdout(&o), written);
    assert!(dir.path().join("input/transcript.jsonl").exists());
}

#[test]
fn dry_run_over_several_inputs_prints_json_lines_naming_each_input() {
    let below = "testdata/cases/below-threshold/input.jsonl";
    let o = run(&["run", below, CASE, "--dry-run", "--jobs", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<serde_json::Value> =
        stdout(&o).lines().map(|l| serde_json::from_str(l).expect("one JSON object per line")).collect();
    assert_eq!(lines.len(), 2, "{}", stdout(&o));
    assert_eq!((lines[0]["input"].as_str(), lines[0]["action"].as_str()), (Some(below), Some("none")));
    assert_eq!((lines[1]["input"].as_str(), lines[1]["action"].as_str()), (Some(CASE), Some("history_fallback")));
}

#[test]
fn an_empty_emit_says_why_on_stderr() {
    let below = "testdata/cases/below-threshold/input.jsonl";
    for emit in ["summary", "reanchor"] {
        let o = run(&["run", below, "--emit", emit]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o), "", "{emit}");
        let what = if emit == "summary" { "summary" } else { "re-anchor block" };
        assert!(stderr(&o).contains(&format!("no {what} was injected (none), nothing to print")), "{}", stderr(&o));
        // Something printed: no such note.
        let o = run(&["run", CASE, "--emit", emit]);
        assert!(!stderr(&o).contains("nothing to print"), "{}", stderr(&o));
    }
}

#[test]
fn only_run_takes_the_flags_that_run_commands() {
    let help = |cmd: &str| stdout(&run(&[cmd, "--help"]));
    for flag in ["--pre-compact-hook", "--post-compact-hook", "--hook-timeout", "--summarizer", "--manual"] {
        assert!(help("run").contains(flag), "run lacks {flag}");
        for cmd in ["decide", "stats", "replay", "config"] {
            assert!(!help(cmd).contains(flag), "{cmd} lists {flag}");
        }
    }
    let o = run(&["decide", CASE, "--manual"]);
    assert_eq!(o.status.code(), Some(2), "a flag that does not act there is a usage error");
}

#[test]
fn usage_errors_read_like_every_other_error() {
    let o = run(&["run", CASE, "--bogus"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).starts_with("rivumi-compact: error: unexpected argument '--bogus' found\n"), "{}", stderr(&o));
    let o = run(&["decide"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).starts_with("rivumi-compact: error: the following required arguments"), "{}", stderr(&o));
    // Colour as asked, even for clap's errors and on a pipe; never by default on a pipe.
    let o = run(&["run", CASE, "--bogus", "--color", "always"]);
    assert!(stderr(&o).starts_with("rivumi-compact: \x1b[1;31merror:\x1b[0m unexpected argument"), "{}", stderr(&o));
    let o = run(&["run", "no-such-file.jsonl", "--color=always"]);
    assert!(stderr(&o).starts_with("rivumi-compact: \x1b[1;31merror:\x1b[0m no-such-file.jsonl"), "{}", stderr(&o));
    assert!(!stderr(&run(&["run", "no-such-file.jsonl"])).contains('\x1b'));
    // Help and version are not errors.
    let o = run(&["--version"]);
    assert_eq!((o.status.code(), stdout(&o).starts_with("rivumi-compact ")), (Some(0), true));
}
