//! `stats`: dataset totals over many transcripts — items, tokens reported and
//! estimated, how many would take each action, and the tokens the fallback saves.

use crate::engine::{Processed, Settings};
use crate::error::Error;
use crate::formats::InputFormat;
use crate::inputs::Input;
use crate::policy::Action;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Totals over the transcripts seen so far.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Stats {
    pub transcripts: usize,
    pub failed: usize,
    pub items: usize,
    /// Sum of the reported usage of every assistant message (its model call's size).
    pub tokens_reported: u64,
    /// Sum of the estimates of every item (the context the items would occupy).
    pub tokens_estimated: u64,
    /// Transcripts by the action a run would take.
    pub actions: BTreeMap<&'static str, usize>,
    /// Estimated tokens removed from the history by fallbacks and checkpoints, net of
    /// the injected summaries.
    pub tokens_saved: i64,
    /// Each transcript's estimate before and after compaction (for the percentiles).
    #[serde(skip)]
    sizes: Vec<(u64, u64)>,
    /// Percentiles of the estimates of the transcripts, before and after.
    pub percentiles: Percentiles,
}

/// Percentiles (nearest rank) of per-transcript token estimates.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Percentiles {
    pub before: BTreeMap<&'static str, u64>,
    pub after: BTreeMap<&'static str, u64>,
}

const RANKS: [(&str, u64); 5] = [("p50", 50), ("p90", 90), ("p99", 99), ("max", 100), ("min", 0)];

fn ranks(mut v: Vec<u64>) -> BTreeMap<&'static str, u64> {
    v.sort_unstable();
    if v.is_empty() {
        return BTreeMap::new();
    }
    RANKS
        .iter()
        .map(|&(name, p)| {
            let k = (p as usize * v.len()).div_ceil(100).clamp(1, v.len()) - 1;
            (name, v[k])
        })
        .collect()
}

impl Stats {
    pub fn new() -> Self {
        let actions = [
            Action::None,
            Action::PressureReminder,
            Action::HistoryFallback,
            Action::NativeCompactionRequested,
            Action::LocalCheckpoint,
        ]
        .into_iter()
        .map(|a| (a.as_str(), 0))
        .collect();
        Stats { actions, ..Stats::default() }
    }

    /// Adds one processed transcript.
    pub fn add(&mut self, done: &Processed<'_>) {
        let t = &done.transcript;
        self.transcripts += 1;
        self.items += t.items.len();
        self.tokens_reported =
            t.items.iter().filter_map(|i| i.usage()).fold(self.tokens_reported, |n, u| n.saturating_add(u.size()));
        self.tokens_estimated += done.plan.tokens_estimated;
        *self.actions.entry(done.plan.decision.action.as_str()).or_default() += 1;
        // What `run` writes, as the plan worked it out once.
        let (before, after) = (done.plan.tokens_estimated, done.plan.tokens_after);
        self.tokens_saved += i64::try_from(before).unwrap_or(i64::MAX) - i64::try_from(after).unwrap_or(i64::MAX);
        self.sizes.push((before, after));
    }

    /// The totals with their percentiles worked out.
    #[must_use]
    pub fn finish(mut self) -> Self {
        self.percentiles = Percentiles {
            before: ranks(self.sizes.iter().map(|s| s.0).collect()),
            after: ranks(self.sizes.iter().map(|s| s.1).collect()),
        };
        self
    }

    /// Adds another set of totals.
    pub fn merge(&mut self, other: Stats) {
        self.transcripts += other.transcripts;
        self.failed += other.failed;
        self.items += other.items;
        self.tokens_reported = self.tokens_reported.saturating_add(other.tokens_reported);
        self.tokens_estimated += other.tokens_estimated;
        self.tokens_saved += other.tokens_saved;
        self.sizes.extend(other.sizes);
        for (a, n) in other.actions {
            *self.actions.entry(a).or_default() += n;
        }
    }

    /// A table for people.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let rows: Vec<(String, String)> = [
            ("transcripts".to_string(), self.transcripts.to_string()),
            ("failed".to_string(), self.failed.to_string()),
            ("items".to_string(), self.items.to_string()),
            ("tokens reported".to_string(), self.tokens_reported.to_string()),
            ("tokens estimated".to_string(), self.tokens_estimated.to_string()),
        ]
        .into_iter()
        .chain(self.actions.iter().map(|(a, n)| (format!("action {a}"), n.to_string())))
        .chain([("tokens saved".to_string(), self.tokens_saved.to_string())])
        .chain(["before", "after"].into_iter().flat_map(|when| {
            let p = if when == "before" { &self.percentiles.before } else { &self.percentiles.after };
            ["min", "p50", "p90", "p99", "max"]
                .into_iter()
                .filter_map(move |r| Some((format!("tokens {when} {r}"), p.get(r)?.to_string())))
        }))
        .collect();
        for (k, v) in rows {
            let _ = writeln!(out, "{k:<36} {v:>14}");
        }
        out
    }
}

/// One input's stats as `stats` counts them (`run --dry-run`'s decisions: no hooks, no
/// files), and the error that ended it: a transcript, or a dataset (`dataset`, its
/// format) whose rows are counted one by one, each bad row given to `bad` and counted
/// as failed; a dataset keeps the rows read before its input broke off, as `run` writes
/// them.
pub fn input_stats(
    input: &Input,
    settings: &Settings,
    dataset: Option<InputFormat>,
    bad: &dyn Fn(&str),
) -> (Stats, Option<Error>) {
    if let Some(format) = dataset {
        return dataset_stats(input, settings, format, bad);
    }
    let read = crate::engine::process_input(input, settings, |done| {
        let mut one = Stats::new();
        one.add(done);
        Ok(one)
    });
    match read {
        Ok(one) => (one, None),
        Err(e) => (Stats::new(), Some(e)),
    }
}

/// Stats over a dataset file, streamed: every line is a transcript; a bad line (invalid
/// UTF-8 included, never replaced) is reported and counted as failed. An input that
/// cannot be opened, or breaks off, gives its error beside the rows read before it.
fn dataset_stats(
    input: &Input,
    settings: &Settings,
    format: InputFormat,
    bad: &dyn Fn(&str),
) -> (Stats, Option<Error>) {
    let mut s = settings.clone();
    s.input_format = format;
    let mut stats = Stats::new();
    let mut reader = match input.open() {
        Ok(opened) => opened.into_reader(),
        Err(e) => return (stats, Some(e)),
    };
    let limit = crate::source::max_input_bytes();
    let mut line = Vec::new();
    for n in 1.. {
        line.clear();
        match crate::source::read_line_bounded(&mut reader, &mut line, limit) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return (stats, Some(crate::source::broken_at(&input.path, n, &line, &e))),
        }
        let message = match crate::dataset::line_text(&line, n) {
            Ok(text) => crate::dataset::add_line_stats(text, &input.path, n, &s, &mut stats),
            Err(column) => {
                stats.failed += 1;
                Some(format!("{}:{n}:{column}: {}", input.path.display(), crate::error::NOT_UTF8))
            }
        };
        if let Some(m) = message {
            bad(&m);
        }
    }
    (stats, None)
}
