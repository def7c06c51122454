//! The `async` feature's consumers: [`DelayQueue::poll_expired`], [`DelayQueue::next_expired`] and
//! `futures_core::Stream`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;

use super::{DelayQueue, Expired};

impl<T> DelayQueue<T> {
    /// The oldest expired value: `Ready(Some(_))`; `Ready(None)` if nothing is pending or expired
    /// (as tokio-util's `DelayQueue`, so that the queue is a [`Stream`] that ends when empty);
    /// otherwise `Pending`, and the task is woken when a value expires or the queue becomes empty.
    ///
    /// Any number of tasks may poll at once: each value goes to one of them, and every waiting task
    /// is woken on each change. The timer's driver (or whoever advances a manual timer) does the
    /// waking; this needs no particular executor.
    ///
    /// A task that stops polling stays registered (its waker kept) until the next wake: a value
    /// expiring, the queue becoming empty, a shutdown, or a purge. So that many tasks that poll
    /// once and are gone (a branch of a `select!` that lost) do not keep their memory, the queue
    /// keeps a bounded number of these registrations, about twice the tasks that keep polling (at
    /// least 64): past it, it wakes the tasks it keeps (a spurious wake-up: a task still waiting
    /// polls again) and drops their wakers. A future that may be dropped while it waits is better
    /// served by [`next_expired`](Self::next_expired), whose drop takes its registration out and
    /// which no purge wakes.
    pub fn poll_expired(&self, cx: &mut Context<'_>) -> Poll<Option<Expired<T>>> {
        self.inner.ready.poll_pop(cx, None)
    }

    /// The oldest expired value, waiting for one to expire; `None` once nothing is pending or
    /// expired (see [`poll_expired`](Self::poll_expired)).
    ///
    /// # Cancellation
    ///
    /// Cancel-safe: a value is taken only by the poll that returns it, so dropping the future loses
    /// nothing; and a future dropped while it waits takes its waker out of the queue, so a queue
    /// polled by many short-lived futures keeps none of their tasks.
    pub fn next_expired(&self) -> NextExpired<'_, T> {
        NextExpired { queue: self, registration: 0 }
    }
}

/// The future of [`DelayQueue::next_expired`]: the oldest expired value, or `None` once nothing
/// is pending or expired. Dropped while it waits, it takes its waker out of the queue. Polled again
/// after it returned a value, it waits for the next one.
#[must_use = "futures do nothing unless polled"]
pub struct NextExpired<'a, T> {
    queue: &'a DelayQueue<T>,
    /// Its registration among the queue's waiting tasks (0: none yet).
    registration: u64,
}

impl<T> Future for NextExpired<'_, T> {
    type Output = Option<Expired<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Expired<T>>> {
        let this = self.get_mut();
        this.queue.inner.ready.poll_pop(cx, Some(&mut this.registration))
    }
}

impl<T> Drop for NextExpired<'_, T> {
    fn drop(&mut self) {
        if self.registration != 0 {
            self.queue.inner.ready.unregister(self.registration);
        }
    }
}

impl<T> std::fmt::Debug for NextExpired<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NextExpired").field("registration", &self.registration).finish_non_exhaustive()
    }
}

/// The expired values, ending when nothing is pending or expired.
impl<T> Stream for DelayQueue<T> {
    type Item = Expired<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Expired<T>>> {
        self.poll_expired(cx)
    }
}

/// The same stream through a shared reference, for consumers that share the queue.
impl<T> Stream for &DelayQueue<T> {
    type Item = Expired<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Expired<T>>> {
        self.poll_expired(cx)
    }
}
