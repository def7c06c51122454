//! `len()` under concurrent schedule, cancel and fire, and the `max_pending` bound.

use std::time::Duration;

use delaywheel::{ManualClock, ScheduleError, Timer};
use loom::sync::Arc;

use crate::support::{manual_timer, spawn_advance, ticks, Runs, TICK};

/// A and B are due; the advancing thread fires them while the main thread cancels B and schedules C.
/// `len()` counts each task out exactly once, by whichever party moved it out of `Pending` (Netty
/// once decremented twice when cancel raced expiry, netty#14959): read mid-race it is 1 or 2, never
/// wrapped; once the threads are joined it is exactly 1 (C), and the totals add up.
#[test]
fn len_exact_under_schedule_cancel_fire() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let (a, b, c) = (Runs::default(), Runs::default(), Runs::default());
        timer.schedule(ticks(1), a.task());
        let handle_b = timer.schedule(ticks(1), b.task());
        clock.advance(ticks(1));
        assert_eq!(timer.len(), 2);

        let advancer = spawn_advance(&timer);
        let cancelled = handle_b.cancel();
        let handle_c = timer.schedule(ticks(2), c.task());
        let seen = timer.len();
        advancer.join().unwrap();

        assert!((1..=2).contains(&seen), "len() mid-race was {seen}");
        assert_eq!(b.count() + usize::from(cancelled), 1);
        assert_eq!(a.count(), 1);
        assert_eq!(timer.len(), 1, "only C is pending");
        let stats = timer.stats();
        assert_eq!(stats.scheduled, 3);
        assert_eq!(stats.fired + stats.cancelled + stats.pending as u64, 3);
        assert!(handle_c.cancel());
        assert!(timer.is_empty());
        timer.advance_clock(Duration::ZERO);
        assert_eq!(c.count(), 0);
    });
}

/// Task A is pending throughout while another thread schedules and cancels B: `len()` read mid-race
/// is 1 or 2, never 0 while A waits, never wrapped. `len()` sums the shards' counts, each read
/// without its shard's lock and written under it (`src/timer/mod.rs`, "Counts"): A is
/// counted in the main thread's shard, B in and out of the other thread's (one shard where the
/// host has one core). `shard::len_unlocked_racing_insert_and_cancel` models one shard's count
/// with its seeded fault (`shard_count_after_unlock`).
#[test]
fn len_never_below_pending_while_racing_schedule_and_cancel() {
    loom::model(|| {
        let (_clock, timer) = manual_timer(2);
        let (a, b) = (Runs::default(), Runs::default());
        let handle_a = timer.schedule(ticks(1), a.task());

        let other = {
            let (timer, b) = (Arc::clone(&timer), b.clone());
            loom::thread::spawn(move || timer.schedule(ticks(1), b.task()).cancel())
        };
        let seen = timer.len();
        let cancelled = other.join().unwrap();

        assert!(cancelled, "B is cancelled before it can fire");
        assert!((1..=2).contains(&seen), "len() mid-race was {seen} while A was pending");
        assert_eq!(timer.len(), 1, "only A is pending");
        assert!(handle_a.cancel());
        assert!(timer.is_empty());
        assert_eq!(a.count() + b.count(), 0);
    });
}

/// With `max_pending(1)`, two schedulers race for the one place: exactly one is accepted, the other
/// gets `TooManyPending`, and the count is exact afterwards (the refused one's increment is undone).
#[test]
fn max_pending_holds_under_racing_schedules() {
    loom::model(|| {
        let clock = ManualClock::new();
        let timer =
            Timer::builder().tick(TICK).wheel_size(2).clock(clock.clone()).manual().max_pending(1).build();
        let timer = Arc::new(timer);
        let (a, b) = (Runs::default(), Runs::default());

        let other = {
            let (timer, a) = (Arc::clone(&timer), a.clone());
            loom::thread::spawn(move || timer.try_schedule(ticks(1), a.task()))
        };
        let here = timer.try_schedule(ticks(1), b.task());
        let there = other.join().unwrap();

        assert_eq!(usize::from(here.is_ok()) + usize::from(there.is_ok()), 1, "exactly one accepted");
        let refused = if here.is_ok() { there } else { here };
        assert!(matches!(refused, Err(ScheduleError::TooManyPending { max: 1 })), "{refused:?}");
        assert_eq!(timer.len(), 1);
        assert_eq!(timer.stats().scheduled, 1);
        clock.advance(ticks(1));
        timer.advance_clock(Duration::ZERO);
        assert_eq!(a.count() + b.count(), 1);
        assert!(timer.is_empty());
    });
}
