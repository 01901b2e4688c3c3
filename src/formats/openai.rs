//! OpenAI chat-format datasets (SPEC 1 "Other formats"): one conversation per line,
//! `{"messages":[…]}`. Dataset mode: every line is compacted on its own and gives
//! exactly one output line, in the same format and order.

use serde_json::{json, Value};

/// Injected messages carry `name: "rivumi-<kind>"` (a field the chat format allows), so
/// a second run recognises them.
pub const NAME_PREFIX: &str = "rivumi-";

/// The canonical form of one dataset line; item `m<k>` is message `k` of the line.
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
                    if let Some(key) = negative_count(u) {
                        return Err(format!("message {k}: usage.{key} is negative: token counts are never below 0"));
                    }
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
    let args = super::common::arguments(f.get("arguments"));
    json!({"id": id, "name": name, "arguments": args})
}

/// The first usage count that is a negative number, if any (read as 0 it would hide a
/// broken row).
pub fn negative_count(u: &Value) -> Option<&'static str> {
    let neg = |v: Option<&Value>| v.and_then(Value::as_f64).is_some_and(|x| x < 0.0);
    let cached = u.get("prompt_tokens_details").and_then(|d| d.get("cached_tokens"));
    [("prompt_tokens", u.get("prompt_tokens")), ("completion_tokens", u.get("completion_tokens"))]
        .into_iter()
        .chain([("prompt_tokens_details.cached_tokens", cached)])
        .find(|(_, v)| neg(*v))
        .map(|(k, _)| k)
}

/// OpenAI counts cached tokens inside `prompt_tokens`: subtract them (SPEC 1).
fn usage(u: &Value) -> Value {
    let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let cached = n(u.get("prompt_tokens_details").and_then(|d| d.get("cached_tokens")));
    let (input, output) = (n(u.get("prompt_tokens")), n(u.get("completion_tokens")));
    super::common::usage(input, cached, 0, output, super::common::InputCount::WithCacheReads)
}
