//! Gemini CLI sessions (SPEC 1 "Accounting and the Gemini CLI"), in both shapes the
//! agent has written under `~/.gemini/tmp/<project>/chats/`:
//! - JSON Lines (current versions): a metadata line, message records re-appended with
//!   the same `id` whenever they change (the last copy wins, at the place of the
//!   first), `{"$set": {…}}` updates (a `$set` of `messages` replaces the history) and
//!   `{"$rewindTo": id}`, which drops that message and every later one;
//! - one JSON document `{sessionId, …, messages: […]}` (older versions).
//!
//! And a chat saved with `/chat save TAG` (`~/.gemini/tmp/<project>/checkpoint-TAG.json`,
//! every version; before 0.5 the only record of a conversation): the history as the
//! model is sent it, a list of `{role, parts}` contents, alone or under `history`.
//!
//! The history is read as the agent reads it back: `user` messages (text and
//! `functionResponse` parts), `gemini` messages (text, `functionCall` parts or
//! `toolCalls` with their `result`, `tokens` per reply); `info`, `error` and `warning`
//! messages are shown to the user and never sent. A compression is a `$set` of
//! `messages` that brings a new `<state_snapshot>` user message: the history before it
//! is kept (it feeds cumulative usage and the re-anchor facts), then a completed
//! compaction, then the new history, restated.

use super::common::{
    document_error, is_document, json_document, message, text_of, tool_result, Call, EventRecord, Imported,
};
use crate::error::Result;
use crate::transcript::{Event, Role, Skip, Usage};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// The text Gemini CLI's compression prompt asks the summary to be wrapped in.
const SNAPSHOT: &str = "<state_snapshot>";
/// How the context Gemini CLI sends first opens (versions before `<session_context>`
/// wrapped it; a saved chat holds it).
const CONTEXT: &str = "This is the Gemini CLI. We are setting up the context for our chat.";
/// The reply Gemini CLI writes after the summary of a compression (a fixed text).
const ACKNOWLEDGED: &str = "Got it. Thanks for the additional context!";

/// The window Gemini CLI uses for every model but the Gemma 4 ones (its `tokenLimit`).
pub const DEFAULT_TOKEN_LIMIT: u64 = 1_048_576;
/// The Gemma 4 models' window.
pub const GEMMA_4_TOKEN_LIMIT: u64 = 256_000;

/// The token limit Gemini CLI compares with for a model (`tokenLimit` in its core).
pub fn token_limit(model: &str) -> u64 {
    if model.starts_with("gemma-4") {
        GEMMA_4_TOKEN_LIMIT
    } else {
        DEFAULT_TOKEN_LIMIT
    }
}

/// Whether the input is one JSON document rather than JSON Lines: a session of the older
/// shape (`messages`), or a chat saved with `/chat save` (a list of contents, or the
/// contents under `history`).
fn is_one_document(raw: &[u8]) -> bool {
    let raw = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
    raw.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
        || is_document(raw, "messages")
        || is_document(raw, "history")
}

pub fn import(raw: &[u8], file: &Path) -> Result<Imported> {
    let mut st = State::default();
    if is_one_document(raw) {
        st.document(&json_document(raw, file)?, raw, file)?;
    } else {
        let lines = super::common::json_lines(raw, file)?;
        let stream = is_stream(&lines);
        if stream {
            st.out.not_resumable = Some(STREAM_OUTPUT);
        }
        let mut events = Stream::default();
        for (line, r) in lines {
            st.out.begin(line);
            if stream {
                events.record(&mut st, &r);
            } else {
                st.record(&r, line);
            }
        }
    }
    st.flush(None);
    let subagents = subagent_files(file, st.session_id.as_deref());
    if !subagents.is_empty() {
        let names: Vec<String> = subagents.iter().map(|p| crate::ui::escape(&p.display().to_string())).collect();
        st.out.warnings.push(format!(
            "{}: gemini-cli: its sub-agents' sessions are in {} file(s) beside it, read apart (each is a transcript of its own): {}",
            file.display(),
            names.len(),
            names.join(", ")
        ));
    }
    Ok(st.finish())
}

