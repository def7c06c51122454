//! The batched hand-off of a `Sleep`'s wake-up (`src/timer/wakes.rs`), on a manual clock: the
//! sleeps due at one tick are woken after every task of that tick ran, in deadline order, each
//! once; a waker that panics is counted as a panicked task and the other wakes still come; outside
//! a firing batch (a shutdown) the wake is at once.
#![cfg(feature = "async")]

mod common;

use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Wake, Waker};
use std::time::Duration;

use common::waker::poll;
use common::{manual_timer, ms};

/// A waker that logs its id, and whether the plain task had run by then, at each wake.
struct Logging {
    id: u32,
    ran: Arc<AtomicBool>,
    log: Arc<Mutex<Vec<(u32, bool)>>>,
}

impl Wake for Logging {
    fn wake(self: Arc<Self>) {
        self.log.lock().unwrap().push((self.id, self.ran.load(Ordering::SeqCst)));
    }
}

struct Panicking;

impl Wake for Panicking {
    fn wake(self: Arc<Self>) {
        panic!("a waker that panics");
    }
}

fn advance(clock: &delaywheel::ManualClock, timer: &delaywheel::Timer, by: Duration) {
    clock.advance(by);
    timer.advance_clock(Duration::ZERO);
}

#[test]
fn the_sleeps_of_a_tick_are_woken_after_all_its_tasks_ran_in_deadline_order_once_each() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let ran = Arc::new(AtomicBool::new(false));
    let log = Arc::new(Mutex::new(Vec::new()));
    let waker = |id| Waker::from(Arc::new(Logging { id, ran: Arc::clone(&ran), log: Arc::clone(&log) }));
    // Scheduled in this order, all due at tick 3: the sleeps' tasks run before the plain task.
    let mut first = pin!(timer.sleep(ms(3)));
    let mut second = pin!(timer.sleep(ms(3)));
    let flag = Arc::clone(&ran);
    timer.schedule(ms(3), move || flag.store(true, Ordering::SeqCst));
    assert!(poll(first.as_mut(), &waker(1)).is_pending());
    assert!(poll(second.as_mut(), &waker(2)).is_pending());
    advance(&clock, &timer, ms(2));
    assert!(log.lock().unwrap().is_empty(), "woken before the deadline");
    advance(&clock, &timer, ms(1));
    assert_eq!(*log.lock().unwrap(), [(1, true), (2, true)]);
    assert!(first.is_elapsed() && second.is_elapsed());
    advance(&clock, &timer, ms(5));
    assert_eq!(log.lock().unwrap().len(), 2, "woken again");
}

#[test]
fn a_waker_that_panics_counts_as_a_panicked_task_and_the_other_wakes_still_come() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let ran = Arc::new(AtomicBool::new(false));
    let log = Arc::new(Mutex::new(Vec::new()));
    let logging = Waker::from(Arc::new(Logging { id: 2, ran, log: Arc::clone(&log) }));
    let mut bad = pin!(timer.sleep(ms(2)));
    let mut good = pin!(timer.sleep(ms(2)));
    assert!(poll(bad.as_mut(), &Waker::from(Arc::new(Panicking))).is_pending());
    assert!(poll(good.as_mut(), &logging).is_pending());
    advance(&clock, &timer, ms(2));
    assert_eq!(*log.lock().unwrap(), [(2, false)]);
    assert!(bad.is_elapsed() && good.is_elapsed());
    assert_eq!(timer.stats().panicked, 1);
    // The timer goes on.
    let mut later = pin!(timer.sleep(ms(1)));
    assert!(poll(later.as_mut(), &logging).is_pending());
    advance(&clock, &timer, ms(1));
    assert_eq!(log.lock().unwrap().len(), 2);
}

#[test]
fn a_shutdown_outside_any_firing_wakes_a_pending_sleep_at_once() {
    let (_clock, timer) = manual_timer(ms(1), 8);
    let log = Arc::new(Mutex::new(Vec::new()));
    let waker = Waker::from(Arc::new(Logging { id: 1, ran: Arc::default(), log: Arc::clone(&log) }));
    let mut sleep = pin!(timer.sleep(ms(5)));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    drop(timer.shutdown());
    assert_eq!(*log.lock().unwrap(), [(1, false)]);
    assert!(sleep.error().is_some());
}

