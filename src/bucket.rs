//! `TimerTaskList`: a bucket, one slot of one wheel level.
//!
//! A bucket holds the entries whose deadlines fall in its slot's current round, in a list with O(1)
//! unlink (each entry knows its index, see `entry.rs`; removal leaves a hole, see `Slots`). It has its
//! own lock, so
//! schedules into different buckets never contend, and an atomic **expiration**: the tick at which
//! the bucket must be flushed.
//!
//! ## The delay-queue trick
//!
//! [`set_expiration`](TimerTaskList::set_expiration) reports whether it changed the expiration; only
//! then is the bucket pushed into the shared `DelayQueue`. An empty bucket has no expiration, so the
//! first add of a round sets it and queues the bucket, and the rest of that round's adds do nothing
//! more: a bucket is queued once per wheel cycle, and only non-empty buckets are ever queued.
//!
//! Unlike Kafka, the setter only ever *lowers* the expiration. Schedulers do not take a timer-wide
//! lock (Kafka takes a read lock), so a scheduler working from a slightly stale view of time can add
//! an entry of an earlier round to a bucket that already holds a later one; lowering re-queues the
//! bucket at the earlier time, and the flush then re-adds every entry through the wheel, which puts
//! each where it belongs. Raising it could strand the earlier entry for a whole rotation.
//!
//! ## Locking
//!
//! The bucket lock is taken before any entry lock (see `entry.rs`). No callback ever runs under it.

use std::collections::VecDeque;
use std::fmt;

use crate::entry::{EntryRef, Status};
use crate::sync::{Arc, AtomicBool, AtomicU64, Mutex, Ordering};

/// "No expiration": the bucket is empty (or just flushed) and not queued.
pub(crate) const NO_EXPIRATION: u64 = u64::MAX;

/// Below this many slots a bucket's list is never compacted or shrunk.
const MIN_COMPACT: usize = 32;

/// A bucket of timer entries sharing one wheel slot (Kafka's `TimerTaskList`).
pub(crate) struct TimerTaskList {
    /// `level << 32 | slot`: a stable identity, used to break ties in the delay queue.
    id: u64,
    expiration: AtomicU64,
    slots: Mutex<Slots>,
}

/// The entries of a bucket, as a deque of slots with stable indices.
///
/// A removed entry leaves a hole (`None`) so that no other entry moves and a cancel touches only its
/// own entry. Holes at either end are popped at once: timeouts are mostly cancelled in about the
/// order they were armed, so the common case never moves an entry. Holes in the middle are squeezed
/// out once they are three quarters of the list, which keeps it within four times its live entries
/// (flat memory) at amortised O(1). An entry's index is absolute: slot `i` is `entries[i - base]`.
#[derive(Default)]
struct Slots {
    entries: VecDeque<Option<EntryRef>>,
    /// The absolute index of `entries[0]`.
    base: usize,
    live: usize,
}

/// What became of an entry handed to [`TimerTaskList::add`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Added {
    /// Inserted; `queue` says whether the caller must push the bucket into the delay queue.
    Inserted { queue: bool },
    /// Not inserted: the entry was no longer pending (cancelled while in transit).
    NotPending,
    /// Not inserted: the timer is shutting down (only checked when scheduling).
    ShutDown,
}

