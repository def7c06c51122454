//! `Timer::shrink` looping while several threads schedule tasks of every class of the task slab
//! (and boxed and inline ones), cancel some, and query and re-arm stale handles, with the driver
//! firing the rest and short-lived threads scheduling and exiting (their caches of slots and
//! blocks given back as they go): every task runs or is cancelled exactly once with its captures
//! intact, and every closure is dropped once; likewise values of a 256-byte block in a delay queue
//! fed by several producers. (`shrink_racing.rs` races one scheduling thread of inline tasks and
//! small values; run this binary under AddressSanitizer for the real threads.)

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use delaywheel::{TaskExecution, Timer, TimerHandle};

const THREADS: usize = 3;
const ROUNDS: usize = 20;
const PER_ROUND: usize = 1_500;

/// Per task: runs, cancels won, drops.
struct Tally {
    runs: Vec<AtomicUsize>,
    cancels: Vec<AtomicUsize>,
    drops: Vec<AtomicUsize>,
}

/// Counts the drop of task `id`'s closure.
struct Dropped(Arc<Tally>, usize);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.drops[self.1].fetch_add(1, Ordering::SeqCst);
    }
}

/// Task `id`, capturing `W` words that its run checks.
fn task<const W: usize>(tally: &Arc<Tally>, id: usize) -> impl FnOnce() + Send + 'static {
    let words: [usize; W] = std::array::from_fn(|k| id ^ k);
    let dropped = Dropped(Arc::clone(tally), id);
    move || {
        assert!(words.iter().enumerate().all(|(k, &w)| w == id ^ k), "task {id}'s words");
        dropped.0.runs[id].fetch_add(1, Ordering::SeqCst);
    }
}

fn schedule(timer: &Timer, tally: &Arc<Tally>, id: usize) -> TimerHandle {
    let delay = Duration::from_micros((id % 5) as u64 * 600);
    match id % 5 {
        0 => timer.schedule(delay, task::<0>(tally, id)),
        1 => timer.schedule(delay, task::<5>(tally, id)),
        2 => timer.schedule(delay, task::<12>(tally, id)),
        3 => timer.schedule(delay, task::<28>(tally, id)),
        _ => timer.schedule(delay, task::<40>(tally, id)),
    }
}

/// One scheduling thread's rounds: schedules, cancels every third, looks at and re-arms the
/// handles of its earlier rounds (their slots and pages reused or given back meanwhile).
fn scheduler(timer: &Timer, tally: &Arc<Tally>, first: usize) {
    let mut stale: Vec<(usize, TimerHandle)> = Vec::new();
    for round in 0..ROUNDS {
        let base = first + round * PER_ROUND;
        let handles: Vec<_> = (base..base + PER_ROUND).map(|id| (id, schedule(timer, tally, id))).collect();
        for (id, h) in handles.iter().step_by(3) {
            if h.cancel() {
                tally.cancels[*id].fetch_add(1, Ordering::SeqCst);
            }
        }
        for (id, h) in &stale {
            let _ = (h.is_pending(), h.is_fired(), h.is_cancelled(), h.deadline(), h.position());
            let _ = format!("{h:?}");
            h.reset(Duration::from_millis(1));
            if h.cancel() {
                tally.cancels[*id].fetch_add(1, Ordering::SeqCst);
            }
        }
        // A short-lived thread schedules too, and exits with what its caches hold.
        let extra = first + ROUNDS * PER_ROUND + round;
        thread::scope(|s| {
            s.spawn(|| {
                let _ = schedule(timer, tally, extra);
            });
        });
        thread::sleep(Duration::from_millis(3));
        stale.retain(|(id, _)| id % 5 == 0);
        stale.extend(handles);
    }
}

