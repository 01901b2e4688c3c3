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
    let format = if format == "auto" { detect_for(file, &raw) } else { format };
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

/// Detects the format of a file from its extension (`.traj` is SWE-agent's, whatever
/// its size) and its head.
pub fn detect_for(path: &Path, head: &[u8]) -> &'static str {
    if path.extension().is_some_and(|e| e == "traj") {
        return "swe-agent";
    }
    detect(head)
}

/// Detects the format from the first non-blank record. `raw` may be only the head of
/// the input, cut anywhere: a first record longer than the head is judged by the keys
/// that came before the cut.
pub fn detect(raw: &[u8]) -> &'static str {
    let text = String::from_utf8_lossy(&raw[..raw.len().min(crate::source::SNIFF_BYTES)]);
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.starts_with('[') {
        return "openhands";
    }
    let Some(first) = trimmed.lines().find(|l| !l.trim().is_empty()) else {
        return "rivumi";
    };
    if first.trim() == "{" {
        // A pretty-printed JSON document: SWE-agent trajectories and OpenHands dumps.
        return if trimmed.contains("\"history\"") && trimmed.contains("\"tool_call_ids\"") {
            "swe-agent"
        } else if trimmed.contains("\"history\"") {
            "openhands"
        } else {
            "rivumi"
        };
    }
    let record = FirstRecord::read(first);
    let has = |k: &str| record.keys.iter().any(|x| x == k);
    let ty = record.ty.as_deref().unwrap_or("");
    if has("payload") && ["session_meta", "turn_context", "response_item", "event_msg", "compacted"].contains(&ty) {
        return "codex";
    }
    if has("sessionId") || has("parentUuid") || ["file-history-snapshot", "queue-operation", "summary"].contains(&ty) {
        return "claude-code";
    }
    if record.ty.is_none() && has("messages") {
        return "openai";
    }
    "rivumi"
}

/// The top-level keys of a record and its `type`, as far as the text goes: keys are
/// recorded as they are met, so a record cut off by the end of the head still tells.
#[derive(Default)]
struct FirstRecord {
    keys: Vec<String>,
    ty: Option<String>,
}

impl FirstRecord {
    fn read(line: &str) -> FirstRecord {
        let mut record = FirstRecord::default();
        let mut de = serde_json::Deserializer::from_str(line);
        let _ = serde::de::DeserializeSeed::deserialize(KeySeed(&mut record), &mut de);
        record
    }
}

struct KeySeed<'r>(&'r mut FirstRecord);

impl<'de> serde::de::DeserializeSeed<'de> for KeySeed<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for KeySeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let is_type = key == "type";
            self.0.keys.push(key.into_owned());
            if is_type {
                if let serde_json::Value::String(s) = map.next_value::<serde_json::Value>()? {
                    self.0.ty = Some(s);
                }
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::detect;

    #[test]
    fn a_first_record_longer_than_the_head_is_still_detected() {
        let long = "x".repeat(crate::source::SNIFF_BYTES * 2);
        let cases = [
            (format!(r#"{{"parentUuid":null,"sessionId":"s","message":{{"content":"{long}"}}}}"#), "claude-code"),
            (format!(r#"{{"timestamp":"t","type":"response_item","payload":{{"text":"{long}"}}}}"#), "codex"),
            (format!(r#"{{"messages":[{{"role":"user","content":"{long}"}}]}}"#), "openai"),
            (format!(r#"{{"type":"message","id":"m","content":"{long}"}}"#), "rivumi"),
        ];
        for (text, want) in cases {
            assert_eq!(detect(text.as_bytes()), want);
        }
    }
}
