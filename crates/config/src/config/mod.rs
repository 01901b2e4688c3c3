//! Configuration (SPEC 2): one typed tree ([`Config`]) and the layers that set it —
//! defaults < session record (or importer) < `--config` file < command-line flags.
//!
//! Each file-like layer is a JSON object laid over the defaults; the merged tree is
//! deserialized into [`Config`] (unknown keys rejected, values with rules checked by
//! their types), then the flags, typed ([`Setting`]), are laid on it; the layer that set
//! each key is kept for `rivumi-compact config`. Adding a key is one field here (and,
//! if wanted, one flag in `cli/` with its [`Setting`]).

use crate::formats::{DEFAULT_SHELL_TOOLS, DEFAULT_WRITE_TOOLS};
use serde::{Deserialize, Serialize};

mod layers;
mod profile;
mod setting;
mod values;

pub use layers::{keys, Builder, Layer, Layered};
pub use profile::Profile;
pub use setting::Setting;
use values::{count, percent, positive, positive_opt, seconds, string_opt, strings, strings_opt};
pub use values::{parse_threshold, Globs, Threshold};

/// The whole configuration, as the JSON paths of SPEC 2 lay it out.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub runtime: Runtime,
    pub task: Task,
    /// Both paths fire at `>=` this share of their denominator.
    pub threshold: Threshold,
    pub fallback: Fallback,
    pub summary: Summary,
    pub checkpoint: Checkpoint,
    pub reanchor: Reanchor,
    pub workspace: Workspace,
    /// Commands that verify the work (their latest run is the check status).
    #[serde(deserialize_with = "strings")]
    pub verification: Vec<String>,
    /// Steps still open; `None`: from the latest plan/todo call.
    #[serde(deserialize_with = "strings_opt")]
    pub remaining_steps: Option<Vec<String>>,
    pub tokenizer: Tokenizer,
    pub hooks: Hooks,
    #[serde(deserialize_with = "string_opt")]
    pub summarizer: Option<String>,
    #[serde(deserialize_with = "seconds")]
    pub summarizer_timeout_secs: u64,
    pub trigger: Trigger,
    /// What the agent runner's fallback injects (all three by default): a dataset
    /// builder may leave the reminder or the re-anchor block out of training lines.
    pub inject: Vec<Inject>,
}

/// A record the agent runner's fallback may inject (`inject`, `--inject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Inject {
    /// The summary message in place of the removed history.
    Summary,
    /// The one-shot pressure reminder.
    Reminder,
    /// The re-anchor block.
    Reanchor,
}

impl Config {
    /// Whether the agent runner injects this record.
    pub fn injects(&self, what: Inject) -> bool {
        self.inject.contains(&what)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Runtime {
    pub kind: RuntimeKind,
    pub native_compaction: bool,
    #[serde(deserialize_with = "positive_opt")]
    pub context_window: Option<u64>,
}

/// Where a conversation runtime's trigger sits and when it is evaluated: the
/// `claude-code` and `codex` profiles (SPEC 12) set these; the defaults are SPEC 3.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Trigger {
    /// Conversation runtime: fire at `context_window - reserve_tokens` instead of at the
    /// threshold (Claude Code keeps min(max output, 20,000) + 13,000 = 33,000 free).
    #[serde(deserialize_with = "positive_opt")]
    pub reserve_tokens: Option<u64>,
    /// The share, in percent, of the provider's window that `runtime.context_window`
    /// records; the threshold applies to the provider's window (Codex records 95%).
    #[serde(deserialize_with = "percent")]
    pub window_percent: u64,
    /// Where replay evaluates the trigger; `null`: by path (completed turns for the
    /// conversation runtime, model calls for the agent runner).
    pub evaluate_at: Option<EvaluateAt>,
    /// Conversation runtime: fire at this figure when it is below the threshold's (Codex
    /// takes the smaller of a model's configured `auto_compact_token_limit` and 90% of
    /// its window; a model whose limit comes from its server needs it set here).
    #[serde(deserialize_with = "positive_opt")]
    pub limit_tokens: Option<u64>,
    /// Conversation runtime: the trigger is placed against at most this much of the
    /// context window (Claude Code from 2.1.337: an auto-compact window of 400,000 for a
    /// model whose window is larger, unless the user sets another, `autoCompactWindow`
    /// or `CLAUDE_CODE_AUTO_COMPACT_WINDOW`).
    #[serde(deserialize_with = "positive_opt")]
    pub auto_compact_window: Option<u64>,
    /// How replay estimates what follows the last reported usage: as this tool does
    /// (SPEC 1), or as the agent does (`claude-code`, `codex`, `gemini-cli`,
    /// `last-usage`; set by their profiles).
    pub estimator: Estimator,
}

/// How the items after the last reported usage are estimated (SPEC 12 profiles).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Estimator {
    /// ceil(bytes / 4) per item (SPEC 1), or the configured tokenizer.
    #[default]
    Rivumi,
    /// Claude Code: round(UTF-16 characters / 4) per content block after the first
    /// block of the message that reported the usage; it decides on characters / 3 for
    /// the models the table says so.
    ClaudeCode,
    /// Codex: ceil(bytes / 4) per item added since the last model call, plus 6.
    Codex,
    /// Gemini CLI: the last response's prompt tokens alone (what it compares before
    /// each request; the reply and the tool results after it are not counted).
    GeminiCli,
    /// The last reported usage's total alone, nothing estimated after it (Claude Code
    /// before 1.0 compares the last assistant message's usage).
    LastUsage,
}

