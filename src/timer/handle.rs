//! `TimerHandle`: the caller's side of a scheduled task.

use std::fmt;
use std::time::{Duration, Instant};

#[cfg(feature = "async")]
use super::LiveTimer;
use super::{cancel, position, reset, HandleStripe, When};
use crate::entry::{self, EntryArena, Status, Ticket};
use crate::sync::Arc;

/// A scheduled task, as seen by whoever scheduled it: the way to cancel it or move it.
///
/// Dropping a handle does **not** cancel the task (fire-and-forget, as in Kafka and Netty); only
/// [`cancel`](TimerHandle::cancel) does. A handle names its task by slot and generation in the
/// timer's entry arena (`entry/arena.rs`), and keeps that arena and the timer's wheel (not the timer, nor
/// its threads) alive through the counter stripe (shared with the handles scheduled on the same
/// thread) its `cancel()` counts on. It keeps
/// no task alive: once the task has fired or been cancelled, its slot is reused by later tasks, and
/// the handle's generation no longer matches.
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
    /// The counter stripe of the thread that scheduled the task, on which a winning `cancel()`
    /// counts it out of `len()` (`counters.rs`), and through which the handle reaches the timer's
    /// entry arena; and the ticket naming the entry there. `None` for the handle `Timer::schedule`
    /// returns when it could not schedule.
    inner: Option<(Arc<HandleStripe>, Ticket)>,
}

// A handle is the stripe's `Arc` and a 16-byte ticket, the `Option` in the `Arc`'s niche (loom's
// `Arc` is bigger).
#[cfg(not(delaywheel_loom))]
const _: () = assert!(std::mem::size_of::<TimerHandle>() == 24);

impl TimerHandle {
    #[inline]
    pub(crate) fn new(stripe: Arc<HandleStripe>, ticket: Ticket) -> Self {
        TimerHandle { inner: Some((stripe, ticket)) }
    }

    /// A handle to nothing: what `schedule` returns for a task it refused.
    pub(crate) fn refused() -> Self {
        TimerHandle { inner: None }
    }

    fn status(&self) -> Option<Status> {
        let (stripe, ticket) = self.inner.as_ref()?;
        status_in(&stripe.context().arena, *ticket)
    }

    /// Cancels the task. Returns `true` iff this call cancelled a pending task, which then never
    /// runs; its closure is dropped before this returns, and `Timer::len` drops at once.
    ///
    /// Returns `false` if the task already ran or started running, was already cancelled, was
    /// abandoned by a shutdown, or was never scheduled.
    ///
    /// # Panics
    ///
    /// Only if the closure's own `Drop` panics: that panic leaves this call, after the task was
    /// cancelled and counted and its slot freed (nothing leaks; the cancel happened).
    pub fn cancel(&self) -> bool {
        self.inner.as_ref().is_some_and(|(stripe, ticket)| cancel_on(ticket, stripe))
    }

    /// Moves the pending task to `delay` from now on the timer's clock, keeping its closure and
    /// this handle. Returns `true` iff the task was pending and is now due then: it runs once, at
    /// the first tick boundary at or after `now + delay` (a zero delay: by the next advance), never
    /// before. Returns `false` and changes nothing if the task already fired or is being fired,
    /// was cancelled or abandoned, the handle is inert, or `now + delay` is beyond the timer's
    /// range (which ends at most a second past [`Timer::max_delay`](crate::Timer::max_delay)).
    /// Earlier or later than the old deadline alike; O(1), no allocation. The task keeps its place
    /// in the schedule order: among tasks due at one instant it fires in the order it was first
    /// scheduled (the crate docs' "Time semantics"). Racing a shutdown, the
    /// task is handed back by [`Timer::shutdown`](crate::Timer::shutdown) either way, with the new
    /// deadline iff this returned `true`.
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
        self.reset_to(When::After(delay))
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
        self.reset_to(When::At(deadline))
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
    /// handle, and for a deadline past what `Instant` represents (only with ticks of minutes and
    /// deadlines millions of years away).
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
        let (stripe, ticket) = self.inner.as_ref()?;
        let deadline = {
            let _pin = stripe.context().arena.pin();
            entry::deadline(&stripe.context().arena, *ticket)?
        };
        // The word's instant, or one before the clock's origin kept beside it (`before_origin.rs`).
        let reach = stripe.context();
        reach.before_origin.instant(&reach.arena, &reach.time, *ticket, deadline)
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
    /// How a task ended is kept in its slot of the timer's entry arena until a later task reuses
    /// the slot; after that this returns `false` (as does [`is_cancelled`](TimerHandle::is_cancelled)):
    /// the handle only knows its task is no longer pending. Freed slots are reused roughly oldest
    /// first, so that usually takes many further schedules, but there is no fixed number: a busy
    /// timer reuses the slot sooner or later. A shrink that gives the slot's page back ends the
    /// record too: [`Timer::shrink`](crate::Timer::shrink), the driver's automatic shrink, and the
    /// one after [`shutdown`](crate::Timer::shutdown) or after a drop of the timer that this handle
    /// outlives, on a timer that once held 16 384 slots or more (a smaller one keeps its pages).
    /// So read the status before shutting a large timer down. The exact record of a cancellation
    /// is the result of [`cancel`](TimerHandle::cancel); of a run, the task itself.
    pub fn is_fired(&self) -> bool {
        self.status() == Some(Status::Fired)
    }

