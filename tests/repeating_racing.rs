//! Repeating tasks on executor threads (a run may re-arm while the next one already began on
//! another thread), reset and then cancelled by the threads that started them while runs fire:
//! once `cancel()` returned `true` no run begins, runs never overlap, and nothing stays pending.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use common::SplitMix;
use delaywheel::{MissedTickBehavior, Repeat, RepeatingHandle, TaskExecution, Timer};

/// A repetition's own observations: its task's runs, and whether one is under way.
#[derive(Default)]
struct Probe {
    began: AtomicU64,
    running: AtomicBool,
    overlapped: AtomicBool,
}

#[test]
fn cancels_and_resets_racing_runs_on_executor_threads_keep_the_promises() {
    let tick = Duration::from_micros(100);
    let timer = Timer::builder().tick(tick).wheel_size(8).execution(TaskExecution::Threads(3)).build();
    let repeats = [
        Repeat::FixedDelay(tick),
        Repeat::FixedRate(tick),
        Repeat::Every(tick, MissedTickBehavior::Burst),
        Repeat::Every(tick, MissedTickBehavior::Delay),
    ];
    // Each worker starts repetitions, resets them, and cancels each after a while; the runs a
    // repetition had begun when its cancel returned `true` are checked again at the end.
    let stopped: Vec<(Arc<Probe>, RepeatingHandle, u64)> = thread::scope(|s| {
        let workers: Vec<_> = (0..3u64)
            .map(|t| {
                let timer = &timer;
                s.spawn(move || {
                    let mut rng = SplitMix(t + 5);
                    let mut stopped = Vec::new();
                    for k in 0..1_500 {
                        let probe = Arc::new(Probe::default());
                        let p = Arc::clone(&probe);
                        let handle = timer.schedule_repeating(Duration::ZERO, repeats[k % 4], move || {
                            if p.running.swap(true, Ordering::SeqCst) {
                                p.overlapped.store(true, Ordering::SeqCst);
                            }
                            p.began.fetch_add(1, Ordering::SeqCst);
                            p.running.store(false, Ordering::SeqCst);
                        });
                        for _ in 0..rng.range(0, 3) {
                            handle.reset(Duration::from_micros(rng.range(0, 300)));
                        }
                        thread::sleep(Duration::from_micros(rng.range(0, 400)));
                        assert!(handle.cancel(), "nothing else ends it");
                        // A run under way (counted by `runs()` before its task began) may still
                        // finish: the count must not move after this.
                        let runs = handle.runs();
                        stopped.push((probe, handle, runs));
                    }
                    stopped
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    });
    drop(timer.shutdown()); // joins the executor threads: every run under way has finished
    for (i, (probe, handle, runs)) in stopped.iter().enumerate() {
        assert_eq!(handle.runs(), *runs, "repetition {i}: a run began after cancel returned true");
        assert_eq!(probe.began.load(Ordering::SeqCst), *runs, "repetition {i}");
        assert!(!probe.overlapped.load(Ordering::SeqCst), "repetition {i}: runs overlapped");
        assert!(!handle.is_active());
    }
    assert_eq!(timer.len(), 0);
}
