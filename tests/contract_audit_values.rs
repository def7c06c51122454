//! The delay queue's and the purgatory's contracts pushed with the inputs a demanding user tries:
//! stale and foreign keys, far and past deadlines, inserts after shutdown, values whose `Drop`
//! panics, operations watched under no key, completed twice, or racing their expiry.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::queue::{advance, manual_queue};
use common::{manual_timer, ms};
use delaywheel::purgatory::{DelayedOperation, Purgatory};
use delaywheel::queue::{DelayQueue, Expired, InsertError, Key};
use delaywheel::{ManualClock, ScheduleError, Timer};

fn assert_send_sync<T: Send + Sync>() {}

/// Counts its drops; panics in `drop` when asked to.
struct Tracked {
    drops: Arc<AtomicUsize>,
    panic_on_drop: bool,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        if self.panic_on_drop && !std::thread::panicking() {
            panic!("a value's Drop panics");
        }
    }
}

#[test]
fn the_queue_names_have_the_contract_bounds() {
    // Send + Sync for T: Send, also when T is not Sync; InsertError is Debug for every T.
    assert_send_sync::<DelayQueue<std::cell::Cell<u32>>>();
    fn key_bounds<K: Clone + Eq + std::hash::Hash + std::fmt::Debug + Send + Sync>() {}
    key_bounds::<Key>();
    struct NotDebug;
    let e: Option<InsertError<NotDebug>> = None;
    let _ = format!("{e:?}");
    assert_send_sync::<Purgatory<u64, Op>>();
}

#[test]
fn stale_and_foreign_keys_name_nothing() {
    let (clock, q) = manual_queue::<u32>();
    let (_clock2, other) = manual_queue::<u32>();
    let k = q.insert(1, ms(5));
    let foreign = other.insert(2, ms(5));
    assert_eq!((q.remove(&foreign), q.deadline(&foreign), q.reset(&foreign, ms(1))), (None, None, false));
    assert_eq!(other.len(), 1, "the foreign key touched nothing");
    advance(&clock, &q, ms(5));
    assert_eq!(q.remove(&k), None, "expired: not removable");
    assert_eq!(q.len(), 1, "expired values count until taken");
    let e: Expired<u32> = q.try_recv().unwrap();
    assert_eq!((e.key(), e.into_inner()), (k, 1));
    // The slot is reused by later values: the old key still names nothing.
    let mut later = Vec::new();
    for v in 10..20 {
        later.push(q.insert(v, ms(5)));
    }
    assert!(!later.contains(&k));
    assert_eq!((q.remove(&k), q.deadline(&k), q.reset(&k, ms(1))), (None, None, false));
    assert_eq!(q.len(), 10);
    assert!(q.reset_at(&later[0], q.timer().now()), "a reset into the present is a reset");
    q.advance_clock(Duration::ZERO);
    assert_eq!(q.try_recv().map(|e| e.into_inner()), Some(10));
}

#[test]
fn refused_inserts_hand_the_value_back_and_lose_nothing() {
    let (_clock, q) = manual_queue::<String>();
    let e = q.try_insert("far".to_string(), Duration::MAX).unwrap_err();
    assert!(matches!(e.error(), ScheduleError::DelayTooLong { .. }), "{e:?}");
    assert!(!e.to_string().is_empty());
    assert_eq!(e.into_inner(), "far");
    let far_at = q.timer().now() + Duration::from_secs(1 << 40);
    assert_eq!(q.try_insert_at("at".to_string(), far_at).unwrap_err().into_inner(), "at");
    let k = q.insert("gone".to_string(), Duration::MAX);
    assert_eq!((q.remove(&k), q.len()), (None, 0), "insert refuses silently, keeping nothing");
    // Capacity refusals hand the value back too.
    let clock = ManualClock::new();
    let small = DelayQueue::with_timer(Timer::builder().max_pending(1).clock(clock).manual().build());
    small.insert(1u8, ms(5));
    let e = small.try_insert(2u8, ms(5)).unwrap_err();
    assert_eq!(e.error().clone(), ScheduleError::TooManyPending { max: 1 });
    assert_eq!(e.into_inner(), 2);
}

