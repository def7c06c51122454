//! The seeds' tick-driven configuration (10 ms tick, 60 slots: levels of 600 ms, 36 s and
//! 36 min) and the smallest wheels (2 and 3 slots) on a `ManualClock`: every task fires exactly
//! at the first tick boundary at or after its deadline across level boundaries, whether the
//! clock walks there by `next_wakeup`, by random steps or in one jump of hours; one advance over
//! many ticks fires the tasks in deadline order (to a 256th of a tick within a tick), tasks due
//! at one instant in the order they were first scheduled across `schedule`, `schedule_at` and
//! `reset_at`; and `len`, `deadline` and `next_wakeup` stay exact throughout.

mod common;

use std::time::Duration;

use common::{ceil_to_tick, manual_timer, FireLog, SplitMix};
use delaywheel::{ManualClock, Timer, TimerHandle};

const TICK: Duration = Duration::from_millis(10);

/// Deadlines (as time since the clock's origin) on and beside each level boundary of the seeds'
/// configuration, and hours away.
fn seed_deadlines() -> Vec<Duration> {
    let ns = Duration::from_nanos;
    let mut out = Vec::new();
    for edge in [
        TICK,
        Duration::from_millis(600),
        Duration::from_secs(36),
        Duration::from_secs(36 * 60),
        Duration::from_secs(36 * 60 * 60),
    ] {
        for at in [edge - ns(1), edge, edge + ns(1), edge - TICK, edge + TICK, edge + TICK / 2] {
            out.push(at);
        }
    }
    out.extend([Duration::from_secs(2 * 3600), Duration::from_secs(25 * 3600) + ns(7)]);
    out
}

/// Schedules every deadline from a clock at zero, alternating `schedule` and `schedule_at`.
fn schedule_all(
    timer: &Timer,
    clock: &ManualClock,
    runs: &FireLog,
    deadlines: &[Duration],
) -> Vec<TimerHandle> {
    let origin = timer.now();
    deadlines
        .iter()
        .enumerate()
        .map(|(id, &at)| {
            let h = if id % 2 == 0 {
                timer.schedule(at - clock.now(), runs.task(id, clock))
            } else {
                timer.schedule_at(origin + at, runs.task(id, clock))
            };
            assert_eq!(h.deadline(), Some(origin + at), "task {id}: deadline to the nanosecond");
            h
        })
        .collect()
}

/// Walking the clock straight to each `next_wakeup` fires every task exactly on its boundary:
/// `next_wakeup` is never later than the earliest task's tick, so no task is ever late.
#[test]
fn a_walk_by_next_wakeup_fires_every_task_exactly_on_its_boundary() {
    let (clock, timer) = manual_timer(TICK, 60);
    let runs = FireLog::default();
    let deadlines = seed_deadlines();
    let handles = schedule_all(&timer, &clock, &runs, &deadlines);
    let mut steps = 0;
    while let Some(next) = timer.next_wakeup() {
        let earliest = handles.iter().filter_map(|h| h.deadline()).min().unwrap();
        let earliest_tick = timer.now() + (ceil_to_tick(earliest - timer.now(), TICK));
        assert!(next <= earliest_tick, "next_wakeup {next:?} after the earliest tick {earliest_tick:?}");
        if next > timer.now() {
            clock.advance(next - timer.now());
        }
        timer.advance_clock(Duration::ZERO);
        steps += 1;
        assert!(steps < 10_000, "the walk does not end");
    }
    assert!(timer.is_empty());
    let got = runs.runs();
    assert_eq!(got.len(), deadlines.len());
    for (id, at) in got {
        assert_eq!(at, ceil_to_tick(deadlines[id], TICK), "task {id} (deadline {:?})", deadlines[id]);
    }
}

/// Random steps, from a nanosecond to hours: each task fires at the first advance whose clock
/// reading has reached its boundary, and `len` counts exactly the tasks not yet fired.
#[test]
fn random_steps_fire_each_task_at_the_first_advance_past_its_boundary() {
    for (tick, wheel) in
        [(TICK, 60usize), (TICK, 2), (TICK, 3), (Duration::from_micros(1), 2), (Duration::from_micros(1), 3)]
    {
        let mut rng = SplitMix(wheel as u64 * 31 + tick.as_nanos() as u64);
        let (clock, timer) = manual_timer(tick, wheel);
        let runs = FireLog::default();
        let scale = tick.as_nanos() as u64;
        let deadlines: Vec<Duration> = (0..300)
            .map(|_| match rng.range(0, 4) {
                0 => Duration::from_nanos(rng.range(0, scale * 4)),
                1 => Duration::from_nanos(rng.range(0, scale * 200)),
                2 => Duration::from_nanos(rng.range(0, scale * 8_000)),
                _ => Duration::from_nanos(rng.range(0, scale * 500_000)),
            })
            .collect();
        let _handles: Vec<TimerHandle> =
            deadlines.iter().enumerate().map(|(id, &at)| timer.schedule(at, runs.task(id, &clock))).collect();
        let mut fired_before = 0;
        while !timer.is_empty() {
            let step = match rng.range(0, 3) {
                0 => rng.range(1, scale),
                1 => rng.range(1, scale * 100),
                _ => rng.range(1, scale * 20_000),
            };
            clock.advance(Duration::from_nanos(step));
            timer.advance_clock(Duration::ZERO);
            let now = clock.now();
            let got = runs.runs();
            for &(id, at) in &got[fired_before..] {
                assert_eq!(at, now);
                assert!(
                    ceil_to_tick(deadlines[id], tick) <= now,
                    "tick {tick:?} wheel {wheel}: task {id} early"
                );
            }
            fired_before = got.len();
            let due = deadlines.iter().filter(|&&d| ceil_to_tick(d, tick) <= now).count();
            assert_eq!(got.len(), due, "tick {tick:?} wheel {wheel}: at {now:?}");
            assert_eq!(timer.len(), deadlines.len() - due);
        }
    }
}

