//! The queue as a whole: its count ([`DelayQueue::len`]), when a value comes out next
//! ([`DelayQueue::next_deadline`]), and [`DelayQueue::clear`].
//!
//! A clear is the timer's scan of its slots (`timer/values.rs`, `clear_values`), claiming each
//! pending value as a remove does, with no advance running; then, still with no advance running,
//! the ready list's values, counting them all out under the ready list's locks (`ready/`,
//! "Clearing the queue"): a consumer that then finds the queue ended (the timer shut down) or
//! empty reads a count without them.

use std::time::Instant;

use super::DelayQueue;

impl<T> DelayQueue<T> {
    /// Values pending or expired and not yet taken.
    pub fn len(&self) -> usize {
        self.inner.ready.len()
    }

    /// Whether no value is pending or waiting to be taken.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Never later than when a consumer next finds a value, if none is added: `None` when the
    /// queue is empty; the deadline of the oldest expired value while one waits to be taken (it
    /// has passed); otherwise never later than the tick the earliest pending value is due at: the
    /// timer's [`next_wakeup`](crate::Timer::next_wakeup), which may be earlier (a bucket emptied
    /// by removes, a coarse bucket that cascades its values before they are due, a task scheduled
    /// on [`timer`](Self::timer)), and in the past when values are due now. Cheap: a look at the
    /// ready list under its locks and at the timer's queue of buckets. A snapshot, as `len`: any
    /// other call may change it at once.
    ///
    /// This is what the queue offers instead of tokio-util's `peek`, the key of the value that
    /// comes out next: the wheel keeps the values of a bucket above its finest level in no order,
    /// so that key would cost a scan of the timer's slots (docs/design.md, "The delay queue of
    /// values"). On a [`ManualClock`](crate::ManualClock), a simulation can jump to it:
    ///
    /// ```
    /// use delaywheel::queue::DelayQueue;
    /// use delaywheel::{ManualClock, Timer};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    /// let queue = DelayQueue::with_timer(timer);
    /// assert_eq!(queue.next_deadline(), None);
    /// let start = queue.timer().now();
    /// queue.insert("a", Duration::from_millis(40));
    /// while queue.try_recv().is_none() {
    ///     let next = queue.next_deadline().unwrap();
    ///     clock.advance(next.saturating_duration_since(queue.timer().now()));
    ///     queue.advance_clock(Duration::ZERO);
    /// }
    /// assert_eq!(queue.timer().now() - start, Duration::from_millis(40)); // never early, not late
    /// ```
    pub fn next_deadline(&self) -> Option<Instant> {
        let ready = &self.inner.ready;
        if let Some(due) = ready.first_deadline() {
            return Some(due);
        }
        if ready.len() == 0 {
            return None;
        }
        // Values an advance took out of the wheel and has not handed over yet are pending in no
        // bucket: the timer's cursor (`next_work`) stands for them.
        self.timer.next_work()
    }

    /// Removes and drops every value the queue holds, pending or expired and not yet taken: once
    /// it returns, [`len`](Self::len) is 0 and consumers find the queue empty (a waiting
    /// [`recv_timeout`](Self::recv_timeout) or `poll_expired` returns `None`), unless values were
    /// inserted meanwhile. (A [`remove`](Self::remove) racing it counts its value out as it
    /// returns, as `len` counts every call: exact once none is in flight.) Every key of a value
    /// it dropped names nothing any more. Tasks scheduled on the queue's [`timer`](Self::timer)
    /// are not touched.
    ///
    /// It races anything else safely: each value is returned by one [`remove`](Self::remove),
    /// taken by one consumer, or dropped by the clear, exactly once. A value inserted while it
    /// runs may be dropped or kept; one that expires while it runs is dropped, not handed out.
    /// To get the values back instead, take the expired ones (`try_recv_many`) and
    /// [`remove`](Self::remove) the others by key.
    ///
    /// Cost: a scan of every slot the timer's shards have written since their last shrink (about
    /// the most values and tasks it held at once; room reserved by
    /// [`with_capacity`](Self::with_capacity) and not yet handed out is not scanned), each shard
    /// under its lock in turn, each pending value found unlinked from its bucket: linear in that
    /// high-water mark, not in the values it holds (docs/design.md, "The delay queue of values").
    /// It waits for an advance of the timer in progress to finish (the tasks it runs included) and
    /// holds the next one off until the scan is done, so that no value an advance took out of the
    /// wheel comes out after the clear. Called from a timer's own thread (a task of this queue's
    /// timer or of another, a waker one of them runs, a driver or executor thread), it waits for
    /// no advance, as [`Timer::shutdown`](crate::Timer::shutdown) does not: the values of a batch
    /// being fired at that moment, taken out of the wheel and not yet handed over, are not cleared
    /// and come out after it. The values are dropped after the scan, on the calling thread; a value
    /// whose `Drop` panics is dropped all the same, the panic caught, and the clear goes on with
    /// the others and does not panic.
    ///
    /// ```
    /// use delaywheel::queue::DelayQueue;
    /// use delaywheel::{ManualClock, Timer};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    /// let queue = DelayQueue::with_timer(timer);
    /// let expired = queue.insert("expired", Duration::from_millis(10));
    /// let pending = queue.insert("pending", Duration::from_millis(50));
    /// clock.advance(Duration::from_millis(10));
    /// queue.advance_clock(Duration::ZERO);
    ///
    /// queue.clear();
    /// assert!(queue.is_empty() && queue.try_recv().is_none());
    /// assert_eq!((queue.remove(&expired), queue.remove(&pending)), (None, None));
    /// ```
    pub fn clear(&self) {
        let ready = &self.inner.ready;
        let (cleared, expired) = self.timer.clear_values(|pending| ready.clear(pending));
        ready.cleared(cleared);
        for expired in expired {
            crate::unwind::drop_caught(expired);
        }
    }
}
