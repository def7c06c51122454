//! Exact loads through each path: insert, remove, reset, a flush's holds and cascade, the overdue
//! list, claims, a bucket behind the time and the drain.

use super::super::support::{walked_stats, Drive};
use super::super::Wheel;
use super::WheelStats;

/// (per level, fullest, overdue, held).
type Load = (Vec<usize>, Option<(usize, usize, usize)>, usize, usize);

/// The wheel's [`Load`], checked against the walk too.
fn load<P>(wheel: &Wheel<P>) -> Load {
    let stats = wheel.stats();
    assert_eq!(stats, walked_stats(wheel));
    (stats.pending_per_level, stats.fullest_bucket, stats.overdue, stats.held)
}

/// A wheel of 8 buckets (level 0 spans 8 ticks, level 1 64): `tests/stats.rs`'s example, then
/// each path that moves an entry.
#[test]
fn each_path_keeps_the_counts_exact() {
    let mut drive = Drive::new(8);
    assert_eq!(drive.wheel.stats(), WheelStats::default(), "a fresh wheel: nothing created");
    let a = drive.insert(2, 0, 'a');
    let b = drive.insert(3, 0, 'b');
    let c = drive.insert(5, 0, 'c');
    drive.insert(20, 0, 'd');
    drive.insert(22, 0, 'e');
    assert_eq!(load(&drive.wheel), (vec![3, 2], Some((1, 2, 2)), 0, 0));
    // A tie goes to the lowest level.
    let f = drive.insert(3, 0, 'f');
    assert_eq!(load(&drive.wheel), (vec![4, 2], Some((0, 3, 2)), 0, 0));
    let stats = drive.wheel.stats();
    assert_eq!((stats.levels_in_use, stats.resident_buckets), (2, 16));
    assert_eq!(drive.wheel.remove(f), Some('f'));
    assert_eq!(drive.wheel.remove(a), Some('a'));
    assert_eq!(load(&drive.wheel), (vec![2, 2], Some((1, 2, 2)), 0, 0));
    // A reset moves it out of level 0 into level 1's slot 2.
    assert!(drive.reset(c, 21, 0));
    assert_eq!(load(&drive.wheel), (vec![1, 3], Some((1, 2, 3)), 0, 0));
    // The flush at 3 holds b: in transit, in no level, until its claim.
    let batch = drive.collect(3);
    assert_eq!(batch.len(), 1);
    assert_eq!(load(&drive.wheel), (vec![0, 3], Some((1, 2, 3)), 0, 1));
    // A deadline passed waits on the overdue list.
    drive.insert(1, 0, 'g');
    assert_eq!(load(&drive.wheel), (vec![0, 3], Some((1, 2, 3)), 1, 1));
    assert_eq!(drive.wheel.claim(batch[0].key), Some('b'));
    assert_eq!(load(&drive.wheel), (vec![0, 3], Some((1, 2, 3)), 1, 0));
    // At 16 level 1's slot 2 cascades 20, 21, 22 into level 0's slots 4, 5, 6 (a tie: slot 4),
    // and the overdue list's drain holds g.
    let batch = drive.collect(16);
    assert_eq!(batch.len(), 1);
    assert_eq!(load(&drive.wheel), (vec![3, 0], Some((0, 4, 1)), 0, 1));
    // A held entry removed (a cancel before its claim) leaves the held count.
    assert_eq!(drive.wheel.remove(batch[0].key), Some('g'));
    assert_eq!(load(&drive.wheel), (vec![3, 0], Some((0, 4, 1)), 0, 0));
    assert!(drive.wheel.remove(b).is_none(), "b fired");
    // A drain empties every count; the levels and buckets created stay.
    drive.insert(40, 0, 'h');
    drive.collect(20);
    assert_eq!(load(&drive.wheel).3, 1, "20 held");
    let mut out = Vec::new();
    drive.wheel.drain_all(&mut out);
    assert_eq!(out.len(), 4);
    assert_eq!(load(&drive.wheel), (vec![0, 0], None, 0, 0));
    let stats = drive.wheel.stats();
    assert_eq!((stats.levels_in_use, stats.resident_buckets), (2, 16));
}

/// A bucket whose offer is still queued when the time passes it: a placement landing in it for a
/// later round moves its entries to the overdue list (the wheel's docs, "A bucket behind the
/// time"), out of their level.
#[test]
fn a_bucket_left_behind_the_time_counts_its_entries_out_of_their_level() {
    let mut drive = Drive::new(8);
    drive.insert(3, 0, 'a');
    drive.insert(3, 0, 'b');
    drive.insert(6, 0, 'c');
    // The driver pops the later bucket first: the time moves to 6 past bucket 3's round.
    let late = drive.queue.iter().map(|o| o.0).max().unwrap();
    let (mut out, mut offers) = (Vec::new(), Vec::new());
    drive.wheel.flush(late.bucket, late.expiration, u64::MAX, &mut out, &mut offers);
    assert_eq!(out.len(), 1);
    assert_eq!(load(&drive.wheel), (vec![2], Some((0, 3, 2)), 0, 1));
    // 11 lands in bucket 3 for its next round: a and b move to the overdue list.
    drive.insert(11, 0, 'd');
    assert_eq!(load(&drive.wheel), (vec![1], Some((0, 3, 1)), 2, 1));
}

/// Levels created only as deadlines need them, and only the buckets a level has: a wheel of 513
/// buckets has a last chunk of one.
#[test]
fn levels_in_use_and_resident_buckets_count_what_was_created() {
    let mut drive = Drive::new(513);
    drive.insert(512, 0, 'a');
    let stats = drive.wheel.stats();
    assert_eq!((stats.levels_in_use, stats.resident_buckets), (1, 1));
    drive.insert(1, 0, 'b');
    // Level 2 alone (513² ticks out): level 1 counts zero and is not in use.
    drive.insert(513 * 513 * 2, 0, 'c');
    let stats = drive.wheel.stats();
    assert_eq!((stats.levels_in_use, stats.resident_buckets), (2, 513 + 512));
    assert_eq!(stats.pending_per_level, vec![2, 0, 1]);
    assert_eq!(stats.fullest_bucket, Some((0, 1, 1)));
}

/// Entries due but stamped above a round's limit wait on the overdue list (the flush's docs,
/// `flush.rs`): a bucket's move there, counted out of its level, until a later round holds them.
#[test]
fn entries_above_the_limit_are_counted_on_the_overdue_list() {
    let mut drive = Drive::new(8);
    drive.insert(3, 0, 'a');
    drive.insert(3, 0, 'b');
    assert_eq!(drive.collect_by(3, 0).len(), 1, "a held, b kept");
    assert_eq!(load(&drive.wheel), (vec![0], None, 1, 1));
    drive.insert(1, 0, 'c');
    drive.insert(1, 0, 'd');
    assert_eq!(load(&drive.wheel), (vec![0], None, 3, 1));
    // Limit 2: b and c held, d kept on the overdue list.
    assert_eq!(drive.collect_by(3, 2).len(), 2);
    assert_eq!(load(&drive.wheel), (vec![0], None, 1, 3));
}
