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

use crate::formats::openai::{self, Arguments, Call, Line, Message};
use crate::scan::{Scan, Seen};
use crate::transcript::{Item, Record, RecordKind, Transcript};
use serde_json::Value;
use std::borrow::Cow;
use std::ops::Range;

/// Where the `messages` array and each message are in the line.
pub struct Spans {
    pub array: Range<usize>,
    pub messages: Vec<Range<usize>>,
}

/// The transcript of one line and the spans to write it back from, or `None` when the
/// canonical path must read this line (it words the errors of bad lines).
pub fn read(line: &str, line_no: usize) -> Option<(Transcript<'_>, Spans)> {
    let (parsed, spans) = extract(line)?;
    let imported = openai::import(parsed).ok()?;
    let mut items = Vec::with_capacity(imported.len());
    let mut records = Vec::with_capacity(imported.len());
    for (k, (m, span)) in imported.into_iter().zip(&spans.messages).enumerate() {
        items.push(Item {
            record: k,
            id: label('m', k),
            turn: Some(label('t', m.turn)),
            synthetic: m.synthetic,
            kind: m.kind,
            text_bytes: m.content.as_ref().map_or(0, |c| c.text_bytes),
            content: m.content.map(|c| c.raw),
            written: None,
            call_item: None,
        });
        records.push(Record { span: span.clone(), line: line_no, kind: RecordKind::Item(k) });
    }
    Some((Transcript::from_parts(line.as_bytes(), records, items), spans))
}

/// `m<k>` / `t<k>`, the ids and turns the canonical path gives a line's messages: the
/// first few thousand made once for the process (no allocation per message), written
/// one after the other into one text per prefix without `fmt` (made with `format!`,
/// they were half the instructions of a one-line run).
fn label(prefix: char, k: usize) -> Cow<'static, str> {
    const CACHED: usize = 4096;
    /// The labels of each prefix, one after the other, and where each ends (the same
    /// for both: only the prefix differs).
    struct Labels {
        m: String,
        t: String,
        ends: Vec<usize>,
    }
    static LABELS: std::sync::OnceLock<Labels> = std::sync::OnceLock::new();
    let labels = LABELS.get_or_init(|| {
        let mut digits = itoa::Buffer::new();
        // Five bytes each at most (`m4095`).
        let (mut m, mut t, mut ends) =
            (String::with_capacity(5 * CACHED), String::with_capacity(5 * CACHED), Vec::with_capacity(CACHED));
        for k in 0..CACHED {
            let d = digits.format(k);
            m.push('m');
            m.push_str(d);
            t.push('t');
            t.push_str(d);
            ends.push(m.len());
        }
        Labels { m, t, ends }
    });
    let text = match prefix {
        'm' => &labels.m,
        't' => &labels.t,
        _ => return Cow::Owned(format!("{prefix}{k}")),
    };
    match labels.ends.get(k) {
        Some(&end) => Cow::Borrowed(&text[k.checked_sub(1).map_or(0, |j| labels.ends[j])..end]),
        None => Cow::Owned(format!("{prefix}{k}")),
    }
}

/// A message's content as the scanner finds it: the UTF-8 length of the text the
/// import rules make of it — a string, the text blocks joined by newlines, an object's
/// `text`; anything else is empty — and the raw JSON of the value (for previews).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChatText<'a> {
    pub text_bytes: u64,
    pub raw: &'a str,
}

