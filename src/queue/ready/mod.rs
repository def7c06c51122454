//! The expired values of a [`DelayQueue`](super::DelayQueue), waiting for consumers; the consumers
//! waiting for them; and the queue's count ([`Len`]).
//!
//! ## Two lists, two locks
//!
//! * `arrived`: the timer appends each fired batch here, under its lock (the **arrival lock**),
//!   which also guards the waiting consumers (threads blocked in `recv_timeout`, wakers of tasks in
//!   `poll_expired`) and the `closed` flag. The timer takes no other lock and never waits for a
//!   consumer: the list is unbounded.
//! * `taking`: the values consumers take from, under its own lock (the **taking lock**), which
//!   only consumers take. A consumer that finds `taking` empty takes the arrival lock too (always
//!   in this order) and moves the whole `arrived` list over (a swap of the two lists: no copy, and
//!   the emptied list's buffer goes back to the timer).
//!
//! So a consumer meets the timer on a lock once per batch, not once per value, and a consumer alone
//! takes an uncontended lock per value. **Exactly once:** a value is in exactly one list at a
//! time, moved only under both locks, taken only under the taking lock. **Order:** `taking` is in
//! deadline order; so is `taking` followed by `arrived` while no value due before one handed over
//! earlier arrived, and when one did, the consumer that moves the arrivals over places each in
//! order (`order.rs`). So values leave in deadline order (any number of consumers take from the
//! one `taking` list).
//!
//! ## Dropping and clearing the queue
//!
//! Both take both lists out at once: `clear.rs` says how, and in what order a clear counts out.
//!
//! ## Waiting, and the queue becoming empty
//!
//! A consumer waits only if nothing is ready and the count is not zero: holding both locks (so
//! that nothing can arrive), it **registers** (`waiting` + 1, and a blocked thread or a waker under
//! the arrival lock), issues a `SeqCst` fence, then reads the count; at zero it unregisters and
//! returns `None`. Whoever appends to `arrived`, or closes it, wakes every registered consumer under
//! the arrival lock: a consumer that registered before is woken, one that comes after sees the
//! values. The lowering of `waiting` happens under the arrival lock (the woken thread itself, the
//! wake that takes the wakers, or a `next_expired` future dropped while registered, which takes
//! out its own entry: each such future has a number of its own, so a task's other futures stay
//! registered; loom model `queue_consumers::a_dropped_next_expired_racing_an_expiry`).
//!
//! A bare `poll_expired` has no drop, so its registrations are bounded (`bare.rs`): a bare poll
//! that would keep more than the limit first **purges** the kept ones, a wake that takes their
//! wakers like any other (both locks held, `waiting` lowered by their number), then registers as
//! above; the purged tasks are woken after the locks are released. A purge changes no count and
//! moves no value, so what follows holds with it: a purged task is woken and looks again, as after
//! a wake; one that a take or a remove emptying the queue missed for being lowered out of `waiting`
//! is woken by the purge all the same; and the task making the purge registers with the fence and
//! the read of the count, racing an arriving batch or a count-out as any registration does (loom
//! model `queue_consumers::a_purge_racing_a_remove`).
//!
//! The count reaching zero must wake the registered consumers too, so that each returns `None`.
//! Whoever counts out checks `waiting` and, if it is not zero, issues a `SeqCst` fence, reads the
//! count, and at zero wakes everyone:
//!
//! * **a take** counts out and reads `waiting` under the taking lock. A consumer registering later
//!   took that lock later, so its count sees the take's count-out; one registered before raised
//!   `waiting` under that lock first, so the take sees it (or sees it lowered by a wake, which woke
//!   that consumer: it looks again under the taking lock).
//! * **a remove or a refused insert** holds no queue lock: it counts out, fences, then reads
//!   `waiting` (store buffering, settled by the two fences: either the registering consumer's read
//!   of the count sees the count-out, or the remover's read of `waiting` sees the registration).
//!
//! A registered consumer's read of the count may miss count-outs; each of them was made by a take
//! or a remove that saw the registration (else the consumer's read would have seen it, or a wake
//! took the registration and the consumer looks again), and so fences and reads the count itself.
//! The one of those whose fence comes last (`SeqCst` fences are totally ordered) reads a count
//! that includes every one of them: if the queue is empty, it wakes the consumers. A loom model
//! checks each side (`queue_consumers::remove_racing_a_waiting_consumer`,
//! `queue_consumers::two_consumers_racing_a_batch`).

