//! `Timer`: scheduling, `advance_clock`, shutdown.
//!
//! ## Protocol
//!
//! * **schedule** (any thread, no timer-wide lock): read the clock, compute the deadline tick, add the
//!   entry to the wheel relative to the *current tick*, and push the bucket into the delay queue if
//!   its expiration changed. A task already due goes to the level-0 bucket of its deadline, which is
//!   then due, so the next `advance_clock` fires it (tasks never run inside `schedule`).
//! * **advance_clock** (serialised by `advance_lock`): pop every due bucket in expiration order; for
//!   each, move the cursor to its expiration, visit it (take out what is due there: a level-0
//!   bucket's entries, or the stages of a coarser bucket that may cascade now, see `bucket/`),
//!   queue it again if the visit says so; the entries due at the cursor go straight to the batch to
//!   fire, and every other entry taken is re-added relative to the cursor: it lands in a finer level
//!   (cascade). Fired tasks of one bucket run after
//!   that bucket's visit, with no lock held but `advance_lock`.
//! * **shutdown**: set `shut_down`, close the queue (the driver wakes and exits; it is joined), then,
//!   holding `advance_lock`, flush every bucket and claim every pending entry as abandoned.
//!
//! A schedule racing shutdown: the scheduler reads `shut_down` **under the bucket (lane) lock** it
//! inserts with, and refuses to insert once it is set; shutdown sets `shut_down`, then closes every
//! level not yet created (so no scheduler can use a bucket the drain will not see) and locks and
//! flushes every bucket (all its lanes). Each lane lock orders the two: either the drain locks the bucket after the insert
//! (and reports the entry unfired), or the scheduler locks it after the drain and sees the flag (its
//! call returns `ScheduleError::ShutDown`). No task vanishes, and the schedule path needs no fence.

use std::fmt;
use std::time::Duration;

use crate::advancing::{self, Advancing};
use crate::arena::{prefetch_ahead, EntryArena};
use crate::bucket::{Handoff, Popped};
use crate::builder::{Config, TaskExecution, TimerBuilder};
use crate::clock::{nanos_to_duration, ClockSource, TickLength};
use crate::counters::Counters;
use crate::deadline::{self, Deadline};
use crate::delay_queue::DelayQueue;
use crate::driver::{Driver, Executor};
use crate::entry::{self, abandon, EntryId, Fire, Fresh, Return};
use crate::error::ScheduleError;
use crate::handle::TimerHandle;
use crate::stats::{Lateness, TimerStats};
use crate::sync::{Arc, AtomicBool, AtomicU64, Mutex, Ordering};
use crate::unfired::UnfiredTask;
use crate::wheel::{AddOutcome, TimingWheel};

/// A hierarchical timing wheel driven by a delay queue of buckets.
///
/// Build one with [`Timer::builder`] (or [`Timer::new`] for the defaults). By default it owns a
/// driver thread that sleeps until the next bucket is due and runs due tasks; with
/// [`TimerBuilder::manual`] time advances only in [`advance_clock`](Timer::advance_clock).
///
/// `Timer` is `Send + Sync`: share it behind an `Arc` to schedule from many threads. Dropping it
/// stops the driver promptly (after the task it is running, if any) and drops the closures of tasks
/// that have not fired; with executor threads, tasks queued for them but not started are dropped
/// too. Use [`shutdown`](Timer::shutdown) to get the unfired tasks back instead.
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
    shared: Arc<Shared>,
    driver: Mutex<Option<Driver>>,
    /// The futures' way back to the timer (`timer_ref.rs`).
    #[cfg(feature = "async")]
    refs: crate::timer_ref::TimerRefs,
}

