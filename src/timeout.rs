//! The `async` feature's [`Timeout`]: a future with a time limit, armed lazily.
//!
//! ## Lazy arming
//!
//! Most timeouts in a server wrap a future that is ready at once (the data is already buffered, the
//! lock is free). [`Timer::timeout`] and [`Timer::timeout_at`] therefore do not touch the wheel when
//! they are created: the `Timeout` holds the inner future, the limit (a duration or an instant) and
//! a way back to the timer (`timer/refs.rs`: one uncontended reference count, and none written to
//! arm). Its first poll
//! polls the inner future; if that is ready, the output is returned and the timer was never
//! involved (no clock read, no entry, no cancel). Only a poll that finds the inner future pending
//! **arms** the limit, as a member of its thread's **tick group** (`sleep/group/`): the timeouts
//! armed on one thread, on one timer, due in the same tick share one timer entry, whose task wakes
//! them all. The first timeout of a tick on a thread arms a [`Sleep`] of its own; the second makes
//! the tick's group (schedules its entry), and the rest join it (the poll's waker stored in its
//! list, under its lock). From then on the `Timeout` is the inner future raced against that
//! sleep or membership. Dropping it cancels the sleep or leaves the group (the group's entry is
//! cancelled once no member and no thread's cache holds it), and [`Timer::len`] falls by one at
//! once: each armed timeout counts once, a group does not (`timer/groups.rs`).
//!
//! ## Where the limit counts from
//!
//! A duration limit counts from that **first pending poll**, as pingora's `fast_timeout` does (the
//! clock is read only then): `Timeout::deadline` is `now + duration` at that poll. Since the first
//! poll comes after the creation, nothing elapses before `duration` has passed since the creation
//! either; a `Timeout` created long before its first poll is given its full `duration` from that
//! poll. An instant limit ([`Timer::timeout_at`]) is that instant whenever it is armed.
//! [`Timer::try_timeout`] arms at once instead (so it can return the timer's refusal), counting
//! from the call, as tokio's `timeout` does.
//!
//! ## Exactly once, never early
//!
//! The inner future is polled first at every poll, so an inner future ready at the poll that also
//! sees the deadline wins. `Err(Elapsed)` comes only once the group fired (or, for `try_timeout`,
//! its [`Sleep`] completed), at the boundary of the tick the timer would have fired the timeout's
//! own entry at: never before the deadline, at most a tick after it. A deadline already passed when
//! the limit is armed elapses by the next advance, or at that very poll if its thread's group of
//! the tick it is filed at has fired already (a deadline passed within the tick under way is filed
//! at the tick before its own: `deadline.rs`, `P`). If the timer refuses the limit or shuts down,
//! the limit never elapses: the `Timeout` becomes its inner future without a limit (never a panic;
//! see `sleep.rs`, "Refusal and shutdown").

use std::error::Error;
use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::clock::saturating_add;
use crate::sleep::group::{Limit, Member};
use crate::sleep::Sleep;
use crate::sync::Arc;
use crate::timer::refs::TimerRef;
use crate::timer::{LiveTimer, When};
use crate::{ScheduleError, Timer};

impl Timer {
    /// Runs `future` with a time limit: completes with `Ok(output)` if `future` completes first, or
    /// with `Err(Elapsed)` once `duration` has passed on this timer's clock.
    ///
    /// The limit is armed lazily, at the first poll that finds `future` pending, and counts from
    /// that poll (see the module docs of `timeout.rs`): a `future` ready at its first poll never
    /// touches the wheel. It never elapses before `duration` has passed since that poll (hence
    /// since this call), and elapses at most a tick after. The inner future is polled first, so if
    /// it is ready at the poll that sees the deadline, its output wins. This never panics; if the
    /// timer refuses the limit or shuts down, the limit never elapses.
    ///
    /// # Cancellation
    ///
    /// Dropping the `Timeout` drops the inner future and withdraws the limit, if it was armed:
    /// [`len`](Timer::len) falls by one at once, and the timer task it shared with the timeouts of
    /// its tick on its thread is cancelled once none of them is left (module docs of `timeout.rs`).
    ///
    /// ```
    /// use delaywheel::Timer;
    /// use std::time::Duration;
    ///
    /// let timer = Timer::new();
    /// let never = std::future::pending::<()>();
    /// let result = futures::executor::block_on(timer.timeout(Duration::from_millis(10), never));
    /// assert!(result.is_err());
    /// let ready = futures::executor::block_on(timer.timeout(Duration::from_secs(10), async { 7 }));
    /// assert_eq!(ready, Ok(7));
    /// assert_eq!(timer.stats().scheduled, 1); // the ready future never touched the wheel
    /// ```
    pub fn timeout<F: IntoFuture>(&self, duration: Duration, future: F) -> Timeout<F::IntoFuture> {
        Timeout::lazy(self.local_ref(), When::After(duration), future.into_future())
    }

