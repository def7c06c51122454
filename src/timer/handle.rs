//! `TimerHandle` on the core: the pool's 32-byte handle of the task's entry, with no reference
//! count (`shard/pool.rs`, "A handle"), and a future's [`LentHandle`], the same handle, `Copy`.
//!
//! A handle works alone, through its entry's shard (`shard/core/handles.rs`, "A handle alone"):
//! a cancel takes the entry out under the shard's lock and lowers a bounded timer's gauge there
//! (the shard's [`Extra`](super::Extra)); a reset reads the timer's clock and tick from the shard's
//! extra, makes the deadline and moves the entry in one critical section (`Handle::reset_by`); a
//! deadline reads the word and, for the clock's origin, the instant kept by stamp in the extra, in
//! one critical section.
//!
//! **Before the origin.** Every instant before the clock's origin has the origin's word; its
//! instant is kept in the shard's extra by the entry's stamp (unique per timer), written by the
//! schedule's insert and by a reset in the critical section that writes the word, read with the
//! word in one critical section, and dropped by a cancel or a claim of the entry (the drain
//! forgets the whole shard's with the close). So the word and the record read together are one
//! reset's, and a deadline never reads one reset's word with another's instant.
//! Once the timer is dropped, the shard's header is given back and every handle finds nothing.

use std::fmt;
use std::time::{Duration, Instant};

use super::values::{exact_of, instant_of};
#[cfg(feature = "async")]
use super::LiveTimer;
use super::{CoreHandle, Extra, Payload};
use super::{Time, When};
use crate::deadline::Deadline;
use crate::shard::life::Status;
use crate::sync::Ordering;

/// A scheduled task, as seen by whoever scheduled it: the way to cancel it or move it.
///
/// Dropping a handle does **not** cancel the task (fire-and-forget, as in Kafka and Netty); only
/// [`cancel`](TimerHandle::cancel) does. A handle names its task by shard, slot and stamp in the
/// timer's core, and keeps nothing alive: not the task (once it has fired or been cancelled, its
/// slot is reused by later tasks, and the handle's stamp no longer matches), nor the timer (once
/// the timer is dropped, every handle of it finds nothing: its task is no longer pending).
///
/// # Cancellation
///
/// For every task, exactly one of these happens: it runs once, or one `cancel()` call returns
/// `true` (or the timer shuts down first, and then neither). This holds when `cancel` races the
/// bucket being flushed, the task being fired, or other `cancel` calls.
///
/// # Re-arming
///
/// [`reset`](TimerHandle::reset) and [`reset_at`](TimerHandle::reset_at) move a pending task to a
/// new deadline, earlier or later, keeping its closure and this handle: the idle or session
/// timeout re-armed on every message, with no new allocation and no stale expiry to guard against.
/// A reset returns `true` iff the task was still pending and is now due at the new deadline; it
/// then runs once, never before that deadline (and at most one tick after it). It returns `false`,
/// changing nothing, once the task fired, is firing (taken out by the advance that runs it), was
/// cancelled or abandoned. A reset racing the firing or a `cancel` keeps exactly-once: the task
/// runs at most once, and a `cancel` that returns `true` still means it never runs.
#[derive(Clone)]
pub struct TimerHandle {
    /// `None` for the handle `Timer::schedule` returns when it could not schedule.
    inner: Option<CoreHandle>,
}

// The core's handle, the `Option` in its header reference's niche.
#[cfg(not(delaywheel_loom))]
const _: () = assert!(std::mem::size_of::<TimerHandle>() == 32);

impl TimerHandle {
    #[inline]
    pub(super) fn new(handle: CoreHandle) -> Self {
        TimerHandle { inner: Some(handle) }
    }

    /// A handle to nothing: what `schedule` returns for a task it refused.
    pub(crate) fn refused() -> Self {
        TimerHandle { inner: None }
    }

    /// Cancels the task. Returns `true` iff this call cancelled a pending task, which then never
    /// runs; its closure is dropped before this returns, and `Timer::len` drops at once.
    ///
    /// Returns `false` if the task already ran or started running, was already cancelled, was
    /// abandoned by a shutdown, was never scheduled, or its timer was dropped.
    ///
    /// # Panics
    ///
    /// Only if the closure's own `Drop` panics: that panic leaves this call, after the task was
    /// cancelled and counted and its slot freed (nothing leaks; the cancel happened).
    pub fn cancel(&self) -> bool {
        self.inner.is_some_and(|handle| cancel(&handle))
    }

