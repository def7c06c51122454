//! The run of a level-0 list taken by `take_due_by` (`sorted_run.rs`), on a wheel of 64 buckets
//! at time 0: 200 entries of tick 5, one in each 256th from 0 to 199, linked out of order (the
//! payload the rank, the stamp the link's order), and one of tick 6.

use super::super::super::life::Status;
use super::super::support::{audit, walked_stats, word, Drive};
use super::super::{Due, Key};

/// The drive and the keys of the 200 entries of tick 5, by rank; the key of the entry of tick 6.
fn drive() -> (Drive<u64>, Vec<Key>, Key) {
    let mut drive = Drive::new(64);
    let mut keys = vec![None; 200];
    for i in 0..200u64 {
        let rank = (i * 37) % 200;
        keys[rank as usize] = Some(drive.insert(5, rank as u8, rank));
    }
    let later = drive.insert(6, 0, 1_000);
    (drive, keys.into_iter().map(Option::unwrap).collect(), later)
}

/// A take by rank `rank` of tick 5 within `stamps`: the batch as (rank, stamp) in its order, and
/// the entries walked (the batch is held, for [`claim`]).
fn take(drive: &mut Drive<u64>, rank: u8, stamps: u64) -> (Vec<(u8, u64)>, Vec<Due>, usize) {
    drive.wheel.walked = 0;
    let mut out = Vec::new();
    drive.wheel.take_due_by(word(5, rank), stamps, &mut out);
    out.sort_by_key(Due::order);
    let walked = std::mem::take(&mut drive.wheel.walked);
    assert_eq!(drive.wheel.stats(), walked_stats(&drive.wheel));
    (out.iter().map(|due| (due.deadline.rank(), due.stamp)).collect(), out, walked)
}

/// Claims each of `batch`: the payloads, in its order; the wheel audited then (a held entry of a
/// take is due after the wheel's time).
fn claim(drive: &mut Drive<u64>, batch: &[Due]) -> Vec<u64> {
    let payloads = batch.iter().map(|due| drive.wheel.claim(due.key).expect("held until claimed")).collect();
    audit(&drive.wheel, Some(&drive.queue));
    payloads
}

/// The first take walks the tick's list and sorts what it leaves; each later one walks what it
/// holds and one more; the tick's flush fires the rest, in order.
#[test]
fn later_takes_walk_only_what_they_hold() {
    let (mut drive, _, _) = drive();
    let (_, batch, walked) = take(&mut drive, 20, u64::MAX);
    assert_eq!(claim(&mut drive, &batch), (0..=20).collect::<Vec<u64>>());
    assert_eq!(walked, 200, "the whole list, once");
    let (_, batch, walked) = take(&mut drive, 30, u64::MAX);
    assert_eq!(claim(&mut drive, &batch), (21..=30).collect::<Vec<u64>>());
    assert_eq!(walked, 11, "the ten held and the first after the limit");
    let (held, batch, walked) = take(&mut drive, 30, u64::MAX);
    assert_eq!((held, walked), (vec![], 1), "a limit before the run's head: its head");
    assert_eq!(claim(&mut drive, &batch), [0u64; 0]);
    let fired: Vec<u64> = drive.fire_ticks(0, 6).into_iter().map(|(_, payload)| payload).collect();
    assert_eq!(fired, (31..200).chain([1_000]).collect::<Vec<u64>>());
    assert!(drive.wheel.is_empty());
}

