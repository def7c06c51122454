//! `TimerTaskList`: a bucket, one slot of one wheel level.
//!
//! A bucket holds the entries whose deadlines fall in its slot's current round, in a dense list with
//! O(1) unlink (swap-remove; each entry knows its index, see `entry.rs`). It has its own lock, so
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

use std::fmt;

use crate::entry::{Status, TimerTaskEntry};
use crate::sync::{Arc, AtomicU64, Mutex, Ordering};

/// "No expiration": the bucket is empty (or just flushed) and not queued.
pub(crate) const NO_EXPIRATION: u64 = u64::MAX;

/// A bucket of timer entries sharing one wheel slot (Kafka's `TimerTaskList`).
pub(crate) struct TimerTaskList {
    /// `level << 32 | slot`: a stable identity, used to break ties in the delay queue.
    id: u64,
    expiration: AtomicU64,
    entries: Mutex<Vec<Arc<TimerTaskEntry>>>,
}

/// What became of an entry handed to [`TimerTaskList::add`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Added {
    /// Inserted; `queue` says whether the caller must push the bucket into the delay queue.
    Inserted { queue: bool },
    /// Not inserted: the entry was no longer pending (cancelled while in transit).
    NotPending,
}

impl TimerTaskList {
    pub(crate) fn new(level: usize, slot: usize) -> Self {
        TimerTaskList {
            id: ((level as u64) << 32) | slot as u64,
            expiration: AtomicU64::new(NO_EXPIRATION),
            entries: Mutex::new(Vec::new()),
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
        if tick < current {
            self.expiration.store(tick, Ordering::Release);
            true
        } else {
            false
        }
    }

    /// Inserts a pending entry whose round in this slot starts at tick `expiration`.
    pub(crate) fn add(self: &Arc<Self>, entry: Arc<TimerTaskEntry>, expiration: u64) -> Added {
        let mut entries = self.entries.lock();
        {
            let mut state = entry.lock();
            if state.status != Status::Pending {
                return Added::NotPending;
            }
            debug_assert!(state.location.is_none(), "entry added to two buckets: {entry:?}");
            state.location = Some((Arc::clone(self), entries.len()));
        }
        entries.push(entry);
        Added::Inserted { queue: self.set_expiration(expiration) }
    }

    /// Unlinks `entry` if this bucket holds it. Returns `false` only when the entry's location names
    /// another bucket (it moved meanwhile): the caller looks again.
    pub(crate) fn remove(self: &Arc<Self>, entry: &Arc<TimerTaskEntry>) -> bool {
        let mut entries = self.entries.lock();
        let index = {
            let mut state = entry.lock();
            match &state.location {
                None => return true,
                Some((bucket, _)) if !Arc::ptr_eq(bucket, self) => return false,
                Some((_, index)) => {
                    let index = *index;
                    state.location = None;
                    index
                }
            }
        };
        debug_assert!(Arc::ptr_eq(&entries[index], entry), "location index out of date");
        let removed = entries.swap_remove(index);
        if let Some(moved) = entries.get(index) {
            if let Some((_, moved_index)) = &mut moved.lock().location {
                *moved_index = index;
            }
        }
        // Keep memory flat when most entries are cancelled: give back capacity that is mostly unused.
        if entries.capacity() > 64 && entries.len() < entries.capacity() / 4 {
            let target = entries.capacity() / 2;
            entries.shrink_to(target);
        }
        drop(entries);
        drop(removed);
        true
    }

    /// Empties the bucket and resets its expiration; the caller re-adds every returned entry through
    /// the wheel (cascading it to a finer level, or firing it if due).
    pub(crate) fn flush(&self) -> Vec<Arc<TimerTaskEntry>> {
        let mut entries = self.entries.lock();
        for entry in entries.iter() {
            entry.lock().location = None;
        }
        self.expiration.store(NO_EXPIRATION, Ordering::Release);
        std::mem::take(&mut *entries)
    }
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