#[test]
fn values_in_the_past_come_out_at_the_next_advance_in_deadline_order() {
    let (clock, q) = manual_queue::<u32>();
    clock.advance(ms(50));
    let now = q.timer().now();
    q.insert_at(3, now - ms(1));
    q.insert_at(1, now - ms(40));
    q.insert_at(2, now - ms(40));
    q.insert(4, Duration::ZERO);
    if let Some(before_origin) = now.checked_sub(Duration::from_secs(3600)) {
        q.insert_at(0, before_origin);
    }
    assert!(q.try_recv().is_none(), "not inside insert");
    q.advance_clock(Duration::ZERO);
    let mut out = Vec::new();
    while let Some(e) = q.try_recv() {
        assert!(e.deadline() <= q.timer().now(), "never early");
        out.push(e.into_inner());
    }
    out.retain(|&v| v != 0);
    assert_eq!(out, vec![1, 2, 3, 4]);
    assert!(q.is_empty());
}

#[test]
fn values_come_out_in_deadline_order_across_advances_also_one_set_to_a_passed_deadline() {
    let (clock, q) = manual_queue::<u32>();
    for (v, d) in [(4u32, 9), (2, 5), (3, 7), (1, 2)] {
        q.insert(v, ms(d));
    }
    let late = q.insert(6, ms(50));
    for _ in 0..10 {
        advance(&clock, &q, ms(1)); // expired over several advances, none taken meanwhile
    }
    // Set to deadlines already passed (1 ms and 2 ms): they expire at the next advance, and come
    // out before the values waiting that are due after them; 5 after 1, due at the same instant
    // and handed over later.
    q.insert_at(5, q.timer().now() - ms(8));
    assert!(q.reset_at(&late, q.timer().now() - ms(9)));
    q.advance_clock(Duration::ZERO);
    let out: Vec<u32> = std::iter::from_fn(|| q.try_recv()).map(|e| e.into_inner()).collect();
    assert_eq!(out, vec![6, 1, 5, 2, 3, 4], "deadline order across batches");
}

#[test]
fn a_value_whose_drop_panics_loses_no_other_value() {
    let drops = Arc::new(AtomicUsize::new(0));
    let value = |panic_on_drop| Tracked { drops: Arc::clone(&drops), panic_on_drop };
    let (clock, q) = manual_queue::<Tracked>();
    let bad = q.insert(value(true), ms(5));
    q.insert(value(false), ms(5));
    q.insert(value(true), ms(5));
    q.insert(value(false), ms(50));
    let removed = q.remove(&bad).unwrap();
    assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(removed))).is_err());
    advance(&clock, &q, ms(5));
    assert_eq!(q.len(), 3);
    let mut taken = 0;
    while let Some(e) = q.try_recv() {
        taken += 1;
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(e)));
    }
    assert_eq!((taken, q.len()), (2, 1));
    drop(q);
    assert_eq!(drops.load(Ordering::SeqCst), 4, "every value dropped once, the pending one with the queue");
}

#[test]
fn dropping_the_queue_drops_pending_and_expired_values() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (clock, q) = manual_queue::<Tracked>();
    for d in [1, 2, 100, 1000] {
        q.insert(Tracked { drops: Arc::clone(&drops), panic_on_drop: false }, ms(d));
    }
    advance(&clock, &q, ms(2));
    assert_eq!(q.len(), 4);
    drop(q);
    assert_eq!(drops.load(Ordering::SeqCst), 4);
}

