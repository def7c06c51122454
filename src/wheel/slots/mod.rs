//! `Slots`: the list of one bucket stage, with stable indices and O(1) removal.
//!
//! The entries of a stage live in a deque of `Option` slots (a [`ChunkDeque`]: a big list grows in
//! 1 KiB chunks, not by doubling); each entry records its absolute index
//! (in its location, with its bucket, lane and stage: `entry/location.rs`), so a cancel finds its slot at
//! once. The rules for holes and compaction are in [`Slots`]. Every method is called with the
//! owning bucket lane's lock held; slot locks are taken inside (lane, then slot: `entry/`).

use self::due_by::DueIndex;
use super::chunk_deque::ChunkDeque;
use crate::deadline::Deadline;
use crate::entry::arena::prefetch_ahead;
use crate::entry::location::INDEX_LIMIT;
use crate::entry::{EntryArena, EntryId, TaskLines};

/// Below this many slots a list is never compacted or shrunk.
pub(crate) const MIN_COMPACT: usize = 32;

/// The entries of a stage, as a deque of slots with stable indices.
///
/// A removed entry leaves a hole (`None`) so that no other entry moves and a cancel touches only its
/// own entry. Holes at either end are popped at once: timeouts are mostly cancelled in about the
/// order they were armed, so the common case never moves an entry. Holes in the middle are squeezed
/// out once they are three quarters of the list, which keeps it within four times its live entries
/// (flat memory) at amortised O(1). An entry's index is absolute: slot `i` is `entries[i - base]`.
#[derive(Default)]
pub(crate) struct Slots {
    entries: ChunkDeque<Option<EntryId>>,
    /// The absolute index of `entries[0]`.
    base: u64,
    live: usize,
    /// The takes beside a passed deadline that scanned the list, then its entries by deadline,
    /// built at the fourth such scan and kept while the indices stand (`due_by.rs`).
    by_deadline: Option<Box<DueIndex>>,
}

impl Slots {
    /// Entries held (holes not counted).
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// The absolute index the next [`push`](Slots::push) will get. If it would not fit a
    /// location ([`INDEX_LIMIT`]: only after ~2^32 pushes into a list that never emptied), every
    /// entry is first renumbered from zero.
    #[inline(always)]
    pub(crate) fn next_index(&mut self, arena: &EntryArena) -> u64 {
        if self.end() >= INDEX_LIMIT {
            self.renumber(arena, true);
            // Only with INDEX_LIMIT live entries in one stage: 2^32 in a build, more than the
            // 2^32 - 2 entries a timer holds (`MAX_CAPACITY`); 2^16 in unit tests.
            assert!(
                self.end() < INDEX_LIMIT,
                "more live entries in one bucket stage than a location indexes"
            );
        }
        self.end()
    }

    fn end(&self) -> u64 {
        self.base + self.entries.len() as u64
    }

    /// Appends an entry at [`next_index`](Slots::next_index).
    #[inline(always)]
    pub(crate) fn push(&mut self, entry: EntryId) {
        self.entries.push_back(Some(entry));
        self.live += 1;
    }

    /// Takes the entry at absolute `index`, leaving a hole; trims and compacts (see [`Slots`]).
    #[inline]
    pub(crate) fn take(&mut self, arena: &EntryArena, index: u64) -> Option<EntryId> {
        let at = (index - self.base) as usize;
        self.live -= 1;
        // The ends are never holes, so only the end taken from can need trimming.
        let removed = if at == 0 {
            // The front, as for most cancels (they come in about the order timers were armed): it
            // and the holes after it go in one scan.
            let (removed, popped) = self.entries.pop_front_run(Option::is_none).expect("the front");
            self.base += popped as u64;
            removed
        } else {
            let removed = self.entries[at].take();
            if at + 1 == self.entries.len() {
                self.trim_back();
            }
            removed
        };
        if self.entries.is_empty() {
            self.restart();
        }
        self.shrink(arena);
        removed
    }

    /// Takes the first `n` live entries (in insertion order) out of the list into transit (no
    /// location, cleared under each slot's lock; those due at `cursor` marked due there), handing
    /// each to `each` with its deadline and stamp: the caller holds them from now on (`entry/`).
    /// Only entries stamped at most `stamps` are marked due (`EntryState::leave_for_transit`).
    #[inline(always)]
    pub(crate) fn take_front<F>(
        &mut self,
        n: usize,
        arena: &EntryArena,
        (cursor, stamps): (u64, u64),
        mut each: F,
    ) where
        F: FnMut(EntryId, (Deadline, u64, TaskLines)),
    {
        // The slots lie far apart: each is a cache miss, started `ahead` entries early.
        let ahead = prefetch_ahead(n);
        let prefetch = |ahead: Option<Option<EntryId>>| {
            if let Some(Some(ahead)) = ahead {
                arena.prefetch(ahead);
            }
        };
        if n == self.live {
            // The whole list: hand it over and start afresh (indices restart at 0).
            let taken = std::mem::take(&mut self.entries);
            self.live = 0;
            self.restart();
            taken.scan_ahead(ahead, |slot, ahead| {
                prefetch(ahead);
                if let Some(entry) = slot {
                    each(entry, arena.lock(entry).leave_for_transit(cursor, stamps));
                }
                true
            });
            return;
        }
        let mut moved = 0;
        // The slots up to the `n`th live one.
        let scanned = self.entries.scan_ahead(ahead, |slot, ahead| {
            if moved == n {
                return false;
            }
            prefetch(ahead);
            if let Some(entry) = slot {
                each(entry, arena.lock(entry).leave_for_transit(cursor, stamps));
                moved += 1;
            }
            true
        });
        self.entries.drop_front(scanned);
        self.base += scanned as u64;
        self.live -= moved;
        self.trim_front();
        self.shrink(arena);
    }

