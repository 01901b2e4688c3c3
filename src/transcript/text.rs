//! The text of an item, decoded on demand (previews, real tokenizers): the reader only
//! measures text, so only the few items that are rendered are decoded, and an item
//! that is only previewed is decoded no further than its preview needs.

use super::Transcript;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

#[derive(Deserialize)]
struct WithContent<'a> {
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
}

/// The item's `content` as the JSON it is in the record.
fn raw_content<'a>(t: &Transcript<'a>, item: usize) -> Option<&'a str> {
    if let Some(raw) = t.items[item].content {
        return Some(raw);
    }
    let line = t.line_text(t.items[item].record);
    serde_json::from_str::<WithContent<'a>>(line).ok()?.content.map(RawValue::get)
}

/// The text of a `content` value: the string; for blocks (or a chat message's single
/// part, which the dataset view keeps raw) what the importers make of them (the
/// blocks' texts joined by newlines); empty for anything else.
fn decode(raw: &str) -> String {
    if raw.starts_with('"') {
        return unescape_literal(raw).map(Cow::into_owned).unwrap_or_default();
    }
    serde_json::from_str::<serde_json::Value>(raw).map(|v| crate::formats::common::text_of(&v)).unwrap_or_default()
}

/// The value of a JSON string literal that a JSON parser has already checked (a
/// `RawValue`, or a prefix [`string_prefix`] cut from one): borrowed when it holds no
/// escape, decoded into one buffer of the right size otherwise (no parser state made
/// for it). `None` for a surrogate escape that is not half of a pair, as the parser
/// would refuse it.
pub fn unescape_literal(raw: &str) -> Option<Cow<'_, str>> {
    let body = raw.strip_prefix('"')?.strip_suffix('"')?;
    let b = body.as_bytes();
    let Some(first) = memchr::memchr(b'\\', b) else { return Some(Cow::Borrowed(body)) };
    let mut out = String::with_capacity(body.len());
    out.push_str(&body[..first]);
    let mut i = first;
    let hex = |at: usize| -> Option<u32> { u32::from_str_radix(body.get(at..at + 4)?, 16).ok() };
    while i < b.len() {
        let Some(k) = memchr::memchr(b'\\', &b[i..]) else {
            out.push_str(&body[i..]);
            break;
        };
        out.push_str(&body[i..i + k]);
        i += k;
        let c = match *b.get(i + 1)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let cp = hex(i + 2)?;
                i += 4;
                match cp {
                    0xD800..=0xDBFF => {
                        let low = (b.get(i + 2..i + 4) == Some(b"\\u")).then(|| hex(i + 4)).flatten()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return None;
                        }
                        i += 6;
                        char::from_u32(0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00))?
                    }
                    0xDC00..=0xDFFF => return None,
                    _ => char::from_u32(cp)?,
                }
            }
            _ => return None,
        };
        out.push(c);
        i += 2;
    }
    Some(Cow::Owned(out))
}

/// The text content of an item: the string, or its text blocks joined by newlines.
pub fn item_text(t: &Transcript<'_>, item: usize) -> String {
    raw_content(t, item).map(decode).unwrap_or_default()
}

/// What a summary line shows of an item: `render::preview(item_text, max)`. For a long
/// string content only a prefix is decoded, and its preview is used only when it
/// already reaches the cut (so what follows cannot change it); otherwise the whole text
/// is decoded and left for the renderer to preview.
pub fn item_text_for_preview(t: &Transcript<'_>, item: usize, max: usize) -> crate::render::EntryText {
    use crate::render::EntryText;
    let Some(raw) = raw_content(t, item) else { return EntryText::Full(String::new()) };
    if let Some(prefix) = string_prefix(raw, max.saturating_mul(2).saturating_add(32)) {
        if let Some(text) = unescape_literal(&prefix) {
            if let Some(shown) = crate::render::preview_if_cut(&text, max) {
                return EntryText::Preview(shown);
            }
        }
    }
    EntryText::Full(decode(raw))
}

/// The first `bytes` (or a few more) of a JSON string literal as a literal of its own,
/// cut outside any escape and on a character boundary; `None` when it is short anyway.
fn string_prefix(raw: &str, bytes: usize) -> Option<String> {
    let b = raw.as_bytes();
    if b.first() != Some(&b'"') || b.len() <= bytes + 2 {
        return None;
    }
    let mut i = 1;
    while i < bytes {
        // Straight to the next escape or quote: the bytes between are taken whole.
        let Some(k) = memchr::memchr2(b'\\', b'"', &b[i..bytes]) else {
            i = bytes;
            break;
        };
        i += k;
        match b[i] {
            // \uXXXX, and its low surrogate when it is the first half of a pair
            b'\\' if b.get(i + 1) == Some(&b'u') => {
                i += 6;
                if b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'u') {
                    i += 6;
                }
            }
            b'\\' => i += 2,
            _ => return None, // the closing quote: the string is short
        }
    }
    while i < b.len() && !raw.is_char_boundary(i) {
        i += 1;
    }
    let i = i.min(b.len() - 1);
    let mut out = String::with_capacity(i + 1);
    out.push_str(&raw[..i]);
    out.push('"');
    Some(out)
}

/// `s` as a JSON literal with every character outside printable ASCII as `\uXXXX`
/// (surrogate pairs above the BMP), as Python's `json.dumps` writes by default: the
/// other way of writing a string, for the tests of what reads one.
#[cfg(test)]
pub(crate) fn ascii_literal(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if (c.is_ascii_graphic() || c == ' ') && c != '"' && c != '\\' {
            out.push(c);
        } else {
            for u in c.encode_utf16(&mut [0u16; 2]) {
                out.push_str(&format!("\\u{u:04X}"));
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    #[test]
    fn unescaping_refuses_what_the_parser_refuses() {
        for bad in [r#""\ud83d""#, r#""\ude00""#, r#""\ud83d\u0041""#, r#""\q""#, r#""\u12""#] {
            assert_eq!(super::unescape_literal(bad), None, "{bad}");
            assert!(serde_json::from_str::<String>(bad).is_err(), "{bad}");
        }
        assert_eq!(super::unescape_literal(r#""a\/b\b\f""#).unwrap(), "a/b\u{8}\u{c}");
    }

    proptest! {
        /// Unescaping gives what the JSON parser gives, for both ways of writing a string.
        #[test]
        fn unescaping_is_what_the_parser_reads(s in "[a-z \"\\\\/\n\t\r\u{1}\u{8}\u{c}é€🙂\u{7ff}\u{ffff}]{0,40}") {
            let literal = serde_json::to_string(&s).unwrap();
            let ascii = super::ascii_literal(&s);
            prop_assert_eq!(super::unescape_literal(&literal).map(std::borrow::Cow::into_owned), Some(s.clone()));
            prop_assert_eq!(super::unescape_literal(&ascii).map(std::borrow::Cow::into_owned), Some(s.clone()));
        }

        /// A prefix decoded for a preview gives the preview of the whole text.
        #[test]
        fn a_preview_of_a_prefix_is_the_preview_of_the_text(
            s in "[a-z \\n\"\\\\\u{1b}é🙂\u{a0}]{0,400}", max in 0usize..40, cut in 0usize..200,
        ) {
            let raw = serde_json::to_string(&s).unwrap();
            if let Some(prefix) = super::string_prefix(&raw, cut) {
                let text: String = serde_json::from_str(&prefix).unwrap();
                prop_assert!(s.starts_with(&text));
                if let Some(shown) = crate::render::preview_if_cut(&text, max) {
                    prop_assert_eq!(shown, crate::render::preview(&s, max));
                }
            }
        }
    }
}
