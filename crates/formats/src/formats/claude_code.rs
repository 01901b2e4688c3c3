//! Claude Code session JSONL (SPEC 1 "Other formats"): the main thread rebuilt from the
//! `parentUuid` tree, split API messages joined by `message.id`, `tool_use` /
//! `tool_result` blocks as calls and results, the compact boundary as a completed
//! compaction.

use super::common::{json_lines, message, text_of, tool_result, Call, EventRecord, Imported};
use crate::error::Result;
use crate::transcript::{Event, Role, Skip};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Records the model never sees: lifecycle, bookkeeping and request logs.
const NOT_MODEL_VISIBLE: &[&str] = &[
    "progress",
    "file-history-snapshot",
    "queue-operation",
    "summary",
    "system",
    "api-request",
    "api-request-blob",
    "api-request-route",
    "api-request-shape",
    "atis-latch",
    "cost-state",
    "last-prompt",
    "tools-used",
    "permission-mode",
    "mode",
    "custom-title",
    "agent-name",
    // `--output-format stream-json`'s closing record: the run's totals.
    "result",
];

/// The suffix of the ids of items a compaction kept in the new context (its preserved
/// segment), restated after the compaction as Codex restates its replacement history.
pub const PRESERVED: &str = "~preserved";

pub fn import(raw: &[u8], file: &Path) -> Result<Imported> {
    let lines = json_lines(raw, file)?;
    let records: Vec<&Value> = lines.iter().map(|(_, v)| v).collect();
    // A sub-agent's own file (`<session>/subagents/agent-*.jsonl`) is all sidechain: its
    // sidechain records are its conversation.
    let sidechain_file = is_sidechain_file(&records);
    let on_thread = main_thread(&records, sidechain_file);
    let mut st = State::default();
    if is_stream(&records) {
        st.out.not_resumable = Some(
            "the output of `claude -p --output-format stream-json`, which Claude Code does not resume (its session is the file under ~/.claude/projects)",
        );
    }
    let by_uuid: HashMap<&str, usize> =
        records.iter().enumerate().filter_map(|(i, r)| Some((r.get("uuid")?.as_str()?, i))).collect();
    // The first copy of each record by uuid: a resumed session logs records again.
    let mut first_copy: HashMap<&str, usize> = HashMap::new();
    // The preserved segment of the latest boundary seen, restated after its anchor.
    let mut preserved: Option<(String, Vec<usize>)> = None;
    for (idx, r) in records.iter().enumerate() {
        st.out.begin(lines[idx].0);
        let ty = r.get("type").and_then(Value::as_str).unwrap_or("");
        let text = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
        st.session_id = st.session_id.take().or_else(|| text("sessionId")).or_else(|| text("session_id"));
        if ty == "system" && r.get("subtype").and_then(Value::as_str) == Some("init") {
            // `--output-format stream-json`'s first record: the folder, model and version
            // (its messages carry none of them).
            st.cwd = st.cwd.take().or_else(|| text("cwd"));
            st.version = st.version.take().or_else(|| text("claude_code_version"));
        }
        if let Some(uuid) = r.get("uuid").and_then(Value::as_str) {
            match first_copy.get(uuid) {
                Some(&k) if relogged(records[k], r) => {
                    st.out.leave_out(Skip::Superseded);
                    continue;
                }
                Some(_) => {} // the same uuid for another record: a real conflict, reported
                None => {
                    first_copy.insert(uuid, idx);
                }
            }
        }
        if ty == "system" && r.get("subtype").and_then(Value::as_str) == Some("compact_boundary") && on_thread[idx] {
            st.compactions += 1;
            st.out.push(boundary_event(r, st.compactions));
            preserved = preserved_segment(r, &records, &by_uuid);
            continue;
        }
        let visible = matches!(ty, "user" | "assistant") || (ty == "attachment" && r.get("rendered").is_some());
        if !visible {
            if NOT_MODEL_VISIBLE.contains(&ty) || ty == "attachment" || is_session_metadata(r, ty) {
                st.out.leave_out(Skip::Bookkeeping);
            } else {
                st.out.skip(if ty.is_empty() { "(no type)" } else { ty });
            }
            continue;
        }
        if is_sidechain(r) && !sidechain_file {
            st.out.leave_out(Skip::Sidechain);
            continue;
        }
        if !on_thread[idx] {
            st.out.leave_out(Skip::OffThread);
            continue;
        }
        st.record(r, "");
        let uuid = r.get("uuid").and_then(Value::as_str).unwrap_or("");
        if let Some((_, segment)) = preserved.as_ref().filter(|(anchor, _)| anchor == uuid) {
            for &k in segment {
                st.out.restating = Some(k);
                st.record(records[k], PRESERVED);
                st.out.restating = None;
            }
            st.restated_from = None;
            preserved = None;
        }
    }
    if sidechain_file {
        st.sidechain = true;
    }
    st.subagents = subagent_files(file);
    Ok(st.finish(file))
}