    /// Moves the pending task to `delay` from now on the timer's clock, keeping its closure and
    /// this handle. Returns `true` iff the task was pending and is now due then: it runs once, at
    /// the first tick boundary at or after `now + delay` (a zero delay: by the next advance), never
    /// before. Returns `false` and changes nothing if the task already fired or is being fired,
    /// was cancelled or abandoned, the handle is inert, its timer was dropped, or `now + delay` is
    /// beyond the timer's range (which ends at most a second past
    /// [`Timer::max_delay`](crate::Timer::max_delay)). Earlier or later than the old deadline
    /// alike; O(1), no allocation. The task keeps its place in the schedule order: among tasks due
    /// at one instant it fires in the order it was first scheduled (the crate docs' "Time
    /// semantics"). Racing a shutdown, the task is handed back by
    /// [`Timer::shutdown`](crate::Timer::shutdown) either way, with the new deadline iff this
    /// returned `true`.
    ///
    /// Called from a task of this timer while an advance runs it (a task moving another pending
    /// one), a new deadline at or before the clock reading that advance works to fires in that
    /// same advance, in deadline order: the task keeps its place in the schedule order, which is
    /// what the advance fires by. (A task *scheduled* there waits for the next advance.) Each task
    /// still runs at most once, so the advance's work stays bounded by the tasks pending.
    ///
    /// ```
    /// use delaywheel::{ManualClock, Timer};
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    /// let expired = Arc::new(AtomicU32::new(0));
    /// let e = Arc::clone(&expired);
    /// let idle = timer.schedule(Duration::from_millis(100), move || {
    ///     e.fetch_add(1, Ordering::SeqCst);
    /// });
    /// for _ in 0..5 {
    ///     clock.advance(Duration::from_millis(60)); // a message every 60 ms
    ///     timer.advance_clock(Duration::ZERO);
    ///     assert!(idle.reset(Duration::from_millis(100))); // re-armed: still idle-free
    /// }
    /// assert_eq!(expired.load(Ordering::SeqCst), 0);
    /// clock.advance(Duration::from_millis(100)); // silence
    /// timer.advance_clock(Duration::ZERO);
    /// assert_eq!(expired.load(Ordering::SeqCst), 1);
    /// assert!(!idle.reset(Duration::from_millis(100))); // it fired: nothing to move
    /// ```
    pub fn reset(&self, delay: Duration) -> bool {
        self.inner.is_some_and(|handle| reset(&handle, When::After(delay), true))
    }

    /// Moves the pending task to `deadline` on the timer's clock
    /// ([`Timer::now`](crate::Timer::now)); see [`reset`](TimerHandle::reset). A deadline already
    /// passed (also one before the clock's origin) runs by the next advance. Returns `false` and
    /// changes nothing for a deadline beyond the timer's range, and in the cases `reset` does.
    ///
    /// ```
    /// use delaywheel::{ManualClock, Timer};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    /// let handle = timer.schedule(Duration::from_secs(60), || {});
    /// let sooner = timer.now() + Duration::from_millis(20);
    /// assert!(handle.reset_at(sooner));
    /// assert_eq!(handle.deadline(), Some(sooner));
    /// clock.advance(Duration::from_millis(20));
    /// timer.advance_clock(Duration::ZERO);
    /// assert!(handle.is_fired());
    /// ```
    pub fn reset_at(&self, deadline: Instant) -> bool {
        self.inner.is_some_and(|handle| reset(&handle, When::At(deadline), true))
    }

    /// When the pending task is due, on the timer's clock ([`Timer::now`](crate::Timer::now)): its
    /// deadline, `now + delay` or the instant given, to the nanosecond; it fires at the first tick
    /// boundary at or after it. Two kinds of deadline read back as a tick boundary instead: one more
    /// than about 2.3 years after the clock's origin, and any with a tick longer than 36 minutes
    /// (`deadline.rs`, "exact" and "far" words), rounded up to their tick, or if set already passed
    /// within the tick under way, as that tick's start. An instant before the clock's origin
    /// ([`Timer::now`](crate::Timer::now): the timer's start, or the `ManualClock`'s creation), given
    /// to [`Timer::schedule_at`](crate::Timer::schedule_at) or [`reset_at`](TimerHandle::reset_at),
    /// reads back as given too (to the nanosecond up to 292 years before the origin; as the origin
    /// less 292 years beyond), as a `Sleep`'s and a delay queue value's do.
    /// `None` once the task is no longer pending (fired, cancelled or abandoned), for an inert
    /// handle, once its timer is dropped, and for a deadline past what `Instant` represents (only
    /// with ticks of minutes and deadlines millions of years away).
    ///
    /// ```
    /// use delaywheel::{ManualClock, Timer};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let timer = Timer::builder().tick(Duration::from_millis(10)).clock(clock.clone()).manual().build();
    /// let start = timer.now();
    /// let handle = timer.schedule(Duration::from_millis(25), || {});
    /// assert_eq!(handle.deadline(), Some(start + Duration::from_millis(25))); // fires at 30 ms
    /// assert!(handle.cancel());
    /// assert_eq!(handle.deadline(), None);
    /// ```
    pub fn deadline(&self) -> Option<Instant> {
        deadline(&self.inner?)
    }