#[cfg(feature = "async")]
use std::collections::HashMap;
use std::collections::VecDeque;
#[cfg(feature = "async")]
use std::mem;
use std::task::Waker;
use std::time::{Duration, Instant};

use self::order::Order;
#[cfg(feature = "async")]
use super::bare::Bare;
use super::len::Len;
use super::Expired;
use crate::sync::{fence, AtomicBool, AtomicUsize, Condvar, Mutex, MutexGuard, Ordering};
use crate::unwind::drop_caught;
#[cfg(feature = "async")]
use crate::unwind::wake_caught;

mod clear;
mod order;
#[cfg(feature = "async")]
mod tasks;

/// What the arrival lock guards.
struct Arrived<T> {
    values: VecDeque<Expired<T>>,
    /// Threads blocked in `recv_timeout`.
    waiting_threads: usize,
    /// Tasks waiting in a bare `poll_expired`, each once, bounded (`bare.rs`).
    #[cfg(feature = "async")]
    bare: Bare,
    /// Tasks waiting in a `next_expired` future, by the future's registration number: the future
    /// takes its entry out when it is dropped (`unregister`), in O(1).
    #[cfg(feature = "async")]
    futures: HashMap<u64, Waker>,
    /// The last registration number handed to a `next_expired` future.
    #[cfg(feature = "async")]
    registrations: u64,
    /// The timer shut down: no value expires any more, so a consumer finding none waits no more.
    closed: bool,
    /// The queue is dropped: values that still arrive (a batch its timer's driver was handing
    /// over) are dropped at once instead of kept.
    discarding: bool,
    /// The latest deadline handed over (`order.rs`).
    order: Order,
}

/// Its own cache lines (128 bytes: adjacent-line prefetching pairs lines): the taking side, which
/// a consumer writes for every value, shares no line with the arrivals, which the timer writes for
/// every batch, nor with `waiting` and the count's stripe table, which every take reads.
#[repr(align(128))]
struct Line<T>(T);

impl<T> std::ops::Deref for Line<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// See the module docs.
pub(super) struct Ready<T> {
    taking: Line<Mutex<VecDeque<Expired<T>>>>,
    arrived: Line<Mutex<Arrived<T>>>,
    available: Line<Condvar>,
    /// Consumers registered: blocked threads plus wakers held. Raised with both locks held, lowered
    /// under the arrival lock.
    waiting: AtomicUsize,
    /// A value due before one handed over earlier arrived: the next consumer places the arrivals
    /// in order (`order.rs`).
    /// Raised and lowered under the arrival lock, read under the taking lock.
    reorder: AtomicBool,
    len: Len,
}

type Taking<'a, T> = MutexGuard<'a, VecDeque<Expired<T>>>;

impl<T> Ready<T> {
    pub(super) fn new() -> Self {
        Ready {
            taking: Line(Mutex::new(VecDeque::new())),
            arrived: Line(Mutex::new(Arrived {
                values: VecDeque::new(),
                waiting_threads: 0,
                #[cfg(feature = "async")]
                bare: Bare::new(),
                #[cfg(feature = "async")]
                futures: HashMap::new(),
                #[cfg(feature = "async")]
                registrations: 0,
                closed: false,
                discarding: false,
                order: Order::default(),
            })),
            available: Line(Condvar::new()),
            waiting: AtomicUsize::new(0),
            reorder: AtomicBool::new(false),
            len: Len::new(),
        }
    }

    /// Values pending or expired and not yet taken.
    pub(super) fn len(&self) -> usize {
        self.len.get()
    }

    /// Counts one value in, before its entry exists.
    pub(super) fn count_in(&self) {
        self.len.count_in();
    }

    /// Counts `n` values out that no consumer took (removed, refused, or cleared), with no queue
    /// lock held; wakes the waiting consumers if that left the queue empty (module docs).
    pub(super) fn count_out_untaken(&self, n: usize) {
        self.len.count_out(n);
        self.counted_out_untaken();
    }

    /// After a count-out of values no consumer took, with no queue lock held: wakes the waiting
    /// consumers if that left the queue empty (module docs).
    fn counted_out_untaken(&self) {
        // Seeded fault `queue_count_out_without_fence` (docs/loom.md): the remover's read of
        // `waiting` is not ordered after its count-out, and a consumer registering meanwhile can
        // miss both.
        if !fault!("queue_count_out_without_fence") {
            fence(Ordering::SeqCst);
        }
        if self.waiting.load(Ordering::Relaxed) != 0 {
            self.wake_if_empty();
        }
    }

