//! The records a plan adds to the transcript (SPEC 4), as values: the messages the
//! tool injects ([`Message`]: the fallback summary, the pressure reminder, the
//! re-anchor block, a checkpoint) and the lifecycle events it appends ([`EventRecord`]).
//! Every writer reads these fields; only the canonical writer serializes them
//! ([`Injected::to_canonical`]), and the policy weighs what it writes.

use crate::transcript::{Synthetic, Transcript};
use serde_json::{json, Map, Value};

/// A record a plan adds: a message, or an event (which has no place among messages).
#[derive(Debug, Clone, PartialEq)]
pub enum Injected {
    Message(Message),
    Event(EventRecord),
}

/// A message the tool injects, written as `type`, `id`, `turn`, `role` (always `user`),
/// `synthetic`, the kind's own fields, then `content`.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub kind: Synthetic,
    /// `rivumi:<kind>`; checkpoints are numbered (`rivumi:checkpoint-N`).
    pub id: String,
    /// The turn it belongs to (none when the transcript has no turns).
    pub turn: Option<String>,
    /// A summary's `summarized` field, the first of its own fields: the ids of the items
    /// it replaces.
    pub summarized: Option<IdList>,
    /// The kind's own fields, in the order they are written.
    pub fields: Map<String, Value>,
    /// The text the model reads.
    pub content: String,
}

/// A list of ids, held as the JSON array it is written as: a summary of a large
/// transcript replaces tens of thousands of items, and a `Value` per id would weigh
/// some hundred bytes each at the peak of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdList {
    json: String,
    len: usize,
}

impl IdList {
    pub fn new<'s>(ids: impl IntoIterator<Item = &'s str>) -> IdList {
        let mut json = String::from("[");
        let mut len = 0;
        for id in ids {
            if len > 0 {
                json.push(',');
            }
            crate::text::push_json_str(&mut json, id);
            len += 1;
        }
        json.push(']');
        IdList { json, len }
    }

    /// The JSON array.
    pub fn as_json(&self) -> &str {
        &self.json
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A lifecycle event the tool appends: the canonical event record (written as
/// `type`, `name`, `id`, then its own fields).
pub type EventRecord = crate::transcript::record::EventRecord<'static>;

impl Injected {
    /// The message, when it is one.
    pub fn message(&self) -> Option<&Message> {
        match self {
            Injected::Message(m) => Some(m),
            Injected::Event(_) => None,
        }
    }

    /// The record as a canonical JSON line (no terminator): the one serialization.
    pub fn to_canonical(&self) -> String {
        match self {
            Injected::Message(m) => m.to_canonical(),
            Injected::Event(e) => e.to_canonical(),
        }
    }
}

impl Message {
    /// A message with the id `rivumi:<kind>`.
    pub(super) fn new(kind: Synthetic, turn: Option<String>, fields: Map<String, Value>, content: String) -> Message {
        Message { id: format!("rivumi:{}", kind.as_str()), kind, turn, summarized: None, fields, content }
    }

    /// The canonical record. Written field by field (what a `Map` would give, in the
    /// same order), the long content escaped in one pass.
    pub fn to_canonical(&self) -> String {
        let push = crate::text::push_json_str;
        let mut out = String::with_capacity(self.content.len() + self.content.len() / 8 + 256);
        out.push_str("{\"type\":\"message\",\"id\":");
        push(&mut out, &self.id);
        out.push_str(",\"turn\":");
        match &self.turn {
            Some(t) => push(&mut out, t),
            None => out.push_str("null"),
        }
        out.push_str(",\"role\":\"user\",\"synthetic\":");
        push(&mut out, self.kind.as_str());
        if let Some(ids) = &self.summarized {
            out.push_str(",\"summarized\":");
            out.push_str(ids.as_json());
        }
        for (k, v) in &self.fields {
            debug_assert!(
                !["type", "id", "turn", "role", "synthetic", "summarized", "content"].contains(&k.as_str()),
                "{k}"
            );
            out.push(',');
            push(&mut out, k);
            out.push(':');
            out.push_str(&serde_json::to_string(v).expect("a JSON value serializes"));
        }
        out.push_str(",\"content\":");
        push(&mut out, &self.content);
        out.push('}');
        out
    }
}

/// The re-anchor message, for either path.
pub(super) fn reanchor(t: &Transcript<'_>, text: &str, variant: super::PressurePath) -> Message {
    let mut own = Map::new();
    own.insert("variant".into(), json!(variant.as_str()));
    Message::new(Synthetic::Reanchor, last_input_turn(t), own, text.to_string())
}

pub(super) fn last_input_turn(t: &Transcript<'_>) -> Option<String> {
    t.items.iter().rev().find(|i| i.is_input()).and_then(|i| i.turn.as_deref().map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::{EventRecord, Injected, Message};
    use crate::transcript::{Event, Synthetic};
    use proptest::prelude::*;
    use serde_json::{json, Map, Value};

    proptest! {
        /// The canonical record is what serializing its fields in order gives, and
        /// reads back as the same fields.
        #[test]
        fn a_message_is_written_as_its_fields(
            turn in proptest::option::of("[a-z\",:\\\\ ]{0,12}"),
            own in proptest::option::of("[a-z\",:\\\\{} ]{0,20}"),
            content in "[a-z\",:\\\\{}\n\u{1}\u{2028} é🙂]{0,60}",
            kind in 0usize..4,
            ids in proptest::option::of(proptest::collection::vec("[a-z\"\\\\\u{1}\u{2028}é]{0,6}", 0..4)),
        ) {
            let kind = [Synthetic::HistorySummaryFallback, Synthetic::PressureReminder, Synthetic::Reanchor, Synthetic::Checkpoint][kind];
            let mut fields = Map::new();
            if let Some(o) = own {
                fields.insert("own".into(), json!([o, {"x": 1, "content": o, "synthetic": o}]));
            }
            let mut m = Message::new(kind, turn.clone(), fields.clone(), content.clone());
            m.summarized = ids.as_ref().map(|ids| super::IdList::new(ids.iter().map(String::as_str)));
            let mut want = Map::new();
            want.insert("type".into(), json!("message"));
            want.insert("id".into(), json!(format!("rivumi:{}", kind.as_str())));
            want.insert("turn".into(), json!(turn));
            want.insert("role".into(), json!("user"));
            want.insert("synthetic".into(), json!(kind.as_str()));
            if let Some(ids) = ids {
                want.insert("summarized".into(), json!(ids));
            }
            want.extend(fields);
            want.insert("content".into(), json!(content));
            prop_assert_eq!(Injected::Message(m).to_canonical(), Value::Object(want).to_string());
        }
    }

    #[test]
    fn an_event_is_written_type_name_id_then_its_fields() {
        let mut fields = Map::new();
        fields.insert("trigger".into(), json!("auto"));
        let e = Injected::Event(EventRecord::with_fields(Event::CompactionRequested, "compaction-1".into(), fields));
        assert_eq!(
            e.to_canonical(),
            r#"{"type":"event","name":"compaction_requested","id":"compaction-1","trigger":"auto"}"#
        );
        assert!(e.message().is_none());
    }
}
