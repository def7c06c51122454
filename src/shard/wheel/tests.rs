use std::collections::BTreeSet;

use super::super::life::Status;
use super::super::slab::MAX_SLOTS;
use super::support::{audit, flat, word, Drive, Drops, Token};
use super::{BucketCode, Fired, Key, Offer, Offers, Refusal, Wheel, MAX_TICK, MAX_WHEEL_SIZE};
use crate::test_rng::XorShift;
use crate::wheel::place::{max_levels, slot_ticks};

/// The wheel sizes the crate's tests use, with 2 (the most levels) and 64.
const SIZES: [u64; 7] = [2, 3, 20, 60, 64, 512, MAX_WHEEL_SIZE];

fn ids(fired: &[Fired<Token>]) -> Vec<u32> {
    fired.iter().map(|f| f.payload.id).collect()
}

/// `Option<InlineTask>`'s shape: three words, the first a reference (the niche).
#[cfg(target_pointer_width = "64")]
#[test]
fn a_slot_with_three_words_of_payload_with_a_niche_is_48_bytes() {
    use super::super::slab::Slot;
    use super::Entry;
    use std::mem::size_of;
    type Task = (&'static (), [usize; 2]);
    assert_eq!(size_of::<Slot<Entry<Task>>>(), 48);
    assert_eq!(size_of::<Option<Entry<Task>>>(), size_of::<Entry<Task>>(), "the payload's niche");
}

/// The module docs' example (tick 10 ms, 60 buckets): 5 s is level 1, slot 8, round 480; its
/// flush at 480 files it in level 0, slot 20, round 500, where it fires. Levels are created as
/// deadlines need them.
#[test]
fn the_three_level_example_cascades_as_kafka_does() {
    let mut drive = Drive::new(60);
    let key = drive.insert(500, 0, 'a');
    assert_eq!(drive.wheel.levels(), 2);
    assert_eq!(
        drive.queue.peek().map(|o| o.0),
        Some(Offer { expiration: 480, bucket: BucketCode::encode(1, 8) })
    );
    assert!(drive.advance(479).is_empty());
    assert!(drive.advance(480).is_empty());
    assert_eq!(drive.wheel.time(), 480);
    assert_eq!(
        drive.queue.peek().map(|o| o.0),
        Some(Offer { expiration: 500, bucket: BucketCode::encode(0, 20) })
    );
    assert!(drive.advance(499).is_empty());
    let fired = drive.advance(500);
    assert_eq!(fired.iter().map(|f| (f.key, f.payload)).collect::<Vec<_>>(), [(key, 'a')]);
    drive.insert(500 + 216_000, 0, 'b');
    assert_eq!(drive.wheel.levels(), 4, "36 min on is level 3");
}

/// A deadline of every level of every wheel size, from several times, fires exactly at its tick:
/// walked by the queue's head (at most one stop a level) and jumped to with stops on the way.
#[test]
fn every_level_of_every_size_fires_at_its_tick() {
    let mut rng = XorShift::new(7);
    for wheel_size in SIZES {
        let mut levels = BTreeSet::new();
        for start in [0, 1, wheel_size - 1, 12_345_678, (1 << 54) - 3] {
            for level in 0..max_levels(wheel_size) {
                let Some(ticks) = slot_ticks(wheel_size, level) else { continue };
                for offset in [1, 37, ticks.saturating_mul(wheel_size) - 1] {
                    let Some(deadline) = start.checked_add(ticks).and_then(|d| d.checked_add(offset)) else {
                        continue;
                    };
                    if deadline > MAX_TICK {
                        continue;
                    }
                    for walk in [true, false] {
                        let mut drive = Drive::new(wheel_size);
                        drive.insert(start, 0, ());
                        assert_eq!(drive.advance(start).len(), 1);
                        let key = drive.insert(deadline, 3, ());
                        levels.insert(drive.wheel.levels() - 1);
                        let mut stops = 0;
                        let mut now = start;
                        loop {
                            let next = if walk {
                                drive.next_tick().expect("pending")
                            } else {
                                (now + 1 + rng.next() % (deadline - now)).min(deadline)
                            };
                            assert!(
                                next > now && next <= deadline,
                                "{wheel_size} {start}→{deadline}: {next}"
                            );
                            now = next;
                            let fired = drive.advance(now);
                            stops += 1;
                            if now == deadline {
                                let fired: Vec<_> = fired.iter().map(|f| (f.key, flat(f.order()))).collect();
                                assert_eq!(
                                    fired,
                                    [(key, (deadline, 3, key.generation))],
                                    "{wheel_size} {start}→{deadline}"
                                );
                                break;
                            }
                            assert!(fired.is_empty(), "{wheel_size} {start}→{deadline}: fired at {now}");
                        }
                        assert!(!walk || stops <= max_levels(wheel_size), "{stops} stops");
                        assert!(drive.wheel.is_empty());
                    }
                }
            }
        }
        assert!(levels.len() >= 2.min(max_levels(wheel_size)), "{wheel_size}: levels {levels:?}");
    }
}

/// Thousands of timeouts of every scale per wheel size, each fired once, never early, at most one
/// tick late: the clock moved by fixed steps, each timeout in the advance that passes its tick.
#[test]
fn many_timeouts_fire_once_never_early_never_late() {
    for wheel_size in SIZES {
        for step in [1, 7, 977] {
            const N: u32 = 4_000;
            let drops = Drops::default();
            let mut drive = Drive::new(wheel_size);
            drive.audit_every = 199;
            let mut rng = XorShift::new(11 + step);
            let (mut now, mut fired_ids) = (0u64, vec![false; N as usize]);
            let check = |drive: &mut Drive<Token>, now: &mut u64, fired_ids: &mut [bool]| {
                let before = *now;
                *now += step;
                for f in drive.advance(*now) {
                    let (id, deadline) = (f.payload.id, f.deadline.tick());
                    assert!(
                        deadline <= *now && (deadline > before || deadline == 0),
                        "{id} due {deadline} at {now}"
                    );
                    assert!(!std::mem::replace(&mut fired_ids[id as usize], true), "{id} fired twice");
                }
            };
            for id in 0..N {
                if id % 10 == 0 {
                    check(&mut drive, &mut now, &mut fired_ids);
                }
                let delay = match id % 4 {
                    0 => rng.next() % 70,
                    1 => rng.next() % 5_000,
                    _ => rng.next() % 40_000,
                };
                drive.insert(now + delay.max(1), 0, drops.token(id));
            }
            while !drive.wheel.is_empty() {
                check(&mut drive, &mut now, &mut fired_ids);
            }
            assert!(fired_ids.iter().all(|&f| f), "every timeout fired");
            drops.assert_each_once(N);
        }
    }
}

/// A deadline at or before the time goes to the overdue list and fires at the next advance, the
/// clock unmoved; a deadline between the time and the clock fires there too (its bucket is due).
#[test]
fn passed_deadlines_fire_at_the_next_advance() {
    let mut drive = Drive::new(20);
    drive.insert(100, 0, 'a');
    assert_eq!(drive.advance(100).len(), 1);
    assert_eq!(drive.wheel.time(), 100);
    drive.insert(100, 0, 'b');
    drive.insert(3, 0, 'c');
    assert!(drive.wheel.has_overdue(), "on the overdue list");
    let overdue = Offer { expiration: 100, bucket: BucketCode::OVERDUE };
    assert_eq!(drive.queue.iter().map(|o| o.0).collect::<Vec<_>>(), [overdue], "offered once, at the time");
    assert_eq!(drive.next_tick(), Some(100));
    let fired = drive.advance(100);
    assert_eq!(fired.iter().map(|f| f.payload).collect::<String>(), "cb");
    drive.insert(150, 0, 'd');
    assert_eq!(drive.advance(1_000).iter().map(|f| f.payload).collect::<String>(), "d");
}

/// Entries due at one tick come out by their sequence numbers, from whatever level they came.
#[test]
fn equal_deadlines_come_out_by_sequence() {
    for wheel_size in SIZES {
        let mut drive = Drive::new(wheel_size);
        for (seq, base) in [(0, 0), (1, 500), (2, 999), (3, 0), (4, 1_000)] {
            if base > 0 {
                drive.advance(base.min(999));
            }
            drive.insert_seq(1_000, 5, seq, seq);
        }
        let fired = drive.advance(1_000);
        assert_eq!(fired.iter().map(|f| f.payload).collect::<Vec<_>>(), [0, 1, 2, 3, 4], "{wheel_size}");
    }
}

/// Kafka's one-line trick: a bucket is offered when its round is set, not at every insert; a
/// remove leaves the round, so schedule and cancel in a loop offer once per round.
#[test]
fn a_bucket_is_offered_once_per_round() {
    let mut wheel = Wheel::new(20);
    let mut offers = Vec::new();
    for id in 0..1_000 {
        let (key, offer) = wheel.insert(word(15, 0), id, id).unwrap();
        offers.extend(offer.iter());
        assert_eq!(wheel.remove(key), Some(id));
    }
    assert_eq!(offers, [Offer { expiration: 15, bucket: BucketCode::encode(0, 15) }]);
    let (_, offer) = wheel.insert(word(16, 0), 1_000, 0).unwrap();
    assert!(offer.round.is_some() && offer.overdue.is_none(), "another bucket");
    let (key, _) = wheel.insert(word(15, 0), 1_001, 0).unwrap();
    let moved = wheel.reset(key, word(16, 0));
    assert_eq!(moved, Some(Offers::default()), "a reset into a bucket of the same round offers nothing");
    let (mut out, mut cascaded) = (Vec::new(), Vec::new());
    wheel.flush(BucketCode::encode(0, 15), 15, u64::MAX, &mut out, &mut cascaded);
    assert!(out.is_empty() && cascaded.is_empty() && wheel.time() == 15);
    wheel.flush(BucketCode::encode(0, 16), 16, u64::MAX, &mut out, &mut cascaded);
    assert_eq!((out.len(), wheel.time()), (2, 16));
    let (_, offer) = wheel.insert(word(35, 0), 1_002, 0).unwrap();
    assert_eq!(
        offer.round,
        Some(Offer { expiration: 35, bucket: BucketCode::encode(0, 15) }),
        "the next round"
    );
    let (_, offer) = wheel.insert(word(16, 0), 1_003, 0).unwrap();
    let overdue = Some(Offer { expiration: 16, bucket: BucketCode::OVERDUE });
    assert_eq!((offer.round, offer.overdue), (None, overdue), "due: the overdue list, offered at the time");
    let (_, offer) = wheel.insert(word(2, 0), 1_004, 0).unwrap();
    assert_eq!(offer, Offers::default(), "offered once until drained");
    wheel.flush(BucketCode::OVERDUE, 16, u64::MAX, &mut out, &mut cascaded);
    assert_eq!(out.len(), 4);
    assert_eq!(wheel.insert(word(3, 0), 1_005, 0).unwrap().1.overdue, overdue, "drained: offered again");
}

/// An offer popped again, or one whose bucket moved on to another round, finds nothing; a bucket
/// left behind the time (the queue popped a later bucket first) hands its entries to the overdue
/// list when a new round lands in it, and they fire at the next advance.
#[test]
fn stale_offers_and_buckets_behind_the_time_are_harmless() {
    let mut wheel = Wheel::new(20);
    let (mut out, mut offers) = (Vec::new(), Vec::new());
    let (_, early) = wheel.insert(word(5, 0), 0, 'a').unwrap();
    let (_, late) = wheel.insert(word(10, 0), 1, 'b').unwrap();
    let (early, late) = (early.round.unwrap(), late.round.unwrap());
    // The driver popped `late` before `early` was offered.
    wheel.flush(late.bucket, late.expiration, u64::MAX, &mut out, &mut offers);
    assert_eq!(out.iter().map(|due| due.stamp).collect::<Vec<_>>(), [1]);
    assert_eq!(wheel.time(), 10);
    wheel.flush(late.bucket, late.expiration, u64::MAX, &mut out, &mut offers);
    assert_eq!(out.len(), 1, "popped again: stale");
    // A new round in the early bucket: its old entry, due, moves to the overdue list.
    let (_, offer) = wheel.insert(word(25, 0), 2, 'c').unwrap();
    let moved = Some(Offer { expiration: 10, bucket: BucketCode::OVERDUE });
    assert_eq!(
        offer,
        Offers { round: Some(Offer { expiration: 25, bucket: early.bucket }), overdue: None, moved }
    );
    assert!(wheel.has_overdue());
    audit(&wheel, None);
    wheel.flush(early.bucket, early.expiration, u64::MAX, &mut out, &mut offers);
    assert_eq!(out.len(), 1, "the old round's offer is stale");
    wheel.drain_overdue(u64::MAX, &mut out);
    assert_eq!(out.iter().map(|due| due.stamp).collect::<Vec<_>>(), [1, 0]);
    wheel.flush(early.bucket, 25, u64::MAX, &mut out, &mut offers);
    assert_eq!(out.iter().map(|due| due.stamp).collect::<Vec<_>>(), [1, 0, 2]);
    assert!(offers.is_empty() && wheel.len() == 3, "held until claimed");
    let claimed: String = out.iter().map(|due| wheel.claim(due.key).unwrap()).collect();
    assert_eq!((claimed.as_str(), wheel.is_empty()), ("bac", true));
    wheel.flush(BucketCode::encode(5, 3), 7, u64::MAX, &mut out, &mut offers);
    assert_eq!(wheel.levels(), 1, "a flush of a bucket never written creates nothing");
}

#[test]
fn reset_moves_in_place() {
    let drops = Drops::default();
    let mut drive = Drive::new(64);
    let a = drive.insert(10_000, 0, drops.token(0));
    let b = drive.insert(20, 0, drops.token(1));
    let c = drive.insert(400_000, 0, drops.token(2));
    let d = drive.insert(1_000, 4, drops.token(3));
    assert!(drive.reset(a, 50, 7));
    assert!(drive.reset(b, 300_000, 1));
    let w = &drive.wheel;
    assert_eq!((w.deadline(a), w.deadline(d), w.len()), (Some(word(50, 7)), Some(word(1_000, 4)), 4));
    assert!(drive.advance(49).is_empty());
    assert_eq!(
        drive.advance(50).iter().map(|f| (f.key, flat(f.order()))).collect::<Vec<_>>(),
        [(a, (50, 7, 0))]
    );
    assert!(!drive.reset(a, 60, 0), "fired: stale");
    assert_eq!(ids(&drive.advance(1_000)), [3]);
    assert!(drive.advance(299_999).is_empty());
    assert_eq!(ids(&drive.advance(300_000)), [1]);
    assert!(drive.reset(c, 5, 2), "to a passed deadline");
    assert_eq!(drive.next_tick(), Some(300_000));
    assert_eq!(
        drive.advance(300_000).iter().map(|f| (f.key, flat(f.order()))).collect::<Vec<_>>(),
        [(c, (5, 2, 2))]
    );
    assert!(drive.wheel.is_empty());
    drops.assert_each_once(4);
}

/// A key is (slot, stamp): a stale key finds nothing once its slot holds an entry of another
/// stamp, and reads how its entry ended until then.
#[test]
fn stale_keys_find_nothing_after_reuse() {
    let mut drive = Drive::new(3);
    let old = drive.insert(10, 0, 1);
    assert_eq!(drive.wheel.status(old), Some(Status::Pending));
    assert_eq!(drive.wheel.remove(old), Some(1));
    assert_eq!((drive.wheel.remove(old), drive.wheel.status(old)), (None, Some(Status::Cancelled)));
    let new = drive.insert(20, 0, 2);
    assert_eq!((new.slot, new.generation), (old.slot, 1), "the slot reused, with the new stamp");
    assert_eq!(
        (drive.wheel.remove(old), drive.reset(old, 5, 0), drive.wheel.deadline(old), drive.wheel.status(old)),
        (None, false, None, None)
    );
    assert_eq!(drive.wheel.remove(Key { slot: 99, generation: 0 }), None, "a slot never written");
    drive.wheel.reserve(10);
    assert_eq!(drive.wheel.status(Key { slot: 5, generation: 0 }), None, "a slot written ahead");
    assert_eq!(drive.advance(20).iter().map(|f| f.key).collect::<Vec<_>>(), [new]);
    assert_eq!((drive.wheel.remove(new), drive.wheel.status(new)), (None, Some(Status::Fired)));
    drive.insert(30, 0, 3);
    let mut out = Vec::new();
    drive.wheel.drain_all(&mut out);
    let drained = out[0].key;
    assert_eq!(drive.wheel.status(drained), Some(Status::Abandoned));
    drop(out);
    while !drive.wheel.shrink_step(usize::MAX, &mut Default::default()).1 {}
    assert_eq!(drive.wheel.status(drained), None, "cut off by the shrink");
}

/// The last deadline tick fires at that tick, for every wheel size.
#[test]
fn the_last_tick_fires() {
    for wheel_size in SIZES {
        let drops = Drops::default();
        let mut drive = Drive::new(wheel_size);
        let key = drive.insert(MAX_TICK, 0, drops.token(0));
        assert!(drive.advance(MAX_TICK - 1).is_empty());
        assert_eq!(drive.advance(MAX_TICK).iter().map(|f| f.key).collect::<Vec<_>>(), [key]);
        drops.assert_each_once(1);
    }
}

/// A slab at its last index refuses with the payload back, and takes again once a slot is free.
#[test]
fn a_full_wheel_refuses_with_the_payload() {
    let mut drive = Drive::new(512);
    let keys: Vec<Key> = (0..MAX_SLOTS as u32).map(|id| drive.insert(5, 0, id)).collect();
    let Err(refused) = drive.wheel.insert(word(5, 0), MAX_SLOTS as u64, u32::MAX) else { panic!("accepted") };
    assert_eq!((refused.payload, refused.reason), (u32::MAX, Refusal::Full));
    assert_eq!(drive.wheel.remove(keys[9]), Some(9));
    drive.insert_seq(5, 0, MAX_SLOTS as u64, 7_000_000);
    let fired = drive.advance(5);
    assert_eq!(fired.len(), MAX_SLOTS);
    assert_eq!(fired.last().map(|f| (f.payload, f.stamp)), Some((7_000_000, MAX_SLOTS as u64)));
}

#[test]
fn drain_all_hands_back_everything() {
    let drops = Drops::default();
    let mut drive = Drive::new(60);
    let mut rng = XorShift::new(3);
    let (mut pending, mut keys) = (BTreeSet::new(), Vec::new());
    for id in 0..2_000 {
        let deadline = 500 + rng.next() % (1 << (rng.next() % 50));
        keys.push(drive.insert(deadline, id as u8, drops.token(id)));
        pending.insert(id);
    }
    for id in (0..2_000).step_by(3) {
        assert_eq!(drive.wheel.remove(keys[id as usize]).map(|t| t.id), Some(id));
        pending.remove(&id);
    }
    for f in drive.advance(1_000) {
        assert!(pending.remove(&f.payload.id));
    }
    drive.insert(3, 0, drops.token(2_000));
    pending.insert(2_000);
    let mut out = Vec::new();
    drive.wheel.drain_all(&mut out);
    audit(&drive.wheel, None);
    assert_eq!(ids(&out).into_iter().collect::<BTreeSet<_>>(), pending);
    assert_eq!(out.len(), pending.len());
    assert!(drive.wheel.is_empty() && !drive.wheel.has_overdue());
    assert!(keys.iter().all(|&key| drive.wheel.deadline(key).is_none()));
    drop(out);
    let key = drive.insert(2_000, 0, drops.token(2_001));
    assert!(format!("{:?}", drive.wheel).contains("len: 1"));
    assert_eq!(ids(&drive.advance(2_000)), [2_001]);
    assert_eq!(drive.wheel.remove(key).map(|t| t.id), None);
    drops.assert_each_once(2_002);
}

/// Slots written ahead take the inserts without growth; an empty wheel gives every slot back.
#[test]
fn reserve_and_shrink() {
    let mut wheel = Wheel::new(512);
    wheel.reserve(1_000);
    let capacity = wheel.slab.capacity();
    let keys: Vec<Key> = (0..1_000).map(|id| wheel.insert(word(100 + id, 0), id, id).unwrap().0).collect();
    assert_eq!(wheel.slab.capacity(), capacity, "no growth");
    for &key in &keys {
        wheel.remove(key);
    }
    let (mut given, mut done) = (0, false);
    while !done {
        let (step, end) = wheel.shrink_step(usize::MAX, &mut Default::default());
        (given, done) = (given + step, end);
    }
    assert!(given >= 1_000);
    assert_eq!(wheel.slab.capacity(), 0);
}

/// Every payload ends once: taken by a remove, fired, drained, or dropped with the wheel.
#[test]
fn nothing_is_dropped_twice_or_leaked() {
    let drops = Drops::default();
    let mut rng = XorShift::new(5);
    {
        let mut drive = Drive::new(20);
        let (mut keys, mut now) = (Vec::new(), 0);
        for id in 0..3_000 {
            let deadline = if id % 50 == 0 { MAX_TICK } else { now + rng.next() % 100_000 };
            if let Ok((key, offer)) = drive.wheel.insert(word(deadline, 0), u64::from(id), drops.token(id)) {
                drive.queue.extend(offer.iter().map(std::cmp::Reverse));
                keys.push(key);
            }
            if keys.is_empty() {
                continue;
            }
            let key = keys[rng.next() as usize % keys.len()];
            match id % 7 {
                0 => drop(drive.wheel.remove(key)),
                1 => drop(drive.reset(key, now + 10, 0)),
                2 => {
                    now += 500;
                    drop(drive.advance(now));
                }
                _ => {}
            }
        }
        drop(drive.advance(now + 20_000));
        assert!(!drive.wheel.is_empty(), "some left for the wheel's drop");
    }
    drops.assert_each_once(3_000);
}

#[test]
#[should_panic(expected = "out of 2..=2^24")]
fn a_wheel_of_one_bucket_is_refused() {
    drop(Wheel::<()>::new(1));
}
