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

use crate::formats::openai::NAME_PREFIX;
use crate::transcript::{Call, Item, ItemKind, Record, RecordKind, Role, Transcript, Usage};
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

/// Where the `messages` array and each message are in the line.
pub struct Spans {
    pub array: Range<usize>,
    pub messages: Vec<Range<usize>>,
}

/// The transcript of one line and the spans to write it back from, or `None` when the
/// canonical path must read this line.
pub fn read(line: &str, line_no: usize) -> Option<(Transcript<'_>, Spans)> {
    let parsed: Line<'_> = serde_json::from_str(line).ok()?;
    // The contents are the bulk of a line and the parse has found them already: the
    // scan for the messages' spans steps over them instead of reading them again.
    let base = line.as_ptr() as usize;
    let known: Vec<std::ops::Range<usize>> = parsed
        .messages
        .iter()
        .filter_map(|m| m.content.as_ref())
        .map(|c| {
            let start = c.1.as_ptr() as usize - base;
            start..start + c.1.len()
        })
        .collect();
    let spans = spans(line.as_bytes(), &known)?;
    if spans.messages.len() != parsed.messages.len() {
        return None;
    }
    let count = parsed.messages.len();
    let mut items = Vec::with_capacity(count);
    let mut records = Vec::with_capacity(count);
    let mut names: rustc_hash::FxHashMap<Cow<'_, str>, Cow<'_, str>> = rustc_hash::FxHashMap::default();
    let mut turn = 0usize;
    for (k, (m, span)) in parsed.messages.into_iter().zip(&spans.messages).enumerate() {
        let synthetic = m.name.as_deref().and_then(|n| n.strip_prefix(NAME_PREFIX)).map(|s| Cow::Owned(s.to_string()));
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
fn arguments(raw: Option<&RawValue>) -> Option<(Box<RawValue>, Value)> {
    let value = match raw {
        None => Value::Null,
        Some(r) if r.get().starts_with('"') => {
            let s = crate::transcript::unescape_literal(r.get())?;
            serde_json::from_str(&s).unwrap_or_else(|_| Value::String(s.into_owned()))
        }
        Some(r) => serde_json::from_str(r.get()).ok()?,
    };
    Some((serde_json::value::to_raw_value(&value).ok()?, value))
}

/// OpenAI counts cached tokens inside `prompt_tokens` (SPEC 1), read as the canonical
/// path reads it (a missing or non-integer count is 0).
fn chat_usage(raw: &RawValue) -> Option<Usage> {
    let u: Value = serde_json::from_str(raw.get()).ok()?;
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

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    messages: Vec<Message<'a>>,
    #[serde(borrow, default, deserialize_with = "present")]
    usage: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<ChatText<'a>>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<ChatCall<'a>>>,
    #[serde(borrow, default)]
    tool_call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "present")]
    usage: Option<&'a RawValue>,
}

/// A key that is present, even as `null` (which `Option` alone would read as absent).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct ChatCall<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    function: Option<ChatFunction<'a>>,
}

#[derive(Deserialize)]
struct ChatFunction<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
}

/// The UTF-8 length of the text the canonical path makes of `content`: a string, the
/// text blocks joined by newlines, an object's `text`; anything else is empty.
/// The raw JSON of the value is kept beside the length (for previews).
struct ChatText<'a>(u64, &'a str);

impl<'de: 'a, 'a> Deserialize<'de> for ChatText<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A string (the common case) is measured from its escapes, without decoding it.
        let raw = <&'de RawValue>::deserialize(d)?.get();
        if raw.starts_with('"') {
            return decoded_len(raw).map(|n| ChatText(n, raw)).ok_or_else(|| de::Error::custom("invalid \\u escape"));
        }
        let mut inner = serde_json::Deserializer::from_str(raw);
        inner.deserialize_any(ChatTextVisitor).map(|n| ChatText(n, raw)).map_err(de::Error::custom)
    }
}

/// The UTF-8 length of a valid JSON string literal once decoded, counted from its
/// escapes; `None` for a surrogate escape that is not half of a pair (which the decoder
/// refuses, so the line goes the canonical way and gets its error there).
fn decoded_len(raw: &str) -> Option<u64> {
    let body = raw.strip_prefix('"')?.strip_suffix('"')?;
    let mut len = body.len();
    let mut i = 0;
    while let Some(k) = memchr::memchr(b'\\', &body.as_bytes()[i..]) {
        let (c, escape) = crate::transcript::escape_at(body, i + k)?;
        len -= escape - c.len_utf8();
        i += k + escape;
    }
    Some(len as u64)
}

struct ChatTextVisitor;

