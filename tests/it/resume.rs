//! `--output-format claude-code|codex`: the compaction written the way the agent
//! records its own, checked by reading it back with the tool's own importers.

use crate::support::{path_str, root, run, stderr, stdout, temp_file};
use serde_json::Value;
use std::collections::HashSet;

const CLAUDE: &str = "testdata/cases/claude-code-compact-boundary-agent-runner/input.jsonl";
const CODEX: &str = "testdata/cases/codex-agent-runner/input.jsonl";
const BUDGET: &[&str] = &["--runtime", "agent-runner", "--max-total-tokens", "1000"];

fn compact(input: &str, format: &str, flags: &[&str]) -> Vec<u8> {
    let mut args = vec!["run", input, "--output-format", format];
    args.extend_from_slice(flags);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    o.stdout
}

/// A write-back with nothing to record (a second run over the tool's own output): no
/// session is written, exit 4, and stderr says why and what would compact.
fn writes_nothing(input: &str, format: &str, flags: &[&str]) -> String {
    let mut args = vec!["run", input, "--output-format", format];
    args.extend_from_slice(flags);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "nothing is written: {}", stdout(&o));
    let e = stderr(&o);
    assert!(
        e.contains(&format!("--output-format {format} writes a session back with a compaction, and none was planned")),
        "{e}"
    );
    assert!(e.contains("nothing was written; "), "{e}");
    e
}

fn records(bytes: &[u8]) -> Vec<Value> {
    bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).unwrap()).collect()
}

