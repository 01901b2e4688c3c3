//! Diffs: a unified diff whose changed lines have their changed parts marked, long
//! lines cut around each change with a little context (as `cargo insta` shows them).

use similar::{ChangeTag, TextDiff};
use std::io::Write;

/// The 1-based line of `expected` where it first differs from `actual`.
pub(super) fn first_difference(expected: &[u8], actual: &[u8]) -> usize {
    let same = expected.iter().zip(actual).take_while(|(a, b)| a == b).count();
    1 + memchr::memchr_iter(b'\n', &expected[..same.min(expected.len())]).count()
}

/// A unified diff, expected (`a/PATH`) → actual (`b/PATH`), as `git diff` heads it so a
/// CI log can link the path; controls escaped. A changed JSON line is shown beside the
/// line it replaces with the changed fields marked (`⟦-…-⟧` and `⟦+…+⟧`, marks no JSON
/// reads as its own, or coloured), and a long one is cut around the change.
pub(super) fn unified_diff(path: &str, expected: &[u8], actual: &[u8], color: bool) -> String {
    use std::fmt::Write as _;
    let old = String::from_utf8_lossy(expected);
    let new = String::from_utf8_lossy(actual);
    let diff = TextDiff::from_lines(old.as_ref(), new.as_ref());
    let path = crate::ui::escape(path);
    let mut out = format!("--- a/{path}\n+++ b/{path}\n");
    for group in diff.grouped_ops(3) {
        let first = &group[0];
        let last = &group[group.len() - 1];
        let (o, n) = (first.old_range().start, first.new_range().start);
        let (oe, ne) = (last.old_range().end, last.new_range().end);
        let _ = writeln!(out, "@@ -{},{} +{},{} @@", o + 1, oe - o, n + 1, ne - n);
        for op in &group {
            let changes: Vec<_> = diff.iter_changes(op).collect();
            let deleted: Vec<&str> =
                changes.iter().filter(|c| c.tag() == ChangeTag::Delete).map(similar::Change::value).collect();
            let inserted: Vec<&str> =
                changes.iter().filter(|c| c.tag() == ChangeTag::Insert).map(similar::Change::value).collect();
            // A replaced run of JSON lines, line for line: mark what changed inside.
            let paired = deleted.len() == inserted.len()
                && !deleted.is_empty()
                && deleted.iter().chain(&inserted).all(|l| l.trim_start().starts_with(['{', '[']));
            if paired {
                for (a, b) in deleted.iter().zip(&inserted) {
                    let (minus, plus) = inline_marks(a.trim_end_matches('\n'), b.trim_end_matches('\n'), color);
                    let _ = writeln!(out, "-{minus}");
                    let _ = writeln!(out, "+{plus}");
                }
                continue;
            }
            for change in changes {
                let sign = match change.tag() {
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                    ChangeTag::Equal => ' ',
                };
                let text = crate::ui::escape(change.value().trim_end_matches('\n'));
                let _ = writeln!(out, "{sign}{}", shortened(&text, change.tag() == ChangeTag::Equal));
            }
        }
    }
    out
}

/// A context line of a diff cut when long (a Claude Code record can be 10 KB): its start
/// and how much was left out. Changed lines are shown whole.
pub(super) fn shortened(line: &str, context: bool) -> std::borrow::Cow<'_, str> {
    let n = line.chars().count();
    if !context || n <= LONG_LINE {
        return std::borrow::Cow::Borrowed(line);
    }
    let head: String = line.chars().take(LONG_LINE / 2).collect();
    std::borrow::Cow::Owned(format!("{head}… ({} more characters)", n - LONG_LINE / 2))
}

/// The tokens a JSON line is compared by: strings with their quotes, numbers and
/// words, and each punctuation mark on its own.
pub(super) fn tokens(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i = (i + 1).min(b.len());
            }
            b'{' | b'}' | b'[' | b']' | b',' | b':' => i += 1,
            _ => {
                while i < b.len() && !b"\"{}[],:".contains(&b[i]) {
                    i += 1;
                }
            }
        }
        // Keep to character boundaries (an escape at the very end of a string).
        while i < b.len() && !s.is_char_boundary(i) {
            i += 1;
        }
        out.push(&s[start..i]);
    }
    out
}

/// The two lines with their changes marked, each cut to a window around its changes
/// when long: the changed JSON tokens, and inside a changed string only the characters
/// that changed, with a few characters of context (as `cargo insta` shows an inline
/// diff). The marks, `⟦-…-⟧` and `⟦+…+⟧`, cannot be taken for JSON.
pub(super) fn inline_marks(old: &str, new: &str, color: bool) -> (String, String) {
    let (a, b) = (tokens(old), tokens(new));
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &a, &b);
    let (mut minus, mut plus) =
        (Marked::new(color, "⟦-", "-⟧", "\x1b[7;31m"), Marked::new(color, "⟦+", "+⟧", "\x1b[7;32m"));
    // Unchanged text between changes is cut only in a long line.
    minus.long = old.chars().count() > LONG_LINE;
    plus.long = new.chars().count() > LONG_LINE;
    for op in ops {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        let (was, is) = (a[old_range].concat(), b[new_range].concat());
        match tag {
            similar::DiffTag::Equal => {
                minus.context(&was);
                plus.context(&is);
            }
            similar::DiffTag::Replace if was.starts_with('"') && is.starts_with('"') => {
                chars_marked(&was, &is, &mut minus, &mut plus);
            }
            _ => {
                minus.changed(&was);
                plus.changed(&is);
            }
        }
    }
    (minus.finish(), plus.finish())
}

/// Characters of unchanged text kept on either side of a change inside a line.
pub(super) const CONTEXT: usize = 20;