/// One jump of 40 hours fires everything in one advance, in deadline order.
#[test]
fn one_jump_of_hours_fires_everything_in_deadline_order() {
    for wheel in [60usize, 2, 3] {
        let (clock, timer) = manual_timer(TICK, wheel);
        let runs = FireLog::default();
        let mut deadlines = seed_deadlines();
        deadlines.reverse();
        let _h = schedule_all(&timer, &clock, &runs, &deadlines);
        clock.advance(Duration::from_secs(40 * 3600));
        assert!(timer.advance_clock(Duration::ZERO));
        assert!(timer.is_empty());
        let order: Vec<Duration> = runs.runs().iter().map(|&(id, _)| deadlines[id]).collect();
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(order, sorted, "wheel {wheel}");
    }
}

/// Within one tick, tasks fire in deadline order to a 256th of the tick, whichever level each
/// waited in; scheduled in reverse, on wheels of 60, 3 and 2 slots, walked tick by tick or in
/// one jump.
#[test]
fn within_a_tick_tasks_fire_in_deadline_order_by_256ths_from_every_level() {
    let sub = TICK / 256;
    for wheel in [60usize, 3, 2] {
        for jump in [false, true] {
            let (clock, timer) = manual_timer(TICK, wheel);
            let runs = FireLog::default();
            // Tick 4000 (40 s: level 2 of the seeds' wheel when scheduled at 0).
            let base = TICK * 3_999;
            let offsets: Vec<u32> = vec![255, 200, 128, 64, 3, 2, 1, 0, 256];
            let mut deadlines = Vec::new();
            for (id, &k) in offsets.iter().enumerate() {
                let at = base + sub * k + Duration::from_nanos(1);
                let at = if k == 256 { base + TICK } else { at };
                deadlines.push(at);
                // A third scheduled late, from a nearer level.
                if id % 3 != 0 {
                    timer.schedule(at, runs.task(id, &clock));
                }
            }
            clock.advance(Duration::from_secs(39));
            timer.advance_clock(Duration::ZERO);
            for (id, &at) in deadlines.iter().enumerate() {
                if id % 3 == 0 {
                    timer.schedule(at - clock.now(), runs.task(id, &clock));
                }
            }
            if jump {
                clock.advance(Duration::from_secs(2));
                timer.advance_clock(Duration::ZERO);
            } else {
                while !timer.is_empty() {
                    clock.advance(TICK);
                    timer.advance_clock(Duration::ZERO);
                }
            }
            let order = runs.ids();
            let mut expected: Vec<usize> = (0..offsets.len()).collect();
            expected.sort_by_key(|&id| deadlines[id]);
            assert_eq!(order, expected, "wheel {wheel}, jump {jump}");
            assert!(runs.runs().iter().all(|&(_, at)| at >= base + TICK));
        }
    }
}

/// Tasks due at one instant fire in the order they were first scheduled, whether scheduled by
/// delay, by instant, or moved there by `reset_at` / `reset` from a later or an earlier deadline
/// in another level.
#[test]
fn one_instant_reached_by_schedule_schedule_at_and_resets_fires_first_scheduled_first() {
    for wheel in [60usize, 2, 3] {
        let (clock, timer) = manual_timer(TICK, wheel);
        let runs = FireLog::default();
        clock.advance(Duration::from_millis(3));
        let target = timer.now() + Duration::from_secs(36);
        let h0 = timer.schedule(Duration::from_secs(7200), runs.task(0, &clock)); // moved in later
        let _h1 = timer.schedule(Duration::from_secs(36), runs.task(1, &clock));
        let h2 = timer.schedule(Duration::from_millis(5), runs.task(2, &clock)); // moved later
        let _h3 = timer.schedule_at(target, runs.task(3, &clock));
        let h4 = timer.schedule(Duration::from_secs(100), runs.task(4, &clock));
        let _h5 = timer.schedule(Duration::from_secs(36), runs.task(5, &clock));
        clock.advance(Duration::from_millis(2));
        timer.advance_clock(Duration::ZERO);
        assert!(h4.reset_at(target));
        assert!(h0.reset_at(target));
        assert!(h2.reset(target - timer.now()));
        for h in [&h0, &h2, &h4] {
            assert_eq!(h.deadline(), Some(target));
        }
        clock.advance(Duration::from_secs(35));
        timer.advance_clock(Duration::ZERO);
        assert!(runs.runs().is_empty());
        clock.advance(Duration::from_secs(2));
        timer.advance_clock(Duration::ZERO);
        let order = runs.ids();
        assert_eq!(order, [0, 1, 2, 3, 4, 5], "wheel {wheel}");
    }
}
