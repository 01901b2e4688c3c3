//! The decision record (SPEC 3): what was measured, against which denominator, what
//! was done and every reason an action was stopped or limited.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    None,
    PressureReminder,
    HistoryFallback,
    NativeCompactionRequested,
    LocalCheckpoint,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::None => "none",
            Action::PressureReminder => "pressure_reminder",
            Action::HistoryFallback => "history_fallback",
            Action::NativeCompactionRequested => "native_compaction_requested",
            Action::LocalCheckpoint => "local_checkpoint",
        }
    }
}

/// A documented reason code and a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    pub code: &'static str,
    pub message: String,
}

impl Reason {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Reason { code, message: message.into() }
    }
}

/// Every reason code the tool emits, with what it means (README and man page list them).
pub const REASON_CODES: &[(&str, &str)] = &[
    ("native_compaction_not_advertised", "conversation runtime without native compaction: it never auto-compacts"),
    ("context_window_unknown", "conversation runtime without a known context window"),
    ("max_total_tokens_unknown", "agent runner without a task budget"),
    ("below_threshold", "usage is below the threshold of the denominator that applies"),
    ("turn_in_progress", "the transcript does not end on a completed turn"),
    ("compaction_pending", "an earlier compaction request has not completed"),
    ("reminder_already_injected", "the one-shot pressure reminder is already in the transcript"),
    ("fallback_already_applied", "the history fallback runs at most once per transcript"),
    ("not_enough_history", "fewer eligible items than fallback.min_eligible after extending the boundary"),
    ("denied_by_hook", "the pre-compact hook denied the compaction"),
    ("checkpoint_refused", "a local checkpoint would break its invariants"),
];

#[derive(Debug, Clone, Serialize)]
pub struct Decision {
    pub path: &'static str,
    pub denominator: &'static str,
    pub used: Option<u64>,
    pub limit: Option<u64>,
    pub ratio: Option<f64>,
    pub threshold: f64,
    pub estimated: bool,
    pub input_format: String,
    pub trigger: &'static str,
    pub action: Action,
    pub reminder_injected: bool,
    pub fallback_applied: bool,
    pub reanchor_injected: bool,
    pub reasons: Vec<Reason>,
}

impl Decision {
    pub fn has_reason(&self, code: &str) -> bool {
        self.reasons.iter().any(|r| r.code == code)
    }

    /// One line for people (stderr of `run`).
    pub fn one_line(&self) -> String {
        let figure = match (self.used, self.limit) {
            (Some(u), Some(l)) => format!("{u}/{l} tokens of {}", self.denominator),
            (Some(u), None) => format!("{u} tokens, {} unknown", self.denominator),
            _ => format!("{} unknown", self.denominator),
        };
        let ratio = self.ratio.map_or(String::new(), |r| format!(" (ratio {r:.4}, threshold {})", self.threshold));
        let est = if self.estimated { ", estimated" } else { "" };
        let reasons: Vec<&str> = self.reasons.iter().map(|r| r.code).collect();
        let why = if reasons.is_empty() { String::new() } else { format!(" [{}]", reasons.join(", ")) };
        format!("{}: {figure}{ratio}{est} -> {}{why}", self.path, self.action.as_str())
    }
}
