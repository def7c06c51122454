//! The levels' unit tests.

use super::*;

#[test]
fn overflow_levels_are_created_lazily_once_and_reused() {
    let wheel = TimingWheel::new(3);
    assert_eq!(wheel.levels_in_use(), 0);
    let a = Arc::clone(wheel.bucket(0, 1).unwrap());
    assert_eq!(wheel.levels_in_use(), 1);
    let b = Arc::clone(wheel.bucket(2, 2).unwrap());
    assert_eq!(wheel.levels_in_use(), 2, "level 1 is not needed, so not created");
    assert!(Arc::ptr_eq(&a, wheel.bucket(0, 1).unwrap()));
    assert!(Arc::ptr_eq(&b, wheel.bucket(2, 2).unwrap()));
    assert_eq!(wheel.levels_in_use(), 2);
    assert_eq!(wheel.buckets().count(), 6);
    // Shutdown closes the levels never created: they can no longer be created.
    assert_eq!(wheel.close_levels().count(), 6);
    assert!(wheel.bucket(1, 0).is_none());
    assert!(wheel.bucket(2, 2).is_some());
    assert_eq!(wheel.levels_in_use(), 2);
}

#[test]
fn every_wheel_size_up_to_the_largest_fits_a_key() {
    use crate::entry::location::KEY_BITS;
    // Within a count of slot bits the level count only falls as the size grows, so the largest key
    // of each bit count is that of its smallest size's levels and its largest slot. A key's slot
    // field is at least a chunk's bits: 9 in a build, fewer in unit tests.
    for chunk_bits in [chunks::CHUNK_BITS, 9] {
        for slot_bits in 1..=MAX_SLOT_BITS {
            let smallest = (1u64 << (slot_bits - 1)) + 1;
            let levels = max_levels(smallest.max(2)) as u64;
            let field = slot_bits.max(chunk_bits);
            let largest_key = (levels - 1) << field | ((1 << field) - 1);
            assert!(largest_key + 1 < 1 << KEY_BITS, "{slot_bits} bits, {levels} levels");
        }
    }
    assert_eq!(max_levels(1 << MAX_SLOT_BITS), 3);
}

#[test]
fn buckets_come_in_chunks_created_on_first_use_and_closed_at_shutdown() {
    // 10 slots in chunks of 4 (in unit tests): cells of slots 0..4, 4..8, 8..10 and one past the
    // end, per level.
    assert_eq!(chunks::CHUNK_BITS, 2);
    let wheel = TimingWheel::with_lanes(10, MIN_BUCKET_LANES);
    let last = Arc::clone(wheel.bucket(0, 9).unwrap());
    assert_eq!((wheel.resident_buckets(), wheel.levels_in_use()), (2, 1), "the last chunk has 2");
    assert_eq!((last.level(), last.slot()), (0, 9));
    assert!(Arc::ptr_eq(&last, wheel.bucket_by_key(last.key()).unwrap()));
    let first = Arc::clone(wheel.bucket(0, 1).unwrap());
    assert_eq!((first.level(), first.slot()), (0, 1));
    let coarse = Arc::clone(wheel.bucket(1, 5).unwrap());
    assert_eq!((coarse.level(), coarse.slot()), (1, 5));
    assert_eq!((wheel.resident_buckets(), wheel.levels_in_use()), (10, 2));
    assert!(wheel.bucket_by_key(wheel.buckets.key(0, 4)).is_none(), "its chunk was never needed");
    let slots: Vec<_> = wheel.buckets().map(|b| (b.level(), b.slot())).collect();
    assert_eq!(slots, [(0, 0), (0, 1), (0, 2), (0, 3), (0, 8), (0, 9), (1, 4), (1, 5), (1, 6), (1, 7)]);
    // Shutdown closes every chunk never created, in the levels in use too.
    assert_eq!(wheel.close_levels().count(), 10);
    assert!(wheel.bucket(0, 4).is_none() && wheel.bucket(1, 0).is_none() && wheel.bucket(3, 0).is_none());
    assert!(Arc::ptr_eq(&last, wheel.bucket(0, 9).unwrap()));
    assert_eq!((wheel.resident_buckets(), wheel.levels_in_use()), (10, 2));
}

#[test]
fn a_chunk_cell_is_three_words() {
    // The figure `chunks.rs` and `MAX_WHEEL_SIZE`'s docs give for the table: 24 bytes a cell.
    type Cell = std::sync::OnceLock<Box<[Arc<TimerTaskList>]>>;
    assert_eq!(std::mem::size_of::<Cell>(), 24);
}
