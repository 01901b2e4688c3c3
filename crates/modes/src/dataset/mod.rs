//! Dataset mode (SPEC 1 "Other formats"): one OpenAI-format conversation per line,
//! each compacted on its own through the same pipeline as a transcript, giving exactly
//! one output line in the same format. The importer (`formats::openai`) only maps a
//! line to canonical records; this module runs the policy on it and maps the plan back.

use crate::engine::{self, Processed, Settings};
use crate::error::{Error, Result};
use crate::formats::openai::to_canonical;
use crate::formats::OutputFormat;
use crate::formats::{openhands, InputFormat};
use crate::output::chat::{chat_line, chat_message, push_chat_message};
use crate::policy::{steps, Message, Step, Walk};
use serde_json::{json, Map, Value};
use std::path::Path;

pub mod stream;
mod view;

/// The output line for a processed conversation: kept messages as they were, injected
/// ones as user messages named `rivumi-<kind>`. Walks the plan directly (no
/// re-serialization of the kept messages).
pub fn from_plan(line: &Value, done: &Processed<'_>) -> Value {
    let originals = line.get("messages").and_then(Value::as_array).cloned().unwrap_or_default();
    let t = &done.transcript;
    let walk = Walk { chat: true, ..Walk::default() };
    let messages: Vec<Value> = steps(t, &done.plan, walk)
        .into_iter()
        .filter_map(|step| match step {
            // The importer writes message k of the row as canonical record k.
            Step::Kept(i) => originals.get(t.items[i].record).cloned(),
            Step::Injected(m) => Some(chat_message(m)),
            Step::Event(_) | Step::Record(_) => None,
        })
        .collect();
    let mut out: Map<String, Value> = line.as_object().cloned().unwrap_or_default();
    out.insert("messages".into(), Value::Array(messages));
    Value::Object(out)
}

/// The text of one raw dataset line (its terminator, and a UTF-8 byte-order mark at
/// the start of the file, left out), or the column (in characters) of its first byte
/// that is not UTF-8. The one reader of a dataset line's bytes, for every command.
pub fn line_text(raw: &[u8], line_no: usize) -> std::result::Result<&str, usize> {
    let body = raw.strip_suffix(b"\n").unwrap_or(raw);
    let body = body.strip_suffix(b"\r").unwrap_or(body);
    let (bom, body) = match body.strip_prefix(b"\xEF\xBB\xBF") {
        Some(rest) if line_no == 1 => (1, rest),
        _ => (0, body),
    };
    crate::error::utf8(body).map_err(|c| c + bom)
}

/// Compacts every line of a dataset held in memory, in order, one output line per
/// input line (as `run` writes a dataset, on one thread); returns the bad lines'
/// messages (each line is echoed unchanged). A user's hook that fails stops it.
pub fn compact_lines(data: &[u8], file: &Path, settings: &Settings, w: &mut dyn std::io::Write) -> Result<Vec<String>> {
    let mut bad = Vec::new();
    let mut n = 0;
    let mut start = 0;
    while start < data.len() {
        let end = memchr::memchr(b'\n', &data[start..]).map_or(data.len(), |k| start + k + 1);
        let raw = &data[start..end];
        n += 1;
        let body_len = raw.strip_suffix(b"\n").map_or(raw.len(), <[u8]>::len);
        let body_len = raw[..body_len].strip_suffix(b"\r").map_or(body_len, <[u8]>::len);
        let bom = if n == 1 && raw.starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 };
        let outcome = match line_text(raw, n) {
            Ok(text) => process_line(text, file, n, settings)?,
            Err(column) => LineOutcome::Bad(format!("{}:{n}:{column}: {}", file.display(), crate::error::NOT_UTF8)),
        };
        let write = |w: &mut dyn std::io::Write, bytes: &[u8]| w.write_all(bytes).map_err(Error::stdout);
        match outcome {
            LineOutcome::Changed(line) => {
                write(w, &raw[..bom])?;
                write(w, line.as_bytes())?;
                write(w, &raw[body_len..])?;
            }
            LineOutcome::Unchanged => write(w, raw)?,
            LineOutcome::Bad(message) => {
                bad.push(message);
                write(w, raw)?;
            }
        }
        start = end;
    }
    Ok(bad)
}

