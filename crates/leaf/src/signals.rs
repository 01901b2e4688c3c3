//! SIGINT, SIGTERM and SIGHUP (SPEC 11): what is half-made is removed, then the process
//! dies of the signal it got (re-raised, as fd does, so a shell sees 130 or 143).
//!
//! A batch asks for a *graceful* stop: the first signal lets the files being written
//! finish and starts no new one; a second signal (or any signal outside a batch)
//! removes every temporary file and folder still registered here, kills the process
//! groups of running hooks, and re-raises at once.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, RwLock};

/// The signal that asked for a stop, 0 while none did.
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// Whether the first signal only asks the batch to stop taking files.
static GRACEFUL: AtomicBool = AtomicBool::new(false);

/// What a hard stop must undo: temporary paths and hook process groups.
#[derive(Default)]
struct Live {
    paths: Vec<PathBuf>,
    groups: Vec<i32>,
}

fn live() -> MutexGuard<'static, Live> {
    static LIVE: OnceLock<Mutex<Live>> = OnceLock::new();
    LIVE.get_or_init(Mutex::default).lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Read while a set of renames makes an output folder complete, written by a hard stop,
/// so that the stop never lands between two of them. The jobs of a batch commit their
/// folders side by side (a global mutex made them take turns: with two jobs, the renames
/// of 10,000 small files were a serial part of the batch); the stop waits for the
/// commits under way and lets no new one start.
fn commit_lock() -> &'static RwLock<()> {
    static COMMIT: OnceLock<RwLock<()>> = OnceLock::new();
    COMMIT.get_or_init(RwLock::default)
}

/// Installs the handler once (a thread reading the signals, no work in signal context).
pub fn install() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else { return };
        std::thread::spawn(move || {
            for sig in signals.forever() {
                let first = RECEIVED.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst).is_ok();
                if !(first && GRACEFUL.load(Ordering::SeqCst)) {
                    die(sig);
                }
            }
        });
    });
}

/// A batch: the first signal stops taking new work instead of stopping at once.
pub fn graceful() {
    install();
    GRACEFUL.store(true, Ordering::SeqCst);
}

/// Whether a stop was asked for.
pub fn interrupted() -> bool {
    RECEIVED.load(Ordering::SeqCst) != 0
}

/// Ends a batch that was interrupted: cleans up and dies of the signal. Returns when
/// no signal came.
pub fn finish() {
    let sig = RECEIVED.load(Ordering::SeqCst);
    if sig != 0 {
        die(sig);
    }
}

fn die(sig: i32) -> ! {
    let _commit = commit_lock().write();
    let live = std::mem::take(&mut *live());
    for group in live.groups {
        // SAFETY: kill(2) with a negative pid signals a process group we created.
        unsafe { libc::kill(-group, libc::SIGKILL) };
    }
    for p in live.paths {
        let _ = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
    }
    let _ = signal_hook::low_level::emulate_default_handler(sig);
    std::process::exit(128 + sig);
}

/// Registers a temporary path for removal on a hard stop, until the guard is dropped.
pub fn track(path: &Path) -> Tracked {
    live().paths.push(path.to_path_buf());
    Tracked(Some(path.to_path_buf()))
}

pub struct Tracked(Option<PathBuf>);

impl Drop for Tracked {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let mut live = live();
            if let Some(i) = live.paths.iter().rposition(|q| *q == p) {
                live.paths.swap_remove(i);
            }
        }
    }
}

/// Registers a hook's process group, killed on a hard stop, until the guard is dropped.
pub fn track_group(pgid: i32) -> TrackedGroup {
    live().groups.push(pgid);
    TrackedGroup(pgid)
}

pub struct TrackedGroup(i32);

impl Drop for TrackedGroup {
    fn drop(&mut self) {
        live().groups.retain(|g| *g != self.0);
    }
}

/// Runs `f` (a few renames) so that a hard stop happens before it or after it.
pub fn committing<T>(f: impl FnOnce() -> T) -> T {
    let _commit = commit_lock().read().unwrap_or_else(std::sync::PoisonError::into_inner);
    f()
}

#[cfg(test)]
mod tests {
    use super::committing;
    use std::sync::mpsc::channel;
    use std::time::Duration;

    /// Two jobs commit their folders side by side: one inside `committing` waits there
    /// for the other to come in too (with one lock for all, it would wait in vain).
    #[test]
    fn commits_of_two_jobs_overlap() {
        let (a_in, a_seen) = channel();
        let (b_in, b_seen) = channel();
        std::thread::scope(|s| {
            s.spawn(move || {
                a_seen.recv().unwrap();
                committing(|| b_in.send(()).unwrap());
            });
            let overlapped = committing(|| {
                a_in.send(()).unwrap();
                b_seen.recv_timeout(Duration::from_secs(10)).is_ok()
            });
            assert!(overlapped, "the second commit waited for the first to end");
        });
    }
}
