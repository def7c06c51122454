//! `TimerHandle` on the core: the pool's 32-byte handle of the task's entry, with no reference
//! count (`shard/pool.rs`, "A handle"), and a future's [`LentHandle`], the same handle, `Copy`.
//!
//! A handle works alone, through its entry's shard (`shard/core/handles.rs`, "A handle alone"):
//! a cancel takes the entry out under the shard's lock and lowers a bounded timer's gauge there
//! (the shard's [`Extra`](super::Extra)); a reset reads the timer's clock from the shard's extra,
//! then moves the entry (a second hold of the lock: the core's reset takes the deadline made; an
//! entry that ends between the two is not moved); a deadline reads the word and, for the clock's
//! origin, the instant kept by stamp in the extra, in one critical section.
//!
//! **Before the origin.** Every instant before the clock's origin has the origin's word; its
//! instant is kept in the shard's extra by the entry's stamp (unique per timer), written by the
//! schedule's insert and by a reset in the critical section that writes the word, read with the
//! word in one critical section, and dropped by a cancel or a claim of the entry (the drain
//! forgets the whole shard's with the close). So the word and the record read together are one
//! reset's, as `before_origin.rs` requires of the arena's.
//! Once the timer is dropped, the shard's header is given back and every handle finds nothing.

use std::fmt;
use std::time::{Duration, Instant};

use super::super::values::{exact_of, instant_of};
#[cfg(feature = "async")]
use super::super::LiveTimer;
use super::super::{Time, When};
use super::{CoreHandle, Extra, Payload};
use crate::deadline::Deadline;
use crate::shard::life::Status;
use crate::sync::Ordering;

/// A scheduled task, as seen by whoever scheduled it: the way to cancel it or move it.
///
/// Dropping a handle does **not** cancel the task; only [`cancel`](TimerHandle::cancel) does. A
/// handle names its task by shard, slot and stamp in the timer's core and keeps nothing alive:
/// once the task ended, or the timer is dropped, it finds nothing.
///
/// For every task, exactly one of these happens: it runs once, or one `cancel()` call returns
/// `true` (or the timer shuts down first, and then neither). A reset moves a pending task to a
/// new deadline and returns `true`, or returns `false` once the task fired, is firing, was
/// cancelled or abandoned.
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
    /// # Panics
    ///
    /// Only if the closure's own `Drop` panics, after the task was cancelled and counted.
    pub fn cancel(&self) -> bool {
        self.inner.is_some_and(|handle| cancel(&handle))
    }

    /// Moves the pending task to `delay` from now on the timer's clock, keeping its closure and
    /// this handle: `true` iff it was pending and is now due then.
    pub fn reset(&self, delay: Duration) -> bool {
        self.inner.is_some_and(|handle| reset(&handle, When::After(delay), true))
    }

    /// Moves the pending task to `deadline` on the timer's clock; see [`reset`](TimerHandle::reset).
    pub fn reset_at(&self, deadline: Instant) -> bool {
        self.inner.is_some_and(|handle| reset(&handle, When::At(deadline), true))
    }

    /// When the pending task is due, on the timer's clock; `None` once it is no longer pending.
    pub fn deadline(&self) -> Option<Instant> {
        deadline(&self.inner?)
    }

    /// Whether the task is still waiting: not yet fired, cancelled or abandoned.
    pub fn is_pending(&self) -> bool {
        self.status() == Some(Status::Pending)
    }

    /// Whether the task was claimed for running: it ran or is running (kept until its slot is
    /// reused).
    pub fn is_fired(&self) -> bool {
        self.status() == Some(Status::Fired)
    }

    /// Whether a `cancel()` call cancelled the task (kept until its slot is reused).
    pub fn is_cancelled(&self) -> bool {
        self.status() == Some(Status::Cancelled)
    }

    /// Where the task sits in the wheel right now. **Diagnostic**: a snapshot.
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

/// Runs `f` on the extra of `handle`'s shard, under its lock; `None` once the timer is gone.
pub(super) fn with_extra<R>(handle: &CoreHandle, f: impl FnOnce(&mut Extra) -> R) -> Option<R> {
    Some(f(&mut handle.lock()?.state().extra))
}

/// [`TimerHandle::cancel`] (module docs): the task dropped after the unlock.
fn cancel(handle: &CoreHandle) -> bool {
    cancel_take(handle).is_some()
}

/// Takes `handle`'s pending entry out (held ones too: a cancel wins over the batch's claim),
/// dropping its before-origin record and lowering a bounded timer's gauge under the shard's lock:
/// its payload, for the caller to drop after (or take a value out of: `values.rs`). For an entry
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
    let Some(Some(time)) = with_extra(handle, |extra| extra.time.clone()) else { return false };
    let Ok((_, to)) = time.deadline(when) else { return false };
    let record = if keep { before_origin(&time, when) } else { None };
    let stamp = handle.entry().1;
    handle.reset_with(to, |extra| match record {
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