/// The sub-agents' sessions Gemini CLI writes beside a main session, in a folder named
/// after its full session id (`chats/<sessionId>/*.jsonl`), sorted.
fn subagent_files(file: &Path, session: Option<&str>) -> Vec<std::path::PathBuf> {
    let (Some(dir), Some(session)) = (file.parent(), session) else { return Vec::new() };
    if session.is_empty() || session.contains(['/', '\\']) || session.starts_with('.') {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(dir.join(session)) else { return Vec::new() };
    let mut out: Vec<std::path::PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl" || e == "json") && p.is_file())
        .collect();
    out.sort();
    out
}

/// Whether the records are `gemini -p --output-format stream-json`'s output rather than a
/// session: an `init` record with the session and model first, then events.
fn is_stream(lines: &[(usize, Value)]) -> bool {
    lines
        .first()
        .is_some_and(|(_, r)| r.get("type").and_then(Value::as_str) == Some("init") && r.get("session_id").is_some())
}

/// Why the shapes Gemini CLI never resumes from a file are not written back.
const STREAM_OUTPUT: &str = "the output of `gemini -p --output-format stream-json`, which Gemini CLI does not resume (its session is the file under ~/.gemini/tmp)";
const SAVED_CHAT: &str =
    "a chat saved with `/chat save`, which Gemini CLI resumes with `/chat resume`, not from a session file";

/// The events of `--output-format stream-json`: `init`, `message` (the user's prompt;
/// the reply in pieces, `delta`), `tool_use` and `tool_result` by `tool_id`, `error`
/// shown to the user, a closing `result` with the run's totals (no usage per call).
#[derive(Default)]
struct Stream {
    /// The reply being written: pieces and calls join it until a result or a prompt.
    reply: Option<usize>,
    names: HashMap<String, String>,
    n: usize,
}

impl Stream {
    fn record(&mut self, st: &mut State, r: &Value) {
        let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        self.n += 1;
        let id = format!("s{}", self.n);
        let turn = |st: &State| format!("turn-{}", st.turn.max(1));
        match text("type") {
            "init" => {
                st.session_id = st.session_id.take().or_else(|| Some(text("session_id").to_string()));
                st.model = st.model.take().or_else(|| Some(text("model").to_string()).filter(|m| !m.is_empty()));
                st.out.leave_out(Skip::Header);
            }
            "message" if text("role") == "user" => {
                self.reply = None;
                st.turn += 1;
                st.out.push(message(&id, &turn(st), Role::User, json!(text("content"))));
            }
            "message" if text("role") == "assistant" => {
                if let Some(m) = self.reply.and_then(|at| st.out.message_mut(at)) {
                    let joined = format!("{}{}", m.content.as_str().unwrap_or(""), text("content"));
                    m.content = json!(joined);
                    st.out.joined();
                } else {
                    self.reply = Some(st.out.push(message(&id, &turn(st), Role::Assistant, json!(text("content")))));
                }
            }
            "tool_use" => {
                let (call, name) = (text("tool_id"), text("tool_name"));
                self.names.insert(call.to_string(), name.to_string());
                let args = r.get("parameters").cloned().unwrap_or(json!({}));
                if let Some(m) = self.reply.and_then(|at| st.out.message_mut(at)) {
                    m.push_call(Call::new(call, name, &args));
                    st.out.joined();
                } else {
                    let mut m = message(&id, &turn(st), Role::Assistant, json!(""));
                    m.push_call(Call::new(call, name, &args));
                    self.reply = Some(st.out.push(m));
                }
            }
            "tool_result" => {
                self.reply = None;
                let call = text("tool_id");
                let failed = text("status") == "error";
                let body = match r.get("output") {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) if !v.is_null() => text_of(v),
                    _ => {
                        r.get("error").and_then(|e| e.get("message")).and_then(Value::as_str).unwrap_or("").to_string()
                    }
                };
                let name = self.names.get(call).map(String::as_str);
                st.out.push(tool_result(&id, &turn(st), call, name, json!(body), failed));
            }
            "error" => st.out.leave_out(Skip::DisplayOnly),
            "result" => st.out.leave_out(Skip::Bookkeeping),
            other => st.out.skip(if other.is_empty() { "(no type)" } else { other }),
        }
    }
}

/// One message of the history as the agent holds it, and the input record its copy
/// came from.
#[derive(Debug, Clone)]
struct Live {
    message: Value,
    origin: usize,
    line: usize,
}

