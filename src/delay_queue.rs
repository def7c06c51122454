//! `DelayQueue`: what is due when, ordered by expiration, and the wait for the next one.
//!
//! A binary min-heap of `(expiration, item)` behind one lock, plus a condition variable. It orders
//! whatever it is given (an [`Identity`] breaks ties between items due at one tick) and reads time
//! through a [`Timeline`]: it knows no bucket and no clock. The timer queues its buckets here, and
//! only those whose expiration was just set (or lowered), so the heap holds about one entry per
//! non-empty bucket, however many timers there are, and an idle timer has an empty heap.
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
//! burns no CPU and never ticks through empty slots. The driver's wait has one more bound, when
//! the next automatic shrink may come once the timer has held a spike
//! ([`wait_due_within`](DelayQueue::wait_due_within)), read under the same lock at every wake. It
//! also returns when **another thread popped** a due item meanwhile (every pop notifies the
//! waiters, if any): a caller waiting for the head it saw (`advance_clock(timeout)` beside a driver
//! thread) then stops waiting for it, since whoever popped it is flushing it.
//!
//! ## Rounds: bounded work per advance
//!
//! An advance pops everything due in one **round**: [`round`](DelayQueue::round) marks its start,
//! and [`poll_due`](DelayQueue::poll_due) sets aside the items offered by
//! [`offer_next`](DelayQueue::offer_next) since that mark (the advance files there, once its
//! visits are over, the entries that were scheduled while it runs, found due in a bucket it
//! visits: a task scheduling zero delays, another thread scheduling meanwhile); [`end_round`](DelayQueue::end_round) puts them
//! back, due, so the next advance takes them. Items offered by [`offer`](DelayQueue::offer) (a
//! schedule) and [`offer_within`](DelayQueue::offer_within) (the advance's re-queues and cascades)
//! are popped in the round: the bucket a schedule queues may also hold older entries due now
//! (a cascade may have filed one there after the schedule lowered its expiration), and the visit
//! takes only those, by their stamps (`timer/advance.rs`). So one advance does bounded work, even
//! under a chain of zero delays that would otherwise never let it return.
//!
//! A popped entry may be stale: a lowering of its bucket's expiration queued the bucket again at an
//! earlier tick, and a visit since has moved the expiration on. The bucket's visit recognises it
//! (the bucket is not due at the cursor) and does nothing (`wheel/bucket/`).

use std::cmp::{Ordering as CmpOrdering, Reverse};
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use crate::sync::{Condvar, Mutex};

/// What breaks ties between items due at the same tick: a stable identity, so that their order
/// does not depend on when they were queued.
pub(crate) trait Identity {
    /// The item's identity; items due at one tick pop in its order.
    fn identity(&self) -> u64;
}

/// Time as the queue needs it: the current tick, and how long until a tick begins.
pub(crate) trait Timeline {
    /// The current tick.
    fn now_tick(&self) -> u64;
    /// Real time until `tick` begins; `None` if only a wake-up tells (a manual clock).
    fn until(&self, tick: u64) -> Option<Duration>;
}

/// An item queued at an expiration tick, with the number of its offer (0 for a round's own).
struct Queued<T> {
    expiration: u64,
    offer: u64,
    item: T,
}

impl<T: Identity> Queued<T> {
    fn key(&self) -> (u64, u64) {
        (self.expiration, self.item.identity())
    }
}

impl<T: Identity> PartialEq for Queued<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl<T: Identity> Eq for Queued<T> {}
impl<T: Identity> PartialOrd for Queued<T> {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl<T: Identity> Ord for Queued<T> {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        self.key().cmp(&other.key())
    }
}

struct QueueState<T> {
    heap: BinaryHeap<Reverse<Queued<T>>>,
    closed: bool,
    /// Offers made so far by [`DelayQueue::offer_next`]: the number of the latest.
    offers: u64,
    /// Due items set aside by the current round (offered after its start).
    deferred: Vec<Queued<T>>,
    /// Items popped so far, and threads in `wait_due` (only they need a pop's notification).
    pops: u64,
    waiters: usize,
}

