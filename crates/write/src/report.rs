//! The `decide` report for people: the decision, every reason in plain words, and the
//! ratio per turn against the denominator that applies, as a small text chart.

use crate::engine::Processed;
use crate::policy::{self, Event, Figure, PressurePath};
use crate::tokens;
use crate::transcript::{RecordKind, Synthetic};
use crate::ui::escape;
use std::fmt::Write;

const BAR: usize = 40;
/// Most rows the per-turn chart shows.
const MAX_ROWS: usize = 40;

/// Renders the report.
pub fn decision_report(done: &Processed<'_>) -> String {
    let d = &done.plan.decision;
    let mut out = String::new();
    let _ = writeln!(out, "path:        {} (denominator: {})", d.path.as_str(), d.denominator.as_str());
    let figure = |v: Option<u64>| v.map_or("unknown".to_string(), |n| n.to_string());
    let est = if d.estimated { " (estimated)" } else { "" };
    let _ = writeln!(out, "used:        {}{est}", figure(d.used));
    let _ = writeln!(out, "limit:       {}", figure(d.limit));
    let ratio = d.ratio.map_or("n/a".to_string(), |r| format!("{r:.4}"));
    match d.trigger_tokens {
        Some(at) => {
            let _ = writeln!(out, "ratio:       {ratio} (fires at {at})");
        }
        None => {
            let _ = writeln!(out, "ratio:       {ratio} (threshold {})", d.threshold);
        }
    }
    let _ = writeln!(out, "trigger:     {}", d.trigger.as_str());
    let _ = writeln!(out, "input:       {}", d.input_format);
    let _ = writeln!(out, "records:     {}", done.accounting.summary());
    let _ = writeln!(out, "context:     {}", context_line(done));
    let _ = writeln!(out, "action:      {}", d.action.as_str());
    if let Some(f) = d.fit {
        let reached = if f.reached { "reached" } else { "not reached" };
        let _ = writeln!(out, "target:      {} tokens ({reached}): {} before, {} after", f.target, f.before, f.after);
    }
    if d.reasons.is_empty() {
        let _ = writeln!(out, "reasons:     none");
    } else {
        let _ = writeln!(out, "reasons:");
        for r in &d.reasons {
            let _ = writeln!(out, "  - {}: {}", r.code.as_str(), escape(&r.message));
        }
    }
    if let Some(limit) = d.limit {
        out.push_str(&turn_chart(done, limit));
    }
    out
}

/// Where the current context starts: after the latest compaction or checkpoint.
fn context_line(done: &Processed<'_>) -> String {
    let t = &done.transcript;
    let start = policy::context_start(t);
    let n = t.items.len();
    let latest = t.records.iter().rev().find_map(|r| match &r.kind {
        RecordKind::Event(e) if Event::CompactionCompleted.is(&e.name) => {
            Some(format!("compaction {}", e.id.as_deref().unwrap_or("?")))
        }
        RecordKind::Item(i) if t.items[*i].is_synthetic(Synthetic::Checkpoint) => {
            Some(format!("checkpoint {}", t.items[*i].id))
        }
        _ => None,
    });
    match latest {
        Some(what) => format!("{} of {n} items, after {}", n - start, escape(&what)),
        None => format!("all {n} items (no compaction yet)"),
    }
}

/// The figure at the end of one turn.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TurnRow {
    /// Ordinal of the turn (1-based).
    pub turn: usize,
    /// The turn's id in the transcript.
    pub id: String,
    pub used: u64,
    pub ratio: Option<f64>,
    pub estimated: bool,
    /// At or over the figure the path fires at.
    pub over: bool,
}

/// One row per turn, from the policy's own accumulators.
pub fn turn_rows(done: &Processed<'_>) -> Vec<TurnRow> {
    let t = &done.transcript;
    let cfg = &done.config;
    let d = &done.plan.decision;
    let conversation = d.path == PressurePath::Conversation;
    let fires_at = d.limit.map(|l| cfg.fires_at(conversation, l));
    let est = tokens::item_estimates(t, cfg.tokenizer);
    per_turn(done, &est)
        .into_iter()
        .enumerate()
        .map(|(k, (id, fig))| TurnRow {
            turn: k + 1,
            id,
            used: fig.tokens,
            ratio: d.limit.map(|l| crate::render::ratio(fig.tokens, l)),
            estimated: fig.estimated,
            over: fires_at.is_some_and(|at| fig.tokens >= at),
        })
        .collect()
}

