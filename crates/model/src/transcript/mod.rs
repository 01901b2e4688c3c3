//! The canonical transcript model (SPEC 1): records as they were read, and the items
//! (messages and tool results) the policy works on, borrowing from the input bytes.

pub mod accounting;
mod built;
mod content;
mod event;
mod fast;
mod reader;
pub mod record;

pub use accounting::{Accounting, Skip};
pub use event::Event;

pub use built::from_records;
pub use content::{content_texts, item_text, item_text_for_preview, text_of, text_of_json, EntryText};
pub use reader::link_results;
pub use reader::parse;
pub use record::{Call, TextLen};
use record::{MessageRecord, ToolResultRecord};

use serde::Deserialize;
use std::borrow::Cow;
use std::ops::Range;

/// A parsed transcript. Raw bytes stay in `src`; every record knows its own span.
#[derive(Debug)]
pub struct Transcript<'a> {
    pub src: &'a [u8],
    /// Length of a leading UTF-8 byte-order mark (0 or 3), written back as it was.
    pub bom: usize,
    pub records: Vec<Record<'a>>,
    pub items: Vec<Item<'a>>,
    /// The `session` record's object, when the first record is one.
    pub session: Option<serde_json::Map<String, serde_json::Value>>,
    /// Records of a type the tool does not know (passed through, counted in a warning).
    pub unknown_records: usize,
    /// Results whose call is not in the transcript (kept, counted in a warning).
    pub orphan_results: Vec<usize>,
    /// Which item holds the call with a given id: the item and the call's place in it,
    /// found by the id's hash ([`id_hash`]); no id is copied into it.
    pub call_owner: hashbrown::HashTable<(usize, usize)>,
}

/// The hash the tables of ids ([`Transcript::call_owner`], the reader's check of
/// duplicate ids) find an id by.
pub fn id_hash(id: &str) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(id)
}

/// One physical line of the input (a run of blank lines is one record).
#[derive(Debug)]
pub struct Record<'a> {
    /// The bytes of the line including its terminator (`\n` or `\r\n`, none at EOF).
    pub span: Range<usize>,
    /// 1-based line number, for messages.
    pub line: usize,
    pub kind: RecordKind<'a>,
}

impl Record<'_> {
    /// The item this record holds, if any.
    pub fn kind_item(&self) -> Option<usize> {
        match self.kind {
            RecordKind::Item(i) => Some(i),
            _ => None,
        }
    }

    pub fn terminated(&self, src: &[u8]) -> bool {
        self.span.end > self.span.start && src[self.span.end - 1] == b'\n'
    }
}

#[derive(Debug)]
pub enum RecordKind<'a> {
    /// An empty or whitespace-only line.
    Blank,
    Session,
    /// A message or tool result: index into `Transcript::items`.
    Item(usize),
    /// A lifecycle event (boxed: a record of any kind is then small).
    Event(Box<EventRef<'a>>),
    /// A record of a type the policy ignores.
    Other,
}

/// An event record's name and id, and the fields the tool reads of it, read once with the
/// record (a field of another shape counts as absent, as the record is otherwise passed
/// through unread).
#[derive(Debug)]
pub struct EventRef<'a> {
    pub name: Cow<'a, str>,
    pub id: Option<Cow<'a, str>>,
    /// `files_changed`: the paths a tool reported changed (the strings of `paths`).
    pub paths: Vec<String>,
    /// A compaction event's `trigger` (`manual`, `auto`), as an importer kept it.
    pub trigger: Option<String>,
    /// A compaction event's `pre_tokens`: the context size the agent recorded before it.
    pub pre_tokens: Option<u64>,
}

impl<'a> EventRef<'a> {
    /// What the tool reads of an event record: its name, id and these of its fields.
    pub fn of(
        name: Cow<'a, str>,
        id: Option<Cow<'a, str>>,
        fields: &serde_json::Map<String, serde_json::Value>,
    ) -> EventRef<'a> {
        let paths = fields.get("paths").and_then(serde_json::Value::as_array).into_iter().flatten();
        EventRef {
            paths: paths.filter_map(serde_json::Value::as_str).map(str::to_string).collect(),
            trigger: fields.get("trigger").and_then(serde_json::Value::as_str).map(str::to_string),
            pre_tokens: fields.get("pre_tokens").and_then(serde_json::Value::as_u64),
            name,
            id,
        }
    }
}

