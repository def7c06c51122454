//! One advance's work on the core (`advance.rs`, "Steps"): a long advance whose every step's
//! task schedules a task due by then walks each entry a bounded number of times, however many
//! steps it takes, counted by the shards' wheels (`Core::take_walked`). Over 2,000 steps, the
//! later rounds' walks of what the earlier ones kept would come to millions of entries.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::timer::Timer;
use crate::ManualClock;

const STEPS: u64 = 2_000;

/// A timer of 1 ms ticks on a manual clock, a task at each of the ticks 1..=STEPS that schedules
/// one more at `then(tick)` (a deadline the advance has reached: above its stamp limit, it waits
/// for the next advance): the entries walked by the one advance over them, then by the next.
fn walked_by_a_long_advance(then: fn(u64) -> Duration) -> (usize, usize) {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    let timer = Arc::new(timer);
    let (origin, ran) = (timer.now(), Arc::new(AtomicUsize::new(0)));
    for tick in 1..=STEPS {
        let (t, ran) = (Arc::clone(&timer), Arc::clone(&ran));
        timer.schedule(Duration::from_millis(tick), move || {
            let ran = Arc::clone(&ran);
            t.schedule_at(origin + then(tick), move || {
                ran.fetch_add(1, Ordering::Relaxed);
            });
        });
    }
    let core = &timer.shared().core;
    core.take_walked();
    clock.advance(Duration::from_millis(STEPS));
    timer.advance_clock(Duration::ZERO);
    assert_eq!((timer.len(), ran.load(Ordering::Relaxed)), (STEPS as usize, 0), "each one scheduled waits");
    let advance = core.take_walked();
    timer.advance_clock(Duration::ZERO);
    assert_eq!((timer.len(), ran.load(Ordering::Relaxed)), (0, STEPS as usize), "the next advance runs them");
    (advance, core.take_walked())
}

/// Each task schedules at its own tick, passed: the overdue list gains a kept entry a step, and
/// the advance's later rounds skip what its drains kept.
#[test]
fn kept_passed_deadlines_are_walked_a_bounded_number_of_times() {
    let (advance, next) = walked_by_a_long_advance(Duration::from_millis);
    assert!(advance <= 4 * STEPS as usize, "{advance} entries walked by the advance, {STEPS} steps");
    assert!(next <= 2 * STEPS as usize, "{next} walked by the next");
}

/// Each task schedules at the next tick, which the advance reaches: a bucket a step, whose flush
/// finds its entry above the limit.
#[test]
fn kept_entries_of_later_ticks_are_walked_a_bounded_number_of_times() {
    let (advance, next) = walked_by_a_long_advance(|tick| Duration::from_millis((tick + 1).min(STEPS)));
    assert!(advance <= 4 * STEPS as usize, "{advance} entries walked by the advance, {STEPS} steps");
    assert!(next <= 2 * STEPS as usize, "{next} walked by the next");
}
