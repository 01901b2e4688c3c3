//! OpenHands event streams (SPEC 1 "Other formats"): a JSON array of events, or JSONL
//! whose lines carry a `history` array. Actions and observations pair by `cause` /
//! `tool_call_metadata.tool_call_id`; usage is counted once per model response id.

use super::common::{json_document, json_lines, message, text_of, tool_result, Imported};
use super::DEFAULT_SHELL_TOOLS;
use crate::error::{Error, Result};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::path::Path;

const AGENT_ACTIONS: &[&str] = &["run", "edit", "finish", "message", "read", "write", "run_ipython", "browse", "think"];
const SILENT: &[&str] = &["agent_state_changed", "change_agent_state", "null", "system", "recall"];

pub fn import(raw: &[u8], file: &Path) -> Result<Imported> {
    from_events(&events(raw, file)?, file)
}

/// An evaluation output's line: one instance (`instance_id`) with its `history`.
pub fn is_evaluation_output(keys: &[String]) -> bool {
    keys.iter().any(|k| k == "instance_id") && keys.iter().any(|k| k == "history")
}

/// The item id of event `k`: `e<id>`, or `e#<k>` for an event without an id.
pub fn event_item_id(e: &Value, k: usize) -> String {
    match e.get("id").filter(|v| !v.is_null()) {
        Some(v) => format!("e{}", v.to_string().trim_matches('"')),
        None => format!("e#{k}"),
    }
}

/// Marks a record this tool injected into an OpenHands history (so a second run knows it).
pub const INJECTED_KEY: &str = "rivumi";

/// The canonical records of a list of events.
pub fn from_events(events: &[Value], file: &Path) -> Result<Imported> {
    let mut out = Imported::default();
    let mut turn = 0;
    let mut seen_responses: HashSet<String> = HashSet::new();
    let mut call_of_event: HashMap<String, (String, String)> = HashMap::new(); // action id → (call id, name)
    let mut workspace = false;
    for (k, e) in events.iter().enumerate() {
        let id = event_item_id(e, k);
        let source = e.get("source").and_then(Value::as_str).unwrap_or("");
        if let Some(action) = e.get("action").and_then(Value::as_str) {
            if action == "message" && source == "user" {
                turn += usize::from(e.get(INJECTED_KEY).is_none());
                let text = e
                    .get("args")
                    .and_then(|a| a.get("content"))
                    .and_then(Value::as_str)
                    .or_else(|| e.get("message").and_then(Value::as_str))
                    .unwrap_or("");
                let mut rec = message(&id, &format!("turn-{turn}"), "user", json!(text));
                if let Some(kind) = e.get(INJECTED_KEY).and_then(Value::as_str) {
                    rec.insert("synthetic".into(), json!(kind));
                }
                out.push(Value::Object(rec));
            } else if source == "agent" && AGENT_ACTIONS.contains(&action) {
                let meta = e.get("tool_call_metadata");
                let thought = e.get("args").and_then(|a| a.get("thought")).and_then(Value::as_str).unwrap_or("");
                let text = if action == "message" || action == "finish" {
                    e.get("message").and_then(Value::as_str).unwrap_or(thought)
                } else {
                    thought
                };
                let mut rec = message(&id, &format!("turn-{turn}"), "assistant", json!(text));
                if let Some(meta) = meta.filter(|m| !m.is_null()) {
                    let call_id = meta.get("tool_call_id").and_then(Value::as_str).unwrap_or(&id).to_string();
                    let name = meta.get("function_name").and_then(Value::as_str).unwrap_or(action).to_string();
                    let args =
                        call_arguments(meta, &call_id).unwrap_or_else(|| e.get("args").cloned().unwrap_or(Value::Null));
                    workspace |= args.get("path").and_then(Value::as_str).is_some_and(|p| p.starts_with("/workspace/"));
                    rec.insert("tool_calls".into(), json!([{"id": call_id, "name": name, "arguments": args}]));
                    call_of_event.insert(id.clone(), (call_id, name));
                    if let Some(u) = response_usage(meta, &mut seen_responses) {
                        rec.insert("usage".into(), u);
                    }
                }
                out.push(Value::Object(rec));
            } else if !SILENT.contains(&action) && source != "environment" {
                out.skip(&format!("action/{action}"));
            }
        } else if let Some(obs) = e.get("observation").and_then(Value::as_str) {
            if SILENT.contains(&obs) || source == "environment" {
                continue;
            }
            let cause =
                format!("e{}", e.get("cause").map(|v| v.to_string().trim_matches('"').to_string()).unwrap_or_default());
            let from_meta = e.get("tool_call_metadata").and_then(|m| m.get("tool_call_id")).and_then(Value::as_str);
            let (call_id, name) = match (call_of_event.get(&cause), from_meta) {
                (Some((c, n)), _) => (c.clone(), Some(n.clone())),
                (None, Some(c)) => (c.to_string(), None),
                (None, None) => (cause.clone(), None),
            };
            let failed = reports_error(e, obs);
            let mut rec = tool_result(
                &id,
                &format!("turn-{turn}"),
                &call_id,
                name.as_deref(),
                json!(text_of(e.get("content").unwrap_or(&Value::Null))),
                failed,
            );
            if let Some(code) =
                e.get("extras").and_then(|x| x.get("metadata")).and_then(|m| m.get("exit_code")).and_then(Value::as_i64)
            {
                rec.insert("exit_code".into(), json!(code));
            }
            out.push(Value::Object(rec));
        } else {
            out.skip("(neither action nor observation)");
        }
    }
    out.session
        .insert("id".into(), json!(file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()));
    out.session.insert("runtime".into(), json!({"kind": "agent-runner"}));
    // OpenHands' shell tool is `execute_bash`; the importer's layer adds it to the defaults.
    let mut shells: Vec<&str> = DEFAULT_SHELL_TOOLS.to_vec();
    shells.push("execute_bash");
    out.session.insert("reanchor".into(), json!({"shell_tools": shells}));
    if workspace {
        out.session.insert("workspace".into(), json!({"root": "/workspace"}));
    }
    Ok(out)
}

