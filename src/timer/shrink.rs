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
//! most once per [`AUTO_INTERVAL`] after the last one ended: a burst that came and went is given
//! back within about a second of draining, and a timer whose load stays steady never pays for a
//! shrink. A manual timer shrinks when told. A timer with a capacity shrinks after a spike within
//! it too: the capacity keeps its slots, and the shrink gives back the blocks of closures over 16
//! bytes, which are not part of it.
//!
//! The driver starts a shrink in a lull, when nothing is due within [`AUTO_LULL`]: the tail of a
//! burst still firing every tick (SPEC W4's last quarter) is not held up, and the shrink comes
//! once it has drained. A load that stays low without a lull (tasks due every few milliseconds)
//! is shrunk anyway once it has stayed low for [`AUTO_INTERVAL`].
//!
//! ## In steps
//!
//! Where a one-pass shrink of a drained spike of a million slots (W4: 825,000 slots written in one
//! shard, 64 MiB mapped) spends its time, timed part by part on a 2-core host: 11 ms reading
//! every slot from the top for the last occupied one, 7 ms dropping the cut slots (a read of
//! each: they are vacant, so there is nothing to drop), 3 ms in the `munmap` of 64 MiB, all under
//! the shard's lock; then 0.2 ms for the advance's buffers, 0 to 2 ms in `malloc_trim`, and, with
//! a million closures of 64 bytes, 44 ms of CPU (64 ms on a loaded host) freeing the task slab's
//! 15,625 pages at once (finding the page of each of the million free blocks, under every lock of
//! the free lists). With a reserve, the units going back to it add an `mremap` and a
//! `MADV_POPULATE_WRITE` of theirs.
//!
//! So a shrink goes in steps ([`Shared::shrink_step`]): each shard in turn, each step under its
//! lock walking at most `STEP_SLOTS` slots down from the top (16,384: each vacant one taken off
//! the free list through its `prev`, an empty slab's all at once) and cutting at most `STEP_BYTES`
//! (4 MiB) of its mapping, without dropping the vacant slots it cuts; the `munmap`, and the
//! populate of the units going back to the reserve, after the unlock (`shard/core/room.rs`). A
//! step takes 0.1 to 0.5 ms. Then each class of the task slab in steps of its own
//! (`entry/page_reclaim.rs`): each takes at most `STEP_BLOCKS` (8,192) free blocks off the free
//! lists, one list's lock at a time, and gives back at most `STEP_PAGES` (128) pages whose blocks
//! it then holds all of, or puts at most 8,192 held blocks back; a schedule or a free between two
//! steps finds the lists as ever. After a million closures of 64 bytes that is 245 steps, the
//! longest 0.29 to 0.53 ms of CPU (median 0.31 ms in nine runs of `cargo test --release --lib --
//! each_step_is_bounded --nocapture`, which prints it; docs/benchmarks.md). Then one step for the advance's buffers, and one for `malloc_trim`. The driver takes one step per look: after each advance, or after a
//! wait of [`STEP_WAIT`] ([`Shared::shrink_wait`]), and never while something is due within
//! [`STEP_ROOM`], the time a step may take: a task due fires on its tick, and the shrink goes on
//! after it. A load with a task due every tick leaves no such room (after an advance the next tick
//! is due within a tick): once the steps have been held off for [`AUTO_INTERVAL`], they go on
//! whatever is due, one a look, each delaying the next advance by at most a step's time, until the
//! shrink is done. [`Timer::shrink`] takes every step at once.
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

use std::time::{Duration, Instant};

use super::{Shared, Timer};
use crate::entry::task_slab::CLASSES;

/// Slots the shards must have written for the driver to shrink (64 units of 256 slots, 768 KiB).
pub(crate) const AUTO_MIN_SLOTS: usize = 64 * 256;

/// The least time between the end of an automatic shrink and the start of the next.
pub(crate) const AUTO_INTERVAL: Duration = Duration::from_secs(1);

/// How far the next due bucket must be for the driver to start a shrink without waiting for the
/// load to stay low for [`AUTO_INTERVAL`] (see the module docs).
pub(crate) const AUTO_LULL: Duration = Duration::from_millis(10);

/// How far the next due bucket must be for the driver to take a step of a shrink: more than a
/// step takes (module docs, "In steps").
pub(crate) const STEP_ROOM: Duration = Duration::from_millis(1);

/// The driver's wait between two steps of a shrink when nothing is due sooner.
pub(crate) const STEP_WAIT: Duration = Duration::from_millis(1);

/// The driver's automatic shrink's state.
#[derive(Debug, Default)]
pub(crate) struct AutoShrink {
    /// No shrink starts before this.
    next: Option<Instant>,
    /// Since when fewer than a quarter of the slots hold a pending entry, without a lull.
    low_since: Option<Instant>,
    /// The shrink under way, if any.
    steps: Option<Steps>,
}