impl<'de> Visitor<'de> for ChatTextVisitor {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("message content")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<u64, E> {
        Ok(s.len() as u64)
    }
    fn visit_unit<E: de::Error>(self) -> Result<u64, E> {
        Ok(0)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<u64, E> {
        Ok(0)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<u64, E> {
        Ok(0)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<u64, E> {
        Ok(0)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<u64, E> {
        Ok(0)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<u64, A::Error> {
        let (mut bytes, mut texts) = (0u64, 0u64);
        while let Some(block) = seq.next_element::<BlockText>()? {
            if let Some(n) = block.0 {
                bytes += n;
                texts += 1;
            }
        }
        Ok(bytes + texts.saturating_sub(1))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<u64, A::Error> {
        let block = BlockTextVisitor.visit_map(map)?;
        Ok(block.0.unwrap_or(0))
    }
}

/// A block's `text` length, when it has a string `text`.
struct BlockText(Option<u64>);

impl<'de> Deserialize<'de> for BlockText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(BlockTextVisitor)
    }
}

struct BlockTextVisitor;

impl<'de> Visitor<'de> for BlockTextVisitor {
    type Value = BlockText;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a content block")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<BlockText, A::Error> {
        let mut text = None;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "text" {
                text = Some(map.next_value::<TextOrOther>()?.0);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(BlockText(text.flatten()))
    }
    // Anything else in a block list has no text (the canonical path skips it).
    fn visit_str<E: de::Error>(self, _: &str) -> Result<BlockText, E> {
        Ok(BlockText(None))
    }
    fn visit_unit<E: de::Error>(self) -> Result<BlockText, E> {
        Ok(BlockText(None))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<BlockText, E> {
        Ok(BlockText(None))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<BlockText, E> {
        Ok(BlockText(None))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<BlockText, E> {
        Ok(BlockText(None))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<BlockText, E> {
        Ok(BlockText(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<BlockText, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(BlockText(None))
    }
}

/// A `text` value: its length when it is a string.
struct TextOrOther(Option<u64>);

impl<'de> Deserialize<'de> for TextOrOther {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TextOrOther;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a text value")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<TextOrOther, E> {
                Ok(TextOrOther(Some(s.len() as u64)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<TextOrOther, E> {
                Ok(TextOrOther(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<TextOrOther, E> {
                Ok(TextOrOther(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<TextOrOther, E> {
                Ok(TextOrOther(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<TextOrOther, E> {
                Ok(TextOrOther(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<TextOrOther, E> {
                Ok(TextOrOther(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TextOrOther, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(TextOrOther(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TextOrOther, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(TextOrOther(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// The spans of the top-level `messages` array and its elements, in a line already
/// known to be valid JSON (serde read it first); `None` for any other shape.
fn spans(line: &[u8], known: &[std::ops::Range<usize>]) -> Option<Spans> {
    let mut known = Known { strings: known, next: 0 };
    let mut i = ws(line, 0);
    if line.get(i) != Some(&b'{') {
        return None;
    }
    i = ws(line, i + 1);
    let mut found = None;
    while line.get(i) == Some(&b'"') {
        let key_end = string_end(line, i)?;
        let key = &line[i..key_end];
        i = ws(line, key_end);
        if line.get(i) != Some(&b':') {
            return None;
        }
        i = ws(line, i + 1);
        if key == b"\"messages\"" {
            if line.get(i) != Some(&b'[') || found.is_some() {
                return None;
            }
            let start = i;
            let mut messages = Vec::new();
            i = ws(line, i + 1);
            while line.get(i).is_some_and(|b| *b != b']') {
                let end = value_end(line, i, &mut known)?;
                messages.push(i..end);
                i = ws(line, end);
                if line.get(i) == Some(&b',') {
                    i = ws(line, i + 1);
                }
            }
            i += 1;
            found = Some(Spans { array: start..i, messages });
        } else {
            i = value_end(line, i, &mut Known { strings: &[], next: 0 })?;
        }
        i = ws(line, i);
        if line.get(i) == Some(&b',') {
            i = ws(line, i + 1);
        }
    }
    found
}

fn ws(line: &[u8], mut i: usize) -> usize {
    while line.get(i).is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// The end (one past the closing quote) of the string starting at `i`.
fn string_end(line: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        let k = j + memchr::memchr2(b'"', b'\\', &line[j..])?;
        if line[k] == b'\\' {
            j = k + 2;
        } else {
            return Some(k + 1);
        }
    }
}

/// The end of the value starting at `i`.
fn value_end(line: &[u8], i: usize, known: &mut Known<'_>) -> Option<usize> {
    match line.get(i)? {
        b'"' => known.end_at(i).map_or_else(|| string_end(line, i), Some),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match line.get(j)? {
                    b'"' => {
                        j = known.end_at(j).map_or_else(|| string_end(line, j), Some)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while line.get(j).is_some_and(|b| !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')) {
                j += 1;
            }
            Some(j)
        }
    }
}

/// Strings whose place in the line is known (in order): the scan steps over them.
struct Known<'k> {
    strings: &'k [std::ops::Range<usize>],
    next: usize,
}

impl Known<'_> {
    /// The end of the known string that starts at `i`, if one does.
    fn end_at(&mut self, i: usize) -> Option<usize> {
        while self.strings.get(self.next).is_some_and(|r| r.start < i) {
            self.next += 1;
        }
        let r = self.strings.get(self.next).filter(|r| r.start == i)?;
        self.next += 1;
        Some(r.end)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn a_string_is_measured_from_its_escapes(s in "[a-z \"\\\\\\n\\t\u{1}é€🙂\u{7ff}\u{800}]{0,40}") {
            let n = s.len() as u64;
            prop_assert_eq!(super::decoded_len(&serde_json::to_string(&s).unwrap()), Some(n));
            prop_assert_eq!(super::decoded_len(&crate::transcript::ascii_literal(&s)), Some(n));
        }
    }

    #[test]
    fn a_lone_surrogate_is_not_measured() {
        assert_eq!(super::decoded_len(r#""a\ud83d""#), None);
        assert_eq!(super::decoded_len(r#""\ude00b""#), None);
        assert_eq!(super::decoded_len(r#""\ud83d\u0041""#), None);
        assert_eq!(super::decoded_len(r#""\ud83d\ude00""#), Some(4));
    }
}
