//! The native agent runner (SPEC 3, 4): cumulative task usage against
//! `max_total_tokens`, the one-shot pressure reminder, the history fallback and the
//! agent-runner re-anchor.

use super::{
    base_decision, fallback, injected, threshold_event, Action, Compaction, Event, Injected, Journal, Options,
};
use super::{cumulative_usage, reaches, PressurePath, Proposal, Reason, ReasonCode, Replacement};
use crate::config::{Config, Inject};
use crate::render;
use crate::transcript::{Synthetic, Transcript};
use serde_json::{json, Map};

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
            p.plan.journal.push(Event::PressureReminderInjected, json!({"used": fig.tokens, "limit": l}));
        }
    }
    // A size to fit: a transcript larger than it is compacted whatever its usage.
    let over_target = cfg.fallback.target_tokens.is_some_and(|n| est.iter().sum::<u64>() > n);
    if fired || opts.manual || over_target {
        let reanchor = cfg.injects(Inject::Reanchor).then(|| {
            let mut facts = crate::reanchor::gather(t, cfg);
            facts.used = Some(fig.tokens);
            render::render_reanchor(&facts, false, cfg.reanchor.max_entries, cfg.reanchor.max_chars)
        });
        let count = |s: &str| crate::tokens::count_text(s, cfg.tokenizer);
        let reminder = p.reminder.as_ref().map_or(0, |r| count(&r.to_canonical()));
        let appended = reminder + reanchor.as_deref().map_or(0, count);
        if let Some(summary) = fallback::propose(t, cfg, est, &mut p.plan.decision.reasons, appended) {
            let mut journal = Journal::default();
            journal.push(Event::HistoryFallbackApplied, summary.event);
            if reanchor.is_some() {
                journal.push(Event::ReanchorInjected, json!({"variant": PressurePath::AgentRunner.as_str()}));
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
                what: "fallback",
            });
            let d = &mut p.plan.decision;
            (d.action, d.fallback_applied, d.reanchor_injected) = (Action::HistoryFallback, true, reanchor.is_some());
        }
    }
    p
}
