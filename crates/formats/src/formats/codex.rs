//! Codex CLI rollout JSONL (SPEC 1 "Other formats"): `response_item` messages and
//! calls paired with their outputs by `call_id`, `token_count` usage attached to the
//! latest assistant item, `turn_context` constraints, `compacted` history. Also the
//! rollouts of the versions before the `{type, payload}` wrapper: response items one per
//! line (the first Rust versions, 2025) or in one JSON document (the TypeScript Codex,
//! 0.1.x).

use super::common::{
    document_error, is_document, json_document, json_lines, message, text_of, tool_result, Call, CanonicalRecord,
    EventRecord, Imported,
};
use crate::error::Result;
use crate::transcript::{Event, Role, Skip};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::Path;

/// Top-level record types that carry nothing model-visible for the policy (0.171 adds
/// `token_usage_record`, the usage `token_count` reports again, and `world_state`).
const QUIET: &[&str] = &["session_meta", "turn_context", "event_msg", "token_usage_record", "world_state", "harness"];
/// `response_item` types with no text the model is resent (reasoning is encrypted).
const QUIET_ITEMS: &[&str] = &["reasoning", "ghost_snapshot", "compaction"];
/// The response items a rollout of the versions before the `{type, payload}` wrapper
/// wrote bare, one per line (2025).
const BARE_ITEMS: &[&str] = &[
    "message",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "local_shell_call_output",
    "reasoning",
    "agent_message",
    "web_search_call",
];

/// Whether a response item is a call's output (the types the importer pairs with calls
/// by `call_id`; the writer and `validate` read them the same way).
pub fn is_output(item: &Value) -> bool {
    matches!(
        item.get("type").and_then(Value::as_str),
        Some("function_call_output" | "custom_tool_call_output" | "local_shell_call_output")
    )
}

/// Whether a response item is a call that an output answers by `call_id`.
pub fn is_call(item: &Value) -> bool {
    matches!(item.get("type").and_then(Value::as_str), Some("function_call" | "custom_tool_call" | "local_shell_call"))
}

/// Whether the input is a rollout of the TypeScript Codex (0.1.x): one JSON document,
/// which no Codex resumes (the later versions read JSON Lines only).
fn is_typescript_rollout(raw: &[u8]) -> bool {
    is_document(raw, "items")
}

/// Why the shapes no Codex resumes from a file are not written back.
const TYPESCRIPT_ROLLOUT: &str = "a rollout of the TypeScript Codex (0.1.x, one JSON document), which no Codex resumes";
const EXEC_OUTPUT: &str =
    "the output of `codex exec --json`, which Codex does not resume (its session is the rollout under ~/.codex/sessions)";

/// Whether the records are `codex exec --json`'s output (its events, `thread.started`
/// first) rather than a rollout.
fn is_exec_stream(lines: &[(usize, Value)]) -> bool {
    let exec = |r: &Value| r.get("type").and_then(Value::as_str).is_some_and(is_exec_event);
    lines.iter().take(4).any(|(_, r)| exec(r)) || is_old_exec_stream(lines)
}

/// The event types `codex exec --json` prints (its first lines tell it from a rollout).
pub fn is_exec_event(ty: &str) -> bool {
    matches!(ty, "thread.started" | "turn.started" | "item.started" | "item.completed")
}

/// Whether the records are `codex exec --json`'s output of the versions before the
/// `thread.started` events (2025, 0.4x and earlier): a line of the run's settings
/// (`sandbox`, `approval`, `workdir`), the prompt, then `{id, msg}` events.
fn is_old_exec_stream(lines: &[(usize, Value)]) -> bool {
    lines.first().is_some_and(|(_, r)| ["sandbox", "approval", "workdir"].iter().all(|k| r.get(k).is_some()))
}

