//! The entry's unit tests: the slot's size and the packed life word.

use super::*;

#[test]
fn a_slot_is_small() {
    // Life and lock 8, location 8, deadline 8, closure 24 (two words inline).
    assert_eq!(std::mem::size_of::<arena::Slot>(), 48);
}

#[test]
fn every_status_round_trips_through_the_packed_word() {
    for status in Status::ALL {
        let life = Life::occupy(7).with_status(status);
        assert_eq!(life.status(), status);
        assert_eq!((life.generation(), life.occupied(), life.due()), (7, true, false), "{status:?}");
        let left = Life(life.0 | Life::DUE).vacate();
        assert_eq!((left.generation(), left.occupied(), left.due()), (7, false, false), "{status:?}");
        assert_eq!(left.status(), status, "kept for the handles");
    }
}

#[test]
fn a_full_task_class_refuses_a_new_entry_and_drops_its_closure() {
    let arena = arena::EntryArena::with_task_pages(1);
    let drops = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let big = |drops: &std::sync::Arc<std::sync::atomic::AtomicUsize>| {
        let (drops, words) = (std::sync::Arc::clone(drops), [1u64; 6]);
        move || drop((drops, words))
    };
    let held: Vec<Fresh> = (0..task_slab::BLOCKS_PER_PAGE)
        .map(|_| {
            Fresh::new(Deadline::at_tick(1), big(&drops), &arena, StampBy::Timer)
                .expect("a block of 64 bytes")
        })
        .collect();
    assert!(
        Fresh::new(Deadline::at_tick(1), big(&drops), &arena, StampBy::Timer).is_none(),
        "the class is full"
    );
    let held_count = task_slab::BLOCKS_PER_PAGE + 1;
    assert_eq!(std::sync::Arc::strong_count(&drops), held_count, "the refused closure is dropped");
    assert!(
        Fresh::new(Deadline::at_tick(1), || {}, &arena, StampBy::Timer).is_some(),
        "an inline closure needs no block"
    );
    drop(held);
    assert!(Fresh::new(Deadline::at_tick(1), big(&drops), &arena, StampBy::Timer).is_some(), "room again");
}