/// The state shared by the timer, its driver and its executor threads.
pub(crate) struct Shared {
    ticks: TickLength,
    clock: ClockSource,
    /// Shared with the counter stripes, through which handles find their entries' buckets.
    wheel: Arc<TimingWheel>,
    /// Where the entries live (`arena.rs`); shared with the handles.
    arena: Arc<EntryArena>,
    queue: DelayQueue,
    counters: Arc<Counters>,
    shut_down: AtomicBool,
    /// Set by a `shutdown()` called from inside one of this timer's tasks: the rest of the batch
    /// being fired must not run after that call returned.
    abandon_batch: AtomicBool,
    /// Serialises advancing and the final drain; never taken on the schedule path.
    advance_lock: Mutex<Scratch>,
    /// The driver's cursor: the expiration of the last flushed bucket, or the last advanced-to tick.
    current_tick: AtomicU64,
    executor: Option<Executor>,
    /// See `TimerBuilder::max_pending`.
    max_pending: usize,
    /// Firing lateness, recorded as tasks start (see `stats.rs`); shared with executor threads.
    lateness: Arc<Lateness>,
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
        let arena = Arc::new(EntryArena::new());
        let wheel = Arc::new(TimingWheel::new(config.wheel_size));
        let counters = Arc::new(Counters::new(config.max_pending, (&arena, &wheel)));
        let lateness = Arc::new(Lateness::new());
        let executor = match config.execution {
            TaskExecution::OnDriver => None,
            TaskExecution::Threads(n) => Some(Executor::start(
                n,
                &config.thread_name,
                (&counters, &arena),
                (&lateness, &config.clock, config.ticks),
            )?),
        };
        let shared = Arc::new(Shared {
            ticks: config.ticks,
            clock: config.clock,
            wheel,
            arena,
            queue: DelayQueue::new(),
            counters,
            shut_down: AtomicBool::new(false),
            abandon_batch: AtomicBool::new(false),
            advance_lock: Mutex::new(Scratch::default()),
            current_tick: AtomicU64::new(0),
            executor,
            max_pending: config.max_pending,
            lateness,
        });
        let now_tick = shared.ticks.floor(shared.clock.now_nanos());
        shared.current_tick.store(now_tick, Ordering::Relaxed);
        let driver = if config.manual {
            None
        } else {
            Some(Driver::start(&shared, config.thread_name, config.precise_wakeups)?)
        };
        Ok(Timer {
            shared,
            driver: Mutex::new(driver),
            #[cfg(feature = "async")]
            refs: crate::timer_ref::TimerRefs::new(),
        })
    }

    /// Schedules `task` to run once, `delay` from now.
    ///
    /// It runs at the first tick boundary at or after `now + delay`: never early, at most one tick
    /// late (plus the time the driver needs to wake). A zero or already-passed delay runs at the
    /// next advance of the clock, never inside this call.
    ///
    /// This never panics. When the task cannot be scheduled (the timer is shut down, it holds its
    /// [`max_pending`](TimerBuilder::max_pending) tasks, or the delay is beyond
    /// [`max_delay`](Timer::max_delay): e.g. `Duration::MAX`) the task is dropped unrun and the
    /// returned handle is inert (`cancel()` returns `false`, `is_pending()` is `false`). A task that
    /// can never fire is thus treated like one that never fires. Use
    /// [`try_schedule`](Timer::try_schedule) to learn why.
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
    /// * [`ScheduleError::TooManyPending`] when [`TimerBuilder::max_pending`] tasks are pending;
    /// * [`ScheduleError::DelayTooLong`] if the deadline is beyond the last representable tick.
    ///
    /// The task is dropped unrun in both cases.
    pub fn try_schedule<F>(&self, delay: Duration, task: F) -> Result<TimerHandle, ScheduleError>
    where
        F: FnOnce() + Send + 'static,
    {
        self.shared.schedule(delay, task)
    }

    /// Advances the timer to the clock's current time: flushes every due bucket, cascading entries
    /// to finer levels and running (or handing to the executor) every due task. Returns whether any
    /// bucket was flushed.
    ///
    /// With the system clock it first waits up to `timeout` for a bucket to become due (returning
    /// early when one does). A manual clock never waits: advance it first. A timer with a driver
    /// thread calls this itself; calling it as well is allowed.
    ///
    /// Called from inside one of this timer's tasks running on the thread that advances the clock
    /// (the driver, or the caller of `advance_clock`), it returns `false` at once: that thread is
    /// already advancing the clock. From a task on an executor thread it behaves as from any thread.
    pub fn advance_clock(&self, timeout: Duration) -> bool {
        if !timeout.is_zero() && !self.shared.clock.is_manual() && !self.shared.advancing_here() {
            self.shared.queue.wait_due(&self.shared.clock, self.shared.ticks, Some(timeout));
        }
        self.shared.advance()
    }

    /// The number of tasks pending: scheduled, and not yet fired, cancelled or abandoned.
    pub fn len(&self) -> usize {
        self.shared.counters.pending()
    }

    /// Whether no task is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The longest delay [`try_schedule`](Timer::try_schedule) accepts right now.
    pub fn max_delay(&self) -> Duration {
        self.shared.ticks.max_delay(self.shared.clock.now_nanos())
    }

    /// The tick length.
    pub fn tick(&self) -> Duration {
        self.shared.ticks.as_duration()
    }

    /// Slots per level.
    pub fn wheel_size(&self) -> usize {
        self.shared.wheel.wheel_size() as usize
    }

    /// The wheel's cursor, as time since the clock's origin: the start of the last tick the timer
    /// has advanced to. It moves in whole ticks, only inside `advance_clock`.
    pub fn current_time(&self) -> Duration {
        let tick = self.shared.current_tick.load(Ordering::Acquire);
        nanos_to_duration(self.shared.ticks.start_nanos(tick))
    }

    /// A snapshot of the timer's counters (monotonic totals since it started), gauges (pending
    /// tasks, queued buckets, levels) and firing-lateness summary.
    ///
    /// The fields are read one after the other without stopping the timer, so under concurrent
    /// use they need not add up exactly (e.g. `scheduled` may already count a task that `pending`
    /// does not yet). On the driver, `fired` is counted per batch (one flushed bucket) and
    /// `lateness` written when a run of values in one histogram bin ends, or the batch: a task sees its own batch
    /// counted only after the batch.
    pub fn stats(&self) -> TimerStats {
        let (scheduled, fired, cancelled, panicked) = self.shared.counters.snapshot();
        TimerStats {
            pending: self.len(),
            scheduled,
            fired,
            cancelled,
            panicked,
            queued_buckets: self.shared.queue.len(),
            levels_in_use: self.shared.wheel.levels_in_use(),
            lateness: self.shared.lateness.summary(),
        }
    }

    /// Stops the timer and hands back every task that had not fired, in deadline order.
    ///
    /// Blocks until the driver thread has exited (it finishes the task it is running, if any) and,
    /// with [`TaskExecution::Threads`], until the executor threads have run the tasks already handed
    /// to them (those were due before the shutdown). When this returns, no task of this timer runs
    /// any more, and `try_schedule` fails with [`ScheduleError::ShutDown`]. Calling it again returns
    /// an empty list.
    ///
    /// Called from inside one of this timer's tasks, it does not wait for the thread running that
    /// very task. On the driver, the tasks fired in the same batch but not yet run are dropped unrun.
    /// If several threads call it at once, each returns once the driver has stopped; the unfired
    /// tasks go to whichever call drained them first.
    pub fn shutdown(&self) -> Vec<UnfiredTask> {
        self.stop(false)
    }

    /// Shutdown (`dropping == false`) or drop: drop does not wait for executor threads, which then
    /// discard what is still queued for them.
    fn stop(&self, dropping: bool) -> Vec<UnfiredTask> {
        let shared = &self.shared;
        shared.shut_down.store(true, Ordering::SeqCst);
        shared.queue.close();
        let inside_task = shared.advancing_here();
        if inside_task {
            shared.abandon_batch.store(true, Ordering::Release);
        }
        // Take the driver out first: the lock must not be held while joining (a task may be calling
        // shutdown concurrently and would wait on it).
        let driver = self.driver.lock().take();
        if let Some(driver) = driver {
            if inside_task {
                driver.detach();
            } else {
                driver.join();
            }
        }
        // Drop only discards: boxing and sorting the closures would be wasted work.
        let report = !dropping;
        let unfired = if inside_task { shared.drain(report) } else { shared.drain_locked(report) };
        if let Some(executor) = &shared.executor {
            executor.close(!dropping && !inside_task, dropping);
        }
        unfired
    }
}

