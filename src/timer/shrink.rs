//! `Timer::shrink`, and the driver's automatic shrink: giving back the memory of a spike.
//!
//! The shards' slabs and the task slab grow to the most tasks ever pending and keep that size
//! until a shrink gives their vacant room back (`stop.rs`, "Shrink"). A shrink takes each
//! shard's lock in turn and cuts off that shard's trailing vacant slots, those after its last
//! occupied one, with the slab's spare capacity (`Core::shrink`, `shard/slab.rs`): a vacant slot
//! below an occupied one stays, since a handle names its slot. Units of slots a shard took from
//! the core's reserve go back to the reserve, the rest to the system. The task slab then frees its
//! pages whose blocks of closures are all free, and the advance's buffers their room, unless an
//! advance holds them.
//!
//! A timer with a driver thread shrinks by itself, after an advance, once fewer than a quarter of
//! the slots its shards wrote hold a pending task (and they wrote at least [`AUTO_MIN_SLOTS`]), at
//! most once per [`AUTO_INTERVAL`]: a burst that came and went is given back within about a second
//! of draining, and a timer whose load stays steady never pays for a shrink. A manual timer
//! shrinks when told. A timer with a capacity shrinks after a spike within it too: the capacity
//! keeps its slots, and the shrink gives back the blocks of closures over 16 bytes, which are not
//! part of it.
//!
//! The driver shrinks in a lull, when nothing is due within [`AUTO_LULL`]: the tail of a burst
//! still firing every tick (SPEC W4's last quarter) is not held up, and the shrink comes once it
//! has drained. A load that stays low without a lull (tasks due every few milliseconds) is shrunk
//! anyway once it has stayed low for [`AUTO_INTERVAL`].
//!
//! ## After a shutdown
//!
//! The shared state lives as long as anything holds it: a future (`Sleep`, `Interval`, `Timeout`:
//! through its `TimerRef`), a detached driver, the shut-down timer itself. A shutdown's or a drop's
//! drain empties the shards, so the stop then shrinks them (`stop.rs`): a future kept after
//! its timer's drop keeps a few pages, not the spike's. A drop that leaves nothing behind skips it
//! (the memory goes with the drop), as does a timer whose shards never wrote [`AUTO_MIN_SLOTS`]
//! slots (`drop(Timer::new())` stays a few frees). Not given back: the room of the timer's
//! capacity, and the wheels' buckets, which at the default wheel size weigh little once the drain
//! has flushed every bucket; a large wheel's chunks of buckets stay as they are.

use std::time::Duration;

use super::Timer;

/// Slots the shards must have written for the driver to shrink (64 units of 256 slots, 768 KiB).
pub(crate) const AUTO_MIN_SLOTS: usize = 64 * 256;

/// The least time between two automatic shrinks.
pub(crate) const AUTO_INTERVAL: Duration = Duration::from_secs(1);

/// How far the next due bucket must be for the driver to shrink without waiting for the load to
/// stay low for [`AUTO_INTERVAL`] (see the module docs).
pub(crate) const AUTO_LULL: Duration = Duration::from_millis(10);

impl Timer {
    /// Gives back the memory a spike of pending tasks left behind: each shard's vacant slots after
    /// its last occupied one (48 bytes a task), the pages of its blocks for larger closures whose
    /// blocks are all free, and the advance's buffers beyond what a tick needs, straight to the
    /// system (on Linux: `madvise`, `mremap`); the allocator is then asked to return what else it
    /// freed (glibc's `malloc_trim`). After a million pending tasks were cancelled or fired, this
    /// brings the process's resident memory back to about what it was before them
    /// (docs/benchmarks.md).
    ///
    /// A timer with a driver thread does this by itself once fewer than a quarter of its slots are
    /// still pending, in the first lull of its firing (nothing due for 10 ms), or after a second
    /// of such a low load without one; call it on a manual timer, or when the memory must be back
    /// at once (after a burst you know is over). It takes each shard's lock in turn while it gives
    /// that shard's slots back (a schedule into that shard waits); a later spike allocates the
    /// memory again.
    ///
    /// The room a timer was built with ([`TimerBuilder::capacity`](crate::TimerBuilder::capacity))
    /// stays: only what the shards grew beyond it goes back.
    ///
    /// Handles of tasks whose slots were given back stay safe: they report the task as not pending
    /// (`cancel` and `reset` return `false`), as for any task that ended.
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
        let _ = self.shared().give_back();
    }
}
