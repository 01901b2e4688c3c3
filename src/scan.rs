//! A validating JSON scanner over one line: the canonical reader and the dataset view
//! read the few keys they need and step over everything else in a single pass,
//! checking the whole grammar as they go (strings, escapes, numbers, literals,
//! nesting). It never decides that a line is bad: wherever it is unsure it says `None`,
//! and the line goes to `serde_json`, which accepts it or words the error.

use crate::text::{escape_at, find_special};
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
        loop {
            i = find_special(self.b, i);
            match *self.b.get(i)? {
                b'"' => break,
                b'\\' => {
                    let (c, n) = escape_at(self.text, i)?;
                    removed += n - c.len_utf8();
                    i += n;
                    escaped = true;
                }
                _ => return None,
            }
        }
        self.i = i + 1;
        Some(Lit { start, end: i + 1, len: (i - start - 1 - removed) as u64, escaped })
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
