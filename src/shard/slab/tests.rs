use super::{Slab, MAX_SLOTS};

/// A slot's key: index and generation.
fn occupy(slab: &mut Slab<u32>, value: u32) -> (u32, u64) {
    slab.occupy(value).unwrap_or_else(|_| panic!("room for {value}"))
}

#[test]
fn a_key_names_one_occupant() {
    let mut slab = Slab::new();
    let (a, a_gen) = occupy(&mut slab, 1);
    let (b, _) = occupy(&mut slab, 2);
    assert_eq!((a, b, slab.len()), (0, 1, 2));
    assert_eq!(slab.get(a, a_gen), Some(&1));
    assert_eq!(slab.vacate(a), (a_gen, 1));
    assert_eq!(slab.len(), 1);
    assert_eq!(slab.get(a, a_gen), None, "vacant");
    // The slot comes back with the next generation: the first key stays stale.
    let (again, again_gen) = occupy(&mut slab, 3);
    assert_eq!((again, again_gen), (a, a_gen + 1));
    assert_eq!(slab.get(a, a_gen), None);
    assert_eq!(slab.get(again, again_gen), Some(&3));
    assert_eq!(slab.get(7, 0), None, "a slot never written");
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
    assert_eq!((slot.prev, slot.next, slot.entry), (9, 11, Some(6)));
    assert_eq!(*slab.entry(index), 6);
}

#[test]
fn the_free_list_is_last_vacated_first() {
    let mut slab = Slab::new();
    let keys: Vec<_> = (0..4).map(|v| occupy(&mut slab, v)).collect();
    slab.vacate(keys[1].0);
    slab.vacate(keys[3].0);
    assert_eq!(occupy(&mut slab, 10).0, 3);
    assert_eq!(occupy(&mut slab, 11).0, 1);
    assert_eq!(occupy(&mut slab, 12).0, 4, "then a new slot");
    slab.check();
}

#[test]
fn reserve_writes_vacant_slots_ahead_lowest_first() {
    let mut slab = Slab::new();
    let (first, _) = occupy(&mut slab, 0);
    slab.vacate(first);
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
        slab.vacate(index);
    }
    slab.vacate(keys[1].0);
    assert!(slab.shrink() > 0);
    assert_eq!(slab.slots(), 3, "slot 1 is vacant but below slot 2");
    assert_eq!(slab.capacity(), 3);
    slab.check();
    // Cut slots come back at the floor: the keys of their earlier occupants stay stale.
    assert!(slab.floor() > keys[9].1);
    let again: Vec<_> = (0..10).map(|v| occupy(&mut slab, 100 + v)).collect();
    assert_eq!(again[0].0, 1, "the free list rebuilt lowest first");
    for &(index, generation) in &keys[3..] {
        assert_eq!(slab.get(index, generation), None, "old key of slot {index}");
    }
    assert!(again.iter().all(|&(index, generation)| slab.get(index, generation).is_some()));
    assert_eq!(slab.slots(), 12);
    slab.shrink();
    assert_eq!(
        (slab.slots(), slab.capacity()),
        (12, 12),
        "the last slot is occupied: only spare capacity goes"
    );
    slab.check();
}

#[test]
fn an_empty_slab_gives_everything_back() {
    let mut slab = Slab::new();
    slab.reserve(100);
    let keys: Vec<_> = (0..50).map(|v| occupy(&mut slab, v)).collect();
    for &(index, _) in &keys {
        slab.vacate(index);
    }
    assert!(slab.shrink() >= 100);
    assert_eq!((slab.slots(), slab.capacity(), slab.len()), (0, 0, 0));
    assert_eq!(occupy(&mut slab, 7).0, 0);
    slab.check();
}

#[test]
fn take_all_hands_out_every_entry_once() {
    let mut slab = Slab::new();
    let keys: Vec<_> = (0..8).map(|v| occupy(&mut slab, v)).collect();
    slab.vacate(keys[2].0);
    slab.vacate(keys[5].0);
    let mut taken = Vec::new();
    slab.take_all(|index, generation, value| taken.push((index, generation, value)));
    let expected: Vec<_> =
        keys.iter().zip(0..).filter(|&(_, v)| v != 2 && v != 5).map(|(&(i, g), v)| (i, g, v)).collect();
    assert_eq!(taken, expected);
    assert_eq!(slab.len(), 0);
    assert!(keys.iter().all(|&(index, generation)| slab.get(index, generation).is_none()));
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
    assert_eq!(slab.occupy(u32::MAX), Err(u32::MAX));
    assert_eq!(slab.len(), MAX_SLOTS);
    slab.vacate(17);
    assert_eq!(occupy(&mut slab, 1).0, 17);
    slab.check();
}
