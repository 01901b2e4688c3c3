//! The policy: measure, decide which threshold applies, and plan the edits (fallback,
//! reminder, re-anchor, lifecycle events). Pure: it reads a transcript and a
//! configuration and returns a [`Plan`]; it never touches files, processes or clocks.

mod boundary;
mod conversation;
mod decision;
mod journal;
mod measure;

pub use boundary::{boundary, Boundary};
pub use decision::{Action, Decision, Reason, REASON_CODES};
pub use journal::Journal;
pub use measure::{context_start, cumulative_usage, occupancy, reaches, CumulativeUsage, Figure};

use crate::config::{Config, RuntimeKind};
use crate::render::{self, SummaryEntry};
use crate::tokens;
use crate::transcript::{item_text, ItemKind, Role, Transcript, Usage};
use serde_json::{json, Map, Value};

/// How a run was asked for, and what a pre-compact hook said.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The user asked for compaction (like `/compact`): the threshold is skipped.
    pub manual: bool,
    pub input_format: String,
    /// Set when the pre-compact hook denied, with its reason.
    pub denied_by_hook: Option<String>,
    /// A checkpoint summary written by the user's summarizer, replacing the renderer's.
    pub checkpoint_summary: Option<String>,
}

/// What a run does to a transcript: removals, injected records, texts and the journal.
#[derive(Debug, Clone)]
pub struct Plan {
    pub decision: Decision,
    /// Items removed (indices into `Transcript::items`).
    pub removed: Vec<usize>,
    /// An injected record that takes the place of the removed span, written after the
    /// record with this index (the last removed one).
    pub replacement: Option<(usize, String)>,
    /// Records appended after the last record, as JSON lines without terminators.
    pub appended: Vec<String>,
    pub journal: Journal,
    pub summary_text: Option<String>,
    pub reanchor_text: Option<String>,
    /// A compaction is planned that a pre-compact hook must allow first.
    pub gated: bool,
    /// The estimate of every item of the transcript as read (for `stats`).
    pub tokens_estimated: u64,
    /// A local checkpoint was refused: exit 4, nothing written.
    pub refused: bool,
    /// A completed native lifecycle whose post hook has not run yet (its request id).
    pub completed_lifecycle: Option<String>,
}

impl Plan {
    fn new(decision: Decision) -> Self {
        Plan {
            decision,
            removed: Vec::new(),
            replacement: None,
            appended: Vec::new(),
            journal: Journal::default(),
            summary_text: None,
            reanchor_text: None,
            gated: false,
            tokens_estimated: 0,
            refused: false,
            completed_lifecycle: None,
        }
    }

    /// Whether the output differs from the input.
    pub fn changes(&self) -> bool {
        !self.removed.is_empty() || self.replacement.is_some() || !self.appended.is_empty()
    }
}

/// Decides and plans for one transcript.
pub fn plan(t: &Transcript<'_>, cfg: &Config, opts: &Options) -> Plan {
    let est = tokens::item_estimates(t, cfg.tokenizer);
    let mut plan = match cfg.runtime {
        RuntimeKind::AgentRunner => plan_agent_runner(t, cfg, opts, &est),
        RuntimeKind::Conversation => conversation::plan(t, cfg, opts, &est),
    };
    plan.tokens_estimated = est.iter().sum();
    plan
}

pub(crate) fn base_decision(
    path: RuntimeKind,
    cfg: &Config,
    opts: &Options,
    fig: Figure,
    limit: Option<u64>,
) -> Decision {
    Decision {
        path: path.as_str(),
        denominator: if path == RuntimeKind::AgentRunner { "max_total_tokens" } else { "context_window" },
        used: Some(fig.tokens),
        limit,
        ratio: limit.map(|l| render::ratio(fig.tokens, l)),
        threshold: cfg.threshold(),
        estimated: fig.estimated,
        input_format: opts.input_format.clone(),
        trigger: if opts.manual { "manual" } else { "auto" },
        action: Action::None,
        reminder_injected: false,
        fallback_applied: false,
        reanchor_injected: false,
        reasons: Vec::new(),
    }
}

pub(crate) fn threshold_event(plan: &mut Plan, fired: bool) {
    let d = &plan.decision;
    let fields = json!({"path": d.path, "denominator": d.denominator, "used": d.used, "limit": d.limit,
        "ratio": d.ratio, "threshold": d.threshold, "estimated": d.estimated, "fired": fired, "trigger": d.trigger});
    plan.journal.push("threshold_evaluated", fields);
}

