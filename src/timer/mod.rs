//! `Timer`: the facade, and the state its operations share.
//!
//! The state, [`Shared`] (`shared.rs`), joins the sharded core (`crate::shard::core`: shards of
//! slots, each under one lock with its wheel, and the one delay queue of their buckets), the clock
//! and the executor threads (as Kafka's `SystemTimer` does). Its rooms (below) schedule, cancel and
//! reset through a handle, advance and fire, stop and shrink; the facade here (its public methods,
//! `instants.rs`, `values.rs`), `weak.rs`, `groups.rs`, `refs.rs`, the drivers and the add-ons reach
//! `Shared` only through the methods of those rooms. This module also starts the driver
//! (`driver/`) and has the public values the timer hands out (errors, stats, positions, unfired
//! tasks).
//!
//! ## Protocol
//!
//! * **schedule** (any thread, no timer-wide lock): one insert into the calling thread's shard
//!   (`schedule.rs`).
//! * **cancel, reset** (any thread): through the handle's shard, under its lock (`handle.rs`).
//! * **advance_clock** (serialised by `advance_lock`): pops the due buckets, flushes each under
//!   its shard's lock, and claims each due entry just before it runs it (`advance.rs`).
//! * **shutdown**: set `shut_down`, close the queue (the driver wakes and exits; it is joined),
//!   then close every shard and drain it under its lock, held entries too (`stop.rs`).
//!   Each entry is taken once, under its shard's lock, by the claim that runs it, a cancel or the
//!   drain: nothing is lost from the accounting. A delay queue's consumers are told last, once no
//!   advance holds values it fired and has not handed over, and no shutdown's drain values it
//!   claimed and has not counted (`shutdown.rs`, `close_values`).
//!
//! A schedule racing shutdown: the insert reads its shard's closed flag under the shard's lock,
//! and the drain closes each shard under that lock: either the drain finds the entry (and reports
//! it unfired), or the schedule finds the shard closed (its call returns
//! `ScheduleError::ShutDown`). No task vanishes, and the schedule path needs no fence.
//!
//! ## On the core
//!
//! **Payload.** Every entry's payload is an `InlineTask` (24 bytes: a slot of 48), its kind in
//! its vtable: a plain task (`InlineTask::new_in_as(.., false)`), a future's task that only hands
//! a waker over (`wake`), a tick group's task (`new_uncounted_in`: wake, **uncounted**), and a
//! delay queue's value (`value_in`). Closures over 16 bytes take a block of the timer's
//! `TaskSlab` (held in an `Arc` by the state and the executor room, so that a block freed by a
//! late claim finds its class).
//!
//! **Handles.** [`TimerHandle`] is the pool's 32-byte core handle in an `Option` (its niche:
//! `None` for a refused schedule), with no reference count: once the timer is dropped its handles
//! find nothing. What a handle needs of the timer besides its entry (the clock and tick for a
//! reset, the instants before the clock's origin, the bounded timer's gauge) is in each shard's
//! `Extra` (`shared.rs`), reached under the shard's lock. `LentHandle` is the same handle, `Copy`,
//! for the futures, which hold their timer.
//!
//! **Counts.** `len()` is the core's count (each shard's, under its lock) plus the tick groups'
//! members (`group_entries.rs`); a group's own entry is uncounted. A bounded timer keeps one
//! shared gauge (`bound`), raised before the insert and lowered by whoever takes the entry out.
//! The totals are the core's (`Core::totals`) with the members' and the panics beside them.
//!
//! **The rooms.** `schedule.rs` (the insert), `handle.rs` (cancel, reset, deadline, status and
//! position through a handle's shard), `advance.rs` (the advance and its batch), `fire.rs` (the
//! claims, the executor room), `stop.rs` (the stop, the stats), `shrink.rs` (the shrink, in
//! steps), and the tick groups' and the delay queue's sides (`group_entries.rs`,
//! `value_entries.rs`). Each module's docs state its protocol; what orders the shards' moves is
//! the core's (`shard/core.rs`, "What each lock orders").
//!
//! **Where the core's diagnostics read as they do**, within the contract: a reset moves the entry
//! at once (its `position` is the new deadline's bucket, `tests/rearm.rs`); the wheel places from
//! the last expiration flushed, not from the clock's tick (`stats()`'s per-level counts,
//! `tests/big_wheels.rs`); a bucket above level 0 splits into stages from 1,024 entries
//! (`tests/staged_cascade.rs`). The driver has no hook for a spike's first slots: `shrink_wait`
//! bounds each of its waits by a second (`stop.rs`).
//!
//! **Races the core's loom models do not cover** (written here, not modelled): a bounded
//! timer's gauge is lowered after the core's count-out (so `len()`, which reads the gauge, never
//! counts below the entries pending, and a schedule may be refused for an entry whose take has
//! not yet lowered it); the stop's close racing an advance that does not hold `advance_lock` for
//! the stop (a drop): the advance's claims after the close find nothing; an executor's discard racing `stats` (the claim, which the core counts fired, and the
//! count of the discard are made under `Tallies::discarded`'s lock, which `stats` holds across
//! its read of the core's totals, so `fired` never counts a discard whose count it misses); the
//! drive waker's carried limit (`advance.rs`) racing a second waker's advance that pops its
//! offer: each waker advance that ends carrying the limit offers it again, under `advance_lock`
//! (the public API's models `drive::closures_taken_beside_a_passed_deadline_*` race it).