    /// Runs `future` until `deadline` on this timer's clock (the mapping of
    /// [`now()`](Timer::now)): `Ok(output)` if it completes first, `Err(Elapsed)` once `deadline`
    /// has passed. Armed lazily as [`timeout`](Timer::timeout); a deadline already passed elapses by
    /// the next advance (the inner future is still polled first).
    ///
    /// ```
    /// use delaywheel::{ManualClock, Timer};
    /// use std::future::Future;
    /// use std::pin::pin;
    /// use std::task::{Context, Poll};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let timer = Timer::builder().clock(clock.clone()).manual().build();
    /// let at = timer.now() + Duration::from_millis(3);
    /// let mut t = pin!(timer.timeout_at(at, std::future::pending::<()>()));
    /// assert_eq!(t.deadline(), at);
    /// let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    /// assert!(t.as_mut().poll(&mut cx).is_pending());
    /// clock.advance(Duration::from_millis(3));
    /// timer.advance_clock(Duration::ZERO);
    /// assert!(matches!(t.as_mut().poll(&mut cx), Poll::Ready(Err(_))));
    /// ```
    pub fn timeout_at<F: IntoFuture>(&self, deadline: Instant, future: F) -> Timeout<F::IntoFuture> {
        Timeout::lazy(self.local_ref(), When::At(deadline), future.into_future())
    }

    /// Runs `future` with a time limit registered **at once** (the deadline counts from this call),
    /// or returns the reason the timer refused the limit; otherwise as
    /// [`timeout`](Timer::timeout).
    ///
    /// # Errors
    ///
    /// As [`try_sleep`](Timer::try_sleep). The future is dropped.
    ///
    /// ```
    /// use delaywheel::{ManualClock, ScheduleError, Timer};
    /// use std::time::Duration;
    ///
    /// let timer = Timer::builder().clock(ManualClock::new()).manual().max_pending(1).build();
    /// let armed = timer.try_timeout(Duration::from_millis(5), async { 1 }).unwrap();
    /// assert_eq!(timer.len(), 1);
    /// let refused = timer.try_timeout(Duration::from_millis(5), std::future::ready(2));
    /// assert_eq!(refused.unwrap_err(), ScheduleError::TooManyPending { max: 1 });
    /// drop(armed);
    /// assert!(timer.is_empty());
    /// ```
    pub fn try_timeout<F: IntoFuture>(
        &self,
        duration: Duration,
        future: F,
    ) -> Result<Timeout<F::IntoFuture>, ScheduleError> {
        let sleep = self.try_sleep(duration)?;
        Ok(Timeout { future: future.into_future(), limit: Armed::Sleep(sleep) })
    }
}

/// A `Timeout`'s limit: not yet armed (`When::After` counts from the first pending poll), a member
/// of its thread's tick group (`sleep/group/`: a lazy limit's arming), or a sleep (`try_timeout`,
/// which registers at once to return the refusal). The way back to the timer is `Some` until the
/// arming moves it into the member (moved, not cloned: no reference count written).
enum Armed {
    Lazy(Option<Arc<TimerRef>>, When),
    Member(Member),
    Sleep(Sleep),
}

pin_project_lite::pin_project! {
    /// A future with a time limit; created by [`Timer::timeout`], [`Timer::timeout_at`] and
    /// [`Timer::try_timeout`]. Needs the `async` feature.
    ///
    /// Completes with `Ok(output)` if the inner future completes first, `Err(Elapsed)` once the
    /// limit has passed. `Send`/`Sync` when the inner future is; `'static` when it is.
    ///
    /// * **Lazy**: created by `timeout` or `timeout_at`, it touches the wheel only at the first
    ///   poll that finds the inner future pending; one ready at its first poll costs no timer task.
    /// * **Never early**: `Err(Elapsed)` only once the deadline has passed on the timer's clock.
    /// * **Exactly once**: it completes once; the inner future's output wins a tie.
    /// * **Never a panic**: a limit the timer refuses (or a timer that shuts down) never elapses.
    ///
    /// # Cancellation
    ///
    /// Dropping it drops the inner future and cancels the timer task, if one was armed.
    #[must_use = "futures do nothing unless polled; dropping a Timeout cancels its timer task"]
    pub struct Timeout<F> {
        #[pin]
        future: F,
        limit: Armed,
    }
}

