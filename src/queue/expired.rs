//! What a [`DelayQueue`](super::DelayQueue) hands out: an [`Expired`] value, or a refused one
//! inside an [`InsertError`].

use std::error::Error;
use std::fmt;
use std::time::Instant;

use super::Key;
use crate::ScheduleError;

/// A value whose deadline has passed, taken from a [`DelayQueue`](super::DelayQueue), with the key
/// it was inserted under and its deadline.
#[derive(Debug)]
pub struct Expired<T> {
    pub(super) value: T,
    pub(super) key: Key,
    pub(super) deadline: Instant,
}

impl<T> Expired<T> {
    /// The value.
    pub fn get_ref(&self) -> &T {
        &self.value
    }

    /// The value, mutably.
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.value
    }

    /// The value, by value.
    pub fn into_inner(self) -> T {
        self.value
    }

    /// The key the value was inserted under. It names nothing in the queue any more.
    pub fn key(&self) -> Key {
        self.key
    }

    /// The deadline the value expired at (the last one set, if it was re-armed), on the timer's
    /// clock (see [`Timer::now`](crate::Timer::now)). The value came out at or after it.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

/// A value a [`DelayQueue`](super::DelayQueue) refused, handed back with the reason, as std's
/// `TrySendError` does. Returned by [`try_insert`](super::DelayQueue::try_insert) and
/// [`try_insert_at`](super::DelayQueue::try_insert_at).
pub struct InsertError<T> {
    pub(super) value: T,
    pub(super) error: ScheduleError,
}

impl<T> InsertError<T> {
    /// Why the value was refused: [`ScheduleError::ShutDown`] once the queue's timer is shut down,
    /// [`ScheduleError::TooManyPending`] when the timer holds its
    /// [`max_pending`](crate::TimerBuilder::max_pending) tasks, [`ScheduleError::DelayTooLong`] for
    /// a deadline beyond the timer's range.
    pub fn error(&self) -> &ScheduleError {
        &self.error
    }

    /// The refused value.
    pub fn into_inner(self) -> T {
        self.value
    }
}

/// Shows the reason only, so that it exists for every `T`.
impl<T> fmt::Debug for InsertError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InsertError").field("error", &self.error).finish_non_exhaustive()
    }
}

impl<T> fmt::Display for InsertError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "value refused by the delay queue: {}", self.error)
    }
}

impl<T> Error for InsertError<T> {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.error)
    }
}
