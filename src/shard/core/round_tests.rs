//! The rounds' bounds on one thread (module docs, "Rounds"), with a hook between the advance's
//! polls standing in for another thread: a passed deadline scheduled and cancelled, or an entry
//! reset to a passed deadline and back, between every two polls does not keep an advance going,
//! and an entry a bucket's flush moves to the overdue list, above the round's limit, is taken by
//! the next round with the list's older entries, what that round's limit leaves kept for the one
//! after.

use std::cell::Cell;

use super::tests::{advance_by, schedule};
use super::Core;
use crate::deadline::Deadline;

/// A passed deadline scheduled and cancelled between every two polls: its offer is the next
/// round's, so the advance ends after the flush that ran the hook.
#[test]
fn a_passed_deadline_scheduled_and_cancelled_between_polls_does_not_keep_the_advance_going() {
    let core = Core::new(1);
    schedule(&core, 0, 1, 1u64);
    let seq = Cell::new(1);
    let (fired, flushes) = advance_by(&core, 10, 1, || {
        if seq.get() < 1_000 {
            seq.set(seq.get() + 1);
            let handle = schedule(&core, 0, seq.get(), seq.get());
            assert_eq!(core.cancel(&handle), Some(seq.get()));
        }
    });
    assert_eq!(fired, [1]);
    assert!(flushes <= 2, "{flushes} flushes: the schedule and cancel kept the advance going");
    let (fired, flushes) = advance_by(&core, 10, seq.get(), || {});
    assert_eq!((fired.len(), flushes), (0, 1), "the next round drains the list, empty");
    assert_eq!((core.is_empty(), core.next_tick()), (true, None));
}

/// An entry reset to a passed deadline and back between every two polls: the same bound, and the
/// entry still fires at its own deadline.
#[test]
fn a_reset_to_a_passed_deadline_and_back_between_polls_does_not_keep_the_advance_going() {
    let core = Core::new(1);
    schedule(&core, 0, 1, 'a');
    let entry = schedule(&core, 50, 2, 'e');
    let resets = Cell::new(0);
    let (fired, flushes) = advance_by(&core, 10, u64::MAX, || {
        if resets.get() < 1_000 {
            resets.set(resets.get() + 1);
            assert!(core.reset(&entry, Deadline::at_tick(0)), "pending");
            assert!(core.reset(&entry, Deadline::at_tick(50)), "pending");
        }
    });
    assert_eq!(fired, ['a']);
    assert!(flushes <= 2, "{flushes} flushes: the resets kept the advance going");
    assert_eq!(advance_by(&core, 49, u64::MAX, || {}).0, []);
    assert_eq!(advance_by(&core, 50, u64::MAX, || {}).0, ['e']);
    assert!(core.is_empty());
}

/// One shard, a wheel of 512: round 1 (limit 10) links Y (a passed deadline, stamp 11) on the
/// overdue list, offered for round 2, and its flush of bucket 5 moves X (due at 5, stamp 12) there
/// after Y, the bucket's round forgotten; it flushes C at 8. Z (passed, stamp 21) is filed before
/// round 2 with no offer of its own (the list's is pending). Round 2 (limit 20) drains Y and X in
/// the order they were linked and keeps Z, offered for round 3; the schedule at 517 during it
/// finds bucket 5 empty with no round, so it moves nothing (a bucket behind the time and its move:
/// `wheel/round_tests.rs`, `wheel/tests.rs`).
#[test]
fn entries_a_flush_moves_to_the_overdue_list_are_taken_by_the_next_round() {
    let core = Core::with_wheel_size(1, 512);
    schedule(&core, 3, 1, 'A');
    schedule(&core, 8, 2, 'C');
    let first = Cell::new(true);
    let (fired, _) = advance_by(&core, 8, 10, || {
        if first.replace(false) {
            schedule(&core, 0, 11, 'Y');
            schedule(&core, 5, 12, 'X');
        }
    });
    assert_eq!(fired, ['A', 'C']);
    schedule(&core, 0, 21, 'Z');
    let first = Cell::new(true);
    let (fired, _) = advance_by(&core, 8, 20, || {
        if first.replace(false) {
            schedule(&core, 517, 22, 'W');
        }
    });
    assert_eq!(fired, ['Y', 'X'], "X, due at 5 and within the limit, in round 2");
    assert_eq!(advance_by(&core, 8, 30, || {}).0, ['Z']);
    assert_eq!(advance_by(&core, 517, 30, || {}).0, ['W']);
    assert!(core.is_empty());
}
