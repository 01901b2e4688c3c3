//! OpenHands V1 events (the agent SDK, `openhands-sdk`, which OpenHands runs on since
//! late 2025), read as `openhands`. Each event is told by its `kind`: `SystemPromptEvent`
//! (the system message), `MessageEvent` (a user's or the agent's message: its
//! `llm_message` is what the model is sent), `ActionEvent` (one tool call of a model
//! response; the calls of one response, `llm_response_id`, are one assistant message),
//! `ObservationEvent`, `UserRejectObservation` and `AgentErrorEvent` (a call's result),
//! `Condensation` (OpenHands' own compaction: the events it forgets leave the model's
//! context, its summary comes in at `summary_offset`). A conversation saved by the SDK
//! is a folder (`base_state.json`, `events/event-NNNNN-<id>.json`), read as one input
//! (see [`assemble_folder`], which also joins the app server's event folders and the
//! session folders of OpenHands before V1): its state gives the model and each
//! response's usage.
//!
//! Events name their parent (`parent_id`): the thread read is the active branch, from
//! the state's `leaf_event_id` (or the last event) back to the root; an event without a
//! parent follows the one before it in the log, as the SDK reads older logs.

use super::common::{text_of, tool_result, usage, Call, CanonicalRecord, EventRecord, Imported, InputCount};
use super::DEFAULT_SHELL_TOOLS;
use crate::error::{Error, Result};
use crate::transcript::{Event, Role, Skip, Usage};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Whether an event is one of the SDK's (a `kind`, and no V0 `action` / `observation`
/// name).
pub fn is_event(e: &Value) -> bool {
    e.get("kind").is_some_and(Value::is_string)
        && !e.get("action").is_some_and(Value::is_string)
        && !e.get("observation").is_some_and(Value::is_string)
}

/// Whether a record is a conversation's saved state (`base_state.json`).
pub fn is_state(e: &Value) -> bool {
    e.get("kind").is_none() && e.get("agent").is_some_and(Value::is_object) && e.get("id").is_some()
}

/// The item id of an event: an action's is its model response's (the calls of one
/// response are one assistant message), any other event's its own id.
pub fn event_item_id(e: &Value) -> Option<String> {
    let response = e.get("llm_response_id").and_then(Value::as_str).filter(|_| kind(e) == "ActionEvent");
    response.or_else(|| e.get("id").and_then(Value::as_str)).map(|id| format!("e{id}"))
}

fn kind(e: &Value) -> &str {
    e.get("kind").and_then(Value::as_str).unwrap_or("")
}

/// The SDK's events that the model is never sent: the conversation's state changes,
/// token ids, completion logs, streamed pieces, hooks, pauses.
const BOOKKEEPING: &[&str] = &[
    "ConversationStateUpdateEvent",
    "TokenEvent",
    "LLMCompletionLogEvent",
    "StreamingDeltaEvent",
    "HookExecutionEvent",
    "PauseEvent",
    "InterruptEvent",
    "CondensationRequest",
    "ACPToolCallEvent",
];

/// The SDK's tool names (its tool classes' names in snake case): its shell is
/// `terminal` (`execute_bash` in its first versions), its editors `file_editor` and
/// `planning_file_editor`, its plan `task_tracker`.
const SHELL_TOOLS: &[&str] = &["terminal", "execute_bash"];
const WRITE_TOOLS: &[&str] = &["file_editor", "planning_file_editor"];

/// The canonical records of a list of V1 events (any container: a folder, a JSON array,
/// JSON Lines, an evaluation output's `history`): `lines` gives the input line of each
/// (empty when not tracked), `metrics` an evaluation output's (the agent's usage per
/// model response; a folder's state, among the events, has its own).
pub fn import(events: &[Value], lines: &[usize], metrics: Option<&Value>, file: &Path) -> Imported {
    let mut st = Reader::default();
    if let Some(m) = metrics {
        st.read_metrics(m);
    }
    st.read(events, lines, file)
}

