//! Firing semantics on a manual clock: what Kafka's TimerTest, TimerTaskListTest and TimingWheelTest
//! check, in our own words, plus never-early / at-most-one-tick-late over random configurations.

mod common;

use std::time::Duration;

use common::{ceil_to_tick, manual_timer, ms, FireLog, SplitMix};
use delaywheel::Timer;

#[test]
fn already_expired_tasks_run_at_the_next_advance_not_inside_schedule() {
    let (clock, timer) = manual_timer(ms(1), 3);
    let log = FireLog::default();
    for id in 0..5 {
        let _ = timer.schedule(Duration::ZERO, log.task(id, &clock));
    }
    assert_eq!(log.count(), 0, "schedule must not run tasks");
    assert_eq!(timer.len(), 5);
    assert!(timer.advance_clock(Duration::ZERO));
    let mut ids = log.ids();
    ids.sort();
    assert_eq!(ids, vec![0, 1, 2, 3, 4]);
    assert!(timer.is_empty());
}

#[test]
fn expired_after_idle_period_runs_at_next_advance() {
    let (clock, timer) = manual_timer(ms(1), 4);
    clock.advance(Duration::from_secs(3600));
    let log = FireLog::default();
    let _ = timer.schedule(Duration::ZERO, log.task(1, &clock));
    let _ = timer.schedule(ms(2), log.task(2, &clock));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.ids(), vec![1]);
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.ids(), vec![1]);
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.ids(), vec![1, 2]);
}

/// Hundreds of delays across many levels of a tiny wheel (3 slots, tick 1 ms: level spans 3, 9,
/// 27, 81 … ms): each task fires exactly once, exactly at its deadline tick.
#[test]
fn many_delays_across_many_levels_fire_once_at_their_tick() {
    let (clock, timer) = manual_timer(ms(1), 3);
    let log = FireLog::default();
    let mut rng = SplitMix(7);
    let delays: Vec<u64> = (0..400).map(|i| if i < 200 { i } else { rng.range(0, 5_000) }).collect();
    for (id, &d) in delays.iter().enumerate() {
        let _ = timer.schedule(ms(d), log.task(id, &clock));
    }
    assert!(timer.stats().levels_in_use >= 7, "a 3-slot wheel needs many overflow levels");
    for _ in 0..=5_000 {
        timer.advance_clock(Duration::ZERO);
        clock.advance(ms(1));
    }
    let runs = log.runs();
    assert_eq!(runs.len(), delays.len(), "every task fires exactly once");
    let mut seen = vec![false; delays.len()];
    for (id, at) in runs {
        assert!(!seen[id], "task {id} fired twice");
        seen[id] = true;
        assert_eq!(at, ms(delays[id]), "task {id} fired at {at:?}, deadline {}ms", delays[id]);
    }
    assert!(timer.is_empty());
}

#[test]
fn sub_tick_deadlines_round_up_never_early() {
    let tick = ms(10);
    let (clock, timer) = manual_timer(tick, 8);
    clock.advance(Duration::from_micros(3_500)); // now is 3.5 ms, inside tick 0
    let log = FireLog::default();
    let _ = timer.schedule(Duration::from_micros(6_500), log.task(0, &clock)); // deadline 10 ms exactly
    let _ = timer.schedule(Duration::from_micros(6_501), log.task(1, &clock)); // deadline 10.001 ms
    clock.advance(Duration::from_micros(6_499)); // 9.999 ms
    timer.advance_clock(Duration::ZERO);
    assert!(log.ids().is_empty());
    clock.advance(Duration::from_nanos(1_000)); // 10 ms
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.ids(), vec![0]);
    clock.advance(ms(9)); // 19 ms: task 1's tick (20 ms) has not begun
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.ids(), vec![0]);
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.ids(), vec![0, 1]);
}

