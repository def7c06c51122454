//! Two threads advancing the same timer.

use std::time::Duration;

use crate::support::{manual_timer, spawn_advance, ticks, Runs};

/// `advance_clock` may be called from any thread, also while the driver (here: another model thread)
/// advances: the advances are serialised, so the due bucket is flushed by exactly one of them and the
/// task runs once.
#[test]
fn two_advances_racing() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let a = Runs::default();
        timer.schedule(ticks(1), a.task());
        clock.advance(ticks(1));

        let other = spawn_advance(&timer);
        let flushed_here = timer.advance_clock(Duration::ZERO);
        let flushed_there = other.join().unwrap();

        assert!(flushed_here ^ flushed_there, "exactly one advance flushed the bucket");
        assert_eq!(a.count(), 1);
        assert!(timer.is_empty());
    });
}
