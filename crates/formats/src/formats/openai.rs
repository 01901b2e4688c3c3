//! OpenAI chat-format datasets (SPEC 1 "Other formats"): one conversation per line,
//! `{"messages":[…]}`. Dataset mode: every line is compacted on its own and gives
//! exactly one output line, in the same format and order.
//!
//! One reading of a line, two extractors: the dataset view's scanner
//! (`dataset::view`, borrowed, one pass) and [`from_value`] (a parsed line, for what
//! the scanner does not vouch for) fill the same [`Line`]; [`import`] applies the import
//! rules once — roles, turns, ids, injected names, calls and their arguments, result
//! names, usage — and both paths build their transcript from what it gives.

use crate::transcript::{Call as ItemCall, ItemKind, Mark, Role, Usage};
use serde_json::{json, Value};
use std::borrow::Cow;

/// Injected messages carry `name: "rivumi-<kind>"` (a field the chat format allows), so
/// a second run recognises them.
pub const NAME_PREFIX: &str = "rivumi-";

/// What the rules read of one line: its messages, and the line's own `usage` (which
/// counts for the last message when that has none). `C` is a message's content as the
/// extractor holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Line<'a, C> {
    pub messages: Vec<Message<'a, C>>,
    pub usage: Option<Cow<'a, Value>>,
}

/// What the rules read of one message; a field that is absent, `null` or not of its
/// type is `None`.
#[derive(Debug, Clone, PartialEq)]
pub struct Message<'a, C> {
    pub role: Option<Cow<'a, str>>,
    pub content: Option<C>,
    pub tool_calls: Option<Vec<Call<'a>>>,
    /// The one call of the function calling that came before `tool_calls` (an
    /// assistant's `function_call`, no id; answered by a `role: "function"` message).
    /// Boxed: a message is moved whole, and this is rare.
    pub function_call: Option<Box<Call<'a>>>,
    pub tool_call_id: Option<Cow<'a, str>>,
    pub name: Option<Cow<'a, str>>,
    /// A `type`, which chat messages do not have: it names what a message without a
    /// `role` is instead (a Responses API item).
    pub kind: Option<Cow<'a, str>>,
    /// The value of `usage`, kept even when `null` (it then counts as zeros).
    pub usage: Option<Cow<'a, Value>>,
}

impl<C> Default for Message<'_, C> {
    fn default() -> Self {
        Message {
            role: None,
            content: None,
            tool_calls: None,
            function_call: None,
            tool_call_id: None,
            name: None,
            kind: None,
            usage: None,
        }
    }
}

/// What the rules read of a call: `id`, `function.name`, `function.arguments` (or,
/// for a call of a custom tool, which has no `function`, `custom.name` and
/// `custom.input`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Call<'a> {
    pub id: Option<Cow<'a, str>>,
    pub name: Option<Cow<'a, str>>,
    pub arguments: Option<Arguments<'a>>,
}