/// The kinds of records this tool injects (their `synthetic` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum Synthetic {
    PressureReminder,
    HistorySummaryFallback,
    Reanchor,
    Checkpoint,
}

impl Synthetic {
    /// Its name as it is written (derived by the rule serde and clap use; `tests/it/names.rs` holds them equal).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// An item's `synthetic` field: a kind this tool injects, or a name it does not know
/// (written by another version), kept as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mark<'a> {
    Known(Synthetic),
    Other(Cow<'a, str>),
}

impl<'a> Mark<'a> {
    /// The mark a `synthetic` value stands for.
    pub fn of(name: Cow<'a, str>) -> Mark<'a> {
        name.parse().map_or(Mark::Other(name), Mark::Known)
    }

    /// The name as the field holds it.
    pub fn as_str(&self) -> &str {
        match self {
            Mark::Known(k) => k.as_str(),
            Mark::Other(name) => name,
        }
    }
}

/// Written as its name.
impl serde::Serialize for Mark<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Mark<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Name<'b>(#[serde(borrow)] Cow<'b, str>);
        Name::deserialize(d).map(|n| Mark::of(n.0))
    }
}

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Deserialize,
    serde::Serialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Role {
    System,
    Developer,
    User,
    Assistant,
}

impl Role {
    /// Its name as it is written (derived by the rule serde and clap use; `tests/it/names.rs` holds them equal).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Token usage the provider reported for one model call (SPEC 1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
}

impl Usage {
    /// The size of the model call: the sum of the four counts.
    /// Sums saturate: figures near 2^64 never wrap to small ones.
    pub fn size(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
            .saturating_add(self.output_tokens)
    }

    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.cache_read_tokens = self.cache_read_tokens.saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self.cache_write_tokens.saturating_add(other.cache_write_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
    }
}

#[derive(Debug)]
pub enum ItemKind<'a> {
    Message { role: Role, calls: Vec<Call<'a>>, usage: Option<Usage> },
    ToolResult { call_id: Cow<'a, str>, name: Option<Cow<'a, str>>, is_error: bool, exit_code: Option<i64> },
}

/// A model-visible record: a message or a tool result.
#[derive(Debug)]
pub struct Item<'a> {
    /// Index into `Transcript::records`.
    pub record: usize,
    pub id: Cow<'a, str>,
    pub turn: Option<Cow<'a, str>>,
    /// The `synthetic` field: what the tool injected (SPEC 1); none for input items.
    pub synthetic: Option<Mark<'a>>,
    pub kind: ItemKind<'a>,
    /// UTF-8 bytes of the text content (SPEC 1 "Estimated tokens").
    pub text_bytes: u64,
    /// The `content` value as the JSON it is in the source, when the reader kept it
    /// (the dataset view does); otherwise it is found again in the record's line.
    pub content: Option<&'a str>,
    /// What an earlier run wrote on a record it injected (rare: boxed, so that the
    /// tens of thousands of items of a large transcript do not carry room for it).
    pub written: Option<Box<Written>>,
    /// For a result: the item holding its call (the latest one before it with that id).
    pub call_item: Option<usize>,
}

/// The fields an earlier run of the tool wrote on an injected record that the policy
/// reads back.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Written {
    /// Summary fields of an earlier fallback, kept for cumulative usage.
    pub summarized_usage: Option<Usage>,
    /// A checkpoint's `occupancy_after`: the base occupancy after it.
    pub occupancy_after: Option<u64>,
    /// A checkpoint's `occupancy_before` and the turns it summarized and retained (the
    /// strings of its lists), which `validate` checks.
    pub occupancy_before: Option<u64>,
    pub summarized_turn_ids: Vec<String>,
    pub retained_turn_ids: Vec<String>,
}