#[test]
fn advancing_within_a_tick_leaves_the_cursor() {
    let (clock, timer) = manual_timer(ms(10), 20);
    clock.advance(ms(25));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(timer.current_time(), ms(20));
    clock.advance(ms(4)); // 29 ms: still tick 2
    timer.advance_clock(Duration::ZERO);
    assert_eq!(timer.current_time(), ms(20));
    clock.advance(ms(1)); // 30 ms
    timer.advance_clock(Duration::ZERO);
    assert_eq!(timer.current_time(), ms(30));
}

#[test]
fn overflow_levels_are_created_lazily_and_reused() {
    let (clock, timer) = manual_timer(ms(1), 10); // spans 10 ms, 100 ms, 1 s, 10 s
    assert_eq!(timer.stats().levels_in_use, 0);
    let log = FireLog::default();
    let _ = timer.schedule(ms(5), log.task(0, &clock));
    assert_eq!(timer.stats().levels_in_use, 1);
    let _ = timer.schedule(ms(500), log.task(1, &clock));
    assert_eq!(timer.stats().levels_in_use, 2, "level 2 created; level 1 not needed yet");
    let _ = timer.schedule(ms(600), log.task(2, &clock));
    let _ = timer.schedule(ms(700), log.task(3, &clock));
    assert_eq!(timer.stats().levels_in_use, 2, "the overflow level is reused, not re-created");
    clock.advance(ms(700));
    for _ in 0..5 {
        timer.advance_clock(Duration::ZERO);
    }
    assert_eq!(log.count(), 4);
}

/// Five adds to one bucket queue it once; its next round reuses it, queued once again.
/// `flush_at_4`: a task due at tick 4 moves the wheel's placement time there by its flush (placement counts
/// from the last expiration flushed, as Kafka's `advanceClock(bucket.expiration)`).
fn queued_once_per_round(flush_at_4: bool) {
    let (clock, timer) = manual_timer(ms(1), 8);
    let log = FireLog::default();
    for id in 0..5 {
        let _ = timer.schedule(ms(3), log.task(id, &clock)); // same slot, same round
    }
    if flush_at_4 {
        let _ = timer.schedule(ms(4), || {});
    }
    assert_eq!(timer.stats().queued_buckets, 1 + usize::from(flush_at_4), "five adds, one queue entry");
    clock.advance(ms(3));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.count(), 5);
    assert_eq!(timer.stats().queued_buckets, usize::from(flush_at_4));
    // Next round of the same level-0 slot 3 (tick 11): from tick 4 it is inside level 0's window
    // [4, 12), so the reused bucket is queued again, once, and no other level is involved.
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    for id in 5..9 {
        let _ = timer.schedule(ms(7), log.task(id, &clock));
    }
    assert_eq!(timer.stats().queued_buckets, 1);
    // Levels count from the wheel's placement time, the last expiration flushed: tick 3 without
    // `flush_at_4`, from which tick 11 is in level 1 (a bucket of ticks 8..16 that cascades at 8).
    let levels = if flush_at_4 { 1 } else { 2 };
    assert_eq!(timer.stats().levels_in_use, levels, "the same level-0 bucket was reused");
    clock.advance(ms(6));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.count(), 5);
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.count(), 9);
}

#[test]
fn a_bucket_is_queued_once_per_round() {
    queued_once_per_round(false);
}

#[test]
fn a_bucket_is_queued_once_per_round_from_the_time_its_last_flush_set() {
    queued_once_per_round(true);
}

#[test]
fn advance_clock_reports_whether_a_bucket_was_flushed() {
    let (clock, timer) = manual_timer(ms(1), 8);
    assert!(!timer.advance_clock(Duration::ZERO), "nothing queued");
    let _ = timer.schedule(ms(2), || {});
    clock.advance(ms(1));
    assert!(!timer.advance_clock(Duration::ZERO), "not due yet");
    clock.advance(ms(1));
    assert!(timer.advance_clock(Duration::ZERO));
    assert!(!timer.advance_clock(Duration::ZERO));
}