impl Timer {
    /// The shared state, for the crate's add-ons (async futures, repeating tasks).
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The futures' per-thread references to the shared state (`timer_ref.rs`).
    #[cfg(feature = "async")]
    pub(crate) fn refs(&self) -> &crate::timer_ref::TimerRefs {
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
        drop(self.stop(true));
    }
}

impl fmt::Debug for Timer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timer")
            .field("tick", &self.tick())
            .field("wheel_size", &self.wheel_size())
            .field("manual_clock", &self.shared.clock.is_manual())
            .field("pending", &self.len())
            .finish_non_exhaustive()
    }
}

impl Shared {
    pub(crate) fn schedule<F>(&self, delay: Duration, task: F) -> Result<TimerHandle, ScheduleError>
    where
        F: FnOnce() + Send + 'static,
    {
        if self.shut_down.load(Ordering::Acquire) {
            return Err(ScheduleError::ShutDown);
        }
        let now = self.clock.now_nanos();
        let deadline = self
            .ticks
            .deadline(now, delay)
            .ok_or_else(|| ScheduleError::DelayTooLong { delay, max: self.ticks.max_delay(now) })?;
        // Counted in before the entry becomes visible, on this thread's stripe (`counters.rs`).
        let stripe = self.counters.local();
        if !stripe.try_schedule() {
            return Err(ScheduleError::TooManyPending { max: self.max_pending });
        }
        let arena = &*self.arena;
        let mut fresh = Fresh::new(deadline, task);
        let Some(id) = arena.alloc() else {
            stripe.unschedule();
            return Err(ScheduleError::TooManyPending { max: EntryId::MAX_INDEX as usize });
        };
        // The insert occupies the slot it publishes: one slot lock (`entry/`).
        let (refuse, base) = (Some(&self.shut_down), self.ticks.floor(now));
        let outcome = match self.wheel.add(arena, (id, deadline), base, refuse, Some(&mut fresh)) {
            AddOutcome::Due(id) => self.wheel.add_due(arena, (id, deadline), refuse, Some(&mut fresh)),
            other => other,
        };
        match outcome {
            AddOutcome::Queue(expiration, bucket) => self.queue.offer(expiration, bucket),
            AddOutcome::Done => {}
            AddOutcome::ShutDown => {
                // Never occupied, never seen by anyone else: uncount it, give the vacant slot
                // back, drop the closure (still in `fresh`).
                arena.free(id);
                stripe.unschedule();
                drop(fresh);
                return Err(ScheduleError::ShutDown);
            }
            AddOutcome::Due(_) | AddOutcome::NotPending => unreachable!("a new entry is pending"),
        }
        let ticket = fresh.ticket(id).expect("an inserted entry occupies its slot");
        Ok(TimerHandle::new(Arc::clone(stripe), ticket))
    }

