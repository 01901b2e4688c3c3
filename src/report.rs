//! The `decide` report for people: the decision, every reason in plain words, and the
//! ratio per turn against the denominator that applies, as a small text chart.

use crate::engine::Processed;
use crate::policy::{self, Figure};
use crate::render::escape_controls;
use crate::tokens;
use std::fmt::Write;

const BAR: usize = 40;

/// Renders the report.
pub fn decision_report(done: &Processed<'_>) -> String {
    let d = &done.plan.decision;
    let mut out = String::new();
    let _ = writeln!(out, "path:        {} (denominator: {})", d.path, d.denominator);
    let figure = |v: Option<u64>| v.map_or("unknown".to_string(), |n| n.to_string());
    let est = if d.estimated { " (estimated)" } else { "" };
    let _ = writeln!(out, "used:        {}{est}", figure(d.used));
    let _ = writeln!(out, "limit:       {}", figure(d.limit));
    let ratio = d.ratio.map_or("n/a".to_string(), |r| format!("{r:.4}"));
    let _ = writeln!(out, "ratio:       {ratio} (threshold {})", d.threshold);
    let _ = writeln!(out, "trigger:     {}", d.trigger);
    let _ = writeln!(out, "input:       {}", d.input_format);
    let _ = writeln!(out, "context:     {}", context_line(done));
    let _ = writeln!(out, "action:      {}", d.action.as_str());
    if d.reasons.is_empty() {
        let _ = writeln!(out, "reasons:     none");
    } else {
        let _ = writeln!(out, "reasons:");
        for r in &d.reasons {
            let _ = writeln!(out, "  - {}: {}", r.code, escape_controls(&r.message));
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
        crate::transcript::RecordKind::Event { name, id } if name == "compaction_completed" => {
            Some(format!("compaction {}", id.as_deref().unwrap_or("?")))
        }
        crate::transcript::RecordKind::Item(i) if t.items[*i].is_synthetic("checkpoint") => {
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
    let mark = ((cfg.threshold_bp as usize * BAR) / 10_000).min(BAR);
    let mut out = format!("\nper turn ({} against {limit}; | marks the threshold):\n", done.plan.decision.denominator);
    let width = rows.iter().map(|(turn, _)| turn.chars().count()).max().unwrap_or(4).min(24);
    for (turn, fig) in rows {
        let filled = ((fig.tokens as u128 * BAR as u128) / limit as u128).min(BAR as u128) as usize;
        let mut bar: Vec<char> = (0..BAR).map(|i| if i < filled { '#' } else { '.' }).collect();
        if mark < BAR {
            bar[mark] = '|';
        }
        let over = if policy::reaches(fig.tokens, limit, cfg.threshold_bp) { "  >= threshold" } else { "" };
        let name = escape_controls(&crate::render::cut(&turn, width));
        let _ = writeln!(
            out,
            "  {name:<width$} {} {:>7.4} {:>10}{over}",
            bar.iter().collect::<String>(),
            crate::render::ratio(fig.tokens, limit),
            fig.tokens
        );
    }
    out
}

/// The figure at the end of each turn, using only the items up to it.
fn per_turn(done: &Processed<'_>, est: &[u64]) -> Vec<(String, Figure)> {
    let t = &done.transcript;
    let mut rows: Vec<(String, usize)> = Vec::new();
    for (i, item) in t.items.iter().enumerate() {
        let turn = item.turn.as_deref().unwrap_or("-").to_string();
        match rows.last_mut() {
            Some((last, end)) if *last == turn => *end = i,
            _ => rows.push((turn, i)),
        }
    }
    let conversation = done.plan.decision.path == "conversation";
    let mut cumulative = Figure::default();
    let mut prefix = 0u64;
    let mut next = 0;
    rows.into_iter()
        .map(|(turn, end)| {
            while next <= end {
                let item = &t.items[next];
                prefix += est[next];
                if let Some(s) = &item.summarized_usage {
                    cumulative.tokens += s.size();
                }
                if item.is_input() && item.role() == Some(crate::transcript::Role::Assistant) {
                    match item.usage() {
                        Some(u) => cumulative.tokens += u.size(),
                        None => {
                            cumulative.tokens += prefix;
                            cumulative.estimated = true;
                        }
                    }
                }
                next += 1;
            }
            let fig = if conversation { occupancy_upto(done, est, end) } else { cumulative };
            (turn, fig)
        })
        .collect()
}

/// The first item of the context as it was at item `end`.
fn start_as_of(t: &crate::transcript::Transcript<'_>, end: usize) -> usize {
    let mut start = 0;
    let mut seen = 0;
    for r in &t.records {
        if seen > end {
            break;
        }
        match &r.kind {
            crate::transcript::RecordKind::Event { name, .. } if name == "compaction_completed" => start = seen,
            crate::transcript::RecordKind::Item(i) => {
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

/// Occupancy as it was after item `end`: the last usage up to it plus what came after.
fn occupancy_upto(done: &Processed<'_>, est: &[u64], end: usize) -> Figure {
    let t = &done.transcript;
    let start = start_as_of(t, end);
    match (start..=end).rev().find(|&i| t.items[i].usage().is_some()) {
        Some(i) => Figure {
            tokens: t.items[i].usage().map_or(0, |u| u.size()) + est[i + 1..=end].iter().sum::<u64>(),
            estimated: i < end,
        },
        None => Figure { tokens: est[start..=end].iter().sum(), estimated: true },
    }
}
