//! The public contract's snippets (re-arm, absolute deadlines, the delay queue, the async additions),
//! written as a user writes them, each checked for its outcome on a manual clock.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use delaywheel::queue::{DelayQueue, Expired, InsertError, Key};
use delaywheel::{ManualClock, ScheduleError, Timer, TimerHandle};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn manual() -> (ManualClock, Timer) {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(ms(1)).wheel_size(20).clock(clock.clone()).manual().build();
    (clock, timer)
}

/// Moves the clock 1 ms at a time for `total` ms, advancing after each step, and returns the times
/// (ms since `start`) at which `fired` changed.
fn step(clock: &ManualClock, timer: &Timer, total: u64, fired: &AtomicUsize) -> Vec<u64> {
    let mut at = Vec::new();
    let mut seen = fired.load(Ordering::SeqCst);
    for t in 1..=total {
        clock.advance(ms(1));
        timer.advance_clock(Duration::ZERO);
        let now = fired.load(Ordering::SeqCst);
        for _ in seen..now {
            at.push(t);
        }
        seen = now;
    }
    at
}

fn counter() -> (Arc<AtomicUsize>, impl Fn() -> Box<dyn FnOnce() + Send>) {
    let fired = Arc::new(AtomicUsize::new(0));
    let f = Arc::clone(&fired);
    (fired, move || {
        let f = Arc::clone(&f);
        Box::new(move || {
            f.fetch_add(1, Ordering::SeqCst);
        })
    })
}

#[test]
fn schedule_at_and_reset_move_one_task_in_place() {
    let (clock, timer) = manual();
    let (fired, task) = counter();
    let now = timer.now();
    let h: TimerHandle = timer.schedule_at(now + ms(30), task());
    assert_eq!(h.deadline(), Some(now + ms(30)));
    assert!(h.reset(ms(50)), "pending: re-armed");
    assert_eq!(h.deadline(), Some(now + ms(50)));
    assert!(h.reset_at(now + ms(10)), "earlier too");
    assert_eq!(timer.next_wakeup(), Some(now + ms(10)));
    assert_eq!(step(&clock, &timer, 60, &fired), vec![10], "fires once, at the last deadline set");
    assert!(!h.reset(ms(5)), "fired: nothing to move");
    assert_eq!(h.deadline(), None);
    assert_eq!(timer.next_wakeup(), None, "nothing pending");
}

#[test]
fn a_passed_deadline_runs_by_the_next_advance_also_mid_tick() {
    let (clock, timer) = manual();
    let (fired, task) = counter();
    clock.advance(Duration::from_micros(7_500));
    let past = timer.now() - ms(3);
    let _a = timer.schedule_at(past, task());
    let _b = timer.schedule(Duration::ZERO, task());
    let c = timer.schedule(ms(40), task());
    assert!(c.reset_at(past), "a reset into the past is a reset");
    clock.advance(Duration::from_micros(1));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(fired.load(Ordering::SeqCst), 3);
}

#[test]
fn a_reset_after_cancel_changes_nothing_and_far_instants_are_refused() {
    let (_clock, timer) = manual();
    let (_fired, task) = counter();
    let h = timer.schedule(ms(20), task());
    assert!(h.cancel());
    assert!(!h.reset(ms(5)));
    assert!(timer.is_empty());
    let far = timer.now() + Duration::from_secs(1 << 40);
    let refused = timer.try_schedule_at(far, task());
    assert!(matches!(refused, Err(ScheduleError::DelayTooLong { .. })), "{refused:?}");
    assert!(timer.try_schedule_at(timer.now() + ms(1), task()).is_ok());
}

#[test]
fn tasks_due_at_the_same_instant_fire_in_scheduling_order() {
    let (clock, timer) = manual();
    let order = Arc::new(Mutex::new(Vec::new()));
    let at = timer.now() + ms(5);
    for i in 0..100 {
        let order = Arc::clone(&order);
        let _ = timer.schedule_at(at, move || order.lock().unwrap().push(i));
    }
    clock.advance(ms(5));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(*order.lock().unwrap(), (0..100).collect::<Vec<_>>());
}