    /// The non-blocking advance: flush every bucket due at the clock's current tick.
    pub(crate) fn advance(&self) -> bool {
        if self.advancing_here() {
            return false;
        }
        let mut serial = self.advance_lock.lock();
        if self.shut_down.load(Ordering::Acquire) {
            return false;
        }
        let _advancing = Advancing::enter(self.id());
        let now_tick = self.ticks.floor(self.clock.now_nanos());
        let mut flushed = false;
        let Scratch { cascade, due, spare } = &mut *serial;
        while let Some((expiration, bucket)) = self.queue.poll_due(now_tick) {
            let cursor = self.current_tick.load(Ordering::Relaxed).max(expiration);
            self.current_tick.store(cursor, Ordering::Release);
            match bucket.visit_into(&self.arena, cursor, Handoff { cascade, due }) {
                Popped::Stale => continue,
                Popped::Visited { requeue } => {
                    flushed = true;
                    if let Some(next) = requeue {
                        self.queue.offer(next, Arc::clone(&bucket));
                    }
                }
            }
            let visited = cascade.len() + due.len();
            // The entries due at the cursor went straight to `due`; the rest cascade.
            for held in cascade.drain(..) {
                match self.wheel.add(&self.arena, held, cursor, None, None) {
                    // Not met: the visit handed the entries due at the cursor to `due` already.
                    // Kept rather than `unreachable!`: firing is right for a due entry anyway.
                    AddOutcome::Due(entry) => due.push((entry, held.1)),
                    AddOutcome::Queue(expiration, bucket) => self.queue.offer(expiration, bucket),
                    AddOutcome::Done => {}
                    // Cancelled in transit: the cancel left the slot to us, its holder.
                    AddOutcome::NotPending => entry::discard(&self.arena, held.0),
                    AddOutcome::ShutDown => unreachable!("re-adds ignore the shutdown flag"),
                }
            }
            crate::trace::flushed(bucket.id(), expiration, cursor, visited, due.len());
            if !due.is_empty() {
                self.fire(due, spare);
            }
        }
        serial.trim();
        if now_tick > self.current_tick.load(Ordering::Relaxed) {
            self.current_tick.store(now_tick, Ordering::Release);
        }
        flushed
    }

