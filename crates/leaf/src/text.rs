//! Text and JSON string literals, byte-exact: the primitives every reader, renderer and
//! writer shares. Finding what a literal must escape, decoding an escape, unescaping and
//! writing a literal, and the preview (folded, escaped, cut) that every summary line and
//! message shows. Nothing here knows what a transcript is.

use std::borrow::Cow;

/// Folds runs of whitespace to one space, escapes control characters, and cuts the
/// result at `max` characters (Unicode scalar values), marking a cut with `…`. One pass
/// that stops at the cut: a preview of a megabyte costs what a preview of a line does.
pub fn preview(s: &str, max: usize) -> String {
    preview_cut(s, max).0
}

/// The preview, and whether it was cut.
fn preview_cut(s: &str, max: usize) -> (String, bool) {
    let mut out = String::new();
    let shown = preview_into(&mut out, s, max);
    debug_assert_eq!(shown.chars, out.chars().count(), "the characters a preview says it wrote");
    (out, shown.cut)
}

/// What a preview appended: whether it was cut, and how many characters it wrote (the
/// `…` of a cut included), so a renderer that bounds its text in characters does not
/// count them again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shown {
    pub cut: bool,
    pub chars: usize,
}

/// [`preview`] appended to `out`.
pub fn preview_into(out: &mut String, s: &str, max: usize) -> Shown {
    let mut p = Previewer::new(out, max, s.len());
    p.text(s);
    p.finish()
}

/// `preview` of the text a JSON string literal holds, made from the literal itself: the
/// escapes are decoded as they are reached and nothing after the cut is read. `None`
/// when the literal is not one (or holds an escape a parser refuses). The renderer
/// writes it into its line with [`preview_json_into`]; this form is the tests'.
#[cfg(test)]
fn preview_json(literal: &str, max: usize) -> Option<(String, bool)> {
    let mut out = String::new();
    let shown = preview_json_into(&mut out, literal, max)?;
    assert_eq!(shown.chars, out.chars().count(), "the characters a preview says it wrote");
    Some((out, shown.cut))
}

/// The preview of the text a JSON string literal holds, made from the literal itself
/// (escapes decoded as they are reached, nothing after the cut read), appended to
/// `out`; `None` (and `out` as it was) when the literal is not one (or holds an escape
/// a parser refuses).
pub fn preview_json_into(out: &mut String, literal: &str, max: usize) -> Option<Shown> {
    let start = out.len();
    let cut = write_preview_json(out, literal, max);
    if cut.is_none() {
        out.truncate(start);
    }
    cut
}

fn write_preview_json(out: &mut String, literal: &str, max: usize) -> Option<Shown> {
    let body = literal.strip_prefix('"')?.strip_suffix('"')?;
    let mut p = Previewer::new(out, max, body.len());
    // One pass over the literal: its escapes are met where the runs of folded text end
    // (a backslash ends a run), so nothing after the cut is read.
    p.feed::<true>(body)?;
    Some(p.finish())
}

/// The preview being made: fed text in order, it folds, escapes and counts, and says
/// when it was cut (nothing more is wanted after that).
struct Previewer<'o> {
    out: &'o mut String,
    count: usize,
    space: bool,
    max: usize,
    cut: bool,
}

