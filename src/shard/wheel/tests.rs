use std::collections::BTreeSet;

use super::super::slab::MAX_SLOTS;
use super::support::{audit, fire, Drops, Token};
use super::{
    bucket_for, code, decode, level_for, Fired, Key, Refusal, Refused, Wheel, BITS, BUCKETS, LEVELS,
    MAX_TICK, TIME_END,
};
use crate::test_rng::XorShift;

fn ids(fired: &[Fired<Token>]) -> Vec<u32> {
    fired.iter().map(|f| f.payload.id).collect()
}

/// Key, order and id of each fired token, the tokens dropped.
fn taken(fired: Vec<Fired<Token>>) -> Vec<(Key, (u64, u8, u64), u32)> {
    fired.iter().map(|f| (f.key, f.order(), f.payload.id)).collect()
}

/// Inserts with the number of entries pending as the sequence number: the count of inserts so far,
/// in a test that removes nothing before it.
fn insert<P>(wheel: &mut Wheel<P>, deadline: u64, sub: u8, payload: P) -> Key {
    let seq = wheel.len() as u64;
    wheel.insert(deadline, sub, seq, payload).unwrap_or_else(|_| panic!("{deadline} refused"))
}

#[test]
fn placement_arithmetic() {
    assert_eq!([level_for(0, 1), level_for(0, 63), level_for(0, 64), level_for(63, 64)], [0, 0, 1, 1]);
    assert_eq!([level_for(64, 127), level_for(5, 5), level_for(4095, 4096)], [0, 0, 2]);
    assert_eq!([level_for(0, 1 << 54), level_for(0, MAX_TICK), level_for(MAX_TICK, TIME_END)], [9; 3]);
    assert_eq!(
        [bucket_for(0, 65), bucket_for(1, 64), bucket_for(9, 1 << 54), bucket_for(9, TIME_END)],
        [1, 1, 1, 2]
    );
    for level in 0..LEVELS {
        for bucket in 0..BUCKETS {
            assert_eq!(decode(code(level, bucket)), (level, bucket));
        }
    }
}

#[cfg(target_pointer_width = "64")]
#[test]
fn a_slot_with_two_words_of_payload_is_56_bytes() {
    use super::super::slab::Slot;
    use super::Entry;
    use std::mem::size_of;
    assert_eq!(size_of::<Slot<Entry<[usize; 2]>>>(), 56);
    assert_eq!(size_of::<Option<Entry<[usize; 2]>>>(), size_of::<Entry<[usize; 2]>>(), "the bucket's niche");
}

/// A deadline of every level, from times at the start, inside and near the end of the range, fires
/// exactly at its tick: walked by `next_tick` (each a lower bound, at most one stop per level) and
/// jumped to with stops at random times on the way.
#[test]
fn every_level_fires_at_its_tick() {
    let starts = [0, 1, 63, 4_095, 12_345_678, (1 << 54) - 3, MAX_TICK - (1 << 40)];
    let mut levels = BTreeSet::new();
    let mut rng = XorShift::new(7);
    for start in starts {
        for level in 0..LEVELS {
            for offset in [0, 1, 37, (1 << (BITS * level)) - 1] {
                let Some(deadline) =
                    (start + (1 << (BITS * level))).checked_add(offset).filter(|&d| d <= MAX_TICK)
                else {
                    continue;
                };
                levels.insert(level_for(start, deadline));
                let mut wheel = Wheel::new();
                assert!(fire(&mut wheel, start).is_empty());
                let key = insert(&mut wheel, deadline, 3, ());
                let mut stops = 0;
                loop {
                    let next = wheel.next_tick().expect("pending");
                    assert!(
                        next > wheel.time() && next <= deadline,
                        "{start} → {deadline}: next tick {next}"
                    );
                    let fired = fire(&mut wheel, next);
                    stops += 1;
                    if next == deadline {
                        assert_eq!(
                            fired.iter().map(|f| (f.key, f.order())).collect::<Vec<_>>(),
                            [(key, (deadline, 3, 0))]
                        );
                        break;
                    }
                    assert!(fired.is_empty(), "{start} → {deadline}: fired at {next}");
                }
                assert!(stops <= LEVELS, "{start} → {deadline}: {stops} stops");
                let mut wheel = Wheel::new();
                fire(&mut wheel, start);
                insert(&mut wheel, deadline, 0, ());
                let mut stops: Vec<u64> = (0..3).map(|_| start + rng.next() % (deadline - start)).collect();
                stops.sort_unstable();
                for now in stops.into_iter().chain([deadline - 1]) {
                    assert!(fire(&mut wheel, now).is_empty(), "{start} → {deadline}: fired at {now}");
                }
                assert_eq!(fire(&mut wheel, deadline).len(), 1, "{start} → {deadline}");
                assert!(wheel.is_empty());
            }
        }
    }
    assert_eq!(levels, (0..LEVELS).collect::<BTreeSet<_>>(), "every level reached");
}