pub fn import(raw: &[u8], file: &Path) -> Result<Imported> {
    let mut st = State::default();
    if is_typescript_rollout(raw) {
        st.out.not_resumable = Some(TYPESCRIPT_ROLLOUT);
        st.document(&json_document(raw, file)?, raw, file)?;
        return Ok(st.finish());
    }
    let lines = json_lines(raw, file)?;
    if is_exec_stream(&lines) {
        st.out.not_resumable = Some(EXEC_OUTPUT);
    }
    if is_old_exec_stream(&lines) {
        let mut patches = HashMap::new();
        for (line, r) in &lines {
            st.out.begin(*line);
            st.old_exec_event(r, *line, &mut patches);
        }
        return Ok(st.finish());
    }
    if is_exec_stream(&lines) {
        for (line, r) in &lines {
            st.out.begin(*line);
            st.exec_event(r);
        }
        return Ok(st.finish());
    }
    for (line, r) in &lines {
        st.out.begin(*line);
        let ty = r.get("type").and_then(Value::as_str).unwrap_or("");
        let Some(p) = r.get("payload") else {
            st.bare(r, ty, &format!("L{line}"));
            continue;
        };
        match ty {
            "session_meta" => {
                if st.session_id.is_none() {
                    st.version = p.get("cli_version").and_then(Value::as_str).map(str::to_string);
                    st.session_id = p.get("id").and_then(Value::as_str).map(str::to_string);
                    st.cwd = st.cwd.take().or_else(|| p.get("cwd").and_then(Value::as_str).map(str::to_string));
                }
                st.out.leave_out(Skip::Header);
            }
            "turn_context" => {
                st.turn_context(p);
                st.out.leave_out(Skip::Bookkeeping);
            }
            "response_item" => st.item(p, &format!("L{line}")),
            "event_msg" => {
                st.event(p, *line);
                st.out.leave_out(Skip::Bookkeeping);
            }
            "compacted" => st.compacted(p, *line),
            _ if QUIET.contains(&ty) => st.out.leave_out(Skip::Bookkeeping),
            _ => st.out.skip(if ty.is_empty() { "(no type)" } else { ty }),
        }
    }
    Ok(st.finish())
}

#[derive(Default)]
struct State {
    out: Imported,
    session_id: Option<String>,
    cwd: Option<String>,
    mode: Option<String>,
    permission: Option<String>,
    window: Option<u64>,
    turn: String,
    turns: usize,
    /// Index of the assistant record that collects consecutive calls.
    open_assistant: Option<usize>,
    /// Index of the latest assistant record (for `token_count`).
    last_assistant: Option<usize>,
    names: HashMap<String, String>,
    compactions: usize,
    /// Whether the latest assistant record already holds a model call's usage.
    usage_taken: bool,
    /// `total_token_usage.total_tokens` of the latest `token_count`: a repeat of it
    /// is the same model call reported again.
    last_total: Option<u64>,
    /// The figure Codex compared before the next compaction: the latest call's total.
    last_call_total: Option<u64>,
    /// The total of the call before it (the figure when the latest call was the
    /// compaction's own).
    previous_call_total: Option<u64>,
    /// Records of a new turn written before its `turn_context` (they take its id).
    awaiting_context: Vec<usize>,
    /// The record of the latest prompt since the last `turn_context` (what waits after
    /// it is the next prompt's).
    prompted: Option<usize>,
    /// Exit codes Codex reported for a call before its output was written (0.171: an
    /// `item_completed` command execution; earlier: `exec_command_end`), by call id.
    exit_codes: HashMap<String, i64>,
    /// The record of each call's output, by call id (an exit code reported after it).
    outputs: HashMap<String, usize>,
    /// The Codex version the session recorded (`cli_version`).
    version: Option<String>,
    /// The user's prompts so far (what a compaction of the versions before 0.59 restates).
    prompts: Vec<String>,
    /// Whether the items read are a compaction's restated history.
    restating: bool,
}

impl State {
    /// A record of a rollout written before the `{type, payload}` wrapper (`id` names
    /// the item it makes): the session's `{id, timestamp, instructions}`,
    /// `{"record_type": "state"}` lines, and response items.
    fn bare(&mut self, r: &Value, ty: &str, id: &str) {
        if r.get("record_type").is_some() {
            self.out.leave_out(Skip::Bookkeeping);
        } else if BARE_ITEMS.contains(&ty) || (ty.is_empty() && r.get("role").is_some()) {
            self.item(r, id);
        } else if ty.is_empty() && r.get("id").is_some() && self.session_id.is_none() {
            self.session_id = r.get("id").and_then(Value::as_str).map(str::to_string);
            // The instructions the session ran with are its system text.
            match r.get("instructions").and_then(Value::as_str).filter(|s| !s.trim().is_empty()) {
                Some(text) => {
                    let turn = self.turn_id();
                    let at = self.out.push(message(id, &turn, Role::System, json!(text)));
                    self.awaiting_context.push(at);
                }
                None => self.out.leave_out(Skip::Header),
            }
        } else {
            self.out.skip(if ty.is_empty() { "(no type)" } else { ty });
        }
    }

