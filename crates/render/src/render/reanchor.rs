//! The re-anchor block (SPEC 5): a bounded snapshot of the facts most likely to
//! prevent a wrong edit, in two variants.

use super::RatioText;
use crate::text::cut;
use crate::ui::{escape, is_printable_ascii};
use std::borrow::Cow;

/// What the re-anchor block states; gathered by `crate::reanchor::gather`.
#[derive(Debug, Clone, Default)]
pub struct ReanchorFacts {
    pub changed_files: Vec<String>,
    pub check_status: String,
    pub recent_paths: Vec<String>,
    pub allowed_paths: Vec<String>,
    pub verification: Vec<String>,
    pub remaining_steps: Vec<String>,
    pub used: Option<u64>,
    pub limit: Option<u64>,
    pub context_window: Option<u64>,
    pub runtime: String,
    pub native_compaction: bool,
    pub root: Option<String>,
    pub mode: Option<String>,
    pub permission: Option<String>,
}

/// Longest rendered entry, in characters.
const MAX_ENTRY_CHARS: usize = 200;

struct Section<'f> {
    heading: &'static str,
    entries: Vec<Cow<'f, str>>,
    /// Entries that exist but are not shown.
    hidden: usize,
    empty: &'static str,
}

/// Renders the block. `conversation` picks the variant for a conversation runtime.
pub fn render_reanchor(f: &ReanchorFacts, conversation: bool, max_entries: usize, max_chars: usize) -> String {
    let (intro, mut sections, tail) = if conversation { conversation_parts(f) } else { agent_parts(f) };
    for s in &mut sections {
        // Only the entries that can be shown are escaped and cut.
        if s.entries.len() > max_entries {
            s.hidden = s.entries.len() - max_entries;
            s.entries.truncate(max_entries);
        }
        for e in &mut s.entries {
            if let Some(shown) = shown(e) {
                *e = Cow::Owned(shown);
            }
        }
    }
    loop {
        let text = assemble(&intro, &sections, &tail);
        if text.chars().count() <= max_chars {
            return text;
        }
        // The longest list loses its last entry; headings always stay.
        let Some(longest) = sections.iter_mut().filter(|s| !s.entries.is_empty()).max_by_key(|s| s.entries.len())
        else {
            return text;
        };
        longest.entries.pop();
        longest.hidden += 1;
    }
}

/// An entry as it is shown, escaped and cut, when that differs from the entry (an entry
/// of printable ASCII within the length is shown as it is).
fn shown(e: &str) -> Option<String> {
    let plain = e.len() <= MAX_ENTRY_CHARS && is_printable_ascii(e);
    (!plain).then(|| cut(&escape(e), MAX_ENTRY_CHARS))
}

fn assemble(intro: &str, sections: &[Section<'_>], tail: &[String]) -> String {
    let mut out = String::with_capacity(1024);
    out.push_str(intro);
    out.push('\n');
    for s in sections {
        out.push('\n');
        out.push_str(s.heading);
        out.push_str(":\n");
        if s.entries.is_empty() && s.hidden == 0 {
            out.push_str("- ");
            out.push_str(s.empty);
            out.push('\n');
        }
        for e in &s.entries {
            out.push_str("- ");
            out.push_str(e);
            out.push('\n');
        }
        if s.hidden > 0 {
            out.push_str(&format!("- (+{} more)\n", s.hidden));
        }
    }
    for line in tail {
        out.push('\n');
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn section<'f>(heading: &'static str, entries: &'f [String], empty: &'static str) -> Section<'f> {
    Section { heading, entries: entries.iter().map(|e| Cow::Borrowed(e.as_str())).collect(), hidden: 0, empty }
}

fn agent_parts(f: &ReanchorFacts) -> (String, Vec<Section<'_>>, Vec<String>) {
    let intro = "[rivumi] Re-anchor after history compaction. Older history was summarized; these facts were \
                 gathered from the whole session. Check the repository before editing."
        .to_string();
    let sections = vec![
        section("Changed files (most recent first)", &f.changed_files, "none recorded"),
        section("Recent paths (newest first)", &f.recent_paths, "none recorded"),
        section("Allowed paths", &f.allowed_paths, "not restricted"),
        section("Verification", &f.verification, "none configured"),
        section("Remaining steps", &f.remaining_steps, "none recorded"),
    ];
    let tail = vec![format!("Check status: {}", escape(&f.check_status)), token_line(f)];
    (intro, sections, tail)
}

fn token_line(f: &ReanchorFacts) -> String {
    let used = f.used.map_or("unknown".to_string(), |u| u.to_string());
    let budget = match (f.used, f.limit) {
        (Some(u), Some(l)) => format!("{used} of {l} max_total_tokens (ratio {})", RatioText(u, l)),
        (_, Some(l)) => format!("{used} of {l} max_total_tokens"),
        (_, None) => format!("{used} (max_total_tokens unknown)"),
    };
    let window = f.context_window.map_or("unknown".to_string(), |w| w.to_string());
    format!("Token limits: used {budget}; context window {window}")
}

fn conversation_parts(f: &ReanchorFacts) -> (String, Vec<Section<'_>>, Vec<String>) {
    let intro = "[rivumi] Re-anchor (pending): prefix the next request with this once the compaction completes. \
                 Earlier turns were compacted; these constraints still hold."
        .to_string();
    let native = if f.native_compaction { "native compaction" } else { "no native compaction" };
    let opt = |v: &Option<String>| escape(v.as_deref().unwrap_or("unknown"));
    let constraints = [
        format!("runtime: conversation ({native})"),
        format!("mode: {}", opt(&f.mode)),
        format!("permission: {}", opt(&f.permission)),
        format!("workspace: {}", opt(&f.root)),
    ];
    let sections = vec![
        section("Changed paths (most recent first)", &f.changed_files, "none recorded"),
        section("Allowed paths", &f.allowed_paths, "not restricted"),
    ];
    (intro, sections, vec![format!("Constraints:\n- {}", constraints.join("\n- "))])
}

#[cfg(test)]
mod tests {
    use super::{render_reanchor, ReanchorFacts};

    /// The lines of a section, between its heading and the next blank line.
    fn section<'t>(text: &'t str, heading: &str) -> Vec<&'t str> {
        let start = text.find(&format!("{heading}:\n")).expect(heading) + heading.len() + 2;
        text[start..].lines().take_while(|l| !l.is_empty()).collect()
    }

    #[test]
    fn entries_are_escaped_and_cut_and_only_the_first_are_shown() {
        let wide = "é".repeat(150); // 300 bytes, 150 characters: shown whole
        let changed = vec![
            "src/a\u{202e}b.rs".to_string(),
            "a".repeat(200),
            "b".repeat(201),
            wide.clone(),
            format!("{}\u{1b}", "c".repeat(199)),
            "hidden\u{1b}.rs".to_string(),
        ];
        let f = ReanchorFacts { changed_files: changed, ..ReanchorFacts::default() };
        let text = render_reanchor(&f, false, 5, 100_000);
        let want = [
            "- src/a\\u{202e}b.rs".to_string(),
            format!("- {}", "a".repeat(200)),
            format!("- {}…", "b".repeat(200)),
            format!("- {wide}"),
            format!("- {}\\…", "c".repeat(199)),
            "- (+1 more)".to_string(),
        ];
        assert_eq!(section(&text, "Changed files (most recent first)"), want);
    }
}