#[derive(Default)]
struct State {
    out: Imported,
    /// The history as the agent would read it back now, in order.
    live: Vec<Live>,
    /// Messages taken out of the history (by a rewind, or a `$set` that left them out):
    /// off the thread, unless a later record brings them back (a resume writes the
    /// history again after a `$set` of the fresh session context alone).
    dropped: HashMap<String, Live>,
    session_id: Option<String>,
    model: Option<String>,
    /// Ids already written as items (a restated message gets a new one).
    written: HashSet<String>,
    turn: usize,
    compactions: usize,
    /// The prompt size of the latest reply: what Gemini CLI compared before compressing.
    last_prompt: Option<u64>,
    /// The message each item was read from, by item id (what a write-back copies).
    sources: HashMap<String, Value>,
    /// The ids of the compressions' summaries.
    summaries: HashSet<String>,
    /// Every message id the file has held so far (a resume writes them all again).
    ids: HashSet<String>,
    workspace: Option<String>,
}

impl State {
    fn record(&mut self, r: &Value, line: usize) {
        let origin = self.out.current();
        if let Some(set) = r.get("$set").and_then(Value::as_object) {
            self.set(set, origin, line);
        } else if let Some(id) = r.get("$rewindTo").and_then(Value::as_str) {
            self.rewind(id);
            self.out.leave_out(Skip::Bookkeeping);
        } else if r.get("id").and_then(Value::as_str).is_some() {
            self.upsert(r.clone(), origin, line);
        } else if r.get("sessionId").is_some() || r.get("projectHash").is_some() {
            self.metadata(r);
            self.out.leave_out(Skip::Header);
        } else {
            self.out.skip("(neither message nor update)");
        }
    }

    /// The older shape: metadata and a `messages` list; every message is a record. Or
    /// a saved chat's list of contents.
    fn document(&mut self, doc: &Value, raw: &[u8], file: &Path) -> Result<()> {
        let saved = match doc {
            Value::Array(contents) => Some(contents),
            _ if doc.get("messages").is_none() => doc.get("history").and_then(Value::as_array),
            _ => None,
        };
        if let Some(contents) = saved {
            self.saved_chat(contents);
            return Ok(());
        }
        let messages = doc.get("messages").and_then(Value::as_array).ok_or_else(|| {
            document_error(
                raw,
                file,
                "messages",
                "expected a Gemini CLI session with a \"messages\" array, or a saved chat's \"history\"",
            )
        })?;
        self.metadata(doc);
        for m in messages {
            let origin = self.out.begin(0);
            if m.get("id").and_then(Value::as_str).is_some() {
                self.upsert(m.clone(), origin, 0);
            } else {
                self.out.skip("(message without id)");
            }
        }
        Ok(())
    }

