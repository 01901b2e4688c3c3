//! OpenHands event streams (SPEC 1 "Other formats"): a JSON array of events, or JSONL
//! whose lines carry a `history` array. Actions and observations pair by `cause` /
//! `tool_call_metadata.tool_call_id`; usage is counted once per model response id.

use super::common::{
    is_document, json_document, json_lines, message, text_of, tool_result, Call, EventRecord, Imported,
};
use super::DEFAULT_SHELL_TOOLS;
use crate::error::{Error, Result};
use crate::transcript::{Event, Role, Skip, Usage};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::path::Path;

const AGENT_ACTIONS: &[&str] = &["run", "edit", "finish", "message", "read", "write", "run_ipython", "browse", "think"];
const SILENT: &[&str] = &["agent_state_changed", "change_agent_state", "null", "system", "recall"];

pub fn import(raw: &[u8], file: &Path) -> Result<Imported> {
    let (events, lines) = events(raw, file)?;
    Ok(from_events(&events, &lines, None, file))
}

/// An evaluation output's line: one instance (`instance_id`) with its `history`; or a
/// resolver output's (`issue` and `instruction`, with its `history`).
pub fn is_evaluation_output(keys: &[String]) -> bool {
    let has = |k: &str| keys.iter().any(|x| x == k);
    (has("history") && has("instance_id")) || is_resolver_output(keys)
}

/// A resolver output's line (`issue`, `instruction`, `base_commit`, then a `history`
/// that a long patch may push past the head the format is told from).
pub fn is_resolver_output(keys: &[String]) -> bool {
    let has = |k: &str| keys.iter().any(|x| x == k);
    has("issue") && has("instruction") && (has("history") || has("base_commit"))
}

/// The item id of event `k`: `e<id>`, or `e#<k>` for an event without an id (a V1
/// action's is its model response's: see [`super::openhands_v1::event_item_id`]).
pub fn event_item_id(e: &Value, k: usize) -> String {
    if super::openhands_v1::is_event(e) {
        return super::openhands_v1::event_item_id(e).unwrap_or_else(|| format!("e#{k}"));
    }
    match e.get("id").filter(|v| !v.is_null()) {
        Some(v) => format!("e{}", v.to_string().trim_matches('"')),
        None => format!("e#{k}"),
    }
}

/// Marks a record this tool injected into an OpenHands history (so a second run knows it).
pub const INJECTED_KEY: &str = "rivumi";

/// The canonical records of a list of events: the agent SDK's (OpenHands V1, told by
/// their `kind`; `lines` gives the input line of each, empty when not tracked, and
/// `metrics` an evaluation output's usage per model response), or older ones. Events of
/// older streams and of resolver outputs are flat (`dataclasses.asdict`): no `id`,
/// `source` or `args`, the action's arguments at the top level, each observation right
/// after its action.
pub fn from_events(events: &[Value], lines: &[usize], metrics: Option<&Value>, file: &Path) -> Imported {
    if events.iter().any(super::openhands_v1::is_event) {
        return super::openhands_v1::import(events, lines, metrics, file);
    }
    let mut st = Events::default();
    for (k, e) in events.iter().enumerate() {
        st.out.begin(0);
        let id = event_item_id(e, k);
        let flat = e.get("source").is_none() && e.get("args").is_none();
        let source = match e.get("source").and_then(Value::as_str) {
            Some(s) => s,
            // A flat message before the agent acted is the user's task.
            None if e.get("action").and_then(Value::as_str) == Some("message") && !st.agent_acted => "user",
            None => "agent",
        };
        let args = if flat { flat_args(e) } else { e.get("args").cloned().unwrap_or(Value::Null) };
        if let Some(action) = e.get("action").and_then(Value::as_str) {
            st.action(e, &id, action, source, &args);
        } else if let Some(obs) = e.get("observation").and_then(Value::as_str) {
            st.observation(e, &id, obs, source, flat);
        } else {
            st.out.skip("(neither action nor observation)");
        }
    }
    st.finish(file)
}

/// What the import has gathered so far.
#[derive(Default)]
struct Events {
    out: Imported,
    turn: usize,
    seen_responses: HashSet<String>,
    /// Action event id → (call id, name).
    call_of_event: HashMap<String, (String, String)>,
    /// Calls without an answer yet, oldest first: an observation with no `cause` answers
    /// the latest.
    open: Vec<(String, String)>,
    agent_acted: bool,
    workspace: bool,
    /// The file an IPython call edits through OpenHands' agent skills, by call id.
    skill_edits: HashMap<String, String>,
}

impl Events {
    fn action(&mut self, e: &Value, id: &str, action: &str, source: &str, args: &Value) {
        if action == "message" && source == "user" {
            self.turn += usize::from(e.get(INJECTED_KEY).is_none());
            let text = args
                .get("content")
                .and_then(Value::as_str)
                .or_else(|| e.get("message").and_then(Value::as_str))
                .or_else(|| e.get("content").and_then(Value::as_str))
                .unwrap_or("");
            let mut rec = message(id, &format!("turn-{}", self.turn), Role::User, json!(text));
            rec.set_synthetic(e.get(INJECTED_KEY).and_then(Value::as_str).map(str::to_string));
            self.out.push(rec);
        } else if source == "agent" && AGENT_ACTIONS.contains(&action) {
            self.agent(e, id, action, args);
        } else if SILENT.contains(&action) || source == "environment" {
            self.out.leave_out(Skip::Bookkeeping);
        } else {
            self.out.skip(&format!("action/{action}"));
        }
    }

