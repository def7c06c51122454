//! A delay queue of values: [`DelayQueue<T>`] holds values until their deadline, then hands them to
//! consumers, in deadline order.
//!
//! The shape of tokio-util's `DelayQueue`, without tokio and without `&mut self`: any number of
//! producer and consumer threads or tasks share one queue by reference (it is `Send + Sync` for
//! `T: Send`). Values come back on [`remove`](DelayQueue::remove), deadlines move with
//! [`reset`](DelayQueue::reset), and consumers take expired values with
//! [`try_recv`](DelayQueue::try_recv), [`recv_timeout`](DelayQueue::recv_timeout) or (feature
//! `async`) `poll_expired`, `next_expired` and a `Stream`.
//!
//! It stands on the public [`Timer`] API only, as the purgatory does.
//!
//! ## Protocol
//!
//! * **insert**: in the calling thread's shard of the slab (`slab.rs`), under the shard's lock,
//!   pick a vacant slot, schedule a timer task for it and store the value, its deadline and the
//!   task's handle there. The task captures the queue's shared state and the slot's [`Key`]: 16
//!   bytes, so it stays inline in the timer's entry (no allocation per insert). The queue's count
//!   (`len`) goes up before the task is scheduled, so it never lags a consumer's count-out.
//! * **expire** (the timer task, on the thread that runs the timer's tasks): take the value out of
//!   its slot under the shard lock (if the key's generation still matches and the value is there),
//!   then append it to the ready list (`ready.rs`), waking every waiting consumer.
//! * **remove**: take the value out of its slot under the shard lock, then cancel its timer task
//!   with no lock held.
//! * **reset**: under the shard lock, re-arm the timer task in place
//!   ([`TimerHandle::reset_at`](crate::TimerHandle::reset_at)) and record the new deadline.
//! * **consume**: take the oldest value from the ready list; count it out of `len`.
//!
//! **Exactly once.** A value leaves its slot once, under the shard lock, to whoever takes it
//! first: `remove` (which returns it) or its timer task (which hands it to the ready list, from
//! which one consumer takes it). A `remove` that finds the slot empty returns `None`: the value has
//! expired or is expiring. A task that lost its value to a `remove` before its cancel could stop it
//! runs and finds the slot's generation changed, even if a later insert reuses the slot: it takes
//! nothing (the loom model `queue::remove_racing_expiry_then_reuse` checks this). A reset holds the
//! shard lock, so the task cannot take the value between the re-arm and the new deadline being
//! recorded; a reset that finds the task already firing returns `false` and changes nothing.
//!
//! **Order.** Values are appended to the ready list in the order the timer runs their tasks:
//! deadline order (to a 256th of a tick within a tick; first inserted first for equal deadlines),
//! when the timer runs its tasks on the thread that advances it (the default
//! [`TaskExecution::OnDriver`](crate::TaskExecution::OnDriver)). With executor threads, values come
//! out in the order the executors run their tasks.
//!
//! ## Locking rules
//!
//! Locks: the slab's shard locks, the ready list's lock, and the timer's. The nestings are *shard
//! lock, then timer locks* (insert schedules, reset re-arms under it) and none else: the timer runs
//! the task with none of its bucket, entry or queue locks held, and the task takes the shard lock,
//! releases it, then takes the ready list's lock. `remove` cancels after releasing the shard lock.
//! Consumers hold only the ready list's lock, never while waking anyone.

mod expired;
mod ready;
mod slab;
#[cfg(feature = "async")]
mod stream;

use std::fmt;
use std::time::{Duration, Instant};

pub use expired::{Expired, InsertError};
pub use slab::Key;

use crate::sync::{Arc, AtomicUsize, Ordering};
use crate::ScheduleError;
use crate::Timer;
use ready::{count_out, Ready};
use slab::Slab;

