//! The canonical records (SPEC 1), typed: a message, a tool result, an event. One type
//! for both directions: importers build them and they are written once, with their keys
//! in the canonical order (a message: `type`, `id`, `turn`, `role`, `content`, then
//! `synthetic`, `tool_calls`, `usage` when it has them; a tool result: `type`, `id`,
//! `turn`, `call_id`, `name`, `content`, `is_error`, `exit_code`; an event: `type`,
//! `name`, `id`, then its own fields), and the canonical reader reads a line into the
//! same type, borrowing its strings from the input.
//!
//! The content's type is a parameter: an importer holds the value it writes
//! ([`Value`]); the reader holds only what the policy needs of it, its text's length
//! ([`TextLen`]), so a transcript never keeps a copy of its text.

use super::{Event, Mark, Role, Usage};
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

/// One canonical record: what importers hand on and what is written. Read, its `type`
/// is found first and the record's own type then reads the line (a tagged enum's derive
/// would buffer the record, which loses the arguments' JSON text); the canonical reader
/// does the same with its fast path in front.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CanonicalRecord<'a, C = Value> {
    Message(MessageRecord<'a, C>),
    ToolResult(ToolResultRecord<'a, C>),
    Event(EventRecord<'a>),
}

impl<'a, C: Deserialize<'a> + Default> CanonicalRecord<'a, C> {
    /// Reads one record from its line; `Ok(None)` for a record of another type (a
    /// `session`, or one this version does not know).
    pub fn from_line(text: &'a str) -> serde_json::Result<Option<Self>> {
        #[derive(Deserialize)]
        struct Tag<'b> {
            #[serde(rename = "type", borrow)]
            ty: Cow<'b, str>,
        }
        let tag: Tag<'_> = serde_json::from_str(text)?;
        Ok(Some(match &*tag.ty {
            "message" => CanonicalRecord::Message(serde_json::from_str(text)?),
            "tool_result" => CanonicalRecord::ToolResult(serde_json::from_str(text)?),
            "event" => CanonicalRecord::Event(serde_json::from_str(text)?),
            _ => return Ok(None),
        }))
    }
}

/// Read from JSON text in memory (a deserializer that can lend the record's text, as
/// `serde_json::from_str` does).
impl<'de: 'a, 'a, C: Deserialize<'de> + Default> Deserialize<'de> for CanonicalRecord<'a, C> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = <&'de RawValue>::deserialize(d)?;
        let record = CanonicalRecord::from_line(raw.get()).map_err(de::Error::custom)?;
        record.ok_or_else(|| de::Error::custom("expected a message, tool_result or event record"))
    }
}

impl<'a, C> CanonicalRecord<'a, C> {
    /// Whether it is a model-visible item (a message or a tool result).
    pub fn is_item(&self) -> bool {
        matches!(self, CanonicalRecord::Message(_) | CanonicalRecord::ToolResult(_))
    }

