//! Configuration (SPEC 2): one typed tree ([`Config`]) and the layers that set it —
//! defaults < session record (or importer) < `--config` file < command-line flags.
//!
//! Each layer is a JSON object laid over the defaults; the merged tree is deserialized
//! into [`Config`] (unknown keys rejected, values with rules checked by their types),
//! and the layer that set each key is kept for `rivumi-compact config`. Adding a key is
//! one field here (and, if wanted, one flag in `cli/`).

use crate::error::{Error, Result};
use crate::formats::{DEFAULT_SHELL_TOOLS, DEFAULT_WRITE_TOOLS};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

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
    /// How replay estimates what follows the last reported usage: as this tool does
    /// (SPEC 1), or as the agent does (`claude-code`, `codex`; set by their profiles).
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

/// A named preset of how a runtime decides to compact (SPEC 12, `--profile`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    Serialize,
    clap::ValueEnum,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Profile {
    /// SPEC 3 to 6 as written.
    #[default]
    Rivumi,
    /// Claude Code: fires at the context window minus 33,000 tokens, after each model call.
    ClaudeCode,
    /// Codex CLI: fires at 90% of the model's window, after each model call.
    Codex,
}

impl Profile {
    /// Its name as it is written (derived by the rule serde and clap use; `tests/it/names.rs` holds them equal).
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The keys the profile sets. Sources, checked against recorded sessions:
    /// - Claude Code: trigger at window − min(max output, 20,000) − 13,000 (167,000 of
    ///   200,000), per public write-ups; its recorded `preTokens` are the last usage plus
    ///   ceil(characters/4) of the results after it, with no padding (two real sessions:
    ///   167,060 + ceil(133/4) = 167,094 and 167,701 + ceil(120/4) = 167,731).
    /// - Codex: openai/codex `codex-rs/protocol/src/openai_models.rs`
    ///   (`auto_compact_token_limit`: 90% of the model's context window), and
    ///   `effective_context_window_percent` (95): the window a rollout's `token_count`
    ///   records is 95% of the model's (258,400 of 272,000), so the limit is 244,800.
    ///   Its occupancy is the last `total_tokens` plus an estimate of the items after the
    ///   last model-generated item (`estimate_suffix_after_last_model_item`).
    pub fn preset(self) -> Value {
        match self {
            Profile::Rivumi => serde_json::json!({}),
            Profile::ClaudeCode => serde_json::json!({
                "runtime": {"kind": "conversation", "native_compaction": true, "context_window": 200_000},
                "trigger": {"reserve_tokens": 33_000, "evaluate_at": "model-calls", "estimator": "claude-code"}
            }),
            Profile::Codex => serde_json::json!({
                "runtime": {"kind": "conversation", "native_compaction": true, "context_window": 258_400},
                "threshold": 0.9,
                "trigger": {"window_percent": 95, "evaluate_at": "model-calls", "estimator": "codex"}
            }),
        }
    }
}

