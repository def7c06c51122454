//! A bucket reused for its next round while its previous round is being flushed.

use std::time::Duration;

use crate::support::{manual_timer, spawn_advance, ticks, Runs};

/// With 2 slots, level-0 slot 1 serves ticks 1, 3, 5, … At tick 2 the advancing thread flushes round
/// 1 of that bucket while the main thread schedules two tasks for round 3 into it. Adds that beat the
/// flush leave the expiration at 1 and cascade with the flush; adds after it find the expiration reset
/// and queue the bucket again. Either way the bucket is queued for round 3, at most twice (once by
/// each add that lowers its expiration: the flush's re-add and a schedule in the other lane may
/// both find it unset; the second add of a round in one lane never re-queues), and B and C fire at
/// tick 3.
#[test]
fn bucket_expiration_reset_on_reuse() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let (a, b, c) = (Runs::default(), Runs::default(), Runs::default());
        timer.schedule(ticks(1), a.task()); // slot 1, round 1
        clock.advance(ticks(2)); // round 1 is due; now is tick 2

        let advancer = spawn_advance(&timer);
        timer.schedule(ticks(1), b.task()); // deadline 3: slot 1, round 3
        timer.schedule(ticks(1), c.task()); // same bucket, same round
        advancer.join().unwrap();

        assert_eq!(a.count(), 1);
        let queued = timer.stats().queued_buckets;
        assert!((1..=2).contains(&queued), "queued for round 3, by at most two lowering adds: {queued}");
        clock.advance(ticks(1));
        assert!(timer.advance_clock(Duration::ZERO));
        assert_eq!((b.count(), c.count()), (1, 1), "round 3 fired once each");
        assert!(timer.is_empty());
        assert_eq!(timer.stats().queued_buckets, 0);
    });
}