    pub fn as_message_mut(&mut self) -> Option<&mut MessageRecord<'a, C>> {
        match self {
            CanonicalRecord::Message(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_message(&self) -> Option<&MessageRecord<'a, C>> {
        match self {
            CanonicalRecord::Message(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_tool_result_mut(&mut self) -> Option<&mut ToolResultRecord<'a, C>> {
        match self {
            CanonicalRecord::ToolResult(r) => Some(r),
            _ => None,
        }
    }
}

/// A message: what a role said (`content`: a string, or text blocks), the calls it
/// made, the usage of the model call that wrote it; on a record an earlier run of this
/// tool injected, the fields it wrote that the policy and `validate` read back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageRecord<'a, C = Value> {
    #[serde(borrow)]
    pub id: Cow<'a, str>,
    #[serde(borrow, default)]
    pub turn: Option<Cow<'a, str>>,
    pub role: Role,
    #[serde(default)]
    pub content: C,
    /// A kind this tool injected (read back from a file it wrote).
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub synthetic: Option<Mark<'a>>,
    /// The calls, in order (an agent's assistant message may hold an empty list).
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<Call<'a>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// An earlier fallback summary's `summarized_usage` (an object: the four counts;
    /// its `estimated` flag is not read).
    #[serde(default, deserialize_with = "usage_object", skip_serializing_if = "Option::is_none")]
    pub summarized_usage: Option<Usage>,
    /// A checkpoint's `occupancy_after`: the base occupancy after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occupancy_after: Option<u64>,
    /// A checkpoint's own fields, which `validate` checks. Read whatever their shape:
    /// present (`Some`) with what they hold of the expected one.
    #[serde(default, deserialize_with = "loose_u64", skip_serializing_if = "Option::is_none")]
    #[allow(clippy::option_option)]
    pub occupancy_before: Option<Option<u64>>,
    #[serde(default, deserialize_with = "loose_strings", skip_serializing_if = "Option::is_none")]
    pub summarized_turn_ids: Option<Vec<String>>,
    #[serde(default, deserialize_with = "loose_strings", skip_serializing_if = "Option::is_none")]
    pub retained_turn_ids: Option<Vec<String>>,
}

impl<'a, C> MessageRecord<'a, C> {
    pub fn new(id: impl Into<Cow<'a, str>>, turn: impl Into<Cow<'a, str>>, role: Role, content: C) -> Self {
        MessageRecord {
            id: id.into(),
            turn: Some(turn.into()),
            role,
            content,
            synthetic: None,
            tool_calls: None,
            usage: None,
            summarized_usage: None,
            occupancy_after: None,
            occupancy_before: None,
            summarized_turn_ids: None,
            retained_turn_ids: None,
        }
    }

    /// Appends a call (the list made when it is the first).
    pub fn push_call(&mut self, call: Call<'a>) {
        self.tool_calls.get_or_insert_with(Vec::new).push(call);
    }

    /// The turn, or "" when it has none.
    pub fn turn(&self) -> &str {
        self.turn.as_deref().unwrap_or("")
    }

    pub fn set_turn(&mut self, turn: impl Into<Cow<'a, str>>) {
        self.turn = Some(turn.into());
    }

    /// Marks it as a kind this tool injects (a name it does not know is kept).
    pub fn set_synthetic(&mut self, name: Option<impl Into<Cow<'a, str>>>) {
        self.synthetic = name.map(|n| Mark::of(n.into()));
    }

    /// Whether an earlier run wrote any of its own fields on it.
    pub fn has_written_fields(&self) -> bool {
        self.summarized_usage.is_some()
            || self.occupancy_after.is_some()
            || self.occupancy_before.is_some()
            || self.summarized_turn_ids.is_some()
            || self.retained_turn_ids.is_some()
    }
}

/// A tool call: its id, the tool's name, the arguments (canonical JSON: an object, or a
/// string that is not JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Call<'a> {
    #[serde(borrow)]
    pub id: Cow<'a, str>,
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    /// The JSON text of `arguments`, exactly as in the input (owned when an importer
    /// wrote it); always valid JSON: a parser or the validating scanner read it, or it
    /// was serialized from a value.
    #[serde(borrow, deserialize_with = "borrowed_raw", serialize_with = "raw")]
    pub arguments: Cow<'a, str>,
}

impl Call<'_> {
    /// A call whose arguments are a JSON value.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: &Value) -> Call<'static> {
        let arguments = serde_json::to_string(arguments).expect("a JSON value serializes");
        Call { id: Cow::Owned(id.into()), name: Cow::Owned(name.into()), arguments: Cow::Owned(arguments) }
    }
}

fn borrowed_raw<'de, D: Deserializer<'de>>(d: D) -> Result<Cow<'de, str>, D::Error> {
    <&'de RawValue>::deserialize(d).map(|raw| Cow::Borrowed(raw.get()))
}

/// Arguments are written as the JSON they are (checked as JSON on the way: a text that
/// is not is an error, never a broken record).
#[allow(clippy::ptr_arg)] // serde hands the field as it is
fn raw<S: Serializer>(json: &Cow<'_, str>, s: S) -> Result<S::Ok, S::Error> {
    let raw: &RawValue = serde_json::from_str(json).map_err(serde::ser::Error::custom)?;
    raw.serialize(s)
}

/// A tool's result, answering the call `call_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultRecord<'a, C = Value> {
    #[serde(borrow)]
    pub id: Cow<'a, str>,
    #[serde(borrow, default)]
    pub turn: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub call_id: Cow<'a, str>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Cow<'a, str>>,
    #[serde(default)]
    pub content: C,
    /// `null` reads as absent (false).
    #[serde(default, deserialize_with = "null_false", skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
}

impl<'a, C> ToolResultRecord<'a, C> {
    pub fn new(
        id: impl Into<Cow<'a, str>>,
        turn: impl Into<Cow<'a, str>>,
        call_id: impl Into<Cow<'a, str>>,
        content: C,
    ) -> Self {
        ToolResultRecord {
            id: id.into(),
            turn: Some(turn.into()),
            call_id: call_id.into(),
            name: None,
            content,
            is_error: false,
            exit_code: None,
        }
    }
}

/// A lifecycle event (a compaction completed, files changed) with its own fields. The
/// name is any string (an event this version does not know is passed through).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventRecord<'a> {
    pub name: Cow<'a, str>,
    pub id: Option<Cow<'a, str>>,
    /// Its own fields, in order (every field but `type`, `name` and `id`).
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