/// A call's `arguments` as the line gives them: the text of a JSON string (what
/// providers send: JSON inside a string), or any other value. Written as the value
/// the line holds.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum Arguments<'a> {
    Text(Cow<'a, str>),
    Value(Cow<'a, Value>),
    /// A custom tool's free-form `input` (`type: "custom"` calls): read as Codex reads
    /// its custom calls, an object when it holds one, `{"input": …}` otherwise.
    Input(Cow<'a, str>),
}

/// A message as the rules make it: its turn, what it is, and its content as the
/// extractor gave it. It is message `k` of the line, item `m<k>`.
#[derive(Debug)]
pub struct Imported<'a, C> {
    pub turn: usize,
    pub kind: ItemKind<'a>,
    pub synthetic: Option<Mark<'a>>,
    pub content: Option<C>,
}

/// The import rules, once for both extractors; the message each refusal names.
pub fn import<'a, C>(line: Line<'a, C>) -> std::result::Result<Vec<Imported<'a, C>>, String> {
    let count = line.messages.len();
    let mut out = Vec::with_capacity(count);
    let mut names: rustc_hash::FxHashMap<Cow<'a, str>, Cow<'a, str>> = rustc_hash::FxHashMap::default();
    let mut turn = 0;
    let mut line_usage = line.usage;
    // The id given to the latest `function_call` not yet answered (that calling has no
    // ids: a `function` message answers the call before it).
    let mut pending: Option<Cow<'a, str>> = None;
    for (k, m) in line.messages.into_iter().enumerate() {
        let role = m.role.as_deref().ok_or_else(|| match &m.kind {
            Some(kind) => format!(
                "message {k}: expected a \"role\": this is an item of type {:?} (the Responses API's shape), and \
                 this format reads chat messages",
                crate::text::cut(kind, 40)
            ),
            None => format!("message {k}: expected a \"role\""),
        })?;
        if role == "function" {
            let call_id = pending.take().unwrap_or(Cow::Borrowed(""));
            let name = names.get(&call_id).cloned().or(m.name);
            let kind = ItemKind::ToolResult { call_id, name, is_error: false, exit_code: None };
            out.push(Imported { turn, kind, synthetic: None, content: m.content });
            continue;
        }
        let role = match role {
            "tool" => None,
            "system" => Some(Role::System),
            "developer" => Some(Role::Developer),
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            other => {
                return Err(format!(
                    "message {k}: unknown role {:?}: the chat format's roles are system, developer, user, \
                     assistant, tool and function",
                    crate::text::cut(other, 40)
                ))
            }
        };
        let Some(role) = role else {
            // The name of the call it answers; a result that names no call (the chat
            // templates' `{"role": "tool", "name": …}`, calls without ids) or answers
            // none in the row is named by its own `name`.
            let name = match &m.tool_call_id {
                Some(id) => names.get(id).cloned().or(m.name),
                None => m.name.or_else(|| names.get("").cloned()),
            };
            let call_id = m.tool_call_id.unwrap_or(Cow::Borrowed(""));
            let kind = ItemKind::ToolResult { call_id, name, is_error: false, exit_code: None };
            out.push(Imported { turn, kind, synthetic: None, content: m.content });
            continue;
        };
        let synthetic = m.name.and_then(|n| match n {
            Cow::Borrowed(n) => n.strip_prefix(NAME_PREFIX).map(|s| Mark::of(Cow::Borrowed(s))),
            Cow::Owned(n) => n.strip_prefix(NAME_PREFIX).map(|s| Mark::of(Cow::Owned(s.to_string()))),
        });
        if role == Role::User && synthetic.is_none() {
            turn += 1;
        }
        let mut listed = m.tool_calls.unwrap_or_default();
        if let Some(mut c) = m.function_call.map(|c| *c) {
            // `m<k>` is this message's item id: `function_call-m<k>` is no provider's id.
            let id: Cow<'a, str> = Cow::Owned(format!("function_call-m{k}"));
            pending = Some(id.clone());
            c.id = Some(id);
            listed.push(c);
        }
        let mut calls = Vec::with_capacity(listed.len());
        if names.capacity() == 0 && !listed.is_empty() {
            // Sized once at the first call, for about a call per message left (grown by
            // doubling, every id was hashed again at each size); a line of plain chat
            // has none.
            names.reserve(count - k);
        }
        for c in listed {
            let id = c.id.unwrap_or(Cow::Borrowed(""));
            let name = c.name.unwrap_or(Cow::Borrowed(""));
            names.insert(id.clone(), name.clone());
            let raw = arguments(c.arguments).map_err(|e| format!("message {k}: {e}"))?;
            calls.push(ItemCall { id, name, arguments: raw });
        }
        let usage = match m.usage.or_else(|| if k + 1 == count { line_usage.take() } else { None }) {
            Some(u) => {
                if let Some(key) = negative_count(&u) {
                    return Err(format!("message {k}: usage.{key} is negative: token counts are never below 0"));
                }
                (role == Role::Assistant).then(|| usage(&u))
            }
            None => None,
        };
        let kind = ItemKind::Message { role, calls, usage };
        out.push(Imported { turn, kind, synthetic, content: m.content });
    }
    Ok(out)
}

/// Arguments as canonical JSON text: providers give an object, or a JSON string holding
/// one; a string that is not JSON stays a string, a missing value is null. The text of
/// a string is made compact in one pass ([`crate::scan::compact`]) where it can be,
/// and through a parsed value otherwise: the same text either way.
fn arguments(v: Option<Arguments<'_>>) -> serde_json::Result<Cow<'static, str>> {
    use serde_json::to_string;
    match v {
        Some(Arguments::Text(s)) => match crate::scan::compact(&s) {
            Some(text) => Ok(Cow::Owned(text)),
            None => match serde_json::from_str::<Value>(&s) {
                Ok(v) => to_string(&v).map(Cow::Owned),
                Err(_) => to_string(&s).map(Cow::Owned),
            },
        },
        Some(Arguments::Value(v)) => to_string(&v).map(Cow::Owned),
        Some(Arguments::Input(s)) => match serde_json::from_str::<Value>(&s) {
            Ok(v @ Value::Object(_)) => to_string(&v).map(Cow::Owned),
            _ => to_string(&json!({ "input": s })).map(Cow::Owned),
        },
        None => Ok(Cow::Borrowed("null")),
    }
}

/// The first usage count that is a negative number, if any (read as 0 it would hide a
/// broken row).
fn negative_count(u: &Value) -> Option<&'static str> {
    let neg = |v: Option<&Value>| v.and_then(Value::as_f64).is_some_and(|x| x < 0.0);
    let cached = u.get("prompt_tokens_details").and_then(|d| d.get("cached_tokens"));
    [("prompt_tokens", u.get("prompt_tokens")), ("completion_tokens", u.get("completion_tokens"))]
        .into_iter()
        .chain([("prompt_tokens_details.cached_tokens", cached)])
        .find(|(_, v)| neg(*v))
        .map(|(k, _)| k)
}