/// `decide --json`: the decision with its per-turn rows.
pub fn decision_with_turns(done: &Processed<'_>) -> String {
    let mut s = serde_json::to_string_pretty(&decision_value(done)).expect("a value serializes");
    s.push('\n');
    s
}

/// The decision with its record counts and per-turn rows, as a value (a caller adds its
/// own keys before printing it).
pub fn decision_value(done: &Processed<'_>) -> serde_json::Value {
    let mut v = serde_json::to_value(&done.plan.decision).expect("a decision serializes");
    v["records"] = serde_json::to_value(&done.accounting).expect("counts serialize");
    v["turns"] = serde_json::to_value(turn_rows(done)).expect("rows serialize");
    v
}

/// Ids longer than this are left out of a row's label (the ordinal always leads).
const SHORT_ID: usize = 16;

/// One row per turn: the figure after that turn against the limit, `|` where the path
/// fires, decided on exact integers.
fn turn_chart(done: &Processed<'_>, limit: u64) -> String {
    let rows = bucket(turn_rows(done));
    if rows.is_empty() {
        return String::new();
    }
    let d = &done.plan.decision;
    let fires_at = done.config.fires_at(d.path == PressurePath::Conversation, limit);
    let mark = usize::try_from((u128::from(fires_at) * BAR as u128) / u128::from(limit).max(1)).unwrap_or(BAR);
    let denominator = d.denominator.as_str();
    let mut out =
        format!("\nper turn ({denominator} against {limit}; | marks where it fires, at {fires_at}; ~ estimated):\n");
    let width = rows.iter().map(|(label, _)| label.chars().count()).max().unwrap_or(4);
    for (label, row) in rows {
        let filled = ((u128::from(row.used) * BAR as u128) / u128::from(limit)).min(BAR as u128) as usize;
        let mut bar: Vec<char> = (0..BAR).map(|i| if i < filled { '#' } else { '.' }).collect();
        if mark < BAR {
            bar[mark] = '|';
        }
        let over = if row.over { "  >= trigger" } else { "" };
        let est = if row.estimated { "~" } else { " " };
        let _ = writeln!(
            out,
            "  {label:<width$} {} {:>7.4} {est}{:>11}{over}",
            bar.iter().collect::<String>(),
            crate::render::ratio(row.used, limit),
            row.used
        );
    }
    out
}

/// The label of a row: the ordinal, then the id when it is short.
fn label(row: &TurnRow) -> String {
    if row.id.chars().count() <= SHORT_ID && row.id != row.turn.to_string() {
        escape(&format!("{} {}", row.turn, row.id))
    } else {
        row.turn.to_string()
    }
}

/// The figure at the end of each turn, as it was then: cumulative usage for the agent
/// runner, occupancy of the context of that moment for the conversation runtime. One
/// pass over the records, through the policy's own accumulators.
fn per_turn(done: &Processed<'_>, est: &[u64]) -> Vec<(String, Figure)> {
    let t = &done.transcript;
    let conversation = done.plan.decision.path == PressurePath::Conversation;
    let turn_of = |i: usize| t.items[i].turn.as_deref().unwrap_or("-");
    let mut rows = Vec::new();
    let mut cumulative = policy::CumulativeUsage::default();
    let mut occupancy = policy::Occupancy::default();
    for r in &t.records {
        occupancy.record(t, r, est);
        let RecordKind::Item(i) = r.kind else { continue };
        cumulative.add(&t.items[i], est[i]);
        let turn_ends = i + 1 == t.items.len() || turn_of(i + 1) != turn_of(i);
        if turn_ends {
            let fig = if conversation { occupancy.figure() } else { cumulative.figure };
            rows.push((turn_of(i).to_string(), fig));
        }
    }
    rows
}

