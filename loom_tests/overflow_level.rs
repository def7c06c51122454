//! Two threads creating the same overflow level at once.

use std::time::Duration;

use crate::support::{manual_timer, ticks, Runs};

/// With 2 slots, level 0 covers 2 ticks: deadlines 2 and 3 both need level 1 (slots of 2 ticks),
/// which does not exist yet, so both schedulers race to create it. Exactly one level comes into being
/// (no entry goes into a level that is then discarded), its bucket is queued (twice if both adds,
/// one per lane, find its expiration unset: each queues before it lowers), and both tasks fire.
#[test]
fn overflow_level_created_once() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let (a, b) = (Runs::default(), Runs::default());

        let scheduler = {
            let (timer, a) = (timer.clone(), a.clone());
            loom::thread::spawn(move || {
                timer.schedule(ticks(2), a.task());
            })
        };
        timer.schedule(ticks(3), b.task());
        scheduler.join().unwrap();

        let stats = timer.stats();
        assert_eq!(stats.levels_in_use, 1, "only level 1 exists, created once");
        assert!((1..=2).contains(&stats.queued_buckets), "both share level 1, slot 1");
        assert_eq!(timer.len(), 2);
        clock.advance(ticks(3));
        assert!(timer.advance_clock(Duration::ZERO));
        assert_eq!((a.count(), b.count()), (1, 1), "no task lost");
        assert!(timer.is_empty());
        assert_eq!(timer.stats().queued_buckets, 0, "a second queue entry is popped too");
    });
}
