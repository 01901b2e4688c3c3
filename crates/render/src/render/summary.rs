//! `build_history_summary_fallback_message`: the deterministic, bounded, lossy summary
//! of older history (SPEC 4). No model call; the same entries give the same text.

use crate::text::preview_into;
use crate::transcript::EntryText;
use std::borrow::Cow;

/// The fixed header; never cut.
pub const SUMMARY_HEADER: &str = "[rivumi] History summary fallback. The older part of this conversation was removed \
to relieve token pressure. What follows are truncated, possibly stale previews of that history, \
not a faithful record: trust the current repository state and the retained recent output over them.";

/// One summarized item, as the renderer needs it: names and arguments borrowed from
/// the transcript where they can be.
#[derive(Debug, Clone)]
pub enum SummaryEntry<'a> {
    Message { role: &'static str, text: EntryText<'a>, calls: Vec<(Cow<'a, str>, Cow<'a, str>)> },
    Result { tool: Cow<'a, str>, failed: bool, text: EntryText<'a> },
}

/// Renders the summary: header, then one line per item (newest `max_items` at most,
/// dropping the oldest lines further if the whole would pass `max_chars`). `older`
/// counts summarized items before `entries` that the caller did not decode.
pub fn build_history_summary_fallback_message(
    entries: &[SummaryEntry<'_>],
    older: usize,
    preview_chars: usize,
    max_items: usize,
    max_chars: usize,
) -> String {
    build_from(entries.len(), older, preview_chars, max_items, max_chars, &|k| entries[k].clone())
}

/// [`build_history_summary_fallback_message`] over `count` entries made on demand by
/// `entry`, newest first: an entry whose line would be dropped anyway is never made.
pub fn build_from<'a>(
    count: usize,
    older: usize,
    preview_chars: usize,
    max_items: usize,
    max_chars: usize,
    entry: &dyn Fn(usize) -> SummaryEntry<'a>,
) -> String {
    let first_shown = count.saturating_sub(max_items);
    let header = SUMMARY_HEADER.chars().count() + 1;
    // Lines from the newest back, while the newer ones alone still fit: an older line
    // than that can never be shown (dropping oldest first, the newer lines all stay).
    // They are written one after the other into one buffer: where each is, and its
    // characters with its line end.
    let mut buf = String::new();
    let mut newest_first: Vec<(std::ops::Range<usize>, usize)> = Vec::new();
    let mut tail = 0;
    for k in (first_shown..count).rev() {
        let start = buf.len();
        // Its characters, as the previews count them (not counted again).
        let n = push_line(&mut buf, &entry(k), preview_chars) + 1;
        debug_assert_eq!(n, buf[start..].chars().count() + 1, "a summary line's characters");
        if header + tail + n > max_chars {
            buf.truncate(start);
            break;
        }
        tail += n;
        newest_first.push((start..buf.len(), n));
    }
    // The fewest oldest lines dropped that make the text fit, the count of what is not
    // shown included (all of them when nothing fits).
    let mut shown = newest_first.len();
    let mut dropped = count - first_shown - shown;
    let mut rest = tail;
    while shown > 0 && header + omitted_line(older + first_shown + dropped).chars().count() + rest > max_chars {
        shown -= 1;
        rest -= newest_first[shown].1;
        dropped += 1;
    }
    let omitted = omitted_line(older + first_shown + dropped);
    let mut out = String::with_capacity(SUMMARY_HEADER.len() + 1 + omitted.len() + buf.len() + shown);
    out.push_str(SUMMARY_HEADER);
    out.push('\n');
    out.push_str(&omitted);
    for (at, _) in newest_first[..shown].iter().rev() {
        out.push_str(&buf[at.clone()]);
        out.push('\n');
    }
    out
}

