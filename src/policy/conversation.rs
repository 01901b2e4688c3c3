//! The conversation runtime (SPEC 3, 6): auto-compaction against the context window,
//! the native request/completion lifecycle, and the local semantic checkpoint.

use super::{base_decision, gate, last_input_turn, summary_text, threshold_event, Action, Figure, Plan, Reason};
use super::{injected, injected_record, occupancy, reaches, Options};
use crate::config::{Config, RuntimeKind};
use crate::render;
use crate::tokens;
use crate::transcript::{RecordKind, Role, Transcript};
use serde_json::{json, Map};

pub(super) fn plan(t: &Transcript<'_>, cfg: &Config, opts: &Options, est: &[u64]) -> Plan {
    let fig = occupancy(t, est);
    let window = cfg.context_window;
    let mut plan = Plan::new(base_decision(RuntimeKind::Conversation, cfg, opts, fig, window));
    let fired = window.is_some_and(|w| reaches(fig.tokens, w, cfg.threshold_bp));
    threshold_event(&mut plan, fired);
    let life = lifecycle(t);
    if let Some(id) = &life.completed_without_post_hook {
        plan.journal.push("compaction_completed", json!({"id": id}));
        plan.completed_lifecycle = Some(id.clone());
    }
    let reasons = &mut plan.decision.reasons;
    if !cfg.native_compaction && !opts.manual {
        reasons.push(Reason::new(
            "native_compaction_not_advertised",
            "the conversation runtime does not advertise native compaction, so it never auto-compacts",
        ));
    }
    if window.is_none() && !opts.manual {
        reasons.push(Reason::new("context_window_unknown", "runtime.context_window is not set"));
    }
    if let (Some(w), false, false) = (window, fired, opts.manual) {
        reasons.push(Reason::new(
            "below_threshold",
            format!(
                "occupancy {} of the {w}-token context window is below the threshold {}",
                fig.tokens,
                cfg.threshold()
            ),
        ));
    }
    if !t.ends_on_completed_turn() {
        reasons.push(Reason::new(
            "turn_in_progress",
            "the transcript does not end on a completed turn; compaction is serialized with turns",
        ));
    }
    if let Some(id) = &life.pending {
        reasons.push(Reason::new(
            "compaction_pending",
            format!("compaction request {id} has no compaction_completed event yet"),
        ));
    }
    if !plan.decision.reasons.is_empty() {
        return plan;
    }
    if !gate(&mut plan, cfg, opts, "compaction") {
        return plan;
    }
    if cfg.native_compaction {
        request(t, cfg, &mut plan, life.requests + 1);
    } else {
        checkpoint(t, cfg, opts, est, fig, &mut plan);
    }
    plan
}

/// Native support: append the request event and the pending conversation re-anchor.
fn request(t: &Transcript<'_>, cfg: &Config, plan: &mut Plan, n: usize) {
    let id = format!("compaction-{n}");
    let event = json!({"type": "event", "name": "compaction_requested", "id": id, "trigger": plan.decision.trigger});
    plan.appended.push(event.to_string());
    plan.journal.push("compaction_requested", json!({"id": id}));
    plan.decision.action = Action::NativeCompactionRequested;
    conversation_reanchor(t, cfg, plan);
}

fn conversation_reanchor(t: &Transcript<'_>, cfg: &Config, plan: &mut Plan) {
    let facts = crate::reanchor::gather(t, cfg);
    let text = render::render_reanchor(&facts, true, cfg.reanchor_max_entries, cfg.reanchor_max_chars);
    let mut own = Map::new();
    own.insert("variant".into(), json!("conversation"));
    plan.appended.push(injected("reanchor", &last_input_turn(t), own, text.clone()));
    plan.reanchor_text = Some(text);
    plan.decision.reanchor_injected = true;
    plan.journal.push("reanchor_injected", json!({"variant": "conversation", "pending": true}));
}

/// Which items a checkpoint removes: the non-system input items of the current context
/// before the latest `retain_turns` turns.
pub fn checkpoint_span(t: &Transcript<'_>, retain_turns: usize) -> (Vec<usize>, Vec<usize>) {
    let start = super::context_start(t);
    let candidates: Vec<usize> = (start..t.items.len())
        .filter(|&i| t.items[i].is_input() && !matches!(t.items[i].role(), Some(Role::System | Role::Developer)))
        .collect();
    // Walk back over turn changes to find where the retained turns begin.
    let mut turns_seen = 0;
    let mut cut = candidates.len();
    let mut current: Option<&str> = None;
    for (k, &i) in candidates.iter().enumerate().rev() {
        let turn = t.items[i].turn.as_deref().unwrap_or("");
        if current != Some(turn) {
            turns_seen += 1;
            current = Some(turn);
            if turns_seen > retain_turns {
                break;
            }
        }
        cut = k;
    }
    (candidates[..cut].to_vec(), candidates[cut..].to_vec())
}

