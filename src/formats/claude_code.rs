//! Claude Code session JSONL (SPEC 1 "Other formats"): the main thread rebuilt from the
//! `parentUuid` tree, split API messages joined by `message.id`, `tool_use` /
//! `tool_result` blocks as calls and results, the compact boundary as a completed
//! compaction.

use super::common::{json_lines, message, text_of, tool_result, Imported};
use crate::error::Result;
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Context windows by model, where they differ from the 200,000-token default.
/// Models whose name ends in `[1m]` run with the 1M-token beta window.
pub fn context_window(model: Option<&str>) -> u64 {
    match model {
        Some(m) if m.ends_with("[1m]") => 1_000_000,
        _ => 200_000,
    }
}

const NOT_MODEL_VISIBLE: &[&str] = &["progress", "file-history-snapshot", "queue-operation", "summary", "system"];

pub fn import(raw: &[u8], file: &Path) -> Result<Imported> {
    let lines = json_lines(raw, file)?;
    let records: Vec<&Value> = lines.iter().map(|(_, v)| v).collect();
    let on_thread = main_thread(&records);
    let mut out = Imported::default();
    let mut tool_names: HashMap<String, String> = HashMap::new();
    let mut groups: HashMap<String, usize> = HashMap::new(); // message.id → index in out.records
    let mut turn = 0usize;
    let mut compactions = 0usize;
    let mut model: Option<String> = None;
    let mut cwd: Option<String> = None;
    let mut session_id: Option<String> = None;
    for (idx, r) in records.iter().enumerate() {
        out.line = lines[idx].0;
        let ty = r.get("type").and_then(Value::as_str).unwrap_or("");
        session_id = session_id.or_else(|| r.get("sessionId").and_then(Value::as_str).map(str::to_string));
        if !matches!(ty, "user" | "assistant") {
            if ty == "system" && r.get("subtype").and_then(Value::as_str) == Some("compact_boundary") && on_thread[idx]
            {
                compactions += 1;
                out.push(boundary_event(r, compactions));
            } else if !NOT_MODEL_VISIBLE.contains(&ty) {
                out.skip(if ty.is_empty() { "(no type)" } else { ty });
            }
            continue;
        }
        if !on_thread[idx] || r.get("isSidechain").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        cwd = cwd.or_else(|| r.get("cwd").and_then(Value::as_str).map(str::to_string));
        let uuid = r.get("uuid").and_then(Value::as_str).unwrap_or("");
        let msg = r.get("message").cloned().unwrap_or(Value::Null);
        if ty == "assistant" {
            if let Some(m) = msg.get("model").and_then(Value::as_str).filter(|m| !m.starts_with('<')) {
                model = Some(m.to_string());
            }
            assistant(&mut out, &mut groups, &mut tool_names, &msg, uuid, turn);
        } else {
            let content = msg.get("content").cloned().unwrap_or(Value::Null);
            // A record this tool wrote (`--output-format claude-code`) is its injected kind.
            if let Some(kind) = r.get(crate::formats::openhands::INJECTED_KEY).and_then(Value::as_str) {
                let mut m = message(uuid, &format!("turn-{turn}"), "user", json!(text_of(&content)));
                m.insert("synthetic".into(), json!(kind));
                out.push(Value::Object(m));
                continue;
            }
            let is_prompt = !matches!(&content, Value::Array(a) if a.iter().any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result")));
            if is_prompt {
                turn += 1;
            }
            user(&mut out, &tool_names, &content, uuid, turn);
        }
    }
    let window = context_window(model.as_deref());
    out.session.insert("id".into(), json!(session_id.unwrap_or_else(|| "claude-code".into())));
    out.session
        .insert("runtime".into(), json!({"kind": "conversation", "native_compaction": true, "context_window": window}));
    if let Some(cwd) = cwd {
        out.session.insert("workspace".into(), json!({"root": cwd}));
    }
    Ok(out)
}

/// Marks the records of the main thread: the path from the last record to the root
/// (crossing compact boundaries through `logicalParentUuid`), plus the other records of
/// the same API messages and the results of the calls on it.
pub(crate) fn main_thread(records: &[&Value]) -> Vec<bool> {
    let uuid_at: HashMap<&str, usize> =
        records.iter().enumerate().filter_map(|(i, r)| Some((r.get("uuid")?.as_str()?, i))).collect();
    let mut on = vec![false; records.len()];
    let main = |k: usize| {
        let r = records[k];
        r.get("uuid").is_some() && r.get("isSidechain").and_then(Value::as_bool) != Some(true)
    };
    // Where the walk goes on when the chain breaks: the latest record before `i`, in
    // file order, that is not on the path yet.
    let before = |i: usize, on: &[bool]| (0..i).rev().find(|&k| main(k) && !on[k]);
    let mut cursor = (0..records.len()).rev().find(|&k| main(k));
    while let Some(i) = cursor {
        on[i] = true;
        let r = records[i];
        let named =
            r.get("parentUuid").and_then(Value::as_str).or_else(|| r.get("logicalParentUuid").and_then(Value::as_str));
        cursor = match named.map(|p| uuid_at.get(p).copied()) {
            None => None,                           // a root
            Some(Some(p)) if !on[p] => Some(p),     // the parent
            Some(Some(_) | None) => before(i, &on), // a cycle, or a parent not in the file
        };
    }
    let message_ids: HashSet<&str> =
        (0..records.len()).filter(|&i| on[i]).filter_map(|i| records[i].get("message")?.get("id")?.as_str()).collect();
    let mut calls: HashSet<String> = HashSet::new();
    for (i, r) in records.iter().enumerate() {
        if let Some(id) = r.get("message").and_then(|m| m.get("id")).and_then(Value::as_str) {
            if message_ids.contains(id) && r.get("type").and_then(Value::as_str) == Some("assistant") {
                on[i] = true;
            }
        }
        if on[i] {
            for b in blocks(r) {
                if b.get("type").and_then(Value::as_str) == Some("tool_use") {
                    calls.extend(b.get("id").and_then(Value::as_str).map(str::to_string));
                }
            }
        }
    }
    for (i, r) in records.iter().enumerate() {
        if blocks(r).iter().any(|b| b.get("tool_use_id").and_then(Value::as_str).is_some_and(|id| calls.contains(id))) {
            on[i] = true;
        }
    }
    on
}

fn blocks(r: &Value) -> Vec<&Value> {
    match r.get("message").and_then(|m| m.get("content")) {
        Some(Value::Array(a)) => a.iter().collect(),
        _ => Vec::new(),
    }
}

fn boundary_event(r: &Value, n: usize) -> Value {
    let meta = r.get("compactMetadata");
    json!({"type": "event", "name": crate::transcript::Event::CompactionCompleted.as_str(), "id": format!("claude-compact-{n}"),
        "trigger": meta.and_then(|m| m.get("trigger")).cloned().unwrap_or(Value::Null),
        "pre_tokens": meta.and_then(|m| m.get("preTokens")).cloned().unwrap_or(Value::Null),
        "source_uuid": r.get("uuid").cloned().unwrap_or(Value::Null)})
}

/// One record of an API message: joined with the others of the same `message.id`.
fn assistant(
    out: &mut Imported,
    groups: &mut HashMap<String, usize>,
    names: &mut HashMap<String, String>,
    msg: &Value,
    uuid: &str,
    turn: usize,
) {
    let id = msg.get("id").and_then(Value::as_str).unwrap_or(uuid).to_string();
    let at = *groups.entry(id.clone()).or_insert_with(|| {
        let mut m = message(&id, &format!("turn-{turn}"), "assistant", json!([]));
        m.insert("tool_calls".into(), json!([]));
        out.push(Value::Object(m));
        out.records.len() - 1
    });
    let record = out.records[at].as_object_mut().expect("an object");
    for b in msg.get("content").and_then(Value::as_array).into_iter().flatten() {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => {
                push(record, "content", json!({"type": "text", "text": b.get("text").cloned().unwrap_or(json!(""))}));
            }
            Some("tool_use") => {
                let call_id = b.get("id").and_then(Value::as_str).unwrap_or("");
                let name = b.get("name").and_then(Value::as_str).unwrap_or("");
                names.insert(call_id.to_string(), name.to_string());
                let args = b.get("input").cloned().unwrap_or(json!({}));
                push(record, "tool_calls", json!({"id": call_id, "name": name, "arguments": args}));
            }
            _ => {} // thinking blocks are not resent as context text
        }
    }
    if let Some(u) = msg.get("usage") {
        let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
        // The usage repeats on every record of a message; the last record's wins.
        record.insert(
            "usage".into(),
            super::common::usage(
                n("input_tokens"),
                n("cache_read_input_tokens"),
                n("cache_creation_input_tokens"),
                n("output_tokens"),
                super::common::InputCount::Uncached,
            ),
        );
    }
}

