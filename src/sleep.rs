//! The `async` feature: [`Sleep`] and [`Timeout`], runtime-agnostic futures on a [`Timer`].
//!
//! ## How they work
//!
//! Creating a future schedules one ordinary task on the timer, **at once** (so the deadline is
//! `now + duration` at creation, as with `tokio::time::sleep`). The future and the task share a
//! small slot behind a lock: the future's state and the last [`Waker`] it was polled with. Every
//! poll stores the current waker (replacing it unless [`Waker::will_wake`] says it is the same),
//! so a future that moves between tasks or executors wakes the right one. When the timer fires the
//! task, it marks the slot elapsed and wakes the stored waker, on the timer's driver thread (or
//! executor thread). Nothing here depends on an executor: the futures work under tokio,
//! async-std/smol, `futures::executor` or a hand-written poll loop.
//!
//! ## Ownership
//!
//! The futures **do not borrow the timer**: they are `'static`, `Send` and `Sync` (a [`Timeout`]
//! is `Send` when its inner future is), so they can be spawned freely. They hold only their
//! entry. The timer must therefore stay alive (and not be shut down) until they complete; if it
//! shuts down first, the wake-up task is abandoned, the future is woken, and polling it panics
//! (as tokio's do when their runtime's timer is gone). The wake-up happens when the abandoned task
//! is dropped: at once when the timer is dropped, but after [`Timer::shutdown`] only once the
//! returned list of unfired tasks is dropped (or its tasks run), so drop that list rather than keep
//! it. [`crate::global`] never shuts down.
//!
//! ## Cancellation
//!
//! Dropping a [`Sleep`] or a [`Timeout`] before it completes **cancels** its timer task (O(1), the
//! entry leaves its bucket at once and [`Timer::len`] drops); nothing runs and nothing is woken
//! later. This is what makes `select!`-style races and timeouts cheap: the loser is dropped.
//!
//! ## Time
//!
//! The timer's rules apply: a sleep completes at the first tick boundary at or after its
//! deadline on the timer's clock — never early, at most one tick late (plus the driver's wake-up
//! and the executor's scheduling). On a [`ManualClock`](crate::ManualClock) it completes only when
//! the clock has been advanced past the deadline and the timer advanced
//! ([`Timer::advance_clock`], or the driver thread of a non-manual timer).

use std::error::Error;
use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::sync::{Arc, Mutex};
use crate::ScheduleError;
use crate::Timer;
use crate::TimerHandle;

impl Timer {
    /// A future that completes `duration` from now on this timer's clock.
    ///
    /// The wake-up is scheduled at once (the deadline counts from this call, not from the first
    /// poll). A `duration` beyond [`Timer::max_delay`] (e.g. `Duration::MAX`) gives a future that
    /// never completes. See [`Sleep`] for the details.
    ///
    /// # Panics
    ///
    /// This call does not panic. Polling the returned future panics if the timer refused the
    /// wake-up (it was shut down, or held its [`max_pending`](crate::TimerBuilder::max_pending)
    /// tasks) or shut down before the deadline.
    ///
    /// # Cancellation
    ///
    /// Dropping the future cancels the wake-up task.
    ///
    /// ```
    /// use delaywheel::Timer;
    /// use std::time::{Duration, Instant};
    ///
    /// let timer = Timer::new();
    /// let start = Instant::now();
    /// futures::executor::block_on(timer.sleep(Duration::from_millis(20)));
    /// assert!(start.elapsed() >= Duration::from_millis(20));
    /// ```
    pub fn sleep(&self, duration: Duration) -> Sleep {
        Sleep::new(self, duration)
    }