#[test]
fn manual_clock_never_waits_even_with_a_timeout() {
    let (_clock, timer) = manual_timer(ms(1), 8);
    let _ = timer.schedule(ms(5), || {});
    let start = std::time::Instant::now();
    assert!(!timer.advance_clock(Duration::from_secs(30)));
    assert!(start.elapsed() < Duration::from_secs(10), "a manual clock must not wait");
}

/// A clock jump of days: every due task fires exactly once, in non-decreasing deadline order.
#[test]
fn clock_jump_fires_everything_due_in_deadline_order() {
    let (clock, timer) = manual_timer(ms(1), 16);
    let log = FireLog::default();
    let mut rng = SplitMix(99);
    let mut deadlines = Vec::new();
    for id in 0..2_000 {
        let d = rng.range(0, 3 * 86_400_000); // up to 3 days
        deadlines.push(d);
        let _ = timer.schedule(ms(d), log.task(id, &clock));
    }
    clock.advance(Duration::from_secs(2 * 86_400)); // jump two days
    while timer.advance_clock(Duration::ZERO) {}
    let ids = log.ids();
    let due = deadlines.iter().filter(|&&d| d <= 2 * 86_400_000).count();
    assert_eq!(ids.len(), due, "exactly the due tasks fired");
    let fired_deadlines: Vec<u64> = ids.iter().map(|&id| deadlines[id]).collect();
    assert!(fired_deadlines.windows(2).all(|w| w[0] <= w[1]), "fired out of deadline order");
    assert_eq!(timer.len(), deadlines.len() - due);
}

/// Never early, at most one tick late, `len()` exact: random ticks, wheel sizes, deadlines, and
/// clock steps from sub-tick to multi-level jumps. After every step, the set of fired tasks is
/// exactly the set whose deadline tick has begun (for a zero delay: the tick it was scheduled in,
/// and with it the tasks of the next tick due by then: docs/design.md, "Time semantics").
#[test]
fn fires_exactly_the_due_tasks_at_every_step_over_random_configurations() {
    let mut rng = SplitMix(2026);
    for round in 0..40 {
        let tick = Duration::from_micros(rng.range(1, 20_000));
        let wheel_size = rng.range(2, 70) as usize;
        let (clock, timer) = manual_timer(tick, wheel_size);
        clock.advance(Duration::from_nanos(rng.range(0, 1_000_000_000)));
        let log = FireLog::default();
        let mut deadlines = Vec::new(); // (id, deadline as clock time)
        let mut zero = Vec::new(); // scheduled with a zero delay: due at the next advance
        let mut fired = vec![false; 0];
        let mut beside = vec![false; 0]; // due by a zero delay set mid-tick in their tick under way
        for step in 0..150 {
            // Schedule a few, with delays from zero to many levels away.
            let (at, mut passed) = (clock.now(), false);
            for _ in 0..rng.range(0, 4) {
                let scale = [1u64, 1_000, 1_000_000, 1_000_000_000][rng.range(0, 4) as usize];
                let delay = Duration::from_nanos(rng.range(0, 50) * scale);
                let id = deadlines.len();
                deadlines.push(clock.now() + delay);
                zero.push(delay.is_zero());
                fired.push(false);
                beside.push(false);
                passed |= delay.is_zero();
                let _ = timer.schedule(delay, log.task(id, &clock));
            }
            let under_way = ceil_to_tick(at, tick);
            if passed && under_way > at {
                for (id, deadline) in deadlines.iter().enumerate() {
                    beside[id] |= ceil_to_tick(*deadline, tick) == under_way && *deadline <= at;
                }
            }
            let step_ns = [0u64, 1, 1_000, 1_000_000, 50_000_000, 5_000_000_000][rng.range(0, 6) as usize];
            clock.advance(Duration::from_nanos(rng.range(0, step_ns + 1)));
            timer.advance_clock(Duration::ZERO);
            let now = clock.now();
            for (id, at) in log.runs() {
                fired[id] = true;
                assert!(at >= deadlines[id], "round {round} step {step}: task {id} early");
            }
            for (id, deadline) in deadlines.iter().enumerate() {
                let due = zero[id] || beside[id] || ceil_to_tick(*deadline, tick) <= now;
                assert_eq!(
                    fired[id], due,
                    "round {round} step {step}: tick {tick:?} wheel {wheel_size}: task {id} deadline {deadline:?} now {now:?}"
                );
            }
            assert_eq!(timer.len(), fired.iter().filter(|f| !**f).count());
            assert_eq!(log.count(), fired.iter().filter(|f| **f).count(), "a task fired twice");
        }
    }
}

