//! The journal (SPEC 8): ordered events, numbered from 0, with no clock and no paths.

pub use crate::transcript::Event;
use serde_json::{Map, Value};

#[derive(Debug, Clone, Default)]
pub struct Journal {
    events: Vec<Value>,
}

impl Journal {
    /// Appends an event; `fields` is a JSON object whose keys follow `seq` and `event`.
    pub fn push(&mut self, event: Event, fields: Value) {
        let fields = match fields {
            Value::Object(f) => f,
            _ => Map::new(),
        };
        let mut obj = Map::with_capacity(fields.len() + 2);
        obj.insert("seq".into(), Value::from(self.events.len()));
        obj.insert("event".into(), Value::from(event.as_str()));
        obj.extend(fields);
        self.events.push(Value::Object(obj));
    }

    /// Appends another journal's events, renumbered.
    pub fn extend(&mut self, other: Journal) {
        for mut e in other.events {
            e["seq"] = Value::from(self.events.len());
            self.events.push(e);
        }
    }

    /// Drops the events of one kind (a record planned, then left out), renumbered.
    pub fn remove(&mut self, event: Event) {
        self.events.retain(|e| e["event"] != event.as_str());
        for (k, e) in self.events.iter_mut().enumerate() {
            e["seq"] = Value::from(k);
        }
    }

    pub fn events(&self) -> &[Value] {
        &self.events
    }

    /// The events of one kind.
    pub fn of(&self, event: Event) -> impl Iterator<Item = &Value> {
        self.events.iter().filter(move |e| e["event"] == event.as_str())
    }

    /// JSON Lines, one event per line.
    pub fn to_jsonl(&self) -> String {
        self.events.iter().map(|e| format!("{e}\n")).collect()
    }
}
