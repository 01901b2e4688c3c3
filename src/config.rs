//! Configuration (SPEC 2): the keys, their defaults, and the layers that set them —
//! defaults < session record (or importer) < `--config` file < command-line flags —
//! with the layer each value came from.

use crate::error::{Error, Result};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Layer {
    Default,
    Session,
    ConfigFile,
    Flag,
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layer::Default => "default",
            Layer::Session => "session",
            Layer::ConfigFile => "config file",
            Layer::Flag => "flag",
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeKind {
    Conversation,
    AgentRunner,
}

impl RuntimeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RuntimeKind::Conversation => "conversation",
            RuntimeKind::AgentRunner => "agent-runner",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tokenizer {
    Heuristic,
    O200k,
    Cl100k,
}

impl Tokenizer {
    pub fn as_str(self) -> &'static str {
        match self {
            Tokenizer::Heuristic => "heuristic",
            Tokenizer::O200k => "o200k",
            Tokenizer::Cl100k => "cl100k",
        }
    }
}

/// Every configuration key, as its JSON path, in the order `config` prints them.
pub const KEYS: &[&str] = &[
    "runtime.kind",
    "runtime.native_compaction",
    "runtime.context_window",
    "task.max_total_tokens",
    "threshold",
    "fallback.protect_first",
    "fallback.retain_last",
    "fallback.min_eligible",
    "summary.preview_chars",
    "summary.max_items",
    "summary.max_chars",
    "checkpoint.retain_turns",
    "reanchor.max_entries",
    "reanchor.max_chars",
    "reanchor.write_tools",
    "reanchor.shell_tools",
    "reanchor.path_keys",
    "workspace.allowed_paths",
    "workspace.root",
    "workspace.mode",
    "workspace.permission",
    "verification",
    "remaining_steps",
    "tokenizer",
    "hooks.pre_compact",
    "hooks.post_compact",
    "hooks.timeout_secs",
    "summarizer",
    "summarizer_timeout_secs",
];

const SECTIONS: &[&str] = &["runtime", "task", "fallback", "summary", "checkpoint", "reanchor", "workspace", "hooks"];

/// Keys a transcript may not set: they choose what runs on the user's machine.
const EXECUTABLE: &[&str] =
    &["hooks.pre_compact", "hooks.post_compact", "hooks.timeout_secs", "summarizer", "summarizer_timeout_secs"];

pub const DEFAULT_WRITE_TOOLS: &[&str] = &[
    "write*",
    "edit*",
    "*_edit",
    "str_replace*",
    "create_file",
    "apply_patch",
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
];
pub const DEFAULT_SHELL_TOOLS: &[&str] = &["bash", "shell", "exec_command", "local_shell", "Bash"];
pub const DEFAULT_PATH_KEYS: &[&str] = &["path", "file_path", "filename", "notebook_path"];

