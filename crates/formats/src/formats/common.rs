//! Shared pieces of the importers: reading JSON lines with exact error positions, and
//! building canonical records.

use crate::error::{Error, Result};
pub use crate::transcript::record::Call;
use crate::transcript::record::{
    CanonicalRecord as Record, EventRecord as Event, MessageRecord as Message, ToolResultRecord as ToolResult,
};

/// A canonical record an importer makes (it owns its strings).
pub type CanonicalRecord = Record<'static>;
/// A canonical message record an importer makes.
pub type MessageRecord = Message<'static>;
/// A canonical tool result record an importer makes.
pub type ToolResultRecord = ToolResult<'static>;
/// A lifecycle event record an importer makes.
pub type EventRecord = Event<'static>;
pub use crate::transcript::text_of;
use crate::transcript::{Accounting, Role, Skip, Usage};
use serde_json::{json, Map, Value};
use std::path::Path;

/// What an importer hands back: canonical records, where each came from, and what
/// became of every input record (SPEC 1 "Accounting").
#[derive(Debug, Default)]
pub struct Imported {
    pub session: Map<String, Value>,
    pub records: Vec<CanonicalRecord>,
    /// For each record, the 1-based line of the input it came from (0: a whole-file
    /// document, where lines are not tracked).
    pub lines: Vec<usize>,
    /// For each record, the input record it came from (an index into `fates`).
    origins: Vec<usize>,
    /// For each record, the input record it restates: its origin, or the record named by
    /// `restating` when it was pushed (what write-back copies it from).
    sources: Vec<usize>,
    /// The input record the records pushed now restate (a preserved segment restated
    /// after a compaction's anchor); `None`: the current one.
    pub restating: Option<usize>,
    /// The input line being imported, given to the records pushed now.
    pub line: usize,
    /// For each input record read, why it was left out, when an importer said so.
    fates: Vec<Option<Skip>>,
    /// Input records read into an item another record began (a part of a split
    /// message, a call joined to the reply before it).
    joined: std::collections::BTreeSet<usize>,
    /// Records of a type the importer does not know, by type.
    pub skipped: std::collections::BTreeMap<String, usize>,
    /// The input line of the first of them (0: an entry of a whole-file document).
    pub first_unknown: Option<usize>,
    /// Other warnings the importer has for the user (complete lines).
    pub warnings: Vec<String>,
    /// What the input is, when its agent never resumes from such a file (a headless
    /// run's output, a saved chat): `--output-format` refuses to write it back.
    pub not_resumable: Option<&'static str>,
}

impl Imported {
    /// Starts the next input record (on `line`; 0 for an entry of a document); the
    /// records pushed until the next call come from it. Returns its index.
    pub fn begin(&mut self, line: usize) -> usize {
        self.line = line;
        self.fates.push(None);
        self.fates.len() - 1
    }

    /// The input record being imported.
    pub fn current(&self) -> usize {
        self.fates.len().saturating_sub(1)
    }

    /// Adds a record that comes from the current input record; returns its index.
    pub fn push(&mut self, record: impl Into<CanonicalRecord>) -> usize {
        let at = self.current();
        self.push_from(at, self.line, record)
    }

    /// Adds a record that comes from input record `origin` (on `line`); returns its index.
    pub fn push_from(&mut self, origin: usize, line: usize, record: impl Into<CanonicalRecord>) -> usize {
        self.records.push(record.into());
        self.lines.push(line);
        self.origins.push(origin);
        self.sources.push(self.restating.unwrap_or(origin));
        self.records.len() - 1
    }

    /// The message record at `at` (an index [`Imported::push`] returned).
    pub fn message_mut(&mut self, at: usize) -> Option<&mut MessageRecord> {
        self.records.get_mut(at).and_then(CanonicalRecord::as_message_mut)
    }

    /// Removes the last record (an importer that finds it was not history after all);
    /// its input record is then left out as `why`, unless another record holds it.
    pub fn pop(&mut self, why: Skip) -> Option<CanonicalRecord> {
        let record = self.records.pop()?;
        self.lines.pop();
        self.sources.pop();
        if let Some(origin) = self.origins.pop() {
            self.leave_out_at(origin, why);
        }
        Some(record)
    }

    /// The current input record is read into an item another record began.
    pub fn joined(&mut self) {
        self.joined.insert(self.current());
    }

    /// The current input record is left out, for this reason (the first reason given
    /// stands).
    pub fn leave_out(&mut self, why: Skip) {
        let at = self.current();
        self.leave_out_at(at, why);
    }

    /// Input record `at` is left out, for this reason (the first reason given stands).
    pub fn leave_out_at(&mut self, at: usize, why: Skip) {
        if let Some(fate) = self.fates.get_mut(at) {
            fate.get_or_insert(why);
        }
    }

    /// The current input record is of a type this importer does not know.
    pub fn skip(&mut self, kind: &str) {
        *self.skipped.entry(kind.to_string()).or_default() += 1;
        self.first_unknown.get_or_insert(self.line);
        self.leave_out(Skip::Unknown);
    }

