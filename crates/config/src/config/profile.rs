//! Profiles (SPEC 12): named presets of how a runtime decides to compact.

use serde::Serialize;
use serde_json::Value;
use std::fmt;

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
    /// Gemini CLI: fires before a request when the last prompt reached half the model's
    /// token limit.
    GeminiCli,
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
            // Gemini CLI's `ChatCompressionService`: before each request, compress when
            // the last response's prompt tokens reach `compressionThreshold` (0.5) of the
            // model's `tokenLimit` (1,048,576; 256,000 for Gemma 4).
            Profile::GeminiCli => serde_json::json!({
                "runtime": {"kind": "conversation", "native_compaction": true,
                            "context_window": crate::formats::gemini_cli::DEFAULT_TOKEN_LIMIT},
                "threshold": 0.5,
                "trigger": {"evaluate_at": "model-calls", "estimator": "gemini-cli"}
            }),
        }
    }

    /// The preset for the agent version a session recorded: the table's row for that
    /// version laid over [`Profile::preset`]; with a warning naming a version the table
    /// does not hold (the newest row is taken).
    pub fn preset_for(self, version: Option<&str>) -> (Value, Option<String>) {
        let mut preset = self.preset();
        let rows = crate::formats::models::profile_rows(self.as_str());
        let Some(newest) = rows.first() else { return (preset, None) };
        let (row, warning) = match version {
            None => (newest, None),
            Some(v) => match rows.iter().find(|r| r.matches_version(v)) {
                Some(row) => (row, None),
                None => (
                    newest,
                    Some(format!(
                        "the {self} profile was measured on {}; the session's version {} is not among them: using {}'s trigger",
                        rows.iter().map(|r| r.measured.as_str()).collect::<Vec<_>>().join(", "),
                        crate::ui::escape(v),
                        newest.measured
                    )),
                ),
            },
        };
        merge(&mut preset, &row.preset);
        (preset, warning)
    }
}

/// Lays `over`'s leaves on `base`.
fn merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                merge(b.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (b, o) => *b = o.clone(),
    }
}

impl Profile {
    /// The profile of the agent that wrote an input format (`rivumi` for the others).
    pub fn of_format(format: crate::formats::InputFormat) -> Profile {
        match format {
            crate::formats::InputFormat::ClaudeCode => Profile::ClaudeCode,
            crate::formats::InputFormat::Codex => Profile::Codex,
            crate::formats::InputFormat::GeminiCli => Profile::GeminiCli,
            _ => Profile::Rivumi,
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
