//! Inputs → jobs → results, in input order: a pool of `--jobs` threads, a progress
//! bar on a terminal, and a clean stop on SIGINT (finished files stay, nothing partial).

use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Installs the SIGINT handler once: the batch stops taking new files, files being
/// written finish their atomic rename or are dropped with their temporary file.
pub fn install_interrupt_handler() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let _ = ctrlc::set_handler(|| {
            if INTERRUPTED.swap(true, Ordering::SeqCst) {
                std::process::exit(130); // a second ^C: stop now
            }
        });
    });
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Runs `f` over `items` on `jobs` threads (0: every core); `None` for items skipped
/// after an interrupt. Results come back in input order whatever `jobs` is.
pub fn map<I: Sync, R: Send>(
    items: &[I],
    jobs: usize,
    progress: bool,
    f: impl Fn(&I) -> R + Sync + Send,
) -> Vec<Option<R>> {
    let bar = progress.then(|| {
        let bar = ProgressBar::new(items.len() as u64);
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} files  {rate}  ETA {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .with_key("rate", |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{:.0} files/s", s.per_sec());
                }),
        );
        bar
    });
    let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build().expect("a thread pool");
    let results = pool.install(|| {
        items
            .par_iter()
            .map(|item| {
                if interrupted() {
                    return None;
                }
                let r = f(item);
                if let Some(b) = &bar {
                    b.inc(1);
                }
                Some(r)
            })
            .collect()
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    results
}