#[derive(Debug, Clone)]
pub struct Config {
    pub runtime: RuntimeKind,
    pub native_compaction: bool,
    pub context_window: Option<u64>,
    pub max_total_tokens: Option<u64>,
    /// The threshold in basis points (0.85 → 8500), so comparisons are exact.
    pub threshold_bp: u64,
    pub protect_first: usize,
    pub retain_last: usize,
    pub min_eligible: usize,
    pub preview_chars: usize,
    pub max_items: usize,
    pub max_chars: usize,
    pub retain_turns: usize,
    pub reanchor_max_entries: usize,
    pub reanchor_max_chars: usize,
    pub write_tools: Vec<String>,
    pub shell_tools: Vec<String>,
    pub path_keys: Vec<String>,
    pub allowed_paths: Vec<String>,
    pub root: Option<String>,
    pub mode: Option<String>,
    pub permission: Option<String>,
    pub verification: Vec<String>,
    pub remaining_steps: Option<Vec<String>>,
    pub tokenizer: Tokenizer,
    pub pre_compact: Option<String>,
    pub post_compact: Option<String>,
    pub hook_timeout_secs: u64,
    pub summarizer: Option<String>,
    pub summarizer_timeout_secs: u64,
    /// Which layer set each key.
    pub sources: BTreeMap<&'static str, Layer>,
    /// Things worth telling the user (ignored session keys).
    pub warnings: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        Config {
            runtime: RuntimeKind::AgentRunner,
            native_compaction: false,
            context_window: None,
            max_total_tokens: None,
            threshold_bp: 8500,
            protect_first: 2,
            retain_last: 4,
            min_eligible: 2,
            preview_chars: 240,
            max_items: 40,
            max_chars: 8000,
            retain_turns: 2,
            reanchor_max_entries: 20,
            reanchor_max_chars: 4000,
            write_tools: strings(DEFAULT_WRITE_TOOLS),
            shell_tools: strings(DEFAULT_SHELL_TOOLS),
            path_keys: strings(DEFAULT_PATH_KEYS),
            allowed_paths: Vec::new(),
            root: None,
            mode: None,
            permission: None,
            verification: Vec::new(),
            remaining_steps: None,
            tokenizer: Tokenizer::Heuristic,
            pre_compact: None,
            post_compact: None,
            hook_timeout_secs: 60,
            summarizer: None,
            summarizer_timeout_secs: 60,
            sources: KEYS.iter().map(|k| (*k, Layer::Default)).collect(),
            warnings: Vec::new(),
        }
    }
}

impl Config {
    /// The threshold as a number (for decisions and messages).
    pub fn threshold(&self) -> f64 {
        self.threshold_bp as f64 / 10_000.0
    }

    /// Applies a session record (or an importer's session layer). Keys that are not
    /// configuration are ignored; executable keys are ignored with a warning.
    pub fn apply_session(&mut self, obj: &Map<String, Value>, file: &Path) -> Result<()> {
        let mut pairs = Vec::new();
        flatten(obj, "", &mut pairs, &mut |_| Ok(()))?;
        for (key, value) in pairs {
            if EXECUTABLE.contains(&key.as_str()) {
                self.warnings
                    .push(format!("ignored `{key}` in the session record: a transcript never chooses what runs"));
                continue;
            }
            if let Some(k) = known(&key) {
                self.set(k, value, Layer::Session)
                    .map_err(|m| Error::bad_input(file, format!("session record: `{key}`: {m}")))?;
            }
        }
        Ok(())
    }

    /// Applies a `--config` JSON file's object: unknown keys are errors.
    pub fn apply_file(&mut self, value: &Value, file: &Path) -> Result<()> {
        let Value::Object(obj) = value else {
            return Err(Error::bad_input(file, "expected a JSON object of configuration keys"));
        };
        let mut pairs = Vec::new();
        let unknown = |key: &str| Err(Error::bad_input(file, format!("unknown configuration key `{key}`")));
        flatten(obj, "", &mut pairs, &mut |k| unknown(k))?;
        for (key, value) in pairs {
            let Some(k) = known(&key) else {
                return unknown(&key);
            };
            self.set(k, value, Layer::ConfigFile).map_err(|m| Error::bad_input(file, format!("`{key}`: {m}")))?;
        }
        Ok(())
    }

    /// Applies one flag value; the caller reports an error as a usage error.
    pub fn apply_flag(&mut self, key: &'static str, value: Value) -> std::result::Result<(), String> {
        self.set(key, value, Layer::Flag)
    }