/// A delay queue (Kafka's `DelayQueue`, of `TimerTaskList`s there and in the timer).
pub(crate) struct DelayQueue<T> {
    state: Mutex<QueueState<T>>,
    changed: Condvar,
}

impl<T: Identity> DelayQueue<T> {
    pub(crate) fn new() -> Self {
        DelayQueue {
            state: Mutex::new(QueueState {
                heap: BinaryHeap::new(),
                closed: false,
                offers: 0,
                deferred: Vec::new(),
                pops: 0,
                waiters: 0,
            }),
            changed: Condvar::new(),
        }
    }

    /// Queues `item` at `expiration`; wakes the waiter if it is now the earliest.
    pub(crate) fn offer(&self, expiration: u64, item: T) {
        let mut state = self.state.lock();
        self.push(&mut state, Queued { expiration, offer: 0, item });
    }

    /// [`offer`](DelayQueue::offer), but a round already under way leaves it to the next one if it
    /// is due ([`round`](DelayQueue::round)).
    pub(crate) fn offer_next(&self, expiration: u64, item: T) {
        let mut state = self.state.lock();
        state.offers += 1;
        let offer = state.offers;
        self.push(&mut state, Queued { expiration, offer, item });
    }

    /// Queues `item` at `expiration` from inside the current round (its own re-queues), which may
    /// pop it.
    pub(crate) fn offer_within(&self, expiration: u64, item: T) {
        let mut state = self.state.lock();
        self.push(&mut state, Queued { expiration, offer: 0, item });
    }

    fn push(&self, state: &mut QueueState<T>, queued: Queued<T>) {
        let earliest = state.heap.peek().map_or(true, |Reverse(head)| queued.expiration < head.expiration);
        state.heap.push(Reverse(queued));
        if earliest {
            self.changed.notify_all();
        }
    }

    /// Starts a round: the mark that [`poll_due`](DelayQueue::poll_due) takes.
    pub(crate) fn round(&self) -> u64 {
        self.state.lock().offers
    }

    /// Pops the earliest item if it is due at `now_tick`; never waits. Due items offered after the
    /// round `round` began by [`offer_next`](DelayQueue::offer_next) are set aside until
    /// [`end_round`](DelayQueue::end_round). Nothing once closed.
    pub(crate) fn poll_due(&self, now_tick: u64, round: u64) -> Option<(u64, T)> {
        let mut state = self.state.lock();
        if state.closed {
            // Shut down: an advance still running stops at its current bucket.
            return None;
        }
        loop {
            match state.heap.peek() {
                Some(Reverse(head)) if head.expiration <= now_tick => {
                    let Reverse(queued) = state.heap.pop()?;
                    if queued.offer > round {
                        state.deferred.push(queued);
                        continue;
                    }
                    state.pops += 1;
                    if state.waiters > 0 {
                        self.changed.notify_all();
                    }
                    return Some((queued.expiration, queued.item));
                }
                _ => return None,
            }
        }
    }