    /// Whether the task is still waiting: not yet fired, cancelled or abandoned. Exact at all times.
    pub fn is_pending(&self) -> bool {
        self.status() == Some(Status::Pending)
    }

    /// Whether the task was claimed for running: it ran or is running. A task taken out of the
    /// wheel to fire that has not started yet (later in the batch being fired, or waiting in the
    /// queue of an executor thread, [`TaskExecution::Threads`](crate::TaskExecution::Threads)) is
    /// still pending: `is_pending()` is `true`, a `cancel()` still wins (it then never runs), and a
    /// `reset` returns `false` (it is being fired).
    ///
    /// How a task ended is kept in its slot of the timer's core until a later task reuses the slot;
    /// after that this returns `false` (as does [`is_cancelled`](TimerHandle::is_cancelled)): the
    /// handle only knows its task is no longer pending. Freed slots are reused oldest first, so that
    /// usually takes many further schedules, but there is no fixed number: a busy timer reuses the
    /// slot sooner or later. A shrink that gives the slot back ends the record too (a shrink gives
    /// back the vacant slots after the last one holding a pending task):
    /// [`Timer::shrink`](crate::Timer::shrink), the driver's automatic shrink, and the one after
    /// [`shutdown`](crate::Timer::shutdown), on a timer whose slots written reach 16 384 (a smaller
    /// one keeps its slots); and so does the timer's drop, after which every handle finds
    /// nothing. So read the status before shutting a large timer down. The exact record of a
    /// cancellation is the result of [`cancel`](TimerHandle::cancel); of a run, the task itself.
    pub fn is_fired(&self) -> bool {
        self.status() == Some(Status::Fired)
    }

    /// Whether a `cancel()` call cancelled the task. Exact until the task's slot is reused or given
    /// back by a shrink, like [`is_fired`](TimerHandle::is_fired).
    pub fn is_cancelled(&self) -> bool {
        self.status() == Some(Status::Cancelled)
    }

    /// Where the task sits in the wheel right now: level, slot and the bucket's expiration.
    /// **Diagnostic**: a snapshot that the driver may change at any moment (see
    /// [`WheelPosition`](crate::WheelPosition)). `None` if the task is not pending, or is taken
    /// out by the advance that fires it. A task overdue (due at or before its shard's wheel time,
    /// waiting for the next advance) reads as level 0's slot of its tick, expiring at that time.
    pub fn position(&self) -> Option<crate::WheelPosition> {
        let ((level, slot, expiration_tick), deadline) = self.inner?.position()?;
        Some(crate::WheelPosition { level, slot, expiration_tick, deadline_tick: deadline.tick() })
    }

    fn status(&self) -> Option<Status> {
        self.inner?.status()
    }
}

impl fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_handle(f, self.inner)
    }
}

/// A handle's `Debug` form.
fn fmt_handle(f: &mut fmt::Formatter<'_>, handle: Option<CoreHandle>) -> fmt::Result {
    match handle {
        Some(handle) => f
            .debug_struct("TimerHandle")
            .field("slot", &handle.entry().0)
            .field("status", &handle.status())
            .finish(),
        None => f.write_str("TimerHandle(refused)"),
    }
}

/// [`TimerHandle::cancel`] (module docs): the task dropped after the unlock.
fn cancel(handle: &CoreHandle) -> bool {
    cancel_take(handle).is_some()
}

/// Takes `handle`'s pending entry out (held ones too: a cancel wins over the batch's claim),
/// dropping its before-origin record and lowering a bounded timer's gauge under the shard's lock:
/// its payload, for the caller to drop after (or take a value out of: `value_entries.rs`). For an entry
/// that counts: every one but a tick group's ([`LentHandle::cancel`] handles both).
pub(super) fn cancel_take(handle: &CoreHandle) -> Option<Payload> {
    take(handle, true)
}

/// [`cancel_take`], lowering the gauge under the lock iff `lower`.
fn take(handle: &CoreHandle, lower: bool) -> Option<Payload> {
    let stamp = handle.entry().1;
    handle.cancel_with(|state| {
        let extra = &mut state.extra;
        if !extra.before_origin.is_empty() {
            extra.before_origin.remove(&stamp);
        }
        if let Some(bound) = extra.bound.as_ref().filter(|_| lower) {
            bound.fetch_sub(1, Ordering::Relaxed);
        }
    })
}