    fn agent(&mut self, e: &Value, id: &str, action: &str, args: &Value) {
        self.agent_acted = true;
        let meta = e.get("tool_call_metadata").filter(|m| !m.is_null());
        let thought = args.get("thought").or_else(|| e.get("thought")).and_then(Value::as_str).unwrap_or("");
        let text = if action == "message" || action == "finish" {
            e.get("message")
                .and_then(Value::as_str)
                .or_else(|| args.get("content").and_then(Value::as_str))
                .unwrap_or(thought)
        } else {
            thought
        };
        let mut rec = message(id, &format!("turn-{}", self.turn), Role::Assistant, json!(text));
        let mut usage = None;
        let call = if let Some(meta) = meta {
            let call_id = meta.get("tool_call_id").and_then(Value::as_str).unwrap_or(id).to_string();
            let name = meta.get("function_name").and_then(Value::as_str).unwrap_or(action).to_string();
            let arguments = call_arguments(meta, &call_id).unwrap_or_else(|| args.clone());
            usage = response_usage(meta, &mut self.seen_responses);
            Some((call_id, name, arguments))
        } else if !matches!(action, "message" | "finish" | "think") {
            // An action recorded without the model's call (older streams, resolver
            // outputs) is itself the call.
            Some((id.to_string(), action.to_string(), without_thought(args)))
        } else {
            None
        };
        if let Some((call_id, name, arguments)) = call {
            if let Some(path) = arguments.get("code").and_then(Value::as_str).and_then(skill_edit) {
                self.skill_edits.insert(call_id.clone(), path);
            }
            self.workspace |=
                arguments.get("path").and_then(Value::as_str).is_some_and(|p| p.starts_with("/workspace/"));
            rec.push_call(Call::new(call_id.as_str(), name.as_str(), &arguments));
            self.call_of_event.insert(id.to_string(), (call_id.clone(), name.clone()));
            self.open.push((call_id, name));
        }
        rec.usage = usage;
        self.out.push(rec);
    }

    fn observation(&mut self, e: &Value, id: &str, obs: &str, source: &str, flat: bool) {
        if SILENT.contains(&obs) || source == "environment" {
            self.out.leave_out(Skip::Bookkeeping);
            return;
        }
        let from_meta = e.get("tool_call_metadata").and_then(|m| m.get("tool_call_id")).and_then(Value::as_str);
        let cause = e.get("cause").filter(|c| !c.is_null()).map(|v| format!("e{}", v.to_string().trim_matches('"')));
        let (call_id, name) = match (cause.as_ref().and_then(|c| self.call_of_event.get(c)), from_meta, &cause) {
            (Some((c, n)), _, _) => (c.clone(), Some(n.clone())),
            (None, Some(c), _) => (c.to_string(), self.open.iter().find(|(o, _)| o == c).map(|(_, n)| n.clone())),
            (None, None, Some(c)) => (c.clone(), None),
            (None, None, None) => match self.open.last() {
                Some((c, n)) => (c.clone(), Some(n.clone())),
                None => (String::new(), None),
            },
        };
        self.open.retain(|(c, _)| *c != call_id);
        let failed = reports_error(e, obs);
        let content = json!(text_of(e.get("content").unwrap_or(&Value::Null)));
        let mut rec = tool_result(id, &format!("turn-{}", self.turn), &call_id, name.as_deref(), content, failed);
        let code = e
            .get("extras")
            .and_then(|x| x.get("metadata"))
            .and_then(|m| m.get("exit_code"))
            .or_else(|| e.get("exit_code").filter(|_| flat))
            .and_then(Value::as_i64);
        rec.exit_code = code;
        self.out.push(rec);
        // An edit through the agent skills that went through changed its file.
        let text = e.get("content").and_then(Value::as_str).unwrap_or("");
        let refused = ["[Your proposed edit has introduced", "[No exact match found", "ERROR:", "Traceback"];
        let edited = self.skill_edits.remove(&call_id).filter(|_| !failed && !refused.iter().any(|r| text.contains(r)));
        if let Some(path) = edited {
            self.workspace |= path.starts_with("/workspace/");
            let fields = [("call_id", json!(call_id)), ("paths", json!([path]))];
            self.out.push(EventRecord::new(Event::FilesChanged, format!("{id}-changed"), fields));
        }
    }

