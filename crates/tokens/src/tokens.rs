//! Token counts: usage sums, the bytes/4 estimate, and the real BPE tokenizers (SPEC 1).

use crate::config::Tokenizer;
use crate::transcript::{item_text, Transcript};
use std::sync::OnceLock;
use tiktoken_rs::CoreBPE;

/// ceil(bytes / 4): the documented heuristic.
pub fn heuristic(bytes: u64) -> u64 {
    bytes.div_ceil(4)
}

fn bpe(tokenizer: Tokenizer) -> Option<&'static CoreBPE> {
    static O200K: OnceLock<CoreBPE> = OnceLock::new();
    static CL100K: OnceLock<CoreBPE> = OnceLock::new();
    // The vocabularies ship inside the tiktoken-rs crate: no network at run time.
    match tokenizer {
        Tokenizer::Heuristic => None,
        Tokenizer::O200k => Some(O200K.get_or_init(|| tiktoken_rs::o200k_base().expect("bundled o200k vocabulary"))),
        Tokenizer::Cl100k => {
            Some(CL100K.get_or_init(|| tiktoken_rs::cl100k_base().expect("bundled cl100k vocabulary")))
        }
    }
}

/// Counts the tokens of a text with the chosen tokenizer.
pub fn count_text(text: &str, tokenizer: Tokenizer) -> u64 {
    match bpe(tokenizer) {
        None => heuristic(text.len() as u64),
        Some(b) => b.encode_ordinary(text).len() as u64,
    }
}

/// The estimate of every item, in item order.
pub fn item_estimates(t: &Transcript<'_>, tokenizer: Tokenizer) -> Vec<u64> {
    let Some(b) = bpe(tokenizer) else {
        return t.items.iter().map(|i| heuristic(i.estimate_bytes())).collect();
    };
    (0..t.items.len())
        .map(|i| {
            let item = &t.items[i];
            let mut n = b.encode_ordinary(&item_text(t, i)).len();
            for call in item.calls() {
                n += b.encode_ordinary(&call.name).len() + b.encode_ordinary(&call.arguments).len();
            }
            n as u64
        })
        .collect()
}
