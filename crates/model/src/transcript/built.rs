//! A transcript built from an importer's typed records (never from the text they are
//! written as): the records' canonical JSON Lines are the bytes the writers copy and
//! the spans point into; the items, events and session come from the records
//! themselves. The checks are the canonical reader's (an id used twice is a bad line).

use super::reader::{empty, line_bounds};
use super::record::{CanonicalRecord, MessageRecord, TextLen, ToolResultRecord};
use super::{Call, EventRef, Item, Mark, Record, RecordKind, Transcript};
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
    records: &'a [CanonicalRecord<'_>],
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
            CanonicalRecord::Message(m) => item(&mut t, &mut ids, &m.id, Item::of_message(message(m), at), file, line)?,
            CanonicalRecord::ToolResult(r) => {
                item(&mut t, &mut ids, &r.id, Item::of_tool_result(result(r), at), file, line)?
            }
            CanonicalRecord::Event(e) => RecordKind::Event(Box::new(EventRef::of(
                Cow::Borrowed(&e.name),
                e.id.as_deref().map(Cow::Borrowed),
                &e.fields,
            ))),
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

/// The same message borrowing the record's strings, its content measured as the reader
/// measures it.
fn message<'a>(m: &'a MessageRecord<'_>) -> MessageRecord<'a, Option<TextLen>> {
    MessageRecord {
        id: Cow::Borrowed(&m.id),
        turn: m.turn.as_deref().map(Cow::Borrowed),
        role: m.role,
        content: Some(TextLen::of(&m.content)),
        synthetic: m.synthetic.as_ref().map(|s| Mark::of(Cow::Borrowed(s.as_str()))),
        tool_calls: m.tool_calls.as_ref().map(|calls| {
            calls
                .iter()
                .map(|c| Call {
                    id: Cow::Borrowed(&c.id),
                    name: Cow::Borrowed(&c.name),
                    arguments: Cow::Borrowed(&c.arguments),
                })
                .collect()
        }),
        usage: m.usage,
        summarized_usage: m.summarized_usage,
        occupancy_after: m.occupancy_after,
        occupancy_before: m.occupancy_before,
        summarized_turn_ids: m.summarized_turn_ids.clone(),
        retained_turn_ids: m.retained_turn_ids.clone(),
    }
}

/// The same tool result borrowing the record's strings, its content measured.
fn result<'a>(r: &'a ToolResultRecord<'_>) -> ToolResultRecord<'a, Option<TextLen>> {
    ToolResultRecord {
        id: Cow::Borrowed(&r.id),
        turn: r.turn.as_deref().map(Cow::Borrowed),
        call_id: Cow::Borrowed(&r.call_id),
        name: r.name.as_deref().map(Cow::Borrowed),
        content: Some(TextLen::of(&r.content)),
        is_error: r.is_error,
        exit_code: r.exit_code,
    }
}