    /// A saved chat: each content a record, read as the message of its role (`user`,
    /// `model`) would be; no ids, usage or model. A history that opens with a
    /// compression's summary was compressed before it was saved: a completed compaction
    /// is recorded before the summary.
    fn saved_chat(&mut self, contents: &[Value]) {
        self.out.not_resumable = Some(SAVED_CHAT);
        let messages: Vec<Value> = contents
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let ty = match c.get("role").and_then(Value::as_str) {
                    Some("model") => "gemini",
                    Some(role) => role,
                    None => "(no role)",
                };
                json!({"id": format!("c{}", k + 1), "type": ty, "content": c.get("parts").cloned().unwrap_or(Value::Null)})
            })
            .collect();
        let summary = compression_summary(&messages, &HashSet::new());
        for m in messages {
            let origin = self.out.begin(0);
            if summary.as_deref() == m.get("id").and_then(Value::as_str) {
                self.flush(Some(0));
            }
            self.upsert(m, origin, 0);
        }
        self.summaries.extend(summary);
    }

    fn metadata(&mut self, r: &Value) {
        let s = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
        self.session_id = self.session_id.take().or_else(|| s("sessionId"));
        if let Some(dir) =
            r.get("directories").and_then(Value::as_array).and_then(|d| d.first()).and_then(Value::as_str)
        {
            self.workspace.get_or_insert_with(|| dir.to_string());
        }
    }

    /// A message record: a new message, or a new copy of one (the last copy wins, at
    /// the place of the first; what the new copy lacks of the old — its usage, its
    /// model — it keeps).
    fn upsert(&mut self, mut message: Value, origin: usize, line: usize) {
        let id = message.get("id").and_then(Value::as_str).unwrap_or("").to_string();
        self.ids.insert(id.clone());
        self.returning(&id, &mut message);
        if let Some(at) = self.live.iter().position(|l| l.message.get("id").and_then(Value::as_str) == Some(&id)) {
            let old = &self.live[at];
            inherit(&mut message, &old.message);
            if old.origin != origin {
                self.out.leave_out_at(old.origin, Skip::Superseded);
            }
            self.live[at] = Live { message, origin, line };
        } else {
            self.live.push(Live { message, origin, line });
        }
    }

    /// `$rewindTo`: that message and every later one are dropped (all of them when the
    /// id is not in the history, as the agent does).
    fn rewind(&mut self, id: &str) {
        let at = self.live.iter().position(|l| l.message.get("id").and_then(Value::as_str) == Some(id)).unwrap_or(0);
        let gone: Vec<Live> = self.live.drain(at..).collect();
        self.drop_all(gone);
    }

    fn drop_all(&mut self, gone: impl IntoIterator<Item = Live>) {
        for l in gone {
            let id = l.message.get("id").and_then(Value::as_str).unwrap_or("").to_string();
            if let Some(earlier) = self.dropped.insert(id, l) {
                self.out.leave_out_at(earlier.origin, Skip::OffThread);
            }
        }
    }

    /// A message taken out earlier and written again: the new copy supersedes it.
    fn returning(&mut self, id: &str, message: &mut Value) {
        if let Some(old) = self.dropped.remove(id) {
            inherit(message, &old.message);
            self.out.leave_out_at(old.origin, Skip::Superseded);
        }
    }

    /// Every message id the file has held so far.
    fn note_ids(&mut self, messages: &[Value]) {
        self.ids.extend(messages.iter().filter_map(|m| m.get("id").and_then(Value::as_str)).map(str::to_string));
    }

    /// A metadata update; a `$set` of `messages` replaces the history: a compression
    /// when it brings a new state snapshot, else the same history written again
    /// (a resume, a rollback) whose messages are new copies of the old.
    fn set(&mut self, set: &Map<String, Value>, origin: usize, line: usize) {
        let Some(messages) = set.get("messages").and_then(Value::as_array) else {
            self.out.leave_out(Skip::Bookkeeping);
            return;
        };
        if let Some(summary) = compression_summary(messages, &self.ids) {
            // The summary opens no turn of its own.
            self.summaries.insert(summary);
            self.note_ids(messages);
            self.flush(Some(line));
            for m in messages {
                self.live.push(Live { message: restated(m), origin, line });
            }
            return;
        }
        self.note_ids(messages);
        let old = std::mem::take(&mut self.live);
        let mut by_id: HashMap<String, Live> = old
            .into_iter()
            .map(|l| (l.message.get("id").and_then(Value::as_str).unwrap_or("").to_string(), l))
            .collect();
        for m in messages {
            let mut m = m.clone();
            let id = m.get("id").and_then(Value::as_str).unwrap_or("").to_string();
            if let Some(prev) = by_id.remove(&id) {
                inherit(&mut m, &prev.message);
                self.out.leave_out_at(prev.origin, Skip::Superseded);
            }
            self.returning(&id, &mut m);
            self.live.push(Live { message: m, origin, line });
        }
        // What the new history no longer holds was taken out (a rollback, or a resume
        // that writes it again next), in the order it was.
        let mut gone: Vec<Live> = by_id.into_values().collect();
        gone.sort_by_key(|l| l.origin);
        self.drop_all(gone);
        if messages.is_empty() {
            self.out.leave_out(Skip::Bookkeeping);
        }
    }

    /// Writes the history held so far as items; at a compression (`at` its line), a
    /// completed compaction event follows.
    fn flush(&mut self, at: Option<usize>) {
        let live = std::mem::take(&mut self.live);
        if at.is_none() {
            // The end: what was taken out and never came back is off the thread.
            let dropped: Vec<Live> = std::mem::take(&mut self.dropped).into_values().collect();
            for l in dropped {
                self.out.leave_out_at(l.origin, Skip::OffThread);
            }
        }
        let mut answered: HashSet<String> = HashSet::new();
        let mut open: Vec<(String, String)> = Vec::new(); // the latest reply's calls: (id, name)
        for l in &live {
            self.message(l, &mut answered, &mut open);
        }
        if let Some(line) = at {
            self.compactions += 1;
            let origin = self.out.current();
            self.out.push_from(
                origin,
                line,
                EventRecord::new(
                    Event::CompactionCompleted,
                    format!("gemini-compress-{}", self.compactions),
                    [("trigger", json!("auto")), ("pre_tokens", json!(self.last_prompt))],
                ),
            );
        }
    }

    fn message(&mut self, l: &Live, answered: &mut HashSet<String>, open: &mut Vec<(String, String)>) {
        let m = &l.message;
        let ty = m.get("type").and_then(Value::as_str).unwrap_or("");
        match ty {
            "user" => self.user(l, answered, open),
            "gemini" => self.reply(l, answered, open),
            "info" | "error" | "warning" => self.out.leave_out_at(l.origin, Skip::DisplayOnly),
            _ => {
                *self.out.skipped.entry(format!("message/{ty}")).or_default() += 1;
                self.out.leave_out_at(l.origin, Skip::Unknown);
            }
        }
    }

    /// A unique item id for a message (a message restated after a compression keeps
    /// its id in the file but is a new item).
    fn item_id(&mut self, id: &str, source: &Value) -> String {
        let mut out = id.to_string();
        let mut k = 1;
        while !self.written.insert(out.clone()) {
            k += 1;
            out = format!("{id}~{k}");
        }
        self.sources.insert(out.clone(), source.clone());
        out
    }

    fn user(&mut self, l: &Live, answered: &mut HashSet<String>, open: &mut Vec<(String, String)>) {
        let m = &l.message;
        let id = m.get("id").and_then(Value::as_str).unwrap_or("");
        let parts = parts(m.get("content"));
        let text: Vec<&str> = parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect();
        let text = text.join("");
        let trimmed = text.trim();
        let mut results = 0;
        for p in parts.iter().filter_map(|p| p.get("functionResponse")) {
            let call = response_call_id(p, open);
            if !answered.insert(call.clone()) {
                continue; // the same response written again (a resume restates it)
            }
            open.retain(|(c, _)| *c != call);
            let rid = self.item_id(&format!("{id}#{call}"), m);
            let (body, failed) = response_text(p.get("response"));
            let name = p.get("name").and_then(Value::as_str);
            self.push_result(l, &rid, &call, name, body, failed);
            results += 1;
        }
        if trimmed.is_empty() {
            if results == 0 {
                let why = if parts.iter().any(|p| p.get("functionResponse").is_some()) {
                    Skip::Superseded
                } else {
                    Skip::Empty
                };
                self.out.leave_out_at(l.origin, why);
            }
            return;
        }
        // Commands to the CLI (`/compress`, `?`) are never sent to the model.
        if trimmed.starts_with('/') || trimmed.starts_with('?') {
            self.out.leave_out_at(l.origin, Skip::DisplayOnly);
            return;
        }
        // The context the agent sends first (`<session_context>`, hook context) and its
        // own compression snapshot belong to the turn they open, not a prompt of their own.
        let context = [CONTEXT, "<session_context>", "<hook_context>"].iter().any(|p| trimmed.starts_with(p));
        // A message this tool wrote back (`--output-format gemini-cli`) is its injected kind.
        let injected = m.get(super::openhands::INJECTED_KEY).and_then(Value::as_str);
        if !context && !trimmed.contains(SNAPSHOT) && injected.is_none() && !self.summaries.contains(id) {
            self.turn += 1;
        }
        if context && self.workspace.is_none() {
            self.workspace = workspace_of(trimmed);
        }
        // The setup context of the versions before `<session_context>`, a content of its
        // own in a saved chat, is the agent's instructions, not the user's words: like a
        // Codex rollout's developer messages, never counted into the protected head
        // (which would summarize the user's task away).
        let role = if trimmed.starts_with(CONTEXT) { Role::System } else { Role::User };
        let item = self.item_id(id, m);
        let mut rec = message(&item, &format!("turn-{}", self.turn.max(1)), role, json!(text));
        rec.set_synthetic(injected.map(str::to_string));
        self.out.push_from(l.origin, l.line, rec);
    }

    fn reply(&mut self, l: &Live, answered: &mut HashSet<String>, open: &mut Vec<(String, String)>) {
        let m = &l.message;
        let id = m.get("id").and_then(Value::as_str).unwrap_or("");
        if let Some(model) = m.get("model").and_then(Value::as_str).filter(|s| !s.is_empty()) {
            self.model = Some(model.to_string());
        }
        let parts = parts(m.get("content"));
        let text: String = parts
            .iter()
            .filter(|p| p.get("thought").and_then(Value::as_bool) != Some(true))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect();
        let item = self.item_id(id, m);
        // Calls are the `functionCall` parts of the content when it has them, else the
        // recorded `toolCalls` (as the agent rebuilds its history).
        let mut calls: Vec<(String, String, Value, Option<&Value>)> = parts
            .iter()
            .filter_map(|p| p.get("functionCall"))
            .enumerate()
            .map(|(k, c)| {
                let name = c.get("name").and_then(Value::as_str).unwrap_or("tool").to_string();
                let cid = c.get("id").and_then(Value::as_str).map_or_else(|| format!("{item}.{k}"), str::to_string);
                (cid, name, c.get("args").cloned().unwrap_or(json!({})), None)
            })
            .collect();
        let recorded = m.get("toolCalls").and_then(Value::as_array);
        if calls.is_empty() {
            for (k, c) in recorded.into_iter().flatten().enumerate() {
                let name = c.get("name").and_then(Value::as_str).unwrap_or("tool").to_string();
                let cid = c.get("id").and_then(Value::as_str).map_or_else(|| format!("{item}.{k}"), str::to_string);
                calls.push((cid, name, c.get("args").cloned().unwrap_or(json!({})), Some(c)));
            }
        } else {
            // Results the content form left in `toolCalls`.
            for c in &mut calls {
                c.3 = recorded.into_iter().flatten().find(|r| r.get("id").and_then(Value::as_str) == Some(&c.0));
            }
        }
        if text.trim().is_empty() && calls.is_empty() && m.get("tokens").is_none_or(Value::is_null) {
            self.out.leave_out_at(l.origin, Skip::Empty);
            return;
        }
        let mut rec = message(&item, &format!("turn-{}", self.turn.max(1)), Role::Assistant, json!(text));
        for (c, n, a, _) in &calls {
            rec.push_call(Call::new(c.as_str(), n.as_str(), a));
        }
        if let Some(u) = usage(m.get("tokens")) {
            rec.usage = Some(u);
            self.last_prompt = prompt_tokens(m.get("tokens"));
        }
        self.out.push_from(l.origin, l.line, rec);
        open.clear();
        open.extend(calls.iter().map(|(c, n, _, _)| (c.clone(), n.clone())));
        // A call's recorded result is sent right after the reply (`<id>_response`).
        for (cid, name, _, recorded) in &calls {
            let Some(result) = recorded.and_then(|r| r.get("result")).filter(|v| !v.is_null()) else { continue };
            let status = recorded.and_then(|r| r.get("status")).and_then(Value::as_str);
            let (body, failed) = match result {
                Value::String(s) => (s.clone(), false),
                Value::Array(a) => {
                    let fr = a.iter().find_map(|p| p.get("functionResponse"));
                    fr.map_or_else(|| (text_of(result), false), |fr| response_text(fr.get("response")))
                }
                v => v
                    .get("functionResponse")
                    .map_or_else(|| (text_of(v), false), |fr| response_text(fr.get("response"))),
            };
            if !answered.insert(cid.clone()) {
                continue;
            }
            open.retain(|(c, _)| c != cid);
            let failed = failed || matches!(status, Some("error" | "cancelled"));
            let rid = self.item_id(&format!("{item}#{cid}"), m);
            self.push_result(l, &rid, cid, Some(name), body, failed);
        }
    }

    fn push_result(&mut self, l: &Live, id: &str, call: &str, name: Option<&str>, body: String, failed: bool) {
        let code = exit_code(&body);
        let mut r = tool_result(id, &format!("turn-{}", self.turn.max(1)), call, name, json!(body), failed);
        r.exit_code = code;
        self.out.push_from(l.origin, l.line, r);
    }

    fn finish(mut self) -> Imported {
        let window = self.model.as_deref().map_or(DEFAULT_TOKEN_LIMIT, token_limit);
        self.out.session.insert("id".into(), json!(self.session_id.unwrap_or_else(|| "gemini-cli".into())));
        self.out.session.insert(
            "runtime".into(),
            json!({"kind": "conversation", "native_compaction": true, "context_window": window}),
        );
        if let Some(root) = self.workspace {
            self.out.session.insert("workspace".into(), json!({"root": root}));
        }
        // Gemini CLI's tools: `run_shell_command` runs commands, `replace` edits files
        // (`write_file` is one of the default writers); `read_file` of older versions
        // names its file `absolute_path`.
        let mut shells: Vec<&str> = super::DEFAULT_SHELL_TOOLS.to_vec();
        shells.push("run_shell_command");
        let mut writers: Vec<&str> = super::DEFAULT_WRITE_TOOLS.to_vec();
        writers.push("replace");
        self.out.session.insert(
            "reanchor".into(),
            json!({"shell_tools": shells, "write_tools": writers,
                   "path_keys": ["path", "file_path", "filename", "notebook_path", "absolute_path", "dir_path"]}),
        );
        if let Some(m) = self.model {
            self.out.session.insert("model".into(), json!(m));
        }
        self.out
    }
}

