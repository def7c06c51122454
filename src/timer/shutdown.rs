//! Stopping a timer: [`Timer::shutdown`], [`Timer::shutdown_timeout`], and the drop's stop (the
//! protocol is in the parent module's docs, "shutdown"; the drain is `stop.rs`'s).
//!
//! **Closures whose `Drop` calls back into the timer.** The drain takes each shard's entries out
//! under the shard's lock and drops or hands back their closures after the unlock, so no closure's
//! `Drop` that runs during a stop waits for a lock the drain holds:
//!
//! * [`shutdown`](Timer::shutdown) and [`shutdown_timeout`](Timer::shutdown_timeout) drop no
//!   closure: they hand every unfired one back, and the caller drops them after the call, outside
//!   every lock of the timer. Dropped inside one of the timer's tasks (the advance running it
//!   holds `advance_lock`), they may call `advance_clock` (returns `false`: this thread is
//!   advancing), `shutdown` (returns an empty list at once), `schedule` (refused), a handle's
//!   `cancel`, `stats` or `shrink`: none takes `advance_lock`.
//! * The drop's drain drops the closures itself, but no `Timer` is left to call then: the timer
//!   is being dropped, so what a closure can still reach is a handle or a future of it (`cancel`,
//!   `reset`, `deadline`; a `Sleep`'s `reset` or drop), which takes its shard's lock only, never
//!   held while a closure drops.
//!
//! (`tests/drain_drops_call_back.rs`, with a watchdog for each way.)

use std::time::{Duration, Instant};

use super::{advancing, Shared, Timer, UnfiredTask};
use crate::sync::{fence, AtomicUsize, Ordering};

#[cfg(doc)]
use super::ScheduleError;
#[cfg(doc)]
use crate::builder::TaskExecution;

impl Timer {
    /// Stops the timer and hands back every task that had not fired, in the order they would have
    /// fired in: deadline order, tasks due at the same instant in the order they were scheduled
    /// (a reset task by when it was first scheduled), deadlines before the clock's origin in the
    /// order of their instants.
    ///
    /// Blocks until the driver thread has exited (it finishes the task it is running, if any) and,
    /// with [`TaskExecution::Threads`], until the executor threads have run the tasks already handed
    /// to them (those were due before the shutdown). When this returns, no task of this timer runs
    /// any more, and `try_schedule` fails with [`ScheduleError::ShutDown`]. Calling it again returns
    /// an empty list.
    ///
    /// Timeouts armed lazily (`Timer::timeout`, feature `async`) that share a timer entry with
    /// others of their tick (a tick group) have no task of their own: the shutdown counts them out
    /// of [`len`](Timer::len) and wakes them once its locks are released (they then never
    /// elapse), and hands nothing back for them; in [`stats`](Timer::stats) they count as
    /// `abandoned`, as the tasks handed back do: after a shutdown, fired + cancelled + abandoned =
    /// scheduled.
    ///
    /// Called from inside one of this timer's tasks, it does not wait for the thread running that
    /// very task, and the tasks of the same batch that have not started yet (due at the same tick,
    /// already taken out of the wheel) are returned with every other unfired task: they do not run,
    /// and fired + cancelled + returned = scheduled. Called from any timer's driver or executor thread, or
    /// from inside any timer's task, it waits for no driver (two timers shutting each other down
    /// from their tasks would otherwise wait for each other): it returns at once, like
    /// [`shutdown_timeout`](Timer::shutdown_timeout) with a zero timeout. If several threads call
    /// it at once, each returns once the driver has stopped and the executor threads have run what
    /// they were handed; the unfired tasks go to whichever call drained them first.
    ///
    /// A [`DelayQueue`](crate::queue::DelayQueue) on this timer ends (its consumers find it
    /// empty) once no advance holds values it fired before the shutdown: when this call does not
    /// wait for the advance in progress, that advance ends the queue after handing its batch over.
    ///
    /// Once the timer is drained, the slots its tasks took are given back as by
    /// [`shrink`](Timer::shrink), on a timer whose shards wrote 16 384 slots or more (the drop
    /// does the same while a future outlives the timer), without waiting for anything: a handle
    /// looks its task up under its shard's lock. A handle's
    /// [`is_fired`](crate::TimerHandle::is_fired) and
    /// [`is_cancelled`](crate::TimerHandle::is_cancelled) then read `false` for a task whose slot
    /// went back.
    pub fn shutdown(&self) -> Vec<UnfiredTask> {
        self.stop(false, None)
    }

