//! A shrink in steps on the assembled shard core (`src/shard/slab.rs`, "Memory";
//! `src/shard/core/room.rs`): each step takes the slots it cuts off the free list under the
//! shard's lock, so what a schedule between two steps finds is a slot still written.
//!
//! * `a_schedule_between_the_steps_of_a_shrink_finds_a_slot_and_every_entry_stays`: a shard of six
//!   entries, four of them cancelled out of index order; a shrink in steps of two slots
//!   (`Core::shrink_step_of`) while a schedule into the shard comes between any two: it takes a
//!   slot still written, and every entry pending stays so.
//!
//! Not modelled: on Linux a step's cut pages and the reserve's units go back after the unlock
//! (`Cut`, `src/shard/slab/slots.rs`); under loom the slots are a `Vec` and a step gives its units
//! back inside the lock, so that hand-back is written in `room.rs`, not checked here.

use delaywheel::loom_internals::shard::core::{at_tick, Core};
use loom::sync::Arc;
use loom::thread;

/// Seeded fault `shard_core_shrink_step_keeps_cut_slots_listed`: a step of a shrink forgets the
/// slots it cuts without taking them off the free list; a schedule between two steps takes one.
#[test]
fn a_schedule_between_the_steps_of_a_shrink_finds_a_slot_and_every_entry_stays() {
    loom::model(|| {
        let core: Arc<Core<u64>> = Arc::new(Core::with_wheel_size(1, 4));
        let handles: Vec<_> =
            (0..6).map(|k| core.schedule(at_tick(1 + k), k, k).map_err(drop).unwrap()).collect();
        // The free list 5, 3, 1, 4: the first step cuts slots 5 and 4, the second slot 3.
        for k in [5, 3, 1, 4] {
            assert_eq!(core.cancel(&handles[k]), Some(k as u64));
        }
        let scheduler = {
            let core = Arc::clone(&core);
            thread::spawn(move || core.schedule(at_tick(9), 9, 9).map_err(drop).unwrap())
        };
        while !core.shrink_step_of(0, 2).1 {}
        let late = scheduler.join().unwrap();
        assert_eq!(core.len(), 3);
        for (handle, payload) in [(&handles[0], 0), (&handles[2], 2), (&late, 9)] {
            assert_eq!(core.cancel(handle), Some(payload), "pending until cancelled, once");
        }
        assert_eq!(core.len(), 0);
    });
}
