//! The operation language and reference model shared by the property test (`tests/model.rs`) and
//! the fuzz target (`fuzz/fuzz_targets/timer_ops.rs`), so both check the timer the same way.
//!
//! Operations: schedule (any delay: zero, sub-tick, many levels away, far future), cancel (of any
//! handle, including fired, cancelled and refused ones; one or a run of them), reset (re-arm in
//! place, by a delay or an instant, of any handle), advance of the manual clock (zero, sub-tick,
//! multi-level jumps) followed by `advance_clock`, shutdown, a chain of zero delays (a task that
//! reschedules itself with `Duration::ZERO`), a task that shuts the timer down, tasks that panic
//! when they run (with a payload whose drop panics) or when dropped unrun, closures of every size
//! class the timer stores differently (`sized_task.rs`: inline, in a block of its task slab,
//! boxed), alone or in bursts, and `shrink`; on a timer with a `capacity` and a `max_pending` or
//! none ([`Shape`]). The model is a plain list of deadlines: after every step, exactly the tasks
//! whose deadline tick has begun have fired, and those of the next tick up to a deadline passed
//! within the tick under way that fired (`fired_by_advance`), each once, none early, equal
//! deadlines in scheduling order; each chain ran one link per advance; `cancel()` and `reset()`
//! return what the model says; a schedule is refused exactly when and why the model predicts (shut
//! down, out of range, `max_pending` pending: `refusal` in `model_deadlines.rs`); every sized
//! closure was dropped exactly once when its task left the timer (run, cancelled, refused, returned
//! by a shutdown) and not before, its bytes intact; of the tasks a shutdown returns, the model runs
//! every other one (`UnfiredTask::run`: each runs once, a task or a chain's link still pending) and
//! drops the rest; `len()` is exact; and the accounting holds: fired + cancelled + returned by
//! shutdowns + pending = scheduled.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use delaywheel::{ManualClock, Timer, TimerHandle};

include!("model_base.rs");
use deadlines::{due_tick, fired_by_advance, in_range, reported};
use panics::caught;
pub use panics::pass_over_expected_panics;

macro_rules! ensure_eq {
    ($a:expr, $b:expr, $($fmt:tt)+) => {{
        let (a, b) = (&$a, &$b);
        if a != b {
            return Err(format!("{}: {:?} != {:?}", format!($($fmt)+), a, b));
        }
    }};
}

// The model's tasks, and the schedules that make them.
#[path = "model_schedule.rs"]
mod schedule;
use schedule::{hand_back, link, Chain, Expect, InTask, Kind, Log, Sched, Task};

/// The timer a sequence runs on: tick, wheel size, and the builder's `capacity` and `max_pending`.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub tick_us: u64,
    pub wheel_size: usize,
    pub capacity: usize,
    /// `None`: unbounded.
    pub max_pending: Option<usize>,
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
    /// Schedule (as [`Op::Schedule`]) a closure carrying bytes of this size class
    /// (`sized_task.rs`): run or dropped exactly once, its bytes intact. By the last field modulo
    /// 3, it panics when it runs (1, as [`Op::SchedulePanicking`]) or when dropped unrun (2, as
    /// [`Op::ScheduleDropPanicking`]).
    ScheduleSized(Option<u64>, u8, u8),
    /// A burst (as [`Op::Burst`]) of closures of this size class, `count` from `nanos` on.
    BurstSized {
        nanos: u64,
        count: u16,
        spread: u64,
        class: u8,
    },
    /// Cancel up to this many handles in a row from the one with this index (modulo the number of
    /// handles): a burst's pages emptied for a shrink.
    CancelMany(usize, u16),
    /// `Timer::shrink`: the pages a spike left behind given back; the pending tasks untouched.
    Shrink,
}

/// What an advance at `now` fires ([`fired_by_advance`]): the pending tasks, beside the pending
/// links of chains (a zero delay each, at the time their `reported`).
fn expected_fires(tasks: &[Task], chains: &[Chain], now: Duration, tick: Duration) -> Vec<Option<Duration>> {
    let pending =
        |t: &Task| (t.expect == Expect::Pending).then_some((t.deadline, t.due, t.reported == t.deadline));
    let links = chains.iter().filter(|c| c.left > 0).map(|c| c.reported);
    fired_by_advance(&tasks.iter().map(pending).collect::<Vec<_>>(), links, now, tick)
}

/// Cancels `task` and checks the result against the model.
fn cancel(task: &mut Task, step: usize) -> Result<(), String> {
    // A closure that panics when dropped panics out of a cancel that won.
    let cancelled = caught(|| task.handle.as_ref().is_some_and(TimerHandle::cancel)).unwrap_or(true);
    ensure_eq!(cancelled, task.expect == Expect::Pending, "step {}: cancel result", step);
    if cancelled {
        task.expect = Expect::Cancelled;
    }
    Ok(())
}

/// [`check_shape`] on a timer of this tick and wheel size, with no capacity and no bound.
pub fn check(tick_us: u64, wheel_size: usize, ops: Vec<Op>) -> Result<(), String> {
    check_shape(Shape { tick_us, wheel_size, capacity: 0, max_pending: None }, ops)
}

