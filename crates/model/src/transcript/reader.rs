//! Reads canonical JSONL into a [`Transcript`] without building a JSON tree per line:
//! each record is read into its typed record ([`super::record`]), borrowing its strings
//! from the input and measuring its content's text rather than keeping it (the
//! validating scanner's fast path, or serde's derive), then becomes an item or an event.

use super::fast;
use super::record::{EventRecord, MessageRecord, TextLen, ToolResultRecord};
use super::{id_hash, EventRef, Item, Record, RecordKind, Transcript};
use crate::error::{Error, Result};
use hashbrown::hash_table::Entry;
use hashbrown::HashTable;
use serde::de::IgnoredAny;
use serde::Deserialize;
use std::borrow::Cow;
use std::path::Path;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The longest string of an item copied out of a mapped input ([`Item::own_short_strings`]):
/// ids, names and most call arguments are far shorter; a file's whole text as an edit's
/// argument stays in the input, read again when needed.
const OWNED_UP_TO: usize = 4096;

/// Inputs larger than this are parsed in chunks of about this size, in parallel.
const CHUNK_BYTES: usize = 1 << 20;

/// Parses a canonical transcript. `file` only names the input in error messages.
/// Large inputs are cut at line boundaries and the pieces parsed on every core; the
/// pieces are then joined in order, so errors and ids are checked in file order.
pub fn parse<'a>(src: &'a [u8], file: &Path) -> Result<Transcript<'a>> {
    parse_in_chunks(src, file, CHUNK_BYTES)
}

/// `parse` with a chosen chunk size (tests use tiny chunks to cross every boundary).
pub fn parse_in_chunks<'a>(src: &'a [u8], file: &Path, chunk_bytes: usize) -> Result<Transcript<'a>> {
    let bom = if src.starts_with(BOM) { BOM.len() } else { 0 };
    let chunks = split(src, bom, chunk_bytes.max(1));
    let mut t = empty(src, bom);
    // The items' ids seen so far: the item and the line of each, found by its hash.
    let mut ids: HashTable<(usize, usize)> = HashTable::new();
    let threads = crate::batch::threads();
    let mut failed = None;
    // Lines before the chunk being joined: a chunk numbers its own lines from 1, so no
    // pass over the whole input comes before the parse.
    let mut lines_before = 0;
    // Eight pieces per thread may be parsed ahead of the one being joined: with fewer,
    // the other threads wait while this one parses a piece of its own between joins.
    // What is ahead is a few MB of pages not given back yet.
    crate::batch::map_ordered(
        &chunks,
        threads,
        threads * 8,
        |range| parse_chunk(src, range, file),
        |k, (chunk, lines, error)| {
            reserve_projected(&mut t, &mut ids, &chunk, chunks[k].end - bom, src.len() - bom);
            let first = t.items.len();
            let error = error.map(|e| e.shift_line(lines_before));
            match join(&mut t, &mut ids, chunk, lines_before, file).err().or(error) {
                None => {
                    lines_before += lines;
                    link_from(&mut t, first);
                    true
                }
                Some(e) => {
                    failed = Some(e);
                    false
                }
            }
        },
    );
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(t)
}

/// Room for a chunk's records and items (and ids) in the transcript's, when they have
/// none left: as many as the chunks so far hold per byte, projected over the input
/// (`done` of `total` bytes). Vectors grown by doubling would hold up to twice what they
/// need; sized by line count, a file of blank lines would ask for gigabytes.
fn reserve_projected<'a>(
    t: &mut Transcript<'a>,
    ids: &mut HashTable<(usize, usize)>,
    chunk: &Transcript<'a>,
    done: usize,
    total: usize,
) {
    // What `need` entries after `done` bytes come to over all `total` (never fewer).
    let projected = |need: usize| ((need as u128 * total as u128 / done.max(1) as u128) as usize).max(need);
    // Room for `add` more, when there is none: as many as projected.
    let room = |v_len: usize, cap: usize, add: usize| (cap < v_len + add).then(|| projected(v_len + add) - v_len);
    if let Some(more) = room(t.records.len(), t.records.capacity(), chunk.records.len()) {
        t.records.reserve_exact(more);
    }
    if let Some(more) = room(t.items.len(), t.items.capacity(), chunk.items.len()) {
        t.items.reserve_exact(more);
    }
    if let Some(more) = room(ids.len(), ids.capacity(), chunk.items.len()) {
        ids.reserve(more, |&(g, _)| id_hash(&t.items[g].id));
    }
    // The map from call ids to their items, which the chunks are linked into as they come.
    let calls = chunk.items.iter().map(|i| i.calls().len()).sum::<usize>();
    if let Some(more) = room(t.call_owner.len(), t.call_owner.capacity(), calls) {
        let items = &t.items;
        t.call_owner.reserve(more, |&at| id_hash(call_id(items, at)));
    }
}

