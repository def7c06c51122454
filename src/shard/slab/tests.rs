use super::{Slab, Slot, Status, MAX_SLOTS};
use crate::entry::os::system_page;

/// The capacity a shrink leaves to `slots` slots: a vector's exact, a mapping's whole pages (the
/// slots are a mapping on Linux outside loom, `slots.rs`).
fn shrunk(slots: usize) -> usize {
    let size = std::mem::size_of::<Slot<u32>>();
    if cfg!(all(any(target_os = "linux", target_os = "android"), not(delaywheel_loom))) {
        (slots * size).div_ceil(system_page()) * system_page() / size
    } else {
        slots
    }
}

/// Occupies a slot with `value`, stamped `value` (the tests' values are unique): its key, index
/// and stamp.
fn occupy(slab: &mut Slab<u32>, value: u32) -> (u32, u64) {
    let stamp = u64::from(value);
    (slab.occupy(stamp, value).unwrap_or_else(|_| panic!("room for {value}")), stamp)
}

/// The entry a key names, if it is the slot's occupant.
fn get(slab: &Slab<u32>, index: u32, stamp: u64) -> Option<u32> {
    slab.get(index, stamp).and_then(|slot| slot.entry)
}

#[test]
fn a_key_names_one_occupant_and_reads_how_it_ended() {
    let mut slab = Slab::new();
    let (a, a_stamp) = occupy(&mut slab, 1);
    let (b, _) = occupy(&mut slab, 2);
    assert_eq!((a, b, slab.len()), (0, 1, 2));
    assert_eq!((get(&slab, a, a_stamp), slab.status(a, a_stamp)), (Some(1), Some(Status::Pending)));
    assert_eq!(get(&slab, a, 2), None, "another stamp");
    assert_eq!(slab.vacate(a, Status::Cancelled), 1);
    assert_eq!(slab.len(), 1);
    assert_eq!(get(&slab, a, a_stamp), None, "vacant");
    assert_eq!(slab.status(a, a_stamp), Some(Status::Cancelled), "kept until the slot's reuse");
    // The slot comes back with the new occupant's stamp: the first key stays stale.
    let (again, again_stamp) = occupy(&mut slab, 3);
    assert_eq!((again, again_stamp), (a, 3));
    assert_eq!((get(&slab, a, a_stamp), slab.status(a, a_stamp)), (None, None));
    assert_eq!(get(&slab, again, again_stamp), Some(3));
    assert_eq!((get(&slab, 7, 0), slab.status(7, 0)), (None, None), "a slot never written");
    slab.reserve(10);
    assert_eq!(slab.status(7, 0), None, "a slot written ahead, never occupied");
    slab.check();
}

#[test]
fn links_and_entries_are_the_callers() {
    let mut slab = Slab::new();
    let (index, _) = occupy(&mut slab, 5);
    let slot = slab.slot_mut(index);
    (slot.prev, slot.next) = (9, 11);
    *slab.entry_mut(index) += 1;
    let slot = slab.slot(index);
    assert_eq!((slot.prev, slot.next, slot.entry, slot.life.stamp()), (9, 11, Some(6), 5));
    assert_eq!(*slab.entry(index), 6);
}

#[test]
fn the_free_list_is_first_vacated_first() {
    let mut slab = Slab::new();
    let keys: Vec<_> = (0..4).map(|v| occupy(&mut slab, v)).collect();
    slab.vacate(keys[1].0, Status::Fired);
    slab.vacate(keys[3].0, Status::Fired);
    assert_eq!(occupy(&mut slab, 10).0, 1);
    slab.vacate(keys[0].0, Status::Fired);
    assert_eq!(occupy(&mut slab, 11).0, 3);
    assert_eq!(occupy(&mut slab, 12).0, 0);
    assert_eq!(occupy(&mut slab, 13).0, 4, "then a new slot");
    slab.check();
}