impl<'o> Previewer<'o> {
    fn new(out: &'o mut String, max: usize, len: usize) -> Previewer<'o> {
        out.reserve(max.min(len) + 4);
        Previewer { out, count: 0, space: false, max, cut: false }
    }

    /// What was shown: every character written counts one (`push` and the copied runs
    /// of ASCII), and the `…` of a cut.
    fn finish(self) -> Shown {
        Shown { cut: self.cut, chars: self.count + usize::from(self.cut) }
    }

    /// Marks the cut; always `false` (the preview is complete).
    fn cut(&mut self) -> bool {
        self.out.push('…');
        self.cut = true;
        false
    }

    /// Feeds text; `false` once the preview is cut.
    fn text(&mut self, s: &str) -> bool {
        self.feed::<false>(s).is_some_and(|open| open)
    }

    /// Feeds text, or with `JSON` the body of a JSON string literal (its escapes
    /// decoded as they are reached); `Some(false)` once the preview is cut, `None` at an
    /// escape a parser refuses (before the cut).
    fn feed<const JSON: bool>(&mut self, s: &str) -> Option<bool> {
        let b = s.as_bytes();
        let mut i = 0;
        // The 64 bytes from `window.at` (fewer at the end) sorted once: runs of words go
        // through indentation and line ends without stopping at each; kept while `i` is
        // in them.
        let mut window: Option<Window> = None;
        while i < b.len() {
            let sorted = match window {
                Some(win) if i < win.at + win.known => win,
                _ => *window.insert(Window::of::<JSON>(&b[i..b.len().min(i + 64)], i)),
            };
            let (used, open) = self.runs(s, &sorted, i);
            if !open {
                return Some(false);
            }
            if used > 0 {
                i += used;
                continue;
            }
            // What the window does not take, one at a time: a wider character, a
            // control, an escape (after two backslashes in a row, `\n` too).
            let (c, len) = if JSON && b[i] == b'\\' {
                // Line ends and tabs, the commonest escapes, only mark a space to come.
                if matches!(b.get(i + 1), Some(b'n' | b't' | b'r')) {
                    self.space = self.count > 0;
                    i += 2;
                    continue;
                }
                escape_at(s, i)?
            } else {
                let c = s[i..].chars().next().expect("i is on a character boundary");
                (c, c.len_utf8())
            };
            i += len;
            if !self.char(c) {
                return Some(false);
            }
        }
        Some(true)
    }

    /// Takes the runs of printable ASCII and of whitespace from `from` on, up to the
    /// first byte of `win` that is neither (a character or an escape
    /// [`Previewer::feed`] takes one at a time): the bytes used, and `false` once the
    /// preview is cut.
    fn runs(&mut self, text: &str, win: &Window, from: usize) -> (usize, bool) {
        let off = from - win.at;
        let lim = ((win.stop >> off).trailing_zeros() as usize).min(win.known - off);
        let mut used = 0;
        while used < lim {
            let at = off + used;
            // A run starts at a printable byte: a single space where one starts (after
            // a character or an escape taken one at a time) folds as whitespace does.
            if (win.space >> at) & 1 == 1 || text.as_bytes()[from + used] == b' ' {
                self.space = self.count > 0;
                used += ((!win.space >> at).trailing_zeros() as usize).clamp(1, lim - used);
                continue;
            }
            let run = ((!win.plain >> at).trailing_zeros() as usize).min(lim - used);
            if self.space {
                self.space = false;
                if !self.push(' ') {
                    return (used, false);
                }
            }
            let take = run.min(self.max - self.count);
            self.out.push_str(&text[from + used..from + used + take]);
            self.count += take;
            if take < run {
                return (used, self.cut());
            }
            used += run;
        }
        (lim, true)
    }

    /// Feeds one character; `false` once the preview is cut.
    fn char(&mut self, c: char) -> bool {
        if c.is_whitespace() {
            self.space = self.count > 0;
            return true;
        }
        if self.space {
            self.space = false;
            if !self.push(' ') {
                return false;
            }
        }
        if crate::ui::is_unsafe(c) {
            return crate::ui::escape(c.encode_utf8(&mut [0; 4])).chars().all(|e| self.push(e));
        }
        self.push(c)
    }

    /// Shows one character unless the preview is full; `false` once it is cut.
    fn push(&mut self, c: char) -> bool {
        if self.count == self.max {
            return self.cut();
        }
        self.out.push(c);
        self.count += 1;
        true
    }
}

/// 64 bytes of a text (or a JSON literal's body) sorted, a bit each: printable ASCII
/// copied as it is, whitespace that folds into a space (in a literal, the escapes `\n`,
/// `\t` and `\r` too, both their bytes), and the bytes where runs of those stop.
#[derive(Clone, Copy)]
struct Window {
    at: usize,
    /// How many of the bytes are sorted: in a literal, those before the first two
    /// backslashes in a row (which of them starts an escape, and so what the bytes
    /// after them are, is known only from the left); all 64 elsewhere.
    known: usize,
    plain: u64,
    space: u64,
    /// Neither printable nor whitespace: a wider character, a control, an escape other
    /// than those three (each read by the byte-at-a-time path).
    stop: u64,
}

impl Window {
    /// The window of `bytes` (at most 64; fewer at the end of a text, the rest stops).
    fn of<const JSON: bool>(bytes: &[u8], at: usize) -> Window {
        let mut padded = [0u8; 64];
        let bytes = if let Ok(whole) = bytes.try_into() {
            whole
        } else {
            // A NUL is a control character: the runs stop there.
            padded[..bytes.len()].copy_from_slice(bytes);
            &padded
        };
        let [graphic, blank, slash, ntr, spaces] = classes(bytes);
        let mut plain = graphic;
        let mut space = blank;
        let mut known = 64;
        if JSON {
            // An escape starts at every backslash before the first pair of them.
            known = (slash & (slash >> 1)).trailing_zeros() as usize;
            let escaped = slash & (ntr >> 1);
            space |= escaped | escaped << 1;
            plain &= !slash & !(escaped << 1);
        }
        // A single space between two printable bytes is copied with them.
        let single = spaces & plain >> 1 & plain << 1;
        Window { at, known, plain: plain | single, space: space & !single, stop: !(plain | space) }
    }
}

/// The bytes of 64 that are printable ASCII (`!` to `~`), ASCII whitespace (space, tab
/// to carriage return), backslashes, the letters `n`, `t` and `r`, spaces: a bit each.
#[cfg(target_arch = "x86_64")]
fn classes(bytes: &[u8; 64]) -> [u64; 5] {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_cmplt_epi8, _mm_loadu_si128, _mm_movemask_epi8,
        _mm_or_si128, _mm_set1_epi8,
    };
    let mut out = [0u64; 5];
    for (k, chunk) in bytes.chunks_exact(16).enumerate() {
        // SAFETY: SSE2 is part of the x86-64 baseline, and `chunk` has 16 readable
        // bytes (the load needs no alignment).
        let masks = unsafe {
            let v = _mm_loadu_si128(chunk.as_ptr().cast());
            let eq = |c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c.cast_signed()));
            let bits = |m: __m128i| u64::from(_mm_movemask_epi8(m).cast_unsigned());
            // Signed: 0x21..=0x7e above a space and below DEL; from 0x80 up negative.
            let graphic = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(0x20)), _mm_cmplt_epi8(v, _mm_set1_epi8(0x7f)));
            let controls =
                _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(0x08)), _mm_cmplt_epi8(v, _mm_set1_epi8(0x0e)));
            let spaces = eq(b' ');
            let blank = _mm_or_si128(spaces, controls);
            let ntr = _mm_or_si128(_mm_or_si128(eq(b'n'), eq(b't')), eq(b'r'));
            [bits(graphic), bits(blank), bits(eq(b'\\')), bits(ntr), bits(spaces)]
        };
        for (o, m) in out.iter_mut().zip(masks) {
            *o |= m << (16 * k);
        }
    }
    out
}

