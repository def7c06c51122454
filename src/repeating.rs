//! Repeating tasks: [`Timer::schedule_repeating`], built on re-arming one-shot tasks.
//!
//! ## How it works
//!
//! Each run is one ordinary timer task. When it fires it runs the user's closure, then **re-arms**:
//! it schedules the next run (a new entry) on the same timer and stores that entry's handle in the
//! repetition's shared state, so the one [`RepeatingHandle`] the caller holds can always cancel the
//! current entry. Runs never overlap: the next run is scheduled only after the previous one
//! returned. The closure moves from each run's entry to the next; it is never shared.
//!
//! ## The way back to the timer
//!
//! A run must reach its timer to re-arm, so the repetition holds a **weak** reference to the timer
//! (`timer/weak.rs`), through which it uses the public `Timer` operations (`now`, `tick`,
//! `try_schedule`). It does not keep the timer alive, and no reference cycle (timer → bucket →
//! entry → closure → timer) exists. Once the timer is dropped or shut down the re-arm fails and the
//! repetition ends; the closure is dropped. The grid of `FixedRate` and `Every` is kept as instants
//! on the timer's clock ([`Timer::now`]).
//!
//! [`RepeatingHandle::reset_at`] moves the next run's entry under the repetition's lock. A reset
//! never drops a closure (it moves the entry within its shard, under the shard's lock; an entry
//! that ended is not moved), so the closure's drop, which takes that lock, never runs
//! under it.
//!
//! ## Cancellation, exactly once
//!
//! The state (behind one lock) holds `cancelled`, `ended` and the current entry's handle.
//! `cancel()` sets `cancelled` (if neither flag is set yet: then it returns `true`), takes the
//! current handle and cancels that entry *after releasing the lock*. A run checks `cancelled`
//! under the lock before it calls the closure, and a re-arm stores the new handle under the lock
//! only if `cancelled` is still clear (otherwise it cancels the entry it just made). So whatever
//! the interleaving, once `cancel()` has returned `true` no run begins; a run that had already
//! begun (including the one calling `cancel()` from inside the closure) finishes and does not
//! re-arm. Each run is one timer entry, so it runs at most once.
//!
//! A shutdown hands the next run back as an `UnfiredTask` (its entry is claimed, the `Run` inside
//! its closure is not dropped): until that task is run or dropped the repetition has not ended.
//! The handle still says it is active and can cancel it, by the same flag: a `cancel()` that
//! returns `true` then makes the handed-back run do nothing; otherwise running it runs the task
//! once, and its re-arm, refused, ends the repetition (as dropping it does).
//!
//! A run's closure that panics ends the repetition (the timer catches and counts the panic; the
//! closure is dropped), as in Java's `ScheduledExecutorService`.

use std::fmt;
use std::time::{Duration, Instant};

use crate::clock::{nanos_to_duration, saturating_add};
use crate::missed_tick::MissedTickBehavior;
use crate::sync::{Arc, Mutex};
use crate::timer::{LiveTimer, WeakTimer};
use crate::{ScheduleError, Timer, TimerHandle};

/// How a repeating task is re-armed; see [`Timer::schedule_repeating`].
///
/// Periods shorter than the timer's tick (including zero) are raised to one tick: the timer cannot
/// run anything more often, and a zero period would otherwise re-fire forever inside one advance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Repeat {
    /// Each run is scheduled this long after the previous run **returned** (Java's
    /// `scheduleWithFixedDelay`): the gap between runs is constant, the rate drifts by the time
    /// the task takes.
    FixedDelay(Duration),
    /// Runs are due at `start + initial_delay + k × period` on the timer's clock: the rate does
    /// not drift. If a run ends after the next one was due (a slow task, a stalled driver), the
    /// missed runs are **skipped**, not run in a burst: the next run is the first one on that grid
    /// still in the future. The same as `Every(period, MissedTickBehavior::Skip)`. (Java's
    /// `scheduleAtFixedRate` keeps the same grid but runs the missed runs late, back to back:
    /// that is `Every(period, MissedTickBehavior::Burst)`.)
    FixedRate(Duration),
    /// Runs are due at `start + initial_delay + k × period` on the timer's clock, and the
    /// [`MissedTickBehavior`] says what happens when a run ends after the next one was due, with
    /// the meanings it has for an `Interval`: `Burst` runs the missed runs back to back (each is due
    /// at once when the previous one returns, so it runs at the next advance of the clock), `Delay` starts a
    /// new grid one period after the late run began (a run that begins within 5 ms of its due time, or one
    /// timer tick if ticks are longer, is on time whatever it takes, as in tokio), `Skip` runs next at the
    /// first grid point still ahead when the late run returns.
    Every(Duration, MissedTickBehavior),
}