/// The tick-driven three-level wheel's configuration (tick 10 ms, 60 slots: 600 ms / 36 s / 36 min) expressed
/// on this timer, advanced tick by tick as that wheel's driver would: each task fires at its tick.
#[test]
fn the_tick_driven_three_level_configuration_behaves() {
    let tick = ms(10);
    let (clock, timer) = manual_timer(tick, 60);
    let log = FireLog::default();
    let delays = [ms(500), Duration::from_secs(5), Duration::from_secs(20), Duration::from_secs(40)];
    for (id, d) in delays.iter().enumerate() {
        let _ = timer.schedule(*d, log.task(id, &clock));
    }
    let mut steps = 0;
    while log.count() < delays.len() {
        clock.advance(tick);
        timer.advance_clock(Duration::ZERO);
        steps += 1;
        assert!(steps <= 4_001);
    }
    for (id, at) in log.runs() {
        assert_eq!(at, delays[id]);
    }
}

/// The tasks of one tick fire in the order of their exact deadlines (to a 256th of a tick), not in
/// the order they were scheduled: in level 0 directly, and after a cascade from level 1.
#[test]
fn a_ticks_tasks_fire_in_deadline_order_within_the_tick() {
    let us = Duration::from_micros;
    let (clock, timer) = manual_timer(ms(1), 8);
    let log = FireLog::default();
    // Tick 3 (deadlines in (2, 3] ms), scheduled in scrambled order; then tick 21 of level 1
    // (8 slots of 1 ms make level 0 span 8 ms), which cascades before it fires.
    let order = [(0, us(2_900)), (1, us(2_050)), (2, us(3_000)), (3, us(2_500)), (4, us(2_001))];
    let cascaded = [(10, us(20_700)), (11, us(20_010)), (12, us(21_000)), (13, us(20_400))];
    for &(id, delay) in order.iter().chain(&cascaded) {
        let _ = timer.schedule(delay, log.task(id, &clock));
    }
    clock.advance(ms(3));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.ids(), vec![4, 1, 3, 0, 2], "tick 3 in deadline order");
    for _ in 3..21 {
        clock.advance(ms(1));
        timer.advance_clock(Duration::ZERO);
    }
    assert_eq!(log.ids()[5..], [11, 13, 10, 12], "tick 21, after its cascade, in deadline order");
    assert!(log.runs()[5..].iter().all(|&(_, at)| at == ms(21)), "{:?}", log.runs());
}

#[test]
fn tasks_fired_in_one_advance_see_their_own_deadline_order() {
    let (clock, timer) = manual_timer(ms(1), 4);
    let log = FireLog::default();
    for (id, d) in [(0, 30u64), (1, 10), (2, 20), (3, 5)] {
        let _ = timer.schedule(ms(d), log.task(id, &clock));
    }
    clock.advance(ms(100));
    while timer.advance_clock(Duration::ZERO) {}
    assert_eq!(log.ids(), vec![3, 1, 2, 0]);
}

#[test]
fn timer_default_is_usable() {
    let timer = Timer::default();
    assert_eq!(timer.tick(), delaywheel::DEFAULT_TICK);
    assert_eq!(timer.wheel_size(), delaywheel::DEFAULT_WHEEL_SIZE);
}
