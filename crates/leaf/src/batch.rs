//! Inputs → jobs → results, in input order, streamed: one ordered parallel map
//! ([`map_ordered`]) serves the files of a batch and the pieces of a large input; its
//! `jobs` threads each take the next item, and results are handed to the caller in
//! order as soon as the ones before them are, so outputs, warnings and errors appear as
//! files finish and memory does not grow with the number of inputs. A progress bar
//! shows on a terminal; after a signal (see [`crate::signals`]) no new input starts.

use indicatif::{ProgressBar, ProgressStyle};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

/// How far the workers of a batch may run ahead of the first result not yet handed
/// over: the results held at most.
pub const WINDOW: usize = 256;

/// Runs `f` over `items` on `jobs` threads and calls `sink` with each index and result
/// in input order (`None` for items not started after a signal or a stop). `sink`
/// returns false to stop the batch (a closed stdout): no new item starts. The results
/// held waiting for an earlier one are at most [`WINDOW`]; `f` runs with a thread
/// budget ([`threads`]) of one in a worker, of `jobs` when the batch runs inline.
pub fn for_each<I: Sync, R: Send>(
    items: &[I],
    jobs: usize,
    progress: bool,
    f: impl Fn(&I) -> R + Sync,
    mut sink: impl FnMut(usize, Option<R>) -> bool,
) {
    let bar = progress.then(|| progress_bar(items.len()));
    let one = |item: &I| {
        if crate::signals::interrupted() {
            return None;
        }
        let r = f(item);
        if let Some(b) = &bar {
            b.inc(1);
        }
        Some(r)
    };
    with_threads(jobs.max(1), || map_ordered(items, jobs.max(1), WINDOW, one, &mut sink));
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}

thread_local! {
    /// The threads work on this thread may use, when a batch or the caller said.
    static BUDGET: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// The threads a piece of work on this thread may use for itself (the canonical reader
/// parses a large input in pieces on them): one in a worker of a parallel map (the map
/// already keeps every job busy), what [`with_threads`] set, else the machine's cores.
pub fn threads() -> usize {
    BUDGET
        .with(std::cell::Cell::get)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
}

/// Runs `a` and `b` at once when work on this thread may use more than one thread
/// ([`threads`]), else one after the other; each runs with a budget of one thread. A
/// panic in either is the caller's.
pub fn join<A: Send, B>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B) -> (A, B) {
    if threads() <= 1 {
        return (a(), b());
    }
    std::thread::scope(|scope| {
        let first = scope.spawn(|| {
            BUDGET.with(|t| t.set(Some(1)));
            a()
        });
        let second = with_threads(1, b);
        (first.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)), second)
    })
}

/// Runs `f` with a thread budget of `n` on this thread (`--jobs`).
pub fn with_threads<T>(n: usize, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<usize>);
    impl Drop for Restore {
        fn drop(&mut self) {
            BUDGET.with(|b| b.set(self.0));
        }
    }
    let _restore = Restore(BUDGET.with(|b| b.replace(Some(n.max(1)))));
    f()
}

