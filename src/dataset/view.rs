//! One OpenAI-format dataset line read once into a borrowed view (SPEC 10): the policy
//! runs on a transcript whose records are the line's own messages, and a compacted line
//! is written from raw slices of the kept messages plus the injected ones — no
//! `serde_json::Value` of the line, no canonical text written and read again.
//!
//! The view gives exactly what the canonical path (`formats::openai::to_canonical`,
//! then the canonical reader) gives: the same ids, turns, roles, calls (arguments
//! normalised the same way), usage and measured text. Anything the view does not read
//! as that path would — a wrong type, a duplicate key, an escaped `messages` key — is
//! handed to the canonical path (`None`), which also words the errors of bad lines.

use super::scan::Scan;
use crate::formats::openai::NAME_PREFIX;
use crate::transcript::{Call, Item, ItemKind, Mark, Record, RecordKind, Role, Transcript, Usage};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::ops::Range;

/// Where the `messages` array and each message are in the line.
pub struct Spans {
    pub array: Range<usize>,
    pub messages: Vec<Range<usize>>,
}

/// The transcript of one line and the spans to write it back from, or `None` when the
/// canonical path must read this line.
pub fn read(line: &str, line_no: usize) -> Option<(Transcript<'_>, Spans)> {
    let (parsed, spans) = scan_line(line)?;
    let count = parsed.messages.len();
    let mut items = Vec::with_capacity(count);
    let mut records = Vec::with_capacity(count);
    let mut names: rustc_hash::FxHashMap<Cow<'_, str>, Cow<'_, str>> = rustc_hash::FxHashMap::default();
    let mut turn = 0usize;
    for (k, (m, span)) in parsed.messages.into_iter().zip(&spans.messages).enumerate() {
        let synthetic =
            m.name.as_deref().and_then(|n| n.strip_prefix(NAME_PREFIX)).map(|s| Mark::of(Cow::Owned(s.to_string())));
        let role = match m.role.as_deref()? {
            "tool" => None,
            "system" => Some(Role::System),
            "developer" => Some(Role::Developer),
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            _ => return None,
        };
        if role == Some(Role::User) && synthetic.is_none() {
            turn += 1;
        }
        let kind = match role {
            None => {
                let call_id = m.tool_call_id.unwrap_or(Cow::Borrowed(""));
                let name = names.get(&call_id).cloned();
                ItemKind::ToolResult { call_id, name, is_error: false, exit_code: None }
            }
            Some(role) => {
                let mut calls = Vec::new();
                for c in m.tool_calls.unwrap_or_default() {
                    let (name, args) = c.function.map_or((None, None), |f| (f.name, f.arguments));
                    let id = c.id.unwrap_or(Cow::Borrowed(""));
                    let name = name.unwrap_or(Cow::Borrowed(""));
                    names.insert(id.clone(), name.clone());
                    let (raw, parsed) = arguments(args)?;
                    calls.push(Call { id, name, arguments: Cow::Owned(raw), parsed: Some(parsed) });
                }
                let usage = m.usage.or(parsed.usage.filter(|_| k + 1 == count));
                let usage = match usage {
                    Some(raw) if role == Role::Assistant => Some(chat_usage(raw)?),
                    _ => None,
                };
                ItemKind::Message { role, calls, usage }
            }
        };
        let synthetic = if role.is_some() { synthetic } else { None };
        items.push(Item {
            record: k,
            id: label('m', k),
            turn: Some(label('t', turn)),
            synthetic,
            kind,
            text_bytes: m.content.as_ref().map_or(0, |c| c.0),
            content: m.content.map(|c| c.1),
            summarized_usage: None,
            occupancy_after: None,
            call_item: None,
        });
        records.push(Record { span: span.clone(), line: line_no, kind: RecordKind::Item(k) });
    }
    Some((Transcript::from_parts(line.as_bytes(), records, items), spans))
}

/// `m<k>` / `t<k>`, the ids and turns the canonical path gives a line's messages: the
/// first few thousand made once for the process (no allocation per message).
fn label(prefix: char, k: usize) -> Cow<'static, str> {
    const CACHED: usize = 4096;
    static LABELS: std::sync::OnceLock<[Vec<String>; 2]> = std::sync::OnceLock::new();
    let labels = LABELS.get_or_init(|| {
        let make = |p: char| (0..CACHED).map(|k| format!("{p}{k}")).collect();
        [make('m'), make('t')]
    });
    match (prefix, labels) {
        ('m', [m, _]) if k < CACHED => Cow::Borrowed(m[k].as_str()),
        ('t', [_, t]) if k < CACHED => Cow::Borrowed(t[k].as_str()),
        _ => Cow::Owned(format!("{prefix}{k}")),
    }
}

