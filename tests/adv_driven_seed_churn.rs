//! The seeds' configuration (10 ms tick, 60 slots) on its own driver thread, under four threads
//! that schedule (by delay and by instant, zero and sub-tick included), move by `reset_at` and
//! cancel their own tasks while the driver fires them: every task runs at most once and never
//! before the deadline its last `true` reset (or its schedule) set, read on the timer's clock
//! inside the task; exactly one of "ran" and "a cancel returned true" holds for each; `len` ends
//! at zero and the stats add up. Only outcomes are asserted, with waits for conditions, so a
//! loaded host slows it down but cannot fail it.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::{ms, SplitMix};
use delaywheel::{Timer, TimerHandle};

struct Task {
    handle: TimerHandle,
    /// The deadline of the schedule or of the last `true` reset.
    due: Instant,
    cancelled: bool,
}

#[test]
fn churn_on_the_seeds_driven_wheel_keeps_exactly_once_and_never_early() {
    let timer = Arc::new(Timer::builder().tick(ms(10)).wheel_size(60).build());
    // Per task: how many times it ran, and the earliest clock reading at which it ran.
    let runs: Arc<Mutex<Vec<(usize, Instant)>>> = Arc::default();
    let counter = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let (timer, runs, counter) = (Arc::clone(&timer), Arc::clone(&runs), Arc::clone(&counter));
            thread::spawn(move || {
                let mut rng = SplitMix(t + 11);
                let mut mine: Vec<(usize, Task)> = Vec::new();
                for _ in 0..1_500 {
                    match rng.range(0, 10) {
                        0..=4 => {
                            let id = counter.fetch_add(1, Ordering::SeqCst);
                            let delay = Duration::from_micros(rng.range(0, 3) * rng.range(0, 120_000));
                            let (r, tm) = (Arc::clone(&runs), Arc::clone(&timer));
                            let task = move || r.lock().unwrap().push((id, tm.now()));
                            let due = timer.now() + delay;
                            let handle = if rng.range(0, 2) == 0 {
                                timer.schedule_at(due, task)
                            } else {
                                // By delay: the deadline is read inside, a little later.
                                timer.schedule(delay, task)
                            };
                            mine.push((id, Task { handle, due, cancelled: false }));
                        }
                        5..=7 if !mine.is_empty() => {
                            let i = rng.range(0, mine.len() as u64) as usize;
                            let at = timer.now() + Duration::from_micros(rng.range(0, 150_000));
                            let task = &mut mine[i].1;
                            if !task.cancelled && task.handle.reset_at(at) {
                                task.due = at;
                            }
                        }
                        8 if !mine.is_empty() => {
                            let i = rng.range(0, mine.len() as u64) as usize;
                            let task = &mut mine[i].1;
                            if task.handle.cancel() {
                                assert!(!task.cancelled, "a second cancel returned true");
                                task.cancelled = true;
                            }
                        }
                        _ => thread::sleep(Duration::from_micros(rng.range(0, 300))),
                    }
                }
                mine
            })
        })
        .collect();
    let tasks: Vec<(usize, Task)> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !timer.is_empty() {
        assert!(Instant::now() < deadline, "{} tasks still pending after a minute", timer.len());
        thread::sleep(ms(5));
    }
    // `len` counts a task out when the driver claims it, before it runs and before its batch is
    // counted in the stats: the shutdown waits for the batch under way, so every run is logged.
    assert!(timer.shutdown().is_empty(), "nothing pending is handed back");
    let runs = runs.lock().unwrap().clone();
    let mut ran_at: Vec<Option<Instant>> = vec![None; counter.load(Ordering::SeqCst)];
    for (id, at) in runs {
        assert!(ran_at[id].is_none(), "task {id} ran twice");
        ran_at[id] = Some(at);
    }
    let mut cancelled = 0;
    for (id, task) in &tasks {
        match (ran_at[*id], task.cancelled) {
            (Some(at), false) => assert!(at >= task.due, "task {id} ran {:?} early", task.due - at),
            (None, true) => cancelled += 1,
            (ran, c) => panic!("task {id}: ran {:?}, cancelled {c}", ran.is_some()),
        }
        assert!(!task.handle.is_pending());
    }
    let stats = timer.stats();
    assert_eq!(stats.scheduled, tasks.len() as u64);
    assert_eq!(stats.cancelled, cancelled);
    assert_eq!(stats.fired + stats.cancelled, stats.scheduled, "{stats:?}");
    assert_eq!(stats.pending, 0);
}
