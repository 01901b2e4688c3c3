//! The native-loop fallback (SPEC 4): the eligible items between the protected head and
//! the retained tail become one deterministic, bounded, lossy summary message.

use super::journal::Entry;
use super::{boundary, injected, Reason, ReasonCode};
use crate::config::Config;
use crate::render::{self, SummaryEntry};
use crate::tokens;
use crate::transcript::{item_text_for_preview, ItemKind, Role, Synthetic, Transcript, Usage};
use serde_json::{json, Map, Value};
use std::borrow::Cow;

/// A proposed fallback: the items it removes and the summary record in their place.
pub(super) struct Summary {
    pub removed: Vec<usize>,
    /// The record the summary is written after (the last removed one).
    pub at: usize,
    pub record: injected::Message,
    pub text: String,
    /// The journal's `history_fallback_applied` event.
    pub event: Entry,
    /// The estimate of the current context after the summary took the place of the
    /// removed items (what is appended with it not counted).
    pub after: u64,
}

/// How the fallback places its boundary under a size to fit (`fallback.target_tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fit {
    /// The newest items that fit with the protected head, the summary and the records
    /// appended with it (their estimate).
    Within { appended: u64 },
    /// The least the transcript can come to: the protected head and the summary's
    /// header (no retained tail, nothing appended), for a target nothing reaches.
    Least,
}

/// The fallback, when it applies; otherwise the reason it does not. `fit` says how a
/// size to fit (`fallback.target_tokens`) places the boundary.
pub(super) fn propose(t: &Transcript<'_>, cfg: &Config, est: &[u64], fit_as: Fit) -> Result<Summary, Reason> {
    if t.items.iter().any(|i| i.is_synthetic(Synthetic::HistorySummaryFallback)) {
        return Err(Reason::new(
            ReasonCode::FallbackAlreadyApplied,
            "the history fallback runs at most once per transcript",
        ));
    }
    let f = &cfg.fallback;
    let start = super::context_start(t);
    let inputs = t.history_items(start);
    let (b, fitted) = match (f.target_tokens, fit_as) {
        (Some(target), Fit::Within { appended }) => {
            fit(t, start, &inputs, cfg, est, appended, target).map_err(|least| {
                let said = format!(
                    "the protected head and the injected records alone come to {least} tokens, over the target of \
                     {target}"
                );
                Reason::new(ReasonCode::TargetUnreachable, said)
            })?
        }
        (Some(_), Fit::Least) => {
            let b = boundary(t, &inputs, f.protect_first, 0);
            let eligible = &inputs[b.eligible()];
            (b, (!eligible.is_empty()).then(|| summary_fitting(t, eligible, cfg, 0)))
        }
        (None, _) => (boundary(t, &inputs, f.protect_first, f.retain_last), None),
    };
    let eligible = &inputs[b.eligible()];
    if eligible.len() < f.min_eligible.max(1) {
        return Err(Reason::new(
            ReasonCode::NotEnoughHistory,
            format!(
                "{} eligible item(s) after protecting {} and retaining {}; at least {} needed",
                eligible.len(),
                b.protected_end,
                inputs.len() - b.retained_start,
                f.min_eligible.max(1)
            ),
        ));
    }
    let text = fitted.unwrap_or_else(|| summary_text(t, eligible, cfg));
    // The current context's estimate (what an earlier compaction took out not counted).
    let before: u64 = est[start..].iter().sum();
    let removed: u64 = eligible.iter().map(|&i| est[i]).sum();
    let summary = tokens::count_text(&text, cfg.tokenizer);
    // Under a size to fit, a compaction that would not shrink the transcript is none.
    // (The budget's fallback keeps SPEC 4's rule, which asks only for enough history.)
    if f.target_tokens.is_some() && summary >= removed {
        return Err(Reason::new(
            ReasonCode::CompactionWouldNotShrink,
            format!(
                "summarizing {} item(s) of {removed} tokens would take {summary} tokens: nothing is summarized",
                eligible.len()
            ),
        ));
    }
    let mut own = Map::new();
    own.insert("summarized_usage".into(), summarized_usage(t, eligible, est));
    let first_turn = t.items[eligible[0]].turn.as_deref().map(str::to_string);
    let mut record = injected::Message::new(Synthetic::HistorySummaryFallback, first_turn, own, text.clone());
    let mut behind = crate::mapped::Behind::new(t.src);
    record.summarized = Some(injected::IdList::new(eligible.iter().map(|&i| {
        behind.reached(t.records[t.items[i].record].span.start);
        &*t.items[i].id
    })));
    let after = before - removed + summary;
    let event =
        Entry::HistoryFallbackApplied { items_summarized: eligible.len(), tokens_before: before, tokens_after: after };
    let last = *eligible.last().expect("eligible is not empty");
    Ok(Summary { removed: eligible.to_vec(), at: t.items[last].record, record, text, event, after })
}

