//! Where every input record went (SPEC 1 "Accounting"): into an item of the
//! transcript, or left out under a named reason. Silent loss is then impossible to
//! miss: the counts add up to the records read, and a file that gives no model-visible
//! item is bad input, never an empty success.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Why a record of the input is not (part of) an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, strum::IntoStaticStr, strum::VariantArray)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Skip {
    /// The session's own description (a header or metadata line): read for the
    /// configuration, not history.
    Header,
    /// A compaction or another lifecycle record: kept as an event, not history.
    Lifecycle,
    /// A record the model is never sent: progress, snapshots, usage reports, metadata
    /// updates, request logs.
    Bookkeeping,
    /// A message shown to the user and never sent to the model (Gemini CLI's `info`
    /// and `error` messages).
    DisplayOnly,
    /// A record of another thread written into this file (a Claude Code sub-agent's
    /// sidechain inside the main session).
    Sidechain,
    /// On a branch the session abandoned (a rewind), not on the thread read.
    OffThread,
    /// An earlier or repeated copy of a record written again (a message updated in
    /// place, a record re-logged when a session was resumed): the copy that counts is
    /// read.
    Superseded,
    /// A message with nothing the model is sent (no text, no call, no result).
    Empty,
    /// A record of a type this tool does not know.
    Unknown,
    /// A record no rule of the importer took: a fault of this tool, counted so that it
    /// can never pass unseen.
    Unaccounted,
}

impl Skip {
    /// Its name as it is written.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// What it means, for the man page.
    pub fn meaning(self) -> &'static str {
        match self {
            Skip::Header => "the session's own description (a header or metadata line): read for the configuration, not history",
            Skip::Lifecycle => "a compaction or another lifecycle record: kept as an event, not history",
            Skip::Bookkeeping => "a record the model is never sent: progress, snapshots, usage reports, metadata updates, request logs",
            Skip::DisplayOnly => "a message shown to the user and never sent to the model (Gemini CLI info and error messages, commands to the CLI)",
            Skip::Sidechain => "a record of another thread written into this file (a Claude Code sub-agent's sidechain in the main session; its own file reads it as its thread)",
            Skip::OffThread => "on a branch the session abandoned (a rewind), not on the thread read",
            Skip::Superseded => "an earlier or repeated copy of a record written again (a message updated in place, a record logged again when a session was resumed): the copy that counts is read",
            Skip::Empty => "a message with nothing the model is sent (no text, no call, no result)",
            Skip::Unknown => "a record of a type this tool does not know (named in a warning)",
            Skip::Unaccounted => "a record no rule of the importer took: a fault of rivumi-compact, counted so that it never passes unseen (please report it)",
        }
    }
}

/// What became of a file's records.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Accounting {
    /// Records read: non-blank lines of a JSON Lines file, or the entries of a
    /// document's list of messages or events.
    pub records: usize,
    /// Of them, the records read into items (one record may hold several items, as a
    /// Claude Code record with several tool results; several records one item, as an
    /// API message split over records).
    pub in_items: usize,
    /// Items (messages and tool results) the transcript holds.
    pub items: usize,
    /// The records left out, by reason.
    pub skipped: BTreeMap<Skip, usize>,
    /// The types of the records left out as unknown, with their counts.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown_types: BTreeMap<String, usize>,
}

impl Accounting {
    /// Counts one record left out.
    pub fn skip(&mut self, why: Skip) {
        *self.skipped.entry(why).or_default() += 1;
    }

    /// Records left out for any reason.
    pub fn skipped_total(&self) -> usize {
        self.skipped.values().sum()
    }

    pub fn count(&self, why: Skip) -> usize {
        self.skipped.get(&why).copied().unwrap_or(0)
    }

    /// Whether the counts add up to the records read (what the property test holds).
    pub fn adds_up(&self) -> bool {
        self.in_items + self.skipped_total() == self.records
    }