/// The context figure `decide` reads from a file (conversation runtime).
fn occupancy(path: &str) -> u64 {
    let o = run(&["decide", path, "--runtime", "conversation", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice::<Value>(&o.stdout).unwrap()["used"].as_u64().unwrap()
}

/// The canonical records the importer makes of a file, from the last completed
/// compaction on: where the context starts.
fn context_after_last_compaction(path: &str) -> Vec<Value> {
    let o = run(&["run", path, "--runtime", "conversation", "--no-native-compaction", "--emit", "transcript"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let all = records(&o.stdout);
    let last = all.iter().rposition(|r| r["name"] == "compaction_completed").expect("a completed compaction");
    all[last + 1..].to_vec()
}

/// Checks a Claude Code session written back: the input untouched, one boundary, the
/// summary message, copies re-parented with fresh uuids, every parent resolving.
fn check_claude_code(input: &[u8], out: &[u8]) {
    assert!(out.starts_with(input), "the input comes first, unchanged");
    let before = records(input);
    let after = records(out);
    let new = &after[before.len()..];
    assert!(new.len() >= 2, "a boundary and a summary at least");
    let old_uuids: HashSet<&str> = before.iter().filter_map(|r| r["uuid"].as_str()).collect();
    let session = before.iter().find_map(|r| r["sessionId"].as_str()).unwrap();
    let b = &new[0];
    assert_eq!((b["type"].as_str(), b["subtype"].as_str()), (Some("system"), Some("compact_boundary")));
    assert!(b["parentUuid"].is_null());
    assert!(old_uuids.contains(b["logicalParentUuid"].as_str().unwrap()), "the boundary follows the old chain");
    assert!(b["compactMetadata"]["preTokens"].as_u64().unwrap() > 0);
    assert!(matches!(b["compactMetadata"]["trigger"].as_str(), Some("auto" | "manual")));
    let summary = new
        .iter()
        .find(|r| r["isCompactSummary"] == true && r.get("rivumi").is_some())
        .expect("a compact summary message of this tool's");
    let text = summary["message"]["content"].as_str().unwrap();
    assert!(text.starts_with("[rivumi] History summary fallback.") || summary["rivumi"] == "checkpoint", "{text}");
    assert!(text.contains("[rivumi] Re-anchor"), "the re-anchor block travels with the summary");
    // Claude Code 2.0 resumes the leaf with the latest timestamp: every appended record
    // is later than all the session holds, in order (ISO 8601 in UTC compares as text).
    let latest = before.iter().filter_map(|r| r["timestamp"].as_str()).max().unwrap();
    let stamps: Vec<&str> = new.iter().map(|r| r["timestamp"].as_str().unwrap()).collect();
    assert!(stamps[0] > latest && stamps.windows(2).all(|w| w[0] < w[1]), "{latest} then {stamps:?}");
    let mut parent = b["uuid"].as_str().unwrap().to_string();
    let mut seen = HashSet::new();
    for r in &new[1..] {
        let uuid = r["uuid"].as_str().unwrap();
        assert!(!old_uuids.contains(uuid) && seen.insert(uuid.to_string()), "fresh, unique uuids");
        assert_eq!(r["parentUuid"].as_str(), Some(parent.as_str()), "re-parented in order");
        assert_eq!(r["sessionId"].as_str(), Some(session), "the session id is kept");
        assert!(r["message"].get("usage").is_none(), "a copy is not a model call");
        parent = uuid.to_string();
    }
    // Claude Code joins records that share a `message.id`: a copy never keeps the
    // original's, and the records of one API message keep sharing theirs.
    let old_ids: HashSet<&str> = before.iter().filter_map(|r| r["message"]["id"].as_str()).collect();
    let mut pairs: HashSet<(&str, &str)> = HashSet::new();
    let mut used = vec![false; before.len()];
    for (r, id) in new.iter().filter_map(|r| Some((r, r["message"]["id"].as_str()?))) {
        assert!(!old_ids.contains(id), "a copy has a fresh message id: {r}");
        // Its original: the first record not matched yet that is the same but for the
        // ids and the usage.
        let k = (0..before.len())
            .find(|&k| !used[k] && without_ids(&before[k]) == without_ids(r))
            .expect("a copy has an original");
        used[k] = true;
        pairs.insert((before[k]["message"]["id"].as_str().unwrap(), id));
    }
    let olds: HashSet<&str> = pairs.iter().map(|p| p.0).collect();
    let news: HashSet<&str> = pairs.iter().map(|p| p.1).collect();
    assert_eq!((olds.len(), news.len()), (pairs.len(), pairs.len()), "one fresh id per API message: {pairs:?}");
    let all: HashSet<&str> = after.iter().filter_map(|r| r["uuid"].as_str()).collect();
    for r in &after {
        if let Some(p) = r["parentUuid"].as_str() {
            assert!(all.contains(p), "parentUuid {p} resolves");
        }
    }
}

/// A record without what a copy changes: its ids, its parent links, its timestamp and
/// its usage.
fn without_ids(r: &Value) -> Value {
    let mut r = r.clone();
    for k in ["uuid", "parentUuid", "logicalParentUuid", "sourceToolAssistantUUID", "timestamp"] {
        r.as_object_mut().unwrap().remove(k);
    }
    if let Some(m) = r.get_mut("message").and_then(Value::as_object_mut) {
        m.remove("id");
        m.remove("usage");
    }
    r
}

#[test]
fn a_claude_code_session_gets_a_boundary_it_can_resume_from() {
    let input = std::fs::read(root().join(CLAUDE)).unwrap();
    let out = compact(CLAUDE, "claude-code", BUDGET);
    check_claude_code(&input, &out);
    // The boundary records the context's size before it, as decide measures it.
    let boundary = records(&out).swap_remove(records(&input).len());
    assert_eq!(boundary["compactMetadata"]["preTokens"].as_u64(), Some(occupancy(CLAUDE)), "{boundary}");
    let (dir, path) = temp_file("session.jsonl", &out);
    let p = path_str(&path);
    // Read back: the context starts at the new boundary, with the protected head (the
    // first two history items of the context before: Claude Code's own summary and
    // the first call with its result), then the summary.
    let context = context_after_last_compaction(p);
    let kinds: Vec<String> =
        context.iter().map(|r| r["synthetic"].as_str().unwrap_or(r["type"].as_str().unwrap()).to_string()).collect();
    assert_eq!(kinds[..4], ["message", "message", "tool_result", "history_summary_fallback"], "{kinds:?}");
    assert!(context[0]["content"].as_str().unwrap().starts_with("This session is being continued"));
    assert!(context.iter().all(|r| r["type"] != "event" || r["name"] != "compaction_completed"));
    assert!(occupancy(p) < occupancy(CLAUDE), "{} then {}", occupancy(CLAUDE), occupancy(p));
    // A second run with the same flags has nothing to record, and writes nothing.
    let e = writes_nothing(p, "claude-code", BUDGET);
    assert!(e.contains("(none: the history fallback runs at most once per transcript)"), "{e}");
    drop(dir);
}

/// A Claude Code session of `turns` turns (prompt, a tool call, its result, an answer),
/// each record parented on the one before, as Claude Code writes them.
fn claude_session(turns: usize) -> Vec<u8> {
    let mut out = String::new();
    let mut parent = Value::Null;
    let mut push = |v: Value, uuid: &str| {
        let mut v = v;
        v["parentUuid"] = parent.clone();
        v["uuid"] = serde_json::json!(uuid);
        v["sessionId"] = serde_json::json!("sess-gen");
        v["isSidechain"] = serde_json::json!(false);
        v["timestamp"] = serde_json::json!("2026-02-11T10:00:00.000Z");
        out.push_str(&v.to_string());
        out.push('\n');
        parent = serde_json::json!(uuid);
    };
    for t in 0..turns {
        let filler = "let x = compute(); // filler\n".repeat(40);
        push(
            serde_json::json!({"type": "user", "message": {"role": "user", "content": format!("Task step {t}: fix module {t}.")}}),
            &format!("u{t}"),
        );
        push(
            serde_json::json!({"type": "assistant", "message": {"id": format!("msg{t}"), "role": "assistant", "model": "claude-x",
            "content": [{"type": "tool_use", "id": format!("tu{t}"), "name": "Read", "input": {"file_path": format!("/p/src/m{t}.rs")}}],
            "usage": {"input_tokens": 100, "cache_read_input_tokens": 1000 * (t as u64 + 1), "output_tokens": 50}}}),
            &format!("a{t}"),
        );
        push(
            serde_json::json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("tu{t}"), "content": filler}]}}),
            &format!("r{t}"),
        );
        push(
            serde_json::json!({"type": "assistant", "message": {"id": format!("msg{t}b"), "role": "assistant", "model": "claude-x",
            "content": [{"type": "text", "text": format!("Module {t} is fixed.")}],
            "usage": {"input_tokens": 100, "cache_read_input_tokens": 1000 * (t as u64 + 1) + 500, "output_tokens": 20}}}),
            &format!("f{t}"),
        );
    }
    out.into_bytes()
}

