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
/// `RawValue`): borrowed when it holds no escape, decoded into one buffer of the right
/// size otherwise (no parser state made for it). `None` for a surrogate escape that is
/// not half of a pair, as the parser would refuse it.
pub fn unescape_literal(raw: &str) -> Option<Cow<'_, str>> {
    let body = raw.strip_prefix('"')?.strip_suffix('"')?;
    let b = body.as_bytes();
    let Some(first) = memchr::memchr(b'\\', b) else { return Some(Cow::Borrowed(body)) };
    let mut out = String::with_capacity(body.len());
    out.push_str(&body[..first]);
    let mut i = first;
    while i < b.len() {
        let Some(k) = memchr::memchr(b'\\', &b[i..]) else {
            out.push_str(&body[i..]);
            break;
        };
        out.push_str(&body[i..i + k]);
        i += k;
        let (c, len) = escape_at(body, i)?;
        out.push(c);
        i += len;
    }
    Some(Cow::Owned(out))
}

/// The index of the first byte from `i` on that a JSON string literal cannot hold as
/// it is — a quote, a backslash or a control character (below 0x20) — or `b.len()`.
/// Sixteen bytes at a time (SSE2, which every x86-64 has), then a byte at a time.
pub fn find_special(b: &[u8], i: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of the x86-64 baseline: every x86-64 processor has it.
    let i = unsafe { find_special_sse2(b, i) };
    b.get(i..)
        .and_then(|rest| rest.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20))
        .map_or(b.len(), |k| i + k)
}

/// [`find_special`] sixteen bytes at a time: the index of the first special byte, or of
/// the first of the last (fewer than sixteen) bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn find_special_sse2(b: &[u8], mut i: usize) -> usize {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    let (quote, backslash, control) = (_mm_set1_epi8(b'"' as i8), _mm_set1_epi8(b'\\' as i8), _mm_set1_epi8(0x1f));
    while let Some(chunk) = b.get(i..i + 16) {
        // SAFETY: `chunk` is 16 readable bytes, and the load needs no alignment.
        let v = unsafe { _mm_loadu_si128(chunk.as_ptr().cast()) };
        // A byte is a control character when max(byte, 0x1f) is 0x1f (unsigned).
        let hits = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
            _mm_cmpeq_epi8(_mm_max_epu8(v, control), control),
        );
        let mask = _mm_movemask_epi8(hits).cast_unsigned();
        if mask != 0 {
            return i + mask.trailing_zeros() as usize;
        }
        i += 16;
    }
    i
}

/// The character of the escape at `i` of a JSON string's body (which starts with `\`)
/// and the escape's length; a `\u` surrogate pair is one character. `None` for an
/// escape a parser refuses (an unknown letter, a surrogate that is not half of a pair).
pub fn escape_at(body: &str, i: usize) -> Option<(char, usize)> {
    let b = body.as_bytes();
    let hex = |at: usize| -> Option<u32> { u32::from_str_radix(body.get(at..at + 4)?, 16).ok() };
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
            return match cp {
                0xD800..=0xDBFF => {
                    let low = (b.get(i + 6..i + 8) == Some(b"\\u")).then(|| hex(i + 8)).flatten()?;
                    if !(0xDC00..=0xDFFF).contains(&low) {
                        return None;
                    }
                    Some((char::from_u32(0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00))?, 12))
                }
                0xDC00..=0xDFFF => None,
                _ => Some((char::from_u32(cp)?, 6)),
            };
        }
        _ => return None,
    };
    Some((c, 2))
}

/// The text content of an item: the string, or its text blocks joined by newlines.
pub fn item_text(t: &Transcript<'_>, item: usize) -> String {
    raw_content(t, item).map(decode).unwrap_or_default()
}

/// What a summary line shows of an item: `render::preview(item_text, max)`. A string
/// content is previewed straight from its JSON literal, decoded only up to the cut;
/// blocks are decoded whole and left for the renderer to preview.
pub fn item_text_for_preview(t: &Transcript<'_>, item: usize, max: usize) -> crate::render::EntryText {
    use crate::render::EntryText;
    let Some(raw) = raw_content(t, item) else { return EntryText::Full(String::new()) };
    // A string is previewed from the literal itself, decoding only up to the cut.
    if let Some((shown, _)) = crate::render::preview_json(raw, max) {
        return EntryText::Preview(shown);
    }
    EntryText::Full(decode(raw))
}

/// `s` as a JSON literal with every character outside printable ASCII as `\uXXXX`
/// (surrogate pairs above the BMP), as Python's `json.dumps` writes by default: the
/// other way of writing a string, for the tests of what reads one.
#[doc(hidden)]
pub fn ascii_literal(s: &str) -> String {
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
    fn special_bytes_are_found_wherever_they_are() {
        // Every byte value at every place of a buffer longer than two SIMD chunks, and
        // searches starting on either side of it.
        for len in [0, 1, 15, 16, 17, 40] {
            for at in 0..len {
                for c in 0..=255u8 {
                    let mut b = vec![b'a'; len];
                    b[at] = c;
                    let special = c == b'"' || c == b'\\' || c < 0x20;
                    for from in [0, at, at + 1] {
                        let want = if special && from <= at { at } else { len };
                        assert_eq!(super::find_special(&b, from), want, "len {len}, byte {c} at {at}, from {from}");
                    }
                }
            }
        }
    }

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
    }
}
