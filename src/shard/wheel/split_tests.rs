//! A big bucket's split into stages and its visits (`split.rs`, `visit.rs`), on a wheel of 16
//! buckets a level that splits at 4 entries: level 1's bucket 1 holds ticks 16..=31 (round 16),
//! its stages ticks 16..=19, 20..=23, 24..=27 and 28..=31, opening at 4, 8, 12 and 16 (each the
//! first tick from which the whole stage fits level 0's window).

use super::super::life::Status;
use super::support::{audit, walked_stats, Drive};
use super::{BucketCode, Offer};

/// A drive split at 4, with one entry at each of `ticks` (stamps 0, 1, ...; the payload the
/// stamp), inserted at time 0.
fn split_drive(ticks: &[u64]) -> (Drive<u64>, Vec<super::Key>) {
    let mut drive = Drive::new(16);
    drive.wheel.set_split_at(4);
    let keys = ticks.iter().enumerate().map(|(i, &tick)| drive.insert(tick, 0, i as u64)).collect();
    audit(&drive.wheel, Some(&drive.queue));
    (drive, keys)
}

/// The bucket of ticks 16..=31 and its visit code.
fn bucket() -> (BucketCode, BucketCode) {
    let code = BucketCode::encode(1, 1);
    (code, code.visit())
}

/// Whether the drive's queue holds `offer`.
fn queued(drive: &Drive<u64>, expiration: u64, bucket: BucketCode) -> bool {
    drive.queue.iter().any(|q| q.0 == Offer { expiration, bucket })
}

/// The fourth entry splits the bucket (4 entries walked), whose visit is offered at stage 0's
/// `opens`; the visit at 4 cascades stage 0 ahead of the round, the next visits the later stages
/// as they open, the round's flush stage 3; every entry fires once at its tick, in order.
#[test]
fn a_split_bucket_is_visited_stage_by_stage_ahead_of_its_round() {
    let (mut drive, _) = split_drive(&[17, 21, 25, 29, 18]);
    let (code, visit) = bucket();
    assert_eq!(drive.load.per_insert, 4, "the split walks the bucket's entries");
    assert!(queued(&drive, 4, visit) && queued(&drive, 16, code));
    assert_eq!(drive.wheel.stats().pending_per_level, [0, 5]);
    assert!(drive.fire_ticks(0, 3).is_empty());
    assert_eq!(drive.wheel.stats().pending_per_level, [0, 5], "no stage open before 4");
    assert!(drive.fire_ticks(3, 4).is_empty());
    assert_eq!(drive.wheel.stats().pending_per_level, [2, 3], "stage 0 cascaded at its opens");
    assert!(queued(&drive, 8, visit), "the next visit at the next stage's opens");
    assert!(drive.fire_ticks(4, 12).is_empty());
    assert_eq!(drive.wheel.stats().pending_per_level, [4, 1], "stages 1 and 2 at 8 and 12");
    assert!(drive.fire_ticks(12, 15).is_empty());
    assert_eq!(drive.fire_ticks(15, 31), [(17, 0), (18, 4), (21, 1), (25, 2), (29, 3)]);
    assert!(drive.wheel.is_empty() && drive.next_tick().is_none(), "no visit left queued");
    assert!(drive.wheel.splits.iter().all(|split| split.stages.iter().all(|stage| stage.is_empty())));
}

/// A cancel, a reset and a claim of entries in stages: each unlinks from its stage, the bucket's
/// count and the level's follow, and the rest fire once at their ticks.
#[test]
fn a_cancel_a_reset_and_a_claim_take_entries_from_their_stages() {
    let (mut drive, keys) = split_drive(&[17, 21, 25, 29, 26, 30]);
    assert_eq!(drive.wheel.remove(keys[2]), Some(2), "a cancel in stage 2");
    assert_eq!(drive.wheel.status(keys[2]), Some(Status::Cancelled));
    assert!(drive.reset(keys[1], 3, 0), "a reset from stage 1 to level 0");
    assert!(drive.reset(keys[5], 22, 0), "a reset from stage 3 to stage 1");
    audit(&drive.wheel, Some(&drive.queue));
    assert_eq!(drive.wheel.stats(), walked_stats(&drive.wheel));
    assert_eq!(drive.wheel.stats().fullest_bucket, Some((1, 1, 4)), "the bucket counts its stages");
    // A take by a word of tick 26 holds the entry there, from its stage; its claim takes it.
    let mut out = Vec::new();
    drive.wheel.take_due_by(crate::deadline::Deadline::at_tick(26), u64::MAX, &mut out);
    assert_eq!(out.iter().map(|due| due.stamp).collect::<Vec<_>>(), [4]);
    assert_eq!(drive.wheel.len(), 5, "held, counted");
    assert_eq!(drive.wheel.stats(), walked_stats(&drive.wheel));
    assert_eq!(drive.wheel.claim(out[0].key), Some(4));
    assert_eq!(drive.wheel.status(keys[4]), Some(Status::Fired));
    assert_eq!(drive.fire_ticks(0, 31), [(3, 1), (17, 0), (22, 5), (29, 3)]);
    assert!(drive.wheel.is_empty());
}