/// An observation that reports an error: the action did not happen (an `error`
/// observation, `success: false`, an `ERROR:` message, or a non-zero exit code).
fn reports_error(e: &Value, obs: &str) -> bool {
    let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").trim_start().to_string();
    obs == "error"
        || e.get("success").and_then(Value::as_bool) == Some(false)
        || text("content").starts_with("ERROR:")
        || (obs != "run" && text("message").starts_with("ERROR:"))
}

fn events(raw: &[u8], file: &Path) -> Result<Vec<Value>> {
    let first = raw.iter().find(|b| !b.is_ascii_whitespace()).copied();
    if first == Some(b'[') {
        return match json_document(raw, file)? {
            Value::Array(a) => Ok(a),
            _ => Err(Error::bad_input(file, "expected a JSON array of events")),
        };
    }
    let mut all = Vec::new();
    for (_, line) in json_lines(raw, file)? {
        match line.get("history") {
            Some(Value::Array(h)) => all.extend(h.iter().cloned()),
            _ => all.push(line),
        }
    }
    Ok(all)
}

/// The call's arguments from the model response (the event's own `args` lose the file text).
fn call_arguments(meta: &Value, call_id: &str) -> Option<Value> {
    let calls = meta.get("model_response")?.get("choices")?.get(0)?.get("message")?.get("tool_calls")?.as_array()?;
    let call = calls.iter().find(|c| c.get("id").and_then(Value::as_str) == Some(call_id))?;
    Some(super::common::arguments(Some(call.get("function")?.get("arguments")?)))
}

/// Usage of a model response, once per response id (actions and observations repeat it).
fn response_usage(meta: &Value, seen: &mut HashSet<String>) -> Option<Value> {
    let resp = meta.get("model_response")?;
    let rid = resp.get("id").and_then(Value::as_str)?.to_string();
    if !seen.insert(rid) {
        return None;
    }
    let u = resp.get("usage")?;
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    let cache_read = n("cache_read_input_tokens")
        .max(u.get("prompt_tokens_details").and_then(|d| d.get("cached_tokens")).and_then(Value::as_u64).unwrap_or(0));
    let cache_write = n("cache_creation_input_tokens");
    let (input, output) = (n("prompt_tokens"), n("completion_tokens"));
    Some(super::common::usage(input, cache_read, cache_write, output, super::common::InputCount::WithCache))
}