/// OpenAI counts cached tokens inside `prompt_tokens`: they are subtracted (SPEC 1); a
/// missing or non-integer count is 0.
fn usage(u: &Value) -> Usage {
    let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let cached = n(u.get("prompt_tokens_details").and_then(|d| d.get("cached_tokens")));
    let (input, output) = (n(u.get("prompt_tokens")), n(u.get("completion_tokens")));
    Usage {
        input_tokens: input.saturating_sub(cached),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
        output_tokens: output,
    }
}

/// A string field of a value, borrowed.
fn text<'v>(v: &'v Value, key: &str) -> Option<Cow<'v, str>> {
    v.get(key).and_then(Value::as_str).map(Cow::Borrowed)
}

/// The extractor from a parsed line: what [`import`] reads, borrowed from the value.
pub fn from_value(line: &Value) -> std::result::Result<Line<'_, &Value>, String> {
    let messages = match line.get("messages") {
        Some(Value::Array(messages)) => messages,
        // Rows exported through a data frame often hold the list as JSON text.
        Some(Value::String(text)) if serde_json::from_str::<Vec<Value>>(text).is_ok() => {
            return Err("\"messages\" is a string that holds the list as JSON text (encoded twice): \
                        decode it into an array first"
                .into())
        }
        _ => return Err(no_messages(line)),
    };
    for (k, m) in messages.iter().enumerate() {
        let blocks = match m.get("content") {
            Some(Value::Array(blocks)) => blocks.as_slice(),
            Some(block @ Value::Object(_)) => std::slice::from_ref(block),
            _ => &[],
        };
        if let Some((b, kind)) = blocks
            .iter()
            .enumerate()
            .find_map(|(b, v)| v.get("type").and_then(Value::as_str).filter(|t| is_foreign_block(t)).map(|t| (b, t)))
        {
            return Err(format!(
                "message {k}: content block {b} is a {:?} block, the Anthropic Messages API's shape: \
                 this format gives calls as \"tool_calls\" and their results as \"role\": \"tool\" messages",
                crate::text::cut(kind, 40)
            ));
        }
    }
    let messages = messages
        .iter()
        .map(|m| Message {
            role: text(m, "role"),
            content: m.get("content").filter(|c| !c.is_null()),
            tool_calls: m.get("tool_calls").and_then(Value::as_array).map(|calls| {
                calls
                    .iter()
                    .map(|c| {
                        // A call of a custom tool has no `function`; one that has both
                        // is the function's.
                        let call = match (c.get("function").filter(|f| !f.is_null()), c.get("custom")) {
                            (None, Some(custom)) if !custom.is_null() => Call {
                                name: text(custom, "name"),
                                arguments: text(custom, "input").map(Arguments::Input),
                                ..Call::default()
                            },
                            (f, _) => function(f.unwrap_or(&Value::Null)),
                        };
                        Call { id: text(c, "id"), ..call }
                    })
                    .collect()
            }),
            function_call: m.get("function_call").filter(|f| f.is_object()).map(|f| Box::new(function(f))),
            tool_call_id: text(m, "tool_call_id"),
            name: text(m, "name"),
            kind: text(m, "type"),
            usage: m.get("usage").map(Cow::Borrowed),
        })
        .collect();
    Ok(Line { messages, usage: line.get("usage").map(Cow::Borrowed) })
}