/// Runs `ops` on a manual timer of this shape, checking every step against the model.
pub fn check_shape(shape: Shape, ops: Vec<Op>) -> Result<(), String> {
    pass_over_expected_panics();
    let tick = Duration::from_micros(shape.tick_us);
    let clock = ManualClock::new();
    let builder = Timer::builder().tick(tick).wheel_size(shape.wheel_size).clock(clock.clone()).manual();
    let builder = builder.capacity(shape.capacity);
    let max_pending = shape.max_pending.unwrap_or(usize::MAX);
    let timer = Arc::new(match shape.max_pending {
        Some(max) => builder.max_pending(max).build(),
        None => builder.build(),
    });
    let fired: Log = Arc::default();
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
        let pending = tasks.iter().filter(|t| t.expect == Expect::Pending).count()
            + chains.iter().filter(|c| c.left > 0).count();
        let (timer_ref, clock_ref) = (&timer, &clock);
        let mut sched = Sched {
            timer: timer_ref,
            clock: clock_ref,
            fired: &fired,
            shut_down,
            step,
            pending,
            max_pending,
        };
        match op {
            Op::Schedule(nanos) => sched.schedule_one(&mut tasks, nanos, Kind::Plain, None)?,
            Op::SchedulePast(back) => sched.schedule_past(&mut tasks, back)?,
            Op::SchedulePanicking(nanos) => {
                sched.schedule_one(&mut tasks, nanos, Kind::PanicsWhenRun, None)?
            }
            Op::ScheduleDropPanicking(nanos) => {
                sched.schedule_one(&mut tasks, nanos, Kind::PanicsWhenDropped, None)?
            }
            Op::ShutdownInTask(nanos) => {
                sched.schedule_one(&mut tasks, nanos, Kind::Plain, Some(&in_task))?
            }
            Op::ScheduleSized(nanos, class, mode) => {
                sched.schedule_one(&mut tasks, nanos, Kind::Sized(class, mode), None)?
            }
            Op::ZeroChain(links) => {
                let (runs, left) = (Arc::new(AtomicUsize::new(0)), usize::from(links.max(1)));
                let accepted =
                    timer.try_schedule(Duration::ZERO, link(Arc::downgrade(&timer), Arc::clone(&runs), left));
                let room = !shut_down && pending < max_pending;
                ensure_eq!(accepted.is_ok(), room, "step {}: chain accepted", step);
                let left = if room { left } else { 0 };
                chains.push(Chain { runs, ran: 0, left, reported: zero_delay(clock.now()) });
            }
            Op::Burst { nanos, count, spread } => {
                for i in 0..u64::from(count) {
                    let delay = nanos.saturating_add(spread / u64::from(count) * i);
                    sched.schedule_one(&mut tasks, Some(delay), Kind::Plain, None)?;
                }
            }
            Op::BurstSized { nanos, count, spread, class } => {
                for i in 0..u64::from(count) {
                    let delay = nanos.saturating_add(spread / u64::from(count).max(1) * i);
                    sched.schedule_one(&mut tasks, Some(delay), Kind::Sized(class, 0), None)?;
                }
            }
            Op::Cancel(i) => {
                if tasks.is_empty() {
                    continue;
                }
                let n = tasks.len();
                cancel(&mut tasks[i % n], step)?;
            }
            Op::CancelMany(i, count) => {
                let n = tasks.len();
                for task in tasks.iter_mut().skip(i % n.max(1)).take(usize::from(count)) {
                    cancel(task, step)?;
                }
            }
            Op::Shrink => timer.shrink(),
            Op::Reset(i, nanos) => {
                if tasks.is_empty() {
                    continue;
                }
                let n = tasks.len();
                let task = &mut tasks[i % n];
                let delay = nanos.map_or(Duration::MAX, Duration::from_nanos);
                let in_range = in_range(clock.now(), delay, tick);
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
                ensure_eq!(returned, expected, "step {}: unfired tasks", step);
                hand_back(unfired, step, (&fired, &in_task), &mut tasks, &mut chains)?;
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
            let early = at < tasks[id].deadline && tasks[id].expect != Expect::RanUnfired;
            ensure!(!early, "step {step}: task {id} fired early");
        }
        for (id, task) in tasks.iter().enumerate() {
            let want = usize::from(matches!(task.expect, Expect::Fired | Expect::RanUnfired));
            ensure_eq!(times_fired[id], want, "step {}: task {} ({:?}) fired count", step, id, task.expect);
        }
        for (id, task) in tasks.iter().enumerate() {
            let Some(probe) = &task.probe else { continue };
            let dropped = usize::from(task.expect != Expect::Pending);
            ensure_eq!(
                probe.drops(),
                dropped,
                "step {}: task {} ({:?}) closure drops",
                step,
                id,
                task.expect
            );
            ensure!(probe.intact(), "step {step}: task {id}'s closure damaged");
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
        ensure_eq!(stats.abandoned, returned_total, "step {}: abandoned = returned by the shutdowns", step);
    }
    Ok(())
}
