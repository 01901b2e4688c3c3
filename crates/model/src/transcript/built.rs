//! A transcript built from an importer's typed records (never from the text they are
//! written as): the records' canonical JSON Lines are the bytes the writers copy and
//! the spans point into; the items, events and session come from the records
//! themselves. The checks are the canonical reader's (an id used twice is a bad line).

use super::reader::{empty, line_bounds};
use super::record::{CanonicalRecord, MessageRecord, ToolResultRecord};
use super::{Call, EventRef, Item, ItemKind, Mark, Record, RecordKind, Transcript};
use crate::error::{Error, Result};
use rustc_hash::FxHashMap as HashMap;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::path::Path;

/// The transcript of `records`, whose canonical JSON Lines are `src`: the session line
/// (`session`, with its `type`) first, then one line a record, in order. `file` names
/// the input in errors, whose lines are those of `src`.
pub fn from_records<'a>(
    src: &'a [u8],
    session: &Map<String, Value>,
    records: &'a [CanonicalRecord],
    file: &Path,
) -> Result<Transcript<'a>> {
    let mut t = empty(src, 0);
    t.records.reserve_exact(records.len() + 1);
    t.items.reserve_exact(records.iter().filter(|r| r.is_item()).count());
    let (mut start, _) = line_bounds(src, 0);
    t.records.push(Record { span: 0..start, line: 1, kind: RecordKind::Session });
    t.session = Some(session.clone());
    let mut ids: HashMap<&'a str, usize> = HashMap::default();
    for (k, r) in records.iter().enumerate() {
        let line = k + 2;
        let (end, _) = line_bounds(src, start);
        let at = t.records.len();
        let kind = match r {
            CanonicalRecord::Message(m) => item(&mut t, &mut ids, &m.id, message(m, at), file, line)?,
            CanonicalRecord::ToolResult(r) => item(&mut t, &mut ids, &r.id, result(r, at), file, line)?,
            CanonicalRecord::Event(e) => RecordKind::Event(Box::new(EventRef {
                name: Cow::Borrowed(e.name.as_str()),
                id: Some(Cow::Borrowed(&e.id)),
                paths: strings(e.fields.get("paths")),
                trigger: e.fields.get("trigger").and_then(Value::as_str).map(str::to_string),
                pre_tokens: e.fields.get("pre_tokens").and_then(Value::as_u64),
            })),
        };
        t.records.push(Record { span: start..end, line, kind });
        start = end;
    }
    super::link_results(&mut t);
    Ok(t)
}

/// Adds an item, its id (`id`) checked as the canonical reader checks it.
fn item<'a>(
    t: &mut Transcript<'a>,
    ids: &mut HashMap<&'a str, usize>,
    id: &'a str,
    item: Item<'a>,
    file: &Path,
    line: usize,
) -> Result<RecordKind<'a>> {
    if let Some(first) = ids.insert(id, line) {
        return Err(Error::bad_line(file, line, 1, format!("duplicate id {id:?} (first used on line {first})")));
    }
    t.items.push(item);
    Ok(RecordKind::Item(t.items.len() - 1))
}

fn message(m: &MessageRecord, record: usize) -> Item<'_> {
    let calls: Vec<Call<'_>> = m
        .tool_calls
        .iter()
        .flatten()
        .map(|c| Call {
            id: Cow::Borrowed(&c.id),
            name: Cow::Borrowed(&c.name),
            arguments: Cow::Borrowed(c.arguments.get()),
        })
        .collect();
    Item {
        record,
        id: Cow::Borrowed(&m.id),
        turn: Some(Cow::Borrowed(&m.turn)),
        synthetic: m.synthetic.as_deref().map(|s| Mark::of(Cow::Borrowed(s))),
        text_bytes: text_len(&m.content),
        content: None,
        written: None,
        call_item: None,
        kind: ItemKind::Message { role: m.role, calls, usage: m.usage },
    }
}

fn result(r: &ToolResultRecord, record: usize) -> Item<'_> {
    Item {
        record,
        id: Cow::Borrowed(&r.id),
        turn: Some(Cow::Borrowed(&r.turn)),
        synthetic: None,
        text_bytes: text_len(&r.content),
        content: None,
        written: None,
        call_item: None,
        kind: ItemKind::ToolResult {
            call_id: Cow::Borrowed(&r.call_id),
            name: r.name.as_deref().map(Cow::Borrowed),
            is_error: r.is_error,
            exit_code: r.exit_code,
        },
    }
}

/// The UTF-8 length of a content value's text, as the reader measures it: a string's,
/// or the sum of its blocks' `text`s.
fn text_len(content: &Value) -> u64 {
    match content {
        Value::String(s) => s.len() as u64,
        Value::Array(blocks) => blocks.iter().filter_map(|b| b.get("text")?.as_str()).map(|s| s.len() as u64).sum(),
        _ => 0,
    }
}

/// The strings of a list (an event's `paths`).
fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
}
