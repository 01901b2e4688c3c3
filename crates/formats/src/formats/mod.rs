//! Source formats: detection and the importers that map each into canonical JSONL
//! (with a `session` record carrying the importer's configuration layer).

pub mod claude_code;
pub mod codex;
pub mod common;
pub mod gemini_cli;
mod mini_swe_agent;
pub mod models;
pub mod openai;
pub mod openhands;
pub mod openhands_v1;
mod swe_agent;

use crate::error::{Error, Result};
use std::path::Path;

/// The tools the known agents edit files with (`reanchor.write_tools`' default; the
/// SWE-agent importer adds the trajectory's own).
pub const DEFAULT_WRITE_TOOLS: &[&str] = &[
    "write*",
    "edit*",
    "*_edit",
    "str_replace*",
    "create_file",
    "apply_patch",
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
];
/// The tools the known agents run commands with (`reanchor.shell_tools`' default).
pub const DEFAULT_SHELL_TOOLS: &[&str] = &["bash", "shell", "exec_command", "local_shell", "Bash"];

/// An input format (`--input-format`); `Auto` detects one of the others.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    serde::Serialize,
    clap::ValueEnum,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum InputFormat {
    #[default]
    Auto,
    Rivumi,
    ClaudeCode,
    Codex,
    Openai,
    SweAgent,
    Openhands,
    GeminiCli,
}

impl InputFormat {
    /// Its name as it is written (derived by the rule serde and clap use; `tests/it/names.rs` holds them equal).
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The file extensions a directory or glob is searched for.
    pub fn extensions(self) -> &'static [&'static str] {
        match self {
            // SWE-agent's `.traj`, mini-swe-agent's `.traj.json`.
            InputFormat::SweAgent => &["traj", "traj.json"],
            InputFormat::Openhands => &["json"],
            // Codex's own folder holds rollouts only: JSON Lines, or the TypeScript
            // versions' documents (`rollout-*.json`).
            InputFormat::GeminiCli | InputFormat::Codex => &["jsonl", "json"],
            // `auto` takes `.json` files only when their head shows a transcript (a config
            // file beside transcripts is no input): see `inputs`.
            InputFormat::Auto => &["jsonl", "traj", "json"],
            _ => &["jsonl"],
        }
    }
}

