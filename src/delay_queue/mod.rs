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
//! A future that drives the timer from an async runtime waits for the head with its runtime's sleep
//! instead, and registers a waker beside the condition variable, in the same lock: the lowering of
//! the head, the close and [`wake`](DelayQueue::wake) wake it too ([`watch`](DelayQueue::watch);
//! the hand-shake is in `watchers.rs`).
//!
//! ## Rounds: bounded work per advance
//!
//! An advance pops everything due in one **round**: [`round`](DelayQueue::round) marks its start,
//! and [`poll_due`](DelayQueue::poll_due) sets aside the items offered by
//! [`offer_next`](DelayQueue::offer_next) since that mark (the advance files there, once its
//! visits are over, the entries that were scheduled while it runs, found due in a bucket it
//! visits: a task scheduling zero delays, another thread scheduling meanwhile);
//! [`end_round`](DelayQueue::end_round) puts them back, due, so the next advance takes them. Items offered by
//! [`offer`](DelayQueue::offer) (a schedule) and [`offer_within`](DelayQueue::offer_within) (the advance's
//! re-queues and cascades) are popped in the round: the bucket a schedule queues may also hold older entries
//! due now (a cascade may have filed one there after the schedule lowered its expiration), and the visit
//! takes only those, by their stamps (`shard/core.rs`, "Rounds"). So one advance does bounded work, even under a
//! chain of zero delays that would otherwise never let it return.
//!
//! A popped entry may be stale: a lowering of its bucket's expiration queued the bucket again at an
//! earlier tick, and a flush since has moved the expiration on. The flush recognises it (the
//! bucket's round is not the one offered) and does nothing (`shard/wheel/`).

use std::cmp::{Ordering as CmpOrdering, Reverse};
use std::collections::BinaryHeap;
#[cfg(feature = "async")]
use std::task::Waker;
use std::time::{Duration, Instant};

use crate::sync::{Condvar, Mutex};

mod watchers;

use watchers::{Watchers, Woken};

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
    /// The futures waiting for the head (`watchers.rs`).
    watchers: Watchers,
}

