//! The `async` feature's [`Sleep`]: a runtime-agnostic future that completes at a deadline on a
//! [`Timer`]. [`Interval`](crate::Interval) (`interval.rs`) is built on it, and so is
//! [`Timeout`](crate::Timeout) (`timeout.rs`) from `try_timeout`; a lazily armed timeout is a member
//! of a tick group instead (`sleep/group/`: the timeouts of one thread due in one tick share a
//! timer entry).
//!
//! ## How it works
//!
//! Creating a sleep schedules one ordinary task on the timer, **at once**, at the deadline
//! `timer.now() + duration` (or the instant given), at the full precision of the timer's clock. The
//! future and the task share a small slot behind a lock (`sleep/slot.rs`): a phase (waiting,
//! elapsed, dead) and the last [`Waker`] the future was polled with. Every poll stores the current
//! waker (replacing it unless [`Waker::will_wake`] says it is the same), so a future that moves
//! between tasks or executors wakes the right one. When the timer fires the task, it marks the slot elapsed
//! and hands the stored waker over, outside the lock: on the thread that advances the clock (the driver), the
//! wakers of the sleeps due at one tick are woken together once every task of that tick has run
//! (`timer/wakes.rs`, the batched hand-off); elsewhere (an executor thread, a shutdown) it is woken at once.
//! Nothing here depends on an executor: the futures work under tokio, async-std/smol, `futures::executor` or
//! a hand-written poll loop.
//!
//! ## Ownership
//!
//! The futures **do not borrow the timer**: they are `'static`, `Send`, `Sync` and `Unpin`, so
//! they can be spawned freely. A sleep holds its slot, its task's ticket (`timer/handle.rs`,
//! `LentHandle`: a [`TimerHandle`] without a reference count of its own) and a way back to the
//! timer (`timer/refs.rs`) through which it cancels or [resets](Sleep::reset) that task and reads
//! the timer's clock; it never keeps the timer running: dropping
//! the timer shuts it down, and the sleep then never completes (its memory is freed once the last
//! future and handle are dropped).
//!
//! ## Refusal and shutdown: a sleep never panics
//!
//! A sleep whose task the timer refused, or abandoned unrun because the timer shut down (or was
//! dropped) before the deadline, is **dead**: it never completes, since its deadline never comes on
//! that timer, and polling it returns `Pending`, never panics. It is never early either: nothing
//! completes it before its deadline. [`Sleep::error`] says why it is dead
//! ([`ScheduleError::ShutDown`], [`ScheduleError::TooManyPending`], [`ScheduleError::DelayTooLong`]),
//! and [`Timer::try_sleep`] returns the refusal as an error instead of a dead sleep.
//!
//! So a server that shuts down in order (stops its tasks, then its timer) never sees a panic from a
//! plain `.await`; a task still awaiting a sleep when its timer shuts down simply stays pending, and
//! is dropped with its runtime (or by whatever `select!` it waits in). When the timer abandons the
//! task, the stored waker is woken once, so that a task polling by hand can notice `error()`. That
//! wake-up happens when the abandoned task is dropped: at once when the timer is dropped, but after
//! [`Timer::shutdown`] only once the returned list of unfired tasks is dropped. Running such a task
//! ([`UnfiredTask::run`](crate::UnfiredTask::run)) does the same as dropping it: its deadline has
//! not come, so it completes nothing.
//!
//! ## Reset
//!
//! [`Sleep::reset`] first moves the pending task in place ([`TimerHandle::reset_at`]: same entry,
//! same slot, no allocation). If the task is no longer pending (it fired, is firing, was abandoned
//! or never scheduled), the sleep takes a **new slot** and schedules a new task for it, carrying the
//! stored waker over (a refused task leaves it in the dead slot, so that a later reset that the
//! timer accepts carries it on). The old task may still be running (a fire racing the reset): it completes
//! the old slot, which nobody polls any more, and so cannot complete the re-armed sleep before its new
//! deadline (loom model `sleep::reset_racing_fire`, seeded fault `sleep_reset_reuses_slot`).
//!
//! ## Cancellation
//!
//! Dropping a [`Sleep`] before it completes **cancels** its timer task (O(1), the entry leaves its
//! bucket at once and [`Timer::len`] drops); nothing runs, and nothing is woken later unless the
//! task had already fired or been abandoned by a shutdown at the moment of the drop (one spurious
//! wake-up at most: the `Sleep` docs, "Cancellation"). This is what
//! makes `select!`-style races and timeouts cheap: the loser is dropped. A drop whose cancel won
//! keeps the slot as its thread's spare, for the next sleep made there (`sleep/slot.rs`: "The spare
//! slot"): a sleep made and cancelled on one thread allocates nothing.
//!
//! ## Time
//!
//! The timer's rules apply: a sleep completes at the first tick boundary at or after its deadline
//! on the timer's clock, never early, at most one tick late (plus the driver's wake-up and the
//! executor's scheduling); a deadline already passed completes by the next advance. On a
//! [`ManualClock`](crate::ManualClock) it completes only when the clock has been advanced past the
//! deadline and the timer advanced ([`Timer::advance_clock`], or the driver thread of a
//! non-manual timer).