/// Which events are on the active branch. The branch is the path from the state's
/// `leaf_event_id` (or the last event with an id) to the root by `parent_id` (an event
/// without one, or whose parent is not in the log, follows the event before it; a
/// `parent_id` of `__root__` is a root). An event off that path is on an abandoned
/// branch when its parent is on the path (it is a sibling of the path's own event), or
/// when its parent is off; one that names no parent (a message this tool injected, an
/// older SDK's event) goes with the event before it.
fn active_branch(events: &[Value], state: Option<&Value>) -> Vec<bool> {
    let ids: Vec<Option<&str>> =
        events.iter().map(|e| e.get("id").and_then(Value::as_str).filter(|_| is_event(e))).collect();
    let at: HashMap<&str, usize> = ids.iter().enumerate().filter_map(|(k, id)| Some(((*id)?, k))).collect();
    let leaf = state
        .and_then(|s| s.get("leaf_event_id"))
        .and_then(Value::as_str)
        .and_then(|id| at.get(id).copied())
        .or_else(|| ids.iter().rposition(Option::is_some));
    let Some(leaf) = leaf else {
        return vec![true; events.len()]; // no event has an id: the log is the thread
    };
    // The event with an id before each event in the log, found in one pass.
    let mut before = Vec::with_capacity(ids.len());
    let mut last = None;
    for (k, id) in ids.iter().enumerate() {
        before.push(last);
        if id.is_some() {
            last = Some(k);
        }
    }
    let previous = |k: usize| before[k];
    // The parent an event names, when it is in the log (`None`: it names none, or one
    // that is not there, or `__root__`).
    let named = |k: usize| {
        let p = events[k].get("parent_id").and_then(Value::as_str)?;
        at.get(p).copied().filter(|&p| p != k)
    };
    let mut path = vec![false; events.len()];
    let mut k = leaf;
    loop {
        if path[k] {
            break; // a cycle
        }
        path[k] = true;
        let next = match events[k].get("parent_id").and_then(Value::as_str) {
            Some("__root__") => None,
            _ => named(k).or_else(|| previous(k)),
        };
        match next {
            Some(p) => k = p,
            None => break,
        }
    }
    let mut on = vec![false; events.len()];
    for k in 0..events.len() {
        on[k] = if path[k] || ids[k].is_none() {
            true
        } else if let Some(p) = named(k) {
            !path[p] && on[p]
        } else if events[k].get("parent_id").and_then(Value::as_str) == Some("__root__") {
            false // a root of its own, not the path's
        } else {
            previous(k).is_none_or(|p| on[p])
        };
    }
    on
}

#[derive(Default)]
struct Reader {
    out: Imported,
    turn: usize,
    /// Each model response's usage (from the state's metrics), given once.
    usage: HashMap<String, Usage>,
    /// The records of the model's context so far, by their event (what a condensation
    /// keeps or forgets): (event id, record index).
    view: Vec<(String, usize)>,
    /// The assistant message of the latest model response with calls: (response id,
    /// record index), while nothing else came after it.
    open_response: Option<(String, usize)>,
    /// Call id → tool name, for results.
    calls: HashMap<String, String>,
    condensations: usize,
    /// Item ids given so far.
    used: HashSet<String>,
    /// After a condensation, the mark of the turn it restated (`~c<n>`): the turn goes
    /// on under that name until the next user message.
    restated: String,
    model: Option<String>,
    workspace: Option<String>,
}

impl Reader {
    /// The records of the events (the state among them, if any, read first).
    fn read(mut self, events: &[Value], lines: &[usize], file: &Path) -> Imported {
        let state = events.iter().find(|e| is_state(e));
        if let Some(state) = state {
            self.read_state(state);
        }
        let on_thread = active_branch(events, state);
        for (k, e) in events.iter().enumerate() {
            self.out.begin(lines.get(k).copied().unwrap_or(0));
            if is_state(e) {
                self.out.leave_out(Skip::Header);
            } else if !on_thread[k] {
                self.out.leave_out(Skip::OffThread);
            } else {
                self.event(e, k);
            }
        }
        self.finish(file, state)
    }

    fn read_state(&mut self, state: &Value) {
        let llm = state.get("agent").and_then(|a| a.get("llm"));
        self.model = llm.and_then(|l| l.get("model")).and_then(Value::as_str).map(str::to_string);
        self.workspace =
            state.get("workspace").and_then(|w| w.get("working_dir")).and_then(Value::as_str).map(str::to_string);
        // `stats.usage_to_metrics.<usage id>.token_usages[]`: one per model response.
        let metrics = state.get("stats").and_then(|s| s.get("usage_to_metrics")).and_then(Value::as_object);
        for m in metrics.into_iter().flat_map(|m| m.values()) {
            self.read_metrics(m);
        }
    }