impl Repeat {
    fn period(self) -> Duration {
        match self {
            Repeat::FixedDelay(period) | Repeat::FixedRate(period) | Repeat::Every(period, _) => period,
        }
    }

    fn with_period(self, period: Duration) -> Repeat {
        match self {
            Repeat::FixedDelay(_) => Repeat::FixedDelay(period),
            Repeat::FixedRate(_) => Repeat::FixedRate(period),
            Repeat::Every(_, missed) => Repeat::Every(period, missed),
        }
    }
}

impl Timer {
    /// Runs `task` after `initial_delay`, then again and again as `repeat` says, until cancelled
    /// with the returned handle (or the timer shuts down).
    ///
    /// Each run follows the timer's time rules (never early, at most one tick late). Runs never
    /// overlap. The task runs where this timer runs tasks ([`TaskExecution`](crate::TaskExecution)).
    /// A panicking run ends the repetition.
    ///
    /// Like [`schedule`](Timer::schedule) this never panics for any input (only a refused closure's
    /// own `Drop` can, as there): if the first run cannot be scheduled,
    /// the task is dropped and the handle is inert (`cancel()` returns `false`). Use
    /// [`try_schedule_repeating`](Timer::try_schedule_repeating) to learn why.
    ///
    /// # Cancellation
    ///
    /// [`RepeatingHandle::cancel`] stops the repetition: it returns `true` iff that call ended it,
    /// and then no run begins after it returns (a run already under way finishes). It works from
    /// inside the task too. Dropping the handle does not cancel (as with [`TimerHandle`]). After
    /// the timer shuts down or is dropped, the next re-arm fails and the repetition ends.
    ///
    /// [`shutdown`](Timer::shutdown) hands the next run back as an
    /// [`UnfiredTask`](crate::UnfiredTask), and the repetition ends only once that task is run (the
    /// task runs once; its re-arm is refused) or dropped. Until then the handle is still
    /// [active](RepeatingHandle::is_active), and a [`cancel`](RepeatingHandle::cancel) returning
    /// `true` makes the handed-back run do nothing.
    ///
    /// ```
    /// use delaywheel::{ManualClock, Repeat, Timer};
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let timer = Timer::builder().clock(clock.clone()).manual().build();
    /// let runs = Arc::new(AtomicU32::new(0));
    /// let r = Arc::clone(&runs);
    /// let handle = timer.schedule_repeating(
    ///     Duration::from_millis(10),
    ///     Repeat::FixedRate(Duration::from_millis(10)),
    ///     move || {
    ///         r.fetch_add(1, Ordering::SeqCst);
    ///     },
    /// );
    /// for _ in 0..3 {
    ///     clock.advance(Duration::from_millis(10));
    ///     timer.advance_clock(Duration::ZERO);
    /// }
    /// assert_eq!(runs.load(Ordering::SeqCst), 3); // at 10, 20 and 30 ms
    /// assert!(handle.cancel());
    /// assert!(timer.is_empty());
    /// ```
    pub fn schedule_repeating<F>(&self, initial_delay: Duration, repeat: Repeat, task: F) -> RepeatingHandle
    where
        F: FnMut() + Send + 'static,
    {
        self.try_schedule_repeating(initial_delay, repeat, task).unwrap_or_else(|_| RepeatingHandle::ended())
    }

