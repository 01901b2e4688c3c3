//! The native agent runner (SPEC 3, 4): cumulative task usage against
//! `max_total_tokens`, the one-shot pressure reminder, the history fallback and the
//! agent-runner re-anchor.

use super::journal::Entry;
use super::{
    base_decision, fallback, injected, threshold_event, Action, Compaction, Event, Injected, Journal, Options,
};
use super::{cumulative_usage, reaches, FitFigures, PressurePath, Proposal, Reason, ReasonCode, Replacement};
use crate::config::{Config, Inject};
use crate::render;
use crate::transcript::{Synthetic, Transcript};
use fallback::Fit;
use serde_json::Map;

pub(super) fn propose(t: &Transcript<'_>, cfg: &Config, opts: Options, est: &[u64]) -> Proposal {
    let fig = cumulative_usage(t, est);
    let limit = cfg.task.max_total_tokens;
    let mut p = Proposal::new(base_decision(PressurePath::AgentRunner, cfg, opts, fig, limit), cfg, est);
    let fired = limit.is_some_and(|l| reaches(fig.tokens, l, cfg.threshold.basis_points()));
    threshold_event(&mut p.plan.journal, &p.plan.decision, fired);
    let reasons = &mut p.plan.decision.reasons;
    match limit {
        None => reasons.push(Reason::new(
            ReasonCode::MaxTotalTokensUnknown,
            "task.max_total_tokens is not set: the agent runner has no budget to compare with",
        )),
        Some(l) if !fired => reasons.push(Reason::new(
            ReasonCode::BelowThreshold,
            format!("{} of {l} max_total_tokens is below the threshold {}", fig.tokens, cfg.threshold.as_f64()),
        )),
        Some(_) => {}
    }
    let remind = cfg.injects(Inject::Reminder);
    if fired && remind {
        if t.items.iter().any(|i| i.is_synthetic(Synthetic::PressureReminder)) {
            p.plan.decision.reasons.push(Reason::new(
                ReasonCode::ReminderAlreadyInjected,
                "the pressure reminder is one-shot and is already in the transcript",
            ));
        } else {
            let l = limit.unwrap_or(0);
            let text = render::pressure_reminder(fig.tokens, l);
            let turn = injected::last_input_turn(t);
            p.reminder = Some(injected::Message::new(Synthetic::PressureReminder, turn, Map::new(), text));
            p.plan.decision.reminder_injected = true;
            p.plan.decision.action = Action::PressureReminder;
            p.plan.journal.push(Entry::PressureReminderInjected { used: fig.tokens, limit: l });
        }
    }
    // A size to fit: a context larger than it is compacted whatever its usage. What an
    // earlier compaction took out is not in the next request and is not counted.
    let target = cfg.fallback.target_tokens;
    // The context is measured only under a size to fit (finding its start walks the
    // records); without one, neither figure is read.
    let (start, before) = match target {
        Some(_) => {
            let start = super::context_start(t);
            (start, est[start..].iter().sum())
        }
        None => (0, 0),
    };
    let over_target = target.is_some_and(|n| before > n);
    if fired || opts.manual || over_target {
        let reanchor = || {
            cfg.injects(Inject::Reanchor).then(|| {
                let mut facts = crate::reanchor::gather(t, cfg);
                facts.used = Some(fig.tokens);
                render::render_reanchor(&facts, false, cfg.reanchor.max_entries, cfg.reanchor.max_chars)
            })
        };
        // Without a size to fit, the fallback does not depend on what is appended: on a
        // large transcript the two are made at once (the facts walk every call, the
        // summary decodes the newest removed items).
        let (reanchor, early) = if target.is_none() {
            let (r, f) = super::side_by_side(t, reanchor, || fit_fallback(t, cfg, est, 0, over_target));
            (r, Some(f))
        } else {
            (reanchor(), None)
        };
        let count = |s: &str| crate::tokens::count_text(s, cfg.tokenizer);
        let reminder = p.reminder.as_ref().map_or(0, |r| count(&r.to_canonical()));
        let appended = reminder + reanchor.as_deref().map_or(0, count);
        let fitted = early.unwrap_or_else(|| fit_fallback(t, cfg, est, appended, over_target));
        match (target, fitted) {
            (_, Ok((summary, fitted))) => {
                let with_injections = fitted == Fitted::Within;
                if !with_injections {
                    // The smallest plan carries nothing optional: no reminder, no re-anchor.
                    p.reminder = None;
                    p.plan.decision.reminder_injected = false;
                    p.plan.journal.remove(Event::PressureReminderInjected);
                }
                let reanchor = reanchor.filter(|_| with_injections);
                let after = summary.after + if with_injections { appended } else { 0 };
                if let Some(n) = target {
                    p.plan.decision.fit = Some(FitFigures { target: n, before, after, reached: after <= n });
                }
                match fitted {
                    Fitted::WithoutInjections => p.plan.decision.reasons.push(Reason::new(
                        ReasonCode::InjectionsLeftOut,
                        format!("the pressure reminder and the re-anchor block are left out: with them the transcript cannot come to {} tokens", target.unwrap_or(0)),
                    )),
                    Fitted::Least(least) => p.plan.decision.reasons.push(unreachable(start > 0, before, least, target.unwrap_or(0))),
                    Fitted::Within => {}
                }
                apply(&mut p, t, cfg, est, summary, reanchor);
            }
            (Some(n), Err(why)) if over_target => {
                p.plan.decision.fit = Some(FitFigures { target: n, before, after: before, reached: false });
                p.plan.decision.reasons.push(why);
                if !p.plan.decision.reasons.iter().any(|r| r.code == ReasonCode::TargetUnreachable) {
                    p.plan.decision.reasons.push(unreachable(start > 0, before, before, n));
                }
            }
            (_, Err(why)) => p.plan.decision.reasons.push(why),
        }
    }
    p
}

