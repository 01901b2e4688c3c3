//! `validate`: every broken invariant of a canonical transcript, with file and line
//! (SPEC 9). Unlike `run`, it keeps going past a bad line to report all of them.

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
    ("bad_line", "a line that is not a valid record (JSON, UTF-8, type, object, truncation, session placement)"),
    ("duplicate_id", "an item id used twice"),
    ("result_without_call", "a tool result whose call is not in the transcript"),
    ("result_of_summarized_call", "a tool result whose call was summarized away by a fallback"),
    ("multiple_fallbacks", "more than one history_summary_fallback message"),
    ("multiple_reminders", "more than one pressure_reminder message"),
    ("checkpoint_turns_overlap", "a checkpoint whose summarized and retained turn ids overlap"),
    ("checkpoint_occupancy_grows", "a checkpoint whose occupancy_after exceeds occupancy_before"),
    ("compaction_never_completed", "a compaction_requested event followed by more items but no compaction_completed"),
];

/// Validates canonical bytes; `file` names the input in the report.
pub fn validate(src: &[u8], file: &Path) -> Vec<Violation> {
    let shown = file.display().to_string();
    let mut out = Vec::new();
    let mut v = |line: usize, code: &'static str, message: String| {
        out.push(Violation { file: shown.clone(), line, code, message });
    };
    // A transcript that parses whole has no bad line: check the rest directly.
    if let Ok(t) = transcript::parse(src, file) {
        semantic(&t, &|record| t.records.get(record).map_or(0, |r| r.line), &mut v);
        return out;
    }
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

fn field(t: &Transcript<'_>, record: usize, key: &str) -> Value {
    serde_json::from_str::<Value>(t.line_text(record)).ok().and_then(|v| v.get(key).cloned()).unwrap_or(Value::Null)
}

fn checkpoint(t: &Transcript<'_>, record: usize, line: usize, v: &mut dyn FnMut(usize, &'static str, String)) {
    let list = |k: &str| -> Vec<String> {
        field(t, record, k).as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_string)).collect()
    };
    let (summ, kept) = (list("summarized_turn_ids"), list("retained_turn_ids"));
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
    let (b, a) = (field(t, record, "occupancy_before").as_u64(), field(t, record, "occupancy_after").as_u64());
    if let (Some(b), Some(a)) = (b, a) {
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
            RecordKind::Event { name, id } if Event::CompactionRequested.is(name) => {
                open.push((id.as_deref().unwrap_or("").to_string(), ri, false));
            }
            RecordKind::Event { name, id } if Event::CompactionCompleted.is(name) => {
                let id = id.as_deref().unwrap_or("");
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
