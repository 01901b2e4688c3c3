//! Source formats: detection and the importers that map each into canonical JSONL
//! (with a `session` record carrying the importer's configuration layer).

mod claude_code;
mod codex;
mod common;
pub mod openai;
mod openhands;
mod swe_agent;

pub use claude_code::context_window as claude_context_window;

use crate::error::{Error, Result};
use std::path::Path;

/// The formats `--input-format` accepts.
pub const FORMATS: &[&str] = &["auto", "rivumi", "claude-code", "codex", "openai", "swe-agent", "openhands"];

/// A transcript in canonical form, with the format it came from and importer warnings.
pub struct Canonical {
    pub bytes: crate::source::Source,
    pub format: String,
    pub warnings: Vec<String>,
}

/// Turns an input into canonical JSONL. Canonical input is returned as it is (byte
/// fidelity); `auto` detects the format from the first records.
pub fn import(raw: crate::source::Source, file: &Path, format: &str) -> Result<Canonical> {
    let format = if format == "auto" { detect(&raw) } else { format };
    let imported = match format {
        "rivumi" => return Ok(Canonical { bytes: raw, format: "rivumi".into(), warnings: Vec::new() }),
        "claude-code" => claude_code::import(&raw, file)?,
        "codex" => codex::import(&raw, file)?,
        "swe-agent" => swe_agent::import(&raw, file)?,
        "openhands" => openhands::import(&raw, file)?,
        "openai" => {
            return Err(Error::Usage("openai files are datasets: use `run` (one output line per input line)".into()))
        }
        other => return Err(Error::bad_input(file, format!("the {other} importer is not available in this version"))),
    };
    let warnings = imported.warnings(file, format);
    Ok(Canonical { bytes: imported.to_jsonl().into(), format: format.into(), warnings })
}

/// Detects the format from the first non-blank record.
pub fn detect(raw: &[u8]) -> &'static str {
    let text = String::from_utf8_lossy(&raw[..raw.len().min(64 * 1024)]);
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.starts_with('[') {
        return "openhands";
    }
    if trimmed.starts_with('{')
        && trimmed.lines().next().is_none_or(|l| serde_json::from_str::<serde_json::Value>(l).is_err())
    {
        // A pretty-printed JSON document: SWE-agent trajectories and OpenHands dumps.
        return if trimmed.contains("\"history\"") && trimmed.contains("\"tool_call_ids\"") {
            "swe-agent"
        } else if trimmed.contains("\"history\"") {
            "openhands"
        } else {
            "rivumi"
        };
    }
    let Some(first) = trimmed.lines().find(|l| !l.trim().is_empty()) else {
        return "rivumi";
    };
    if first.trim_start().starts_with("{\"messages\"") {
        return "openai"; // even when the first line is longer than what was read
    }
    let Ok(v) = serde_json::from_str::<serde_json::Value>(first) else {
        return "rivumi";
    };
    let ty = v.get("type").and_then(|t| t.as_str()).unwrap_or("");
    if v.get("payload").is_some()
        && ["session_meta", "turn_context", "response_item", "event_msg", "compacted"].contains(&ty)
    {
        return "codex";
    }
    if v.get("sessionId").is_some()
        || v.get("parentUuid").is_some()
        || ["file-history-snapshot", "queue-operation", "summary"].contains(&ty)
    {
        return "claude-code";
    }
    if ty.is_empty() && v.get("messages").is_some() {
        return "openai";
    }
    "rivumi"
}
