//! `EntryArena::shrink`: gives back the pages of slots (and of task-slab blocks) that a spike left
//! empty.
//!
//! ## Protocol
//!
//! 1. **Find empty pages.** Under every free list's lock at once (`FreeLists::reclaim`), count the
//!    free indices of each page; a page with all [`PAGE`] of its indices listed has no occupant and
//!    no holder (an index is listed only after its holder released and returned it). Its indices
//!    are taken off the lists there, so no allocation can hand one out any more. The pages
//!    [`reserve`](EntryArena::reserve) created (the timer's capacity) are not counted: they stay.
//! 2. **Retire them** (`Pages::retire`): their pointers leave the directory. A ticket that looks
//!    from now on finds the vacant stand-in slot, generation 0: not pending. The page numbers go to
//!    `vacated`, where new pages are created first (a new page's slots start at generation 0, below
//!    every stamp, so an old ticket does not match a new occupant either).
//! 3. **Grace period** (`readers.rs`): wait until every thread pinned at its start (a handle that
//!    may have loaded a pointer before the retire) has unpinned, then **free** the pages. A call
//!    with a time limit that runs out keeps them retired, and the next shrink frees them first (its
//!    own grace period began after their retire too); while they wait, it retires no more, so pages
//!    waiting for a grace period that does not end (a thread pinned for long, no heavy barrier) are
//!    at most one spike's. A bounded shrink (the driver's) that finds another shrink in its grace
//!    period does nothing. A thread that is pinned itself (a shrink from the drop of a closure a
//!    cancel won) does not shrink at all: it would wait for its own pin, or for a shrink in its
//!    grace period, which may be waiting for that very pin (loom model
//!    `shrink::shrink_in_a_cancelled_closures_drop_racing_a_shrink`).
//! 4. The task slab frees its empty pages of blocks (`task_slab.rs`: only holders touch a block,
//!    so no grace period); the free lists' pool was cut back to its items when their pages were
//!    counted (`FreeLists::reclaim`: its pages go to the kernel), and the allocator is asked to
//!    give free memory back to the kernel (`os.rs`).
//!
//! No hot path changes: an allocation or a free touches no page count (the counting is done here,
//! from the lists), and a handle's operation pays its pin, two stores to its own thread's record.
//! What a shrink costs is here: O(free slots + free blocks) under the free lists' locks (a
//! schedule or a free that needs its list waits), one `membarrier` system call, and the frees.

use std::time::Duration;

use crate::entry::arena::{EntryArena, PAGE, PAGE_BITS};
use crate::entry::pages::Retired;
use crate::sync::{Mutex, Ordering};

/// The shrink's state: pages retired whose grace period has not been seen to end (step 3).
pub(crate) struct Shrinking {
    retired: Mutex<Vec<Retired>>,
}

impl Shrinking {
    pub(crate) fn new() -> Shrinking {
        Shrinking { retired: Mutex::new(Vec::new()) }
    }
}

/// What a shrink gave back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Shrunk {
    /// Pages of slots freed (by this call, or retired by an earlier one).
    pub(crate) pages: usize,
    /// Pages of slots retired but not yet freed (their grace period outlasted the wait).
    pub(crate) waiting: usize,
    /// Pages of task-slab blocks freed.
    pub(crate) block_pages: usize,
}

impl EntryArena {
    /// Gives back every page whose slots are all free, and the task slab's empty pages (see the
    /// module docs); waits up to `limit` (`None`: as long as it takes) for handles that may be
    /// looking at them.
    pub(crate) fn shrink(&self, limit: Option<Duration>) -> Shrunk {
        // A thread pinned itself (a shrink from the drop of a closure a cancel won) does not
        // shrink: it would wait for its own pin, which never ends, or for the lock below, which a
        // shrink in its grace period holds while it waits for that very pin. The next shrink
        // does the work. Seeded fault `pinned_shrink_proceeds` (docs/loom.md): it goes on.
        if self.readers.pinned_here() && !fault!("pinned_shrink_proceeds") {
            return Shrunk::default();
        }
        // A bounded shrink (the driver's) does not wait for another one in its grace period.
        let retired = match limit {
            Some(_) => self.shrinking.retired.try_lock(),
            None => Some(self.shrinking.retired.lock()),
        };
        let Some(mut retired) = retired else { return Shrunk::default() };
        // Pages retired earlier are freed first; while their grace period lasts (a thread pinned
        // for long, or no heavy barrier), no more are retired: new pages are created in retired
        // places, so retiring more would let every spike add pages while the old ones wait.
        let mut shrunk = Shrunk { pages: self.free_after_grace(&mut retired, limit), ..Shrunk::default() };
        if !retired.is_empty() {
            shrunk.waiting = retired.len();
            return shrunk;
        }
        // The lists are what the reclaim sees: this thread's cached indices go back to them first,
        // other threads' at their next take (`slot_cache.rs`).
        self.free.before_shrink();
        // Pages created after this reading are not counted: their indices are left on the lists,
        // as are those of the pages the timer's capacity keeps.
        let pages = (self.fresh.load(Ordering::Relaxed) as usize).div_ceil(PAGE);
        let kept = self.kept_pages;
        let empty = self
            .free
            .lists
            .reclaim(PAGE, pages, |id| Some(id.index() >> PAGE_BITS).filter(|&p| p < pages && p >= kept));
        for page in empty {
            // A page's place is offered to new pages only once the page is out of the directory:
            // a page created there before (`fresh_page`) would be the old one, still in place,
            // and the retire would then take out a page with a new entry in it. Seeded fault
            // `vacated_before_retire` (docs/loom.md) offers it first.
            if fault!("vacated_before_retire") {
                self.vacated.lock().push(page);
            }
            if let Some(page_memory) = self.pages.retire(page) {
                retired.push(page_memory);
            }
            if !fault!("vacated_before_retire") {
                self.vacated.lock().push(page);
            }
        }
        shrunk.block_pages = self.tasks().shrink();
        shrunk.pages += self.free_after_grace(&mut retired, limit);
        shrunk.waiting = retired.len();
        drop(retired);
        #[cfg(not(delaywheel_loom))]
        if shrunk.pages + shrunk.block_pages > 0 {
            crate::entry::os::trim_heap();
        }
        shrunk
    }