    /// The SDK's metrics of one LLM (`token_usages[]`, one per model response, by
    /// `response_id`): each response's usage. LiteLLM's prompt count holds the cached
    /// part.
    fn read_metrics(&mut self, m: &Value) {
        for u in m.get("token_usages").and_then(Value::as_array).into_iter().flatten() {
            let Some(rid) = u.get("response_id").and_then(Value::as_str).filter(|r| !r.is_empty()) else {
                continue;
            };
            let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
            let used = usage(
                n("prompt_tokens"),
                n("cache_read_tokens"),
                n("cache_write_tokens"),
                n("completion_tokens"),
                InputCount::WithCache,
            );
            self.usage.entry(rid.to_string()).or_insert(used);
        }
    }

    fn event(&mut self, e: &Value, k: usize) {
        let id = e.get("id").and_then(Value::as_str).map_or_else(|| format!("#{k}"), str::to_string);
        let item = format!("e{id}");
        let turn = self.turn_id();
        match kind(e) {
            "SystemPromptEvent" => {
                let text = [e.get("system_prompt"), e.get("dynamic_context")]
                    .into_iter()
                    .flatten()
                    .map(text_of)
                    .filter(|t| !t.is_empty())
                    .collect::<Vec<_>>()
                    .join("\n\n");
                self.push_view(&id, super::common::message(&item, &turn, Role::System, json!(text)));
            }
            "MessageEvent" => self.message(e, &id, &item),
            "ActionEvent" => self.action(e, &id),
            "ObservationEvent" | "UserRejectObservation" | "AgentErrorEvent" => self.result(e, &id, &item, &turn),
            "CondensationSummaryEvent" => {
                let text = e.get("summary").and_then(Value::as_str).unwrap_or("");
                self.push_view(&id, super::common::message(&item, &turn, Role::User, json!(text)));
            }
            "Condensation" => self.condensation(e, &id),
            "ConversationErrorEvent" => self.out.leave_out(Skip::DisplayOnly),
            k if BOOKKEEPING.contains(&k) => self.out.leave_out(Skip::Bookkeeping),
            other => {
                let other = if other.is_empty() { "(no kind)" } else { other };
                self.out.skip(&format!("kind/{other}"));
            }
        }
    }

    fn push_view(&mut self, event: &str, rec: impl Into<CanonicalRecord>) {
        self.open_response = None;
        let mut rec = rec.into();
        // Item ids are unique: an event logged twice (or a response id met again) is
        // told apart.
        let id = match &mut rec {
            CanonicalRecord::Message(m) => Some(&mut m.id),
            CanonicalRecord::ToolResult(r) => Some(&mut r.id),
            CanonicalRecord::Event(_) => None,
        };
        if let Some(id) = id {
            let mut unique = id.to_string();
            let mut k = 1;
            while !self.used.insert(unique.clone()) {
                k += 1;
                unique = format!("{id}~{k}");
            }
            *id = unique.into();
        }
        let at = self.out.push(rec);
        self.view.push((event.to_string(), at));
    }

    fn message(&mut self, e: &Value, id: &str, item: &str) {
        let m = e.get("llm_message").unwrap_or(&Value::Null);
        let source = e.get("source").and_then(Value::as_str).unwrap_or("");
        let role = match m.get("role").and_then(Value::as_str) {
            Some("assistant") => Role::Assistant,
            Some("system") => Role::System,
            Some("user") => Role::User,
            _ if source == "agent" => Role::Assistant,
            _ => Role::User,
        };
        let mut parts = vec![text_of(m.get("content").unwrap_or(&Value::Null))];
        // What the agent's context added to the message (skills, rules) is sent with it.
        parts.extend(e.get("extended_content").and_then(Value::as_array).into_iter().flatten().map(text_of));
        let text = parts.into_iter().filter(|t| !t.is_empty()).collect::<Vec<_>>().join("\n");
        let injected = e.get(super::openhands::INJECTED_KEY).and_then(Value::as_str);
        if role == Role::User && injected.is_none() {
            self.turn += 1;
            self.restated.clear();
        }
        let mut rec = super::common::message(item, &self.turn_id(), role, json!(text));
        rec.set_synthetic(injected.map(str::to_string));
        if role == Role::Assistant {
            rec.usage = self.response_usage(e);
        }
        self.push_view(id, rec);
    }

