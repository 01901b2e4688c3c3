//! The policy: measure, decide which threshold applies, and plan the edits (fallback,
//! reminder, re-anchor, lifecycle events). Pure: it reads a transcript and a
//! configuration and never touches files, processes or clocks.
//!
//! Decide once, then apply: [`propose`] returns a [`Proposal`] whose compaction the
//! user's pre-compact hook may deny and whose checkpoint summary the user's summarizer
//! may write; the verdicts are applied to it ([`Proposal::deny`],
//! [`Proposal::use_summary`]) and [`Proposal::finish`] gives the [`Plan`] the outputs
//! are written from. Nothing is measured or gathered twice.
//!
//! The parts: [`measure`] (the two figures), [`agent_runner`] and [`conversation`] (the
//! two paths), [`fallback`] and [`boundary`] (the lossy summary), [`injected`] (the
//! records the tool adds), [`decision`] and [`journal`] (what is reported).

mod agent_runner;
mod boundary;
mod conversation;
mod decision;
mod fallback;
pub mod injected;
mod journal;
mod measure;
mod steps;

pub use boundary::{boundary, Boundary};
pub use conversation::checkpoint_span;
pub use decision::{Action, Decision, Denominator, FitFigures, PressurePath, Reason, ReasonCode, Trigger};
pub use injected::{EventRecord, IdList, Injected, Message};
pub use journal::{Entry, Event, HookOutcome, Journal};
pub use measure::{context_start, cumulative_usage, occupancy, reaches, CumulativeUsage, Figure, Occupancy};
pub use steps::{steps, Step, Walk};

use crate::config::{Config, RuntimeKind};
use crate::formats::InputFormat;
use crate::render;
use crate::tokens;
use crate::transcript::Transcript;

/// How a run was asked for.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// The user asked for compaction (like `/compact`): the threshold is skipped.
    pub manual: bool,
    pub input_format: InputFormat,
}

/// What a run does to a transcript: removals, injected records, texts and the journal.
#[derive(Debug, Clone)]
pub struct Plan {
    pub decision: Decision,
    /// Items removed (indices into `Transcript::items`).
    pub removed: Vec<usize>,
    /// The message that takes the place of the removed span, written after the record
    /// with this index (the last removed one).
    pub replacement: Option<(usize, Message)>,
    /// Records appended after the last record.
    pub appended: Vec<Injected>,
    pub journal: Journal,
    pub summary_text: Option<String>,
    pub reanchor_text: Option<String>,
    /// The estimate of every item of the transcript as read (for `stats`).
    pub tokens_estimated: u64,
    /// The estimate of the transcript as written: the items that stay and the messages
    /// injected (what `stats` predicts and a chat line's provenance says, computed once).
    pub tokens_after: u64,
    /// A completed native lifecycle whose post hook has not run yet (its request id).
    pub completed_lifecycle: Option<String>,
    /// The current context's size (occupancy) before the compaction the plan carries
    /// out, computed once; `None` when it compacts nothing.
    pub pre_tokens: Option<u64>,
}

impl Plan {
    /// Whether the output differs from the input.
    pub fn changes(&self) -> bool {
        !self.removed.is_empty() || self.replacement.is_some() || !self.appended.is_empty()
    }

    /// Whether a local checkpoint was refused (exit 4, nothing written).
    pub fn refused(&self) -> bool {
        self.decision.has_reason(ReasonCode::CheckpointRefused)
    }
}

/// The compaction the policy proposes, before the user's hook has its say.
#[derive(Debug, Clone)]
pub struct Compaction {
    /// The items it removes.
    pub removed: Vec<usize>,
    /// What takes their place.
    replacement: Option<Replacement>,
    /// Records appended after it (a lifecycle event, the re-anchor).
    appended: Vec<Injected>,
    /// Its journal events, after the pre-compact hook's.
    journal: Journal,
    summary_text: Option<String>,
    reanchor_text: Option<String>,
    /// The current context's size before it (occupancy: what the agents record as the
    /// compaction's `preTokens`).
    pre_tokens: u64,
    /// "fallback" or "compaction", for the words of a denial.
    what: &'static str,
}