    /// One event of `codex exec --json`: the items the agent completed (its messages,
    /// commands with their output and exit code, file changes, tool calls, plans), in
    /// the order printed. Its usage (`turn.completed`) sums the turn's model calls: no
    /// call's own figure, so the sizes are estimated. The prompt is not printed.
    fn exec_event(&mut self, r: &Value) {
        let item = r.get("item").unwrap_or(&Value::Null);
        let field = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("");
        let id = format!("X{}", field("id"));
        match r.get("type").and_then(Value::as_str).unwrap_or("") {
            "thread.started" => {
                self.session_id = r.get("thread_id").and_then(Value::as_str).map(str::to_string);
                self.out.leave_out(Skip::Header);
            }
            "turn.started" | "turn.completed" | "turn.failed" => self.out.leave_out(Skip::Bookkeeping),
            // The completed copy of an item is the one read.
            "item.started" | "item.updated" => self.out.leave_out(Skip::Superseded),
            "error" => self.out.leave_out(Skip::DisplayOnly),
            "item.completed" => match field("type") {
                "agent_message" => {
                    let turn = self.turn_id();
                    let at = self.out.push(message(&id, &turn, Role::Assistant, json!(field("text"))));
                    self.assistant_at(at);
                }
                "command_execution" => {
                    let code = item.get("exit_code").and_then(Value::as_i64);
                    let body = json!(field("aggregated_output"));
                    // The command as printed is its argv joined for a shell: split back
                    // into the `shell` tool's `command` list (what the re-anchor unwraps).
                    let (name, args) = match shlex::split(field("command")) {
                        Some(argv) if !argv.is_empty() => ("shell", json!({"command": argv})),
                        _ => ("exec_command", json!({"cmd": field("command")})),
                    };
                    self.exec_call(&id, name, &args, body, code, false);
                }
                "file_change" => {
                    let changes = item.get("changes").and_then(Value::as_array).cloned().unwrap_or_default();
                    let applied = field("status") != "failed";
                    let status = if applied { "applied" } else { "failed" };
                    self.exec_call(&id, "apply_patch", &json!({"changes": changes}), json!(status), None, !applied);
                    if applied {
                        let paths: Vec<&str> = changes.iter().filter_map(|c| c.get("path")?.as_str()).collect();
                        let fields = [("call_id", json!(id)), ("paths", json!(paths))];
                        self.out.push(EventRecord::new(Event::FilesChanged, format!("codex-patch-{id}"), fields));
                    }
                }
                "mcp_tool_call" => {
                    let name = format!("{}.{}", field("server"), field("tool"));
                    let args = item.get("arguments").cloned().unwrap_or(json!({}));
                    let error = item.get("error").filter(|e| !e.is_null());
                    // An MCP result is `{content: [blocks]}`; an error, its message.
                    let body = error.or_else(|| item.get("result")).map_or(json!(""), |v| {
                        let v = v.get("content").or_else(|| v.get("message")).unwrap_or(v);
                        json!(text_of(v))
                    });
                    self.exec_call(&id, &name, &args, body, None, error.is_some());
                }
                "web_search" => {
                    self.exec_call(&id, "web_search", &json!({"query": field("query")}), json!(""), None, false);
                }
                "todo_list" => {
                    let plan: Vec<Value> = item
                        .get("items")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .map(|t| {
                            let done = t.get("completed").and_then(Value::as_bool) == Some(true);
                            json!({"step": t.get("text"), "status": if done { "completed" } else { "pending" }})
                        })
                        .collect();
                    self.exec_call(&id, "update_plan", &json!({"plan": plan}), json!("Plan updated"), None, false);
                }
                "reasoning" => self.out.leave_out(Skip::Bookkeeping),
                "error" => self.out.leave_out(Skip::DisplayOnly),
                other => self.out.skip(&format!("item/{other}")),
            },
            other => self.out.skip(if other.is_empty() { "(no type)" } else { other }),
        }
    }