#[test]
fn inserting_after_shutdown_is_refused_and_consumers_are_not_left_waiting() {
    let (clock, q) = manual_queue::<u32>();
    q.insert(1, ms(5));
    drop(q.timer().shutdown());
    let e = q.try_insert(2, ms(5)).unwrap_err();
    assert_eq!(e.error(), &ScheduleError::ShutDown);
    assert_eq!(e.into_inner(), 2);
    assert_eq!(q.insert(3, ms(1)), q.insert(4, ms(1)), "refused keys name nothing alike");
    advance(&clock, &q, ms(10));
    assert!(q.try_recv().is_none());
    assert_eq!(q.len(), 0, "the shut-down timer dropped what it held");
    assert!(q.recv_timeout(Duration::from_secs(30)).is_none(), "an empty queue does not block");
}

#[derive(Default)]
struct Op {
    ready: AtomicBool,
    tries: AtomicUsize,
    /// Completes on this try (counted from 1), if non-zero.
    complete_on_try: usize,
    log: Mutex<Vec<&'static str>>,
}

impl DelayedOperation for Op {
    fn try_complete(&self) -> bool {
        let n = self.tries.fetch_add(1, Ordering::SeqCst) + 1;
        self.ready.load(Ordering::SeqCst) || n == self.complete_on_try
    }
    fn on_complete(&self) {
        self.log.lock().unwrap().push("complete");
    }
    fn on_expiration(&self) {
        self.log.lock().unwrap().push("expire");
    }
}

impl Op {
    fn log(&self) -> Vec<&'static str> {
        self.log.lock().unwrap().clone()
    }
}

fn manual_purgatory() -> (ManualClock, Purgatory<u64, Op>) {
    let (clock, timer) = manual_timer(ms(1), 20);
    (clock, Purgatory::with_timer(timer))
}

#[test]
fn an_operation_watched_under_no_key_expires_once_on_time() {
    let (clock, p) = manual_purgatory();
    let op = Arc::new(Op::default());
    assert!(!p.try_complete_else_watch(Arc::clone(&op), ms(20), std::iter::empty()));
    assert_eq!((p.delayed(), p.watched()), (1, 0));
    clock.advance(ms(19));
    p.advance_clock(Duration::ZERO);
    assert!(op.log().is_empty(), "never early");
    clock.advance(ms(1));
    p.advance_clock(Duration::ZERO);
    assert_eq!(op.log(), vec!["complete", "expire"]);
    assert_eq!((p.delayed(), p.watched(), p.expired()), (0, 0, 1));
}

#[test]
fn a_zero_timeout_expires_at_the_next_advance_not_inside_the_registration() {
    let (_clock, p) = manual_purgatory();
    let op = Arc::new(Op::default());
    assert!(!p.try_complete_else_watch(Arc::clone(&op), Duration::ZERO, [1]));
    assert_eq!((op.log(), p.delayed(), p.watched()), (vec![], 1, 1));
    p.advance_clock(Duration::ZERO);
    assert_eq!(op.log(), vec!["complete", "expire"]);
    assert_eq!((p.delayed(), p.watched(), p.check_and_complete(&1)), (0, 0, 0));
}

#[test]
fn completion_is_exactly_once_and_leaves_every_list() {
    let (clock, p) = manual_purgatory();
    let op = Arc::new(Op::default());
    assert!(!p.try_complete_else_watch(Arc::clone(&op), ms(20), vec![1, 2, 2, 3]));
    assert_eq!((p.delayed(), p.watched()), (1, 4));
    assert_eq!(p.check_and_complete(&7), 0, "an unknown key completes nothing");
    assert_eq!(p.check_and_complete(&1), 0, "not ready");
    op.ready.store(true, Ordering::SeqCst);
    assert_eq!(p.check_and_complete(&2), 1);
    assert_eq!(p.check_and_complete(&2), 0, "completed twice: once");
    assert_eq!(p.check_and_complete(&3), 0);
    assert_eq!((p.delayed(), p.watched(), p.watched_keys()), (0, 0, 0));
    assert!(p.cancel_for_key(&1).is_empty(), "a completed operation is not cancelled");
    clock.advance(ms(40));
    p.advance_clock(Duration::ZERO);
    assert_eq!(op.log(), vec!["complete"], "no expiry after completion");
}