/// Whether the records are `claude -p --output-format stream-json`'s output rather than
/// a session file: messages with `session_id`, and no `parentUuid` anywhere (a session
/// file writes one on every message).
/// A record of the session's own metadata, of a type this reader need not know: one
/// that names the session (`sessionId`) but is outside the `uuid` / `parentUuid` tree
/// the model's context is rebuilt from (2.1.337 added `api-request-route` so; every
/// version adds some). A typed record of the tree, or one that names no session, is
/// still unknown.
fn is_session_metadata(r: &Value, ty: &str) -> bool {
    !ty.is_empty() && r.get("uuid").is_none() && r.get("parentUuid").is_none() && r.get("sessionId").is_some()
}

pub fn is_stream(records: &[&Value]) -> bool {
    records.iter().any(|r| is_message(r) && r.get("session_id").is_some())
        && !records.iter().any(|r| r.get("parentUuid").is_some())
}

/// Whether a file is a sub-agent's own thread: it has messages, all of them sidechain.
pub fn is_sidechain_file(records: &[&Value]) -> bool {
    !records.iter().any(|r| is_message(r) && !is_sidechain(r))
        && records.iter().any(|r| is_message(r) && is_sidechain(r))
}

fn is_message(r: &Value) -> bool {
    matches!(r.get("type").and_then(Value::as_str), Some("user" | "assistant"))
}

/// A sidechain's record: marked so in a session file, or, in `--output-format
/// stream-json`, a sub-agent's (`parent_tool_use_id` names the call that started it).
fn is_sidechain(r: &Value) -> bool {
    r.get("isSidechain").and_then(Value::as_bool) == Some(true)
        || r.get("parent_tool_use_id").and_then(Value::as_str).is_some()
}

/// A record logged again when a session was resumed: the same uuid, the same parent
/// and the same message as its first copy (only the session, the time and such
/// bookkeeping differ).
pub fn relogged(first: &Value, again: &Value) -> bool {
    ["parentUuid", "type", "message", "toolUseResult", "subtype", "content"]
        .iter()
        .all(|k| first.get(k) == again.get(k))
}

/// The sub-agents' files Claude Code writes beside a main session `<dir>/<id>.jsonl`:
/// `<dir>/<id>/subagents/agent-*.jsonl`, sorted.
fn subagent_files(file: &Path) -> Vec<std::path::PathBuf> {
    let (Some(dir), Some(stem)) = (file.parent(), file.file_stem()) else { return Vec::new() };
    let Ok(entries) = std::fs::read_dir(dir.join(stem).join("subagents")) else { return Vec::new() };
    let mut out: Vec<std::path::PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl") && p.is_file())
        .collect();
    out.sort();
    out
}

/// The records a boundary's `preservedSegment` keeps in the new context, in file order,
/// with the anchor they follow: `preservedMessages.uuids` where written, else the
/// chain from the tail back to the head.
fn preserved_segment(r: &Value, records: &[&Value], by_uuid: &HashMap<&str, usize>) -> Option<(String, Vec<usize>)> {
    let meta = r.get("compactMetadata")?;
    let seg = meta.get("preservedSegment")?;
    let anchor = seg.get("anchorUuid")?.as_str()?.to_string();
    let listed = meta.get("preservedMessages").and_then(|m| m.get("uuids")).and_then(Value::as_array);
    let mut at: Vec<usize> = if let Some(list) = listed {
        list.iter().filter_map(|u| by_uuid.get(u.as_str()?).copied()).collect()
    } else {
        let head = seg.get("headUuid")?.as_str()?;
        let mut k = *by_uuid.get(seg.get("tailUuid")?.as_str()?)?;
        let mut chain = vec![k];
        while records[k].get("uuid").and_then(Value::as_str) != Some(head) && chain.len() <= records.len() {
            k = *by_uuid.get(records[k].get("parentUuid")?.as_str()?)?;
            chain.push(k);
        }
        chain
    };
    at.sort_unstable();
    at.dedup();
    Some((anchor, at))
}