    /// One line of the older `codex exec --json` (see [`is_old_exec_stream`]): its events
    /// are a rollout's `event_msg` payloads, and the messages, calls and outputs are made
    /// from them as the rollout's response items would be. `patches` keeps each patch's
    /// changes from its begin event for its end.
    fn old_exec_event(&mut self, r: &Value, line: usize, patches: &mut HashMap<String, Value>) {
        let id = format!("L{line}");
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        if r.get("sandbox").is_some() && r.get("msg").is_none() {
            self.cwd = self.cwd.take().or_else(|| Some(text(r, "workdir")).filter(|w| !w.is_empty()));
            self.mode = Some(text(r, "approval")).filter(|m| !m.is_empty());
            self.permission = Some(text(r, "sandbox")).filter(|m| !m.is_empty());
            self.out.leave_out(Skip::Header);
            return;
        }
        if let Some(prompt) = r.get("prompt").and_then(Value::as_str) {
            let m = json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]});
            self.item(&m, &id);
            return;
        }
        let m = r.get("msg").unwrap_or(&Value::Null);
        let call_id = text(m, "call_id");
        match m.get("type").and_then(Value::as_str).unwrap_or("") {
            "agent_message" => {
                let content = [json!({"type": "output_text", "text": text(m, "message")})];
                self.item(&json!({"type": "message", "role": "assistant", "content": content}), &id);
            }
            "exec_command_begin" => {
                let args = json!({"command": m.get("command"), "workdir": m.get("cwd")}).to_string();
                self.item(
                    &json!({"type": "function_call", "name": "shell", "call_id": call_id, "arguments": args}),
                    &id,
                );
            }
            "exec_command_end" => {
                self.exited(m.get("call_id"), m.get("exit_code"));
                let output = m.get("aggregated_output").or_else(|| m.get("stdout")).cloned().unwrap_or(json!(""));
                self.item(&json!({"type": "function_call_output", "call_id": call_id, "output": output}), &id);
            }
            "patch_apply_begin" => {
                let changes = m.get("changes").cloned().unwrap_or(json!({}));
                let args = json!({"changes": changes}).to_string();
                patches.insert(call_id.clone(), changes);
                self.item(
                    &json!({"type": "function_call", "name": "apply_patch", "call_id": call_id, "arguments": args}),
                    &id,
                );
            }
            "patch_apply_end" => {
                let ok = m.get("success").and_then(Value::as_bool) != Some(false);
                let output = if ok { text(m, "stdout") } else { format!("patch rejected: {}", text(m, "stderr")) };
                self.item(&json!({"type": "function_call_output", "call_id": call_id, "output": output}), &id);
                let changes = patches.remove(&call_id).unwrap_or(json!({}));
                self.patch_applied(&json!({"call_id": call_id, "success": ok, "changes": changes}));
            }
            "token_count" => {
                self.token_count(m, line);
                self.out.leave_out(Skip::Bookkeeping);
            }
            // The pieces of a command's output: its end event carries all of it.
            "exec_command_output_delta" | "agent_message_delta" | "agent_reasoning_delta" => {
                self.out.leave_out(Skip::Superseded);
            }
            "error" | "stream_error" | "background_event" => self.out.leave_out(Skip::DisplayOnly),
            _ => self.out.leave_out(Skip::Bookkeeping),
        }
    }

    /// A call of `codex exec --json` and its result, made from one completed item.
    fn exec_call(&mut self, id: &str, name: &str, args: &Value, body: Value, code: Option<i64>, failed: bool) {
        self.call(&json!({"call_id": id, "name": name}), id, args.clone());
        let turn = self.turn_id();
        let mut r = tool_result(&format!("{id}.out"), &turn, id, Some(name), body, failed);
        r.exit_code = code;
        self.out.push(r);
        self.open_assistant = None;
    }

    /// The rollout of the TypeScript Codex (0.1.x, spring 2025): one JSON document
    /// `{session: {timestamp, id, instructions}, items: […]}`, the items as the Responses
    /// API has them. The session and every item are records (no line of their own).
    fn document(&mut self, doc: &Value, raw: &[u8], file: &Path) -> Result<()> {
        let items = doc
            .get("items")
            .and_then(Value::as_array)
            .ok_or_else(|| document_error(raw, file, "items", "expected a Codex rollout with an \"items\" array"))?;
        if let Some(session) = doc.get("session") {
            self.out.begin(0);
            self.bare(session, "", "S");
        }
        for (k, item) in items.iter().enumerate() {
            self.out.begin(0);
            let ty = item.get("type").and_then(Value::as_str).unwrap_or("");
            self.bare(item, ty, &format!("I{}", k + 1));
        }
        Ok(())
    }

    fn turn_context(&mut self, p: &Value) {
        let s = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
        if let Some(id) = s("turn_id") {
            // A user message written before its turn_context belongs to this turn.
            for &at in &self.awaiting_context {
                if let Some(m) = self.out.message_mut(at) {
                    m.set_turn(id.clone());
                }
            }
            self.turn = id;
        }
        self.awaiting_context.clear();
        self.prompted = None;
        self.cwd = s("cwd").or(self.cwd.take());
        self.mode = s("approval_policy").or(self.mode.take());
        let sandbox = p.get("sandbox_policy");
        let perm = sandbox.and_then(|v| v.get("type").or_else(|| v.get("mode"))).and_then(Value::as_str);
        self.permission = perm.map(str::to_string).or(self.permission.take());
    }

    fn turn_id(&mut self) -> String {
        if self.turn.is_empty() {
            format!("turn-{}", self.turns)
        } else {
            self.turn.clone()
        }
    }

    fn item(&mut self, p: &Value, id: &str) {
        let kind = p.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "message" => self.message(p, id),
            // Another agent's message, delivered to this one as input.
            "agent_message" => self.message(&with_role(p, "user"), id),
            "function_call" => {
                self.call(p, id, super::common::arguments(p.get("arguments")));
            }
            "custom_tool_call" => {
                let input = p.get("input").and_then(Value::as_str).unwrap_or("");
                let args = match serde_json::from_str::<Value>(input) {
                    Ok(v @ Value::Object(_)) => v,
                    _ => json!({"input": input}),
                };
                self.call(p, id, args);
            }
            "local_shell_call" => {
                let args = p.get("action").cloned().unwrap_or(Value::Null);
                let mut p = p.clone();
                p["name"] = json!("local_shell");
                self.call(&p, id, args);
            }
            "function_call_output" | "custom_tool_call_output" | "local_shell_call_output" => self.output(p, id),
            _ if QUIET_ITEMS.contains(&kind) => self.out.leave_out(Skip::Bookkeeping),
            _ => self.out.skip(&format!("response_item/{kind}")),
        }
    }

    fn message(&mut self, p: &Value, id: &str) {
        let role = p.get("role").and_then(Value::as_str).unwrap_or("user");
        // A role no canonical message has is a record of a kind this importer does not
        // know: counted as such (it made a line the canonical reader refused).
        let Ok(typed) = role.parse::<Role>() else {
            self.out.skip(&format!("message/{role}"));
            return;
        };
        let text = text_of(p.get("content").unwrap_or(&Value::Null));
        // A text this tool injected (`--output-format codex`), known by its mark (never
        // by its text: a user can type that).
        let injected = p.get(super::openhands::INJECTED_KEY).and_then(Value::as_str).filter(|_| role == "user");
        // The context Codex sends with a prompt (environment, AGENTS.md) opens no turn:
        // it belongs to the prompt's.
        let context = role == "user" && is_context(&text);
        let prompt = role == "user" && injected.is_none() && !context;
        if context && self.cwd.is_none() {
            // A rollout without turn_context (before 0.3x) names its folder only here.
            self.cwd = tag(&text, "cwd");
        }
        if prompt {
            self.turns += 1;
            if !self.restating {
                self.prompts.push(text.clone());
            }
        }
        // What Codex sends as user messages but writes itself (AGENTS.md, the
        // environment, skills, the collaboration mode) is instructions, not history: read
        // as developer messages, never counted into the protected head (which would
        // summarize the user's task away). A write-back copies the rollout's own item.
        let typed = if context && is_instructions(&text) { Role::Developer } else { typed };
        let turn = self.turn_id();
        let mut m = message(id, &turn, typed, json!(text));
        m.set_synthetic(injected.map(str::to_string));
        let at = self.out.push(m);
        if role == "assistant" {
            self.assistant_at(at);
            return;
        }
        self.open_assistant = None;
        if prompt {
            // What came before the prompt, since the last turn_context or the prompt
            // before it, is its turn's.
            if let Some(last) = self.prompted {
                self.awaiting_context.retain(|&k| k > last);
            }
            for &k in &self.awaiting_context {
                if let Some(m) = self.out.message_mut(k) {
                    m.set_turn(turn.clone());
                }
            }
            self.prompted = Some(at);
            self.awaiting_context.push(at);
        } else if role == "user" || !self.awaiting_context.is_empty() || self.prompted.is_none() {
            self.awaiting_context.push(at);
        }
    }

    fn call(&mut self, p: &Value, id: &str, args: Value) {
        let call_id = p.get("call_id").and_then(Value::as_str).unwrap_or(id).to_string();
        let name = p.get("name").and_then(Value::as_str).unwrap_or("tool").to_string();
        self.names.insert(call_id.clone(), name.clone());
        let at = if let Some(at) = self.open_assistant {
            self.out.joined(); // a call of the reply before it
            at
        } else {
            let turn = self.turn_id();
            let at = self.out.push(message(id, &turn, Role::Assistant, json!("")));
            self.assistant_at(at);
            at
        };
        if let Some(rec) = self.out.message_mut(at) {
            rec.push_call(Call::new(call_id, name, &args));
        }
    }

    /// A new assistant record: the one later calls and usage attach to.
    fn assistant_at(&mut self, at: usize) {
        self.open_assistant = Some(at);
        self.last_assistant = Some(at);
        self.usage_taken = false;
        self.awaiting_context.clear();
    }

    fn output(&mut self, p: &Value, id: &str) {
        self.open_assistant = None;
        let call_id = p.get("call_id").and_then(Value::as_str).unwrap_or("");
        let (text, exit_code) = output_text(p.get("output").unwrap_or(&Value::Null));
        let exit_code = exit_code.or_else(|| self.exit_codes.remove(call_id)).or_else(|| exited_with(&text));
        let turn = self.turn_id();
        let failed = refused(&text);
        let mut r = tool_result(id, &turn, call_id, self.names.get(call_id).map(String::as_str), json!(text), failed);
        r.exit_code = exit_code;
        let at = self.out.push(r);
        self.outputs.insert(call_id.to_string(), at);
    }

    fn event(&mut self, p: &Value, line: usize) {
        match p.get("type").and_then(Value::as_str) {
            Some("token_count") => self.token_count(p, line),
            Some("patch_apply_end") => self.patch_applied(p),
            Some("exec_command_end") => self.exited(p.get("call_id"), p.get("exit_code")),
            Some("item_completed") => {
                let item = p.get("item").unwrap_or(&Value::Null);
                if item.get("type").and_then(Value::as_str) == Some("CommandExecution") {
                    self.exited(item.get("id"), item.get("exit_code"));
                }
            }
            _ => {}
        }
    }

    /// A command's exit code, reported by an event before or after its output record.
    fn exited(&mut self, call_id: Option<&Value>, code: Option<&Value>) {
        let (Some(call_id), Some(code)) = (call_id.and_then(Value::as_str), code.and_then(Value::as_i64)) else {
            return;
        };
        match self.outputs.get(call_id) {
            Some(&at) => {
                if let Some(r) = self.out.records.get_mut(at).and_then(CanonicalRecord::as_tool_result_mut) {
                    r.exit_code.get_or_insert(code);
                }
            }
            None => {
                self.exit_codes.insert(call_id.to_string(), code);
            }
        }
    }

    /// Usage of the model call just made. A count of all zeros (written around a
    /// compaction) carries nothing; a repeat of the same call's count replaces
    /// nothing; a call that left no assistant item gets an empty one, so every model
    /// call is counted once.
    fn token_count(&mut self, p: &Value, line: usize) {
        let Some(info) = p.get("info").filter(|i| !i.is_null()) else { return };
        if let Some(w) = info.get("model_context_window").and_then(Value::as_u64).filter(|w| *w > 0) {
            self.window = Some(w);
        }
        let Some(u) = info.get("last_token_usage") else { return };
        let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
        let (input, cached, written, output) =
            (n("input_tokens"), n("cached_input_tokens"), n("cache_write_input_tokens"), n("output_tokens"));
        if input == 0 && cached == 0 && written == 0 && output == 0 {
            return;
        }
        let total = info.get("total_token_usage").and_then(|t| t.get("total_tokens")).and_then(Value::as_u64);
        if total.is_some() && total == self.last_total {
            return; // the same call, reported again
        }
        self.last_total = total;
        self.previous_call_total = self.last_call_total;
        self.last_call_total = Some(input.saturating_add(output));
        let at = match self.last_assistant {
            Some(at) if !self.usage_taken => at,
            Some(_) => {
                let turn = self.turn_id();
                let at = self.out.push(message(&format!("L{line}"), &turn, Role::Assistant, json!("")));
                self.assistant_at(at);
                self.open_assistant = None;
                at
            }
            None => return, // no model call of this context yet (e.g. the compaction's own)
        };
        let usage = super::common::usage(input, cached, written, output, super::common::InputCount::WithCacheReads);
        if let Some(rec) = self.out.message_mut(at) {
            rec.usage = Some(usage);
        }
        self.usage_taken = true;
    }

    /// A patch applied by Codex itself: its files are re-anchor facts.
    fn patch_applied(&mut self, p: &Value) {
        if p.get("success").and_then(Value::as_bool) == Some(false) {
            return;
        }
        let Some(Value::Object(changes)) = p.get("changes") else { return };
        let mut paths: Vec<&str> = changes.keys().map(String::as_str).collect();
        paths.extend(changes.values().filter_map(|c| c.get("update")?.get("move_path")?.as_str()));
        let id = format!("codex-patch-{}", self.out.records.len());
        let fields = [("call_id", json!(p.get("call_id"))), ("paths", json!(paths))];
        self.out.push(EventRecord::new(Event::FilesChanged, id, fields));
    }

    /// `replacement_history` replaces what came before: a completed compaction, then the
    /// new start of the context.
    fn compacted(&mut self, p: &Value, line: usize) {
        self.compactions += 1;
        self.drop_compaction_call(p);
        // Codex records no trigger and no pre-compaction figure: the figure is the
        // latest call's total (what its auto-compaction compared), the trigger auto.
        let fields = [("trigger", json!("auto")), ("pre_tokens", json!(self.last_call_total))];
        self.out.push(EventRecord::new(
            Event::CompactionCompleted,
            format!("codex-compact-{}", self.compactions),
            fields,
        ));
        self.open_assistant = None;
        self.last_assistant = None;
        // Codex before 0.59 recorded the summary alone: the model then sees one user
        // message that restates the user's prompts and carries the summary (Codex's own
        // words around them are not reproduced here).
        let history = if let Some(history) = p.get("replacement_history").and_then(Value::as_array) {
            history.clone()
        } else {
            let summary = p.get("message").and_then(Value::as_str).unwrap_or("");
            let text: Vec<&str> =
                self.prompts.iter().map(String::as_str).chain([summary]).filter(|t| !t.is_empty()).collect();
            let content = [json!({"type": "input_text", "text": text.join("\n\n")})];
            vec![json!({"type": "message", "role": "user", "content": content})]
        };
        let first = self.out.records.len();
        // The history the model sees from now on: messages, and calls with their outputs
        // (which a compaction written by this tool keeps).
        // Each user message of the history opens a turn of its own (the turns it
        // restates), so that a later checkpoint can still tell them apart.
        let turn = self.turn.clone();
        self.restating = true;
        for (k, item) in history.iter().enumerate() {
            let id = format!("L{line}.{k}");
            let user = item.get("role").and_then(Value::as_str) == Some("user")
                && item.get(super::openhands::INJECTED_KEY).is_none();
            if user {
                self.turn = format!("{}-restated-{id}", if turn.is_empty() { "turn" } else { &turn });
            }
            match item.get("type").and_then(Value::as_str) {
                Some("compaction" | "reasoning" | "ghost_snapshot") | None => {}
                Some(_) => self.item(item, &id),
            }
        }
        self.turn = turn;
        self.restating = false;
        // Usage belongs to the model calls after the compaction, never to a restated
        // item: a restated assistant message carries a usage of size 0 (no call).
        for rec in self.out.records[first..].iter_mut().filter_map(CanonicalRecord::as_message_mut) {
            if rec.role == Role::Assistant {
                rec.usage = Some(super::common::usage(0, 0, 0, 0, super::common::InputCount::Uncached));
            }
        }
        self.open_assistant = None;
        self.last_assistant = None;
        self.awaiting_context.clear();
    }

    /// Codex writes the model call that made its summary like any other (0.171): an
    /// assistant message with no calls, right before the `compacted` record, whose text
    /// ends its `message`; older versions left only its usage (an empty assistant item
    /// made by a `token_count`). That call is the compaction's, not the history's: it
    /// is dropped, and the figure before the compaction is the call before it.
    fn drop_compaction_call(&mut self, p: &Value) {
        let message = p.get("message").and_then(Value::as_str).unwrap_or("").trim_end();
        let is_compaction_call = |r: &CanonicalRecord| {
            let Some(r) = r.as_message() else { return false };
            let text = r.content.as_str().unwrap_or("").trim();
            r.role == Role::Assistant
                && r.tool_calls.is_none()
                && r.synthetic.is_none()
                && (text.is_empty() || (!message.is_empty() && message.ends_with(text)))
        };
        let mut dropped = false;
        while self.out.records.last().is_some_and(is_compaction_call) {
            self.out.pop(Skip::Lifecycle);
            dropped = true;
        }
        if dropped {
            self.last_call_total = self.previous_call_total;
        }
    }

    fn finish(mut self) -> Imported {
        let mut runtime = Map::new();
        runtime.insert("kind".into(), json!("conversation"));
        runtime.insert("native_compaction".into(), json!(true));
        if let Some(w) = self.window {
            runtime.insert("context_window".into(), json!(w));
        }
        self.out.session.insert("id".into(), json!(self.session_id.unwrap_or_else(|| "codex".into())));
        self.out.session.insert("runtime".into(), Value::Object(runtime));
        let mut ws = Map::new();
        for (k, v) in [("root", self.cwd), ("mode", self.mode), ("permission", self.permission)] {
            if let Some(v) = v {
                ws.insert(k.into(), json!(v));
            }
        }
        if !ws.is_empty() {
            self.out.session.insert("workspace".into(), Value::Object(ws));
        }
        // Not a configuration key: the profile takes its row by the agent's version.
        if let Some(v) = self.version {
            self.out.session.insert("agent_version".into(), json!(v));
        }
        self.out
    }
}

