//! The ends of the clock and of the input on a `ManualClock`: a 1 µs tick on a 2-slot wheel
//! serving deadlines centuries away exactly; a clock at its last reading (584 years) where only
//! what is due is accepted; instants past the range refused the same way by `schedule_at`,
//! `reset_at` (the task keeps its old deadline) and `queue.insert_at` (the value handed back);
//! invalid builds refused with their reasons; and a timer shut down refusing everything while
//! dropping each refused closure and value.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{manual_timer, ms, Counter};
use delaywheel::queue::DelayQueue;
use delaywheel::{BuildError, ScheduleError, Timer, MAX_WHEEL_SIZE};

/// Counts its drops.
struct Tracked(Arc<AtomicUsize>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A 1 µs tick and 2 slots: about 55 levels. Deadlines from a microsecond to `max_delay` keep
/// their instants, `next_wakeup` is never after the earliest, and each fires on its boundary
/// when the clock is walked there by `next_wakeup`.
#[test]
fn a_two_slot_microsecond_wheel_serves_centuries_exactly() {
    let tick = Duration::from_micros(1);
    let (clock, timer) = manual_timer(tick, 2);
    let origin = timer.now();
    let max = timer.max_delay();
    assert!(max > Duration::from_secs(500 * 365 * 86_400), "{max:?}");
    let count = Counter::default();
    let delays = [
        Duration::from_micros(1),
        Duration::from_nanos(1_500),
        Duration::from_secs(3600),
        Duration::from_secs(86_400 * 365),
        Duration::from_secs(86_400 * 365 * 100) + Duration::from_nanos(1),
        max / 2,
        max,
    ];
    let handles: Vec<_> = delays.iter().map(|&d| timer.try_schedule(d, count.task()).unwrap()).collect();
    assert_eq!(timer.len(), delays.len());
    for (i, h) in handles.iter().enumerate() {
        let due = h.deadline().unwrap() - origin;
        // Exact, or (far deadlines) rounded up to their tick: never earlier, under a tick later.
        assert!(due >= delays[i] && due - delays[i] < tick, "{i}: {due:?} for {:?}", delays[i]);
    }
    let mut fired = 0;
    while let Some(next) = timer.next_wakeup() {
        let earliest = handles.iter().filter_map(|h| h.deadline()).min().unwrap();
        assert!(
            next <= earliest + tick,
            "next_wakeup {:?} after the earliest {:?}",
            next - origin,
            earliest - origin
        );
        if next > timer.now() {
            clock.advance(next - timer.now());
        }
        timer.advance_clock(Duration::ZERO);
        let now = clock.now();
        let due = delays.iter().filter(|&&d| common::ceil_to_tick(d, tick) <= now).count();
        assert_eq!(count.get(), due, "at {now:?}");
        fired = fired.max(count.get());
    }
    assert_eq!(fired, delays.len());
    assert!(timer.is_empty());
}

/// At the clock's last reading only what is due is accepted: a zero delay runs at the next
/// advance, a nanosecond more is refused; `max_delay` is zero.
#[test]
fn at_the_end_of_the_clock_only_due_work_is_accepted() {
    let (clock, timer) = manual_timer(ms(10), 60);
    clock.advance(Duration::MAX);
    let end = clock.now();
    assert_eq!(end, Duration::from_nanos(u64::MAX));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(timer.max_delay(), Duration::ZERO);
    let count = Counter::default();
    let h = timer.try_schedule(Duration::ZERO, count.task()).expect("due now");
    assert!(matches!(timer.try_schedule(ms(20), count.task()), Err(ScheduleError::DelayTooLong { .. })));
    assert!(!h.reset(ms(20)), "a reset past the end is refused");
    assert!(h.is_pending());
    timer.advance_clock(Duration::ZERO);
    assert_eq!(count.get(), 1);
    assert!(timer.is_empty());
}

/// An instant past the range: `try_schedule_at` refuses it and drops the task, `schedule_at`
/// returns an inert handle, `reset_at` returns false and the task keeps its deadline and fires
/// on it, and a queue hands the value back (or drops it for `insert_at`).
#[test]
fn instants_past_the_range_are_refused_everywhere_and_change_nothing() {
    let (clock, timer) = manual_timer(ms(10), 60);
    let Some(far) = timer.now().checked_add(Duration::from_secs(600 * 365 * 86_400)) else {
        return; // an `Instant` this far is not representable here
    };
    let drops = Arc::new(AtomicUsize::new(0));
    let t = Tracked(Arc::clone(&drops));
    let err = timer.try_schedule_at(far, move || drop(t)).unwrap_err();
    assert!(matches!(err, ScheduleError::DelayTooLong { .. }), "{err:?}");
    assert_eq!(drops.load(Ordering::SeqCst), 1, "the refused task is dropped");
    let t = Tracked(Arc::clone(&drops));
    let inert = timer.schedule_at(far, move || drop(t));
    assert_eq!(drops.load(Ordering::SeqCst), 2);
    assert!(!inert.is_pending() && !inert.cancel() && inert.deadline().is_none() && !inert.reset(ms(1)));
    assert_eq!(timer.len(), 0);

    let count = Counter::default();
    let h = timer.schedule(ms(30), count.task());
    let before = h.deadline();
    assert!(!h.reset_at(far));
    assert!(!h.reset(Duration::MAX));
    assert_eq!(h.deadline(), before);
    clock.advance(ms(30));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(count.get(), 1);

    let q = DelayQueue::with_timer(timer);
    let e = q.try_insert_at(Tracked(Arc::clone(&drops)), far).unwrap_err();
    assert!(matches!(e.error(), ScheduleError::DelayTooLong { .. }));
    let value = e.into_inner();
    assert_eq!(drops.load(Ordering::SeqCst), 2, "handed back, not dropped");
    drop(value);
    let e = q.try_insert(Tracked(Arc::clone(&drops)), Duration::MAX).unwrap_err();
    assert!(matches!(e.error(), ScheduleError::DelayTooLong { delay, .. } if *delay == Duration::MAX));
    drop(e);
    let k = q.insert_at(Tracked(Arc::clone(&drops)), far);
    assert_eq!(drops.load(Ordering::SeqCst), 5);
    assert!(q.is_empty() && q.remove(&k).is_none() && q.deadline(&k).is_none());
    let k = q.insert(Tracked(Arc::clone(&drops)), ms(10));
    assert!(!q.reset_at(&k, far));
    assert!(q.deadline(&k).is_some());
    assert_eq!(q.len(), 1);
}

/// Invalid configurations are refused with their own reasons; `build` panics with the reason's
/// message.
#[test]
fn invalid_builds_are_refused_with_their_reasons() {
    let build =
        |tick: Duration, size: usize| Timer::builder().tick(tick).wheel_size(size).manual().try_build();
    assert!(matches!(build(Duration::ZERO, 60), Err(BuildError::TickTooShort(d)) if d == Duration::ZERO));
    assert!(matches!(build(Duration::from_nanos(999), 60), Err(BuildError::TickTooShort(_))));
    assert!(build(Duration::from_micros(1), 2).is_ok());
    assert!(matches!(build(ms(10), 0), Err(BuildError::WheelSizeTooSmall(0))));
    assert!(matches!(build(ms(10), 1), Err(BuildError::WheelSizeTooSmall(1))));
    assert!(matches!(build(ms(10), MAX_WHEEL_SIZE + 1), Err(BuildError::WheelSizeTooLarge(_))));
    assert!(matches!(build(ms(10), usize::MAX), Err(BuildError::WheelSizeTooLarge(_))));
    assert!(build(Duration::MAX, 3).is_ok(), "any tick of at least 1 µs");
    let panic =
        std::panic::catch_unwind(|| Timer::builder().tick(Duration::ZERO).manual().build()).unwrap_err();
    let msg = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap();
    assert!(msg.contains("at least 1µs"), "{msg}");
}

/// A tick longer than the clock's whole range: only due work is accepted and it runs.
#[test]
fn a_tick_longer_than_the_clock_accepts_only_due_work() {
    let (clock, timer) = manual_timer(Duration::MAX, 3);
    let count = Counter::default();
    assert!(timer.try_schedule(Duration::ZERO, count.task()).is_ok());
    assert!(matches!(
        timer.try_schedule(Duration::from_nanos(1), count.task()),
        Err(ScheduleError::DelayTooLong { .. })
    ));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(count.get(), 1);
    clock.advance(Duration::MAX);
    timer.advance_clock(Duration::ZERO);
    assert!(timer.is_empty());
}

/// After `shutdown`, every way in is refused and every refused closure and value is dropped
/// at once; handles of tasks handed back are inert; a second shutdown returns nothing.
#[test]
fn a_shut_down_timer_refuses_everything_and_drops_what_it_refuses() {
    let (clock, timer) = manual_timer(ms(10), 60);
    let drops = Arc::new(AtomicUsize::new(0));
    let t = Tracked(Arc::clone(&drops));
    let pending = timer.schedule(ms(50), move || drop(t));
    let back = timer.shutdown();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].deadline(), ms(50));
    assert!(!pending.is_pending() && !pending.cancel() && !pending.reset(ms(1)));
    drop(back);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    let t = Tracked(Arc::clone(&drops));
    assert_eq!(timer.try_schedule(ms(1), move || drop(t)).unwrap_err(), ScheduleError::ShutDown);
    let t = Tracked(Arc::clone(&drops));
    assert_eq!(timer.try_schedule_at(timer.now(), move || drop(t)).unwrap_err(), ScheduleError::ShutDown);
    let t = Tracked(Arc::clone(&drops));
    let h = timer.schedule(Duration::ZERO, move || drop(t));
    assert_eq!(drops.load(Ordering::SeqCst), 4);
    assert!(!h.is_pending());
    clock.advance(ms(100));
    assert!(!timer.advance_clock(Duration::ZERO));
    assert!(timer.shutdown().is_empty());
    assert_eq!(timer.len(), 0);

    let q = DelayQueue::with_timer(Timer::builder().clock(clock.clone()).manual().build());
    let k = q.insert(Tracked(Arc::clone(&drops)), ms(10));
    drop(q.timer().shutdown());
    assert_eq!(drops.load(Ordering::SeqCst), 5);
    assert!(q.is_empty() && q.remove(&k).is_none() && q.try_recv().is_none());
    let e = q.try_insert(Tracked(Arc::clone(&drops)), ms(1)).unwrap_err();
    assert_eq!(*e.error(), ScheduleError::ShutDown);
    assert_eq!(drops.load(Ordering::SeqCst), 5);
    drop(e.into_inner());
    assert_eq!(drops.load(Ordering::SeqCst), 6);
}