/// The scanner, the extractor of the fast path: what the import rules read of a line,
/// borrowed, and where the `messages` array and each message are; `None` for what the
/// scanner does not read as [`openai::from_value`] would (a wrong type, a duplicate
/// key, a key with an escape) and for anything it cannot vouch for.
pub fn extract(line: &str) -> Option<(Line<'_, ChatText<'_>>, Spans)> {
    let mut s = Scan::new(line);
    let (mut messages, mut usage): (_, Option<Cow<'_, Value>>) = (None, None);
    s.object(0, |s, key| {
        match key {
            "messages" if messages.is_none() => {
                s.peek()?;
                let start = s.i;
                let (mut list, mut spans) = (Vec::with_capacity(64), Vec::with_capacity(64));
                s.array(1, |s| {
                    s.peek()?;
                    let from = s.i;
                    // Filled where it stays: a message is a large value, and one made
                    // apart and then moved into the list was copied twice.
                    list.push(Message::default());
                    message(s, list.last_mut().expect("just pushed"))?;
                    spans.push(from..s.i);
                    Some(())
                })?;
                messages = Some((list, Spans { array: start..s.i, messages: spans }));
            }
            "usage" if usage.is_none() => usage = Some(Cow::Owned(value(s, 1)?)),
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

fn message<'a>(s: &mut Scan<'a>, m: &mut Message<'a, ChatText<'a>>) -> Option<()> {
    let mut seen = Seen::default();
    s.object(2, |s, key| {
        match key {
            "role" => {
                seen.first(1)?;
                m.role = s.optional_str()?;
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
            "function_call" => {
                seen.first(64)?;
                m.function_call = if s.null()? {
                    None
                } else {
                    let mut c = Box::<Call>::default();
                    function(s, &mut c, false)?;
                    Some(c)
                };
            }
            "tool_call_id" => {
                seen.first(8)?;
                m.tool_call_id = s.optional_str()?;
            }
            "name" => {
                seen.first(16)?;
                m.name = s.optional_str()?;
            }
            "type" => {
                seen.first(128)?;
                m.kind = s.optional_str()?;
            }
            "usage" => {
                seen.first(32)?;
                m.usage = Some(Cow::Owned(value(s, 3)?));
            }
            // A refusal is text after the content's (`openai::content_text`): rare, and
            // left to the canonical path.
            "refusal" => {
                if !s.null()? {
                    return None;
                }
            }
            _ => s.skip(3)?,
        }
        Some(())
    })
}

/// A value the rules read whole (usage, arguments), parsed from its raw JSON.
fn value(s: &mut Scan<'_>, depth: usize) -> Option<Value> {
    serde_json::from_str(s.raw_value(depth)?).ok()
}

fn call<'a>(s: &mut Scan<'a>) -> Option<Call<'a>> {
    let (mut c, mut custom, mut seen) = (Call::default(), None, Seen::default());
    s.object(4, |s, key| {
        match key {
            "id" => {
                seen.first(1)?;
                c.id = s.optional_str()?;
            }
            "function" => {
                seen.first(2)?;
                if !s.null()? {
                    seen.first(8)?;
                    function(s, &mut c, false)?;
                }
            }
            "custom" => {
                seen.first(4)?;
                if !s.null()? {
                    let mut tool = Call::default();
                    function(s, &mut tool, true)?;
                    custom = Some(tool);
                }
            }
            _ => s.skip(5)?,
        }
        Some(())
    })?;
    // A call of a custom tool has no `function`; one that has both is the function's.
    match custom {
        Some(tool) if !seen.has(8) => Some(Call { id: c.id, ..tool }),
        _ => Some(c),
    }
}

/// A call's `function` (or a message's `function_call`): its `name` and `arguments`,
/// into the call; with `custom`, a custom tool call's `custom`: its `name` and
/// free-form `input`.
fn function<'a>(s: &mut Scan<'a>, c: &mut Call<'a>, custom: bool) -> Option<()> {
    let mut seen = Seen::default();
    let arguments = if custom { "input" } else { "arguments" };
    s.object(5, |s, key| {
        match key {
            "name" => {
                seen.first(1)?;
                c.name = s.optional_str()?;
            }
            _ if key == arguments => {
                seen.first(2)?;
                // Providers give a JSON string (the common case: decoded by the scanner,
                // not parsed a second time), or an object; a custom tool's input is text.
                c.arguments = if s.null()? {
                    None
                } else if custom {
                    Some(Arguments::Input(s.str()?))
                } else if s.peek()? == b'"' {
                    Some(Arguments::Text(s.str()?))
                } else {
                    Some(Arguments::Value(Cow::Owned(value(s, 6)?)))
                };
            }
            _ => s.skip(6)?,
        }
        Some(())
    })
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
    Some(Some(ChatText { text_bytes: len, raw: s.text(start..s.i) }))
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
        } else if key == "type" && s.peek()? == b'"' {
            // A block the chat format does not have: the canonical path refuses the row.
            // A refusal block's text is its `refusal`: rare, and left to that path.
            let kind = s.str()?;
            if openai::is_foreign_block(&kind) || kind == "refusal" {
                return None;
            }
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
    use crate::scan::Scan;
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

    /// The labels are the canonical path's ids and turns, inside the cache and past it.
    #[test]
    fn labels_are_the_prefix_and_the_number() {
        for k in (0..4200).chain([9999, 123_456]) {
            assert_eq!(super::label('m', k), format!("m{k}"));
            assert_eq!(super::label('t', k), format!("t{k}"));
        }
        assert!(matches!(super::label('m', 4095), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn a_lone_surrogate_is_not_measured() {
        assert_eq!(measured(r#""a\ud83d""#), None);
        assert_eq!(measured(r#""\ude00b""#), None);
        assert_eq!(measured(r#""\ud83d\u0041""#), None);
        assert_eq!(measured(r#""\ud83d\ude00""#), Some(4));
    }

    /// A parser takes four hex digits and nothing else after `\u`.
    #[test]
    fn a_signed_unicode_escape_is_not_measured() {
        for literal in [r#""\u+04a""#, r#""\u-04a""#, r#""\u 04a""#, r#""\u04a""#] {
            assert!(serde_json::from_str::<String>(literal).is_err(), "{literal}");
            assert_eq!(measured(literal), None, "{literal}");
        }
        assert_eq!(measured(r#""\u004A\u00e9""#), Some(3));
    }
}