    /// An action: a call of its model response's assistant message (made by the first
    /// action of the response; the thought is the first's only).
    fn action(&mut self, e: &Value, id: &str) {
        let response = e.get("llm_response_id").and_then(Value::as_str).unwrap_or("");
        let call = e.get("tool_call").unwrap_or(&Value::Null);
        let call_id = e
            .get("tool_call_id")
            .or_else(|| call.get("id"))
            .and_then(Value::as_str)
            .map_or_else(|| id.to_string(), str::to_string);
        let name = call.get("name").or_else(|| e.get("tool_name")).and_then(Value::as_str).unwrap_or("").to_string();
        // The model's own arguments (the action object is the SDK's parse of them).
        let arguments = match call.get("arguments") {
            Some(a) => super::common::arguments(Some(a)),
            None => action_arguments(e.get("action").unwrap_or(&Value::Null)),
        };
        self.calls.insert(call_id.clone(), name.clone());
        let joins =
            self.open_response.as_ref().filter(|(r, _)| !response.is_empty() && r == response).map(|(_, at)| *at);
        if let Some(at) = joins {
            self.out.joined();
            if let Some(m) = self.out.message_mut(at) {
                m.push_call(Call::new(call_id.as_str(), name.as_str(), &arguments));
            }
            return;
        }
        let thought = text_of(e.get("thought").unwrap_or(&Value::Null));
        let item = if response.is_empty() { format!("e{id}") } else { format!("e{response}") };
        let mut rec = super::common::message(&item, &self.turn_id(), Role::Assistant, json!(thought));
        rec.push_call(Call::new(call_id.as_str(), name.as_str(), &arguments));
        rec.usage = self.response_usage(e);
        self.push_view(id, rec);
        let at = self.out.records.len() - 1;
        self.open_response = (!response.is_empty()).then(|| (response.to_string(), at));
    }

    fn result(&mut self, e: &Value, id: &str, item: &str, turn: &str) {
        let call_id = e.get("tool_call_id").and_then(Value::as_str).unwrap_or("").to_string();
        let name = e
            .get("tool_name")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| self.calls.get(&call_id).cloned());
        let obs = e.get("observation").unwrap_or(&Value::Null);
        let (text, failed, code) = match kind(e) {
            "UserRejectObservation" => {
                let reason = e.get("rejection_reason").and_then(Value::as_str).unwrap_or("User rejected the action");
                (format!("Action rejected: {reason}"), true, None)
            }
            "AgentErrorEvent" => (e.get("error").and_then(Value::as_str).unwrap_or("").to_string(), true, None),
            _ => observation(obs),
        };
        let mut rec = tool_result(item, turn, &call_id, name.as_deref(), json!(text), failed);
        rec.exit_code = code;
        self.push_view(id, rec);
    }

    /// OpenHands' compaction: a completed compaction, then the context the model sees
    /// from now on — the events kept, in their order, with the summary at its offset —
    /// restated under new ids.
    fn condensation(&mut self, e: &Value, id: &str) {
        let forgotten: HashSet<&str> = e
            .get("forgotten_event_ids")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let pre_tokens = self.last_call_total();
        self.condensations += 1;
        let n = self.condensations;
        self.out.push(EventRecord::new(
            Event::CompactionCompleted,
            format!("openhands-condensation-{n}"),
            [("trigger", json!("auto")), ("pre_tokens", json!(pre_tokens))],
        ));
        self.open_response = None;
        let mut kept: Vec<(String, usize)> =
            std::mem::take(&mut self.view).into_iter().filter(|(ev, _)| !forgotten.contains(ev.as_str())).collect();
        // A result whose call was forgotten leaves with it (the SDK's view keeps calls
        // and results in pairs).
        let calls: HashSet<String> = kept
            .iter()
            .filter_map(|(_, at)| self.out.records[*at].as_message()?.tool_calls.as_ref())
            .flatten()
            .map(|c| c.id.to_string())
            .collect();
        kept.retain(|(_, at)| match &self.out.records[*at] {
            CanonicalRecord::ToolResult(r) => calls.contains(r.call_id.as_ref()),
            _ => true,
        });
        // The summary and where it goes (both given, or no summary in the context).
        let offset = e.get("summary_offset").and_then(Value::as_u64).map(|o| (o as usize).min(kept.len()));
        let summary = e.get("summary").and_then(Value::as_str).zip(offset);
        let mut view = Vec::with_capacity(kept.len() + 1);
        for (k, (event, at)) in kept.iter().enumerate() {
            if let Some((text, _)) = summary.filter(|(_, o)| *o == k) {
                self.summary(id, text, n, &mut view);
            }
            let mut rec = self.out.records[*at].clone();
            // Restated under new ids, in turns of their own (a later checkpoint still
            // tells the turns after the condensation from the ones it restates).
            match &mut rec {
                CanonicalRecord::Message(m) => {
                    m.id = format!("{}~c{n}", m.id).into();
                    m.set_turn(restated_turn(m.turn(), n));
                }
                CanonicalRecord::ToolResult(r) => {
                    r.id = format!("{}~c{n}", r.id).into();
                    r.turn = r.turn.as_ref().map(|t| restated_turn(t, n).into());
                }
                CanonicalRecord::Event(_) => {}
            }
            // A restated reply is no model call: its usage is the call's that made it.
            if let Some(m) = rec.as_message_mut() {
                if m.role == Role::Assistant {
                    m.usage = Some(usage(0, 0, 0, 0, InputCount::Uncached));
                }
            }
            let origin = self.out.current();
            let line = self.out.line;
            self.out.restating = Some(origin);
            let new_at = self.out.push_from(origin, line, rec);
            self.out.restating = None;
            view.push((event.clone(), new_at));
        }
        if let Some((text, _)) = summary.filter(|(_, o)| *o == kept.len()) {
            self.summary(id, text, n, &mut view);
        }
        self.view = view;
        // The turn goes on in its restated form.
        self.restated = format!("~c{n}");
    }

    /// The condensation's summary, a user message in the context (as the SDK sends it).
    fn summary(&mut self, id: &str, text: &str, n: usize, view: &mut Vec<(String, usize)>) {
        let turn = format!("turn-{}~c{n}", self.turn);
        let at = self.out.push(super::common::message(&format!("c{id}-summary"), &turn, Role::User, json!(text)));
        view.push((format!("{id}-summary"), at));
    }

    /// The current turn's id.
    fn turn_id(&self) -> String {
        format!("turn-{}{}", self.turn, self.restated)
    }

    /// The latest model call's total, its prompt and its output (what the context held
    /// before a condensation).
    fn last_call_total(&self) -> u64 {
        self.out
            .records
            .iter()
            .rev()
            .filter_map(|r| r.as_message()?.usage.as_ref())
            .map(|u| u.input_tokens + u.cache_read_tokens + u.cache_write_tokens + u.output_tokens)
            .find(|&t| t > 0)
            .unwrap_or(0)
    }

    fn response_usage(&mut self, e: &Value) -> Option<Usage> {
        let rid = e.get("llm_response_id").and_then(Value::as_str)?;
        self.usage.remove(rid)
    }

    fn finish(mut self, file: &Path, state: Option<&Value>) -> Imported {
        let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let id = state.and_then(|s| s.get("id")).and_then(Value::as_str).map_or(stem, str::to_string);
        self.out.session.insert("id".into(), json!(id));
        self.out.session.insert("runtime".into(), json!({"kind": "agent-runner"}));
        let mut shells: Vec<&str> = DEFAULT_SHELL_TOOLS.to_vec();
        shells.extend(SHELL_TOOLS);
        let mut writers: Vec<&str> = super::DEFAULT_WRITE_TOOLS.to_vec();
        writers.extend(WRITE_TOOLS);
        self.out.session.insert("reanchor".into(), json!({"shell_tools": shells, "write_tools": writers}));
        if let Some(root) = self.workspace {
            self.out.session.insert("workspace".into(), json!({"root": root}));
        }
        if let Some(model) = self.model {
            self.out.session.insert("model".into(), json!(model));
        }
        self.out
    }
}