/// 20,000 timeouts of every scale, fired once each, never early: with the time moved by fixed
/// steps, each in the advance that passes its tick; walked by `next_tick`, each exactly at its tick.
#[test]
fn many_timeouts_fire_once_at_their_ticks() {
    for step in [Some(7), Some(977), None] {
        const N: u32 = 20_000;
        let drops = Drops::default();
        let mut wheel = Wheel::new();
        let mut rng = XorShift::new(11);
        let (mut now, mut fired_ids) = (0, vec![false; N as usize]);
        for id in 0..N {
            if id % 100 == 0 {
                step_checked(&mut wheel, &mut now, step, &mut fired_ids);
            }
            if id % 2_000 == 0 {
                audit(&wheel);
            }
            let delay = match id % 4 {
                0 => rng.next() % 70,
                1 => rng.next() % 5_000,
                2 => rng.next() % 400_000,
                _ => rng.next() % if step.is_none() { 1 << 40 } else { 400_000 },
            };
            insert(&mut wheel, now + delay.max(1), 0, drops.token(id));
            assert_eq!(wheel.len(), (id + 1) as usize - fired_ids.iter().filter(|&&f| f).count());
        }
        while !wheel.is_empty() {
            step_checked(&mut wheel, &mut now, step, &mut fired_ids);
        }
        audit(&wheel);
        assert!(fired_ids.iter().all(|&f| f), "every timeout fired");
        drops.assert_each_once(N);
    }
}

/// Moves the time by `step`, or to the next tick: each timeout that fires is due in the interval
/// passed (at its end when walking), and fires once.
fn step_checked(wheel: &mut Wheel<Token>, now: &mut u64, step: Option<u64>, fired_ids: &mut [bool]) {
    let before = *now;
    *now = step.map_or_else(|| wheel.next_tick().unwrap_or(before + 1), |step| before + step);
    let mut fired = Vec::new();
    wheel.advance(*now, &mut fired);
    for f in fired {
        let (id, deadline) = (f.payload.id, f.deadline);
        assert!(deadline > before && deadline <= *now, "{id} due {deadline} fired at {now}");
        assert!(step.is_some() || deadline == *now, "{id} due {deadline} fired at {now}");
        assert!(!std::mem::replace(&mut fired_ids[id as usize], true), "{id} fired twice");
    }
}

/// Across the top level's buckets (2⁵⁴ ticks each) and up to the last tick: each deadline fires
/// at its tick, in order, walked or jumped to.
#[test]
fn the_top_level_turns_over_in_order() {
    const TOP: u64 = 1 << 54;
    let deadlines = [TOP + (1 << 48) + 7, TOP - 1, MAX_TICK, TOP + 5, TOP, MAX_TICK - 1];
    let mut order = deadlines.to_vec();
    order.sort_unstable();
    for walk in [true, false] {
        let mut wheel = Wheel::new();
        fire(&mut wheel, TOP - 3);
        for (id, &deadline) in deadlines.iter().enumerate() {
            insert(&mut wheel, deadline, 0, id);
        }
        for &deadline in &order {
            if walk {
                while wheel.next_tick() != Some(deadline) {
                    let next = wheel.next_tick().unwrap();
                    assert!(next < deadline && fire(&mut wheel, next).is_empty(), "fired at {next}");
                }
            } else {
                assert!(fire(&mut wheel, deadline - 1).is_empty(), "before {deadline}");
            }
            let fired = fire(&mut wheel, deadline);
            assert_eq!(fired.iter().map(|f| deadlines[f.payload]).collect::<Vec<_>>(), [deadline]);
        }
        assert!(wheel.is_empty());
    }
}

