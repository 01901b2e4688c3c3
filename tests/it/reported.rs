//! No swallowed errors (issue #11): each failure that used to pass unnoticed is
//! reported with its exit code; and the rules that exist once agree where they meet.

use crate::support::{cmd, path_str, root, run, stderr, stdout, temp_file};

const CASE: &str = "testdata/cases/fallback-applied/input.jsonl";

fn case_folder(dir: &std::path::Path) -> std::path::PathBuf {
    let case = dir.join("cases/one");
    std::fs::create_dir_all(&case).unwrap();
    std::fs::copy(root().join(CASE), case.join("input.jsonl")).unwrap();
    case
}

#[test]
fn an_unreadable_args_file_in_a_check_case_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let case = case_folder(dir.path());
    std::fs::create_dir(case.join("args")).unwrap(); // exists, cannot be read as text
    let o = run(&["check", path_str(&dir.path().join("cases"))]);
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("one: error:") && stdout(&o).contains("args: a folder: a case file must be a regular file"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn an_unreadable_expected_file_in_a_check_case_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let case = case_folder(dir.path());
    std::fs::create_dir(case.join("decision.json")).unwrap();
    let o = run(&["check", path_str(&dir.path().join("cases"))]);
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    assert!(stdout(&o).contains("decision.json: a folder: a case file must be a regular file"), "{}", stdout(&o));
}

