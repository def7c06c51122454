//! Rounds (module docs): a flush and a drain hold only the due entries numbered at most the round's
//! limit, keep the rest on the overdue list and return its offer for the next round; a drain of no
//! higher limit skips what the last kept, and a bucket left behind the time hands its entries to
//! the overdue list.

use super::support::{word, Drive};
use super::{BucketCode, Offer, Offers, Wheel};

fn payloads(drive: &mut Drive<char>, batch: &[super::Due]) -> String {
    batch.iter().map(|due| drive.wheel.claim(due.key).expect("held")).collect()
}

/// Entries above the limit are not always at a list's tail (a reset links an older entry after a
/// newer one): one pass takes those below it wherever they are, the rest wait on the overdue list,
/// queued for the next round, which takes them at the same tick once its limit covers them.
#[test]
fn a_partly_flushed_bucket_leaves_the_rest_for_the_next_round() {
    let mut drive = Drive::new(4);
    drive.insert_seq(5, 0, 5, 'y');
    drive.insert_seq(5, 0, 2, 'z');
    let x = drive.insert_seq(7, 0, 1, 'x');
    assert!(drive.reset(x, 5, 0), "x, numbered 1, linked after y, numbered 5");
    let batch = drive.collect_by(5, 2);
    assert_eq!(payloads(&mut drive, &batch), "xz");
    assert_eq!((drive.wheel.len(), drive.next_tick()), (1, Some(5)), "y waits, the overdue list queued");
    assert!(drive.collect_by(5, 2).is_empty(), "a round of the same limit leaves y again");
    assert_eq!(drive.next_tick(), Some(5));
    let batch = drive.collect_by(5, 5);
    assert_eq!(payloads(&mut drive, &batch), "y", "the next round, the clock not moved");
    assert!(drive.wheel.is_empty());
    drive.wheel.drain_all(&mut Vec::new());
}

/// A bucket's entries above the limit go to the overdue list's tail (offered for the next round)
/// and the bucket's round forgotten: a new round in it moves nothing, and nothing is
/// lost.
#[test]
fn a_bucket_hands_what_its_limit_keeps_to_the_overdue_list() {
    let mut drive = Drive::new(4);
    drive.insert_seq(5, 0, 5, 'y');
    assert!(drive.collect_by(5, 2).is_empty());
    drive.insert_seq(6, 0, 6, 'v');
    assert!(drive.collect_by(6, 2).is_empty(), "v above the limit too");
    assert_eq!((drive.wheel.time(), drive.wheel.overdue.len), (6, 2));
    let (_, offers) = drive.wheel.insert(word(9, 0), 7, 'w').map_err(drop).unwrap();
    let round = Some(Offer { expiration: 9, bucket: BucketCode::encode(0, 1) });
    assert_eq!(offers, Offers { round, overdue: None, moved: None });
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
/// drain; a passed deadline of its own then offers nothing. The time passes bucket 1 by a flush
/// of bucket 2 before bucket 1's offer is popped (the queue is polled outside the lock).
#[test]
fn a_move_from_behind_the_time_offers_the_overdue_list_while_its_next_offer_is_pending() {
    let mut wheel = Wheel::new(4);
    let insert = |wheel: &mut Wheel<char>, tick, stamp, payload| {
        wheel.insert(word(tick, 0), stamp, payload).map_err(drop).unwrap().1
    };
    let at = |expiration| Some(Offer { expiration, bucket: BucketCode::OVERDUE });
    assert_eq!(insert(&mut wheel, 0, 0, 'a').overdue, at(0));
    insert(&mut wheel, 0, 5, 'y');
    insert(&mut wheel, 1, 6, 'x');
    insert(&mut wheel, 2, 1, 'b');
    let (mut out, mut offers) = (Vec::new(), Vec::new());
    assert_eq!(wheel.drain_overdue(1, &mut out), at(0), "y kept: offered for the next round");
    assert_eq!(wheel.flush(BucketCode::encode(0, 2), 2, 1, &mut out, &mut offers), None);
    assert_eq!(wheel.time(), 2);
    let offers = insert(&mut wheel, 5, 7, 'w');
    assert_eq!((offers.overdue, offers.moved), (None, at(2)), "x moved: offered for this round");
    assert_eq!(insert(&mut wheel, 2, 8, 'p'), Offers::default(), "a passed deadline: the list is offered");
    assert_eq!(wheel.drain_overdue(8, &mut out), None);
    assert_eq!(wheel.flush(BucketCode::encode(0, 1), 5, 8, &mut out, &mut Vec::new()), None);
    let claimed: String = out.iter().map(|due| wheel.claim(due.key).unwrap()).collect();
    assert_eq!((claimed.as_str(), wheel.is_empty()), ("abyxpw", true));
}

/// The overdue list's kept run (`lists.rs`, "Kept"): a drain of no higher limit walks only what was
/// linked after it, a removal of the run's last entry moves its mark, and a higher limit walks
/// the whole list.
#[test]
fn a_drain_skips_what_the_last_kept_until_a_higher_limit() {
    let mut wheel = Wheel::new(4);
    let insert = |wheel: &mut Wheel<char>, stamp, payload| {
        wheel.insert(word(0, 0), stamp, payload).map_err(drop).unwrap().0
    };
    let (k1, k2) = (insert(&mut wheel, 5, 'k'), insert(&mut wheel, 6, 'l'));
    let mut out = Vec::new();
    assert!(wheel.drain_overdue(1, &mut out).is_some());
    assert_eq!((wheel.take_walked(), out.len()), (2, 0), "both kept");
    insert(&mut wheel, 7, 'n');
    assert_eq!(wheel.remove(k2), Some('l'), "the run's last");
    assert!(wheel.drain_overdue(1, &mut out).is_some());
    assert_eq!((wheel.take_walked(), out.len(), wheel.overdue.len), (1, 0, 2), "n walked, kept");
    insert(&mut wheel, 1, 'm');
    assert!(wheel.drain_overdue(1, &mut out).is_some());
    assert_eq!((wheel.take_walked(), out.len()), (1, 1), "m walked, held");
    assert_eq!(wheel.drain_overdue(7, &mut out), None, "a higher limit: the run too");
    assert_eq!((wheel.take_walked(), out.len(), wheel.overdue.len), (2, 3, 0));
    let claimed: String = out.iter().map(|due| wheel.claim(due.key).unwrap()).collect();
    assert_eq!((claimed.as_str(), wheel.is_empty(), wheel.position(k1)), ("mkn", true, None));
}
