//! `UnfiredTask`: what `Timer::shutdown` hands back.

use std::fmt;
use std::time::Duration;

use crate::entry::Task;

/// A task the timer still held when it shut down, handed back unrun.
pub struct UnfiredTask {
    pub(crate) deadline: Duration,
    pub(crate) task: Task,
}

impl UnfiredTask {
    /// When the task was due, as time since the clock's origin: its deadline, exact as
    /// [`TimerHandle::deadline`](crate::TimerHandle::deadline) gives it (and rounded up to its
    /// tick where that is).
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// Runs the task now, on this thread.
    pub fn run(self) {
        (self.task)()
    }
}

impl fmt::Debug for UnfiredTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnfiredTask").field("deadline", &self.deadline).finish_non_exhaustive()
    }
}
