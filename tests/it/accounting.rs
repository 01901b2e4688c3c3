//! Every input record is accounted for (SPEC 1 "Accounting"): an item, or counted
//! under a named reason; a file that gives nothing is an error, never an empty success;
//! detection never settles on a format under which most records are unknown. And the
//! shapes real sessions come in: Gemini CLI sessions, Claude Code sub-agent files and
//! resumed sessions, legacy Codex rollouts, OpenHands resolver outputs and folders.

use crate::support::{cmd, path_str, root, run, stderr, stdout, temp_file};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `decide --json`'s record counts for a file.
fn records(path: &Path, extra: &[&str]) -> Value {
    let o = cmd().args(["decide", "--json", path_str(path)]).args(extra).output().unwrap();
    assert!(o.status.success(), "{}: {}", path.display(), stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["records"].clone()
}

/// `run` over a file, which must succeed: its output and the records it wrote.
fn transcript(path: &Path) -> (std::process::Output, Vec<Value>) {
    let o = run(&["run", path_str(path)]);
    assert!(o.status.success(), "{}: {}", path.display(), stderr(&o));
    let records = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (o, records)
}

/// The counts add up to the records read, and no record was taken by no rule.
fn adds_up(path: &Path, r: &Value) {
    let skipped: u64 = r["skipped"].as_object().unwrap().values().map(|n| n.as_u64().unwrap()).sum();
    let read = r["records"].as_u64().unwrap();
    assert_eq!(r["in_items"].as_u64().unwrap() + skipped, read, "{}: {r}", path.display());
    assert!(r["skipped"].get("unaccounted").is_none(), "{}: a record no rule took: {r}", path.display());
    assert!(r["items"].as_u64().unwrap() > 0, "{}: no item: {r}", path.display());
}

fn bundled_transcripts() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("testdata/cases"))
        .unwrap()
        .map(|e| e.unwrap().path().join("input.jsonl"))
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

#[test]
fn the_counts_add_up_on_every_bundled_case() {
    let cases = bundled_transcripts();
    assert!(cases.len() > 40, "{} cases", cases.len());
    for path in cases {
        let args = std::fs::read_to_string(path.with_file_name("args")).unwrap_or_default();
        let format: Vec<&str> = args
            .lines()
            .collect::<Vec<_>>()
            .windows(2)
            .find(|w| w[0] == "--input-format")
            .map_or(Vec::new(), <[&str]>::to_vec);
        adds_up(&path, &records(&path, &format));
    }
}

#[test]
#[cfg_attr(realdata_absent, ignore = "../shared/realdata is absent")]
fn the_counts_add_up_on_every_real_file() {
    let dir = root().join("../shared/realdata");
    let mut n = 0;
    for sub in std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()) {
        for file in std::fs::read_dir(&sub).unwrap().map(|e| e.unwrap().path()) {
            adds_up(&file, &records(&file, &[]));
            n += 1;
        }
    }
    assert!(n >= 11, "{n} real files");
}