/// Whether a `$set` of messages is a compression: near its start, a message the history
/// did not hold that opens a compression's new history — Gemini CLI's summary (a
/// `<state_snapshot>` user message, or any user message the agent's fixed "Got it."
/// reply follows: the summary's text is the model's), or the summary or checkpoint this
/// tool wrote back. Returns the summary's id.
fn compression_summary(messages: &[Value], known: &HashSet<String>) -> Option<String> {
    let new = |m: &Value| !m.get("id").and_then(Value::as_str).is_some_and(|id| known.contains(id));
    let head = &messages[..messages.len().min(4)];
    head.iter().enumerate().find_map(|(k, m)| {
        let acknowledged = head.get(k + 1).is_some_and(|next| {
            next.get("type").and_then(Value::as_str) == Some("gemini")
                && parts(next.get("content"))
                    .iter()
                    .any(|p| p.get("text").and_then(Value::as_str) == Some(ACKNOWLEDGED))
        });
        let opens = new(m) && m.get("type").and_then(Value::as_str) == Some("user") && (acknowledged || is_snapshot(m));
        opens.then(|| m.get("id").and_then(Value::as_str).unwrap_or("").to_string())
    })
}

/// Whether a history message is a compression's summary by its own text or mark: Gemini
/// CLI's state snapshot, or the summary or checkpoint this tool wrote back.
fn is_snapshot(m: &Value) -> bool {
    let injected = m.get(super::openhands::INJECTED_KEY).and_then(Value::as_str);
    m.get("type").and_then(Value::as_str) == Some("user")
        && (matches!(injected, Some("history_summary_fallback" | "checkpoint"))
            || parts(m.get("content"))
                .iter()
                .any(|p| p.get("text").and_then(Value::as_str).is_some_and(|t| t.contains(SNAPSHOT))))
}

