//! `TimerStats::abandoned`: every task ends counted once, by how it ended, so that with no call in
//! flight `scheduled = pending + fired + cancelled + abandoned` — also for what no `UnfiredTask`
//! stands for: a delay queue's pending values, a tick group's timeouts, the tasks an executor had
//! queued when its timer shut down.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::{manual_timer, manual_with_executors, ms, Counter};
use delaywheel::queue::DelayQueue;
use delaywheel::TimerStats;

fn ledger(stats: &TimerStats) -> u64 {
    stats.pending as u64 + stats.fired + stats.cancelled + stats.abandoned
}

#[test]
fn tasks_handed_back_by_a_shutdown_count_as_abandoned() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let counter = Counter::default();
    let handles: Vec<_> = (1..=10).map(|i| timer.schedule(ms(i), counter.task())).collect();
    for handle in &handles[7..] {
        assert!(handle.cancel());
    }
    clock.advance(ms(4));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(counter.get(), 4);
    let s = timer.stats();
    assert_eq!((s.scheduled, s.fired, s.cancelled, s.abandoned, s.pending), (10, 4, 3, 0, 3));
    let unfired = timer.shutdown();
    assert_eq!(unfired.len(), 3);
    let s = timer.stats();
    assert_eq!((s.fired, s.cancelled, s.abandoned, s.pending), (4, 3, 3, 0), "{s:?}");
    assert_eq!(ledger(&s), s.scheduled);
    // Running what came back changes no count: those tasks ended as abandoned, outside the timer.
    for task in unfired {
        task.run();
    }
    assert_eq!(counter.get(), 7);
    assert_eq!(timer.stats().abandoned, 3);
    assert!(timer.shutdown().is_empty(), "a second shutdown has nothing left");
    assert_eq!(timer.stats().abandoned, 3, "and counts nothing twice");
}

#[test]
fn pending_values_of_a_delay_queue_count_as_abandoned_at_its_timers_shutdown() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let queue = DelayQueue::with_timer(timer);
    let keys: Vec<_> = (1..=4).map(|i| queue.insert(i, ms(u64::from(i as u32)))).collect();
    assert_eq!(queue.remove(&keys[3]), Some(4));
    clock.advance(ms(1));
    queue.timer().advance_clock(Duration::ZERO);
    let unfired = queue.timer().shutdown();
    let deadlines: Vec<_> = unfired.iter().map(|task| task.deadline()).collect();
    assert_eq!(deadlines, [ms(2), ms(3)], "the values still pending come back as unfired tasks");
    drop(unfired);
    let s = queue.timer().stats();
    assert_eq!((s.scheduled, s.fired, s.cancelled, s.abandoned, s.pending), (4, 1, 1, 2, 0), "{s:?}");
    assert_eq!(ledger(&s), s.scheduled);
}

#[test]
fn tasks_queued_on_executor_threads_at_a_shutdown_count_as_abandoned() {
    let (clock, timer) = manual_with_executors(1);
    let (started, wait_started) = mpsc::channel();
    let (release, blocked) = mpsc::channel::<()>();
    timer.schedule(ms(1), move || {
        started.send(()).unwrap();
        blocked.recv().unwrap();
    });
    let counter = Counter::default();
    for _ in 0..3 {
        timer.schedule(ms(1), counter.task());
    }
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO); // all four handed to the one executor thread
    wait_started.recv().unwrap();
    let unfired = timer.shutdown_timeout(Duration::ZERO); // the executor is still in the first
    release.send(()).unwrap();
    drop(timer.shutdown()); // waits for the executor thread
    let s = timer.stats();
    assert_eq!(counter.get(), 0, "nothing queued ran after the shutdown");
    assert_eq!((s.scheduled, s.fired, s.abandoned, s.pending), (4, 1, 3, 0), "{s:?}");
    assert!(unfired.len() <= 3, "handed back or dropped unrun: abandoned either way");
    assert_eq!(ledger(&s), s.scheduled);
}

#[cfg(feature = "async")]
#[test]
fn timeouts_of_a_tick_group_count_as_abandoned_when_a_shutdown_wakes_them() {
    use common::waker::{poll, CountingWaker};
    use std::future::pending;

    let (clock, timer) = manual_timer(ms(10), 64);
    let mut armed: Vec<_> = (1..=3).map(|i| Box::pin(timer.timeout(ms(i), pending::<()>()))).collect();
    let (woken, waker) = CountingWaker::new();
    for t in &mut armed {
        assert!(poll(t.as_mut(), &waker).is_pending());
    }
    drop(armed.pop()); // left before its tick: cancelled
    clock.advance(ms(5));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(timer.len(), 2);
    // The first timeout of the tick may hold an entry of its own, handed back (and woken when
    // dropped); the members of a group have none: either way each ends abandoned.
    let unfired = timer.shutdown();
    assert!(unfired.len() <= 2, "{unfired:?}");
    drop(unfired);
    assert_eq!(woken.count(), 2, "each woken once");
    let s = timer.stats();
    assert_eq!((s.scheduled, s.fired, s.cancelled, s.abandoned, s.pending), (3, 0, 1, 2, 0), "{s:?}");
    assert_eq!(ledger(&s), s.scheduled);
}

#[test]
fn a_timer_that_never_shuts_down_abandons_nothing() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let counter = Counter::default();
    for i in 0..100 {
        let handle = timer.schedule(ms(i % 7), counter.task());
        if i % 3 == 0 {
            handle.cancel();
        }
    }
    clock.advance(ms(10));
    timer.advance_clock(Duration::ZERO);
    let s = timer.stats();
    assert_eq!((s.fired, s.cancelled, s.abandoned, s.pending), (66, 34, 0, 0));
}
