//! SWE-agent `.traj` trajectories (SPEC 1 "Other formats"): the `history` list of
//! OpenAI-style messages. Call ids are reused within a trajectory, so each tool
//! message is paired with the assistant message before it and every id is made unique.

use super::common::{json_document, message, text_of, tool_result, Imported};
use crate::error::{Error, Result};
use serde_json::{json, Value};
use std::path::Path;

pub fn import(raw: &[u8], file: &Path) -> Result<Imported> {
    let doc = json_document(raw, file)?;
    let history = doc
        .get("history")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::bad_input(file, "expected a SWE-agent trajectory with a \"history\" array"))?;
    let mut out = Imported::default();
    let mut step = 0;
    // The calls of the latest assistant message: (original id, unique id, name).
    let mut open: Vec<(String, String, String)> = Vec::new();
    for (k, m) in history.iter().enumerate() {
        let id = format!("h{k}");
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        let content = json!(text_of(m.get("content").unwrap_or(&Value::Null)));
        match role {
            "assistant" => {
                step += 1;
                let mut rec = message(&id, &format!("step-{step}"), "assistant", content);
                open = calls(m)
                    .into_iter()
                    .enumerate()
                    .map(|(j, (orig, name, args))| (orig, format!("{id}.{j}"), name, args))
                    .map(|(o, u, n, a)| {
                        rec.entry("tool_calls")
                            .or_insert_with(|| json!([]))
                            .as_array_mut()
                            .expect("array")
                            .push(json!({"id": u, "name": n, "arguments": a}));
                        (o, u, n)
                    })
                    .collect();
                out.push(Value::Object(rec));
            }
            "tool" => {
                let wanted: Vec<String> = ids(m.get("tool_call_ids"));
                let call = open.iter().find(|(o, _, _)| wanted.contains(o)).or(open.first());
                let (call_id, name) = call.map_or((String::new(), None), |(_, u, n)| (u.clone(), Some(n.as_str())));
                out.push(Value::Object(tool_result(
                    &id,
                    &format!("step-{step}"),
                    &call_id,
                    name,
                    content,
                    false,
                )));
            }
            "system" | "user" | "developer" => {
                out.push(Value::Object(message(&id, &format!("step-{step}"), role, content)));
            }
            other => out.skip(&format!("history/{other}")),
        }
    }
    out.session
        .insert("id".into(), json!(file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()));
    out.session.insert("runtime".into(), json!({"kind": "agent-runner"}));
    // SWE-agent's `create` tool writes a file (`filename`); the importer's layer adds it.
    let mut writers: Vec<&str> = crate::config::DEFAULT_WRITE_TOOLS.to_vec();
    writers.push("create");
    out.session.insert("reanchor".into(), json!({"write_tools": writers}));
    Ok(out)
}

/// `tool_calls` may be a list or (in older trajectories) a Python-repr string.
fn calls(m: &Value) -> Vec<(String, String, Value)> {
    let list = match m.get("tool_calls") {
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
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
