//! A deadline passed within the tick under way fires at the next advance and takes with it the
//! entries of the tick after it due by then (`Core::take_due_by`, `src/shard/core/mid_tick.rs`;
//! `src/shard/core.rs`, "Passed deadlines mid-tick"): the take holds each such entry under its
//! shard's lock, as a flush does, and it is claimed as it runs. That take racing a reset and a
//! cancel of such an entry.

use std::time::Duration;

use crate::support::{manual_timer, spawn_advance, step, ticks, Drops, Runs};

/// The clock at 1.5 ticks, advanced; A due then (at 1.5 ticks: its tick ends at 2) waits in the
/// level-1 bucket of the round starting at tick 2 (wheel 2); B is given a zero delay then.
fn a_and_b(
) -> (delaywheel::ManualClock, loom::sync::Arc<delaywheel::Timer>, [Runs; 2], Drops, delaywheel::TimerHandle)
{
    let (clock, timer) = manual_timer(2);
    let (a, b, drops) = (Runs::default(), Runs::default(), Drops::default());
    let handle = timer.schedule(ticks(3) / 2, drops.guarding(a.task()));
    clock.advance(ticks(3) / 2);
    timer.advance_clock(Duration::ZERO);
    timer.schedule(Duration::ZERO, b.task());
    (clock, timer, [a, b], drops, handle)
}

/// The advance fires B and takes A beside it while `reset()` moves A later, to 6.5 ticks: either
/// the reset came first (`true`: A moved, and runs once, at tick 7, never before) or the take did
/// (`false`: A was held by the take's batch, and ran once, with B).
#[test]
fn reset_racing_the_take_beside_a_passed_deadline() {
    loom::model(|| {
        let (clock, timer, [a, b], _drops, handle) = a_and_b();

        let advancer = spawn_advance(&timer);
        let moved = handle.reset(ticks(5));
        advancer.join().unwrap();

        assert_eq!(b.count(), 1);
        assert_eq!(a.count(), usize::from(!moved), "A ran with B iff the reset did not move it");
        if moved {
            for _ in 0..5 {
                step(&clock, &timer, 1);
            }
            assert_eq!(a.count(), 0, "ran before the deadline the reset set");
            step(&clock, &timer, 1);
        }
        assert_eq!(a.count(), 1, "A runs once (moved: {moved})");
        assert!(timer.is_empty());
    });
}

/// The take racing `cancel()` of A: exactly one wins; A's closure is dropped once, nothing stays
/// pending, and the accounting holds.
#[test]
fn cancel_racing_the_take_beside_a_passed_deadline() {
    loom::model(|| {
        let (clock, timer, [a, b], drops, handle) = a_and_b();

        let advancer = spawn_advance(&timer);
        let cancelled = handle.cancel();
        advancer.join().unwrap();

        assert_eq!(b.count(), 1);
        assert_eq!(a.count(), usize::from(!cancelled), "A ran iff the cancel lost");
        assert_eq!(drops.count(), 1);
        step(&clock, &timer, 1);
        assert_eq!(a.count(), usize::from(!cancelled));
        assert!(timer.is_empty());
        let stats = timer.stats();
        assert_eq!(stats.fired + stats.cancelled, stats.scheduled, "{stats:?}");
    });
}