    /// Ends a round: the items it set aside are queued again (due: the next round takes them).
    pub(crate) fn end_round(&self) {
        let mut state = self.state.lock();
        while let Some(queued) = state.deferred.pop() {
            self.push(&mut state, queued);
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

    /// Blocks until the head item is due on `time`, `timeout` (if any) passes, or the queue is
    /// closed. Returns `true` if an item is due. On a manual clock an item can only become due when
    /// the clock advances, which wakes this wait (see `ManualClock::on_advance`).
    pub(crate) fn wait_due(&self, time: &impl Timeline, timeout: Option<Duration>) -> bool {
        self.wait_due_within(time, || timeout)
    }

    /// [`wait_due`](DelayQueue::wait_due) with a timeout that `bound` gives, read under the queue
    /// lock at the start and again at every wake (the earliest instant it gave is kept): a waker
    /// that changes what `bound` reads, then calls [`wake`](DelayQueue::wake), cuts the wait short
    /// whenever it comes, as a manual clock's advance does (the driver's wait for a shrink:
    /// `timer/shrink.rs`, `Shared::shrink_wait`).
    pub(crate) fn wait_due_within(&self, time: &impl Timeline, bound: impl Fn() -> Option<Duration>) -> bool {
        let mut state = self.state.lock();
        let pops = state.pops;
        state.waiters += 1;
        let due = self.wait_locked(&mut state, time, &bound, pops);
        state.waiters -= 1;
        due
    }

    fn wait_locked(
        &self,
        state: &mut crate::sync::MutexGuard<'_, QueueState<T>>,
        time: &impl Timeline,
        bound: &impl Fn() -> Option<Duration>,
        pops: u64,
    ) -> bool {
        let mut give_up: Option<Instant> = None;
        loop {
            if state.closed {
                return false;
            }
            if state.pops != pops {
                // Another thread took a due item: it is flushing what this wait was for.
                return true;
            }
            let head = state.heap.peek().map(|Reverse(head)| head.expiration);
            if head.is_some_and(|expiration| expiration <= time.now_tick()) {
                return true;
            }
            // Read under the lock, as the clock and the head: a wake after a change is not lost.
            let at = bound().and_then(|bound| Instant::now().checked_add(bound));
            give_up = give_up.into_iter().chain(at).min();
            // How long until the head is due, in real time (unknown on a manual clock).
            let until_head = head.and_then(|expiration| time.until(expiration));
            let until_give_up = match give_up {
                Some(at) => match at.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => return false,
                },
                None => None,
            };
            match until_head.into_iter().chain(until_give_up).min() {
                Some(wait) => {
                    self.changed.wait_for(state, wait);
                }
                None => self.changed.wait(state),
            }
        }
    }

    /// Wakes every waiter to look at the clock (a manual clock advanced) and its bound again
    /// ([`wait_due_within`](DelayQueue::wait_due_within)). (Unused under loom: no driver in models.)
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
        state.deferred.clear();
        self.changed.notify_all();
    }
}

