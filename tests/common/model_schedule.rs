//! Scheduling in the reference model (`model.rs`): the model's tasks and chains of zero delays, the
//! closures it schedules (plain, panicking, shutting the timer down, or carrying bytes of a size
//! class: `sized_task.rs`), and the check of each schedule's answer against the answer the model
//! predicts from its own bookkeeping (`deadlines::refusal`): accepted, or refused as shut down,
//! beyond the timer's range, or over its `max_pending`, the closure dropped unrun; and what becomes
//! of the tasks a shutdown hands back ([`hand_back`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use delaywheel::{ManualClock, ScheduleError, Timer, TimerHandle, UnfiredTask};

use super::deadlines::{due_tick, passed_instant, refusal, reported};
use super::panics::{caught, drop_each, run_unfired, Bomb};
use super::sized::{by_class, Carried, Probe, Visit};

/// Every run of a task: its id and the clock's time.
pub(super) type Log = Arc<Mutex<Vec<(usize, Duration)>>>;

/// A chain of zero delays in the model.
pub(super) struct Chain {
    /// Links run so far (written by the links).
    pub runs: Arc<AtomicUsize>,
    /// Links that ran, as the model expects them.
    pub ran: usize,
    /// Links still to run; the next one is pending while this is above 0 and no shutdown came.
    pub left: usize,
    /// What the pending link's deadline reads back as: the clock when it was scheduled (a zero
    /// delay), or its tick's start where the deadline word is not exact ([`reported`]).
    pub reported: Duration,
}

/// The task of a chain's link: records its run, then schedules the next link with a zero delay
/// (never refused by `max_pending`: the running link is counted out before it runs).
pub(super) fn link(
    timer: Weak<Timer>,
    runs: Arc<AtomicUsize>,
    left: usize,
) -> impl FnOnce() + Send + 'static {
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
pub(super) enum Expect {
    Pending,
    Fired,
    Cancelled,
    /// Refused by `try_schedule`, or left unfired by shutdown (and dropped).
    Gone,
    /// Left unfired by shutdown, then run by the model (`UnfiredTask::run`).
    RanUnfired,
}

pub(super) struct Task {
    /// Whether it panics when it runs.
    pub panics: bool,
    /// Whether it shuts the timer down when it runs.
    pub shuts_down: bool,
    pub deadline: Duration,
    /// The tick boundary it becomes due at ([`due_tick`]).
    pub due: Duration,
    /// What the timer reports as its deadline ([`reported`]).
    pub reported: Duration,
    pub expect: Expect,
    pub handle: Option<TimerHandle>,
    /// The probe of a closure of a size class: dropped exactly once when no longer pending.
    pub probe: Option<Arc<Probe>>,
}

impl Task {
    /// A task the timer refused: never pending, nothing expected of its deadline.
    fn refused(panics: bool, shuts_down: bool, probe: Option<Arc<Probe>>) -> Task {
        let zero = Duration::ZERO;
        let (deadline, due, reported, expect) = (zero, zero, zero, Expect::Gone);
        Task { panics, shuts_down, deadline, due, reported, expect, handle: None, probe }
    }
}

/// What a task that shuts the timer down got back: the deadlines of the returned tasks.
pub(super) type InTask = Arc<Mutex<Option<Vec<Duration>>>>;

/// What a scheduled task does besides recording its run.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Plain,
    /// Panics when it runs ([`super::Op::SchedulePanicking`]).
    PanicsWhenRun,
    /// Panics when dropped unrun ([`super::Op::ScheduleDropPanicking`]).
    PanicsWhenDropped,
    /// Carries bytes of this size class, and panics when run (1) or dropped unrun (2) by its
    /// second field modulo 3 ([`super::Op::ScheduleSized`]).
    Sized(u8, u8),
}

/// A schedule of a closure of a size class, carrying `probe`.
struct SizedSchedule<'a>(&'a Timer, Duration, Arc<Probe>);

