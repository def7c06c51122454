//! The purgatory's callbacks misbehaving: an `on_complete` that panics inside a check, or inside
//! an expiry, and what the other operations of the same key or tick see.

mod common;
mod purgatory_support;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use common::ms;
use delaywheel::purgatory::DelayedOperation;
use purgatory_support::{advance, manual_purgatory};

/// Completes when `ready`; its `on_complete` panics if `faulty`.
#[derive(Default)]
struct Op {
    ready: AtomicBool,
    faulty: bool,
    completed: AtomicUsize,
    expired: AtomicUsize,
}

impl Op {
    fn new(faulty: bool) -> Arc<Op> {
        Arc::new(Op { faulty, ..Op::default() })
    }
}

impl DelayedOperation for Op {
    fn try_complete(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
    }
    fn on_complete(&self) {
        self.completed.fetch_add(1, Ordering::SeqCst);
        assert!(!self.faulty, "a faulty on_complete (expected by this test)");
    }
    fn on_expiration(&self) {
        self.expired.fetch_add(1, Ordering::SeqCst);
    }
}

/// An `on_complete` that panics in a check does not keep the check from the other operations of
/// its key: each completable one completes in that check (its trigger is not lost to a timeout),
/// and the panic then reaches the caller.
#[test]
fn a_panicking_on_complete_does_not_stop_the_check_of_its_key() {
    let (_clock, purgatory) = manual_purgatory::<u64, Op>();
    let ops = [Op::new(false), Op::new(true), Op::new(false)];
    for op in &ops {
        assert!(!purgatory.try_complete_else_watch(Arc::clone(op), ms(10), [7, 8]));
    }
    ops.iter().for_each(|op| op.ready.store(true, Ordering::SeqCst));
    let checked = catch_unwind(AssertUnwindSafe(|| purgatory.check_and_complete(&7)));
    assert!(checked.is_err(), "the panic reaches the caller");
    let completed: Vec<_> = ops.iter().map(|op| op.completed.load(Ordering::SeqCst)).collect();
    assert_eq!(completed, [1, 1, 1], "every completable operation completed once");
    let stats = purgatory.stats();
    assert_eq!((stats.delayed, stats.watched, stats.keys, stats.completed), (0, 0, 0, 3));
    assert_eq!(purgatory.check_and_complete(&8), 0, "nothing left under the other key");
}

/// An `on_complete` that panics on expiry is the timer task's panic (caught and counted by the
/// timer): its `on_expiration` does not run, and the other operations expiring at the same tick
/// expire all the same.
#[test]
fn a_panicking_on_complete_on_expiry_leaves_the_other_expiries_alone() {
    let (clock, purgatory) = manual_purgatory::<u64, Op>();
    let ops = [Op::new(true), Op::new(false)];
    for op in &ops {
        assert!(!purgatory.try_complete_else_watch(Arc::clone(op), ms(5), [1, 2]));
    }
    advance(&clock, &purgatory, ms(5));
    assert_eq!(ops[0].completed.load(Ordering::SeqCst), 1);
    assert_eq!(ops[0].expired.load(Ordering::SeqCst), 0, "on_complete did not return");
    assert_eq!((ops[1].completed.load(Ordering::SeqCst), ops[1].expired.load(Ordering::SeqCst)), (1, 1));
    let stats = purgatory.stats();
    assert_eq!((stats.delayed, stats.watched, stats.keys, stats.expired), (0, 0, 0, 2));
}
