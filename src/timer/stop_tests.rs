//! The stop's and the shrink's sides of the timer on the core (`stop.rs`): a full shutdown's two
//! drains handed back as one, in firing order, and a shrink's cut of the advance's buffers.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::delay_queue::Timeline;
use crate::shard::core::Merge;
use crate::timer::Timer;
use crate::ManualClock;

fn manual() -> (ManualClock, Timer) {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    (clock, timer)
}

/// The drains around the executors' join take the pending entries first and the held ones after;
/// what they hand back is in firing order, the instants before the clock's origin (whose records
/// the first drain takes from the shards) ordering those the second takes.
#[test]
fn a_drain_around_the_join_hands_back_both_drains_in_firing_order() {
    let (_clock, timer) = manual();
    let ran = Arc::new(Mutex::new(Vec::new()));
    let task = |name: &'static str| {
        let ran = Arc::clone(&ran);
        move || ran.lock().unwrap().push(name)
    };
    let origin = timer.now();
    timer.schedule(Duration::from_millis(5), task("pending"));
    timer.schedule_at(origin - Duration::from_millis(1), task("second before the origin"));
    timer.schedule_at(origin - Duration::from_millis(2), task("first before the origin"));
    // An advance's collection holds the two due before the origin, unclaimed (as jobs handed to
    // an executor are), so that the drain keeping held entries leaves them to the second.
    let shared = timer.shared();
    let (mut due, mut merge) = (Vec::new(), Merge::default());
    shared.core.advance(shared.time.now_tick(), shared.stamps.begin_round(), &mut due, &mut merge);
    assert_eq!(due.len(), 2, "both due before the origin held");
    let unfired = shared.drain_around(|| {});
    assert_eq!(unfired.len(), 3);
    unfired.into_iter().for_each(|task| task.run());
    assert_eq!(*ran.lock().unwrap(), ["first before the origin", "second before the origin", "pending"]);
}

/// After a burst's advance the buffers keep room for 16,384 entries each; a shrink empties them.
#[test]
fn a_shrink_empties_the_advance_buffers() {
    let (clock, timer) = manual();
    for _ in 0..20_000 {
        timer.schedule(Duration::from_millis(1), || {});
    }
    clock.advance(Duration::from_millis(1));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(timer.stats().fired, 20_000);
    let shared = timer.shared();
    assert!(shared.advance_lock.lock().due.capacity() > 0, "an advance keeps room");
    timer.shrink();
    assert_eq!(shared.advance_lock.lock().due.capacity(), 0);
}