#[derive(Debug, Clone)]
enum Replacement {
    /// A finished message, written after the record with this index.
    Record(usize, Message),
    /// A checkpoint, finished once its summary text is final.
    Checkpoint(conversation::CheckpointDraft),
}

/// The decision as the policy would carry it out, and what the user may still change.
#[derive(Debug, Clone)]
pub struct Proposal {
    plan: Plan,
    /// The pressure reminder, appended whatever the hook says.
    reminder: Option<Message>,
    compaction: Option<Compaction>,
    /// Whether a pre-compact hook is configured (its verdict is journaled).
    hooked: bool,
    denied: bool,
    tokenizer: crate::config::Tokenizer,
    /// Each item's estimate, for the figure of the transcript as written.
    est: Vec<u64>,
}

impl Proposal {
    fn new(decision: Decision, cfg: &Config, est: &[u64]) -> Self {
        let plan = Plan {
            decision,
            removed: Vec::new(),
            replacement: None,
            appended: Vec::new(),
            journal: Journal::default(),
            summary_text: None,
            reanchor_text: None,
            tokens_estimated: est.iter().sum(),
            tokens_after: 0,
            completed_lifecycle: None,
            pre_tokens: None,
        };
        Proposal {
            plan,
            reminder: None,
            compaction: None,
            hooked: cfg.hooks.pre_compact.is_some(),
            denied: false,
            tokenizer: cfg.tokenizer,
            est: est.to_vec(),
        }
    }

    /// The decision as proposed (what a pre-compact hook is shown).
    pub fn decision(&self) -> &Decision {
        &self.plan.decision
    }

    /// The compaction a pre-compact hook must allow first, if any.
    pub fn compaction(&self) -> Option<&Compaction> {
        self.compaction.as_ref()
    }

    /// The items a proposed local checkpoint removes (what a summarizer summarizes).
    pub fn checkpoint_items(&self) -> Option<&[usize]> {
        let c = self.compaction.as_ref()?;
        matches!(c.replacement, Some(Replacement::Checkpoint(_))).then_some(&c.removed[..])
    }

    /// The pre-compact hook denied: nothing is summarized and nothing re-anchored; the
    /// reminder still applies.
    pub fn deny(&mut self, reason: &str) {
        let Some(c) = self.compaction.take() else { return };
        let d = &mut self.plan.decision;
        let message = format!("the pre-compact hook denied the {}: {reason}", c.what);
        d.reasons.push(Reason::new(ReasonCode::DeniedByHook, message));
        d.action = if d.reminder_injected { Action::PressureReminder } else { Action::None };
        d.fallback_applied = false;
        d.reanchor_injected = false;
        self.plan
            .journal
            .push(Entry::PreCompactHook { outcome: HookOutcome::Denied, reason: Some(reason.to_string()) });
        self.denied = true;
    }

    /// The user's summarizer wrote the checkpoint summary.
    pub fn use_summary(&mut self, text: String) {
        if let Some(Compaction { replacement: Some(Replacement::Checkpoint(draft)), .. }) = &mut self.compaction {
            draft.text = text;
        }
    }

    /// The plan, with the verdicts applied and its figures worked out.
    pub fn finish(self) -> Plan {
        let (tokenizer, est) = (self.tokenizer, self.est.clone());
        let mut plan = self.verdicts();
        let removed: u64 = plan.removed.iter().map(|&i| est[i]).sum();
        let injected: u64 = plan
            .replacement
            .iter()
            .map(|(_, m)| m)
            .chain(plan.appended.iter().filter_map(|a| match a {
                Injected::Message(m) => Some(m),
                Injected::Event(_) => None,
            }))
            .map(|m| tokens::count_text(&m.content, tokenizer))
            .sum();
        plan.tokens_after = plan.tokens_estimated - removed + injected;
        plan
    }

