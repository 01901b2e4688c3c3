//! The records the tool injects (SPEC 4): exactly `type`, `id`, `turn`, `role`,
//! `synthetic`, the kind's own fields, then `content`.

use crate::transcript::{Synthetic, Transcript};
use serde_json::{json, Map, Value};

/// An injected record with the id `rivumi:<kind>`.
pub(super) fn record(kind: Synthetic, turn: Option<&str>, own: Map<String, Value>, content: String) -> String {
    with_id(&format!("rivumi:{}", kind.as_str()), kind, turn, own, content)
}

/// An injected record with its own id (checkpoints are numbered).
pub(super) fn with_id(
    id: &str,
    kind: Synthetic,
    turn: Option<&str>,
    own: Map<String, Value>,
    content: String,
) -> String {
    let mut obj = Map::new();
    obj.insert("type".into(), json!("message"));
    obj.insert("id".into(), json!(id));
    obj.insert("turn".into(), json!(turn));
    obj.insert("role".into(), json!("user"));
    obj.insert("synthetic".into(), json!(kind.as_str()));
    obj.extend(own);
    obj.insert("content".into(), json!(content));
    // Straight into a buffer (`Display` would go through the formatter byte by byte).
    serde_json::to_string(&Value::Object(obj)).expect("a JSON object serializes")
}

/// The re-anchor record and its text, for either path.
pub(super) fn reanchor(t: &Transcript<'_>, text: &str, variant: super::PressurePath) -> String {
    let mut own = Map::new();
    own.insert("variant".into(), json!(variant.as_str()));
    record(Synthetic::Reanchor, last_input_turn(t).as_deref(), own, text.to_string())
}

pub(super) fn last_input_turn(t: &Transcript<'_>) -> Option<String> {
    t.items.iter().rev().find(|i| i.is_input()).and_then(|i| i.turn.as_deref().map(str::to_string))
}
