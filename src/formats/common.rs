//! Shared pieces of the importers: reading JSON lines with exact error positions, and
//! building canonical records.

use crate::error::{Error, Result};
pub(crate) use crate::transcript::text_of;
use serde_json::{json, Map, Value};
use std::path::Path;

/// What an importer hands back: canonical records plus counts worth a warning.
#[derive(Debug, Default)]
pub struct Imported {
    pub session: Map<String, Value>,
    pub records: Vec<Value>,
    /// For each record, the 1-based line of the input it came from (0: a whole-file
    /// document, where lines are not tracked).
    pub lines: Vec<usize>,
    /// The input line being imported, given to the records pushed now.
    pub line: usize,
    pub skipped: std::collections::BTreeMap<String, usize>,
    /// Other warnings the importer has for the user (complete lines).
    pub warnings: Vec<String>,
}

impl Imported {
    /// Adds a record that comes from the current input line.
    pub fn push(&mut self, record: Value) {
        self.records.push(record);
        self.lines.push(self.line);
    }

    /// The input line of each canonical line (the session record is line 1 and comes
    /// from the first line), or `None` when the input's lines are not tracked.
    pub fn source_lines(&self) -> Option<Vec<usize>> {
        if self.lines.iter().all(|&l| l == 0) {
            return None;
        }
        Some(std::iter::once(1).chain(self.lines.iter().copied()).collect())
    }

    pub fn skip(&mut self, kind: &str) {
        *self.skipped.entry(kind.to_string()).or_default() += 1;
    }

    /// Canonical JSONL: the session record first, then the records.
    pub fn to_jsonl(&self) -> Vec<u8> {
        let mut session = Map::new();
        session.insert("type".into(), json!("session"));
        session.extend(self.session.clone());
        let mut out = Value::Object(session).to_string().into_bytes();
        out.push(b'\n');
        for r in &self.records {
            out.extend(r.to_string().into_bytes());
            out.push(b'\n');
        }
        out
    }

    pub fn warnings(&self, file: &Path, format: &str) -> Vec<String> {
        let mut out = self.warnings.clone();
        if !self.skipped.is_empty() {
            let parts: Vec<String> = self.skipped.iter().map(|(k, n)| format!("{n} {k}")).collect();
            out.push(format!("{}: {format}: skipped records of unknown type: {}", file.display(), parts.join(", ")));
        }
        out
    }
}

/// Parses every non-blank line as a JSON object, with file:line:column errors.
pub fn json_lines(raw: &[u8], file: &Path) -> Result<Vec<(usize, Value)>> {
    let text = std::str::from_utf8(raw).map_err(|e| {
        let line = memchr::memchr_iter(b'\n', &raw[..e.valid_up_to()]).count() + 1;
        let start = raw[..e.valid_up_to()].iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
        let end = memchr::memchr(b'\n', &raw[start..]).map_or(raw.len(), |p| start + p);
        let column = crate::error::utf8(&raw[start..end]).err().unwrap_or(1);
        Error::bad_line(file, line, column, crate::error::NOT_UTF8)
    })?;
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

/// A whole-file JSON document (SWE-agent, OpenHands), with positions.
pub fn json_document(raw: &[u8], file: &Path) -> Result<Value> {
    let text = std::str::from_utf8(raw).map_err(|_| Error::bad_input(file, crate::error::NOT_UTF8))?;
    serde_json::from_str(text.strip_prefix('\u{feff}').unwrap_or(text)).map_err(|e| {
        let line = text.lines().nth(e.line().saturating_sub(1)).unwrap_or("");
        json_err(&e, line, file, e.line())
    })
}

fn json_err(e: &serde_json::Error, line: &str, file: &Path, line_no: usize) -> Error {
    let (column, msg) = crate::error::serde_position(e, line);
    let what = if e.is_eof() { format!("truncated record: {msg}") } else { msg };
    Error::bad_line(file, line_no, column, what)
}

/// A canonical message record.
pub fn message(id: &str, turn: &str, role: &str, content: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("type".into(), json!("message"));
    m.insert("id".into(), json!(id));
    m.insert("turn".into(), json!(turn));
    m.insert("role".into(), json!(role));
    m.insert("content".into(), content);
    m
}

/// A canonical tool result record.
pub fn tool_result(
    id: &str,
    turn: &str,
    call_id: &str,
    name: Option<&str>,
    content: Value,
    is_error: bool,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("type".into(), json!("tool_result"));
    m.insert("id".into(), json!(id));
    m.insert("turn".into(), json!(turn));
    m.insert("call_id".into(), json!(call_id));
    if let Some(n) = name {
        m.insert("name".into(), json!(n));
    }
    m.insert("content".into(), content);
    if is_error {
        m.insert("is_error".into(), json!(true));
    }
    m
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

/// Provider usage in canonical form (SPEC 1): `input_tokens` is uncached input only.
pub fn usage(input: u64, cache_read: u64, cache_write: u64, output: u64, counted: InputCount) -> Value {
    let input = match counted {
        InputCount::Uncached => input,
        InputCount::WithCacheReads => input.saturating_sub(cache_read),
        InputCount::WithCache => input.saturating_sub(cache_read.saturating_add(cache_write)),
    };
    json!({"input_tokens": input, "cache_read_tokens": cache_read, "cache_write_tokens": cache_write, "output_tokens": output})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_usage_is_normalised_once() {
        let u = |c| usage(100, 30, 5, 7, c);
        assert_eq!(u(InputCount::Uncached)["input_tokens"], 100);
        assert_eq!(u(InputCount::WithCacheReads)["input_tokens"], 70);
        assert_eq!(u(InputCount::WithCache)["input_tokens"], 65);
        assert_eq!(usage(10, 30, 0, 0, InputCount::WithCacheReads)["input_tokens"], 0, "saturates");
        assert_eq!(arguments(Some(&json!("{\"a\":1}"))), json!({"a": 1}));
        assert_eq!(arguments(Some(&json!("ls -la"))), json!("ls -la"));
        assert_eq!(arguments(Some(&json!({"a": 1}))), json!({"a": 1}));
        assert_eq!(arguments(None), Value::Null);
    }
}