    /// A future that completes at `deadline`.
    ///
    /// `deadline` is read on the timer's own clock, [`Timer::now`]: `Instant::now()` on the system
    /// clock, and on a [`ManualClock`](crate::ManualClock) the instant it was created plus its
    /// reading, so the future completes once the manual clock reaches `deadline`. A deadline
    /// already passed completes at the next advance. Otherwise as [`sleep`](Timer::sleep),
    /// including `# Panics` and `# Cancellation`.
    pub fn sleep_until(&self, deadline: Instant) -> Sleep {
        self.sleep(deadline.saturating_duration_since(self.now()))
    }

    /// Runs `future` with a time limit: completes with `Ok(output)` if `future` completes within
    /// `duration`, or with `Err(Elapsed)` once `duration` has passed on this timer's clock.
    ///
    /// The inner future is polled first, so if it is ready at the same poll that the deadline is
    /// reached, its output wins.
    ///
    /// # Panics
    ///
    /// As for [`sleep`](Timer::sleep): polling panics if the timer refused the wake-up or shut down
    /// before the deadline (unless the inner future completes first).
    ///
    /// # Cancellation
    ///
    /// Dropping the `Timeout` drops the inner future and cancels the timer task. When it completes
    /// with `Ok`, the timer task is cancelled as the `Timeout` is dropped.
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
    /// ```
    pub fn timeout<F: IntoFuture>(&self, duration: Duration, future: F) -> Timeout<F::IntoFuture> {
        Timeout { future: future.into_future(), sleep: self.sleep(duration) }
    }
}

/// The state shared by a future and its timer task.
#[derive(Debug)]
enum State {
    /// The deadline has not passed; the waker of the last poll, if any.
    Waiting(Option<Waker>),
    /// The timer task ran.
    Elapsed,
    /// The timer refused the task; polling panics with this error.
    Refused(ScheduleError),
    /// The timer task was dropped unrun: the timer shut down (or the future cancelled it).
    Abandoned,
}

#[derive(Debug)]
struct Slot {
    state: Mutex<State>,
}

