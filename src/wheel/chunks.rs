//! `Buckets`: the buckets of every level, created in chunks on first use, and closed at shutdown.
//!
//! ## Layout
//!
//! A bucket is named by its key, `level << slot_bits | slot` (`entry/location.rs`), where a wheel's
//! `slot_bits` holds its largest slot and at least [`CHUNK_BITS`]. The buckets of a level are
//! created in **chunks** of `2^CHUNK_BITS` consecutive slots (fewer in a level's last chunk, and in
//! a level smaller than a chunk, which is then one chunk), each the first time one of its buckets
//! is needed, exactly once (a once-cell each), and never torn down. The wheel holds one cell per
//! chunk of every level in one flat table, in key order, so the chunk of a key is cell
//! `key >> CHUNK_BITS` and its bucket the chunk's `key % 2^CHUNK_BITS`-th: a schedule, a cancel or
//! a visit finds its bucket with a constant shift and mask, one `Acquire` load and two indexings,
//! and never takes a lock for it. (With a wheel's own chunk bits the shift and mask would be read
//! from the wheel: 13 more instructions per schedule, 5 per cancel, in callgrind.)
//!
//! Memory grows with the slots used so far, not at once with the wheel size: the table is `max_levels <<
//! (slot_bits - CHUNK_BITS)` cells of 24 bytes, allocated with the wheel (8 cells at the default
//! 512 slots, one per level; 98 304 cells, 2.25 MiB, at 2^24 slots), and a chunk is its pointers
//! and buckets, 512 of them of about 0.2 KiB before any lane is created (`bucket/`: a header, a
//! cell per lane, two allocations): about 110 KiB with 8 lanes. A timer of 2^24 slots with a few
//! timers in it holds the table and a chunk or two per level they touch: a few MiB, where whole
//! levels would be about 3.4 GiB each. Chunks are never freed (a cancel reaches its bucket with no
//! reference count, so freeing one would need a grace period like the arena's pages), and level
//! 0's slots are each used once the cursor has gone round with tasks pending: a timer that lives
//! `wheel_size` ticks with tasks in every chunk's span ends with level 0 whole.
//!
//! Why 512 slots per chunk: at the default size a level is one chunk, so nothing changes for it;
//! for a big wheel a smaller chunk costs table (24 bytes per cell), a bigger one buckets per chunk
//! touched, and 512 balances the two at 2^24 slots (2.25 MiB of table against 110 KiB a chunk).
//! Under loom a chunk has 2 buckets, so a model's wheel of 4 slots has two chunks per level.
//!
//! ## Closing (shutdown)
//!
//! The drain sets the timer's shutdown flag, then [`close`](Buckets::close) walks every cell: a
//! chunk that exists it returns (the drain flushes each of its buckets, taking every lane lock);
//! a chunk that does not it creates **closed**, empty, through the cell itself, so that it can
//! never be created any more: a scheduler that needs a bucket in it finds none and is refused
//! (`TimingWheel::schedule`). The once-cell decides every race between a scheduler creating a chunk
//! and the close: either the scheduler's creation comes first, and the close's `get_or_init`
//! returns that chunk (synchronising with its creation) and the drain flushes its buckets, while
//! the scheduler's add reads the flag under its lane lock, which the flush takes after the flag
//! is set, so the add is flushed or refused; or the close's comes first, and the scheduler gets the
//! closed chunk and is refused. Either way no entry is accepted where the drain does not look.
//!
//! A close that only `get`s the cells (closing none) is not enough: the drain's load of a cell's
//! "ready" flag and the scheduler's load of the shutdown flag can both read stale values (store
//! buffering, as loom finds), so a chunk created just after the drain looked would keep an entry
//! accepted after the flush. Seeded faults: `drain_skips_uncreated_levels` (no cell closed),
//! `drain_skips_uncreated_chunks` (only the first chunk of each level closed, as if a level were
//! one allocation), in `faults.rs`; loom models in `loom_tests/shutdown.rs`.

use super::bucket::TimerTaskList;
use super::faults;
use crate::entry::location::BucketKey;
use crate::sync::{Arc, OnceLock};

/// The most buckets a chunk holds: `2^CHUNK_BITS`, 512 (see the module docs); 2 under loom, and 4
/// in unit tests, so that their small wheels have levels of several chunks.
#[cfg(not(any(delaywheel_loom, test)))]
pub(crate) const CHUNK_BITS: u32 = 9;
#[cfg(delaywheel_loom)]
pub(crate) const CHUNK_BITS: u32 = 1;
#[cfg(all(test, not(delaywheel_loom)))]
pub(crate) const CHUNK_BITS: u32 = 2;