impl Profile {
    /// The profile of the agent that wrote an input format (`rivumi` for the others).
    pub fn of_format(format: crate::formats::InputFormat) -> Profile {
        match format {
            crate::formats::InputFormat::ClaudeCode => Profile::ClaudeCode,
            crate::formats::InputFormat::Codex => Profile::Codex,
            _ => Profile::Rivumi,
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The threshold in basis points (0.85 → 8500), so comparisons are exact integers.
/// Written as a number in (0, 1] with at most 4 decimals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Threshold(u64);

impl Threshold {
    /// From a number, checked: in (0, 1], at most 4 decimals.
    pub fn new(f: f64) -> std::result::Result<Threshold, String> {
        parse_threshold(f, &f.to_string()).map(Threshold)
    }

    pub fn basis_points(self) -> u64 {
        self.0
    }

    pub fn as_f64(self) -> f64 {
        self.0 as f64 / 10_000.0
    }
}

impl Serialize for Threshold {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.as_f64().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Threshold {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let f = v.as_f64().ok_or_else(|| D::Error::custom(format!("expected a number in (0, 1], found {v}")))?;
        parse_threshold(f, &v.to_string()).map(Threshold).map_err(D::Error::custom)
    }
}

/// Checks a threshold: in (0, 1] with at most 4 decimals, as basis points. The check is
/// on the decimal text of the number (its shortest form), never on a rounded float, so
/// `0.85000000001` is refused from every layer.
pub fn parse_threshold(f: f64, shown: &str) -> std::result::Result<u64, String> {
    if !(f > 0.0 && f <= 1.0) {
        return Err(format!("threshold {shown} is outside (0, 1]"));
    }
    let text = f.to_string();
    let decimals = text.split_once('.').map_or(0, |(_, d)| d.len());
    if decimals > 4 {
        return Err(format!("threshold {shown} has more than 4 decimals"));
    }
    Ok((f * 10_000.0).round() as u64)
}

/// A list of glob patterns, compiled when the configuration is loaded: an invalid
/// pattern is an error naming its key, never a set that silently matches nothing.
#[derive(Debug, Clone, Default)]
pub struct Globs {
    patterns: Vec<String>,
    set: std::sync::Arc<GlobSet>,
}

impl Globs {
    /// Path globs: `*` stops at `/`, `**` crosses it.
    pub fn paths(patterns: &[String]) -> std::result::Result<Globs, String> {
        Globs::compile(patterns)
    }

    fn names(patterns: &[&str]) -> Globs {
        let patterns: Vec<String> = patterns.iter().map(std::string::ToString::to_string).collect();
        Globs::compile(&patterns).expect("the default patterns are valid")
    }

    /// Compiles a list once per process: a batch of 10,000 transcripts with the same
    /// lists compiles each list once.
    fn compile(patterns: &[String]) -> std::result::Result<Globs, String> {
        type Compiled = std::result::Result<std::sync::Arc<GlobSet>, String>;
        type Cache = std::sync::Mutex<std::collections::HashMap<Vec<String>, Compiled>>;
        static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
        let cache = CACHE.get_or_init(Default::default);
        let mut cache = cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let set = if let Some(compiled) = cache.get(patterns) {
            compiled.clone()?
        } else {
            let compiled = Globs::build(patterns).map(std::sync::Arc::new);
            cache.insert(patterns.to_vec(), compiled.clone());
            compiled?
        };
        Ok(Globs { patterns: patterns.to_vec(), set })
    }

    fn build(patterns: &[String]) -> std::result::Result<GlobSet, String> {
        let mut b = GlobSetBuilder::new();
        for p in patterns {
            let glob = GlobBuilder::new(p)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("invalid glob {:?}: {}", p, e.kind()))?;
            b.add(glob);
        }
        b.build().map_err(|e| e.to_string())
    }

    pub fn is_match(&self, s: &str) -> bool {
        self.set.is_match(s)
    }

    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }
}

impl Serialize for Globs {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.patterns.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Globs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let patterns = strings(d)?;
        Globs::compile(&patterns).map_err(D::Error::custom)
    }
}

// Value checks, with the messages people see (`key`: message).

fn count<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<usize, D::Error> {
    let v = Value::deserialize(d)?;
    v.as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| D::Error::custom(format!("expected a non-negative integer, found {v}")))
}

fn seconds<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<u64, D::Error> {
    count(d).map(|n| n as u64)
}

fn positive<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<usize, D::Error> {
    match count(d)? {
        0 => Err(D::Error::custom("expected a positive integer, found 0")),
        n => Ok(n),
    }
}

fn positive_opt<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<u64>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        v => match v.as_u64() {
            Some(0) | None => Err(D::Error::custom(format!("expected a positive integer, found {v}"))),
            n => Ok(n),
        },
    }
}

fn percent<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<u64, D::Error> {
    match count(d)? {
        n @ 1..=100 => Ok(n as u64),
        n => Err(D::Error::custom(format!("expected a percentage in 1..=100, found {n}"))),
    }
}

fn string_opt<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<String>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s)),
        v => Err(D::Error::custom(format!("expected a string, found {v}"))),
    }
}

fn strings<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Vec<String>, D::Error> {
    let v = Value::deserialize(d)?;
    let arr = v.as_array().ok_or_else(|| D::Error::custom(format!("expected an array of strings, found {v}")))?;
    arr.iter()
        .map(|s| {
            s.as_str().map(str::to_string).ok_or_else(|| D::Error::custom(format!("expected a string, found {s}")))
        })
        .collect()
}

fn strings_opt<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Vec<String>>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        v => strings(v).map(Some).map_err(D::Error::custom),
    }
}

/// Where a value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Layer {
    Default,
    Profile,
    Session,
    ConfigFile,
    Flag,
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layer::Default => "default",
            Layer::Profile => "profile",
            Layer::Session => "session",
            Layer::ConfigFile => "config file",
            Layer::Flag => "flag",
        })
    }
}

/// A configuration with the layer each key came from.
#[derive(Debug, Clone)]
pub struct Layered {
    pub config: Config,
    /// Things worth telling the user (ignored session keys).
    pub warnings: Vec<String>,
    /// The merged layers, for [`Layered::keys`].
    layers: Builder,
}

impl Builder {
    /// Whether any layer laid so far sets `key` (a JSON path).
    pub fn sets(&self, key: &str) -> bool {
        self.layers.iter().any(|(leaves, _)| leaves.iter().any(|(k, _)| k == key))
    }
}