/// What the import has gathered so far.
#[derive(Default)]
struct State {
    out: Imported,
    names: HashMap<String, String>,
    /// `message.id` (with the restating suffix) → index in `out.records`.
    groups: HashMap<String, usize>,
    turn: usize,
    compactions: usize,
    model: Option<String>,
    cwd: Option<String>,
    session_id: Option<String>,
    restated_from: Option<usize>,
    /// The file is a sub-agent's thread (every message a sidechain).
    sidechain: bool,
    /// The sub-agents' files beside a main session.
    subagents: Vec<std::path::PathBuf>,
    /// The Claude Code version of the latest record read.
    version: Option<String>,
}

impl State {
    /// One model-visible record; `suffix` is [`PRESERVED`] for a restated one.
    fn record(&mut self, r: &Value, suffix: &str) {
        let ty = r.get("type").and_then(Value::as_str).unwrap_or("");
        self.cwd = self.cwd.take().or_else(|| r.get("cwd").and_then(Value::as_str).map(str::to_string));
        if let Some(v) = r.get("version").and_then(Value::as_str) {
            self.version = Some(v.to_string()); // the latest: the version running now
        }
        let uuid = format!("{}{suffix}", r.get("uuid").and_then(Value::as_str).unwrap_or(""));
        let msg = r.get("message").cloned().unwrap_or(Value::Null);
        let turn = self.turn;
        if ty == "attachment" {
            // Rendered as a system reminder: instructions, not history (SPEC 4).
            let blocks: Vec<Value> = rendered(r).into_iter().map(|t| json!({"type": "text", "text": t})).collect();
            if blocks.is_empty() {
                self.out.leave_out(Skip::Empty);
                return;
            }
            self.out.push(message(&uuid, &format!("turn-{turn}"), Role::System, Value::Array(blocks)));
        } else if ty == "assistant" {
            if let Some(m) = msg.get("model").and_then(Value::as_str).filter(|m| !m.starts_with('<')) {
                self.model = Some(m.to_string());
            }
            let before = self.out.records.len();
            let at = assistant(&mut self.out, &mut self.groups, &mut self.names, &msg, &uuid, suffix, turn);
            if self.out.records.len() == before {
                self.out.joined(); // a later part of a message split over records
            }
            if !suffix.is_empty() {
                // A restated message is not a model call of the new context.
                if let Some(m) = self.out.message_mut(at) {
                    m.usage = Some(super::common::usage(0, 0, 0, 0, super::common::InputCount::Uncached));
                }
            }
        } else {
            let content = msg.get("content").cloned().unwrap_or(Value::Null);
            // A record this tool wrote (`--output-format claude-code`) is its injected kind.
            if let Some(kind) = r.get(crate::formats::openhands::INJECTED_KEY).and_then(Value::as_str) {
                let mut m = message(&uuid, &format!("turn-{turn}"), Role::User, json!(text_of(&content)));
                m.set_synthetic(Some(kind.to_string()));
                self.out.push(m);
                return;
            }
            let is_prompt = !matches!(&content, Value::Array(a) if a.iter().any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result")));
            if is_prompt && suffix.is_empty() {
                self.turn += 1;
            }
            let before = self.out.records.len();
            user(&mut self.out, &self.names, &content, &uuid, self.turn);
            if self.out.records.len() == before {
                self.out.leave_out(Skip::Empty);
            }
        }
    }

    fn finish(mut self, file: &Path) -> Imported {
        let window = match self.model.as_deref().map(|m| (m, super::models::claude_code(m))) {
            Some((_, Some(row))) => row.window,
            Some((m, None)) => {
                self.out.warnings.push(format!(
                    "{}: claude-code: the model table does not know `{}`; assuming a {}-token context window (set runtime.context_window)",
                    file.display(),
                    crate::ui::escape(m),
                    super::models::CLAUDE_CODE_ASSUMED
                ));
                super::models::CLAUDE_CODE_ASSUMED
            }
            None => super::models::CLAUDE_CODE_ASSUMED,
        };
        if !self.subagents.is_empty() {
            let names: Vec<String> =
                self.subagents.iter().map(|p| crate::ui::escape(&p.display().to_string())).collect();
            self.out.warnings.push(format!(
                "{}: claude-code: its sub-agents' threads are in {} file(s) beside it, read apart (each is a transcript of its own): {}",
                file.display(),
                names.len(),
                names.join(", ")
            ));
        }
        if self.sidechain {
            // Not a configuration key: says the thread is a sub-agent's.
            self.out.session.insert("thread".into(), json!("sidechain"));
        }
        self.out.session.insert("id".into(), json!(self.session_id.unwrap_or_else(|| "claude-code".into())));
        self.out.session.insert(
            "runtime".into(),
            json!({"kind": "conversation", "native_compaction": true, "context_window": window}),
        );
        if let Some(cwd) = self.cwd {
            self.out.session.insert("workspace".into(), json!({"root": cwd}));
        }
        // Not configuration keys: the profile takes its row by the agent's version,
        // `config` and the profile look the model up.
        if let Some(v) = self.version {
            self.out.session.insert("agent_version".into(), json!(v));
        }
        if let Some(m) = self.model {
            self.out.session.insert("model".into(), json!(m));
        }
        self.out
    }
}

/// The texts an attachment record sends to the model.
fn rendered(r: &Value) -> Vec<String> {
    match r.get("rendered") {
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.clone()),
                v => v.get("content").map(text_of),
            })
            .collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// Marks the records of the main thread: the path from the last record to the root