impl<F> Timeout<F> {
    fn lazy(timer: Arc<TimerRef>, limit: When, future: F) -> Timeout<F> {
        Timeout { future, limit: Armed::Lazy(Some(timer), limit) }
    }

    /// The instant the limit elapses at on the timer's clock. Before a `timeout` (duration) is
    /// armed, its deadline is not fixed yet: this is then the deadline it would get if armed now
    /// (`now + duration`), which only moves later until the first pending poll fixes it.
    pub fn deadline(&self) -> Instant {
        match &self.limit {
            Armed::Sleep(sleep) => sleep.deadline(),
            Armed::Member(member) => member.deadline(),
            Armed::Lazy(_, When::At(at)) => *at,
            Armed::Lazy(timer, When::After(duration)) => {
                // The timer's clock, also once it is shut down (the lazy limit then never
                // elapses, but its deadline is still on that clock). A lazy limit holds its
                // timer outside its own arming, where no one can call this.
                let held = timer.as_deref().map(TimerRef::held);
                let now = held.map_or_else(Instant::now, LiveTimer::now);
                saturating_add(now, *duration)
            }
        }
    }

    /// The inner future.
    pub fn get_ref(&self) -> &F {
        &self.future
    }

    /// The inner future, mutably.
    pub fn get_mut(&mut self) -> &mut F {
        &mut self.future
    }

    /// The inner future; the time limit is dropped (its timer task cancelled, if armed).
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl Armed {
    /// Polls the limit; arms a lazy one first, with the poll's waker, as a member of its thread's
    /// tick group.
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match self {
            Armed::Lazy(timer, limit) => {
                let timer = timer.take().expect("a lazy limit holds its timer until it is armed");
                match Member::arm(timer, *limit, cx.waker()) {
                    Limit::Member(member) => {
                        let armed = member.armed();
                        *self = Armed::Member(member);
                        armed
                    }
                    // The waker is stored; a task that ran already woke it (`sleep/slot.rs`,
                    // `arm_in`), and the next poll sees the sleep elapsed.
                    Limit::Solo(sleep) => {
                        *self = Armed::Sleep(sleep);
                        Poll::Pending
                    }
                }
            }
            Armed::Member(member) => member.poll(cx),
            Armed::Sleep(sleep) => Pin::new(sleep).poll(cx),
        }
    }
}

impl fmt::Debug for Armed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Armed::Lazy(Some(timer), limit) => f.debug_tuple("Lazy").field(timer).field(limit).finish(),
            // Only inside the arming.
            Armed::Lazy(None, limit) => f.debug_tuple("Lazy").field(limit).finish(),
            Armed::Sleep(sleep) => f.debug_tuple("Armed").field(sleep).finish(),
            Armed::Member(member) => f.debug_tuple("Armed").field(member).finish(),
        }
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(output) = this.future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        match this.limit.poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed(()))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// For every inner future (an `async` block has no `Debug`), so that a `Result` holding a
/// `Timeout`, as [`Timer::try_timeout`] returns, can be unwrapped either way: the inner future
/// shows as its type name.
impl<F> fmt::Debug for Timeout<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timeout")
            .field("future", &format_args!("{}", std::any::type_name::<F>()))
            .field("limit", &self.limit)
            .finish()
    }
}

/// The error of a [`Timeout`] whose time limit passed first. Needs the `async` feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Elapsed(());

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl Error for Elapsed {}

/// An [`Elapsed`] as an I/O error of kind [`TimedOut`](std::io::ErrorKind::TimedOut), as tokio's
/// `Elapsed` converts, so that `timer.timeout(d, io_future).await??` works in a function returning
/// `std::io::Result`.
impl From<Elapsed> for std::io::Error {
    fn from(elapsed: Elapsed) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::TimedOut, elapsed)
    }
}
