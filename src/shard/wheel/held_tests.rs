//! The held state (module docs, "Held"): a flush's due entries stay in their slots, counted, until
//! a claim, a remove or a drain takes them, whichever comes first.

use super::super::life::{ListCode, Status};
use super::support::{audit, flat, Drive, Drops};

/// A batch holds its entries: counted in `len`, deadlines read back, resets refused, claimed
/// once each in the batch's order; a claim finds nothing after a remove won.
#[test]
fn a_held_entry_is_claimed_once_unless_removed_first() {
    let mut drive = Drive::new(20);
    let keys: Vec<_> = (0..4u64).map(|id| drive.insert_seq(7, 3 - id as u8, id, id)).collect();
    let batch = drive.collect(7);
    assert_eq!(
        batch.iter().map(|due| flat(due.order())).collect::<Vec<_>>(),
        [(7, 0, 3), (7, 1, 2), (7, 2, 1), (7, 3, 0)]
    );
    assert_eq!(
        batch.iter().map(|due| due.key).collect::<Vec<_>>(),
        keys.iter().rev().copied().collect::<Vec<_>>()
    );
    assert_eq!(drive.wheel.len(), 4, "held entries are counted");
    assert_eq!(
        drive.wheel.deadline(keys[2]).map(|d| (d.tick(), d.rank())),
        Some((7, 1)),
        "pending until claimed"
    );
    assert_eq!(drive.wheel.status(keys[2]), Some(Status::Pending), "held: pending");
    assert!(!drive.reset(keys[2], 50, 0), "held: being fired");
    assert_eq!(drive.wheel.remove(keys[1]), Some(1), "a remove of a held entry wins");
    assert_eq!(drive.wheel.status(keys[1]), Some(Status::Cancelled));
    assert_eq!(drive.wheel.len(), 3);
    audit(&drive.wheel, None);
    let claimed: Vec<_> = batch.iter().map(|due| drive.wheel.claim(due.key)).collect();
    assert_eq!(claimed, [Some(3), Some(2), None, Some(0)]);
    assert!(drive.wheel.is_empty());
    let statuses: Vec<_> = keys.iter().map(|&key| drive.wheel.status(key)).collect();
    assert_eq!(
        statuses,
        [Some(Status::Fired), Some(Status::Cancelled), Some(Status::Fired), Some(Status::Fired)]
    );
    assert_eq!(batch.iter().map(|due| drive.wheel.claim(due.key)).collect::<Vec<_>>(), [None; 4], "once");
    assert_eq!(drive.wheel.remove(keys[0]), None);
    assert!(!drive.reset(keys[0], 50, 0));
    audit(&drive.wheel, None);
}

/// The overdue list's drain holds its entries too; a slot freed by a claim is reused and the
/// stale key finds nothing in it.
#[test]
fn overdue_entries_are_held_and_slots_reused_after_the_claim() {
    let mut drive = Drive::new(4);
    drive.insert(10, 0, 'z');
    assert_eq!(drive.advance(10).len(), 1);
    let key = drive.insert(3, 0, 'a');
    let batch = drive.collect(10);
    assert_eq!(batch.len(), 1);
    assert_eq!(drive.wheel.slab.slot(key.slot).life.list(), ListCode::HELD);
    assert!(!drive.wheel.has_overdue());
    let late = drive.insert(2, 0, 'b');
    assert_ne!(late.slot, key.slot, "the held entry keeps its slot");
    assert_eq!(drive.wheel.claim(key), Some('a'));
    let reused = drive.insert(30, 0, 'c');
    assert_eq!(reused.slot, key.slot, "the claim freed it");
    assert_eq!(
        (drive.wheel.claim(key), drive.wheel.remove(key), drive.wheel.status(key)),
        (None, None, None)
    );
    assert_eq!(drive.advance(30).into_iter().map(|f| f.payload).collect::<String>(), "bc");
}

/// A drain takes held entries with the rest; a claim after it finds nothing; every payload ends
/// once, also those held when the wheel is dropped.
#[test]
fn a_drain_takes_held_entries() {
    let drops = Drops::default();
    {
        let mut drive = Drive::new(20);
        for id in 0..6 {
            drive.insert_seq(5 + u64::from(id % 2) * 100, 0, u64::from(id), drops.token(id));
        }
        let batch = drive.collect(5);
        assert_eq!((batch.len(), drive.wheel.len()), (3, 6));
        drop(drive.wheel.claim(batch[0].key));
        let mut out = Vec::new();
        drive.wheel.drain_all(&mut out);
        assert_eq!(out.len(), 5, "two held, three in buckets");
        assert!(batch.iter().all(|due| drive.wheel.claim(due.key).is_none()));
        assert!(drive.wheel.is_empty());
        audit(&drive.wheel, None);
        drop(out);
        drive.insert_seq(9, 0, 6, drops.token(6));
        drive.insert_seq(9, 0, 7, drops.token(7));
        assert_eq!(drive.collect(9).len(), 2, "held when the wheel is dropped");
    }
    drops.assert_each_once(8);
}