/// Appends a parsed chunk to the transcript, its indices made the transcript's. The
/// records before a chunk's bad line are checked here first, so an earlier duplicate id
/// is reported before the chunk's own error.
fn join<'a>(
    t: &mut Transcript<'a>,
    ids: &mut HashTable<(usize, usize)>,
    chunk: Transcript<'a>,
    lines_before: usize,
    file: &Path,
) -> Result<()> {
    let (record_offset, item_offset) = (t.records.len(), t.items.len());
    // The id of item `g` of the transcript, joined or in this chunk.
    let id_of = |g: usize| -> &str {
        if g < item_offset {
            &t.items[g].id
        } else {
            &chunk.items[g - item_offset].id
        }
    };
    for mut r in chunk.records {
        r.line += lines_before;
        match &mut r.kind {
            RecordKind::Item(i) => {
                let id = &*chunk.items[*i].id;
                match ids.entry(id_hash(id), |&(g, _)| id_of(g) == id, |&(g, _)| id_hash(id_of(g))) {
                    Entry::Occupied(first) => {
                        let msg = format!("duplicate id {id:?} (first used on line {})", first.get().1);
                        return Err(Error::bad_line(file, r.line, 1, msg));
                    }
                    Entry::Vacant(slot) => {
                        slot.insert((item_offset + *i, r.line));
                    }
                }
                *i += item_offset;
            }
            RecordKind::Session if t.records.iter().any(|r| !matches!(r.kind, RecordKind::Blank)) => {
                return Err(Error::bad_line(
                    file,
                    r.line,
                    1,
                    "a \"session\" record is only allowed as the first record",
                ));
            }
            _ => {}
        }
        t.records.push(r);
    }
    t.items.extend(chunk.items.into_iter().map(|mut item| {
        item.record += record_offset;
        item
    }));
    t.session = t.session.take().or(chunk.session);
    t.unknown_records += chunk.unknown_records;
    Ok(())
}

pub(super) fn empty(src: &[u8], bom: usize) -> Transcript<'_> {
    Transcript {
        src,
        bom,
        records: Vec::new(),
        items: Vec::new(),
        session: None,
        unknown_records: 0,
        orphan_results: Vec::new(),
        call_owner: HashTable::new(),
    }
}

/// Byte ranges of about `CHUNK_BYTES` that end on line ends.
fn split(src: &[u8], bom: usize, chunk_bytes: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = bom;
    while start < src.len() || out.is_empty() {
        let target = (start + chunk_bytes).min(src.len());
        let end = if target == src.len() {
            target
        } else {
            memchr::memchr(b'\n', &src[target..]).map_or(src.len(), |off| target + off + 1)
        };
        out.push(start..end);
        start = end;
    }
    out
}

/// Parses the lines in `range`, numbering them from 1, up to the first bad line
/// (returned beside what came before it), and counts them. Line numbers and item and
/// record indices are local to the chunk until `parse` joins the chunks.
fn parse_chunk<'a>(
    src: &'a [u8],
    range: &std::ops::Range<usize>,
    file: &Path,
) -> (Transcript<'a>, usize, Option<Error>) {
    let mut t = empty(src, 0);
    // Room for a record per KB (the piece's vectors go once joined): most pieces need no
    // more, and none is copied as it grows from nothing.
    let room = range.len() / 1024 + 16;
    (t.records, t.items) = (Vec::with_capacity(room), Vec::with_capacity(room));
    let mut lines = 0;
    let error = parse_lines(&mut t, src, range.clone(), &mut lines, file).err();
    // A mapped input's pages go back once parsed, here on the parsing thread: what
    // every later pass reads of each item (the join included) is copied out first, so
    // nothing faults them in again but a long argument or a preview read on purpose.
    let piece = &src[range.clone()];
    if crate::mapped::is_mapped(piece) {
        for item in &mut t.items {
            item.own_short_strings(OWNED_UP_TO);
        }
        crate::mapped::release(piece);
    }
    (t, lines, error)
}