/// The context Codex writes itself as a user message to carry instructions (not the
/// user's words, nor a note about the history such as `<turn_aborted>` or the user's own
/// `<user_shell_command>`).
fn is_instructions(text: &str) -> bool {
    const TAGS: &[&str] = &[
        "<environment_context>",
        "<user_instructions>",
        "<skills_instructions>",
        "<apps_instructions>",
        "<collaboration_mode>",
        "<personality_spec>",
        "<permissions instructions>",
    ];
    let t = text.trim_start();
    t.starts_with("# AGENTS.md instructions") || TAGS.iter().any(|tag| t.starts_with(tag))
}

/// A user message that is context Codex sends, not a prompt: one tagged block
/// (`<environment_context>…</environment_context>`, `<user_instructions>…`) or the
/// AGENTS.md instructions.
fn is_context(text: &str) -> bool {
    let t = text.trim();
    if t.starts_with("# AGENTS.md instructions") {
        return true;
    }
    let Some(rest) = t.strip_prefix('<') else { return false };
    let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' ')).collect();
    !name.is_empty() && rest[name.len()..].starts_with('>') && t.ends_with(&format!("</{name}>"))
}

/// The text of `<name>…</name>` in a context block.
fn tag(text: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let start = text.find(&open)? + open.len();
    let end = text[start..].find(&format!("</{name}>"))? + start;
    Some(text[start..end].trim().to_string()).filter(|s| !s.is_empty())
}