#[test]
fn a_claude_code_checkpoint_is_recorded_too() {
    let input = claude_session(12);
    let (dir, path) = temp_file("gen.jsonl", &input);
    let p = path_str(&path);
    let out = compact(p, "claude-code", &["--manual", "--no-native-compaction"]);
    check_claude_code(&input, &out);
    let new = records(&out).split_off(records(&input).len());
    assert_eq!(new[0]["compactMetadata"]["trigger"], "manual");
    assert_eq!(new[0]["compactMetadata"]["preTokens"].as_u64(), Some(occupancy(p)), "{}", new[0]);
    let summary = new.iter().find(|r| r["isCompactSummary"] == true && r.get("rivumi").is_some()).unwrap();
    assert_eq!(summary["rivumi"], "checkpoint");
    // The retained tail: the last turns, their call and result paired by tool id.
    let copies: Vec<&Value> = new.iter().filter(|r| r.get("rivumi").is_none() && r["type"] != "system").collect();
    assert!(!copies.is_empty());
    let last = copies.last().unwrap();
    assert_eq!(last["message"]["content"][0]["text"], "Module 11 is fixed.");
    let (odir, opath) = temp_file("out.jsonl", &out);
    assert!(occupancy(path_str(&opath)) < occupancy(p), "{} then {}", occupancy(p), occupancy(path_str(&opath)));
    writes_nothing(path_str(&opath), "claude-code", &["--no-native-compaction"]);
    drop((dir, odir));
}

