//! Inputs → jobs → results, in input order: a pool of `--jobs` threads, a progress
//! bar on a terminal, and a graceful stop on a signal (see [`crate::signals`]):
//! files being written finish, no new one starts.

use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

/// Runs `f` over `items` on `jobs` threads; `None` for items skipped after a signal.
/// Results come back in input order whatever `jobs` is.
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
    let results = pool(jobs).install(|| {
        items
            .par_iter()
            .map(|item| {
                if crate::signals::interrupted() {
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

/// A pool of `jobs` threads (the caller caps `jobs` to the machine's cores); one
/// thread when the system refuses more.
pub fn pool(jobs: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .or_else(|_| rayon::ThreadPoolBuilder::new().num_threads(1).build())
        .expect("a thread pool of one thread")
}