    /// Schedules a repeating task; see [`schedule_repeating`](Timer::schedule_repeating).
    ///
    /// # Errors
    ///
    /// The errors of [`try_schedule`](Timer::try_schedule), for the first run. The task is then
    /// dropped unrun. (A later re-arm that fails ends the repetition silently.)
    pub fn try_schedule_repeating<F>(
        &self,
        initial_delay: Duration,
        repeat: Repeat,
        task: F,
    ) -> Result<RepeatingHandle, ScheduleError>
    where
        F: FnMut() + Send + 'static,
    {
        let live = self.live();
        let repeat = repeat.with_period(repeat.period().max(live.tick()));
        // The grid's first instant, from one reading of the clock; the first run is scheduled at
        // it, as `rearm` schedules every later one (a delay would be counted again from the
        // schedule's later reading, and could cross a tick).
        let due = saturating_add(live.now(), initial_delay);
        let ctx = Arc::new(Ctx {
            timer: Some(live.downgrade()),
            repeat,
            state: Mutex::new(State { current: None, cancelled: false, ended: false, runs: 0, due }),
        });
        let first = Run { ctx: Arc::clone(&ctx), task: Some(task), handed_over: false };
        let handle = live.try_schedule_at(due, move || first.run()).map_err(|error| match error {
            // Reported for the delay asked for, as `try_schedule` reports it.
            ScheduleError::DelayTooLong { max, .. } => {
                ScheduleError::DelayTooLong { delay: initial_delay, max }
            }
            other => other,
        })?;
        // Nobody can cancel before the caller has the handle; the first run may already have
        // fired (executor threads) and re-armed: keep the newer handle then.
        let mut state = ctx.state.lock();
        if state.runs == 0 {
            state.current = Some(handle);
        }
        drop(state);
        Ok(RepeatingHandle { ctx })
    }
}

/// The state of one repetition, shared by its runs and its handles.
struct Ctx {
    /// `None` only for the inert handle of a repetition that never started.
    timer: Option<WeakTimer>,
    /// With the period already raised to at least one tick.
    repeat: Repeat,
    state: Mutex<State>,
}

struct State {
    /// The entry of the next run (or of the run under way).
    current: Option<TimerHandle>,
    /// A `cancel()` ended the repetition.
    cancelled: bool,
    /// The repetition ended otherwise: the timer shut down or refused a re-arm, or a run panicked.
    ended: bool,
    /// Runs begun.
    runs: u64,
    /// `FixedRate` and `Every`: when the current run was due on the grid, on the timer's clock.
    due: Instant,
}

impl Ctx {
    /// The repetition ended without a cancel (see `State::ended`).
    fn end(&self) {
        let mut state = self.state.lock();
        state.ended = true;
        state.current = None;
    }
}

/// One run: the closure of one timer entry. Dropped without handing the task over to a successor
/// (shutdown, refused re-arm, panic), it ends the repetition.
struct Run<F> {
    ctx: Arc<Ctx>,
    task: Option<F>,
    handed_over: bool,
}

