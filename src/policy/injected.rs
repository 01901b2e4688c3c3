//! The records the tool injects (SPEC 4): exactly `type`, `id`, `turn`, `role`,
//! `synthetic`, the kind's own fields, then `content`.

use crate::transcript::{Synthetic, Transcript};
use serde_json::{json, Map, Value};

/// An injected record with the id `rivumi:<kind>`.
pub(super) fn record(kind: Synthetic, turn: Option<&str>, own: Map<String, Value>, content: String) -> String {
    with_id(&format!("rivumi:{}", kind.as_str()), kind, turn, own, content)
}

/// An injected record with its own id (checkpoints are numbered). Written field by
/// field (what a `Map` would give, in the same order), the long content escaped in one
/// pass.
pub(super) fn with_id(
    id: &str,
    kind: Synthetic,
    turn: Option<&str>,
    own: Map<String, Value>,
    content: String,
) -> String {
    let mut out = String::with_capacity(content.len() + content.len() / 8 + 256);
    out.push_str("{\"type\":\"message\",\"id\":");
    crate::render::push_json_str(&mut out, id);
    out.push_str(",\"turn\":");
    match turn {
        Some(t) => crate::render::push_json_str(&mut out, t),
        None => out.push_str("null"),
    }
    out.push_str(",\"role\":\"user\",\"synthetic\":");
    crate::render::push_json_str(&mut out, kind.as_str());
    for (k, v) in &own {
        debug_assert!(!["type", "id", "turn", "role", "synthetic", "content"].contains(&k.as_str()), "{k}");
        out.push(',');
        crate::render::push_json_str(&mut out, k);
        out.push(':');
        out.push_str(&serde_json::to_string(v).expect("a JSON value serializes"));
    }
    out.push_str(",\"content\":");
    crate::render::push_json_str(&mut out, &content);
    out.push('}');
    out
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
