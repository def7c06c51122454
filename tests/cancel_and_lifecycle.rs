//! Cancellation, reentrancy, bad input, panics, shutdown and drop, on a manual clock.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{manual_timer, ms, Counter, FireLog};
use delaywheel::{BuildError, ManualClock, ScheduleError, Timer, TimerHandle};

#[test]
fn cancel_returns_true_once_and_the_task_never_runs() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let counter = Counter::default();
    let h = timer.schedule(ms(10), counter.task());
    assert!(h.is_pending());
    assert!(h.cancel());
    assert!(!h.cancel(), "a second cancel does not cancel again");
    assert!(!h.clone().cancel());
    assert!(h.is_cancelled());
    clock.advance(ms(20));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(counter.get(), 0);
    assert_eq!(timer.stats().cancelled, 1);
}

#[test]
fn cancel_after_firing_returns_false() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let counter = Counter::default();
    let h = timer.schedule(ms(1), counter.task());
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(counter.get(), 1);
    assert!(h.is_fired());
    assert!(!h.cancel());
}

/// Entries live in reused slots (`src/shard/slab.rs`): handles of finished tasks, cancelled or fired,
/// must never touch the tasks that reuse their slots, however many rounds of reuse pass.
#[test]
fn stale_handles_never_touch_the_tasks_that_reuse_their_slots() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let counter = Counter::default();
    let mut stale: Vec<TimerHandle> = Vec::new();
    for round in 0..20u64 {
        // Half cancelled, half fired: both kinds of release.
        let cancelled: Vec<TimerHandle> =
            (0..300).map(|i| timer.schedule(ms(500 + i), counter.task())).collect();
        let fired: Vec<TimerHandle> = (0..300).map(|_| timer.schedule(ms(1), counter.task())).collect();
        assert!(cancelled.iter().all(TimerHandle::cancel));
        clock.advance(ms(1));
        timer.advance_clock(Duration::ZERO);
        assert_eq!(counter.get(), 300 * (round as usize + 1));
        stale.extend(cancelled);
        stale.extend(fired);
        // Every earlier handle is finished: none may cancel, or report pending, a new task.
        let fresh: Vec<TimerHandle> =
            (0..600).map(|i| timer.schedule(ms(2_000 + i), counter.task())).collect();
        assert!(stale.iter().all(|h| !h.cancel() && !h.is_pending()), "round {round}");
        assert!(fresh.iter().all(TimerHandle::is_pending), "round {round}");
        assert_eq!(timer.len(), 600);
        assert!(fresh.iter().all(TimerHandle::cancel));
        stale.extend(fresh);
    }
    assert!(timer.is_empty());
    assert_eq!(timer.stats().cancelled, 20 * 900);
}

#[test]
fn cancel_drops_len_and_the_closure_at_once() {
    let (_clock, timer) = manual_timer(ms(1), 8);
    let resource = Arc::new(());
    let handles: Vec<TimerHandle> = (0..100)
        .map(|i| {
            let r = Arc::clone(&resource);
            timer.schedule(ms(1_000 + i), move || drop(r))
        })
        .collect();
    assert_eq!(timer.len(), 100);
    assert_eq!(Arc::strong_count(&resource), 101);
    for (i, h) in handles.iter().enumerate() {
        assert!(h.cancel());
        assert_eq!(timer.len(), 99 - i, "len drops at once");
        assert_eq!(Arc::strong_count(&resource), 100 - i, "closure dropped at once");
    }
    assert!(timer.is_empty());
}

#[test]
fn cancelling_an_entry_that_cascaded_works() {
    let (clock, timer) = manual_timer(ms(1), 4); // spans 4, 16, 64 ms
    let counter = Counter::default();
    let h = timer.schedule(ms(50), counter.task());
    // Advance through cascades: the entry moves from level 2 to 1 to 0.
    for _ in 0..49 {
        clock.advance(ms(1));
        timer.advance_clock(Duration::ZERO);
    }
    assert!(h.is_pending());
    assert!(h.cancel());
    clock.advance(ms(10));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(counter.get(), 0);
    assert!(timer.is_empty());
}