/// [`TimerHandle::reset`] to `when` (module docs): the deadline made on the clock the shard's
/// extra keeps, then the move; a deadline before the clock's origin recorded iff `keep` (a `Sleep`
/// keeps its own), in the move's critical section, and a record of an earlier one dropped there.
fn reset(handle: &CoreHandle, when: When, keep: bool) -> bool {
    let stamp = handle.entry().1;
    let to = |extra: &Extra| {
        let time = extra.time.as_ref()?;
        let (_, to) = time.deadline(when).ok()?;
        Some((to, if keep { before_origin(time, when) } else { None }))
    };
    handle.reset_by(to, |extra, record| match record {
        Some(exact) => {
            extra.before_origin.insert(stamp, exact);
        }
        None if keep && !extra.before_origin.is_empty() => {
            extra.before_origin.remove(&stamp);
        }
        None => {}
    })
}

/// The instant of `when` as signed nanoseconds from the clock's base, if it is before the
/// clock's origin: what a handle's `deadline` reads back for the origin's word.
pub(super) fn before_origin(time: &Time, when: When) -> Option<i64> {
    match when {
        When::At(at) if at < time.clock.base() => Some(exact_of(time.clock.base(), at)),
        _ => None,
    }
}

/// [`TimerHandle::deadline`]: the word and the record before the origin, read in one critical
/// section of the entry's shard.
fn deadline(handle: &CoreHandle) -> Option<Instant> {
    let stamp = handle.entry().1;
    let (word, record, time) = handle.with_entry(|word, _, extra| {
        let record = extra.before_origin.get(&stamp).copied();
        (word, record, extra.time.clone())
    })?;
    let time = time?;
    match record {
        Some(exact) if word == time.ticks.origin() => Some(instant_of(time.clock.base(), exact)),
        _ => time.clock.deadline_instant(time.ticks, word),
    }
}

/// Moves `handle`'s pending entry to `deadline` in place, and for a value (`exact`) rewrites the
/// exact deadline in its payload in the same critical section: `true` iff it moved.
pub(super) fn reset_to(handle: &CoreHandle, deadline: Deadline, exact: Option<i64>) -> bool {
    handle.reset_with_payload(deadline, |payload, _| {
        if let Some(exact) = exact {
            payload.set_exact(exact);
        }
    })
}

/// The deadline word of `handle`'s pending entry and, for a value, the exact deadline its payload
/// keeps, read in one critical section of its shard; `None` if it is not pending.
pub(super) fn deadline_of(handle: &CoreHandle) -> Option<(Deadline, Option<i64>)> {
    handle.with_entry(|word, payload, _| (word, payload.exact()))
}

/// A future's handle of its task (`sleep.rs`, feature `async`): the core's handle, `Copy`; the
/// future holds its timer. `None` for a task the timer refused.
#[cfg(feature = "async")]
#[derive(Clone, Copy)]
pub(crate) struct LentHandle(pub(super) Option<CoreHandle>);

#[cfg(feature = "async")]
impl LentHandle {
    /// A handle to nothing, for a task the timer refused.
    pub(crate) fn refused() -> Self {
        LentHandle(None)
    }

    /// [`TimerHandle::cancel`] on `timer`, the timer that scheduled the task (after its shutdown
    /// too).
    #[inline]
    pub(crate) fn cancel(self, timer: &LiveTimer) -> bool {
        let Some(handle) = self.0 else { return false };
        // A tick group's entry is uncounted: the gauge is lowered after, by the payload's kind.
        let Some(payload) = take(&handle, false) else { return false };
        if let Some(bound) = timer.0.bound.as_ref().filter(|_| payload.is_counted()) {
            bound.fetch_sub(1, Ordering::Relaxed);
        }
        drop(payload);
        true
    }

    /// [`TimerHandle::reset_at`] on `timer`, the timer that scheduled the task (after its shutdown
    /// too).
    pub(crate) fn reset_at(self, timer: &LiveTimer, deadline: Instant) -> bool {
        let _ = timer;
        self.0.is_some_and(|handle| reset(&handle, When::At(deadline), false))
    }

    /// The `Debug` form of the [`TimerHandle`] this stands for, on `timer`.
    pub(crate) fn debug(self, timer: &LiveTimer) -> impl fmt::Debug + '_ {
        LentDebug(self, timer)
    }
}

#[cfg(feature = "async")]
struct LentDebug<'a>(LentHandle, #[allow(dead_code)] &'a LiveTimer);

#[cfg(feature = "async")]
impl fmt::Debug for LentDebug<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_handle(f, (self.0).0)
    }
}