#[test]
fn an_invalid_glob_is_an_error_naming_its_key() {
    let (_d, cfg) = temp_file("c.json", br#"{"workspace":{"allowed_paths":["src/[a"]}}"#);
    let o = run(&["decide", CASE, "--config", path_str(&cfg)]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("`workspace.allowed_paths`: invalid glob \"src/[a\""), "{}", stderr(&o));
    let (_d, cfg) = temp_file("c.json", br#"{"reanchor":{"write_tools":["{edit"]}}"#);
    let o = run(&["decide", CASE, "--config", path_str(&cfg)]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("`reanchor.write_tools`: invalid glob"), "{}", stderr(&o));
    let o = run(&["decide", CASE, "--allow", "src/[a"]);
    assert_eq!(o.status.code(), Some(2), "a flag is a usage error: {}", stderr(&o));
    assert!(stderr(&o).contains("workspace.allowed_paths: invalid glob"), "{}", stderr(&o));
}

#[test]
fn a_refused_checkpoint_in_dataset_mode_fails_its_line() {
    // Tiny early turns: the checkpoint's summary outweighs what it removes, so
    // occupancy would grow and the checkpoint is refused.
    let line = r#"{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"},{"role":"assistant","content":"d"},{"role":"user","content":"e"},{"role":"assistant","content":"f"}]}"#;
    let input = format!("{line}\n");
    let args =
        ["run", "--input-format", "openai", "--runtime", "conversation", "--context-window", "1000", "--manual", "-"];
    let o = cmd().args(args).write_stdin(input.clone()).output().unwrap();
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("-:1: the local checkpoint was refused: occupancy would grow"), "{}", stderr(&o));
    assert_eq!(stdout(&o), input, "the line is echoed unchanged");
}

#[test]
fn invalid_utf8_in_stats_over_a_dataset_is_reported_not_replaced() {
    let good = std::fs::read(root().join("testdata/dataset/conversations.jsonl")).unwrap();
    let first = good.split(|b| *b == b'\n').next().unwrap().to_vec();
    let mut text = first.clone();
    text.push(b'\n');
    text.extend_from_slice(b"{\"messages\":[{\"role\":\"user\",\"content\":\"caf\xE9\"}]}\n");
    text.extend_from_slice(&first);
    text.push(b'\n');
    let (_d, path) = temp_file("ds.jsonl", &text);
    let o = run(&["stats", "--json", path_str(&path)]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("ds.jsonl:2:43: invalid UTF-8"), "{}", stderr(&o));
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((s["transcripts"].as_u64(), s["failed"].as_u64()), (Some(2), Some(1)));
}

#[test]
fn the_chart_and_the_decision_agree_after_a_checkpoint() {
    let case = "testdata/cases/conversation-after-checkpoint/input.jsonl";
    let d: serde_json::Value = serde_json::from_slice(&run(&["decide", "--json", case]).stdout).unwrap();
    let text = stdout(&run(&["decide", case]));
    let last_row = text.lines().rfind(|l| l.contains(" >= trigger") || l.ends_with(char::is_numeric)).expect("a row");
    let figure: u64 = last_row.split_whitespace().rfind(|w| w.parse::<u64>().is_ok()).unwrap().parse().unwrap();
    assert_eq!(Some(figure), d["used"].as_u64(), "{text}");
    let rows = d["turns"].as_array().expect("decide --json has the per-turn rows");
    assert_eq!(rows.last().unwrap()["used"], d["used"], "{d}");
}

#[test]
fn the_readme_lists_the_exit_codes_the_tool_has() {
    let readme = std::fs::read_to_string(root().join("docs/reference.md")).unwrap();
    for (code, meaning) in rivumi_compact::error::Exit::TABLE {
        assert!(readme.contains(&format!("| {code} | {meaning} |")), "README lacks exit code {code}: {meaning}");
    }
    let help = stdout(&run(&["--help"]));
    assert!(help.contains("Exit codes:") && help.contains("128+N"), "{help}");
}

/// A transcript whose first part an earlier compaction took out: `old` items of 8,000
/// bytes before the `compaction_completed` event, `new` items of 800 bytes after it.
fn compacted_before(old: usize, new: usize) -> (String, u64) {
    let mut lines = Vec::new();
    let item = |i: usize, bytes: usize| {
        let role = if i.is_multiple_of(2) { "user" } else { "assistant" };
        serde_json::json!({"type": "message", "id": format!("m{i}"), "turn": format!("t{}", i / 2), "role": role,
            "content": format!("{i:04} {}", "x".repeat(bytes - 5))})
    };
    for i in 0..old {
        lines.push(item(i, 8000));
    }
    lines.push(serde_json::json!({"type": "event", "name": "compaction_requested", "id": "compaction-1"}));
    lines.push(serde_json::json!({"type": "event", "name": "compaction_completed", "id": "compaction-1"}));
    for i in old..old + new {
        lines.push(item(i, 800));
    }
    (crate::support::jsonl(&lines), (new * 200) as u64)
}

#[test]
fn a_size_to_fit_measures_the_context_not_what_an_earlier_compaction_took_out() {
    // 20 items of 2,000 tokens are out of the context; the 12 after the compaction come
    // to 2,400 tokens.
    let (text, context) = compacted_before(20, 12);
    let (_dir, input) = temp_file("t.jsonl", text.as_bytes());
    let input = path_str(&input);
    let fit = |target: &str| {
        let args = ["run", input, "--runtime", "agent-runner", "--target-tokens", target];
        let o = run(&[&args[..], &["--emit", "decision"]].concat());
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let journal = stdout(&run(&[&args[..], &["--emit", "journal"]].concat()));
        (d, journal, stdout(&run(&args)))
    };
    // The context is within the target: nothing to do, whatever the whole file comes to.
    let (d, _, out) = fit("5000");
    assert_eq!(d["action"], "none", "{d}");
    assert_eq!(out, text, "a context within the target is left as it is");
    // Over the target: the figures are the context's, and the target is reached.
    let (d, journal, out) = fit("1500");
    assert_eq!(d["action"], "history_fallback", "{d}");
    assert_eq!(d["fit"]["before"], context, "{d}");
    let after = d["fit"]["after"].as_u64().unwrap();
    assert!(after <= 1500 && d["fit"]["reached"] == true, "{d}");
    let applied = journal.lines().find(|l| l.contains("history_fallback_applied")).expect(&journal);
    let applied: serde_json::Value = serde_json::from_str(applied).unwrap();
    assert_eq!(applied["tokens_before"], context, "{applied}");
    // What the compaction took out is still there, byte for byte.
    assert!(out.starts_with(text.split("compaction_completed").next().unwrap()));
    // A target the context cannot reach says what the context comes to.
    let o = run(&["decide", input, "--runtime", "agent-runner", "--target-tokens", "10"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let why = stdout(&o);
    assert!(why.contains(&format!("the context after the latest compaction comes to {context} tokens")), "{why}");
}