use std::fmt;
use std::time::Duration;

use crate::builder::{Config, TimerBuilder};
use crate::clock::nanos_to_duration;
use crate::driver::Driver;
use crate::sync::{Arc, Mutex};

mod advance;
pub(crate) mod advancing;
pub(crate) mod error;
mod fire;
#[cfg_attr(not(feature = "async"), allow(unused))]
mod group_entries;
#[cfg(feature = "async")]
pub(crate) mod groups;
pub(crate) mod handle;
mod instants;
pub(crate) mod position;
#[cfg(feature = "async")]
pub(crate) mod refs;
#[cfg(test)]
mod remains;
mod schedule;
mod shared;
mod shrink;
#[cfg(all(test, not(delaywheel_loom)))]
mod shrink_tests;
mod shutdown;
pub(crate) mod stats;
mod stop;
mod time;
pub(crate) mod unfired;
pub(crate) mod value_entries;
pub(crate) mod values;
#[cfg(feature = "async")]
pub(crate) mod wakes;
mod weak;

use shared::{CoreHandle, Extra, Payload, Tallies, TimerCore};

use error::ScheduleError;
use handle::TimerHandle;
use stats::TimerStats;
use unfired::UnfiredTask;

pub(crate) use fire::{ExecutorJob, ExecutorRoom};
#[cfg(feature = "async")]
pub(crate) use handle::LentHandle;
pub(crate) use shared::Shared;
pub(crate) use time::{Time, When};
pub(crate) use weak::{LiveTimer, WeakTimer};

/// A hierarchical timing wheel driven by a delay queue of buckets.
///
/// Build one with [`Timer::builder`] (or [`Timer::new`] for the defaults). By default it owns a
/// driver thread that sleeps until the next bucket is due and runs due tasks; with
/// [`TimerBuilder::manual`] time advances only in [`advance_clock`](Timer::advance_clock).
///
/// `Timer` is `Send + Sync`: share it behind an `Arc` to schedule from many threads. Dropping it
/// stops the driver, drops the closures of tasks that have not started and gives back the memory
/// they took (also while a future of the timer outlives it, as [`shutdown`](Timer::shutdown)
/// does) before it returns; with executor threads, tasks queued for them but not started are
/// dropped too, also while the threads are busy. Handles of its tasks find nothing after the drop.
/// Drop never waits for a task: a driver inside one is told to stop and exits on its own once that
/// task returns, a driver that is not is joined. No task of the timer starts after the drop,
/// except one a thread had already claimed (it may be just starting). Use
/// [`shutdown`](Timer::shutdown) to get the unfired tasks back instead, or
/// [`shutdown_timeout`](Timer::shutdown_timeout) for a bounded wait.
///
/// ```
/// use delaywheel::{ManualClock, Timer};
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let timer = Timer::builder().clock(clock.clone()).manual().build();
/// let fired = Arc::new(AtomicUsize::new(0));
/// let f = Arc::clone(&fired);
/// let handle = timer.schedule(Duration::from_millis(5), move || {
///     f.fetch_add(1, Ordering::SeqCst);
/// });
/// clock.advance(Duration::from_millis(4));
/// timer.advance_clock(Duration::ZERO);
/// assert_eq!(fired.load(Ordering::SeqCst), 0); // never early
/// clock.advance(Duration::from_millis(1));
/// assert!(timer.advance_clock(Duration::ZERO));
/// assert_eq!(fired.load(Ordering::SeqCst), 1);
/// assert!(!handle.cancel()); // it already ran
/// ```
pub struct Timer {
    /// The shared state, behind the operations the crate's extras use too (`weak.rs`).
    live: LiveTimer,
    driver: Mutex<Option<Driver>>,
    /// The futures' way back to the timer (`refs.rs`).
    #[cfg(feature = "async")]
    refs: refs::TimerRefs,
}

impl Timer {
    /// A builder with the defaults: 1 ms tick, [`DEFAULT_WHEEL_SIZE`](crate::DEFAULT_WHEEL_SIZE)
    /// slots, system clock, a driver thread, tasks run on the driver.
    pub fn builder() -> TimerBuilder {
        TimerBuilder::default()
    }