/// At most `MAX_ROWS` rows: long transcripts show the figure at the end of each group
/// of consecutive turns, labelled with the ordinals of the first and last turn (never
/// cut); a group is estimated or over when any of its turns is.
fn bucket(rows: Vec<TurnRow>) -> Vec<(String, TurnRow)> {
    if rows.len() <= MAX_ROWS {
        return rows.into_iter().map(|r| (label(&r), r)).collect();
    }
    let n = rows.len();
    (0..MAX_ROWS)
        .map(|k| {
            let (first, last) = (k * n / MAX_ROWS, (k + 1) * n / MAX_ROWS - 1);
            let group = &rows[first..=last];
            let mut row = rows[last].clone();
            row.estimated = group.iter().any(|r| r.estimated);
            row.over = group.iter().any(|r| r.over);
            (format!("{}..{}", rows[first].turn, rows[last].turn), row)
        })
        .collect()
}

/// For a library caller (the Python package): the decision for a transcript file, as
/// `decide --json` prints it (with the per-turn rows).
pub fn decide_file(path: &std::path::Path, settings: &crate::engine::Settings) -> crate::error::Result<String> {
    let raw = crate::source::Opened::file(path)?.read_all()?;
    let canonical = crate::formats::import(raw, path, settings.input_format)?;
    let mut s = settings.clone();
    (s.input_format, s.dry_run) = (canonical.format, true);
    let t = canonical.transcript(path)?;
    let accounting = canonical.accounting_of(&t, path)?;
    let mut done = crate::engine::process_parsed(t, path, &s).map_err(|e| canonical.relocate(e))?;
    done.accounting = accounting;
    Ok(decision_with_turns(&done))
}

/// What a batch of transcripts (`run` over several inputs, or into an out-dir) came to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct BatchSummary {
    pub total: usize,
    pub compacted: usize,
    pub failed: usize,
    /// Inputs a signal stopped before they started.
    pub not_started: usize,
    /// The exit code of the last failure (a single input keeps its own).
    #[serde(skip)]
    pub last_failure: Option<crate::error::Exit>,
}

impl BatchSummary {
    pub fn new(total: usize) -> Self {
        BatchSummary { total, ..BatchSummary::default() }
    }

    /// One input done: whether its plan changed the transcript.
    pub fn done(&mut self, changed: bool) {
        self.compacted += usize::from(changed);
    }

    /// One input failed, with this error.
    pub fn failed(&mut self, e: &crate::error::Error) {
        self.failed += 1;
        self.last_failure = Some(e.exit());
    }

    pub fn unchanged(&self) -> usize {
        self.total - self.not_started - self.compacted - self.failed
    }

    /// The closing line `run` prints.
    pub fn line(&self) -> String {
        let stopped = if self.not_started > 0 {
            format!(", {} not started (interrupted)", self.not_started)
        } else {
            String::new()
        };
        format!(
            "{} file(s): {} compacted, {} unchanged, {} failed{stopped}",
            self.total,
            self.compacted,
            self.unchanged(),
            self.failed
        )
    }

    /// A single input keeps its own exit code (3 for bad input, 4 for a hook failure);
    /// a batch with a failure is 4; else 0.
    pub fn exit(&self) -> crate::error::Exit {
        use crate::error::Exit;
        match (self.total, self.failed, self.last_failure) {
            (1, 1, Some(code)) => code,
            (_, 0, _) => Exit::Ok,
            _ => Exit::Failed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::BatchSummary;
    use crate::error::{Error, Exit};

    #[test]
    fn a_batch_says_what_became_of_each_input_and_exits_as_documented() {
        let bad = Error::bad_input(std::path::Path::new("a.jsonl"), "broken");
        let mut one = BatchSummary::new(1);
        one.failed(&bad);
        assert_eq!(
            (one.exit(), one.line().as_str()),
            (Exit::BadInput, "1 file(s): 0 compacted, 0 unchanged, 1 failed")
        );
        let mut many = BatchSummary::new(4);
        many.done(true);
        many.done(false);
        many.failed(&bad);
        many.not_started += 1;
        assert_eq!(many.exit(), Exit::Failed, "a batch with a failure is 4, whatever the failure");
        assert_eq!(many.line(), "4 file(s): 1 compacted, 1 unchanged, 1 failed, 1 not started (interrupted)");
        assert_eq!(BatchSummary::new(3).exit(), Exit::Ok);
    }
}
