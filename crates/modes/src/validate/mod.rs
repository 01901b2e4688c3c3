//! `validate`: every broken invariant of a canonical transcript, with file and line
//! (SPEC 9). Unlike `run`, it keeps going past a bad line to report all of them.

mod inputs;

pub use inputs::{validate_inputs, Report};

use crate::transcript::{self, Event, RecordKind, Synthetic, Transcript};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// One broken invariant.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Violation {
    pub file: String,
    pub line: usize,
    pub code: &'static str,
    pub message: String,
}

/// The invariant codes `validate` reports, with what each means.
pub const CODES: &[(&str, &str)] = &[
    (
        "bad_line",
        "a line that is not a valid record (JSON, UTF-8, type, object, truncation, session placement, a session \
         value run refuses)",
    ),
    ("duplicate_id", "an item id used twice"),
    ("result_without_call", "a tool result whose call is not in the transcript"),
    ("result_of_summarized_call", "a tool result whose call was summarized away by a fallback"),
    ("multiple_fallbacks", "more than one history_summary_fallback message"),
    ("multiple_reminders", "more than one pressure_reminder message"),
    ("checkpoint_turns_overlap", "a checkpoint whose summarized and retained turn ids overlap"),
    ("checkpoint_occupancy_grows", "a checkpoint whose occupancy_after exceeds occupancy_before"),
    ("compaction_never_completed", "a compaction_requested event followed by more items but no compaction_completed"),
    ("duplicate_uuid", "Claude Code: a uuid used by two records"),
    ("dangling_parent", "Claude Code: a parentUuid or logicalParentUuid that names no record of the file"),
    ("parent_cycle", "Claude Code: a chain of parentUuid that comes back to itself"),
    ("ordinal_out_of_order", "Codex: a record whose ordinal is smaller than the one before"),
    (
        "call_without_output",
        "Codex: a call in a replacement_history whose output the rollout records but the history left out",
    ),
    ("call_id_reused_in_history", "Codex: two calls of one replacement_history that share a call_id"),
];

/// Invariants of a session in an agent's own format (what `--output-format
/// claude-code|codex` writes, or the agent itself), checked on the file as it is: ids
/// and parent chains for Claude Code, record numbers and replacement histories for
/// Codex. Lines are the file's.
pub fn agent_file(raw: &[u8], format: crate::formats::InputFormat, file: &Path) -> Vec<Violation> {
    use crate::formats::InputFormat;
    let Ok(lines) = crate::formats::common::json_lines(raw, file) else { return Vec::new() };
    let shown = file.display().to_string();
    let mut out = Vec::new();
    let mut v = |line: usize, code: &'static str, message: String| {
        out.push(Violation { file: shown.clone(), line, code, message: crate::ui::escape(&message) });
    };
    match format {
        InputFormat::ClaudeCode => claude_code_file(&lines, &mut v),
        InputFormat::Codex => codex_file(&lines, &mut v),
        _ => {}
    }
    out
}