/// What the engine did with a row it read: the decision, and the row's size before and
/// after by the configured tokenizer (`tokens_after` is the row as written: the items
/// that stay and every injected message). Typed values, for callers that report rows
/// (the Python package) without reading the output back.
#[derive(Debug, Clone)]
pub struct Row {
    pub decision: crate::policy::Decision,
    pub tokens_before: u64,
    pub tokens_after: u64,
}

impl Row {
    fn of(done: &Processed<'_>) -> Row {
        Row {
            decision: done.plan.decision.clone(),
            tokens_before: done.plan.tokens_estimated,
            tokens_after: done.plan.tokens_after,
        }
    }
}

/// What happened to one dataset line.
pub enum LineOutcome {
    /// Compacted: the new line.
    Changed(String),
    Unchanged,
    /// A bad line: echoed unchanged, reported with this message.
    Bad(String),
}

/// What became of a line [`process_line_into`] read: rewritten (the new line appended
/// to the caller's buffer), unchanged, or bad (the message).
#[derive(Debug, PartialEq, Eq)]
pub enum Written {
    Changed,
    Unchanged,
    /// Left as it was by the compaction, and written again with its provenance
    /// (`--provenance`; the new line appended as for `Changed`).
    Annotated,
    Bad(String),
}

/// The output line of a line read through the view, appended to `out`: the line's own
/// bytes around the `messages` array, the kept messages as raw slices, the injected ones
/// as chat messages.
fn splice(text: &str, spans: &view::Spans, done: &Processed<'_>, out: &mut String) {
    let t = &done.transcript;
    out.reserve(text.len() + 4096);
    out.push_str(&text[..spans.array.start]);
    out.push('[');
    let mut first = true;
    for step in steps(t, &done.plan, Walk { chat: true, ..Walk::default() }) {
        let at = out.len();
        if !first {
            out.push(',');
        }
        match step {
            Step::Kept(i) => out.push_str(&text[t.records[t.items[i].record].span.clone()]),
            Step::Injected(m) => push_chat_message(out, m),
            Step::Event(_) | Step::Record(_) => {
                out.truncate(at);
                continue;
            }
        }
        first = false;
    }
    out.push(']');
    out.push_str(&text[spans.array.end..]);
}

/// Whether an OpenAI-format line is read through the borrowed view (the fast path)
/// rather than the canonical one.
pub fn reads_through_view(text: &str) -> bool {
    view::read(text, 1).is_some()
}

/// Processes one dataset line (without its terminator).
pub fn process_line(text: &str, file: &Path, line_no: usize, settings: &Settings) -> Result<LineOutcome> {
    process_line_decided(text, file, line_no, settings, &mut None)
}

/// [`process_line`], and what was done with the row (left `None` for a blank or bad
/// line).
pub fn process_line_decided(
    text: &str,
    file: &Path,
    line_no: usize,
    settings: &Settings,
    decision: &mut Option<Row>,
) -> Result<LineOutcome> {
    let mut out = String::new();
    Ok(match process_line_into(text, file, line_no, settings, decision, &mut out)? {
        Written::Changed | Written::Annotated => LineOutcome::Changed(out),
        Written::Unchanged => LineOutcome::Unchanged,
        Written::Bad(m) => LineOutcome::Bad(m),
    })
}

