//! Faults seen from inside: slots and clock listeners that user faults or dropped timers must not
//! leave behind (the public API cannot see either).

use std::panic::{self, AssertUnwindSafe};
use std::time::Duration;

use crate::{ManualClock, Timer};

/// Panics when dropped.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("dropping a Bomb panics (expected by this test)");
    }
}

#[test]
fn cancelling_tasks_whose_closures_panic_on_drop_reuses_their_slots() {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock).manual().build();
    for _ in 0..20_000 {
        let bomb = Bomb;
        let handle = timer.schedule(Duration::from_millis(5), move || std::mem::forget(bomb));
        assert!(panic::catch_unwind(AssertUnwindSafe(|| handle.cancel())).is_err());
    }
    assert_eq!(timer.len(), 0);
    let high_water = timer.arena_high_water();
    assert!(high_water <= 2 * crate::entry::arena::PAGE as u64, "{high_water} slots for one pending task");
}

#[test]
fn a_dropped_driven_timer_leaves_no_listener_on_a_manual_clock() {
    let clock = ManualClock::new();
    for _ in 0..200 {
        drop(Timer::builder().clock(clock.clone()).build());
        assert_eq!(clock.listeners(), 0, "removed at once, not at the next advance");
    }
    let timer = Timer::builder().clock(clock.clone()).build();
    assert_eq!(clock.listeners(), 1);
    drop(timer.shutdown());
    assert_eq!(clock.listeners(), 0);
}
