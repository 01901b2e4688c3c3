//! The compaction appended to a Claude Code session as Claude Code records its own
//! (`compact_boundary` with `compactMetadata`, then the `isCompactSummary` message,
//! then the retained records re-parented onto it with fresh uuids).

use super::{derived_uuid, Compaction};
use crate::engine::Processed;
use crate::error::Result;
use crate::policy::Step;
use crate::transcript::Synthetic;
use crate::transcript::{ItemKind, Role};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};

/// Fields every record of the session repeats, taken from its last main-thread message.
const ENVELOPE: &[&str] = &["isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch", "slug"];

/// The session as read: its records, where each uuid and API message is on the main
/// thread, and what the new records repeat.
struct Session<'v> {
    records: Vec<&'v Value>,
    by_uuid: HashMap<&'v str, usize>,
    by_message: HashMap<&'v str, Vec<usize>>,
    /// Every uuid and `message.id` in the file, on the main thread or not.
    by_uuid_all: HashSet<&'v str>,
    envelope: Map<String, Value>,
    last_uuid: Value,
    timestamp: Value,
    /// What makes this compaction's uuids its own: the session and the compaction's number.
    salt: (String, String),
}

impl<'v> Session<'v> {
    fn new(lines: &'v [(usize, Value)]) -> Session<'v> {
        let records: Vec<&Value> = lines.iter().map(|(_, v)| v).collect();
        let sidechain = crate::formats::claude_code::is_sidechain_file(&records);
        let on = crate::formats::claude_code::main_thread(&records, sidechain);
        let main: Vec<usize> = (0..records.len()).filter(|&k| on[k] && records[k].get("uuid").is_some()).collect();
        let by_uuid = main.iter().filter_map(|&k| Some((records[k].get("uuid")?.as_str()?, k))).collect();
        let mut by_message: HashMap<&str, Vec<usize>> = HashMap::new();
        for &k in &main {
            if records[k].get("type").and_then(Value::as_str) == Some("assistant") {
                if let Some(id) = records[k].get("message").and_then(|m| m.get("id")).and_then(Value::as_str) {
                    by_message.entry(id).or_default().push(k);
                }
            }
        }
        let last = main
            .iter()
            .rev()
            .copied()
            .find(|&k| matches!(records[k].get("type").and_then(Value::as_str), Some("user" | "assistant")))
            .or(main.last().copied());
        let envelope: Map<String, Value> = last
            .and_then(|k| records[k].as_object())
            .map(|r| ENVELOPE.iter().filter_map(|&f| Some((f.to_string(), r.get(f)?.clone()))).collect())
            .unwrap_or_default();
        let session = envelope.get("sessionId").and_then(Value::as_str).unwrap_or("session").to_string();
        let boundaries =
            records.iter().filter(|r| r.get("subtype").and_then(Value::as_str) == Some("compact_boundary")).count();
        let by_uuid_all = records
            .iter()
            .flat_map(|r| [r.get("uuid"), r.get("message").and_then(|m| m.get("id"))])
            .filter_map(|v| v?.as_str())
            .collect();
        Session {
            by_uuid_all,
            by_uuid,
            by_message,
            envelope,
            last_uuid: last.and_then(|k| records[k].get("uuid")).cloned().unwrap_or(Value::Null),
            timestamp: last.and_then(|k| records[k].get("timestamp")).cloned().unwrap_or(Value::Null),
            salt: (session, (boundaries + 1).to_string()),
            records,
        }
    }

    /// A fresh uuid for `what` (a domain, such as "copy" or "boundary", and a name in
    /// it), the same for the same session and compaction, and never one the session
    /// already holds or this compaction already gave: a record whose uuid is the
    /// literal name of a domain cannot make a copy collide with the boundary.
    fn fresh(&self, taken: &mut HashSet<String>, domain: &str, name: &str, shape: fn(String) -> String) -> String {
        let mut round = 0usize;
        loop {
            let r = round.to_string();
            let id = shape(derived_uuid(&["rivumi-compact", &self.salt.0, &self.salt.1, domain, name, &r]));
            if !self.by_uuid_all.contains(id.as_str()) && taken.insert(id.clone()) {
                return id;
            }
            round += 1;
        }
    }

    /// The records an item came from: the input record the importer read it from (for a
    /// preserved segment restated after a compaction, the record it restates), and for
    /// an API message every record of that message; by what those records hold, never
    /// by decoding the item's id.
    fn sources(&self, done: &Processed<'_>, i: usize) -> Vec<usize> {
        let t = &done.transcript;
        let Some(k) = done.original.as_ref().and_then(|o| o.record_of(t, i)) else { return Vec::new() };
        let Some(r) = self.records.get(k) else { return Vec::new() };
        let uuid = r.get("uuid").and_then(Value::as_str).unwrap_or("");
        match &t.items[i].kind {
            ItemKind::Message { role: Role::Assistant, .. } => {
                let message = r.get("message").and_then(|m| m.get("id")).and_then(Value::as_str);
                message
                    .and_then(|m| self.by_message.get(m).cloned())
                    .or_else(|| self.by_uuid.get(uuid).map(|&k| vec![k]))
                    .unwrap_or_default()
            }
            _ => self.by_uuid.get(uuid).map(|&k| vec![k]).unwrap_or_default(),
        }
    }

    /// Gives the appended records timestamps after every one the session holds, 1 ms
    /// apart in order: Claude Code 2.0 resumes the leaf with the latest timestamp (file
    /// order breaks a tie, and a copy that kept its original's lost it to the original
    /// chain). Left as they are when the session's timestamps are not RFC 3339.
    fn stamp(&self, out: &mut [Value]) {
        let parse = |v: &Value| humantime::parse_rfc3339(v.as_str()?).ok();
        let Some(latest) = self.records.iter().filter_map(|r| r.get("timestamp").and_then(parse)).max() else { return };
        for (k, r) in out.iter_mut().enumerate() {
            let at = latest + std::time::Duration::from_millis(k as u64 + 1);
            r["timestamp"] = json!(humantime::format_rfc3339_millis(at).to_string());
        }
    }

    /// A new record: the session's envelope and these fields.
    fn record(&self, parent: Option<&str>, fields: Value) -> Value {
        let mut r = Map::new();
        r.insert("parentUuid".into(), parent.map_or(Value::Null, |p| json!(p)));
        r.extend(self.envelope.clone());
        if let Value::Object(f) = fields {
            r.extend(f);
        }
        r.insert("timestamp".into(), self.timestamp.clone());
        Value::Object(r)
    }
}

pub(super) fn append(done: &Processed<'_>, c: &Compaction, original: &[u8]) -> Result<Vec<Value>> {
    let lines = crate::formats::common::json_lines(original, &done.transcript_name)?;
    let s = Session::new(&lines);
    let mut fresh = Fresh { session: &s, taken: HashSet::new(), uuids: HashMap::new(), messages: HashMap::new() };
    let boundary = fresh.new_id("boundary", "compact_boundary");
    let mut out = vec![s.record(
        None,
        json!({"logicalParentUuid": s.last_uuid, "type": "system", "subtype": "compact_boundary",
            "content": "Conversation compacted", "isMeta": false, "uuid": boundary, "level": "info",
            "compactMetadata": {"trigger": c.trigger, "preTokens": c.pre_tokens}}),
    )];
    // The re-anchor block travels in the summary message, for the next request.
    let reanchor = c.steps.iter().find_map(|step| match step {
        Step::Injected(m) if m.kind == Synthetic::Reanchor => Some(m.content.as_str()),
        _ => None,
    });
    let mut parent = boundary;
    let mut taken = vec![false; s.records.len()];
    let mut summary_written = false;
    for step in &c.steps {
        match step {
            Step::Kept(i) => {
                for k in s.sources(done, *i) {
                    // One record can hold several items (results of parallel calls).
                    if !std::mem::replace(&mut taken[k], true) {
                        let r = fresh.copy(s.records[k], &parent);
                        parent = r["uuid"].as_str().unwrap_or_default().to_string();
                        out.push(r);
                    }
                }
            }
            Step::Injected(m) if m.kind == Synthetic::Reanchor && summary_written => {}
            Step::Injected(m) => {
                let kind = m.kind.as_str();
                let is_summary =
                    !summary_written && matches!(m.kind, Synthetic::HistorySummaryFallback | Synthetic::Checkpoint);
                let uuid = fresh.new_id("injected", kind);
                let content = match (is_summary, reanchor) {
                    (true, Some(re)) => format!("{}\n\n{re}", m.content),
                    _ => m.content.clone(),
                };
                let flags = if is_summary {
                    json!({"isVisibleInTranscriptOnly": true, "isCompactSummary": true})
                } else {
                    json!({"isMeta": true})
                };
                let mut fields = json!({"type": "user", "message": {"role": "user", "content": content}});
                if let (Value::Object(f), Value::Object(extra)) = (&mut fields, flags) {
                    f.extend(extra);
                    f.insert("rivumi".into(), json!(kind));
                    f.insert("uuid".into(), json!(uuid));
                }
                summary_written |= is_summary;
                out.push(s.record(Some(&parent), fields));
                parent = uuid;
            }
            Step::Event(_) | Step::Record(_) => {}
        }
    }
    s.stamp(&mut out);
    Ok(out)
}

/// The ids this compaction gives: a fresh uuid per copied record and a fresh
/// `message.id` per copied API message (Claude Code joins records that share one, so a
/// copy that kept the original's would be sent twice), each distinct from every id of
/// the session and from each other.
struct Fresh<'s, 'v> {
    session: &'s Session<'v>,
    taken: HashSet<String>,
    /// Old uuid → its copy's.
    uuids: HashMap<String, String>,
    /// Old `message.id` → the copies' (all records of one API message share it).
    messages: HashMap<String, String>,
}

impl Fresh<'_, '_> {
    fn new_id(&mut self, domain: &str, name: &str) -> String {
        self.session.fresh(&mut self.taken, domain, name, |u| u)
    }

