//! The compaction appended to a Codex rollout as Codex records its own: a `compacted`
//! record whose `replacement_history` is the history the model sees from now on, then
//! a `context_compacted` event. Kept items are the rollout's own `response_item`
//! payloads, copied as they were (calls keep their type and `call_id`); injected texts
//! are user messages, known again by the header they start with.

use super::{Compaction, Step};
use crate::engine::Processed;
use crate::error::Result;
use crate::transcript::{ItemKind, Role};
use serde_json::{json, Value};
use std::collections::HashMap;

pub(super) fn append(done: &Processed<'_>, c: &Compaction, original: &[u8]) -> Result<Vec<Value>> {
    let lines = crate::formats::common::json_lines(original, &done.transcript_name)?;
    let by_line: HashMap<usize, &Value> = lines.iter().map(|(n, v)| (*n, v)).collect();
    // Payloads of calls by call_id, for the calls an assistant item gathered.
    let mut calls: HashMap<&str, &Value> = HashMap::new();
    for (_, r) in &lines {
        let p = r.get("payload").unwrap_or(&Value::Null);
        let kind = p.get("type").and_then(Value::as_str).unwrap_or("");
        if r.get("type").and_then(Value::as_str) == Some("response_item")
            && matches!(kind, "function_call" | "custom_tool_call" | "local_shell_call")
        {
            if let Some(id) = p.get("call_id").and_then(Value::as_str) {
                calls.insert(id, p);
            }
        }
    }
    let timestamp = lines.iter().rev().find_map(|(_, r)| r.get("timestamp").cloned()).unwrap_or(Value::Null);
    let t = &done.transcript;
    let mut history: Vec<Value> = Vec::new();
    for step in &c.steps {
        match step {
            Step::Kept(i) => {
                let item = &t.items[*i];
                let own = payload(&by_line, &item.id);
                match (&item.kind, own) {
                    // The rollout's own item: a message, or a call's output.
                    (_, Some(p))
                        if matches!(p.get("type").and_then(Value::as_str), Some("message" | "agent_message"))
                            || is_output(p) =>
                    {
                        history.push(p.clone());
                    }
                    // An assistant item made only of calls (or of usage) has no message;
                    // every result has its own rollout item (above).
                    (ItemKind::Message { role: Role::Assistant, .. } | ItemKind::ToolResult { .. }, _) => {}
                    // Not from a rollout line: its text as a message of its role.
                    (ItemKind::Message { role, .. }, _) => {
                        let text = crate::transcript::item_text(t, *i);
                        history.push(json!({"type": "message", "role": role.as_str(),
                            "content": [{"type": "input_text", "text": text}]}));
                    }
                }
                for call in item.calls() {
                    if let Some(p) = calls.get(call.id.as_ref()) {
                        history.push((*p).clone());
                    }
                }
            }
            Step::Injected(_, text) => {
                history.push(
                    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}),
                );
            }
        }
    }
    Ok(vec![
        json!({"timestamp": timestamp, "type": "compacted", "payload": {"message": c.summary, "replacement_history": history}}),
        json!({"timestamp": timestamp, "type": "event_msg", "payload": {"type": "context_compacted"}}),
    ])
}

fn is_output(p: &Value) -> bool {
    matches!(
        p.get("type").and_then(Value::as_str),
        Some("function_call_output" | "custom_tool_call_output" | "local_shell_call_output")
    )
}

/// The payload an item id names: `L<n>` is the `response_item` of line n, `L<n>.<k>`
/// the k-th item of the `replacement_history` on line n.
fn payload<'v>(by_line: &HashMap<usize, &'v Value>, id: &str) -> Option<&'v Value> {
    let rest = id.strip_prefix('L')?;
    let (line, k) = match rest.split_once('.') {
        Some((l, k)) => (l.parse::<usize>().ok()?, Some(k.parse::<usize>().ok()?)),
        None => (rest.parse::<usize>().ok()?, None),
    };
    let r = by_line.get(&line)?;
    match k {
        None if r.get("type").and_then(Value::as_str) == Some("response_item") => r.get("payload"),
        None => None,
        Some(k) => r.get("payload")?.get("replacement_history")?.get(k),
    }
}