/// Where a shrink in steps is: the next part (a shard's index; then each class of the task slab;
/// then the advance's buffers; then `malloc_trim`), and the slots and pages given back so far.
#[derive(Debug, Default)]
pub(crate) struct Steps {
    pub(super) part: usize,
    pub(super) given: usize,
    /// Since when a task due within [`STEP_ROOM`] has held the steps off: [`AUTO_INTERVAL`] after
    /// it, they go on whatever is due (module docs, "In steps").
    held_since: Option<Instant>,
}

impl Shared {
    /// One step of a shrink (module docs, "In steps"): `Some` of the slots and pages it gave back
    /// in all once it is done.
    pub(crate) fn shrink_step(&self, steps: &mut Steps) -> Option<usize> {
        let shards = self.core.shards();
        match steps.part {
            part if part < shards => {
                let (given, done) = self.core.shrink_step(part);
                steps.given += given;
                steps.part += usize::from(done);
            }
            part if part < shards + CLASSES.len() => {
                let step = self.slab.shrink_step(part - shards);
                steps.given += step.given;
                steps.part += usize::from(step.done);
            }
            part if part == shards + CLASSES.len() => {
                // The advance's buffers, if no advance holds them (one inside a task does).
                if let Some(mut serial) = self.advance_lock.try_lock() {
                    serial.trim(0);
                }
                steps.part += 1;
            }
            _ => {
                #[cfg(not(delaywheel_loom))]
                if steps.given > 0 {
                    crate::entry::os::trim_heap();
                }
                return Some(steps.given);
            }
        }
        None
    }

    /// [`Timer::shrink`]'s give-back, and a stop's: every step of a shrink, at once. The slots and
    /// block pages given back.
    pub(crate) fn give_back(&self) -> usize {
        let mut steps = Steps::default();
        loop {
            if let Some(given) = self.shrink_step(&mut steps) {
                return given;
            }
        }
    }

    /// The driver's automatic shrink, after an advance or a wait (module docs): starts one once the
    /// shards wrote [`AUTO_MIN_SLOTS`] slots or more and fewer than a quarter of them hold a
    /// pending entry, [`AUTO_INTERVAL`] after the last one ended, in a lull (nothing due within
    /// [`AUTO_LULL`]) or after the load stayed low that long; takes a step of the one under way
    /// unless something is due within [`STEP_ROOM`].
    pub(crate) fn shrink_if_spent(&self) {
        let Some(mut auto) = self.auto_shrink.try_lock() else { return };
        let now = Instant::now();
        if auto.steps.is_none() {
            if auto.next.is_some_and(|next| now < next) {
                return;
            }
            let slots = self.core.slots();
            if slots < AUTO_MIN_SLOTS || self.core.len().saturating_mul(4) > slots {
                auto.low_since = None;
                return;
            }
            if self.due_within(AUTO_LULL)
                && now.duration_since(*auto.low_since.get_or_insert(now)) < AUTO_INTERVAL
            {
                return;
            }
            auto.low_since = None;
            auto.steps = Some(Steps::default());
        }
        let Some(steps) = auto.steps.as_mut() else { unreachable!("set above") };
        if self.due_within(STEP_ROOM)
            && now.duration_since(*steps.held_since.get_or_insert(now)) < AUTO_INTERVAL
        {
            return;
        }
        if self.shrink_step(steps).is_some() {
            auto.steps = None;
            auto.next = Some(Instant::now() + AUTO_INTERVAL);
        }
    }

    /// Whether the driver's shrink is under way (between two steps).
    pub(crate) fn shrinking(&self) -> bool {
        self.auto_shrink.try_lock().map_or(true, |auto| auto.steps.is_some())
    }

    /// How long the driver may wait before it looks again whether to shrink: [`STEP_WAIT`] while
    /// a shrink is under way, else [`AUTO_INTERVAL`] (the core has no hook for a spike's first
    /// slots: the driver looks once a second).
    pub(crate) fn shrink_wait(&self) -> Option<Duration> {
        Some(if self.shrinking() { STEP_WAIT } else { AUTO_INTERVAL })
    }

    /// Has a spike wake the driver's wait: nothing on the core ([`shrink_wait`](Self::shrink_wait)
    /// bounds every wait instead).
    #[cfg(not(delaywheel_loom))]
    pub(crate) fn wake_driver_at_spikes(this: &crate::sync::Arc<Shared>) {
        let _ = this;
    }

    /// Whether something is due within `within` (by the timer's clock).
    fn due_within(&self, within: Duration) -> bool {
        let time = self.time();
        self.queue().head().is_some_and(|expiration| {
            let until = time.ticks.start_nanos(expiration).saturating_sub(u128::from(time.clock.now_nanos()));
            until < within.as_nanos()
        })
    }
}

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
    /// of such a low load without one, a step at a time between the ticks it fires, so that no
    /// task is late for it; call it on a manual timer, or when the memory must be back at once
    /// (after a burst you know is over). It goes through each shard in steps that each hold
    /// that shard's lock for 0.1 to 0.5 ms on Linux (a schedule into that shard waits for the
    /// step under way), then gives back the pages of closures over 16 bytes in steps of at most
    /// 8,192 blocks and about 0.3 ms each (245 after a million of them), and returns once every
    /// step is done; a later spike allocates the memory again.
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