/// [`process_line_decided`], a rewritten line appended to `out` (a stream's block of
/// output lines, written without a buffer of its own for each line).
pub fn process_line_into(
    text: &str,
    file: &Path,
    line_no: usize,
    settings: &Settings,
    decision: &mut Option<Row>,
    out: &mut String,
) -> Result<Written> {
    if !settings.provenance {
        return process_row(text, file, line_no, settings, decision, out, &mut None);
    }
    // `--provenance`: every row read says where it comes from and what was done, under
    // `rivumi` (a row an earlier run marked gets the new figures).
    let start = out.len();
    let mut prov = None;
    let written = process_row(text, file, line_no, settings, decision, out, &mut prov)?;
    let Some(prov) = prov else { return Ok(written) };
    let changed = written == Written::Changed;
    let row = match written {
        Written::Changed | Written::Annotated => out.split_off(start),
        Written::Unchanged => text.to_string(),
        Written::Bad(m) => return Ok(Written::Bad(m)),
    };
    out.truncate(start);
    let mut v: Map<String, Value> = serde_json::from_str(&row).map_err(|e| Error::Failed(e.to_string()))?;
    v.insert(openhands::INJECTED_KEY.into(), prov);
    out.push_str(&Value::Object(v).to_string());
    // A row the compaction left as it was is counted unchanged, whatever is added to it.
    Ok(if changed { Written::Changed } else { Written::Annotated })
}

/// Where a row comes from and what was done to it (a chat line's provenance, with the
/// file and line of the row).
fn row_provenance(done: &Processed<'_>, file: &Path, line_no: usize) -> Value {
    let mut p = crate::output::chat::provenance(done);
    p["source"] = Value::from(file.display().to_string());
    p["line"] = Value::from(line_no);
    p
}

/// [`process_line_into`] without the provenance: `prov` gets it when asked for.
fn process_row(
    text: &str,
    file: &Path,
    line_no: usize,
    settings: &Settings,
    decision: &mut Option<Row>,
    out: &mut String,
    prov: &mut Option<Value>,
) -> Result<Written> {
    if text.trim().is_empty() {
        return Ok(Written::Unchanged);
    }
    if settings.input_format != InputFormat::Openhands {
        if let Some((t, spans)) = view::read(text, line_no) {
            let done = match engine::process_parsed(t, Path::new("line"), settings) {
                Ok(d) => d,
                // A hook or summarizer that fails fails for every row: the run stops.
                Err(e) if e.stops_a_dataset() => return Err(e),
                Err(e) => return Ok(Written::Bad(format!("{}:{line_no}: {e}", file.display()))),
            };
            if settings.provenance {
                *prov = Some(row_provenance(&done, file, line_no));
            }
            let written = match outcome(&done, file, line_no) {
                Some(LineOutcome::Bad(m)) => Written::Bad(m),
                Some(LineOutcome::Unchanged) => Written::Unchanged,
                Some(LineOutcome::Changed(line)) => {
                    out.push_str(&line);
                    Written::Changed
                }
                None => {
                    splice(text, &spans, &done, out);
                    Written::Changed
                }
            };
            *decision = Some(Row::of(&done));
            return Ok(written);
        }
    }
    Ok(match canonical_decided(text, file, line_no, settings, decision, prov)? {
        LineOutcome::Changed(line) => {
            out.push_str(&line);
            Written::Changed
        }
        LineOutcome::Unchanged => Written::Unchanged,
        LineOutcome::Bad(m) => Written::Bad(m),
    })
}

/// The reference path for one dataset line: the line as a `Value`, mapped to canonical
/// records, read back and mapped again. Bad lines are worded here. [`process_line`]
/// gives the same outcome (kept messages as raw bytes instead of re-serialized).
pub fn process_line_canonical(text: &str, file: &Path, line_no: usize, settings: &Settings) -> Result<LineOutcome> {
    canonical_decided(text, file, line_no, settings, &mut None, &mut None)
}

