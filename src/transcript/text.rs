//! The text of an item, decoded on demand (previews, real tokenizers): the reader only
//! measures text, so only the few items that are rendered are decoded in full.

use super::Transcript;
use serde::Deserialize;
use std::borrow::Cow;

#[derive(Deserialize)]
#[serde(untagged)]
enum Content<'a> {
    #[serde(borrow)]
    Text(Cow<'a, str>),
    Blocks(Vec<Block<'a>>),
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct WithContent<'a> {
    #[serde(borrow, default)]
    content: Option<Content<'a>>,
}

/// The text content of an item: the string, or its text blocks joined by newlines.
pub fn item_text(t: &Transcript<'_>, item: usize) -> String {
    let line = t.line_text(t.items[item].record);
    match serde_json::from_str::<WithContent>(line) {
        Ok(WithContent { content: Some(Content::Text(s)) }) => s.into_owned(),
        Ok(WithContent { content: Some(Content::Blocks(blocks)) }) => {
            let texts: Vec<&str> = blocks.iter().filter_map(|b| b.text.as_deref()).collect();
            texts.join("\n")
        }
        _ => String::new(),
    }
}