/// Values held until their deadline, then handed out in deadline order, exactly once each.
///
/// * producers: [`insert`](Self::insert), [`insert_at`](Self::insert_at),
///   [`try_insert`](Self::try_insert), [`try_insert_at`](Self::try_insert_at), each returning a
///   [`Key`];
/// * by key: [`remove`](Self::remove) (the value back, if it had not expired),
///   [`reset`](Self::reset) / [`reset_at`](Self::reset_at), [`deadline`](Self::deadline);
/// * consumers: [`try_recv`](Self::try_recv), [`recv_timeout`](Self::recv_timeout), and with the
///   `async` feature `poll_expired`, `next_expired` and `Stream`.
///
/// Every method takes `&self`: share the queue by reference (or `Arc`) between any number of
/// producers and consumers. A value expires at the first tick of the queue's [`Timer`] at or after
/// its deadline (never early, at most one tick late) and then waits in the queue until a consumer
/// takes it: taking never holds up the timer. [`len`](Self::len) counts values pending and expired
/// but not yet taken.
///
/// Dropping the queue stops its timer and drops every value it holds. Deadlines are instants on
/// the timer's clock ([`Timer::now`]): with a [`ManualClock`](crate::ManualClock), the queue is as
/// deterministic as its timer.
///
/// ```
/// use delaywheel::queue::DelayQueue;
/// use delaywheel::{ManualClock, Timer};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
/// let queue = DelayQueue::with_timer(timer);
///
/// let late = queue.insert("late", Duration::from_millis(30));
/// let early = queue.insert("early", Duration::from_millis(10));
/// let recalled = queue.insert("recalled", Duration::from_millis(20));
/// assert_eq!(queue.remove(&recalled), Some("recalled")); // not expired: the value comes back
///
/// clock.advance(Duration::from_millis(30));
/// queue.advance_clock(Duration::ZERO);
/// let first = queue.try_recv().unwrap();
/// assert_eq!((*first.get_ref(), first.key()), ("early", early));
/// assert_eq!(queue.try_recv().unwrap().into_inner(), "late");
/// assert!(queue.try_recv().is_none() && queue.is_empty());
/// assert_eq!(queue.remove(&late), None); // it expired
/// ```
pub struct DelayQueue<T> {
    /// Declared first so that it is dropped first: its drain drops every unfired task (each holds
    /// `inner`) before the values go.
    timer: Timer,
    inner: Arc<Inner<T>>,
}

/// What the queue and its timer tasks share.
struct Inner<T> {
    slab: Slab<T>,
    ready: Ready<T>,
    /// Values pending or expired and not yet taken.
    len: AtomicUsize,
}

impl<T> Inner<T> {
    /// The timer task of `key`: moves its value, if still there, to the ready list.
    fn expire(&self, key: Key) {
        if let Some(pending) = self.slab.take(key) {
            drop(pending.handle);
            self.ready.push(Expired { value: pending.value, key, deadline: pending.deadline });
        }
    }
}