/// A timer held in a thread-local, shut down as its thread exits with a sleep still pending: the
/// sleep's task is dropped while the thread's locals are being destroyed, and its wake must not
/// reach for the (destroyed) list of kept wakers, which would abort the process.
#[test]
fn a_timer_in_a_thread_local_shuts_down_at_thread_exit_with_a_sleep_pending() {
    struct Holder(delaywheel::Timer);
    impl Drop for Holder {
        fn drop(&mut self) {
            drop(self.0.shutdown());
        }
    }
    thread_local! {
        static HELD: std::cell::RefCell<Option<Holder>> = const { std::cell::RefCell::new(None) };
    }
    let woken = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&woken);
    let exited = std::thread::spawn(move || {
        let (clock, timer) = manual_timer(ms(1), 8);
        HELD.with(|held| *held.borrow_mut() = Some(Holder(timer)));
        HELD.with(|held| {
            let held = held.borrow();
            let timer = &held.as_ref().expect("held").0;
            // A fired batch on this thread first: the list of kept wakers is created after the
            // holder, so it is destroyed before it.
            timer.schedule(ms(1), || {});
            advance(&clock, timer, ms(1));
            let sleep = Box::leak(Box::new(Box::pin(timer.sleep(ms(50)))));
            let waker = Waker::from(Arc::new(Logging { id: 1, ran: Arc::new(AtomicBool::new(true)), log }));
            assert!(poll(sleep.as_mut(), &waker).is_pending());
        });
    })
    .join();
    assert!(exited.is_ok(), "the thread's exit panicked");
    assert_eq!(*woken.lock().unwrap(), [(1, true)], "the abandoned sleep's waker was woken once, at once");
}

/// A dropped sleep's slot is kept as its thread's spare and serves the next sleep, here on another
/// timer: a sleep made on a spare slot neither wakes nor completes while pending, and is woken
/// exactly once by its timer's shutdown.
#[test]
fn a_sleep_on_a_spare_slot_from_another_timer_is_woken_once_by_a_shutdown() {
    use common::waker::CountingWaker;
    use std::pin::Pin;

    let (_clock_a, a) = manual_timer(ms(1), 64);
    let (_clock_b, b) = manual_timer(ms(1), 64);
    let (wakes, waker) = CountingWaker::new();
    for _ in 0..3 {
        let mut sleep = a.sleep(ms(50));
        assert!(poll(Pin::new(&mut sleep), &waker).is_pending());
        // The cancel wins: nobody is woken, and the slot becomes this thread's spare.
        drop(sleep);
        let mut next = b.sleep(ms(50));
        assert!(poll(Pin::new(&mut next), &waker).is_pending());
        assert!(!next.is_elapsed() && next.error().is_none());
    }
    assert_eq!(wakes.count(), 0, "a cancelled sleep wakes nobody");
    let mut last = b.sleep(ms(50));
    assert!(poll(Pin::new(&mut last), &waker).is_pending());
    drop(b.shutdown());
    assert_eq!(wakes.count(), 1, "a shutdown wakes a pending sleep once");
    assert!(last.error().is_some());
    assert!(poll(Pin::new(&mut last), &waker).is_pending(), "a sleep whose timer shut down never completes");
}

/// A task whose last reference holds the last handle on a timer.
struct HoldsTheTimer(#[allow(dead_code)] Arc<delaywheel::Timer>);

impl Wake for HoldsTheTimer {
    fn wake(self: Arc<Self>) {}
}

/// A sleep polled by a second task drops the first task's waker, here the last reference to that
/// task, which holds the timer's last handle: the timer's drop abandons the sleep's own task, whose
/// closure takes the sleep's lock. The poll drops the replaced waker after releasing that lock (it
/// waited for itself), and the sleep, dead now, wakes the second task once. A timeout's limit and
/// an interval's tick are the same sleep.
#[test]
fn a_replaced_waker_whose_drop_drops_the_timer_deadlocks_nothing() {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for kind in 0..3 {
            let (_clock, timer) = manual_timer(ms(1), 8);
            let timer = Arc::new(timer);
            let first = Waker::from(Arc::new(HoldsTheTimer(Arc::clone(&timer))));
            let (counter, second) = common::waker::CountingWaker::new();
            let mut sleep = Box::pin(timer.sleep(ms(50)));
            let mut timeout = Box::pin(timer.timeout(ms(50), std::future::pending::<()>()));
            let mut interval = timer.interval_at(timer.now() + ms(50), ms(10));
            let mut with = |waker: &Waker| match kind {
                0 => poll(sleep.as_mut(), waker).is_pending(),
                1 => poll(timeout.as_mut(), waker).is_pending(),
                _ => interval.poll_tick(&mut std::task::Context::from_waker(waker)).is_pending(),
            };
            assert!(with(&first));
            drop((first, timer)); // the stored waker holds the timer's last handle
            assert!(with(&second));
            done.send((kind, counter.count())).unwrap();
        }
    });
    for kind in 0..3 {
        let got = finished.recv_timeout(Duration::from_secs(10));
        assert_eq!(got, Ok((kind, 1)), "kind {kind}: the poll waited for itself, or woke no one");
    }
}
