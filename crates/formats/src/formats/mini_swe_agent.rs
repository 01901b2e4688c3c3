//! mini-swe-agent trajectories (`*.traj.json`, read as `swe-agent`): one JSON document
//! `{info, messages, trajectory_format}`. The messages are what the model was sent and
//! answered, in the shape of the model class that ran: chat messages whose action is a
//! fenced shell block (1.x, and 2.x's text-based models), chat messages with
//! `tool_calls` answered by `tool` messages (2.x's default), or Responses API objects
//! answered by `function_call_output` items. Each action is a `bash` call; its
//! observation is its result, failed when its return code is not 0. A message of role
//! `exit` (2.x) and the closing `user` message that carries the submission (1.x) are
//! the run's end, not something the model read.

use super::common::{text_of, tool_result, usage, Call, Imported, InputCount};
use crate::transcript::{Role, Skip, Usage};
use serde_json::{json, Value};
use std::path::Path;

/// Whether a document is a mini-swe-agent trajectory: `messages` beside its
/// `trajectory_format` or its `info` (SWE-agent's own, which has an `info` too, keeps
/// its conversation in `history`).
pub fn is_trajectory(doc: &Value) -> bool {
    let format = doc.get("trajectory_format").and_then(Value::as_str);
    doc.get("messages").is_some_and(Value::is_array)
        && doc.get("history").is_none()
        && (format.is_some_and(|f| f.starts_with("mini-swe-agent")) || doc.get("info").is_some_and(Value::is_object))
}

/// The tool every action runs through.
const BASH: &str = "bash";

pub fn import(doc: &Value, file: &Path) -> Imported {
    let messages = doc.get("messages").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let mut out = Imported::default();
    let mut step = 0;
    // The calls of the latest assistant message not yet answered: (its id, unique id).
    let mut open: Vec<(String, String)> = Vec::new();
    for (k, m) in messages.iter().enumerate() {
        out.begin(0);
        let id = format!("m{k}");
        let turn = format!("step-{step}");
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        let ty = m.get("type").and_then(Value::as_str).unwrap_or("");
        let extra = m.get("extra").unwrap_or(&Value::Null);
        if m.get("object").and_then(Value::as_str) == Some("response") || role == "assistant" {
            step += 1;
            let (text, calls, used) = if role == "assistant" { chat_reply(m) } else { response_reply(m) };
            let mut rec = super::common::message(&id, &format!("step-{step}"), Role::Assistant, json!(text));
            open.clear();
            for (j, (orig, args)) in calls.into_iter().enumerate() {
                let unique = format!("{id}.{j}");
                rec.push_call(Call::new(unique.as_str(), BASH, &args));
                open.push((orig, unique));
            }
            rec.usage = used;
            out.push(rec);
            continue;
        }
        let closing = role == "user"
            && extra.get("exit_status").is_some()
            && text_of(m.get("content").unwrap_or(&Value::Null)).is_empty();
        let ends_run = role == "exit" || closing;
        if ends_run {
            out.leave_out(Skip::Bookkeeping);
            continue;
        }
        let answer = match ty {
            "function_call_output" => Some(m.get("call_id")),
            _ if role == "tool" => Some(m.get("tool_call_id")),
            // Observations of text-based models are user messages after an action.
            _ if role == "user" && !open.is_empty() => Some(None),
            _ => None,
        };
        if let Some(wanted) = answer {
            let text = if ty == "function_call_output" {
                text_of(m.get("output").unwrap_or(&Value::Null))
            } else {
                text_of(m.get("content").unwrap_or(&Value::Null))
            };
            let wanted = wanted.and_then(Value::as_str);
            let at = open.iter().position(|(o, _)| Some(o.as_str()) == wanted).or((!open.is_empty()).then_some(0));
            let call_id = at.map(|at| open.remove(at).1).unwrap_or_default();
            let name = (!call_id.is_empty()).then_some(BASH);
            out.push(tool_result(&id, &turn, &call_id, name, json!(text), failed(extra, &text)));
            continue;
        }
        match role {
            "system" | "user" | "developer" => {
                let role: Role = role.parse().expect("one of the roles matched");
                out.push(super::common::message(
                    &id,
                    &turn,
                    role,
                    json!(text_of(m.get("content").unwrap_or(&Value::Null))),
                ));
            }
            "" => out.skip(if ty.is_empty() { "messages/(no role)" } else { ty }),
            other => out.skip(&format!("messages/{other}")),
        }
    }
    out.session.insert("id".into(), json!(trajectory_id(file)));
    out.session.insert("runtime".into(), json!({"kind": "agent-runner"}));
    if let Some(model) = doc.pointer("/info/config/model/model_name").and_then(Value::as_str) {
        out.session.insert("model".into(), json!(model));
    }
    out
}

/// The run's name: `astropy__astropy-12907.traj.json` → `astropy__astropy-12907`,
/// another file's stem.
fn trajectory_id(file: &Path) -> String {
    let name = file.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    match name.strip_suffix(".traj.json") {
        Some(stem) => stem.to_string(),
        None => file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
    }
}

