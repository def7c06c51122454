//! Resets (later, earlier, to a passed instant) from each task's owner thread, cancels from every
//! thread, stale handles of ended tasks, `shrink()` in a loop and, in some rounds, a shutdown, all
//! racing a driven timer on a real clock: each task runs once or is dropped unrun once (by a
//! `true` cancel or by the shutdown's hand-back), never before the deadline of its last `true`
//! reset, every closure is dropped once, and a drained timer counts nothing pending.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::{watched, SplitMix};
use delaywheel::{TaskExecution, Timer, TimerHandle};

const TASKS: usize = 2_000;
const WORKERS: usize = 4;
const NEVER: u64 = u64::MAX;

/// What happened to each task, by id.
struct Tally {
    base: Instant,
    runs: Vec<AtomicUsize>,
    /// Closures dropped without running (cancelled, or handed back by a shutdown).
    unrun: Vec<AtomicUsize>,
    cancels: Vec<AtomicUsize>,
    /// Nanoseconds after `base` of the deadline the task must not run before (its schedule's, or
    /// its last `true` reset's), written by its owner only.
    due: Vec<AtomicU64>,
    /// Nanoseconds after `base` at which it started.
    ran_at: Vec<AtomicU64>,
}

impl Tally {
    fn new(base: Instant) -> Tally {
        let zeros = || (0..TASKS).map(|_| AtomicUsize::new(0)).collect();
        let nevers = || (0..TASKS).map(|_| AtomicU64::new(NEVER)).collect();
        Tally { base, runs: zeros(), unrun: zeros(), cancels: zeros(), due: nevers(), ran_at: nevers() }
    }

    fn nanos(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.base).as_nanos() as u64
    }

    fn settled(&self) -> bool {
        (0..TASKS).all(|id| self.runs[id].load(Ordering::SeqCst) + self.unrun[id].load(Ordering::SeqCst) == 1)
    }
}

/// A task's closure: records its run, and its drop unrun.
struct Probe {
    tally: Arc<Tally>,
    id: usize,
    ran: bool,
}

