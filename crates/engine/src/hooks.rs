//! Running the user's hooks and summarizer (SPEC 6, 7): `sh -c CMD`, JSON on stdin,
//! bounded by a timeout. Only commands from the user's configuration ever run here.

use crate::error::{Command as Which, CommandFailure};
use serde_json::Value;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;
use wait_timeout::ChildExt;

/// The most of a hook's or summarizer's stdout, and of its stderr, that is kept: the
/// rest is read and dropped, so a command that prints without end cannot fill memory.
pub const OUTPUT_LIMIT: usize = 1 << 20;

/// What a finished command produced (each stream cut at [`OUTPUT_LIMIT`] bytes).
#[derive(Debug)]
pub struct Finished {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// Whether stdout went past [`OUTPUT_LIMIT`] and was cut.
    pub stdout_cut: bool,
}

/// The verdict of a pre-compact hook.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Deny(String),
}

/// Runs `sh -c cmd` with `input` on stdin; an error for a spawn failure or a timeout.
pub fn run_command(cmd: &str, input: &[u8], timeout_secs: u64) -> Result<Finished, CommandFailure> {
    // Its own process group, so a timeout kills what it started too.
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(CommandFailure::Start)?;
    let pgid = child.id() as i32;
    let _group = crate::signals::track_group(pgid);
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input = input.to_vec();
    // Feed stdin and drain the pipes on threads so a chatty command cannot block us.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out_rx = drain(child.stdout.take().expect("piped stdout"));
    let err_rx = drain(child.stderr.take().expect("piped stderr"));
    let Some(status) = child.wait_timeout(Duration::from_secs(timeout_secs)).map_err(CommandFailure::Wait)? else {
        // SAFETY: kill(2) with a negative pid signals the group this hook leads.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = child.wait();
        return Err(CommandFailure::TimedOut(timeout_secs));
    };
    let _ = writer.join();
    // A background process the command left behind may hold the pipes open: read what
    // came within a grace period and move on.
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    let left = || deadline.saturating_duration_since(std::time::Instant::now());
    let (stdout, stdout_cut) = out_rx.collect(left());
    let (stderr, _) = err_rx.collect(left());
    Ok(Finished { code: status.code(), stdout, stderr, stdout_cut })
}

/// A pipe being read on its own thread.
struct Drained {
    bytes: std::sync::Arc<std::sync::Mutex<(Vec<u8>, bool)>>,
    done: std::sync::mpsc::Receiver<()>,
}

impl Drained {
    /// What was read once the pipe closed, or by `wait` at the latest, and whether
    /// it was cut at [`OUTPUT_LIMIT`].
    fn collect(&self, wait: Duration) -> (String, bool) {
        let _ = self.done.recv_timeout(wait);
        let (bytes, cut) = self.bytes.lock().map(|b| b.clone()).unwrap_or_default();
        (String::from_utf8_lossy(&bytes).into_owned(), cut)
    }
}

/// Reads a pipe to its end on a thread, keeping what arrived so far available.
fn drain(mut pipe: impl Read + Send + 'static) -> Drained {
    let bytes = std::sync::Arc::new(std::sync::Mutex::new((Vec::new(), false)));
    let (tx, done) = std::sync::mpsc::channel();
    let sink = bytes.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            if let Ok(mut b) = sink.lock() {
                let room = OUTPUT_LIMIT.saturating_sub(b.0.len());
                b.0.extend_from_slice(&buf[..n.min(room)]);
                b.1 |= n > room;
            }
        }
        let _ = tx.send(());
    });
    Drained { bytes, done }
}

/// Runs a pre-compact hook: exit 0 allows unless stdout says `{"decision":"deny"}`;
/// exit 2 denies with stderr as the reason; anything else is a failure.
pub fn pre_compact(cmd: &str, payload: &str, timeout_secs: u64) -> crate::error::Result<Verdict> {
    let failed = |failure| crate::error::Error::Command { which: Which::PreCompactHook, command: cmd.into(), failure };
    let f = run_command(cmd, payload.as_bytes(), timeout_secs).map_err(failed)?;
    match f.code {
        Some(0) => Ok(json_verdict(&f.stdout)),
        Some(2) => Ok(Verdict::Deny(first_line(&f.stderr, "denied by exit code 2"))),
        Some(code) => Err(failed(CommandFailure::Exit { code, stderr: first_line(&f.stderr, "no message") })),
        None => Err(failed(CommandFailure::Killed { stderr: first_line(&f.stderr, "no message") })),
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
pub fn post_compact(cmd: &str, payload: &str, timeout_secs: u64) -> crate::error::Result<()> {
    let failed = |failure| crate::error::Error::Command { which: Which::PostCompactHook, command: cmd.into(), failure };
    let f = run_command(cmd, payload.as_bytes(), timeout_secs).map_err(failed)?;
    match f.code {
        Some(0) => Ok(()),
        Some(code) => Err(failed(CommandFailure::Exit { code, stderr: first_line(&f.stderr, "no message") })),
        None => Err(failed(CommandFailure::Killed { stderr: first_line(&f.stderr, "no message") })),
    }
}

fn first_line(s: &str, default: &str) -> String {
    let line = s.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or(default);
    crate::ui::escape(line)
}