    /// Appends a batch of expired values, in order, under one lock, and wakes every waiting
    /// consumer once. Returns how many of those wakes panicked (each caught: on the timer's
    /// thread, a waker's panic must not end it, nor keep the other consumers asleep).
    pub(super) fn push_all(&self, expired: impl Iterator<Item = Expired<T>>) -> u64 {
        let mut arrived = self.arrived.lock();
        if arrived.discarding {
            drop(arrived);
            // On the timer's thread: a value's panicking `Drop` must not end it.
            expired.for_each(|expired| {
                drop_caught(expired);
            });
            return 0;
        }
        let Arrived { values, order, .. } = &mut *arrived;
        if order.append(values, expired) {
            self.reorder.store(true, Ordering::Release);
        }
        self.wake(arrived)
    }

    /// The deadline of the oldest expired value, the one a consumer takes next, if any.
    pub(super) fn first_deadline(&self) -> Option<Instant> {
        let mut taking = self.taking.lock();
        self.settle(&mut taking);
        if let Some(first) = taking.front() {
            return Some(first.deadline);
        }
        self.arrived.lock().values.front().map(|first| first.deadline)
    }

    /// The timer shut down, taking `abandoned()` pending values: they are counted out, under the
    /// arrival lock with the closing, so that a consumer that finds the queue closed reads a count
    /// without the values of every closing so far; consumers take what expired and then wait no
    /// more; wakes every waiting consumer. Returns how many of those wakes panicked (each caught).
    pub(super) fn close(&self, abandoned: &mut dyn FnMut() -> u64) -> u64 {
        // Seeded fault `closing_counts_out_unlocked` (docs/loom.md): the count is taken and
        // counted out before the lock, so a concurrent closing may close the queue between the
        // two while this one's values are still counted.
        let unlocked = fault!("closing_counts_out_unlocked");
        let mut count_out = || {
            let abandoned = abandoned();
            if abandoned != 0 {
                self.len.count_out(usize::try_from(abandoned).unwrap_or(usize::MAX));
            }
        };
        if unlocked {
            count_out();
        }
        let mut arrived = self.arrived.lock();
        if !unlocked {
            count_out();
        }
        arrived.closed = true;
        self.wake(arrived)
    }

    /// With the fence that orders it after a count-out: wakes every waiting consumer if the queue
    /// is empty.
    fn wake_if_empty(&self) {
        fence(Ordering::SeqCst);
        if self.len.get() == 0 {
            self.wake(self.arrived.lock());
        }
    }

    /// Wakes every waiting consumer, with no lock held once the wakes begin; returns how many of
    /// the tasks' wakes panicked. Each wake is caught, so that every consumer is woken whatever
    /// one waker does, and no waker's panic leaves through the timer that expires the values (or
    /// through a take or a remove that empties the queue: the value is the caller's either way).
    #[cfg_attr(not(feature = "async"), allow(unused_mut))]
    fn wake(&self, mut arrived: MutexGuard<'_, Arrived<T>>) -> u64 {
        if arrived.waiting_threads == 0 && !arrived.has_tasks() {
            return 0;
        }
        let threads = arrived.waiting_threads != 0;
        #[cfg(feature = "async")]
        let wakers = {
            let mut wakers = arrived.bare.take();
            if !arrived.futures.is_empty() {
                wakers.extend(mem::take(&mut arrived.futures).into_values());
            }
            self.waiting.fetch_sub(wakers.len(), Ordering::Relaxed);
            wakers
        };
        drop(arrived);
        if threads {
            self.available.notify_all();
        }
        #[cfg(feature = "async")]
        return wakers.into_iter().map(|waker| u64::from(wake_caught(waker))).sum();
        #[cfg(not(feature = "async"))]
        0
    }