fn parse_lines<'a>(
    t: &mut Transcript<'a>,
    src: &'a [u8],
    range: std::ops::Range<usize>,
    line_no: &mut usize,
    file: &Path,
) -> Result<()> {
    let mut start = range.start;
    while start < range.end {
        *line_no += 1;
        let line_no = *line_no;
        let (end, text_end) = line_bounds(src, start);
        let is_last = end == src.len();
        let text = utf8_line(&src[start..text_end], file, line_no)?;
        let kind = parse_record(t, text, file, line_no, is_last && end == text_end)?;
        match (t.records.last_mut(), &kind) {
            // A run of blank lines is one record: memory does not grow with blank lines.
            (Some(prev), RecordKind::Blank) if matches!(prev.kind, RecordKind::Blank) => prev.span.end = end,
            _ => t.records.push(Record { span: start..end, line: line_no, kind }),
        }
        start = end;
    }
    Ok(())
}

/// Where the line starting at `start` ends (after its terminator) and where its text ends.
pub(super) fn line_bounds(src: &[u8], start: usize) -> (usize, usize) {
    match memchr::memchr(b'\n', &src[start..]) {
        Some(off) => {
            let nl = start + off;
            let text_end = if nl > start && src[nl - 1] == b'\r' { nl - 1 } else { nl };
            (nl + 1, text_end)
        }
        None => (src.len(), src.len()),
    }
}

fn utf8_line<'a>(bytes: &'a [u8], file: &Path, line: usize) -> Result<&'a str> {
    crate::error::utf8(bytes).map_err(|column| Error::bad_line(file, line, column, crate::error::NOT_UTF8))
}

fn parse_record<'a>(
    t: &mut Transcript<'a>,
    text: &'a str,
    file: &Path,
    line: usize,
    unterminated: bool,
) -> Result<RecordKind<'a>> {
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return Ok(RecordKind::Blank);
    }
    let json_err = |e: serde_json::Error| json_error(e, text, file, line, unterminated);
    if !trimmed.starts_with('{') {
        let column = text[..text.len() - trimmed.len()].chars().count() + 1;
        // A value that is not an object is still checked as JSON first, so that a
        // broken line says what is broken.
        serde_json::from_str::<IgnoredAny>(text).map_err(json_err)?;
        return Err(Error::bad_line(file, line, column, "expected a JSON object (one record per line)"));
    }
    let Some(ty) = record_type(text)
        .map_or_else(|| serde_json::from_str::<Probe>(text).map(|p| p.ty), |t| Ok(Some(Cow::Borrowed(t))))
        .map_err(json_err)?
    else {
        return Err(Error::bad_line(file, line, 1, "expected a \"type\" field in the record"));
    };
    match &*ty {
        "message" => {
            let m = fast::message(text)
                .map_or_else(|| serde_json::from_str::<MessageRecord<'a, Option<TextLen>>>(text), Ok)
                .map_err(json_err)?;
            t.items.push(Item::of_message(m, t.records.len()));
            Ok(RecordKind::Item(t.items.len() - 1))
        }
        "tool_result" => {
            let r = fast::tool_result(text)
                .map_or_else(|| serde_json::from_str::<ToolResultRecord<'a, Option<TextLen>>>(text), Ok)
                .map_err(json_err)?;
            t.items.push(Item::of_tool_result(r, t.records.len()));
            Ok(RecordKind::Item(t.items.len() - 1))
        }
        "event" => {
            let e: EventRecord<'a> = serde_json::from_str(text).map_err(json_err)?;
            Ok(RecordKind::Event(Box::new(EventRef::of(e.name, e.id, &e.fields))))
        }
        "session" => {
            if !t.records.iter().all(|r| matches!(r.kind, RecordKind::Blank)) {
                return Err(Error::bad_line(file, line, 1, "a \"session\" record is only allowed as the first record"));
            }
            let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text).map_err(json_err)?;
            t.session = Some(map);
            Ok(RecordKind::Session)
        }
        _ => {
            // Passed through unread, but a broken line is still bad input.
            serde_json::from_str::<IgnoredAny>(text).map_err(json_err)?;
            t.unknown_records += 1;
            Ok(RecordKind::Other)
        }
    }
}

/// The common case, `{"type":"x",…`, read without a JSON pass; `None` means "ask serde".
fn record_type(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("{\"type\":\"")?;
    let end = rest.find(['"', '\\'])?;
    (rest.as_bytes()[end] == b'"').then(|| &rest[..end])
}