fn canonical_decided(
    text: &str,
    file: &Path,
    line_no: usize,
    settings: &Settings,
    decision: &mut Option<Row>,
    prov: &mut Option<Value>,
) -> Result<LineOutcome> {
    if text.trim().is_empty() {
        return Ok(LineOutcome::Unchanged);
    }
    let (value, canonical) = match parsed_row(text, settings.input_format) {
        Ok(row) => row,
        Err((column, m)) => return Ok(LineOutcome::Bad(format!("{}:{line_no}:{column}: {m}", file.display()))),
    };
    let name = Path::new("line");
    let done = match engine::process(&canonical, name, settings) {
        Ok(d) => d,
        // A hook or summarizer that fails fails for every row: the run stops.
        Err(e) if e.stops_a_dataset() => return Err(e),
        Err(e) => return Ok(LineOutcome::Bad(format!("{}:{line_no}: {e}", file.display()))),
    };
    *decision = Some(Row::of(&done));
    if settings.provenance {
        *prov = Some(row_provenance(&done, file, line_no));
    }
    // An OpenHands row asked for as a chat line is converted even when nothing changed.
    let convert = settings.input_format == InputFormat::Openhands && settings.output_format == OutputFormat::Openai;
    match outcome(&done, file, line_no) {
        Some(LineOutcome::Unchanged) | None if convert => return Ok(LineOutcome::Changed(chat_line(&done))),
        Some(o) => return Ok(o),
        None => {}
    }
    let line = match settings.input_format {
        InputFormat::Openhands => openhands_from_plan(&value, &done),
        _ => from_plan(&value, &done),
    };
    Ok(LineOutcome::Changed(line.to_string()))
}

/// A line that is not rewritten: refused (a refused checkpoint fails the line, exit 4 at
/// the end, as it fails a file) or unchanged; `None` when the line changes.
fn outcome(done: &Processed<'_>, file: &Path, line_no: usize) -> Option<LineOutcome> {
    let refused = done.plan.decision.reasons.iter().find(|r| r.code == crate::policy::ReasonCode::CheckpointRefused);
    if let Some(r) = refused {
        return Some(LineOutcome::Bad(format!("{}:{line_no}: {}", file.display(), r.message)));
    }
    (!done.plan.changes()).then_some(LineOutcome::Unchanged)
}

/// The canonical form of one dataset row (a line without its terminator), or where and
/// why it cannot be read: (column, message).
pub fn row_canonical(text: &str, format: InputFormat) -> std::result::Result<Vec<u8>, (usize, String)> {
    parsed_row(text, format).map(|(_, canonical)| canonical)
}

/// A dataset row parsed, and its canonical form; or where and why it cannot be read:
/// (column, message). Every reader of rows (run, validate, stats) words it so.
fn parsed_row(text: &str, format: InputFormat) -> std::result::Result<(Value, Vec<u8>), (usize, String)> {
    let value: Value = serde_json::from_str(text).map_err(|e| crate::error::serde_position(&e, text))?;
    let canonical = canonical_line(&value, format).map_err(|m| (1, m))?;
    Ok((value, canonical))
}

/// The canonical form of one dataset line of either dataset format.
fn canonical_line(value: &Value, format: InputFormat) -> std::result::Result<Vec<u8>, String> {
    match format {
        InputFormat::Openhands => {
            let events = value
                .get("history")
                .and_then(Value::as_array)
                .ok_or("expected an evaluation output line with a \"history\" array")?;
            let name = value.get("instance_id").and_then(Value::as_str).unwrap_or("instance");
            // The V1 benchmarks' line keeps the agent's usage per response in `metrics`.
            Ok(openhands::from_events(events, &[], value.get("metrics"), Path::new(name)).to_jsonl())
        }
        _ => to_canonical(value),
    }
}

