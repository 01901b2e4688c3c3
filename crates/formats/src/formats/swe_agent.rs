//! SWE-agent `.traj` trajectories (SPEC 1 "Other formats"): the `history` list of
//! OpenAI-style messages (mini-swe-agent's `.traj.json`, read under the same name, is
//! `mini_swe_agent`'s). Call ids are reused within a trajectory, so each tool
//! message is paired with the assistant message before it and every id is made unique.

use super::common::{document_error, json_document, message, text_of, tool_result, Call, EventRecord, Imported};
use crate::error::Result;
use crate::transcript::{Event, Role};
use serde_json::{json, Value};
use std::path::Path;

pub fn import(raw: &[u8], file: &Path) -> Result<Imported> {
    let doc = json_document(raw, file)?;
    if super::mini_swe_agent::is_trajectory(&doc) {
        return Ok(super::mini_swe_agent::import(&doc, file));
    }
    let history = doc.get("history").and_then(Value::as_array).ok_or_else(|| {
        document_error(raw, file, "history", "expected a SWE-agent trajectory with a \"history\" array")
    })?;
    let mut out = Imported::default();
    let mut step = 0;
    // The calls of the latest assistant message: (original id, unique id, name, arguments).
    let mut open: Vec<(String, String, String, Value)> = Vec::new();
    let mut files = OpenFile::default();
    for (k, m) in history.iter().enumerate() {
        out.begin(0);
        let id = format!("h{k}");
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        let text = text_of(m.get("content").unwrap_or(&Value::Null));
        // Older trajectories give observations as user messages after an action.
        let observation = role == "tool" || (role == "user" && !open.is_empty());
        match role {
            "assistant" => {
                step += 1;
                let mut rec = message(&id, &format!("step-{step}"), Role::Assistant, json!(text));
                open = calls(m)
                    .into_iter()
                    .enumerate()
                    .map(|(j, (orig, name, args))| (orig, format!("{id}.{j}"), name, args))
                    .collect();
                for (_, u, n, a) in &open {
                    rec.push_call(Call::new(u.as_str(), n.as_str(), a));
                }
                out.push(rec);
            }
            _ if observation => {
                let wanted: Vec<String> = ids(m.get("tool_call_ids"));
                let call = open.iter().position(|(o, ..)| wanted.contains(o)).or((!open.is_empty()).then_some(0));
                let call = call.map(|at| open.remove(at));
                let failed = edit_failed(&text);
                let (call_id, name) =
                    call.as_ref().map_or((String::new(), None), |(_, u, n, _)| (u.clone(), Some(n.as_str())));
                out.push(tool_result(&id, &format!("step-{step}"), &call_id, name, json!(text), failed));
                if let Some((_, _, name, args)) = &call {
                    if let Some(path) = files.after_call(name, args, failed) {
                        out.push(EventRecord::new(
                            Event::FilesChanged,
                            format!("{id}-changed"),
                            [("paths", json!([path]))],
                        ));
                    }
                }
                files.observe(&text);
            }
            "system" | "user" | "developer" => {
                let role: Role = role.parse().expect("one of the roles matched");
                out.push(message(&id, &format!("step-{step}"), role, json!(text)));
            }
            other => out.skip(&format!("history/{other}")),
        }
    }
    out.session
        .insert("id".into(), json!(file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()));
    out.session.insert("runtime".into(), json!({"kind": "agent-runner"}));
    // SWE-agent's `create` tool writes a file (`filename`); the importer's layer adds it.
    let mut writers: Vec<&str> = super::DEFAULT_WRITE_TOOLS.to_vec();
    writers.push("create");
    out.session.insert("reanchor".into(), json!({"write_tools": writers}));
    if let Some(root) = files.root {
        out.session.insert("workspace".into(), json!({"root": root}));
    }
    Ok(out)
}

