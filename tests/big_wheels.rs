//! Wheels far bigger than the default, up to `MAX_WHEEL_SIZE`: a day of one-second slots, 100 000
//! slots, 2^24 slots. Every task fires at its exact tick on a manual clock (never early, cascading
//! through the levels), a big wheel creates only the buckets its tasks need, and a size over the
//! maximum is a clear error.

mod common;

use std::time::Duration;

use common::{manual_timer, FireLog};
use delaywheel::{BuildError, ManualClock, Timer, MAX_WHEEL_SIZE};

const DAY: u64 = 86_400;

/// Moves the clock to `at` and advances until nothing more is flushed.
fn run_to(clock: &ManualClock, timer: &Timer, at: Duration) {
    clock.advance(at - clock.now());
    while timer.advance_clock(Duration::ZERO) {}
}

/// Schedules a task due `deadlines[i]` ticks after `start` (the clock moved there first, nothing
/// pending), checks how many land in each level, then steps the clock to one nanosecond before and
/// to each deadline: each task fires exactly at its tick, once, never before.
fn each_fires_at_its_tick(
    (clock, timer): (&ManualClock, &Timer),
    tick: Duration,
    start: u64,
    deadlines: &[u64],
    per_level: &[usize],
) {
    let log = FireLog::default();
    let at = |ticks: u64| Duration::from_nanos(u64::try_from(tick.as_nanos()).unwrap() * ticks);
    run_to(clock, timer, at(start));
    for (id, &deadline) in deadlines.iter().enumerate() {
        timer.schedule(at(deadline - start), log.task(id, clock));
    }
    assert_eq!(timer.stats().pending_per_level, per_level, "levels of {deadlines:?}");
    let mut sorted = deadlines.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    for deadline in sorted {
        run_to(clock, timer, at(deadline) - Duration::from_nanos(1));
        let early: Vec<_> = log.ids().into_iter().filter(|&id| deadlines[id] >= deadline).collect();
        assert!(early.is_empty(), "{early:?} fired before tick {deadline}");
        run_to(clock, timer, at(deadline));
        for id in (0..deadlines.len()).filter(|&id| deadlines[id] == deadline) {
            let runs: Vec<_> = log.runs().into_iter().filter(|&(ran, _)| ran == id).collect();
            assert_eq!(runs, [(id, at(deadline))], "task {id} due at tick {deadline}");
        }
    }
    assert_eq!(log.count(), deadlines.len());
    assert!(timer.is_empty());
}

/// A day of one-second slots, from zero and then from a base that is no day's start.
/// `flush_at_base`: a task due at that base moves the wheel's placement time there by its flush (placement
/// counts from the last expiration flushed, as Kafka's `advanceClock(bucket.expiration)`).
fn a_day_of_one_second_slots(flush_at_base: bool) {
    let tick = Duration::from_secs(1);
    let (clock, timer) = manual_timer(tick, DAY as usize);
    // Within the day: level 0, up to its last slot. From a day on: level 1 (slots of a day), which
    // cascades into level 0 at the day's start. Past a day of days: level 2.
    // (A day of days is 236 years: the clock's range, 584 years, holds one and a half.)
    let deadlines = [1, DAY - 1, DAY, DAY + 1, 2 * DAY + 17, 5 * DAY + 3, DAY * DAY + 1, DAY * DAY * 3 / 2];
    each_fires_at_its_tick((&clock, &timer), tick, 0, &deadlines, &[2, 4, 2]);
    // From a base that is no day's start: the level-0 window wraps past slot 0.
    let start = DAY * DAY * 3 / 2 + 12_345;
    if flush_at_base {
        let _ = timer.schedule(Duration::from_secs(12_345), || {});
    }
    let deadlines = [start + 1, start + DAY - 1, start + DAY, start + DAY + 1];
    // Levels count from the wheel's placement time, the last expiration flushed (as Kafka's
    // `advanceClock(bucket.expiration)`): a day of days and a half without `flush_at_base`, from
    // which `start + DAY - 1` is past level 0.
    let per_level: &[usize] = if flush_at_base { &[2, 2, 0] } else { &[1, 3, 0] };
    each_fires_at_its_tick((&clock, &timer), tick, start, &deadlines, per_level); // level 2 exists
    assert!(timer.stats().resident_buckets < DAY as usize / 10, "{:?}", timer.stats());
}

#[test]
fn a_day_of_one_second_slots_fires_each_task_at_its_second() {
    a_day_of_one_second_slots(false);
}

#[test]
fn a_day_of_one_second_slots_fires_each_task_at_its_second_from_a_flushed_base() {
    a_day_of_one_second_slots(true);
}

#[test]
fn a_hundred_thousand_slots_fire_near_and_far_deadlines_at_their_tick() {
    let tick = Duration::from_millis(1);
    let (clock, timer) = manual_timer(tick, 100_000);
    let deadlines = [3, 99_999, 100_000, 10_000_003, 10_000_000_007, 10_000_000_007];
    each_fires_at_its_tick((&clock, &timer), tick, 0, &deadlines, &[2, 2, 2]);
}

#[test]
fn the_largest_wheel_fires_at_the_tick_and_creates_only_the_chunks_it_uses() {
    let tick = Duration::from_micros(1);
    let (clock, timer) = manual_timer(tick, MAX_WHEEL_SIZE);
    assert_eq!(timer.wheel_size(), 1 << 24);
    assert_eq!(timer.stats().resident_buckets, 0, "a fresh timer creates no bucket");
    let size = MAX_WHEEL_SIZE as u64;
    let deadlines = [2, size - 1, size, size + 1, (size << 24) + 5];
    each_fires_at_its_tick((&clock, &timer), tick, 0, &deadlines, &[2, 2, 1]);
    // The chunks of level 0's first and last slots, and level 1's and 2's first: four of at most
    // 512 buckets, where whole levels would be three times 2^24.
    let stats = timer.stats();
    assert!(stats.resident_buckets <= 4 * 512, "{stats:?}");
    assert_eq!(stats.levels_in_use, 3);
}

#[test]
fn every_size_up_to_the_maximum_builds_and_none_above() {
    assert_eq!(MAX_WHEEL_SIZE, 16_777_216);
    for size in [2, 3, 511, 513, 86_400, 100_000, (1 << 23) + 1, MAX_WHEEL_SIZE - 1, MAX_WHEEL_SIZE] {
        let timer = Timer::builder().wheel_size(size).manual().try_build().unwrap();
        assert_eq!((timer.wheel_size(), timer.stats().resident_buckets), (size, 0));
    }
    for size in [MAX_WHEEL_SIZE + 1, 1 << 32, usize::MAX] {
        let err = Timer::builder().wheel_size(size).manual().try_build().unwrap_err();
        assert!(matches!(err, BuildError::WheelSizeTooLarge(got) if got == size), "{err:?}");
        let message = err.to_string();
        assert!(message.contains("at most 16777216") && message.contains(&size.to_string()), "{message}");
    }
}
