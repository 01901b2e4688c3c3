//! The records the tool injects (SPEC 4): exactly `type`, `id`, `turn`, `role`,
//! `synthetic`, the kind's own fields, then `content` — written here, and read back
//! here from that layout by the writers of other formats ([`is_message`], [`parts`]).

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

/// Whether an appended canonical record is a message (not an event, which has no place
/// among messages). Injected records start with their type.
pub fn is_message(record: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Typed<'a> {
        #[serde(borrow, rename = "type")]
        ty: Option<std::borrow::Cow<'a, str>>,
    }
    if let Some(rest) = record.strip_prefix("{\"type\":") {
        return rest.starts_with("\"message\"");
    }
    serde_json::from_str::<Typed<'_>>(record).is_ok_and(|t| t.ty.as_deref() == Some("message"))
}

/// The kind and the content (as the JSON string it is) of an injected record: read
/// from the layout [`with_id`] writes when it has it, parsed otherwise. A record with
/// no kind is a `note`.
pub fn parts(record: &str) -> (std::borrow::Cow<'_, str>, &str) {
    layout_parts(record).map_or_else(|| parsed_parts(record), |(k, c)| (k.into(), c))
}

/// [`parts`] from the layout, without parsing the record again (`synthetic` before any
/// field of the kind's own, `content` last). Outside a string a `"` is never escaped,
/// and inside one it always is, so the keys found are the record's own.
fn layout_parts(record: &str) -> Option<(&str, &str)> {
    const SYNTHETIC: &[u8] = b",\"synthetic\":\"";
    const CONTENT: &str = ",\"content\":";
    let rest = record.strip_prefix("{\"type\":\"message\",")?.strip_suffix('}')?;
    let kind_at = memchr::memmem::find(rest.as_bytes(), SYNTHETIC)? + SYNTHETIC.len();
    let kind = &rest[kind_at..kind_at + rest[kind_at..].find('"')?];
    // The content is the last value, a string: it opens at the last quote that is not
    // escaped (preceded by an even number of backslashes), found from the end.
    let b = rest.as_bytes();
    let mut end = b.len().checked_sub(1).filter(|&e| b[e] == b'"')?;
    let open = loop {
        let q = memchr::memrchr(b'"', &b[..end])?;
        let backslashes = b[..q].iter().rev().take_while(|&&c| c == b'\\').count();
        if backslashes % 2 == 0 {
            break q;
        }
        end = q;
    };
    let content = &rest[open..];
    (!kind.contains('\\') && rest[..open].ends_with(CONTENT)).then_some((kind, content))
}

/// [`parts`] by parsing the record (any other layout).
fn parsed_parts(record: &str) -> (std::borrow::Cow<'_, str>, &str) {
    #[derive(serde::Deserialize)]
    struct Injected<'a> {
        #[serde(borrow, default)]
        synthetic: Option<std::borrow::Cow<'a, str>>,
        #[serde(borrow, default)]
        content: Option<&'a serde_json::value::RawValue>,
    }
    let injected: Injected<'_> = serde_json::from_str(record).unwrap_or(Injected { synthetic: None, content: None });
    (injected.synthetic.unwrap_or("note".into()), injected.content.map_or("\"\"", serde_json::value::RawValue::get))
}

#[cfg(test)]
mod tests {
    use crate::transcript::Synthetic;
    use proptest::prelude::*;
    use serde_json::{json, Map};

    proptest! {
        /// Reading a record this module wrote, by its layout, gives what parsing it gives.
        #[test]
        fn injected_records_are_read_by_their_layout(
            turn in proptest::option::of("[a-z\",:\\\\ ]{0,12}"),
            own in proptest::option::of("[a-z\",:\\\\{} ]{0,20}"),
            content in "[a-z\",:\\\\{}\n é]{0,60}",
            kind in 0usize..4,
        ) {
            let kind = [Synthetic::HistorySummaryFallback, Synthetic::PressureReminder, Synthetic::Reanchor, Synthetic::Checkpoint][kind];
            let mut fields = Map::new();
            if let Some(o) = own {
                // Own fields may hold the keys the reader looks for, nested.
                fields.insert("summarized".into(), json!([o, {"x": 1, "content": o, "synthetic": o}]));
            }
            let record = super::with_id("rivumi:x", kind, turn.as_deref(), fields, content);
            prop_assert!(super::is_message(&record));
            let fast = super::layout_parts(&record).expect("the layout is read");
            let parsed = super::parsed_parts(&record);
            prop_assert_eq!((fast.0, fast.1), (parsed.0.as_ref(), parsed.1));
            prop_assert_eq!(fast.0, kind.as_str());
        }
    }

    #[test]
    fn an_event_is_not_a_message() {
        assert!(!super::is_message(r#"{"type":"event","name":"compaction_requested","id":"e"}"#));
        assert!(!super::is_message(r#"{"name":"x","type":"event"}"#));
        assert!(super::is_message(r#"{"id":"m","type":"message"}"#));
    }
}
