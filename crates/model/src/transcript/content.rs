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

/// The texts of an item's content, one by one: the string, or the `text` of each block
/// that has one (Claude Code measures its blocks one at a time).
pub fn content_texts(t: &Transcript<'_>, item: usize) -> Vec<String> {
    let Some(raw) = raw_content(t, item) else { return Vec::new() };
    if raw.starts_with('"') {
        return vec![text_of_json(raw)];
    }
    let blocks = serde_json::from_str::<Vec<serde_json::Value>>(raw).unwrap_or_default();
    blocks.iter().filter_map(|b| b.get("text")?.as_str().map(str::to_string)).collect()
}

/// What a summary line shows of an item: `text::preview(item_text, max)`. A string
/// content is kept as its JSON literal, previewed when the line is written and decoded
/// only up to the cut; blocks are decoded whole and left for the renderer to preview.
pub fn item_text_for_preview<'a>(t: &Transcript<'a>, item: usize) -> EntryText<'a> {
    match raw_content(t, item) {
        None => EntryText::Full(String::new()),
        Some(raw) if raw.starts_with('"') => EntryText::Json(raw),
        Some(raw) => EntryText::Full(text_of_json(raw)),
    }
}

/// An entry's text: whole, or the JSON string literal that holds it.
#[derive(Debug, Clone)]
pub enum EntryText<'a> {
    Full(String),
    Json(&'a str),
}

impl EntryText<'_> {
    /// Appends the preview at `n` characters to `out`: how many characters it wrote.
    pub fn push_preview(&self, out: &mut String, n: usize) -> usize {
        let shown = match self {
            EntryText::Full(t) => crate::text::preview_into(out, t, n),
            EntryText::Json(raw) => crate::text::preview_json_into(out, raw, n)
                .unwrap_or_else(|| crate::text::preview_into(out, &text_of_json(raw), n)),
        };
        shown.chars
    }
}

impl From<String> for EntryText<'_> {
    fn from(text: String) -> Self {
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