    fn set(&mut self, key: &'static str, v: Value, layer: Layer) -> std::result::Result<(), String> {
        match key {
            "runtime.kind" => {
                self.runtime = match v.as_str() {
                    Some("conversation") => RuntimeKind::Conversation,
                    Some("agent-runner") => RuntimeKind::AgentRunner,
                    _ => return Err("expected \"conversation\" or \"agent-runner\"".into()),
                }
            }
            "runtime.native_compaction" => self.native_compaction = v.as_bool().ok_or("expected true or false")?,
            "runtime.context_window" => self.context_window = opt_size(&v)?,
            "task.max_total_tokens" => self.max_total_tokens = opt_size(&v)?,
            "threshold" => self.threshold_bp = threshold_bp(&v)?,
            "fallback.protect_first" => self.protect_first = size(&v)?,
            "fallback.retain_last" => self.retain_last = size(&v)?,
            "fallback.min_eligible" => self.min_eligible = size(&v)?,
            "summary.preview_chars" => self.preview_chars = positive(&v)?,
            "summary.max_items" => self.max_items = size(&v)?,
            "summary.max_chars" => self.max_chars = positive(&v)?,
            "checkpoint.retain_turns" => self.retain_turns = size(&v)?,
            "reanchor.max_entries" => self.reanchor_max_entries = positive(&v)?,
            "reanchor.max_chars" => self.reanchor_max_chars = positive(&v)?,
            "reanchor.write_tools" => self.write_tools = strings(&v)?,
            "reanchor.shell_tools" => self.shell_tools = strings(&v)?,
            "reanchor.path_keys" => self.path_keys = strings(&v)?,
            "workspace.allowed_paths" => self.allowed_paths = strings(&v)?,
            "workspace.root" => self.root = opt_string(&v)?,
            "workspace.mode" => self.mode = opt_string(&v)?,
            "workspace.permission" => self.permission = opt_string(&v)?,
            "verification" => self.verification = strings(&v)?,
            "remaining_steps" => self.remaining_steps = if v.is_null() { None } else { Some(strings(&v)?) },
            "tokenizer" => {
                self.tokenizer = match v.as_str() {
                    Some("heuristic") => Tokenizer::Heuristic,
                    Some("o200k") => Tokenizer::O200k,
                    Some("cl100k") => Tokenizer::Cl100k,
                    _ => return Err("expected \"heuristic\", \"o200k\" or \"cl100k\"".into()),
                }
            }
            "hooks.pre_compact" => self.pre_compact = opt_string(&v)?,
            "hooks.post_compact" => self.post_compact = opt_string(&v)?,
            "hooks.timeout_secs" => self.hook_timeout_secs = size(&v)? as u64,
            "summarizer" => self.summarizer = opt_string(&v)?,
            "summarizer_timeout_secs" => self.summarizer_timeout_secs = size(&v)? as u64,
            _ => return Err(format!("unknown configuration key `{key}`")),
        }
        self.sources.insert(key, layer);
        Ok(())
    }

    /// The current value of a key, as JSON.
    pub fn get(&self, key: &str) -> Value {
        match key {
            "runtime.kind" => json!(self.runtime.as_str()),
            "runtime.native_compaction" => json!(self.native_compaction),
            "runtime.context_window" => json!(self.context_window),
            "task.max_total_tokens" => json!(self.max_total_tokens),
            "threshold" => json!(self.threshold()),
            "fallback.protect_first" => json!(self.protect_first),
            "fallback.retain_last" => json!(self.retain_last),
            "fallback.min_eligible" => json!(self.min_eligible),
            "summary.preview_chars" => json!(self.preview_chars),
            "summary.max_items" => json!(self.max_items),
            "summary.max_chars" => json!(self.max_chars),
            "checkpoint.retain_turns" => json!(self.retain_turns),
            "reanchor.max_entries" => json!(self.reanchor_max_entries),
            "reanchor.max_chars" => json!(self.reanchor_max_chars),
            "reanchor.write_tools" => json!(self.write_tools),
            "reanchor.shell_tools" => json!(self.shell_tools),
            "reanchor.path_keys" => json!(self.path_keys),
            "workspace.allowed_paths" => json!(self.allowed_paths),
            "workspace.root" => json!(self.root),
            "workspace.mode" => json!(self.mode),
            "workspace.permission" => json!(self.permission),
            "verification" => json!(self.verification),
            "remaining_steps" => json!(self.remaining_steps),
            "tokenizer" => json!(self.tokenizer.as_str()),
            "hooks.pre_compact" => json!(self.pre_compact),
            "hooks.post_compact" => json!(self.post_compact),
            "hooks.timeout_secs" => json!(self.hook_timeout_secs),
            "summarizer" => json!(self.summarizer),
            "summarizer_timeout_secs" => json!(self.summarizer_timeout_secs),
            _ => Value::Null,
        }
    }

