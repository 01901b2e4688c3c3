//! The compacted context as one walk over (transcript, plan): the items that stay, in
//! order, with the replacement where the removed span was and the appended records
//! after them. Every writer of a compacted transcript (canonical JSONL, chat lines,
//! dataset lines, OpenHands rows, resumable sessions) consumes this walk instead of
//! walking the plan its own way, and reads the injected records as the values they are.

use super::{EventRecord, Injected, Message, Plan};
use crate::transcript::Transcript;

/// One step of the compacted context.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step<'p> {
    /// An item of the transcript that stays (index into `Transcript::items`).
    Kept(usize),
    /// A record of the transcript that is no item (the session, an event, a blank or
    /// unknown line; index into `Transcript::records`), only when [`Walk::records`].
    Record(usize),
    /// A message the plan injects: the replacement, or an appended one.
    Injected(&'p Message),
    /// A lifecycle event the plan appends (writers of messages leave it out).
    Event(&'p EventRecord),
}

/// Which part of the transcript a walk covers and how it orders what it appends.
#[derive(Debug, Clone, Copy, Default)]
pub struct Walk {
    /// The first item written (0: all of them; the context start: what the model sees).
    pub from: usize,
    /// For chat APIs, which refuse a message between a call and its result: appended
    /// records go before a last kept message whose calls nothing answered.
    pub chat: bool,
    /// Also the records that are no item, where they are (the canonical file).
    pub records: bool,
}

/// The steps of the compacted context.
pub fn steps<'p>(t: &Transcript<'_>, plan: &'p Plan, walk: Walk) -> Vec<Step<'p>> {
    let mut removed = vec![false; t.items.len()];
    for &i in &plan.removed {
        removed[i] = true;
    }
    let mut out =
        Vec::with_capacity(if walk.records { t.records.len() } else { t.items.len() } + plan.appended.len() + 1);
    let mut last_kept = None;
    for (ri, r) in t.records.iter().enumerate() {
        match r.kind_item() {
            Some(i) if i >= walk.from && !removed[i] => {
                out.push(Step::Kept(i));
                last_kept = Some(out.len() - 1);
            }
            None if walk.records => out.push(Step::Record(ri)),
            _ => {}
        }
        if let Some((_, m)) = plan.replacement.as_ref().filter(|(at, _)| *at == ri) {
            out.push(Step::Injected(m));
            last_kept = None;
        }
    }
    let unanswered =
        last_kept.filter(|&k| matches!(out[k], Step::Kept(i) if !t.items[i].calls().is_empty() && k + 1 == out.len()));
    let at = match unanswered {
        Some(k) if walk.chat => k,
        _ => out.len(),
    };
    out.splice(
        at..at,
        plan.appended.iter().map(|a| match a {
            Injected::Message(m) => Step::Injected(m),
            Injected::Event(e) => Step::Event(e),
        }),
    );
    out
}
