//! `build_history_summary_fallback_message`: the deterministic, bounded, lossy summary
//! of older history (SPEC 4). No model call; the same entries give the same text.

use super::preview;

/// The fixed header; never cut.
pub const SUMMARY_HEADER: &str = "[rivumi] History summary fallback. The older part of this conversation was removed \
to relieve token pressure. What follows are truncated, possibly stale previews of that history, \
not a faithful record: trust the current repository state and the retained recent output over them.";

/// One summarized item, as the renderer needs it.
#[derive(Debug, Clone)]
pub enum SummaryEntry {
    Message { role: &'static str, text: String, calls: Vec<(String, String)> },
    Result { tool: String, failed: bool, text: String },
}

/// Renders the summary: header, then one line per item (newest `max_items` at most,
/// dropping the oldest lines further if the whole would pass `max_chars`). `older`
/// counts summarized items before `entries` that the caller did not decode.
pub fn build_history_summary_fallback_message(
    entries: &[SummaryEntry],
    older: usize,
    preview_chars: usize,
    max_items: usize,
    max_chars: usize,
) -> String {
    let first_shown = entries.len().saturating_sub(max_items);
    let lines: Vec<String> = entries[first_shown..].iter().map(|e| line(e, preview_chars)).collect();
    // Characters from line k to the end (each with its newline): the first k that fits
    // is found without assembling the text again for each line dropped.
    let mut tail = vec![0usize; lines.len() + 1];
    for k in (0..lines.len()).rev() {
        tail[k] = tail[k + 1] + lines[k].chars().count() + 1;
    }
    let header = SUMMARY_HEADER.chars().count() + 1;
    let dropped = (0..lines.len())
        .find(|&k| header + omitted_line(older + first_shown + k).chars().count() + tail[k] <= max_chars)
        .unwrap_or(lines.len());
    assemble(&lines[dropped..], older + first_shown + dropped)
}

/// The line that counts what is not shown (empty when nothing is left out).
fn omitted_line(omitted: usize) -> String {
    match omitted {
        0 => String::new(),
        1 => "- (1 older item not shown)\n".to_string(),
        n => format!("- ({n} older items not shown)\n"),
    }
}

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

fn line(entry: &SummaryEntry, n: usize) -> String {
    match entry {
        SummaryEntry::Message { role, text, calls } => {
            let mut l = format!("- {role}:");
            if !text.trim().is_empty() {
                l.push(' ');
                l.push_str(&preview(text, n));
            }
            for (name, args) in calls {
                l.push_str(&format!(" [call {}({})]", preview(name, n), preview(args, n)));
            }
            l
        }
        SummaryEntry::Result { tool, failed, text } => {
            let state = if *failed { "error" } else { "ok" };
            format!("- result of {} ({state}): {}", preview(tool, n), preview(text, n))
        }
    }
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
                    SummaryEntry::Message { role: "user", text: t.clone(), calls: vec![] }
                } else {
                    SummaryEntry::Result { tool: "bash".into(), failed: k % 3 == 0, text: t.clone() }
                })
                .collect();
            prop_assert_eq!(
                build_history_summary_fallback_message(&entries, older, n, max_items, max_chars),
                reference(&entries, older, n, max_items, max_chars)
            );
        }
    }
}
