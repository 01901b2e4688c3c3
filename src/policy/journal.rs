//! The journal (SPEC 8): ordered events, numbered from 0, with no clock and no paths.

use serde_json::{Map, Value};

#[derive(Debug, Clone, Default)]
pub struct Journal {
    events: Vec<Value>,
}

impl Journal {
    /// Appends an event; `fields` is a JSON object whose keys follow `seq` and `event`.
    pub fn push(&mut self, event: &str, fields: Value) {
        let mut obj = Map::new();
        obj.insert("seq".into(), Value::from(self.events.len()));
        obj.insert("event".into(), Value::from(event));
        if let Value::Object(f) = fields {
            obj.extend(f);
        }
        self.events.push(Value::Object(obj));
    }

    pub fn events(&self) -> &[Value] {
        &self.events
    }

    /// JSON Lines, one event per line.
    pub fn to_jsonl(&self) -> String {
        self.events.iter().map(|e| format!("{e}\n")).collect()
    }
}
