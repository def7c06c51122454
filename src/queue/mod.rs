//! A delay queue of values: [`DelayQueue<T>`] holds values until their deadline, then hands them to
//! consumers, in deadline order.
//!
//! The shape of tokio-util's `DelayQueue`, without tokio and without `&mut self`: any number of
//! producer and consumer threads or tasks share one queue by reference (it is `Send + Sync` for
//! `T: Send`). Values come back on [`remove`](DelayQueue::remove), deadlines move with
//! [`reset`](DelayQueue::reset), and consumers take expired values with
//! [`try_recv`](DelayQueue::try_recv), [`try_recv_many`](DelayQueue::try_recv_many) (a batch at
//! a time), [`recv_timeout`](DelayQueue::recv_timeout), [`recv`](DelayQueue::recv) and the
//! iterators of `std::sync::mpsc::Receiver`'s shape ([`iter`](DelayQueue::iter),
//! [`try_iter`](DelayQueue::try_iter)), or (feature `async`) `poll_expired`, `next_expired` and a
//! `Stream`.
//!
//! ## Protocol
//!
//! Each pending value **is** a timer entry: it lives in the entry's task storage (inline up to 8
//! bytes of value beside its exact deadline, in a block of the timer's task slab up to 248), and
//! its [`Key`] is the entry's slot index and generation. The timer does the work
//! (`timer/values.rs`, whose module docs give the protocol and the exactly-once argument):
//!
//! * **insert**: a schedule of a value entry, on one reading of the clock. The queue's count
//!   (`len`, striped per thread: `len.rs`) goes up first, so it never lags a consumer's count-out.
//! * **remove**: a cancel that hands the value back; `None` once the entry was claimed (fired) or
//!   the key's generation no longer matches its slot. It counts the value out, and wakes the
//!   waiting consumers if that left the queue empty (`ready/`).
//! * **reset**: the timer's reset of the entry, which also rewrites the deadline the value carries.
//! * **expire**: the timer's firing claims the entry and hands the values of each fired batch to
//!   the queue (this module's `ValueSink`), which appends them to the ready list's arrivals
//!   (`ready/`) under one lock per batch and wakes every waiting consumer (each wake caught: a
//!   waker that panics ends neither the timer's thread nor the other wakes; the timer counts it in
//!   `TimerStats::panicked`).
//! * **consume**: take the oldest value from the ready list's taking side, which a consumer
//!   refills with all the arrivals at once when it runs empty; count it out of `len`.
//! * **clear** (`whole.rs`): the timer's scan of every slot it has handed out claims each
//!   pending value entry as a remove's cancel does and drops the value
//!   (`timer/values.rs`, `clear_values`); the ready list's values are taken
//!   out under both its locks (`ready/`). Both happen holding the timer's advance lock, so that no
//!   value an advance took out of the wheel is handed over after the clear; all are counted out
//!   afterwards, as a remove counts out its value.
//! * **drop**: the queue drops the ready list's values, and marks it so that a batch arriving
//!   later (from a driver thread that was advancing, which the timer's drop does not wait for) is
//!   dropped as it arrives; then the timer's drop drops the pending values. The ready list itself
//!   is shared with the timer's sink, and so may outlive the queue: it must not be what holds the
//!   values.
//!
//! **Exactly once.** A value leaves its entry only through the entry's one claim: to the firing
//! (then the ready list, from which one consumer takes it) or to a remove. A key whose value
//! expired or was removed names nothing once its slot is reused (the generation differs; loom
//! model `queue::remove_racing_expiry_then_reuse`), and a reset never claims (loom model
//! `queue::reset_racing_expiry`). A key also carries its queue's number, checked before its ticket
//! is used: slots and generations are per timer, so another queue's key could otherwise name an
//! entry of this queue's timer, a plain task's included.
//!
//! **Order.** The timer fires each batch in deadline order (to a 256th of a tick within a tick;
//! first inserted first for equal deadlines, across threads too for `insert_at` and on a manual
//! clock: the crate docs' "Time semantics") and hands it over in that order. With executor
//! threads ([`TaskExecution::Threads`](crate::TaskExecution::Threads)) the driver hands values
//! over itself, in the same order. Consumers take values in deadline order across batches too: a
//! value inserted or reset to a deadline already passed expires at the next advance, and comes out
//! before the values earlier advances expired that are due after it and no consumer has taken yet
//! (after those due at the same instant: `ready/order.rs`).
//!
//! ## Locking rules
//!
//! Locks: the timer's, and the ready list's two (taking, then arrival). The timer calls the queue
//! with none of its bucket, entry or queue locks held, and the queue then takes only the arrival
//! lock. Consumers take the taking lock, and the arrival lock inside it; they wake no one while
//! holding either.