/// How the fallback met a size to fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fitted {
    /// Within the target (or no target), with what is appended.
    Within,
    /// Within the target only without the reminder and the re-anchor.
    WithoutInjections,
    /// No plan reaches the target: the least the transcript can come to (this many
    /// tokens) is written.
    Least(u64),
}

/// The fallback under a size to fit: within the target with what is appended; else
/// without it; else, over the target whatever is done, the least the transcript can
/// come to (never more than it is: a compaction that would not shrink it is none).
fn fit_fallback(
    t: &Transcript<'_>,
    cfg: &Config,
    est: &[u64],
    appended: u64,
    over_target: bool,
) -> Result<(fallback::Summary, Fitted), Reason> {
    let first = fallback::propose(t, cfg, est, Fit::Within { appended });
    match first {
        Ok(s) => return Ok((s, Fitted::Within)),
        Err(r) if r.code != ReasonCode::TargetUnreachable || !over_target => return Err(r),
        Err(_) => {}
    }
    if appended > 0 {
        if let Ok(s) = fallback::propose(t, cfg, est, Fit::Within { appended: 0 }) {
            return Ok((s, Fitted::WithoutInjections));
        }
    }
    let least = fallback::propose(t, cfg, est, Fit::Least)?;
    let size = least.after;
    Ok((least, Fitted::Least(size)))
}

/// The reason a size to fit is out of reach: the context's size (`compacted`: the
/// context starts after an earlier compaction) and the least it can come to.
fn unreachable(compacted: bool, before: u64, least: u64, target: u64) -> Reason {
    let what = if compacted { "the context after the latest compaction" } else { "the transcript" };
    Reason::new(
        ReasonCode::TargetUnreachable,
        format!(
            "{what} comes to {before} tokens and the least it can come to (the protected head and the summary's header) is {least}, over the target of {target}"
        ),
    )
}

/// The fallback applied: the summary in place of the removed items, the re-anchor
/// appended.
fn apply(
    p: &mut Proposal,
    t: &Transcript<'_>,
    cfg: &Config,
    est: &[u64],
    summary: fallback::Summary,
    reanchor: Option<String>,
) {
    let mut journal = Journal::default();
    journal.push(summary.event);
    if reanchor.is_some() {
        journal.push(Entry::ReanchorInjected { variant: PressurePath::AgentRunner, pending: false });
    }
    let with_summary = cfg.injects(Inject::Summary);
    p.compaction = Some(Compaction {
        removed: summary.removed,
        replacement: with_summary.then_some(Replacement::Record(summary.at, summary.record)),
        appended: reanchor
            .iter()
            .map(|text| Injected::Message(injected::reanchor(t, text, PressurePath::AgentRunner)))
            .collect(),
        journal,
        summary_text: with_summary.then_some(summary.text),
        reanchor_text: reanchor.clone(),
        pre_tokens: super::occupancy(t, est).tokens,
        what: "fallback",
    });
    let d = &mut p.plan.decision;
    (d.action, d.fallback_applied, d.reanchor_injected) = (Action::HistoryFallback, true, reanchor.is_some());
}