/// The line that counts what is not shown (empty when nothing is left out).
fn omitted_line(omitted: usize) -> String {
    match omitted {
        0 => String::new(),
        1 => "- (1 older item not shown)\n".to_string(),
        n => format!("- ({n} older items not shown)\n"),
    }
}

#[cfg(test)]
fn assemble(lines: &[String], omitted: usize) -> String {
    let mut out = String::from(SUMMARY_HEADER);
    out.push('\n');
    out.push_str(&omitted_line(omitted));
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    out
}

#[cfg(test)]
fn line(entry: &SummaryEntry<'_>, n: usize) -> String {
    let mut l = String::new();
    push_line(&mut l, entry, n);
    l
}

/// Appends an entry's line (without its line end): how many characters it wrote.
fn push_line(l: &mut String, entry: &SummaryEntry<'_>, n: usize) -> usize {
    // Pieces pushed one after the other (no formatting machinery: this runs for every
    // line of every summary of a dataset). The fixed pieces and the roles are ASCII, a
    // byte a character; each preview says how many characters it wrote, and the bytes
    // it wrote beyond those are taken off.
    let start = l.len();
    let mut wide = 0;
    let mut preview = |l: &mut String, write: &dyn Fn(&mut String) -> usize| {
        let at = l.len();
        let chars = write(l);
        wide += l.len() - at - chars;
        chars
    };
    match entry {
        SummaryEntry::Message { role, text, calls } => {
            debug_assert!(role.is_ascii());
            l.push_str("- ");
            l.push_str(role);
            l.push(':');
            // A space, then the preview; no space when the text shows nothing (a blank
            // text previews as nothing, anything else as something).
            let at = l.len();
            l.push(' ');
            if preview(l, &|l| text.push_preview(l, n)) == 0 {
                l.truncate(at);
            }
            for (name, args) in calls {
                l.push_str(" [call ");
                preview(l, &|l| preview_into(l, name, n).chars);
                l.push('(');
                preview(l, &|l| preview_into(l, args, n).chars);
                l.push_str(")]");
            }
        }
        SummaryEntry::Result { tool, failed, text } => {
            l.push_str("- result of ");
            preview(l, &|l| preview_into(l, tool, n).chars);
            l.push_str(if *failed { " (error): " } else { " (ok): " });
            preview(l, &|l| text.push_preview(l, n));
        }
    }
    l.len() - start - wide
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The definition the renderer keeps: drop the oldest line until the text fits.
    fn reference(entries: &[SummaryEntry], older: usize, n: usize, max_items: usize, max_chars: usize) -> String {
        let first_shown = entries.len().saturating_sub(max_items);
        let mut lines: Vec<String> = entries[first_shown..].iter().map(|e| line(e, n)).collect();
        let mut omitted = older + first_shown;
        loop {
            let text = assemble(&lines, omitted);
            if text.chars().count() <= max_chars || lines.is_empty() {
                return text;
            }
            lines.remove(0);
            omitted += 1;
        }
    }

    proptest! {
        #[test]
        fn dropping_lines_to_fit_is_the_loop_it_replaces(
            texts in prop::collection::vec("[a-zé🙂 ]{0,30}", 0..14),
            older in 0usize..12, n in 0usize..20, max_items in 0usize..16, max_chars in 0usize..700,
        ) {
            let entries: Vec<SummaryEntry> = texts
                .iter()
                .enumerate()
                .map(|(k, t)| if k % 2 == 0 {
                    let calls = (0..k % 3).map(|c| (format!("tool{c}").into(), t.repeat(c + 1).into())).collect();
                    SummaryEntry::Message { role: "user", text: t.clone().into(), calls }
                } else {
                    SummaryEntry::Result { tool: "bash".into(), failed: k % 3 == 0, text: t.clone().into() }
                })
                .collect();
            prop_assert_eq!(
                build_history_summary_fallback_message(&entries, older, n, max_items, max_chars),
                reference(&entries, older, n, max_items, max_chars)
            );
        }
    }
}
