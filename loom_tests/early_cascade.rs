//! A stage cascaded ahead of its round (and in chunks) racing a cancel and a schedule.
//!
//! Under loom a lane's stage of two entries is "big" (`EARLY_LANE_LEN` is 1) and a chunk is one entry
//! (`CASCADE_CHUNK` is 1), so two tasks take the paths that a million take in production. (The
//! main thread schedules them: they share its lane of the bucket.)

use std::time::Duration;

use crate::support::{manual_timer, spawn_advance, ticks, Runs};

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
