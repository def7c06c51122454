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
