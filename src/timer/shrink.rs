//! `Timer::shrink`, and the driver's automatic shrink: giving back the memory of a spike.
//!
//! The entry arena and its task slab grow to the most tasks ever pending and keep that size until
//! a shrink gives their empty pages back (`entry/shrink.rs` has the protocol). A timer with a
//! driver thread shrinks by itself, after an advance, once fewer than a quarter of its slots are
//! pending (and at least [`AUTO_MIN_SLOTS`] are resident), at most once per [`AUTO_INTERVAL`]
//! (backing off while shrinks find nothing to give back): a burst that came and went is given back
//! within about a second of draining, and a timer whose load stays steady never pays for a shrink.
//! A manual timer shrinks when told. A timer with a capacity shrinks after a spike within it too:
//! the capacity keeps its slot pages, and the shrink gives back the blocks of closures over 16
//! bytes, which are not part of it.
//!
//! A shrink holds the driver while it counts the free lists: about 20 ms after a million tasks of
//! 64 bytes, during which nothing fires. So the driver shrinks in a lull, when nothing is due
//! within [`AUTO_LULL`]: the tail of a burst still firing every tick (SPEC W4's last quarter) is
//! not held up, and the shrink comes once it has drained. A load that stays low without a lull
//! (tasks due every few milliseconds) is shrunk anyway once it has stayed low for
//! [`AUTO_INTERVAL`].
//!
//! ## After a shutdown
//!
//! The shared state lives as long as anything holds it: a handle (through its counter stripe),
//! a future (`Sleep`, `Interval`, `Timeout`: through its `TimerRef`), the shut-down timer itself.
//! A shutdown's or a drop's drain empties the arena, so the stop then shrinks it (`shutdown.rs`):
//! a handle or a future kept after its timer's drop keeps a few pages, not the spike's. A drop
//! that leaves nothing behind skips it (the memory goes with the drop), as does a timer that never
//! handed out [`AUTO_MIN_SLOTS`] slots (`drop(Timer::new())` stays a few frees). Its wait for
//! handles looking at the pages is bounded ([`STOP_WAIT`]). Not given back: the room of the
//! timer's capacity, and the wheel's levels and bucket queue, which at the default wheel size
//! weigh nothing measurable once the drain has flushed every bucket (after a million tasks, RSS
//! with a `Sleep` kept is the same as after its drop: docs/benchmarks.md, "Memory after a
//! spike"); a large wheel's chunks of buckets stay as they are (docs/design.md).

use std::time::{Duration, Instant};

use super::{Shared, Timer};
use crate::entry::Shrunk;
use crate::sync::Mutex;

/// Resident slots below which the driver does not shrink (64 pages, 768 KiB).
pub(crate) const AUTO_MIN_SLOTS: usize = 64 * crate::entry::arena::PAGE;

/// The least time between two automatic shrinks.
pub(crate) const AUTO_INTERVAL: Duration = Duration::from_secs(1);

/// How far the next due bucket must be for the driver to shrink without waiting for the load to
/// stay low for [`AUTO_INTERVAL`] (see the module docs).
pub(crate) const AUTO_LULL: Duration = Duration::from_millis(10);

/// How long the driver's shrink waits for handles looking at the pages it gives back; pages it
/// could not free yet are freed by the next shrink.
const AUTO_WAIT: Duration = Duration::from_millis(1);

/// How long the shrink after a shutdown or a drop (`shutdown.rs`) waits for handles looking at
/// the pages it gives back: a pin lasts a handle operation, but a drop must not wait for ever for
/// a closure's drop (a `cancel` on another thread) that may wait for it. Pages that outlast the
/// wait stay retired: the next [`Timer::shrink`] frees them, or the arena's own drop. Under loom,
/// none: the models' time is not loom's, and a zero wait is explored both ways (over at once, or
/// run out).
#[cfg(not(delaywheel_loom))]
const STOP_WAIT: Duration = Duration::from_millis(10);
#[cfg(delaywheel_loom)]
const STOP_WAIT: Duration = Duration::ZERO;

