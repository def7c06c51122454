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
// Models the arena's early cascade of a big stage.
#[cfg(not(delaywheel_core))]
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
// Models the arena's cascade of a big stage in paced chunks.
#[cfg(not(delaywheel_core))]
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

/// Wheel of 2: A (deadline 3) is in level 1's bucket of round 2, Z (deadline 6) in level 2's
/// bucket of round 4. Advancing at tick 2 cascades A into level 0 (tick 3) while the main thread
/// asks `next_wakeup`: whenever it asks (before the advance, while A is in transit with Z's bucket
/// the queue's head, or after), the answer is at or before A's tick, so a simulation jumping the
/// clock there fires A at its tick, not at Z's. Seeded fault `next_wakeup_ignores_advance`: the
/// head read while the advance holds A answers tick 4.
#[test]
fn next_wakeup_racing_a_cascade_in_flight() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let (a, z) = (Runs::default(), Runs::default());
        let start = timer.now();
        timer.schedule(ticks(3), a.task());
        timer.schedule(ticks(6), z.task());
        clock.advance(ticks(2));

        let advancer = spawn_advance(&timer);
        let next = timer.next_wakeup().expect("two tasks pending");
        advancer.join().unwrap();

        assert!(next <= start + ticks(3), "next_wakeup {:?} is past A's tick 3", next - start);
        assert_eq!((a.count(), z.count()), (0, 0), "nothing is due at tick 2");
        clock.advance(ticks(1));
        timer.advance_clock(Duration::ZERO);
        assert_eq!((a.count(), z.count()), (1, 0));
    });
}
