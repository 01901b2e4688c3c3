//! A validating JSON scanner over one line: the canonical reader and the dataset view
//! read the few keys they need and step over everything else in a single pass,
//! checking the whole grammar as they go (strings, escapes, numbers, literals,
//! nesting). It never decides that a line is bad: wherever it is unsure it says `None`,
//! and the line goes to `serde_json`, which accepts it or words the error.

use crate::text::{escape_at, find_special, special_mask32};
use std::borrow::Cow;
use std::ops::Range;

/// Nesting deeper than this is left to the canonical path (whose parser has a limit of
/// its own).
const MAX_DEPTH: usize = 100;

/// The keys an object has read, one bit each (a second one is left to the fallback).
#[derive(Default)]
pub struct Seen(u16);

impl Seen {
    /// `Some` the first time `bit` is seen.
    pub fn first(&mut self, bit: u16) -> Option<()> {
        (self.0 & bit == 0).then(|| self.0 |= bit)
    }

    /// Whether `bit` was seen.
    pub fn has(&self, bit: u16) -> bool {
        self.0 & bit != 0
    }
}

/// A string literal: where it is (quotes included), the UTF-8 length of its value, and
/// whether it holds an escape.
#[derive(Clone, Copy)]
pub struct Lit {
    pub start: usize,
    pub end: usize,
    pub len: u64,
    pub escaped: bool,
}

/// The compact text `serde_json` writes for the JSON value `text` holds (keys in their
/// order, strings escaped as it escapes them, whitespace gone), made in one pass without
/// building the value; `None` wherever that text could differ or the parser could
/// refuse — a fraction or exponent, an integer out of range or `-0`, a duplicate key, a
/// key with an escape, deep nesting, anything not JSON — and the caller's fallback
/// parses it.
pub fn compact(text: &str) -> Option<String> {
    let mut s = Scan::new(text);
    let mut out = String::with_capacity(text.len());
    compact_value(&mut s, &mut out, 0)?;
    s.at_end().then_some(out)
}

/// A checked string literal (quotes included) as `serde_json` writes its value: the
/// runs without escapes copied, each escape written as it writes that character
/// ([`crate::text::push_escape`] for what must stay escaped, anything else itself).
fn push_literal(out: &mut String, lit: &str) -> Option<()> {
    let Some(first) = memchr::memchr(b'\\', lit.as_bytes()) else {
        out.push_str(lit);
        return Some(());
    };
    crate::text::push_unescaped(out, lit, first, |out, c| match u8::try_from(c) {
        Ok(b) if b < b' ' || b == b'"' || b == b'\\' => crate::text::push_escape(out, b),
        _ => out.push(c),
    })
}

fn compact_value(s: &mut Scan<'_>, out: &mut String, depth: usize) -> Option<()> {
    match s.peek()? {
        b'"' => {
            let lit = s.string()?;
            push_literal(out, s.text(lit.start..lit.end))?;
        }
        b'{' => {
            out.push('{');
            // Keys so far, to leave a duplicate (the parser keeps the last value in the
            // first one's place) to the fallback.
            let mut keys: smallvec::SmallVec<[&str; 8]> = smallvec::SmallVec::new();
            s.object(depth, |s, key| {
                if keys.contains(&key) {
                    return None;
                }
                if !keys.is_empty() {
                    out.push(',');
                }
                keys.push(key);
                // A key without escapes holds nothing to escape (the scanner checked it).
                out.push('"');
                out.push_str(key);
                out.push_str("\":");
                compact_value(s, out, depth + 1)
            })?;
            out.push('}');
        }
        b'[' => {
            out.push('[');
            let mut first = true;
            s.array(depth, |s| {
                if !std::mem::take(&mut first) {
                    out.push(',');
                }
                compact_value(s, out, depth + 1)
            })?;
            out.push(']');
        }
        b't' | b'f' | b'n' => out.push_str(s.raw_value(depth)?),
        _ => {
            // An integer is written as it reads when it stays an integer.
            let raw = s.raw_value(depth)?;
            let integer = match raw.strip_prefix('-') {
                Some(digits) => {
                    digits.bytes().all(|c| c.is_ascii_digit()) && digits != "0" && raw.parse::<i64>().is_ok()
                }
                None => raw.bytes().all(|c| c.is_ascii_digit()) && raw.parse::<u64>().is_ok(),
            };
            if !integer {
                return None;
            }
            out.push_str(raw);
        }
    }
    Some(())
}