/// The file SWE-agent's windowed editor has open: `edit` and `insert` without a path
/// change it. Followed through `open`, `create` and `goto`, and the `(Open file: …)`
/// footer of every observation.
#[derive(Default)]
struct OpenFile {
    current: Option<String>,
    /// The first `(Current directory: …)`: the workspace root.
    root: Option<String>,
}

/// SWE-agent's commands (the rest of an action string is a shell command).
const AGENT_COMMANDS: &[&str] = &[
    "open",
    "goto",
    "scroll_up",
    "scroll_down",
    "create",
    "edit",
    "insert",
    "append",
    "search_file",
    "search_dir",
    "find_file",
    "submit",
    "str_replace_editor",
    "filemap",
];

/// Edit commands that act on the open file when they name no path.
const EDITS_OPEN_FILE: &[&str] = &["edit", "insert", "append"];

impl OpenFile {
    /// After a call's result: the file the call changed when it named none.
    fn after_call(&mut self, name: &str, args: &Value, failed: bool) -> Option<String> {
        let named = ["path", "file_path", "filename"].iter().find_map(|k| args.get(*k).and_then(Value::as_str));
        match name {
            "open" | "create" => {
                if let Some(p) = named.or_else(|| first_argument(args)) {
                    self.current = Some(p.to_string());
                }
                None
            }
            _ if EDITS_OPEN_FILE.contains(&name) && named.is_none() && !failed => self.current.clone(),
            _ => None,
        }
    }

    fn observe(&mut self, text: &str) {
        if let Some(f) = footer(text, "(Open file: ").filter(|f| *f != "n/a") {
            self.current = Some(f.to_string());
        }
        if self.root.is_none() {
            self.root = footer(text, "(Current directory: ").map(str::to_string);
        }
    }
}

/// The value of a `(Key: value)` footer line.
fn footer<'t>(text: &'t str, key: &str) -> Option<&'t str> {
    text.lines().rev().find_map(|l| l.trim().strip_prefix(key)?.strip_suffix(')')).map(str::trim)
}

/// The first argument of a command string (`open "src/a.py" 10` → `src/a.py`).
fn first_argument(args: &Value) -> Option<&str> {
    let command = args.get("command").and_then(Value::as_str)?;
    let rest = command.split_once(char::is_whitespace)?.1.trim_start();
    let arg = rest.split_whitespace().next()?;
    Some(arg.trim_matches(|c| c == '"' || c == '\''))
}

/// SWE-agent's editor refuses an edit and says so in the observation.
fn edit_failed(text: &str) -> bool {
    let t = text.trim_start();
    t.contains("Your proposed edit has introduced new syntax error")
        || t.starts_with("Error:")
        || t.starts_with("Usage:")
}

/// `tool_calls` as a list; older trajectories give the action only in the `action`
/// string: one call named after its first word, with the whole string as `command`.
fn calls(m: &Value) -> Vec<(String, String, Value)> {
    let list = match m.get("tool_calls") {
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    if list.is_empty() {
        let action = m.get("action").and_then(Value::as_str).map_or("", str::trim);
        let Some(first) = action.split_whitespace().next() else { return Vec::new() };
        // SWE-agent's own commands keep their name; anything else ran in its shell.
        let name = if AGENT_COMMANDS.contains(&first) { first } else { "bash" };
        let mut args = json!({"command": action});
        if let ("open" | "create", Some(p)) = (name, first_argument(&args)) {
            args["path"] = json!(p);
        }
        return vec![(String::new(), name.to_string(), args)];
    }
    list.iter()
        .map(|c| {
            let f = c.get("function").unwrap_or(&Value::Null);
            let args = super::common::arguments(f.get("arguments"));
            let id = c.get("id").and_then(Value::as_str).unwrap_or("").to_string();
            (id, f.get("name").and_then(Value::as_str).unwrap_or("tool").to_string(), args)
        })
        .collect()
}

fn ids(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(a)) => a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}
