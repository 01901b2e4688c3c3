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