/// A changed string, character by character: the changed runs marked, the unchanged
/// ones kept as context (a long one cut to its ends).
pub(super) fn chars_marked(was: &str, is: &str, minus: &mut Marked, plus: &mut Marked) {
    let diff = TextDiff::from_chars(was, is);
    for op in diff.ops() {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        let old: String = diff.old_slices()[old_range].concat();
        let new: String = diff.new_slices()[new_range].concat();
        if tag == similar::DiffTag::Equal {
            minus.context(&old);
            plus.context(&new);
        } else {
            minus.changed(&old);
            plus.changed(&new);
        }
    }
}

/// A line being marked: its text, and where its changes are (for cutting it).
pub(super) struct Marked {
    text: String,
    first: Option<usize>,
    last: usize,
    open: &'static str,
    close: &'static str,
    /// Whether the line is long enough to be cut.
    long: bool,
}

/// A line longer than this is cut to the part around its changes.
pub(super) const LONG_LINE: usize = 240;
/// What is kept on either side of the changes of a cut line, in characters.
pub(super) const AROUND: usize = CONTEXT;

impl Marked {
    fn new(color: bool, open: &'static str, close: &'static str, colored: &'static str) -> Marked {
        let (open, close) = if color { (colored, "\x1b[0m") } else { (open, close) };
        Marked { text: String::new(), first: None, last: 0, open, close, long: false }
    }

    fn plain(&mut self, s: &str) {
        self.text.push_str(&crate::ui::escape(s));
    }

    /// Unchanged text between changes: kept whole when short, else its two ends around
    /// `…` (the ends of the line are cut by [`Marked::finish`]).
    fn context(&mut self, s: &str) {
        let n = s.chars().count();
        if !self.long || self.first.is_none() || n <= 2 * CONTEXT + 1 {
            self.plain(s);
            return;
        }
        let head: String = s.chars().take(CONTEXT).collect();
        let tail: String = s.chars().skip(n - CONTEXT).collect();
        self.plain(&head);
        self.text.push('…');
        self.plain(&tail);
    }

    fn changed(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        self.first.get_or_insert(self.text.len());
        self.text.push_str(self.open);
        self.text.push_str(&crate::ui::escape(s));
        self.text.push_str(self.close);
        self.last = self.text.len();
    }

    fn finish(self) -> String {
        let Some(first) = self.first.filter(|_| self.text.chars().count() > LONG_LINE) else { return self.text };
        let start = self.text[..first].char_indices().rev().nth(AROUND).map_or(0, |(i, _)| i);
        let end = self.text[self.last..].char_indices().nth(AROUND).map_or(self.text.len(), |(i, _)| self.last + i);
        let mut out = String::new();
        if start > 0 {
            out.push('…');
        }
        out.push_str(&self.text[start..end]);
        if end < self.text.len() {
            out.push('…');
        }
        out
    }
}

/// Writes a diff, its removed and added lines coloured when asked.
pub(super) fn write_diff(w: &mut dyn Write, diff: &str, color: bool) {
    for line in diff.lines() {
        let code = match line.as_bytes().first() {
            _ if !color || line.starts_with("--- a/") || line.starts_with("+++ b/") => "",
            Some(b'-') => "\x1b[31m",
            Some(b'+') => "\x1b[32m",
            Some(b'@') => "\x1b[36m",
            _ => "",
        };
        if code.is_empty() {
            let _ = writeln!(w, "{line}");
        } else {
            let _ = writeln!(w, "{code}{line}\x1b[0m");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_field_is_marked_and_a_long_line_cut_around_it() {
        let old = r#"{"type":"message","id":"m1","used":100,"content":"same"}"#;
        let new = r#"{"type":"message","id":"m1","used":250,"content":"same"}"#;
        let (minus, plus) = inline_marks(old, new, false);
        assert_eq!(minus, r#"{"type":"message","id":"m1","used":⟦-100-⟧,"content":"same"}"#);
        assert_eq!(plus, r#"{"type":"message","id":"m1","used":⟦+250+⟧,"content":"same"}"#);
        let pad = "x".repeat(400);
        let (minus, _) = inline_marks(
            &format!(r#"{{"a":"{pad}","b":1,"c":"{pad}"}}"#),
            &format!(r#"{{"a":"{pad}","b":2,"c":"{pad}"}}"#),
            false,
        );
        assert!(minus.starts_with('…') && minus.ends_with('…') && minus.contains("\"b\":⟦-1-⟧"), "{minus}");
        assert!(minus.chars().count() < 140, "{}", minus.chars().count());
    }

    #[test]
    fn inside_a_long_string_only_the_change_is_marked_with_a_little_context() {
        let text = "lorem ipsum ".repeat(400);
        // Two changes far apart inside one 4,800-character string.
        let changed = format!("{}IPSUM{}LOREM{}", &text[..1006], &text[1011..3600], &text[3605..]);
        let old = format!(r#"{{"type":"tool_result","id":"r1","content":"{text}"}}"#);
        let new = format!(r#"{{"type":"tool_result","id":"r1","content":"{changed}"}}"#);
        let (minus, plus) = inline_marks(&old, &new, false);
        assert_eq!((minus.matches("⟦-").count(), plus.matches("⟦+").count()), (2, 2), "{minus}\n{plus}");
        assert!(minus.contains("⟦-lorem-⟧") && plus.contains("⟦+LOREM+⟧"), "{minus}\n{plus}");
        assert!(minus.contains("…") && minus.starts_with('…'), "unchanged text elided: {minus}");
        assert!(minus.chars().count() < 160 && plus.chars().count() < 160, "{minus}\n{plus}");
        assert!(!minus.contains("[-") && !plus.contains("{+"), "no mark reads as JSON");
    }
}