    fn verdicts(self) -> Plan {
        let Proposal { mut plan, reminder, compaction, hooked, denied, tokenizer, .. } = self;
        let Some(mut c) = compaction else {
            plan.appended.extend(reminder.map(Injected::Message));
            return plan;
        };
        if hooked && !denied {
            plan.journal.push(Entry::PreCompactHook { outcome: HookOutcome::Allowed, reason: None });
        }
        match c.replacement.take() {
            Some(Replacement::Record(at, record)) => plan.replacement = Some((at, record)),
            Some(Replacement::Checkpoint(draft)) => match draft.finish(tokenizer) {
                Ok(done) => {
                    plan.journal.push(done.event);
                    plan.replacement = Some((done.at, done.record));
                    c.summary_text = Some(done.text);
                }
                Err(reason) => {
                    let d = &mut plan.decision;
                    d.reasons.push(reason);
                    (d.action, d.reanchor_injected) = (Action::None, false);
                    plan.appended.extend(reminder.map(Injected::Message));
                    return plan;
                }
            },
            None => {}
        }
        plan.journal.extend(c.journal);
        plan.pre_tokens = Some(c.pre_tokens);
        plan.removed = c.removed;
        plan.appended.extend(reminder.map(Injected::Message));
        plan.appended.extend(c.appended);
        plan.summary_text = c.summary_text;
        plan.reanchor_text = c.reanchor_text;
        plan
    }
}

/// Decides for one transcript and proposes what to do.
pub fn propose(t: &Transcript<'_>, cfg: &Config, opts: &Options) -> Proposal {
    let est = tokens::item_estimates(t, cfg.tokenizer);
    match cfg.runtime.kind {
        RuntimeKind::AgentRunner => agent_runner::propose(t, cfg, *opts, &est),
        RuntimeKind::Conversation => conversation::propose(t, cfg, *opts, &est),
    }
}

/// Decides and plans for one transcript, with no hook or summarizer to ask.
pub fn plan(t: &Transcript<'_>, cfg: &Config, opts: &Options) -> Plan {
    propose(t, cfg, opts).finish()
}

/// The size of a transcript's input from which the two texts of a compaction (the
/// re-anchor facts, which walk every call, and the summary, which decodes the newest
/// removed items) are made side by side, when more than one thread may be used
/// ([`crate::batch::threads`]). Below it a thread's start costs more than it saves, and
/// a dataset's rows or a batch's files already keep every core busy.
const SIDE_BY_SIDE_FROM: usize = 4 << 20;

/// `a` and `b`, made side by side on a large transcript; the same results either way.
fn side_by_side<A: Send, B>(t: &Transcript<'_>, a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B) -> (A, B) {
    if t.src.len() >= SIDE_BY_SIDE_FROM {
        crate::batch::join(a, b)
    } else {
        (a(), b())
    }
}

fn base_decision(path: PressurePath, cfg: &Config, opts: Options, fig: Figure, limit: Option<u64>) -> Decision {
    Decision {
        path,
        denominator: path.denominator(),
        used: Some(fig.tokens),
        limit,
        ratio: limit.map(|l| render::ratio(fig.tokens, l)),
        threshold: cfg.threshold.as_f64(),
        trigger_tokens: match (path, limit) {
            (PressurePath::Conversation, Some(l)) if cfg.trigger_is_custom() => Some(cfg.fires_at(true, l)),
            _ => None,
        },
        estimated: fig.estimated,
        input_format: opts.input_format,
        trigger: if opts.manual { Trigger::Manual } else { Trigger::Auto },
        action: Action::None,
        reminder_injected: false,
        fallback_applied: false,
        reanchor_injected: false,
        reasons: Vec::new(),
        fit: None,
    }
}

fn threshold_event(journal: &mut Journal, d: &Decision, fired: bool) {
    journal.push(Entry::ThresholdEvaluated {
        path: d.path,
        denominator: d.denominator,
        used: d.used,
        limit: d.limit,
        ratio: d.ratio,
        threshold: d.threshold,
        estimated: d.estimated,
        fired,
        trigger: d.trigger,
        trigger_tokens: d.trigger_tokens,
    });
}