    fn finish(mut self, file: &Path) -> Imported {
        let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        self.out.session.insert("id".into(), json!(stem));
        self.out.session.insert("runtime".into(), json!({"kind": "agent-runner"}));
        // OpenHands' shell tool is `execute_bash`, and `run` an older stream's; the
        // importer's layer adds them to the defaults.
        let mut shells: Vec<&str> = DEFAULT_SHELL_TOOLS.to_vec();
        shells.extend(["execute_bash", "run"]);
        self.out.session.insert("reanchor".into(), json!({"shell_tools": shells}));
        if self.workspace {
            self.out.session.insert("workspace".into(), json!({"root": "/workspace"}));
        }
        self.out
    }
}

/// The file an IPython cell edits with OpenHands' agent skills (`edit_file_by_replace`,
/// `insert_content_at_line`, `append_file`, `create_file`, each naming it first, quoted).
fn skill_edit(code: &str) -> Option<String> {
    const SKILLS: &[&str] = &["edit_file_by_replace(", "insert_content_at_line(", "append_file(", "create_file("];
    let at = SKILLS.iter().find_map(|s| code.find(s).map(|k| k + s.len()))?;
    let rest = code[at..].trim_start();
    let quote = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let end = rest[1..].find(quote)?;
    Some(rest[1..=end].to_string()).filter(|p| !p.is_empty())
}

/// The arguments of a flat action: its fields but the event's own.
fn flat_args(e: &Value) -> Value {
    const EVENT_KEYS: &[&str] = &["action", "observation", "cause", "timestamp", "message"];
    match e {
        Value::Object(o) => Value::Object(
            o.iter().filter(|(k, _)| !EVENT_KEYS.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect(),
        ),
        _ => Value::Null,
    }
}

/// A call's arguments without what is the model's text and the runtime's bookkeeping.
fn without_thought(args: &Value) -> Value {
    const NOT_ARGUMENTS: &[&str] = &[
        "thought",
        "is_confirmed",
        "security_risk",
        "keep_prompt",
        "kernel_init_code",
        "confirmation_state",
        "hidden",
        "blocking",
        "include_extra",
    ];
    match args {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| !NOT_ARGUMENTS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        v => v.clone(),
    }
}

/// An observation that reports an error: the action did not happen (an `error`
/// observation, `success: false`, an `ERROR:` message, or a non-zero exit code).
fn reports_error(e: &Value, obs: &str) -> bool {
    let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").trim_start().to_string();
    obs == "error"
        || e.get("success").and_then(Value::as_bool) == Some(false)
        || text("content").starts_with("ERROR:")
        || (obs != "run" && text("message").starts_with("ERROR:"))
}

/// The events of an input, and the line of each (0 for an entry of a document or of a
/// line's `history`).
fn events(raw: &[u8], file: &Path) -> Result<(Vec<Value>, Vec<usize>)> {
    let first = raw.iter().find(|b| !b.is_ascii_whitespace()).copied();
    if first == Some(b'[') {
        return match json_document(raw, file)? {
            Value::Array(a) => {
                let lines = vec![0; a.len()];
                Ok((a, lines))
            }
            _ => Err(Error::bad_input(file, "expected a JSON array of events")),
        };
    }
    // One run pretty-printed (`jq . output.jsonl`): a document with its `history`.
    let runs = if is_document(raw, "history") { vec![(0, json_document(raw, file)?)] } else { json_lines(raw, file)? };
    let (mut all, mut lines) = (Vec::new(), Vec::new());
    for (line, run) in runs {
        if let Some(Value::Array(h)) = run.get("history") {
            all.extend(h.iter().cloned());
            lines.resize(all.len(), 0);
        } else {
            all.push(run);
            lines.push(line);
        }
    }
    Ok((all, lines))
}

/// The call's arguments from the model response (the event's own `args` lose the file text).
fn call_arguments(meta: &Value, call_id: &str) -> Option<Value> {
    let calls = meta.get("model_response")?.get("choices")?.get(0)?.get("message")?.get("tool_calls")?.as_array()?;
    let call = calls.iter().find(|c| c.get("id").and_then(Value::as_str) == Some(call_id))?;
    Some(super::common::arguments(Some(call.get("function")?.get("arguments")?)))
}

/// Usage of a model response, once per response id (actions and observations repeat it).
fn response_usage(meta: &Value, seen: &mut HashSet<String>) -> Option<Usage> {
    let resp = meta.get("model_response")?;
    let rid = resp.get("id").and_then(Value::as_str)?.to_string();
    if !seen.insert(rid) {
        return None;
    }
    resp.get("usage").map(super::common::litellm_usage)
}

#[cfg(test)]
mod tests {
    use super::skill_edit;

    #[test]
    fn an_agent_skill_names_the_file_it_edits_first() {
        let code = "edit_file_by_replace(\n'/workspace/src/App.tsx',\nto_replace=\"a\",\nnew_content=\"b\")";
        assert_eq!(skill_edit(code).as_deref(), Some("/workspace/src/App.tsx"));
        assert_eq!(skill_edit("create_file(\"/workspace/LICENSE\")").as_deref(), Some("/workspace/LICENSE"));
        assert_eq!(skill_edit("open_file('/workspace/src/App.css')"), None);
        assert_eq!(skill_edit("edit_file_by_replace(path, to_replace='x')"), None);
    }
}