    /// [`shutdown`](Timer::shutdown) with a bounded wait: waits up to `timeout` in all for the
    /// advance in progress to end, as `shutdown` waits for it: the driver thread's (which then
    /// exits), and an [`advance_clock`](Timer::advance_clock) on another thread (a manual timer's).
    /// An advance that ends in time runs the rest of its batch. Then it returns every task that has
    /// not started, whether or not the advance ended (a task that never returns cannot block this
    /// call), in the order `shutdown` hands them back. Called where `shutdown` does not wait (from
    /// a timer's task or thread), it does not wait either.
    ///
    /// Executor threads are not waited for: tasks handed to them and not yet started are returned
    /// too. When this returns, no task of this timer starts any more, except one that the driver
    /// or an executor had already claimed (it may be just starting); tasks already running may
    /// still be running. Every task is accounted for: fired + cancelled + returned = scheduled. A task
    /// claimed that way may still count in [`len`](Timer::len) as this returns, until the thread
    /// that claimed it counts it out, just after the claim.
    ///
    /// The slots of a drained timer are given back as after `shutdown`, outside `timeout`, on a
    /// timer whose shards wrote at least 16,384 slots: a shrink takes each shard's lock in turn
    /// and waits for nothing else.
    pub fn shutdown_timeout(&self, timeout: Duration) -> Vec<UnfiredTask> {
        self.stop(false, Some(timeout))
    }

    /// The start of every stop: sets the shutdown flag and closes the queue (the driver wakes and
    /// exits), then joins the driver as [`stop`](Timer::stop) says (waiting up to `wait`, or not
    /// at all where it may not: from a timer's thread or task, or a drop while the driver is
    /// inside a task, which is told to stop and left to exit on its own). How the stop goes on.
    pub(super) fn stop_driver(&self, dropping: bool, wait: Option<Duration>) -> Stopping {
        let shared = self.shared();
        shared.shut_down.store(true, Ordering::SeqCst);
        shared.queue().close();
        let inside_task = shared.advancing_here();
        // From a timer's own thread, the driver may be waiting for this very thread.
        let may_wait = shared.may_wait_for_advance();
        let wait_fully = may_wait && !dropping && wait.is_none();
        // Take the driver out first: the lock must not be held while joining (a task may be calling
        // shutdown concurrently and would wait on it).
        let driver = self.driver.lock().take();
        // A timed shutdown's one deadline, for the driver's exit and the advance in progress.
        let give_up = wait.filter(|_| may_wait && !dropping).map(|limit| Instant::now().checked_add(limit));
        let stopping = Stopping { inside_task, wait_fully, give_up };
        if let Some(driver) = driver {
            match stopping.left() {
                _ if wait_fully => driver.join(),
                Some(Some(limit)) => drop(driver.join_within(limit)),
                Some(None) => driver.join(),
                // Not advancing (its `advance` sees `shut_down` under the lock): about to exit.
                _ if !inside_task && shared.advance_lock.try_lock().is_some() => driver.join(),
                _ => driver.detach(),
            }
        }
        stopping
    }
}

impl Shared {
    /// Whether this thread may wait for an advance in progress: not from inside one of this
    /// timer's (it would wait for itself), nor from any timer's driver or executor thread or task
    /// (two timers' tasks waiting for each other's advances would never return). A shutdown's
    /// wait and a delay queue's clear (`values.rs`) ask.
    pub(super) fn may_wait_for_advance(&self) -> bool {
        !self.advancing_here() && !advancing::on_timer_thread()
    }

    /// After a release of `advance_lock` by a holder a shutdown may not have waited for (an
    /// advance, a delay queue's clear: `values.rs`): a shutdown that found the lock held left the
    /// closing of the queue's consumers to its holder ([`close_values`](Self::close_values)). The
    /// fence orders the release before the read of the flag.
    pub(super) fn released_advance_lock(&self) {
        fence(Ordering::SeqCst);
        if self.is_shut_down() {
            self.close_values();
        }
    }