/// A slot's status survives exactly as many occupies as there were vacant slots when it was
/// vacated: it is reused after all of them.
#[test]
fn a_status_survives_an_occupy_of_every_slot_vacant_before_it() {
    for vacant in [0, 1, 5, 64] {
        let mut slab = Slab::new();
        let (index, stamp) = occupy(&mut slab, 1_000);
        // `vacant` slots vacated before it, in a scattered order, and one occupied after it.
        let others: Vec<_> = (0..vacant).map(|v| occupy(&mut slab, v)).collect();
        for &(other, _) in others.iter().rev() {
            slab.vacate(other, Status::Cancelled);
        }
        slab.vacate(index, Status::Fired);
        for v in 0..vacant {
            let (reused, _) = occupy(&mut slab, 2_000 + v);
            assert_ne!(reused, index, "{vacant} vacant before it");
            assert_eq!(slab.status(index, stamp), Some(Status::Fired), "after {} occupies", v + 1);
        }
        assert_eq!(occupy(&mut slab, 3_000).0, index, "then it is reused");
        assert_eq!(slab.status(index, stamp), None);
        slab.check();
    }
}

/// Slots written ahead are taken before the vacated ones: a slab reserved to `n` keeps a status
/// for `n` further occupies when nothing else is pending.
#[test]
fn slots_written_ahead_are_taken_before_vacated_ones() {
    let mut slab = Slab::new();
    let (index, stamp) = occupy(&mut slab, 1_000);
    slab.vacate(index, Status::Cancelled);
    slab.reserve(100);
    assert_eq!(slab.slots(), 100);
    for v in 0..99 {
        assert_ne!(occupy(&mut slab, v).0, index);
    }
    assert_eq!(slab.status(index, stamp), Some(Status::Cancelled), "after 99 occupies");
    assert_eq!(occupy(&mut slab, 99).0, index, "the 100th takes it");
    slab.check();
}

#[test]
#[should_panic(expected = "given its last occupant's stamp")]
#[cfg(debug_assertions)]
fn a_slot_never_takes_its_last_occupants_stamp_again() {
    let mut slab = Slab::new();
    let (index, stamp) = occupy(&mut slab, 7);
    slab.vacate(index, Status::Fired);
    let _ = slab.occupy(stamp, 8);
}

#[test]
fn reserve_writes_vacant_slots_ahead_lowest_first() {
    let mut slab = Slab::new();
    let (first, _) = occupy(&mut slab, 0);
    slab.vacate(first, Status::Fired);
    slab.reserve(5);
    assert_eq!(slab.slots(), 5, "one vacant already: four more");
    let capacity = slab.capacity();
    let order: Vec<u32> = (0..5).map(|v| occupy(&mut slab, v).0).collect();
    assert_eq!(order, [1, 2, 3, 4, 0], "the new ones first, then the free list");
    assert_eq!(slab.capacity(), capacity, "no growth");
    slab.reserve(0);
    assert_eq!(slab.slots(), 5);
    slab.reserve(usize::MAX);
    assert_eq!(slab.slots(), MAX_SLOTS, "no more slots than indices");
    slab.check();
}

#[test]
fn shrink_cuts_the_vacant_tail_and_keeps_keys_stale() {
    let mut slab = Slab::new();
    let keys: Vec<_> = (0..10).map(|v| occupy(&mut slab, v)).collect();
    for &(index, _) in &keys[3..] {
        slab.vacate(index, Status::Cancelled);
    }
    slab.vacate(keys[1].0, Status::Fired);
    let capacity = slab.capacity();
    assert_eq!(slab.shrink(usize::MAX, usize::MAX), capacity - shrunk(3));
    assert_eq!(slab.slots(), 3, "slot 1 is vacant but below slot 2");
    assert_eq!(slab.capacity(), shrunk(3));
    slab.check();
    // Cut slots come back with their new occupants' stamps: the keys of the earlier ones stay stale.
    let again: Vec<_> = (0..10).map(|v| occupy(&mut slab, 100 + v)).collect();
    assert_eq!(again[0].0, 1, "the free list rebuilt lowest first");
    for &(index, stamp) in &keys[3..] {
        assert_eq!(
            (get(&slab, index, stamp), slab.status(index, stamp)),
            (None, None),
            "old key of slot {index}"
        );
    }
    assert!(again.iter().all(|&(index, stamp)| get(&slab, index, stamp).is_some()));
    assert_eq!(slab.slots(), 12);
    slab.shrink(usize::MAX, usize::MAX);
    assert_eq!(
        (slab.slots(), slab.capacity()),
        (12, shrunk(12)),
        "the last slot is occupied: only spare capacity goes"
    );
    slab.check();
}