/// [`classes`] elsewhere, a byte at a time.
#[cfg(not(target_arch = "x86_64"))]
fn classes(bytes: &[u8; 64]) -> [u64; 5] {
    let mut out = [0u64; 5];
    for (k, &c) in bytes.iter().enumerate() {
        let tests = [
            c.is_ascii_graphic(),
            matches!(c, b' ' | b'\t'..=b'\r'),
            c == b'\\',
            matches!(c, b'n' | b't' | b'r'),
            c == b' ',
        ];
        for (o, t) in out.iter_mut().zip(tests) {
            *o |= u64::from(t) << k;
        }
    }
    out
}

/// Appends `s` as a JSON string literal, escaped exactly as `serde_json` escapes it
/// (`\"`, `\\`, `\b \f \n \r \t`, other controls as `\u00xx`): sixteen bytes at a time,
/// each block's specials escaped from its mask and the runs between them copied whole.
pub fn push_json_str(out: &mut String, s: &str) {
    let b = s.as_bytes();
    out.reserve(b.len() + 2);
    out.push('"');
    let (mut done, mut i) = (0, 0);
    let mut escape = |out: &mut String, at: usize| {
        out.push_str(&s[done..at]);
        push_escape(out, b[at]);
        done = at + 1;
    };
    while let Some(mut mask) = special_mask(b, i) {
        while mask != 0 {
            escape(out, i + mask.trailing_zeros() as usize);
            mask &= mask - 1;
        }
        i += 16;
    }
    for (at, &c) in b.iter().enumerate().skip(i) {
        if is_special(c) {
            escape(out, at);
        }
    }
    out.push_str(&s[done..]);
    out.push('"');
}

/// Whether a JSON string literal cannot hold byte `c` as it is (a quote, a backslash, a
/// control character).
#[inline]
fn is_special(c: u8) -> bool {
    c == b'"' || c == b'\\' || c < 0x20
}