/// Schedule-and-cancel forever stays in flat memory: cancelled entries leave their buckets, so the
/// only thing that grows is nothing. Checked through the closures' captured resources and `len`.
#[test]
fn schedule_cancel_loop_keeps_no_entries() {
    let (clock, timer) = manual_timer(ms(1), 16);
    let resource = Arc::new(());
    for round in 0..200_000u64 {
        let r = Arc::clone(&resource);
        let h = timer.schedule(ms(10 + round % 100_000), move || drop(r));
        assert!(h.cancel());
        if round % 10_000 == 0 {
            clock.advance(ms(1));
            timer.advance_clock(Duration::ZERO);
        }
    }
    assert_eq!(Arc::strong_count(&resource), 1);
    assert!(timer.is_empty());
}

#[test]
fn tasks_may_schedule_and_cancel_on_their_own_timer() {
    let (clock, timer) = manual_timer(ms(1), 4);
    let timer = Arc::new(timer);
    let log = FireLog::default();
    let victim = timer.schedule(ms(5), log.task(99, &clock));
    let victim = Arc::new(Mutex::new(Some(victim)));
    {
        let (timer2, log2, clock2, victim2) =
            (Arc::downgrade(&timer), log.clone(), clock.clone(), Arc::clone(&victim));
        let _ = timer.schedule(ms(2), move || {
            let timer = timer2.upgrade().unwrap();
            // Reentrant: schedule a follow-up (also an already-due one) and cancel another task.
            let _ = timer.schedule(ms(3), log2.task(1, &clock2));
            let _ = timer.schedule(Duration::ZERO, log2.task(2, &clock2));
            assert!(victim2.lock().unwrap().take().unwrap().cancel());
            assert!(!timer.advance_clock(Duration::ZERO), "reentrant advance is a no-op");
        });
    }
    clock.advance(ms(2));
    timer.advance_clock(Duration::ZERO);
    // The already-due follow-up was scheduled during the advance: it runs at the next one (one
    // advance does bounded work), even with the clock not moved.
    assert!(log.ids().is_empty());
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.ids(), vec![2]);
    clock.advance(ms(3));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.ids(), vec![2, 1]);
    assert!(timer.is_empty());
}

#[test]
fn invalid_configurations_are_clear_errors() {
    let err = Timer::builder().tick(Duration::ZERO).manual().try_build().unwrap_err();
    assert!(matches!(err, BuildError::TickTooShort(_)));
    assert!(err.to_string().contains("at least 1µs"), "{err}");
    let err = Timer::builder().tick(Duration::from_nanos(999)).manual().try_build().unwrap_err();
    assert!(matches!(err, BuildError::TickTooShort(_)));
    for size in [0, 1] {
        let err = Timer::builder().wheel_size(size).manual().try_build().unwrap_err();
        assert!(matches!(err, BuildError::WheelSizeTooSmall(s) if s == size));
        assert!(err.to_string().contains("at least 2"), "{err}");
    }
    assert!(Timer::builder().tick(Duration::from_micros(1)).wheel_size(2).manual().try_build().is_ok());
}

#[test]
#[should_panic(expected = "timer wheel size must be at least 2, got 1")]
fn build_panics_with_the_error_message() {
    let _ = Timer::builder().wheel_size(1).build();
}

#[test]
fn far_future_deadlines_are_refused_clearly_or_served() {
    let (clock, timer) = manual_timer(ms(1), 2);
    let dropped = Arc::new(());
    let r = Arc::clone(&dropped);
    let err = timer.try_schedule(Duration::MAX, move || drop(r)).unwrap_err();
    assert!(matches!(err, ScheduleError::DelayTooLong { delay, .. } if delay == Duration::MAX));
    assert!(err.to_string().contains("beyond the timer's range"), "{err}");
    assert_eq!(Arc::strong_count(&dropped), 1, "the refused task is dropped");
    assert!(timer.is_empty());

    // `schedule` never panics: an inert handle, nothing pending.
    let h = timer.schedule(Duration::MAX, || unreachable!());
    assert!(!h.is_pending());
    assert!(!h.cancel());
    assert!(timer.is_empty());

    // The longest accepted delay (to the clock's last tick: its reading ends at u64::MAX ns, 584
    // years) is served (by a far level of a 2-slot wheel) and cancellable.
    let max = timer.max_delay();
    assert!(max > Duration::from_secs(584 * 365 * 86_400), "{max:?}");
    assert!(max < Duration::from_nanos(u64::MAX), "{max:?}");
    let h = timer.try_schedule(max, || unreachable!()).expect("max_delay is accepted");
    assert_eq!(timer.stats().levels_in_use, 1, "only the top level is needed");
    // The range ends a second (`max_delay`'s slack) past it.
    assert!(timer.try_schedule(max + Duration::from_secs(1), || {}).unwrap().cancel());
    assert!(timer.try_schedule(max + Duration::from_secs(1) + Duration::from_nanos(1), || {}).is_err());
    clock.advance(Duration::from_secs(86_400 * 365 * 100));
    timer.advance_clock(Duration::ZERO);
    assert!(h.is_pending());
    assert!(h.cancel());
}

