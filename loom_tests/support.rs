//! What the models share: a small manual timer and a delay queue on one, the usual start (one task, the clock moved), steps
//! of the clock, and task closures that count their runs and drops.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use delaywheel::queue::DelayQueue;
use delaywheel::{ManualClock, Timer, TimerHandle};
use loom::sync::Arc;

/// The tick of every model's timer.
pub const TICK: Duration = Duration::from_millis(1);

/// `n` ticks.
pub fn ticks(n: u32) -> Duration {
    TICK * n
}

/// A delay queue on a manual timer (wheel size 2) on a fresh clock, shareable between model
/// threads.
pub fn manual_queue<T: Send + 'static>() -> (ManualClock, Arc<DelayQueue<T>>) {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(TICK).wheel_size(2).clock(clock.clone()).manual().build();
    (clock, Arc::new(DelayQueue::with_timer(timer)))
}

/// A manual timer of `wheel_size` slots per level on a fresh manual clock (both at time zero),
/// shareable between model threads. Its `Arc` is loom's, so a leaked timer fails the model.
pub fn manual_timer(wheel_size: usize) -> (ManualClock, Arc<Timer>) {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(TICK).wheel_size(wheel_size).clock(clock.clone()).manual().build();
    (clock, Arc::new(timer))
}

/// The start of most models: a manual timer of `wheel_size` slots with one task, due `due` ticks
/// out and counted by `runs`, and then the clock moved to tick `clock_at` (the wheel's cursor stays
/// at zero until the next advance).
pub struct OneTask {
    pub clock: ManualClock,
    pub timer: Arc<Timer>,
    pub handle: TimerHandle,
    pub runs: Runs,
}

impl OneTask {
    pub fn new(wheel_size: usize, due: u32, clock_at: u32) -> OneTask {
        let (clock, timer) = manual_timer(wheel_size);
        let runs = Runs::default();
        let handle = timer.schedule(ticks(due), runs.task());
        clock.advance(ticks(clock_at));
        OneTask { clock, timer, handle, runs }
    }

    /// Moves the clock `n` ticks on and advances the timer, on the calling thread.
    pub fn step(&self, n: u32) {
        step(&self.clock, &self.timer, n);
    }
}

/// Moves `clock` `n` ticks on and advances `timer`, on the calling thread.
pub fn step(clock: &ManualClock, timer: &Timer, n: u32) {
    clock.advance(ticks(n));
    timer.advance_clock(Duration::ZERO);
}

/// Advances `timer` to its clock's time on a new model thread.
pub fn spawn_advance(timer: &Arc<Timer>) -> loom::thread::JoinHandle<bool> {
    let timer = Arc::clone(timer);
    loom::thread::spawn(move || timer.advance_clock(Duration::ZERO))
}

/// On a new model thread: advances `timer` (firing what is due, which frees its slot), then
/// schedules `task` one tick out, into the shard of that thread's index (the freed slot's shard
/// where the timer has one).
pub fn spawn_advance_then_reuse(
    timer: &Arc<Timer>,
    task: impl FnOnce() + Send + 'static,
) -> loom::thread::JoinHandle<TimerHandle> {
    let timer = Arc::clone(timer);
    loom::thread::spawn(move || {
        timer.advance_clock(Duration::ZERO);
        timer.schedule(ticks(1), task)
    })
}

/// Counts how often its tasks ran.
///
/// A plain std atomic on purpose: it is only an observation, read after the model threads are
/// joined, and keeping it out of loom's sight keeps the state space to the timer's own accesses
/// (loom runs every model thread on one OS thread, so no ordering is lost).
#[derive(Clone, Default)]
pub struct Runs(std::sync::Arc<AtomicUsize>);

impl Runs {
    /// A task that records one run.
    pub fn task(&self) -> impl FnOnce() + Send + 'static {
        let runs = self.clone();
        move || {
            runs.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// How many times a task of this counter ran.
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// Counts how many closures it guards were dropped (run or not). Observation only, like [`Runs`].
#[derive(Clone, Default)]
pub struct Drops(std::sync::Arc<AtomicUsize>);

impl Drops {
    /// `task`, carrying a guard that counts one drop when the closure is dropped or has run.
    pub fn guarding(&self, task: impl FnOnce() + Send + 'static) -> impl FnOnce() + Send + 'static {
        let guard = DropGuard(self.clone());
        move || {
            let _guard = guard;
            task();
        }
    }

    /// How many guarded closures were dropped.
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

struct DropGuard(Drops);

impl Drop for DropGuard {
    fn drop(&mut self) {
        (self.0).0.fetch_add(1, Ordering::SeqCst);
    }
}