#[cfg(feature = "async")]
mod bare;
mod expired;
mod iter;
mod len;
mod ready;
#[cfg(feature = "async")]
mod stream;
mod whole;

use std::fmt;
use std::time::{Duration, Instant};

pub use expired::{Expired, InsertError};
pub use iter::{Iter, TryIter};
#[cfg(feature = "async")]
pub use stream::NextExpired;

use crate::sync::Arc;
use crate::timer::values::{FiredValues, ValueSink, ValueTicket};
use crate::timer::When;
use crate::Timer;
use ready::Ready;

/// Names a value inserted into a [`DelayQueue`]: its queue, and its timer entry's slot and
/// generation. A key of a value that expired or was removed names nothing, also once its slot
/// holds a later value; a key given to another queue than its own names nothing there.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    ticket: Option<ValueTicket>,
    /// The queue's number ([`Inner::id`]): slots and generations are per timer, so two queues
    /// used alike hand out equal tickets.
    queue: u64,
}

impl Key {
    /// The key of a refused insert: names nothing.
    const NOTHING: Key = Key { ticket: None, queue: 0 };
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.ticket {
            Some(ticket) => write!(f, "Key(queue {}, {ticket:?})", self.queue),
            None => f.write_str("Key(nothing)"),
        }
    }
}

/// Values held until their deadline, then handed out in deadline order, exactly once each (also a
/// value set to a deadline already passed, which expires at the next advance: the module docs'
/// "Order").
///
/// * producers: [`insert`](Self::insert), [`insert_at`](Self::insert_at),
///   [`try_insert`](Self::try_insert), [`try_insert_at`](Self::try_insert_at), each returning a
///   [`Key`];
/// * by key: [`remove`](Self::remove) (the value back, if it had not expired),
///   [`reset`](Self::reset) / [`reset_at`](Self::reset_at), [`deadline`](Self::deadline);
/// * consumers: [`try_recv`](Self::try_recv), [`try_recv_many`](Self::try_recv_many),
///   [`recv_timeout`](Self::recv_timeout), [`recv`](Self::recv), the iterators
///   [`iter`](Self::iter) (also `for expired in &queue`) and [`try_iter`](Self::try_iter), and with
///   the `async` feature `poll_expired`, `next_expired` and `Stream`;
/// * the whole queue: [`len`](Self::len), [`is_empty`](Self::is_empty),
///   [`next_deadline`](Self::next_deadline), [`clear`](Self::clear); built with
///   [`new`](Self::new), [`with_capacity`](Self::with_capacity) or [`with_timer`](Self::with_timer).
///
/// Every method takes `&self`: share the queue by reference (or `Arc`) between any number of
/// producers and consumers. A value expires at the first tick of the queue's [`Timer`] at or after
/// its deadline (never early, at most one tick late) and then waits in the queue until a consumer
/// takes it: taking never holds up the timer. [`len`](Self::len) counts values pending and expired
/// but not yet taken.
///
/// Dropping the queue stops its timer and drops every value it holds, expired or pending, before
/// it returns. The one exception is a batch of values that the timer's driver thread is handing
/// over at that moment: the drop does not wait for an advance under way (it may be running a task
/// scheduled on [`timer`](Self::timer)), and the driver drops those values as it finishes. A
/// value whose `Drop` panics is dropped all the same, the panic caught: the drop goes on with the
/// others and does not panic.
/// Deadlines are instants on the timer's clock ([`Timer::now`]): with a
/// [`ManualClock`](crate::ManualClock), the queue is as deterministic as its timer.
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
    /// Declared first so that it is dropped first: its drain drops every pending value.
    timer: Timer,
    inner: Arc<Inner<T>>,
}

/// What the queue and its timer share.
struct Inner<T> {
    /// The expired values, the waiting consumers, and the count of values (`len`).
    ready: Ready<T>,
    /// This queue's number, in its keys (never 0, the number of no queue).
    id: u64,
}

/// The queue's side of its timer: the timer's fired values go to the ready list, a batch at a time.
struct Sink<T>(Arc<Inner<T>>);