/// What a write-back needs of a session: the whole document of a session of the older
/// single-document shape (`None` for JSON Lines), and the message each item was read
/// from, by item id.
pub struct Sources {
    pub document: Option<Map<String, Value>>,
    pub by_item: HashMap<String, Value>,
}

pub fn sources(raw: &[u8], file: &Path) -> Result<Sources> {
    let mut st = State::default();
    let document = if is_one_document(raw) {
        let doc = json_document(raw, file)?;
        st.document(&doc, raw, file)?;
        doc.as_object().cloned()
    } else {
        for (line, r) in super::common::json_lines(raw, file)? {
            st.out.begin(line);
            st.record(&r, line);
        }
        None
    };
    st.flush(None);
    Ok(Sources { document, by_item: st.sources })
}

/// A message of a compression's new history: no model call of the new context, so a
/// reply it restates carries a usage of size 0.
fn restated(m: &Value) -> Value {
    let mut m = m.clone();
    if let Some(o) = m.as_object_mut().filter(|o| o.get("type").and_then(Value::as_str) == Some("gemini")) {
        o.insert("tokens".into(), json!({"input": 0, "output": 0, "cached": 0, "thoughts": 0, "tool": 0, "total": 0}));
    }
    m
}

/// What a new copy of a message lacks and the old copy had: its usage and its model.
fn inherit(new: &mut Value, old: &Value) {
    for key in ["tokens", "model"] {
        let missing = new.get(key).is_none_or(Value::is_null);
        if let (true, Some(v)) = (missing, old.get(key).filter(|v| !v.is_null())) {
            if let Some(o) = new.as_object_mut() {
                o.insert(key.into(), v.clone());
            }
        }
    }
}