/// A chat reply: its text, its actions (tool calls, the parsed actions mini-swe-agent
/// kept, or the one fenced shell block of its text) and the usage of its response.
fn chat_reply(m: &Value) -> (String, Vec<(String, Value)>, Option<Usage>) {
    let text = text_of(m.get("content").unwrap_or(&Value::Null));
    let extra = m.get("extra").unwrap_or(&Value::Null);
    let mut calls: Vec<(String, Value)> = m
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let f = c.get("function").unwrap_or(&Value::Null);
            (
                c.get("id").and_then(Value::as_str).unwrap_or("").to_string(),
                super::common::arguments(f.get("arguments")),
            )
        })
        .collect();
    if calls.is_empty() {
        calls = extra
            .get("actions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|a| {
                let command = a.get("command")?.as_str()?;
                Some((
                    a.get("tool_call_id").and_then(Value::as_str).unwrap_or("").to_string(),
                    json!({"command": command}),
                ))
            })
            .collect();
    }
    if calls.is_empty() && extra.get("actions").is_none() {
        calls = fenced_action(&text).map(|c| (String::new(), json!({"command": c}))).into_iter().collect();
    }
    // A usage without `prompt_tokens` is none (a response's figures may be absent).
    let used = extra
        .pointer("/response/usage")
        .filter(|u| u.get("prompt_tokens").and_then(Value::as_u64).is_some())
        .map(super::common::litellm_usage);
    (text, calls, used)
}

/// A Responses API reply (`object: response`): the text of its messages, its function
/// calls and its usage.
fn response_reply(m: &Value) -> (String, Vec<(String, Value)>, Option<Usage>) {
    let items = m.get("output").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let text = items
        .iter()
        .filter(|i| i.get("type").and_then(Value::as_str) == Some("message"))
        .map(|i| text_of(i.get("content").unwrap_or(&Value::Null)))
        .collect::<Vec<_>>()
        .join("\n");
    let calls = items
        .iter()
        .filter(|i| i.get("type").and_then(Value::as_str) == Some("function_call"))
        .map(|i| {
            let id = i.get("call_id").or_else(|| i.get("id")).and_then(Value::as_str).unwrap_or("");
            (id.to_string(), super::common::arguments(i.get("arguments")))
        })
        .collect();
    let used = m.get("usage").map(|u| {
        let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
        let cached = u.pointer("/input_tokens_details/cached_tokens").and_then(Value::as_u64).unwrap_or(0);
        usage(n("input_tokens"), cached, 0, n("output_tokens"), InputCount::WithCacheReads)
    });
    (text, calls, used)
}

/// The command of a reply whose action is its one fenced shell block (```` ```bash ````,
/// 2.x's ```` ```mswea_bash_command ````); none when there is not exactly one, which
/// mini-swe-agent answers with a format error, not a run.
fn fenced_action(text: &str) -> Option<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("```") {
        let after = &rest[at + 3..];
        let Some(info_end) = after.find('\n') else { break };
        let info = after[..info_end].trim();
        let body = &after[info_end + 1..];
        let Some(close) = body.find("\n```").or_else(|| body.starts_with("```").then_some(0)) else { break };
        if info == "bash" || info == "mswea_bash_command" {
            found.push(body[..close].trim().to_string());
        }
        rest = &body[(close + 4).min(body.len())..];
    }
    (found.len() == 1).then(|| found.pop().expect("one action"))
}

/// Whether an observation says its command failed: its return code (kept in `extra`,
/// or written in the text as `<returncode>N</returncode>` or a JSON `returncode`) is
/// not 0.
fn failed(extra: &Value, text: &str) -> bool {
    if let Some(code) = extra.get("returncode").and_then(Value::as_i64) {
        return code != 0;
    }
    if let Some(code) = text.split_once("<returncode>").and_then(|(_, r)| r.split_once("</returncode>")) {
        return code.0.trim() != "0";
    }
    let t = text.trim_start();
    t.starts_with('{')
        && serde_json::from_str::<Value>(t).ok().and_then(|v| v.get("returncode")?.as_i64()).is_some_and(|c| c != 0)
}

#[cfg(test)]
mod tests {
    use super::{failed, fenced_action};
    use serde_json::json;

    #[test]
    fn the_action_is_the_one_fenced_shell_block() {
        assert_eq!(fenced_action("THOUGHT: look.\n\n```bash\nls -la\n```").as_deref(), Some("ls -la"));
        assert_eq!(
            fenced_action("x\n```mswea_bash_command\ncd a &&\n  make\n```\n").as_deref(),
            Some("cd a &&\n  make")
        );
        assert_eq!(fenced_action("```python\nprint(1)\n```\n```bash\nls\n```").as_deref(), Some("ls"));
        assert_eq!(fenced_action("```bash\nls\n```\n```bash\npwd\n```"), None, "two actions are a format error");
        assert_eq!(fenced_action("no block"), None);
        assert_eq!(fenced_action("```bash\nunclosed"), None);
    }

    #[test]
    fn an_observation_fails_by_its_return_code() {
        assert!(!failed(&json!(null), "<returncode>0</returncode>\n<output>\nok\n</output>"));
        assert!(failed(&json!(null), "<returncode>2</returncode>\n<output>\n</output>"));
        assert!(failed(&json!({"returncode": 1}), "anything"));
        assert!(!failed(&json!({"returncode": 0}), "<returncode>1</returncode>"));
        assert!(failed(&json!(null), "{\n  \"returncode\": -1,\n  \"output\": \"\"\n}"));
        assert!(!failed(&json!(null), "{\"returncode\": 0, \"output\": \"1 passed\"}"));
        assert!(!failed(&json!(null), "plain text"));
    }
}