fn json_error(e: serde_json::Error, text: &str, file: &Path, line: usize, unterminated: bool) -> Error {
    let (column, msg) = crate::error::serde_position(&e, text);
    let what =
        if e.is_eof() && unterminated { format!("truncated last line: the record is cut off ({e})") } else { msg };
    Error::bad_line(file, line, column, what)
}

/// Links every result to the item holding its call (the latest one before it).
pub fn link_results(t: &mut Transcript<'_>) {
    // Sized once: a table grown by doubling leaves the memory of every smaller one behind.
    let items = &t.items;
    t.call_owner.reserve(items.iter().map(|i| i.calls().len()).sum(), |&at| id_hash(call_id(items, at)));
    link_from(t, 0);
}

/// The id of call `c` of item `j`: what an entry `(j, c)` of [`Transcript::call_owner`]
/// stands for.
fn call_id<'t>(items: &'t [Item<'_>], (j, c): (usize, usize)) -> &'t str {
    &items[j].calls()[c].id
}

/// Links the items from `first` on, those before already linked.
fn link_from(t: &mut Transcript<'_>, first: usize) {
    let Transcript { items, call_owner, orphan_results, .. } = t;
    for i in first..items.len() {
        for (k, call) in items[i].calls().iter().enumerate() {
            // A later call with the same id takes its place, as in a map.
            let same = |&at: &(usize, usize)| call_id(items, at) == call.id;
            match call_owner.entry(id_hash(&call.id), same, |&at| id_hash(call_id(items, at))) {
                Entry::Occupied(mut owner) => *owner.get_mut() = (i, k),
                Entry::Vacant(slot) => {
                    slot.insert((i, k));
                }
            }
        }
        let owner = items[i]
            .result_call_id()
            .map(|cid| call_owner.find(id_hash(cid), |&at| call_id(items, at) == cid).map(|&(j, _)| j));
        match owner {
            Some(Some(o)) => items[i].call_item = Some(o),
            Some(None) => orphan_results.push(i),
            None => {}
        }
    }
}

#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(rename = "type", borrow, default)]
    ty: Option<Cow<'a, str>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const SESSION: &str = r#"{"type":"session","id":"s","task":{"max_total_tokens":100}}"#;

    fn lines(n: usize) -> String {
        let mut s = format!("{SESSION}\n\n");
        for k in 0..n {
            s.push_str(&format!(
                "{{\"type\":\"message\",\"id\":\"a{k}\",\"turn\":\"t{k}\",\"role\":\"assistant\",\"content\":\"x\\ny {k}\",\"tool_calls\":[{{\"id\":\"c{k}\",\"name\":\"bash\",\"arguments\":{{}}}}]}}\r\n"
            ));
            s.push_str(&format!(
                "{{\"type\":\"tool_result\",\"id\":\"r{k}\",\"call_id\":\"c{k}\",\"content\":\"ok\"}}\n"
            ));
            s.push_str("{\"type\":\"event\",\"name\":\"tick\"}\n");
        }
        s
    }

    fn shape(t: &Transcript<'_>) -> Vec<(std::ops::Range<usize>, usize, String, Option<usize>)> {
        t.records
            .iter()
            .map(|r| {
                let (id, owner) = match r.kind {
                    RecordKind::Item(i) => (t.items[i].id.to_string(), t.items[i].call_item),
                    _ => (format!("{:?}", std::mem::discriminant(&r.kind)), None),
                };
                (r.span.clone(), r.line, id, owner)
            })
            .collect()
    }

    /// A result links to the latest call with its id before it, a result without one is
    /// an orphan, and a repeated item id names the line it was first used on: across the
    /// pieces the reader cuts, of any size.
    #[test]
    fn results_link_to_the_latest_call_and_a_repeated_id_names_its_first_line() {
        let call = |id: &str, c: &str| {
            format!(
                r#"{{"type":"message","id":"{id}","role":"assistant","content":"x","tool_calls":[{{"id":"{c}","name":"bash","arguments":{{}}}}]}}"#
            )
        };
        let result =
            |id: &str, c: &str| format!(r#"{{"type":"tool_result","id":"{id}","call_id":"{c}","content":"ok"}}"#);
        let text = [
            result("r0", "c1"),
            call("a1", "c1"),
            result("r1", "c1"),
            call("a2", "c2"),
            call("a3", "c1"),
            result("r2", "c1"),
            result("r3", "c2"),
        ]
        .join("\n");
        for chunk in [1, 7, 64, 300, usize::MAX / 2] {
            let t = parse_in_chunks(text.as_bytes(), Path::new("t"), chunk).unwrap();
            let owner = |id: &str| t.items.iter().find(|i| i.id == id).unwrap().call_item.map(|o| &*t.items[o].id);
            assert_eq!([owner("r1"), owner("r2"), owner("r3")], [Some("a1"), Some("a3"), Some("a2")], "chunk {chunk}");
            assert_eq!(t.orphan_results, [0], "chunk {chunk}");
            let again = format!("{text}\n{}", call("a2", "c9"));
            let e = parse_in_chunks(again.as_bytes(), Path::new("t"), chunk).unwrap_err().to_string();
            assert_eq!(e, "t:8:1: duplicate id \"a2\" (first used on line 4)", "chunk {chunk}");
        }
    }

    #[test]
    fn the_short_strings_of_an_item_are_copied_out_and_the_long_ones_left() {
        let text = concat!(
            r#"{"type":"message","id":"a1","turn":"t1","role":"assistant","content":"x","#,
            r#""tool_calls":[{"id":"c1","name":"edit","arguments":{"path":"a.rs"}},"#,
            r#"{"id":"c2","name":"write","arguments":{"content":"a long text, longer than the limit"}}]}"#,
            "\n",
            r#"{"type":"tool_result","id":"r1","turn":"t1","call_id":"c1","name":"edit","content":"ok"}"#,
            "\n"
        );
        let mut t = parse(text.as_bytes(), Path::new("t")).unwrap();
        let owned = |c: &Cow<'_, str>| matches!(c, Cow::Owned(_));
        assert!(!owned(&t.items[0].id), "borrowed as read");
        for item in &mut t.items {
            item.own_short_strings(16);
        }
        let (a, r) = (&t.items[0], &t.items[1]);
        assert!(owned(&a.id) && owned(a.turn.as_ref().unwrap()) && owned(&r.id));
        let [short, long] = a.calls() else { panic!("two calls") };
        assert!(owned(&short.id) && owned(&short.name) && owned(&short.arguments), "{short:?}");
        assert!(owned(&long.name) && !owned(&long.arguments), "a long argument stays in the input: {long:?}");
        assert_eq!(long.arguments, r#"{"content":"a long text, longer than the limit"}"#);
        assert!(
            matches!(&r.kind, super::super::ItemKind::ToolResult { call_id, name: Some(name), .. } if owned(call_id) && owned(name))
        );
        assert_eq!(r.result_call_id(), Some("c1"));
    }

    #[test]
    fn chunked_parse_equals_whole_parse() {
        let text = lines(50);
        let whole = parse_in_chunks(text.as_bytes(), Path::new("t"), usize::MAX / 2).unwrap();
        for chunk in [1, 7, 64, 300, 1000] {
            let t = parse_in_chunks(text.as_bytes(), Path::new("t"), chunk).unwrap();
            assert_eq!(shape(&t), shape(&whole), "chunk size {chunk}");
            assert_eq!(t.items.len(), 100);
            assert!(t.session.is_some());
            for (i, item) in t.items.iter().enumerate() {
                assert_eq!(t.records[item.record].kind_item(), Some(i));
            }
        }
    }

    #[test]
    fn errors_across_chunks_are_reported_in_file_order() {
        let mut text = lines(20);
        text.push_str("{\"type\":\"message\",\"id\":\"a3\",\"role\":\"user\",\"content\":\"dup\"}\n");
        text.push_str("{broken\n");
        for chunk in [1, 50, usize::MAX / 2] {
            let e = parse_in_chunks(text.as_bytes(), Path::new("t"), chunk).unwrap_err().to_string();
            assert_eq!(e, "t:63:1: duplicate id \"a3\" (first used on line 12)", "chunk size {chunk}");
        }
        let late_session = format!("{}{SESSION}\n", lines(3));
        for chunk in [1, 40, usize::MAX / 2] {
            let e = parse_in_chunks(late_session.as_bytes(), Path::new("t"), chunk).unwrap_err().to_string();
            assert!(e.starts_with("t:12:1: a \"session\" record"), "chunk size {chunk}: {e}");
        }
    }
}