    /// With `taking` empty: moves the arrived values over (`Ok`), or finds none and hands back the
    /// arrival lock (`Err`), still held, for a consumer that may wait.
    #[cold]
    fn refill<'a>(&'a self, taking: &mut VecDeque<Expired<T>>) -> Result<(), MutexGuard<'a, Arrived<T>>> {
        let arrived = self.arrived.lock();
        if arrived.values.is_empty() {
            return Err(arrived);
        }
        self.move_over(taking, arrived);
        Ok(())
    }

    /// The oldest expired value, moving the arrived ones over first if need be; or the arrival
    /// lock, held, if there is none.
    #[inline]
    fn look<'a>(
        &'a self,
        taking: &mut VecDeque<Expired<T>>,
    ) -> Result<Expired<T>, MutexGuard<'a, Arrived<T>>> {
        self.settle(taking);
        if let Some(expired) = taking.pop_front() {
            return Ok(expired);
        }
        self.refill(taking)?;
        Ok(taking.pop_front().expect("a batch moved over is not empty"))
    }

    /// Counts `n` values taken out, under the taking lock (released here), and wakes the waiting
    /// consumers if that left the queue empty (module docs).
    #[inline]
    fn taken(&self, taking: Taking<'_, T>, n: usize) {
        // Seeded fault `queue_take_counts_out_unlocked` (docs/loom.md): the count-out and the look at
        // `waiting` come after the taking lock is released, so a consumer registering in between
        // misses the count-out and is missed by the take.
        let unlocked = fault!("queue_take_counts_out_unlocked");
        if unlocked {
            drop(taking);
            self.len.count_out(n);
            if self.waiting.load(Ordering::Relaxed) != 0 {
                self.wake_if_empty();
            }
            return;
        }
        self.len.count_out(n);
        let waiting = self.waiting.load(Ordering::Relaxed) != 0;
        drop(taking);
        if waiting {
            self.wake_if_empty();
        }
    }

    /// Registers a waiting consumer (both locks held; `waker`: the task's, `None` for a thread)
    /// and reads the count after the fence: `false`, and unregistered again, if the queue is empty.
    /// A bare `poll_expired` registers with number 0, a `next_expired` future with its own.
    #[cfg_attr(not(feature = "async"), allow(unused_variables))]
    fn register(&self, arrived: &mut Arrived<T>, waker: Option<(u64, &Waker)>) -> bool {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        if self.len.get() == 0 {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        match waker {
            #[cfg(feature = "async")]
            Some((0, waker)) => arrived.bare.push(waker.clone()),
            #[cfg(feature = "async")]
            Some((registration, waker)) => {
                arrived.futures.insert(registration, waker.clone());
            }
            _ => {}
        }
        true
    }

    /// Takes the oldest expired value, if any.
    #[inline]
    pub(super) fn try_pop(&self) -> Option<Expired<T>> {
        let mut taking = self.taking.lock();
        let expired = self.look(&mut taking).ok()?;
        self.taken(taking, 1);
        Some(expired)
    }

    /// Moves up to `limit` of the oldest expired values to `into`, in order; returns how many.
    pub(super) fn pop_many(&self, into: &mut Vec<Expired<T>>, limit: usize) -> usize {
        let mut taking = self.taking.lock();
        // One look at the arrivals, under both locks, if they are needed or out of order: the
        // values moved come out of one snapshot, in deadline order (`order.rs`).
        if taking.len() < limit || self.reorder.load(Ordering::Acquire) {
            self.move_over(&mut taking, self.arrived.lock());
        }
        let moved = limit.min(taking.len());
        into.extend(taking.drain(..moved));
        if moved == 0 {
            return 0;
        }
        self.taken(taking, moved);
        moved
    }

    /// Takes the oldest expired value, waiting up to `timeout` for one; `None` at once if nothing
    /// is pending or expired (and as soon as that becomes so while waiting).
    pub(super) fn pop_timeout(&self, timeout: Duration) -> Option<Expired<T>> {
        // Read the clock only if there is nothing to take. A timeout too long for an `Instant`
        // waits without end.
        let mut give_up: Option<Option<Instant>> = None;
        loop {
            let mut taking = self.taking.lock();
            let mut arrived = match self.look(&mut taking) {
                Ok(expired) => {
                    self.taken(taking, 1);
                    return Some(expired);
                }
                Err(arrived) => arrived,
            };
            // Nothing pending either: no clock reading, no registration.
            if arrived.closed || self.len.get() == 0 {
                return None;
            }
            let give_up = *give_up.get_or_insert_with(|| Instant::now().checked_add(timeout));
            let left = match give_up {
                Some(give_up) => give_up.saturating_duration_since(Instant::now()),
                None => Duration::MAX,
            };
            if left.is_zero() || !self.register(&mut arrived, None) {
                return None;
            }
            drop(taking);
            arrived.waiting_threads += 1;
            if give_up.is_some() {
                self.available.wait_for(&mut arrived, left);
            } else {
                self.available.wait(&mut arrived);
            }
            arrived.waiting_threads -= 1;
            self.waiting.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl<T> Arrived<T> {
    /// Whether a task waits (a `next_expired` future or a bare `poll_expired`).
    fn has_tasks(&self) -> bool {
        #[cfg(feature = "async")]
        return !self.futures.is_empty() || !self.bare.is_empty();
        #[cfg(not(feature = "async"))]
        false
    }
}
