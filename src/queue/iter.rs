//! The blocking consumers in the shape of `std::sync::mpsc::Receiver`: [`DelayQueue::recv`], a
//! blocking iterator ([`DelayQueue::iter`], and `for expired in &queue`) and a draining one
//! ([`DelayQueue::try_iter`]). Each is a loop over what `ready/` already offers (`pop_timeout`
//! without end, `try_pop`): one value per step, taken by exactly one consumer.

use std::fmt;
use std::iter::FusedIterator;
use std::time::Duration;

use super::{DelayQueue, Expired};

impl<T> DelayQueue<T> {
    /// The oldest expired value, waiting for one to expire for as long as it takes; `None` at once
    /// if nothing is pending or expired, and as soon as the queue becomes empty while waiting (the
    /// last pending values were removed or cleared), or its timer shuts down.
    ///
    /// [`recv_timeout`](Self::recv_timeout) without its limit. On a manual timer values expire only
    /// when some thread advances it: waiting here with no other thread to do it waits for ever.
    ///
    /// ```
    /// use delaywheel::queue::DelayQueue;
    /// use std::time::{Duration, Instant};
    ///
    /// let queue = DelayQueue::new(); // its own driver thread
    /// let start = Instant::now();
    /// queue.insert("retry", Duration::from_millis(20));
    /// let expired = queue.recv().expect("a value was pending");
    /// assert_eq!(expired.into_inner(), "retry");
    /// assert!(start.elapsed() >= Duration::from_millis(20), "never early");
    /// assert!(queue.recv().is_none(), "nothing pending any more");
    /// ```
    pub fn recv(&self) -> Option<Expired<T>> {
        self.inner.ready.pop_timeout(Duration::MAX)
    }

    /// A blocking iterator over the values as they expire: each step is a [`recv`](Self::recv), so
    /// the iteration ends when nothing is pending or expired (or the timer shuts down), as
    /// `Receiver::iter` ends when every sender is gone. Values inserted after the end are not seen:
    /// iterate again.
    ///
    /// Any number of threads may iterate one queue at once: each value goes to one of them.
    ///
    /// ```
    /// use delaywheel::queue::DelayQueue;
    /// use std::time::Duration;
    ///
    /// let queue = DelayQueue::new();
    /// for (message, delay) in [("c", 30), ("a", 10), ("b", 20)] {
    ///     queue.insert(message, Duration::from_millis(delay));
    /// }
    /// let order: Vec<&str> = queue.iter().map(|expired| expired.into_inner()).collect();
    /// assert_eq!(order, ["a", "b", "c"]); // deadline order; ends once the last is taken
    /// ```
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { queue: self, done: false }
    }

    /// An iterator over the values expired so far, which never waits: each step is a
    /// [`try_recv`](Self::try_recv), so it ends at the first moment nothing has expired, as
    /// `Receiver::try_iter` does. ([`try_recv_many`](Self::try_recv_many) takes a batch in one lock
    /// round.)
    pub fn try_iter(&self) -> TryIter<'_, T> {
        TryIter { queue: self }
    }
}

/// The blocking iterator of [`DelayQueue::iter`]: yields each value as it expires, and ends (for
/// good: it is fused) once nothing is pending or expired.
#[must_use = "iterators do nothing unless iterated"]
pub struct Iter<'a, T> {
    queue: &'a DelayQueue<T>,
    done: bool,
}

impl<T> Iterator for Iter<'_, T> {
    type Item = Expired<T>;

    fn next(&mut self) -> Option<Expired<T>> {
        if self.done {
            return None;
        }
        let next = self.queue.recv();
        self.done = next.is_none();
        next
    }
}

impl<T> FusedIterator for Iter<'_, T> {}

impl<'a, T> IntoIterator for &'a DelayQueue<T> {
    type Item = Expired<T>;
    type IntoIter = Iter<'a, T>;

    /// [`DelayQueue::iter`]: `for expired in &queue { … }` takes the values as they expire.
    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

/// The iterator of [`DelayQueue::try_iter`]: yields the values expired so far, never waiting.
#[must_use = "iterators do nothing unless iterated"]
pub struct TryIter<'a, T> {
    queue: &'a DelayQueue<T>,
}

impl<T> Iterator for TryIter<'_, T> {
    type Item = Expired<T>;

    fn next(&mut self) -> Option<Expired<T>> {
        self.queue.try_recv()
    }
}

impl<T> fmt::Debug for Iter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter").field("queue", self.queue).field("done", &self.done).finish()
    }
}

impl<T> fmt::Debug for TryIter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TryIter").field("queue", self.queue).finish()
    }
}