/// A slab of 5,000 slots written, 10 of them occupied at the bottom and one at 3,000: their keys.
fn spent() -> (Slab<u32>, Vec<(u32, u64)>) {
    let mut slab = Slab::new();
    let keys: Vec<_> = (0..5_000).map(|v| occupy(&mut slab, v)).collect();
    // Vacated out of index order, as fires and cancels do.
    for k in (10..5_000).filter(|&k| k != 3_000) {
        let index = (k * 7_919) % 4_990 + 10;
        if index != 3_000 && slab.status(index as u32, index as u64) == Some(Status::Pending) {
            slab.vacate(index as u32, Status::Cancelled);
        }
    }
    for k in (10..5_000).filter(|&k| k != 3_000) {
        if slab.status(k, u64::from(k)) == Some(Status::Pending) {
            slab.vacate(k, Status::Fired);
        }
    }
    assert_eq!(slab.len(), 11);
    slab.check();
    (slab, keys)
}

#[test]
fn a_shrink_in_steps_cuts_each_bound_and_ends_where_one_pass_does() {
    let (mut whole, _) = spent();
    let given = whole.shrink(usize::MAX, usize::MAX);
    assert_eq!((whole.slots(), whole.capacity()), (3_001, shrunk(3_001)));
    let (mut slab, keys) = spent();
    let size = std::mem::size_of::<Slot<u32>>();
    let (mut total, mut steps) = (0, 0);
    loop {
        let (written, capacity) = (slab.slots(), slab.capacity());
        let (step, done) = slab.shrink_step(300, system_page(), &mut Default::default());
        slab.check();
        steps += 1;
        assert!(written - slab.slots() <= 300, "step {steps} walked at most its slots");
        if cfg!(all(any(target_os = "linux", target_os = "android"), not(delaywheel_loom))) {
            assert!(step <= system_page() / size + 1, "step {steps} cut {step} slots: a page at most");
        }
        assert_eq!(step, capacity - slab.capacity());
        total += step;
        if done {
            break;
        }
    }
    assert!(steps > 6, "{steps} steps");
    assert_eq!((total, slab.slots(), slab.capacity()), (given, whole.slots(), whole.capacity()));
    assert!(keys[..10]
        .iter()
        .chain(&keys[3_000..3_001])
        .all(|&(index, stamp)| get(&slab, index, stamp).is_some()));
    assert!(keys[3_001..].iter().all(|&(index, stamp)| slab.status(index, stamp).is_none()));
}

/// Between steps the slab is whole: entries come and go, above and below where the walk is, and
/// the steps go on from what is written then, to where one pass would end.
#[test]
fn a_shrink_in_steps_follows_entries_coming_and_going_between_them() {
    let (mut slab, keys) = spent();
    for _ in 0..2 {
        assert!(!slab.shrink_step(300, system_page(), &mut Default::default()).1);
    }
    assert_eq!(slab.slots(), 4_400);
    // A vacant slot near the top taken again (the free list's head, wherever it is: the slots
    // cut are off it), the entry at 3,000 cancelled.
    let (index, stamp) = occupy(&mut slab, 10_000);
    slab.vacate(keys[3_000].0, Status::Cancelled);
    slab.check();
    let mut late = Vec::new();
    loop {
        if late.len() < 40 {
            late.push(occupy(&mut slab, 20_000 + late.len() as u32));
        }
        let (_, done) = slab.shrink_step(300, system_page(), &mut Default::default());
        slab.check();
        if done {
            break;
        }
    }
    let last = late.iter().chain([&(index, stamp)]).map(|&(index, _)| index).max().unwrap().max(9);
    assert_eq!((slab.slots(), slab.capacity()), (last as usize + 1, shrunk(last as usize + 1)));
    assert!(late
        .iter()
        .chain([&(index, stamp)])
        .chain(&keys[..10])
        .all(|&(i, s)| get(&slab, i, s).is_some()));
    assert_eq!(slab.len(), 10 + 1 + late.len());
}

#[test]
fn an_empty_slab_gives_everything_back() {
    let mut slab = Slab::new();
    slab.reserve(100);
    let keys: Vec<_> = (0..50).map(|v| occupy(&mut slab, v)).collect();
    for &(index, _) in &keys {
        slab.vacate(index, Status::Cancelled);
    }
    assert!(slab.shrink(usize::MAX, usize::MAX) >= 100);
    assert_eq!((slab.slots(), slab.capacity(), slab.len()), (0, 0, 0));
    assert_eq!(occupy(&mut slab, 70).0, 0);
    slab.check();
}

