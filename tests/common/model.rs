//! The operation language and reference model shared by the property test (`tests/model.rs`) and
//! the fuzz target (`fuzz/fuzz_targets/timer_ops.rs`), so both check the timer the same way.
//!
//! Operations: schedule (any delay: zero, sub-tick, many levels away, far future), cancel (of any
//! handle, including fired, cancelled and refused ones), reset (re-arm in place, by a delay or an
//! instant, of any handle), advance of the manual clock (zero, sub-tick,
//! multi-level jumps) followed by `advance_clock`, shutdown, a chain of zero delays (a task that
//! reschedules itself with `Duration::ZERO`), a task that shuts the timer down, and tasks that
//! panic when they run (with a payload whose drop panics) or when dropped unrun. The model is a
//! plain list of deadlines: after every step, exactly the tasks whose deadline tick has begun have
//! fired, and those of the next tick up to a deadline passed within the tick under way that fired
//! (`fired_by_advance`), each once, none early, equal deadlines in scheduling order; each chain ran one link per
//! advance; `cancel()` and `reset()` return what the model says; `len()` is exact; and the
//! accounting holds: fired + cancelled + returned by shutdowns + pending = scheduled.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use delaywheel::{ManualClock, ScheduleError, Timer, TimerHandle};

// The timer's rounding of deadlines, as the model expects it.
#[path = "model_deadlines.rs"]
mod deadlines;
use deadlines::{due_tick, fired_by_advance, passed_instant, reported};

// The panics the model provokes, and how it catches them.
#[path = "model_panics.rs"]
mod panics;
pub use panics::pass_over_expected_panics;
use panics::{caught, drop_each, Bomb};

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
    /// Schedule at an instant this many nanoseconds before now (`schedule_at`): already passed,
    /// possibly ticks ago, so that it is due at once at the tick of its instant.
    SchedulePast(u64),
    /// Schedule a task that panics when it runs (after recording its run), with a panic payload
    /// whose own `Drop` panics: caught and counted, the timer goes on.
    SchedulePanicking(Option<u64>),
    /// Schedule a task whose closure panics when it is dropped unrun: by a refused schedule or a
    /// cancel (the panic reaches the caller, after the timer settled the entry), or by the caller
    /// of a shutdown dropping what it got back. It runs normally.
    ScheduleDropPanicking(Option<u64>),
    /// Schedule `count` tasks with delays spread evenly over `[nanos, nanos + spread)`: enough of
    /// them make a stage big, so the staged cascade's early and paced path runs (more than 128 in a lane).
    Burst {
        nanos: u64,
        count: u16,
        spread: u64,
    },
    /// Schedule a chain of this many links (at least one), each a task that schedules the next
    /// with a zero delay: one link runs per advance.
    ZeroChain(u8),
    /// Schedule a task (with this delay, as [`Op::Schedule`]) that shuts the timer down when it
    /// runs: it returns every task that has not started, the rest of its batch included.
    ShutdownInTask(Option<u64>),
}

/// A chain of zero delays in the model.
struct Chain {
    /// Links run so far (written by the links).
    runs: Arc<AtomicUsize>,
    /// Links that ran, as the model expects them.
    ran: usize,
    /// Links still to run; the next one is pending while this is above 0 and no shutdown came.
    left: usize,
    /// What the pending link's deadline reads back as: the clock when it was scheduled (a zero
    /// delay), or its tick's start where the deadline word is not exact ([`reported`]).
    reported: Duration,
}

/// The task of a chain's link: records its run, then schedules the next link with a zero delay.
fn link(timer: Weak<Timer>, runs: Arc<AtomicUsize>, left: usize) -> impl FnOnce() + Send + 'static {
    move || {
        runs.fetch_add(1, Ordering::SeqCst);
        if left > 1 {
            if let Some(t) = timer.upgrade() {
                let _ = t.try_schedule(Duration::ZERO, link(timer, runs, left - 1));
            }
        }
    }
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
    /// Whether it panics when it runs.
    panics: bool,
    /// Whether it shuts the timer down when it runs.
    shuts_down: bool,
    deadline: Duration,
    /// The tick boundary it becomes due at ([`due_tick`]).
    due: Duration,
    /// What the timer reports as its deadline ([`reported`]).
    reported: Duration,
    expect: Expect,
    handle: Option<TimerHandle>,
}

