//! `DelayQueue`: the non-empty buckets, ordered by expiration, and the driver's wait for the next one.
//!
//! A binary min-heap of `(expiration, bucket)` behind one lock, plus a condition variable. Only
//! buckets whose expiration was just set (or lowered) are pushed, so the heap holds about one entry
//! per non-empty bucket, however many timers there are, and an idle timer has an empty heap.
//!
//! ## Waiting
//!
//! Kafka's `poll(timeout)` is split in two: [`wait_due`](DelayQueue::wait_due) blocks (real time,
//! condition variable) and [`poll_due`](DelayQueue::poll_due) pops without waiting. The clockless
//! half is all the algorithm needs on a manual clock, and is what the loom models drive; the timed
//! wait stays a thin wrapper around it (`Timer::advance_clock`).
//!
//! [`wait_due`](DelayQueue::wait_due) sleeps until the head bucket's expiration tick begins on the
//! clock, a timeout passes, or it is woken. It is woken when an **earlier** bucket becomes the head
//! ([`offer`](DelayQueue::offer) notifies only then), when a manual clock advances, and on close.
//! The waiter reads the clock and the head under the queue lock and every waker notifies under the
//! same lock, so no wake-up is lost. With an empty heap it waits without a timeout: an idle timer
//! burns no CPU and never ticks through empty slots.
//!
//! A popped entry may be stale: a lowering of its bucket's expiration queued the bucket again at an
//! earlier tick, and a visit since has moved the expiration on. The bucket's visit recognises it
//! (the bucket is not due at the cursor) and does nothing (`bucket/`).

use std::cmp::{Ordering as CmpOrdering, Reverse};
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use crate::bucket::TimerTaskList;
use crate::clock::{ClockSource, TickLength};
use crate::sync::{Arc, Condvar, Mutex};

/// A bucket queued at an expiration tick.
struct Queued {
    expiration: u64,
    bucket: Arc<TimerTaskList>,
}

impl Queued {
    fn key(&self) -> (u64, u64) {
        (self.expiration, self.bucket.id())
    }
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Queued {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        self.key().cmp(&other.key())
    }
}

#[derive(Default)]
struct QueueState {
    heap: BinaryHeap<Reverse<Queued>>,
    closed: bool,
}

/// The shared delay queue of buckets (Kafka's `DelayQueue<TimerTaskList>`).
pub(crate) struct DelayQueue {
    state: Mutex<QueueState>,
    changed: Condvar,
}

impl DelayQueue {
    pub(crate) fn new() -> Self {
        DelayQueue { state: Mutex::new(QueueState::default()), changed: Condvar::new() }
    }

    /// Queues `bucket` at `expiration`; wakes the waiter if it is now the earliest.
    pub(crate) fn offer(&self, expiration: u64, bucket: Arc<TimerTaskList>) {
        let mut state = self.state.lock();
        let earliest = state.heap.peek().map_or(true, |Reverse(head)| expiration < head.expiration);
        state.heap.push(Reverse(Queued { expiration, bucket }));
        if earliest {
            self.changed.notify_all();
        }
    }

    /// Pops the earliest bucket if it is due at `now_tick`; never waits.
    pub(crate) fn poll_due(&self, now_tick: u64) -> Option<(u64, Arc<TimerTaskList>)> {
        let mut state = self.state.lock();
        match state.heap.peek() {
            Some(Reverse(head)) if head.expiration <= now_tick => {
                let Reverse(Queued { expiration, bucket }) = state.heap.pop()?;
                Some((expiration, bucket))
            }
            _ => None,
        }
    }

    /// Number of queued entries (about the number of non-empty buckets).
    pub(crate) fn len(&self) -> usize {
        self.state.lock().heap.len()
    }

    /// The earliest queued expiration, if any (a stale entry's included: never later than the
    /// earliest live one).
    pub(crate) fn head(&self) -> Option<u64> {
        self.state.lock().heap.peek().map(|Reverse(head)| head.expiration)
    }