impl Layered {
    /// Every key (JSON path), in `config` order, with its value and the layer it came
    /// from (computed on demand: only `config` shows it).
    pub fn keys(&self) -> Vec<(String, Value, Layer)> {
        let from: BTreeMap<&str, Layer> = self
            .layers
            .layers
            .iter()
            .flat_map(|(leaves, layer)| leaves.iter().map(move |(k, _)| (k.as_str(), *layer)))
            .collect();
        let mut keys = Vec::new();
        flatten(&self.layers.tree, "", &mut keys);
        keys.into_iter()
            .map(|(k, v)| {
                let layer = from.get(k.as_str()).copied().unwrap_or(Layer::Default);
                (k, v, layer)
            })
            .collect()
    }
}

/// Merges layers over the defaults. Each layer is checked when it is laid on, so an
/// error names the layer (file, session record or flag) and the key.
#[derive(Debug, Clone)]
pub struct Builder {
    tree: Value,
    /// The leaves each layer set, in order.
    layers: Vec<(Vec<(String, Value)>, Layer)>,
    warnings: Vec<String>,
}

impl Default for Builder {
    fn default() -> Self {
        static DEFAULTS: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
        let tree = DEFAULTS.get_or_init(|| serde_json::to_value(Config::default()).expect("the defaults serialize"));
        Builder { tree: tree.clone(), layers: Vec::new(), warnings: Vec::new() }
    }
}

impl Builder {
    /// A profile's preset (SPEC 12), laid between the defaults and the session.
    pub fn profile(&mut self, profile: Profile) {
        let Value::Object(obj) = profile.preset() else { return };
        let mut leaves = Vec::new();
        self.leaves(&obj, "", &mut leaves, &mut |k| unreachable!("profile key `{k}` is a configuration key"))
            .expect("profile presets name known keys");
        self.lay(leaves, Layer::Profile).expect("profile presets are valid");
    }

    /// A session record (or an importer's session layer): keys that are not
    /// configuration are ignored; executable keys are ignored with a warning.
    pub fn session(&mut self, obj: &Map<String, Value>, file: &Path) -> Result<()> {
        let mut leaves = Vec::new();
        self.leaves(obj, "", &mut leaves, &mut |_| Ok(()))?;
        leaves.retain(|(key, _)| {
            let executable = EXECUTABLE.contains(&key.as_str());
            if executable {
                self.warnings
                    .push(format!("ignored `{key}` in the session record: a transcript never chooses what runs"));
            }
            !executable
        });
        // Checked once, with the layers above it, by `build_for_session`.
        let _ = file;
        for (key, value) in &leaves {
            set(&mut self.tree, key, value.clone());
        }
        self.layers.push((leaves, Layer::Session));
        Ok(())
    }

    /// Builds a configuration whose session layer was laid unchecked (the other layers
    /// are checked when laid): an error can only be the session record's, and names it.
    /// One deserialization per transcript.
    pub fn build_for_session(self, file: &Path) -> Result<Layered> {
        if let Ok(config) = Config::deserialize(&self.tree) {
            let warnings = self.warnings.clone();
            return Ok(Layered { config, warnings, layers: self });
        }
        let e = serde_path_to_error::deserialize::<_, Config>(&self.tree).expect_err("it failed once");
        Err(Error::bad_input(file, format!("session record: `{}`: {}", e.path(), e.inner())))
    }

    /// A `--config` JSON file's object: unknown keys are errors.
    pub fn file(&mut self, value: &Value, file: &Path) -> Result<()> {
        let Value::Object(obj) = value else {
            return Err(Error::bad_input(file, "expected a JSON object of configuration keys"));
        };
        let mut leaves = Vec::new();
        let unknown = |key: &str| Err(Error::bad_input(file, self.unknown_key(key)));
        self.leaves(obj, "", &mut leaves, &mut |k| unknown(k))?;
        self.lay(leaves, Layer::ConfigFile).map_err(|(key, m)| Error::bad_input(file, format!("`{key}`: {m}")))
    }

    /// The command line's layer (an object of the keys the flags set): a usage error.
    pub fn flags(&mut self, obj: &Map<String, Value>) -> Result<()> {
        let mut leaves = Vec::new();
        self.leaves(obj, "", &mut leaves, &mut |k| Err(Error::Usage(self.unknown_key(k))))?;
        self.lay(leaves, Layer::Flag).map_err(|(key, m)| Error::Usage(format!("{key}: {m}")))
    }

    /// The typed configuration and where each value came from.
    pub fn build(self) -> Layered {
        let config: Config = Config::deserialize(&self.tree).expect("every layer was checked");
        let warnings = self.warnings.clone();
        Layered { config, warnings, layers: self }
    }

