//! `DelayQueue::clear` racing the expiry of a value, and a remove and a reset of another: the
//! clear's scan claims each pending value entry as a remove's cancel does, and holds the timer's
//! advance lock so that no value an advance took out of the wheel comes out after it.
//!
//! A manual timer of wheel size 2 on a `ManualClock`. Values count their drops in plain std
//! atomics (observations, out of loom's sight), so each model checks that every value is dropped
//! exactly once, whoever took it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use loom::sync::Arc;

use crate::support::{manual_queue, ticks, Runs};

/// A value that counts its drops.
struct Value(std::sync::Arc<AtomicUsize>);

impl Drop for Value {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn value() -> (Value, std::sync::Arc<AtomicUsize>) {
    let drops = std::sync::Arc::new(AtomicUsize::new(0));
    (Value(std::sync::Arc::clone(&drops)), drops)
}

/// A value due now and a plain task due now, while the queue is cleared: the advance fires the
/// value (claims it and hands it to the ready list) and runs the task. Whichever comes first, the
/// clear drops the value (from its entry, or from the ready list), `len()` is 0 as the clear
/// returns (no value the advance took out of the wheel arrives after it), nothing comes out, and
/// the plain task runs once: the clear leaves what is not a value alone.
#[test]
fn clear_racing_expiry() {
    loom::model(|| {
        let (clock, queue) = manual_queue();
        let (due, due_drops) = value();
        queue.insert(due, ticks(1));
        let runs = Runs::default();
        queue.timer().schedule(ticks(1), runs.task());
        clock.advance(ticks(1));

        let advancer = {
            let queue = Arc::clone(&queue);
            loom::thread::spawn(move || queue.advance_clock(Duration::ZERO))
        };
        queue.clear();
        assert_eq!(queue.len(), 0, "a value expiring meanwhile arrived after the clear");
        advancer.join().unwrap();

        assert!(queue.try_recv().is_none(), "the value came out after the clear");
        assert_eq!(due_drops.load(Ordering::SeqCst), 1, "the value dropped once");
        assert_eq!(runs.count(), 1, "the plain task ran once");
        assert!(queue.is_empty() && queue.timer().is_empty());
    });
}

/// A pending value re-armed earlier (a reset that moves the entry to its new bucket under its
/// shard's lock) and then removed, while the queue is cleared: exactly one of "the remove returned
/// it" and "the clear dropped it" happens, wherever the clear's claim finds the entry (its old
/// bucket or the one it moved to); the value is dropped once, and the queue ends empty.
#[test]
fn clear_racing_reset_and_remove() {
    loom::model(|| {
        let (_clock, queue) = manual_queue();
        let (pending, drops) = value();
        let key = queue.insert(pending, ticks(3));

        let other = {
            let queue = Arc::clone(&queue);
            loom::thread::spawn(move || {
                let moved = queue.reset(&key, ticks(1));
                (moved, queue.remove(&key).is_some())
            })
        };
        queue.clear();
        let (_moved, removed) = other.join().unwrap();

        assert_eq!(drops.load(Ordering::SeqCst), 1, "the value dropped once (removed: {removed})");
        assert_eq!(queue.len(), 0, "removed or cleared, and counted out once");
        assert_eq!(queue.remove(&key).map(|_| ()), None);
        let stats = queue.timer().stats();
        assert!(stats.pending_per_level.iter().all(|&n| n == 0), "left in a bucket: {stats:?}");
        assert!(queue.timer().is_empty());
    });
}

/// A pending value while the queue is cleared and its timer shut down without waiting
/// (`shutdown_timeout(ZERO)`): whichever claims the value, the clear's scan or the shutdown's
/// drain, it is dropped once, and when both have returned the queue counts nothing and is
/// closed. A shutdown that found the advance lock held by the clear leaves the closing to it
/// (as to an advance), so the values its drain claimed are counted out either way.
#[test]
fn clear_racing_shutdown() {
    loom::model(|| {
        let (_clock, queue) = manual_queue();
        let (pending, drops) = value();
        queue.insert(pending, ticks(3));

        let stopper = {
            let queue = Arc::clone(&queue);
            loom::thread::spawn(move || drop(queue.timer().shutdown_timeout(Duration::ZERO)))
        };
        queue.clear();
        stopper.join().unwrap();

        assert_eq!(drops.load(Ordering::SeqCst), 1, "the value dropped once");
        assert_eq!(queue.len(), 0, "the value claimed by the shutdown is still counted");
        assert!(queue.is_empty());
        assert!(queue.try_recv().is_none());
    });
}