/// `take_due_by` on a split bucket looks into the stage holding the tick only.
#[test]
fn take_due_by_scans_the_stage_holding_the_tick_only() {
    let ticks: Vec<u64> = (0..32).map(|i| 16 + i % 16).collect();
    let (mut drive, _) = split_drive(&ticks);
    drive.wheel.walked = 0;
    let mut out = Vec::new();
    let limit = crate::deadline::Deadline::at_tick(21);
    drive.wheel.take_due_by(limit, u64::MAX, &mut out);
    assert_eq!(out.iter().map(|due| due.stamp).collect::<Vec<_>>(), [5, 21]);
    assert_eq!(drive.wheel.walked, 8, "stage 1's 8 entries of 32");
    assert_eq!(drive.wheel.stats(), walked_stats(&drive.wheel));
    for due in &out {
        assert!(drive.wheel.claim(due.key).is_some());
    }
    let fired = drive.fire_ticks(0, 31);
    assert_eq!(fired.len(), 30);
    assert!(fired.iter().all(|&(tick, stamp)| tick == 16 + stamp % 16 && tick != 21));
}

/// A split bucket left behind the time (the time moved past its round's end while its offers
/// were queued) hands its stages to the overdue list when a new round is set in it: the round
/// under way takes them, each once.
#[test]
fn a_split_bucket_behind_the_time_hands_its_stages_to_the_overdue_list() {
    let (mut drive, _) = split_drive(&[17, 21, 25, 29, 40]);
    // The driver pops the bucket of tick 40 (level 1's bucket 2, round 32) first.
    let (mut out, mut offers) = (Vec::new(), Vec::new());
    let next = drive.wheel.flush(BucketCode::encode(1, 2), 32, u64::MAX, &mut out, &mut offers);
    assert!(out.is_empty() && next.is_none());
    drive.queue.extend(offers.into_iter().map(std::cmp::Reverse));
    assert_eq!(drive.wheel.time(), 32);
    // A new round (272) in the split bucket, from the time 32.
    drive.insert(272, 0, 5);
    assert!(drive.wheel.splits.iter().all(|split| split.stages.iter().all(|stage| stage.is_empty())));
    audit(&drive.wheel, Some(&drive.queue));
    let batch = drive.collect(32);
    assert_eq!(batch.iter().map(|due| due.stamp).collect::<Vec<_>>(), [0, 1, 2, 3]);
    for due in &batch {
        assert_eq!(drive.wheel.claim(due.key), Some(due.stamp));
    }
    assert_eq!(drive.fire_ticks(32, 272), [(40, 4), (272, 5)]);
    assert!(drive.wheel.is_empty());
}

/// A drain hands out the stages' entries with the rest and forgets the records; the wheel splits
/// again afterwards.
#[test]
fn a_drain_forgets_the_split_records() {
    let (mut drive, keys) = split_drive(&[17, 21, 25, 29, 3]);
    let mut out = Vec::new();
    drive.wheel.drain_all(&mut out);
    assert_eq!(out.len(), 5);
    assert!(keys.iter().all(|&key| drive.wheel.status(key) == Some(Status::Abandoned)));
    assert!(drive.wheel.splits.is_empty() && drive.wheel.free_splits.is_empty());
    drive.queue.clear();
    for (i, tick) in [17, 21, 25, 29].into_iter().enumerate() {
        drive.insert(tick, 0, 10 + i as u64);
    }
    assert_eq!(drive.wheel.splits.len(), 1, "split again");
    assert_eq!(drive.fire_ticks(0, 31), [(17, 10), (21, 11), (25, 12), (29, 13)]);
}