impl<T: Send + 'static> ValueSink for Sink<T> {
    fn deliver(&self, fired: &mut FiredValues<'_>) -> u64 {
        let inner = &*self.0;
        let expired = fired.drain::<T>().map(|(value, ticket, deadline)| Expired {
            value,
            key: Key { ticket: Some(ticket), queue: inner.id },
            deadline,
        });
        inner.ready.push_all(expired)
    }

    fn closed(&self, abandoned: &mut dyn FnMut() -> u64) -> u64 {
        self.0.ready.close(abandoned)
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
        Self::with_capacity(0)
    }

    /// A queue with its own timer and driver thread, as [`new`](Self::new), whose timer is built
    /// with room for `values` pending values ([`TimerBuilder::capacity`](crate::TimerBuilder::capacity)):
    /// their slots are allocated and written before this returns, so that inserting up to that
    /// many from one thread allocates nothing more for the slots (48 bytes a value, kept for the
    /// queue's life: [`Timer::shrink`] gives back only what the timer grew beyond them). The room
    /// covers values of up to 8 bytes, which live in their slots beside their deadlines; a larger
    /// value takes a block of the timer's task slab (or a box past 248 bytes), created on first
    /// use. With 0, nothing is allocated until needed, as [`new`](Self::new).
    ///
    /// Each inserting thread takes slots a page (256) at a time, and a slot freed by a remove or
    /// an expiry is reused only after others have been: a queue that churns, or is fed by many
    /// threads, may grow past `values` even with fewer pending.
    ///
    /// ```
    /// use delaywheel::queue::DelayQueue;
    /// use std::time::Duration;
    ///
    /// let queue = DelayQueue::with_capacity(10_000);
    /// for i in 0..10_000u64 {
    ///     queue.insert(i, Duration::from_secs(30)); // into slots written up front
    /// }
    /// assert_eq!(queue.len(), 10_000);
    /// ```
    ///
    /// # Panics
    ///
    /// If `values` is beyond [`MAX_CAPACITY`](crate::MAX_CAPACITY), or if the driver thread cannot
    /// be started.
    pub fn with_capacity(values: usize) -> Self {
        Self::with_timer(Timer::builder().thread_name("delaywheel-queue").capacity(values).build())
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
    /// expires any more: inserts are refused, and the pending values are the shutdown's (dropped,
    /// or handed back inside the [`UnfiredTask`](crate::UnfiredTask)s, whose run drops them) and
    /// leave the queue's `len`; consumers take the values that had expired, then find the queue
    /// empty (`recv_timeout` and `poll_expired` return `None`, `is_empty` is true).
    /// Values that an advance in progress fired before the shutdown (one the shutdown did not wait
    /// for: it was called from a task of that advance, or gave up waiting) reach the consumers
    /// first: the queue ends once that advance is over.
    pub fn with_timer(timer: Timer) -> Self {
        static QUEUES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = QUEUES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let inner = Inner { ready: Ready::new(), id };
        let inner = Arc::new(inner);
        timer.set_value_sink(Box::new(Sink(Arc::clone(&inner))));
        DelayQueue { timer, inner }
    }

    /// The queue's timer: its clock ([`Timer::now`]), tick, statistics.
    pub fn timer(&self) -> &Timer {
        &self.timer
    }

    /// Inserts `value`, to expire `delay` from now; returns its key.
    ///
    /// If the timer refuses it (it is shut down, holds its
    /// [`max_pending`](crate::TimerBuilder::max_pending) tasks, or the deadline is beyond its range,
    /// e.g. `Duration::MAX`) the value is dropped and the key names nothing, as
    /// [`Timer::schedule`] treats a refused task. Use [`try_insert`](Self::try_insert) to get the
    /// value back with the reason.
    ///
    /// # Panics
    ///
    /// Only if the value's own `Drop` panics when a refused value is dropped: that panic leaves
    /// this call (as a refused closure's leaves [`Timer::schedule`]), with nothing counted or kept.
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
    /// [`InsertError::error`], and [`Timer::try_schedule`](crate::Timer::try_schedule) for which
    /// reason a refusal names when several hold. Nothing is stored then.
    pub fn try_insert(&self, value: T, delay: Duration) -> Result<Key, InsertError<T>> {
        self.insert_when(value, When::After(delay))
    }

    /// Inserts `value`, to expire at `deadline` (see [`insert_at`](Self::insert_at)).
    ///
    /// # Errors
    ///
    /// As [`try_insert`](Self::try_insert).
    pub fn try_insert_at(&self, value: T, deadline: Instant) -> Result<Key, InsertError<T>> {
        self.insert_when(value, When::At(deadline))
    }

    fn insert_when(&self, value: T, when: When) -> Result<Key, InsertError<T>> {
        let inner = &self.inner;
        // Counted in before the entry exists: a consumer can count it out only after it expired.
        inner.ready.count_in();
        match self.timer.insert_value(when, value) {
            Ok(ticket) => Ok(Key { ticket: Some(ticket), queue: inner.id }),
            Err((value, error)) => {
                inner.ready.count_out_untaken(1);
                Err(InsertError { value, error })
            }
        }
    }

    /// Removes the value `key` names and returns it, if it is still pending: `None` if it has
    /// expired (or is expiring: the timer has claimed it) or was removed, also when the key's
    /// slot now holds a later value. A value it returns never comes out of the queue.
    pub fn remove(&self, key: &Key) -> Option<T> {
        let (value, _) = self.timer.remove_value::<T>(self.ticket(key)?)?;
        self.inner.ready.count_out_untaken(1);
        Some(value)
    }

    /// Moves the deadline of the value `key` names to `delay` from now. Returns `true` iff it was
    /// still pending and now expires at the new deadline (the same key stays valid); `false` if it
    /// has expired or is expiring, was removed, or the new deadline is beyond the timer's range
    /// (then nothing changes).
    pub fn reset(&self, key: &Key, delay: Duration) -> bool {
        self.ticket(key).is_some_and(|ticket| self.timer.reset_value(ticket, When::After(delay)))
    }

    /// Moves the deadline of the value `key` names to `deadline` (on the timer's clock; one
    /// already passed expires by the next advance). Returns as [`reset`](Self::reset).
    pub fn reset_at(&self, key: &Key, deadline: Instant) -> bool {
        self.ticket(key).is_some_and(|ticket| self.timer.reset_value(ticket, When::At(deadline)))
    }

    /// The deadline of the value `key` names, while it is pending; `None` once it has expired (or
    /// is expiring) or was removed.
    pub fn deadline(&self, key: &Key) -> Option<Instant> {
        self.timer.value_deadline(self.ticket(key)?)
    }

    /// The ticket `key` carries, if it is a key of this queue.
    fn ticket(&self, key: &Key) -> Option<ValueTicket> {
        key.ticket.filter(|_| key.queue == self.inner.id)
    }
}