/// Read in one pass over the object: `name` and `id` borrowed, the rest kept in order;
/// `name`, `id` or a field the tool reads (`paths`, `trigger`, `pre_tokens`) given
/// twice is an error at the second.
impl<'de: 'a, 'a> Deserialize<'de> for EventRecord<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Str<'b>(#[serde(borrow)] Cow<'b, str>);
        struct Fields<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Fields<'a> {
            type Value = EventRecord<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an event record")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let (mut name, mut id, mut fields) = (None, None, Map::new());
                while let Some(Str(key)) = map.next_key::<Str<'de>>()? {
                    match &*key {
                        "type" => {
                            map.next_value::<de::IgnoredAny>()?;
                        }
                        "name" if name.is_some() => return Err(de::Error::duplicate_field("name")),
                        "name" => name = Some(map.next_value::<Str<'de>>()?.0),
                        "id" if id.is_some() => return Err(de::Error::duplicate_field("id")),
                        "id" => id = Some(map.next_value::<Option<Str<'de>>>()?.map(|s| s.0)),
                        read @ ("paths" | "trigger" | "pre_tokens") if fields.contains_key(read) => {
                            return Err(de::Error::custom(format_args!("duplicate field `{read}`")));
                        }
                        _ => {
                            let value = map.next_value::<Value>()?;
                            fields.insert(key.into_owned(), value);
                        }
                    }
                }
                let name = name.ok_or_else(|| de::Error::missing_field("name"))?;
                Ok(EventRecord { name, id: id.flatten(), fields })
            }
        }
        d.deserialize_map(Fields(std::marker::PhantomData))
    }
}

/// A usage given as an object (the four counts and any other fields), never a list.
fn usage_object<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Usage>, D::Error> {
    #[derive(Deserialize)]
    struct SummarizedUsage {
        #[serde(flatten)]
        usage: Usage,
    }
    Option::<SummarizedUsage>::deserialize(d).map(|o| o.map(|o| o.usage))
}

impl EventRecord<'static> {
    /// An event with these fields, in order.
    pub fn new(name: Event, id: String, fields: impl IntoIterator<Item = (&'static str, Value)>) -> Self {
        EventRecord::with_fields(name, id, fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }

    /// An event with this map of fields.
    pub fn with_fields(name: Event, id: String, fields: Map<String, Value>) -> Self {
        EventRecord { name: Cow::Borrowed(name.as_str()), id: Some(Cow::Owned(id)), fields }
    }
}

impl EventRecord<'_> {
    /// The event its name stands for, when this version knows it.
    pub fn event(&self) -> Option<Event> {
        Event::parse(&self.name)
    }

    /// The canonical line (no terminator): `type`, `name`, `id`, then its own fields.
    pub fn to_canonical(&self) -> String {
        #[derive(Serialize)]
        struct Tagged<'r, 'a> {
            #[serde(rename = "type")]
            ty: &'static str,
            #[serde(flatten)]
            event: &'r EventRecord<'a>,
        }
        serde_json::to_string(&Tagged { ty: "event", event: self }).expect("an event serializes")
    }
}

impl<'a, C> From<MessageRecord<'a, C>> for CanonicalRecord<'a, C> {
    fn from(m: MessageRecord<'a, C>) -> Self {
        CanonicalRecord::Message(m)
    }
}

impl<'a, C> From<ToolResultRecord<'a, C>> for CanonicalRecord<'a, C> {
    fn from(r: ToolResultRecord<'a, C>) -> Self {
        CanonicalRecord::ToolResult(r)
    }
}

impl<'a, C> From<EventRecord<'a>> for CanonicalRecord<'a, C> {
    fn from(e: EventRecord<'a>) -> Self {
        CanonicalRecord::Event(e)
    }
}

fn null_false<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Option::<bool>::deserialize(d).map(Option::unwrap_or_default)
}

/// A number of any shape: `Some(None)` when it is not an unsigned integer.
#[allow(clippy::option_option)] // absent; present, of another shape; a number
fn loose_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<u64>>, D::Error> {
    Value::deserialize(d).map(|v| Some(v.as_u64()))
}

/// A list of any shape: the strings it holds (none when it is not a list).
fn loose_strings<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    let v = Value::deserialize(d)?;
    let strings = v.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect();
    Ok(Some(strings))
}

/// What the reader keeps of a `content` value (a string, or text blocks): the UTF-8
/// length of its text, measured while parsing so the text itself is never kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TextLen(pub u64);

impl TextLen {
    /// What the reader would measure of this value: a string's length, or the sum of
    /// its blocks' `text`s.
    pub fn of(content: &Value) -> TextLen {
        TextLen(match content {
            Value::String(s) => s.len() as u64,
            Value::Array(blocks) => blocks.iter().filter_map(|b| b.get("text")?.as_str()).map(|s| s.len() as u64).sum(),
            _ => 0,
        })
    }
}

impl<'de> Deserialize<'de> for TextLen {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TextLenVisitor)
    }
}

struct TextLenVisitor;

impl<'de> Visitor<'de> for TextLenVisitor {
    type Value = TextLen;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("content as a string or an array of blocks")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<TextLen, E> {
        Ok(TextLen(s.len() as u64))
    }
    fn visit_unit<E: de::Error>(self) -> Result<TextLen, E> {
        Ok(TextLen(0))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TextLen, A::Error> {
        let mut n = 0;
        while let Some(block) = seq.next_element::<Block>()? {
            n += block.text.map_or(0, |t| t.0);
        }
        Ok(TextLen(n))
    }
}

#[derive(Deserialize)]
struct Block {
    #[serde(default)]
    text: Option<StrLen>,
}

struct StrLen(u64);

impl<'de> Deserialize<'de> for StrLen {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = StrLen;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<StrLen, E> {
                Ok(StrLen(s.len() as u64))
            }
        }
        d.deserialize_str(V)
    }
}