impl<F: FnMut() + Send + 'static> Run<F> {
    fn run(mut self) {
        let run = {
            let mut state = self.ctx.state.lock();
            if state.cancelled {
                return;
            }
            state.runs += 1;
            state.runs
        };
        let Some(mut task) = self.task.take() else { return };
        // `Delay` measures a run's lateness when it begins (as an `Interval` does when a tick is
        // taken), so that the time the task takes does not count as lateness.
        let started = match self.ctx.repeat {
            Repeat::Every(_, MissedTickBehavior::Delay) => {
                self.ctx.timer.as_ref().and_then(WeakTimer::upgrade)
            }
            _ => None,
        }
        .map(|live| live.now());
        task(); // a panic unwinds through here: `self` is dropped and ends the repetition
        self.rearm(task, run, started);
    }

    /// Schedules the run after run number `run` (this one), which began at `started` if that was
    /// read.
    fn rearm(&mut self, task: F, run: u64, started: Option<Instant>) {
        let Some(live) = self.ctx.timer.as_ref().and_then(WeakTimer::upgrade) else { return };
        let now = live.now();
        let (period, missed) = match self.ctx.repeat {
            Repeat::FixedDelay(delay) => (delay, None),
            Repeat::FixedRate(period) => (period, Some(MissedTickBehavior::Skip)),
            Repeat::Every(period, missed) => (period, Some(missed)),
        };
        // `FixedDelay`: `period` after now; the others: the next point on the grid
        // (`missed_tick.rs`), from this run's due time, scheduled at that instant itself (a delay
        // from `now` would be counted again from a later clock reading and could cross a tick).
        let due = missed.map(|missed| {
            let mut state = self.ctx.state.lock();
            let late = started.unwrap_or(now).saturating_duration_since(state.due).as_nanos();
            let tolerance = crate::missed_tick::on_time(live.tick()).as_nanos();
            let offset = missed.next_offset(late, period.as_nanos(), tolerance);
            state.due = saturating_add(state.due, nanos_to_duration(offset));
            state.due
        });
        let next = Run { ctx: Arc::clone(&self.ctx), task: Some(task), handed_over: false };
        // No lock is held here: a refused `next` is dropped inside `schedule` and ends the repetition.
        let scheduled = match due {
            None => live.try_schedule(period, move || next.run()),
            Some(due) => live.try_schedule_at(due, move || next.run()),
        };
        let Ok(handle) = scheduled else { return };
        self.handed_over = true;
        let mut state = self.ctx.state.lock();
        if state.cancelled || state.ended {
            drop(state);
            handle.cancel();
        } else if state.runs == run {
            state.current = Some(handle);
        }
        // Otherwise the next run already began (executor threads) and stored a newer handle: keep
        // it, or `cancel()` would miss the entry actually in the wheel.
    }
}

impl<F> Drop for Run<F> {
    fn drop(&mut self) {
        if !self.handed_over {
            self.ctx.end();
        }
    }
}

/// The handle of a repeating task: cancels it, whichever run is next. Created by
/// [`Timer::schedule_repeating`]. Cheap to clone; all clones control the same repetition.
///
/// Dropping it does not cancel the repetition. It does not keep the timer alive.
///
/// # Cancellation
///
/// [`cancel`](RepeatingHandle::cancel) returns `true` iff that call ended the repetition. After it
/// returns `true`, no run begins; a run already under way (for instance the one calling `cancel`
/// from inside the task) finishes, and is the last.
#[derive(Clone)]
pub struct RepeatingHandle {
    ctx: Arc<Ctx>,
}

impl RepeatingHandle {
    /// A handle to a repetition that never started.
    fn ended() -> Self {
        let ctx = Ctx {
            timer: None,
            repeat: Repeat::FixedDelay(Duration::ZERO),
            state: Mutex::new(State {
                current: None,
                cancelled: false,
                ended: true,
                runs: 0,
                due: Instant::now(),
            }),
        };
        RepeatingHandle { ctx: Arc::new(ctx) }
    }

    /// Stops the repetition. Returns `true` iff this call stopped it: `false` if it was already
    /// cancelled or had ended (its timer was dropped or shut down, a re-arm was refused, or a run
    /// panicked). After `true`, no further run begins (one already under way finishes). The
    /// pending entry leaves the wheel at once and the closure is dropped (once no run holds it).
    ///
    /// A run that a [`shutdown`](Timer::shutdown) handed back as an
    /// [`UnfiredTask`](crate::UnfiredTask) has not ended the repetition while that task exists:
    /// this returns `true` then, and running the handed-back task does nothing.
    pub fn cancel(&self) -> bool {
        let current = {
            let mut state = self.ctx.state.lock();
            if state.cancelled || state.ended {
                return false;
            }
            state.cancelled = true;
            state.current.take()
        };
        // Outside the lock: cancelling drops the entry's closure, whose drop takes the lock.
        if let Some(handle) = current {
            handle.cancel();
        }
        true
    }

