//! A bucket flushed for one round and reused for a later one while a schedule races the flush.

use std::time::Duration;

use crate::support::{manual_timer, spawn_advance, ticks, Runs};

/// Seeded fault `shard_core_bucket_round_kept`: the flush keeps the bucket's round (its
/// expiration not reset) and an insert queues a bucket only if it holds no round, so B and C,
/// refiled into level 0's slot 1 for round 3, are linked into a bucket that is never offered again.
///
/// With 2 slots a level, level 0's slot 1 serves ticks 1, 3, 5, … A is due at tick 1 and the
/// clock stands at 2; the advancing thread flushes slot 1's round 1 (firing A) while the main
/// thread schedules B and C one tick out (tick 3). Whether they are filed from time 0 or from time
/// 1 (before or after the flush takes the shard's lock), they go to level 1's slot 1 (round 2),
/// whose flush refiles them into level 0's slot 1, the bucket A left, for round 3: its new round
/// is offered, and B and C fire at tick 3, not before, once each.
#[test]
fn bucket_expiration_reset_on_reuse() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let (a, b, c) = (Runs::default(), Runs::default(), Runs::default());
        timer.schedule(ticks(1), a.task()); // level 0, slot 1, round 1
        clock.advance(ticks(2)); // round 1 is due; the clock reads tick 2

        let advancer = spawn_advance(&timer);
        let handle_b = timer.schedule(ticks(1), b.task()); // tick 3
        timer.schedule(ticks(1), c.task()); // tick 3, the same buckets
        advancer.join().unwrap();

        timer.advance_clock(Duration::ZERO); // still tick 2
        assert_eq!((a.count(), b.count(), c.count()), (1, 0, 0), "A at tick 1; B and C not before 3");
        assert_eq!(timer.len(), 2);
        clock.advance(ticks(1));
        assert!(timer.advance_clock(Duration::ZERO), "round 3 of the reused bucket was offered");
        assert_eq!((b.count(), c.count()), (1, 1), "round 3 of the reused bucket fired each once");
        assert!(!handle_b.cancel(), "B already ran");
        assert!(timer.is_empty());
        assert_eq!(timer.stats().queued_buckets, 0, "no offer left queued");
    });
}