    /// Pops the holes at the front (the next live entry keeps its absolute index).
    fn trim_front(&mut self) {
        self.base += self.entries.pop_front_while(Option::is_none) as u64;
    }

    /// Pops the holes at the back: the next pushes reuse their indices, which the index by deadline
    /// no longer counts as looked at (`due_by.rs`).
    fn trim_back(&mut self) {
        while matches!(self.entries.back(), Some(None)) {
            self.entries.pop_back();
        }
        if let Some(index) = &mut self.by_deadline {
            index.cut(self.base + self.entries.len() as u64);
        }
    }

    /// An empty list (no live entry, no hole): indices restart at 0 (they would otherwise only
    /// grow), and the index by deadline goes.
    fn restart(&mut self) {
        self.base = 0;
        self.by_deadline = None;
    }

    /// Compacts a list that is mostly holes, or gives back capacity it no longer needs.
    fn shrink(&mut self, arena: &EntryArena) {
        let len = self.entries.len();
        if len >= MIN_COMPACT && self.live * 4 <= len {
            self.renumber(arena, false);
        } else if self.entries.capacity() > MIN_COMPACT && len * 4 < self.entries.capacity() {
            self.entries.shrink_to((len * 2).max(MIN_COMPACT));
        }
    }

    /// Squeezes out every hole, renumbering the entries that move; with `from_zero`, the indices
    /// restart at 0 and every entry is renumbered.
    #[cold]
    #[inline(never)]
    fn renumber(&mut self, arena: &EntryArena, from_zero: bool) {
        // Its indices are stale: the next take beside a passed deadline builds it again.
        self.by_deadline = None;
        if from_zero {
            self.base = 0;
        }
        let base = self.base;
        self.entries.retain((self.live * 2).max(MIN_COMPACT), |slot, at, to| {
            let Some(entry) = *slot else { return false };
            if at != to || from_zero {
                let mut state = arena.lock(entry);
                state.location = state.location.map(|location| location.at(base + to as u64));
            }
            true
        });
        self.entries.shrink_to((self.entries.len() * 2).max(MIN_COMPACT));
    }
}

#[cfg(test)]
impl Slots {
    /// The entry at absolute `index`, if that slot is not a hole.
    pub(crate) fn get(&self, index: u64) -> Option<EntryId> {
        *self.entries.get(usize::try_from(index.checked_sub(self.base)?).ok()?)?
    }

    /// Slots in the list, holes included.
    pub(crate) fn span(&self) -> usize {
        self.entries.len()
    }
}

mod due_by;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::location::{BucketKey, LaneKey, Location};
    use crate::entry::{new_entry, Ticket};

    /// What `TimerTaskList::add_with` does for a list: an index, then the location, then the push.
    fn add(slots: &mut Slots, arena: &EntryArena, entry: Ticket) {
        let index = slots.next_index(arena);
        arena.lock(entry.id).location =
            Some(Location::new(LaneKey::new(BucketKey::new(1, 2, 9), 1), 3, index));
        slots.push(entry.id);
    }

    fn index_of(arena: &EntryArena, entry: Ticket) -> u64 {
        arena.lock(entry.id).location.expect("in the list").index()
    }

    #[test]
    fn a_list_that_never_empties_renumbers_before_its_indices_run_out() {
        let arena = EntryArena::unaudited();
        let mut slots = Slots::default();
        // A rolling window of 5 live entries, oldest removed first: the list never empties, its
        // base and indices keep growing, far past INDEX_LIMIT pushes.
        let mut window = std::collections::VecDeque::new();
        let mut renumbered = 0;
        for round in 0..3 * INDEX_LIMIT {
            let entry = new_entry(&arena, 1, || {}).unwrap();
            let end = slots.end();
            add(&mut slots, &arena, entry);
            if index_of(&arena, entry) < end {
                renumbered += 1;
            }
            window.push_back(entry);
            if window.len() > 5 {
                let oldest = window.pop_front().unwrap();
                assert_eq!(slots.take(&arena, index_of(&arena, oldest)), Some(oldest.id), "round {round}");
                arena.lock(oldest.id).location = None;
            }
            for &live in &window {
                assert_eq!(slots.get(index_of(&arena, live)), Some(live.id), "round {round}");
            }
        }
        assert!(renumbered >= 2, "renumbered {renumbered} times");
        for &entry in &window {
            let location = arena.lock(entry.id).location.unwrap();
            assert_eq!(
                (location.bucket(), location.lane(), location.stage()),
                (BucketKey::new(1, 2, 9), 1, 3)
            );
        }
        assert_eq!(slots.live(), window.len());
    }
}