/// What a [`watch`](DelayQueue::watch) finds.
#[cfg(feature = "async")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Watched {
    /// The queue is closed: nothing will be due any more (nothing registered).
    Closed,
    /// The head is due (the watcher's registration is taken out).
    Due,
    /// Nothing is due; the head's expiration, if any. The watcher is registered: it is woken when
    /// an earlier item becomes the head, on close and on [`wake`](DelayQueue::wake).
    Waiting(Option<u64>),
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
                watchers: Watchers::default(),
            }),
            changed: Condvar::new(),
        }
    }

    /// Queues `item` at `expiration`; wakes the waiter if it is now the earliest.
    pub(crate) fn offer(&self, expiration: u64, item: T) {
        let mut state = self.state.lock();
        let woken = self.push(&mut state, Queued { expiration, offer: 0, item });
        drop(state);
        woken.wake();
    }

    /// [`offer`](DelayQueue::offer), but a round already under way leaves it to the next one if it
    /// is due ([`round`](DelayQueue::round)).
    pub(crate) fn offer_next(&self, expiration: u64, item: T) {
        let mut state = self.state.lock();
        state.offers += 1;
        let offer = state.offers;
        let woken = self.push(&mut state, Queued { expiration, offer, item });
        drop(state);
        woken.wake();
    }

    /// Queues `item` at `expiration` from inside the current round (its own re-queues), which may
    /// pop it.
    pub(crate) fn offer_within(&self, expiration: u64, item: T) {
        let mut state = self.state.lock();
        let woken = self.push(&mut state, Queued { expiration, offer: 0, item });
        drop(state);
        woken.wake();
    }

    /// Pushes `queued`; if it is now the earliest, notifies the waiters and takes the watchers'
    /// wakers, for the caller to wake once it has released the lock.
    fn push(&self, state: &mut QueueState<T>, queued: Queued<T>) -> Woken {
        let earliest = state.heap.peek().map_or(true, |Reverse(head)| queued.expiration < head.expiration);
        state.heap.push(Reverse(queued));
        if !earliest {
            return Woken::default();
        }
        self.changed.notify_all();
        state.watchers.take()
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
    /// The earliest expiration queued before they are, if any: what the round left to come.
    pub(crate) fn end_round(&self) -> Option<u64> {
        let mut state = self.state.lock();
        let left = state.heap.peek().map(|Reverse(head)| head.expiration);
        let mut woken = Woken::default();
        while let Some(queued) = state.deferred.pop() {
            woken.join(self.push(&mut state, queued));
        }
        drop(state);
        woken.wake();
        left
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

    /// The items queued at the earliest expiration, if `wanted` takes that expiration: at most
    /// `most` of them, in no order, appended to `out` with it (what the next round pops first; a
    /// stale item included). A scan of the heap, under its lock, once `wanted` says yes: O(the
    /// items queued), about one per non-empty bucket, once a tick from the driver.
    pub(crate) fn heads(&self, wanted: impl FnOnce(u64) -> bool, most: usize, out: &mut Vec<(u64, T)>)
    where
        T: Copy,
    {
        let state = self.state.lock();
        let Some(at) = state.heap.peek().map(|Reverse(head)| head.expiration).filter(|&at| wanted(at)) else {
            return;
        };
        let items = state.heap.iter().filter(|Reverse(queued)| queued.expiration == at);
        out.extend(items.take(most).map(|Reverse(queued)| (at, queued.item)));
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

    /// Wakes every waiter and watcher to look at the clock (a manual clock advanced) and its bound
    /// again ([`wait_due_within`](DelayQueue::wait_due_within)). (Unused under loom: no driver in
    /// models.)
    #[cfg_attr(delaywheel_loom, allow(dead_code))]
    pub(crate) fn wake(&self) {
        let mut state = self.state.lock();
        self.changed.notify_all();
        let woken = state.watchers.take();
        drop(state);
        woken.wake();
    }

    /// Closes the queue: waiters return at once and for good, watchers are woken (and find it
    /// closed). Drops every queued bucket reference.
    pub(crate) fn close(&self) {
        let mut state = self.state.lock();
        state.closed = true;
        state.heap.clear();
        state.deferred.clear();
        self.changed.notify_all();
        let woken = state.watchers.take();
        drop(state);
        woken.wake();
    }

    /// The hand-shake of a future waiting for the head (`watchers.rs`): under the queue's lock,
    /// whether it is closed, whether the head is due on `time`, and, if neither, registers `waker`
    /// as watcher `id`'s and returns the head. Closed or due, watcher `id` is not registered
    /// afterwards.
    #[cfg(feature = "async")]
    pub(crate) fn watch(&self, id: u64, waker: &Waker, time: &impl Timeline) -> Watched {
        let mut state = self.state.lock();
        let head = state.heap.peek().map(|Reverse(head)| head.expiration);
        let seen = match head {
            _ if state.closed => Watched::Closed,
            Some(expiration) if expiration <= time.now_tick() => Watched::Due,
            head => Watched::Waiting(head),
        };
        // Seeded fault `drive_watch_after_head` (docs/loom.md): the waker is registered in a
        // second critical section, after a lowering of the head may have found none.
        if fault!("drive_watch_after_head") && seen != Watched::Closed {
            drop(state);
            state = self.state.lock();
        }
        let unwatched = match seen {
            Watched::Waiting(_) => {
                state.watchers.watch(id, waker);
                None
            }
            Watched::Closed | Watched::Due => state.watchers.unwatch(id),
        };
        drop(state);
        drop(unwatched);
        seen
    }

    /// Takes watcher `id`'s registration out (its future is dropped).
    #[cfg(feature = "async")]
    pub(crate) fn unwatch(&self, id: u64) {
        let waker = self.state.lock().watchers.unwatch(id);
        drop(waker);
    }
}

impl<T: Identity> std::fmt::Debug for DelayQueue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelayQueue").field("len", &self.len()).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
