//! The operation language and reference model shared by the property test (`tests/model.rs`) and
//! the fuzz target (`fuzz/fuzz_targets/timer_ops.rs`), so both check the timer the same way.
//!
//! Operations: schedule (any delay: zero, sub-tick, many levels away, far future), cancel (of any
//! handle, including fired, cancelled and refused ones), reset (re-arm in place, by a delay or an
//! instant, of any handle), advance of the manual clock (zero, sub-tick,
//! multi-level jumps) followed by `advance_clock`, and shutdown. The model is a plain list of
//! deadlines: after every step, exactly the tasks whose deadline tick has begun have fired, each once,
//! none early; `cancel()` and `reset()` return what the model says; `len()` is exact.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use delaywheel::{ManualClock, ScheduleError, Timer, TimerHandle};

/// The first tick boundary at or after `deadline`.
fn ceil_to_tick(deadline: Duration, tick: Duration) -> Duration {
    let nanos = deadline.as_nanos().div_ceil(tick.as_nanos()) * tick.as_nanos();
    // Exact, also past the clock's u64 nanoseconds (such a deadline is never reached; it must not
    // wrap to an early one).
    Duration::new((nanos / 1_000_000_000) as u64, (nanos % 1_000_000_000) as u32)
}

/// The tick boundary at which a task given `delay` at `now` becomes due: the first one at or after
/// its deadline, or for a zero delay (a deadline already passed) the current tick, also mid-tick.
fn due_tick(now: Duration, delay: Duration, tick: Duration) -> Duration {
    if delay.is_zero() {
        let nanos = now.as_nanos() / tick.as_nanos() * tick.as_nanos();
        return Duration::new((nanos / 1_000_000_000) as u64, (nanos % 1_000_000_000) as u32);
    }
    ceil_to_tick(now.saturating_add(delay), tick)
}

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

macro_rules! ensure_eq {
    ($a:expr, $b:expr, $($fmt:tt)+) => {{
        let (a, b) = (&$a, &$b);
        if a != b {
            return Err(format!("{}: {:?} != {:?}", format!($($fmt)+), a, b));
        }
    }};
}

