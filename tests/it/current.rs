//! The agents as they ship today (SPEC 1, 12, 13): the records current Claude Code and
//! Codex versions write, read without losing what the model sees, and the windows and
//! triggers the agents use. The cases in testdata/ are written for this project, shaped
//! after what Claude Code 2.1.332 and Codex CLI 0.171.0 wrote under conformance/.

use crate::support::{path_str, run, stderr, stdout, temp_file};
use serde_json::Value;

const RECORDS: &str = "testdata/cases/claude-code-current-records/input.jsonl";
const PRESERVED: &str = "testdata/cases/claude-code-preserved-segment/input.jsonl";
const SIDECHAIN: &str = "testdata/cases/claude-code-sidechain-first/input.jsonl";
const CODEX: &str = "testdata/cases/codex-current-rollout/input.jsonl";

fn canonical(path: &str) -> Vec<Value> {
    let o = run(&["run", path, "--runtime", "conversation", "--no-native-compaction"]);
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn replay(path: &str, flags: &[&str]) -> (Vec<Value>, Value, String) {
    let mut args = vec!["replay", path, "--json"];
    args.extend_from_slice(flags);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut lines: Vec<Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let summary = lines.pop().unwrap();
    (lines, summary, stderr(&o))
}

/// The re-anchor block the agent runner injects into `path`'s compaction.
fn reanchor(path: &str, flags: &[&str]) -> String {
    let o = run(&[&["run", path, "--runtime", "agent-runner", "--emit", "reanchor"][..], flags].concat());
    assert!(o.status.success(), "{path}: {}", stderr(&o));
    stdout(&o)
}

#[test]
fn claude_code_attachments_are_model_visible_and_bookkeeping_is_skipped_quietly() {
    let o = run(&["decide", RECORDS]);
    assert!(stderr(&o).is_empty(), "no record is skipped with a warning: {}", stderr(&o));
    let records = canonical(RECORDS);
    let system: Vec<&str> =
        records.iter().filter(|r| r["role"] == "system").map(|r| r["id"].as_str().unwrap()).collect();
    // Rendered attachments are instructions the model reads; `session_context` has none.
    assert_eq!(system, ["at1", "at2", "at4", "at5"]);
    assert_eq!(records[0]["runtime"]["context_window"], 1_000_000, "claude-opus-5-5 runs with a 1M window");
    // Claude Code's own figure: the usage of the message, plus round(chars / 4) of each
    // block after the first record of it (the call), of the result and of the reminder.
    let (points, summary, _) = replay(RECORDS, &[]);
    assert_eq!(summary["profile"], "claude-code", "replay follows the input's agent");
    let usage = 5 + 300 + 20_000 + 40;
    let call = (4 + r#"{"command":"grep -rn helper src","description":"find callers"}"#.len() as u64 + 2) / 4;
    let result = ("src/a.py:3: helper(x)\nsrc/b.py:9: helper(y)".len() as u64 + 2) / 4;
    let reminder =
        ("<system-reminder>\n<total_tokens>14810000 tokens left</total_tokens>\n</system-reminder>".len() as u64 + 2)
            / 4;
    assert_eq!(points[0]["used"], usage + call + result + reminder, "{points:?}");
}

#[test]
fn a_preserved_segment_starts_the_new_context() {
    let records = canonical(PRESERVED);
    let at = records.iter().position(|r| r["name"] == "compaction_completed").unwrap();
    let ids: Vec<&str> = records[at + 1..].iter().filter_map(|r| r["id"].as_str()).collect();
    assert_eq!(
        ids,
        [
            "at1",
            "s1",
            "msg_p2~preserved",
            "r2~preserved",
            "u2",
            "msg_p5",
            "r5",
            "msg_p6",
            "r6",
            "msg_p7",
            "r7",
            "msg_p3"
        ]
    );
    let restated = &records[at + 1..].iter().find(|r| r["id"] == "msg_p2~preserved").unwrap()["usage"];
    assert_eq!(restated["cache_read_tokens"], 0, "a restated message is not a model call: {restated}");
    // Occupancy after the boundary: the last call, not the 967k one restated.
    let o = run(&["decide", "--json", PRESERVED]);
    let d: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(d["used"].as_u64().unwrap() < 10_000, "{d}");
    // The write-back keeps it: the segment's records are copied after the new boundary.
    let out = run(&[
        "run",
        PRESERVED,
        "--output-format",
        "claude-code",
        "--runtime",
        "agent-runner",
        "--max-total-tokens",
        "1000",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let input = std::fs::read_to_string(PRESERVED).unwrap();
    let written: Vec<Value> = stdout(&out)[input.len()..].lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let edits = written.iter().filter(|r| r["message"]["content"][0]["name"] == "Edit").count();
    assert_eq!(edits, 1, "the preserved call is copied after the new boundary: {written:?}");
}

#[test]
fn a_claude_code_file_is_known_by_its_keys_whatever_its_first_records() {
    let o = run(&["decide", "--json", SIDECHAIN]);
    assert!(o.status.success(), "{}", stderr(&o));
    let d: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(d["input_format"], "claude-code");
    // A self-parented record does not end the thread: the prompt before it is kept.
    let ids: Vec<String> =
        canonical(SIDECHAIN).iter().filter_map(|r| r["id"].as_str().map(str::to_string)).skip(1).collect();
    assert_eq!(ids, ["u1", "msg_s1", "u2"]);
}

#[test]
fn a_record_that_is_its_own_root_never_empties_the_thread() {
    // The last record is a stray root (no parent, no logical parent): the walk goes on
    // before it instead of ending with no message.
    let text = std::fs::read_to_string(SIDECHAIN).unwrap()
        + r#"{"parentUuid":null,"isSidechain":false,"cwd":"/work/app","sessionId":"s","type":"system","uuid":"z9","subtype":"turn_duration","durationMs":5}"#
        + "\n";
    let (dir, path) = temp_file("stray.jsonl", text.as_bytes());
    let ids: Vec<String> =
        canonical(path_str(&path)).iter().filter_map(|r| r["id"].as_str().map(str::to_string)).skip(1).collect();
    assert_eq!(ids, ["u1", "msg_s1", "u2"]);
    drop(dir);
}

#[test]
fn a_codex_compaction_call_is_the_compactions_and_new_records_are_read() {
    let o = run(&["decide", CODEX]);
    assert!(stderr(&o).is_empty(), "token_usage_record, world_state and the rest are read quietly: {}", stderr(&o));
    let records = canonical(CODEX);
    assert!(
        !records.iter().any(|r| r["content"] == "The parser accepts tabs; the tests pass." && r["role"] == "assistant"),
        "the summary call is not a message of the history"
    );
    let (points, summary, _) = replay(CODEX, &[]);
    assert_eq!(summary["profile"], "codex");
    let recorded: Vec<&Value> = points.iter().filter(|p| !p["recorded"].is_null()).collect();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0]["call"], 3, "the compaction follows the third call, not the summary's: {points:?}");
    assert_eq!(recorded[0]["recorded"]["pre_tokens"], 244_790);
    assert!(recorded[0]["fired"].as_bool().unwrap(), "{:?}", recorded[0]);
    // The cache write the provider counted is read.
    let first = records.iter().find(|r| r["id"] == "L10").unwrap();
    assert_eq!(first["usage"]["cache_write_tokens"], 100, "{first}");
}

#[test]
fn an_unknown_model_gets_a_warning_and_usage_over_the_window_is_said() {
    let text = std::fs::read_to_string(RECORDS).unwrap().replace("claude-opus-5-5", "claude-mystery-9");
    let (dir, path) = temp_file("mystery.jsonl", text.as_bytes());
    let p = path_str(&path);
    let o = run(&["decide", p]);
    assert!(
        stderr(&o).contains("the model table does not know `claude-mystery-9`; assuming a 200000-token context window"),
        "{}",
        stderr(&o)
    );
    let o = run(&["config", p]);
    assert!(
        stdout(&o).contains("model claude-mystery-9 is not in crates/formats/src/formats/models.json: 200000 assumed"),
        "{}",
        stdout(&o)
    );
    // The last usage: 5 + 300 + 20,500 + 30.
    let o = run(&["decide", p, "--context-window", "10000"]);
    assert!(stderr(&o).contains("the occupancy 20835 is above the 10000-token context window"), "{}", stderr(&o));
    let (_, _, err) = replay(p, &["--context-window", "10000"]);
    assert!(err.contains("is above the 10000-token context window"), "{err}");
    drop(dir);
}

#[test]
fn a_flag_that_cannot_act_on_the_path_says_which_flag_would() {
    let o = run(&["decide", RECORDS, "--max-total-tokens", "5000"]);
    assert!(
        stderr(&o).contains("task.max_total_tokens (--max-total-tokens) does not act on the conversation path this transcript takes; it acts on the agent-runner path: add --runtime agent-runner"),
        "{}",
        stderr(&o)
    );
    let (_, _, err) = replay(RECORDS, &["--max-total-tokens", "5000"]);
    assert!(err.contains("add --runtime agent-runner"), "{err}");
    let o = run(&["decide", RECORDS, "--max-total-tokens", "5000", "--runtime", "agent-runner"]);
    assert!(!stderr(&o).contains("does not act"), "{}", stderr(&o));
    // A size to fit is the agent runner's: on the conversation path it is named, never
    // silently left out of a run that then writes the transcript as it was.
    let o = run(&["run", RECORDS, "--target-tokens", "100"]);
    assert!(
        stderr(&o).contains("fallback.target_tokens (--target-tokens) does not act on the conversation path this transcript takes; it acts on the agent-runner path: add --runtime agent-runner"),
        "{}",
        stderr(&o)
    );
    let o = run(&["run", RECORDS, "--target-tokens", "100", "--runtime", "agent-runner"]);
    assert!(!stderr(&o).contains("does not act"), "{}", stderr(&o));
}

/// What Codex 0.171 writes for the commands and patches it runs: an exit code in an
/// `item_completed` command execution before the output, in the header of the output
/// itself (`Process exited with code N`), or in an `exec_command_end` after it; and the
/// outputs of calls it did not carry out (a patch that did not apply, a tool this model
/// lacks). A failed check must read as failed, and a patch that changed nothing is no
/// changed file: the re-anchor facts that keep the next edit right.
#[test]
fn codex_exit_codes_and_refused_calls_are_read_as_codex_writes_them() {
    const CASE: &str = "testdata/cases/codex-commands-and-patches/input.jsonl";
    let results: Vec<(String, Value, Value)> = canonical(CASE)
        .into_iter()
        .filter(|r| r["type"] == "tool_result")
        .map(|r| (r["call_id"].as_str().unwrap().to_string(), r["exit_code"].clone(), r["is_error"].clone()))
        .collect();
    let expected = [
        ("call_1", Value::from(0), Value::Null),    // item_completed before the output
        ("call_2", Value::Null, Value::Bool(true)), // apply_patch verification failed
        ("call_3", Value::Null, Value::Bool(true)), // unsupported call
        ("call_4", Value::Null, Value::Null),       // the patch applied
        ("call_5", Value::from(3), Value::Null),    // the output's own header
        ("call_6", Value::from(2), Value::Null),    // exec_command_end after the output
        ("call_7", Value::from(3), Value::Null),    // item_completed, status failed
    ];
    let expected: Vec<(String, Value, Value)> =
        expected.into_iter().map(|(c, code, err)| (c.to_string(), code, err)).collect();
    assert_eq!(results, expected);
    let text = reanchor(CASE, &["--max-total-tokens", "50000", "--verify", "python3 hello.py"]);
    assert!(text.contains("Changed files (most recent first):\n- hello.py\n\n"), "{text}");
    assert!(text.contains("Check status: fail (exit code 3, `python3 hello.py`)"), "{text}");
}

/// Plan and todo calls the agent refused are no plan: Codex 0.171 answers `update_plan`
/// with "unsupported call" and Claude Code 2.1.332 `TodoWrite` with "No such tool
/// available" (both seen under conformance/). The remaining steps come from the latest
/// plan the agent took.
#[test]
fn a_plan_the_agent_refused_is_not_the_remaining_steps() {
    use serde_json::json;
    let plan = |steps: &[(&str, &str)]| -> Value {
        json!({"plan": steps.iter().map(|(s, st)| json!({"step": s, "status": st})).collect::<Vec<_>>()})
    };
    let taken = plan(&[("write hello.py", "completed"), ("run the check", "pending")]);
    let refused = plan(&[("open a PR", "pending")]);
    let item =
        |payload: Value| json!({"timestamp": "2026-12-05T00:00:00.000Z", "type": "response_item", "payload": payload});
    let call = |id: &str, args: &Value| {
        item(json!({"type": "function_call", "name": "update_plan", "arguments": args.to_string(), "call_id": id}))
    };
    let output = |id: &str, text: &str| item(json!({"type": "function_call_output", "call_id": id, "output": text}));
    let codex = [
        json!({"timestamp": "2026-12-05T00:00:00.000Z", "type": "session_meta", "payload": {"id": "s", "cli_version": "0.171.0"}}),
        item(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Do it."}]})),
        item(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading."}]})),
        item(
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Still reading."}]}),
        ),
        item(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Read."}]})),
        call("c1", &taken),
        output("c1", "Plan updated"),
        call("c2", &refused),
        output("c2", "unsupported call: update_plan"),
        item(
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]}),
        ),
        item(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]})),
    ];
    let todos = |items: &[(&str, &str)]| -> Value {
        json!({"todos": items.iter().map(|(c, st)| json!({"content": c, "status": st, "activeForm": c})).collect::<Vec<_>>()})
    };
    let mut parent = Value::Null;
    let mut claude = Vec::new();
    let mut record = |kind: &str, content: Value| {
        let uuid = format!("u{}", claude.len());
        claude.push(json!({"parentUuid": parent, "isSidechain": false, "sessionId": "s", "type": kind, "uuid": uuid,
            "timestamp": "2026-12-05T00:00:00.000Z", "message": {"role": kind, "content": content}}));
        parent = Value::from(uuid);
    };
    record("user", json!("Do it."));
    record("assistant", json!([{"type": "text", "text": "Reading."}]));
    record("user", json!("Go on."));
    record("assistant", json!([{"type": "text", "text": "Still reading."}]));
    record(
        "assistant",
        json!([{"type": "tool_use", "id": "t1", "name": "TodoWrite", "input": todos(&[("write hello.py", "completed"), ("run the check", "pending")])}]),
    );
    record(
        "user",
        json!([{"type": "tool_result", "tool_use_id": "t1", "content": "Todos have been modified successfully."}]),
    );
    record(
        "assistant",
        json!([{"type": "tool_use", "id": "t2", "name": "TodoWrite", "input": todos(&[("open a PR", "pending")])}]),
    );
    record(
        "user",
        json!([{"type": "tool_result", "tool_use_id": "t2", "is_error": true,
        "content": "<tool_use_error>Error: No such tool available: TodoWrite. TodoWrite is disabled for this session, in subagents as well as here.</tool_use_error>"}]),
    );
    record("assistant", json!([{"type": "text", "text": "Checking."}]));
    record("user", json!("Go on."));
    record("assistant", json!([{"type": "text", "text": "Done."}]));
    for (name, lines) in [("rollout.jsonl", &codex[..]), ("session.jsonl", &claude[..])] {
        let text: String = lines.iter().map(|l| l.to_string() + "\n").collect();
        let (_d, path) = temp_file(name, text.as_bytes());
        let out = reanchor(path_str(&path), &["--max-total-tokens", "20"]);
        assert!(out.contains("Remaining steps:\n- run the check (pending)\n\n"), "{name}: {out}");
        assert!(!out.contains("open a PR"), "{name}: {out}");
    }
}

