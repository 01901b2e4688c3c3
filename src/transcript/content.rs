//! The text of an item, decoded on demand (previews, real tokenizers): the reader only
//! measures text, so only the few items that are rendered are decoded, and an item
//! that is only previewed is decoded no further than its preview needs.

use super::Transcript;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

#[derive(Deserialize)]
struct WithContent<'a> {
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
}

/// The item's `content` as the JSON it is in the record.
fn raw_content<'a>(t: &Transcript<'a>, item: usize) -> Option<&'a str> {
    if let Some(raw) = t.items[item].content {
        return Some(raw);
    }
    let line = t.line_text(t.items[item].record);
    serde_json::from_str::<WithContent<'a>>(line).ok()?.content.map(RawValue::get)
}

/// The text of a `content` value: the string; for blocks (or a chat message's single
/// part, which the dataset view keeps raw) what the importers make of them (the
/// blocks' texts joined by newlines); empty for anything else.
pub fn text_of_json(raw: &str) -> String {
    if raw.starts_with('"') {
        return crate::text::unescape_literal(raw).map(Cow::into_owned).unwrap_or_default();
    }
    serde_json::from_str::<serde_json::Value>(raw).map(|v| text_of(&v)).unwrap_or_default()
}

/// The text content of an item: the string, or its text blocks joined by newlines.
pub fn item_text(t: &Transcript<'_>, item: usize) -> String {
    raw_content(t, item).map(text_of_json).unwrap_or_default()
}

/// What a summary line shows of an item: `text::preview(item_text, max)`. A string
/// content is previewed straight from its JSON literal, decoded only up to the cut;
/// blocks are decoded whole and left for the renderer to preview.
pub fn item_text_for_preview(t: &Transcript<'_>, item: usize, max: usize) -> EntryText {
    let Some(raw) = raw_content(t, item) else { return EntryText::Full(String::new()) };
    // A string is previewed from the literal itself, decoding only up to the cut.
    if let Some((shown, _)) = crate::text::preview_json(raw, max) {
        return EntryText::Preview(shown);
    }
    EntryText::Full(text_of_json(raw))
}

/// An entry's text: whole, or already made into its preview by the caller (at the
/// renderer's `preview_chars`), which then is shown as it is.
#[derive(Debug, Clone)]
pub enum EntryText {
    Full(String),
    Preview(String),
}

impl EntryText {
    /// The preview at `n` characters (made now, or the one already made).
    pub fn preview(&self, n: usize) -> std::borrow::Cow<'_, str> {
        match self {
            EntryText::Full(t) => crate::text::preview(t, n).into(),
            EntryText::Preview(p) => p.as_str().into(),
        }
    }

    /// Whether there is nothing to show.
    pub fn is_blank(&self) -> bool {
        match self {
            EntryText::Full(t) | EntryText::Preview(t) => t.trim().is_empty(),
        }
    }
}

impl From<String> for EntryText {
    fn from(text: String) -> EntryText {
        EntryText::Full(text)
    }
}

/// The text of a `content` value as every importer reads it: the string, the blocks'
/// `text`s joined by newlines, an object's `text`; empty for anything else.
pub fn text_of(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => {
            a.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
        }
        Value::Object(o) => o.get("text").and_then(Value::as_str).unwrap_or("").to_string(),
        _ => String::new(),
    }
}