#[test]
fn tasks_of_every_class_racing_shrinks_from_several_threads_are_exactly_once() {
    let per_thread = ROUNDS * (PER_ROUND + 1);
    let total = THREADS * per_thread;
    let slots = || (0..total).map(|_| AtomicUsize::new(0)).collect::<Vec<_>>();
    let tally = Arc::new(Tally { runs: slots(), cancels: slots(), drops: slots() });
    for execution in [TaskExecution::OnDriver, TaskExecution::Threads(2)] {
        for counts in [&tally.runs, &tally.cancels, &tally.drops] {
            counts.iter().for_each(|c| c.store(0, Ordering::SeqCst));
        }
        let timer = Timer::builder().tick(Duration::from_millis(1)).execution(execution).build();
        let stop = AtomicBool::new(false);
        thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    timer.shrink();
                    thread::sleep(Duration::from_micros(300));
                }
            });
            let schedulers: Vec<_> = (0..THREADS)
                .map(|t| {
                    let (timer, tally) = (&timer, &tally);
                    s.spawn(move || scheduler(timer, tally, t * per_thread))
                })
                .collect();
            let results: Vec<_> = schedulers.into_iter().map(|h| h.join()).collect();
            stop.store(true, Ordering::Relaxed);
            results.into_iter().for_each(|r| r.unwrap());
        });
        let give_up = Instant::now() + Duration::from_secs(10);
        while !timer.is_empty() && Instant::now() < give_up {
            thread::sleep(Duration::from_millis(2));
        }
        assert!(timer.shutdown().is_empty(), "{execution:?}: everything ran or was cancelled");
        drop(timer);
        for id in 0..total {
            let (runs, cancels, drops) = (
                tally.runs[id].load(Ordering::SeqCst),
                tally.cancels[id].load(Ordering::SeqCst),
                tally.drops[id].load(Ordering::SeqCst),
            );
            assert_eq!(
                (runs + cancels, drops),
                (1, 1),
                "{execution:?}: task {id} ran {runs}, cancelled {cancels}"
            );
        }
    }
}

/// Lowers its count when dropped.
struct CountDown<'a>(&'a AtomicUsize);

impl Drop for CountDown<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A value of 176 bytes with its deadline (a 256-byte block), checked when it comes out.
type Big = (usize, [usize; 20]);

fn big(id: usize) -> Big {
    (id, std::array::from_fn(|k| id ^ k))
}

fn checked((id, words): Big) -> usize {
    assert!(words.iter().enumerate().all(|(k, &w)| w == id ^ k), "value {id}'s words");
    id
}

#[test]
fn big_values_from_several_producers_racing_shrinks_come_out_exactly_once() {
    use delaywheel::queue::DelayQueue;
    let timer = Timer::builder().tick(Duration::from_millis(1)).execution(TaskExecution::Threads(2)).build();
    let queue: DelayQueue<Big> = DelayQueue::with_timer(timer);
    let per_thread = ROUNDS * PER_ROUND;
    let seen: Vec<AtomicUsize> = (0..THREADS * per_thread).map(|_| AtomicUsize::new(0)).collect();
    let producing = AtomicUsize::new(THREADS);
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                queue.timer().shrink();
                thread::sleep(Duration::from_micros(300));
            }
        });
        let consumer = s.spawn(|| loop {
            match queue.recv_timeout(Duration::from_millis(20)) {
                Some(expired) => drop(seen[checked(expired.into_inner())].fetch_add(1, Ordering::SeqCst)),
                None if producing.load(Ordering::SeqCst) == 0 && queue.is_empty() => return,
                None => {}
            }
        });
        for t in 0..THREADS {
            let (queue, seen, producing) = (&queue, &seen, &producing);
            s.spawn(move || {
                // Counted out also by a panic, so that the consumer ends.
                let _done = CountDown(producing);
                let mut stale = Vec::new();
                for round in 0..ROUNDS {
                    let base = t * per_thread + round * PER_ROUND;
                    let keys: Vec<_> = (base..base + PER_ROUND)
                        .map(|id| (id, queue.insert(big(id), Duration::from_micros((id % 4) as u64 * 700))))
                        .collect();
                    for (id, key) in keys.iter().step_by(3) {
                        if let Some(value) = queue.remove(key) {
                            assert_eq!(checked(value), *id);
                            seen[*id].fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    for (id, key) in &stale {
                        let _ = queue.deadline(key);
                        queue.reset(key, Duration::from_millis(1));
                        if let Some(value) = queue.remove(key) {
                            assert_eq!(checked(value), *id, "a stale key took another value");
                            seen[*id].fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    thread::sleep(Duration::from_millis(3));
                    stale.retain(|(id, _)| id % 7 == 0);
                    stale.extend(keys);
                }
            });
        }
        consumer.join().unwrap();
        stop.store(true, Ordering::Relaxed);
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
