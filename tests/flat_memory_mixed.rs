//! Schedule-and-cancel and schedule-and-fire loops of tasks of mixed sizes (inline, each class of
//! the task slab, boxed), from two threads at once on a timer with its driver thread, run in flat
//! memory: after a warm-up, a million more tasks add (almost) nothing to the process's RSS (a slot
//! or a block lost per task would add 48 to 300 MB). Boxed closures are the allocator's, freed on
//! the driver's thread; the rest comes from the timer's pages.
//! The only test of its binary (it reads the process's RSS).
//!
//! What the wheel itself makes resident depends on the clock, not on the tasks: a level is
//! allocated whole when first needed, and its pages (1.1 KiB a bucket with two lanes in use,
//! 552 KiB for the 512 of level 0) become resident as the cursor first reaches their buckets, one
//! a tick. So the warm-up lasts two turns of level 0 on the timer's clock (however long that
//! takes), and the cancel-only tasks go to level 2, whose buckets span 262 s each: the measured
//! run, however long it takes, reaches no bucket of level 0 not reached before and at most one new
//! one of level 2.

#![cfg(target_os = "linux")]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::rss;
use delaywheel::{TaskExecution, Timer, TimerHandle};

/// Schedules task `k`: its size by `k`, a cancel-only delay (an hour, level 2) or one that fires
/// (0–2 ms, level 0).
fn schedule(timer: &Timer, k: u64, fires: bool, runs: &Arc<AtomicU64>) -> TimerHandle {
    let delay = if fires { Duration::from_micros(k % 3 * 700) } else { Duration::from_secs(3_600) };
    let runs = Arc::clone(runs);
    macro_rules! words {
        ($w:literal) => {{
            let words = [1u64; $w];
            timer.schedule(delay, move || {
                runs.fetch_add(words[$w - 1], Ordering::Relaxed);
            })
        }};
    }
    match k % 5 {
        0 => words!(1),
        1 => words!(6),
        2 => words!(14),
        3 => words!(30),
        _ => words!(40),
    }
}

/// One thread's loop: `rounds` of 1,000 tasks, each cancelled or left to fire (every other round).
fn churn(timer: &Timer, rounds: u64, runs: &Arc<AtomicU64>) -> u64 {
    let mut fired = 0;
    let mut handles = Vec::with_capacity(1_000);
    for round in 0..rounds {
        let fires = round % 2 == 1;
        handles.extend((0..1_000).map(|k| schedule(timer, round * 1_000 + k, fires, runs)));
        if fires {
            fired += 1_000;
        } else {
            assert!(handles.iter().all(TimerHandle::cancel));
        }
        handles.clear();
        if fires {
            // Lets the driver keep up: the backlog, not the timer, would grow otherwise. Waiting
            // after every round that fires keeps the backlog under 6,000 tasks (4,000 and a round
            // of each thread) however slow the driver runs, so what the allocator keeps of a
            // backlog's boxed closures (a fifth of the tasks, 320 bytes each: 400 KB) is the same
            // in the warm-up and the measured run, whatever the load.
            while timer.len() > 4_000 {
                thread::sleep(Duration::from_micros(200));
            }
        }
    }
    fired
}

fn run(timer: &Timer, rounds: u64, runs: &Arc<AtomicU64>) -> u64 {
    thread::scope(|s| {
        let threads: Vec<_> = (0..2).map(|_| s.spawn(|| churn(timer, rounds, runs))).collect();
        threads.into_iter().map(|t| t.join().unwrap()).sum()
    })
}

#[test]
fn mixed_sizes_from_two_threads_run_in_flat_memory() {
    for execution in [TaskExecution::OnDriver, TaskExecution::Threads(2)] {
        // Two lanes: the lanes a new scheduling thread creates in the buckets it adds to are not
        // what this test measures.
        let timer =
            Timer::builder().tick(Duration::from_millis(1)).bucket_lanes(2).execution(execution).build();
        let runs = Arc::new(AtomicU64::new(0));
        // At least 200 rounds, and two turns of level 0 (module docs).
        let (start, turn) = (timer.now(), timer.tick() * timer.wheel_size() as u32);
        let mut fired = run(&timer, 200, &runs);
        while timer.now() < start + 2 * turn {
            fired += run(&timer, 20, &runs);
        }
        // Measured drained and shrunk: what a backlog of the moment left resident is not counted.
        // Drained means nothing pending and every fired task run: a task leaves `len()` when the
        // driver or an executor claims it, a moment before it runs. (A task lost would keep either
        // short: the wait gives up after a minute, and the checks below fail.)
        let settle = |fired: u64| {
            let give_up = Instant::now() + Duration::from_secs(60);
            while (!timer.is_empty() || runs.load(Ordering::Relaxed) < fired) && Instant::now() < give_up {
                thread::sleep(Duration::from_millis(1));
            }
            timer.shrink();
            rss()
        };
        let before = settle(fired);
        fired += run(&timer, 600, &runs);
        let after = settle(fired);
        eprintln!("{execution:?}: RSS {before} after the warm-up, {after} after 1,200,000 more tasks");
        assert!(timer.is_empty(), "{execution:?}: {} tasks left pending", timer.len());
        assert_eq!(runs.load(Ordering::Relaxed), fired, "{execution:?}: every fired task ran once");
        assert!(after <= before + 2_000_000, "{execution:?}: RSS {before} -> {after}");
        drop(timer);
        assert_eq!(runs.load(Ordering::Relaxed), fired, "{execution:?}: every fired task ran once");
    }
}
