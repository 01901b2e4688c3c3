//! The compaction appended to a Codex rollout as Codex records its own: a `compacted`
//! record whose `replacement_history` is the history the model sees from now on, then
//! a `context_compacted` event. Kept items are the rollout's own `response_item`
//! payloads, copied as they were (calls keep their type and `call_id`); injected texts
//! are user messages marked with a `rivumi` field of their kind.

use super::Compaction;
use crate::engine::Processed;
use crate::error::Result;
use crate::formats::codex::{is_call, is_output};
use crate::formats::openhands::INJECTED_KEY;
use crate::policy::Step;
use crate::transcript::{ItemKind, Role};
use serde_json::{json, Value};
use std::collections::HashMap;

pub(super) fn append(done: &Processed<'_>, c: &Compaction, original: &[u8]) -> Result<Vec<Value>> {
    let lines = crate::formats::common::json_lines(original, &done.transcript_name)?;
    let by_line: HashMap<usize, &Value> = lines.iter().map(|(n, v)| (*n, v)).collect();
    let mut calls = CallPayloads::of(&lines);
    let t = &done.transcript;
    // The k-th call of an id in the transcript is the k-th call payload of that id in
    // the rollout (the importer reads them in the same order): a reused `call_id`
    // never gets another call's arguments.
    let mut nth: HashMap<&str, usize> = HashMap::new();
    let mut occurrence: HashMap<(usize, usize), usize> = HashMap::new();
    for (i, item) in t.items.iter().enumerate() {
        for (k, call) in item.calls().iter().enumerate() {
            let n = nth.entry(call.id.as_ref()).or_default();
            occurrence.insert((i, k), *n);
            *n += 1;
        }
    }
    let timestamp = lines.iter().rev().find_map(|(_, r)| r.get("timestamp").cloned()).unwrap_or(Value::Null);
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
                for (k, call) in item.calls().iter().enumerate() {
                    if let Some(p) = calls.take(&call.id, occurrence[&(*i, k)]) {
                        history.push(p.clone());
                    }
                }
            }
            Step::Injected(m) => {
                // Marked by a field of its own, not by its text (a user can type that).
                history.push(json!({"type": "message", "role": "user",
                    "content": [{"type": "input_text", "text": m.content}], INJECTED_KEY: m.kind.as_str()}));
            }
            Step::Event(_) | Step::Record(_) => {}
        }
    }
    // Current rollouts number every record, and resume refuses a file whose last record
    // has no number: the appended records go on from the rollout's last one.
    let ordinal = lines.iter().filter_map(|(_, r)| r.get("ordinal")?.as_u64()).max();
    let mut out = vec![
        json!({"timestamp": timestamp, "type": "compacted", "payload": {"message": message(c), "replacement_history": history}}),
        json!({"timestamp": timestamp, "type": "event_msg", "payload": {"type": "context_compacted"}}),
    ];
    if let Some(last) = ordinal {
        for (k, r) in out.iter_mut().enumerate() {
            number(r, last + 1 + k as u64);
        }
    }
    Ok(out)
}

/// The compaction's `message`: the texts it injects (the summary, the reminder, the
/// re-anchor block), in order. Codex before 0.59 reads no `replacement_history`: it
/// resumes with a bridge it builds from the user's messages and this text, which then
/// carries the re-anchor facts too; later versions take the history and leave it.
fn message(c: &Compaction) -> String {
    let texts: Vec<&str> = c
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Injected(m) => Some(m.content.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n\n")
}

/// Puts `ordinal` where Codex writes it: after `timestamp`.
fn number(record: &mut Value, ordinal: u64) {
    if let Value::Object(m) = record {
        let old = std::mem::take(m);
        for (k, v) in old {
            let after_timestamp = k == "timestamp";
            m.insert(k, v);
            if after_timestamp {
                m.insert("ordinal".into(), json!(ordinal));
            }
        }
    }
}

/// The rollout's call payloads by `call_id`, each list in the order the importer reads
/// them: `response_item` calls and the calls of a `replacement_history`, line by line.
struct CallPayloads<'v>(HashMap<&'v str, Vec<&'v Value>>);

impl<'v> CallPayloads<'v> {
    fn of(lines: &'v [(usize, Value)]) -> Self {
        let mut calls: HashMap<&str, Vec<&Value>> = HashMap::new();
        let mut add = |p: &'v Value| {
            if is_call(p) {
                // The importer names a call without `call_id` by its own item id;
                // such a call is only ever found by that id, not here.
                if let Some(id) = p.get("call_id").and_then(Value::as_str) {
                    calls.entry(id).or_default().push(p);
                }
            }
        };
        for (_, r) in lines {
            let p = r.get("payload").unwrap_or(&Value::Null);
            match r.get("type").and_then(Value::as_str) {
                Some("response_item") => add(p),
                Some("compacted") => {
                    for h in p.get("replacement_history").and_then(Value::as_array).into_iter().flatten() {
                        add(h);
                    }
                }
                _ => {}
            }
        }
        CallPayloads(calls)
    }

    fn take(&mut self, id: &str, n: usize) -> Option<&'v Value> {
        self.0.get(id)?.get(n).copied()
    }
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