#[test]
#[cfg_attr(realdata_absent, ignore = "../shared/realdata is absent")]
fn real_claude_code_sessions_round_trip() {
    for name in ["session-258c7280.jsonl", "session-8463c716.jsonl"] {
        let file = root().join("../shared/realdata/claude-code").join(name);
        let f = path_str(&file);
        let input = std::fs::read(&file).unwrap();
        let out = compact(f, "claude-code", &["--runtime", "agent-runner", "--max-total-tokens", "100000"]);
        check_claude_code(&input, &out);
        let (dir, path) = temp_file(name, &out);
        let p = path_str(&path);
        assert!(occupancy(p) * 4 < occupancy(f), "{name}: {} then {}", occupancy(f), occupancy(p));
        writes_nothing(p, "claude-code", &["--runtime", "agent-runner", "--max-total-tokens", "100000"]);
        drop(dir);
    }
}

/// Checks a Codex rollout written back: the input untouched, then a `compacted` record
/// and a `context_compacted` event; every call in the new history has its output.
fn check_codex(input: &[u8], out: &[u8]) -> Vec<Value> {
    assert!(out.starts_with(input), "the input comes first, unchanged");
    let after = records(out);
    let new = &after[records(input).len()..];
    assert_eq!(new.len(), 2, "{new:?}");
    assert_eq!(new[0]["type"], "compacted");
    assert_eq!(new[1]["type"], "event_msg");
    assert_eq!(new[1]["payload"]["type"], "context_compacted");
    let history = new[0]["payload"]["replacement_history"].as_array().unwrap().clone();
    assert!(new[0]["payload"]["message"].as_str().unwrap().starts_with("[rivumi] History summary fallback."));
    let calls: Vec<&str> =
        history.iter().filter(|h| h["type"] == "function_call").filter_map(|h| h["call_id"].as_str()).collect();
    for c in calls {
        assert!(
            history.iter().any(|h| h["type"] == "function_call_output" && h["call_id"] == c),
            "call {c} has its output"
        );
    }
    history
}

#[test]
fn a_codex_rollout_gets_a_compacted_record_it_can_resume_from() {
    let input = std::fs::read(root().join(CODEX)).unwrap();
    let out = compact(CODEX, "codex", BUDGET);
    let history = check_codex(&input, &out);
    let texts: Vec<&str> = history
        .iter()
        .filter(|h| h["role"] == "user")
        .filter_map(|h| h["content"][0]["text"].as_str())
        .filter(|t| t.starts_with("[rivumi]"))
        .collect();
    assert_eq!(texts.len(), 3, "summary, reminder and re-anchor: {texts:?}");
    // Codex before 0.59 resumes from `message` alone: it carries all three too.
    let compacted = records(&out).into_iter().rev().find(|r| r["type"] == "compacted").unwrap();
    let message = compacted["payload"]["message"].as_str().unwrap();
    assert_eq!(message, texts.join("\n\n"));
    let (dir, path) = temp_file("rollout.jsonl", &out);
    let p = path_str(&path);
    let context = context_after_last_compaction(p);
    // The protected head: the task (as the user's own message) and the assistant's
    // message restated by Codex's own compaction, then the summary.
    assert_eq!(context[0]["content"], "Fix the typo in README.md", "{:?}", context[0]);
    assert_eq!(context[2]["synthetic"], "history_summary_fallback", "{:?}", context[2]);
    assert!(context.iter().any(|r| r["type"] == "tool_result"), "calls and outputs are kept in the new history");
    assert!(occupancy(p) < occupancy(CODEX), "{} then {}", occupancy(CODEX), occupancy(p));
    writes_nothing(p, "codex", BUDGET);
    drop(dir);
}

