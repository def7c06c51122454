//! Taking out of a stage's list the entries due by a deadline passed mid-tick
//! (`timer/advance.rs`, "Passed deadlines mid-tick"): by a scan of the list, then through an index
//! of the list by deadline.
//!
//! A list is in the order of its adds, not of its deadlines, so a take beside a passed deadline
//! reads every entry's deadline (under its slot's lock, as it must to take one) and keeps the
//! lowest it left as the stage's floor. A take comes into a stage only if its floor is due, so
//! such a scan takes something, unless the entry that set the floor left since, was re-armed later
//! in place, or is stamped after the take's round.
//!
//! ## When the index is built
//!
//! The [`SCANS_BEFORE_INDEX`]-th scan of a list keeps what it read: the `(deadline, absolute
//! index)` of every entry it left, sorted, latest first ([`DueIndex`]); every later take pops from
//! its end what is due by its limit (`O(1)` an entry), then looks at the entries added since (the
//! **tail**, from `covers` on), which go into a min-heap beside it (`O(log n)` each), as do the
//! entries a take finds re-armed later. So a stream of passed deadlines falling between the entries
//! of the tick under way costs a few scans and one sort of the list, then `O(1)` for each entry of
//! the sorted run a take finds due, not a scan of the list per take (the scans are counted while
//! the list's indices stand, so a coarser stage taken from once a tick for four ticks is indexed
//! too). Building at the first take would cost a stage with one or two takes a sort it never uses,
//! and a heap of the whole list (`O(log n)` a pop, about 250 instructions) loses to rescanning
//! (about 45 an entry) up to some 50 takes a tick: docs/benchmarks.md, "Passed deadlines mid-tick",
//! has the counts.
//!
//! **Why a popped item is checked, not trusted.** Under the lane lock, as the list: every live
//! entry below `covers` has an item (in the sorted run or the heap) whose key is at most its
//! deadline (an invariant, not an equality), and items may be stale. An entry leaves its slot (a
//! cancel, a move, a visit's front chunk) without the index knowing: its slot is then a hole or
//! below the list's front, and the item is dropped when popped. A reset writes a later deadline in
//! place under the slot lock alone (`entry/retarget.rs`: never an earlier one), so an item's key
//! stays a lower bound, and a popped entry due after the limit goes back in by the deadline it has
//! now. Indices are stable while the index lives: holes popped at the back give their indices to
//! the next pushes, so `covers` comes back to the end ([`DueIndex::cut`], and those entries are the
//! tail's); the list emptied (indices restart) or compacted (entries renumbered) drops the index,
//! and the next take builds it again (a compaction comes after three quarters of the list became
//! holes: amortised). An entry with two items (a stale one whose index a push reused) is taken
//! once: the second finds a hole. Stale items stay until popped: an index of more than twice the
//! list's entries (plus [`MIN_COMPACT`]) items is dropped too, to be built again if takes need it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{Slots, MIN_COMPACT};
use crate::deadline::Deadline;
use crate::entry::{EntryArena, EntryId, TaskLines};

/// Takes that scan the whole list before one builds the index (see the module docs, "When the
/// index is built"). The loom models build it at the first, so that their few takes reach it.
const SCANS_BEFORE_INDEX: u32 = if cfg!(delaywheel_loom) { 1 } else { 4 };

/// A stage list's entries by deadline (see the module docs).
pub(crate) struct DueIndex {
    /// Takes that scanned the whole list, while the index is not built.
    scans: u32,
    /// `(deadline, absolute index)` of the entries the build looked at, latest first (the earliest
    /// pops from the end).
    sorted: Vec<(Deadline, u64)>,
    /// Items pushed since the build (the tail's entries, those found re-armed later or stamped
    /// after a take's round), earliest first. With `sorted`: every live entry below `covers` has an
    /// item whose deadline is at most its own.
    heap: BinaryHeap<Reverse<(Deadline, u64)>>,
    /// The absolute index of the first slot the index has not looked at (the tail's start); the
    /// list's start while the index is not built.
    covers: u64,
}

impl DueIndex {
    /// The list ends at `end` (holes popped at its back): the indices from there on will be new
    /// entries', which it has not looked at.
    pub(super) fn cut(&mut self, end: u64) {
        self.covers = self.covers.min(end);
    }

    /// Whether the index is built (the list scanned [`SCANS_BEFORE_INDEX`] times).
    fn built(&self) -> bool {
        self.scans >= SCANS_BEFORE_INDEX
    }

    /// Items held, stale ones included.
    fn items(&self) -> usize {
        self.sorted.len() + self.heap.len()
    }