#[test]
fn take_all_hands_out_every_entry_once() {
    let mut slab = Slab::new();
    let keys: Vec<_> = (0..8).map(|v| occupy(&mut slab, v)).collect();
    slab.vacate(keys[2].0, Status::Fired);
    slab.vacate(keys[5].0, Status::Cancelled);
    let mut taken = Vec::new();
    slab.take_all(Status::Abandoned, |index, stamp, value| taken.push((index, stamp, value)));
    let expected: Vec<_> =
        keys.iter().zip(0..).filter(|&(_, v)| v != 2 && v != 5).map(|(&(i, g), v)| (i, g, v)).collect();
    assert_eq!(taken, expected);
    assert_eq!(slab.len(), 0);
    assert!(keys.iter().all(|&(index, stamp)| get(&slab, index, stamp).is_none()));
    let statuses: Vec<_> = keys.iter().map(|&(index, stamp)| slab.status(index, stamp).unwrap()).collect();
    assert_eq!(statuses[..3], [Status::Abandoned, Status::Abandoned, Status::Fired]);
    assert_eq!(statuses[5], Status::Cancelled);
    assert_eq!(occupy(&mut slab, 9).0, 0, "the free list rebuilt lowest first");
    slab.check();
}

#[test]
fn a_full_slab_hands_the_entry_back() {
    let mut slab = Slab::new();
    slab.reserve(MAX_SLOTS);
    for v in 0..MAX_SLOTS as u32 {
        occupy(&mut slab, v);
    }
    assert_eq!(slab.occupy(u64::from(u32::MAX), u32::MAX), Err(u32::MAX));
    assert_eq!(slab.len(), MAX_SLOTS);
    slab.vacate(17, Status::Fired);
    assert_eq!(occupy(&mut slab, 1).0, 17);
    slab.check();
}