/// (crossing compact boundaries through `logicalParentUuid`), plus the other records of
/// the same API messages and the results of the calls on it.
pub fn main_thread(records: &[&Value], sidechain_file: bool) -> Vec<bool> {
    let uuid_at: HashMap<&str, usize> =
        records.iter().enumerate().filter_map(|(i, r)| Some((r.get("uuid")?.as_str()?, i))).collect();
    let mut on = vec![false; records.len()];
    let main = |k: usize| {
        let r = records[k];
        r.get("uuid").is_some() && (sidechain_file || !is_sidechain(r))
    };
    // `--output-format stream-json` (what `claude -p` prints) links no record to its
    // parent: its messages are the thread in the order printed.
    if is_stream(records) {
        return (0..records.len()).map(main).collect();
    }
    // Where the walk goes on when the chain breaks: the latest record before `i`, in
    // file order, that is not on the path yet.
    let before = |i: usize, on: &[bool]| (0..i).rev().find(|&k| main(k) && !on[k]);
    let mut cursor = (0..records.len()).rev().find(|&k| main(k));
    let mut has_message = false;
    while let Some(i) = cursor {
        on[i] = true;
        let r = records[i];
        let named =
            r.get("parentUuid").and_then(Value::as_str).or_else(|| r.get("logicalParentUuid").and_then(Value::as_str));
        // A root ends the walk once the path holds a message: a root with no message
        // below it (a lone system or hook record at the end) is not the thread.
        has_message |= matches!(r.get("type").and_then(Value::as_str), Some("user" | "assistant"));
        cursor = match named.map(|p| uuid_at.get(p).copied()) {
            None if has_message => None,                   // the root
            Some(Some(p)) if !on[p] => Some(p),            // the parent
            None | Some(Some(_) | None) => before(i, &on), // a cycle, a parent not in the file, a stray root
        };
    }
    let message_ids: HashSet<&str> =
        (0..records.len()).filter(|&i| on[i]).filter_map(|i| records[i].get("message")?.get("id")?.as_str()).collect();
    let mut calls: HashSet<String> = HashSet::new();
    for (i, r) in records.iter().enumerate() {
        if let Some(id) = r.get("message").and_then(|m| m.get("id")).and_then(Value::as_str) {
            if message_ids.contains(id) && r.get("type").and_then(Value::as_str) == Some("assistant") {
                on[i] = true;
            }
        }
        if on[i] {
            for b in blocks(r) {
                if b.get("type").and_then(Value::as_str) == Some("tool_use") {
                    calls.extend(b.get("id").and_then(Value::as_str).map(str::to_string));
                }
            }
        }
    }
    for (i, r) in records.iter().enumerate() {
        if blocks(r).iter().any(|b| b.get("tool_use_id").and_then(Value::as_str).is_some_and(|id| calls.contains(id))) {
            on[i] = true;
        }
    }
    // Every copy of a record on the thread is on it (a resumed session logs records
    // again; the first copy is the one read).
    let on_uuids: HashSet<&str> =
        (0..records.len()).filter(|&i| on[i]).filter_map(|i| records[i].get("uuid")?.as_str()).collect();
    for (i, r) in records.iter().enumerate() {
        if r.get("uuid").and_then(Value::as_str).is_some_and(|u| on_uuids.contains(u)) {
            on[i] = true;
        }
    }
    on
}

