//! The conversation runtime (SPEC 3, 6): auto-compaction against the context window,
//! the native request/completion lifecycle, and the local semantic checkpoint.

use super::journal::Entry;
use super::{base_decision, fallback, injected, threshold_event, Action, Compaction, Event, Journal, Options};
use super::{
    occupancy, EventRecord, Figure, Injected, Message, PressurePath, Proposal, Reason, ReasonCode, Replacement,
};
use crate::config::{Config, Tokenizer};
use crate::render;
use crate::tokens;
use crate::transcript::{RecordKind, Role, Synthetic, Transcript};
use serde_json::{json, Map};

pub(super) fn propose(t: &Transcript<'_>, cfg: &Config, opts: Options, est: &[u64]) -> Proposal {
    let fig = occupancy(t, est);
    let window = cfg.runtime.context_window;
    let mut p = Proposal::new(base_decision(PressurePath::Conversation, cfg, opts, fig, window), cfg, est);
    let fired = window.is_some_and(|w| fig.tokens >= cfg.fires_at(true, w));
    threshold_event(&mut p.plan.journal, &p.plan.decision, fired);
    let life = lifecycle(t);
    if let Some(id) = &life.completed_without_post_hook {
        p.plan.journal.push(Entry::CompactionCompleted { id: id.clone() });
        p.plan.completed_lifecycle = Some(id.clone());
    }
    let reasons = &mut p.plan.decision.reasons;
    if !cfg.runtime.native_compaction && !opts.manual {
        reasons.push(Reason::new(
            ReasonCode::NativeCompactionNotAdvertised,
            "the conversation runtime does not advertise native compaction, so it never auto-compacts",
        ));
    }
    if window.is_none() && !opts.manual {
        reasons.push(Reason::new(ReasonCode::ContextWindowUnknown, "runtime.context_window is not set"));
    }
    if let (Some(w), false, false) = (window, fired, opts.manual) {
        let trigger = if cfg.trigger_is_custom() {
            format!("the trigger at {} tokens", cfg.fires_at(true, w))
        } else {
            format!("the threshold {}", cfg.threshold.as_f64())
        };
        reasons.push(Reason::new(
            ReasonCode::BelowThreshold,
            format!("occupancy {} of the {w}-token context window is below {trigger}", fig.tokens),
        ));
    }
    if !t.ends_on_completed_turn() {
        reasons.push(Reason::new(
            ReasonCode::TurnInProgress,
            "the transcript does not end on a completed turn; compaction is serialized with turns",
        ));
    }
    if let Some(id) = &life.pending {
        reasons.push(Reason::new(
            ReasonCode::CompactionPending,
            format!("compaction request {id} has no compaction_completed event yet"),
        ));
    }
    if !p.plan.decision.reasons.is_empty() {
        return p;
    }
    let proposed = if cfg.runtime.native_compaction {
        Some(request(t, cfg, life.requests + 1, p.plan.decision.trigger, fig.tokens))
    } else {
        checkpoint(t, cfg, est, fig, &mut p.plan.decision.reasons)
    };
    if let Some((c, action)) = proposed {
        p.plan.decision.action = action;
        p.plan.decision.reanchor_injected = true;
        p.compaction = Some(c);
    }
    p
}

/// Native support: the request event and the pending conversation re-anchor.
fn request(
    t: &Transcript<'_>,
    cfg: &Config,
    n: usize,
    trigger: super::Trigger,
    pre_tokens: u64,
) -> (Compaction, Action) {
    let id = format!("compaction-{n}");
    let mut fields = Map::new();
    fields.insert("trigger".into(), json!(trigger));
    let event = EventRecord::with_fields(Event::CompactionRequested, id.clone(), fields);
    let mut journal = Journal::default();
    journal.push(Entry::CompactionRequested { id: id.clone() });
    let (record, text) = conversation_reanchor(t, cfg, &mut journal);
    let c = Compaction {
        removed: Vec::new(),
        replacement: None,
        appended: vec![Injected::Event(event), Injected::Message(record)],
        journal,
        summary_text: None,
        reanchor_text: Some(text),
        pre_tokens,
        what: "compaction",
    };
    (c, Action::NativeCompactionRequested)
}

fn conversation_reanchor(t: &Transcript<'_>, cfg: &Config, journal: &mut Journal) -> (Message, String) {
    let text = reanchor_text(t, cfg);
    reanchor_message(t, text, journal)
}

/// The conversation re-anchor's text, from the facts of the whole session.
fn reanchor_text(t: &Transcript<'_>, cfg: &Config) -> String {
    let facts = crate::reanchor::gather(t, cfg);
    render::render_reanchor(&facts, true, cfg.reanchor.max_entries, cfg.reanchor.max_chars)
}

/// The re-anchor record of that text, journaled.
fn reanchor_message(t: &Transcript<'_>, text: String, journal: &mut Journal) -> (Message, String) {
    journal.push(Entry::ReanchorInjected { variant: PressurePath::Conversation, pending: true });
    (injected::reanchor(t, &text, PressurePath::Conversation), text)
}

/// Which items a checkpoint removes and which it retains: the non-system input items
/// of the current context, split before the latest `retain_turns` turns.
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