fn with_role(item: &Value, role: &str) -> Value {
    let mut m = item.clone();
    m["role"] = json!(role);
    m
}

/// The exit code in the header Codex writes above a command's output, before its
/// `Output:` line: `Process exited with code N` (unified exec, 0.171: after `Chunk ID`
/// and `Wall time`), or `Exit code: N` (its own `apply_patch`, shell tools).
fn exited_with(text: &str) -> Option<i64> {
    text.lines().take_while(|l| *l != "Output:").take(8).find_map(|l| {
        let code = l.strip_prefix("Process exited with code ").or_else(|| l.strip_prefix("Exit code: "))?;
        code.trim().parse().ok()
    })
}

/// An output Codex writes for a call it did not carry out: a patch that did not apply
/// (`apply_patch verification failed: …`, `patch rejected: …`, nothing changed) or a
/// tool it does not have (`unsupported call: NAME`).
fn refused(text: &str) -> bool {
    ["apply_patch verification failed", "patch rejected:", "unsupported call: "].iter().any(|p| text.starts_with(p))
}

/// The text of an output (a string, an object, or a list of items) and, for shell
/// outputs that carry it, the exit code.
fn output_text(v: &Value) -> (String, Option<i64>) {
    if let Value::String(s) = v {
        if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(s) {
            let code = o.get("metadata").and_then(|m| m.get("exit_code")).and_then(Value::as_i64);
            if let Some(text) = o.get("output").and_then(Value::as_str) {
                return (text.to_string(), code);
            }
        }
        return (s.clone(), None);
    }
    (text_of(v), None)
}