/// Why a line is no chat row: what it holds instead, named where it is a dataset shape
/// of another kind (a row of them would otherwise read as a bare "bad line").
fn no_messages(line: &Value) -> String {
    let expected = "expected an object with a \"messages\" array";
    // A row that has `messages` of another type is told what it must be, no more.
    let Some(row) = line.as_object().filter(|row| !row.contains_key("messages")) else { return expected.into() };
    let has = |k: &str| row.contains_key(k);
    let shape = if has("conversations") {
        "\"conversations\" (the ShareGPT shape: turns of {\"from\", \"value\"})"
    } else if has("prompt") && has("completion") {
        "\"prompt\" and \"completion\" (TRL's prompt-completion shape)"
    } else if has("chosen") && has("rejected") {
        "\"chosen\" and \"rejected\" (a preference pair)"
    } else if has("instruction") && has("output") {
        "\"instruction\" and \"output\" (the Alpaca shape)"
    } else if row.get("input").is_some_and(Value::is_array) {
        "\"input\" (the Responses API's shape: a list of items)"
    } else {
        // Named as far as an error line can hold them: a key may be of any length.
        let keys: Vec<String> = row.keys().take(6).map(|k| format!("{:?}", crate::text::cut(k, 40))).collect();
        return match keys.len() {
            0 => format!("{expected}; this one is empty"),
            n if n < row.len() => format!("{expected}; this one has {}, …", keys.join(", ")),
            _ => format!("{expected}; this one has {}", keys.join(", ")),
        };
    };
    format!("{expected}; this one has {shape}, which this format does not read: convert it to chat messages first")
}

/// The text of a message (SPEC 1 "Estimated tokens"): its content's — a string, or the
/// texts of its blocks joined by newlines: a block's `text`, or a refusal block's
/// `refusal` (`{"type": "refusal", "refusal": …}`, what the model said instead of
/// answering) — then the message's own `refusal`, on a line of its own after any text
/// of the content. A model's reasoning (`reasoning_content`, `reasoning`) is not text
/// of the context: providers do not send an earlier turn's reasoning back, as Claude
/// Code does not resend thinking blocks; it stays in the row as written.
pub fn content_text(content: Option<&Value>, refusal: Option<&str>) -> String {
    fn block(b: &Value) -> Option<&str> {
        match b.get("text") {
            Some(t) => t.as_str(),
            None if b.get("type").and_then(Value::as_str) == Some("refusal") => b.get("refusal")?.as_str(),
            None => None,
        }
    }
    let mut texts: Vec<&str> = match content {
        Some(Value::String(s)) => vec![s],
        Some(Value::Array(blocks)) => blocks.iter().filter_map(block).collect(),
        Some(b @ Value::Object(_)) => block(b).into_iter().collect(),
        _ => Vec::new(),
    };
    texts.extend(refusal);
    texts.join("\n")
}

/// A content block of a call or its result in the Anthropic Messages API's shape
/// (`tool_use`, `tool_result`, a server tool's `server_tool_use` and `…_tool_result`):
/// the chat format has no such blocks, and read as content they would be neither calls
/// nor results, and no size. A row that holds one is refused, not under-counted.
pub fn is_foreign_block(kind: &str) -> bool {
    matches!(kind, "tool_use" | "tool_result" | "server_tool_use" | "mcp_tool_use") || kind.ends_with("_tool_result")
}

/// A call's `function` (or a message's `function_call`): its `name` and `arguments`.
fn function(f: &Value) -> Call<'_> {
    let arguments = f.get("arguments").filter(|a| !a.is_null()).map(|a| match a {
        Value::String(s) => Arguments::Text(Cow::Borrowed(s.as_str())),
        a => Arguments::Value(Cow::Borrowed(a)),
    });
    Call { id: None, name: text(f, "name"), arguments }
}

/// The canonical form of one dataset line (the reference path, read back by the
/// canonical reader); item `m<k>` is message `k` of the line.
pub fn to_canonical(line: &Value) -> std::result::Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let messages = line.get("messages").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    for (k, item) in import(from_value(line)?)?.into_iter().enumerate() {
        let (id, turn) = (format!("m{k}"), format!("t{}", item.turn));
        // An assistant's `refusal` (what the model said instead of answering) is text
        // after the content's; the dataset view leaves a message that has one to this
        // path.
        let refusal = messages.get(k).and_then(|m| m.get("refusal")).and_then(Value::as_str);
        let content = json!(content_text(item.content, refusal));
        let rec: super::common::CanonicalRecord = match item.kind {
            ItemKind::ToolResult { call_id, name, .. } => {
                super::common::tool_result(&id, &turn, &call_id, name.as_deref(), content, false).into()
            }
            ItemKind::Message { role, calls, usage } => {
                let mut r = super::common::message(&id, &turn, role, content);
                for c in calls {
                    r.push_call(super::common::Call {
                        id: c.id.into_owned().into(),
                        name: c.name.into_owned().into(),
                        arguments: c.arguments.into_owned().into(),
                    });
                }
                r.usage = usage;
                r.synthetic = item.synthetic.map(|kind| Mark::of(kind.as_str().to_string().into()));
                r.into()
            }
        };
        serde_json::to_writer(&mut out, &rec).map_err(|e| e.to_string())?;
        out.push(b'\n');
    }
    Ok(out)
}