/// Arguments as the canonical path writes them: a JSON string holding JSON is that
/// JSON, any other string stays a string, a value is written compactly.
fn arguments(raw: Option<&str>) -> Option<(Box<RawValue>, Value)> {
    let value = match raw {
        None => Value::Null,
        Some(r) if r.starts_with('"') => {
            let s = crate::text::unescape_literal(r)?;
            serde_json::from_str(&s).unwrap_or_else(|_| Value::String(s.into_owned()))
        }
        Some(r) => serde_json::from_str(r).ok()?,
    };
    Some((serde_json::value::to_raw_value(&value).ok()?, value))
}

/// OpenAI counts cached tokens inside `prompt_tokens` (SPEC 1), read as the canonical
/// path reads it (a missing or non-integer count is 0).
fn chat_usage(raw: &str) -> Option<Usage> {
    let u: Value = serde_json::from_str(raw).ok()?;
    if crate::formats::openai::negative_count(&u).is_some() {
        return None; // the canonical path reports it
    }
    let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let cached = n(u.get("prompt_tokens_details").and_then(|d| d.get("cached_tokens")));
    let (input, output) = (n(u.get("prompt_tokens")), n(u.get("completion_tokens")));
    Some(Usage {
        input_tokens: input.saturating_sub(cached),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
        output_tokens: output,
    })
}

/// What the view reads of a line: its messages, and the line's `usage` (raw, kept even
/// when `null`).
struct Line<'a> {
    messages: Vec<Message<'a>>,
    usage: Option<&'a str>,
}

#[derive(Default)]
struct Message<'a> {
    role: Option<Cow<'a, str>>,
    content: Option<ChatText<'a>>,
    tool_calls: Option<Vec<ChatCall<'a>>>,
    tool_call_id: Option<Cow<'a, str>>,
    name: Option<Cow<'a, str>>,
    usage: Option<&'a str>,
}

#[derive(Default)]
struct ChatCall<'a> {
    id: Option<Cow<'a, str>>,
    function: Option<ChatFunction<'a>>,
}

#[derive(Default)]
struct ChatFunction<'a> {
    name: Option<Cow<'a, str>>,
    arguments: Option<&'a str>,
}

/// The UTF-8 length of the text the canonical path makes of `content` — a string, the
/// text blocks joined by newlines, an object's `text`; anything else is empty — and the
/// raw JSON of the value (for previews).
struct ChatText<'a>(u64, &'a str);

/// Reads a line in one pass: what the view needs, and where the `messages` array and
/// each message are. `None` for any shape the view does not read as the canonical path
/// would (a wrong type, a duplicate key, a key with an escape) and for anything the
/// scanner cannot vouch for.
fn scan_line(line: &str) -> Option<(Line<'_>, Spans)> {
    let mut s = Scan::new(line);
    let (mut messages, mut usage) = (None, None);
    s.object(0, |s, key| {
        match key {
            "messages" if messages.is_none() => {
                s.peek()?;
                let start = s.i;
                let (mut list, mut spans) = (Vec::with_capacity(64), Vec::with_capacity(64));
                s.array(1, |s| {
                    s.peek()?;
                    let from = s.i;
                    list.push(message(s)?);
                    spans.push(from..s.i);
                    Some(())
                })?;
                messages = Some((list, Spans { array: start..s.i, messages: spans }));
            }
            "usage" if usage.is_none() => usage = Some(s.raw_value(1)?),
            "messages" | "usage" => return None,
            _ => s.skip(1)?,
        }
        Some(())
    })?;
    if !s.at_end() {
        return None;
    }
    let (messages, spans) = messages?;
    Some((Line { messages, usage }, spans))
}

/// The keys a message, a call or a function has read (a second one is left to the
/// canonical path).
#[derive(Default)]
struct Seen(u8);

impl Seen {
    fn first(&mut self, bit: u8) -> Option<()> {
        (self.0 & bit == 0).then(|| self.0 |= bit)
    }
}

fn message<'a>(s: &mut Scan<'a>) -> Option<Message<'a>> {
    let (mut m, mut seen) = (Message::default(), Seen::default());
    s.object(2, |s, key| {
        match key {
            "role" => {
                seen.first(1)?;
                m.role = optional_str(s)?;
            }
            "content" => {
                seen.first(2)?;
                m.content = content(s)?;
            }
            "tool_calls" => {
                seen.first(4)?;
                m.tool_calls = if s.null()? {
                    None
                } else {
                    let mut calls = Vec::new();
                    s.array(3, |s| {
                        calls.push(call(s)?);
                        Some(())
                    })?;
                    Some(calls)
                };
            }
            "tool_call_id" => {
                seen.first(8)?;
                m.tool_call_id = optional_str(s)?;
            }
            "name" => {
                seen.first(16)?;
                m.name = optional_str(s)?;
            }
            "usage" => {
                seen.first(32)?;
                m.usage = Some(s.raw_value(3)?);
            }
            _ => s.skip(3)?,
        }
        Some(())
    })?;
    Some(m)
}

