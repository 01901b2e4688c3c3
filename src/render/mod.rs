//! The texts the tool injects and prints: pure functions of data, no I/O.

mod reanchor;
mod summary;

pub use reanchor::{render_reanchor, ReanchorFacts};
pub use summary::{build_from, build_history_summary_fallback_message, EntryText, SummaryEntry, SUMMARY_HEADER};

/// Escapes control characters (`\u{1b}` style) so transcript text cannot drive a terminal.
pub fn escape_controls(s: &str) -> String {
    crate::ui::escape(s)
}

/// Folds runs of whitespace to one space, escapes control characters, and cuts the
/// result at `max` characters (Unicode scalar values), marking a cut with `…`. One pass
/// that stops at the cut: a preview of a megabyte costs what a preview of a line does.
pub fn preview(s: &str, max: usize) -> String {
    preview_cut(s, max).0
}

/// The preview, and whether it was cut.
fn preview_cut(s: &str, max: usize) -> (String, bool) {
    let mut p = Previewer::new(max, s.len());
    p.text(s);
    p.finish()
}

/// `preview` of the text a JSON string literal holds, made from the literal itself: the
/// escapes are decoded as they are reached and nothing after the cut is read. `None`
/// when the literal is not one (or holds an escape a parser refuses).
pub fn preview_json(literal: &str, max: usize) -> Option<(String, bool)> {
    let body = literal.strip_prefix('"')?.strip_suffix('"')?;
    let b = body.as_bytes();
    let mut p = Previewer::new(max, body.len());
    let mut i = 0;
    loop {
        let next = memchr::memchr(b'\\', &b[i..]).map_or(b.len(), |k| i + k);
        if !p.text(&body[i..next]) || next == b.len() {
            return Some(p.finish());
        }
        let (c, len) = crate::transcript::escape_at(body, next)?;
        i = next + len;
        if !p.char(c) {
            return Some(p.finish());
        }
    }
}

/// The preview being made: fed text in order, it folds, escapes and counts, and says
/// when it was cut (nothing more is wanted after that).
struct Previewer {
    out: String,
    count: usize,
    space: bool,
    max: usize,
    cut: bool,
}

impl Previewer {
    fn new(max: usize, len: usize) -> Previewer {
        Previewer { out: String::with_capacity(max.min(len) + 4), count: 0, space: false, max, cut: false }
    }

    fn finish(self) -> (String, bool) {
        (self.out, self.cut)
    }

    /// Marks the cut; always `false` (the preview is complete).
    fn cut(&mut self) -> bool {
        self.out.push('…');
        self.cut = true;
        false
    }

    /// Feeds text; `false` once the preview is cut.
    fn text(&mut self, s: &str) -> bool {
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if !b[i].is_ascii_graphic() {
                // ASCII whitespace (indentation, line ends) only marks a space to come.
                if matches!(b[i], b' ' | b'\t'..=b'\r') {
                    self.space = self.count > 0;
                    i += 1;
                    continue;
                }
                let c = s[i..].chars().next().expect("i is on a character boundary");
                i += c.len_utf8();
                if !self.char(c) {
                    return false;
                }
                continue;
            }
            // The common case: printable ASCII with single spaces between words is
            // already folded, and is copied as it is (a run never ends on a space).
            // Never further than the cut: one byte past it is enough to know it is cut.
            let room = self.max - self.count + usize::from(self.space);
            let seg = &b[i..(i + room + 2).min(b.len())];
            let mut run = 0;
            while let Some(w) = seg.get(run..run + 8) {
                if !is_folded_word(u64::from_le_bytes(w.try_into().expect("eight bytes"))) {
                    break;
                }
                run += 8;
            }
            while let Some(&c) = seg.get(run) {
                if c.is_ascii_graphic() {
                    run += 1;
                } else if c == b' ' && seg.get(run + 1).is_some_and(u8::is_ascii_graphic) {
                    run += 2;
                } else {
                    break;
                }
            }
            if self.space {
                self.space = false;
                if !self.push(' ') {
                    return false;
                }
            }
            let take = run.min(self.max - self.count);
            self.out.push_str(&s[i..i + take]);
            self.count += take;
            if take < run {
                return self.cut();
            }
            i += run;
        }
        true
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

/// Whether eight bytes (after a printable one) are already folded text: printable
/// ASCII and single spaces, the last byte not a space.
#[allow(clippy::many_single_char_names)]
fn is_folded_word(w: u64) -> bool {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const SEVEN: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    // Some byte below a space, or from DEL up (each test exact for "some byte").
    let below = w.wrapping_sub(LOW * 0x20) & !w & HIGH;
    let above = (((w & SEVEN) + LOW) | w) & HIGH;
    // The spaces, exactly: the high bit of each byte that is 0x20.
    let t = w ^ (LOW * 0x20);
    let spaces = !(((t & SEVEN) + SEVEN) | t) & HIGH;
    below | above == 0 && spaces & (spaces << 8) == 0 && spaces >> 63 == 0
}

/// Appends `s` as a JSON string literal, escaped exactly as `serde_json` escapes it
/// (`\"`, `\\`, `\b \f \n \r \t`, other controls as `\u00xx`); the runs with nothing
/// to escape are found sixteen bytes at a time and copied whole.
pub fn push_json_str(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let b = s.as_bytes();
    out.reserve(b.len() + 2);
    out.push('"');
    let mut start = 0;
    loop {
        let i = crate::transcript::find_special(b, start);
        out.push_str(&s[start..i]);
        let Some(&c) = b.get(i) else { break };
        match c {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            _ => {
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(c >> 4)]));
                out.push(char::from(HEX[usize::from(c & 0xf)]));
            }
        }
        start = i + 1;
    }
    out.push('"');
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