#[derive(Clone, Debug)]
pub enum Op {
    /// Schedule with a delay of `nanos` (`None`: `Duration::MAX`).
    Schedule(Option<u64>),
    /// Cancel the handle with this index (modulo the number of handles).
    Cancel(usize),
    /// Reset the handle with this index (modulo the number of handles) to this delay (`None`:
    /// `Duration::MAX`), by `reset` for an even index, by `reset_at(now + delay)` for an odd one.
    Reset(usize, Option<u64>),
    /// Advance the clock by this many nanoseconds, then `advance_clock`.
    Advance(u64),
    /// Move the clock only: later schedules then work from a time the wheel has not reached.
    MoveClock(u64),
    Shutdown,
    /// Schedule `count` tasks with delays spread evenly over `[nanos, nanos + spread)`: enough of
    /// them make a stage big, so the staged cascade's early and paced path runs (more than 128 in a lane).
    Burst {
        nanos: u64,
        count: u16,
        spread: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    Pending,
    Fired,
    Cancelled,
    /// Refused by `try_schedule`, or left unfired by shutdown.
    Gone,
}

struct Task {
    deadline: Duration,
    /// The tick boundary it becomes due at ([`due_tick`]).
    due: Duration,
    expect: Expect,
    handle: Option<TimerHandle>,
}

/// Schedules one task (`None`: `Duration::MAX`) and checks `try_schedule`'s answer against the model.
fn schedule_one(
    timer: &Timer,
    clock: &ManualClock,
    fired: &Arc<Mutex<Vec<(usize, Duration)>>>,
    tasks: &mut Vec<Task>,
    shut_down: bool,
    step: usize,
    nanos: Option<u64>,
) -> Result<(), String> {
    let delay = nanos.map_or(Duration::MAX, Duration::from_nanos);
    let id = tasks.len();
    let (log, c) = (Arc::clone(fired), clock.clone());
    let result = timer.try_schedule(delay, move || log.lock().unwrap().push((id, c.now())));
    let deadline = clock.now().checked_add(delay);
    let gone = Task { deadline: Duration::ZERO, due: Duration::ZERO, expect: Expect::Gone, handle: None };
    match result {
        Ok(handle) => {
            ensure!(!shut_down, "step {step}: accepted after shutdown");
            let deadline = deadline.expect("an accepted deadline is representable");
            let due = due_tick(clock.now(), delay, timer.tick());
            tasks.push(Task { deadline, due, expect: Expect::Pending, handle: Some(handle) });
        }
        Err(ScheduleError::ShutDown) => {
            ensure!(shut_down, "step {step}: refused as shut down while running");
            tasks.push(gone);
        }
        Err(ScheduleError::DelayTooLong { max, .. }) => {
            ensure!(delay > max, "step {step}: {delay:?} refused, max {max:?}");
            ensure!(delay > Duration::from_secs(100 * 365 * 86_400), "step {step}: refused a short delay");
            tasks.push(gone);
        }
        Err(e) => return Err(format!("step {step}: unexpected error {e}")),
    }
    Ok(())
}

pub fn check(tick_us: u64, wheel_size: usize, ops: Vec<Op>) -> Result<(), String> {
    let tick = Duration::from_micros(tick_us);
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(tick).wheel_size(wheel_size).clock(clock.clone()).manual().build();
    let fired: Arc<Mutex<Vec<(usize, Duration)>>> = Arc::default();
    let mut tasks: Vec<Task> = Vec::new();
    let mut shut_down = false;

    for (step, op) in ops.into_iter().enumerate() {
        match op {
            Op::Schedule(nanos) => schedule_one(&timer, &clock, &fired, &mut tasks, shut_down, step, nanos)?,
            Op::Burst { nanos, count, spread } => {
                for i in 0..u64::from(count) {
                    let delay = nanos.saturating_add(spread / u64::from(count) * i);
                    schedule_one(&timer, &clock, &fired, &mut tasks, shut_down, step, Some(delay))?;
                }
            }
            Op::Cancel(i) => {
                if tasks.is_empty() {
                    continue;
                }
                let n = tasks.len();
                let task = &mut tasks[i % n];
                let cancelled = task.handle.as_ref().is_some_and(TimerHandle::cancel);
                ensure_eq!(cancelled, task.expect == Expect::Pending, "step {}: cancel result", step);
                if cancelled {
                    task.expect = Expect::Cancelled;
                }
            }
            Op::Reset(i, nanos) => {
                if tasks.is_empty() {
                    continue;
                }
                let n = tasks.len();
                let task = &mut tasks[i % n];
                let delay = nanos.map_or(Duration::MAX, Duration::from_nanos);
                let in_range = delay <= timer.max_delay();
                let moved = task.handle.as_ref().is_some_and(|h| match timer.now().checked_add(delay) {
                    Some(at) if i % 2 == 1 => h.reset_at(at),
                    _ => h.reset(delay),
                });
                ensure_eq!(moved, task.expect == Expect::Pending && in_range, "step {}: reset result", step);
                if moved {
                    task.deadline = clock.now() + delay;
                    task.due = due_tick(clock.now(), delay, tick);
                    // As a reading of the clock: the instant minus the clock's base instant.
                    let base = timer.now() - clock.now();
                    let when = task.handle.as_ref().and_then(TimerHandle::deadline).map(|at| at - base);
                    ensure_eq!(when, Some(task.due), "step {}: deadline after reset", step);
                }
            }
            Op::MoveClock(nanos) => clock.advance(Duration::from_nanos(nanos)),
            Op::Advance(nanos) => {
                clock.advance(Duration::from_nanos(nanos));
                let fired_before = fired.lock().unwrap().len();
                timer.advance_clock(Duration::ZERO);
                let now = clock.now();
                // Within one advance, tasks fire in non-decreasing order of their deadline tick.
                let batch: Vec<Duration> =
                    fired.lock().unwrap()[fired_before..].iter().map(|&(id, _)| tasks[id].due).collect();
                ensure!(batch.windows(2).all(|w| w[0] <= w[1]), "step {step}: fired out of order: {batch:?}");
                if !shut_down {
                    for task in tasks.iter_mut().filter(|t| t.expect == Expect::Pending) {
                        if task.due <= now {
                            task.expect = Expect::Fired;
                        }
                    }
                }
            }
            Op::Shutdown => {
                let unfired = timer.shutdown();
                // Exactly the pending tasks come back, as their tick-rounded deadlines, in order.
                let mut expected: Vec<Duration> = if shut_down {
                    Vec::new()
                } else {
                    tasks.iter().filter(|t| t.expect == Expect::Pending).map(|t| t.due).collect()
                };
                expected.sort();
                let returned: Vec<Duration> = unfired.iter().map(|u| u.deadline()).collect();
                ensure_eq!(returned, expected, "step {}: unfired tasks", step);
                for task in tasks.iter_mut().filter(|t| t.expect == Expect::Pending) {
                    task.expect = Expect::Gone;
                }
                shut_down = true;
            }
        }

        // The state after every step.
        let log = fired.lock().unwrap().clone();
        let mut times_fired = vec![0usize; tasks.len()];
        for &(id, at) in &log {
            times_fired[id] += 1;
            ensure!(at >= tasks[id].deadline, "step {step}: task {id} fired early");
        }
        for (id, task) in tasks.iter().enumerate() {
            let want = usize::from(task.expect == Expect::Fired);
            ensure_eq!(times_fired[id], want, "step {}: task {} ({:?}) fired count", step, id, task.expect);
        }
        let pending = tasks.iter().filter(|t| t.expect == Expect::Pending).count();
        ensure_eq!(timer.len(), pending, "step {}: len()", step);
    }
    Ok(())
}
