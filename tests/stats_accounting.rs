//! `Timer::stats()` against what happened, exactly, on a manual clock: lateness of re-armed tasks
//! (moved in place, earlier, into the past), the totals of a repetition that panics, and the
//! accounting of a timed shutdown that hands back tasks queued on an executor thread.

mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{manual_timer, ms};
use delaywheel::{ManualClock, Repeat, TaskExecution, Timer};

fn step(clock: &ManualClock, timer: &Timer, by: Duration) {
    clock.advance(by);
    timer.advance_clock(Duration::ZERO);
}

#[test]
fn lateness_of_a_reset_task_counts_from_its_latest_deadline() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let later = timer.schedule(ms(3), || {});
    assert!(later.reset(ms(30)), "kept in its level-0 bucket, re-added when that comes due");
    step(&clock, &timer, ms(10));
    assert_eq!(timer.stats().fired, 0);
    step(&clock, &timer, ms(30)); // 40 ms: 10 ms late
    let s = timer.stats();
    assert_eq!((s.fired, s.rearmed, s.lateness.max), (1, 1, ms(10)), "{s:?}");

    let past = timer.schedule(ms(20), || {});
    step(&clock, &timer, ms(2)); // 42 ms
    assert!(past.reset_at(timer.now() - ms(5))); // due at 37 ms
    step(&clock, &timer, ms(1)); // 43 ms: 6 ms late
    let passed = timer.schedule_at(timer.now() - ms(20), || {}); // due at 23 ms
    step(&clock, &timer, ms(1)); // 44 ms: 21 ms late
    assert!(passed.deadline().is_none(), "it fired");
    let s = timer.stats();
    assert_eq!((s.fired, s.rearmed, s.lateness.count, s.lateness.max), (3, 2, 3, ms(21)), "{s:?}");
    let within_1pct = |got: Duration, want: Duration| got.abs_diff(want) <= want / 100;
    assert!(
        within_1pct(s.lateness.mean, Duration::from_nanos(37_000_000 / 3)),
        "(10 + 6 + 21) / 3 ms: {s:?}"
    );
    assert!(within_1pct(s.lateness.p50, ms(10)), "{s:?}");
}

#[test]
fn a_repetition_that_panics_is_counted_run_by_run() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let runs = Arc::new(AtomicU32::new(0));
    let r = Arc::clone(&runs);
    let handle = timer.schedule_repeating(ms(10), Repeat::FixedRate(ms(10)), move || {
        if r.fetch_add(1, Ordering::SeqCst) == 2 {
            panic!("the third run panics");
        }
    });
    assert_eq!(timer.len(), 1);
    for _ in 0..5 {
        step(&clock, &timer, ms(10));
        assert!(timer.len() <= 1, "one entry at a time");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert!(!handle.is_active() && !handle.cancel());
    let s = timer.stats();
    // Each run is one scheduled and fired entry; the panic ended the repetition.
    assert_eq!((s.pending, s.scheduled, s.fired, s.panicked, s.cancelled), (0, 3, 3, 1, 0), "{s:?}");
    assert_eq!(s.lateness.count, 3);
}

#[test]
fn a_timed_shutdown_hands_back_what_an_executor_had_queued_and_counts_add_up() {
    let clock = ManualClock::new();
    let timer = Timer::builder().clock(clock.clone()).manual().execution(TaskExecution::Threads(1)).build();
    let (release, wait) = mpsc::channel::<()>();
    let (started, has_started) = mpsc::channel::<()>();
    let wait = Mutex::new(wait);
    timer.schedule(ms(1), move || {
        started.send(()).unwrap();
        let _ = wait.lock().unwrap().recv();
    });
    let queued: Vec<_> = (0..5).map(|_| timer.schedule(ms(2), || {})).collect();
    let _later = timer.schedule(ms(50), || {});
    step(&clock, &timer, ms(5));
    has_started.recv().unwrap(); // the one executor thread is busy: the five wait in its queue
    assert!(queued[0].cancel(), "queued, not started: still cancellable");
    let unfired = timer.shutdown_timeout(Duration::ZERO);
    let s = timer.stats();
    assert_eq!(unfired.len(), 5, "four queued on the executor and the one at 50 ms");
    assert_eq!((s.scheduled, s.fired, s.cancelled, s.pending), (7, 1, 1, 0), "{s:?}");
    assert_eq!(s.fired + s.cancelled + unfired.len() as u64, s.scheduled);
    assert_eq!(s.lateness.count, 1, "only the task that started");
    release.send(()).unwrap();
}