#[test]
fn the_delay_queue_hands_values_back_once_in_deadline_order() {
    let clock = ManualClock::new();
    let q: DelayQueue<String> =
        DelayQueue::with_timer(Timer::builder().tick(ms(1)).clock(clock.clone()).manual().build());
    let k: Key = q.insert("a".to_string(), ms(50));
    let k2: Key = q.insert_at("b".to_string(), q.timer().now() + ms(80));
    let k3: Result<Key, InsertError<String>> = q.try_insert("c".to_string(), ms(20));
    let k3 = k3.unwrap();
    assert_eq!(q.remove(&k), Some("a".to_string()), "not expired: the value comes back");
    assert_eq!(q.remove(&k), None, "once");
    assert!(q.reset(&k2, ms(10)));
    assert_eq!(q.deadline(&k2), Some(q.timer().now() + ms(10)));
    assert_eq!((q.len(), q.is_empty()), (2, false));
    assert!(q.try_recv().is_none(), "never early");
    clock.advance(ms(25));
    q.advance_clock(Duration::ZERO);
    let first: Expired<String> = q.try_recv().unwrap();
    let second = q.recv_timeout(Duration::from_secs(1)).unwrap();
    assert_eq!((first.get_ref().as_str(), first.key()), ("b", k2));
    assert_eq!((second.into_inner(), q.remove(&k3)), ("c".to_string(), None));
    assert!(q.is_empty());
    let refused = DelayQueue::with_timer({
        let timer = Timer::builder().clock(ManualClock::new()).manual().build();
        drop(timer.shutdown());
        timer
    })
    .try_insert("kept".to_string(), ms(1))
    .unwrap_err();
    assert_eq!(refused.error(), &ScheduleError::ShutDown);
    assert_eq!(refused.into_inner(), "kept");
}

#[cfg(feature = "async")]
mod async_contract {
    use super::*;
    use delaywheel::{Interval, MissedTickBehavior, Sleep, Timeout};
    use std::future::Future;
    use std::pin::Pin;
    use std::task::Poll;

    use crate::common::waker::ignored_waker;

    fn poll<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
        crate::common::waker::poll(Pin::new(f), &ignored_waker())
    }

    #[test]
    fn a_sleep_resets_and_reports_its_deadline() {
        let (clock, timer) = manual();
        let mut s: Sleep = timer.sleep(ms(10));
        let due = s.deadline();
        assert_eq!(due, timer.now() + ms(10));
        assert!(poll(&mut s).is_pending());
        s.reset(due + ms(10));
        clock.advance(ms(10));
        timer.advance_clock(Duration::ZERO);
        assert!(poll(&mut s).is_pending(), "moved later");
        clock.advance(ms(10));
        timer.advance_clock(Duration::ZERO);
        assert!(poll(&mut s).is_ready());
        let refused: Result<Sleep, ScheduleError> = timer.try_sleep(Duration::MAX);
        assert!(refused.is_err());
    }

    #[test]
    fn a_timeout_at_and_an_interval_keep_their_instants() {
        let (clock, timer) = manual();
        let t: Timeout<std::future::Pending<()>> =
            timer.timeout_at(timer.now() + ms(5), std::future::pending());
        assert_eq!(t.deadline(), timer.now() + ms(5));
        assert!(timer.try_timeout(ms(5), std::future::ready(1)).is_ok());
        let start = timer.now();
        let mut iv: Interval = timer.interval(ms(10));
        iv.set_missed_tick_behavior(MissedTickBehavior::Skip);
        let mut tick = Box::pin(iv.tick());
        assert_eq!(poll(&mut tick), Poll::Ready(start));
        drop(tick);
        let mut next = Box::pin(iv.tick());
        assert!(poll(&mut next).is_pending());
        clock.advance(ms(10));
        timer.advance_clock(Duration::ZERO);
        assert_eq!(poll(&mut next), Poll::Ready(start + ms(10)));
    }
}