    /// Whether a `cancel()` call cancelled the task. Exact until the task's slot is reused or its
    /// page given back by a shrink, like [`is_fired`](TimerHandle::is_fired).
    pub fn is_cancelled(&self) -> bool {
        self.status() == Some(Status::Cancelled)
    }
    /// Where the task sits in the wheel right now: level, slot and the bucket's expiration.
    /// **Diagnostic**: a snapshot that the driver may change at any moment (see
    /// [`WheelPosition`](crate::WheelPosition)). `None` if the task is not pending, or is in
    /// transit between buckets during a flush.
    pub fn position(&self) -> Option<position::WheelPosition> {
        self.inner.as_ref().and_then(|(stripe, ticket)| {
            let _pin = stripe.context().arena.pin();
            position::of(stripe.context(), *ticket)
        })
    }
}

impl TimerHandle {
    /// [`reset`](TimerHandle::reset) or [`reset_at`](TimerHandle::reset_at) (`reset.rs`).
    #[inline(always)]
    fn reset_to(&self, when: When) -> bool {
        self.inner.as_ref().is_some_and(|(stripe, ticket)| reset_on(ticket, stripe, when, true))
    }
}

/// [`TimerHandle::cancel`] of `ticket`, counted out on `stripe`. The ticket is borrowed: passed by
/// value, it is copied to the stack before the cancel reads it, and a W7 pair costs about 8 ns more.
#[inline(always)]
fn cancel_on(ticket: &Ticket, stripe: &HandleStripe) -> bool {
    let _pin = stripe.context().arena.pin();
    cancel::cancel(*ticket, stripe)
}

/// [`TimerHandle::reset_to`] of `ticket`, counted on `stripe`; a deadline before the clock's
/// origin kept for `deadline` iff `keep` (`before_origin.rs`: a `Sleep` keeps its own).
#[inline(always)]
fn reset_on(ticket: &Ticket, stripe: &HandleStripe, when: When, keep: bool) -> bool {
    let context = stripe.context();
    let Ok((_, to)) = context.time.deadline(when) else {
        return false;
    };
    let reset = || {
        let _pin = context.arena.pin();
        reset::reset(*ticket, stripe, to)
    };
    match keep {
        true => context.before_origin.reset((&context.arena, &context.time), (*ticket, when, to), reset),
        false => reset(),
    }
}

/// A future's handle of its task (`sleep.rs`, feature `async`): the ticket alone, without the
/// counter stripe's `Arc` a [`TimerHandle`] holds. The future already holds its timer (`refs.rs`),
/// which keeps the arena and the wheel alive, and its cancel and reset reach them through that
/// [`LiveTimer`], counting on the calling thread's stripe (any stripe will do: `counters.rs`). So
/// arming and cancelling a future writes no reference count (a handle's: one at the schedule, one
/// at its drop). `None` for a task the timer refused.
#[cfg(feature = "async")]
#[derive(Clone, Copy)]
pub(crate) struct LentHandle(Option<Ticket>);

#[cfg(feature = "async")]
impl LentHandle {
    #[inline]
    pub(super) fn new(ticket: Ticket) -> Self {
        LentHandle(Some(ticket))
    }

    /// A handle to nothing, for a task the timer refused.
    pub(crate) fn refused() -> Self {
        LentHandle(None)
    }

    /// [`TimerHandle::cancel`] on `timer`, the timer that scheduled the task (after its shutdown
    /// too).
    #[inline]
    pub(crate) fn cancel(self, timer: &LiveTimer) -> bool {
        self.0.is_some_and(|ticket| cancel_on(&ticket, timer.0.counters.local()))
    }

    /// [`TimerHandle::reset_at`] on `timer`, the timer that scheduled the task (after its shutdown
    /// too).
    pub(crate) fn reset_at(self, timer: &LiveTimer, deadline: Instant) -> bool {
        self.0.is_some_and(|ticket| reset_on(&ticket, timer.0.counters.local(), When::At(deadline), false))
    }

    /// The `Debug` form of the [`TimerHandle`] this stands for, on `timer`.
    pub(crate) fn debug(self, timer: &LiveTimer) -> impl fmt::Debug + '_ {
        LentDebug(self, timer)
    }
}

#[cfg(feature = "async")]
struct LentDebug<'a>(LentHandle, &'a LiveTimer);

#[cfg(feature = "async")]
impl fmt::Debug for LentDebug<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let LentDebug(LentHandle(ticket), timer) = *self;
        fmt_handle(f, ticket, ticket.and_then(|ticket| status_in(&timer.0.store.arena, ticket)))
    }
}

/// The status of the entry `ticket` names in `arena`.
fn status_in(arena: &EntryArena, ticket: Ticket) -> Option<Status> {
    // Every look from a ticket is pinned: the slot's page may be given back meanwhile
    // (`Timer::shrink`, `entry/readers.rs`).
    let _pin = arena.pin();
    entry::status(arena, ticket)
}

/// A handle's `Debug` form, from its ticket (`None`: refused) and its task's status.
fn fmt_handle(f: &mut fmt::Formatter<'_>, ticket: Option<Ticket>, status: Option<Status>) -> fmt::Result {
    match ticket {
        Some(ticket) => {
            f.debug_struct("TimerHandle").field("slot", &ticket.id.index()).field("status", &status).finish()
        }
        None => f.write_str("TimerHandle(refused)"),
    }
}

impl fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_handle(f, self.inner.as_ref().map(|(_, ticket)| *ticket), self.status())
    }
}