    /// One line for people: `28 records: 10 read into 9 items, 15 bookkeeping, 3 off_thread`.
    pub fn summary(&self) -> String {
        let mut s = format!("{} record{}: ", self.records, plural(self.records));
        let _ = write!(s, "{} read into {} item{}", self.in_items, self.items, plural(self.items));
        for (why, n) in &self.skipped {
            let _ = write!(s, ", {n} {}", why.as_str());
        }
        s
    }

    /// What was left out, for an error message: `15 bookkeeping, 3 unknown (gemini 3)`.
    pub fn left_out(&self) -> String {
        if self.skipped.is_empty() {
            return "nothing".into();
        }
        let parts: Vec<String> = self
            .skipped
            .iter()
            .map(|(why, n)| {
                let mut part = format!("{n} {}", why.as_str());
                if *why == Skip::Unknown && !self.unknown_types.is_empty() {
                    let types: Vec<String> =
                        self.unknown_types.iter().map(|(t, n)| format!("{} {n}", crate::ui::escape(t))).collect();
                    let _ = write!(part, " ({})", types.join(", "));
                }
                part
            })
            .collect();
        parts.join(", ")
    }

    /// Whether most records are of a type the format does not know: the format read
    /// is not the file's.
    pub fn mostly_unknown(&self) -> bool {
        self.records > 0 && self.count(Skip::Unknown) * 2 > self.records
    }

    /// A non-empty input (of `input_bytes` bytes) that gives no model-visible item is bad
    /// input (exit 3), naming the format read and what was left out; a file of zero
    /// bytes is an empty transcript. A file of blank lines, whitespace or a byte-order
    /// mark, or a document with an empty list, holds no record and is no transcript.
    pub fn ensure_items(&self, file: &std::path::Path, format: &str, input_bytes: usize) -> crate::error::Result<()> {
        if self.items > 0 || input_bytes == 0 {
            return Ok(());
        }
        if self.records == 0 {
            return Err(crate::error::Error::bad_input(
                file,
                format!(
                    "read as {format}, its {input_bytes} byte{} hold no record (blank lines, whitespace, a byte-order \
                     mark or an empty list): no model-visible message or tool result",
                    plural(input_bytes)
                ),
            ));
        }
        Err(crate::error::Error::bad_input(
            file,
            format!(
                "read as {format}, {} record{} gave no model-visible message or tool result ({} left out: {}); \
                 if it is another format, name it with --input-format",
                self.records,
                plural(self.records),
                self.skipped_total(),
                self.left_out()
            ),
        ))
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_names_every_reason_and_adds_up() {
        let mut a = Accounting { records: 6, in_items: 3, items: 2, ..Accounting::default() };
        a.skip(Skip::Bookkeeping);
        a.skip(Skip::Bookkeeping);
        a.skip(Skip::Sidechain);
        assert!(a.adds_up());
        assert_eq!(a.summary(), "6 records: 3 read into 2 items, 2 bookkeeping, 1 sidechain");
        a.skip(Skip::Unknown);
        assert!(!a.adds_up(), "a record counted twice no longer adds up");
    }

    #[test]
    fn no_item_from_a_non_empty_file_is_an_error_naming_what_was_left_out() {
        let mut a = Accounting { records: 3, ..Accounting::default() };
        a.skip(Skip::Unknown);
        a.skip(Skip::Unknown);
        a.skip(Skip::Header);
        a.unknown_types.insert("gemini".into(), 2);
        let e = a.ensure_items(std::path::Path::new("s.jsonl"), "claude-code", 300).unwrap_err().to_string();
        assert!(e.contains("s.jsonl"), "{e}");
        assert!(e.contains("read as claude-code"), "{e}");
        assert!(e.contains("1 header, 2 unknown (gemini 2)"), "{e}");
        assert!(Accounting::default().ensure_items(std::path::Path::new("empty"), "rivumi", 0).is_ok());
        let e = Accounting::default().ensure_items(std::path::Path::new("b.jsonl"), "rivumi", 3).unwrap_err();
        assert_eq!(
            e.to_string(),
            "b.jsonl: read as rivumi, its 3 bytes hold no record (blank lines, whitespace, a byte-order mark or an \
             empty list): no model-visible message or tool result"
        );
    }
}