#[test]
fn a_panicking_task_is_caught_counted_and_the_timer_goes_on() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let counter = Counter::default();
    let _ = timer.schedule(ms(1), || panic!("task failure (expected by this test)"));
    let _ = timer.schedule(ms(1), counter.task());
    let _ = timer.schedule(ms(2), counter.task());
    clock.advance(ms(2));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(counter.get(), 2);
    assert_eq!(timer.stats().panicked, 1);
    assert_eq!(timer.stats().fired, 3);
}

#[test]
fn shutdown_returns_unfired_tasks_in_deadline_order_and_refuses_new_ones() {
    let (clock, timer) = manual_timer(ms(1), 4);
    let counter = Counter::default();
    let _ = timer.schedule(ms(1), counter.task());
    let log = FireLog::default();
    for (id, d) in [(0, 300u64), (1, 20), (2, 5_000), (3, 20)] {
        let _ = timer.schedule(ms(d), log.task(id, &clock));
    }
    let cancelled = timer.schedule(ms(50), || unreachable!());
    assert!(cancelled.cancel());
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(counter.get(), 1);

    let unfired = timer.shutdown();
    let deadlines: Vec<Duration> = unfired.iter().map(|t| t.deadline()).collect();
    assert_eq!(deadlines, vec![ms(20), ms(20), ms(300), ms(5_000)]);
    assert!(timer.is_empty());
    assert!(matches!(timer.try_schedule(ms(1), || {}), Err(ScheduleError::ShutDown)));
    assert!(!timer.schedule(ms(1), || {}).is_pending());
    clock.advance(ms(10_000));
    assert!(!timer.advance_clock(Duration::ZERO), "nothing runs after shutdown");
    assert!(log.ids().is_empty());
    // The caller may still run what was handed back.
    for task in unfired {
        task.run();
    }
    assert_eq!(log.count(), 4);
    assert!(timer.shutdown().is_empty(), "a second shutdown has nothing left");
}

#[test]
fn dropping_the_timer_drops_unfired_closures() {
    let (_clock, timer) = manual_timer(ms(1), 8);
    let resource = Arc::new(());
    let handles: Vec<TimerHandle> = (0..1_000)
        .map(|i| {
            let r = Arc::clone(&resource);
            timer.schedule(ms(i * 37), move || drop(r))
        })
        .collect();
    assert_eq!(Arc::strong_count(&resource), 1_001);
    drop(timer);
    assert_eq!(Arc::strong_count(&resource), 1, "unfired closures released");
    assert!(handles.iter().all(|h| !h.is_pending() && !h.cancel()));
}

#[test]
fn shutdown_from_inside_a_task_does_not_deadlock() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let timer = Arc::new(timer);
    let ran_after = Arc::new(AtomicBool::new(false));
    let unfired_seen = Arc::new(Mutex::new(None));
    {
        let (weak, seen) = (Arc::downgrade(&timer), Arc::clone(&unfired_seen));
        let _ = timer.schedule(ms(1), move || {
            let unfired = weak.upgrade().unwrap().shutdown();
            *seen.lock().unwrap() = Some(unfired.len());
        });
    }
    let flag = Arc::clone(&ran_after);
    let _ = timer.schedule(ms(1), move || flag.store(true, Ordering::SeqCst));
    let _ = timer.schedule(ms(100), || {});
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    // The sibling scheduled after it in the same batch and the later task were handed back.
    assert_eq!(*unfired_seen.lock().unwrap(), Some(2));
    assert!(!ran_after.load(Ordering::SeqCst), "nothing runs after the shutdown");
    assert!(timer.is_empty());
    assert!(matches!(timer.try_schedule(ms(1), || {}), Err(ScheduleError::ShutDown)));
}