/// The turn a record restated by condensation `n` is in: its own turn's, marked `~c<n>`
/// (once: a turn restated again drops the earlier mark).
fn restated_turn(turn: &str, n: usize) -> String {
    let base = turn.split_once('~').map_or(turn, |(base, _)| base);
    format!("{base}~c{n}")
}

/// An observation's text, whether it failed, and a command's exit code. The SDK's
/// observations hold `content` (text blocks; a string in its first versions, or
/// `output`) and `is_error` (`error` before); a terminal's exit code is `exit_code` or
/// its `metadata`'s.
///
/// The text is what the model is sent: a terminal's output between its metadata's
/// `prefix` and `suffix`, followed by its working directory, its Python interpreter and
/// its exit code (as the SDK's `TerminalObservation` writes them); a failed
/// observation opens with the SDK's error header.
fn observation(obs: &Value) -> (String, bool, Option<i64>) {
    let content = obs.get("content").or_else(|| obs.get("output")).unwrap_or(&Value::Null);
    let mut text = text_of(content);
    let failed = [obs.get("is_error"), obs.get("error")].into_iter().flatten().any(|v| v.as_bool() == Some(true));
    let meta = obs.get("metadata").filter(|m| m.is_object());
    let code = obs
        .get("exit_code")
        .filter(|c| !c.is_null())
        .or_else(|| meta.and_then(|m| m.get("exit_code")))
        .and_then(Value::as_i64);
    let terminal = matches!(kind(obs), "TerminalObservation" | "ExecuteBashObservation");
    if let Some(m) = meta.filter(|_| terminal) {
        let field = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("");
        text = format!("{}{text}{}", field("prefix"), field("suffix"));
        if !field("working_dir").is_empty() {
            text.push_str(&format!("\n[Current working directory: {}]", field("working_dir")));
        }
        if !field("py_interpreter_path").is_empty() {
            text.push_str(&format!("\n[Python interpreter: {}]", field("py_interpreter_path")));
        }
        match m.get("exit_code").and_then(Value::as_i64) {
            Some(-1) | None => {}
            Some(c) => text.push_str(&format!("\n[Command finished with exit code {c}]")),
        }
    }
    if failed {
        text = format!("{ERROR_HEADER}\n{text}");
    }
    (text, failed, code)
}