fn push(record: &mut Map<String, Value>, key: &str, v: Value) {
    if let Some(Value::Array(a)) = record.get_mut(key) {
        a.push(v);
    }
}

fn user(out: &mut Imported, names: &HashMap<String, String>, content: &Value, uuid: &str, turn: usize) {
    let turn = format!("turn-{turn}");
    let Value::Array(blocks) = content else {
        out.push(Value::Object(message(uuid, &turn, "user", json!(text_of(content)))));
        return;
    };
    let mut text = Vec::new();
    let mut k = 0;
    for b in blocks {
        if b.get("type").and_then(Value::as_str) == Some("tool_result") {
            let call_id = b.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
            let id = if k == 0 { uuid.to_string() } else { format!("{uuid}#{k}") };
            k += 1;
            let body = json!(text_of(b.get("content").unwrap_or(&Value::Null)));
            let failed = b.get("is_error").and_then(Value::as_bool).unwrap_or(false);
            out.push(Value::Object(tool_result(
                &id,
                &turn,
                call_id,
                names.get(call_id).map(String::as_str),
                body,
                failed,
            )));
        } else if let Some(t) = b.get("text").and_then(Value::as_str) {
            text.push(t.to_string());
        }
    }
    if !text.is_empty() {
        let id = if k == 0 { uuid.to_string() } else { format!("{uuid}#text") };
        out.push(Value::Object(message(&id, &turn, "user", json!(text.join("\n")))));
    }
}