/// The boundary that keeps the newest history fitting in `target` tokens with the
/// protected head, the records that are not history, the summary and `appended`; with
/// the summary it needs. `Err`: the least the context can come to (the head and the
/// injected records alone), when that passes the target. `start`: the context's first
/// item, `inputs` its history.
fn fit(
    t: &Transcript<'_>,
    start: usize,
    inputs: &[usize],
    cfg: &Config,
    est: &[u64],
    appended: u64,
    target: u64,
) -> Result<(super::Boundary, Option<String>), u64> {
    let f = &cfg.fallback;
    let mut is_history = vec![false; t.items.len()];
    for &i in inputs {
        is_history[i] = true;
    }
    // What stays whatever the boundary: instructions, earlier injected records.
    let fixed: u64 = (start..t.items.len()).filter(|&i| !is_history[i]).map(|i| est[i]).sum::<u64>() + appended;
    // The context for a number of retained items asked for: the boundary (grown so that
    // no call is apart from its results), the summary bounded by the room left (its
    // header is never cut: the oldest lines give way first, as under summary.max_chars),
    // and the total.
    let plan = |retain: usize| {
        let b = boundary(t, inputs, f.protect_first, retain);
        let eligible = &inputs[b.eligible()];
        let kept: u64 = inputs[..b.protected_end].iter().chain(&inputs[b.retained_start..]).map(|&i| est[i]).sum();
        let room = target.saturating_sub(fixed + kept);
        let text = (!eligible.is_empty()).then(|| summary_fitting(t, eligible, cfg, room));
        let summary = text.as_deref().map_or(0, |s| tokens::count_text(s, cfg.tokenizer));
        (b, text, fixed + kept + summary)
    };
    // The most items retained that fit, found by bisection: fewer retained items never
    // make the context larger, and a group of calls and results goes or stays whole in
    // one step whatever its size (O(n log n) in the items of the history).
    let most = inputs.len().saturating_sub(f.protect_first);
    let (b, text, total) = plan(most);
    if total <= target {
        return Ok((b, text));
    }
    let (b0, text0, least) = plan(0);
    if least > target {
        return Err(least);
    }
    let (mut fits, mut over) = (0, most);
    let mut best = (b0, text0);
    while over - fits > 1 {
        let mid = fits + (over - fits) / 2;
        let (b, text, total) = plan(mid);
        if total <= target {
            (fits, best) = (mid, (b, text));
        } else {
            over = mid;
        }
    }
    Ok(best)
}

/// The summary of `items` in at most `room` tokens by the configured tokenizer, the
/// oldest lines giving way first (as under `summary.max_chars`); its header is never
/// cut, so a room smaller than the header gets the header alone.
fn summary_fitting(t: &Transcript<'_>, items: &[usize], cfg: &Config, room: u64) -> String {
    let mut max_chars = cfg.summary.max_chars.min(usize::try_from(room.saturating_mul(4)).unwrap_or(usize::MAX).max(1));
    let mut last: Option<String> = None;
    let mut stalled = 0u32;
    loop {
        let text = summary_within(t, items, &crate::config::Summary { max_chars, ..cfg.summary.clone() });
        let tokens = tokens::count_text(&text, cfg.tokenizer);
        // Characters are not tokens (a multi-byte character, a tokenizer's merges): cut
        // again by what is over, until it fits or only the header is left. A cut that
        // changed nothing (the text gives way a line at a time) cuts twice as deep next
        // time: the summary always ends within the room or at its header.
        if tokens <= room || max_chars == 1 {
            return text;
        }
        if last.as_ref() == Some(&text) {
            stalled = (stalled + 1).min(32);
        } else {
            stalled = 0;
        }
        let over = usize::try_from(tokens - room).unwrap_or(usize::MAX);
        let cut = over.saturating_mul(4).max(1).saturating_mul(1 << stalled);
        max_chars = max_chars.saturating_sub(cut).max(1);
        last = Some(text);
    }
}

/// The summary of `items`; only the lines that can be shown are decoded.
pub(super) fn summary_text(t: &Transcript<'_>, items: &[usize], cfg: &Config) -> String {
    summary_within(t, items, &cfg.summary)
}

/// [`summary_text`] under these bounds.
fn summary_within(t: &Transcript<'_>, items: &[usize], s: &crate::config::Summary) -> String {
    let shown = items.len().min(s.max_items);
    let older = items.len() - shown;
    let items = &items[older..];
    render::build_from(items.len(), older, s.preview_chars, s.max_items, s.max_chars, &|k| summary_entry(t, items[k]))
}

/// One summary line's data; a text is decoded only as far as its preview needs.
fn summary_entry<'t>(t: &'t Transcript<'_>, i: usize) -> SummaryEntry<'t> {
    let item = &t.items[i];
    let text = item_text_for_preview(t, i);
    match &item.kind {
        ItemKind::Message { role, calls, .. } => SummaryEntry::Message {
            role: role.as_str(),
            text,
            calls: calls
                .iter()
                .map(|c| (Cow::Borrowed(c.name.as_ref()), Cow::Borrowed(c.arguments.as_ref())))
                .collect(),
        },
        ItemKind::ToolResult { name, .. } => {
            let tool = name.as_deref().or_else(|| {
                let owner = &t.items[item.call_item?];
                let cid = item.result_call_id()?;
                owner.calls().iter().find(|c| c.id == cid).map(|c| c.name.as_ref())
            });
            SummaryEntry::Result { tool: Cow::Borrowed(tool.unwrap_or("unknown tool")), failed: item.failed(), text }
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