/// Not a test: what the order of reuse costs a schedule + cancel pair when the shard holds many
/// vacant slots, for callgrind and for a wall-time ratio between two builds (the slab's module
/// docs, "Reuse"). `CORE_PENDING` entries (default 32,000: a unit test's slab holds at most 2¹⁶
/// slots) pending in one shard and as many vacant slots among them (twice as many scheduled, a
/// random half cancelled), then `CORE_PAIRS` pairs (default 1,000,000): a schedule, then the
/// cancel of a random pending entry (a slot last-in, first-out reuse finds in the cache); deadlines
/// 30,000 to 34,095 ticks out, an advance every 1,000 pairs, a 24-byte payload with a niche (a
/// 48-byte slot). Prints the pairs' wall time. Instructions per pair: the difference of two runs
/// over the difference of their pair counts, e.g. `CORE_PAIRS=1000000 valgrind --tool=callgrind
/// <lib test binary> --ignored --exact shard::slab::tests::callgrind_churn_pairs` and again with
/// 2000000.
#[test]
#[ignore]
fn callgrind_churn_pairs() {
    use super::super::core::{Core, Merge};
    use crate::deadline::Deadline;
    use crate::test_rng::XorShift;

    let var = |name: &str, default: u64| -> u64 {
        std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
    };
    let (pending, pairs) = (var("CORE_PENDING", 32_000), var("CORE_PAIRS", 1_000_000));
    let core: Core<(&'static (), [usize; 2])> = Core::new(8);
    let mut rng = XorShift::new(0x5eed);
    let mut stamp = 0u64;
    let mut now = 0u64;
    let mut schedule = |rng: &mut XorShift, now: u64| {
        stamp += 1;
        let deadline = Deadline::at_tick(now + 30_000 + rng.next() % 4096);
        core.schedule(deadline, stamp, (&(), [stamp as usize; 2])).expect("room")
    };
    let mut handles: Vec<_> = (0..2 * pending).map(|_| schedule(&mut rng, now)).collect();
    for _ in 0..pending {
        let handle = handles.swap_remove((rng.next() % handles.len() as u64) as usize);
        assert!(core.cancel(&handle).is_some());
    }
    let start = std::time::Instant::now();
    for i in 0..pairs {
        if i % 1000 == 0 {
            now += 1;
            let mut out = Vec::new();
            core.advance(now, u64::MAX, &mut out, &mut Merge::default());
            assert!(out.is_empty());
        }
        handles.push(schedule(&mut rng, now));
        let handle = handles.swap_remove((rng.next() % handles.len() as u64) as usize);
        assert!(core.cancel(&handle).is_some());
    }
    let elapsed = start.elapsed();
    eprintln!("{pairs} pairs: {:.1} ns a pair", elapsed.as_nanos() as f64 / pairs.max(1) as f64);
    std::hint::black_box(core.len());
}

/// A reservation past what the address space holds panics, as a vector's does, rather than
/// wrapping into a smaller mapping under the slots written.
#[test]
#[should_panic(expected = "capacity overflow")]
fn a_reservation_past_the_address_space_is_refused() {
    let mut slots = super::Slots::<u64>::new();
    slots.push(1);
    slots.reserve_exact(usize::MAX);
}

/// Whether `bytes` at `at` are all mapped: covered by the mappings `/proc/self/maps` lists.
#[cfg(all(any(target_os = "linux", target_os = "android"), not(delaywheel_loom)))]
fn mapped(at: usize, bytes: usize) -> bool {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    let mut ranges: Vec<(usize, usize)> = maps
        .lines()
        .filter_map(|line| {
            let (lo, hi) = line.split_whitespace().next()?.split_once('-')?;
            Some((usize::from_str_radix(lo, 16).ok()?, usize::from_str_radix(hi, 16).ok()?))
        })
        .collect();
    ranges.sort_unstable();
    let mut covered = at;
    for (lo, hi) in ranges {
        if lo <= covered && covered < hi {
            covered = hi;
        }
    }
    covered >= at + bytes
}

/// A shrink moves the units it gives back out of several pieces of the mapping, each to a fresh
/// mapping, which the kernel places in the highest gap that fits: the hole an earlier piece's
/// move left, once mappings of a unit fill every gap above the slots' mapping. The shrink cuts
/// only what is still its own, and every run the reserve holds stays mapped.
#[cfg(all(any(target_os = "linux", target_os = "android"), not(delaywheel_loom)))]
#[test]
fn a_shrink_giving_back_several_pieces_leaves_every_run_mapped() {
    use crate::shard::reserve::{unit_slots, Reserve};
    use crate::sync::Arc;

    type Wide = [u64; 6];
    let unit = unit_slots(std::mem::size_of::<Wide>());
    for round in 0..8 {
        let reserve = Arc::new(Reserve::new(8 * unit, std::mem::size_of::<Wide>()));
        let mut slots = super::Slots::<Wide>::new();
        slots.attach(Arc::clone(&reserve));
        // A unit a run: the first adopted, each later one moved in as a piece of its own.
        for pieces in 1..=3 + round % 4 {
            assert_eq!(slots.take_run(pieces * unit), unit, "round {round}");
        }
        slots.push([round as u64; 6]);
        // Mappings of a unit until one lies below the slots': no gap above them fits a unit.
        let mut fillers = Vec::new();
        while fillers.len() < 4096 {
            let mut filler = super::Slots::<Wide>::new();
            filler.reserve_exact(unit);
            let below = filler.as_ptr() < slots.as_ptr();
            fillers.push(filler);
            if below {
                break;
            }
        }
        slots.shrink_to_fit();
        assert_eq!((slots.capacity(), slots.taken()), (unit, 1), "round {round}");
        assert_eq!(slots[0], [round as u64; 6]);
        let runs = reserve.runs.lock().clone();
        assert_eq!(runs.iter().map(|run| run.units).sum::<usize>(), 7, "round {round}");
        for run in &runs {
            assert!(mapped(run.at, run.units * reserve.unit_bytes()), "round {round}: {run:?} unmapped");
        }
        // Taken again and written, every slot.
        let mut again = super::Slots::<Wide>::new();
        again.attach(Arc::clone(&reserve));
        while again.take_run(usize::MAX) > 0 {}
        assert_eq!(again.capacity(), 7 * unit, "round {round}");
        for slot in 0..7 * unit {
            again.push([slot as u64; 6]);
        }
        assert!(again.iter().enumerate().all(|(slot, value)| *value == [slot as u64; 6]));
    }
}