/// An OpenHands evaluation line after compaction: the events of removed items are left
/// out, every other event is kept as it was, and injected records become user message
/// events marked `"rivumi": "<kind>"`.
fn openhands_from_plan(line: &Value, done: &Processed<'_>) -> Value {
    let events = line.get("history").and_then(Value::as_array).cloned().unwrap_or_default();
    let (t, plan) = (&done.transcript, &done.plan);
    // An item restated after an OpenHands condensation (`<id>~c1`) is its event's.
    let event_id = |i: usize| {
        let id: &str = t.items[i].id.as_ref();
        id.split_once('~').map_or(id, |(event, _)| event)
    };
    let removed: std::collections::HashSet<&str> = plan.removed.iter().map(|&i| event_id(i)).collect();
    let event_of: std::collections::HashMap<String, usize> =
        events.iter().enumerate().map(|(k, e)| (openhands::event_item_id(e, k), k)).collect();
    let event_of_item = |i: usize| event_of.get(event_id(i)).copied();
    let v1 = events.iter().any(crate::formats::openhands_v1::is_event);
    // The replacement goes after the event of the last item it replaces, so that the
    // events in the removed span that are no item (environment events) stay before it.
    let anchor = plan.replacement.as_ref().and_then(|(ri, m)| Some((t.records[*ri].kind_item()?, m)));
    let mut history = Vec::with_capacity(events.len() + plan.appended.len() + 1);
    let mut next = 0; // the first event not written yet
    let mut flush = |history: &mut Vec<Value>, upto: usize| {
        while next <= upto && next < events.len() {
            let e = &events[next];
            if !removed.contains(openhands::event_item_id(e, next).as_str()) {
                history.push(e.clone());
            }
            next += 1;
        }
    };
    for step in steps(t, plan, Walk { chat: true, ..Walk::default() }) {
        match step {
            Step::Kept(i) => {
                if let Some(k) = event_of_item(i) {
                    flush(&mut history, k);
                }
            }
            Step::Injected(m) => {
                if let Some(k) = anchor.filter(|(_, a)| std::ptr::eq(*a, m)).and_then(|(i, _)| event_of_item(i)) {
                    flush(&mut history, k);
                }
                history.push(if v1 { openhands_v1_event(m) } else { openhands_event(m) });
            }
            Step::Event(_) | Step::Record(_) => {}
        }
    }
    flush(&mut history, usize::MAX);
    let mut out: Map<String, Value> = line.as_object().cloned().unwrap_or_default();
    out.insert("history".into(), Value::Array(history));
    Value::Object(out)
}

/// An injected message as a user message of the OpenHands agent SDK (V1).
fn openhands_v1_event(m: &Message) -> Value {
    json!({"id": m.id, "source": "user",
        "llm_message": {"role": "user", "content": [{"type": "text", "text": m.content}]},
        "kind": "MessageEvent", (openhands::INJECTED_KEY): m.kind.as_str()})
}

/// An injected message as an OpenHands user message event.
fn openhands_event(m: &Message) -> Value {
    json!({"source": "user", "action": "message", "message": m.content, "args": {"content": m.content},
        (openhands::INJECTED_KEY): m.kind.as_str()})
}

/// Adds one dataset line to `stats`; a bad line counts as failed and returns its message.
pub fn add_line_stats(
    text: &str,
    file: &Path,
    line_no: usize,
    settings: &Settings,
    stats: &mut crate::stats::Stats,
) -> Option<String> {
    if text.trim().is_empty() {
        return None;
    }
    if settings.input_format != InputFormat::Openhands {
        if let Some((t, _)) = view::read(text, line_no) {
            return match engine::process_parsed(t, Path::new("line"), settings) {
                Ok(done) => {
                    stats.add(&done);
                    None
                }
                Err(e) => {
                    stats.failed += 1;
                    Some(format!("{}:{line_no}: {e}", file.display()))
                }
            };
        }
    }
    // Worded as `run` words the same line.
    let result = parsed_row(text, settings.input_format)
        .map_err(|(column, m)| format!("{}:{line_no}:{column}: {m}", file.display()))
        .and_then(|(_, canonical)| {
            let done = engine::process(&canonical, Path::new("line"), settings)
                .map_err(|e| format!("{}:{line_no}: {e}", file.display()))?;
            stats.add(&done);
            Ok(())
        });
    result.err().inspect(|_| stats.failed += 1)
}