/// Whether an escape's letter is one of those that stand for one byte (from the table
/// of what each stands for).
#[inline]
fn is_one_letter_escape(c: Option<&u8>) -> bool {
    c.is_some_and(|&c| crate::text::UNESCAPED[usize::from(c)] != 0)
}

pub struct Scan<'a> {
    text: &'a str,
    b: &'a [u8],
    pub i: usize,
}

impl<'a> Scan<'a> {
    pub fn new(text: &'a str) -> Scan<'a> {
        Scan { text, b: text.as_bytes(), i: 0 }
    }

    pub fn text(&self, r: Range<usize>) -> &'a str {
        &self.text[r]
    }

    /// Steps over whitespace; the next byte, if any.
    pub fn peek(&mut self) -> Option<u8> {
        while let Some(&c) = self.b.get(self.i) {
            if !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(c);
            }
            self.i += 1;
        }
        None
    }

    /// Whether only whitespace is left.
    pub fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// Consumes `c` (after whitespace), or `None`.
    pub fn expect(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// The string literal here (after whitespace), checked: no raw control character,
    /// every escape one a parser accepts (surrogates in pairs).
    pub fn string(&mut self) -> Option<Lit> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.i;
        let (mut i, mut removed, mut escaped) = (start + 1, 0, false);
        // Thirty-two bytes at a time, every special byte of a block seen from its mask:
        // one-letter escapes (most are) do not end the block.
        'blocks: while let Some(mut mask) = special_mask32(self.b, i) {
            let mut next = i + 32;
            while mask != 0 {
                let k = mask.trailing_zeros() as usize;
                let at = i + k;
                match self.b[at] {
                    b'"' => {
                        i = at;
                        break 'blocks;
                    }
                    b'\\' => {
                        escaped = true;
                        if !is_one_letter_escape(self.b.get(at + 1)) {
                            // A `\u` escape: the block starts again after it.
                            let (n, gone) = self.escape(at)?;
                            removed += gone;
                            i = at + n;
                            continue 'blocks;
                        }
                        // A one-letter escape (most are): two bytes for one, and the
                        // escaped byte is no special.
                        removed += 1;
                        mask &= !(3 << k);
                        next = next.max(at + 2);
                    }
                    _ => return None,
                }
            }
            i = next;
        }
        if self.b.get(i) != Some(&b'"') {
            // Not closed yet (`i` is never inside an escape): the last, fewer than
            // thirty-two, bytes.
            loop {
                i = find_special(self.b, i);
                match *self.b.get(i)? {
                    b'"' => break,
                    b'\\' => {
                        let (n, gone) = self.escape(i)?;
                        removed += gone;
                        i += n;
                        escaped = true;
                    }
                    _ => return None,
                }
            }
        }
        self.i = i + 1;
        Some(Lit { start, end: i + 1, len: (i - start - 1 - removed) as u64, escaped })
    }

    /// The escape at `at` (a backslash inside a literal), checked: its length, and how
    /// many bytes longer it is than the character it stands for. A one-letter escape
    /// (most are) is two bytes for one.
    fn escape(&self, at: usize) -> Option<(usize, usize)> {
        if is_one_letter_escape(self.b.get(at + 1)) {
            return Some((2, 1));
        }
        let (c, n) = escape_at(self.text, at)?;
        Some((n, n - c.len_utf8()))
    }

    /// Reads an object (after whitespace): `member` is called with each key (a key with
    /// an escape is left to the canonical path) and must consume its value.
    pub fn object(&mut self, depth: usize, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.list(depth, b'{', b'}', |s| {
            let key = s.string()?;
            if key.escaped {
                return None;
            }
            s.expect(b':')?;
            let text = s.text;
            member(s, &text[key.start + 1..key.end - 1])
        })
    }

    /// Reads an array (after whitespace): `element` is called at each element and must
    /// consume it.
    pub fn array(&mut self, depth: usize, element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.list(depth, b'[', b']', element)
    }

    /// `open`, items separated by commas (each read by `item`), `close`.
    fn list(&mut self, depth: usize, open: u8, close: u8, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        self.expect(open)?;
        if self.peek()? == close {
            self.i += 1;
            return Some(());
        }
        loop {
            item(self)?;
            match self.peek()? {
                b',' => self.i += 1,
                c if c == close => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Steps over the value here (after whitespace), checking it; its span.
    pub fn value(&mut self, depth: usize) -> Option<Range<usize>> {
        let start = match self.peek()? {
            b'"' => {
                let lit = self.string()?;
                return Some(lit.start..lit.end);
            }
            b'{' => {
                let start = self.i;
                self.object(depth, |s, _| s.skip(depth + 1))?;
                return Some(start..self.i);
            }
            b'[' => {
                let start = self.i;
                self.array(depth, |s| s.skip(depth + 1))?;
                return Some(start..self.i);
            }
            b't' => self.word(b"true")?,
            b'f' => self.word(b"false")?,
            b'n' => self.word(b"null")?,
            _ => self.number()?,
        };
        Some(start..self.i)
    }

    /// Steps over the value here (after whitespace), checking it.
    pub fn skip(&mut self, depth: usize) -> Option<()> {
        self.value(depth).map(drop)
    }

    /// Steps over the value here (after whitespace), checking it; its JSON text.
    pub fn raw_value(&mut self, depth: usize) -> Option<&'a str> {
        let r = self.value(depth)?;
        Some(&self.text[r])
    }

    /// A string's value (after whitespace), borrowed when it has no escape; `None` for
    /// anything else.
    pub fn str(&mut self) -> Option<Cow<'a, str>> {
        let lit = self.string()?;
        let raw = self.text(lit.start..lit.end);
        if lit.escaped {
            return crate::text::unescape_literal(raw);
        }
        Some(Cow::Borrowed(&raw[1..raw.len() - 1]))
    }

    /// A string or `null` (`Some(None)`); `None` for anything else.
    #[allow(clippy::option_option)] // `None`: not for the scanner; `Some(None)`: no value
    pub fn optional_str(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.null()? {
            return Some(None);
        }
        self.str().map(Some)
    }

    /// A number without sign, fraction or exponent that fits in a `u64`; `None` for
    /// any other value (a parser may still read it: the caller's fallback decides).
    pub fn u64(&mut self) -> Option<u64> {
        self.peek()?;
        let start = self.i;
        let mut n: u64 = 0;
        while let Some(&c) = self.b.get(self.i).filter(|c| c.is_ascii_digit()) {
            n = n.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
            self.i += 1;
        }
        let digits = self.i - start;
        // One digit, or no leading zero; and no fraction or exponent after it.
        let plain = digits == 1 || (digits > 1 && self.b[start] != b'0');
        (plain && !matches!(self.b.get(self.i), Some(b'.' | b'e' | b'E'))).then_some(n)
    }

    /// An integer without fraction or exponent that fits in an `i64`, or `None`.
    /// `-0` is `None`: serde_json reads it as the float `-0.0`, which no integer field
    /// takes, so the parser's fallback must be the one to refuse it.
    pub fn i64(&mut self) -> Option<i64> {
        self.peek()?;
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
            let n = self.u64()?;
            return match n {
                0 => None,
                n if n == 1 << 63 => Some(i64::MIN),
                n => i64::try_from(n).ok().map(|n| -n),
            };
        }
        i64::try_from(self.u64()?).ok()
    }

    /// `true`, `false`, or `None` for anything else.
    pub fn bool(&mut self) -> Option<bool> {
        match self.peek()? {
            b't' => self.word(b"true").map(|_| true),
            b'f' => self.word(b"false").map(|_| false),
            _ => None,
        }
    }

    /// Whether the value here (after whitespace) is `null`, consuming it if so.
    pub fn null(&mut self) -> Option<bool> {
        if self.peek()? == b'n' {
            self.word(b"null")?;
            return Some(true);
        }
        Some(false)
    }

    fn word(&mut self, w: &[u8]) -> Option<usize> {
        let start = self.i;
        if self.b.get(start..start + w.len())? != w {
            return None;
        }
        self.i += w.len();
        Some(start)
    }

    /// A number in JSON's grammar. One with an exponent or of more than a few hundred
    /// digits may be out of a parser's range: left to the canonical path.
    fn number(&mut self) -> Option<usize> {
        let start = self.i;
        let digits = |s: &mut Self| {
            let from = s.i;
            while s.b.get(s.i).is_some_and(u8::is_ascii_digit) {
                s.i += 1;
            }
            s.i - from
        };
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match self.b.get(self.i)? {
            b'0' => self.i += 1,
            b'1'..=b'9' => {
                digits(self);
            }
            _ => return None,
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if digits(self) == 0 {
                return None;
            }
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) || self.i - start > 300 {
            return None;
        }
        Some(start)
    }
}

