//! OpenAI chat-format datasets (SPEC 1 "Other formats"): one conversation per line,
//! `{"messages":[…]}`. Dataset mode: every line is compacted on its own and gives
//! exactly one output line, in the same format and order.

use crate::engine::{self, Processed, Settings};
use crate::error::{Error, Result};
use serde_json::{json, Map, Value};
use std::path::Path;

/// Injected messages carry `name: "rivumi-<kind>"` (a field the chat format allows), so
/// a second run recognises them.
const NAME_PREFIX: &str = "rivumi-";

/// The canonical form of one dataset line, and its original messages by item.
pub fn to_canonical(line: &Value) -> std::result::Result<Vec<u8>, String> {
    let messages =
        line.get("messages").and_then(Value::as_array).ok_or("expected an object with a \"messages\" array")?;
    let mut out = Vec::new();
    let mut turn = 0;
    let mut names: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for (k, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).ok_or_else(|| format!("message {k}: expected a \"role\""))?;
        let id = format!("m{k}");
        let content = json!(super::common::text_of(m.get("content").unwrap_or(&Value::Null)));
        let rec = match role {
            "tool" => {
                let call_id = m.get("tool_call_id").and_then(Value::as_str).unwrap_or("");
                super::common::tool_result(
                    &id,
                    &format!("t{turn}"),
                    call_id,
                    names.get(call_id).map(String::as_str),
                    content,
                    false,
                )
            }
            "system" | "developer" | "user" | "assistant" => {
                if role == "user" && synthetic_kind(m).is_none() {
                    turn += 1;
                }
                let mut r = super::common::message(&id, &format!("t{turn}"), role, content);
                if let Some(calls) = m.get("tool_calls").and_then(Value::as_array) {
                    r.insert("tool_calls".into(), Value::Array(calls.iter().map(|c| call(c, &mut names)).collect()));
                }
                if let Some(u) = m.get("usage").or_else(|| line.get("usage").filter(|_| k + 1 == messages.len())) {
                    if role == "assistant" {
                        r.insert("usage".into(), usage(u));
                    }
                }
                if let Some(kind) = synthetic_kind(m) {
                    r.insert("synthetic".into(), json!(kind));
                }
                r
            }
            other => return Err(format!("message {k}: unknown role {other:?}")),
        };
        out.extend(Value::Object(rec).to_string().into_bytes());
        out.push(b'\n');
    }
    Ok(out)
}

fn synthetic_kind(m: &Value) -> Option<&str> {
    m.get("name").and_then(Value::as_str)?.strip_prefix(NAME_PREFIX)
}

fn call(c: &Value, names: &mut std::collections::HashMap<String, String>) -> Value {
    let f = c.get("function").unwrap_or(&Value::Null);
    let id = c.get("id").and_then(Value::as_str).unwrap_or("");
    let name = f.get("name").and_then(Value::as_str).unwrap_or("");
    names.insert(id.to_string(), name.to_string());
    let args = match f.get("arguments") {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or_else(|_| json!(s)),
        Some(v) => v.clone(),
        None => Value::Null,
    };
    json!({"id": id, "name": name, "arguments": args})
}

/// OpenAI counts cached tokens inside `prompt_tokens`: subtract them (SPEC 1).
fn usage(u: &Value) -> Value {
    let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let cached = n(u.get("prompt_tokens_details").and_then(|d| d.get("cached_tokens")));
    json!({"input_tokens": n(u.get("prompt_tokens")).saturating_sub(cached), "cache_read_tokens": cached,
        "cache_write_tokens": 0, "output_tokens": n(u.get("completion_tokens"))})
}

/// The output line for a processed conversation: kept messages as they were, injected
/// ones as user messages named `rivumi-<kind>`. Walks the plan directly (no
/// re-serialization of the kept messages).
pub fn from_plan(line: &Value, done: &Processed<'_>) -> Value {
    let originals = line.get("messages").and_then(Value::as_array).cloned().unwrap_or_default();
    let (t, plan) = (&done.transcript, &done.plan);
    let removed: std::collections::HashSet<usize> = plan.removed.iter().copied().collect();
    let mut messages = Vec::with_capacity(originals.len() + plan.appended.len() + 1);
    for (ri, r) in t.records.iter().enumerate() {
        if let Some(i) = r.kind_item().filter(|i| !removed.contains(i)) {
            let k = t.items[i].id.strip_prefix('m').and_then(|k| k.parse::<usize>().ok());
            messages.extend(k.and_then(|k| originals.get(k)).cloned());
        }
        if let Some((_, injected)) = plan.replacement.as_ref().filter(|(at, _)| *at == ri) {
            messages.push(chat_message(injected));
        }
    }
    messages.extend(plan.appended.iter().map(|a| chat_message(a)));
    let mut out: Map<String, Value> = line.as_object().cloned().unwrap_or_default();
    out.insert("messages".into(), Value::Array(messages));
    Value::Object(out)
}

/// An injected canonical record as a chat message.
fn chat_message(record: &str) -> Value {
    let v: Value = serde_json::from_str(record).unwrap_or(Value::Null);
    let kind = v.get("synthetic").and_then(Value::as_str).unwrap_or("note");
    json!({"role": "user", "name": format!("{NAME_PREFIX}{kind}"), "content": v.get("content").cloned().unwrap_or(json!(""))})
}

/// What happened to one dataset line.
pub enum LineOutcome {
    /// Compacted: the new line.
    Changed(String),
    Unchanged,
    /// A bad line: echoed unchanged, reported with this message.
    Bad(String),
}

/// Processes one dataset line (without its terminator).
pub fn process_line(text: &str, file: &Path, line_no: usize, settings: &Settings) -> Result<LineOutcome> {
    if text.trim().is_empty() {
        return Ok(LineOutcome::Unchanged);
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            let (column, msg) = crate::error::serde_position(&e, text);
            return Ok(LineOutcome::Bad(format!("{}:{line_no}:{column}: {msg}", file.display())));
        }
    };
    let canonical = match to_canonical(&value) {
        Ok(c) => c,
        Err(m) => return Ok(LineOutcome::Bad(format!("{}:{line_no}:1: {m}", file.display()))),
    };
    let name = Path::new("line");
    let done = match engine::process(&canonical, name, settings) {
        Ok(d) => d,
        Err(Error::Failed(m)) => return Err(Error::Failed(m)),
        Err(e) => return Ok(LineOutcome::Bad(format!("{}:{line_no}: {e}", file.display()))),
    };
    if !done.plan.changes() {
        return Ok(LineOutcome::Unchanged);
    }
    Ok(LineOutcome::Changed(from_plan(&value, &done).to_string()))
}

/// Adds one dataset line to `stats`; a bad line counts as failed and returns its message.
pub fn add_line_stats(
    text: &str,
    file: &Path,
    line_no: usize,
    settings: &Settings,
    stats: &mut crate::stats::Stats,
) -> Option<String> {
    if text.trim().is_empty() {
        return None;
    }
    let result = serde_json::from_str::<Value>(text)
        .map_err(|e| e.to_string())
        .and_then(|v| to_canonical(&v))
        .and_then(|canonical| {
            let done = engine::process(&canonical, Path::new("line"), settings).map_err(|e| e.to_string())?;
            stats.add(&done);
            Ok(())
        });
    result.err().map(|m| {
        stats.failed += 1;
        format!("{}:{line_no}: {m}", file.display())
    })
}
