//! Faults seen from inside: slots and clock listeners that user faults or dropped timers must not
//! leave behind (the public API cannot see either). A closure that panics when dropped is dropped,
//! and its slot freed, on every path: cancel, a shutdown handing it back, the timer's drop, the
//! drain that cannot wait for the advance in progress, and a repeating task's end. Where a timer
//! takes many such tasks one after another, the slots it has taken stay few
//! (`Timer::slots_high_water`); where one shutdown or drop ends it, `Remains::audit_slots` checks
//! that every slot was released (`timer/remains.rs`), in release builds too.

use std::panic::{self, AssertUnwindSafe};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use crate::{ManualClock, Repeat, Timer, UnfiredTask};

/// Panics when dropped.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("dropping a Bomb panics (expected by this test)");
    }
}

/// A closure that runs fine but panics when it is dropped unrun.
fn closure_with_bomb() -> impl FnOnce() + Send + 'static {
    let bomb = Bomb;
    move || std::mem::forget(bomb)
}

/// A repeating closure that panics when dropped (at the end of its repetition).
fn repeating_with_bomb() -> impl FnMut() + Send + 'static {
    let bomb = Bomb;
    move || {
        let _ = &bomb;
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// `count` closures with bombs, due from 2 ms to 301 ms (three levels of an 8-slot wheel).
fn schedule_bombs(timer: &Timer, count: u64) {
    for i in 0..count {
        timer.schedule(ms(2 + i % 300), closure_with_bomb());
    }
}

/// Drops each handed-back task on its own; returns how many drops panicked.
fn drop_each(tasks: Vec<UnfiredTask>) -> usize {
    let panicked = |task: UnfiredTask| panic::catch_unwind(AssertUnwindSafe(move || drop(task))).is_err();
    tasks.into_iter().map(panicked).filter(|&p| p).count()
}

/// Asserts that `timer`, which held one task pending at a time, took few slots: its shard reuses
/// the one vacated; a slot lost per task would take thousands.
fn assert_few_slots(timer: &Timer) {
    let high_water = timer.slots_high_water();
    assert!(high_water <= 512, "{high_water} slots for one pending task");
}

/// A timer on a fresh manual clock with a 1 ms tick and 8 slots: `manual()` or with a driver.
fn timer(driver: bool) -> (ManualClock, Timer) {
    let clock = ManualClock::new();
    let builder = Timer::builder().tick(ms(1)).wheel_size(8).clock(clock.clone());
    (clock.clone(), if driver { builder.build() } else { builder.manual().build() })
}

#[test]
fn cancelling_tasks_whose_closures_panic_on_drop_reuses_their_slots() {
    let (_clock, timer) = timer(false);
    for _ in 0..20_000 {
        let handle = timer.schedule(Duration::from_millis(5), closure_with_bomb());
        assert!(panic::catch_unwind(AssertUnwindSafe(|| handle.cancel())).is_err());
    }
    assert_eq!(timer.len(), 0);
    assert_few_slots(&timer);
}

#[test]
fn closures_that_panic_on_drop_handed_back_by_shutdown_leave_no_slot_behind() {
    let (_clock, timer) = timer(false);
    schedule_bombs(&timer, 1_000);
    let unfired = timer.shutdown();
    assert_eq!(drop_each(unfired), 1_000, "each closure is the caller's, dropped by the caller");
    timer.remains().audit_slots();
}

#[test]
fn the_timers_drop_counts_closures_that_panic_on_drop_and_leaves_no_slot_behind() {
    for driver in [false, true] {
        let (_clock, timer) = timer(driver);
        schedule_bombs(&timer, 1_000);
        let remains = timer.remains();
        drop(timer);
        assert_eq!(remains.panicked(), 1_000, "driver: {driver}");
        remains.audit_slots();
    }
}

#[test]
fn a_shutdown_from_inside_a_task_leaves_no_slot_behind_with_closures_that_panic_on_drop() {
    let (clock, timer) = timer(false);
    let timer = Arc::new(timer);
    let (tx, rx) = mpsc::channel();
    for i in 0..10 {
        if i == 3 {
            let (weak, tx) = (Arc::downgrade(&timer), tx.clone());
            timer.schedule(ms(1), move || tx.send(drop_each(weak.upgrade().unwrap().shutdown())).unwrap());
        } else {
            timer.schedule(ms(1), closure_with_bomb());
        }
    }
    schedule_bombs(&timer, 500);
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(rx.try_recv(), Ok(506), "the batch's six others and the later 500 came back");
    timer.remains().audit_slots();
}

/// The drain beside an advance in progress (blocked in a task) that it cannot wait for:
/// `shutdown_timeout` handing the closures back, or the timer's drop dropping them.
#[test]
fn a_drain_beside_a_blocked_advance_leaves_no_slot_behind_with_closures_that_panic_on_drop() {
    for dropping in [false, true] {
        let (clock, timer) = timer(dropping); // a driver for the drop: the test thread drops
        let timer = Arc::new(timer);
        let (started_tx, started_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        timer.schedule(ms(1), move || {
            started_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        });
        for _ in 0..9 {
            timer.schedule(ms(1), closure_with_bomb());
        }
        schedule_bombs(&timer, 500);
        clock.advance(ms(1));
        let remains = timer.remains();
        let advancing = (!dropping).then(|| {
            let timer = Arc::clone(&timer);
            std::thread::spawn(move || timer.advance_clock(Duration::ZERO))
        });
        started_rx.recv_timeout(Duration::from_secs(20)).expect("the blocking task started");
        if dropping {
            drop(Arc::try_unwrap(timer).expect("the last reference"));
            assert_eq!(remains.panicked(), 509, "the batch's nine others and the later 500");
        } else {
            assert_eq!(drop_each(timer.shutdown_timeout(Duration::ZERO)), 509);
        }
        release_tx.send(()).unwrap();
        if let Some(advancing) = advancing {
            advancing.join().unwrap();
        }
        remains.audit_slots(); // once the advance released the blocking task's slot
    }
}

#[test]
fn cancelling_repeating_tasks_whose_closures_panic_on_drop_reuses_their_slots() {
    let (clock, timer) = timer(false);
    for _ in 0..5_000 {
        let handle = timer.schedule_repeating(ms(1), Repeat::FixedDelay(ms(1)), repeating_with_bomb());
        clock.advance(ms(1));
        timer.advance_clock(Duration::ZERO); // one run: the closure moved to the next run's entry
        assert_eq!(handle.runs(), 1);
        assert!(panic::catch_unwind(AssertUnwindSafe(|| handle.cancel())).is_err(), "dropped by cancel");
        assert!(!handle.is_active());
    }
    assert_eq!(timer.len(), 0);
    assert_few_slots(&timer);
}

#[test]
fn repeating_tasks_ended_by_shutdown_or_drop_with_closures_that_panic_on_drop_leave_no_slot_behind() {
    for dropping in [false, true] {
        let (clock, timer) = timer(false);
        for i in 0..200 {
            timer.schedule_repeating(ms(1), Repeat::FixedRate(ms(1 + i % 40)), repeating_with_bomb());
        }
        for _ in 0..50 {
            clock.advance(ms(1));
            timer.advance_clock(Duration::ZERO);
        }
        let remains = timer.remains();
        if dropping {
            drop(timer);
            assert_eq!(remains.panicked(), 200, "each repetition's closure, dropped by the drop");
        } else {
            assert_eq!(drop_each(timer.shutdown()), 200, "each repetition's next run, handed back");
        }
        remains.audit_slots();
    }
}

#[test]
fn a_dropped_driven_timer_leaves_no_listener_on_a_manual_clock() {
    let clock = ManualClock::new();
    for _ in 0..200 {
        drop(Timer::builder().clock(clock.clone()).build());
        assert_eq!(clock.listeners(), 0, "removed at once, not at the next advance");
    }
    let timer = Timer::builder().clock(clock.clone()).build();
    assert_eq!(clock.listeners(), 1);
    drop(timer.shutdown());
    assert_eq!(clock.listeners(), 0);
}

/// The check the tests above end with finds a slot left occupied: a task still pending.
#[test]
#[should_panic]
fn the_slot_check_finds_a_task_left_pending() {
    let (_clock, timer) = timer(false);
    timer.schedule(ms(5), || {});
    timer.remains().audit_slots();
}