/// A local checkpoint before its summary text is final (the user's summarizer may
/// write it): everything but the text is measured once, here.
#[derive(Debug, Clone)]
pub(super) struct CheckpointDraft {
    n: usize,
    first_turn: Option<String>,
    summarized: Vec<String>,
    retained: Vec<String>,
    /// The occupancy the decision used, and the estimate of the removed items.
    before: u64,
    removed_estimate: u64,
    /// The record the checkpoint is written after (the last removed one).
    at: usize,
    pub(super) text: String,
}

/// A finished checkpoint.
pub(super) struct CheckpointDone {
    pub at: usize,
    pub record: Message,
    pub text: String,
    /// The journal's `checkpoint_created` event.
    pub event: Entry,
}

impl CheckpointDraft {
    /// The record, or the reason the checkpoint is refused (SPEC 6: the turn sets must
    /// be disjoint and occupancy must not grow).
    pub(super) fn finish(self, tokenizer: Tokenizer) -> Result<CheckpointDone, Reason> {
        let (before, n) = (self.before, self.n);
        // The estimate counts model-visible text, so the checkpoint weighs its content.
        let after = (before + tokens::count_text(&self.text, tokenizer)).saturating_sub(self.removed_estimate);
        let overlap: Vec<&str> =
            self.summarized.iter().filter(|s| self.retained.contains(s)).map(String::as_str).collect();
        if !overlap.is_empty() || after > before {
            let why = if overlap.is_empty() {
                format!("occupancy would grow from {before} to {after}")
            } else {
                format!("summarized and retained turn ids overlap ({})", overlap.join(", "))
            };
            return Err(Reason::new(ReasonCode::CheckpointRefused, format!("the local checkpoint was refused: {why}")));
        }
        let id = format!("rivumi:checkpoint-{n}");
        let mut own = Map::new();
        own.insert("summarized_turn_ids".into(), json!(self.summarized));
        own.insert("retained_turn_ids".into(), json!(self.retained));
        own.insert("occupancy_before".into(), json!(before));
        own.insert("occupancy_after".into(), json!(after));
        let record = Message {
            kind: Synthetic::Checkpoint,
            id: id.clone(),
            turn: self.first_turn,
            summarized: None,
            fields: own,
            content: self.text.clone(),
        };
        let event = Entry::CheckpointCreated {
            id,
            summarized_turn_ids: self.summarized,
            retained_turn_ids: self.retained,
            occupancy_before: before,
            occupancy_after: after,
        };
        Ok(CheckpointDone { at: self.at, record, text: self.text, event })
    }
}

/// Without native support: a local semantic checkpoint (SPEC 6).
fn checkpoint(
    t: &Transcript<'_>,
    cfg: &Config,
    est: &[u64],
    fig: Figure,
    reasons: &mut Vec<Reason>,
) -> Option<(Compaction, Action)> {
    let retain = cfg.checkpoint.retain_turns;
    let (removed, retained) = checkpoint_span(t, retain);
    if removed.is_empty() {
        reasons.push(Reason::new(
            ReasonCode::NotEnoughHistory,
            format!("nothing before the latest {retain} turn(s) to checkpoint"),
        ));
        return None;
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
    // The summary and the facts are made side by side on a large transcript.
    let (summary, reanchor) =
        super::side_by_side(t, || fallback::summary_text(t, &removed, cfg), || reanchor_text(t, cfg));
    let draft = CheckpointDraft {
        n: t.items.iter().filter(|i| i.is_synthetic(Synthetic::Checkpoint)).count() + 1,
        first_turn: t.items[removed[0]].turn.as_deref().map(str::to_string),
        summarized: turn_ids(&removed),
        retained: turn_ids(&retained),
        before: fig.tokens,
        removed_estimate: removed.iter().map(|&i| est[i]).sum(),
        at: t.items[*removed.last().expect("removed is not empty")].record,
        text: summary,
    };
    let mut journal = Journal::default();
    let (record, text) = reanchor_message(t, reanchor, &mut journal);
    let c = Compaction {
        removed,
        replacement: Some(Replacement::Checkpoint(draft)),
        appended: vec![Injected::Message(record)],
        journal,
        summary_text: None,
        reanchor_text: Some(text),
        pre_tokens: fig.tokens,
        what: "compaction",
    };
    Some((c, Action::LocalCheckpoint))
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
        let RecordKind::Event(e) = &r.kind else { continue };
        let (name, id) = (&e.name, &e.id);
        let id = id.as_deref().unwrap_or("").to_string();
        match Event::parse(name) {
            Some(Event::CompactionRequested) => {
                life.requests += 1;
                life.pending = Some(id);
                life.completed_without_post_hook = None;
            }
            Some(Event::CompactionCompleted) if life.pending.as_deref() == Some(id.as_str()) => {
                life.pending = None;
                life.completed_without_post_hook = Some(id);
            }
            Some(Event::PostCompactHook) if life.completed_without_post_hook.as_deref() == Some(id.as_str()) => {
                life.completed_without_post_hook = None;
            }
            _ => {}
        }
    }
    life
}