/// After the sort: an entry linked into the tick (in the tail), a cancel of the run's last entry,
/// a reset of the entry of tick 6 into the tick (linked at the tail), a reset of an entry of the
/// run to an earlier word of the tick (relinked at the tail, not rewritten in place), and an entry
/// stamped above a take's limit (left, for the next take): each take holds exactly the entries
/// due by its limit, never one after it, and the flush the rest, each once.
#[test]
fn links_cancels_and_resets_after_the_sort_keep_the_takes_exact() {
    let (mut drive, keys, later) = drive();
    let (_, batch, _) = take(&mut drive, 30, u64::MAX);
    assert_eq!(claim(&mut drive, &batch), (0..=30).collect::<Vec<u64>>());
    // Stamps 0..=200 so far; the new entry's is 201.
    let linked = drive.insert(5, 33, 2_000);
    assert_eq!(drive.wheel.remove(keys[199]), Some(199), "the run's last, cancelled");
    assert!(drive.reset(later, 5, 36), "tick 6 into tick 5, 36th");
    assert!(drive.reset(keys[150], 5, 34), "the run's 150th moved to its 34th");
    assert!(drive.reset(keys[40], 5, 41), "the run's 40th moved later in the tick");
    audit(&drive.wheel, Some(&drive.queue));
    let (held, batch, walked) = take(&mut drive, 36, 200);
    // By (word, stamp): the entry of rank `r` has stamp `i` with `37 i = r (mod 200)`.
    let stamp = |rank: u64| (0..200u64).find(|i| (i * 37) % 200 == rank).unwrap();
    let mut expected: Vec<(u8, u64, u64)> = (31..=36).map(|r| (r as u8, stamp(r), r)).collect();
    expected.extend([(34, stamp(150), 150), (36, 200, 1_000)]);
    expected.sort_unstable();
    let order: Vec<(u8, u64)> = expected.iter().map(|&(rank, stamp, _)| (rank, stamp)).collect();
    assert_eq!(held, order, "the linked entry, stamped 201, is above the limit");
    let payloads: Vec<u64> = expected.iter().map(|&(.., payload)| payload).collect();
    assert_eq!(claim(&mut drive, &batch), payloads);
    assert_eq!(walked, 6 + 1 + 4, "the run's six held and 37; the tail's four");
    assert_eq!(drive.wheel.status(keys[199]), Some(Status::Cancelled));
    let (held, batch, walked) = take(&mut drive, 36, u64::MAX);
    assert_eq!((held, walked), (vec![(33, 201)], 1 + 2), "the run's head; the tail's two");
    assert_eq!(claim(&mut drive, &batch), [2_000]);
    assert_eq!(drive.wheel.status(linked), Some(Status::Fired));
    let fired: Vec<u64> = drive.fire_ticks(0, 6).into_iter().map(|(_, payload)| payload).collect();
    let mut rest: Vec<(u64, u64, u64)> =
        (37..199).filter(|&r| r != 150).map(|r| (if r == 40 { 41 } else { r }, stamp(r), r)).collect();
    rest.sort_unstable();
    assert_eq!(fired, rest.into_iter().map(|(.., payload)| payload).collect::<Vec<u64>>());
    assert!(drive.wheel.is_empty());
}

/// A tail that a take leaves long (at least 64 entries and an eighth of the list) is sorted into
/// the run with what the run still holds: the next take walks only what it holds and one more,
/// and the flush fires the rest in order.
#[test]
fn a_long_tail_left_is_sorted_into_the_run() {
    let (mut drive, _, _) = drive();
    let (_, batch, _) = take(&mut drive, 20, u64::MAX);
    assert_eq!(claim(&mut drive, &batch), (0..=20).collect::<Vec<u64>>());
    // Stamps 0..=200 so far: the linked entries' are 201 on, in this order.
    let ranks: Vec<u64> = (0..80).map(|j| 101 + (j * 7) % 99).chain(50..55).collect();
    for (j, &rank) in ranks.iter().enumerate() {
        drive.insert(5, rank as u8, 10_000 + j as u64);
    }
    let stamp = |rank: u64| (0..200u64).find(|i| (i * 37) % 200 == rank).unwrap();
    let linked = |keep: &dyn Fn(u64) -> bool| -> Vec<(u8, u64, u64)> {
        let linked = ranks.iter().enumerate().filter(|&(_, &rank)| keep(rank));
        linked.map(|(j, &rank)| (rank as u8, 201 + j as u64, 10_000 + j as u64)).collect()
    };
    let order = |expected: &[(u8, u64, u64)]| expected.iter().map(|&(r, s, _)| (r, s)).collect::<Vec<_>>();
    let payloads = |expected: &[(u8, u64, u64)]| expected.iter().map(|&(.., p)| p).collect::<Vec<_>>();
    // The run's 21st to 100th and the five linked at 50..55; the 80 linked after 100 are left.
    let (held, batch, _) = take(&mut drive, 100, u64::MAX);
    let mut expected: Vec<(u8, u64, u64)> = (21..=100).map(|r| (r as u8, stamp(r), r)).collect();
    expected.extend(linked(&|rank| rank <= 100));
    expected.sort_unstable();
    assert_eq!(held, order(&expected));
    assert_eq!(claim(&mut drive, &batch), payloads(&expected));
    let (held, batch, walked) = take(&mut drive, 110, u64::MAX);
    let mut expected: Vec<(u8, u64, u64)> = (101..=110).map(|r| (r as u8, stamp(r), r)).collect();
    expected.extend(linked(&|rank| (101..=110).contains(&rank)));
    expected.sort_unstable();
    assert_eq!(held, order(&expected));
    assert_eq!(walked, expected.len() + 1, "the run only: the tail left was sorted into it");
    assert_eq!(claim(&mut drive, &batch), payloads(&expected));
    let fired: Vec<u64> = drive.fire_ticks(0, 6).into_iter().map(|(_, payload)| payload).collect();
    let mut rest: Vec<(u8, u64, u64)> = (111..200).map(|r| (r as u8, stamp(r), r)).collect();
    rest.extend(linked(&|rank| rank > 110));
    rest.sort_unstable();
    assert_eq!(fired, payloads(&rest).into_iter().chain([1_000]).collect::<Vec<u64>>());
    assert!(drive.wheel.is_empty());
}
