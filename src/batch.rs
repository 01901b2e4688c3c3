//! Inputs → jobs → results, in input order, streamed: `--jobs` worker threads take
//! inputs in order, and each result is handed to the caller as soon as every earlier one
//! has been, so outputs, warnings and errors appear as files finish. Workers run at most
//! [`WINDOW`] inputs ahead of the oldest unreported one, so memory does not grow with the
//! number of inputs. A progress bar shows on a terminal; after a signal (see
//! [`crate::signals`]) no new input starts.

use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

/// How many inputs may be done or in progress beyond the oldest unreported one.
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
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    // The index of the oldest result not yet given to `sink`.
    let reported = (Mutex::new(0usize), Condvar::new());
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Option<R>)>();
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, items.len().max(1)) {
            let tx = tx.clone();
            let (next, stop, reported, f, bar) = (&next, &stop, &reported, &f, &bar);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= items.len() {
                    return;
                }
                let (lock, ready) = reported;
                let mut oldest = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                while i >= *oldest + WINDOW && !stop.load(Ordering::SeqCst) {
                    oldest = ready.wait(oldest).unwrap_or_else(std::sync::PoisonError::into_inner);
                }
                drop(oldest);
                let skip = stop.load(Ordering::SeqCst) || crate::signals::interrupted();
                let r = (!skip).then(|| f(&items[i]));
                if let (Some(b), false) = (bar, skip) {
                    b.inc(1);
                }
                if tx.send((i, r)).is_err() {
                    return;
                }
            });
        }
        drop(tx);
        let mut pending = BTreeMap::new();
        let mut want = 0;
        for (i, r) in rx {
            pending.insert(i, r);
            while let Some(r) = pending.remove(&want) {
                if !stop.load(Ordering::SeqCst) && !sink(want, r) {
                    stop.store(true, Ordering::SeqCst);
                }
                want += 1;
                let (lock, ready) = &reported;
                *lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = want;
                ready.notify_all();
            }
        }
    });
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
        let started = AtomicUsize::new(0);
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
        assert!(started.load(Ordering::SeqCst) < 11 + WINDOW + 4, "no new item after the stop");
    }
}
