//! Resets that stay in their bucket (`reset.rs`, "In its bucket") and resets that move, on a
//! wheel of 16 buckets a level: level 1's bucket 1 holds ticks 16..=31 (round 16), bucket 2 ticks
//! 32..=47; split at 4 entries, bucket 1's stages are ticks 16..=19, 20..=23, 24..=27, 28..=31.

use super::super::super::life::ListCode;
use super::super::support::{audit, Drive};
use super::super::{BucketCode, Key, Offer};

/// The slot at the head of the list of bucket `slot` of `level`, unsplit.
fn head(drive: &Drive<u64>, level: usize, slot: usize) -> u32 {
    drive.wheel.levels.get(level, slot).expect("the bucket exists").list.head
}

/// The list code and the tick of the entry `key` names.
fn placed(drive: &Drive<u64>, key: Key) -> (ListCode, u64) {
    let slot = drive.wheel.slab.get(key.slot, key.generation).expect("pending");
    (slot.life.list(), drive.wheel.slab.entry(key.slot).when.tick())
}

/// A later deadline in the same bucket of level 1: only the deadline changes (the entry keeps its
/// place at the list's head and nothing is offered); it fires at the new deadline, the other
/// entry at its own. A later deadline in the next bucket moves it there, offering that round.
#[test]
fn a_reset_within_its_bucket_rewrites_the_deadline_in_place() {
    let mut drive = Drive::new(16);
    let a = drive.insert(20, 0, 0);
    let b = drive.insert(22, 0, 1);
    assert_eq!(head(&drive, 1, 1), a.slot);
    let queued = drive.queue.len();
    assert_eq!(drive.wheel.reset(a, super::super::support::word(30, 7)), Some(Default::default()));
    assert_eq!((head(&drive, 1, 1), drive.queue.len()), (a.slot, queued), "in place, nothing offered");
    assert_eq!(placed(&drive, a), (ListCode::level(1), 30));
    audit(&drive.wheel, Some(&drive.queue));
    assert!(drive.reset(b, 40, 0), "to the next bucket");
    assert_eq!(placed(&drive, b), (ListCode::level(1), 40));
    let round = Offer { expiration: 32, bucket: BucketCode::encode(1, 2) };
    assert!(drive.queue.iter().any(|q| q.0 == round), "the next bucket's round offered");
    audit(&drive.wheel, Some(&drive.queue));
    assert_eq!(drive.fire_ticks(0, 47), [(30, 0), (40, 1)]);
    assert!(drive.wheel.is_empty());
}

/// In a split bucket a reset stays only within its stage: to tick 23 from 21 (stage 1) it stays,
/// to 25 (stage 2) it moves; a reset to level 0's window moves too (a filing from the time would
/// not pick level 1), and so does a reset of a level-0 entry to another tick; one within its own
/// tick (another 256th) stays.
#[test]
fn a_reset_stays_only_where_a_filing_would_link_it() {
    let mut drive = Drive::new(16);
    drive.wheel.set_split_at(4);
    let keys: Vec<Key> = [17, 21, 25, 29].iter().map(|&tick| drive.insert(tick, 0, tick)).collect();
    let (list, tick) = placed(&drive, keys[1]);
    assert!(drive.wheel.stays(list, tick, 23), "stage 1 to stage 1");
    assert!(!drive.wheel.stays(list, tick, 25), "stage 1 to stage 2");
    assert!(!drive.wheel.stays(list, tick, 5), "to level 0");
    assert!(!drive.wheel.stays(list, tick, 37), "to the next bucket");
    assert!(drive.reset(keys[1], 23, 0));
    assert!(drive.reset(keys[2], 26, 3));
    let near = drive.insert(6, 0, 6);
    let (list, tick) = placed(&drive, near);
    assert!(drive.wheel.stays(list, tick, 6), "the same tick");
    assert!(!drive.wheel.stays(list, tick, 7), "another tick of level 0");
    assert!(drive.reset(near, 6, 200));
    audit(&drive.wheel, Some(&drive.queue));
    assert_eq!(drive.fire_ticks(0, 31), [(6, 6), (17, 17), (23, 21), (26, 25), (29, 29)]);
}