/// A call the rollout never answered (the session stopped before its output) is kept
/// in the replacement history as the rollout has it, and `validate` finds the written
/// session sound: only a call whose recorded output was left out is a split.
#[test]
fn a_codex_call_answered_nowhere_is_kept_and_the_session_validates() {
    let input = std::fs::read(root().join(CODEX)).unwrap();
    let lines: Vec<&[u8]> = input.split_inclusive(|&b| b == b'\n').collect();
    let output_5 = lines.iter().position(|l| l.windows(27).any(|w| w == br#""call_id":"call_5","output""#));
    let pending: Vec<u8> =
        lines.iter().enumerate().filter(|(k, _)| Some(*k) != output_5).flat_map(|(_, l)| *l).copied().collect();
    assert!(output_5.is_some() && pending.len() < input.len(), "the case answers call_5");
    let (dir, path) = temp_file("rollout.jsonl", &pending);
    let mut args = vec!["run", path_str(&path), "--output-format", "codex"];
    args.extend_from_slice(BUDGET);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let history = records(&o.stdout).iter().rev().find(|r| r["type"] == "compacted").unwrap()["payload"]
        ["replacement_history"]
        .as_array()
        .unwrap()
        .clone();
    assert!(history.iter().any(|h| h["type"] == "function_call" && h["call_id"] == "call_5"), "{history:?}");
    assert!(!history.iter().any(|h| h["call_id"] == "call_5" && h["type"] == "function_call_output"));
    let (dir2, written) = temp_file("written.jsonl", &o.stdout);
    let v = run(&["validate", path_str(&written)]);
    assert_eq!(v.status.code(), Some(0), "{}", stdout(&v));
    drop((dir, dir2));
}

#[test]
fn resumable_output_needs_the_agents_own_session() {
    let o = run(&["run", CODEX, "--output-format", "claude-code"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--output-format claude-code writes a claude-code session back"), "{}", stderr(&o));
    let (dir, ds) = temp_file("ds.jsonl", b"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n");
    let o = run(&["run", path_str(&ds), "--output-format", "codex"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // Nothing to record: nothing written, and the flags that would compact it named.
    let e = writes_nothing(CLAUDE, "claude-code", &["--runtime", "conversation"]);
    assert!(e.contains("; --runtime agent-runner --manual would compact it"), "{e}");
    drop(dir);
}

/// A rollout's lines with an `ordinal` after each `timestamp`, as Codex 0.171 writes.
fn with_ordinals(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, line) in input.split(|&b| b == b'\n').filter(|l| !l.is_empty()).enumerate() {
        let text = std::str::from_utf8(line).unwrap();
        let rest = text.strip_prefix("{\"timestamp\":\"2026-08-03T10:48:56.000Z\",").unwrap();
        out.extend(format!("{{\"timestamp\":\"2026-08-03T10:48:56.000Z\",\"ordinal\":{k},{rest}\n").into_bytes());
    }
    out
}

#[test]
fn a_codex_rollout_that_numbers_its_records_gets_numbered_records() {
    // Codex resume refuses a rollout whose last record has no `ordinal`.
    let input = with_ordinals(&std::fs::read(root().join(CODEX)).unwrap());
    let n = records(&input).len() as u64;
    let (dir, path) = temp_file("rollout.jsonl", &input);
    let out = compact(path_str(&path), "codex", BUDGET);
    let new = records(&out).split_off(n as usize);
    assert_eq!(new.iter().map(|r| r["ordinal"].as_u64()).collect::<Vec<_>>(), [Some(n), Some(n + 1)]);
    let text = String::from_utf8(out).unwrap();
    let last = text.lines().last().unwrap();
    assert!(
        last.starts_with(&format!("{{\"timestamp\":\"2026-08-03T10:48:56.000Z\",\"ordinal\":{},", n + 1)),
        "{last}"
    );
    // The injected messages are known by their mark, not by their text.
    let history = new[0]["payload"]["replacement_history"].as_array().unwrap();
    let marked: Vec<&str> = history.iter().filter_map(|h| h["rivumi"].as_str()).collect();
    assert_eq!(marked, ["history_summary_fallback", "pressure_reminder", "reanchor"]);
    // Without ordinals in the input, none are written.
    assert!(compact(CODEX, "codex", BUDGET)
        .split(|&b| b == b'\n')
        .all(|l| !l.starts_with(b"{\"timestamp\":\"2026-08-03T10:48:56.000Z\",\"ordinal\"")));
    drop(dir);
}

#[test]
fn a_reused_codex_call_id_keeps_each_call_its_own_arguments() {
    let ts = r#"{"timestamp":"2026-08-03T10:48:56.000Z","#;
    let call = |n: usize, id: &str, cmd: &str| {
        format!(
            "{ts}\"type\":\"response_item\",\"payload\":{{\"type\":\"function_call\",\"call_id\":\"{id}\",\"name\":\"shell\",\"arguments\":\"{{\\\"command\\\":[\\\"bash\\\",\\\"-lc\\\",\\\"{cmd}\\\"]}}\"}}}}\n\
             {ts}\"type\":\"event_msg\",\"payload\":{{\"type\":\"token_count\",\"info\":{{\"last_token_usage\":{{\"input_tokens\":{},\"output_tokens\":10}}}}}}}}\n\
             {ts}\"type\":\"response_item\",\"payload\":{{\"type\":\"function_call_output\",\"call_id\":\"{id}\",\"output\":\"ok {n}\"}}}}\n",
            1000 * (n + 1)
        )
    };
    let mut input = format!(
        "{ts}\"type\":\"session_meta\",\"payload\":{{\"id\":\"reuse\",\"cwd\":\"/w\"}}}}\n\
         {ts}\"type\":\"response_item\",\"payload\":{{\"type\":\"message\",\"role\":\"user\",\"content\":[{{\"type\":\"input_text\",\"text\":\"Tidy up.\"}}]}}}}\n"
    );
    input += &call(0, "call_1", "cat f0.txt");
    for n in 1..5 {
        input += &call(n, &format!("call_x{n}"), &format!("ls d{n}"));
    }
    input += &call(5, "call_1", "rm -rf build");
    let (dir, path) = temp_file("reuse.jsonl", input.as_bytes());
    let out = compact(path_str(&path), "codex", &["--runtime", "agent-runner", "--max-total-tokens", "5000"]);
    let new = records(&out).split_off(records(input.as_bytes()).len());
    let history = new[0]["payload"]["replacement_history"].as_array().unwrap();
    let calls: Vec<&str> = history
        .iter()
        .filter(|h| h["type"] == "function_call" && h["call_id"] == "call_1")
        .map(|h| h["arguments"].as_str().unwrap())
        .collect();
    assert_eq!(calls.len(), 2, "{history:?}");
    assert!(calls[0].contains("cat f0.txt") && calls[1].contains("rm -rf build"), "{calls:?}");
    drop(dir);
}

#[test]
fn copied_claude_code_records_never_take_an_id_the_session_holds() {
    // A record whose uuid is a word the writer uses for its own records.
    let mut input = String::from_utf8(claude_session(6)).unwrap();
    for (old, new) in [("\"u0\"", "\"compact_boundary\""), ("\"a0\"", "\"injected-history_summary_fallback\"")] {
        input = input.replace(old, new);
    }
    let (dir, path) = temp_file("ids.jsonl", input.as_bytes());
    let out = compact(path_str(&path), "claude-code", &["--runtime", "agent-runner", "--max-total-tokens", "1000"]);
    check_claude_code(input.as_bytes(), &out);
    let all = records(&out);
    let mut uuids = HashSet::new();
    for r in &all {
        if let Some(u) = r["uuid"].as_str() {
            assert!(uuids.insert(u.to_string()), "uuid {u} appears twice");
        }
    }
    drop(dir);
}

/// A Gemini CLI session of one JSON document (the versions before 0.40, which read no
/// other shape and record no compression) is written back as that document, its keys
/// in their order and its `messages` the compacted history: what those versions
/// resume (JSON Lines made them say "No previous sessions found").
#[test]
fn a_gemini_cli_session_of_one_document_is_written_back_as_one_document() {
    const DOCUMENT: &str = "testdata/cases/gemini-cli-document/input.jsonl";
    let flags = ["--runtime", "agent-runner", "--max-total-tokens", "3000"];
    let out = compact(DOCUMENT, "gemini-cli", &flags);
    let doc: Value = serde_json::from_slice(&out).expect("one JSON document");
    let input: Value = serde_json::from_slice(&std::fs::read(root().join(DOCUMENT)).unwrap()).unwrap();
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&doc), keys(&input));
    assert_eq!(doc["sessionId"], input["sessionId"]);
    let messages = doc["messages"].as_array().unwrap();
    let marks: Vec<&str> = messages.iter().filter_map(|m| m["rivumi"].as_str()).collect();
    assert_eq!(marks, ["history_summary_fallback", "pressure_reminder", "reanchor"], "{messages:?}");
    assert!(messages.len() < input["messages"].as_array().unwrap().len() + marks.len());
    let (dir, path) = temp_file("session-2025-10-01T08-00-70168920.json", &out);
    let p = path_str(&path);
    let o = run(&["decide", "--json", p]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["input_format"], "gemini-cli");
    assert!(v["records"]["skipped"].get("unknown").is_none(), "{v}");
    writes_nothing(p, "gemini-cli", &flags);
    drop(dir);
}

/// A Gemini CLI session in JSON Lines keeps every record and gets one `$set` of
/// `messages`, the compacted history, as Gemini CLI records its own compression.
#[test]
fn a_gemini_cli_session_gets_a_set_of_messages_it_can_resume_from() {
    const SESSION: &str = "testdata/cases/gemini-cli-session/input.jsonl";
    let flags = ["--runtime", "agent-runner", "--max-total-tokens", "20000"];
    let input = std::fs::read(root().join(SESSION)).unwrap();
    let out = compact(SESSION, "gemini-cli", &flags);
    assert!(out.starts_with(&input), "the session is copied unchanged");
    let added = records(&out[input.len()..]);
    assert_eq!(added.len(), 1, "{added:?}");
    let messages = added[0]["$set"]["messages"].as_array().unwrap();
    assert!(messages.iter().any(|m| m["rivumi"] == "history_summary_fallback"), "{messages:?}");
    let (dir, path) = temp_file("session.jsonl", &out);
    let context = context_after_last_compaction(path_str(&path));
    assert!(context.iter().any(|r| r["synthetic"] == "history_summary_fallback"), "{context:?}");
    writes_nothing(path_str(&path), "gemini-cli", &flags);
    drop(dir);
}

/// Shapes their agent never resumes from a file are not written back: a rollout of the
/// TypeScript Codex (one JSON document), a chat Gemini CLI saved with `/chat save` (it
/// resumes those with `/chat resume`) and what `claude -p` and `gemini -p` print with
/// `--output-format stream-json` and `codex exec --json` prints. Usage error, nothing written; read without
/// `--output-format`, they compact as any transcript does.
#[test]
fn sessions_their_agent_never_resumes_from_a_file_are_not_written_back() {
    let flags = ["--runtime", "agent-runner", "--max-total-tokens", "5000"];
    for (case, format, why) in [
        (
            "codex-typescript-rollout",
            "codex",
            "is a rollout of the TypeScript Codex (0.1.x, one JSON document), which no Codex resumes",
        ),
        (
            "gemini-cli-saved-chat",
            "gemini-cli",
            "is a chat saved with `/chat save`, which Gemini CLI resumes with `/chat resume`",
        ),
        (
            "claude-code-stream-json",
            "claude-code",
            "is the output of `claude -p --output-format stream-json`, which Claude Code does not resume",
        ),
        ("codex-exec-json", "codex", "is the output of `codex exec --json`, which Codex does not resume"),
        ("codex-exec-json-2025", "codex", "is the output of `codex exec --json`, which Codex does not resume"),
        (
            "gemini-cli-stream-json",
            "gemini-cli",
            "is the output of `gemini -p --output-format stream-json`, which Gemini CLI does not resume",
        ),
    ] {
        let input = format!("testdata/cases/{case}/input.jsonl");
        let mut args = vec!["run", input.as_str(), "--output-format", format];
        args.extend_from_slice(&flags);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{case}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{case}: nothing is written");
        assert!(stderr(&o).contains(why), "{case}: {}", stderr(&o));
        assert!(stderr(&o).contains("leave --output-format out"), "{}", stderr(&o));
        let mut args = vec!["run", input.as_str()];
        args.extend_from_slice(&flags);
        assert!(run(&args).status.success(), "{case}");
    }
    // The later saved chat: the contents under `history`, pretty-printed.
    let contents: Value = serde_json::from_slice(
        &std::fs::read(root().join("testdata/cases/gemini-cli-saved-chat/input.jsonl")).unwrap(),
    )
    .unwrap();
    let later = serde_json::json!({"history": contents, "authType": "gemini-api-key"});
    let (dir, path) = temp_file("checkpoint-fix.json", serde_json::to_string_pretty(&later).unwrap().as_bytes());
    let mut args = vec!["run", path_str(&path), "--output-format", "gemini-cli"];
    args.extend_from_slice(&flags);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is a chat saved with `/chat save`"), "{}", stderr(&o));
    drop(dir);
}

/// The instructions Codex writes as user messages before the task (AGENTS.md, the
/// environment, skills) are not the conversation's first items: the protected head
/// keeps the user's task, in the transcript and in the written-back history (they took
/// both protected places, and the task was summarized away).
#[test]
fn a_codex_task_after_agents_md_and_the_environment_stays_protected() {
    use crate::support::{codex_item as item, codex_message as said, jsonl};
    use serde_json::json;
    let mut lines = vec![
        json!({"timestamp": "2026-12-07T10:00:00.000Z", "type": "session_meta", "payload": {"id": "s1", "cwd": "/tmp/repo", "cli_version": "0.80.0"}}),
        json!({"timestamp": "2026-12-07T10:00:00.000Z", "type": "turn_context", "payload": {"cwd": "/tmp/repo", "model": "gpt-5"}}),
        said("user", "# AGENTS.md instructions for /tmp/repo\n\n<INSTRUCTIONS>\nKeep diffs small.\n</INSTRUCTIONS>"),
        said("user", "<environment_context>\n  <cwd>/tmp/repo</cwd>\n  <shell>bash</shell>\n</environment_context>"),
        said("user", "Make the tests pass."),
    ];
    for k in 0..5 {
        let call_id = format!("call_{k}");
        lines.push(item(json!({"type": "function_call", "name": "shell", "call_id": call_id,
            "arguments": json!({"command": ["bash", "-lc", format!("cargo test --test t{k}")]}).to_string()})));
        lines.push(item(
            json!({"type": "function_call_output", "call_id": call_id, "output": "test output ".repeat(200)}),
        ));
    }
    lines.push(said("assistant", "All tests pass."));
    let text = jsonl(&lines);
    let (dir, path) = temp_file("rollout.jsonl", text.as_bytes());
    let p = path_str(&path);
    let mut args = vec!["run", p];
    args.extend_from_slice(BUDGET);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let items = records(&o.stdout);
    let roles: Vec<&str> = items[1..3].iter().map(|r| r["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["developer", "developer"], "the instructions Codex wrote");
    let task = items.iter().position(|r| r["content"] == "Make the tests pass.").expect("the task is kept");
    let summary = items.iter().position(|r| r["synthetic"] == "history_summary_fallback").expect("a fallback");
    assert!(task < summary, "the task is in the protected head");
    // Written back, the history keeps the instructions and the task, as the rollout has them.
    let out = compact(p, "codex", BUDGET);
    let history = records(&out).iter().rev().find(|r| r["type"] == "compacted").unwrap()["payload"]
        ["replacement_history"]
        .clone();
    let head: Vec<(&str, &str)> = history.as_array().unwrap()[..3]
        .iter()
        .map(|h| (h["role"].as_str().unwrap(), &h["content"][0]["text"].as_str().unwrap()[..12]))
        .collect();
    assert_eq!(head, [("user", "# AGENTS.md "), ("user", "<environment"), ("user", "Make the tes")]);
    drop(dir);
}