/// Slots a timer must have handed out for a shutdown or a drop to shrink it, as for the driver's
/// shrink ([`AUTO_MIN_SLOTS`]): a small timer's drop pays for no shrink. Under loom, one: a
/// model's arena has a few slots of one page each.
#[cfg(not(delaywheel_loom))]
const STOP_MIN_SLOTS: u64 = AUTO_MIN_SLOTS as u64;
#[cfg(delaywheel_loom)]
const STOP_MIN_SLOTS: u64 = 1;

/// The longest back-off between automatic shrinks that gave nothing back.
const AUTO_MAX_INTERVAL: Duration = Duration::from_secs(64);

/// When the driver may shrink next, and how long it waits after that if this one gives nothing
/// back (doubling up to [`AUTO_MAX_INTERVAL`]: free slots scattered over pages that all hold a
/// pending task cannot be given back, and looking again every second would cost for nothing).
#[derive(Default)]
pub(crate) struct AutoShrink {
    next: Mutex<Option<(Instant, Duration)>>,
    /// Since when fewer than a quarter of the slots have been pending, without a lull.
    low_since: Mutex<Option<Instant>>,
}

impl Timer {
    /// Gives back the memory a spike of pending tasks left behind: the pages of the timer's task
    /// slots (48 bytes a task) and of its blocks for larger closures whose slots or blocks are all
    /// free, and the free lists' memory beyond what they still hold, straight to the system (on
    /// Linux: `madvise`, `mremap`); the allocator is then asked to return what else it freed
    /// (glibc's `malloc_trim`). After a million pending tasks were cancelled or fired, this brings
    /// the process's resident memory back to about what it was before them (docs/benchmarks.md).
    ///
    /// A timer with a driver thread does this by itself once fewer than a quarter of its slots are
    /// still pending, in the first lull of its firing (nothing due for 10 ms), or after a second
    /// of such a low load without one; call it on a manual timer, or when the memory must be back
    /// at once (after a burst you know is over). It is cheap to call when there is nothing to give
    /// back, but not free: it looks at every free slot and block, holding the free lists (a
    /// concurrent `schedule` waits), and makes one `membarrier` system call. Scheduling, cancelling
    /// and firing are not slowed by it otherwise; a later spike allocates the pages again.
    ///
    /// The room a timer was built with ([`TimerBuilder::capacity`](crate::TimerBuilder::capacity))
    /// stays: only the pages beyond it go back.
    ///
    /// Handles of tasks whose slots were given back stay safe: they report the task as not pending
    /// (`cancel` and `reset` return `false`), as for any task that ended. It waits for handle
    /// operations running on other threads at the time to return (a `cancel` dropping its task's
    /// closure, at most). Called where such a closure's drop may be waiting for this thread, it
    /// does not wait: in a task, a waker, on a driver or executor thread of any timer, the pages
    /// that operations are still looking at are given back by a later shrink (the driver's own, or
    /// the next call); from the drop of a closure a `cancel` won, it gives nothing back.
    ///
    /// ```
    /// use delaywheel::{ManualClock, Timer};
    /// use std::time::Duration;
    ///
    /// let timer = Timer::builder().clock(ManualClock::new()).manual().build();
    /// let burst: Vec<_> = (0..100_000).map(|_| timer.schedule(Duration::from_secs(30), || {})).collect();
    /// burst.iter().for_each(|h| assert!(h.cancel()));
    /// timer.shrink(); // the burst's 4.8 MB of slots go back
    /// assert!(!burst[0].cancel() && !burst[0].is_pending());
    /// ```
    pub fn shrink(&self) {
        let shared = self.shared();
        // A closure dropped by a `cancel` on another thread (pinned: the grace period waits for
        // it) may wait for this thread: for the advance it runs a task of, for the executor
        // thread a shutdown joins. Seeded fault `task_shrink_waits` (docs/loom.md): it waits
        // for that closure all the same.
        let limit = match shared.may_wait_for_advance() || fault!("task_shrink_waits") {
            true => None,
            false => Some(Duration::ZERO),
        };
        let _ = shared.give_back(limit);
    }

}