impl std::fmt::Display for InputFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The format a compacted transcript is written in (`--output-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OutputFormat {
    /// Canonical JSONL (SPEC 1); dataset mode keeps its own format.
    #[default]
    Canonical,
    /// One OpenAI chat line per transcript (`{"messages":[…]}`), as dataset mode reads it.
    Openai,
    /// The Claude Code session with the compaction recorded as Claude Code records it.
    ClaudeCode,
    /// The Codex rollout with the compaction recorded as Codex records it.
    Codex,
    /// The Gemini CLI session with the compaction recorded as Gemini CLI records it.
    GeminiCli,
}

impl OutputFormat {
    /// The input format a resumable output needs.
    pub fn resumes(self) -> Option<InputFormat> {
        match self {
            OutputFormat::ClaudeCode => Some(InputFormat::ClaudeCode),
            OutputFormat::Codex => Some(InputFormat::Codex),
            OutputFormat::GeminiCli => Some(InputFormat::GeminiCli),
            _ => None,
        }
    }
}

/// A transcript in canonical form, with the format it came from and importer warnings.
pub struct Canonical {
    pub bytes: crate::source::Source,
    pub format: InputFormat,
    pub warnings: Vec<String>,
    /// For each canonical line (index 0 is line 1), the input line it came from;
    /// `None` when the input is canonical (the lines are the same) or not tracked.
    pub source_lines: Option<Vec<usize>>,
    /// Where every input record went; `None` for canonical input, whose transcript
    /// tells it once read ([`crate::transcript::Transcript::accounting`]).
    pub accounting: Option<crate::transcript::Accounting>,
    /// For each canonical line (index 0 is line 1), the input record it restates (an
    /// index among the input's records), for write-back; empty for canonical input.
    pub source_records: Vec<Option<usize>>,
    /// An importer's session record and records, which the transcript is built from
    /// (`bytes` are what they are written as); `None` for canonical input, read from
    /// its bytes.
    pub imported: Option<(serde_json::Map<String, serde_json::Value>, Vec<common::CanonicalRecord>)>,
    /// What the input is, when its agent never resumes from such a file (the importer
    /// tells it): no write-back in the agent's format.
    pub not_resumable: Option<&'static str>,
}

impl Canonical {
    /// The transcript: built from the importer's records, or read from canonical input;
    /// an error at the input's lines.
    pub fn transcript(&self, file: &Path) -> Result<crate::transcript::Transcript<'_>> {
        let t = match &self.imported {
            Some((session, records)) => crate::transcript::from_records(&self.bytes, session, records, file),
            None => crate::transcript::parse(&self.bytes, file),
        };
        t.map_err(|e| self.relocate(e))
    }

    /// Where every input record went, once the canonical form is read: the importer's
    /// count, or the canonical transcript's own; a non-empty canonical input with no
    /// item is bad input, as an imported one is.
    pub fn accounting_of(
        &self,
        t: &crate::transcript::Transcript<'_>,
        file: &Path,
    ) -> Result<crate::transcript::Accounting> {
        if let Some(a) = &self.accounting {
            return Ok(a.clone());
        }
        let a = t.accounting();
        a.ensure_items(file, self.format.as_str(), self.bytes.len())?;
        Ok(a)
    }

    /// A line of the canonical form as a line of the input (itself when not tracked).
    pub fn input_line(&self, canonical_line: usize) -> usize {
        self.source_line(canonical_line).unwrap_or(canonical_line)
    }

    /// An error found in the canonical form, with its lines those of the input: the
    /// line it is at, and a line its message names ("first used on line N").
    pub fn relocate(&self, e: Error) -> Error {
        match e {
            Error::BadLine { mut at, message } if self.source_lines.is_some() => {
                at.line = self.input_line(at.line);
                Error::BadLine { at, message: self.relocate_message(&message) }
            }
            e => e,
        }
    }

    /// A message naming a canonical line, with the input's line instead.
    pub fn relocate_message(&self, message: &str) -> String {
        const AT: &str = "first used on line ";
        let Some(k) = message.find(AT) else { return message.to_string() };
        let start = k + AT.len();
        let digits = message[start..].bytes().take_while(u8::is_ascii_digit).count();
        match message[start..start + digits].parse::<usize>() {
            Ok(n) => format!("{}{}{}", &message[..start], self.input_line(n), &message[start + digits..]),
            Err(_) => message.to_string(),
        }
    }

    /// The 1-based input line of a 1-based canonical line (itself when not tracked).
    pub fn source_line(&self, canonical_line: usize) -> Option<usize> {
        match &self.source_lines {
            None if self.format == InputFormat::Rivumi => Some(canonical_line),
            None => None,
            Some(lines) => lines.get(canonical_line.checked_sub(1)?).copied().filter(|&l| l > 0),
        }
    }
}

/// Turns an input into canonical JSONL. Canonical input is returned as it is (byte
/// fidelity); `auto` detects the format from the first records, and the whole file has
/// the last word: a format under which most records are of an unknown type is not the
/// file's. A non-empty input that gives no model-visible item is bad input.
pub fn import(raw: crate::source::Source, file: &Path, format: InputFormat) -> Result<Canonical> {
    let asked = format;
    let format = if format == InputFormat::Auto { detect_for(file, &raw) } else { format };
    let (format, imported) = match import_as(&raw, file, format)? {
        None => {
            let canonical = Canonical {
                bytes: raw,
                format: InputFormat::Rivumi,
                warnings: Vec::new(),
                source_lines: None,
                accounting: None,
                source_records: Vec::new(),
                imported: None,
                not_resumable: None,
            };
            return Ok(canonical);
        }
        Some(imported) if asked == InputFormat::Auto && imported.accounting().mostly_unknown() => {
            other_fit(&raw, file, format)
                .ok_or_else(|| not_this_format(file, format, &imported.accounting(), imported.first_unknown))?
        }
        Some(imported) => (format, imported),
    };
    // A mapped input that shrank while it was imported was read as zeros.
    raw.intact(file)?;
    let accounting = imported.accounting();
    accounting.ensure_items(file, format.as_str(), raw.len())?;
    let warnings = imported.warnings(file, format.as_str());
    let source_lines = imported.source_lines();
    let source_records = imported.source_records();
    let bytes = imported.to_jsonl().into();
    let session = imported.session_record();
    let not_resumable = imported.not_resumable;
    Ok(Canonical {
        bytes,
        format,
        warnings,
        source_lines,
        accounting: Some(accounting),
        source_records,
        imported: Some((session, imported.records)),
        not_resumable,
    })
}

/// The records of `raw` under one format; `None` for canonical input (read as it is).
fn import_as(raw: &[u8], file: &Path, format: InputFormat) -> Result<Option<common::Imported>> {
    Ok(Some(match format {
        InputFormat::Auto => return Err(no_format_fits(raw, file)),
        InputFormat::Rivumi => return Ok(None),
        InputFormat::ClaudeCode => claude_code::import(raw, file)?,
        InputFormat::Codex => codex::import(raw, file)?,
        InputFormat::SweAgent => swe_agent::import(raw, file)?,
        InputFormat::Openhands => openhands::import(raw, file)?,
        InputFormat::GeminiCli => gemini_cli::import(raw, file)?,
        InputFormat::Openai => {
            return Err(Error::Usage("openai files are datasets: use `run` (one output line per input line)".into()))
        }
    }))
}

/// The session format, other than `tried`, under which most records are known and some
/// are items: the file's own, when its first records misled detection.
fn other_fit(raw: &[u8], file: &Path, tried: InputFormat) -> Option<(InputFormat, common::Imported)> {
    const SESSIONS: [InputFormat; 3] = [InputFormat::ClaudeCode, InputFormat::Codex, InputFormat::GeminiCli];
    SESSIONS.into_iter().filter(|&f| f != tried).find_map(|f| {
        let imported = import_as(raw, file, f).ok()??;
        let a = imported.accounting();
        (a.items > 0 && !a.mostly_unknown()).then_some((f, imported))
    })
}

/// Detection found `format`, but most records are unknown to it and no other format
/// fits the whole file: named at the first record it does not know (its line; the
/// file when that is an entry of a whole-file document).
fn not_this_format(file: &Path, format: InputFormat, a: &crate::transcript::Accounting, first: Option<usize>) -> Error {
    let tried: Vec<&str> = FORMATS.iter().map(|f| f.as_str()).collect();
    Error::located(
        file,
        first.filter(|&line| line > 0).map(|line| (line, 1)),
        format!(
            "no input format fits this file: its first records look like {format}, but {} of its {} records are of a type {format} does not know ({}); tried {}: name one with --input-format",
            a.count(crate::transcript::Skip::Unknown),
            a.records,
            a.left_out(),
            tried.join(", ")
        ),
    )
}

/// The one message for an input no format fits: the canonical reader's complaint about
/// the first record (where it is, what is wrong), the formats tried, and the flag that
/// names one.
pub fn no_format_fits(raw: &[u8], file: &Path) -> Error {
    let head = &raw[..raw.len().min(crate::source::SNIFF_BYTES)];
    let start = head.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(0);
    let end = memchr::memchr(b'\n', &head[start..]).map_or(head.len(), |n| start + n + 1);
    let tried: Vec<&str> = FORMATS.iter().map(|f| f.as_str()).collect();
    let hint = format!(
        "no input format fits this file (tried {}, from its first record and extension): name one with --input-format",
        tried.join(", ")
    );
    let document = head[start..end].trim_ascii() == b"{";
    match crate::transcript::parse(&head[..end], file) {
        Err(Error::BadLine { at, message }) if !document => {
            // A record that is an object: the keys it has, which is what tells a reader
            // which format (or which key of a known one) it is.
            let keys = match serde_json::from_slice::<serde_json::Value>(&head[start..end]) {
                Ok(serde_json::Value::Object(o)) if !o.is_empty() => {
                    let mut shown: Vec<String> = o.keys().take(8).map(|k| format!("{k:?}")).collect();
                    if o.len() > 8 {
                        shown.push(format!("and {} more", o.len() - 8));
                    }
                    format!(" (it has {})", shown.join(", "))
                }
                _ => String::new(),
            };
            Error::BadLine { at, message: format!("{message}{keys}; {hint}") }
        }
        _ => {
            let line = memchr::memchr_iter(b'\n', &head[..start]).count() + 1;
            let what = if document { "a JSON document without `history` or `trajectory`: " } else { "" };
            Error::bad_line(file, line, 1, format!("{what}{hint}"))
        }
    }
}

/// Every format `auto` can detect, in the order it tries them.
pub const FORMATS: [InputFormat; 7] = [
    InputFormat::Openhands,
    InputFormat::SweAgent,
    InputFormat::Codex,
    InputFormat::GeminiCli,
    InputFormat::ClaudeCode,
    InputFormat::Openai,
    InputFormat::Rivumi,
];

/// Whether the head shows a dataset (one transcript per line), and its format: OpenAI
/// chat lines, or an OpenHands evaluation output (`instance_id` and `history`).
pub fn dataset_format(path: &Path, head: &[u8]) -> Option<InputFormat> {
    match detect_for(path, head) {
        InputFormat::Openai => Some(InputFormat::Openai),
        InputFormat::Openhands if openhands::is_evaluation_output(&FirstRecord::of(head).keys) => {
            Some(InputFormat::Openhands)
        }
        _ => None,
    }
}

/// Detects the format of a file from its extension (`.traj` is SWE-agent's, whatever
/// its size) and its head.
pub fn detect_for(path: &Path, head: &[u8]) -> InputFormat {
    let name = path.to_string_lossy();
    let inner = crate::source::Compression::strip_suffix(&name);
    // SWE-agent's `.traj`, and mini-swe-agent's `.traj.json`.
    if Path::new(inner).extension().is_some_and(|e| e == "traj") || inner.ends_with(".traj.json") {
        return InputFormat::SweAgent;
    }
    detect(head)
}

/// Detects the format from the first non-blank record. `raw` may be only the head of
/// the input, cut anywhere: a first record longer than the head is judged by the keys
/// that came before the cut. `Auto` when no format fits (a canonical record has `type`).
pub fn detect(raw: &[u8]) -> InputFormat {
    let text = String::from_utf8_lossy(&raw[..raw.len().min(crate::source::SNIFF_BYTES)]);
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    // A JSON array: OpenHands events, or a Gemini CLI chat saved with `/chat save` (the
    // model's contents, `{role, parts}`); Gemini CLI's log of the user's prompts
    // (`logs.json` beside the saved chats: `sessionId`, `messageId`) is no transcript.
    if let Some(list) = trimmed.strip_prefix('[') {
        let keys = FirstRecord::read(list.trim_start()).keys;
        let has = |k: &str| keys.iter().any(|x| x == k);
        return if is_content(&keys) {
            InputFormat::GeminiCli
        } else if has("sessionId") && has("messageId") {
            InputFormat::Auto
        } else {
            InputFormat::Openhands
        };
    }
    let Some(first) = trimmed.lines().find(|l| !l.trim().is_empty()) else {
        return InputFormat::Rivumi;
    };
    if first.trim() == "{" {
        // A pretty-printed JSON document: SWE-agent trajectories (whose `history` may come
        // after a long `trajectory`, past the head) and OpenHands dumps.
        let has = |k: &str| trimmed.contains(&format!("\"{k}\""));
        // A Gemini CLI session of the versions before JSON Lines: metadata, then `messages`.
        let saved_chat = crate::scan::value_offset(trimmed, "history[0]")
            .is_some_and(|at| is_content(&FirstRecord::read(&trimmed[at..]).keys));
        let gemini = has("projectHash") || (has("sessionId") && has("messages") && !has("history")) || saved_chat;
        // A rollout of the TypeScript Codex (0.1.x): `session`, then `items`, and nothing
        // else (told by its own top-level keys, not by a word that its texts may hold).
        let keys = FirstRecord::read(trimmed).keys;
        let codex = keys.first().is_some_and(|k| k == "session") && keys.iter().all(|k| k == "session" || k == "items");
        // mini-swe-agent: `info` (its version, its configuration's classes) before
        // `messages`; `trajectory_format` last.
        let mini = has("mini_version") || has("trajectory_format") || trimmed.contains("\"minisweagent.");
        return if mini {
            InputFormat::SweAgent
        } else if gemini {
            InputFormat::GeminiCli
        } else if codex {
            InputFormat::Codex
        } else if has("trajectory") || has("tool_call_ids") || has("replay_config") {
            InputFormat::SweAgent
        } else if has("history") {
            InputFormat::Openhands
        } else {
            InputFormat::Auto
        };
    }
    // The first record that tells decides: a file may open with records of no
    // particular shape (Claude Code sidechain or hook records, a canonical record of an
    // unknown type), so the records after it are read too, as far as the head goes.
    let mut lines = trimmed.lines().filter(|l| !l.trim().is_empty());
    lines.by_ref().map(FirstRecord::read).find_map(|r| r.format()).unwrap_or_else(|| {
        if FirstRecord::read(first).keys.iter().any(|k| k == "type") {
            InputFormat::Rivumi
        } else {
            InputFormat::Auto
        }
    })
}

/// Whether an object's keys are those of one of the Gemini API's contents (`{role,
/// parts}`), the entries of a chat Gemini CLI saved.
fn is_content(keys: &[String]) -> bool {
    keys.iter().any(|k| k == "parts") && keys.iter().all(|k| k == "parts" || k == "role")
}

/// The top-level keys of a record and its `type`, as far as the text goes: keys are
/// recorded as they are met, so a record cut off by the end of the head still tells.
#[derive(Default)]
struct FirstRecord {
    keys: Vec<String>,
    ty: Option<String>,
}

impl FirstRecord {
    /// The format this record shows, if it shows one.
    fn format(&self) -> Option<InputFormat> {
        let has = |k: &str| self.keys.iter().any(|x| x == k);
        let ty = self.ty.as_deref().unwrap_or("");
        if has("payload") && ["session_meta", "turn_context", "response_item", "event_msg", "compacted"].contains(&ty) {
            return Some(InputFormat::Codex);
        }
        // A Codex rollout of the versions before the `{type, payload}` wrapper (2025): a
        // bare `{id, timestamp, instructions}` first line, `record_type` state lines, or
        // the TypeScript versions' one document.
        let legacy_meta = self.ty.is_none() && has("id") && has("timestamp") && (has("instructions") || has("git"));
        // The TypeScript Codex's rollout written on one line: `{session, items}`.
        let document = self.ty.is_none() && has("session") && has("items");
        if legacy_meta || has("record_type") || document {
            return Some(InputFormat::Codex);
        }
        // Gemini CLI: its metadata line (`sessionId` and `projectHash`), its `$set` and
        // `$rewindTo` updates, its message records (`type` gemini, or user/info/error
        // with an `id` and no Claude Code `uuid`). Before Claude Code, whose keys
        // include `sessionId`.
        // `codex exec --json`: its `thread.started` event first, or (before those events)
        // a line of the run's settings.
        if codex::is_exec_event(ty) || (has("sandbox") && has("approval") && has("workdir")) {
            return Some(InputFormat::Codex);
        }
        // `gemini -p --output-format stream-json`: its `init` event first.
        if ty == "init" && has("session_id") && has("model") {
            return Some(InputFormat::GeminiCli);
        }
        let gemini_message = ty == "gemini"
            || (["user", "info", "error", "warning"].contains(&ty) && has("id") && has("timestamp") && !has("uuid"));
        if has("projectHash") || has("$set") || has("$rewindTo") || gemini_message {
            return Some(InputFormat::GeminiCli);
        }
        // Claude Code's keys (a canonical record has none of them), or its own types.
        let claude_keys = ["sessionId", "parentUuid", "uuid", "leafUuid", "isSidechain", "claude_code_version"];
        let claude_types = ["file-history-snapshot", "queue-operation", "summary", "progress", "attachment"];
        if claude_keys.iter().any(|k| has(k)) || claude_types.contains(&ty) {
            return Some(InputFormat::ClaudeCode);
        }
        // A mini-swe-agent trajectory written on one line (`info`, `messages`,
        // `trajectory_format`) is one run, not a dataset row.
        if self.ty.is_none() && has("messages") && has("trajectory_format") {
            return Some(InputFormat::SweAgent);
        }
        if self.ty.is_none() && has("messages") {
            return Some(InputFormat::Openai);
        }
        if self.ty.is_none() && (has("history") || openhands::is_resolver_output(&self.keys)) {
            return Some(InputFormat::Openhands); // lines that carry a `history` of events
        }
        // OpenHands events one per line: the agent SDK's (`kind`; a conversation folder
        // is read so) or an older stream's (`source` with its `action` or
        // `observation`). Every event has an `id` and a `timestamp`; no other format's
        // record has both without a `type`.
        if self.ty.is_none() && has("id") && has("timestamp") && (has("kind") || has("source")) {
            return Some(InputFormat::Openhands);
        }
        ["session", "message", "tool_result", "event"].contains(&ty).then_some(InputFormat::Rivumi)
    }

    /// The first record of a head (JSON Lines only; a document gives no keys).
    fn of(head: &[u8]) -> FirstRecord {
        let text = String::from_utf8_lossy(&head[..head.len().min(crate::source::SNIFF_BYTES)]);
        let trimmed = text.trim_start_matches('\u{feff}').trim_start();
        match trimmed.lines().next() {
            Some(first) if first.trim() != "{" => FirstRecord::read(first),
            _ => FirstRecord::default(),
        }
    }

    fn read(line: &str) -> FirstRecord {
        let mut record = FirstRecord::default();
        let mut de = serde_json::Deserializer::from_str(line);
        let _ = serde::de::DeserializeSeed::deserialize(KeySeed(&mut record), &mut de);
        record
    }
}

struct KeySeed<'r>(&'r mut FirstRecord);

impl<'de> serde::de::DeserializeSeed<'de> for KeySeed<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for KeySeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let is_type = key == "type";
            self.0.keys.push(key.into_owned());
            if is_type {
                if let serde_json::Value::String(s) = map.next_value::<serde_json::Value>()? {
                    self.0.ty = Some(s);
                }
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{detect, InputFormat};

    #[test]
    fn a_first_record_longer_than_the_head_is_still_detected() {
        let long = "x".repeat(crate::source::SNIFF_BYTES * 2);
        let cases = [
            (
                format!(r#"{{"parentUuid":null,"sessionId":"s","message":{{"content":"{long}"}}}}"#),
                InputFormat::ClaudeCode,
            ),
            (
                format!(r#"{{"timestamp":"t","type":"response_item","payload":{{"text":"{long}"}}}}"#),
                InputFormat::Codex,
            ),
            (format!(r#"{{"messages":[{{"role":"user","content":"{long}"}}]}}"#), InputFormat::Openai),
            (format!(r#"{{"type":"message","id":"m","content":"{long}"}}"#), InputFormat::Rivumi),
        ];
        for (text, want) in cases {
            assert_eq!(detect(text.as_bytes()), want);
        }
    }

    /// OpenHands events one per line: the agent SDK's (`kind`), cut by the head before
    /// their `kind` too, and an older stream's bare events.
    #[test]
    fn openhands_events_one_per_line_are_detected() {
        let long = "x".repeat(crate::source::SNIFF_BYTES * 2);
        let cases = [
            r#"{"id":"e1","timestamp":"2026-11-30T10:00:00","source":"user","llm_message":{"role":"user","content":[]},"kind":"MessageEvent"}"#.to_string(),
            format!(r#"{{"id":"e1","timestamp":"2026-11-30T10:00:00","source":"environment","observation":{{"content":"{long}"}},"kind":"ObservationEvent"}}"#),
            r#"{"id":3,"timestamp":"2025-01-01T00:00:00","source":"agent","message":"Running","action":"run","args":{"command":"ls"}}"#.to_string(),
        ];
        for text in cases {
            assert_eq!(detect(text.as_bytes()), InputFormat::Openhands, "{}", &text[..80]);
        }
        // A Codex rollout's first line of 2025 has an id and a timestamp too.
        let codex = r#"{"id":"s","timestamp":"2025-05-01T00:00:00Z","instructions":null,"git":null}"#;
        assert_eq!(detect(codex.as_bytes()), InputFormat::Codex);
    }
}