// A tick group is freed by the last of its holds, not by a reference count (`group/mod.rs`).
#[allow(unsafe_code)]
pub(crate) mod group;
mod make;
mod slot;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::clock::saturating_add;
use crate::sync::Arc;
use crate::timer::groups::TickDue;
use crate::timer::refs::TimerRef;
use crate::timer::{LentHandle, LiveTimer, When};
use crate::ScheduleError;
#[cfg(doc)]
use crate::Timer;
#[cfg(doc)]
use crate::TimerHandle;
use slot::{Phase, Slot};

/// A future that completes at a deadline on a [`Timer`]; created by [`Timer::sleep`],
/// [`Timer::sleep_until`] and their `try_` forms. Needs the `async` feature.
///
/// It is `'static`, `Send`, `Sync` and `Unpin`: it holds its timer entry and the timer's shared
/// state, not the timer. Dropping the [`Timer`] shuts it down all the same, and gives back the
/// slots of its tasks (however many it ever held): a sleep kept after that keeps only the timer's
/// remains (its wheels' levels and a few pages) until the sleep is dropped.
///
/// * **Never early**: it completes only once the timer fired its task, at the first tick boundary
///   at or after [`deadline`](Sleep::deadline) on the timer's clock (at most one tick late).
/// * **Exactly once**: one task per deadline; after a [`reset`](Sleep::reset) only the new deadline
///   counts. A completed `Sleep` keeps returning `Ready(())` until it is reset.
/// * **Never a panic**: a sleep the timer refused, or whose timer shut down before its deadline,
///   never completes; [`error`](Sleep::error) says why (see the module docs of `sleep.rs`:
///   "Refusal and shutdown").
///
/// # Cancellation
///
/// Dropping a `Sleep` that has not completed cancels its timer task: it leaves the wheel at once,
/// and its waker is not called afterwards, except when the task had already fired at the moment
/// of the drop (it was firing, or its batch's wake-ups had not come yet) or been abandoned by a
/// shutdown, which can then wake the last waker once (a spurious wake-up, harmless to executors).
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
    /// `None` only inside `drop`, which hands the slot on (`slot.rs`: "The spare slot").
    slot: Option<Arc<Slot>>,
    handle: LentHandle,
    deadline: Due,
    timer: Arc<TimerRef>,
}

/// The deadline asked for, at full precision: an instant, or a duration after a reading of the
/// timer's clock (in nanoseconds, `Timer::now`'s reading), made an instant only when
/// [`Sleep::deadline`] asks (the conversion is most of a sleep's own arming cost, and a timeout
/// rarely asks). Either way the same instant.
#[derive(Clone, Copy, Debug)]
enum Due {
    At(Instant),
    After(u64, Duration),
}

impl Due {
    /// The deadline `when` names on the clock reading `reading` (nanoseconds).
    #[inline]
    fn of(reading: u64, when: When) -> Due {
        match when {
            When::After(duration) => Due::After(reading, duration),
            When::At(at) => Due::At(at),
        }
    }

    /// The deadline `when` names on `timer` once it has shut down (nothing is scheduled): on the
    /// timer's clock, which a shut-down timer still has.
    fn shut_down(timer: &TimerRef, when: When) -> Due {
        match when {
            When::After(duration) => Due::At(saturating_add(timer.held().now(), duration)),
            When::At(at) => Due::At(at),
        }
    }

    /// The deadline as an instant on `timer`'s clock.
    fn instant(self, timer: &TimerRef) -> Instant {
        match self {
            Due::At(at) => at,
            Due::After(reading, duration) => saturating_add(timer.held().reading_instant(reading), duration),
        }
    }
}

impl Sleep {
    /// A sleep for `deadline`, from the outcome of arming it.
    #[inline]
    fn from_arming(
        timer: Arc<TimerRef>,
        deadline: Due,
        armed: Result<(Arc<Slot>, LentHandle), ScheduleError>,
    ) -> Sleep {
        let (slot, handle) = armed.unwrap_or_else(|err| (Slot::dead(err, None), LentHandle::refused()));
        Sleep { slot: Some(slot), handle, deadline, timer }
    }