fn claude_code_file(lines: &[(usize, Value)], v: &mut impl FnMut(usize, &'static str, String)) {
    let mut line_of: HashMap<&str, usize> = HashMap::new();
    let mut first_of: HashMap<&str, &Value> = HashMap::new();
    for (n, r) in lines {
        if let Some(u) = r.get("uuid").and_then(Value::as_str) {
            if let Some(first) = line_of.insert(u, *n) {
                line_of.insert(u, first);
                // A record logged again when the session was resumed is the same record.
                if !first_of.get(u).is_some_and(|f| crate::formats::claude_code::relogged(f, r)) {
                    v(*n, "duplicate_uuid", format!("uuid {u:?} was first used on line {first}"));
                }
            } else {
                first_of.insert(u, r);
            }
        }
    }
    // The parent of a uuid is its first record's: a second record of it (reported
    // above) does not make chains of its own.
    let mut parent_of: HashMap<&str, &str> = HashMap::new();
    for (_, r) in lines {
        if let Some(u) = r.get("uuid").and_then(Value::as_str) {
            if first_of.get(u).is_some_and(|f| std::ptr::eq(*f, r)) {
                if let Some(p) = r.get("parentUuid").and_then(Value::as_str) {
                    parent_of.insert(u, p);
                }
            }
        }
    }
    for (n, r) in lines {
        for key in ["parentUuid", "logicalParentUuid"] {
            if let Some(p) = r.get(key).and_then(Value::as_str) {
                if !line_of.contains_key(p) {
                    v(*n, "dangling_parent", format!("{key} {p:?} names no record of this file"));
                }
            }
        }
        // A walk up the parents that meets this record again (bounded by the file).
        let Some(start) = r.get("uuid").and_then(Value::as_str) else { continue };
        let mut at = start;
        for _ in 0..=parent_of.len() {
            match parent_of.get(at) {
                Some(&p) if p == start => {
                    v(*n, "parent_cycle", format!("the parents of {start:?} come back to it"));
                    break;
                }
                Some(&p) => at = p,
                None => break,
            }
        }
    }
}

fn codex_file(lines: &[(usize, Value)], v: &mut impl FnMut(usize, &'static str, String)) {
    // A replacement history that keeps a call without the output the rollout records
    // for it split the two. A call answered nowhere (the session stopped before its
    // output) is kept as the rollout has it: Codex gives it an "aborted" output when it
    // builds its next request. So an id counts as answered when the rollout's own items
    // (a `response_item`'s payload, a bare item of the rollouts before the `{type,
    // payload}` wrapper; a replacement history only restates them) answer every call of
    // it: with a `call_id` reused, a later call may be the one left unanswered.
    let mut tally: HashMap<&str, (usize, usize)> = HashMap::new();
    for (_, r) in lines {
        let item = match r.get("type").and_then(Value::as_str) {
            Some("response_item") => r.get("payload"),
            Some("compacted") => None,
            _ => Some(r),
        };
        let Some(item) = item else { continue };
        let Some(id) = item.get("call_id").and_then(Value::as_str) else { continue };
        let (calls, outputs) = tally.entry(id).or_default();
        if crate::formats::codex::is_call(item) {
            *calls += 1;
        } else if crate::formats::codex::is_output(item) {
            *outputs += 1;
        }
    }
    let answered = |id: &str| tally.get(id).is_some_and(|&(calls, outputs)| outputs > 0 && outputs >= calls);
    let mut last: Option<u64> = None;
    for (n, r) in lines {
        if let Some(o) = r.get("ordinal").and_then(Value::as_u64) {
            if last.is_some_and(|l| o < l) {
                v(*n, "ordinal_out_of_order", format!("ordinal {o} after {}", last.unwrap_or(0)));
            }
            last = Some(o);
        }
        if r.get("type").and_then(Value::as_str) != Some("compacted") {
            continue;
        }
        let history = r.get("payload").and_then(|p| p.get("replacement_history")).and_then(Value::as_array);
        let mut calls: Vec<&str> = Vec::new();
        let mut outputs: std::collections::HashSet<&str> = std::collections::HashSet::new();
        for h in history.into_iter().flatten() {
            let Some(id) = h.get("call_id").and_then(Value::as_str) else { continue };
            if crate::formats::codex::is_output(h) {
                outputs.insert(id);
            } else if crate::formats::codex::is_call(h) {
                if calls.contains(&id) {
                    v(*n, "call_id_reused_in_history", format!("two calls share call_id {id:?}"));
                }
                calls.push(id);
            }
        }
        for id in calls.into_iter().filter(|id| !outputs.contains(id) && answered(id)) {
            v(*n, "call_without_output", format!("call {id:?} has no output in the replacement_history"));
        }
    }
}

/// Validates canonical bytes; `file` names the input in the report.
pub fn validate(src: &[u8], file: &Path) -> Vec<Violation> {
    // A transcript that parses whole has no bad line: check the rest directly.
    if let Ok(t) = transcript::parse(src, file) {
        return parsed(&t, file);
    }
    let shown = file.display().to_string();
    let mut out = Vec::new();
    let mut v = |line: usize, code: &'static str, message: String| {
        out.push(Violation { file: shown.clone(), line, code, message });
    };
    // Pass 1: each line on its own, so one bad line does not hide the next.
    let mut good = Vec::with_capacity(src.len());
    let mut line_of: Vec<usize> = Vec::new();
    let mut ids: HashMap<String, usize> = HashMap::new();
    let mut seen_record = false;
    for (k, raw) in split_lines(src).into_iter().enumerate() {
        let n = k + 1;
        let body = if k == 0 { raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw) } else { raw };
        let t = match transcript::parse(body, file) {
            Ok(t) => t,
            Err(e) => {
                v(n, "bad_line", message_of(&e));
                continue;
            }
        };
        if matches!(t.records.first().map(|r| &r.kind), Some(RecordKind::Session)) && seen_record {
            v(n, "bad_line", "a \"session\" record is only allowed as the first record".into());
            continue;
        }
        if let Some((_, message)) = session_value(&t, file) {
            v(n, "bad_line", message);
        }
        if t.records.iter().all(|r| matches!(r.kind, RecordKind::Blank)) {
            continue; // blank lines hold no record (and runs of them are one record)
        }
        seen_record = true;
        if let Some(item) = t.items.first() {
            if let Some(first) = ids.insert(item.id.to_string(), n) {
                v(n, "duplicate_id", format!("id {:?} was first used on line {first}", item.id));
                continue;
            }
        }
        good.extend_from_slice(body);
        if !body.ends_with(b"\n") {
            good.push(b'\n');
        }
        line_of.push(n);
    }
    // Pass 2: the invariants between records, over the lines that parsed.
    let Ok(t) = transcript::parse(&good, file) else { return out };
    let at = |record: usize| line_of.get(record).copied().unwrap_or(0);
    semantic(&t, &at, &mut v);
    out
}

