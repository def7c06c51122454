//! Rounds (module docs): a flush and a drain hold only the due entries numbered at most the round's
//! limit, leave the rest linked where they are and return their list's offer for the next round;
//! a bucket partly flushed keeps its round, a stale offer of it finds nothing, and a bucket left
//! behind the time hands what it kept to the overdue list.

use super::support::{word, Drive};
use super::{BucketCode, Offer, Offers, Wheel};

fn payloads(drive: &mut Drive<char>, batch: &[super::Due]) -> String {
    batch.iter().map(|due| drive.wheel.claim(due.key).expect("held")).collect()
}

/// Entries above the limit are not always at a list's tail (a reset links an older entry after a
/// newer one): one pass takes those below it wherever they are, the rest wait in their bucket,
/// queued for the next round, which takes them at the same tick once its limit covers them.
#[test]
fn a_partly_flushed_bucket_keeps_its_round_for_the_next_round() {
    let mut drive = Drive::new(4);
    drive.insert_seq(5, 0, 5, 'y');
    drive.insert_seq(5, 0, 2, 'z');
    let x = drive.insert_seq(7, 0, 1, 'x');
    assert!(drive.reset(x, 5, 0), "x, numbered 1, linked after y, numbered 5");
    let batch = drive.collect_by(5, 2);
    assert_eq!(payloads(&mut drive, &batch), "xz");
    assert_eq!((drive.wheel.len(), drive.next_tick()), (1, Some(5)), "y waits, its bucket queued");
    assert!(drive.collect_by(5, 2).is_empty(), "a round of the same limit leaves y again");
    assert_eq!(drive.next_tick(), Some(5));
    let batch = drive.collect_by(5, 5);
    assert_eq!(payloads(&mut drive, &batch), "y", "the next round, the clock not moved");
    assert!(drive.wheel.is_empty());
    drive.wheel.drain_all(&mut Vec::new());
}

/// A bucket that kept entries is behind the time once the time moves on: a new round in it moves
/// them to the overdue list (offered), the kept round's offer is then stale, and nothing is lost.
#[test]
fn a_kept_bucket_behind_the_time_hands_its_entries_to_the_overdue_list() {
    let mut drive = Drive::new(4);
    drive.insert_seq(5, 0, 5, 'y');
    assert!(drive.collect_by(5, 2).is_empty());
    drive.insert_seq(6, 0, 6, 'v');
    assert!(drive.collect_by(6, 2).is_empty(), "v above the limit too");
    assert_eq!(drive.wheel.time(), 6);
    let (_, offers) = drive.wheel.insert(word(9, 0), 7, 'w').map_err(drop).unwrap();
    let moved = Some(Offer { expiration: 6, bucket: BucketCode::OVERDUE });
    let round = Some(Offer { expiration: 9, bucket: BucketCode::encode(0, 1) });
    assert_eq!(offers, Offers { round, overdue: None, moved });
    drive.queue.extend(offers.iter().map(std::cmp::Reverse));
    let batch = drive.collect_by(6, 10);
    assert_eq!(payloads(&mut drive, &batch), "yv");
    let batch = drive.collect_by(9, 10);
    assert_eq!(payloads(&mut drive, &batch), "w");
    assert!(drive.wheel.is_empty());
}

/// The overdue list's drain keeps what is above the limit and stays offered (a passed deadline
/// filed meanwhile offers nothing); a drain that empties it clears the flag, and the next passed
/// deadline offers it again.
#[test]
fn the_overdue_list_stays_offered_while_it_keeps_entries() {
    let mut wheel = Wheel::new(20);
    let overdue = Some(Offer { expiration: 0, bucket: BucketCode::OVERDUE });
    assert_eq!(wheel.insert(word(0, 0), 1, 'a').map_err(drop).unwrap().1.overdue, overdue);
    assert_eq!(wheel.insert(word(0, 0), 3, 'b').map_err(drop).unwrap().1, Offers::default());
    let mut out = Vec::new();
    assert_eq!(wheel.drain_overdue(1, &mut out), overdue, "b kept: offered for the next round");
    assert_eq!(out.iter().map(|due| due.stamp).collect::<Vec<_>>(), [1]);
    assert_eq!(wheel.insert(word(0, 0), 4, 'c').map_err(drop).unwrap().1, Offers::default(), "still offered");
    assert_eq!(wheel.flush(BucketCode::OVERDUE, 0, 4, &mut out, &mut Vec::new()), None, "emptied");
    assert_eq!(out.iter().map(|due| due.stamp).collect::<Vec<_>>(), [1, 3, 4]);
    assert_eq!(wheel.insert(word(0, 0), 5, 'd').map_err(drop).unwrap().1.overdue, overdue, "offered again");
    assert_eq!(wheel.drain_overdue(5, &mut out), None);
    let claimed: String = out.iter().map(|due| wheel.claim(due.key).unwrap()).collect();
    assert_eq!((claimed.as_str(), wheel.is_empty()), ("abcd", true));
}

/// Entries a bucket behind the time moves to the overdue list offer it for the round under way
/// even while its offer for the next round is pending (a drain kept entries), once until the next
/// drain; a passed deadline of its own then offers nothing.
#[test]
fn a_move_from_behind_the_time_offers_the_overdue_list_while_its_next_offer_is_pending() {
    let mut drive = Drive::new(4);
    drive.insert_seq(0, 0, 0, 'a');
    drive.insert_seq(0, 0, 5, 'y');
    drive.insert_seq(1, 0, 6, 'x');
    drive.insert_seq(2, 0, 1, 'b');
    let batch = drive.collect_by(2, 1);
    assert_eq!(payloads(&mut drive, &batch), "ab", "y and x kept");
    assert_eq!(drive.wheel.time(), 2);
    let at_time = Some(Offer { expiration: 2, bucket: BucketCode::OVERDUE });
    let (_, offers) = drive.wheel.insert(word(5, 0), 7, 'w').map_err(drop).unwrap();
    assert_eq!((offers.overdue, offers.moved), (None, at_time), "x moved: offered for this round");
    drive.queue.extend(offers.iter().map(std::cmp::Reverse));
    let (_, offers) = drive.wheel.insert(word(2, 0), 8, 'p').map_err(drop).unwrap();
    assert_eq!(offers, Offers::default(), "a passed deadline: the list is offered");
    let batch = drive.collect_by(2, 8);
    assert_eq!(payloads(&mut drive, &batch), "yxp");
    let batch = drive.collect_by(5, 8);
    assert_eq!(payloads(&mut drive, &batch), "w");
    assert!(drive.wheel.is_empty());
}
