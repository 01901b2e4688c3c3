//! The two figures the paths compare (SPEC 3): cumulative task usage for the agent
//! runner, context occupancy for the conversation runtime.

use super::Event;
use crate::transcript::{RecordKind, Role, Synthetic, Transcript};

/// A token figure and whether any part of it was estimated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Figure {
    pub tokens: u64,
    pub estimated: bool,
}

/// Cumulative task usage: reported usage per assistant message; for one without usage,
/// the estimate of everything before it plus itself; plus an earlier fallback's
/// `summarized_usage`.
pub fn cumulative_usage(t: &Transcript<'_>, est: &[u64]) -> Figure {
    let mut acc = CumulativeUsage::default();
    for (item, e) in t.items.iter().zip(est) {
        acc.add(item, *e);
    }
    acc.figure
}

/// The cumulative figure item by item, for callers that need it along the way
/// (`decide`'s per-turn chart) as well as at the end.
#[derive(Debug, Clone, Copy, Default)]
pub struct CumulativeUsage {
    pub figure: Figure,
    /// The estimate of every item so far: the size of an unreported call.
    prefix: u64,
}

impl CumulativeUsage {
    /// Adds the next item, `est` being its estimate.
    pub fn add(&mut self, item: &crate::transcript::Item<'_>, est: u64) {
        self.prefix += est;
        if let Some(s) = item.summarized_usage() {
            self.figure.tokens = self.figure.tokens.saturating_add(s.size());
        }
        if !item.is_input() || item.role() != Some(Role::Assistant) {
            return;
        }
        if let Some(u) = item.usage() {
            self.figure.tokens = self.figure.tokens.saturating_add(u.size());
        } else {
            self.figure.tokens = self.figure.tokens.saturating_add(self.prefix);
            self.figure.estimated = true;
        }
    }
}

/// The first item of the current context: after the latest `compaction_completed`
/// event, or at the latest checkpoint message.
pub fn context_start(t: &Transcript<'_>) -> usize {
    let mut start = 0;
    let mut seen = 0;
    for r in &t.records {
        match &r.kind {
            RecordKind::Event(e) if Event::CompactionCompleted.is(&e.name) => start = seen,
            RecordKind::Item(i) => {
                if t.items[*i].is_synthetic(Synthetic::Checkpoint) {
                    start = *i;
                }
                seen = i + 1;
            }
            _ => {}
        }
    }
    start
}

/// Occupancy (SPEC 3): the last usage reported in the current context plus the
/// estimate of the items after it; with no such usage, the estimate of the current
/// context (after a checkpoint: its `occupancy_after` plus what came after the records
/// injected with it, since usage on the retained turns was reported before it existed).
pub fn occupancy(t: &Transcript<'_>, est: &[u64]) -> Figure {
    let mut acc = Occupancy::default();
    for r in &t.records {
        acc.record(t, r, est);
    }
    acc.figure()
}

/// Occupancy record by record, for callers that need it along the way (`decide`'s
/// per-turn chart, replay) as well as at the end: the one implementation of the rule.
#[derive(Debug, Clone, Copy, Default)]
pub struct Occupancy {
    /// The estimate of the current context so far.
    context: u64,
    /// Whether the current context starts at a checkpoint, and its `occupancy_after`.
    checkpointed: bool,
    base: Option<u64>,
    /// After a checkpoint: the estimate since the last injected record.
    trusted: u64,
    /// The last usage that counts, and the estimate of the items after it.
    last_usage: Option<u64>,
    after_usage: u64,
}

impl Occupancy {
    /// Takes in the next record.
    pub fn record(&mut self, t: &Transcript<'_>, r: &crate::transcript::Record<'_>, est: &[u64]) {
        match &r.kind {
            RecordKind::Event(e) if Event::CompactionCompleted.is(&e.name) => *self = Occupancy::default(),
            RecordKind::Item(i) => self.item(&t.items[*i], est[*i]),
            _ => {}
        }
    }

    fn item(&mut self, item: &crate::transcript::Item<'_>, est: u64) {
        if item.is_synthetic(Synthetic::Checkpoint) {
            *self = Occupancy { checkpointed: true, base: item.occupancy_after(), ..Occupancy::default() };
        }
        self.context += est;
        self.trusted += est;
        self.after_usage += est;
        if self.checkpointed && !item.is_input() {
            (self.trusted, self.last_usage, self.after_usage) = (0, None, 0);
        } else if let Some(u) = item.usage().filter(|u| u.size() > 0) {
            // A usage of size 0 is a restated item (Codex replacement history), not a call.
            (self.last_usage, self.after_usage) = (Some(u.size()), 0);
        }
    }

    pub fn figure(&self) -> Figure {
        match (self.last_usage, self.base) {
            (Some(u), _) => Figure { tokens: u.saturating_add(self.after_usage), estimated: self.after_usage > 0 },
            (None, Some(base)) => Figure { tokens: base.saturating_add(self.trusted), estimated: true },
            (None, None) => Figure { tokens: self.context, estimated: true },
        }
    }
}

/// `used × 10000 >= t × limit`, in integers.
pub fn reaches(used: u64, limit: u64, threshold_bp: u64) -> bool {
    u128::from(used) * 10_000 >= u128::from(threshold_bp) * u128::from(limit)
}