impl Task {
    /// A task the timer refused: never pending, nothing expected of its deadline.
    fn refused(panics: bool, shuts_down: bool) -> Task {
        let zero = Duration::ZERO;
        let (deadline, due, reported, expect) = (zero, zero, zero, Expect::Gone);
        Task { panics, shuts_down, deadline, due, reported, expect, handle: None }
    }
}

/// Schedules one task (`None`: `Duration::MAX`) and checks `try_schedule`'s answer against the model.
/// What a task that shuts the timer down got back: the deadlines of the returned tasks.
type InTask = Arc<Mutex<Option<Vec<Duration>>>>;

/// What a scheduled task does besides recording its run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Plain,
    /// Panics when it runs ([`Op::SchedulePanicking`]).
    PanicsWhenRun,
    /// Panics when dropped unrun ([`Op::ScheduleDropPanicking`]).
    PanicsWhenDropped,
}

/// Schedules a plain task at the instant `back` nanoseconds before now (not before the clock's
/// origin) and records what the model expects of it: due at its instant's tick, or at the tick
/// under way if its instant lies within that tick; its deadline read back exactly, or as that
/// tick's start (`src/deadline.rs`, `TickLength::deadline_at`).
fn schedule_past(
    timer: &Timer,
    clock: &ManualClock,
    fired: &Arc<Mutex<Vec<(usize, Duration)>>>,
    tasks: &mut Vec<Task>,
    shut_down: bool,
    (step, back): (usize, u64),
) -> Result<(), String> {
    let (now, id) = (clock.now(), tasks.len());
    let at = now.saturating_sub(Duration::from_nanos(back));
    let (log, c) = (Arc::clone(fired), clock.clone());
    let result =
        timer.try_schedule_at(timer.now() - now + at, move || log.lock().unwrap().push((id, c.now())));
    let (due, reported) = passed_instant(now, at, timer.tick());
    match result {
        Ok(handle) => {
            ensure!(!shut_down, "step {step}: accepted after shutdown");
            let expect = Expect::Pending;
            let (panics, shuts_down, handle) = (false, false, Some(handle));
            tasks.push(Task { panics, shuts_down, deadline: at, due, reported, expect, handle });
        }
        Err(ScheduleError::ShutDown) => {
            ensure!(shut_down, "step {step}: refused as shut down while running");
            tasks.push(Task::refused(false, false));
        }
        Err(e) => return Err(format!("step {step}: unexpected error {e}")),
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn schedule_one(
    timer: &Arc<Timer>,
    clock: &ManualClock,
    fired: &Arc<Mutex<Vec<(usize, Duration)>>>,
    tasks: &mut Vec<Task>,
    shut_down: bool,
    step: usize,
    (nanos, kind): (Option<u64>, Kind),
    in_task: Option<&InTask>,
) -> Result<(), String> {
    let delay = nanos.map_or(Duration::MAX, Duration::from_nanos);
    let id = tasks.len();
    let (log, c) = (Arc::clone(fired), clock.clone());
    let shuts_down = in_task.map(|slot| (Arc::downgrade(timer), Arc::clone(slot)));
    let (panics, bomb) = (kind == Kind::PanicsWhenRun, (kind == Kind::PanicsWhenDropped).then(|| Bomb));
    let task = move || {
        std::mem::forget(bomb);
        log.lock().unwrap().push((id, c.now()));
        if let Some(timer) = shuts_down.as_ref().and_then(|(timer, _)| timer.upgrade()) {
            let unfired = timer.shutdown();
            *shuts_down.as_ref().unwrap().1.lock().unwrap() =
                Some(unfired.iter().map(|t| t.deadline()).collect());
            drop_each(unfired);
        }
        if panics {
            std::panic::panic_any(Bomb);
        }
    };
    // A refused closure that panics when dropped panics out of `try_schedule`: refused all the same.
    let result = caught(|| timer.try_schedule(delay, task)).unwrap_or_else(|| match shut_down {
        true => Err(ScheduleError::ShutDown),
        false => Err(ScheduleError::DelayTooLong { delay, max: timer.max_delay() }),
    });
    let deadline = clock.now().checked_add(delay);
    let shuts_down = in_task.is_some();
    let gone = Task::refused(panics, shuts_down);
    match result {
        Ok(handle) => {
            ensure!(!shut_down, "step {step}: accepted after shutdown");
            let deadline = deadline.expect("an accepted deadline is representable");
            let due = due_tick(clock.now(), delay, timer.tick());
            let reported = reported(clock.now(), delay, timer.tick());
            tasks.push(Task {
                panics,
                shuts_down,
                deadline,
                due,
                reported,
                expect: Expect::Pending,
                handle: Some(handle),
            });
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

/// What an advance at `now` fires ([`fired_by_advance`]): the pending tasks, beside the pending
/// links of chains (a zero delay each, at the time their `reported`).
fn expected_fires(tasks: &[Task], chains: &[Chain], now: Duration, tick: Duration) -> Vec<Option<Duration>> {
    let pending =
        |t: &Task| (t.expect == Expect::Pending).then_some((t.deadline, t.due, t.reported == t.deadline));
    let links = chains.iter().filter(|c| c.left > 0).map(|c| c.reported);
    fired_by_advance(&tasks.iter().map(pending).collect::<Vec<_>>(), links, now, tick)
}

pub fn check(tick_us: u64, wheel_size: usize, ops: Vec<Op>) -> Result<(), String> {
    pass_over_expected_panics();
    let tick = Duration::from_micros(tick_us);
    let clock = ManualClock::new();
    let timer =
        Arc::new(Timer::builder().tick(tick).wheel_size(wheel_size).clock(clock.clone()).manual().build());
    let fired: Arc<Mutex<Vec<(usize, Duration)>>> = Arc::default();
    let mut tasks: Vec<Task> = Vec::new();
    let mut chains: Vec<Chain> = Vec::new();
    let mut shut_down = false;
    let in_task: InTask = Arc::default();
    // Tasks returned by every shutdown.
    let mut returned_total = 0u64;
    let zero_delay = |at: Duration| reported(at, Duration::ZERO, tick);

    let steps = ops.len();
    for (step, op) in ops.into_iter().enumerate() {
        // `stats()` walks every bucket: read it where the counts it checks move in ways the
        // other checks do not see (advances and shutdowns), and at the end.
        let read_stats = matches!(op, Op::Advance(_) | Op::Shutdown) || step + 1 == steps;
        match op {
            Op::Schedule(nanos) => {
                schedule_one(&timer, &clock, &fired, &mut tasks, shut_down, step, (nanos, Kind::Plain), None)?
            }
            Op::SchedulePast(back) => {
                schedule_past(&timer, &clock, &fired, &mut tasks, shut_down, (step, back))?
            }
            Op::SchedulePanicking(nanos) => {
                let one = (nanos, Kind::PanicsWhenRun);
                schedule_one(&timer, &clock, &fired, &mut tasks, shut_down, step, one, None)?
            }
            Op::ScheduleDropPanicking(nanos) => {
                let one = (nanos, Kind::PanicsWhenDropped);
                schedule_one(&timer, &clock, &fired, &mut tasks, shut_down, step, one, None)?
            }
            Op::ShutdownInTask(nanos) => {
                let slot = Some(&in_task);
                schedule_one(&timer, &clock, &fired, &mut tasks, shut_down, step, (nanos, Kind::Plain), slot)?
            }
            Op::ZeroChain(links) => {
                let (runs, left) = (Arc::new(AtomicUsize::new(0)), usize::from(links.max(1)));
                let accepted =
                    timer.try_schedule(Duration::ZERO, link(Arc::downgrade(&timer), Arc::clone(&runs), left));
                ensure_eq!(accepted.is_ok(), !shut_down, "step {}: chain accepted", step);
                let left = if shut_down { 0 } else { left };
                chains.push(Chain { runs, ran: 0, left, reported: zero_delay(clock.now()) });
            }
            Op::Burst { nanos, count, spread } => {
                for i in 0..u64::from(count) {
                    let delay = nanos.saturating_add(spread / u64::from(count) * i);
                    let one = (Some(delay), Kind::Plain);
                    schedule_one(&timer, &clock, &fired, &mut tasks, shut_down, step, one, None)?;
                }
            }
            Op::Cancel(i) => {
                if tasks.is_empty() {
                    continue;
                }
                let n = tasks.len();
                let task = &mut tasks[i % n];
                // A closure that panics when dropped panics out of a cancel that won.
                let cancelled =
                    caught(|| task.handle.as_ref().is_some_and(TimerHandle::cancel)).unwrap_or(true);
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
                // The clock stays far from its end: the range is `max_delay` and its second of slack.
                let in_range = delay <= timer.max_delay() + Duration::from_secs(1);
                let moved = task.handle.as_ref().is_some_and(|h| match timer.now().checked_add(delay) {
                    Some(at) if i % 2 == 1 => h.reset_at(at),
                    _ => h.reset(delay),
                });
                ensure_eq!(moved, task.expect == Expect::Pending && in_range, "step {}: reset result", step);
                if moved {
                    task.deadline = clock.now() + delay;
                    task.due = due_tick(clock.now(), delay, tick);
                    task.reported = reported(clock.now(), delay, tick);
                    // As a reading of the clock: the instant minus the clock's base instant.
                    let base = timer.now() - clock.now();
                    let when = task.handle.as_ref().and_then(TimerHandle::deadline).map(|at| at - base);
                    ensure_eq!(when, Some(task.reported), "step {}: deadline after reset", step);
                }
            }
            Op::MoveClock(nanos) => clock.advance(Duration::from_nanos(nanos)),
            Op::Advance(nanos) => {
                clock.advance(Duration::from_nanos(nanos));
                let now = clock.now();
                // Which tasks the advance fires, each in the batch of which tick.
                let fires = expected_fires(&tasks, &chains, now, tick);
                let fired_before = fired.lock().unwrap().len();
                timer.advance_clock(Duration::ZERO);
                // Within one advance, tasks fire in batches of non-decreasing ticks, equal deadlines
                // in scheduling order (task ids are in scheduling order): exact ones whatever tick
                // they are due at (a deadline passed within the tick under way fires with the
                // tick's end's entries up to it), the others at one due tick.
                let ran: Vec<usize> =
                    fired.lock().unwrap()[fired_before..].iter().map(|&(id, _)| id).collect();
                let batch: Vec<Option<Duration>> = ran.iter().map(|&id| fires[id]).collect();
                ensure!(batch.iter().all(Option::is_some), "step {step}: fired, not due: {ran:?} {batch:?}");
                ensure!(batch.windows(2).all(|w| w[0] <= w[1]), "step {step}: fired out of order: {batch:?}");
                let exact = |id: usize| tasks[id].reported == tasks[id].deadline;
                let (deadline, due) = (|id: usize| tasks[id].deadline, |id: usize| tasks[id].due);
                let tie = |a, b| deadline(a) == deadline(b) && (due(a) == due(b) || exact(a) && exact(b));
                let ties = ran.windows(2).filter(|w| tie(w[0], w[1]));
                ensure!(
                    ties.clone().all(|w| w[0] < w[1]),
                    "step {step}: equal deadlines out of order: {ran:?}"
                );
                // Within one tick's batches, in deadline order where the timer keeps it exactly.
                let same_tick = ran.windows(2).filter(|w| fires[w[0]] == fires[w[1]]);
                ensure!(
                    same_tick
                        .filter(|w| exact(w[0]) && exact(w[1]))
                        .all(|w| deadline(w[0]) <= deadline(w[1])),
                    "step {step}: out of deadline order within a tick: {ran:?}"
                );
                let shutdown_in_task = in_task.lock().unwrap().take();
                if let Some(returned) = shutdown_in_task {
                    // A task of this advance shut the timer down: it ran last; everything that
                    // had not started was returned to it.
                    ensure!(
                        ran.last().is_some_and(|&id| tasks[id].shuts_down),
                        "step {step}: a task ran after the shutdown: {ran:?}"
                    );
                    let mut expected = Vec::new();
                    for &id in &ran {
                        ensure!(tasks[id].expect == Expect::Pending, "step {step}: {id}");
                        tasks[id].expect = Expect::Fired;
                    }
                    for task in tasks.iter_mut().filter(|t| t.expect == Expect::Pending) {
                        expected.push(task.reported);
                        task.expect = Expect::Gone;
                    }
                    for chain in chains.iter_mut().filter(|c| c.left > 0) {
                        // Its link ran before the shutdown (and scheduled the next), or not.
                        let runs = chain.runs.load(Ordering::SeqCst);
                        ensure!(runs == chain.ran || runs == chain.ran + 1, "step {step}: chain ran {runs}");
                        if runs > chain.ran {
                            (chain.ran, chain.left, chain.reported) = (runs, chain.left - 1, zero_delay(now));
                        }
                        if chain.left > 0 {
                            expected.push(chain.reported);
                        }
                        chain.left = 0;
                    }
                    expected.sort();
                    ensure_eq!(returned, expected, "step {}: returned by the shutdown inside a task", step);
                    returned_total += returned.len() as u64;
                    shut_down = true;
                } else if !shut_down {
                    for (task, fires) in tasks.iter_mut().zip(&fires) {
                        if fires.is_some() {
                            task.expect = Expect::Fired;
                        }
                    }
                    // One link of each chain per advance: the next one waits for the next advance.
                    for chain in chains.iter_mut().filter(|c| c.left > 0) {
                        (chain.ran, chain.left, chain.reported) =
                            (chain.ran + 1, chain.left - 1, zero_delay(now));
                    }
                }
                for (i, chain) in chains.iter().enumerate() {
                    let runs = chain.runs.load(Ordering::SeqCst);
                    ensure_eq!(runs, chain.ran, "step {}: chain {} links run", step, i);
                }
            }
            Op::Shutdown => {
                let unfired = timer.shutdown();
                // Exactly the pending tasks come back, with their deadlines as reported, in order.
                let mut expected: Vec<Duration> = if shut_down {
                    Vec::new()
                } else {
                    let links = chains.iter().filter(|c| c.left > 0).map(|c| c.reported);
                    tasks
                        .iter()
                        .filter(|t| t.expect == Expect::Pending)
                        .map(|t| t.reported)
                        .chain(links)
                        .collect()
                };
                expected.sort();
                let returned: Vec<Duration> = unfired.iter().map(|u| u.deadline()).collect();
                drop_each(unfired);
                ensure_eq!(returned, expected, "step {}: unfired tasks", step);
                returned_total += returned.len() as u64;
                for task in tasks.iter_mut().filter(|t| t.expect == Expect::Pending) {
                    task.expect = Expect::Gone;
                }
                chains.iter_mut().for_each(|c| c.left = 0);
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
        let links = chains.iter().filter(|c| c.left > 0).count();
        let pending = tasks.iter().filter(|t| t.expect == Expect::Pending).count() + links;
        ensure_eq!(timer.len(), pending, "step {}: len()", step);
        if !read_stats {
            continue;
        }
        let stats = timer.stats();
        let panicked = tasks.iter().filter(|t| t.panics && t.expect == Expect::Fired).count() as u64;
        ensure_eq!(stats.panicked, panicked, "step {}: panicked", step);
        let accounted = stats.fired + stats.cancelled + returned_total + pending as u64;
        ensure_eq!(accounted, stats.scheduled, "step {}: fired + cancelled + returned + pending", step);
    }
    Ok(())
}
