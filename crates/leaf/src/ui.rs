//! The one printer for what people read: every line on stderr goes through here, and
//! every piece of input text shown anywhere (file names, keys, ids, previews, parser
//! messages quoting input) is escaped by [`escape`], so a transcript or a file name
//! cannot drive a terminal or forge a line.

use std::fmt::Write as _;
use std::io::{IsTerminal as _, Write as _};
use std::sync::atomic::{AtomicU8, Ordering};

/// When to colour (`--color`, on every command).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorWhen {
    /// On a terminal, unless `NO_COLOR` is set to something
    #[default]
    Auto,
    /// Always, even into a file or a CI log (and whatever `NO_COLOR` says)
    Always,
    /// Never
    Never,
}

static COLOR: AtomicU8 = AtomicU8::new(0);

/// Sets the colour choice for the rest of the run.
pub fn set_color(when: ColorWhen) {
    COLOR.store(when as u8, Ordering::Relaxed);
}

/// Whether to colour a stream that is (or is not) a terminal: `always` and `never` are
/// what they say; `auto` colours a terminal unless `NO_COLOR` is set and not empty.
pub fn color_for(is_terminal: bool) -> bool {
    match COLOR.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    }
}

/// Whether stdout is coloured.
pub fn color_stdout() -> bool {
    color_for(std::io::stdout().is_terminal())
}

/// `kind` (`error: `, `warning: `) as it is shown on stderr.
fn styled_kind(kind: &str) -> String {
    let code = match kind {
        "error: " => "\x1b[1;31m",
        "warning: " => "\x1b[1;33m",
        _ => return kind.to_string(),
    };
    if color_for(std::io::stderr().is_terminal()) {
        format!("{code}{}\x1b[0m ", kind.trim_end())
    } else {
        kind.to_string()
    }
}

/// A message clap wrote (a usage error): its own `error:` prefix becomes this tool's
/// `rivumi-compact: error:`, so every error reads alike. Multi-line, as clap wrote it.
pub fn clap_error(rendered: &str) {
    let body = rendered.strip_prefix("error: ").unwrap_or(rendered);
    let text = format!("rivumi-compact: {}{body}", styled_kind("error: "));
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// Whether a character is shown escaped: C0 and C1 controls (newline and tab
/// included), DEL, the bidirectional marks, embeddings, overrides and isolates that
/// reorder what a terminal shows (U+061C, U+200E–F, U+202A–E, U+2066–9), the line and
/// paragraph separators that start a new line where a reader does not expect one
/// (U+2028, U+2029: a forged `Verification:` line), and the noncharacters XML and many
/// readers refuse (U+FDD0–FDEF, and U+FFFE and U+FFFF of every plane).
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{2066}'..='\u{2069}'
                | '\u{fdd0}'..='\u{fdef}'
        )
        || (c as u32) & 0xfffe == 0xfffe
}

/// Whether `s` is printable ASCII only (space to `~`): what [`escape`] gives back as it
/// is without looking at a character, and what a caller may show unescaped.
pub fn is_printable_ascii(s: &str) -> bool {
    s.bytes().all(|b| (0x20..0x7f).contains(&b))
}

/// Escapes unsafe characters `\u{1b}` style; everything else is kept as it is.
pub fn escape(s: &str) -> String {
    if is_printable_ascii(s) || !s.chars().any(is_unsafe) {
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

/// Text as XML character data or an attribute value (an SVG label, a JUnit report):
/// markup escaped, and what XML may not hold (controls, noncharacters) or what reorders
/// or breaks a line (bidirectional overrides, separators) replaced with U+FFFD; newlines
/// and tabs are kept when `lines` (a block of text, such as a diff).
pub fn xml(s: &str, lines: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\n' | '\t' if lines => out.push(c),
            c if is_unsafe(c) => out.push('\u{fffd}'),
            c => out.push(c),
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
    let text = format!("rivumi-compact: {}{}\n", styled_kind(kind), escape(msg));
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
            ("a\u{2028}Verification: sh\u{2029}", "a\\u{2028}Verification: sh\\u{2029}"),
            ("\u{fffe}\u{ffff}\u{1fffe}\u{fdd0}", "\\u{fffe}\\u{ffff}\\u{1fffe}\\u{fdd0}"),
        ];
        for (input, want) in cases {
            assert_eq!(escape(input), want, "{input:?}");
        }
    }
}
