//! `TimerHandle`: the caller's side of a scheduled task.

use std::fmt;

use super::{cancel, position, HandleStripe};
use crate::entry::{self, Status, Ticket};
use crate::sync::Arc;

/// A scheduled task, as seen by whoever scheduled it: the way to cancel it.
///
/// Dropping a handle does **not** cancel the task (fire-and-forget, as in Kafka and Netty); only
/// [`cancel`](TimerHandle::cancel) does. A handle names its task by slot and generation in the
/// timer's entry arena (`entry/arena.rs`), and keeps that arena and the timer's wheel (not the timer, nor
/// its threads) alive through the counter stripe (shared with the handles scheduled on the same
/// thread) its `cancel()` counts on. It keeps
/// no task alive: once the task has fired or been cancelled, its slot is reused by later tasks, and
/// the handle's generation no longer matches.
///
/// # Cancellation
///
/// For every task, exactly one of these happens: it runs once, or one `cancel()` call returns
/// `true` (or the timer shuts down first, and then neither). This holds when `cancel` races the
/// bucket being flushed, the task being fired, or other `cancel` calls.
#[derive(Clone)]
pub struct TimerHandle {
    /// The counter stripe of the thread that scheduled the task, on which a winning `cancel()`
    /// counts it out of `len()` (`counters.rs`), and through which the handle reaches the timer's
    /// entry arena; and the ticket naming the entry there. `None` for the handle `Timer::schedule`
    /// returns when it could not schedule.
    inner: Option<(Arc<HandleStripe>, Ticket)>,
}

// A handle is the stripe's `Arc` and a 16-byte ticket, the `Option` in the `Arc`'s niche (loom's
// `Arc` is bigger).
#[cfg(not(delaywheel_loom))]
const _: () = assert!(std::mem::size_of::<TimerHandle>() == 24);

impl TimerHandle {
    #[inline]
    pub(crate) fn new(stripe: Arc<HandleStripe>, ticket: Ticket) -> Self {
        TimerHandle { inner: Some((stripe, ticket)) }
    }

    /// A handle to nothing: what `schedule` returns for a task it refused.
    pub(crate) fn refused() -> Self {
        TimerHandle { inner: None }
    }

    fn status(&self) -> Option<Status> {
        self.inner.as_ref().and_then(|(stripe, ticket)| entry::status(&stripe.context().arena, *ticket))
    }

    /// Cancels the task. Returns `true` iff this call cancelled a pending task, which then never
    /// runs; its closure is dropped before this returns, and `Timer::len` drops at once.
    ///
    /// Returns `false` if the task already ran or started running, was already cancelled, was
    /// abandoned by a shutdown, or was never scheduled.
    ///
    /// # Panics
    ///
    /// Only if the closure's own `Drop` panics: that panic leaves this call, after the task was
    /// cancelled and counted and its slot freed (nothing leaks; the cancel happened).
    pub fn cancel(&self) -> bool {
        self.inner.as_ref().is_some_and(|(stripe, ticket)| cancel::cancel(*ticket, stripe))
    }

    /// Whether the task is still waiting: not yet fired, cancelled or abandoned. Exact at all times.
    pub fn is_pending(&self) -> bool {
        self.status() == Some(Status::Pending)
    }

    /// Whether the task was claimed for running (it ran, is running, or is queued on an executor).
    ///
    /// How a task ended is kept in its slot of the timer's entry arena until a later task reuses
    /// the slot; after that this returns `false` (as does [`is_cancelled`](TimerHandle::is_cancelled)):
    /// the handle only knows its task is no longer pending. Freed slots are reused roughly oldest
    /// first, so that usually takes many further schedules, but there is no fixed number: a busy
    /// timer reuses the slot sooner or later. The exact record of a cancellation is the result of
    /// [`cancel`](TimerHandle::cancel); of a run, the task itself.
    pub fn is_fired(&self) -> bool {
        self.status() == Some(Status::Fired)
    }

    /// Whether a `cancel()` call cancelled the task. Exact until the task's slot is reused, like
    /// [`is_fired`](TimerHandle::is_fired).
    pub fn is_cancelled(&self) -> bool {
        self.status() == Some(Status::Cancelled)
    }
    /// Where the task sits in the wheel right now: level, slot and the bucket's expiration.
    /// **Diagnostic**: a snapshot that the driver may change at any moment (see
    /// [`WheelPosition`](crate::WheelPosition)). `None` if the task is not pending, or is in
    /// transit between buckets during a flush.
    pub fn position(&self) -> Option<position::WheelPosition> {
        self.inner.as_ref().and_then(|(stripe, ticket)| position::of(stripe.context(), *ticket))
    }
}

impl fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Some((_, ticket)) => f
                .debug_struct("TimerHandle")
                .field("slot", &ticket.id.index())
                .field("status", &self.status())
                .finish(),
            None => f.write_str("TimerHandle(refused)"),
        }
    }
}
