//! Running the user's hooks and summarizer (SPEC 6, 7): `sh -c CMD`, JSON on stdin,
//! bounded by a timeout. Only commands from the user's configuration ever run here.

use serde_json::Value;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;
use wait_timeout::ChildExt;

/// What a finished command produced.
#[derive(Debug)]
pub struct Finished {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// The verdict of a pre-compact hook.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Deny(String),
}

/// Runs `sh -c cmd` with `input` on stdin; an error for a spawn failure or a timeout.
pub fn run_command(cmd: &str, input: &[u8], timeout_secs: u64) -> Result<Finished, String> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start `{cmd}`: {e}"))?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input = input.to_vec();
    // Feed stdin and drain the pipes on threads so a chatty command cannot block us.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let mut out = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let out_t = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let status = match child.wait_timeout(Duration::from_secs(timeout_secs)).map_err(|e| e.to_string())? {
        Some(status) => status,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("`{cmd}` timed out after {timeout_secs}s"));
        }
    };
    let _ = writer.join();
    let stdout = String::from_utf8_lossy(&out_t.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err_t.join().unwrap_or_default()).into_owned();
    Ok(Finished { code: status.code(), stdout, stderr })
}

/// Runs a pre-compact hook: exit 0 allows unless stdout says `{"decision":"deny"}`;
/// exit 2 denies with stderr as the reason; anything else is a failure.
pub fn pre_compact(cmd: &str, payload: &Value, timeout_secs: u64) -> Result<Verdict, String> {
    let f = run_command(cmd, payload.to_string().as_bytes(), timeout_secs)?;
    match f.code {
        Some(0) => Ok(json_verdict(&f.stdout)),
        Some(2) => Ok(Verdict::Deny(first_line(&f.stderr, "denied by exit code 2"))),
        Some(c) => {
            Err(format!("pre-compact hook `{cmd}` failed with exit code {c}: {}", first_line(&f.stderr, "no message")))
        }
        None => Err(format!("pre-compact hook `{cmd}` was killed by a signal")),
    }
}

fn json_verdict(stdout: &str) -> Verdict {
    let Ok(v) = serde_json::from_str::<Value>(stdout.trim()) else {
        return Verdict::Allow;
    };
    if v.get("decision").and_then(Value::as_str) == Some("deny") {
        let reason = v.get("reason").and_then(Value::as_str).unwrap_or("denied by the hook's JSON decision");
        return Verdict::Deny(reason.to_string());
    }
    Verdict::Allow
}

/// Runs a post-compact hook; an error is reported as a warning by the caller.
pub fn post_compact(cmd: &str, payload: &Value, timeout_secs: u64) -> Result<(), String> {
    let f = run_command(cmd, payload.to_string().as_bytes(), timeout_secs)?;
    match f.code {
        Some(0) => Ok(()),
        Some(c) => {
            Err(format!("post-compact hook `{cmd}` failed with exit code {c}: {}", first_line(&f.stderr, "no message")))
        }
        None => Err(format!("post-compact hook `{cmd}` was killed by a signal")),
    }
}

fn first_line(s: &str, default: &str) -> String {
    let line = s.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or(default);
    crate::render::escape_controls(line)
}