    /// Frees the pages of `retired` once a grace period begun now is over, waiting up to `limit`
    /// (step 3): how many it freed; none if the wait ran out (they stay retired).
    fn free_after_grace(&self, retired: &mut Vec<Retired>, limit: Option<Duration>) -> usize {
        if retired.is_empty() {
            return 0;
        }
        let mut grace = self.readers.grace();
        if !self.readers.wait(&mut grace, limit) {
            return 0;
        }
        let freed = retired.len();
        self.pages.free(std::mem::take(retired));
        freed
    }

    /// Slots in pages that exist (pending, free or held): what a shrink could give back down to.
    pub(crate) fn resident_slots(&self) -> usize {
        let handed_out = self.fresh.load(Ordering::Relaxed) as usize;
        handed_out.saturating_sub(self.vacated.lock().len() * PAGE)
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
mod tests {
    use super::*;
    use crate::entry::{self, Status};

    #[test]
    fn empty_pages_are_given_back_and_stale_tickets_find_nothing_pending() {
        let arena = EntryArena::new();
        let tickets: Vec<_> = (0..10 * PAGE).map(|_| entry::new_entry(&arena, 5, || {}).unwrap()).collect();
        // (The free list takes a page ahead once it is down to `MIN_AGE`.)
        assert!((10 * PAGE..=11 * PAGE).contains(&arena.resident_slots()));
        for ticket in &tickets[PAGE..] {
            let _ = entry::abandon(&arena, (ticket.id, entry::Return::Now));
        }
        let shrunk = arena.shrink(None);
        assert!(shrunk.pages >= 8, "{shrunk:?}");
        assert_eq!(shrunk.waiting, 0);
        assert!(arena.resident_slots() <= 2 * PAGE, "{} slots left", arena.resident_slots());
        for ticket in &tickets[PAGE..] {
            let _pin = arena.pin();
            let status = entry::status(&arena, *ticket);
            assert!(status.is_none() || status == Some(Status::Abandoned), "{status:?}");
            assert!(entry::deadline(&arena, *ticket).is_none());
        }
        // The live page is untouched; new entries reuse the pages given back.
        for ticket in &tickets[..PAGE] {
            assert_eq!(entry::status(&arena, *ticket), Some(Status::Pending));
        }
        let more: Vec<_> = (0..4 * PAGE).map(|_| entry::new_entry(&arena, 9, || {}).unwrap()).collect();
        assert!(arena.high_water() <= 10 * PAGE as u64 + PAGE as u64, "{}", arena.high_water());
        for ticket in tickets[..PAGE].iter().chain(&more) {
            let _ = entry::abandon(&arena, (ticket.id, entry::Return::Now));
        }
        for ticket in &tickets[PAGE..] {
            let _pin = arena.pin();
            assert_ne!(
                entry::status(&arena, *ticket),
                Some(Status::Pending),
                "an old ticket names a new entry"
            );
        }
    }

    /// One thread keeps creating pages (holding every entry) while another shrinks: a shrink
    /// counts only the pages that existed when it read their number, and never indexes past them.
    #[test]
    fn a_shrink_racing_the_creation_of_pages_counts_only_those_it_read() {
        // A new arena each round: its pages are all created during the race.
        for _ in 0..30 {
            let arena = EntryArena::new();
            let done = std::sync::atomic::AtomicBool::new(false);
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    while !done.load(Ordering::Relaxed) {
                        let _ = arena.shrink(Some(Duration::ZERO));
                    }
                });
                let held: Vec<_> =
                    (0..100 * PAGE).map(|_| entry::new_entry(&arena, 5, || {}).unwrap()).collect();
                done.store(true, Ordering::Relaxed);
                for ticket in held {
                    let _ = entry::abandon(&arena, (ticket.id, entry::Return::Now));
                }
            });
            let _ = arena.shrink(None);
            assert!(arena.resident_slots() <= 2 * PAGE, "{} slots left", arena.resident_slots());
        }
    }
}
