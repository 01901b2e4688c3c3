//! Inputs → jobs → results, in input order, streamed: `--jobs` threads process a window
//! of [`WINDOW`] inputs while the results of the window before are handed to the caller
//! in order, so outputs, warnings and errors appear as files finish and memory does not
//! grow with the number of inputs. A progress bar shows on a terminal; after a signal (see
//! [`crate::signals`]) no new input starts.

use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// How many inputs are processed together (results are held for two windows at most).
pub const WINDOW: usize = 256;

/// Runs `f` over `items` on `jobs` threads and calls `sink` with each index and result
/// in input order (`None` for items not started after a signal or a stop). `sink`
/// returns false to stop the batch (a closed stdout): no new item starts.
pub fn for_each<I: Sync, R: Send>(
    items: &[I],
    jobs: usize,
    progress: bool,
    f: impl Fn(&I) -> R + Sync,
    mut sink: impl FnMut(usize, Option<R>) -> bool,
) {
    let bar = progress.then(|| progress_bar(items.len()));
    let pool = pool(jobs.max(1));
    let stop = AtomicBool::new(false);
    let one = |item: &I| {
        if stop.load(Ordering::SeqCst) || crate::signals::interrupted() {
            return None;
        }
        let r = f(item);
        if let Some(b) = &bar {
            b.inc(1);
        }
        Some(r)
    };
    // A window at a time: its items run in parallel, then are reported in order while
    // the next window runs, so at most two windows of results are held.
    let windows: Vec<&[I]> = items.chunks(WINDOW).collect();
    let mut ready: Option<Vec<Option<R>>> = None;
    let mut at = 0;
    for k in 0..=windows.len() {
        let next = windows.get(k).copied();
        ready = std::thread::scope(|scope| {
            let (pool, one) = (&pool, &one);
            let running = next.map(|w| scope.spawn(move || pool.install(|| w.par_iter().map(one).collect::<Vec<_>>())));
            for r in ready.take().into_iter().flatten() {
                if !stop.load(Ordering::SeqCst) && !sink(at, r) {
                    stop.store(true, Ordering::SeqCst);
                }
                at += 1;
            }
            running.map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
        });
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}

fn progress_bar(len: usize) -> ProgressBar {
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} files  {rate}  ETA {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .with_key("rate", |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0} files/s", s.per_sec());
            }),
    );
    bar
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_input_order_whatever_the_jobs() {
        let items: Vec<usize> = (0..2000).collect();
        for jobs in [1, 2, 7] {
            let mut seen = Vec::new();
            // Later items finish first: reordering is needed and bounded.
            for_each(
                &items,
                jobs,
                false,
                |&i| i * 2,
                |i, r| {
                    seen.push((i, r));
                    true
                },
            );
            let want: Vec<(usize, Option<usize>)> = items.iter().map(|&i| (i, Some(i * 2))).collect();
            assert_eq!(seen, want, "jobs {jobs}");
        }
    }

    #[test]
    fn a_sink_can_stop_the_batch() {
        let items: Vec<usize> = (0..5000).collect();
        let started = std::sync::atomic::AtomicUsize::new(0);
        let mut reported = 0;
        for_each(
            &items,
            2,
            false,
            |_| started.fetch_add(1, Ordering::SeqCst),
            |i, _| {
                reported += 1;
                i < 10
            },
        );
        assert_eq!(reported, 11);
        assert!(started.load(Ordering::SeqCst) <= 3 * WINDOW, "no new window after the stop");
    }
}