    /// Blocks until the head bucket is due, `timeout` (if any) passes, or the queue is closed.
    /// Returns `true` if a bucket is due. On a manual clock a bucket can only become due when the
    /// clock advances, which wakes this wait (see `ManualClock::on_advance`).
    pub(crate) fn wait_due(&self, clock: &ClockSource, ticks: TickLength, timeout: Option<Duration>) -> bool {
        let give_up = timeout.and_then(|t| Instant::now().checked_add(t));
        let mut state = self.state.lock();
        loop {
            if state.closed {
                return false;
            }
            let now = clock.now_nanos();
            let head = state.heap.peek().map(|Reverse(head)| head.expiration);
            if head.is_some_and(|expiration| expiration <= ticks.floor(now)) {
                return true;
            }
            // How long until the head is due, in real time (unknown on a manual clock).
            let until_head = match (head, clock.is_manual()) {
                (Some(expiration), false) => {
                    let nanos = ticks.start_nanos(expiration).saturating_sub(u128::from(now));
                    Some(Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX)))
                }
                _ => None,
            };
            let until_give_up = match give_up {
                Some(at) => match at.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => return false,
                },
                None => None,
            };
            match until_head.into_iter().chain(until_give_up).min() {
                Some(wait) => {
                    self.changed.wait_for(&mut state, wait);
                }
                None => self.changed.wait(&mut state),
            }
        }
    }

    /// Wakes every waiter to look at the clock again (a manual clock advanced). (Unused under loom:
    /// no driver in models.)
    #[cfg_attr(delaywheel_loom, allow(dead_code))]
    pub(crate) fn wake(&self) {
        let _state = self.state.lock();
        self.changed.notify_all();
    }

    /// Closes the queue: waiters return at once and for good. Drops every queued bucket reference.
    pub(crate) fn close(&self) {
        let mut state = self.state.lock();
        state.closed = true;
        state.heap.clear();
        self.changed.notify_all();
    }
}

impl std::fmt::Debug for DelayQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelayQueue").field("len", &self.len()).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    fn bucket(slot: usize) -> Arc<TimerTaskList> {
        Arc::new(TimerTaskList::new(0, slot))
    }

    #[test]
    fn polls_in_expiration_order_and_only_when_due() {
        let q = DelayQueue::new();
        q.offer(30, bucket(3));
        q.offer(10, bucket(1));
        q.offer(20, bucket(2));
        assert_eq!(q.len(), 3);
        assert!(q.poll_due(9).is_none());
        let order: Vec<u64> = std::iter::from_fn(|| q.poll_due(25).map(|(e, _)| e)).collect();
        assert_eq!(order, vec![10, 20]);
        assert_eq!(q.poll_due(u64::MAX).map(|(e, _)| e), Some(30));
        assert!(q.poll_due(u64::MAX).is_none());
    }

    #[test]
    fn manual_clock_wait_with_timeout_returns() {
        let q = DelayQueue::new();
        let clock = ClockSource::Manual(ManualClock::new());
        let ticks = TickLength::new(Duration::from_millis(1)).unwrap();
        q.offer(5, bucket(0));
        assert!(!q.wait_due(&clock, ticks, Some(Duration::from_millis(5))));
        if let ClockSource::Manual(c) = &clock {
            c.advance(Duration::from_millis(5));
        }
        assert!(q.wait_due(&clock, ticks, Some(Duration::from_millis(5))));
    }

    #[test]
    fn earlier_offer_wakes_a_system_clock_waiter() {
        let q = Arc::new(DelayQueue::new());
        let clock = ClockSource::system();
        let ticks = TickLength::new(Duration::from_millis(1)).unwrap();
        q.offer(3_600_000, bucket(0)); // an hour away
        let waiter = {
            let (q, clock) = (Arc::clone(&q), clock.clone());
            std::thread::spawn(move || q.wait_due(&clock, ticks, None))
        };
        std::thread::sleep(Duration::from_millis(50));
        q.offer(0, bucket(1)); // due now: the waiter must not sleep for an hour
        assert!(waiter.join().unwrap());
    }

    #[test]
    fn close_releases_waiters() {
        let q = Arc::new(DelayQueue::new());
        let waiter = {
            let q = Arc::clone(&q);
            std::thread::spawn(move || {
                let ticks = TickLength::new(Duration::from_millis(1)).unwrap();
                q.wait_due(&ClockSource::system(), ticks, None)
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        q.close();
        assert!(!waiter.join().unwrap());
    }
}