    /// A delay queue's timer, shut down: tells the queue's consumers that no value expires any
    /// more, once no advance is handing a batch over. An advance in progress (this call may come
    /// from one of its tasks, or give up waiting for it) may hold values it fired before the
    /// shutdown and has not handed over yet: then the advance closes the queue itself, after its
    /// last batch (`advance.rs`), so that a consumer never sees the end and then more values.
    ///
    /// Nor while a shutdown's drain is in flight (`draining`, raised before `shut_down` is set and
    /// lowered once the drain counted its values in `abandoned_values`): a closing then would end
    /// the consumers while the queue's `len` still counts the values that drain claimed. That
    /// shutdown closes the queue itself once its drain is done.
    ///
    /// Called after `shut_down` is set, by the shutdown and by every advance and clear as it
    /// releases `advance_lock` ([`released_advance_lock`](Self::released_advance_lock)). A `SeqCst`
    /// fence between the flag (and `draining`) and the lock on each side (store buffering): either
    /// the shutdown's `try_lock` finds the lock free (or held by a later holder, which calls this
    /// in turn), or the advance, having released it, reads the flag set and `draining` lowered. An
    /// advance that takes the lock after a closing call reads the flag under it and fires nothing.
    /// Closing twice is harmless. (loom models
    /// `queue_consumers::shutdown_racing_the_hand_over_of_a_batch`,
    /// `queue_clear::clear_racing_shutdown`,
    /// `queue_consumers::a_consumer_woken_by_a_clear_racing_a_shutdown`.)
    pub(super) fn close_values(&self) {
        let Some(sink) = self.values.get() else { return };
        fence(Ordering::SeqCst);
        // A shutdown whose drain has not counted the values it claimed closes the queue itself
        // once it has. Seeded fault `closing_ignores_drains` (docs/loom.md): the queue is closed
        // while a drain holds values its `len` still counts.
        if !fault!("closing_ignores_drains") && self.draining.load(Ordering::SeqCst) != 0 {
            return;
        }
        // Seeded fault `queue_closed_during_hand_over` (docs/loom.md): the queue is closed
        // whatever advance is in progress.
        if !fault!("queue_closed_during_hand_over") && self.advance_lock.try_lock().is_none() {
            return;
        }
        // Its `len` no longer counts the pending values the drains claimed: each drain counts its
        // own, and each closing hands over what the drains counted so far (a concurrent
        // shutdown's values are handed over by it or here, once), taking the count under the
        // queue's lock that its closing sets the flag under, so that a consumer that finds the
        // queue closed finds every closing before it counted out too.
        // Seeded fault `abandoned_values_read_then_cleared` (docs/loom.md): the count is read
        // before that lock and cleared under it, so two closings may both read it, and count
        // those values out twice.
        let panicked = if fault!("abandoned_values_read_then_cleared") {
            let abandoned = self.abandoned_values.load(Ordering::Relaxed);
            sink.closed(&mut || {
                self.abandoned_values.store(0, Ordering::Relaxed);
                abandoned
            })
        } else {
            sink.closed(&mut || self.abandoned_values.swap(0, Ordering::Relaxed))
        };
        self.count_panicked(panicked);
    }
}

/// How a stop goes on once its driver is stopped ([`Timer::stop_driver`]).
pub(super) struct Stopping {
    /// The stop comes from inside one of this timer's tasks (its advance holds `advance_lock`).
    pub(super) inside_task: bool,
    /// A shutdown with no bound on its wait, from where it may wait.
    pub(super) wait_fully: bool,
    /// A timed shutdown's deadline (`Some(None)`: beyond what an `Instant` holds).
    pub(super) give_up: Option<Option<Instant>>,
}

impl Stopping {
    /// What is left of a timed shutdown's wait (`Some(None)`: no bound it can say).
    pub(super) fn left(&self) -> Option<Option<Duration>> {
        self.give_up.map(|at| at.map(|at| at.saturating_duration_since(Instant::now())))
    }
}

/// A shutdown's drain in flight, counted in `Shared::draining` (see `close_values`) until this is
/// dropped: also if the shutdown unwinds (a driver's panic it surfaces), so that closings are not
/// held off for ever.
pub(super) struct Draining<'a>(&'a AtomicUsize);

impl<'a> Draining<'a> {
    pub(super) fn begin(draining: &'a AtomicUsize) -> Self {
        draining.fetch_add(1, Ordering::SeqCst);
        Draining(draining)
    }
}

impl Drop for Draining<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
