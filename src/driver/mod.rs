//! The threads a timer may own: the driver that advances the clock, and executor threads that run
//! fired tasks.
//!
//! ## Driver
//!
//! One thread loops: wait in the delay queue until the earliest bucket is due (or an earlier one is
//! added, or the manual clock moves, or the queue is closed), then `advance`. Before it waits for
//! the next tick, it reads the entries of that tick's buckets, so that their flush at the tick
//! finds them in the cache (`shard/core/warm.rs`). With nothing queued it
//! waits without a timeout: an idle timer uses no CPU. After an advance it gives back the memory of
//! a spike that has drained (`timer/shrink.rs`); once a timer has held a spike, its wait is also
//! bounded by when the next such shrink may come, so that a spike drained by cancels (which leaves
//! nothing due) is given back too. Shutdown closes the queue, which wakes it for
//! good; the thread then exits after the task it is running, if any.
//!
//! ## Executor
//!
//! With `TaskExecution::Threads(n)`, `advance` sends due entries down a channel to `n` threads. An
//! entry is claimed (taken out of its shard) on the executor thread just before it runs, so a `cancel()`
//! that arrives while it waits in the channel still wins. Closing drops the sender: on `shutdown()`
//! the threads run what is already queued (it was due) and are joined, under the lock of their
//! handles, so that concurrent shutdowns all wait for them (a shutdown from a timer's thread joins
//! nothing and never takes that lock: the joiner may be waiting for that very thread); on drop they
//! are not joined (drop must not wait for slow tasks): the drop's drain takes every entry still
//! pending out of every shard, those held for a job in the channel included (`timer/stop.rs`),
//! so their closures are dropped before the drop returns, and no task starts after it but one an
//! executor had already claimed (it may be just starting, as `shutdown_timeout` says); a claim
//! after the drain finds nothing.
//!
//! ## Drive future
//!
//! [`Timer::drive`](crate::Timer::drive) (`drive.rs`, feature `async`): the driver's loop as a
//! future that the user's async runtime polls on its workers, sleeping with the runtime's sleep,
//! for a timer built without a driver thread.
//!
//! These are real OS threads, started with `std::thread::Builder` so they can be named; they are not
//! part of the loom models, which drive a manual timer from model threads instead.

use std::thread::{Builder, JoinHandle};

use crate::sync::Arc;
use crate::timer::Shared;

#[cfg(feature = "async")]
mod drive;
mod executor;
// A module with `unsafe` code (see the crate's "Unsafe code"): the driver thread's timer slack.
#[allow(unsafe_code)]
#[cfg(not(delaywheel_loom))]
mod timer_slack;

#[cfg(feature = "async")]
pub use drive::Drive;
pub(crate) use executor::Executor;

/// How often [`Driver::join_within`] looks whether the thread has exited.
const MAX_POLL: std::time::Duration = std::time::Duration::from_millis(1);

/// The driver thread of a timer.
pub(crate) struct Driver {
    thread: JoinHandle<()>,
    /// On a manual clock: the listener that wakes this driver, removed when the driver stops.
    #[cfg_attr(delaywheel_loom, allow(dead_code))]
    listener: Option<ClockListener>,
}

/// On a manual clock, a listener that wakes the timer's waiters (its driver thread, its drive
/// futures) whenever the clock moves; removed when dropped (a clock that never moves would
/// otherwise keep it).
#[cfg_attr(delaywheel_loom, allow(dead_code))]
pub(crate) struct ClockListener {
    clock: crate::clock::ManualClock,
    id: u64,
}

impl ClockListener {
    /// Listens on the timer's clock if it is a manual one.
    #[cfg(not(delaywheel_loom))]
    pub(crate) fn wake_on_advance(shared: &Arc<Shared>) -> Option<ClockListener> {
        let crate::clock::ClockSource::Manual(clock) = &shared.time().clock else { return None };
        let weak = Arc::downgrade(shared);
        let id = clock.on_advance(Box::new(move || match weak.upgrade() {
            Some(shared) => {
                shared.queue().wake();
                true
            }
            None => false,
        }));
        Some(ClockListener { clock: clock.clone(), id })
    }
}

impl Drop for ClockListener {
    fn drop(&mut self) {
        self.clock.remove_listener(self.id);
    }
}

impl Driver {
    pub(crate) fn start(
        shared: &Arc<Shared>,
        name: String,
        // (No timer slack under loom: its models run no driver thread.)
        #[cfg_attr(delaywheel_loom, allow(unused_variables))] precise_wakeups: bool,
    ) -> std::io::Result<Driver> {
        // A driver on a manual clock sleeps until the clock moves: wake it on every advance.
        #[cfg(not(delaywheel_loom))]
        let listener = ClockListener::wake_on_advance(shared);
        #[cfg(delaywheel_loom)]
        let listener = None;
        #[cfg(not(delaywheel_loom))]
        Shared::wake_driver_at_spikes(shared);
        let shared = Arc::clone(shared);
        let thread = Builder::new().name(name).spawn(move || {
            crate::timer::advancing::mark_timer_thread();
            // Woken within a thousandth of a tick, not the kernel's default 50 µs (`timer_slack.rs`).
            #[cfg(not(delaywheel_loom))]
            if precise_wakeups && !shared.time().clock.is_manual() {
                timer_slack::lower_for_this_thread(shared.time().ticks);
            }
            let mut warmed = None;
            while !shared.is_shut_down() {
                warmed = shared.warm_next(warmed);
                // Woken without a due bucket (the wait for a shrink ran out): no advance.
                if shared.queue().wait_due_within(shared.time(), || shared.shrink_wait()) {
                    shared.advance();
                }
                shared.shrink_if_spent();
            }
        })?;
        Ok(Driver { thread, listener })
    }

    /// The driver is stopping: nothing needs to wake it any more.
    fn unlisten(&mut self) {
        drop(self.listener.take());
    }

    /// Waits for the thread to exit (after the queue was closed).
    pub(crate) fn join(mut self) {
        self.unlisten();
        // A panic on the driver would be a bug in this crate (task panics are caught): surface it.
        if let Err(panic) = self.thread.join() {
            std::panic::resume_unwind(panic);
        }
    }

    /// Waits up to `limit` for the thread to exit (after the queue was closed): `true` if it did
    /// (joined), `false` if not (then detached: it exits on its own once its task returns).
    pub(crate) fn join_within(self, limit: std::time::Duration) -> bool {
        let give_up = std::time::Instant::now().checked_add(limit);
        while !self.thread.is_finished() {
            let left = give_up.map(|at| at.saturating_duration_since(std::time::Instant::now()));
            match left {
                Some(left) if left.is_zero() => {
                    self.detach();
                    return false;
                }
                left => std::thread::sleep(left.map_or(MAX_POLL, |left| left.min(MAX_POLL))),
            }
        }
        self.join();
        true
    }

    /// Lets the thread exit on its own (used when the driver itself asks for the shutdown).
    pub(crate) fn detach(mut self) {
        self.unlisten();
        drop(self.thread);
    }
}