/// What the SDK puts before a failed observation's content (its own text block).
const ERROR_HEADER: &str = "[An error occurred during execution.]\n";

/// An action's arguments when its model call was not kept: the action without its
/// `kind`.
fn action_arguments(action: &Value) -> Value {
    match action {
        Value::Object(o) => {
            Value::Object(o.iter().filter(|(k, _)| *k != "kind").map(|(k, v)| (k.clone(), v.clone())).collect())
        }
        v => v.clone(),
    }
}

/// The name of an event file the SDK writes: `event-<index>-<event id>.json`, the index
/// of at least five digits.
pub fn event_index(name: &str) -> Option<u64> {
    let rest = name.strip_prefix("event-")?.strip_suffix(".json")?;
    let (index, id) = rest.split_once('-')?;
    let id_ok = id.len() >= 8 && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    (index.len() >= 5 && index.bytes().all(|b| b.is_ascii_digit()) && id_ok).then(|| index.parse().ok())?
}

/// An event file of the OpenHands app server (V1's local GUI keeps a conversation's
/// events as `<persistence>/v1/events/<conversation id>/<YYYYMMDDHHMMSS>_<Kind>_<id
/// hex>`, pretty-printed, no extension).
pub fn is_server_event_file(name: &str) -> bool {
    let Some((time, rest)) = name.split_once('_') else { return false };
    let Some((kind, id)) = rest.rsplit_once('_') else { return false };
    time.len() == 14
        && time.bytes().all(|b| b.is_ascii_digit())
        && !kind.is_empty()
        && kind.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && id.len() == 32
        && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// An event file of OpenHands before V1 (its GUI's file store keeps a conversation as
/// `sessions/<id>/events/<event id>.json`, one event each): its event id.
pub fn v0_event_index(name: &str) -> Option<u64> {
    let id = name.strip_suffix(".json")?;
    (!id.is_empty() && id.len() <= 18 && id.bytes().all(|b| b.is_ascii_digit())).then(|| id.parse().ok())?
}

/// Whether a folder's lowest-numbered `<n>.json` holds an event of OpenHands before V1
/// (a string `action` or `observation`): numbered JSON files are common, this layout
/// is read whole only when its first event says so.
fn holds_v0_events(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    let first = entries
        .filter_map(Result::ok)
        .filter_map(|e| Some((v0_event_index(&e.file_name().to_string_lossy())?, e.path())))
        .min_by_key(|(n, _)| *n);
    let Some((_, path)) = first else { return false };
    let event = std::fs::read(&path).ok().and_then(|raw| serde_json::from_slice::<Value>(&raw).ok());
    event.is_some_and(|e| ["action", "observation"].iter().any(|k| e.get(*k).is_some_and(Value::is_string)))
}

/// The folder of a conversation's event files: `dir` itself when it holds the app
/// server's event files, its `events/` when it is a conversation the SDK (or the file
/// store of OpenHands before V1) saved, or `dir` when it is that `events/` folder.
///
/// `named`: whether `dir` was named as an input. A walk asks of every folder it meets,
/// so it looks into a folder only when its names say it may be one: an `events/` in it,
/// the name `events`, or a conversation id (the app server names its folders so);
/// listing every folder a second time cost a large walk half again its time.
pub fn events_folder(dir: &Path, named: bool) -> Option<PathBuf> {
    let holds = |d: &Path, is_event: fn(&str) -> bool| {
        std::fs::read_dir(d)
            .ok()
            .is_some_and(|mut it| it.any(|e| e.ok().is_some_and(|e| is_event(&e.file_name().to_string_lossy()))))
    };
    let sdk = |name: &str| event_index(name).is_some();
    let inner = dir.join("events");
    if inner.is_dir() && (holds(&inner, sdk) || holds_v0_events(&inner)) {
        return Some(inner);
    }
    let name = dir.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let is_events = name == "events";
    let server = (named || is_conversation_id(&name)) && holds(dir, is_server_event_file);
    ((is_events && (holds(dir, sdk) || holds_v0_events(dir))) || server).then(|| dir.to_path_buf())
}

/// The conversation folders that files named as inputs belong to: an event file (the
/// SDK's `events/event-NNNNN-<id>.json`, an older session's `events/<n>.json`, the app
/// server's `<conversation id>/<time>_<Kind>_<id>`), or any file beside the SDK's
/// `base_state.json` and `events/` (the state, the task tracker's `TASKS.json`), is read
/// as its conversation (or as its `events/` folder when nothing beside it makes one):
/// an event file alone is one event of a conversation, not a transcript. Each folder is
/// looked at once (the files of a batch share few folders).
#[derive(Default)]
pub struct ConversationFiles {
    /// Per folder: the conversation its files belong to, and whether every file of it
    /// does (the SDK's conversation folder) or only its event files.
    folders: std::collections::HashMap<PathBuf, Option<(PathBuf, bool)>>,
}

impl ConversationFiles {
    /// The conversation folder `file` belongs to, if any.
    pub fn of(&mut self, file: &Path) -> Option<PathBuf> {
        let name = file.file_name()?.to_string_lossy();
        let parent = file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let (conv, every) =
            self.folders.entry(parent.to_path_buf()).or_insert_with(|| Self::folder(parent)).as_ref()?;
        let event = event_index(&name).is_some() || v0_event_index(&name).is_some() || is_server_event_file(&name);
        (*every || event).then(|| conv.clone())
    }

    fn folder(dir: &Path) -> Option<(PathBuf, bool)> {
        let sdk = |d: &Path| d.join("base_state.json").is_file() && events_folder(d, false) == Some(d.join("events"));
        if sdk(dir) {
            return Some((dir.to_path_buf(), true));
        }
        let name = dir.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
        if name == "events" && events_folder(dir, true).as_deref() == Some(dir) {
            let conv = dir.parent().filter(|c| !c.as_os_str().is_empty()).unwrap_or(Path::new("."));
            let beside = events_folder(conv, false) == Some(conv.join("events"));
            return Some((if beside { conv } else { dir }.to_path_buf(), false));
        }
        (is_conversation_id(&name) && events_folder(dir, false).is_some()).then(|| (dir.to_path_buf(), false))
    }
}

/// A conversation id as the app server names its folders: a UUID, with or without its
/// hyphens.
fn is_conversation_id(name: &str) -> bool {
    let hex: String = name.chars().filter(|c| *c != '-').collect();
    let hyphens = name.len() - hex.len();
    hex.len() == 32
        && hex.bytes().all(|b| b.is_ascii_hexdigit())
        && (hyphens == 0 || (hyphens == 4 && name.len() == 36))
}

/// A conversation folder as one input: its events in their order, one per line (line N
/// is the N-th event), then its `base_state.json` when it has one. The SDK's files are
/// in the order of their index, those of OpenHands before V1 of their event id, the app
/// server's by each event's `timestamp` (their names keep only the second). Each file
/// is read as JSON on its own, so a bad one is named with its line and column.
pub fn assemble_folder(dir: &Path) -> Result<Vec<u8>> {
    let events = events_folder(dir, true)
        .ok_or_else(|| Error::bad_input(dir, "no OpenHands events (events/event-*.json) here"))?;
    // (order, file): the SDK's index, or the app server's event time.
    let mut files: Vec<((String, u64, String), PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(&events).map_err(|e| Error::read(&events, e))? {
        let entry = entry.map_err(|e| Error::read(&events, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(index) = event_index(&name).or_else(|| v0_event_index(&name)) {
            files.push(((String::new(), index, name), entry.path()));
        } else if is_server_event_file(&name) {
            files.push(((String::new(), 0, name), entry.path()));
        } else if !name.starts_with('.') {
            // The SDK keeps its lock there (`.eventlog.lock`); anything else is named.
            crate::ui::warn(&format!(
                "{}: skipped: not an event file of this conversation (event-NNNNN-<id>.json)",
                crate::ui::escape(&entry.path().display().to_string())
            ));
        }
    }
    let mut read = Vec::with_capacity(files.len());
    for (mut order, path) in files {
        let (value, raw) = read_event_file(&path)?;
        if order.1 == 0 && is_server_event_file(&order.2) {
            order.0 = value.get("timestamp").and_then(Value::as_str).unwrap_or("").to_string();
        }
        read.push((order, path, value, raw));
    }
    read.sort_by(|a, b| a.0.cmp(&b.0));
    let state = events.parent().map(|p| p.join("base_state.json")).filter(|p| p.is_file());
    if let Some(path) = state {
        let (value, raw) = read_event_file(&path)?;
        read.push(((String::new(), 0, String::new()), path, value, raw));
    }
    let mut out = Vec::new();
    for (_, path, value, raw) in read {
        let trimmed = raw.trim_ascii();
        if trimmed.contains(&b'\n') || trimmed.contains(&b'\r') {
            out.extend(serde_json::to_vec(&value).map_err(|e| Error::bad_input(&path, e.to_string()))?);
        } else {
            out.extend_from_slice(trimmed);
        }
        out.push(b'\n');
    }
    Ok(out)
}

/// One event file (or the state), read and parsed: a JSON object, or an error at its
/// line and column.
fn read_event_file(path: &Path) -> Result<(Value, Vec<u8>)> {
    let raw = std::fs::read(path).map_err(|e| Error::read(path, e))?;
    let value: Value = serde_json::from_slice(&raw).map_err(|e| {
        let text = String::from_utf8_lossy(&raw);
        let line = text.lines().nth(e.line().saturating_sub(1)).unwrap_or("");
        let (col, message) = crate::error::serde_position(&e, line);
        Error::bad_line(path, e.line().max(1), col, message)
    })?;
    if !value.is_object() {
        return Err(Error::bad_line(path, 1, 1, "expected a JSON object (one event)"));
    }
    Ok((value, raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_file_is_named_by_its_index_and_id() {
        assert_eq!(event_index("event-00012-0a1b2c3d-4e5f.json"), Some(12));
        assert_eq!(event_index("event-123456-0a1b2c3d4e5f.json"), Some(123_456), "more than five digits");
        assert_eq!(event_index("event-0012-0a1b2c3d.json"), None, "fewer than five digits");
        assert_eq!(event_index("event-00012-xyz.json"), None);
        assert_eq!(event_index(".eventlog.lock"), None);
        assert_eq!(event_index("base_state.json"), None);
        assert_eq!(v0_event_index("17.json"), Some(17));
        assert_eq!(v0_event_index("0.json"), Some(0));
        assert_eq!(v0_event_index("17a.json"), None);
        assert_eq!(v0_event_index(".json"), None);
        let server = "20261207182300_ActionEvent_0acd1acedf1b4c458c0afeed80897d1e";
        assert!(is_server_event_file(server));
        assert!(!is_server_event_file("20261207182300_ActionEvent_0acd1ace"), "a short id");
        assert!(!is_server_event_file("2026120718230_ActionEvent_0acd1acedf1b4c458c0afeed80897d1e"));
        assert!(!is_server_event_file(&format!("{server}.json")));
    }

    /// Each shape of the SDK's observations: text blocks (`is_error`), the first
    /// versions' string `content` or `output` (`error`), an exit code of its own or in
    /// its `metadata`.
    #[test]
    fn an_observation_gives_its_text_failure_and_exit_code() {
        let blocks = json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "is_error": false, "metadata": {"exit_code": 2, "suffix": "\n[done]"}, "kind": "TerminalObservation"});
        let sent = "a\nb\n[done]\n[Command finished with exit code 2]";
        assert_eq!(observation(&blocks), (sent.to_string(), false, Some(2)));
        let old = json!({"output": "boom", "error": true, "exit_code": 1, "kind": "ExecuteBashObservation"});
        assert_eq!(observation(&old), (format!("{ERROR_HEADER}\nboom"), true, Some(1)));
        let editor = json!({"content": [{"type": "text", "text": "a"}], "is_error": false, "kind": "FileEditorObservation",
            "metadata": {"suffix": "not a terminal's"}});
        assert_eq!(observation(&editor), ("a".to_string(), false, None));
        let string = json!({"content": "stdout\n", "kind": "ExecuteBashObservation"});
        assert_eq!(observation(&string), ("stdout\n".to_string(), false, None));
    }

    #[test]
    fn a_turn_restated_again_keeps_one_mark() {
        assert_eq!(restated_turn("turn-3", 1), "turn-3~c1");
        assert_eq!(restated_turn("turn-3~c1", 2), "turn-3~c2");
    }
}