/// Evaluation points of a trigger (SPEC 12).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum EvaluateAt {
    /// At each completed turn (when the profile sets none).
    #[default]
    CompletedTurns,
    /// After each model call, with the tool results that arrived before the next.
    ModelCalls,
}

impl EvaluateAt {
    /// Its name as it is written (derived by the rule serde and clap use; `tests/it/names.rs` holds them equal).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl Config {
    /// The figure at or over which a path fires against `limit` (its denominator), in
    /// exact integers: `used >= fires_at` is `used × 10000 >= t × limit` for a ratio.
    pub fn fires_at(&self, conversation: bool, limit: u64) -> u64 {
        let bp = u128::from(self.threshold.basis_points());
        if !conversation {
            return ceil_share(bp, u128::from(limit));
        }
        let limit = self.trigger.auto_compact_window.map_or(limit, |w| w.min(limit));
        let at = if let Some(reserve) = self.trigger.reserve_tokens {
            limit.saturating_sub(reserve).max(1)
        } else {
            let provider = u128::from(limit) * 100 / u128::from(self.trigger.window_percent);
            ceil_share(bp, provider)
        };
        self.trigger.limit_tokens.map_or(at, |l| l.min(at))
    }

    /// Whether the conversation trigger is placed other than by the threshold alone.
    pub fn trigger_is_custom(&self) -> bool {
        self.trigger.reserve_tokens.is_some()
            || self.trigger.window_percent != 100
            || self.trigger.limit_tokens.is_some()
            || self.trigger.auto_compact_window.is_some()
    }
}