/// A message's content as parts (a string is one text part).
fn parts(content: Option<&Value>) -> Vec<Value> {
    match content {
        Some(Value::Array(a)) => {
            a.iter().map(|p| if let Value::String(s) = p { json!({"text": s}) } else { p.clone() }).collect()
        }
        Some(Value::String(s)) => vec![json!({"text": s})],
        Some(Value::Null) | None => Vec::new(),
        Some(v) => vec![v.clone()],
    }
}

/// The call a function response answers: its `id`, or (older versions wrote none) the
/// latest reply's first open call of the same name.
fn response_call_id(fr: &Value, open: &[(String, String)]) -> String {
    if let Some(id) = fr.get("id").and_then(Value::as_str) {
        return id.to_string();
    }
    let name = fr.get("name").and_then(Value::as_str).unwrap_or("");
    open.iter().find(|(_, n)| n == name).map_or_else(|| format!("response:{name}"), |(c, _)| c.clone())
}

/// A function response's text and whether it reports an error: `{output}`, `{error}`,
/// a string, or any other object as JSON.
fn response_text(response: Option<&Value>) -> (String, bool) {
    match response {
        Some(Value::String(s)) => (s.clone(), false),
        Some(Value::Object(o)) => {
            if let Some(e) = o.get("error").filter(|e| !e.is_null()) {
                return (e.as_str().map_or_else(|| e.to_string(), str::to_string), true);
            }
            match o.get("output").or_else(|| o.get("content")) {
                Some(Value::String(s)) => (s.clone(), false),
                _ => (Value::Object(o.clone()).to_string(), false),
            }
        }
        Some(v) => (text_of(v), false),
        None => (String::new(), false),
    }
}