impl Drop for Probe {
    fn drop(&mut self) {
        if !self.ran {
            self.tally.unrun[self.id].fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn task(timer: &Arc<Timer>, tally: &Arc<Tally>, id: usize) -> impl FnOnce() + Send + 'static {
    let mut probe = Probe { tally: Arc::clone(tally), id, ran: false };
    let timer = Arc::downgrade(timer);
    move || {
        let now = timer.upgrade().map(|t| t.now()).unwrap_or_else(Instant::now);
        probe.ran = true;
        probe.tally.ran_at[id].store(probe.tally.nanos(now), Ordering::SeqCst);
        probe.tally.runs[id].fetch_add(1, Ordering::SeqCst);
    }
}

/// One worker: resets the tasks it owns (`id % WORKERS == me`), cancels any, and pokes the stale
/// handles of the last round, whose tasks have ended, until `stop`.
fn worker(
    me: usize,
    timer: &Timer,
    tally: &Tally,
    handles: &[TimerHandle],
    stale: &[TimerHandle],
    stop: &AtomicBool,
    seed: u64,
) {
    let mut rng = SplitMix(seed);
    while !stop.load(Ordering::Relaxed) {
        let id = rng.range(0, TASKS as u64) as usize;
        match rng.range(0, 10) {
            0..=4 => {
                let id = id - id % WORKERS + me;
                let Some(h) = handles.get(id) else { continue };
                let now = timer.now();
                // Later, earlier, or already passed (a reset to a passed instant fires by the
                // next advance).
                let to = match rng.range(0, 4) {
                    0 => now.checked_sub(Duration::from_micros(rng.range(0, 3_000))).unwrap_or(now),
                    1 => now + Duration::from_micros(rng.range(0, 2_000)),
                    _ => now + Duration::from_micros(rng.range(0, 40_000)),
                };
                // Recorded before the reset: a firing between the two, of an earlier deadline,
                // would otherwise read a later one. A `false` reset puts the old one back.
                let before = tally.due[id].swap(tally.nanos(to), Ordering::SeqCst);
                let moved = if rng.next() % 2 == 0 {
                    h.reset_at(to)
                } else {
                    h.reset(to.saturating_duration_since(now))
                };
                if !moved {
                    tally.due[id].store(before, Ordering::SeqCst);
                }
            }
            5 | 6 => {
                if handles[id].cancel() {
                    tally.cancels[id].fetch_add(1, Ordering::SeqCst);
                }
            }
            7 => {
                if let Some(h) = stale.get(id) {
                    assert!(!h.cancel(), "a stale handle cancelled a task");
                    assert!(!h.reset(Duration::from_secs(3600)), "a stale handle re-armed a task");
                    assert_eq!(h.deadline(), None, "a stale handle reads a deadline");
                }
            }
            _ => thread::yield_now(),
        }
    }
}

/// One round; the handles of its tasks (all ended) for the next round to poke.
fn round(seed: u64, stale: Vec<TimerHandle>) -> Vec<TimerHandle> {
    let mut rng = SplitMix(seed);
    let execution = if rng.next() % 2 == 0 { TaskExecution::OnDriver } else { TaskExecution::Threads(2) };
    let wheel_size = [2, 4, 8][rng.range(0, 3) as usize];
    let timer = Arc::new(
        Timer::builder()
            .tick(Duration::from_micros([1, 50, 1_000][rng.range(0, 3) as usize]))
            .bucket_lanes([2, 16][rng.range(0, 2) as usize])
            .wheel_size(wheel_size)
            .execution(execution)
            .build(),
    );
    let tally = Arc::new(Tally::new(timer.now()));
    let handles: Vec<TimerHandle> = (0..TASKS)
        .map(|id| {
            let at = timer.now() + Duration::from_micros(rng.range(0, 30_000));
            tally.due[id].store(tally.nanos(at), Ordering::SeqCst);
            timer.schedule_at(at, task(&timer, &tally, id))
        })
        .collect();
    let shut_down = rng.next() % 3 == 0;
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        for me in 0..WORKERS {
            let (timer, tally, handles, stale, stop) = (&*timer, &*tally, &handles[..], &stale[..], &stop);
            let seed = rng.next();
            s.spawn(move || worker(me, timer, tally, handles, stale, stop, seed));
        }
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                timer.shrink();
                thread::sleep(Duration::from_micros(300));
            }
        });
        thread::sleep(Duration::from_millis(rng.range(5, 40)));
        if shut_down {
            drop(timer.shutdown());
        }
        stop.store(true, Ordering::Relaxed);
    });
    // Quiescence: the last resets are at most 40 ms ahead.
    let until = Instant::now() + Duration::from_secs(5);
    while !tally.settled() && Instant::now() < until {
        thread::sleep(Duration::from_millis(1));
    }
    for id in 0..TASKS {
        let (runs, unrun) = (tally.runs[id].load(Ordering::SeqCst), tally.unrun[id].load(Ordering::SeqCst));
        let cancels = tally.cancels[id].load(Ordering::SeqCst);
        assert_eq!(runs + unrun, 1, "task {id} ran {runs} times, dropped unrun {unrun} times (seed {seed})");
        assert!(cancels <= unrun, "task {id}: {cancels} true cancels, dropped unrun {unrun} (seed {seed})");
        if runs == 1 {
            let (ran, due) = (tally.ran_at[id].load(Ordering::SeqCst), tally.due[id].load(Ordering::SeqCst));
            assert!(ran >= due, "task {id} ran {} ns early (seed {seed})", due - ran);
        }
    }
    if !shut_down {
        assert_eq!(timer.len(), 0, "nothing is pending once every task ended (seed {seed})");
    }
    for h in &handles {
        assert!(!h.cancel() && !h.reset(Duration::ZERO), "an ended task is not pending (seed {seed})");
    }
    handles
}

#[test]
fn resets_cancels_and_stale_handles_racing_shrinks_and_shutdowns_keep_every_promise() {
    watched("resets racing shrinks", || {
        let mut stale = Vec::new();
        for seed in 0..12 {
            stale = round(0xA5A5 + seed, stale);
        }
    });
}