/// The escape `serde_json` writes for a byte a string literal cannot hold as it is (a
/// quote, a backslash, a control character): `\"`, `\\`, `\b \f \n \r \t`, other
/// controls as `\u00xx`. The letter comes from a table (a `match` is an indirect jump,
/// mispredicted as often as the bytes change).
pub fn push_escape(out: &mut String, c: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    const LETTER: [u8; 256] =
        byte_table(&[(b'"', b'"'), (b'\\', b'\\'), (8, b'b'), (12, b'f'), (b'\n', b'n'), (b'\r', b'r'), (b'\t', b't')]);
    out.push('\\');
    match LETTER[usize::from(c)] {
        0 => {
            out.push_str("u00");
            out.push(char::from(HEX[usize::from(c >> 4)]));
            out.push(char::from(HEX[usize::from(c & 0xf)]));
        }
        letter => out.push(char::from(letter)),
    }
}

/// Cuts `s` to at most `max` characters on a character boundary, adding `…` when cut.
pub fn cut(s: &str, max: usize) -> String {
    // At most `max` characters fit in `max` bytes' worth of ASCII and no fewer.
    if s.len() <= max {
        return s.to_string();
    }
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((at, _)) => {
            let mut out = String::with_capacity(at + 3);
            out.push_str(&s[..at]);
            out.push('…');
            out
        }
    }
}

/// The value of a JSON string literal that a JSON parser has already checked (a
/// `RawValue`): borrowed when it holds no escape, decoded into one buffer of the right
/// size otherwise (no parser state made for it). `None` for a surrogate escape that is
/// not half of a pair, as the parser would refuse it.
pub fn unescape_literal(raw: &str) -> Option<Cow<'_, str>> {
    let body = raw.strip_prefix('"')?.strip_suffix('"')?;
    let b = body.as_bytes();
    let Some(first) = memchr::memchr(b'\\', b) else { return Some(Cow::Borrowed(body)) };
    // Never longer than the literal: an escape takes more bytes than what it stands for.
    let mut out = String::with_capacity(body.len());
    push_unescaped(&mut out, body, first, String::push)?;
    Some(Cow::Owned(out))
}

/// Appends checked JSON string text (a literal's body, or the literal with its quotes)
/// whose first backslash is at `first`: the runs between escapes copied, each escape
/// handed to `put` as the character it stands for; `None` at an escape a parser refuses.
/// Backslashes after the first are found sixteen bytes at a time (escapes come every few
/// bytes in the arguments of a call, where a call of `memchr` for each costs more than
/// the search).
pub(crate) fn push_unescaped(
    out: &mut String,
    text: &str,
    first: usize,
    mut put: impl FnMut(&mut String, char),
) -> Option<()> {
    // Written up to `done`; the backslash at `at` starts the next escape.
    let (mut done, mut at) = (0, first);
    loop {
        out.push_str(&text[done..at]);
        let (c, n) = escape_at(text, at)?;
        put(out, c);
        done = at + n;
        match find_byte(text.as_bytes(), done, b'\\') {
            Some(k) => at = k,
            None => break,
        }
    }
    out.push_str(&text[done..]);
    Some(())
}

/// The byte a one-letter escape stands for, by its letter (`n`: a line feed); 0 for a
/// letter that is none (`u`, or not an escape). A table, not a `match` (which compiles
/// to a jump table: an indirect jump at every escape, mispredicted as often as the
/// letters change); the scanner reads it too.
pub(crate) const UNESCAPED: [u8; 256] = byte_table(&[
    (b'"', b'"'),
    (b'\\', b'\\'),
    (b'/', b'/'),
    (b'b', 8),
    (b'f', 12),
    (b'n', b'\n'),
    (b'r', b'\r'),
    (b't', b'\t'),
]);

/// A table of every byte value: each pair's first byte gives its second, any other 0.
const fn byte_table(pairs: &[(u8, u8)]) -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut k = 0;
    while k < pairs.len() {
        t[pairs[k].0 as usize] = pairs[k].1;
        k += 1;
    }
    t
}

/// The index of the first `byte` in `b` from `i` on, sixteen bytes at a time.
fn find_byte(b: &[u8], mut i: usize, byte: u8) -> Option<usize> {
    while let Some(mask) = byte_mask(b, i, byte) {
        if mask != 0 {
            return Some(i + mask.trailing_zeros() as usize);
        }
        i += 16;
    }
    b.get(i..)?.iter().position(|&c| c == byte).map(|k| i + k)
}

