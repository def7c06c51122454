//! `Timer::shrink` looping while executor threads run tasks and stale handles and keys look at
//! slots the shrinks may give back: every task runs or is cancelled exactly once, every value
//! comes out or is removed exactly once, and nothing a stale handle does reaches a later task.
//! (A stale handle's look is its shard's, under the shard's lock, whose header the pool never
//! frees; the loom models `shrink::stale_handle_racing_a_dropped_timers_shrink` and
//! `shard::cancel_racing_give_back_and_reuse` race it. No loom model races `Timer::shrink` with
//! a stale handle on a live timer; run this binary under AddressSanitizer for the real threads.)

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use common::Stop;
use delaywheel::queue::DelayQueue;
use delaywheel::{TaskExecution, Timer, TimerHandle};

const ROUNDS: usize = 30;
const PER_ROUND: usize = 3_000;

/// Runs `shrink` in a loop on another thread while `work` runs.
fn shrinking<R>(timer: &Timer, work: impl FnOnce() -> R) -> R {
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                timer.shrink();
                thread::sleep(Duration::from_micros(200));
            }
        });
        let _stop = Stop(&stop);
        work()
    })
}

#[test]
fn executor_tasks_and_stale_handles_racing_shrinks_are_exactly_once() {
    let timer = Timer::builder().tick(Duration::from_millis(1)).execution(TaskExecution::Threads(2)).build();
    let runs: Arc<Vec<AtomicUsize>> =
        Arc::new((0..ROUNDS * PER_ROUND).map(|_| AtomicUsize::new(0)).collect());
    let stale: Mutex<Vec<(usize, TimerHandle)>> = Mutex::new(Vec::new());
    let cancelled = shrinking(&timer, || {
        let mut cancelled = vec![false; ROUNDS * PER_ROUND];
        for round in 0..ROUNDS {
            let handles: Vec<_> = (0..PER_ROUND)
                .map(|i| {
                    let id = round * PER_ROUND + i;
                    let runs = Arc::clone(&runs);
                    let delay = Duration::from_micros((i % 4) as u64 * 700);
                    (
                        id,
                        timer.schedule(delay, move || {
                            runs[id].fetch_add(1, Ordering::SeqCst);
                        }),
                    )
                })
                .collect();
            for (id, handle) in handles.iter().step_by(3) {
                cancelled[*id] = handle.cancel();
            }
            // Handles of earlier rounds: their tasks mostly ran or were cancelled, their slots
            // reused or their pages given back. A cancel that wins is counted: one that took a
            // later task in the handle's slot shows as a task both run and cancelled.
            for (id, old) in stale.lock().unwrap().iter() {
                old.reset(Duration::from_millis(1));
                if old.cancel() {
                    assert!(!std::mem::replace(&mut cancelled[*id], true), "task {id} cancelled twice");
                }
            }
            thread::sleep(Duration::from_millis(4));
            let mut stale = stale.lock().unwrap();
            stale.retain(|(id, _)| id % 7 == 0);
            stale.extend(handles);
        }
        cancelled
    });
    let give_up = std::time::Instant::now() + Duration::from_secs(10);
    while !timer.is_empty() && std::time::Instant::now() < give_up {
        thread::sleep(Duration::from_millis(2));
    }
    drop(timer.shutdown());
    for (id, runs) in runs.iter().enumerate() {
        let ran = runs.load(Ordering::SeqCst);
        assert_eq!(ran + usize::from(cancelled[id]), 1, "task {id}: ran {ran}, cancelled {}", cancelled[id]);
    }
}

#[test]
fn queue_values_and_stale_keys_racing_shrinks_are_exactly_once() {
    let timer = Timer::builder().tick(Duration::from_millis(1)).execution(TaskExecution::Threads(2)).build();
    let queue: DelayQueue<usize> = DelayQueue::with_timer(timer);
    let total = ROUNDS * PER_ROUND;
    let seen: Vec<AtomicUsize> = (0..total).map(|_| AtomicUsize::new(0)).collect();
    let producing = AtomicBool::new(true);
    shrinking(queue.timer(), || {
        thread::scope(|s| {
            let consumer = s.spawn(|| {
                let mut taken = 0;
                loop {
                    match queue.recv_timeout(Duration::from_millis(20)) {
                        Some(expired) => {
                            seen[expired.into_inner()].fetch_add(1, Ordering::SeqCst);
                            taken += 1;
                        }
                        None if !producing.load(Ordering::SeqCst) && queue.is_empty() => return taken,
                        None => {}
                    }
                }
            });
            let mut stale = Vec::new();
            for round in 0..ROUNDS {
                let keys: Vec<_> = (0..PER_ROUND)
                    .map(|i| {
                        let id = round * PER_ROUND + i;
                        (id, queue.insert(id, Duration::from_micros((i % 4) as u64 * 700)))
                    })
                    .collect();
                for (id, key) in keys.iter().step_by(3) {
                    if let Some(value) = queue.remove(key) {
                        assert_eq!(value, *id);
                        seen[*id].fetch_add(1, Ordering::SeqCst);
                    }
                }
                // Keys of earlier rounds (mostly expired or removed): a remove that wins is
                // counted, and must hand back its own key's value.
                for (id, key) in &stale {
                    queue.reset(key, Duration::from_millis(1));
                    if let Some(value) = queue.remove(key) {
                        assert_eq!(value, *id, "a stale key took another value");
                        seen[*id].fetch_add(1, Ordering::SeqCst);
                    }
                }
                thread::sleep(Duration::from_millis(4));
                stale.retain(|(id, _)| id % 7 == 0);
                stale.extend(keys);
            }
            producing.store(false, Ordering::SeqCst);
            consumer.join().unwrap();
        });
    });
    for (id, seen) in seen.iter().enumerate() {
        assert_eq!(
            seen.load(Ordering::SeqCst),
            1,
            "value {id} came out {} times",
            seen.load(Ordering::SeqCst)
        );
    }
}