fn plan_agent_runner(t: &Transcript<'_>, cfg: &Config, opts: &Options, est: &[u64]) -> Plan {
    let fig = cumulative_usage(t, est);
    let limit = cfg.max_total_tokens;
    let mut plan = Plan::new(base_decision(RuntimeKind::AgentRunner, cfg, opts, fig, limit));
    let fired = limit.is_some_and(|l| reaches(fig.tokens, l, cfg.threshold_bp));
    threshold_event(&mut plan, fired);
    match limit {
        None => plan.decision.reasons.push(Reason::new(
            "max_total_tokens_unknown",
            "task.max_total_tokens is not set: the agent runner has no budget to compare with",
        )),
        Some(l) if !fired => plan.decision.reasons.push(Reason::new(
            "below_threshold",
            format!("{} of {l} max_total_tokens is below the threshold {}", fig.tokens, cfg.threshold()),
        )),
        Some(_) => {}
    }
    let last_turn = last_input_turn(t);
    let mut reminder = None;
    if fired {
        if t.items.iter().any(|i| i.is_synthetic("pressure_reminder")) {
            plan.decision.reasons.push(Reason::new(
                "reminder_already_injected",
                "the pressure reminder is one-shot and is already in the transcript",
            ));
        } else {
            let l = limit.unwrap_or(0);
            reminder =
                Some(injected("pressure_reminder", &last_turn, Map::new(), render::pressure_reminder(fig.tokens, l)));
            plan.decision.reminder_injected = true;
            plan.decision.action = Action::PressureReminder;
            plan.journal.push("pressure_reminder_injected", json!({"used": fig.tokens, "limit": l}));
        }
    }
    if fired || opts.manual {
        fallback(t, cfg, opts, est, &mut plan);
    }
    plan.appended.extend(reminder);
    if plan.decision.fallback_applied {
        let mut facts = crate::reanchor::gather(t, cfg);
        facts.used = Some(fig.tokens);
        let text = render::render_reanchor(&facts, false, cfg.reanchor_max_entries, cfg.reanchor_max_chars);
        let mut own = Map::new();
        own.insert("variant".into(), json!("agent-runner"));
        plan.appended.push(injected("reanchor", &last_turn, own, text.clone()));
        plan.reanchor_text = Some(text);
        plan.decision.reanchor_injected = true;
        plan.journal.push("reanchor_injected", json!({"variant": "agent-runner"}));
    }
    plan
}

fn fallback(t: &Transcript<'_>, cfg: &Config, opts: &Options, est: &[u64], plan: &mut Plan) {
    if t.items.iter().any(|i| i.is_synthetic("history_summary_fallback")) {
        plan.decision
            .reasons
            .push(Reason::new("fallback_already_applied", "the history fallback runs at most once per transcript"));
        return;
    }
    let inputs = t.input_items();
    let b = boundary(t, &inputs, cfg.protect_first, cfg.retain_last);
    let eligible = &inputs[b.eligible()];
    if eligible.len() < cfg.min_eligible.max(1) {
        plan.decision.reasons.push(Reason::new(
            "not_enough_history",
            format!(
                "{} eligible item(s) after protecting {} and retaining {}; at least {} needed",
                eligible.len(),
                b.protected_end,
                inputs.len() - b.retained_start,
                cfg.min_eligible.max(1)
            ),
        ));
        return;
    }
    if !gate(plan, cfg, opts, "fallback") {
        return;
    }
    let text = summary_text(t, eligible, cfg);
    let usage = summarized_usage(t, eligible, est);
    let mut own = Map::new();
    own.insert("summarized".into(), Value::Array(eligible.iter().map(|&i| json!(t.items[i].id)).collect()));
    own.insert("summarized_usage".into(), usage);
    let first_turn = t.items[eligible[0]].turn.as_deref().map(str::to_string);
    let record = injected("history_summary_fallback", &first_turn, own, text.clone());
    let before: u64 = est.iter().sum();
    let removed: u64 = eligible.iter().map(|&i| est[i]).sum();
    let after = before - removed + tokens::count_text(&text, cfg.tokenizer);
    plan.journal.push(
        "history_fallback_applied",
        json!({"items_summarized": eligible.len(), "tokens_before": before, "tokens_after": after}),
    );
    let last = *eligible.last().expect("eligible is not empty");
    plan.replacement = Some((t.items[last].record, record));
    plan.removed = eligible.to_vec();
    plan.summary_text = Some(text);
    plan.decision.fallback_applied = true;
    plan.decision.action = Action::HistoryFallback;
}

