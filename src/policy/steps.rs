//! The compacted context as one walk over (transcript, plan): the items that stay, in
//! order, with the replacement where the removed span was and the appended records
//! after them. Every writer of a compacted conversation (chat lines, dataset lines,
//! OpenHands rows, resumable sessions) consumes this walk instead of walking the plan
//! its own way.

use super::Plan;
use crate::transcript::Transcript;

/// One step of the compacted context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'p> {
    /// An item of the transcript that stays (index into `Transcript::items`).
    Kept(usize),
    /// A record the plan injects (canonical JSON text): the replacement or an appended
    /// record (a message, or a lifecycle event the writer may leave out).
    Injected(&'p str),
}

/// Which part of the transcript a walk covers and how it orders what it appends.
#[derive(Debug, Clone, Copy, Default)]
pub struct Walk {
    /// The first item written (0: all of them; the context start: what the model sees).
    pub from: usize,
    /// For chat APIs, which refuse a message between a call and its result: appended
    /// records go before a last kept message whose calls nothing answered.
    pub chat: bool,
}

/// The steps of the compacted context.
pub fn steps<'p>(t: &Transcript<'_>, plan: &'p Plan, walk: Walk) -> Vec<Step<'p>> {
    let mut removed = vec![false; t.items.len()];
    for &i in &plan.removed {
        removed[i] = true;
    }
    let mut out = Vec::with_capacity(t.items.len() + plan.appended.len() + 1);
    let mut last_kept = None;
    for (ri, r) in t.records.iter().enumerate() {
        if let Some(i) = r.kind_item().filter(|&i| i >= walk.from && !removed[i]) {
            out.push(Step::Kept(i));
            last_kept = Some(out.len() - 1);
        }
        if let Some((_, injected)) = plan.replacement.as_ref().filter(|(at, _)| *at == ri) {
            out.push(Step::Injected(injected));
            last_kept = None;
        }
    }
    let unanswered =
        last_kept.filter(|&k| matches!(out[k], Step::Kept(i) if !t.items[i].calls().is_empty() && k + 1 == out.len()));
    let at = match unanswered {
        Some(k) if walk.chat => k,
        _ => out.len(),
    };
    out.splice(at..at, plan.appended.iter().map(|a| Step::Injected(a.as_str())));
    out
}