/// Which of the sixteen bytes from `i` on are `byte`, one bit each, the first byte
/// lowest; `None` when fewer than sixteen bytes are left.
#[cfg(target_arch = "x86_64")]
#[inline]
fn byte_mask(b: &[u8], i: usize, byte: u8) -> Option<u32> {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8};
    let chunk = b.get(i..i.checked_add(16)?)?;
    // SAFETY: SSE2 is part of the x86-64 baseline, and `chunk` is 16 readable bytes (the
    // load needs no alignment).
    let mask = unsafe {
        _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(chunk.as_ptr().cast()), _mm_set1_epi8(byte.cast_signed())))
    };
    Some(mask.cast_unsigned())
}

/// [`byte_mask`] elsewhere, a byte at a time.
#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn byte_mask(b: &[u8], i: usize, byte: u8) -> Option<u32> {
    let chunk = b.get(i..i.checked_add(16)?)?;
    Some(chunk.iter().enumerate().fold(0, |m, (k, &c)| m | u32::from(c == byte) << k))
}

/// The index of the first byte from `i` on that a JSON string literal cannot hold as
/// it is — a quote, a backslash or a control character (below 0x20) — or `b.len()`.
/// Sixteen bytes at a time ([`special_mask`]), then a byte at a time.
pub fn find_special(b: &[u8], mut i: usize) -> usize {
    while let Some(mask) = special_mask(b, i) {
        if mask != 0 {
            return i + mask.trailing_zeros() as usize;
        }
        i += 16;
    }
    b.get(i..).and_then(|rest| rest.iter().position(|&c| is_special(c))).map_or(b.len(), |k| i + k)
}

/// Which of the sixteen bytes from `i` on a JSON string literal cannot hold as they are
/// (a quote, a backslash or a control character), one bit each, the first byte lowest;
/// `None` when fewer than sixteen bytes are left.
#[cfg(target_arch = "x86_64")]
#[inline]
pub fn special_mask(b: &[u8], i: usize) -> Option<u32> {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    let chunk = b.get(i..i.checked_add(16)?)?;
    // SAFETY: SSE2 is part of the x86-64 baseline, and `chunk` is 16 readable bytes (the
    // load needs no alignment).
    let mask = unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast());
        let (quote, backslash, control) = (_mm_set1_epi8(b'"' as i8), _mm_set1_epi8(b'\\' as i8), _mm_set1_epi8(0x1f));
        // A byte is a control character when max(byte, 0x1f) is 0x1f (unsigned).
        let hits = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
            _mm_cmpeq_epi8(_mm_max_epu8(v, control), control),
        );
        _mm_movemask_epi8(hits)
    };
    Some(mask.cast_unsigned())
}

/// [`special_mask`] over thirty-two bytes (two blocks, the first lowest); `None` when
/// fewer than thirty-two are left.
#[inline]
pub fn special_mask32(b: &[u8], i: usize) -> Option<u32> {
    let lo = special_mask(b, i)?;
    let hi = special_mask(b, i.checked_add(16)?)?;
    Some(lo | hi << 16)
}

/// [`special_mask`] elsewhere, a byte at a time.
#[cfg(not(target_arch = "x86_64"))]
#[inline]
pub fn special_mask(b: &[u8], i: usize) -> Option<u32> {
    let chunk = b.get(i..i.checked_add(16)?)?;
    Some(chunk.iter().enumerate().fold(0, |m, (k, &c)| m | u32::from(c == b'"' || c == b'\\' || c < 0x20) << k))
}