    /// A retained record copied after the boundary: fresh ids, parented on the record
    /// before it; everything else as it was, but the usage (a copy is not a model call
    /// of the new context: counted again it would hide the drop in occupancy).
    fn copy(&mut self, record: &Value, parent: &str) -> Value {
        let mut r = record.clone();
        let old = r.get("uuid").and_then(Value::as_str).unwrap_or("").to_string();
        let new = self.new_id("copy", &old);
        if let Value::Object(m) = &mut r {
            m.insert("parentUuid".into(), json!(parent));
            m.remove("logicalParentUuid");
            m.insert("uuid".into(), json!(new));
            if let Some(n) = m.get("sourceToolAssistantUUID").and_then(Value::as_str).and_then(|a| self.uuids.get(a)) {
                m.insert("sourceToolAssistantUUID".into(), json!(n));
            }
            if let Some(Value::Object(msg)) = m.get_mut("message") {
                msg.remove("usage");
                if let Some(id) = msg.get("id").and_then(Value::as_str).map(str::to_string) {
                    let copy = if let Some(c) = self.messages.get(&id) {
                        c.clone()
                    } else {
                        let shape = |u: String| format!("msg_rivumi_{}", u.replace('-', ""));
                        let c = self.session.fresh(&mut self.taken, "message", &id, shape);
                        self.messages.insert(id, c.clone());
                        c
                    };
                    msg.insert("id".into(), json!(copy));
                }
            }
        }
        self.uuids.insert(old, new);
        r
    }
}