    /// A timer with the default configuration and its driver thread running.
    ///
    /// # Panics
    ///
    /// If the driver thread cannot be started.
    pub fn new() -> Timer {
        Timer::builder().build()
    }

    pub(crate) fn start(config: Config) -> std::io::Result<Timer> {
        let (manual, name, precise_wakeups) =
            (config.manual, config.thread_name.clone(), config.precise_wakeups);
        let shared = Shared::start(config)?;
        let driver = if manual { None } else { Some(Driver::start(&shared, name, precise_wakeups)?) };
        Ok(Timer {
            live: LiveTimer(shared),
            driver: Mutex::new(driver),
            #[cfg(feature = "async")]
            refs: refs::TimerRefs::new(),
        })
    }

    /// Schedules `task` to run once, `delay` from now.
    ///
    /// It runs at the first tick boundary at or after `now + delay`: never early, at most one tick
    /// late (plus the time the driver needs to wake). A zero delay (a deadline equal to now, which
    /// has passed) runs at the next advance of the clock, also when scheduled mid-tick; never inside
    /// this call.
    ///
    /// This never panics for any input. When the task cannot be scheduled (the timer is shut down,
    /// it holds its [`max_pending`](TimerBuilder::max_pending) tasks, or the delay is beyond the
    /// timer's range, which ends a second past [`max_delay`](Timer::max_delay): e.g.
    /// `Duration::MAX`) the task is dropped unrun and the
    /// returned handle is inert (`cancel()` returns `false`, `is_pending()` is `false`). A task that
    /// can never fire is thus treated like one that never fires. Use
    /// [`try_schedule`](Timer::try_schedule) to learn why.
    ///
    /// # Panics
    ///
    /// Only if the closure's own `Drop` panics when a refused task is dropped: that panic leaves
    /// this call (as it leaves [`TimerHandle::cancel`]), with nothing counted or kept.
    ///
    /// # What a task's size costs
    ///
    /// The closure is kept by the timer, with no allocation per task, up to 256 bytes of captured
    /// state: up to 16 bytes (two words, e.g. an `Arc` and an id) in the task's own 48-byte slot;
    /// up to 256 bytes (alignment up to 64) in a block of 64, 128 or 256 bytes of the timer's task
    /// slab, which the thread that runs or drops the task recycles through its own free list. A
    /// closure capturing more than 256 bytes (or aligned over 64) is boxed: one allocation here and
    /// one `free` on the thread that runs or drops it, usually the driver, inside its firing loop,
    /// where every later task of the batch waits for it. To stay under the line, capture the big
    /// part behind an `Arc` or a `Box` of your own.
    pub fn schedule<F>(&self, delay: Duration, task: F) -> TimerHandle
    where
        F: FnOnce() + Send + 'static,
    {
        self.try_schedule(delay, task).unwrap_or_else(|_| TimerHandle::refused())
    }

    /// Schedules `task` to run once, `delay` from now; see [`schedule`](Timer::schedule).
    ///
    /// # Errors
    ///
    /// * [`ScheduleError::ShutDown`] after [`shutdown`](Timer::shutdown) (or drop) has begun;
    /// * [`ScheduleError::DelayTooLong`] if the delay is beyond the timer's range (a second past
    ///   [`max_delay`](Timer::max_delay), which a prompt schedule accepts): the deadline's tick is
    ///   past the last representable tick or past the last tick the clock can reach (its reading
    ///   saturates at `u64::MAX` nanoseconds);
    /// * [`ScheduleError::TooManyPending`] when [`TimerBuilder::max_pending`] tasks are pending (or
    ///   when the timer's slots, or its task slab's blocks of this task's size, are exhausted: over
    ///   four billion of each).
    ///
    /// Where several hold, the error is the first of them in this order. The task is dropped unrun.
    pub fn try_schedule<F>(&self, delay: Duration, task: F) -> Result<TimerHandle, ScheduleError>
    where
        F: FnOnce() + Send + 'static,
    {
        self.live.try_schedule(delay, task)
    }

    /// Advances the timer to the clock's current time: flushes every due bucket, cascading entries
    /// to finer levels and running (or handing to the executor) every due task. Returns whether any
    /// bucket was flushed.
    ///
    /// With the system clock it first waits up to `timeout` for a bucket to become due (returning
    /// early when one does, or when another thread, such as the driver, takes a due bucket first:
    /// this call then returns once that thread's advance is done). A manual clock never waits:
    /// advance it first. A timer with a driver thread calls this itself; calling it as well is
    /// allowed.
    ///
    /// One call does bounded work: tasks scheduled while it runs (by its own tasks, or by other
    /// threads) that are already due run at the next advance, not in this one, so a task that
    /// reschedules itself with a zero delay runs once per advance.
    ///
    /// Called from inside one of this timer's tasks running on the thread that advances the clock
    /// (the driver, or the caller of `advance_clock`), it returns `false` at once: that thread is
    /// already advancing the clock. So it does from a task of another timer whose advance such a
    /// task called. From a task on an executor thread it behaves as from any thread.
    pub fn advance_clock(&self, timeout: Duration) -> bool {
        let shared = self.shared();
        if !timeout.is_zero() && !shared.time().clock.is_manual() && !shared.advancing_here() {
            shared.queue().wait_due(shared.time(), Some(timeout));
        }
        shared.advance()
    }

