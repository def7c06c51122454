//! `TimerHandle`: the caller's side of a scheduled task.

use std::fmt;

use crate::counters::Stripe;
use crate::entry::{self, EntryRef, Status};
use crate::sync::Arc;

/// A scheduled task, as seen by whoever scheduled it: the way to cancel it.
///
/// Dropping a handle does **not** cancel the task (fire-and-forget, as in Kafka and Netty); only
/// [`cancel`](TimerHandle::cancel) does. A handle keeps only its small entry alive, and the counter
/// stripe (256 bytes, shared with the handles scheduled on the same thread) its `cancel()` counts on;
/// not the timer.
///
/// # Cancellation
///
/// For every task, exactly one of these happens: it runs once, or one `cancel()` call returns
/// `true` (or the timer shuts down first, and then neither). This holds when `cancel` races the
/// bucket being flushed, the task being fired, or other `cancel` calls.
#[derive(Clone)]
pub struct TimerHandle {
    /// The entry, and the counter stripe of the thread that scheduled it, on which a winning
    /// `cancel()` counts the task out of `len()` (`counters.rs`): the entry itself holds no way back
    /// to the timer. `None` for the handle `Timer::schedule` returns when it could not schedule.
    inner: Option<(EntryRef, Arc<Stripe>)>,
}

impl TimerHandle {
    #[inline]
    pub(crate) fn new(entry: EntryRef, stripe: Arc<Stripe>) -> Self {
        TimerHandle { inner: Some((entry, stripe)) }
    }

    /// A handle to nothing: what `schedule` returns for a task it refused.
    pub(crate) fn refused() -> Self {
        TimerHandle { inner: None }
    }

    fn entry(&self) -> Option<&EntryRef> {
        self.inner.as_ref().map(|(entry, _)| entry)
    }

    /// Cancels the task. Returns `true` iff this call cancelled a pending task, which then never
    /// runs; its closure is dropped before this returns, and `Timer::len` drops at once.
    ///
    /// Returns `false` if the task already ran or started running, was already cancelled, was
    /// abandoned by a shutdown, or was never scheduled.
    pub fn cancel(&self) -> bool {
        self.inner.as_ref().is_some_and(|(entry, stripe)| entry::cancel(entry, stripe))
    }

    /// Whether the task is still waiting: not yet fired, cancelled or abandoned.
    pub fn is_pending(&self) -> bool {
        self.entry().is_some_and(|entry| entry.header().status() == Status::Pending)
    }

    /// Whether the task was claimed for running (it ran, is running, or is queued on an executor).
    pub fn is_fired(&self) -> bool {
        self.entry().is_some_and(|entry| entry.header().status() == Status::Fired)
    }

    /// Whether a `cancel()` call cancelled the task.
    pub fn is_cancelled(&self) -> bool {
        self.entry().is_some_and(|entry| entry.header().status() == Status::Cancelled)
    }
    /// Where the task sits in the wheel right now: level, slot and the bucket's expiration.
    /// **Diagnostic**: a snapshot that the driver may change at any moment (see
    /// [`WheelPosition`](crate::WheelPosition)). `None` if the task is not pending, or is in
    /// transit between buckets during a flush.
    pub fn position(&self) -> Option<crate::WheelPosition> {
        self.entry().and_then(crate::position::of)
    }
}

impl fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.entry() {
            Some(entry) => f.debug_tuple("TimerHandle").field(entry).finish(),
            None => f.write_str("TimerHandle(refused)"),
        }
    }
}