/// The workspace the session context names: the first of its "Workspace Directories"
/// (current versions), or "the directory" it is working in (older ones).
fn workspace_of(context: &str) -> Option<String> {
    let mut lines = context.lines().map(str::trim);
    while let Some(line) = lines.next() {
        if let Some(dir) = line.strip_prefix("I'm currently working in the directory: ") {
            return Some(dir.trim().to_string()).filter(|d| !d.is_empty());
        }
        if line.contains("Workspace Directories")
            || line.starts_with("I'm currently working in the following directories")
        {
            return lines
                .next()
                .and_then(|l| l.strip_prefix("- "))
                .map(|d| d.trim().to_string())
                .filter(|d| !d.is_empty());
        }
    }
    None
}

/// The exit code `run_shell_command` reports in its output (`Exit Code: N`).
fn exit_code(text: &str) -> Option<i64> {
    text.lines().find_map(|l| l.trim().strip_prefix("Exit Code: ")?.trim().parse().ok())
}

/// A reply's usage: `tokens.input` is the prompt (cached tokens included: the figure
/// Gemini CLI compares), `output`, `thoughts` and `tool` (the tool-use prompt) the rest
/// of its total; so the input and cache fields hold the prompt exactly, and the size is
/// the reply's `total`.
fn usage(tokens: Option<&Value>) -> Option<Usage> {
    let t = tokens.filter(|t| t.is_object())?;
    let n = |k: &str| t.get(k).and_then(Value::as_u64).unwrap_or(0);
    Some(super::common::usage(
        n("input"),
        n("cached"),
        0,
        n("output").saturating_add(n("thoughts")).saturating_add(n("tool")),
        super::common::InputCount::WithCacheReads,
    ))
}

fn prompt_tokens(tokens: Option<&Value>) -> Option<u64> {
    tokens?.get("input")?.as_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_limit_is_the_agents_table() {
        assert_eq!(token_limit("gemini-2.5-pro"), 1_048_576);
        assert_eq!(token_limit("gemini-3.1-pro-preview"), 1_048_576);
        assert_eq!(token_limit("gemma-4-31b-it"), 256_000);
        assert_eq!(token_limit("something-new"), 1_048_576);
    }

    #[test]
    fn a_response_says_what_it_holds() {
        assert_eq!(response_text(Some(&json!({"output": "ok"}))), ("ok".into(), false));
        assert_eq!(response_text(Some(&json!({"error": "no such file"}))), ("no such file".into(), true));
        assert_eq!(exit_code("Output: x\nExit Code: 2\nProcess Group PGID: 7"), Some(2));
        assert_eq!(exit_code("Output: Exit Code: 2"), None);
    }

    #[test]
    fn the_workspace_is_the_first_directory_the_session_context_names() {
        let current =
            "<session_context>\nThis is the Gemini CLI.\n- **Workspace Directories:**\n  - /work/app\n  - /work/lib\n";
        assert_eq!(workspace_of(current).as_deref(), Some("/work/app"));
        let older = "I'm currently working in the directory: /home/me/proj\nHere is the folder structure";
        assert_eq!(workspace_of(older).as_deref(), Some("/home/me/proj"));
        assert_eq!(workspace_of("<session_context>\nnothing here"), None);
    }
}