/// A key's place in its chunk: its low [`CHUNK_BITS`].
const IN_CHUNK: usize = (1 << CHUNK_BITS) - 1;

/// A chunk's buckets, in slot order; none once closed before it was created.
type Chunk = Box<[Arc<TimerTaskList>]>;

/// The buckets of every level of a wheel (see the module docs).
pub(super) struct Buckets {
    wheel_size: u64,
    /// Lanes per bucket (`bucket/`).
    lanes: usize,
    /// Bits of the largest slot, `wheel_size - 1`, and at least [`CHUNK_BITS`]: a key is
    /// `level << slot_bits | slot`.
    slot_bits: u32,
    /// One cell per chunk of every level, in key order: `2^(slot_bits - CHUNK_BITS)` per level.
    chunks: Box<[OnceLock<Chunk>]>,
}

impl Buckets {
    /// The cells of `levels` levels of `wheel_size` slots of `lanes` lanes, none created yet.
    pub(super) fn new(wheel_size: u64, levels: usize, lanes: usize) -> Self {
        debug_assert!(wheel_size >= 2);
        let slot_bits = (u64::BITS - (wheel_size - 1).leading_zeros()).max(CHUNK_BITS);
        let chunks = (0..levels << (slot_bits - CHUNK_BITS)).map(|_| OnceLock::new()).collect();
        Buckets { wheel_size, lanes, slot_bits, chunks }
    }

    /// The key of `slot` of `level`.
    #[inline(always)]
    pub(super) fn key(&self, level: usize, slot: usize) -> BucketKey {
        BucketKey::new(level, slot, self.slot_bits)
    }

    /// Bits of the largest slot (a key is `level << slot_bits | slot`).
    pub(super) fn slot_bits(&self) -> u32 {
        self.slot_bits
    }

    /// Chunk cells per level.
    fn per_level(&self) -> usize {
        1 << (self.slot_bits - CHUNK_BITS)
    }

    /// The bucket `key` names, creating its chunk on first use (exactly once); `None` if the chunk
    /// was closed before it was ever used (see the module docs).
    #[inline(always)]
    pub(super) fn get_or_create(&self, key: BucketKey) -> Option<&Arc<TimerTaskList>> {
        let cell = key.index() >> CHUNK_BITS;
        let chunk = match self.chunks[cell].get() {
            Some(chunk) => chunk,
            None => self.create(cell),
        };
        chunk.get(key.index() & IN_CHUNK)
    }

    /// Creates the chunk of `cell`, unless another thread (or the close) did first.
    #[cold]
    fn create(&self, cell: usize) -> &Chunk {
        self.chunks[cell].get_or_init(|| {
            let level = cell >> (self.slot_bits - CHUNK_BITS);
            let first = ((cell & (self.per_level() - 1)) << CHUNK_BITS) as u64;
            let end = (first + (1 << CHUNK_BITS)).min(self.wheel_size);
            (first..end)
                .map(|slot| Arc::new(TimerTaskList::new(level, slot as usize, self.slot_bits, self.lanes)))
                .collect()
        })
    }

    /// The bucket `key` names, if its chunk exists (and was not closed before it was created).
    #[inline]
    pub(super) fn get(&self, key: BucketKey) -> Option<&Arc<TimerTaskList>> {
        let chunk = self.chunks.get(key.index() >> CHUNK_BITS)?.get()?;
        chunk.get(key.index() & IN_CHUNK)
    }

    /// For shutdown: closes every chunk not yet created and returns every bucket of the others
    /// (see the module docs, "Closing").
    pub(super) fn close(&self) -> impl Iterator<Item = &Arc<TimerTaskList>> {
        let per_level = self.per_level();
        self.chunks
            .iter()
            .enumerate()
            .filter_map(move |(cell, chunk)| match faults::close_skips(cell, per_level) {
                true => chunk.get(),
                false => Some(chunk.get_or_init(|| Box::new([]))),
            })
            .flat_map(|chunk| chunk.iter())
    }

    /// Every bucket created so far, in key order (level, then slot).
    pub(super) fn resident(&self) -> impl Iterator<Item = &Arc<TimerTaskList>> {
        self.chunks.iter().filter_map(OnceLock::get).flat_map(|chunk| chunk.iter())
    }

    /// The levels with at least one bucket created.
    pub(super) fn levels_in_use(&self) -> usize {
        let created = |cell: &OnceLock<Chunk>| cell.get().is_some_and(|chunk| !chunk.is_empty());
        self.chunks.chunks(self.per_level()).filter(|level| level.iter().any(created)).count()
    }
}
