//! Dataset mode (SPEC 1 "Other formats"): one OpenAI-format conversation per line,
//! each compacted on its own through the same pipeline as a transcript, giving exactly
//! one output line in the same format. The importer (`formats::openai`) only maps a
//! line to canonical records; this module runs the policy on it and maps the plan back.

use crate::engine::{self, Processed, Settings};
use crate::error::{Error, Result};
use crate::formats::openai::{to_canonical, NAME_PREFIX};
use serde_json::{json, Map, Value};
use std::path::Path;

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
    // A refused checkpoint fails the line (exit 4 at the end), as it fails a file.
    if let Some(r) = done.plan.decision.reasons.iter().find(|r| r.code == crate::policy::ReasonCode::CheckpointRefused)
    {
        return Ok(LineOutcome::Bad(format!("{}:{line_no}: {}", file.display(), r.message)));
    }
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
