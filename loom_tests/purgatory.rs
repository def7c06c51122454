//! The purgatory's two races: a check racing the expiry of the same operation (exactly once), and a
//! registration racing the check that carries its trigger (no trigger lost).
//!
//! Each model is a manual timer of wheel size 2 on a `ManualClock`, one operation,
//! one key, two threads; under loom the purgatory has two watcher shards.
//!
//! The operation's condition is a loom atomic written and read `Relaxed`: the models show that the
//! purgatory's own locks carry the trigger from the thread that sets it to the try that must see it.
//! The callbacks' counters are plain std atomics: observations read after the join, kept out of
//! loom's state space.

use std::sync::atomic::{AtomicBool as StdBool, AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use delaywheel::purgatory::{DelayedOperation, Purgatory};
use delaywheel::{ManualClock, Timer};
use loom::sync::atomic::{AtomicBool, Ordering::Relaxed};
use loom::sync::Arc;

use crate::support::{ticks, TICK};

/// An operation that completes once `ready` is set, and records its callbacks.
#[derive(Default)]
struct Op {
    ready: AtomicBool,
    completions: AtomicUsize,
    expirations: AtomicUsize,
    /// Set if `on_expiration` ran before `on_complete`, or `try_complete` after completion.
    broken: StdBool,
}

impl DelayedOperation for Op {
    fn try_complete(&self) -> bool {
        if self.completions.load(SeqCst) != 0 {
            self.broken.store(true, SeqCst);
        }
        self.ready.load(Relaxed)
    }
    fn on_complete(&self) {
        self.completions.fetch_add(1, SeqCst);
    }
    fn on_expiration(&self) {
        if self.completions.load(SeqCst) != 1 {
            self.broken.store(true, SeqCst);
        }
        self.expirations.fetch_add(1, SeqCst);
    }
}

/// A purgatory on a manual timer (wheel size 2) on a fresh clock, shareable between model threads.
fn manual_purgatory() -> (ManualClock, Arc<Purgatory<u8, Op>>) {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(TICK).wheel_size(2).clock(clock.clone()).manual().build();
    (clock, Arc::new(Purgatory::with_timer(timer)))
}

/// The operation is satisfied and its timeout is due: one thread checks its key while another
/// advances the clock (expiring it). Exactly one of them completes it: `on_complete` runs once, and
/// `on_expiration` runs (after it) exactly when the check did not win. Either way the operation
/// leaves its list and the timer.
#[test]
fn check_and_complete_racing_expiry() {
    loom::model(|| {
        let (clock, purgatory) = manual_purgatory();
        let op = Arc::new(Op::default());
        assert!(!purgatory.try_complete_else_watch(Arc::clone(&op), ticks(1), [7]));
        op.ready.store(true, Relaxed);
        clock.advance(ticks(1));

        let reaper = {
            let purgatory = Arc::clone(&purgatory);
            loom::thread::spawn(move || purgatory.advance_clock(Duration::ZERO))
        };
        let by_check = purgatory.check_and_complete(&7);
        reaper.join().unwrap();

        assert_eq!(op.completions.load(SeqCst), 1, "completed exactly once");
        assert_eq!(op.expirations.load(SeqCst), 1 - by_check, "expired iff the check lost");
        assert!(!op.broken.load(SeqCst), "expiration before completion, or a try after it");
        assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (0, 0, 0));
    });
}

/// One thread registers the operation (try, watch, try again) while another makes it satisfiable
/// and checks its key. Whatever the interleaving, it completes, once: by the registration's second
/// try if the check ran before the watch, by the check otherwise (waiting for the registration to
/// release the operation's lock). No timeout is involved: it is far away.
#[test]
fn watch_racing_check_loses_no_trigger() {
    loom::model(|| {
        let (_clock, purgatory) = manual_purgatory();
        let op = Arc::new(Op::default());

        let trigger = {
            let (purgatory, op) = (Arc::clone(&purgatory), Arc::clone(&op));
            loom::thread::spawn(move || {
                op.ready.store(true, Relaxed);
                purgatory.check_and_complete(&7)
            })
        };
        let by_registration = purgatory.try_complete_else_watch(Arc::clone(&op), ticks(100), [7]);
        let by_check = trigger.join().unwrap();

        assert_eq!(op.completions.load(SeqCst), 1, "the trigger was lost, or completed twice");
        assert_eq!(usize::from(by_registration) + by_check, 1);
        assert_eq!(op.expirations.load(SeqCst), 0);
        assert!(!op.broken.load(SeqCst));
        assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (0, 0, 0));
    });
}