    /// The number of tasks pending: scheduled, and not yet fired, cancelled or abandoned.
    pub fn len(&self) -> usize {
        self.shared().len()
    }

    /// Whether no task is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A delay [`try_schedule`](Timer::try_schedule) accepts when called promptly afterwards:
    /// `timer.try_schedule(timer.max_delay(), task)` succeeds, also on the system clock, which
    /// moves between the two readings.
    ///
    /// The timer's range ends at the last tick its clock can reach (the clock's reading ends at
    /// 2^64 - 1 ns from its origin, about 584 years): a schedule accepts every deadline up to that
    /// tick's boundary, and refuses a later one with [`ScheduleError::DelayTooLong`] (never
    /// wrapped, never a panic). `max_delay` is the distance from now to that boundary **less one
    /// second**: a schedule that reads the clock up to a second after this call still accepts it
    /// (and so do longer delays, up to the boundary itself). Within the last second of the range
    /// it is zero; with ticks longer than the clock's whole range, zero as well (only what is due
    /// already is accepted).
    ///
    /// ```
    /// use delaywheel::{ScheduleError, Timer};
    /// use std::time::Duration;
    ///
    /// let timer = Timer::builder().manual().build(); // the system clock
    /// assert!(timer.try_schedule(timer.max_delay(), || {}).is_ok());
    /// let far = timer.try_schedule(timer.max_delay() + Duration::from_secs(3_600), || {});
    /// assert!(matches!(far, Err(ScheduleError::DelayTooLong { .. })));
    /// ```
    pub fn max_delay(&self) -> Duration {
        self.live.max_delay()
    }

    /// The tick length.
    pub fn tick(&self) -> Duration {
        self.live.tick()
    }

    /// Slots per level.
    pub fn wheel_size(&self) -> usize {
        self.shared().wheel_size()
    }

    /// The wheel's cursor, as time since the clock's origin: the start of the last tick the timer
    /// has advanced to. It moves in whole ticks, only inside `advance_clock`.
    pub fn current_time(&self) -> Duration {
        let tick = self.shared().current_tick();
        nanos_to_duration(self.shared().time().ticks.start_nanos(tick))
    }

    /// A snapshot of the timer's counters (monotonic totals since it started), gauges (pending
    /// tasks, queued buckets, levels, tasks per level, the fullest bucket) and firing-lateness
    /// summary. Each shard's wheel is read under its lock in turn: the per-level counts are kept
    /// as entries move, the fullest bucket is found by walking the buckets created in the levels
    /// holding entries, O(shards + those buckets), paid here and never on the schedule, cancel or
    /// fire paths.
    ///
    /// The fields are read one after the other without stopping the timer, so under concurrent use
    /// they need not add up exactly (e.g. `scheduled` may already count a task that `pending` does
    /// not yet). `fired` counts each task as it is claimed, just before it runs; on the driver,
    /// `lateness` is written when a run of values in one histogram bin ends, or the batch: a task
    /// sees its own batch's lateness only after the batch.
    pub fn stats(&self) -> TimerStats {
        self.shared().stats()
    }
}

impl Timer {
    /// The shared state (this room only: the extras use [`live`](Timer::live)).
    fn shared(&self) -> &Arc<Shared> {
        &self.live.0
    }

    /// This timer, as the crate's extras reach it (`weak.rs`).
    pub(crate) fn live(&self) -> &LiveTimer {
        &self.live
    }

    /// The shared state, for the driver run as a future (`driver/drive.rs`).
    #[cfg(feature = "async")]
    pub(crate) fn shared_state(&self) -> &Arc<Shared> {
        self.shared()
    }

    /// The futures' per-thread references to the shared state (`refs.rs`).
    #[cfg(feature = "async")]
    pub(crate) fn refs(&self) -> &refs::TimerRefs {
        &self.refs
    }
}

impl Default for Timer {
    fn default() -> Self {
        Timer::new()
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        drop(self.stop(true, None));
    }
}

impl fmt::Debug for Timer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timer")
            .field("tick", &self.tick())
            .field("wheel_size", &self.wheel_size())
            .field("manual_clock", &self.shared().time().clock.is_manual())
            .field("pending", &self.len())
            .finish_non_exhaustive()
    }
}
