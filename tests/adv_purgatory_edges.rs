//! The purgatory at its edges: `delayed()` through the life of operations whose timeout is beyond
//! the timer's range (completed, cancelled, never expiring); a timeout refused by `max_pending`
//! expiring at once on the registering thread; one `Arc` registered twice being two operations;
//! sub-tick timeouts expiring on the first tick boundary at or after them, never early; and
//! `stats()` adding up.

mod common;
mod purgatory_support;

use std::sync::Arc;
use std::time::Duration;

use common::ms;
use delaywheel::purgatory::Purgatory;
use delaywheel::{ManualClock, Timer};
use purgatory_support::{advance, manual_purgatory, MockOp};

/// Operations with `Duration::MAX` timeouts count in `delayed()` until a check completes them or
/// a cancel returns them; neither leaves a count behind, nor a timer task, nor a watch.
#[test]
fn never_expiring_operations_count_in_delayed_until_completed_or_cancelled() {
    let (clock, purgatory) = manual_purgatory::<u32, MockOp>();
    let checked = Arc::new(MockOp::new());
    let cancelled = Arc::new(MockOp::new());
    let keyless = Arc::new(MockOp::new());
    assert!(!purgatory.try_complete_else_watch(checked.clone(), Duration::MAX, [1, 2]));
    assert!(!purgatory.try_complete_else_watch(cancelled.clone(), Duration::MAX, [3, 3, 2]));
    assert!(!purgatory.try_complete_else_watch(keyless.clone(), Duration::MAX, []));
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (3, 5, 3));
    advance(&clock, &purgatory, Duration::from_secs(86_400 * 365));
    assert_eq!(purgatory.delayed(), 3);
    checked.set_completable();
    assert_eq!(purgatory.check_and_complete(&2), 1);
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (2, 3, 2));
    let back = purgatory.cancel_for_key(&3);
    assert_eq!(back.len(), 1);
    assert!(Arc::ptr_eq(&back[0], &cancelled));
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (1, 0, 0));
    assert!(purgatory.cancel_for_key(&2).is_empty());
    advance(&clock, &purgatory, Duration::from_secs(86_400 * 365));
    let stats = purgatory.stats();
    assert_eq!((stats.delayed, stats.completed, stats.expired), (1, 1, 0));
    for op in [&checked, &cancelled, &keyless] {
        assert_eq!(op.violations(), 0);
    }
    assert_eq!((checked.completions(), cancelled.completions(), keyless.completions()), (1, 0, 0));
}

/// A timer holding its `max_pending` timeouts: the next registration expires at once, on the
/// registering thread (`on_complete`, then `on_expiration`), keeps no watch and no count; once a
/// timeout left, registrations wait again.
#[test]
fn a_timeout_refused_by_max_pending_expires_at_once_and_keeps_nothing() {
    let clock = ManualClock::new();
    let timer =
        Timer::builder().tick(ms(1)).wheel_size(8).clock(clock.clone()).max_pending(1).manual().build();
    let purgatory: Purgatory<u8, MockOp> = Purgatory::with_timer(timer);
    let waiting = Arc::new(MockOp::new());
    assert!(!purgatory.try_complete_else_watch(waiting.clone(), ms(10), [1]));
    let refused = Arc::new(MockOp::new());
    purgatory.try_complete_else_watch(refused.clone(), ms(10), [1, 2]);
    assert_eq!((refused.completions(), refused.expirations()), (1, 1), "expired at once");
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (1, 1, 1));
    assert_eq!(purgatory.expired(), 1);
    waiting.set_completable();
    assert_eq!(purgatory.check_and_complete(&1), 1);
    assert_eq!(purgatory.delayed(), 0);
    let next = Arc::new(MockOp::new());
    assert!(!purgatory.try_complete_else_watch(next.clone(), ms(10), [2]));
    assert_eq!((next.completions(), purgatory.delayed()), (0, 1));
    advance(&clock, &purgatory, ms(10));
    assert_eq!((next.completions(), next.expirations(), purgatory.expired()), (1, 1, 2));
    for op in [&waiting, &refused, &next] {
        assert_eq!(op.violations(), 0);
    }
}

/// One `Arc` registered twice while pending is two operations: `delayed()` is 2, a check of a
/// shared key completes both (two `on_complete` calls, each registration once), and the timeouts
/// of both are gone.
#[test]
fn one_arc_registered_twice_is_two_operations() {
    let (clock, purgatory) = manual_purgatory::<u8, MockOp>();
    let op = Arc::new(MockOp::new());
    assert!(!purgatory.try_complete_else_watch(op.clone(), ms(5), [1]));
    assert!(!purgatory.try_complete_else_watch(op.clone(), ms(7), [1, 2]));
    assert_eq!((purgatory.delayed(), purgatory.watched()), (2, 3));
    op.completable.store(true, std::sync::atomic::Ordering::SeqCst);
    // MockOp counts a second on_complete as a violation: here it is expected, once.
    assert_eq!(purgatory.check_and_complete(&1), 2);
    assert_eq!(op.completions(), 2);
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (0, 0, 0));
    advance(&clock, &purgatory, ms(10));
    assert_eq!((op.completions(), op.expirations()), (2, 0));
    assert_eq!(Arc::strong_count(&op), 1, "the purgatory keeps no reference");
}

/// Timeouts of a fraction of a tick, on a boundary, and a nanosecond past it, registered at clock
/// readings between boundaries: each expires at the first boundary at or after its deadline.
#[test]
fn sub_tick_timeouts_expire_at_the_first_boundary_at_or_after_their_deadline() {
    let (clock, purgatory) = manual_purgatory::<u32, MockOp>();
    clock.advance(Duration::from_micros(300));
    purgatory.advance_clock(Duration::ZERO);
    let cases = [
        (Duration::from_micros(1), ms(1)),
        (Duration::from_micros(700), ms(1)),
        (Duration::from_micros(700) + Duration::from_nanos(1), ms(2)),
        (ms(3) - Duration::from_micros(300), ms(3)),
        (ms(3), Duration::from_micros(3_300).max(ms(4))),
    ];
    let ops: Vec<(Arc<MockOp>, Duration)> = cases
        .iter()
        .enumerate()
        .map(|(i, &(timeout, due))| {
            let op = Arc::new(MockOp::new());
            assert!(!purgatory.try_complete_else_watch(op.clone(), timeout, [i as u32]));
            (op, due)
        })
        .collect();
    let step = Duration::from_micros(100);
    while clock.now() < ms(5) {
        advance(&clock, &purgatory, step);
        let now = clock.now();
        for (i, (op, due)) in ops.iter().enumerate() {
            assert_eq!(op.expirations() == 1, now >= *due, "case {i} at {now:?}: due {due:?}");
        }
    }
    assert_eq!(purgatory.delayed(), 0);
}