/// Where the value at `path` starts in the JSON text `text` (a byte offset), for the
/// column of an error about it. `path` is written as serde names a value:
/// `task.max_total_tokens`, `workspace.allowed_paths[1]`, and `""` for the whole text's
/// value. `None` when the path is not there, or something before it is what this
/// scanner leaves to a parser (an escaped key, a number with an exponent).
pub fn value_offset(text: &str, path: &str) -> Option<usize> {
    let mut steps = Vec::new();
    // The empty path is the text's own value.
    for segment in path.split('.').filter(|_| !path.is_empty()) {
        let mut parts = segment.split('[');
        steps.push(Step::Key(parts.next()?));
        for index in parts {
            steps.push(Step::Index(index.strip_suffix(']')?.parse().ok()?));
        }
    }
    walk(&mut Scan::new(text), &steps, 0)
}

/// [`value_offset`] as a 1-based line and column (columns count characters).
fn value_position(text: &str, path: &str) -> Option<(usize, usize)> {
    value_offset(text, path).map(|at| line_column(text, at))
}

/// Where an error about the value at `path` is named: that value, or, when the scanner
/// cannot find it (an escaped key before it), where the text's value starts.
pub fn place_of(text: &str, path: &str) -> (usize, usize) {
    value_position(text, path).or_else(|| value_position(text, "")).unwrap_or((1, 1))
}