#[test]
fn handles_and_timer_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Timer>();
    assert_send_sync::<TimerHandle>();
    assert_send_sync::<delaywheel::ManualClock>();
    assert_send_sync::<ScheduleError>();
}

#[test]
fn max_pending_refuses_clearly_and_frees_up_as_tasks_leave() {
    let clock = delaywheel::ManualClock::new();
    let timer = Timer::builder().clock(clock.clone()).manual().max_pending(3).build();
    let counter = Counter::default();
    let handles: Vec<TimerHandle> = (0..3).map(|i| timer.schedule(ms(i + 1), counter.task())).collect();
    let dropped = Arc::new(());
    let r = Arc::clone(&dropped);
    let err = timer.try_schedule(ms(1), move || drop(r)).unwrap_err();
    assert_eq!(err, ScheduleError::TooManyPending { max: 3 });
    assert!(err.to_string().contains("maximum of 3 pending"), "{err}");
    assert_eq!(Arc::strong_count(&dropped), 1, "the refused task is dropped");
    assert!(!timer.schedule(ms(1), counter.task()).is_pending(), "schedule: inert handle");
    assert_eq!(timer.len(), 3);
    assert_eq!(timer.stats().scheduled, 3, "refused tasks are not counted as scheduled");
    // A cancel and a firing each make room for one more.
    assert!(handles[2].cancel());
    assert!(timer.try_schedule(ms(50), counter.task()).is_ok());
    assert!(timer.try_schedule(ms(50), counter.task()).is_err());
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(counter.get(), 1);
    assert!(timer.try_schedule(ms(50), counter.task()).is_ok());
    assert_eq!(timer.len(), 3);
}

