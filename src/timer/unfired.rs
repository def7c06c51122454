//! `UnfiredTask`: what `Timer::shutdown` hands back.
//!
//! Running one runs its closure, which for a task of the crate's own (the wake-up of an async
//! `Sleep`) must not mean that its deadline came: the sleep would complete early. So
//! [`UnfiredTask::run`] marks its thread as running an unfired task of its timer (a thread-local,
//! as `advancing.rs` marks an advance), and a wake-up run under that mark does what its drop
//! does: the sleep is dead (`sleep/slot.rs`, `Notify`).

use std::cell::Cell;
use std::fmt;
use std::time::Duration;

use crate::entry::Task;

// Through the facade, as `advancing.rs`: under loom, model threads may share one OS thread.
crate::sync::thread_local! {
    /// The timer whose unfired task this thread is running, or 0.
    static RUNNING: Cell<usize> = const { Cell::new(0) };
}

/// A timer's identity (`Shared::id`: no other timer's, also once this one is gone), as a task of
/// the crate's own keeps it to ask [`runs_unfired_here`](TimerId::runs_unfired_here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimerId(pub(super) usize);

impl TimerId {
    /// A new timer's identity: never 0 (no timer), never one handed out before. Not the shared
    /// state's address, which a timer built after this one is dropped may take: an unfired task
    /// outlives its timer, and run then, its mark must not name the later timer, whose sleeps'
    /// wake-ups would take themselves for unfired tasks.
    pub(super) fn fresh() -> usize {
        // Not a loom atomic: the count orders nothing, and a static one of loom's would outlive its
        // model. (A 64-bit count never wraps; a 32-bit one only after four billion timers.)
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether this thread is inside [`UnfiredTask::run`] of a task of this timer: the task runs
    /// because a shutdown handed it back, not because its deadline came.
    #[cfg(feature = "async")]
    #[inline]
    pub(crate) fn runs_unfired_here(self) -> bool {
        RUNNING.try_with(Cell::get).is_ok_and(|timer| timer == self.0)
    }
}

/// A task the timer still held when it shut down, handed back unrun.
pub struct UnfiredTask {
    pub(crate) deadline: Duration,
    pub(crate) task: Task,
    /// The timer it comes from.
    pub(crate) timer: TimerId,
}

impl UnfiredTask {
    /// When the task was due, as time since the clock's origin: its deadline, exact as
    /// [`TimerHandle::deadline`](crate::TimerHandle::deadline) gives it (a tick boundary where
    /// that is). A deadline before the origin, which no `Duration` since it can say, is zero.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// Runs the task now, on this thread.
    ///
    /// A task the crate scheduled for an async `Sleep` (or a `Timeout` or `Interval` built on one)
    /// does not complete that sleep when run this way, since its deadline has not come: it does
    /// what dropping it does (the sleep stays pending, dead of
    /// [`ScheduleError::ShutDown`](crate::ScheduleError::ShutDown), and its waker is woken once).
    pub fn run(self) {
        let _running = Running::enter(self.timer);
        (self.task)()
    }
}

/// Marks this thread as running an unfired task of `timer` until dropped (also by unwinding);
/// restores the previous mark (an unfired task may run another timer's).
struct Running(usize);

impl Running {
    fn enter(timer: TimerId) -> Running {
        Running(RUNNING.with(|running| running.replace(timer.0)))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.with(|running| running.set(self.0));
    }
}

impl fmt::Debug for UnfiredTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnfiredTask").field("deadline", &self.deadline).finish_non_exhaustive()
    }
}