fn call<'a>(s: &mut Scan<'a>) -> Option<ChatCall<'a>> {
    let (mut c, mut seen) = (ChatCall::default(), Seen::default());
    s.object(4, |s, key| {
        match key {
            "id" => {
                seen.first(1)?;
                c.id = optional_str(s)?;
            }
            "function" => {
                seen.first(2)?;
                c.function = if s.null()? { None } else { Some(function(s)?) };
            }
            _ => s.skip(5)?,
        }
        Some(())
    })?;
    Some(c)
}

fn function<'a>(s: &mut Scan<'a>) -> Option<ChatFunction<'a>> {
    let (mut f, mut seen) = (ChatFunction::default(), Seen::default());
    s.object(5, |s, key| {
        match key {
            "name" => {
                seen.first(1)?;
                f.name = optional_str(s)?;
            }
            "arguments" => {
                seen.first(2)?;
                f.arguments = if s.null()? { None } else { Some(s.raw_value(6)?) };
            }
            _ => s.skip(6)?,
        }
        Some(())
    })?;
    Some(f)
}

/// A string or `null` (`Some(None)`); `None` for anything else.
#[allow(clippy::option_option)] // `None`: not for the view; `Some(None)`: no value
fn optional_str<'a>(s: &mut Scan<'a>) -> Option<Option<Cow<'a, str>>> {
    if s.null()? {
        return Some(None);
    }
    let lit = s.string()?;
    let raw = s.text(lit.start..lit.end);
    if lit.escaped {
        return crate::text::unescape_literal(raw).map(Some);
    }
    Some(Some(Cow::Borrowed(&raw[1..raw.len() - 1])))
}

/// A message's `content`: `null` is none; a string is measured from its escapes without
/// being decoded.
#[allow(clippy::option_option)] // `None`: not for the view; `Some(None)`: no value
fn content<'a>(s: &mut Scan<'a>) -> Option<Option<ChatText<'a>>> {
    let first = s.peek()?;
    let start = s.i;
    let len = match first {
        b'n' => {
            s.null()?;
            return Some(None);
        }
        b'"' => s.string()?.len,
        b'[' => {
            let (mut bytes, mut texts) = (0u64, 0u64);
            s.array(3, |s| {
                if let Some(n) = block(s, 4)? {
                    bytes += n;
                    texts += 1;
                }
                Some(())
            })?;
            bytes + texts.saturating_sub(1)
        }
        b'{' => block(s, 3)?.unwrap_or(0),
        _ => {
            s.value(3)?;
            0
        }
    };
    Some(Some(ChatText(len, s.text(start..s.i))))
}

/// A content block's `text` length, when it is an object whose (last) `text` is a
/// string; anything else in a block list has no text.
#[allow(clippy::option_option)] // `None`: not for the view; `Some(None)`: no value
fn block(s: &mut Scan<'_>, depth: usize) -> Option<Option<u64>> {
    if s.peek()? != b'{' {
        s.value(depth)?;
        return Some(None);
    }
    let mut text = None;
    s.object(depth, |s, key| {
        if key == "text" && s.peek()? == b'"' {
            text = Some(s.string()?.len);
        } else {
            if key == "text" {
                text = None;
            }
            s.value(depth + 1)?;
        }
        Some(())
    })?;
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::super::scan::Scan;
    use proptest::prelude::*;

    fn measured(literal: &str) -> Option<u64> {
        Scan::new(literal).string().map(|lit| lit.len)
    }

    proptest! {
        #[test]
        fn a_string_is_measured_from_its_escapes(s in "[a-z \"\\\\\n\t\u{1}é€🙂\u{7ff}\u{800}]{0,40}") {
            let n = s.len() as u64;
            prop_assert_eq!(measured(&serde_json::to_string(&s).unwrap()), Some(n));
            prop_assert_eq!(measured(&crate::text::ascii_literal(&s)), Some(n));
        }
    }

    #[test]
    fn a_lone_surrogate_is_not_measured() {
        assert_eq!(measured(r#""a\ud83d""#), None);
        assert_eq!(measured(r#""\ude00b""#), None);
        assert_eq!(measured(r#""\ud83d\u0041""#), None);
        assert_eq!(measured(r#""\ud83d\ude00""#), Some(4));
    }
}