/// The character of the escape at `i` of a JSON string's body (which starts with `\`)
/// and the escape's length; a `\u` surrogate pair is one character. `None` for an
/// escape a parser refuses (an unknown letter, a surrogate that is not half of a pair).
pub fn escape_at(body: &str, i: usize) -> Option<(char, usize)> {
    let b = body.as_bytes();
    // Exactly four hex digits (`from_str_radix` would also take a sign: `\u+04a`).
    let hex = |at: usize| -> Option<u32> {
        b.get(at..at + 4)?.iter().try_fold(0, |n, &c| Some(n << 4 | char::from(c).to_digit(16)?))
    };
    let letter = *b.get(i + 1)?;
    match UNESCAPED[usize::from(letter)] {
        0 if letter == b'u' => {}
        0 => return None,
        c => return Some((char::from(c), 2)),
    }
    let cp = hex(i + 2)?;
    match cp {
        0xD800..=0xDBFF => {
            let low = (b.get(i + 6..i + 8) == Some(b"\\u")).then(|| hex(i + 8)).flatten()?;
            if !(0xDC00..=0xDFFF).contains(&low) {
                return None;
            }
            Some((char::from_u32(0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00))?, 12))
        }
        0xDC00..=0xDFFF => None,
        _ => Some((char::from_u32(cp)?, 6)),
    }
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

    /// The definition `preview` must keep: fold, escape, then cut.
    fn reference(s: &str, max: usize) -> String {
        let folded = s.split_whitespace().collect::<Vec<_>>().join(" ");
        super::cut(&crate::ui::escape(&folded), max)
    }

    proptest! {
        #[test]
        fn json_strings_are_escaped_as_serde_json_escapes_them(s in "[a-z \"\\\\/\n\t\r\u{0}-\u{1f}\u{7f}é€🙂]{0,70}") {
            let mut out = String::new();
            super::push_json_str(&mut out, &s);
            prop_assert_eq!(out, serde_json::to_string(&s).unwrap());
        }

        #[test]
        fn a_preview_of_a_literal_is_the_preview_of_its_text(
            s in "[a-z~!{}\" \\n\\t\\r\u{1}\u{1b}\u{202e}é🙂\u{a0}\\\\/]{0,80}", max in 0usize..40,
        ) {
            let want = super::preview_cut(&s, max);
            prop_assert_eq!(super::preview_json(&serde_json::to_string(&s).unwrap(), max), Some(want.clone()));
            prop_assert_eq!(super::preview_json(&super::ascii_literal(&s), max), Some(want));
        }

        /// A literal nobody checked (raw quotes and control characters in it) is
        /// previewed as its text, and never loops.
        #[test]
        fn an_unchecked_literal_is_previewed_as_its_text(
            s in "[a-z \"\t\u{1}é]{0,300}", max in 0usize..40,
        ) {
            let literal = format!("\"{s}\"");
            prop_assert_eq!(super::preview_json(&literal, max), Some(super::preview_cut(&s, max)));
        }

        /// Texts longer than the window the next escape is looked for in: long runs of
        /// whitespace, wide characters and escapes across the windows' edges.
        #[test]
        fn a_long_literal_is_previewed_across_windows(
            parts in prop::collection::vec(prop_oneof![
                (1usize..300).prop_map(|n| " ".repeat(n)),
                (1usize..200).prop_map(|n| "é".repeat(n)),
                "[a-z\n\t🙂\\\\\"]{1,20}",
            ], 0..12),
            max in 0usize..30,
        ) {
            let s: String = parts.concat();
            let want = super::preview_cut(&s, max);
            prop_assert_eq!(super::preview_json(&serde_json::to_string(&s).unwrap(), max), Some(want.clone()));
            prop_assert_eq!(super::preview_json(&super::ascii_literal(&s), max), Some(want));
        }

        /// Long texts as agents write them — words, indentation, line ends, escapes,
        /// backslashes, wide characters — through the 64-byte windows, at every cut up
        /// to past their end: the definition, from the text and from either literal.
        #[test]
        fn a_long_text_is_folded_escaped_and_cut_through_the_windows(
            parts in prop::collection::vec(prop_oneof![
                "[a-z]{1,12}",
                Just(" ".to_string()),
                (1usize..14).prop_map(|n| format!("\n{}", " ".repeat(n))),
                "[ \t\r\n\x0b\x0c]{1,4}",
                "[\\\\\"/]{1,3}[nrt]?",
                "[é→🙂\u{a0}\u{1}\u{7f}\u{202e}]{1,2}",
            ], 0..120),
            max in 0usize..700,
        ) {
            let s: String = parts.concat();
            let want = reference(&s, max);
            prop_assert_eq!(&super::preview(&s, max), &want);
            let shown = |l: &str| super::preview_json(l, max).map(|(text, _)| text);
            prop_assert_eq!(shown(&serde_json::to_string(&s).unwrap()), Some(want.clone()));
            prop_assert_eq!(shown(&super::ascii_literal(&s)), Some(want));
        }

        /// A summary line leaves out the space before a text that shows nothing: a
        /// preview is empty exactly when the text is blank, at any length.
        #[test]
        fn a_preview_is_empty_exactly_when_the_text_is_blank(
            s in "[a \n\t\x0b\x0c\r\u{1}\u{85}\u{a0}\u{2028}\u{3000}\u{200b}\u{feff}]{0,12}", max in 0usize..4,
        ) {
            prop_assert_eq!(super::preview(&s, max).is_empty(), s.trim().is_empty(), "{:?}", s);
        }

        #[test]
        fn preview_is_fold_escape_cut(s in "[a-z~!{}\" \\n\\t\\x0b\\x0c\\r\u{1}\u{1c}\u{7f}\u{1b}\u{202e}é🙂\u{85}\u{a0}]{0,80}", max in 0usize..40) {
            prop_assert_eq!(super::preview(&s, max), reference(&s, max));
        }
    }

    #[test]
    fn a_preview_is_appended_and_a_refused_literal_leaves_the_buffer_as_it_was() {
        let mut out = String::from("- a: ");
        let shown = |cut, chars| super::Shown { cut, chars };
        assert_eq!(super::preview_json_into(&mut out, r#""x\ny  z""#, 10), Some(shown(false, 5)));
        assert_eq!(out, "- a: x y z");
        assert_eq!(super::preview_json_into(&mut out, r#""ok then \q""#, 40), None);
        assert_eq!(out, "- a: x y z", "a literal with a bad escape writes nothing");
        assert_eq!(super::preview_into(&mut out, " long  text", 3), shown(true, 4));
        assert_eq!(out, "- a: x y zlon…");
    }

    /// Every byte value at every place of a window (after a printable byte or a space,
    /// and at the end of a short text), sorted as the byte-at-a-time path would take it.
    #[test]
    fn a_window_sorts_every_byte_as_the_preview_takes_it() {
        let graphic = |c: u8| (0x21..0x7f).contains(&c);
        for len in [64, 40, 1] {
            for at in 0..len {
                for c in 0..=255u8 {
                    for fill in [b'a', b' '] {
                        let mut w = vec![b'x'; len];
                        w[at] = c;
                        if at > 0 {
                            w[at - 1] = fill;
                        }
                        let bit = |m: u64| (m >> at) & 1 == 1;
                        let text = super::Window::of::<false>(&w, 0);
                        // A space between two printable bytes is copied with them.
                        let single = c == b' ' && at > 0 && fill != b' ' && at + 1 < len;
                        let blank = matches!(c, b' ' | b'\t'..=b'\r');
                        assert_eq!(bit(text.plain), graphic(c) || single, "{w:?} at {at}");
                        assert_eq!(bit(text.space), blank && !single, "{w:?} at {at}");
                        assert_eq!(bit(text.stop), !graphic(c) && !blank, "{w:?} at {at}");
                        assert!(len == 64 || text.stop >> len == u64::MAX >> len, "past the end stops");
                        // In a literal a backslash is no printable byte: it starts an
                        // escape (here of the byte after it, `x`, which stops).
                        let json = super::Window::of::<true>(&w, 0);
                        assert_eq!(bit(json.plain), (graphic(c) && c != b'\\') || single, "{w:?} at {at} (JSON)");
                        assert_eq!(bit(json.stop), bit(text.stop) || c == b'\\', "{w:?} at {at} (JSON)");
                    }
                }
            }
        }
        // `\n`, `\t` and `\r` fold as whitespace, both bytes; the sorting ends before two
        // backslashes in a row.
        let w = super::Window::of::<true>(br"a\nb\qc\\nd", 0);
        assert_eq!((w.space & 0b110, w.stop & 0b11_0000, w.known), (0b110, 0b1_0000, 7));
    }

    #[test]
    fn special_bytes_and_backslashes_are_found_wherever_they_are() {
        // Every byte value at every place of a buffer longer than two SIMD chunks, and
        // searches starting on either side of it.
        for len in [0, 1, 15, 16, 17, 31, 32, 33, 40, 70] {
            for at in 0..len {
                for c in 0..=255u8 {
                    let mut b = vec![b'a'; len];
                    b[at] = c;
                    let special = c == b'"' || c == b'\\' || c < 0x20;
                    for from in [0, at, at + 1] {
                        let want = if special && from <= at { at } else { len };
                        assert_eq!(super::find_special(&b, from), want, "len {len}, byte {c} at {at}, from {from}");
                        // A search for one byte value finds it, and only it.
                        let want = (c == b'\\' && from <= at).then_some(at);
                        assert_eq!(super::find_byte(&b, from, b'\\'), want, "len {len}, byte {c} at {at}, from {from}");
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
