//! A timer bounded by `max_pending`, shared by plain tasks and a delay queue's values, under
//! schedules and inserts that the bound refuses, cancels, removes, resets that move entries
//! earlier (held out of every bucket meanwhile) and later, firings, a clear and shrinks: `len()`
//! never exceeds the bound, every refused closure or value comes back or is dropped once, and
//! once everything ended the whole bound is free again: exactly `max_pending` schedules succeed.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::{watched, SplitMix};
use delaywheel::queue::{DelayQueue, Key};
use delaywheel::{ScheduleError, TaskExecution, Timer, TimerHandle};

const BOUND: usize = 300;

/// Counts its drops; `ran` when its task ran.
struct Probe(Arc<AtomicUsize>);

impl Drop for Probe {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[derive(Default)]
struct Counts {
    made: AtomicUsize,
    dropped: AtomicUsize,
    runs: AtomicUsize,
    cancels: AtomicUsize,
    refused: AtomicUsize,
}

fn worker(queue: &DelayQueue<Probe>, counts: &Arc<Counts>, stop: &AtomicBool, seed: u64) {
    let mut rng = SplitMix(seed);
    let timer = queue.timer();
    let (mut handles, mut keys): (Vec<TimerHandle>, Vec<Key>) = (Vec::new(), Vec::new());
    let probe = || {
        counts.made.fetch_add(1, Ordering::SeqCst);
        Probe(Arc::new(AtomicUsize::new(0)))
    };
    let dropped_with = |p: Probe| {
        let cell = Arc::clone(&p.0);
        (p, cell)
    };
    let mut cells = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        assert!(timer.len() <= BOUND, "len() {} over the bound", timer.len());
        let delay = Duration::from_micros(rng.range(0, 6_000));
        match rng.range(0, 10) {
            0..=2 => {
                let (p, cell) = dropped_with(probe());
                cells.push(cell);
                let counts2 = Arc::clone(counts);
                match timer.try_schedule(delay, move || {
                    counts2.runs.fetch_add(1, Ordering::SeqCst);
                    drop(p);
                }) {
                    Ok(h) => handles.push(h),
                    Err(ScheduleError::TooManyPending { .. }) => {
                        counts.refused.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(e) => panic!("refused otherwise: {e}"),
                }
            }
            3 | 4 => {
                let (p, cell) = dropped_with(probe());
                cells.push(cell);
                match queue.try_insert(p, delay) {
                    Ok(k) => keys.push(k),
                    Err(e) => {
                        assert!(matches!(e.error(), ScheduleError::TooManyPending { .. }), "{e:?}");
                        counts.refused.fetch_add(1, Ordering::SeqCst);
                        drop(e.into_inner());
                    }
                }
            }
            5 if !handles.is_empty() => {
                let h = handles.swap_remove(rng.range(0, handles.len() as u64) as usize);
                if h.cancel() {
                    counts.cancels.fetch_add(1, Ordering::SeqCst);
                }
            }
            6 if !keys.is_empty() => {
                let k = keys.swap_remove(rng.range(0, keys.len() as u64) as usize);
                drop(queue.remove(&k));
            }
            7 if !handles.is_empty() => {
                let h = &handles[rng.range(0, handles.len() as u64) as usize];
                h.reset(Duration::from_micros(rng.range(0, 3_000)));
            }
            8 if !keys.is_empty() => {
                let k = &keys[rng.range(0, keys.len() as u64) as usize];
                queue.reset(k, Duration::from_micros(rng.range(0, 3_000)));
            }
            _ => {
                let mut batch = Vec::new();
                queue.try_recv_many(&mut batch, 8);
            }
        }
        if handles.len() > 64 {
            handles.drain(..32);
        }
        if keys.len() > 64 {
            keys.drain(..32);
        }
    }
    // What is left of this worker's values expires and is taken by the round.
    let until = Instant::now() + Duration::from_secs(5);
    while cells.iter().any(|c| c.load(Ordering::SeqCst) == 0) && Instant::now() < until {
        while queue.try_recv().is_some() {}
        thread::sleep(Duration::from_millis(1));
    }
    for c in &cells {
        assert_eq!(c.load(Ordering::SeqCst), 1, "a closure or value dropped other than once");
    }
    counts.dropped.fetch_add(cells.len(), Ordering::SeqCst);
}

fn round(seed: u64) {
    let mut rng = SplitMix(seed);
    let execution = if rng.next() % 2 == 0 { TaskExecution::OnDriver } else { TaskExecution::Threads(2) };
    let timer = Timer::builder()
        .tick(Duration::from_millis(1))
        .wheel_size([2, 4, 8][rng.range(0, 3) as usize])
        .max_pending(BOUND)
        .execution(execution)
        .build();
    let queue = DelayQueue::with_timer(timer);
    let counts = Arc::new(Counts::default());
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        for _ in 0..3 {
            let (queue, counts, stop, seed) = (&queue, &counts, &stop, rng.next());
            s.spawn(move || worker(queue, counts, stop, seed));
        }
        let until = Instant::now() + Duration::from_millis(rng.range(10, 40));
        while Instant::now() < until {
            if rng.range(0, 4) == 0 {
                queue.clear();
            }
            queue.timer().shrink();
            thread::sleep(Duration::from_micros(500));
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert_eq!(counts.made.load(Ordering::SeqCst), counts.dropped.load(Ordering::SeqCst), "seed {seed}");
    let timer = queue.timer();
    assert_eq!((timer.len(), queue.len()), (0, 0), "seed {seed}");
    // The whole bound is free: exactly BOUND more fit.
    let far = Duration::from_secs(60);
    let fits = (0..BOUND + 1).filter(|_| timer.try_schedule(far, || {}).is_ok()).count();
    assert_eq!(fits, BOUND, "schedules admitted once everything ended (seed {seed})");
}

#[test]
fn a_bounded_timer_under_refusals_resets_clears_and_shrinks_frees_its_whole_bound() {
    watched("bounded timer racing", || {
        for seed in 0..12 {
            round(0xB0B0 + seed);
        }
    });
}