impl<T: Send + 'static> DelayQueue<T> {
    /// A queue with its own timer (1 ms tick, default wheel size) and its driver thread, named
    /// `delaywheel-queue`.
    ///
    /// # Panics
    ///
    /// If the driver thread cannot be started.
    pub fn new() -> Self {
        Self::with_timer(Timer::builder().thread_name("delaywheel-queue").build())
    }

    /// A queue whose values expire on `timer`, which it owns from now on.
    ///
    /// With a timer built with [`manual()`](crate::TimerBuilder::manual) (typically on a
    /// [`ManualClock`](crate::ManualClock)) values expire only inside
    /// [`advance_clock`](Self::advance_clock): deterministic tests and simulations. The timer's
    /// [`max_pending`](crate::TimerBuilder::max_pending) bounds the values pending in the queue
    /// (together with any other task scheduled on the timer).
    ///
    /// If the timer is [shut down](Timer::shutdown) (through [`timer`](Self::timer)), nothing
    /// expires any more: inserts are refused, pending values stay until removed or the queue is
    /// dropped, and consumers wait for them in vain.
    pub fn with_timer(timer: Timer) -> Self {
        let inner = Inner { slab: Slab::new(), ready: Ready::new(), len: AtomicUsize::new(0) };
        DelayQueue { timer, inner: Arc::new(inner) }
    }

    /// The queue's timer: its clock ([`Timer::now`]), tick, statistics.
    pub fn timer(&self) -> &Timer {
        &self.timer
    }

    /// Inserts `value`, to expire `delay` from now; returns its key.
    ///
    /// Never panics. If the timer refuses it (it is shut down, holds its
    /// [`max_pending`](crate::TimerBuilder::max_pending) tasks, or the deadline is beyond its range,
    /// e.g. `Duration::MAX`) the value is dropped and the key names nothing, as
    /// [`Timer::schedule`] treats a refused task. Use [`try_insert`](Self::try_insert) to get the
    /// value back with the reason.
    pub fn insert(&self, value: T, delay: Duration) -> Key {
        self.try_insert(value, delay).unwrap_or(Key::NOTHING)
    }

    /// Inserts `value`, to expire at `deadline` (an instant on the timer's clock, see
    /// [`Timer::now`]); a deadline already passed expires by the next advance of the timer. On
    /// refusal, as [`insert`](Self::insert).
    pub fn insert_at(&self, value: T, deadline: Instant) -> Key {
        self.try_insert_at(value, deadline).unwrap_or(Key::NOTHING)
    }

    /// Inserts `value`, to expire `delay` from now.
    ///
    /// # Errors
    ///
    /// The value comes back inside [`InsertError`], with the timer's reason: see
    /// [`InsertError::error`]. Nothing is stored then.
    pub fn try_insert(&self, value: T, delay: Duration) -> Result<Key, InsertError<T>> {
        let now = self.timer.now();
        match now.checked_add(delay) {
            Some(deadline) => self.try_insert_at(value, deadline),
            None => {
                let error = ScheduleError::DelayTooLong { delay, max: self.timer.max_delay() };
                Err(InsertError { value, error })
            }
        }
    }

    /// Inserts `value`, to expire at `deadline` (see [`insert_at`](Self::insert_at)).
    ///
    /// # Errors
    ///
    /// As [`try_insert`](Self::try_insert).
    pub fn try_insert_at(&self, value: T, deadline: Instant) -> Result<Key, InsertError<T>> {
        let inner = &self.inner;
        // Counted in before the task exists: a consumer can count it out only after it expired.
        inner.len.fetch_add(1, Ordering::AcqRel);
        let inserted = inner.slab.insert(value, deadline, |key| {
            let inner = Arc::clone(inner);
            self.timer.try_schedule_at(deadline, move || inner.expire(key))
        });
        inserted.map_err(|(value, error)| {
            count_out(&inner.len, &inner.ready);
            InsertError { value, error }
        })
    }

    /// Removes the value `key` names and returns it, if it is still pending: `None` if it has
    /// expired (or is expiring: its timer task has started) or was removed, also when the key's
    /// slot now holds a later value. A value it returns never comes out of the queue.
    pub fn remove(&self, key: &Key) -> Option<T> {
        let pending = self.inner.slab.take(*key)?;
        // The value is ours; the task, if it is running already, finds its slot empty.
        pending.handle.cancel();
        count_out(&self.inner.len, &self.inner.ready);
        Some(pending.value)
    }

    /// Moves the deadline of the value `key` names to `delay` from now. Returns `true` iff it was
    /// still pending and now expires at the new deadline (the same key stays valid); `false` if it
    /// has expired or is expiring, was removed, or the new deadline is beyond the timer's range
    /// (then nothing changes).
    pub fn reset(&self, key: &Key, delay: Duration) -> bool {
        match self.timer.now().checked_add(delay) {
            Some(deadline) => self.reset_at(key, deadline),
            None => false,
        }
    }

    /// Moves the deadline of the value `key` names to `deadline` (on the timer's clock; one
    /// already passed expires by the next advance). Returns as [`reset`](Self::reset).
    pub fn reset_at(&self, key: &Key, deadline: Instant) -> bool {
        let reset = self.inner.slab.with(*key, |pending| {
            let moved = pending.handle.reset_at(deadline);
            if moved || fault!("queue_reset_records_unmoved") {
                pending.deadline = deadline;
            }
            moved
        });
        reset == Some(true)
    }

    /// The deadline of the value `key` names, while it is pending; `None` once it has expired (or
    /// is expiring) or was removed.
    pub fn deadline(&self, key: &Key) -> Option<Instant> {
        self.inner.slab.with(*key, |pending| pending.deadline)
    }
}

impl<T> DelayQueue<T> {
    /// Values pending or expired and not yet taken.
    pub fn len(&self) -> usize {
        self.inner.len.load(Ordering::Acquire)
    }

    /// Whether no value is pending or waiting to be taken.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The oldest expired value, if any; never waits.
    pub fn try_recv(&self) -> Option<Expired<T>> {
        self.inner.ready.try_pop(&self.inner.len)
    }

    /// The oldest expired value, waiting up to `timeout` (of real time) for one to expire.
    ///
    /// Returns `None` at once if nothing is pending or expired, and as soon as the queue becomes
    /// empty while waiting (the last pending values were removed), as an iterator over the queue
    /// ends; `None` too after `timeout`. A timeout too long for an `Instant` (`Duration::MAX`) waits
    /// without end. On a manual timer values expire only when some thread advances it.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Expired<T>> {
        self.inner.ready.pop_timeout(&self.inner.len, timeout)
    }

    /// Advances the queue's timer: [`Timer::advance_clock`]. Values whose deadline has passed
    /// expire inside this call on a manual timer.
    pub fn advance_clock(&self, timeout: Duration) -> bool {
        self.timer.advance_clock(timeout)
    }
}

impl<T: Send + 'static> Default for DelayQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for DelayQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayQueue").field("len", &self.len()).field("timer", &self.timer).finish()
    }
}