#[test]
fn the_second_try_catches_a_trigger_and_a_first_try_keeps_nothing() {
    let (_clock, p) = manual_purgatory();
    let at_once = Arc::new(Op { complete_on_try: 1, ..Op::default() });
    assert!(p.try_complete_else_watch(Arc::clone(&at_once), ms(20), [1, 2]));
    let second = Arc::new(Op { complete_on_try: 2, ..Op::default() });
    assert!(p.try_complete_else_watch(Arc::clone(&second), ms(20), [1, 2]));
    assert_eq!((p.delayed(), p.watched(), p.watched_keys()), (0, 0, 0));
    assert_eq!((at_once.log(), second.log()), (vec!["complete"], vec!["complete"]));
}

#[test]
fn cancel_for_key_returns_each_operation_once_and_runs_no_callback() {
    let (clock, p) = manual_purgatory();
    let ops: Vec<Arc<Op>> = (0..3).map(|_| Arc::new(Op::default())).collect();
    for op in &ops {
        p.try_complete_else_watch(Arc::clone(op), ms(10), [5, 5, 6]);
    }
    let dropped: Vec<Arc<Op>> = p.cancel_for_key(&5);
    assert_eq!(dropped.len(), 3);
    assert!(ops.iter().all(|op| dropped.iter().filter(|d| Arc::ptr_eq(d, op)).count() == 1));
    assert_eq!((p.delayed(), p.watched()), (0, 0));
    assert!(p.cancel_for_key(&6).is_empty());
    clock.advance(ms(20));
    p.advance_clock(Duration::ZERO);
    assert!(ops.iter().all(|op| op.log().is_empty()));
}

#[test]
fn checks_racing_the_expiry_complete_each_operation_once() {
    for round in 0..20 {
        let (clock, p) = manual_purgatory();
        let p = Arc::new(p);
        let ops: Vec<Arc<Op>> = (0..50).map(|_| Arc::new(Op::default())).collect();
        for (i, op) in ops.iter().enumerate() {
            p.try_complete_else_watch(Arc::clone(op), ms(5), [i as u64 % 4]);
        }
        for op in &ops {
            op.ready.store(true, Ordering::SeqCst);
        }
        clock.advance(ms(5));
        let checkers: Vec<_> = (0..3)
            .map(|t| {
                let p = Arc::clone(&p);
                std::thread::spawn(move || {
                    (0..4).map(|k| p.check_and_complete(&((k + t) % 4))).sum::<usize>()
                })
            })
            .collect();
        p.advance_clock(Duration::ZERO);
        let by_checks: usize = checkers.into_iter().map(|c| c.join().unwrap()).sum();
        let expired = ops.iter().filter(|op| op.log() == ["complete", "expire"]).count();
        assert!(ops.iter().all(|op| matches!(op.log().as_slice(), ["complete"] | ["complete", "expire"])));
        assert_eq!((by_checks + expired, p.expired() as usize), (50, expired), "round {round}");
        assert_eq!((p.delayed(), p.watched()), (0, 0));
    }
}

#[test]
fn a_purgatory_on_a_shut_down_timer_expires_at_once_instead_of_hanging() {
    let (_clock, timer) = manual_timer(ms(1), 20);
    drop(timer.shutdown());
    let p: Purgatory<u64, Op> = Purgatory::with_timer(timer);
    let op = Arc::new(Op::default());
    assert!(!p.try_complete_else_watch(Arc::clone(&op), ms(10), [1]));
    assert_eq!(op.log(), vec!["complete", "expire"]);
    assert_eq!((p.delayed(), p.watched()), (0, 0));
    let far = Arc::new(Op::default());
    let (_c, p2) = manual_purgatory();
    assert!(!p2.try_complete_else_watch(Arc::clone(&far), Duration::MAX, [1]));
    assert_eq!((p2.delayed(), p2.watched()), (1, 1), "beyond range: never expires, still watched");
    far.ready.store(true, Ordering::SeqCst);
    assert_eq!(p2.check_and_complete(&1), 1);
    assert_eq!((p2.delayed(), p2.watched()), (0, 0));
}
