//! Several threads schedule tasks for one instant, a tick boundary, in an order a lock makes total,
//! before, while and after the driver fires that instant: the tasks run in that order (FIFO for
//! equal deadlines, across threads and across the advances that the late ones wait for). Also
//! through a delay queue's `insert_at`, whose values come out in insertion order. (An instant
//! inside a tick, scheduled once it passed, runs at the next advance, and the tasks scheduled
//! earlier for it with it, first: `tests/passed_mid_tick.rs`.)

mod common;

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::{watched, SplitMix};
use delaywheel::queue::DelayQueue;
use delaywheel::Timer;

const THREADS: usize = 3;

/// A tick boundary about 5 ms ahead on `timer`'s clock: the tick instant `next_wakeup` gives for
/// a task due there (again if the task fired before its cancel: a loaded host).
fn boundary_ahead(timer: &Timer) -> Instant {
    loop {
        let probe = timer.schedule(Duration::from_micros(5_500), || {});
        let at = timer.next_wakeup();
        if probe.cancel() && at.is_some_and(|at| at > timer.now()) {
            return at.unwrap();
        }
    }
}

/// Runs `schedule(seq)` from `THREADS` threads for `span`, each call under one lock with the
/// next sequence number; returns how many were made.
fn in_turns(span: Duration, seed: u64, schedule: impl Fn(usize) + Sync) -> usize {
    let next = Mutex::new(0usize);
    thread::scope(|s| {
        for t in 0..THREADS {
            let (next, schedule) = (&next, &schedule);
            s.spawn(move || {
                let mut rng = SplitMix(seed + t as u64);
                let until = Instant::now() + span;
                while Instant::now() < until {
                    {
                        let mut next = next.lock().unwrap();
                        schedule(*next);
                        *next += 1;
                    }
                    for _ in 0..rng.range(0, 2_000) {
                        std::hint::spin_loop();
                    }
                }
            });
        }
    });
    next.into_inner().unwrap()
}

#[test]
fn one_instant_scheduled_from_threads_in_turn_racing_its_firing_runs_in_order() {
    watched("equal instants racing the driver", || {
        for seed in 0..6 {
            let timer = Timer::builder().tick(Duration::from_millis(1)).wheel_size(4).build();
            let at = boundary_ahead(&timer);
            let log = Arc::new(Mutex::new(Vec::new()));
            let made = in_turns(Duration::from_millis(10), seed * 10, |seq| {
                let log = Arc::clone(&log);
                timer.schedule_at(at, move || log.lock().unwrap().push(seq));
            });
            let until = Instant::now() + Duration::from_secs(5);
            while log.lock().unwrap().len() < made && Instant::now() < until {
                thread::sleep(Duration::from_millis(1));
            }
            let log = log.lock().unwrap();
            assert_eq!(log.len(), made, "seed {seed}");
            let out_of_order = log.windows(2).position(|w| w[0] > w[1]);
            assert_eq!(
                out_of_order,
                None,
                "seed {seed}: {:?}",
                out_of_order.map(|i| &log[i.saturating_sub(3)..i + 3])
            );
        }
    });
}

#[test]
fn values_inserted_at_one_instant_from_threads_in_turn_come_out_in_order() {
    watched("equal instants in a queue", || {
        for seed in 0..6 {
            let queue =
                DelayQueue::with_timer(Timer::builder().tick(Duration::from_millis(1)).wheel_size(4).build());
            let at = boundary_ahead(queue.timer());
            let made = in_turns(Duration::from_millis(10), seed * 10 + 5, |seq| {
                queue.insert_at(seq, at);
            });
            let mut out = Vec::new();
            while out.len() < made {
                match queue.recv_timeout(Duration::from_secs(5)) {
                    Some(expired) => out.push(expired.into_inner()),
                    None => panic!("seed {seed}: {} of {made} came out", out.len()),
                }
            }
            let out_of_order = out.windows(2).position(|w| w[0] > w[1]);
            assert_eq!(
                out_of_order,
                None,
                "seed {seed}: {:?}",
                out_of_order.map(|i| &out[i.saturating_sub(3)..i + 3])
            );
        }
    });
}