fn ceil_share(bp: u128, limit: u128) -> u64 {
    u64::try_from((bp * limit).div_ceil(10_000)).unwrap_or(u64::MAX)
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Task {
    #[serde(deserialize_with = "positive_opt")]
    pub max_total_tokens: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Fallback {
    #[serde(deserialize_with = "count")]
    pub protect_first: usize,
    #[serde(deserialize_with = "count")]
    pub retain_last: usize,
    #[serde(deserialize_with = "count")]
    pub min_eligible: usize,
    /// A size to fit (SPEC 4 extension, for datasets): the fallback keeps the newest
    /// items that fit in N tokens together with the protected head and the injected
    /// records (instead of `retain_last` of them), and applies to a transcript whose
    /// estimate passes N even below the usage threshold.
    #[serde(deserialize_with = "positive_opt")]
    pub target_tokens: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Summary {
    #[serde(deserialize_with = "positive")]
    pub preview_chars: usize,
    #[serde(deserialize_with = "count")]
    pub max_items: usize,
    #[serde(deserialize_with = "positive")]
    pub max_chars: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Checkpoint {
    #[serde(deserialize_with = "count")]
    pub retain_turns: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Reanchor {
    #[serde(deserialize_with = "positive")]
    pub max_entries: usize,
    #[serde(deserialize_with = "positive")]
    pub max_chars: usize,
    /// Tool names whose successful calls change files.
    pub write_tools: Globs,
    /// Tool names that run shell commands.
    pub shell_tools: Globs,
    #[serde(deserialize_with = "strings")]
    pub path_keys: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Workspace {
    /// Paths the task may edit (`*` stops at `/`, `**` crosses it).
    pub allowed_paths: Globs,
    #[serde(deserialize_with = "string_opt")]
    pub root: Option<String>,
    #[serde(deserialize_with = "string_opt")]
    pub mode: Option<String>,
    #[serde(deserialize_with = "string_opt")]
    pub permission: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Hooks {
    #[serde(deserialize_with = "string_opt")]
    pub pre_compact: Option<String>,
    #[serde(deserialize_with = "string_opt")]
    pub post_compact: Option<String>,
    #[serde(deserialize_with = "seconds")]
    pub timeout_secs: u64,
}

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    clap::ValueEnum,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum RuntimeKind {
    Conversation,
    AgentRunner,
}

impl RuntimeKind {
    /// Its name as it is written (derived by the rule serde and clap use; `tests/it/names.rs` holds them equal).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    clap::ValueEnum,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Tokenizer {
    Heuristic,
    O200k,
    Cl100k,
}

impl Tokenizer {
    /// Its name as it is written (derived by the rule serde and clap use; `tests/it/names.rs` holds them equal).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            runtime: Runtime { kind: RuntimeKind::AgentRunner, native_compaction: false, context_window: None },
            task: Task::default(),
            threshold: Threshold(8500),
            fallback: Fallback { protect_first: 2, retain_last: 4, min_eligible: 2, target_tokens: None },
            summary: Summary { preview_chars: 240, max_items: 40, max_chars: 8000 },
            checkpoint: Checkpoint { retain_turns: 2 },
            reanchor: Reanchor {
                max_entries: 20,
                max_chars: 4000,
                write_tools: Globs::names(DEFAULT_WRITE_TOOLS),
                shell_tools: Globs::names(DEFAULT_SHELL_TOOLS),
                path_keys: DEFAULT_PATH_KEYS.iter().map(std::string::ToString::to_string).collect(),
            },
            workspace: Workspace::default(),
            verification: Vec::new(),
            remaining_steps: None,
            tokenizer: Tokenizer::Heuristic,
            hooks: Hooks { pre_compact: None, post_compact: None, timeout_secs: 60 },
            summarizer: None,
            summarizer_timeout_secs: 60,
            trigger: Trigger {
                reserve_tokens: None,
                window_percent: 100,
                evaluate_at: None,
                limit_tokens: None,
                auto_compact_window: None,
                estimator: Estimator::Rivumi,
            },
            inject: vec![Inject::Summary, Inject::Reminder, Inject::Reanchor],
        }
    }
}

// Serde's `default` on each section takes the section's defaults from `Config`'s.
macro_rules! section_default {
    ($($t:ident => $f:ident),*) => {$(
        impl Default for $t {
            fn default() -> Self {
                Config::default().$f
            }
        }
    )*};
}
section_default!(Runtime => runtime, Fallback => fallback, Summary => summary, Checkpoint => checkpoint,
    Reanchor => reanchor, Hooks => hooks, Trigger => trigger);

pub const DEFAULT_PATH_KEYS: &[&str] = &["path", "file_path", "filename", "notebook_path"];

/// Keys a transcript may not set: they choose what runs on the user's machine.
pub const EXECUTABLE: &[&str] =
    &["hooks.pre_compact", "hooks.post_compact", "hooks.timeout_secs", "summarizer", "summarizer_timeout_secs"];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value};
    use std::path::Path;

    #[test]
    fn thresholds_are_checked_on_their_decimals() {
        for (f, want) in [(0.85, Some(8500)), (1.0, Some(10_000)), (0.0001, Some(1)), (0.1234, Some(1234))] {
            assert_eq!(parse_threshold(f, "x").ok(), want, "{f}");
        }
        for f in [0.0, -0.5, 1.0001, 0.00001, 0.850_000_000_01, 0.850_000_000_000_001, f64::NAN] {
            assert!(parse_threshold(f, "x").is_err(), "{f}");
        }
    }

    #[test]
    fn an_unknown_key_suggests_the_nearest_known_one() {
        let e = |v: Value| Builder::default().file(&v, Path::new("c.json"), &|_| None).unwrap_err().to_string();
        assert_eq!(
            e(serde_json::json!({"task": {"max_total_token": 5}})),
            "c.json: unknown configuration key `task.max_total_token` (did you mean `task.max_total_tokens`?)"
        );
        assert_eq!(
            e(serde_json::json!({"max_total_tokens": 5})),
            "c.json: unknown configuration key `max_total_tokens` (did you mean `task.max_total_tokens`?)"
        );
        assert_eq!(
            e(serde_json::json!({"treshold": 0.9})),
            "c.json: unknown configuration key `treshold` (did you mean `threshold`?)"
        );
        assert_eq!(e(serde_json::json!({"colour": 1})), "c.json: unknown configuration key `colour`");
    }

    #[test]
    fn layers_merge_and_name_their_errors() {
        let mut b = Builder::default();
        let session: Map<String, Value> =
            serde_json::from_str(r#"{"id":"s","task":{"max_total_tokens":9},"hooks":{"pre_compact":"x"}}"#).unwrap();
        b.session(&session, Path::new("t.jsonl")).unwrap();
        let mut bad = Builder::default();
        bad.session(&serde_json::from_str(r#"{"threshold":2}"#).unwrap(), Path::new("t.jsonl")).unwrap();
        let e = bad.build_for_session(Path::new("t.jsonl"), &|_| None).unwrap_err().to_string();
        assert_eq!(e, "t.jsonl: session record: `threshold`: threshold 2 is outside (0, 1]");
        // Where the caller knows the key's place in the file, the error names it.
        let mut bad = Builder::default();
        bad.session(&serde_json::from_str(r#"{"threshold":2}"#).unwrap(), Path::new("t.jsonl")).unwrap();
        let at = |path: &str| (path == "threshold").then_some((1, 13));
        let e = bad.build_for_session(Path::new("t.jsonl"), &at).unwrap_err().to_string();
        assert_eq!(e, "t.jsonl:1:13: session record: `threshold`: threshold 2 is outside (0, 1]");
        let file = serde_json::json!({"workspace": {"allowed_paths": ["src/**"]}, "threshold": 0.9});
        b.file(&file, Path::new("c.json"), &|_| None).unwrap();
        let bad = serde_json::json!({"reanchor": {"write_tools": ["a[" ]}});
        let e = b.clone().file(&bad, Path::new("c.json"), &|_| None).unwrap_err().to_string();
        assert!(e.starts_with("c.json: `reanchor.write_tools`: invalid glob \"a[\""), "{e}");
        let e = b.clone().file(&serde_json::json!({"tokenizer": "o100k"}), Path::new("c.json"), &|_| None).unwrap_err();
        assert!(e.to_string().starts_with("c.json: `tokenizer`: unknown variant `o100k`"), "{e}");
        let layered = b.build();
        assert_eq!(layered.config.task.max_total_tokens, Some(9));
        assert_eq!(layered.config.threshold.basis_points(), 9000);
        assert!(layered.config.workspace.allowed_paths.is_match("src/a/b.rs"));
        assert!(!layered.config.workspace.allowed_paths.is_match("lib/a.rs"));
        assert_eq!(layered.config.hooks.pre_compact, None, "a transcript never chooses what runs");
        let keys = layered.keys();
        let from = |k: &str| keys.iter().find(|(key, ..)| key == k).map(|(_, _, l)| *l);
        assert_eq!(from("task.max_total_tokens"), Some(Layer::Session));
        assert_eq!(from("threshold"), Some(Layer::ConfigFile));
        assert_eq!(from("runtime.kind"), Some(Layer::Default));
        assert_eq!(layered.warnings.len(), 1);
    }
}