    /// Moves the next run to `delay` from now on the timer's clock; see
    /// [`reset_at`](RepeatingHandle::reset_at).
    ///
    /// ```
    /// use delaywheel::{ManualClock, Repeat, Timer};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    /// let ping = timer.schedule_repeating(
    ///     Duration::from_millis(10),
    ///     Repeat::FixedRate(Duration::from_millis(10)),
    ///     || {},
    /// );
    /// assert!(ping.reset(Duration::from_millis(25))); // the next run at 25 ms, then 35, 45, …
    /// clock.advance(Duration::from_millis(24));
    /// timer.advance_clock(Duration::ZERO);
    /// assert_eq!(ping.runs(), 0);
    /// clock.advance(Duration::from_millis(1));
    /// timer.advance_clock(Duration::ZERO);
    /// assert_eq!(ping.runs(), 1);
    /// clock.advance(Duration::from_millis(10));
    /// timer.advance_clock(Duration::ZERO);
    /// assert_eq!(ping.runs(), 2);
    /// ```
    pub fn reset(&self, delay: Duration) -> bool {
        self.rearm(|live| live.now().checked_add(delay))
    }

    /// Moves the next run to `deadline` on the timer's clock ([`Timer::now`]), earlier or later,
    /// as [`TimerHandle::reset_at`] moves a one-shot task: it runs then, never before, and the
    /// repetition goes on from there ([`Repeat::FixedRate`]: its grid restarts at `deadline`;
    /// [`Repeat::FixedDelay`]: each next run `period` after the previous returned, as always).
    /// A deadline already passed runs by the next advance.
    ///
    /// Returns `true` iff the next run was pending and is now due at `deadline`. Returns `false`
    /// and changes nothing if the repetition was cancelled or ended, if the next run is being fired
    /// right now (it runs, and the repetition goes on unchanged), or if `deadline` is beyond the
    /// timer's range.
    pub fn reset_at(&self, deadline: Instant) -> bool {
        self.rearm(|_| Some(deadline))
    }

    /// Moves the current entry to the instant `at` returns (`None`: past what `Instant`
    /// represents), under the repetition's lock, so that a run starting meanwhile sees either the
    /// old grid and the old entry or the new ones.
    fn rearm(&self, at: impl FnOnce(&LiveTimer) -> Option<Instant>) -> bool {
        let Some(live) = self.ctx.timer.as_ref().and_then(WeakTimer::upgrade) else { return false };
        let mut state = self.ctx.state.lock();
        if state.cancelled || state.ended {
            return false;
        }
        let Some(current) = state.current.clone() else { return false };
        let Some(at) = at(&live) else { return false };
        let moved = current.reset_at(at);
        if moved {
            state.due = at;
        }
        moved
    }

    /// Whether runs may still begin: neither cancelled nor ended. Also `true` while a run that a
    /// shutdown handed back is held unrun (see [`cancel`](RepeatingHandle::cancel)).
    pub fn is_active(&self) -> bool {
        let state = self.ctx.state.lock();
        !state.cancelled && !state.ended
    }

    /// How many runs have begun so far.
    pub fn runs(&self) -> u64 {
        self.ctx.state.lock().runs
    }
}

impl fmt::Debug for RepeatingHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.ctx.state.lock();
        f.debug_struct("RepeatingHandle")
            .field("repeat", &self.ctx.repeat)
            .field("runs", &state.runs)
            .field("cancelled", &state.cancelled)
            .field("ended", &state.ended)
            .finish()
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
mod tests;
