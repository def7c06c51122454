//! A simulation that only ever jumps the `ManualClock` to `timer.next_wakeup()`, while tasks are
//! scheduled, moved earlier and later (across levels, into the past) and cancelled between the
//! jumps, on the seeds' wheel (10 ms tick, 60 slots), on 2- and 3-slot wheels and on the default
//! one: `next_wakeup` is `None` exactly when nothing is pending and never after the tick of the
//! earliest pending deadline, so every task fires exactly on the first tick boundary at or after
//! its last deadline (a deadline already passed when set: at the next advance), once; and
//! `deadline()` reads back every deadline set, to the nanosecond; and the stats' totals and
//! lateness agree with the run.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{ceil_to_tick, SplitMix};
use delaywheel::{ManualClock, Timer, TimerHandle};

struct Task {
    handle: TimerHandle,
    /// The deadline, since the clock's origin, and whether it had passed when it was set.
    due: Duration,
    passed: bool,
    live: bool,
}

fn run(seed: u64, tick: Duration, wheel: usize) {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(tick).wheel_size(wheel).clock(clock.clone()).manual().build();
    let origin: Instant = timer.now();
    let mut rng = SplitMix(seed);
    let fired: Arc<Mutex<Vec<(usize, Duration)>>> = Arc::default();
    let mut tasks: Vec<Task> = Vec::new();
    let t = tick.as_nanos() as u64;
    let delay = |rng: &mut SplitMix| match rng.range(0, 4) {
        0 => Duration::from_nanos(rng.range(0, 3 * t)),
        1 => Duration::from_nanos(rng.range(0, 70 * t)),
        2 => Duration::from_nanos(rng.range(0, 4_000 * t)),
        _ => Duration::from_nanos(rng.range(0, 250_000 * t)),
    };
    let (mut ran, mut resets, mut cancels) = (0u64, 0u64, 0u64);
    let mut late_max = Duration::ZERO;
    for round in 0..400 {
        // Work between two jumps.
        for _ in 0..rng.range(0, 4) {
            let now = clock.now();
            let live: Vec<usize> = (0..tasks.len()).filter(|&i| tasks[i].live).collect();
            match rng.range(0, 6) {
                0 | 1 => {
                    let id = tasks.len();
                    let d = delay(&mut rng);
                    let (f, c) = (Arc::clone(&fired), clock.clone());
                    let task = move || f.lock().unwrap().push((id, c.now()));
                    let handle = if rng.range(0, 2) == 0 {
                        timer.schedule(d, task)
                    } else {
                        timer.schedule_at(origin + now + d, task)
                    };
                    tasks.push(Task { handle, due: now + d, passed: d.is_zero(), live: true });
                }
                2 | 3 if !live.is_empty() => {
                    let i = live[rng.range(0, live.len() as u64) as usize];
                    let (due, passed) = if rng.range(0, 4) == 0 {
                        // Into the past (not before the origin).
                        let back = Duration::from_nanos(rng.range(0, 5 * t)).min(now);
                        (now - back, true)
                    } else {
                        let d = delay(&mut rng);
                        (now + d, d.is_zero())
                    };
                    let moved = if rng.range(0, 2) == 0 || due < now {
                        tasks[i].handle.reset_at(origin + due)
                    } else {
                        tasks[i].handle.reset(due - now)
                    };
                    assert!(moved, "seed {seed} round {round}: reset of a pending task");
                    resets += 1;
                    tasks[i].due = due;
                    tasks[i].passed = passed;
                }
                4 if !live.is_empty() => {
                    let i = live[rng.range(0, live.len() as u64) as usize];
                    assert!(tasks[i].handle.cancel());
                    tasks[i].live = false;
                    cancels += 1;
                }
                _ => {}
            }
        }
        let live: Vec<usize> = (0..tasks.len()).filter(|&i| tasks[i].live).collect();
        for &i in &live {
            assert_eq!(
                tasks[i].handle.deadline(),
                Some(origin + tasks[i].due),
                "seed {seed} round {round}: task {i}"
            );
        }
        assert_eq!(timer.len(), live.len());
        let next = timer.next_wakeup();
        let Some(next) = next else {
            assert!(
                live.is_empty(),
                "seed {seed} round {round}: next_wakeup None with {} pending",
                live.len()
            );
            clock.advance(delay(&mut rng));
            timer.advance_clock(Duration::ZERO);
            continue;
        };
        assert!(!live.is_empty(), "seed {seed} round {round}: next_wakeup with nothing pending");
        let earliest = live.iter().map(|&i| ceil_to_tick(tasks[i].due, tick)).min().unwrap();
        assert!(
            next <= origin + earliest,
            "seed {seed} round {round}: next_wakeup {:?} after the earliest tick {earliest:?}",
            next - origin
        );
        if next > timer.now() {
            clock.advance(next - timer.now());
        }
        timer.advance_clock(Duration::ZERO);
        let now = clock.now();
        let mut got = fired.lock().unwrap();
        for (id, at) in got.drain(..) {
            let task = &mut tasks[id];
            assert!(task.live, "seed {seed} round {round}: task {id} ran twice or after a cancel");
            task.live = false;
            ran += 1;
            let want = if task.passed { at } else { ceil_to_tick(task.due, tick) };
            late_max = late_max.max(at.saturating_sub(ceil_to_tick(task.due, tick)));
            assert_eq!(at, want, "seed {seed} round {round}: task {id} due {:?} ran at {at:?}", task.due);
            assert_eq!(at, now);
        }
        drop(got);
        for task in tasks.iter().filter(|t| t.live) {
            assert!(
                !task.passed && ceil_to_tick(task.due, tick) > now,
                "seed {seed} round {round}: a due task left unrun"
            );
        }
    }
    assert!(ran > 50, "seed {seed}: only {ran} tasks ran");
    let stats = timer.stats();
    let pending = tasks.iter().filter(|t| t.live).count();
    assert_eq!(
        (stats.scheduled, stats.fired, stats.cancelled, stats.rearmed, stats.pending),
        (tasks.len() as u64, ran, cancels, resets, pending),
        "seed {seed}: stats"
    );
    assert_eq!(stats.lateness.count, ran);
    assert_eq!(stats.lateness.max, late_max, "seed {seed}: lateness only for deadlines set already passed");
}

#[test]
fn jumping_to_next_wakeup_fires_every_task_exactly_on_its_tick() {
    let ms10 = Duration::from_millis(10);
    for (i, (tick, wheel)) in [
        (ms10, 60usize),
        (ms10, 2),
        (ms10, 3),
        (Duration::from_millis(1), 512),
        (Duration::from_nanos(7_919), 5),
    ]
    .into_iter()
    .enumerate()
    {
        for seed in 0..6 {
            run(seed * 8 + i as u64 + 1, tick, wheel);
        }
    }
}