/// Without native support: a local semantic checkpoint (SPEC 6).
fn checkpoint(t: &Transcript<'_>, cfg: &Config, opts: &Options, est: &[u64], fig: Figure, plan: &mut Plan) {
    let (removed, retained) = checkpoint_span(t, cfg.retain_turns);
    if removed.is_empty() {
        plan.decision.reasons.push(Reason::new(
            "not_enough_history",
            format!("nothing before the latest {} turn(s) to checkpoint", cfg.retain_turns),
        ));
        return;
    }
    let turn_ids = |items: &[usize]| -> Vec<String> {
        let mut ids: Vec<String> = Vec::new();
        for &i in items {
            let turn = t.items[i].turn.as_deref().unwrap_or("").to_string();
            if ids.last() != Some(&turn) && !ids.contains(&turn) {
                ids.push(turn);
            }
        }
        ids
    };
    let summarized = turn_ids(&removed);
    let kept = turn_ids(&retained);
    let text = opts.checkpoint_summary.clone().unwrap_or_else(|| summary_text(t, &removed, cfg));
    let n = t.items.iter().filter(|i| i.is_synthetic("checkpoint")).count() + 1;
    let before = fig.tokens;
    let removed_est: u64 = removed.iter().map(|&i| est[i]).sum();
    let mut own = Map::new();
    own.insert("summarized_turn_ids".into(), json!(summarized));
    own.insert("retained_turn_ids".into(), json!(kept));
    own.insert("occupancy_before".into(), json!(before));
    own.insert("occupancy_after".into(), json!(0));
    let first_turn = t.items[removed[0]].turn.as_deref().map(str::to_string);
    // The estimate counts model-visible text, so the checkpoint weighs its content.
    let after = (before + tokens::count_text(&text, cfg.tokenizer)).saturating_sub(removed_est);
    let overlap: Vec<&String> = summarized.iter().filter(|s| kept.contains(s)).collect();
    if !overlap.is_empty() || after > before {
        let why = if overlap.is_empty() {
            format!("occupancy would grow from {before} to {after}")
        } else {
            format!(
                "summarized and retained turn ids overlap ({})",
                overlap.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            )
        };
        plan.decision
            .reasons
            .push(Reason::new("checkpoint_refused", format!("the local checkpoint was refused: {why}")));
        plan.refused = true;
        return;
    }
    own.insert("occupancy_after".into(), json!(after));
    let record = checkpoint_record(n, &first_turn, own, text.clone());
    plan.journal.push(
        "checkpoint_created",
        json!({"id": format!("rivumi:checkpoint-{n}"), "summarized_turn_ids": summarized, "retained_turn_ids": kept,
            "occupancy_before": before, "occupancy_after": after}),
    );
    let last = *removed.last().expect("removed is not empty");
    plan.replacement = Some((t.items[last].record, record));
    plan.removed = removed;
    plan.summary_text = Some(text);
    plan.decision.action = Action::LocalCheckpoint;
    conversation_reanchor(t, cfg, plan);
}

/// The checkpoint record: `synthetic` is `checkpoint`, the id is `rivumi:checkpoint-N`.
fn checkpoint_record(n: usize, turn: &Option<String>, own: Map<String, serde_json::Value>, content: String) -> String {
    injected_record(&format!("rivumi:checkpoint-{n}"), "checkpoint", turn, own, content)
}

/// Native compaction requests in a transcript.
struct Lifecycle {
    requests: usize,
    pending: Option<String>,
    completed_without_post_hook: Option<String>,
}

fn lifecycle(t: &Transcript<'_>) -> Lifecycle {
    let mut life = Lifecycle { requests: 0, pending: None, completed_without_post_hook: None };
    for r in &t.records {
        let RecordKind::Event { name, id } = &r.kind else { continue };
        let id = id.as_deref().unwrap_or("").to_string();
        match name.as_ref() {
            "compaction_requested" => {
                life.requests += 1;
                life.pending = Some(id);
                life.completed_without_post_hook = None;
            }
            "compaction_completed" if life.pending.as_deref() == Some(id.as_str()) => {
                life.pending = None;
                life.completed_without_post_hook = Some(id);
            }
            "post_compact_hook" if life.completed_without_post_hook.as_deref() == Some(id.as_str()) => {
                life.completed_without_post_hook = None;
            }
            _ => {}
        }
    }
    life
}