/// The time stops after the last deadline tick: a deadline passed when set there is due at once,
/// an advance to an earlier time changes nothing, and later deadlines are refused.
#[test]
fn the_time_ends_after_the_last_tick() {
    let mut wheel = Wheel::new();
    insert(&mut wheel, MAX_TICK, 0, 1);
    assert!(fire(&mut wheel, MAX_TICK - 1).is_empty());
    assert_eq!(fire(&mut wheel, u64::MAX).iter().map(|f| f.payload).collect::<Vec<_>>(), [1]);
    assert_eq!(wheel.time(), TIME_END);
    let key = insert(&mut wheel, 3, 0, 2);
    assert_eq!(wheel.next_tick(), Some(TIME_END));
    assert!(fire(&mut wheel, 0).is_empty(), "an earlier time changes nothing");
    let fired = fire(&mut wheel, u64::MAX);
    assert_eq!(fired.iter().map(|f| (f.key, f.deadline, f.payload)).collect::<Vec<_>>(), [(key, 3, 2)]);
    assert_eq!(wheel.insert(TIME_END, 0, 0, 3).map_err(|e| e.reason).unwrap_err(), Refusal::TooFar);
}

/// A deadline at or before the time is filed at the next tick and fires there, keeping the
/// deadline it was given, which orders it first.
#[test]
fn passed_deadlines_fire_at_the_next_tick() {
    for time in [100, 63, 4_095] {
        let mut wheel = Wheel::new();
        fire(&mut wheel, time);
        let subs = [(time, 5), (3, 9), (time + 1, 0), (0, 0)];
        for (id, &(deadline, sub)) in subs.iter().enumerate() {
            insert(&mut wheel, deadline, sub, id);
        }
        assert_eq!(wheel.next_tick(), Some(time + 1));
        assert!(fire(&mut wheel, time).is_empty());
        let mut fired = fire(&mut wheel, time + 1);
        assert_eq!(fired.iter().map(|f| f.payload).collect::<Vec<_>>(), [0, 1, 2, 3], "FIFO in the bucket");
        assert_eq!(fired.iter().map(|f| (f.deadline, f.sub)).collect::<Vec<_>>(), subs, "as given");
        fired.sort_by_key(Fired::order);
        assert_eq!(fired.iter().map(|f| f.payload).collect::<Vec<_>>(), [3, 1, 0, 2], "by deadline");
    }
}

/// Equal deadlines come out in insertion order: those filed in level 2, then those filed in level 1
/// after the first cascaded there, then those filed in level 0 after the second cascade; sorted by
/// (deadline, sub, sequence), by their 256ths and then FIFO.
#[test]
fn equal_deadlines_come_out_first_inserted_first() {
    let drops = Drops::default();
    let mut wheel = Wheel::new();
    for id in 0..200 {
        // From level 2, then into level 1 beside those cascaded there, then into level 0.
        if id == 70 || id == 140 {
            assert!(fire(&mut wheel, if id == 70 { 4_500 } else { 4_995 }).is_empty());
        }
        insert(&mut wheel, 5_000, (id % 3) as u8, drops.token(id));
    }
    let mut fired = fire(&mut wheel, 5_000);
    assert_eq!(ids(&fired), (0..200).collect::<Vec<_>>());
    fired.sort_by_key(Fired::order);
    let mut expected: Vec<u32> = (0..200).collect();
    expected.sort_by_key(|&id| (id % 3, id));
    assert_eq!(ids(&fired), expected);
    drop(fired);
    drops.assert_each_once(200);
}

/// A reset moves the entry in place (same key, payload and sequence) earlier, later, to a passed
/// deadline; a deadline past the range leaves it as it was; a stale key moves nothing.
#[test]
fn reset_moves_in_place() {
    let drops = Drops::default();
    let mut wheel = Wheel::new();
    let a = insert(&mut wheel, 10_000, 0, drops.token(0));
    let b = insert(&mut wheel, 20, 0, drops.token(1));
    let c = insert(&mut wheel, 400_000, 0, drops.token(2));
    let d = insert(&mut wheel, 1_000, 4, drops.token(3));
    assert_eq!(wheel.reset(a, 50, 7), Ok(true));
    assert_eq!(wheel.reset(b, 300_000, 1), Ok(true));
    assert_eq!(wheel.reset(d, MAX_TICK + 1, 0), Err(Refusal::TooFar));
    assert_eq!((wheel.deadline(a), wheel.deadline(d), wheel.len()), (Some((50, 7)), Some((1_000, 4)), 4));
    assert!(fire(&mut wheel, 49).is_empty());
    assert_eq!(taken(fire(&mut wheel, 50)), [(a, (50, 7, 0), 0)]);
    assert_eq!(wheel.reset(a, 60, 0), Ok(false), "fired: stale");
    assert_eq!(wheel.reset(a, u64::MAX, 0), Ok(false), "stale before out of range");
    assert_eq!(ids(&fire(&mut wheel, 1_000)), [3], "the refused reset left it at its deadline");
    assert!(fire(&mut wheel, 299_999).is_empty());
    assert_eq!(taken(fire(&mut wheel, 300_000)), [(b, (300_000, 1, 1), 1)]);
    assert_eq!(wheel.reset(c, 5, 2), Ok(true), "to a passed deadline");
    assert_eq!(wheel.next_tick(), Some(300_001));
    assert_eq!(taken(fire(&mut wheel, 300_001)), [(c, (5, 2, 2), 2)]);
    assert!(wheel.is_empty());
    drops.assert_each_once(4);
}