    /// Runs (or hands to the executor) every entry in `due`, in deadline order, and empties it.
    fn fire(&self, due: &mut Vec<(EntryId, Deadline)>, spare: &mut Vec<(EntryId, Deadline)>) {
        // Earliest deadline first (`deadline.rs`): the batch's wait falls on the tasks the tick's
        // rounding made least late.
        deadline::sort_batch(due, spare);
        if let Some(executor) = &self.executor {
            executor.submit(due.drain(..).map(|(entry, _)| entry));
            return;
        }
        let mut lateness = self.lateness.batch(self.ticks);
        let stripe = self.counters.local();
        let mut fired = 0;
        // Every entry of the batch is released in the loop and returned to the arena after it,
        // with one lock of the free list (`Return::ByCaller`).
        let ahead = prefetch_ahead(due.len());
        for (k, &(entry, _)) in due.iter().enumerate() {
            // In deadline order the slots are scattered: start each miss a few tasks early.
            if let Some(&(ahead, _)) = due.get(k.saturating_add(ahead)) {
                self.arena.prefetch(ahead);
            }
            let held = (entry, Return::ByCaller);
            if self.abandon_batch.load(Ordering::Acquire) {
                // `shutdown()` was called by a task of this batch: the rest stays unrun.
                abandon(&self.arena, held, stripe);
                continue;
            }
            let claimed = &mut |deadline_tick| lateness.record(deadline_tick, self.clock.now_nanos());
            match entry::fire(&self.arena, held, stripe, claimed) {
                Fire::Ran => fired += 1,
                Fire::Panicked => {
                    fired += 1;
                    stripe.panicked();
                }
                Fire::Lost => {
                    // Seeded bug for the loom suite only (docs/loom.md): a firing that lost the
                    // race still counts the entry out of `len()`, which its winner already did
                    // (netty#14959).
                    #[cfg(all(delaywheel_loom, delaywheel_loom_fault = "fire_decrements_unclaimed"))]
                    stripe.left();
                }
            }
        }
        self.arena.free_all(due.drain(..).map(|(entry, _)| entry));
        stripe.fired(fired);
    }

    /// Drains the wheel once no advance is in progress.
    fn drain_locked(&self, report: bool) -> Vec<UnfiredTask> {
        let _serial = self.advance_lock.lock();
        self.drain(report)
    }

    /// Claims every pending entry in every bucket as abandoned. With `report`, returns their tasks
    /// in deadline order; otherwise drops them.
    fn drain(&self, report: bool) -> Vec<UnfiredTask> {
        let mut unfired = Vec::new();
        let stripe = self.counters.local();
        for bucket in self.wheel.close_levels() {
            for (entry, _) in bucket.flush(&self.arena) {
                if !report {
                    abandon(&self.arena, (entry, Return::Now), stripe);
                } else if let Some((task, deadline)) = entry::abandon_take(&self.arena, entry, stripe) {
                    unfired.push((deadline, task));
                }
            }
        }
        // In deadline order to a 256th of a tick, each reported at its tick (when it would have run).
        unfired.sort_by_key(|&(deadline, _)| deadline);
        let at = |deadline: Deadline| nanos_to_duration(self.ticks.start_nanos(deadline.tick()));
        unfired.into_iter().map(|(deadline, task)| UnfiredTask { deadline: at(deadline), task }).collect()
    }

    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::Acquire)
    }

    pub(crate) fn queue(&self) -> &DelayQueue {
        &self.queue
    }

    pub(crate) fn clock(&self) -> &ClockSource {
        &self.clock
    }

    pub(crate) fn ticks(&self) -> TickLength {
        self.ticks
    }
}

impl Shared {
    fn id(&self) -> usize {
        self as *const Shared as usize
    }

    /// Whether this thread is inside this timer's `advance` (running one of its tasks).
    fn advancing_here(&self) -> bool {
        advancing::is_advancing(self.id())
    }
}

/// Vectors reused by every advance, kept under `advance_lock`. A fresh vector per visit was one
/// large allocation per tick, and glibc consolidates every freed small chunk (the fired entries) on
/// each large allocation: `malloc_consolidate` took about 9% of the driver's time in SPEC W4.
#[derive(Default)]
pub(crate) struct Scratch {
    /// Entries a bucket visit took out to cascade, with their deadlines, to re-add (held: `entry/`).
    cascade: Vec<(EntryId, Deadline)>,
    /// Entries found due, with their deadlines, to fire in deadline order (held).
    due: Vec<(EntryId, Deadline)>,
    /// The buffer `deadline::sort_batch` sorts `due` through (it swaps the two).
    spare: Vec<(EntryId, Deadline)>,
}

impl Scratch {
    /// Entries kept for reuse; beyond this (after a burst) the buffers are given back.
    const KEEP: usize = 1 << 14;

    fn trim(&mut self) {
        for buffer in [&mut self.cascade, &mut self.due, &mut self.spare] {
            if buffer.capacity() > Self::KEEP {
                buffer.shrink_to(Self::KEEP);
            }
        }
    }
}
