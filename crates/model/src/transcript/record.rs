//! The canonical records an importer makes (SPEC 1), typed: a message, a tool result,
//! an event. They are written once, with their keys in the canonical order (a message:
//! `type`, `id`, `turn`, `role`, `content`, then `synthetic`, `tool_calls`, `usage` when
//! it has them; a tool result: `type`, `id`, `turn`, `call_id`, `name`, `content`,
//! `is_error`, `exit_code`; an event: `type`, `name`, `id`, then its own fields).

use super::{Event, Role, Usage};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// One canonical record.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CanonicalRecord {
    Message(MessageRecord),
    ToolResult(ToolResultRecord),
    Event(EventRecord),
}

impl CanonicalRecord {
    /// Whether it is a model-visible item (a message or a tool result).
    pub fn is_item(&self) -> bool {
        matches!(self, CanonicalRecord::Message(_) | CanonicalRecord::ToolResult(_))
    }

    pub fn as_message_mut(&mut self) -> Option<&mut MessageRecord> {
        match self {
            CanonicalRecord::Message(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_message(&self) -> Option<&MessageRecord> {
        match self {
            CanonicalRecord::Message(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_tool_result_mut(&mut self) -> Option<&mut ToolResultRecord> {
        match self {
            CanonicalRecord::ToolResult(r) => Some(r),
            _ => None,
        }
    }
}

/// A message: what a role said (`content`: a string, or text blocks), the calls it
/// made, the usage of the model call that wrote it.
#[derive(Debug, Clone, Serialize)]
pub struct MessageRecord {
    pub id: String,
    pub turn: String,
    pub role: Role,
    pub content: Value,
    /// A kind this tool injected, read back from an agent's file it wrote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synthetic: Option<String>,
    /// The calls, in order (an agent's assistant message may hold an empty list).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<CallRecord>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

impl MessageRecord {
    pub fn new(id: &str, turn: &str, role: Role, content: Value) -> Self {
        MessageRecord {
            id: id.into(),
            turn: turn.into(),
            role,
            content,
            synthetic: None,
            tool_calls: None,
            usage: None,
        }
    }

    /// Appends a call (the list made when it is the first).
    pub fn push_call(&mut self, call: CallRecord) {
        self.tool_calls.get_or_insert_with(Vec::new).push(call);
    }
}

/// A tool call: its id, the tool's name, the arguments (canonical JSON: an object, or a
/// string that is not JSON), kept as the JSON text they are written as.
#[derive(Debug, Clone, Serialize)]
pub struct CallRecord {
    pub id: String,
    pub name: String,
    pub arguments: Box<RawValue>,
}

impl CallRecord {
    /// A call whose arguments are a JSON value.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: &Value) -> Self {
        let arguments = serde_json::value::to_raw_value(arguments).expect("a JSON value serializes");
        CallRecord { id: id.into(), name: name.into(), arguments }
    }
}

/// A tool's result, answering the call `call_id`.
#[derive(Debug, Clone, Serialize)]
pub struct ToolResultRecord {
    pub id: String,
    pub turn: String,
    pub call_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub content: Value,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
}

/// A lifecycle event (a compaction completed, files changed) with its own fields.
#[derive(Debug, Clone, Serialize)]
pub struct EventRecord {
    pub name: Event,
    pub id: String,
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

impl EventRecord {
    /// An event with these fields, in order.
    pub fn new(name: Event, id: String, fields: impl IntoIterator<Item = (&'static str, Value)>) -> Self {
        EventRecord { name, id, fields: fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect() }
    }
}

impl From<MessageRecord> for CanonicalRecord {
    fn from(m: MessageRecord) -> Self {
        CanonicalRecord::Message(m)
    }
}

impl From<ToolResultRecord> for CanonicalRecord {
    fn from(r: ToolResultRecord) -> Self {
        CanonicalRecord::ToolResult(r)
    }
}

impl From<EventRecord> for CanonicalRecord {
    fn from(e: EventRecord) -> Self {
        CanonicalRecord::Event(e)
    }
}