/// The ratio `used / limit` rounded half-up to 4 decimals, computed in integers.
pub fn ratio(used: u64, limit: u64) -> f64 {
    let bp = (u128::from(used) * 20_000 + u128::from(limit)) / (2 * u128::from(limit));
    bp as f64 / 10_000.0
}

/// The pressure reminder (SPEC 4): used, limit and ratio, and the ask to finish.
pub fn pressure_reminder(used: u64, limit: u64) -> String {
    format!(
        "[rivumi] Token budget pressure: this task has used {used} of its {limit} max_total_tokens \
         (ratio {:.4}). Finish within the budget: complete the current step with the smallest change \
         that works, avoid re-reading large files or repeating work, run the verification once, and stop.",
        ratio(used, limit)
    )
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    /// The definition `preview` must keep: fold, escape, then cut.
    fn reference(s: &str, max: usize) -> String {
        let folded = s.split_whitespace().collect::<Vec<_>>().join(" ");
        super::cut(&super::escape_controls(&folded), max)
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
            prop_assert_eq!(super::preview_json(&crate::transcript::ascii_literal(&s), max), Some(want));
        }

        #[test]
        fn preview_is_fold_escape_cut(s in "[a-z~!{}\" \\n\\t\\x0b\\x0c\\r\u{1}\u{1c}\u{7f}\u{1b}\u{202e}é🙂\u{85}\u{a0}]{0,80}", max in 0usize..40) {
            prop_assert_eq!(super::preview(&s, max), reference(&s, max));
        }
    }

    #[test]
    fn folded_words_are_found_exactly() {
        // Every byte at every place, beside printable ones and spaces.
        for at in 0..8 {
            for b in 0..=255u8 {
                for fill in [b'a', b' '] {
                    let mut w = [b'x'; 8];
                    w[at] = b;
                    if at > 0 {
                        w[at - 1] = fill;
                    }
                    let want =
                        w.iter().all(|c| (0x20..0x7f).contains(c)) && !w.windows(2).any(|p| p == b"  ") && w[7] != b' ';
                    assert_eq!(super::is_folded_word(u64::from_le_bytes(w)), want, "{w:?}");
                }
            }
        }
    }

    #[test]
    #[allow(clippy::float_cmp)] // exact values: the ratio is computed in integers
    fn ratios_round_half_up_to_four_decimals() {
        for (used, limit, want) in [
            (17_000, 20_000, 0.85),
            (1, 3, 0.3333),
            (2, 3, 0.6667),
            (1, 20_000, 0.0001), // 0.00005: half a basis point rounds up
            (1, 20_001, 0.0),    // just under half
            (1, 40_000, 0.0),
            (u64::MAX, 1, u64::MAX as f64),
            (0, 5, 0.0),
        ] {
            assert_eq!(super::ratio(used, limit), want, "{used}/{limit}");
        }
    }
}