/// As `Timer::reset`: among equal deadlines a re-armed entry keeps its place by when it was first
/// inserted, whichever bucket it came from; in its new bucket it is linked at the tail.
#[test]
fn a_reset_keeps_its_place_among_equal_deadlines() {
    let mut wheel = Wheel::new();
    let a = insert(&mut wheel, 70, 0, 'a');
    insert(&mut wheel, 10, 0, 'b');
    let c = insert(&mut wheel, 3, 0, 'c');
    insert(&mut wheel, 10, 0, 'd');
    for (key, first) in [(a, 5_000), (c, 5)] {
        assert_eq!(wheel.reset(key, first, 0), Ok(true));
        assert_eq!(wheel.reset(key, 10, 0), Ok(true));
    }
    assert!(fire(&mut wheel, 9).is_empty());
    let mut fired = fire(&mut wheel, 10);
    assert_eq!(fired.iter().map(|f| f.payload).collect::<String>(), "bdac", "linked order");
    fired.sort_by_key(Fired::order);
    assert_eq!(fired.iter().map(|f| f.payload).collect::<String>(), "abcd", "insertion order");
}

#[test]
fn stale_keys_find_nothing_after_reuse() {
    let mut wheel = Wheel::new();
    let old = insert(&mut wheel, 10, 0, 1);
    assert_eq!(wheel.remove(old), Some(1));
    assert_eq!(wheel.remove(old), None);
    let new = insert(&mut wheel, 20, 0, 2);
    assert_eq!((new.slot, new.generation), (old.slot, old.generation + 1), "the slot reused");
    assert_eq!((wheel.remove(old), wheel.reset(old, 5, 0), wheel.deadline(old)), (None, Ok(false), None));
    assert_eq!(wheel.deadline(new), Some((20, 0)));
    assert_eq!(wheel.remove(Key { slot: 99, generation: 0 }), None, "a slot never written");
    assert_eq!(fire(&mut wheel, 20).iter().map(|f| f.key).collect::<Vec<_>>(), [new]);
    assert_eq!((wheel.remove(new), wheel.reset(new, 30, 0), wheel.deadline(new)), (None, Ok(false), None));
    let next = insert(&mut wheel, 30, 0, 3);
    assert_eq!(wheel.remove(new), None);
    assert_eq!(wheel.remove(next), Some(3));
}

#[test]
fn far_deadlines_are_refused_with_their_payload() {
    let drops = Drops::default();
    let mut wheel = Wheel::new();
    for (id, deadline) in [(0, MAX_TICK + 1), (1, u64::MAX)] {
        let Err(Refused { payload, reason }) = wheel.insert(deadline, 0, 0, drops.token(id)) else {
            panic!("{deadline} accepted");
        };
        assert_eq!((payload.id, reason), (id, Refusal::TooFar));
        assert!(wheel.is_empty());
    }
    let key = insert(&mut wheel, MAX_TICK, 0, drops.token(2));
    assert_eq!(fire(&mut wheel, MAX_TICK).iter().map(|f| f.key).collect::<Vec<_>>(), [key]);
    drops.assert_each_once(3);
}

/// A slab at its last index refuses with the payload back, and takes again once a slot is free.
#[test]
fn a_full_wheel_refuses_with_the_payload() {
    let mut wheel = Wheel::new();
    let keys: Vec<Key> = (0..MAX_SLOTS as u32).map(|id| insert(&mut wheel, 5, 0, id)).collect();
    let Err(refused) = wheel.insert(5, 0, MAX_SLOTS as u64, u32::MAX) else { panic!("accepted") };
    assert_eq!((refused.payload, refused.reason), (u32::MAX, Refusal::Full));
    assert_eq!(wheel.remove(keys[9]), Some(9));
    assert!(wheel.insert(5, 0, MAX_SLOTS as u64, 7_000_000).is_ok());
    let fired = fire(&mut wheel, 5);
    assert_eq!(fired.len(), MAX_SLOTS);
    assert_eq!(fired.last().map(|f| (f.payload, f.seq)), Some((7_000_000, MAX_SLOTS as u64)));
}