/// The two readings of an OpenAI line side by side, for the tests that hold them equal:
/// the fast path's (the scanner) and the reference's (a parsed value, mapped to
/// canonical records and read back). Each is what its extractor read (field by field,
/// content as its text), the transcript's items, and the decision taken; the scanner's
/// is `None` for a line it hands over, the reference's an error for a bad line.
#[doc(hidden)]
pub fn readings(text: &str, settings: &Settings) -> (Option<Value>, std::result::Result<Value, String>) {
    let name = Path::new("line");
    let fast = view::extract(text).and_then(|(line, _)| {
        let extracted = extracted(&line, |c| (c.text_bytes, crate::transcript::text_of_json(c.raw)));
        let (t, _) = view::read(text, 1)?;
        let done = engine::process_parsed(t, name, settings).ok()?;
        Some(json!({"extracted": extracted, "items": items(&done.transcript), "decision": done.plan.decision}))
    });
    let reference = (|| {
        let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let line = crate::formats::openai::from_value(&value)?;
        let extracted = extracted(&line, |v| {
            let t = crate::transcript::text_of(v);
            (t.len() as u64, t)
        });
        let canonical = to_canonical(&value)?;
        let done = engine::process(&canonical, name, settings).map_err(|e| e.to_string())?;
        Ok(json!({"extracted": extracted, "items": items(&done.transcript), "decision": done.plan.decision}))
    })();
    (fast, reference)
}

/// An extracted line as JSON, field by field, its contents as `(bytes, text)`.
fn extracted<C>(line: &crate::formats::openai::Line<'_, C>, text: impl Fn(&C) -> (u64, String)) -> Value {
    let messages: Vec<Value> = line
        .messages
        .iter()
        .map(|m| {
            let calls = m.tool_calls.as_ref().map(|calls| {
                calls.iter().map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments})).collect::<Vec<_>>()
            });
            let function_call =
                m.function_call.as_ref().map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments}));
            json!({"role": m.role, "content": m.content.as_ref().map(&text), "tool_calls": calls,
                "function_call": function_call, "type": m.kind, "tool_call_id": m.tool_call_id, "name": m.name, "usage": m.usage})
        })
        .collect();
    json!({"messages": messages, "usage": line.usage})
}

/// A transcript's items as JSON, every field the policy reads.
fn items(t: &crate::transcript::Transcript<'_>) -> Value {
    use crate::transcript::ItemKind;
    let items: Vec<Value> = t
        .items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let kind = match &item.kind {
                ItemKind::Message { role, calls, usage } => {
                    let calls: Vec<Value> = calls
                        .iter()
                        .map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
                        .collect();
                    json!({"role": role.as_str(), "calls": calls, "usage": usage})
                }
                ItemKind::ToolResult { call_id, name, is_error, exit_code } => {
                    json!({"call_id": call_id, "name": name, "is_error": is_error, "exit_code": exit_code})
                }
            };
            json!({"id": item.id, "turn": item.turn, "synthetic": item.synthetic.as_ref().map(crate::transcript::Mark::as_str),
                "text_bytes": item.text_bytes, "text": crate::transcript::item_text(t, i), "kind": kind,
                "call_item": item.call_item})
        })
        .collect();
    Value::Array(items)
}

/// The rows of a dataset, in order: each row's line number and its text (or why it is
/// not text), streamed; `only` keeps one row. Blank lines are not rows. Returns the
/// number of lines read.
pub fn for_each_row(
    input: &crate::inputs::Input,
    only: Option<u64>,
    mut f: impl FnMut(usize, std::result::Result<&str, (usize, String)>) -> Result<()>,
) -> Result<usize> {
    let mut reader = input.open()?.into_reader();
    let limit = crate::source::max_input_bytes();
    let mut raw = Vec::new();
    let mut n = 0usize;
    loop {
        raw.clear();
        let read = crate::source::read_line_bounded(&mut reader, &mut raw, limit)
            .map_err(|e| crate::source::broken_at(&input.path, n + 1, &raw, &e))?;
        if read == 0 {
            return Ok(n);
        }
        n += 1;
        if only.is_some_and(|k| k != n as u64) {
            continue;
        }
        match line_text(&raw, n) {
            Ok(text) if text.trim().is_empty() => continue,
            Ok(text) => f(n, Ok(text))?,
            Err(column) => f(n, Err((column, crate::error::NOT_UTF8.to_string())))?,
        }
        if only.is_some() {
            return Ok(n);
        }
    }
}
