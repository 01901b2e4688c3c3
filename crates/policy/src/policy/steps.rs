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
    /// Chat lines (one OpenAI line per transcript, OpenHands rows): the walk of what a
    /// chat API is sent.
    pub chat: bool,
    /// Also the records that are no item, where they are (the canonical file).
    pub records: bool,
}

/// The steps of the compacted context. Appended records go after the last record, except
/// when the transcript ends on calls not all answered (an agent stopped after `submit`,
/// a session cut mid-call): then they go before the message that made those calls, in
/// every output format, since no message may come between a call and its result.
pub fn steps<'p>(t: &Transcript<'_>, plan: &'p Plan, walk: Walk) -> Vec<Step<'p>> {
    let mut removed = vec![false; t.items.len()];
    for &i in &plan.removed {
        removed[i] = true;
    }
    let mut out =
        Vec::with_capacity(if walk.records { t.records.len() } else { t.items.len() } + plan.appended.len() + 1);
    for (ri, r) in t.records.iter().enumerate() {
        match r.kind_item() {
            Some(i) if i >= walk.from && !removed[i] => out.push(Step::Kept(i)),
            None if walk.records => out.push(Step::Record(ri)),
            _ => {}
        }
        if let Some((_, m)) = plan.replacement.as_ref().filter(|(at, _)| *at == ri) {
            out.push(Step::Injected(m));
        }
    }
    let at = before_open_calls(t, &out).unwrap_or(out.len());
    out.splice(
        at..at,
        plan.appended.iter().map(|a| match a {
            Injected::Message(m) => Step::Injected(m),
            Injected::Event(e) => Step::Event(e),
        }),
    );
    out
}

/// Where appended records go when the steps end on a message whose calls are not all
/// answered by the results after it: that message's step.
fn before_open_calls(t: &Transcript<'_>, out: &[Step<'_>]) -> Option<usize> {
    let mut answered: Vec<&str> = Vec::new();
    for (k, step) in out.iter().enumerate().rev() {
        match *step {
            Step::Record(_) | Step::Event(_) => {}
            Step::Kept(i) => match (t.items[i].result_call_id(), t.items[i].calls()) {
                (Some(call), _) => answered.push(call),
                (None, []) => return None,
                (None, calls) => return calls.iter().any(|c| !answered.contains(&c.id.as_ref())).then_some(k),
            },
            Step::Injected(_) => return None,
        }
    }
    None
}