/// Records the pre-compact hook's say on a planned compaction (`what`); false when it
/// denied. The engine runs the hook and plans again with its verdict.
pub(crate) fn gate(plan: &mut Plan, cfg: &Config, opts: &Options, what: &str) -> bool {
    plan.gated = true;
    if let Some(reason) = &opts.denied_by_hook {
        let message = format!("the pre-compact hook denied the {what}: {reason}");
        plan.decision.reasons.push(Reason::new("denied_by_hook", message));
        plan.journal.push("pre_compact_hook", json!({"outcome": "denied", "reason": reason}));
        return false;
    }
    if cfg.pre_compact.is_some() {
        plan.journal.push("pre_compact_hook", json!({"outcome": "allowed", "reason": null}));
    }
    true
}

/// The summary of the eligible items; only the lines that can be shown are decoded.
pub(crate) fn summary_text(t: &Transcript<'_>, eligible: &[usize], cfg: &Config) -> String {
    let shown = eligible.len().min(cfg.max_items);
    let older = eligible.len() - shown;
    let entries: Vec<SummaryEntry> = eligible[older..].iter().map(|&i| summary_entry(t, i)).collect();
    render::build_history_summary_fallback_message(&entries, older, cfg.preview_chars, cfg.max_items, cfg.max_chars)
}

pub(crate) fn summary_entry(t: &Transcript<'_>, i: usize) -> SummaryEntry {
    let item = &t.items[i];
    let text = item_text(t, i);
    match &item.kind {
        ItemKind::Message { role, calls, .. } => SummaryEntry::Message {
            role: role.as_str(),
            text,
            calls: calls.iter().map(|c| (c.name.to_string(), c.arguments.get().to_string())).collect(),
        },
        ItemKind::ToolResult { name, .. } => {
            let tool = name.as_deref().map(str::to_string).or_else(|| {
                let owner = &t.items[item.call_item?];
                let cid = item.result_call_id()?;
                owner.calls().iter().find(|c| c.id == cid).map(|c| c.name.to_string())
            });
            SummaryEntry::Result { tool: tool.unwrap_or_else(|| "unknown tool".into()), failed: item.failed(), text }
        }
    }
}

/// Sums over the removed assistant messages; an estimated call counts as input tokens.
fn summarized_usage(t: &Transcript<'_>, eligible: &[usize], est: &[u64]) -> Value {
    let mut sum = Usage::default();
    let mut estimated = false;
    let mut prefix = vec![0u64; t.items.len() + 1];
    for i in 0..t.items.len() {
        prefix[i + 1] = prefix[i] + est[i];
    }
    for &i in eligible {
        let item = &t.items[i];
        if item.role() != Some(Role::Assistant) {
            continue;
        }
        match item.usage() {
            Some(u) => sum.add(u),
            None => {
                sum.input_tokens += prefix[i + 1];
                estimated = true;
            }
        }
    }
    json!({"input_tokens": sum.input_tokens, "cache_read_tokens": sum.cache_read_tokens,
        "cache_write_tokens": sum.cache_write_tokens, "output_tokens": sum.output_tokens, "estimated": estimated})
}

pub(crate) fn last_input_turn(t: &Transcript<'_>) -> Option<String> {
    t.items.iter().rev().find(|i| i.is_input()).and_then(|i| i.turn.as_deref().map(str::to_string))
}

/// An injected record with the id `rivumi:<kind>`.
pub(crate) fn injected(kind: &str, turn: &Option<String>, own: Map<String, Value>, content: String) -> String {
    injected_record(&format!("rivumi:{kind}"), kind, turn, own, content)
}

/// An injected record: `type`, `id`, `turn`, `role`, `synthetic`, own fields, `content`.
pub(crate) fn injected_record(
    id: &str,
    kind: &str,
    turn: &Option<String>,
    own: Map<String, Value>,
    content: String,
) -> String {
    let mut obj = Map::new();
    obj.insert("type".into(), json!("message"));
    obj.insert("id".into(), json!(id));
    obj.insert("turn".into(), json!(turn));
    obj.insert("role".into(), json!("user"));
    obj.insert("synthetic".into(), json!(kind));
    obj.extend(own);
    obj.insert("content".into(), json!(content));
    Value::Object(obj).to_string()
}
