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
    let mut lines: Vec<String> = entries[first_shown..].iter().map(|e| line(e, preview_chars)).collect();
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

fn assemble(lines: &[String], omitted: usize) -> String {
    let mut out = String::from(SUMMARY_HEADER);
    out.push('\n');
    if omitted > 0 {
        let s = if omitted == 1 { "" } else { "s" };
        out.push_str(&format!("- ({omitted} older item{s} not shown)\n"));
    }
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
