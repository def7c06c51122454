//! `next_wakeup` racing an advance that cascades an entry into a finer bucket. The flush refiles
//! the entry under its shard's lock, and the advance offers the finer bucket's round to the queue
//! after the unlock (`src/shard/core.rs`), so between the two the queue's head can be a later
//! bucket. `next_wakeup` reads the head only while no advance runs, and answers the cursor while
//! one does (`Shared::next_work_tick`, `src/timer/advance.rs`: a `try_lock` of the advance
//! lock).

use std::time::Duration;

use crate::support::{manual_timer, spawn_advance, ticks, Runs};

/// Wheel of 2: A (deadline 3) is in level 1's bucket of round 2, Z (deadline 6) in level 2's
/// bucket of round 4. Advancing at tick 2 cascades A into level 0 (tick 3) while the main thread
/// asks `next_wakeup`: whenever it asks (before the advance, while A's new round is not yet
/// offered and Z's bucket is the queue's head, or after), the answer is at or before A's tick, so a
/// simulation jumping the clock there fires A at its tick, not at Z's. (No seeded fault reads the
/// head while an advance runs: docs/loom.md, "What no fault covers".)
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
