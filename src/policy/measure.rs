//! The two figures the paths compare (SPEC 3): cumulative task usage for the agent
//! runner, context occupancy for the conversation runtime.

use crate::transcript::{RecordKind, Role, Transcript};

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
        if let Some(s) = &item.summarized_usage {
            self.figure.tokens = self.figure.tokens.saturating_add(s.size());
        }
        if !item.is_input() || item.role() != Some(Role::Assistant) {
            return;
        }
        match item.usage() {
            Some(u) => self.figure.tokens = self.figure.tokens.saturating_add(u.size()),
            None => {
                self.figure.tokens = self.figure.tokens.saturating_add(self.prefix);
                self.figure.estimated = true;
            }
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
            RecordKind::Event { name, .. } if name == "compaction_completed" => start = seen,
            RecordKind::Item(i) => {
                if t.items[*i].is_synthetic("checkpoint") {
                    start = *i;
                }
                seen = i + 1;
            }
            _ => {}
        }
    }
    start
}

/// Occupancy: the last usage reported after the context start plus the estimate of
/// the items after it; with no such usage, the estimate of the whole current context.
pub fn occupancy(t: &Transcript<'_>, est: &[u64]) -> Figure {
    let start = context_start(t);
    // A checkpoint is written before the turns it retains, so usage on those turns was
    // reported before it existed: only usage after the records injected with it counts.
    let trusted_from = if t.items.get(start).is_some_and(|i| i.is_synthetic("checkpoint")) {
        (start..t.items.len()).rev().find(|&i| !t.items[i].is_input()).map_or(start, |i| i + 1)
    } else {
        start
    };
    let last_usage = (trusted_from..t.items.len()).rev().find(|&i| t.items[i].usage().is_some());
    match last_usage {
        Some(i) => {
            let after: u64 = est[i + 1..].iter().sum();
            Figure { tokens: t.items[i].usage().map_or(0, |u| u.size()).saturating_add(after), estimated: after > 0 }
        }
        None => match t.items.get(start).and_then(|i| i.occupancy_after) {
            Some(base) => Figure { tokens: base + est[trusted_from..].iter().sum::<u64>(), estimated: true },
            None => Figure { tokens: est[start..].iter().sum(), estimated: true },
        },
    }
}

/// `used × 10000 >= t × limit`, in integers.
pub fn reaches(used: u64, limit: u64, threshold_bp: u64) -> bool {
    used as u128 * 10_000 >= threshold_bp as u128 * limit as u128
}
