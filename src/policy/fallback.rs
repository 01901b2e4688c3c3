//! The native-loop fallback (SPEC 4): the eligible items between the protected head and
//! the retained tail become one deterministic, bounded, lossy summary message.

use super::{boundary, injected, Reason, ReasonCode};
use crate::config::Config;
use crate::render::{self, SummaryEntry};
use crate::tokens;
use crate::transcript::{item_text_for_preview, ItemKind, Role, Synthetic, Transcript, Usage};
use serde_json::{json, Map, Value};

/// A proposed fallback: the items it removes and the summary record in their place.
pub(super) struct Summary {
    pub removed: Vec<usize>,
    /// The record the summary is written after (the last removed one).
    pub at: usize,
    pub record: String,
    pub text: String,
    /// The journal's `history_fallback_applied` fields.
    pub event: Value,
}

/// The fallback, when it applies; otherwise the reason it does not.
pub(super) fn propose(t: &Transcript<'_>, cfg: &Config, est: &[u64], reasons: &mut Vec<Reason>) -> Option<Summary> {
    if t.items.iter().any(|i| i.is_synthetic(Synthetic::HistorySummaryFallback)) {
        reasons.push(Reason::new(
            ReasonCode::FallbackAlreadyApplied,
            "the history fallback runs at most once per transcript",
        ));
        return None;
    }
    let f = &cfg.fallback;
    let inputs = t.history_items(super::context_start(t));
    let b = boundary(t, &inputs, f.protect_first, f.retain_last);
    let eligible = &inputs[b.eligible()];
    if eligible.len() < f.min_eligible.max(1) {
        reasons.push(Reason::new(
            ReasonCode::NotEnoughHistory,
            format!(
                "{} eligible item(s) after protecting {} and retaining {}; at least {} needed",
                eligible.len(),
                b.protected_end,
                inputs.len() - b.retained_start,
                f.min_eligible.max(1)
            ),
        ));
        return None;
    }
    let text = summary_text(t, eligible, cfg);
    let mut own = Map::new();
    own.insert("summarized".into(), Value::Array(eligible.iter().map(|&i| json!(t.items[i].id)).collect()));
    own.insert("summarized_usage".into(), summarized_usage(t, eligible, est));
    let first_turn = t.items[eligible[0]].turn.as_deref().map(str::to_string);
    let record = injected::record(Synthetic::HistorySummaryFallback, first_turn.as_deref(), own, text.clone());
    let before: u64 = est.iter().sum();
    let removed: u64 = eligible.iter().map(|&i| est[i]).sum();
    let after = before - removed + tokens::count_text(&text, cfg.tokenizer);
    let event = json!({"items_summarized": eligible.len(), "tokens_before": before, "tokens_after": after});
    let last = *eligible.last().expect("eligible is not empty");
    Some(Summary { removed: eligible.to_vec(), at: t.items[last].record, record, text, event })
}

/// The summary of `items`; only the lines that can be shown are decoded.
pub(super) fn summary_text(t: &Transcript<'_>, items: &[usize], cfg: &Config) -> String {
    let s = &cfg.summary;
    let shown = items.len().min(s.max_items);
    let older = items.len() - shown;
    let items = &items[older..];
    render::build_from(items.len(), older, s.preview_chars, s.max_items, s.max_chars, &|k| {
        summary_entry(t, items[k], s.preview_chars)
    })
}

/// One summary line's data; a text is decoded only as far as its preview needs.
fn summary_entry(t: &Transcript<'_>, i: usize, preview_chars: usize) -> SummaryEntry {
    let item = &t.items[i];
    let text = item_text_for_preview(t, i, preview_chars);
    match &item.kind {
        ItemKind::Message { role, calls, .. } => SummaryEntry::Message {
            role: role.as_str(),
            text,
            calls: calls.iter().map(|c| (c.name.to_string(), c.arguments.get().to_string())).collect(),
        },
        ItemKind::ToolResult { name, .. } => {
            let tool = name.as_deref().map(str::to_string).or_else(|| {
                let owner = &t.items[item.call_item?];
                let cid = item.result_call_id()?;
                owner.calls().iter().find(|c| c.id == cid).map(|c| c.name.to_string())
            });
            SummaryEntry::Result { tool: tool.unwrap_or_else(|| "unknown tool".into()), failed: item.failed(), text }
        }
    }
}

/// Sums over the removed assistant messages; an estimated call counts as input tokens.
fn summarized_usage(t: &Transcript<'_>, eligible: &[usize], est: &[u64]) -> Value {
    let mut sum = Usage::default();
    let mut estimated = false;
    let mut prefix = vec![0u64; t.items.len() + 1];
    for i in 0..t.items.len() {
        prefix[i + 1] = prefix[i] + est[i];
    }
    for &i in eligible {
        let item = &t.items[i];
        if item.role() != Some(Role::Assistant) {
            continue;
        }
        if let Some(u) = item.usage() {
            sum.add(u);
        } else {
            sum.input_tokens = sum.input_tokens.saturating_add(prefix[i + 1]);
            estimated = true;
        }
    }
    json!({"input_tokens": sum.input_tokens, "cache_read_tokens": sum.cache_read_tokens,
        "cache_write_tokens": sum.cache_write_tokens, "output_tokens": sum.output_tokens, "estimated": estimated})
}