/// Validates a transcript that was read whole (it has no bad line): its session
/// record's values and the invariants between its records.
pub fn parsed(t: &Transcript<'_>, file: &Path) -> Vec<Violation> {
    let shown = file.display().to_string();
    let mut out = Vec::new();
    let mut v = |line: usize, code: &'static str, message: String| {
        out.push(Violation { file: shown.clone(), line, code, message });
    };
    if let Some((line, message)) = session_value(t, file) {
        v(line, "bad_line", message);
    }
    semantic(t, &|record| t.records.get(record).map_or(0, |r| r.line), &mut v);
    out
}

/// A value of the session record that `run` refuses, checked as the record alone lays
/// it (under a flag or `--config` that sets the same key, `run` would not read it): its
/// line, and the message with its column.
fn session_value(t: &Transcript<'_>, file: &Path) -> Option<(usize, String)> {
    let session = t.session.as_ref()?;
    let mut b = crate::config::Builder::default();
    let e = b.session(session, file).and_then(|()| b.build_for_session(file, &|p| t.session_value_at(p))).err()?;
    let line = match &e {
        crate::error::Error::BadLine { at, .. } => at.line,
        _ => t.records.first().map_or(1, |r| r.line),
    };
    Some((line, message_of(&e)))
}

fn message_of(e: &crate::error::Error) -> String {
    match e {
        crate::error::Error::BadLine { at, message } => format!("column {}: {message}", at.column),
        other => other.to_string(),
    }
}

fn split_lines(src: &[u8]) -> Vec<&[u8]> {
    src.split_inclusive(|b| *b == b'\n').collect()
}

fn semantic(t: &Transcript<'_>, at: &dyn Fn(usize) -> usize, v: &mut dyn FnMut(usize, &'static str, String)) {
    let (mut fallbacks, mut reminders) = (0, 0);
    for (i, item) in t.items.iter().enumerate() {
        let line = at(item.record);
        if item.is_synthetic(Synthetic::HistorySummaryFallback) {
            fallbacks += 1;
            if fallbacks > 1 {
                v(
                    line,
                    "multiple_fallbacks",
                    "a second history_summary_fallback message; the fallback runs at most once".into(),
                );
            }
        }
        if item.is_synthetic(Synthetic::PressureReminder) {
            reminders += 1;
            if reminders > 1 {
                v(line, "multiple_reminders", "a second pressure_reminder message; the reminder is one-shot".into());
            }
        }
        if item.is_synthetic(Synthetic::Checkpoint) {
            checkpoint(t, item.record, line, v);
        }
        if let Some(cid) = item.result_call_id() {
            if t.orphan_results.contains(&i) {
                // The fallback never splits a call from its results, so an unanswered
                // result after a summary lost its call to that summary.
                let why = if fallbacks > 0 { "result_of_summarized_call" } else { "result_without_call" };
                let msg = if why == "result_of_summarized_call" {
                    format!("tool result {:?} answers call {cid:?}, which a fallback summarized away", item.id)
                } else {
                    format!("tool result {:?} answers call {cid:?}, which is not in the transcript", item.id)
                };
                v(line, why, msg);
            }
        }
    }
    never_completed(t, at, v);
}

fn checkpoint(t: &Transcript<'_>, record: usize, line: usize, v: &mut dyn FnMut(usize, &'static str, String)) {
    let Some(i) = t.records[record].kind_item() else { return };
    let Some(w) = t.items[i].written.as_deref() else { return };
    let (summ, kept) = (&w.summarized_turn_ids, &w.retained_turn_ids);
    let overlap: Vec<&String> = summ.iter().filter(|s| kept.contains(s)).collect();
    if !overlap.is_empty() {
        v(
            line,
            "checkpoint_turns_overlap",
            format!(
                "turn ids both summarized and retained: {}",
                overlap.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            ),
        );
    }
    if let (Some(b), Some(a)) = (w.occupancy_before, w.occupancy_after) {
        if a > b {
            v(line, "checkpoint_occupancy_grows", format!("occupancy_after {a} exceeds occupancy_before {b}"));
        }
    }
}

/// A request followed by more items but no completion with its id.
fn never_completed(t: &Transcript<'_>, at: &dyn Fn(usize) -> usize, v: &mut dyn FnMut(usize, &'static str, String)) {
    let mut open: Vec<(String, usize, bool)> = Vec::new(); // id, record, items after it
    for (ri, r) in t.records.iter().enumerate() {
        match &r.kind {
            RecordKind::Event(e) if Event::CompactionRequested.is(&e.name) => {
                open.push((e.id.as_deref().unwrap_or("").to_string(), ri, false));
            }
            RecordKind::Event(e) if Event::CompactionCompleted.is(&e.name) => {
                let id = e.id.as_deref().unwrap_or("");
                open.retain(|(o, _, _)| o != id);
            }
            RecordKind::Item(i) if t.items[*i].is_input() => open.iter_mut().for_each(|o| o.2 = true),
            _ => {}
        }
    }
    for (id, ri, followed) in open {
        if followed {
            v(
                at(ri),
                "compaction_never_completed",
                format!("compaction request {id:?} is followed by more items but never completed"),
            );
        }
    }
}