    /// Where every input record went: an item holds it, or it was left out under the
    /// reason given (an event made of it is lifecycle; a record no rule took is counted
    /// as unaccounted, never dropped unseen).
    pub fn accounting(&self) -> Accounting {
        let mut held = vec![0u8; self.fates.len()]; // 2: in an item, 1: in another record
        let mut a = Accounting { records: self.fates.len(), ..Accounting::default() };
        for (r, &origin) in self.records.iter().zip(&self.origins) {
            let item = r.is_item();
            a.items += usize::from(item);
            if let Some(h) = held.get_mut(origin) {
                *h = (*h).max(if item { 2 } else { 1 });
            }
        }
        for (k, (fate, h)) in self.fates.iter().zip(held).enumerate() {
            match (h, fate) {
                (2, _) => a.in_items += 1,
                _ if self.joined.contains(&k) => a.in_items += 1,
                (_, Some(why)) => a.skip(*why),
                (1, None) => a.skip(Skip::Lifecycle),
                _ => a.skip(Skip::Unaccounted),
            }
        }
        a.unknown_types.clone_from(&self.skipped);
        a
    }

    /// The input line of each canonical line (the session record is line 1 and comes
    /// from the first line), or `None` when the input's lines are not tracked.
    pub fn source_lines(&self) -> Option<Vec<usize>> {
        if self.lines.iter().all(|&l| l == 0) {
            return None;
        }
        Some(std::iter::once(1).chain(self.lines.iter().copied()).collect())
    }

    /// The input record each canonical line restates (an index among the input's
    /// records, in order), `None` for the session line.
    pub fn source_records(&self) -> Vec<Option<usize>> {
        std::iter::once(None).chain(self.sources.iter().copied().map(Some)).collect()
    }

    /// The session record: its `type`, then the session's keys.
    pub fn session_record(&self) -> Map<String, Value> {
        let mut session = Map::new();
        session.insert("type".into(), json!("session"));
        session.extend(self.session.clone());
        session
    }

    /// Canonical JSONL: the session record first, then the records.
    pub fn to_jsonl(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec(&self.session_record()).expect("a session serializes");
        out.push(b'\n');
        for r in &self.records {
            serde_json::to_writer(&mut out, r).expect("a record serializes");
            out.push(b'\n');
        }
        out
    }

    pub fn warnings(&self, file: &Path, format: &str) -> Vec<String> {
        let mut out = self.warnings.clone();
        if !self.skipped.is_empty() {
            // Named as far as a warning line can hold them: a type may be of any length,
            // and a file may hold any number of them.
            const LISTED: usize = 12;
            let mut parts: Vec<String> =
                self.skipped.iter().take(LISTED).map(|(k, n)| format!("{n} {}", crate::text::cut(k, 60))).collect();
            if self.skipped.len() > LISTED {
                parts.push(format!("and {} type(s) more", self.skipped.len() - LISTED));
            }
            out.push(format!("{}: {format}: skipped records of unknown type: {}", file.display(), parts.join(", ")));
        }
        let unaccounted = self.accounting().count(Skip::Unaccounted);
        if unaccounted > 0 {
            out.push(format!(
                "{}: {format}: {unaccounted} record(s) taken by no rule of the importer (a fault of rivumi-compact: please report it)",
                file.display()
            ));
        }
        out
    }
}

/// The whole input as text; bytes that are not UTF-8 are reported at their line and
/// column (the column in characters, as every other position).
fn utf8_text<'a>(raw: &'a [u8], file: &Path) -> Result<&'a str> {
    std::str::from_utf8(raw).map_err(|e| {
        let line = memchr::memchr_iter(b'\n', &raw[..e.valid_up_to()]).count() + 1;
        let start = raw[..e.valid_up_to()].iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
        let end = memchr::memchr(b'\n', &raw[start..]).map_or(raw.len(), |p| start + p);
        let column = crate::error::utf8(&raw[start..end]).err().unwrap_or(1);
        Error::bad_line(file, line, column, crate::error::NOT_UTF8)
    })
}

/// Parses every non-blank line as a JSON object, with file:line:column errors.
pub fn json_lines(raw: &[u8], file: &Path) -> Result<Vec<(usize, Value)>> {
    let text = utf8_text(raw, file)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| json_err(&e, line, file, i + 1))?;
        if !v.is_object() {
            return Err(Error::bad_line(file, i + 1, 1, "expected a JSON object (one record per line)"));
        }
        out.push((i + 1, v));
    }
    Ok(out)
}

/// Whether the input is one JSON document rather than JSON Lines: written pretty-printed
/// (a first line of `{` alone), or on one line whose object holds the list `list` (the
/// older Gemini CLI session's `messages`, the TypeScript Codex rollout's `items`).
pub fn is_document(raw: &[u8], list: &str) -> bool {
    let text = String::from_utf8_lossy(&raw[..raw.len().min(crate::source::SNIFF_BYTES)]);
    let text = text.trim_start_matches('\u{feff}').trim_start();
    match text.lines().next() {
        Some(first) if first.trim() == "{" => true,
        Some(first) => {
            serde_json::from_str::<Map<String, Value>>(first).is_ok_and(|m| m.get(list).is_some_and(Value::is_array))
                && text.lines().filter(|l| !l.trim().is_empty()).count() == 1
        }
        None => false,
    }
}