#[test]
fn runs_summary_line_and_decide_name_the_counts() {
    let case = "testdata/cases/gemini-cli-session/input.jsonl";
    let o = run(&["run", case, "--dry-run"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let line = stderr(&o);
    assert!(
        line.contains(
            "; 38 records: 8 read into 12 items, 1 header, 15 bookkeeping, 2 display_only, 3 off_thread, 9 superseded"
        ),
        "{line}"
    );
    let o = run(&["decide", case]);
    assert!(stdout(&o).contains("\nrecords:     38 records: 8 read into 12 items,"), "{}", stdout(&o));
}

#[test]
fn a_file_that_gives_no_item_is_bad_input_naming_the_format_and_what_was_left_out() {
    // Claude Code bookkeeping only: read, and nothing the model was sent.
    let text = concat!(
        r#"{"type":"file-history-snapshot","messageId":"m","snapshot":{}}"#,
        "\n",
        r#"{"type":"progress","parentUuid":null,"uuid":"p1","sessionId":"s","data":{"type":"hook_progress"}}"#,
        "\n",
        r#"{"type":"queue-operation","operation":"enqueue","sessionId":"s"}"#,
        "\n"
    );
    let (_d, path) = temp_file("s.jsonl", text.as_bytes());
    for command in ["run", "decide", "stats", "replay"] {
        let o = run(&[command, path_str(&path)]);
        assert_eq!(o.status.code(), Some(3), "{command}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("s.jsonl: read as claude-code, 3 records gave no model-visible message or tool result"),
            "{command}: {e}"
        );
        assert!(e.contains("(3 left out: 3 bookkeeping)"), "{command}: {e}");
    }
    // A canonical file of events only is no transcript either; an empty file is.
    let (_d, path) = temp_file("e.jsonl", br#"{"type":"event","name":"compaction_requested","id":"compaction-1"}"#);
    let o = run(&["run", path_str(&path)]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("read as rivumi, 1 record gave no model-visible"), "{}", stderr(&o));
    let (_d, path) = temp_file("empty.jsonl", b"");
    assert_eq!(run(&["run", path_str(&path)]).status.code(), Some(0));
    // Non-empty but no record at all (SPEC: "a non-empty file"): blank lines, CRLF,
    // whitespace, a byte-order mark alone, an OpenHands document with no event. Every
    // command that reads the transcript refuses it, `validate` too (it said 0
    // violations), with what the bytes are.
    for (name, bytes) in [
        ("b.jsonl", &b"\n\n\n"[..]),
        ("b.jsonl", b"\r\n"),
        ("b.jsonl", b"  \t\n"),
        ("b.jsonl", b"\xEF\xBB\xBF"),
        ("b.json", b"[]\n"),
    ] {
        let (_d, path) = temp_file(name, bytes);
        for command in ["run", "decide", "stats", "replay", "validate"] {
            let o = run(&[command, path_str(&path)]);
            assert_eq!(o.status.code(), Some(3), "{command} {bytes:?}: {}", stderr(&o));
            let said = format!(
                "{name}: read as {}, its {} byte",
                if name == "b.json" { "openhands" } else { "rivumi" },
                bytes.len()
            );
            assert!(stderr(&o).contains(&said), "{command} {bytes:?}: {}", stderr(&o));
            assert!(stderr(&o).contains("hold no record"), "{command} {bytes:?}: {}", stderr(&o));
        }
    }
    // The same file of events only, which `validate` passed while `run` refused it.
    let (_d, path) = temp_file("e.jsonl", br#"{"type":"event","name":"compaction_requested","id":"compaction-1"}"#);
    let o = run(&["validate", path_str(&path)]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("read as rivumi, 1 record gave no model-visible"), "{}", stderr(&o));
}

#[test]
fn detection_never_settles_on_a_format_under_which_most_records_are_unknown() {
    // A Gemini CLI session whose first line looks like Claude Code's (a `sessionId`):
    // the whole file is Gemini's.
    let text = std::fs::read_to_string(root().join("testdata/cases/gemini-cli-session/input.jsonl")).unwrap();
    let first = r#"{"sessionId":"s","cwd":"/w","type":"user","uuid":"u0","parentUuid":null,"message":{"role":"user","content":"hi"}}"#;
    let (_d, path) = temp_file("s.jsonl", format!("{first}\n{}", text.split_once('\n').unwrap().1).as_bytes());
    let o = run(&["decide", "--json", path_str(&path)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["input_format"], "gemini-cli", "{v}");
    // Records of no format at all after a first record that looks like Claude Code's:
    // named at the first record Claude Code does not know.
    let (_d, path) = temp_file(
        "x.jsonl",
        format!("{first}\n{{\"kind\":\"a\"}}\n{{\"kind\":\"b\"}}\n{{\"kind\":\"c\"}}\n").as_bytes(),
    );
    let o = run(&["run", path_str(&path)]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "x.jsonl:2:1: no input format fits this file: its first records look like claude-code, but 3 of its 4 records"
        ),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("--input-format"), "{}", stderr(&o));
}

#[test]
fn a_claude_code_main_session_names_its_sub_agents_files_and_each_reads_as_its_thread() {
    let dir = tempfile::tempdir().unwrap();
    let main = dir.path().join("5e55.jsonl");
    let sub = dir.path().join("5e55/subagents");
    std::fs::create_dir_all(&sub).unwrap();
    let main_text = std::fs::read_to_string(root().join("testdata/cases/claude-code-resumed/input.jsonl")).unwrap();
    std::fs::write(&main, main_text).unwrap();
    let agent = sub.join("agent-a7f3c2d1.jsonl");
    std::fs::copy(root().join("testdata/cases/claude-code-subagent-file/input.jsonl"), &agent).unwrap();
    let o = run(&["run", path_str(&main)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "its sub-agents' threads are in 1 file(s) beside it, read apart (each is a transcript of its own): {}",
            agent.display()
        )),
        "{}",
        stderr(&o)
    );
    // The sub-agent's file: every record a sidechain, all of them its conversation.
    let r = records(&agent, &[]);
    assert_eq!(
        (r["records"].as_u64(), r["in_items"].as_u64(), r["items"].as_u64()),
        (Some(7), Some(7), Some(6)),
        "{r}"
    );
    let o = run(&["run", path_str(&agent)]);
    let calls = stdout(&o).matches("\"type\":\"tool_result\"").count();
    assert_eq!(calls, 2, "both of the sub-agent's tool calls are read: {}", stdout(&o));
}

#[test]
fn a_resumed_claude_code_session_reads_each_relogged_record_once_and_validate_names_a_real_conflict_once() {
    let case = root().join("testdata/cases/claude-code-resumed/input.jsonl");
    let r = records(&case, &[]);
    assert_eq!(r["skipped"]["superseded"], 4, "the four records logged again: {r}");
    let o = run(&["validate", path_str(&case)]);
    assert!(o.status.success(), "{}", stdout(&o));
    // The same uuid for another message: one violation, not one per form of the file.
    let text = std::fs::read_to_string(&case).unwrap();
    let mut last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    last["uuid"] = "r1".into();
    last["parentUuid"] = "r8".into();
    last["message"]["id"] = "msg_other".into();
    let (_d, path) = temp_file("c.jsonl", format!("{text}{last}\n").as_bytes());
    let o = run(&["validate", path_str(&path)]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert_eq!(stdout(&o).matches("c.jsonl:14:").count(), 1, "{}", stdout(&o));
    assert!(stdout(&o).contains("c.jsonl:14: duplicate_uuid: uuid \"r1\" was first used on line 1"), "{}", stdout(&o));
}

#[test]
fn a_legacy_codex_rollout_is_read_with_its_instructions_as_the_system_text() {
    let case = root().join("testdata/cases/codex-legacy-rollout/input.jsonl");
    let o = run(&["run", path_str(&case)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let first_item: Value = serde_json::from_str(stdout(&o).lines().nth(1).unwrap()).unwrap();
    assert_eq!(first_item["role"], "system");
    assert_eq!(first_item["content"], "You are a careful coding agent. Keep changes small.");
    assert_eq!(stdout(&o).matches("\"exit_code\":").count(), 3, "every command's exit code: {}", stdout(&o));
    assert!(stderr(&o).contains("15 records: 10 read into 10 items, 5 bookkeeping"), "{}", stderr(&o));
}

#[test]
fn a_codex_prompt_and_the_context_sent_before_it_are_one_turn() {
    let o = run(&["decide", "--json", "testdata/cases/codex-preamble/input.jsonl"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["turns"].as_array().unwrap().len(), 1, "{v}");
    let o = run(&["run", "testdata/cases/codex-preamble/input.jsonl"]);
    let turns: std::collections::BTreeSet<String> = stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok()?.get("turn")?.as_str().map(str::to_string))
        .collect();
    assert_eq!(turns.into_iter().collect::<Vec<_>>(), ["t-0001"]);
}

#[test]
fn an_openhands_resolver_output_is_a_dataset_of_runs_and_a_folder_takes_json_files() {
    let data = root().join("testdata/dataset/openhands-resolver-output.jsonl");
    let o = run(&["run", path_str(&data), "--max-total-tokens", "1200", "--verify", "python -m pytest"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let input = std::fs::read_to_string(&data).unwrap();
    assert_eq!(stdout(&o).lines().count(), input.lines().count(), "one line per run");
    let first: Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    let injected: Vec<&str> =
        first["history"].as_array().unwrap().iter().filter_map(|e| e["rivumi"].as_str()).collect();
    assert_eq!(injected, ["history_summary_fallback", "pressure_reminder", "reanchor"]);
    let reanchor = first["history"].as_array().unwrap().iter().find(|e| e["rivumi"] == "reanchor").unwrap();
    let text = reanchor["message"].as_str().unwrap();
    assert!(text.contains("Changed files (most recent first):\n- calc.py\n"), "the agent-skill edit: {text}");
    assert!(text.contains("Check status: pass (`python -m pytest`)"), "{text}");
    // Each run's task is the user's message, each action a call answered by the
    // observation after it.
    let o = run(&["decide", path_str(&data), "--line", "2", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["records"]["items"], 6, "{v}");

    // A folder of OpenHands event dumps (`*.json`) beside a configuration file.
    let dir = tempfile::tempdir().unwrap();
    for name in ["basic.json", "basic_gui_mode.json"] {
        let from = root().join("testdata/cases/openhands-view-and-error/input.jsonl");
        std::fs::copy(from, dir.path().join(name)).unwrap();
    }
    std::fs::write(dir.path().join("config.json"), b"{\"threshold\": 0.5}\n").unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = run(&["run", path_str(dir.path()), "--out-dir", path_str(out.path())]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("2 file(s): 0 compacted, 2 unchanged, 0 failed"), "{}", stderr(&o));
    assert!(out.path().join("basic/transcript.jsonl").is_file() && !out.path().join("config").exists());
}

#[test]
fn a_gemini_cli_session_reads_in_both_shapes() {
    let session = root().join("testdata/cases/gemini-cli-session/input.jsonl");
    let o = run(&["run", path_str(&session)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let items: Vec<Value> = stdout(&o).lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
    let ids: Vec<&str> = items.iter().map(|i| i["id"].as_str().unwrap()).collect();
    // The last copy of a message is read, at the place of the first; a rewound prompt
    // and the reply to it are off the thread; info and error messages are never sent.
    assert!(!ids.contains(&"u2") && !ids.contains(&"g4") && !ids.contains(&"i1") && !ids.contains(&"e1"), "{ids:?}");
    let calls = items.iter().filter_map(|i| i["tool_calls"].as_array()).flatten().count();
    let results = items.iter().filter(|i| i["type"] == "tool_result").count();
    assert_eq!((calls, results), (4, 4), "every call once, every result once: {ids:?}");
    let failed: Vec<&Value> = items.iter().filter(|i| i["exit_code"] == 1).collect();
    assert_eq!(failed.len(), 1, "the failing test run's exit code");
    let document = root().join("testdata/cases/gemini-cli-document/input.jsonl");
    let r = records(&document, &[]);
    assert_eq!((r["records"].as_u64(), r["skipped"]["display_only"].as_u64()), (Some(7), Some(1)), "{r}");
}

/// The first Codex (TypeScript, 0.1.x, spring 2025) wrote its rollout as one JSON
/// document, `{session, items}`: read as a Codex rollout, pretty-printed or on one line,
/// its instructions the system text, every item a record.
#[test]
fn a_typescript_codex_rollout_is_read_as_codex() {
    let case = root().join("testdata/cases/codex-typescript-rollout/input.jsonl");
    let o = run(&["run", path_str(&case)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let items: Vec<Value> = stdout(&o).lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        (items[0]["role"].as_str(), items[0]["content"].as_str()),
        (Some("system"), Some("Prefer small patches. Run npm test after every change."))
    );
    let calls = items.iter().filter_map(|i| i["tool_calls"].as_array()).flatten().count();
    let results: Vec<&Value> = items.iter().filter(|i| i["type"] == "tool_result").collect();
    assert_eq!((calls, results.len()), (7, 7), "every call and its output");
    let codes: Vec<i64> = results.iter().map(|r| r["exit_code"].as_i64().unwrap()).collect();
    assert_eq!(codes, [1, 0, 0, 0, 0, 0, 1], "the exit codes of the outputs' metadata");
    // 1 session + 22 items; the reasoning item is bookkeeping.
    assert!(stderr(&o).contains("23 records: 22 read into 19 items, 1 bookkeeping"), "{}", stderr(&o));
    // The same document on one line.
    let doc: Value = serde_json::from_slice(&std::fs::read(&case).unwrap()).unwrap();
    let (dir, one_line) = temp_file("rollout-2025-05-12-x.json", doc.to_string().as_bytes());
    let r = records(&one_line, &[]);
    assert_eq!((r["records"].as_u64(), r["in_items"].as_u64()), (Some(23), Some(22)), "{r}");
    let o = run(&["decide", "--json", path_str(&one_line)]);
    assert_eq!(serde_json::from_str::<Value>(&stdout(&o)).unwrap()["input_format"], "codex");
    drop(dir);
}

/// A chat saved with Gemini CLI's `/chat save` (`checkpoint-TAG.json`): the model's
/// contents, a list of its own (the versions before 0.5, whose only record of a
/// conversation it was) or under `history` (later versions, with `authType`).
#[test]
fn a_gemini_cli_saved_chat_is_read_in_both_shapes() {
    let case = root().join("testdata/cases/gemini-cli-saved-chat/input.jsonl");
    let (o, items) = transcript(&case);
    assert_eq!(items[0]["workspace"]["root"], "/home/dev/inventory", "the setup context names the folder");
    // The setup context is the agent's instructions, not the user's task.
    assert_eq!(items[1]["role"], "system");
    assert_eq!(items[3]["content"], "go test fails: Reserve lets orders take more than is in stock. Fix it.");
    // Calls without ids are answered by name, in order.
    let calls: Vec<&str> =
        items.iter().filter_map(|i| i["tool_calls"].as_array()).flatten().map(|c| c["id"].as_str().unwrap()).collect();
    let answered: Vec<&str> =
        items.iter().filter(|i| i["type"] == "tool_result").map(|r| r["call_id"].as_str().unwrap()).collect();
    assert_eq!(calls.len(), 5);
    assert_eq!(calls, answered);
    let codes: Vec<Value> =
        items.iter().filter(|i| i["type"] == "tool_result").map(|r| r["exit_code"].clone()).collect();
    assert_eq!(codes[0], 1, "the failing test run's exit code: {codes:?}");
    assert!(stderr(&o).contains("15 records: 15 read into 15 items"), "{}", stderr(&o));
    // The later shape, and a history that opens with a compression's summary.
    let contents: Value = serde_json::from_slice(&std::fs::read(&case).unwrap()).unwrap();
    let mut history = vec![
        serde_json::json!({"role": "user", "parts": [{"text": "<state_snapshot>\n<overall_goal>Fix Reserve.</overall_goal>\n</state_snapshot>"}]}),
        serde_json::json!({"role": "model", "parts": [{"text": "Got it. Thanks for the additional context!"}]}),
    ];
    history.extend(contents.as_array().unwrap()[12..].iter().cloned());
    history.push(serde_json::json!({"role": "tool", "parts": [{"text": "?"}]}));
    let saved = serde_json::json!({"history": history, "authType": "gemini-api-key"});
    let (dir, path) = temp_file("checkpoint-later.json", serde_json::to_string_pretty(&saved).unwrap().as_bytes());
    let o = run(&["run", path_str(&path)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let items: Vec<Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(items[1]["name"], "compaction_completed", "{:?}", items[1]);
    assert_eq!(items[2]["turn"], items[4]["turn"], "the summary opens no turn of its own");
    // A role the model API does not have is counted as unknown, not read.
    assert!(stderr(&o).contains("6 records: 5 read into 5 items, 1 unknown"), "{}", stderr(&o));
    drop(dir);
}

/// One OpenHands run pretty-printed (`jq . output.jsonl`): a document with its
/// `history`, read as that run (it was refused as a truncated first line).
#[test]
fn a_pretty_printed_openhands_run_is_read_as_one_run() {
    let line = std::fs::read_to_string(root().join("testdata/dataset/openhands-output.jsonl")).unwrap();
    let run_1: Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    let (dir, path) = temp_file("instance.json", serde_json::to_string_pretty(&run_1).unwrap().as_bytes());
    let r = records(&path, &[]);
    let events = run_1["history"].as_array().unwrap().len() as u64;
    assert_eq!(r["records"].as_u64(), Some(events), "{r}");
    adds_up(&path, &r);
    drop(dir);
}

/// A Gemini CLI project folder (`~/.gemini/tmp/<project>/`): its sessions under
/// `chats/` and its saved chats are transcripts; its log of the user's prompts
/// (`logs.json`) is not, and an empty list is nothing either.
#[test]
fn a_gemini_cli_project_folder_gives_its_sessions_and_saved_chats() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("chats")).unwrap();
    let copy = |case: &str, to: &str| {
        std::fs::copy(root().join(format!("testdata/cases/{case}/input.jsonl")), dir.path().join(to)).unwrap();
    };
    copy("gemini-cli-session", "chats/session-2026-12-01T10-00-4f1b2c3d.jsonl");
    copy("gemini-cli-document", "chats/session-2025-10-01T08-00-70168920.json");
    copy("gemini-cli-saved-chat", "checkpoint-fix.json");
    let log = br#"[{"sessionId":"4f1b2c3d","messageId":0,"type":"user","message":"fix it","timestamp":"2026-12-01T10:00:00.000Z"}]"#;
    std::fs::write(dir.path().join("logs.json"), log).unwrap();
    std::fs::write(dir.path().join("empty.json"), b"[]\n").unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = run(&["run", path_str(dir.path()), "--out-dir", path_str(out.path())]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("3 file(s): "), "{}", stderr(&o));
    assert!(out.path().join("checkpoint-fix/transcript.jsonl").is_file());
    // Named, the log is refused as no transcript (a file that gives nothing is an error).
    let o = run(&["run", path_str(&dir.path().join("logs.json"))]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("no input format fits this file"), "{}", stderr(&o));
}

/// Codex before 0.59 recorded a compaction as its summary alone (`compacted` with a
/// `message` and no `replacement_history`) and resumed from one user message that
/// restates the user's prompts and carries that summary: the context after it holds
/// that message (it held nothing: the summary the model sees was lost).
#[test]
fn an_old_codex_compaction_restates_the_prompts_and_its_summary() {
    use crate::support::{codex_message as said, jsonl};
    let lines = [
        serde_json::json!({"timestamp": "2025-10-20T10:00:00.000Z", "type": "session_meta", "payload": {"id": "s050", "cwd": "/w", "cli_version": "0.50.0"}}),
        said("user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
        said("user", "Rename the config loader."),
        said("assistant", "Renamed it in src/config.rs."),
        said("user", "Now update the callers."),
        serde_json::json!({"timestamp": "2025-10-20T10:05:00.000Z", "type": "compacted", "payload": {"message": "The loader is renamed; callers in src/main.rs remain."}}),
        said("assistant", "Updating src/main.rs."),
    ];
    let text = jsonl(&lines);
    let (dir, path) = temp_file("rollout-old.jsonl", text.as_bytes());
    let o = run(&["run", path_str(&path)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let records: Vec<Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let at = records.iter().position(|r| r["name"] == "compaction_completed").expect("the compaction");
    let restated = &records[at + 1];
    assert_eq!(restated["role"], "user", "{restated}");
    assert_eq!(
        restated["content"],
        "Rename the config loader.\n\nNow update the callers.\n\nThe loader is renamed; callers in src/main.rs remain."
    );
    assert_eq!(records[at + 2]["content"], "Updating src/main.rs.");
    drop(dir);
}

/// What `claude -p --output-format stream-json` prints (CI jobs keep it as the run's
/// record): messages linked to no parent, `session_id` in snake case, an `init` record
/// with the folder, model and version, a sub-agent's messages marked by
/// `parent_tool_use_id`, a closing `result`. Read in the order printed (9 of its 10
/// messages were off the thread, exit 0).
#[test]
fn claude_code_stream_json_output_is_read_in_order() {
    let case = root().join("testdata/cases/claude-code-stream-json/input.jsonl");
    let r = records(&case, &[]);
    assert_eq!(r["in_items"].as_u64(), Some(10), "{r}");
    assert_eq!((r["skipped"]["sidechain"].as_u64(), r["skipped"]["bookkeeping"].as_u64()), (Some(3), Some(2)), "{r}");
    assert!(r["skipped"].get("off_thread").is_none(), "{r}");
    let (_, items) = transcript(&case);
    assert_eq!(items[0]["agent_version"], "2.0.14", "the init record's version picks the profile's row");
    assert_eq!(items[0]["workspace"]["root"], "/home/ci/work/csvkit");
    let calls: Vec<&str> =
        items.iter().filter_map(|i| i["tool_calls"].as_array()).flatten().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(calls, ["toolu_01", "toolu_02", "toolu_03", "toolu_04"], "the main thread's calls, in order");
    // A run that failed before any message: its `init` still names the agent.
    let text = std::fs::read_to_string(&case).unwrap();
    let ends: Vec<&str> =
        text.lines().filter(|l| l.contains(r#""subtype": "init""#) || l.contains(r#""type": "result""#)).collect();
    let (dir, empty) = temp_file("failed.jsonl", (ends.join("\n") + "\n").as_bytes());
    let o = run(&["run", path_str(&empty)]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("read as claude-code, 2 records gave no model-visible message"), "{}", stderr(&o));
    drop(dir);
}

/// What `gemini -p --output-format stream-json` prints: an `init` event (session and
/// model), the prompt, the reply in pieces (`delta`) with its `tool_use` and
/// `tool_result` events by `tool_id`, an `error` shown to the user, a closing `result`.
/// It was read as canonical and refused as "missing field `id`".
#[test]
fn gemini_cli_stream_json_output_is_read_as_its_events() {
    let case = root().join("testdata/cases/gemini-cli-stream-json/input.jsonl");
    let r = records(&case, &[]);
    assert_eq!(r["records"].as_u64(), Some(18), "{r}");
    let skipped = &r["skipped"];
    assert_eq!(
        (skipped["header"].as_u64(), skipped["display_only"].as_u64(), skipped["bookkeeping"].as_u64()),
        (Some(1), Some(1), Some(1)),
        "{r}"
    );
    let (_, items) = transcript(&case);
    assert_eq!(items[0]["model"], "gemini-2.5-pro");
    assert_eq!(items[2]["content"], "Running the linter to see the errors.", "the pieces of a reply are one message");
    let results: Vec<&Value> = items.iter().filter(|i| i["type"] == "tool_result").collect();
    assert_eq!(results.len(), 5);
    assert_eq!(results[1]["is_error"], true, "a failed call's error is its result");
    assert_eq!(results[1]["name"], "replace");
}

/// What `codex exec --json` prints: `thread.started`, then the items the agent
/// completed (a started copy is superseded by the completed one): messages, commands
/// with their output and exit code (the command split back into its argv, so the
/// re-anchor finds the check), file changes (a changed file), MCP tool calls, plans.
/// It was read as canonical and refused, every record unknown.
#[test]
fn codex_exec_json_output_is_read_as_its_items() {
    let case = root().join("testdata/cases/codex-exec-json/input.jsonl");
    let r = records(&case, &[]);
    assert_eq!(r["skipped"]["superseded"].as_u64(), Some(2), "{r}");
    assert!(r["skipped"].get("unknown").is_none(), "{r}");
    let (_, items) = transcript(&case);
    let names: Vec<&str> = items
        .iter()
        .filter_map(|i| i["tool_calls"].as_array())
        .flatten()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["update_plan", "shell", "docs.search", "apply_patch", "update_plan", "shell"]);
    let codes: Vec<Value> = items
        .iter()
        .filter(|i| i["name"] == "shell" && i["type"] == "tool_result")
        .map(|r| r["exit_code"].clone())
        .collect();
    assert_eq!(codes, [101, 0]);
    assert!(items.iter().any(|i| i["name"] == "files_changed" && i["paths"][0] == "/work/dates/src/parse.rs"));
    let o = run(&[
        "run",
        path_str(&case),
        "--runtime",
        "agent-runner",
        "--max-total-tokens",
        "2900",
        "--verify",
        "cargo test dates",
        "--emit",
        "reanchor",
    ]);
    assert!(stdout(&o).contains("Check status: pass (`cargo test dates`)"), "{}", stdout(&o));
    // Cut before its first line (a log that lost its head), it is still Codex's.
    let text = std::fs::read_to_string(&case).unwrap();
    let (dir, cut) = temp_file("exec.jsonl", text.split_once('\n').unwrap().1.as_bytes());
    let r = records(&cut, &[]);
    assert_eq!(r["in_items"].as_u64(), Some(8), "{r}");
    drop(dir);
}

/// `codex exec --json` of the versions before its `thread.started` events (2025): the
/// run's settings, the prompt, then `{id, msg}` events that are a rollout's
/// `event_msg` payloads. Read as the rollout would be: the prompt, messages, commands
/// with their exit codes, a patch and the file it changed, each call's usage. It was
/// refused as having no `type`.
#[test]
fn codex_exec_json_of_2025_is_read_from_its_events() {
    let case = root().join("testdata/cases/codex-exec-json-2025/input.jsonl");
    let (_, items) = transcript(&case);
    assert_eq!(items[0]["workspace"]["root"], "/srv/shop");
    assert_eq!(items[0]["runtime"]["context_window"], 272_000);
    assert_eq!(items[1]["role"], "user", "the prompt is the task");
    let codes: Vec<Value> = items.iter().filter(|i| i["name"] == "shell").map(|r| r["exit_code"].clone()).collect();
    assert_eq!(codes, [1, 0, 0, 0]);
    assert!(items.iter().any(|i| i["name"] == "files_changed" && i["paths"][0] == "/srv/shop/src/cart/total.ts"));
    let usages = items.iter().filter(|i| i.get("usage").is_some()).count();
    assert_eq!(usages, 4, "one usage per model call");
    let r = records(&case, &[]);
    assert_eq!(r["skipped"]["superseded"].as_u64(), Some(1), "the output's piece: {r}");
    assert!(r["skipped"].get("unknown").is_none(), "{r}");
}

/// Claude Code 2.1.337 writes `api-request-route` records, and every version adds some
/// metadata record: one that names the session but is outside the `uuid` tree the
/// model's context is rebuilt from is bookkeeping, whatever its type; a record of an
/// unknown type in the tree is still unknown.
#[test]
fn claude_code_metadata_records_of_new_types_are_bookkeeping_and_tree_records_stay_unknown() {
    let case = root().join("testdata/cases/claude-code-resumed/input.jsonl");
    let text = std::fs::read_to_string(&case).unwrap();
    let before = records(&case, &[]);
    let meta = [
        r#"{"type":"api-request-route","provider":"customEndpoint","credential":"key","sessionId":"s1"}"#,
        r#"{"type":"model-routing-hint","hint":"fast","sessionId":"s1"}"#,
    ];
    let tree = r#"{"type":"thought-capsule","uuid":"x9","parentUuid":"r8","sessionId":"s1","content":"?"}"#;
    let (_d, path) = temp_file("c.jsonl", format!("{}\n{text}{}\n", meta.join("\n"), tree).as_bytes());
    let r = records(&path, &[]);
    adds_up(&path, &r);
    let n = |r: &Value, k: &str| r["skipped"].get(k).and_then(Value::as_u64).unwrap_or(0);
    assert_eq!(n(&r, "bookkeeping"), n(&before, "bookkeeping") + 2, "{r}");
    assert_eq!(n(&r, "unknown"), 1, "{r}");
    assert_eq!(r["items"], before["items"], "{r}");
}

/// mini-swe-agent's trajectories (`*.traj.json`: `{info, messages, trajectory_format}`)
/// are read as `swe-agent` in the shape of each model class: fenced shell blocks
/// (golden case `mini-swe-agent-text`), tool calls (`mini-swe-agent-toolcall`), and the
/// Responses API's objects answered by `function_call_output` items (here); written on
/// one line too, which is one run, not a dataset row. The run's `exit` message is
/// bookkeeping.
#[test]
fn a_mini_swe_agent_trajectory_is_read_in_the_shape_of_each_model_class() {
    let call = |i: usize, cmd: &str| {
        serde_json::json!({"object": "response", "id": format!("resp_{i}"), "status": "completed",
            "output": [
                {"type": "reasoning", "id": format!("rs_{i}"), "summary": []},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": format!("Step {i}.")}]},
                {"type": "function_call", "call_id": format!("call_{i}"), "name": "bash",
                 "arguments": serde_json::json!({"command": cmd}).to_string()}],
            "usage": {"input_tokens": 1000 * (i + 1), "output_tokens": 50, "input_tokens_details": {"cached_tokens": 600}},
            "extra": {"actions": [{"command": cmd, "tool_call_id": format!("call_{i}")}], "cost": 0.01}})
    };
    let output = |i: usize, code: i64| {
        serde_json::json!({"type": "function_call_output", "call_id": format!("call_{i}"),
            "output": format!("<returncode>{code}</returncode>\n<output>\nout {i}\n</output>"),
            "extra": {"raw_output": format!("out {i}"), "returncode": code}})
    };
    let doc = serde_json::json!({
        "info": {"mini_version": "2.1.0", "config": {"model": {"model_name": "openai/gpt-5.1"},
                 "model_type": "minisweagent.models.litellm_response_model.LitellmResponseModel"}},
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Fix the failing test."},
            call(0, "ls"), output(0, 0),
            call(1, "cd /repo && pytest -q"), output(1, 1),
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Format error: one tool call, please."}]},
            call(2, "cd /repo && pytest -q"), output(2, -1),
            {"role": "exit", "content": "", "extra": {"exit_status": "LimitsExceeded", "submission": ""}}],
        "trajectory_format": "mini-swe-agent-1.1"});
    for (name, text) in
        [("run.traj.json", serde_json::to_string_pretty(&doc).unwrap()), ("one-line.json", doc.to_string())]
    {
        let (_d, path) = temp_file(name, format!("{text}\n").as_bytes());
        let r = records(&path, &[]);
        adds_up(&path, &r);
        assert_eq!((r["items"].as_u64(), r["skipped"]["bookkeeping"].as_u64()), (Some(9), Some(1)), "{name}: {r}");
        let (_o, recs) = transcript(&path);
        let calls: Vec<&Value> = recs.iter().filter_map(|r| r["tool_calls"].as_array()).flatten().collect();
        assert_eq!(calls.len(), 3, "{name}");
        assert!(calls.iter().all(|c| c["name"] == "bash"), "{name}: {calls:?}");
        assert_eq!(calls[1]["arguments"]["command"], "cd /repo && pytest -q");
        let results: Vec<&Value> = recs.iter().filter(|r| r["type"] == "tool_result").collect();
        let linked: Vec<(&str, bool)> = results
            .iter()
            .map(|r| (r["call_id"].as_str().unwrap(), r["is_error"].as_bool().unwrap_or(false)))
            .collect();
        assert_eq!(
            linked,
            [
                (calls[0]["id"].as_str().unwrap(), false),
                (calls[1]["id"].as_str().unwrap(), true),
                (calls[2]["id"].as_str().unwrap(), true)
            ],
            "{name}: results answer their calls; -1 is not run"
        );
        let first = recs.iter().find(|r| r["role"] == "assistant").unwrap();
        assert_eq!(first["content"], "Step 0.");
        assert_eq!(first["usage"]["input_tokens"], 400, "cached tokens are inside input_tokens: {first}");
        assert_eq!(first["usage"]["cache_read_tokens"], 600);
        assert!(recs.iter().any(|r| r["role"] == "user" && r["content"] == "Format error: one tool call, please."));
        assert_eq!(recs[0]["model"], "openai/gpt-5.1");
    }
}

/// A folder of mini-swe-agent runs (`<instance>/<instance>.traj.json` beside the
/// batch's `preds.json`): the trajectories are its inputs, under `auto` and `swe-agent`.
#[test]
fn a_folder_of_mini_swe_agent_runs_gives_its_trajectories() {
    let case = std::fs::read(root().join("testdata/cases/mini-swe-agent-toolcall/input.jsonl")).unwrap();
    let (dir, _) = temp_file("preds.json", br#"{"a__a-1": {"instance_id": "a__a-1", "model_patch": "diff"}}"#);
    for name in ["a__a-1", "b__b-2"] {
        std::fs::create_dir(dir.path().join(name)).unwrap();
        std::fs::write(dir.path().join(name).join(format!("{name}.traj.json")), &case).unwrap();
    }
    for format in ["auto", "swe-agent"] {
        let o = run(&["stats", "--json", "--input-format", format, path_str(dir.path())]);
        assert!(o.status.success(), "{format}: {}", stderr(&o));
        let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(v["transcripts"], 2, "{format}: {v}");
    }
}

/// A conversation the OpenHands agent SDK saved, written as the SDK writes it: one
/// event per file (`events/event-NNNNN-<id>.json`, compact JSON), and `base_state.json`
/// (pretty-printed) beside them. Returns the conversation's folder.
fn sdk_conversation(under: &Path, case: &str) -> PathBuf {
    let text = std::fs::read_to_string(root().join("testdata/cases").join(case).join("input.jsonl")).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let (state, events) = lines.split_last().unwrap();
    let id = state["id"].as_str().unwrap().replace('-', "");
    let conv = under.join(id);
    std::fs::create_dir_all(conv.join("events")).unwrap();
    for (k, e) in events.iter().enumerate() {
        let name = format!("event-{k:05}-{}.json", e["id"].as_str().unwrap());
        std::fs::write(conv.join("events").join(name), serde_json::to_vec(e).unwrap()).unwrap();
    }
    std::fs::write(conv.join("events/.eventlog.lock"), b"").unwrap();
    std::fs::write(conv.join("base_state.json"), serde_json::to_vec_pretty(state).unwrap()).unwrap();
    conv
}

/// OpenHands V1 keeps a conversation as a folder of event files: the folder (or its
/// `events/`) is one transcript, read as the same events on JSON Lines are, and a
/// folder of conversations gives one input for each. The state is the header, the SDK's
/// bookkeeping events are counted so, a kind the reader does not know is `unknown`.
#[test]
fn an_openhands_sdk_conversation_folder_is_one_transcript() {
    let case = root().join("testdata/cases/openhands-sdk-condensation/input.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let conv = sdk_conversation(dir.path(), "openhands-sdk-condensation");
    let want = records(&case, &["--max-total-tokens", "20000"]);
    assert_eq!(want["records"], 29, "{want}");
    assert_eq!(want["skipped"]["header"], 1, "{want}");
    assert_eq!(want["skipped"]["bookkeeping"], 4, "{want}");
    assert_eq!(want["unknown_types"]["kind/SomeFutureEvent"], 1, "{want}");
    for input in [conv.clone(), conv.join("events")] {
        let got = records(&input, &["--max-total-tokens", "20000"]);
        assert_eq!(got, want, "{}", input.display());
        adds_up(&input, &got);
    }
    // The folder's transcript is the JSON Lines' (the same events, the state last).
    let (_, from_lines) = transcript(&case);
    let (_, from_folder) = transcript(&conv);
    assert_eq!(from_folder, from_lines);
    // Line N is the N-th event file: replay places the condensation on its file's line.
    let events: Vec<Value> =
        std::fs::read_to_string(&case).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let condensation = 1 + events.iter().position(|e| e["kind"] == "Condensation").unwrap();
    let o = run(&["replay", "--json", path_str(&conv)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let points: Vec<Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let recorded: Vec<&Value> = points.iter().filter(|p| !p["recorded"].is_null()).collect();
    assert_eq!(recorded.len(), 1, "{points:?}");
    assert_eq!(recorded[0]["recorded"]["line"], condensation, "{points:?}");
    // A folder of conversations: one input each, named after its conversation.
    let second = sdk_conversation(&dir.path().join("more"), "openhands-sdk-condensation");
    let out = tempfile::tempdir().unwrap();
    let o = run(&["run", "--max-total-tokens", "20000", path_str(dir.path()), "--out-dir", path_str(out.path())]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("2 file(s): 2 compacted"), "{}", stderr(&o));
    let name = conv.file_name().unwrap();
    assert!(out.path().join(name).join("transcript.jsonl").is_file());
    assert!(out.path().join("more").join(second.file_name().unwrap()).join("transcript.jsonl").is_file());
    // A glob takes the conversation folders it matches.
    for (glob, want) in [("*", 1), ("**", 2)] {
        let o = run(&["stats", "--json", &format!("{}/{glob}", dir.path().display())]);
        assert!(o.status.success(), "{glob}: {}", stderr(&o));
        let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(v["transcripts"], want, "{glob}: {v}");
    }
    // Its files named one by one (the shell's `conv/events/*.json`, or a glob of every
    // JSON file below, state and task list included) are the conversation, read once,
    // with a warning; an event file alone is no transcript.
    let files: Vec<String> = std::fs::read_dir(conv.join("events"))
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| Path::new(p).extension().is_some_and(|x| x == "json"))
        .collect();
    let mut named = vec!["stats".to_string(), "--json".to_string()];
    named.extend(files.iter().cloned());
    named.push(conv.join("base_state.json").display().to_string());
    let args: Vec<&str> = named.iter().map(String::as_str).collect();
    for args in [&args[..], &["stats", "--json", &format!("{}/**/*.json", dir.path().display())], &args[..3]] {
        let o = run(args);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
        let want_transcripts = if args[2].contains("**") { 2 } else { 1 };
        assert_eq!(v["transcripts"], want_transcripts, "{v}");
        assert_eq!(v["items"], want["items"].as_u64().unwrap() * want_transcripts, "{v}");
        assert!(stderr(&o).contains("file(s) of this OpenHands conversation named: read as"), "{}", stderr(&o));
    }
    // A file among the events that is none (a copy's leftover) is named, not read; the
    // SDK's own lock file is not.
    std::fs::write(conv.join("events/event-7-copy.json"), b"{}").unwrap();
    let o = run(&["decide", path_str(&conv)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("event-7-copy.json: skipped: not an event file"), "{}", stderr(&o));
    assert!(!stderr(&o).contains(".eventlog.lock"), "{}", stderr(&o));
    std::fs::remove_file(conv.join("events/event-7-copy.json")).unwrap();
    // A broken event file is named with its line and column; the folder is not changed.
    let bad = conv.join("events").join(
        std::fs::read_dir(conv.join("events"))
            .unwrap()
            .find_map(|e| {
                let n = e.unwrap().file_name().into_string().unwrap();
                n.starts_with("event-00004-").then_some(n)
            })
            .unwrap(),
    );
    std::fs::write(&bad, b"{\"id\": \"x\",\n  \"kind\": oops}").unwrap();
    let o = run(&["decide", path_str(&conv)]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("{}:2:11:", bad.display())), "{}", stderr(&o));
    assert_eq!(std::fs::read(&bad).unwrap(), b"{\"id\": \"x\",\n  \"kind\": oops}");
}

/// The SDK's events form a tree (`parent_id`): the thread is the path from the leaf
/// (the state's `leaf_event_id`, else the last event) to the root; the events of the
/// other branch are `off_thread`. An event that names no parent (an older SDK's, or one
/// this tool injected) goes with the event before it.
#[test]
fn openhands_sdk_events_off_the_active_branch_are_off_thread() {
    let msg = |id: &str, parent: Option<&str>, source: &str, text: &str| {
        let role = if source == "user" { "user" } else { "assistant" };
        let mut e = serde_json::json!({"id": id, "timestamp": "2026-11-30T10:00:00", "source": source,
            "llm_message": {"role": role, "content": [{"type": "text", "text": text}]}, "kind": "MessageEvent"});
        if let Some(p) = parent {
            e["parent_id"] = p.into();
        }
        e
    };
    let events = [
        msg("a1", None, "user", "Rename foo to bar."),
        msg("a2", Some("a1"), "agent", "Renamed it, on the first try."),
        msg("a3", Some("a1"), "user", "Rename foo to baz instead."),
        msg("a4", Some("a3"), "agent", "Renamed it to baz."),
        msg("a5", None, "user", "Thanks."),
    ];
    let lines = |events: &[Value], state: Option<Value>| {
        let mut text: String = events.iter().map(|e| format!("{e}\n")).collect();
        if let Some(s) = state {
            text.push_str(&format!("{s}\n"));
        }
        text
    };
    let (_d, path) = temp_file("events.jsonl", lines(&events, None).as_bytes());
    let r = records(&path, &[]);
    assert_eq!(r["skipped"]["off_thread"], 1, "the first answer is on the abandoned branch: {r}");
    assert_eq!(r["items"], 4, "{r}");
    let (_, t) = transcript(&path);
    let texts: Vec<&str> = t.iter().filter_map(|r| r["content"].as_str()).collect();
    assert_eq!(texts, ["Rename foo to bar.", "Rename foo to baz instead.", "Renamed it to baz.", "Thanks."]);
    // The state names the leaf: the conversation went back to the first answer.
    let state = serde_json::json!({"id": "c1", "agent": {"kind": "Agent"}, "leaf_event_id": "a2"});
    let (_d, path) = temp_file("events.jsonl", lines(&events, Some(state)).as_bytes());
    let (_, t) = transcript(&path);
    let texts: Vec<&str> = t.iter().filter_map(|r| r["content"].as_str()).collect();
    assert_eq!(texts, ["Rename foo to bar.", "Renamed it, on the first try."]);
    let r = records(&path, &[]);
    assert_eq!(r["skipped"]["off_thread"], 3, "{r}");
    assert_eq!(r["skipped"]["header"], 1, "{r}");
}

/// mini-swe-agent trajectories joined one per line are not one trajectory: refused at
/// the second, saying that a second document starts there.
#[test]
fn trajectories_joined_one_per_line_are_refused_at_the_second() {
    let case = std::fs::read_to_string(root().join("testdata/cases/mini-swe-agent-toolcall/input.jsonl")).unwrap();
    let one: Value = serde_json::from_str(&case).unwrap();
    let (_d, path) = temp_file("runs.jsonl", format!("{one}\n{one}\n").as_bytes());
    let o = run(&["run", path_str(&path)]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let want = format!("{}:2:1: trailing characters: a second JSON document starts here", path.display());
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
}

/// What the OpenHands agent SDK sent its model, from a conversation it saved (the case
/// is a run of the SDK 1.58.2 against a scripted model server, its paths and system
/// prompt shortened): a terminal's result carries the metadata lines the SDK adds, a
/// failed result opens with its error header. The texts below are the ones the server
/// received.
#[test]
fn an_openhands_sdk_result_is_the_text_its_model_was_sent() {
    let case = root().join("testdata/cases/openhands-sdk-run/input.jsonl");
    let (_, records) = transcript(&case);
    let result = |call: &str| {
        records.iter().find(|r| r["type"] == "tool_result" && r["call_id"] == call).map(|r| r["content"].clone())
    };
    let sent = "hello\n[The command completed with exit code 0.]\n[Current working directory: /workspace/project]\n\
                [Python interpreter: /usr/bin/python3]\n[Command finished with exit code 0]";
    assert_eq!(result("call_1"), Some(Value::from(sent)));
    assert_eq!(result("call_2"), Some(Value::from("File created successfully at: /workspace/project/b.py")));
    let failed = records.iter().find(|r| r["call_id"] == "call_7").unwrap();
    assert_eq!(failed["is_error"], true, "{failed}");
    // The usage of each reply is its model response's, from the state's metrics.
    let usage = records.iter().find(|r| r["id"] == "echatcmpl-1").unwrap()["usage"].clone();
    assert_eq!(
        usage,
        serde_json::json!({"input_tokens": 1037, "cache_read_tokens": 0, "cache_write_tokens": 0, "output_tokens": 21})
    );
}

/// The OpenHands app server (V1's local GUI) keeps a conversation's events as
/// `v1/events/<conversation id>/<YYYYMMDDHHMMSS>_<Kind>_<id hex>`, pretty-printed, with
/// no extension and no state. Such a folder is one transcript, its events in the order
/// of their `timestamp` (the names keep only the second, and sort a `MessageEvent`
/// before the `SystemPromptEvent` of the same second); a folder of them gives one input
/// each.
#[test]
fn an_openhands_app_server_events_folder_is_one_transcript() {
    let case = root().join("testdata/cases/openhands-sdk-run/input.jsonl");
    let text = std::fs::read_to_string(&case).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let (state, events) = lines.split_last().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let conv = dir.path().join("v1/events").join(state["id"].as_str().unwrap());
    std::fs::create_dir_all(&conv).unwrap();
    let mut names = Vec::new();
    for e in events {
        let second: String = e["timestamp"].as_str().unwrap()[..19].chars().filter(char::is_ascii_digit).collect();
        let name = format!("{second}_{}_{}", e["kind"].as_str().unwrap(), e["id"].as_str().unwrap().replace('-', ""));
        std::fs::write(conv.join(&name), serde_json::to_string_pretty(e).unwrap()).unwrap();
        names.push(name);
    }
    names.sort();
    assert!(names[0].contains("_MessageEvent_"), "the names alone would put the prompt after the message: {names:?}");
    // The same items as the SDK's own folder (the case), without the usage its state gave.
    let strip = |records: Vec<Value>| -> Vec<Value> {
        records
            .into_iter()
            .skip(1)
            .map(|mut r| {
                r.as_object_mut().unwrap().remove("usage");
                r
            })
            .collect()
    };
    let (_, from_case) = transcript(&case);
    for input in [conv.clone(), dir.path().join("v1/events")] {
        let o = run(&["run", path_str(&input)]);
        assert!(o.status.success(), "{}: {}", input.display(), stderr(&o));
        let records: Vec<Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(strip(records), strip(from_case.clone()), "{}", input.display());
    }
    let r = records(&conv, &[]);
    assert_eq!(r["records"], events.len(), "{r}");
    adds_up(&conv, &r);
}

/// Records of types an importer does not know are counted and named in one warning,
/// each type as far as a line can hold it: a type may be of any length, and a file
/// may hold any number of them.
#[test]
fn unknown_record_types_are_named_within_one_line() {
    let case = root().join("testdata/cases/codex-current-rollout/input.jsonl");
    let text = std::fs::read_to_string(&case).unwrap();
    let long = "q".repeat(100_000);
    let mut extra: Vec<String> = (0..14).map(|k| format!(r#"{{"type":"kind_{k:02}","payload":{{}}}}"#)).collect();
    extra.push(format!(r#"{{"type":"a{long}","payload":{{}}}}"#));
    let (_d, path) = temp_file("r.jsonl", format!("{text}{}\n", extra.join("\n")).as_bytes());
    let r = records(&path, &[]);
    adds_up(&path, &r);
    assert_eq!(r["skipped"]["unknown"].as_u64(), Some(15), "every one counted: {r}");
    let o = run(&["run", path_str(&path)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let warning = stderr(&o).lines().find(|l| l.contains("skipped records of unknown type")).unwrap().to_string();
    assert!(warning.len() < 1000, "{} bytes", warning.len());
    assert!(warning.contains(&format!("1 a{}…, 1 kind_00, ", &long[..59])), "{warning}");
    assert!(warning.ends_with("1 kind_10, and 3 type(s) more"), "{warning}");
}