impl<T> DelayQueue<T> {
    /// The oldest expired value, if any; never waits.
    pub fn try_recv(&self) -> Option<Expired<T>> {
        self.inner.ready.try_pop()
    }

    /// Moves up to `limit` of the oldest expired values to the end of `buffer`, in the order
    /// [`try_recv`](Self::try_recv) would return them, and returns how many; never waits.
    ///
    /// One lock round for the whole batch: a consumer that handles bursts of expiries takes them
    /// at a fraction of the cost of a `try_recv` each. Values are taken only as they are moved, so
    /// other consumers take the rest. Combine with [`recv_timeout`](Self::recv_timeout) (or
    /// `poll_expired`) to wait when nothing has expired:
    ///
    /// ```
    /// use delaywheel::queue::DelayQueue;
    /// use delaywheel::{ManualClock, Timer};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    /// let queue = DelayQueue::with_timer(timer);
    /// for (i, delay) in [(0, 30), (1, 10), (2, 20), (3, 90)] {
    ///     queue.insert(i, Duration::from_millis(delay));
    /// }
    /// clock.advance(Duration::from_millis(50));
    /// queue.advance_clock(Duration::ZERO);
    ///
    /// let mut batch = Vec::new();
    /// assert_eq!(queue.try_recv_many(&mut batch, 2), 2);
    /// assert_eq!(queue.try_recv_many(&mut batch, 64), 1);
    /// let values: Vec<u32> = batch.drain(..).map(|expired| expired.into_inner()).collect();
    /// assert_eq!(values, [1, 2, 0]); // deadline order
    /// assert_eq!(queue.len(), 1); // the value due at 90 ms is still pending
    /// assert_eq!(queue.try_recv_many(&mut batch, 64), 0);
    /// ```
    pub fn try_recv_many(&self, buffer: &mut Vec<Expired<T>>, limit: usize) -> usize {
        self.inner.ready.pop_many(buffer, limit)
    }

    /// The oldest expired value, waiting up to `timeout` (of real time) for one to expire.
    ///
    /// Returns `None` at once if nothing is pending or expired, and as soon as the queue becomes
    /// empty while waiting (the last pending values were removed), as an iterator over the queue
    /// ends; `None` too after `timeout`. A timeout too long for an `Instant` (`Duration::MAX`) waits
    /// without end. On a manual timer values expire only when some thread advances it.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Expired<T>> {
        self.inner.ready.pop_timeout(timeout)
    }

    /// Advances the queue's timer: [`Timer::advance_clock`]. Values whose deadline has passed
    /// expire inside this call on a manual timer.
    pub fn advance_clock(&self, timeout: Duration) -> bool {
        self.timer.advance_clock(timeout)
    }
}

/// Drops the expired values before the timer (the next field) drops the pending ones: the ready
/// list is shared with the timer's value sink, which a driver thread still finishing an advance
/// keeps alive after the drop returns.
impl<T> Drop for DelayQueue<T> {
    fn drop(&mut self) {
        self.inner.ready.discard();
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