#[cfg(test)]
mod tests {
    use super::{exited_with, refused};

    #[test]
    fn an_exit_code_is_read_from_the_header_codex_writes_and_only_there() {
        let unified = "Chunk ID: 4b1a4f\nWall time: 0.0000 seconds\nProcess exited with code 1\nOriginal token count: 0\nOutput:\n";
        assert_eq!(exited_with(unified), Some(1));
        let freeform =
            "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA hello.py\n";
        assert_eq!(exited_with(freeform), Some(0));
        // What the command printed is not the header: a line of its output says nothing.
        assert_eq!(exited_with("Wall time: 0 seconds\nOutput:\nProcess exited with code 9\n"), None);
        assert_eq!(exited_with("Exit code: soon\nOutput:\n"), None);
        assert_eq!(exited_with("?? hello.py\n"), None);
    }

    #[test]
    fn only_the_outputs_of_calls_codex_did_not_carry_out_are_refusals() {
        assert!(refused("apply_patch verification failed: Failed to find expected lines in a.py"));
        assert!(refused("patch rejected: empty patch"));
        assert!(refused("unsupported call: write_file"));
        assert!(!refused("Exit code: 0\nOutput:\nunsupported call: x"));
        assert!(!refused("grep found: apply_patch verification failed"));
    }
}