impl<'a> Item<'a> {
    /// Copies out of the source the short strings that the passes after the parse read
    /// of every item — its id and turn, its calls' ids, names and arguments (those of at
    /// most `max` bytes), a result's call id and tool name — so that a mapped input the
    /// reader gave back is not faulted in again, page after page, to read a few bytes of
    /// each line (the re-anchor facts, the failed results, the ids a summary replaces).
    pub fn own_short_strings(&mut self, max: usize) {
        fn own(s: &mut Cow<'_, str>, max: usize) {
            if let Cow::Borrowed(b) = *s {
                if b.len() <= max {
                    *s = Cow::Owned(b.to_owned());
                }
            }
        }
        own(&mut self.id, max);
        if let Some(turn) = &mut self.turn {
            own(turn, max);
        }
        match &mut self.kind {
            ItemKind::Message { calls, .. } => {
                for c in calls {
                    own(&mut c.id, max);
                    own(&mut c.name, max);
                    own(&mut c.arguments, max);
                }
            }
            ItemKind::ToolResult { call_id, name, .. } => {
                own(call_id, max);
                if let Some(name) = name {
                    own(name, max);
                }
            }
        }
    }

    /// The item a message record holds (`record`: its index among the records).
    pub fn of_message(m: MessageRecord<'a, Option<TextLen>>, record: usize) -> Item<'a> {
        let written = m.has_written_fields().then(|| {
            Box::new(Written {
                summarized_usage: m.summarized_usage,
                occupancy_after: m.occupancy_after,
                occupancy_before: m.occupancy_before.flatten(),
                summarized_turn_ids: m.summarized_turn_ids.unwrap_or_default(),
                retained_turn_ids: m.retained_turn_ids.unwrap_or_default(),
            })
        });
        let mut calls = m.tool_calls.unwrap_or_default();
        // Without the room a growing vector leaves (a vector of one call has room for
        // four): a large transcript holds tens of thousands of them.
        calls.shrink_to_fit();
        Item {
            record,
            id: m.id,
            turn: m.turn,
            synthetic: m.synthetic,
            text_bytes: m.content.map_or(0, |c| c.0),
            content: None,
            written,
            call_item: None,
            kind: ItemKind::Message { role: m.role, calls, usage: m.usage },
        }
    }

    /// The item a tool result record holds (`record`: its index among the records).
    pub fn of_tool_result(r: ToolResultRecord<'a, Option<TextLen>>, record: usize) -> Item<'a> {
        Item {
            record,
            id: r.id,
            turn: r.turn,
            synthetic: None,
            text_bytes: r.content.map_or(0, |c| c.0),
            content: None,
            written: None,
            call_item: None,
            kind: ItemKind::ToolResult {
                call_id: r.call_id,
                name: r.name,
                is_error: r.is_error,
                exit_code: r.exit_code,
            },
        }
    }
    /// An earlier fallback's `summarized_usage`.
    pub fn summarized_usage(&self) -> Option<&Usage> {
        self.written.as_ref().and_then(|w| w.summarized_usage.as_ref())
    }

    /// A checkpoint's `occupancy_after`.
    pub fn occupancy_after(&self) -> Option<u64> {
        self.written.as_ref().and_then(|w| w.occupancy_after)
    }

    pub fn is_input(&self) -> bool {
        self.synthetic.is_none()
    }

    pub fn role(&self) -> Option<Role> {
        match &self.kind {
            ItemKind::Message { role, .. } => Some(*role),
            ItemKind::ToolResult { .. } => None,
        }
    }

    pub fn calls(&self) -> &[Call<'a>] {
        match &self.kind {
            ItemKind::Message { calls, .. } => calls,
            ItemKind::ToolResult { .. } => &[],
        }
    }

    pub fn usage(&self) -> Option<&Usage> {
        match &self.kind {
            ItemKind::Message { usage, .. } => usage.as_ref(),
            ItemKind::ToolResult { .. } => None,
        }
    }

    pub fn result_call_id(&self) -> Option<&str> {
        match &self.kind {
            ItemKind::ToolResult { call_id, .. } => Some(call_id),
            ItemKind::Message { .. } => None,
        }
    }

    /// A result that reports failure: `exit_code` wins over `is_error` (SPEC 5).
    pub fn failed(&self) -> bool {
        match &self.kind {
            ItemKind::ToolResult { exit_code: Some(code), .. } => *code != 0,
            ItemKind::ToolResult { is_error, .. } => *is_error,
            ItemKind::Message { .. } => false,
        }
    }

    /// The bytes the heuristic estimate counts: text plus each call's name and arguments.
    pub fn estimate_bytes(&self) -> u64 {
        let calls: u64 = self.calls().iter().map(|c| (c.name.len() + c.arguments.len()) as u64).sum();
        self.text_bytes + calls
    }

    /// An assistant message that a model call produced: an input item, not one restated
    /// with a usage of size 0 (a Codex replacement history).
    pub fn is_model_call(&self) -> bool {
        self.is_input() && self.role() == Some(Role::Assistant) && self.usage().is_none_or(|u| u.size() > 0)
    }

    pub fn is_synthetic(&self, kind: Synthetic) -> bool {
        matches!(self.synthetic, Some(Mark::Known(k)) if k == kind)
    }
}

impl<'a> Transcript<'a> {
    /// A transcript of the given records and items over `src` (for readers of other
    /// shapes, such as a dataset line); results are linked to their calls here.
    pub fn from_parts(src: &'a [u8], records: Vec<Record<'a>>, items: Vec<Item<'a>>) -> Transcript<'a> {
        let mut t = Transcript {
            src,
            bom: 0,
            records,
            items,
            session: None,
            unknown_records: 0,
            orphan_results: Vec::new(),
            call_owner: hashbrown::HashTable::new(),
        };
        link_results(&mut t);
        t
    }

    /// The raw text of a record's line without its terminator.
    pub fn line_text(&self, record: usize) -> &'a str {
        let r = &self.records[record];
        let mut end = r.span.end;
        let src = self.src;
        if end > r.span.start && src[end - 1] == b'\n' {
            end -= 1;
            if end > r.span.start && src[end - 1] == b'\r' {
                end -= 1;
            }
        }
        // The reader checked every line is UTF-8.
        simdutf8::basic::from_utf8(&src[r.span.start..end]).unwrap_or("")
    }

    /// Indices of input (non-synthetic) items, in file order.
    pub fn input_items(&self) -> Vec<usize> {
        (0..self.items.len()).filter(|&i| self.items[i].is_input()).collect()
    }

    /// The input items from `start` on that are history (SPEC 4): not synthetic, and
    /// not system or developer messages, which are instructions (a provider sends the
    /// system prompt apart from the messages; a Codex rollout opens with two developer
    /// messages). The fallback's boundaries are counted over these, from the start of
    /// the current context.
    pub fn history_items(&self, start: usize) -> Vec<usize> {
        (start..self.items.len())
            .filter(|&i| {
                let item = &self.items[i];
                item.is_input() && !matches!(item.role(), Some(Role::System | Role::Developer))
            })
            .collect()
    }

    /// Whether the last input item is an assistant message whose calls all have results.
    pub fn ends_on_completed_turn(&self) -> bool {
        let Some(last) = self.items.iter().rposition(Item::is_input) else {
            return false;
        };
        let item = &self.items[last];
        if item.role() != Some(Role::Assistant) {
            return false;
        }
        // Results come after their calls; the last input item has no results after it.
        item.calls().is_empty()
    }

    /// Where the records of a canonical transcript went: items, the session header,
    /// events, records of an unknown type (blank lines are no records).
    pub fn accounting(&self) -> Accounting {
        let mut a = Accounting { items: self.items.len(), ..Accounting::default() };
        for r in &self.records {
            match r.kind {
                RecordKind::Blank => continue,
                RecordKind::Item(_) => a.in_items += 1,
                RecordKind::Session => a.skip(Skip::Header),
                RecordKind::Event(_) => a.skip(Skip::Lifecycle),
                RecordKind::Other => a.skip(Skip::Unknown),
            }
            a.records += 1;
        }
        a
    }

    /// The 1-based line number of an item, for messages.
    pub fn item_line(&self, item: usize) -> usize {
        self.records[self.items[item].record].line
    }

    /// The line and column of the value at `path` in the session record (where the
    /// record starts when the path cannot be found in its text), for an error about it.
    pub fn session_value_at(&self, path: &str) -> Option<(usize, usize)> {
        let record = self.records.iter().find(|r| matches!(r.kind, RecordKind::Session))?;
        let text = std::str::from_utf8(&self.src[record.span.clone()]).ok()?;
        let (_, column) = crate::scan::place_of(text.strip_prefix('\u{feff}').unwrap_or(text), path);
        Some((record.line, column))
    }
}