/// How agents run checks: from the repository's folder (`cd DIR && …`: the check, its
/// status the chain's), and with their output cut (`… 2>&1 | tail -5`, as a real Claude
/// Code session does with `mix test`): a pipe's exit code is its last command's, so the
/// status (pass or fail by the call's exit code, SPEC 5) says that it is not the check's;
/// `pipefail` makes it the check's again.
#[test]
fn a_check_in_an_and_chain_counts_and_one_piped_into_another_command_says_so() {
    let base =
        std::fs::read_to_string(crate::support::root().join("testdata/cases/reanchor-verification-pass/input.jsonl"))
            .unwrap();
    let old = r#""cmd":["cargo","test","--release"]"#;
    assert!(base.contains(old));
    let status = |cmd: &str| {
        let changed = base.replace(old, &format!(r#""cmd":["bash","-lc",{}]"#, serde_json::to_string(cmd).unwrap()));
        let (_d, path) = temp_file("s.jsonl", changed.as_bytes());
        let text = reanchor(path_str(&path), &["--max-total-tokens", "1000"]);
        text.lines().find(|l| l.starts_with("Check status: ")).unwrap().to_string()
    };
    assert_eq!(status("cargo test --release"), "Check status: pass (`cargo test`)");
    assert_eq!(status("cd /repo && cargo test --release"), "Check status: pass (`cargo test`)");
    assert_eq!(
        status("cd /repo && cargo test --release 2>&1 | tail -5"),
        "Check status: pass (`cargo test` was piped into `tail -5`, whose exit code this is, not the check's)"
    );
    assert_eq!(status("set -o pipefail; cargo test 2>&1 | tail -5"), "Check status: pass (`cargo test`)");
    assert_eq!(status("cargo test -- 'a|b'"), "Check status: pass (`cargo test`)");
    assert_eq!(
        status("cargo test || true"),
        "Check status: pass (`cargo test` failing runs `true`, whose exit code this is, not the check's)"
    );
}

/// A session run on Windows (Claude Code and Codex run there natively): its working
/// directory and file paths are `C:\…` with backslashes. The re-anchor lists the file in
/// the workspace as `src/parser.rs`, the same as on Linux, and the allowed-path glob
/// `src/**` matches it (it was listed as the whole Windows path, "outside allowed
/// paths"). Letters of either case and either separator are the same path there.
#[test]
fn a_session_run_on_windows_gets_workspace_paths_in_its_reanchor() {
    let case = crate::support::root().join("testdata/cases/claude-code-compact-boundary-agent-runner/input.jsonl");
    let linux = std::fs::read_to_string(&case).unwrap();
    let args = ["--runtime", "agent-runner", "--max-total-tokens", "400000", "--allow", "src/**", "--emit", "reanchor"];
    let reanchor = |text: &str| {
        let (_d, path) = temp_file("s.jsonl", text.as_bytes());
        let o = run(&[&["run", path_str(&path)][..], &args[..]].concat());
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let want = reanchor(&linux);
    assert!(want.contains("Changed files (most recent first):\n- src/parser.rs\n"), "{want}");
    for (cwd, file) in [
        (r"C:\\Users\\dev\\proj", r"C:\\Users\\dev\\proj\\src\\parser.rs"),
        (r"C:\\Users\\dev\\proj", r"c:/users/dev/PROJ/src/parser.rs"),
        (r"\\\\srv\\share\\proj", r"\\\\srv\\share\\proj\\src\\parser.rs"),
    ] {
        let windows = linux.replace("/home/dev/proj/src/parser.rs", file).replace("/home/dev/proj", cwd);
        assert_ne!(windows, linux);
        assert_eq!(reanchor(&windows), want, "{cwd} {file}");
    }
}
