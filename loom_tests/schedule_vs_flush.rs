//! Adding to a bucket while the advancing thread flushes that same bucket.

use std::time::Duration;

use crate::support::{manual_timer, spawn_advance, ticks, Runs};

/// A task due at once goes to the level-0 bucket of its deadline tick, which here is the bucket being
/// flushed. Whether the add lands before the flush (and is flushed with A), or after it (and
/// re-queues the emptied bucket), B is neither lost nor fired twice.
#[test]
fn schedule_racing_flush_of_same_bucket() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let (a, b) = (Runs::default(), Runs::default());
        timer.schedule(ticks(1), a.task()); // level 0, slot 1, expiration 1
        clock.advance(ticks(1)); // that bucket is due

        let advancer = spawn_advance(&timer);
        let handle_b = timer.schedule(Duration::ZERO, b.task()); // due: level 0, slot 1 again
        advancer.join().unwrap();

        timer.advance_clock(Duration::ZERO); // fires B if it landed after the flush
        assert_eq!(a.count(), 1, "A fired once");
        assert_eq!(b.count(), 1, "B is neither lost nor fired twice");
        assert!(!handle_b.cancel(), "B already ran");
        assert!(timer.is_empty());
        assert_eq!(timer.stats().queued_buckets, 0, "no bucket left queued");
    });
}
