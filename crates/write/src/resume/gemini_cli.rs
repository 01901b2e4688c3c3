//! The compaction written into a Gemini CLI session as Gemini CLI writes its own
//! compression: one `{"$set": {"messages": [...]}}` record holding the new history,
//! which Gemini CLI's loader takes in place of the messages before it. Kept messages are
//! the session's own records, copied as they were (a reply keeps its `toolCalls` and
//! their results); injected texts are user messages marked with a `rivumi` field of
//! their kind. A session of the older single-document shape (the versions before 0.40,
//! which read no other shape and record no compression) is written as that document,
//! its `messages` the new history: what those versions resume, and what the later ones
//! take in as well.

use super::Compaction;
use crate::engine::Processed;
use crate::error::Result;
use crate::formats::openhands::INJECTED_KEY;
use crate::policy::Step;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::io::Write;

pub(super) fn write(
    w: &mut dyn Write,
    done: &Processed<'_>,
    compaction: Option<&Compaction>,
    original: &[u8],
) -> Result<()> {
    let file = &done.transcript_name;
    let sources = crate::formats::gemini_cli::sources(original, file)?;
    let io = |e: std::io::Error| crate::error::Error::write(file, e);
    let document = sources.document.is_some();
    let Some(compaction) = compaction else {
        w.write_all(original).map_err(io)?;
        if !document && !original.is_empty() && !original.ends_with(b"\n") {
            w.write_all(b"\n").map_err(io)?;
        }
        return Ok(());
    };
    let meta = sources.document.as_ref().and_then(|doc| doc.get("lastUpdated").cloned());
    let mut last_timestamp = meta.unwrap_or(Value::Null);
    for message in sources.by_item.values() {
        if let Some(ts) = message.get("timestamp").filter(|ts| ts.as_str() > last_timestamp.as_str()) {
            last_timestamp = ts.clone();
        }
    }
    let messages = history(done, compaction, &sources, &last_timestamp);
    if let Some(doc) = &sources.document {
        // The document as it was, its keys in their order, with the new history.
        let mut doc = doc.clone();
        doc.insert("messages".into(), Value::Array(messages));
        doc.insert("lastUpdated".into(), last_timestamp);
        serde_json::to_writer_pretty(&mut *w, &doc).map_err(|e| io(e.into()))?;
        return Ok(());
    }
    w.write_all(original).map_err(io)?;
    if !original.is_empty() && !original.ends_with(b"\n") {
        w.write_all(b"\n").map_err(io)?;
    }
    let set = json!({"$set": {"messages": messages, "lastUpdated": last_timestamp}});
    writeln!(w, "{set}").map_err(io)?;
    Ok(())
}

/// The new history: each kept item's message once, in order, and the injected texts.
fn history(
    done: &Processed<'_>,
    compaction: &Compaction,
    sources: &crate::formats::gemini_cli::Sources,
    timestamp: &Value,
) -> Vec<Value> {
    let session = done.transcript.session.as_ref().and_then(|s| s.get("id")).and_then(Value::as_str);
    let session = session.unwrap_or("gemini-cli");
    let items = &done.transcript.items;
    let mut seen: HashSet<&str> = HashSet::new();
    let mut messages: Vec<Value> = Vec::new();
    for (n, step) in compaction.steps.iter().enumerate() {
        match step {
            Step::Kept(item) => {
                let Some(message) = sources.by_item.get(items[*item].id.as_ref()) else { continue };
                if seen.insert(message.get("id").and_then(Value::as_str).unwrap_or("")) {
                    messages.push(message.clone());
                }
            }
            Step::Injected(injected) => {
                let kind = injected.kind.as_str();
                let id = super::derived_uuid(&[session, kind, &n.to_string(), &compaction.pre_tokens.to_string()]);
                messages.push(json!({"id": id, "timestamp": timestamp, "type": "user",
                    "content": [{"text": injected.content}], INJECTED_KEY: kind}));
            }
            Step::Event(_) | Step::Record(_) => {}
        }
    }
    messages
}