impl<T: Identity> std::fmt::Debug for DelayQueue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelayQueue").field("len", &self.len()).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::{Arc, AtomicU64, Ordering};
    use std::time::Instant;

    impl Identity for u64 {
        fn identity(&self) -> u64 {
            *self
        }
    }

    /// Ticks of a millisecond since the start, on the real clock.
    struct Millis(Instant);

    impl Timeline for Millis {
        fn now_tick(&self) -> u64 {
            self.0.elapsed().as_millis() as u64
        }
        fn until(&self, tick: u64) -> Option<Duration> {
            Some((self.0 + Duration::from_millis(tick)).saturating_duration_since(Instant::now()))
        }
    }

    /// A clock that moves only when told to (no real time until a tick).
    struct Manual(AtomicU64);

    impl Timeline for Manual {
        fn now_tick(&self) -> u64 {
            self.0.load(Ordering::Relaxed)
        }
        fn until(&self, _: u64) -> Option<Duration> {
            None
        }
    }

    #[test]
    fn polls_in_expiration_order_then_identity_and_only_when_due() {
        let q = DelayQueue::new();
        q.offer(30, 3);
        q.offer(10, 7);
        q.offer(20, 2);
        q.offer(10, 1);
        assert_eq!(q.len(), 4);
        assert!(q.poll_due(9, u64::MAX).is_none());
        let order: Vec<_> = std::iter::from_fn(|| q.poll_due(25, u64::MAX)).collect();
        assert_eq!(order, [(10, 1), (10, 7), (20, 2)]);
        assert_eq!(q.poll_due(u64::MAX, u64::MAX), Some((30, 3)));
        assert!(q.poll_due(u64::MAX, u64::MAX).is_none());
    }

    #[test]
    fn a_round_leaves_what_was_filed_for_the_next_round_to_it() {
        let q = DelayQueue::new();
        q.offer(5, 1);
        let round = q.round();
        q.offer_next(4, 2); // filed for the next round while this one runs, and due
        q.offer(5, 4); // a schedule's offer: taken in this round
        q.offer_within(5, 3); // the round's own re-queue
        assert_eq!(q.poll_due(5, round), Some((5, 1)));
        assert_eq!(q.poll_due(5, round), Some((5, 3)));
        assert_eq!(q.poll_due(5, round), Some((5, 4)));
        assert_eq!(q.poll_due(5, round), None, "set aside for the next round");
        q.end_round();
        assert_eq!(q.len(), 1);
        let round = q.round();
        assert_eq!(q.poll_due(5, round), Some((4, 2)));
        q.end_round();
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn a_wait_ends_when_another_thread_pops_the_due_head() {
        let q = Arc::new(DelayQueue::new());
        let time = Arc::new(Manual(AtomicU64::new(0)));
        q.offer(1, 0);
        let waiter = {
            let (q, time) = (Arc::clone(&q), Arc::clone(&time));
            std::thread::spawn(move || q.wait_due(&*time, None))
        };
        // Once the waiter sleeps (it counts itself under the lock it waits with), the manual clock
        // moves without waking it (no listener here), and another thread pops.
        while q.state.lock().waiters == 0 {
            std::thread::yield_now();
        }
        time.0.store(1, Ordering::Relaxed);
        assert_eq!(q.poll_due(1, u64::MAX), Some((1, 0)));
        assert!(waiter.join().unwrap(), "the pop ended the wait");
    }

    #[test]
    fn a_manual_wait_with_timeout_returns_and_sees_the_clock_move() {
        let q = DelayQueue::new();
        let time = Manual(AtomicU64::new(0));
        q.offer(5, 0);
        let start = Instant::now();
        assert!(!q.wait_due(&time, Some(Duration::from_millis(5))), "not due: gives up");
        assert!(start.elapsed() >= Duration::from_millis(5), "after the timeout, not before");
        time.0.store(5, Ordering::Relaxed);
        assert!(q.wait_due(&time, Some(Duration::from_secs(60))), "due at tick 5: at once");
        assert_eq!(q.poll_due(time.now_tick(), u64::MAX), Some((5, 0)));
    }

    #[test]
    fn a_bound_changed_then_woken_ends_a_wait_that_began_without_one() {
        // The driver's wait for a shrink: `bound` reads what another thread changes, then wakes
        // the queue. Read under the lock at every wake, the change is never missed, whether it
        // comes before the wait reads it, while it sleeps, or between the two.
        for round in 0..500 {
            let q = Arc::new(DelayQueue::<u64>::new());
            let bounded = Arc::new(AtomicU64::new(0));
            q.offer(3_600_000, 0); // an hour away
            let (done, result) = std::sync::mpsc::channel();
            {
                let (q, bounded) = (Arc::clone(&q), Arc::clone(&bounded));
                std::thread::spawn(move || {
                    let time = Millis(Instant::now());
                    let bound = || (bounded.load(Ordering::Relaxed) == 1).then_some(Duration::ZERO);
                    done.send(q.wait_due_within(&time, bound)).unwrap();
                });
            }
            if round % 2 == 1 {
                std::thread::yield_now();
            }
            bounded.store(1, Ordering::Relaxed);
            q.wake();
            let ended = result.recv_timeout(Duration::from_secs(10));
            assert_eq!(ended, Ok(false), "round {round}: the bound ran out, nothing due");
        }
    }

    #[test]
    fn earlier_offer_wakes_a_real_time_waiter() {
        let q = Arc::new(DelayQueue::new());
        let time = Arc::new(Millis(Instant::now()));
        q.offer(3_600_000, 0); // an hour away
        let waiter = {
            let (q, time) = (Arc::clone(&q), Arc::clone(&time));
            std::thread::spawn(move || q.wait_due(&*time, None))
        };
        std::thread::sleep(Duration::from_millis(50));
        q.offer(0, 1); // due now: the waiter must not sleep for an hour
        assert!(waiter.join().unwrap());
        assert_eq!(q.poll_due(time.now_tick(), u64::MAX), Some((0, 1)));
    }

    #[test]
    fn close_releases_waiters_and_empties_the_queue() {
        let q = Arc::new(DelayQueue::new());
        q.offer(3_600_000, 0);
        let waiter = {
            let q = Arc::clone(&q);
            std::thread::spawn(move || q.wait_due(&Millis(Instant::now()), None))
        };
        std::thread::sleep(Duration::from_millis(20));
        q.close();
        assert!(!waiter.join().unwrap());
        assert_eq!(q.len(), 0);
    }
}