/// A whole-file JSON document (SWE-agent, OpenHands), with positions.
pub fn json_document(raw: &[u8], file: &Path) -> Result<Value> {
    let text = utf8_text(raw, file)?;
    serde_json::from_str(text.strip_prefix('\u{feff}').unwrap_or(text)).map_err(|e| {
        let line = text.lines().nth(e.line().saturating_sub(1)).unwrap_or("");
        let err = json_err(&e, line, file, e.line());
        // A second document after a whole first one: documents joined one per line (a
        // JSON Lines file of trajectories), which this format does not read as one.
        let trailing = e.to_string().starts_with("trailing characters") && line.trim_start().starts_with(['{', '[']);
        match err {
            Error::BadLine { at, message } if trailing => Error::BadLine {
                at,
                message: format!(
                    "{message}: a second JSON document starts here, and this format holds one document per file (give each its own file)"
                ),
            },
            err => err,
        }
    })
}

/// A whole-file JSON document that parses but is not the shape its format needs: named
/// at the value at `path` (`history`), or at the document's start when there is none.
pub fn document_error(raw: &[u8], file: &Path, path: &str, message: &str) -> Error {
    let text = std::str::from_utf8(raw).unwrap_or("");
    let (line, column) = crate::scan::place_of(text.strip_prefix('\u{feff}').unwrap_or(text), path);
    Error::bad_line(file, line, column, message)
}

fn json_err(e: &serde_json::Error, line: &str, file: &Path, line_no: usize) -> Error {
    let (column, msg) = crate::error::serde_position(e, line);
    let what = if e.is_eof() { format!("truncated record: {msg}") } else { msg };
    Error::bad_line(file, line_no, column, what)
}

/// A canonical message record.
pub fn message(id: &str, turn: &str, role: Role, content: Value) -> MessageRecord {
    Message::new(id.to_string(), turn.to_string(), role, content)
}

/// A canonical tool result record.
pub fn tool_result(
    id: &str,
    turn: &str,
    call_id: &str,
    name: Option<&str>,
    content: Value,
    is_error: bool,
) -> ToolResultRecord {
    let mut r = ToolResult::new(id.to_string(), turn.to_string(), call_id.to_string(), content);
    (r.name, r.is_error) = (name.map(|n| n.to_string().into()), is_error);
    r
}

/// Tool-call arguments as canonical JSON: providers give an object, or a JSON string
/// holding one; a string that is not JSON stays a string, a missing value is null.
pub fn arguments(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or_else(|_| json!(s)),
        Some(v) => v.clone(),
        None => Value::Null,
    }
}

/// What a provider's input-token count includes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputCount {
    /// Uncached input only (Anthropic, Claude Code).
    Uncached,
    /// Cache reads are inside the input count (OpenAI, Codex).
    WithCacheReads,
    /// Cache reads and writes are inside the input count (LiteLLM's prompt_tokens).
    WithCache,
}

/// The usage of a chat completion as LiteLLM reports it (OpenHands' `model_response`,
/// mini-swe-agent's `extra.response`): `prompt_tokens` counts the cached part, whether
/// OpenAI's `prompt_tokens_details.cached_tokens` or Anthropic's cache figures beside it.
pub fn litellm_usage(u: &Value) -> Usage {
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    let cache_read = n("cache_read_input_tokens")
        .max(u.get("prompt_tokens_details").and_then(|d| d.get("cached_tokens")).and_then(Value::as_u64).unwrap_or(0));
    usage(
        n("prompt_tokens"),
        cache_read,
        n("cache_creation_input_tokens"),
        n("completion_tokens"),
        InputCount::WithCache,
    )
}

/// Provider usage in canonical form (SPEC 1): `input_tokens` is uncached input only.
pub fn usage(input: u64, cache_read: u64, cache_write: u64, output: u64, counted: InputCount) -> Usage {
    let input = match counted {
        InputCount::Uncached => input,
        InputCount::WithCacheReads => input.saturating_sub(cache_read),
        InputCount::WithCache => input.saturating_sub(cache_read.saturating_add(cache_write)),
    };
    Usage { input_tokens: input, cache_read_tokens: cache_read, cache_write_tokens: cache_write, output_tokens: output }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_usage_is_normalised_once() {
        let u = |c| usage(100, 30, 5, 7, c);
        assert_eq!(u(InputCount::Uncached).input_tokens, 100);
        assert_eq!(u(InputCount::WithCacheReads).input_tokens, 70);
        assert_eq!(u(InputCount::WithCache).input_tokens, 65);
        assert_eq!(usage(10, 30, 0, 0, InputCount::WithCacheReads).input_tokens, 0, "saturates");
        assert_eq!(arguments(Some(&json!("{\"a\":1}"))), json!({"a": 1}));
        assert_eq!(arguments(Some(&json!("ls -la"))), json!("ls -la"));
        assert_eq!(arguments(Some(&json!({"a": 1}))), json!({"a": 1}));
        assert_eq!(arguments(None), Value::Null);
    }
}