impl Visit for SizedSchedule<'_> {
    type Out = Result<TimerHandle, ScheduleError>;
    fn visit<V: Carried>(self) -> Self::Out {
        let value = V::new(self.2);
        self.0.try_schedule(self.1, move || value.run())
    }
}

/// What scheduling in one step needs of the model.
pub(super) struct Sched<'a> {
    pub timer: &'a Arc<Timer>,
    pub clock: &'a ManualClock,
    pub fired: &'a Log,
    pub shut_down: bool,
    pub step: usize,
    /// Tasks and chain links the model holds pending (counted up as schedules are accepted).
    pub pending: usize,
    /// The timer's bound on them (`usize::MAX`: none).
    pub max_pending: usize,
}

impl Sched<'_> {
    /// Checks a schedule's answer against the refusal the model predicts from its own bookkeeping
    /// (`delay`: `None` for an instant already passed) and records the task: accepted as `task`,
    /// or refused. `result` is `None` for a refused closure that panicked when dropped: its reason
    /// is not seen, but the model must have predicted a refusal.
    fn record(
        &mut self,
        tasks: &mut Vec<Task>,
        result: Option<Result<TimerHandle, ScheduleError>>,
        task: Task,
        delay: Option<Duration>,
    ) -> Result<(), String> {
        let (step, pending, max) = (self.step, self.pending, self.max_pending);
        let (now, tick) = (self.clock.now(), self.timer.tick());
        let expected = refusal(self.shut_down, (now, tick, delay), (pending, max));
        match (result, expected) {
            (Some(Ok(handle)), None) => {
                self.pending += 1;
                tasks.push(Task { handle: Some(handle), ..task });
                return Ok(());
            }
            (Some(Ok(_)), Some(want)) => {
                return Err(format!("step {step}: {delay:?} accepted, expected {want:?} ({pending} pending)"))
            }
            (Some(Err(got)), want) => {
                ensure_eq!(Some(got), want, "step {}: refusal of {:?} ({} pending)", step, delay, pending)
            }
            (None, want) => {
                ensure!(want.is_some(), "step {step}: {delay:?} refused unexpectedly ({pending} pending)")
            }
        }
        tasks.push(Task::refused(task.panics, task.shuts_down, task.probe));
        Ok(())
    }

    /// Schedules a plain task at the instant `back` nanoseconds before now (not before the clock's
    /// origin) and records what the model expects of it: due at its instant's tick, or at the tick
    /// under way if its instant lies within that tick; its deadline read back exactly, or as that
    /// tick's start (`src/deadline.rs`, `TickLength::deadline_at`).
    pub fn schedule_past(&mut self, tasks: &mut Vec<Task>, back: u64) -> Result<(), String> {
        let (timer, now, id) = (self.timer, self.clock.now(), tasks.len());
        let at = now.saturating_sub(Duration::from_nanos(back));
        let (log, c) = (Arc::clone(self.fired), self.clock.clone());
        let result =
            timer.try_schedule_at(timer.now() - now + at, move || log.lock().unwrap().push((id, c.now())));
        let (due, reported) = passed_instant(now, at, timer.tick());
        let (panics, shuts_down, handle, probe) = (false, false, None, None);
        let task =
            Task { panics, shuts_down, deadline: at, due, reported, expect: Expect::Pending, handle, probe };
        self.record(tasks, Some(result), task, None)
    }

    /// Schedules one task (`None`: `Duration::MAX`) and checks `try_schedule`'s answer against the
    /// model.
    pub fn schedule_one(
        &mut self,
        tasks: &mut Vec<Task>,
        nanos: Option<u64>,
        kind: Kind,
        in_task: Option<&InTask>,
    ) -> Result<(), String> {
        let (timer, clock) = (self.timer, self.clock);
        let delay = nanos.map_or(Duration::MAX, Duration::from_nanos);
        let id = tasks.len();
        let (log, c) = (Arc::clone(self.fired), clock.clone());
        let panics = match kind {
            Kind::PanicsWhenRun => true,
            Kind::Sized(_, mode) => mode % 3 == 1,
            _ => false,
        };
        let mut probe = None;
        let result = if let Kind::Sized(class, mode) = kind {
            let carried = Probe::with_drop_panic(id, mode % 3 == 2, move |id| {
                log.lock().unwrap().push((id, c.now()));
                if panics {
                    std::panic::panic_any(Bomb);
                }
            });
            probe = Some(Arc::clone(&carried));
            // A refused closure that panics when dropped panics out of `try_schedule` (`None`).
            caught(|| by_class(class, SizedSchedule(timer, delay, carried)))
        } else {
            let shuts_down = in_task.map(|slot| (Arc::downgrade(timer), Arc::clone(slot)));
            let bomb = (kind == Kind::PanicsWhenDropped).then(|| Bomb);
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
            // A refused closure that panics when dropped panics out of `try_schedule` (`None`).
            caught(|| timer.try_schedule(delay, task))
        };
        let (now, tick) = (clock.now(), timer.tick());
        let deadline = now.checked_add(delay);
        let task = Task {
            panics,
            shuts_down: in_task.is_some(),
            deadline: deadline.unwrap_or_default(),
            due: deadline.map_or(Duration::ZERO, |_| due_tick(now, delay, tick)),
            reported: deadline.map_or(Duration::ZERO, |_| reported(now, delay, tick)),
            expect: Expect::Pending,
            handle: None,
            probe,
        };
        self.record(tasks, result, task, Some(delay))
    }
}