impl TimerTaskList {
    pub(crate) fn new(level: usize, slot: usize) -> Self {
        TimerTaskList {
            id: ((level as u64) << 32) | slot as u64,
            expiration: AtomicU64::new(NO_EXPIRATION),
            slots: Mutex::new(Slots::default()),
        }
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The tick at which this bucket is due, or [`NO_EXPIRATION`].
    pub(crate) fn expiration(&self) -> u64 {
        self.expiration.load(Ordering::Acquire)
    }

    /// Lowers the expiration to `tick` (see the module docs); `true` iff it changed, in which case
    /// the caller must queue the bucket at `tick`. Called with the bucket lock held.
    fn set_expiration(&self, tick: u64) -> bool {
        let current = self.expiration.load(Ordering::Acquire);
        // Seeded bug for the loom suite only (docs/loom.md): only an empty bucket's expiration is set,
        // so an earlier round added by a scheduler with a stale view of time waits for the later one.
        #[cfg(all(delaywheel_loom, delaywheel_loom_fault = "expiration_never_lowered"))]
        let tick = if current == NO_EXPIRATION { tick } else { current };
        if tick < current {
            self.expiration.store(tick, Ordering::Release);
            true
        } else {
            false
        }
    }

    /// Inserts a pending entry whose round in this slot starts at tick `expiration`.
    ///
    /// With `shut_down`, the flag is read under the bucket lock and the entry is refused if it is
    /// set: the shutdown drain sets the flag before it locks every bucket, so an entry is either
    /// refused here or found by the drain (see `timer.rs`).
    pub(crate) fn add(
        this: &Arc<Self>,
        entry: EntryRef,
        expiration: u64,
        shut_down: Option<&AtomicBool>,
    ) -> Added {
        // Seeded bug for the loom suite only (docs/loom.md): the flag read before the lock, so the
        // drain can flush this bucket between the read and the insert.
        #[cfg(all(delaywheel_loom, delaywheel_loom_fault = "shutdown_flag_read_before_lock"))]
        let shut_down = match shut_down.is_some_and(|flag| flag.load(Ordering::Acquire)) {
            true => return Added::ShutDown,
            false => None::<&AtomicBool>,
        };
        let mut slots = this.slots.lock();
        if shut_down.is_some_and(|flag| flag.load(Ordering::Acquire)) {
            return Added::ShutDown;
        }
        {
            let mut state = entry.header().lock();
            if state.status != Status::Pending {
                return Added::NotPending;
            }
            debug_assert!(state.location.is_none(), "entry added to two buckets: {entry:?}");
            state.location = Some((Arc::clone(this), slots.base + slots.entries.len()));
        }
        slots.entries.push_back(Some(entry));
        slots.live += 1;
        Added::Inserted { queue: this.set_expiration(expiration) }
    }

    /// Unlinks `entry` if this bucket holds it. Returns `false` only when the entry's location names
    /// another bucket (it moved meanwhile): the caller looks again.
    pub(crate) fn remove(this: &Arc<Self>, entry: &EntryRef) -> bool {
        let mut slots = this.slots.lock();
        let index = {
            let mut state = entry.header().lock();
            match &state.location {
                None => return true,
                Some((bucket, _)) if !Arc::ptr_eq(bucket, this) => return false,
                Some((_, index)) => {
                    let index = *index;
                    state.location = None;
                    index
                }
            }
        };
        let removed = slots.take(index);
        debug_assert!(removed.as_ref().is_some_and(|e| same_entry(e, entry)), "location out of date");
        drop(slots);
        drop(removed);
        true
    }

    /// Empties the bucket and resets its expiration; the caller re-adds every returned entry through
    /// the wheel (cascading it to a finer level, or firing it if due).
    pub(crate) fn flush(&self) -> Vec<EntryRef> {
        let mut slots = self.slots.lock();
        let taken = std::mem::take(&mut *slots);
        let mut entries = Vec::with_capacity(taken.live);
        for entry in taken.entries.into_iter().flatten() {
            entry.header().lock().location = None;
            entries.push(entry);
        }
        // Seeded bug for the loom suite only (docs/loom.md): the reset leaves the critical section,
        // so an add in between sees the old expiration, does not queue the bucket, and is stranded.
        #[cfg(all(delaywheel_loom, delaywheel_loom_fault = "flush_resets_after_unlock"))]
        drop(slots);
        self.expiration.store(NO_EXPIRATION, Ordering::Release);
        entries
    }
}

impl Slots {
    /// Takes the entry at absolute `index`, leaving a hole; trims and compacts (see [`Slots`]).
    fn take(&mut self, index: usize) -> Option<EntryRef> {
        let removed = self.entries[index - self.base].take();
        self.live -= 1;
        while matches!(self.entries.front(), Some(None)) {
            self.entries.pop_front();
            self.base += 1;
        }
        while matches!(self.entries.back(), Some(None)) {
            self.entries.pop_back();
        }
        let len = self.entries.len();
        if len >= MIN_COMPACT && self.live * 4 <= len {
            self.compact();
        } else if self.entries.capacity() > MIN_COMPACT && len * 4 < self.entries.capacity() {
            self.entries.shrink_to((len * 2).max(MIN_COMPACT));
        }
        removed
    }