/// The 1-based line and column of the byte offset `at` of `text` (columns count
/// characters).
fn line_column(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at];
    let line_start = before.rfind('\n').map_or(0, |k| k + 1);
    (before.matches('\n').count() + 1, before[line_start..].chars().count() + 1)
}

/// One step of a path to a value: a member's key, or an element's index.
enum Step<'p> {
    Key(&'p str),
    Index(usize),
}

/// Where the value `steps` lead to from here starts.
fn walk(s: &mut Scan<'_>, steps: &[Step<'_>], depth: usize) -> Option<usize> {
    let Some((step, rest)) = steps.split_first() else {
        s.peek()?;
        return Some(s.i);
    };
    // The member or element found ends the list's read (its `None`): the rest of the
    // text is never looked at.
    let mut found = None;
    match *step {
        Step::Key(want) => {
            let _ = s.object(depth, |s, key| {
                if key == want {
                    found = Some(walk(s, rest, depth + 1));
                    return None;
                }
                s.skip(depth + 1)
            });
        }
        Step::Index(want) => {
            let mut k = 0;
            let _ = s.array(depth, |s| {
                if k == want {
                    found = Some(walk(s, rest, depth + 1));
                    return None;
                }
                k += 1;
                s.skip(depth + 1)
            });
        }
    }
    found.flatten()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_one_letter_escapes_are_exactly_the_eight() {
        for c in 0..=255u8 {
            let want = matches!(c, b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't');
            assert_eq!(super::is_one_letter_escape(Some(&c)), want, "{:?}", c as char);
        }
        assert!(!super::is_one_letter_escape(None));
    }

    #[test]
    fn a_value_is_found_by_its_path() {
        let text =
            r#"{"type":"session", "task": {"name": "x[1]", "max_total_tokens": -5}, "w": {"p": ["a", {"q": 2}]}}"#;
        let at = |path: &str| super::value_offset(text, path).map(|k| &text[k..k + 2]);
        assert_eq!(at("task.max_total_tokens"), Some("-5"));
        assert_eq!(at("task"), Some("{\""));
        assert_eq!(at("w.p[1].q"), Some("2}"));
        assert_eq!(at("w.p[0]"), Some("\"a"));
        assert_eq!(super::value_offset(&format!("\n  {text}"), ""), Some(3));
        for absent in ["task.threshold", "w.p[2]", "w.p[0].q", "nothing", "w.p[x]", "task."] {
            assert_eq!(super::value_offset(text, absent), None, "{absent}");
        }
    }

    use super::compact;
    use proptest::prelude::*;
    use serde_json::Value;

    /// A string literal's body of any bytes a line can hold: runs of letters long enough
    /// to cross the scanner's 32-byte blocks, quotes and backslashes raw or escaped, every
    /// escape letter and some that are not, `\u` escapes (surrogates too), raw control
    /// characters, wide characters.
    fn body() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            "[a-z ]{1,40}",
            Just("\\\"".to_string()),
            Just("\\\\".to_string()),
            Just("\"".to_string()),
            "\\\\[\"\\\\/bfnrtuxq0 ]",
            "\\\\u[0-9a-fA-F]{4}",
            Just("\\ud83d\\ude00".to_string()),
            Just("\\ud83d".to_string()),
            "[\u{0}-\u{1f}\u{7f}]",
            "[é€🙂]{1,3}",
        ];
        proptest::collection::vec(piece, 0..24).prop_map(|p| p.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// The scanner ends a string where a parser does, refuses what a parser refuses,
        /// and measures what it decodes to.
        #[test]
        fn a_string_is_read_as_a_parser_reads_it(body in body(), pad in 0usize..40) {
            let lit = format!("{}\"{body}\"", " ".repeat(pad));
            let mut s = super::Scan::new(&lit);
            let mut parser = serde_json::Deserializer::from_str(&lit).into_iter::<String>();
            let parsed = parser.next();
            if let Some(l) = s.string() {
                let Some(Ok(decoded)) = parsed else {
                    return Err(TestCaseError::fail(format!("{lit:?} was read, a parser says {parsed:?}")));
                };
                prop_assert_eq!(l.end, parser.byte_offset(), "{:?} ends where a parser ends", lit);
                prop_assert_eq!(l.len, decoded.len() as u64, "{:?}", lit);
                prop_assert_eq!(l.escaped, lit[l.start..l.end].contains('\\'));
            } else {
                prop_assert!(!matches!(parsed, Some(Ok(_))), "{:?} was refused, a parser reads {:?}", lit, parsed);
            }
        }
    }

    /// A string literal with each character written raw, as `\uXXXX` (a surrogate pair
    /// past the BMP), or as its short escape, at random; now and then a lone surrogate.
    fn string_lit() -> impl Strategy<Value = String> {
        let ch = prop_oneof![
            prop::char::range('a', 'e'),
            prop::sample::select(vec!['"', '\\', '/', '\n', '\t', '\r', '\u{8}', '\u{c}', '\u{1}', '\u{7f}']),
            prop::sample::select(vec!['é', '€', '🙂', '\u{2028}', '\u{ffff}']),
        ];
        (prop::collection::vec((ch, 0u8..3), 0..8), prop::bool::weighted(0.03)).prop_map(|(chars, lone)| {
            let mut s = String::from("\"");
            for (c, style) in chars {
                let short = match c {
                    '"' => Some("\\\""),
                    '\\' => Some("\\\\"),
                    '/' => Some("\\/"),
                    '\n' => Some("\\n"),
                    '\t' => Some("\\t"),
                    '\r' => Some("\\r"),
                    '\u{8}' => Some("\\b"),
                    '\u{c}' => Some("\\f"),
                    _ => None,
                };
                let must = matches!(c, '"' | '\\') || c < ' ';
                match (style, short) {
                    (0, _) if !must => s.push(c),
                    (2, Some(e)) => s.push_str(e),
                    _ => {
                        let mut units = [0u16; 2];
                        for u in c.encode_utf16(&mut units) {
                            s.push_str(&format!("\\u{u:04X}"));
                        }
                    }
                }
            }
            if lone {
                s.push_str("\\ud800");
            }
            s.push('"');
            s
        })
    }

    /// JSON text of every kind `compact` meets, laid out at random: whitespace between
    /// tokens, duplicate and escaped keys, integers at and past their ranges, `-0`,
    /// fractions and exponents.
    fn json_text() -> impl Strategy<Value = String> {
        let ws = || prop::sample::select(vec!["", "", " ", "\n  ", "\t", "\r\n"]);
        let number = prop_oneof![
            any::<i64>().prop_map(|n| n.to_string()),
            any::<u64>().prop_map(|n| n.to_string()),
            prop::sample::select(vec![
                "0",
                "-0",
                "1.5",
                "-0.0",
                "1e3",
                "2E-2",
                "18446744073709551615",
                "18446744073709551616",
                "-9223372036854775808",
                "-9223372036854775809",
            ])
            .prop_map(String::from),
        ];
        let leaf = prop_oneof![
            prop::sample::select(vec!["null", "true", "false"]).prop_map(String::from),
            number,
            string_lit(),
        ];
        let key = prop_oneof![
            prop::sample::select(vec!["\"a\"", "\"b\"", "\"path\"", "\"command\"", "\"a\\n\"", "\"\""])
                .prop_map(String::from),
            string_lit(),
        ];
        leaf.prop_recursive(4, 40, 5, move |inner| {
            prop_oneof![
                prop::collection::vec((ws(), inner.clone(), ws()), 0..5).prop_map(|items| {
                    let items: Vec<String> = items.into_iter().map(|(a, v, b)| format!("{a}{v}{b}")).collect();
                    format!("[{}]", items.join(","))
                }),
                prop::collection::vec((key.clone(), ws(), inner, ws()), 0..5).prop_map(|members| {
                    let members: Vec<String> =
                        members.into_iter().map(|(k, a, v, b)| format!("{a}{k}{b}:{a}{v}{b}")).collect();
                    format!("{{{}}}", members.join(","))
                }),
            ]
        })
        .prop_flat_map(move |v| (ws(), Just(v), ws()).prop_map(|(a, v, b)| format!("{a}{v}{b}")))
    }

    /// What `compact` must give: the parser's own compact text, or `None`.
    fn serde_compact(text: &str) -> Option<String> {
        serde_json::from_str::<Value>(text).ok().map(|v| v.to_string())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Whatever it gives is exactly the parser's text; it gives nothing for what the
        /// parser refuses.
        #[test]
        fn compact_text_is_the_parsers(text in json_text()) {
            if let Some(ours) = compact(&text) {
                prop_assert_eq!(Some(ours), serde_compact(&text), "{}", text);
            }
        }

        /// Arguments as agents write them — objects of strings, integers and arrays,
        /// with `json.dumps` spacing — take the fast way (so the test above compares
        /// something).
        #[test]
        fn plain_arguments_take_the_fast_way(
            members in prop::collection::btree_map("[a-z_]{1,8}", prop_oneof![
                "[ -~é€🙂\n\t]{0,30}".prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
                prop::collection::vec("[a-z -]{0,8}", 0..4).prop_map(Value::from),
                Just(Value::Null),
                any::<bool>().prop_map(Value::from),
            ], 0..6),
        ) {
            let value = Value::Object(members.into_iter().collect());
            let spaced = serde_json::to_string_pretty(&value).unwrap();
            prop_assert_eq!(compact(&spaced), Some(value.to_string()));
        }
    }

    #[test]
    fn what_could_read_differently_is_left_to_the_parser() {
        for text in [
            "1.0",
            "-0",
            "1e2",
            "18446744073709551616",
            "-9223372036854775809",
            r#"{"a":1,"a":2}"#,
            r#"{"\u0061":1}"#,
            r#""\ud800""#,
            "[1,]",
            "{} {}",
            "",
        ] {
            assert_eq!(compact(text), None, "{text}");
        }
        assert_eq!(
            compact(" {\"a\": [1, -2, \"\\u00e9\\/\\u001F\"], \"b\": null} ").as_deref(),
            Some("{\"a\":[1,-2,\"é/\\u001f\"],\"b\":null}")
        );
        assert_eq!(compact(&"[".repeat(150)), None);
    }
}