    /// The slot shared with the task.
    #[inline]
    fn slot(&self) -> &Slot {
        self.slot.as_deref().expect("a sleep's slot is taken only by its drop")
    }

    /// A sleep at `deadline` that never completes, dead of `err` (nothing is scheduled).
    pub(crate) fn dead(timer: Arc<TimerRef>, deadline: Instant, err: ScheduleError) -> Sleep {
        Sleep::from_arming(timer, Due::At(deadline), Err(err))
    }

    /// A sleep `duration` from now on `live`, scheduled at once; `timer` is the way back to it.
    /// The deadline is `duration` from the clock reading the schedule itself used (one reading).
    pub(crate) fn after(timer: Arc<TimerRef>, live: &LiveTimer, duration: Duration) -> Sleep {
        let (deadline, armed) = Sleep::arm(live, When::After(duration));
        Sleep::from_arming(timer, deadline, armed)
    }

    /// A sleep at `deadline` on `live`, scheduled at once; `timer` is the way back to it.
    pub(crate) fn at(timer: Arc<TimerRef>, live: &LiveTimer, deadline: Instant) -> Sleep {
        let (deadline, armed) = Sleep::arm(live, When::At(deadline));
        Sleep::from_arming(timer, deadline, armed)
    }

    /// A sleep `when` says on the timer `timer` leads back to, scheduled at once (a lazy timeout's
    /// arming, an interval's next tick): as [`after`](Sleep::after) and [`at`](Sleep::at), or dead
    /// if that timer shut down. `timer` is moved into the sleep, not cloned.
    pub(crate) fn on(timer: Arc<TimerRef>, when: When) -> Sleep {
        let (deadline, armed) = match timer.upgrade() {
            Some(live) => Sleep::arm(live, when),
            None => (Due::shut_down(&timer, when), Err(ScheduleError::ShutDown)),
        };
        Sleep::from_arming(timer, deadline, armed)
    }

    /// The sleep of a lazily armed timeout of its own (`group/member.rs`: the first of its tick
    /// on its thread), scheduled on the clock reading `now` and the deadline `due` its arming
    /// made, with the arming poll's `waker` stored.
    fn solo(timer: Arc<TimerRef>, (now, due): (u64, TickDue), when: When, waker: &Waker) -> Sleep {
        let armed = match timer.upgrade() {
            Some(live) => Slot::arm_solo(Slot::new(), live, (now, due), &mut Some(waker.clone())),
            None => Err(ScheduleError::ShutDown),
        };
        Sleep::from_arming(timer, Due::of(now, when), armed)
    }

    /// A new slot's task scheduled on `live` as `when` says, and the deadline that names.
    #[inline]
    fn arm(live: &LiveTimer, when: When) -> (Due, Result<(Arc<Slot>, LentHandle), ScheduleError>) {
        let (reading, armed) = Slot::arm_in(Slot::new(), live, when, &mut None);
        (Due::of(reading, when), armed)
    }

    /// `Ok(self)`, or the error that killed it.
    pub(crate) fn into_result(self) -> Result<Sleep, ScheduleError> {
        match self.error() {
            None => Ok(self),
            Some(err) => Err(err),
        }
    }

    /// The instant this sleep completes at (or after, by at most a tick): the deadline it was made
    /// with or last [`reset`](Sleep::reset) to, at full precision, on the timer's clock.
    pub fn deadline(&self) -> Instant {
        self.deadline.instant(&self.timer)
    }

    /// Whether the deadline has passed: the timer fired the wake-up. After a
    /// [`reset`](Sleep::reset), whether the new deadline has.
    pub fn is_elapsed(&self) -> bool {
        matches!(self.slot().state.lock().phase, Phase::Elapsed)
    }

    /// Why this sleep will never complete, if it will not: the timer refused its wake-up
    /// ([`ScheduleError::TooManyPending`], [`ScheduleError::DelayTooLong`],
    /// [`ScheduleError::ShutDown`]) or shut down before the deadline ([`ScheduleError::ShutDown`]).
    /// `None` while it waits and once it has completed. A [`reset`](Sleep::reset) that the timer
    /// accepts revives a dead sleep.
    pub fn error(&self) -> Option<ScheduleError> {
        match &self.slot().state.lock().phase {
            Phase::Dead(err) => Some(err.clone()),
            Phase::Waiting | Phase::Elapsed => None,
        }
    }

