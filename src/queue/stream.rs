//! The `async` feature's consumers: [`DelayQueue::poll_expired`], [`DelayQueue::next_expired`] and
//! `futures_core::Stream`.

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
    pub fn poll_expired(&self, cx: &mut Context<'_>) -> Poll<Option<Expired<T>>> {
        self.inner.ready.poll_pop(cx)
    }

    /// The oldest expired value, waiting for one to expire; `None` once nothing is pending or
    /// expired (see [`poll_expired`](Self::poll_expired)).
    ///
    /// # Cancellation
    ///
    /// Cancel-safe: a value is taken only by the poll that returns it, so dropping the future loses
    /// nothing.
    pub async fn next_expired(&self) -> Option<Expired<T>> {
        std::future::poll_fn(|cx| self.poll_expired(cx)).await
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