/// Runs every other task a shutdown at `step` handed back (from the first or the second, by the
/// step) and drops the others one by one. Each run must be of one task the model holds pending: a
/// task, which records its run (once, its bytes intact: the checks after every step), or a link
/// of a chain, which counts it. The drops are checked by the probes of the sized closures.
pub(super) fn hand_back(
    unfired: Vec<UnfiredTask>,
    step: usize,
    (fired, in_task): (&Log, &InTask),
    tasks: &mut [Task],
    chains: &mut [Chain],
) -> Result<(), String> {
    for (i, task) in unfired.into_iter().enumerate() {
        if (i + step) % 2 == 1 {
            drop_each(vec![task]);
            continue;
        }
        let logged = fired.lock().unwrap().len();
        let links: Vec<usize> = chains.iter().map(|c| c.runs.load(Ordering::SeqCst)).collect();
        run_unfired(task);
        // A task that shuts the timer down finds it shut down: nothing to hand back.
        let again = in_task.lock().unwrap().take();
        ensure!(
            again.as_ref().map_or(true, Vec::is_empty),
            "step {step}: a shutdown inside an unfired task run after the shutdown handed back {again:?}"
        );
        let ran: Vec<usize> = fired.lock().unwrap()[logged..].iter().map(|&(id, _)| id).collect();
        let moved = |c: &usize| chains[*c].runs.load(Ordering::SeqCst) != links[*c];
        let linked: Vec<usize> = (0..chains.len()).filter(moved).collect();
        match (ran.as_slice(), linked.as_slice()) {
            (&[id], []) => {
                ensure!(
                    tasks[id].expect == Expect::Pending,
                    "step {step}: ran unfired {id} ({:?})",
                    tasks[id].expect
                );
                tasks[id].expect = Expect::RanUnfired;
            }
            ([], &[c]) => {
                ensure!(chains[c].left > 0, "step {step}: ran an unfired link of chain {c}, which had none");
                (chains[c].ran, chains[c].left) = (chains[c].ran + 1, 0);
            }
            _ => {
                return Err(format!(
                    "step {step}: an unfired task ran tasks {ran:?}, links of chains {linked:?}"
                ))
            }
        }
    }
    Ok(())
}