    /// Squeezes out every hole, renumbering the entries that move.
    fn compact(&mut self) {
        let len = self.entries.len();
        let mut kept = 0;
        for read in 0..len {
            if let Some(entry) = self.entries[read].take() {
                if read != kept {
                    if let Some((_, index)) = &mut entry.header().lock().location {
                        *index = self.base + kept;
                    }
                }
                self.entries[kept] = Some(entry);
                kept += 1;
            }
        }
        self.entries.truncate(kept);
        self.entries.shrink_to((kept * 2).max(MIN_COMPACT));
    }
}

/// Whether two references name the same entry (data pointers only: vtables may differ per crate).
pub(crate) fn same_entry(a: &EntryRef, b: &EntryRef) -> bool {
    Arc::as_ptr(a) as *const () == Arc::as_ptr(b) as *const ()
}

impl fmt::Debug for TimerTaskList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerTaskList")
            .field("level", &(self.id >> 32))
            .field("slot", &(self.id & u64::from(u32::MAX)))
            .field("expiration", &self.expiration())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::Counters;
    use crate::entry::{new_entry, remove_from_bucket};

    fn entries(n: usize) -> Vec<EntryRef> {
        let counters = Arc::new(Counters::default());
        (0..n)
            .map(|_| {
                assert!(counters.try_scheduling(usize::MAX));
                new_entry(5, || {}, Arc::clone(&counters))
            })
            .collect()
    }

    fn location(entry: &EntryRef) -> Option<usize> {
        entry.header().lock().location.as_ref().map(|(_, index)| *index)
    }

    #[test]
    fn expiration_is_set_once_per_round_and_only_lowered() {
        let bucket = Arc::new(TimerTaskList::new(0, 0));
        let es = entries(4);
        assert_eq!(
            TimerTaskList::add(&bucket, Arc::clone(&es[0]), 10, None),
            Added::Inserted { queue: true }
        );
        assert_eq!(
            TimerTaskList::add(&bucket, Arc::clone(&es[1]), 10, None),
            Added::Inserted { queue: false }
        );
        assert_eq!(
            TimerTaskList::add(&bucket, Arc::clone(&es[2]), 14, None),
            Added::Inserted { queue: false }
        );
        assert_eq!(bucket.expiration(), 10, "never raised");
        assert_eq!(TimerTaskList::add(&bucket, Arc::clone(&es[3]), 6, None), Added::Inserted { queue: true });
        assert_eq!(bucket.expiration(), 6, "lowered, and re-queued");
        assert_eq!(bucket.flush().len(), 4);
        assert_eq!(bucket.expiration(), NO_EXPIRATION);
        assert!(es.iter().all(|e| location(e).is_none()), "flushed entries are in transit");
        assert_eq!(
            TimerTaskList::add(&bucket, Arc::clone(&es[0]), 30, None),
            Added::Inserted { queue: true }
        );
    }

    #[test]
    fn removal_in_any_order_keeps_every_location_exact() {
        let bucket = Arc::new(TimerTaskList::new(0, 0));
        let es = entries(1_000);
        for e in &es {
            assert!(matches!(TimerTaskList::add(&bucket, Arc::clone(e), 5, None), Added::Inserted { .. }));
        }
        // FIFO-ish, then LIFO-ish, then scattered removals, checking locations after each.
        let mut order: Vec<usize> = (0..300).collect();
        order.extend((700..1_000).rev());
        order.extend((300..700).filter(|i| i % 3 != 0));
        for (step, &i) in order.iter().enumerate() {
            remove_from_bucket(&es[i]);
            assert!(location(&es[i]).is_none());
            if step % 97 == 0 {
                let slots = bucket.slots.lock();
                for e in &es {
                    if let Some(index) = location(e) {
                        let held = slots.entries[index - slots.base].as_ref().expect("hole at a location");
                        assert!(same_entry(held, e), "location names another entry");
                    }
                }
                assert_eq!(slots.live, es.iter().filter(|e| location(e).is_some()).count());
            }
        }
        let left: Vec<usize> = (300..700).filter(|i| i % 3 == 0).collect();
        {
            let slots = bucket.slots.lock();
            assert_eq!(slots.live, left.len());
            assert!(slots.entries.len() <= 4 * left.len() + MIN_COMPACT, "holes are bounded");
        }
        assert_eq!(bucket.flush().len(), left.len());
    }

    #[test]
    fn a_shut_down_flag_refuses_adds_and_a_cancelled_entry_is_not_inserted() {
        let bucket = Arc::new(TimerTaskList::new(0, 0));
        let es = entries(2);
        let flag = AtomicBool::new(true);
        assert_eq!(TimerTaskList::add(&bucket, Arc::clone(&es[0]), 5, Some(&flag)), Added::ShutDown);
        assert!(es[1].header().claim(Status::Cancelled));
        assert_eq!(TimerTaskList::add(&bucket, Arc::clone(&es[1]), 5, None), Added::NotPending);
        assert!(bucket.flush().is_empty());
    }
}
