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
        let life = Life(7 << Life::GENERATION_SHIFT | Life::OCCUPIED).with_status(status);
        assert_eq!(life.status(), status);
        assert_eq!((life.generation(), life.occupied()), (7, true), "{status:?}");
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
        .map(|_| Fresh::new(Deadline::at_tick(1), big(&drops), &arena).expect("a block of 64 bytes"))
        .collect();
    assert!(Fresh::new(Deadline::at_tick(1), big(&drops), &arena).is_none(), "the class is full");
    let held_count = task_slab::BLOCKS_PER_PAGE + 1;
    assert_eq!(std::sync::Arc::strong_count(&drops), held_count, "the refused closure is dropped");
    assert!(Fresh::new(Deadline::at_tick(1), || {}, &arena).is_some(), "an inline closure needs no block");
    drop(held);
    assert!(Fresh::new(Deadline::at_tick(1), big(&drops), &arena).is_some(), "room again");
}
