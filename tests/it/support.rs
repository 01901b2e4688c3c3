//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::process::Output;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The real binary with an environment that does not depend on the machine.
pub fn cmd() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("rivumi-compact").expect("binary built");
    c.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).env("NO_COLOR", "1").current_dir(root());
    c
}

pub fn run(args: &[&str]) -> Output {
    cmd().args(args).output().expect("runs")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Writes `content` to a fresh temporary file named `name` and returns its dir and path.
pub fn temp_file(name: &str, content: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    std::fs::write(&path, content).expect("write");
    (dir, path)
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A Codex rollout's `response_item` record.
pub fn codex_item(payload: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"timestamp": "2026-12-07T10:00:00.000Z", "type": "response_item", "payload": payload})
}

/// A Codex rollout's message of `role` (`input_text`, or `output_text` for the assistant).
pub fn codex_message(role: &str, text: &str) -> serde_json::Value {
    let kind = if role == "assistant" { "output_text" } else { "input_text" };
    codex_item(serde_json::json!({"type": "message", "role": role, "content": [{"type": kind, "text": text}]}))
}

/// Records as JSON Lines, each line ended.
pub fn jsonl(records: &[serde_json::Value]) -> String {
    records.iter().map(|r| format!("{r}\n")).collect()
}
