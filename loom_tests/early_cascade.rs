//! A stage cascaded ahead of its round (and in chunks) racing a cancel and a schedule.
//!
//! Under loom a lane's stage of two entries is "big" (`EARLY_LANE_LEN` is 1) and a chunk is one entry
//! (`CASCADE_CHUNK` is 1), so two tasks take the paths that a million take in production. (The
//! main thread schedules them: they share its lane of the bucket.)

use std::time::Duration;

use crate::support::{manual_timer, spawn_advance, ticks, Runs};

/// Wheel of 2: deadline 2 from tick 0 is level 1 (slots of 2 ticks), round 2, stage 0, which opens
/// at tick 1. With two entries it is visited at tick 1, while the main thread cancels one of them
/// (in the bucket, in transit, or already in level 0) and schedules a third task for the same
/// tick (into the level-0 bucket the cascade fills). Nothing fires at tick 1; at tick 2 the two
/// live tasks fire once each and the cancelled one never.
#[test]
fn early_cascade_vs_cancel_and_schedule() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let (a, b, c) = (Runs::default(), Runs::default(), Runs::default());
        timer.schedule(ticks(2), a.task());
        let hb = timer.schedule(ticks(2), b.task());
        clock.advance(ticks(1));

        let advancer = spawn_advance(&timer);
        assert!(hb.cancel(), "b was pending");
        timer.schedule(ticks(1), c.task()); // deadline 2, level 0
        assert!(advancer.join().unwrap(), "the early stage was visited at tick 1");

        assert_eq!((a.count(), b.count(), c.count()), (0, 0, 0), "nothing is due at tick 1");
        assert_eq!(timer.len(), 2);
        clock.advance(ticks(1));
        timer.advance_clock(Duration::ZERO);
        assert_eq!((a.count(), b.count(), c.count()), (1, 0, 1));
        assert!(timer.is_empty());
        assert_eq!(timer.stats().queued_buckets, 0, "no bucket left queued");
    });
}

/// Wheel of 8: deadline 8 from tick 0 is level 1 (slots of 8 ticks, 4 stages of 2), round 8,
/// stage 0, open from tick 2 and due at 8. Advancing to tick 3 visits it at 2 (5 ticks to spare: a
/// paced chunk of two entries); what is left is re-queued: at 3 while still big, at its round (8)
/// once small again. Meanwhile the main thread cancels the second entry: it is found wherever it is,
/// the re-queued visit finds what is left, and the two other tasks fire once each, at tick 8.
#[test]
fn chunked_cascade_vs_cancel() {
    loom::model(|| {
        let (clock, timer) = manual_timer(8);
        let (a, b, c) = (Runs::default(), Runs::default(), Runs::default());
        timer.schedule(ticks(8), a.task());
        let hb = timer.schedule(ticks(8), b.task());
        timer.schedule(ticks(8), c.task());
        clock.advance(ticks(3));

        let advancer = spawn_advance(&timer);
        assert!(hb.cancel());
        advancer.join().unwrap();

        assert_eq!(timer.len(), 2);
        clock.advance(ticks(4));
        timer.advance_clock(Duration::ZERO);
        assert_eq!(a.count() + c.count(), 0, "not before their deadline");
        clock.advance(ticks(1));
        assert!(timer.advance_clock(Duration::ZERO));
        assert_eq!((a.count(), b.count(), c.count()), (1, 0, 1), "a chunk was stranded");
        assert!(timer.is_empty());
        assert_eq!(timer.stats().queued_buckets, 0);
    });
}