    /// The absolute index of an item due by `limit`, if one is left: from the sorted run first,
    /// then from the heap (the order of a take does not matter: its batch is sorted after).
    fn pop_due_by(&mut self, limit: Deadline) -> Option<u64> {
        if let Some(&(_, at)) = self.sorted.last().filter(|item| item.0 <= limit) {
            self.sorted.pop();
            return Some(at);
        }
        self.heap.peek().filter(|item| item.0 .0 <= limit)?;
        self.heap.pop().map(|Reverse((_, at))| at)
    }

    /// The earliest deadline of an item, [`Deadline::LATEST`] if none.
    fn floor(&self) -> Deadline {
        let sorted = self.sorted.last().map_or(Deadline::LATEST, |item| item.0);
        sorted.min(self.heap.peek().map_or(Deadline::LATEST, |item| item.0 .0))
    }
}

impl Slots {
    /// Takes out every entry whose deadline, read under its slot's lock, is at or before `limit`
    /// and whose stamp is at most `stamps`, into transit marked due (`EntryState::leave_for_transit`),
    /// handing each to `each`: the caller holds and fires them. The others stay where they are;
    /// returns a lower bound of their deadlines ([`Deadline::LATEST`] if none). By a scan of the
    /// list, then through the index by deadline once enough takes scanned it (see the module
    /// docs): for the tick under way when a passed deadline fires mid-tick
    /// (`timer/advance.rs`, "Passed deadlines mid-tick"), not for a visit.
    pub(crate) fn take_due_by<F>(
        &mut self,
        arena: &EntryArena,
        (limit, stamps): (Deadline, u64),
        mut each: F,
    ) -> Deadline
    where
        F: FnMut(EntryId, (Deadline, u64, TaskLines)),
    {
        let base = self.base;
        let mut index = match self.by_deadline.take() {
            Some(index) => index,
            None => {
                Box::new(DueIndex { scans: 0, sorted: Vec::new(), heap: BinaryHeap::new(), covers: base })
            }
        };
        // Due by `by` (`limit`), taken; else kept with the deadline read (at most `limit` for one
        // stamped later).
        let mut take = |slots: &mut Slots, at: u64, entry: EntryId, by: Deadline| {
            let mut state = arena.lock(entry);
            if state.deadline > by || state.generation() > stamps {
                return Some(state.deadline);
            }
            // Due whatever the cursor: at or before `limit`, which has passed. (Seeded fault
            // `due_by_unmarked`, docs/loom.md: not marked due, so a reset racing the take moves
            // the entry, `true`, and it fires at once all the same.)
            let cursor = if fault!("due_by_unmarked") { 0 } else { u64::MAX };
            let left = state.leave_for_transit(cursor, stamps);
            drop(state);
            slots.entries[(at - base) as usize] = None;
            slots.live -= 1;
            each(entry, left);
            None
        };
        // The whole list while the index is not built (the scan that builds it keeps what it
        // reads), the entries added since the build after it.
        let end = self.base + self.entries.len() as u64;
        let was_built = index.built();
        let building = !was_built && index.scans + 1 == SCANS_BEFORE_INDEX;
        let (mut kept, mut scan_floor) = (Vec::new(), Deadline::LATEST);
        for at in index.covers.max(base)..end {
            let Some(entry) = self.entries[(at - base) as usize] else { continue };
            if let Some(deadline) = take(self, at, entry, limit) {
                if was_built || building {
                    kept.push((deadline, at));
                } else {
                    scan_floor = scan_floor.min(deadline);
                }
            }
        }
        if building {
            kept.sort_unstable_by(|a, b| b.cmp(a));
            index.sorted = std::mem::take(&mut kept);
            index.scans += 1;
            index.covers = end;
        } else if was_built {
            // Into the heap after the pops below: each was read just now.
            index.covers = end;
        } else {
            index.scans += 1;
        }
        // What the index has due by `limit`; one stamped later goes back after the loop.
        if was_built {
            let mut later = Vec::new();
            while let Some(at) = index.pop_due_by(limit) {
                let Some(entry) =
                    at.checked_sub(base).and_then(|at| self.entries.get(at as usize)).copied().flatten()
                else {
                    continue;
                };
                // Seeded fault `due_by_trusts_index` (docs/loom.md): a popped entry is taken by its
                // item's key, so one a reset moved later in place since fires before that deadline.
                let by = if fault!("due_by_trusts_index") { Deadline::LATEST } else { limit };
                match take(self, at, entry, by) {
                    Some(deadline) if deadline > limit => index.heap.push(Reverse((deadline, at))),
                    Some(deadline) => later.push(Reverse((deadline, at))),
                    None => {}
                }
            }
            index.heap.extend(later);
            index.heap.extend(kept.into_iter().map(Reverse));
        }
        let floor = index.floor().min(scan_floor);
        self.trim_front();
        self.by_deadline = Some(index);
        self.trim_back();
        if self.entries.is_empty() {
            self.restart();
        }
        self.shrink(arena);
        // Mostly stale (a list cancelled or cascaded from, taken little from): built again if needed.
        if self.by_deadline.as_ref().is_some_and(|index| index.items() > 2 * self.live + MIN_COMPACT) {
            self.by_deadline = None;
        }
        floor
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::location::{BucketKey, LaneKey, Location};
    use crate::entry::new_entry_at;
    use crate::test_rng::XorShift;

    fn add(slots: &mut Slots, arena: &EntryArena, deadline: Deadline) -> EntryId {
        let entry = new_entry_at(arena, deadline, || {}).unwrap().id;
        let index = slots.next_index(arena);
        arena.lock(entry).location = Some(Location::new(LaneKey::new(BucketKey::new(0, 1, 9), 1), 0, index));
        slots.push(entry);
        entry
    }

    /// Random adds, cancels (at the front, the back, anywhere), resets in place to later deadlines,
    /// a visit's front chunks and takes by rising or random limits and stamps, against a list of
    /// what is in the stage: each take takes exactly the entries due by its limit and stamped at
    /// most its stamps, and returns a floor at most every deadline left.
    #[test]
    fn takes_through_the_index_take_exactly_what_is_due() {
        let mut rng = XorShift::new(0x0D0E_B15E_ED00_5EED);
        for round in 0..200 {
            let arena = EntryArena::unaudited();
            let mut slots = Slots::default();
            // (entry, deadline, stamp) in list order.
            let mut model: Vec<(EntryId, Deadline, u64)> = Vec::new();
            let deadline =
                |rng: &mut XorShift| Deadline::new(100 + rng.next() % 3, rng.next() as u8).unwrap();
            let mut limit = Deadline::new(100, 0).unwrap();
            // Some rounds start with a long list, which holes compact (renumbering it).
            for _ in 0..rng.next() % 4 * 100 {
                let deadline = deadline(&mut rng);
                let entry = add(&mut slots, &arena, deadline);
                model.push((entry, deadline, arena.lock(entry).generation()));
            }
            for step in 0..400 {
                let at = |rng: &mut XorShift, len: usize| (rng.next() % len.max(1) as u64) as usize;
                match rng.next() % 16 {
                    0..=5 => {
                        let deadline = deadline(&mut rng);
                        let entry = add(&mut slots, &arena, deadline);
                        model.push((entry, deadline, arena.lock(entry).generation()));
                    }
                    6..=7 if !model.is_empty() => {
                        let i = match rng.next() % 3 {
                            0 => 0,
                            1 => model.len() - 1,
                            _ => at(&mut rng, model.len()),
                        };
                        let (entry, ..) = model.remove(i);
                        let index = arena.lock(entry).location.take().unwrap().index();
                        assert_eq!(slots.take(&arena, index), Some(entry));
                    }
                    8 if !model.is_empty() => {
                        let i = at(&mut rng, model.len());
                        let later =
                            Deadline::new(model[i].1.tick() + rng.next() % 2, 255).unwrap().max(model[i].1);
                        arena.lock(model[i].0).deadline = later;
                        model[i].1 = later;
                    }
                    9 if !model.is_empty() => {
                        let n = 1 + at(&mut rng, model.len().min(4));
                        let mut taken = Vec::new();
                        slots.take_front(n, &arena, (0, 0), |entry, _| taken.push(entry));
                        let expected: Vec<EntryId> = model.drain(..n).map(|(entry, ..)| entry).collect();
                        assert_eq!(taken, expected, "round {round} step {step}");
                    }
                    _ => {
                        limit = match rng.next() % 4 {
                            0 => deadline(&mut rng),
                            _ => limit
                                .max(deadline(&mut rng).min(Deadline::new(102, rng.next() as u8).unwrap())),
                        };
                        let stamps = match model.iter().map(|&(.., stamp)| stamp).max() {
                            Some(last) if rng.next() % 4 == 0 => last.saturating_sub(rng.next() % 4),
                            _ => u64::MAX,
                        };
                        let mut taken = Vec::new();
                        let floor = slots.take_due_by(&arena, (limit, stamps), |entry, (deadline, ..)| {
                            taken.push((entry, deadline))
                        });
                        let (due, left): (Vec<_>, Vec<_>) = model
                            .iter()
                            .partition(|&&(_, deadline, stamp)| deadline <= limit && stamp <= stamps);
                        let mut due: Vec<_> =
                            due.into_iter().map(|&(entry, deadline, _)| (entry, deadline)).collect();
                        taken.sort_by_key(|&(entry, _)| entry.index());
                        due.sort_by_key(|&(entry, _)| entry.index());
                        assert_eq!(taken, due, "round {round} step {step}");
                        assert!(
                            left.iter().all(|&&(_, deadline, _)| floor <= deadline),
                            "round {round} step {step}"
                        );
                        model = left.into_iter().copied().collect();
                    }
                }
                assert_eq!(slots.live(), model.len());
            }
        }
    }
}
