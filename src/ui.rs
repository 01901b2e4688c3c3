//! The one printer for what people read: every line on stderr goes through here, and
//! every piece of input text shown anywhere (file names, keys, ids, previews, parser
//! messages quoting input) is escaped by [`escape`], so a transcript or a file name
//! cannot drive a terminal or forge a line.

use std::fmt::Write as _;
use std::io::Write as _;

/// Whether a character is shown escaped: C0 and C1 controls (newline and tab
/// included), DEL, and the bidirectional marks, embeddings, overrides and isolates
/// that reorder what a terminal shows (U+061C, U+200E–F, U+202A–E, U+2066–9).
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Escapes unsafe characters `\u{1b}` style; everything else is kept as it is.
pub fn escape(s: &str) -> String {
    if !s.chars().any(is_unsafe) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_unsafe(c) {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// `rivumi-compact: error: …`
pub fn error(msg: &str) {
    line("error: ", msg);
}

/// `rivumi-compact: warning: …`
pub fn warn(msg: &str) {
    line("warning: ", msg);
}

/// `rivumi-compact: …`, for the one-line summaries people read.
pub fn note(msg: &str) {
    line("", msg);
}

/// One escaped line on stderr. A closed stderr (`2>&1 | head -1`) is ignored: there is
/// no one left to tell, and the exit code still says what happened.
fn line(kind: &str, msg: &str) {
    let text = format!("rivumi-compact: {kind}{}\n", escape(msg));
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_controls_c1_and_bidi_only() {
        let cases = [
            ("plain é 🙂", "plain é 🙂"),
            ("a\nb\tc\r", "a\\u{a}b\\u{9}c\\u{d}"),
            ("\u{1b}[31mred", "\\u{1b}[31mred"),
            ("\u{9b}31m", "\\u{9b}31m"),
            ("\u{7f}", "\\u{7f}"),
            ("abc\u{202e}gpj.exe", "abc\\u{202e}gpj.exe"),
            ("\u{2066}x\u{2069}", "\\u{2066}x\\u{2069}"),
            ("\u{200f}\u{061c}", "\\u{200f}\\u{61c}"),
        ];
        for (input, want) in cases {
            assert_eq!(escape(input), want, "{input:?}");
        }
    }
}