    /// Re-arms this sleep for `deadline`, whether it is still waiting or has completed (as tokio's
    /// `Sleep::reset`): it then completes at `deadline` (never before, at most a tick after; by the
    /// next advance if `deadline` has passed), and only then, even if the old deadline comes first.
    ///
    /// A waiting sleep is moved in place ([`TimerHandle::reset_at`]: no allocation); a completed or
    /// dead one schedules a new wake-up. The waker of the last poll is kept. This never panics: if
    /// the timer refuses the new wake-up, the sleep is dead and [`error`](Sleep::error) says why
    /// (see [`try_reset`](Sleep::try_reset)).
    ///
    /// ```
    /// use delaywheel::{ManualClock, Timer};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let timer = Timer::builder().clock(clock.clone()).manual().build();
    /// let ms = Duration::from_millis;
    /// let mut idle = timer.sleep(ms(10));
    /// clock.advance(ms(8));
    /// idle.reset(timer.now() + ms(10)); // a message arrived: due at 18 ms now
    /// clock.advance(ms(9));
    /// timer.advance_clock(Duration::ZERO);
    /// assert!(!idle.is_elapsed()); // 17 ms: the old deadline passed, the new one has not
    /// clock.advance(ms(1));
    /// timer.advance_clock(Duration::ZERO);
    /// assert!(idle.is_elapsed());
    /// assert_eq!(timer.len(), 0);
    /// ```
    pub fn reset(&mut self, deadline: Instant) {
        self.deadline = Due::At(deadline);
        if self.handle.reset_at(self.timer.held(), deadline) {
            return;
        }
        // Not pending any more (or refused the new deadline): a new slot and task. The old task, if
        // it is running now, completes the old slot, which nobody polls (module docs: "Reset").
        let mut waker = self.slot().take_waker();
        self.handle.cancel(self.timer.held());
        let slot = if fault!("sleep_reset_reuses_slot") {
            // Seeded bug for the loom suite only (docs/loom.md): the old slot is reused for the new
            // task, so the old task, firing late, completes the re-armed sleep before its deadline.
            self.slot().state.lock().phase = Phase::Waiting;
            Arc::clone(self.slot.as_ref().expect("a sleep's slot is taken only by its drop"))
        } else {
            Slot::new()
        };
        let armed = match self.timer.upgrade() {
            Some(live) => Slot::arm_in(slot, live, When::At(deadline), &mut waker).1,
            None => Err(ScheduleError::ShutDown),
        };
        // Refused: the dead slot keeps the waker, for a later reset that revives the sleep.
        let (slot, handle) = armed.unwrap_or_else(|err| (Slot::dead(err, waker), LentHandle::refused()));
        self.handle = handle;
        if let Some(old) = self.slot.replace(slot) {
            Slot::recycle(old);
        }
    }

    /// [`reset`](Sleep::reset) without the waker of the last poll: the new deadline wakes only a
    /// task that polls the sleep again (an interval's next tick, armed as its last one is taken,
    /// as tokio's `Interval` re-arms without re-registering).
    pub(crate) fn reset_unregistered(&mut self, deadline: Instant) {
        drop(self.slot().take_waker());
        self.reset(deadline);
    }

    /// Wakes the task of the last pending poll, if one is registered (an interval reset to a tick
    /// due at once, which needs no timer task to wake it).
    pub(crate) fn wake_registered(&mut self) {
        if let Some(waker) = self.slot().take_waker() {
            waker.wake();
        }
    }

    /// As [`reset`](Sleep::reset), returning the timer's refusal of the new wake-up.
    ///
    /// # Errors
    ///
    /// As [`Timer::try_sleep`]; the sleep is then dead (it never completes).
    pub fn try_reset(&mut self, deadline: Instant) -> Result<(), ScheduleError> {
        self.reset(deadline);
        self.error().map_or(Ok(()), Err)
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.slot().state.lock();
        if let Phase::Elapsed = state.phase {
            return Poll::Ready(());
        }
        // Waiting, or dead: keep the waker (a reset carries it to a new task). The one it replaces
        // is dropped once the lock is released (`sleep/slot.rs`: "Wakers are dropped unlocked").
        let replaced = match &state.waker {
            Some(waker) if waker.will_wake(cx.waker()) => None,
            _ => state.waker.replace(cx.waker().clone()),
        };
        drop(state);
        drop(replaced);
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        // Cancels the task, which then wakes nobody, and keeps the slot as this thread's spare if
        // the cancel dropped the task's reference (`sleep/slot.rs`: "The drop").
        if let Some(slot) = self.slot.take() {
            Slot::drop_sleep(slot, self.handle, self.timer.held());
        }
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let phase = match &self.slot().state.lock().phase {
            Phase::Waiting => "waiting",
            Phase::Elapsed => "elapsed",
            Phase::Dead(_) => "dead",
        };
        f.debug_struct("Sleep")
            .field("state", &phase)
            .field("deadline", &self.deadline())
            .field("handle", &self.handle.debug(self.timer.held()))
            .finish()
    }
}