/// A link into a stage that opens before the record's next visit brings the visit forward and
/// offers it; a link into a later stage offers nothing.
#[test]
fn a_link_into_an_earlier_stage_brings_the_visit_forward() {
    let (mut drive, _) = split_drive(&[25, 29, 26, 30]);
    let (_, visit) = bucket();
    assert!(queued(&drive, 12, visit) && !queued(&drive, 4, visit), "stage 2 opens first, at 12");
    drive.insert(17, 0, 4);
    assert!(queued(&drive, 4, visit), "stage 0 opens at 4");
    assert_eq!(drive.wheel.splits[0].next_visit, 4);
    let queued_before = drive.queue.len();
    drive.insert(27, 0, 5);
    assert_eq!(drive.queue.len(), queued_before, "stage 2 opens after the next visit");
    assert!(drive.fire_ticks(0, 4).is_empty());
    assert_eq!(drive.wheel.stats().pending_per_level, [1, 5], "stage 0 cascaded at 4");
    assert_eq!(drive.fire_ticks(4, 31), [(17, 4), (25, 0), (26, 2), (27, 5), (29, 1), (30, 3)]);
}

/// A visit popped after the time passed its stages' `due` (a later bucket flushed first) holds
/// the due entries within the round's limit and moves the rest to the overdue list, whose offer
/// it returns: the next round takes each of those once, at or after its tick.
#[test]
fn a_late_visit_holds_within_the_limit_and_moves_the_rest_to_the_overdue_list() {
    let (mut drive, _) = split_drive(&[17, 18, 21, 29, 40]);
    let (_, visit) = bucket();
    assert!(queued(&drive, 4, visit));
    let (mut out, mut offers) = (Vec::new(), Vec::new());
    let next = drive.wheel.flush(BucketCode::encode(1, 2), 32, u64::MAX, &mut out, &mut offers);
    assert!(out.is_empty() && next.is_none());
    drive.queue.extend(offers.drain(..).map(std::cmp::Reverse));
    assert_eq!(drive.wheel.time(), 32, "past every stage's due");
    // The visit at 4, in a round of limit 1: stamps 0 and 1 are held, 2 and 3 go overdue.
    let next = drive.wheel.flush(visit, 4, 1, &mut out, &mut offers);
    assert_eq!(out.iter().map(|due| due.stamp).collect::<Vec<_>>(), [0, 1]);
    let next = next.expect("the overdue list's offer for the next round");
    assert_eq!(next.bucket, BucketCode::OVERDUE);
    assert!(drive.wheel.splits.iter().all(|split| split.stages.iter().all(|stage| stage.is_empty())));
    for due in &out {
        assert_eq!(drive.wheel.claim(due.key), Some(due.stamp));
    }
    drive.queue.extend(offers.drain(..).chain([next]).map(std::cmp::Reverse));
    audit(&drive.wheel, Some(&drive.queue));
    let batch = drive.collect(32);
    assert_eq!(
        batch.iter().map(|due| (due.deadline.tick(), due.stamp)).collect::<Vec<_>>(),
        [(21, 2), (29, 3)]
    );
    for due in &batch {
        assert_eq!(drive.wheel.claim(due.key), Some(due.stamp));
    }
    assert_eq!(drive.fire_ticks(32, 40), [(40, 4)]);
    assert!(drive.wheel.is_empty());
}

#[test]
fn a_stage_is_the_placements_stage() {
    for wheel_size in [2u64, 3, 6, 16, 60, 64, 512, 1 << 24] {
        let wheel = super::Wheel::<u64>::new(wheel_size);
        for level in (1..crate::wheel::place::max_levels(wheel_size)).take(4) {
            let ticks = wheel.levels.slot_ticks(level);
            for round in [ticks, 5 * ticks, 7 * ticks] {
                let spread = (0..16).map(|k| k * (ticks / 16));
                for tick in spread.chain([1, ticks / 4, ticks / 2, ticks - 1]).map(|offset| round + offset) {
                    let placed = wheel.placed_stage(level, round, tick);
                    assert_eq!(wheel.stage_of(level, round, tick), placed, "{wheel_size}: {level}, {tick}");
                }
            }
        }
    }
}