/// An ordered parallel map: `jobs` threads run `work` over `items`, each taking the next
/// item no one has taken, and `sink` gets each result on the calling thread, in item
/// order, as soon as the results before it are sunk. The calling thread is one of the
/// `jobs`: between its own items it hands over every result that is ready, so no thread
/// sits waiting to be woken for each result. At most `in_flight` items are taken and
/// not yet sunk, so the results held stay bounded whatever the order they finish in;
/// `sink` returning false stops the map (no new item starts). A panic in `work` stops
/// the others and goes on in the caller.
pub fn map_ordered<I: Sync, R: Send>(
    items: &[I],
    jobs: usize,
    in_flight: usize,
    work: impl Fn(&I) -> R + Sync,
    mut sink: impl FnMut(usize, R) -> bool,
) {
    if jobs <= 1 || items.len() <= 1 {
        for (k, item) in items.iter().enumerate() {
            if !sink(k, work(item)) {
                return;
            }
        }
        return;
    }
    let in_flight = in_flight.max(jobs);
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    // The number of results sunk, for the workers to wait on when they are ahead.
    let gate = (Mutex::new(0usize), Condvar::new());
    let halt = || {
        stop.store(true, Ordering::SeqCst);
        let _held = gate.0.lock().unwrap_or_else(PoisonError::into_inner);
        gate.1.notify_all();
    };
    std::thread::scope(|scope| {
        let _on_panic = OnPanic(&halt);
        let (tx, rx) = std::sync::mpsc::channel::<(usize, R)>();
        for _ in 1..jobs.min(items.len()) {
            let (tx, next, stop, gate, work, halt) = (tx.clone(), &next, &stop, &gate, &work, &halt);
            scope.spawn(move || {
                let _on_panic = OnPanic(halt);
                BUDGET.with(|b| b.set(Some(1)));
                loop {
                    let k = next.fetch_add(1, Ordering::SeqCst);
                    if k >= items.len() {
                        return;
                    }
                    let mut passed = gate.0.lock().unwrap_or_else(PoisonError::into_inner);
                    while k >= *passed + in_flight && !stop.load(Ordering::SeqCst) {
                        passed = gate.1.wait(passed).unwrap_or_else(PoisonError::into_inner);
                    }
                    drop(passed);
                    if stop.load(Ordering::SeqCst) || tx.send((k, work(&items[k]))).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        let mut waiting = std::collections::BTreeMap::new();
        let mut at = 0;
        // Sinks what is ready in order; false once the sink said stop.
        let mut pass = |waiting: &mut std::collections::BTreeMap<usize, R>, at: &mut usize| {
            let before = *at;
            while let Some(r) = waiting.remove(&*at) {
                let go = sink(*at, r);
                *at += 1;
                if !go {
                    halt();
                    return false;
                }
            }
            if *at > before {
                *gate.0.lock().unwrap_or_else(PoisonError::into_inner) = *at;
                gate.1.notify_all();
            }
            true
        };
        while at < items.len() {
            waiting.extend(rx.try_iter());
            if !pass(&mut waiting, &mut at) {
                return;
            }
            if at >= items.len() {
                break;
            }
            // Take an item of its own while that keeps within the window; otherwise
            // wait for a result the others owe (they hold every item taken and not
            // ready, the first one among them).
            let window = at + in_flight;
            let own = (!stop.load(Ordering::SeqCst))
                .then(|| {
                    next.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |k| {
                        (k < items.len() && k < window).then_some(k + 1)
                    })
                    .ok()
                })
                .flatten();
            if let Some(k) = own {
                let r = with_threads(1, || work(&items[k]));
                waiting.insert(k, r);
                continue;
            }
            if let Ok((k, r)) = rx.recv() {
                waiting.insert(k, r);
            } else {
                // Every worker is gone: what is left is in `waiting` or was never taken.
                if !pass(&mut waiting, &mut at) {
                    return;
                }
                break;
            }
        }
    });
}

/// Runs its function when the thread that holds it unwinds.
struct OnPanic<F: Fn()>(F);

impl<F: Fn()> Drop for OnPanic<F> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            (self.0)();
        }
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
    fn work_in_a_worker_has_one_thread_and_inline_work_the_jobs() {
        let items: Vec<usize> = (0..50).collect();
        let mut budgets = Vec::new();
        for_each(
            &items,
            2,
            false,
            |_| threads(),
            |_, r| {
                budgets.push(r);
                true
            },
        );
        assert!(budgets.iter().all(|&b| b == Some(1)), "{budgets:?}");
        let mut inline = Vec::new();
        for_each(
            &items[..1],
            2,
            false,
            |_| threads(),
            |_, r| {
                inline.push(r);
                true
            },
        );
        assert_eq!(inline, [Some(2)], "one item runs inline, with the batch's jobs");
        assert_eq!(with_threads(3, threads), 3);
        assert!(threads() >= 1);
    }

    #[test]
    fn a_join_runs_both_with_one_thread_each_and_on_two_threads_only_when_allowed() {
        let id = || (threads(), std::thread::current().id());
        let here = std::thread::current().id();
        let ((a_threads, a_on), (b_threads, b_on)) = with_threads(2, || join(id, id));
        assert_eq!((a_threads, b_threads), (1, 1), "each side has one thread");
        assert!(a_on != here && b_on == here, "the first on a thread of its own, the second here");
        let after = with_threads(2, || {
            join(id, id);
            threads()
        });
        assert_eq!(after, 2, "this thread's budget is given back");
        let ((_, a_on), (_, b_on)) = with_threads(1, || join(id, id));
        assert_eq!((a_on, b_on), (here, here), "one thread: one after the other, here");
        let panicked = std::panic::catch_unwind(|| with_threads(2, || join(|| panic!("side"), || 1)));
        assert!(panicked.is_err(), "a panic on the other thread is the caller's");
    }

    #[test]
    fn an_ordered_map_gives_results_in_order_and_holds_few() {
        let items: Vec<usize> = (0..3000).collect();
        for (jobs, in_flight) in [(1, 1), (2, 3), (3, 8), (7, 2)] {
            let (mut seen, held) = (Vec::new(), AtomicUsize::new(0));
            let most = AtomicUsize::new(0);
            map_ordered(
                &items,
                jobs,
                in_flight,
                |&i| {
                    // Early items are slow: later ones finish first and must wait.
                    if i % 97 == 0 {
                        std::thread::sleep(std::time::Duration::from_millis(2));
                    }
                    let now = held.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    i * 3
                },
                |k, r| {
                    held.fetch_sub(1, Ordering::SeqCst);
                    seen.push((k, r));
                    true
                },
            );
            assert_eq!(seen, items.iter().map(|&i| (i, i * 3)).collect::<Vec<_>>(), "jobs {jobs}");
            assert!(
                most.load(Ordering::SeqCst) <= in_flight.max(jobs),
                "jobs {jobs}: {} held",
                most.load(Ordering::SeqCst)
            );
        }
    }

    #[test]
    fn an_ordered_map_stops_when_its_sink_says_so_and_passes_a_panic_on() {
        let items: Vec<usize> = (0..10_000).collect();
        let started = AtomicUsize::new(0);
        let mut sunk = 0;
        map_ordered(
            &items,
            3,
            6,
            |_| started.fetch_add(1, Ordering::SeqCst),
            |k, _| {
                sunk += 1;
                k < 20
            },
        );
        assert_eq!(sunk, 21);
        assert!(started.load(Ordering::SeqCst) <= 21 + 6 + 3, "{} started", started.load(Ordering::SeqCst));
        let panicked = std::panic::catch_unwind(|| {
            map_ordered(&items, 2, 4, |&i| assert!(i != 50, "item 50"), |_, ()| true);
        });
        assert!(panicked.is_err(), "a worker's panic reaches the caller");
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