impl Slot {
    /// Leaves `Waiting` for `to` and wakes the stored waker (outside the lock); no-op otherwise.
    fn finish(&self, to: State) {
        let waker = {
            let mut state = self.state.lock();
            match &mut *state {
                State::Waiting(waker) => {
                    let waker = waker.take();
                    *state = to;
                    waker
                }
                _ => None,
            }
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// What the timer task owns: fires the slot when run, abandons it when dropped unrun.
struct Notify(Arc<Slot>);

impl Notify {
    fn fire(self) {
        self.0.finish(State::Elapsed);
    }
}

impl Drop for Notify {
    fn drop(&mut self) {
        // After `fire` the state is `Elapsed` and this does nothing.
        self.0.finish(State::Abandoned);
    }
}

/// A future that completes at a deadline on a [`Timer`]; created by [`Timer::sleep`] and
/// [`Timer::sleep_until`]. Needs the `async` feature.
///
/// It is `'static`, `Send`, `Sync` and `Unpin`: it holds its timer entry, not the timer.
///
/// # Panics
///
/// Polling panics if the timer refused to schedule the wake-up ([`ScheduleError::ShutDown`] or
/// [`ScheduleError::TooManyPending`]) or shut down before the deadline, as tokio's `Sleep` does
/// when its runtime's timer is gone. (A deadline beyond the timer's range is not an error: that
/// future simply never completes.)
///
/// # Cancellation
///
/// Dropping a `Sleep` that has not completed cancels its timer task: it leaves the wheel at once,
/// and its waker is not called afterwards — except when the task was already firing at the moment
/// of the drop, which can then wake the last waker once (a spurious wake-up, harmless to
/// executors). A completed `Sleep` keeps returning `Ready(())`.
///
/// ```
/// use delaywheel::{ManualClock, Timer};
/// use std::future::Future;
/// use std::pin::pin;
/// use std::task::Context;
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let timer = Timer::builder().clock(clock.clone()).manual().build();
/// let mut sleep = pin!(timer.sleep(Duration::from_millis(5)));
/// let mut cx = Context::from_waker(futures::task::noop_waker_ref());
/// assert!(sleep.as_mut().poll(&mut cx).is_pending());
/// clock.advance(Duration::from_millis(5));
/// timer.advance_clock(Duration::ZERO);
/// assert!(sleep.as_mut().poll(&mut cx).is_ready());
/// ```
#[must_use = "futures do nothing unless polled; dropping a Sleep cancels its timer task"]
pub struct Sleep {
    slot: Arc<Slot>,
    handle: TimerHandle,
}

impl Sleep {
    fn new(timer: &Timer, duration: Duration) -> Sleep {
        let slot = Arc::new(Slot { state: Mutex::new(State::Waiting(None)) });
        let notify = Notify(Arc::clone(&slot));
        match timer.try_schedule(duration, move || notify.fire()) {
            Ok(handle) => Sleep { slot, handle },
            Err(err) => {
                // The refused task (and its `Notify`) is gone; nobody else sees the slot yet.
                *slot.state.lock() = match err {
                    // Beyond the last representable tick: that deadline never comes.
                    ScheduleError::DelayTooLong { .. } => State::Waiting(None),
                    err => State::Refused(err),
                };
                Sleep { slot, handle: TimerHandle::refused() }
            }
        }
    }

    /// Whether the deadline has passed (the timer fired the wake-up).
    pub fn is_elapsed(&self) -> bool {
        matches!(*self.slot.state.lock(), State::Elapsed)
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.slot.state.lock();
        match &mut *state {
            State::Elapsed => Poll::Ready(()),
            State::Waiting(waker) => {
                match waker {
                    Some(waker) if waker.will_wake(cx.waker()) => {}
                    _ => *waker = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
            State::Refused(err) => panic!("delaywheel: the timer refused this sleep: {err}"),
            State::Abandoned => panic!("delaywheel: the timer shut down before this sleep's deadline"),
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        // Forget the waker first, so the cancelled task does not wake a task that dropped us. Only a
        // sleep still waiting needs a cancel: an elapsed or abandoned one's entry is gone, and a
        // cancel would take its bucket's lock only to find that out (`timer/cancel.rs`).
        let waiting = match &mut *self.slot.state.lock() {
            State::Waiting(waker) => {
                *waker = None;
                true
            }
            _ => false,
        };
        if waiting {
            self.handle.cancel();
        }
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &*self.slot.state.lock() {
            State::Waiting(_) => "waiting",
            State::Elapsed => "elapsed",
            State::Refused(_) => "refused",
            State::Abandoned => "abandoned",
        };
        f.debug_struct("Sleep").field("state", &state).field("handle", &self.handle).finish()
    }
}

pin_project_lite::pin_project! {
    /// A future with a time limit; created by [`Timer::timeout`]. Needs the `async` feature.
    ///
    /// Completes with `Ok(output)` if the inner future completes first, `Err(Elapsed)` once the
    /// limit has passed. `Send`/`Sync` when the inner future is.
    ///
    /// # Panics
    ///
    /// As [`Sleep`]: polling panics if the timer refused the wake-up or shut down before the
    /// deadline, unless the inner future completes first.
    ///
    /// # Cancellation
    ///
    /// Dropping it drops the inner future and cancels the timer task.
    #[must_use = "futures do nothing unless polled; dropping a Timeout cancels its timer task"]
    pub struct Timeout<F> {
        #[pin]
        future: F,
        sleep: Sleep,
    }
}

impl<F> Timeout<F> {
    /// The inner future.
    pub fn get_ref(&self) -> &F {
        &self.future
    }

    /// The inner future, mutably.
    pub fn get_mut(&mut self) -> &mut F {
        &mut self.future
    }

    /// The inner future; the time limit is dropped (its timer task cancelled).
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(output) = this.future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        match Pin::new(this.sleep).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed(()))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<F: fmt::Debug> fmt::Debug for Timeout<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timeout").field("future", &self.future).field("sleep", &self.sleep).finish()
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