#[test]
fn drain_all_hands_back_everything() {
    let drops = Drops::default();
    let mut wheel = Wheel::new();
    let mut rng = XorShift::new(3);
    let mut pending = BTreeSet::new();
    let mut keys = Vec::new();
    for id in 0..2_000 {
        let deadline = 500 + rng.next() % (1 << (rng.next() % 50));
        keys.push(insert(&mut wheel, deadline, id as u8, drops.token(id)));
        pending.insert(id);
    }
    for id in (0..2_000).step_by(3) {
        assert_eq!(wheel.remove(keys[id as usize]).map(|t| t.id), Some(id));
        pending.remove(&id);
    }
    for f in fire(&mut wheel, 1_000) {
        assert!(pending.remove(&f.payload.id));
    }
    insert(&mut wheel, 3, 0, drops.token(2_000));
    pending.insert(2_000);
    let mut out = Vec::new();
    wheel.drain_all(&mut out);
    audit(&wheel);
    assert_eq!(ids(&out).into_iter().collect::<BTreeSet<_>>(), pending);
    assert_eq!(out.len(), pending.len());
    for f in &out {
        if f.payload.id < 2_000 {
            let id = f.payload.id;
            assert_eq!((f.key, f.sub, f.seq), (keys[id as usize], id as u8, u64::from(id)));
        }
    }
    assert!(wheel.is_empty() && wheel.next_tick().is_none());
    assert!(keys.iter().all(|&key| wheel.deadline(key).is_none()));
    drop(out);
    let key = insert(&mut wheel, 2_000, 0, drops.token(2_001));
    assert!(format!("{wheel:?}").contains("len: 1"));
    assert_eq!(ids(&fire(&mut wheel, 2_000)), [2_001]);
    assert_eq!(wheel.remove(key).map(|t| t.id), None);
    drops.assert_each_once(2_002);
}

/// Slots written ahead take the inserts without growth; an empty wheel gives every slot back;
/// keys from before a shrink stay stale; an occupied last slot keeps the slots below it.
#[test]
fn reserve_and_shrink() {
    let mut wheel = Wheel::new();
    wheel.reserve(1_000);
    let capacity = wheel.slab.capacity();
    let keys: Vec<Key> = (0..1_000).map(|id| insert(&mut wheel, 100 + id, 0, id)).collect();
    assert_eq!(wheel.slab.capacity(), capacity, "no growth");
    for &key in &keys {
        wheel.remove(key);
    }
    assert!(wheel.shrink() >= 1_000);
    assert_eq!(wheel.slab.capacity(), 0);
    let again: Vec<Key> = (0..1_000).map(|id| insert(&mut wheel, 100 + id, 0, id)).collect();
    assert!(keys.iter().all(|&key| wheel.remove(key).is_none()), "old keys stale");
    for &key in &again[..999] {
        wheel.remove(key);
    }
    wheel.shrink();
    assert_eq!(wheel.slab.slots(), 1_000, "the last slot is occupied");
    audit(&wheel);
    assert_eq!(fire(&mut wheel, 1_099).iter().map(|f| f.key).collect::<Vec<_>>(), [again[999]]);
    wheel.shrink();
    assert_eq!(wheel.slab.slots(), 0);
}

/// Every payload ends once: taken by a remove, fired, refused, drained, or dropped with the wheel.
#[test]
fn nothing_is_dropped_twice_or_leaked() {
    let drops = Drops::default();
    let mut rng = XorShift::new(5);
    {
        let mut wheel = Wheel::new();
        let mut keys = Vec::new();
        for id in 0..3_000 {
            let deadline = if id % 50 == 0 { MAX_TICK + 1 } else { wheel.time() + rng.next() % 100_000 };
            if let Ok(key) = wheel.insert(deadline, 0, u64::from(id), drops.token(id)) {
                keys.push(key);
            }
            if keys.is_empty() {
                continue;
            }
            let key = keys[rng.next() as usize % keys.len()];
            let now = wheel.time();
            match id % 7 {
                0 => drop(wheel.remove(key)),
                1 => assert!(wheel.reset(key, now + 10, 0).is_ok()),
                2 => drop(fire(&mut wheel, now + 500)),
                _ => {}
            }
        }
        let mut out = Vec::new();
        wheel.advance(wheel.time() + 20_000, &mut out);
        drop(out);
        assert!(!wheel.is_empty(), "some left for the wheel's drop");
    }
    drops.assert_each_once(3_000);
}
