//! The decision record (SPEC 3): what was measured, against which denominator, what
//! was done and every reason an action was stopped or limited. Every closed set here is
//! an enum whose serialized name is written once.

use crate::formats::InputFormat;
use serde::Serialize;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Action {
    None,
    PressureReminder,
    HistoryFallback,
    NativeCompactionRequested,
    LocalCheckpoint,
}

impl Action {
    /// Its name as it is written (derived by the rule serde and clap use; `tests/it/names.rs` holds them equal).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Which pressure path applies (also the re-anchor's `variant`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum PressurePath {
    Conversation,
    /// The default runtime's (SPEC 2).
    #[default]
    AgentRunner,
}

impl PressurePath {
    /// Its name as it is written (derived by the rule serde and clap use; `tests/it/names.rs` holds them equal).
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The denominator this path compares with; the two never share one.
    pub fn denominator(self) -> Denominator {
        match self {
            PressurePath::Conversation => Denominator::ContextWindow,
            PressurePath::AgentRunner => Denominator::MaxTotalTokens,
        }
    }
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Denominator {
    ContextWindow,
    MaxTotalTokens,
}

impl Denominator {
    /// Its name as it is written (derived by the rule serde and clap use; `tests/it/names.rs` holds them equal).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Whether the user asked for compaction (`--manual`, like `/compact`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Trigger {
    Auto,
    Manual,
}

impl Trigger {
    /// Its name as it is written (derived by the rule serde and clap use; `tests/it/names.rs` holds them equal).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

macro_rules! reason_codes {
    ($($variant:ident => $code:literal, $meaning:literal;)*) => {
        /// A documented reason code (SPEC 3).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum ReasonCode { $($variant),* }

        impl ReasonCode {
            pub const ALL: &'static [ReasonCode] = &[$(ReasonCode::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self { $(ReasonCode::$variant => $code),* }
            }

            /// What the code means (README and man page list them).
            pub fn meaning(self) -> &'static str {
                match self { $(ReasonCode::$variant => $meaning),* }
            }
        }
    };
}

reason_codes! {
    NativeCompactionNotAdvertised => "native_compaction_not_advertised",
        "conversation runtime without native compaction: it never auto-compacts";
    ContextWindowUnknown => "context_window_unknown", "conversation runtime without a known context window";
    MaxTotalTokensUnknown => "max_total_tokens_unknown", "agent runner without a task budget";
    BelowThreshold => "below_threshold", "usage is below the threshold of the denominator that applies";
    TurnInProgress => "turn_in_progress", "the transcript does not end on a completed turn";
    CompactionPending => "compaction_pending", "an earlier compaction request has not completed";
    ReminderAlreadyInjected => "reminder_already_injected",
        "the one-shot pressure reminder is already in the transcript";
    FallbackAlreadyApplied => "fallback_already_applied", "the history fallback runs at most once per transcript";
    NotEnoughHistory => "not_enough_history",
        "fewer eligible items than fallback.min_eligible after extending the boundary";
    DeniedByHook => "denied_by_hook", "the pre-compact hook denied the compaction";
    CheckpointRefused => "checkpoint_refused", "a local checkpoint would break its invariants";
    TargetUnreachable => "target_unreachable",
        "fallback.target_tokens is smaller than the least the transcript can come to (the protected head and the summary's header): that least is written, and the row is counted and warned about";
    InjectionsLeftOut => "injections_left_out",
        "the pressure reminder and the re-anchor block were left out so that the transcript fits fallback.target_tokens";
    CompactionWouldNotShrink => "compaction_would_not_shrink",
        "under a size to fit (fallback.target_tokens), the summary would take as many tokens as the items it replaces, or more: nothing is summarized (the budget's fallback applies whenever enough history is eligible)";
}

impl Serialize for ReasonCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A reason code and a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    pub code: ReasonCode,
    pub message: String,
}

impl Reason {
    pub fn new(code: ReasonCode, message: impl Into<String>) -> Self {
        Reason { code, message: message.into() }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Decision {
    pub path: PressurePath,
    pub denominator: Denominator,
    pub used: Option<u64>,
    pub limit: Option<u64>,
    pub ratio: Option<f64>,
    pub threshold: f64,
    /// The figure the conversation path fires at, when a profile places the trigger
    /// other than at the threshold (SPEC 12).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger_tokens: Option<u64>,
    pub estimated: bool,
    pub input_format: InputFormat,
    pub trigger: Trigger,
    pub action: Action,
    pub reminder_injected: bool,
    pub fallback_applied: bool,
    pub reanchor_injected: bool,
    pub reasons: Vec<Reason>,
    /// Under a size to fit (`fallback.target_tokens`): the target and the estimate of
    /// the current context (from the latest compaction or checkpoint on) before and after.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fit: Option<FitFigures>,
}

/// The figures of a size to fit, computed once by the policy (estimates by the
/// configured tokenizer, what is appended included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FitFigures {
    pub target: u64,
    pub before: u64,
    pub after: u64,
    /// Whether the current context comes to the target or less.
    pub reached: bool,
}

impl Decision {
    pub fn has_reason(&self, code: ReasonCode) -> bool {
        self.reasons.iter().any(|r| r.code == code)
    }

    /// One line for people (stderr of `run`).
    pub fn one_line(&self) -> String {
        let denominator = self.denominator.as_str();
        let figure = match (self.used, self.limit) {
            (Some(u), Some(l)) => format!("{u}/{l} tokens of {denominator}"),
            (Some(u), None) => format!("{u} tokens, {denominator} unknown"),
            _ => format!("{denominator} unknown"),
        };
        let ratio = match (self.ratio, self.trigger_tokens) {
            (None, _) => String::new(),
            (Some(r), None) => format!(" (ratio {r:.4}, threshold {})", self.threshold),
            (Some(r), Some(at)) => format!(" (ratio {r:.4}, fires at {at})"),
        };
        let est = if self.estimated { ", estimated" } else { "" };
        let reasons: Vec<&str> = self.reasons.iter().map(|r| r.code.as_str()).collect();
        let why = if reasons.is_empty() { String::new() } else { format!(" [{}]", reasons.join(", ")) };
        format!("{}: {figure}{ratio}{est} -> {}{why}", self.path.as_str(), self.action.as_str())
    }
}
