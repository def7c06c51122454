//! What `shutdown()` hands back, checked against a list of deadlines: every pending task once, in
//! deadline order with equal deadlines in scheduling order (a reset task by when it was first
//! scheduled), each `UnfiredTask::deadline` the reading its handle's `deadline()` gave (zero
//! before the clock's origin); after random schedules (by delay and by instant, sub-tick,
//! equal, passed mid-tick, before the origin), resets, cancels and advances on small wheels.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::SplitMix;
use delaywheel::{ManualClock, Timer, TimerHandle};

/// One scheduled task: its handle, its scheduling sequence number, its deadline as a reading of
/// the clock (`None`: before the origin) and as the instant given.
struct Task {
    handle: TimerHandle,
    seq: usize,
    due: Option<Duration>,
    at: Instant,
}

#[test]
fn shutdown_hands_back_every_pending_task_in_deadline_then_scheduling_order() {
    for seed in 1..=60u64 {
        let mut rng = SplitMix(seed);
        let tick = Duration::from_nanos(rng.range(1_000, 5_000_000));
        let wheel = rng.range(2, 10) as usize;
        let clock = ManualClock::new();
        let timer = Timer::builder().tick(tick).wheel_size(wheel).clock(clock.clone()).manual().build();
        let origin = timer.now();
        let ran: Arc<Mutex<Vec<usize>>> = Arc::default();
        let mut tasks: Vec<Task> = Vec::new();
        let tick_ns = tick.as_nanos() as u64;
        // A few shared deadlines, so that ties are common.
        let shared: Vec<Duration> =
            (0..4).map(|_| Duration::from_nanos(rng.range(1, tick_ns * 40))).collect();
        for _ in 0..300 {
            let now = clock.now();
            match rng.range(0, 12) {
                0..=3 => {
                    let seq = tasks.len();
                    let r = Arc::clone(&ran);
                    let task = move || r.lock().unwrap().push(seq);
                    let (handle, due, at) = match rng.range(0, 5) {
                        0 => {
                            let d = Duration::from_nanos(rng.range(0, tick_ns * 60));
                            (timer.schedule(d, task), Some(now + d), origin + now + d)
                        }
                        1 => {
                            let at = shared[rng.range(0, 4) as usize].max(now);
                            (timer.schedule_at(origin + at, task), Some(at), origin + at)
                        }
                        2 => {
                            // Passed: within the tick under way, or earlier.
                            let back = Duration::from_nanos(rng.range(0, tick_ns * 3)).min(now);
                            (
                                timer.schedule_at(origin + (now - back), task),
                                Some(now - back),
                                origin + now - back,
                            )
                        }
                        3 => match origin.checked_sub(Duration::from_millis(rng.range(1, 50))) {
                            Some(before) => (timer.schedule_at(before, task), None, before),
                            None => (timer.schedule(Duration::ZERO, task), Some(now), origin + now),
                        },
                        _ => {
                            let d = Duration::from_nanos(rng.range(0, tick_ns / 3 + 1));
                            (timer.schedule(d, task), Some(now + d), origin + now + d)
                        }
                    };
                    tasks.push(Task { handle, seq, due, at });
                }
                4 | 5 if !tasks.is_empty() => {
                    let i = rng.range(0, tasks.len() as u64) as usize;
                    let at = if rng.range(0, 2) == 0 {
                        shared[rng.range(0, 4) as usize].max(now)
                    } else {
                        now + Duration::from_nanos(rng.range(0, tick_ns * 60))
                    };
                    if tasks[i].handle.reset_at(origin + at) {
                        tasks[i].due = Some(at);
                        tasks[i].at = origin + at;
                    }
                }
                6 if !tasks.is_empty() => {
                    let i = rng.range(0, tasks.len() as u64) as usize;
                    tasks[i].handle.cancel();
                }
                _ => {
                    clock.advance(Duration::from_nanos(rng.range(0, tick_ns * 2)));
                    timer.advance_clock(Duration::ZERO);
                }
            }
        }
        // What the handles say before the shutdown.
        let pending: Vec<(usize, Duration, Instant)> = tasks
            .iter()
            .filter(|t| t.handle.is_pending())
            .map(|t| {
                let read = t.handle.deadline().expect("pending");
                assert_eq!(read, t.at, "seed {seed}: task {} reads its deadline back", t.seq);
                (t.seq, t.due.unwrap_or_default(), t.at)
            })
            .collect();
        assert_eq!(timer.len(), pending.len(), "seed {seed}");
        let fired_before = ran.lock().unwrap().len();
        let unfired = timer.shutdown();
        let mut expected = pending.clone();
        expected.sort_by_key(|&(seq, _, at)| (at, seq));
        let deadlines: Vec<Duration> = unfired.iter().map(|t| t.deadline()).collect();
        assert_eq!(
            deadlines,
            expected.iter().map(|&(_, due, _)| due).collect::<Vec<_>>(),
            "seed {seed}: deadlines of the unfired tasks"
        );
        for task in unfired {
            task.run();
        }
        let order: Vec<usize> = ran.lock().unwrap()[fired_before..].to_vec();
        assert_eq!(order, expected.iter().map(|&(seq, _, _)| seq).collect::<Vec<_>>(), "seed {seed}: order");
    }
}

/// The two cases the random sequences above found, pinned: one instant scheduled every 15 ms from
/// 0 to 75 ms (so the tasks sit in levels from coarse to fine), and instants before the clock's
/// origin scheduled latest first; the shutdown hands them back in the order they would fire in.
#[test]
fn equal_instants_across_levels_and_instants_before_the_origin_come_back_in_firing_order() {
    let clock = ManualClock::new();
    let timer =
        Timer::builder().tick(Duration::from_millis(1)).wheel_size(4).clock(clock.clone()).manual().build();
    let origin = timer.now();
    let ran: Arc<Mutex<Vec<usize>>> = Arc::default();
    let task = |id: usize| {
        let ran = Arc::clone(&ran);
        move || ran.lock().unwrap().push(id)
    };
    for id in 0..6 {
        timer.schedule_at(origin + Duration::from_millis(100), task(id));
        clock.advance(Duration::from_millis(15));
        timer.advance_clock(Duration::ZERO);
    }
    let before: Vec<Instant> =
        (1..=4).filter_map(|k| origin.checked_sub(Duration::from_millis(k * 10))).collect();
    for (k, &at) in before.iter().enumerate() {
        timer.schedule_at(at, task(10 + k));
    }
    let unfired = timer.shutdown();
    for t in unfired {
        t.run();
    }
    let mut want: Vec<usize> = (0..before.len()).rev().map(|k| 10 + k).collect();
    want.extend(0..6);
    assert_eq!(*ran.lock().unwrap(), want);
}
