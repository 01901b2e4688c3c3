//! The re-anchor block (SPEC 5): a bounded snapshot of the facts most likely to
//! prevent a wrong edit, in two variants.

use super::RatioText;
use crate::text::cut;
use crate::ui::escape;

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

struct Section {
    heading: &'static str,
    entries: Vec<String>,
    /// Entries that exist but are not shown.
    hidden: usize,
    empty: &'static str,
}

/// Renders the block. `conversation` picks the variant for a conversation runtime.
pub fn render_reanchor(f: &ReanchorFacts, conversation: bool, max_entries: usize, max_chars: usize) -> String {
    let (intro, mut sections, tail) = if conversation { conversation_parts(f) } else { agent_parts(f) };
    for s in &mut sections {
        s.entries = s.entries.iter().map(|e| cut(&escape(e), MAX_ENTRY_CHARS)).collect();
        if s.entries.len() > max_entries {
            s.hidden = s.entries.len() - max_entries;
            s.entries.truncate(max_entries);
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

fn assemble(intro: &str, sections: &[Section], tail: &[String]) -> String {
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

fn section(heading: &'static str, entries: &[String], empty: &'static str) -> Section {
    Section { heading, entries: entries.to_vec(), hidden: 0, empty }
}

fn agent_parts(f: &ReanchorFacts) -> (String, Vec<Section>, Vec<String>) {
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

fn conversation_parts(f: &ReanchorFacts) -> (String, Vec<Section>, Vec<String>) {
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
