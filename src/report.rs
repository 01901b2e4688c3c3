//! The `decide` report for people: the decision, every reason in plain words, and the
//! ratio per turn against the denominator that applies, as a small text chart.

use crate::engine::Processed;
use crate::policy::{self, Event, Figure, PressurePath};
use crate::render::escape_controls;
use crate::tokens;
use crate::transcript::{RecordKind, Synthetic};
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
    let _ = writeln!(out, "ratio:       {ratio} (threshold {})", d.threshold);
    let _ = writeln!(out, "trigger:     {}", d.trigger.as_str());
    let _ = writeln!(out, "input:       {}", d.input_format);
    let _ = writeln!(out, "context:     {}", context_line(done));
    let _ = writeln!(out, "action:      {}", d.action.as_str());
    if d.reasons.is_empty() {
        let _ = writeln!(out, "reasons:     none");
    } else {
        let _ = writeln!(out, "reasons:");
        for r in &d.reasons {
            let _ = writeln!(out, "  - {}: {}", r.code.as_str(), escape_controls(&r.message));
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
        RecordKind::Event { name, id } if Event::CompactionCompleted.is(name) => {
            Some(format!("compaction {}", id.as_deref().unwrap_or("?")))
        }
        RecordKind::Item(i) if t.items[*i].is_synthetic(Synthetic::Checkpoint) => {
            Some(format!("checkpoint {}", t.items[*i].id))
        }
        _ => None,
    });
    match latest {
        Some(what) => format!("{} of {n} items, after {}", n - start, escape_controls(&what)),
        None => format!("all {n} items (no compaction yet)"),
    }
}

/// One row per turn: the figure after that turn against the limit, `|` at the threshold.
fn turn_chart(done: &Processed<'_>, limit: u64) -> String {
    let t = &done.transcript;
    let cfg = &done.config;
    let est = tokens::item_estimates(t, cfg.tokenizer);
    let rows = per_turn(done, &est);
    if rows.is_empty() {
        return String::new();
    }
    let bp = cfg.threshold.basis_points();
    let mark = ((bp as usize * BAR) / 10_000).min(BAR);
    let denominator = done.plan.decision.denominator.as_str();
    let mut out = format!("\nper turn ({denominator} against {limit}; | marks the threshold):\n");
    let width = rows.iter().map(|(turn, _)| turn.chars().count()).max().unwrap_or(4).min(32);
    for (turn, fig) in rows {
        let filled = ((u128::from(fig.tokens) * BAR as u128) / u128::from(limit)).min(BAR as u128) as usize;
        let mut bar: Vec<char> = (0..BAR).map(|i| if i < filled { '#' } else { '.' }).collect();
        if mark < BAR {
            bar[mark] = '|';
        }
        let over = if policy::reaches(fig.tokens, limit, bp) { "  >= threshold" } else { "" };
        let name = escape_controls(&crate::render::cut(&turn, width));
        let _ = writeln!(
            out,
            "  {name:<width$} {} {:>7.4} {:>12}{over}",
            bar.iter().collect::<String>(),
            crate::render::ratio(fig.tokens, limit),
            fig.tokens
        );
    }
    out
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
    bucket(rows)
}

/// At most `MAX_ROWS` rows: long transcripts show the figure at the end of each group
/// of consecutive turns, labelled with the first and last turn of the group.
fn bucket(rows: Vec<(String, Figure)>) -> Vec<(String, Figure)> {
    if rows.len() <= MAX_ROWS {
        return rows;
    }
    let n = rows.len();
    (0..MAX_ROWS)
        .map(|k| {
            let (first, last) = (k * n / MAX_ROWS, (k + 1) * n / MAX_ROWS - 1);
            (format!("{}..{}", rows[first].0, rows[last].0), rows[last].1)
        })
        .collect()
}