    /// "unknown configuration key `k`", with the nearest known key when one is near:
    /// the whole dotted key compared, or its last part (`max_total_token` →
    /// `task.max_total_tokens`).
    fn unknown_key(&self, key: &str) -> String {
        let mut known = Vec::new();
        leaf_keys(&self.tree, "", &mut known);
        let last = |k: &str| k.rsplit('.').next().unwrap_or(k).to_string();
        let near = known
            .iter()
            .map(|k| {
                let whole = strsim::damerau_levenshtein(key, k);
                let part = strsim::damerau_levenshtein(&last(key), &last(k));
                (whole.min(part), k)
            })
            .filter(|(d, k)| *d <= (last(k).chars().count() / 3).max(1))
            .min();
        match near {
            Some((_, k)) => format!("unknown configuration key `{key}` (did you mean `{k}`?)"),
            None => format!("unknown configuration key `{key}`"),
        }
    }

    /// The known leaves of `obj` (known keys come from the defaults' tree).
    fn leaves(
        &self,
        obj: &Map<String, Value>,
        prefix: &str,
        out: &mut Vec<(String, Value)>,
        unknown: &mut dyn FnMut(&str) -> Result<()>,
    ) -> Result<()> {
        for (k, v) in obj {
            let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
            match (at(&self.tree, &key), v) {
                (Some(Value::Object(_)), Value::Object(inner)) => self.leaves(inner, &key, out, unknown)?,
                (Some(Value::Object(_)) | None, _) => unknown(&key)?,
                (Some(_), _) => out.push((key, v.clone())),
            }
        }
        Ok(())
    }

    /// Lays leaves on the tree and checks the result; an error names the first key.
    fn lay(&mut self, leaves: Vec<(String, Value)>, layer: Layer) -> std::result::Result<(), (String, String)> {
        let mut tree = self.tree.clone();
        for (key, value) in &leaves {
            set(&mut tree, key, value.clone());
        }
        if Config::deserialize(&tree).is_err() {
            let e = serde_path_to_error::deserialize::<_, Config>(&tree).expect_err("it failed once");
            return Err((e.path().to_string(), e.inner().to_string()));
        }
        self.tree = tree;
        self.layers.push((leaves, layer));
        Ok(())
    }

    /// This builder's layers laid over `base` (a session layer laid later under them):
    /// every key's value is checked on its own, so layers checked once stay valid.
    #[must_use]
    pub fn over(&self, base: &Builder) -> Builder {
        let mut b = base.clone();
        for (leaves, layer) in &self.layers {
            for (key, value) in leaves {
                set(&mut b.tree, key, value.clone());
            }
            b.layers.push((leaves.clone(), *layer));
        }
        b
    }
}

/// Every leaf key of a tree, dotted.
fn leaf_keys(tree: &Value, prefix: &str, out: &mut Vec<String>) {
    if let Value::Object(m) = tree {
        for (k, v) in m {
            let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
            if v.is_object() {
                leaf_keys(v, &key, out);
            } else {
                out.push(key);
            }
        }
    }
}

fn at<'v>(tree: &'v Value, key: &str) -> Option<&'v Value> {
    key.split('.').try_fold(tree, |v, k| v.get(k))
}

fn set(tree: &mut Value, key: &str, value: Value) {
    let mut v = tree;
    let mut parts = key.split('.').peekable();
    while let Some(k) = parts.next() {
        if parts.peek().is_none() {
            v[k] = value;
            return;
        }
        v = &mut v[k];
    }
}

fn flatten(v: &Value, prefix: &str, out: &mut Vec<(String, Value)>) {
    let Value::Object(obj) = v else { return };
    for (k, v) in obj {
        let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
        match v {
            Value::Object(_) => flatten(v, &key, out),
            _ => out.push((key, v.clone())),
        }
    }
}

/// Every configuration key (JSON path) with its default, in `config` order.
pub fn keys() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    flatten(&serde_json::to_value(Config::default()).expect("the defaults serialize"), "", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let e = |v: Value| Builder::default().file(&v, Path::new("c.json")).unwrap_err().to_string();
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
        let e = bad.build_for_session(Path::new("t.jsonl")).unwrap_err().to_string();
        assert_eq!(e, "t.jsonl: session record: `threshold`: threshold 2 is outside (0, 1]");
        let file = serde_json::json!({"workspace": {"allowed_paths": ["src/**"]}, "threshold": 0.9});
        b.file(&file, Path::new("c.json")).unwrap();
        let bad = serde_json::json!({"reanchor": {"write_tools": ["a[" ]}});
        let e = b.clone().file(&bad, Path::new("c.json")).unwrap_err().to_string();
        assert!(e.starts_with("c.json: `reanchor.write_tools`: invalid glob \"a[\""), "{e}");
        let e = b.clone().file(&serde_json::json!({"tokenizer": "o100k"}), Path::new("c.json")).unwrap_err();
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