fn blocks(r: &Value) -> Vec<&Value> {
    match r.get("message").and_then(|m| m.get("content")) {
        Some(Value::Array(a)) => a.iter().collect(),
        _ => Vec::new(),
    }
}

fn boundary_event(r: &Value, n: usize) -> EventRecord {
    let meta = r.get("compactMetadata");
    let field = |v: Option<&Value>| v.cloned().unwrap_or(Value::Null);
    let fields = [
        ("trigger", field(meta.and_then(|m| m.get("trigger")))),
        ("pre_tokens", field(meta.and_then(|m| m.get("preTokens")))),
        ("source_uuid", field(r.get("uuid"))),
    ];
    EventRecord::new(Event::CompactionCompleted, format!("claude-compact-{n}"), fields)
}

/// One record of an API message: joined with the others of the same `message.id`.
fn assistant(
    out: &mut Imported,
    groups: &mut HashMap<String, usize>,
    names: &mut HashMap<String, String>,
    msg: &Value,
    uuid: &str,
    suffix: &str,
    turn: usize,
) -> usize {
    let id = msg.get("id").and_then(Value::as_str).map_or_else(|| uuid.to_string(), |m| format!("{m}{suffix}"));
    let at = *groups.entry(id.clone()).or_insert_with(|| {
        let mut m = message(&id, &format!("turn-{turn}"), Role::Assistant, json!([]));
        m.tool_calls = Some(Vec::new());
        out.push(m)
    });
    let record = out.message_mut(at).expect("a message");
    for b in msg.get("content").and_then(Value::as_array).into_iter().flatten() {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Value::Array(blocks) = &mut record.content {
                    blocks.push(json!({"type": "text", "text": b.get("text").cloned().unwrap_or(json!(""))}));
                }
            }
            Some("tool_use") => {
                let call_id = b.get("id").and_then(Value::as_str).unwrap_or("");
                let name = b.get("name").and_then(Value::as_str).unwrap_or("");
                names.insert(call_id.to_string(), name.to_string());
                let args = b.get("input").cloned().unwrap_or(json!({}));
                record.push_call(Call::new(call_id, name, &args));
            }
            _ => {} // thinking blocks are not resent as context text
        }
    }
    if let Some(u) = msg.get("usage") {
        let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
        // The usage repeats on every record of a message; the last record's wins.
        record.usage = Some(super::common::usage(
            n("input_tokens"),
            n("cache_read_input_tokens"),
            n("cache_creation_input_tokens"),
            n("output_tokens"),
            super::common::InputCount::Uncached,
        ));
    }
    at
}

fn user(out: &mut Imported, names: &HashMap<String, String>, content: &Value, uuid: &str, turn: usize) {
    let turn = format!("turn-{turn}");
    let Value::Array(blocks) = content else {
        out.push(message(uuid, &turn, Role::User, json!(text_of(content))));
        return;
    };
    let mut text = Vec::new();
    let mut k = 0;
    for b in blocks {
        if b.get("type").and_then(Value::as_str) == Some("tool_result") {
            let call_id = b.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
            let id = if k == 0 { uuid.to_string() } else { format!("{uuid}#{k}") };
            k += 1;
            let body = json!(text_of(b.get("content").unwrap_or(&Value::Null)));
            let failed = b.get("is_error").and_then(Value::as_bool).unwrap_or(false);
            out.push(tool_result(&id, &turn, call_id, names.get(call_id).map(String::as_str), body, failed));
        } else if let Some(t) = b.get("text").and_then(Value::as_str) {
            text.push(t.to_string());
        }
    }
    if !text.is_empty() {
        let id = if k == 0 { uuid.to_string() } else { format!("{uuid}#text") };
        out.push(message(&id, &turn, Role::User, json!(text.join("\n"))));
    }
}
