//! The native agent runner (SPEC 3, 4): cumulative task usage against
//! `max_total_tokens`, the one-shot pressure reminder, the history fallback and the
//! agent-runner re-anchor.

use super::{base_decision, fallback, injected, threshold_event, Action, Compaction, Event, Journal, Options};
use super::{cumulative_usage, reaches, PressurePath, Proposal, Reason, ReasonCode, Replacement};
use crate::config::Config;
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
    if fired {
        if t.items.iter().any(|i| i.is_synthetic(Synthetic::PressureReminder)) {
            p.plan.decision.reasons.push(Reason::new(
                ReasonCode::ReminderAlreadyInjected,
                "the pressure reminder is one-shot and is already in the transcript",
            ));
        } else {
            let l = limit.unwrap_or(0);
            let text = render::pressure_reminder(fig.tokens, l);
            let turn = injected::last_input_turn(t);
            p.reminder = Some(injected::record(Synthetic::PressureReminder, turn.as_deref(), Map::new(), text));
            p.plan.decision.reminder_injected = true;
            p.plan.decision.action = Action::PressureReminder;
            p.plan.journal.push(Event::PressureReminderInjected, json!({"used": fig.tokens, "limit": l}));
        }
    }
    if fired || opts.manual {
        if let Some(summary) = fallback::propose(t, cfg, est, &mut p.plan.decision.reasons) {
            let mut facts = crate::reanchor::gather(t, cfg);
            facts.used = Some(fig.tokens);
            let text = render::render_reanchor(&facts, false, cfg.reanchor.max_entries, cfg.reanchor.max_chars);
            let mut journal = Journal::default();
            journal.push(Event::HistoryFallbackApplied, summary.event);
            journal.push(Event::ReanchorInjected, json!({"variant": PressurePath::AgentRunner.as_str()}));
            p.compaction = Some(Compaction {
                removed: summary.removed,
                replacement: Some(Replacement::Record(summary.at, summary.record)),
                appended: vec![injected::reanchor(t, &text, PressurePath::AgentRunner)],
                journal,
                summary_text: Some(summary.text),
                reanchor_text: Some(text),
                what: "fallback",
            });
            let d = &mut p.plan.decision;
            (d.action, d.fallback_applied, d.reanchor_injected) = (Action::HistoryFallback, true, true);
        }
    }
    p
}
