//! A compacted transcript of any format as one OpenAI chat line (`--output-format
//! openai`, OpenHands rows converted to chat), and the injected messages as chat
//! messages, for the dataset writers too.

use crate::engine::Processed;
use crate::formats::openai::NAME_PREFIX;
use crate::policy::{steps, Message, Step, Walk};
use serde_json::{json, Map, Value};

/// A processed transcript of any format as one OpenAI chat line: the compacted
/// history's messages in order (calls as `tool_calls` with JSON-string `arguments`,
/// results as `role: "tool"`, usage as the provider reports it so a second run counts
/// the same), injected records as user messages named `rivumi-<kind>`. Events and the
/// session record are not messages and are left out.
pub fn chat_line(done: &Processed<'_>) -> String {
    let t = &done.transcript;
    // The model's context: what an earlier compaction left out is not in it.
    let walk = Walk { from: crate::policy::context_start(t), chat: true, records: false };
    let messages: Vec<String> = steps(t, &done.plan, walk)
        .into_iter()
        .filter_map(|step| match step {
            Step::Kept(i) => Some(chat_item(t, i).to_string()),
            Step::Injected(m) => Some(chat_message_text(m)),
            Step::Event(_) | Step::Record(_) => None,
        })
        .collect();
    if !done.provenance {
        return format!("{{\"messages\":[{}]}}", messages.join(","));
    }
    format!("{{\"messages\":[{}],\"rivumi\":{}}}", messages.join(","), provenance(done))
}

/// Where a chat line comes from and what was done to it, under the one key chat-format
/// loaders ignore (`rivumi`): the source file, the session id and model it names, the
/// action, and the estimated tokens of the history before and after.
pub fn provenance(done: &Processed<'_>) -> Value {
    let t = &done.transcript;
    let session = t.session.as_ref();
    let get = |k: &str| session.and_then(|s| s.get(k)).cloned().unwrap_or(Value::Null);
    json!({"source": done.transcript_name.display().to_string(), "session": get("id"), "model": get("model"),
        "input_format": done.plan.decision.input_format, "action": done.plan.decision.action,
        "tokens_before": done.plan.tokens_estimated, "tokens_after": done.plan.tokens_after})
}

/// One canonical item as a chat message.
fn chat_item(t: &crate::transcript::Transcript<'_>, i: usize) -> Value {
    use crate::transcript::ItemKind;
    let item = &t.items[i];
    let text = crate::transcript::item_text(t, i);
    match &item.kind {
        ItemKind::ToolResult { call_id, .. } => json!({"role": "tool", "tool_call_id": call_id, "content": text}),
        ItemKind::Message { role, calls, usage } => {
            let mut m = Map::new();
            m.insert("role".into(), json!(role.as_str()));
            if let Some(kind) = &item.synthetic {
                m.insert("name".into(), json!(format!("{NAME_PREFIX}{}", kind.as_str())));
            }
            m.insert("content".into(), json!(text));
            if !calls.is_empty() {
                let calls: Vec<Value> = calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments}})
                    })
                    .collect();
                m.insert("tool_calls".into(), Value::Array(calls));
            }
            if let Some(u) = usage {
                // OpenAI's prompt count includes cached tokens (SPEC 1): the size is kept.
                let prompt = u.input_tokens.saturating_add(u.cache_read_tokens).saturating_add(u.cache_write_tokens);
                m.insert(
                    "usage".into(),
                    json!({"prompt_tokens": prompt, "completion_tokens": u.output_tokens,
                    "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens}}),
                );
            }
            Value::Object(m)
        }
    }
}

/// An injected message as a chat message.
pub fn chat_message(m: &Message) -> Value {
    json!({"role": "user", "name": format!("{NAME_PREFIX}{}", m.kind.as_str()), "content": m.content})
}

/// An injected message as the text of a chat message: `{"role":"user",
/// "name":"rivumi-<kind>","content":…}`.
fn chat_message_text(m: &Message) -> String {
    let mut out = String::with_capacity(m.content.len() + 64);
    push_chat_message(&mut out, m);
    out
}

/// [`chat_message_text`], appended to `out`.
pub fn push_chat_message(out: &mut String, m: &Message) {
    out.push_str("{\"role\":\"user\",\"name\":");
    crate::text::push_json_str(out, &format!("{NAME_PREFIX}{}", m.kind.as_str()));
    out.push_str(",\"content\":");
    crate::text::push_json_str(out, &m.content);
    out.push('}');
}