    /// The merged configuration as JSON: `{key: {"value": …, "from": layer}}` in key order.
    pub fn provenance(&self) -> Value {
        let mut out = Map::new();
        for key in KEYS {
            let from = self.sources.get(key).copied().unwrap_or(Layer::Default);
            out.insert(key.to_string(), json!({"value": self.get(key), "from": from.to_string()}));
        }
        Value::Object(out)
    }
}

fn known(key: &str) -> Option<&'static str> {
    KEYS.iter().copied().find(|k| *k == key)
}

/// Turns `{"runtime":{"kind":…}}` into `("runtime.kind", …)` pairs. Objects are walked
/// only under known sections; `unknown` decides what an unknown section key means.
fn flatten(
    obj: &Map<String, Value>,
    prefix: &str,
    out: &mut Vec<(String, Value)>,
    unknown: &mut dyn FnMut(&str) -> Result<()>,
) -> Result<()> {
    for (k, v) in obj {
        let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
        match v {
            Value::Object(inner) if prefix.is_empty() && SECTIONS.contains(&k.as_str()) => {
                flatten(inner, &key, out, unknown)?
            }
            _ if known(&key).is_some() => out.push((key, v.clone())),
            _ => unknown(&key)?,
        }
    }
    Ok(())
}

fn size(v: &Value) -> std::result::Result<usize, String> {
    v.as_u64().map(|n| n as usize).ok_or_else(|| format!("expected a non-negative integer, found {v}"))
}

fn positive(v: &Value) -> std::result::Result<usize, String> {
    match size(v)? {
        0 => Err("expected a positive integer, found 0".into()),
        n => Ok(n),
    }
}

fn opt_size(v: &Value) -> std::result::Result<Option<u64>, String> {
    if v.is_null() {
        return Ok(None);
    }
    match v.as_u64() {
        Some(0) | None => Err(format!("expected a positive integer, found {v}")),
        Some(n) => Ok(Some(n)),
    }
}

fn opt_string(v: &Value) -> std::result::Result<Option<String>, String> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        _ => Err(format!("expected a string, found {v}")),
    }
}

fn strings(v: &Value) -> std::result::Result<Vec<String>, String> {
    let arr = v.as_array().ok_or_else(|| format!("expected an array of strings, found {v}"))?;
    arr.iter().map(|s| s.as_str().map(str::to_string).ok_or_else(|| format!("expected a string, found {s}"))).collect()
}

/// A threshold in (0, 1] with at most 4 decimals, as basis points.
pub fn threshold_bp(v: &Value) -> std::result::Result<u64, String> {
    let f = v.as_f64().ok_or_else(|| format!("expected a number in (0, 1], found {v}"))?;
    parse_threshold(f, &v.to_string())
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

#[cfg(test)]
mod tests {
    use super::parse_threshold;

    #[test]
    fn thresholds_are_checked_on_their_decimals() {
        for (f, want) in [(0.85, Some(8500)), (1.0, Some(10_000)), (0.0001, Some(1)), (0.1234, Some(1234))] {
            assert_eq!(parse_threshold(f, "x").ok(), want, "{f}");
        }
        for f in [0.0, -0.5, 1.0001, 0.00001, 0.85000000001, 0.850000000000001, f64::NAN] {
            assert!(parse_threshold(f, "x").is_err(), "{f}");
        }
    }
}