#[test]
fn max_pending_is_exact_under_concurrent_schedules() {
    let timer = Arc::new(Timer::builder().manual().max_pending(1_000).build());
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (timer, accepted) = (Arc::clone(&timer), Arc::clone(&accepted));
            std::thread::spawn(move || {
                for _ in 0..1_000 {
                    if timer.try_schedule(ms(1_000), || {}).is_ok() {
                        accepted.fetch_add(1, Ordering::SeqCst);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 1_000);
    assert_eq!(timer.len(), 1_000);
}

#[test]
fn more_invalid_configurations_are_clear_errors_not_panics() {
    let err = Timer::builder().wheel_size(usize::MAX).manual().try_build().unwrap_err();
    assert!(matches!(err, BuildError::WheelSizeTooLarge(_)));
    assert!(err.to_string().contains("at most 16777216"), "{err}");
    assert!(Timer::builder().wheel_size(delaywheel::MAX_WHEEL_SIZE).manual().try_build().is_ok());
    let err = Timer::builder().execution(delaywheel::TaskExecution::Threads(0)).try_build().unwrap_err();
    assert!(matches!(err, BuildError::NoExecutorThreads), "{err}");
    let err = Timer::builder().thread_name("bad\0name").try_build().unwrap_err();
    assert!(matches!(err, BuildError::InvalidThreadName(_)), "{err}");
}

#[test]
fn long_ticks_report_the_range_honestly() {
    // A deadline's tick has 56 bits (the rest ranks it within the tick): with 1.5 s ticks that is
    // about 3.4 billion years, but the clock's reading ends at u64::MAX ns (584 years), and a tick
    // it never reaches would never fire: `max_delay` says where the reachable range ends, less its
    // second of slack (on a manual clock, so that nothing moves in between).
    let timer =
        Timer::builder().tick(Duration::from_millis(1_500)).clock(ManualClock::new()).manual().build();
    let max = timer.max_delay();
    let last_tick = u64::MAX / 1_500_000_000;
    let reach = Duration::from_nanos(last_tick * 1_500_000_000);
    assert_eq!(max + Duration::from_secs(1), reach, "{max:?}");
    let h = timer.try_schedule(max, || {}).expect("max_delay is accepted");
    assert!(h.cancel());
    let err = timer.try_schedule(max + Duration::from_millis(1_500), || {}).unwrap_err();
    assert!(matches!(err, ScheduleError::DelayTooLong { max: m, .. } if m == max), "{err}");
    let unfired = {
        let _ = timer.schedule(max, || {});
        timer.shutdown()
    };
    assert_eq!(unfired[0].deadline(), reach, "the clock's last tick");
    // However long the ticks, `Duration::MAX` is past the clock's end.
    let timer = Timer::builder().tick(Duration::from_secs(257)).manual().build();
    assert!(timer.max_delay() < Duration::from_nanos(u64::MAX));
    assert!(timer.try_schedule(Duration::MAX, || {}).is_err());
}

#[test]
fn a_tick_longer_than_the_clock_reaches_runs_what_is_due_and_refuses_the_rest() {
    // Any tick from 1 µs is a tick, also one whose first boundary lies past the clock's end
    // (u64::MAX ns, 584 years): nothing scheduled ahead can fire, and is refused as out of range;
    // what is due already still runs at the next advance.
    let past_the_clock = Duration::from_nanos(u64::MAX) + Duration::from_nanos(1);
    for tick in [past_the_clock, Duration::from_secs(u64::MAX), Duration::MAX] {
        let clock = ManualClock::new();
        let timer = Timer::builder().tick(tick).wheel_size(3).clock(clock.clone()).manual().build();
        assert_eq!((timer.tick(), timer.max_delay()), (tick, Duration::ZERO));
        let err = timer.try_schedule(Duration::from_nanos(1), || {}).unwrap_err();
        assert!(matches!(err, ScheduleError::DelayTooLong { max: Duration::ZERO, .. }), "{err}");
        assert!(timer.try_schedule_at(timer.now() + ms(5), || {}).is_err());
        let log = FireLog::default();
        let now = timer.schedule(Duration::ZERO, log.task(1, &clock));
        clock.advance(ms(3));
        let past = timer.schedule_at(timer.now() - ms(1), log.task(2, &clock));
        assert_eq!(timer.len(), 2);
        assert!(timer.advance_clock(Duration::ZERO));
        assert_eq!(log.ids(), vec![1, 2]);
        assert!(now.is_fired() && past.is_fired() && timer.is_empty());
        clock.advance(Duration::MAX);
        let _ = timer.schedule(Duration::ZERO, log.task(3, &clock));
        timer.advance_clock(Duration::ZERO);
        assert_eq!(log.ids(), vec![1, 2, 3]);
    }
}

#[test]
fn a_manual_clock_asked_to_go_back_is_refused_and_the_timer_carries_on() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let log = FireLog::default();
    clock.advance(ms(100));
    let _ = timer.schedule(ms(10), log.task(1, &clock));
    assert!(!clock.advance_to(ms(50)), "backwards is refused");
    assert_eq!(clock.now(), ms(100));
    timer.advance_clock(Duration::ZERO);
    assert!(log.ids().is_empty());
    assert!(clock.advance_to(ms(110)));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.runs(), vec![(1, ms(110))], "fired once, at its deadline");
}

/// Calls `Timer::shrink` when dropped.
struct ShrinkOnDrop(Arc<Timer>);

impl Drop for ShrinkOnDrop {
    fn drop(&mut self) {
        self.0.shrink();
    }
}

/// A `cancel` drops the closure it won while its handle is still pinned (the grace period's
/// reader): a shrink called from that drop does not wait for its own thread's pin, and what it
/// retired is freed by the next shrink.
#[test]
fn a_shrink_from_a_closure_a_cancel_drops_returns() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let timer = Arc::new(Timer::builder().clock(ManualClock::new()).manual().build());
        let burst: Vec<_> = (0..10_000).map(|_| timer.schedule(Duration::from_secs(30), || {})).collect();
        let guard = ShrinkOnDrop(Arc::clone(&timer));
        let last = timer.schedule(Duration::from_secs(30), move || drop(guard));
        assert!(burst.iter().all(TimerHandle::cancel));
        assert!(last.cancel(), "its closure's drop shrinks, pinned");
        timer.shrink();
        tx.send(timer.len()).unwrap();
    });
    let len = rx.recv_timeout(Duration::from_secs(20)).expect("the cancel returned: no wait for its own pin");
    assert_eq!(len, 0);
}
