//! On a manual clock: threads schedule, re-arm (earlier, later, to a passed instant) and cancel
//! their tasks while another advances the clock in random steps; then a simulation jumps the
//! clock from one `next_wakeup()` to the next. Each task runs once or is cancelled once, never
//! before the deadline of its last `true` reset; after a `true` reset, `next_wakeup()` is no later
//! than the new deadline's tick; and in the jumps every task fires by its deadline's tick: the
//! placements the racing resets left are all visited in time.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::{manual_timer, watched, SplitMix, Stop};
use delaywheel::{ManualClock, Timer, TimerHandle};

const THREADS: usize = 3;
const PER_THREAD: usize = 800;
const TASKS: usize = THREADS * PER_THREAD;
const TICK: u64 = 1_000_000;
const NEVER: u64 = u64::MAX;

struct Tally {
    base: Instant,
    runs: Vec<AtomicUsize>,
    cancels: Vec<AtomicUsize>,
    /// Nanoseconds on the manual clock: the deadline of the schedule or last `true` reset.
    due: Vec<AtomicU64>,
    ran_at: Vec<AtomicU64>,
}

impl Tally {
    fn nanos(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.base).as_nanos() as u64
    }

    fn ended(&self, id: usize) -> bool {
        self.runs[id].load(Ordering::SeqCst) + self.cancels[id].load(Ordering::SeqCst) > 0
    }
}

fn ceil_tick(nanos: u64) -> u64 {
    nanos.div_ceil(TICK) * TICK
}

fn task(tally: &Arc<Tally>, clock: &ManualClock, id: usize) -> impl FnOnce() + Send + 'static {
    let (tally, clock) = (Arc::clone(tally), clock.clone());
    move || {
        tally.ran_at[id].store(clock.now().as_nanos() as u64, Ordering::SeqCst);
        tally.runs[id].fetch_add(1, Ordering::SeqCst);
    }
}

/// Schedules, re-arms and cancels tasks of its own; once `stopped` (no advance runs any more),
/// checks `next_wakeup` after each `true` reset, and counts itself in `halfway` at half its work.
fn owner(
    me: usize,
    timer: &Timer,
    clock: &ManualClock,
    tally: &Arc<Tally>,
    seed: u64,
    halfway: &AtomicUsize,
    stopped: &AtomicBool,
) {
    let mut rng = SplitMix(seed);
    let mut handles: Vec<(usize, TimerHandle)> = Vec::new();
    for i in 0..PER_THREAD {
        if i == PER_THREAD / 2 {
            halfway.fetch_add(1, Ordering::SeqCst);
        }
        let id = me * PER_THREAD + i;
        let at = timer.now() + Duration::from_micros(rng.range(0, 120_000));
        tally.due[id].store(tally.nanos(at), Ordering::SeqCst);
        handles.push((id, timer.schedule_at(at, task(tally, clock, id))));
        for _ in 0..2 {
            let (id, h) = &handles[rng.range(0, handles.len() as u64) as usize];
            let now = timer.now();
            let to = match rng.range(0, 4) {
                0 => now.checked_sub(Duration::from_micros(rng.range(0, 3_000))).unwrap_or(now),
                1 => now + Duration::from_micros(rng.range(0, 2_000)),
                _ => now + Duration::from_micros(rng.range(0, 150_000)),
            };
            if rng.range(0, 12) == 0 {
                if h.cancel() {
                    tally.cancels[*id].fetch_add(1, Ordering::SeqCst);
                }
            } else if h.reset_at(to) {
                let due = tally.nanos(to);
                tally.due[*id].store(due, Ordering::SeqCst);
                // Only once no advance runs: one in progress has popped buckets that it has not
                // visited yet, which `next_wakeup` does not see.
                if !stopped.load(Ordering::SeqCst) {
                    continue;
                }
                let next = timer.next_wakeup().map(|n| tally.nanos(n));
                // A deadline passed is due now: the clock read after `next_wakeup` bounds it.
                let bound = ceil_tick(due).max(clock.now().as_nanos() as u64);
                // Still pending: only this thread cancels it, and nothing advances.
                assert!(next.is_some_and(|n| n <= bound), "next_wakeup {next:?} after a reset to {due}");
            }
        }
    }
}

fn round(seed: u64) {
    let mut rng = SplitMix(seed);
    let (clock, timer) = manual_timer(Duration::from_nanos(TICK), [2, 4, 8][rng.range(0, 3) as usize]);
    let nevers = || (0..TASKS).map(|_| AtomicU64::new(NEVER)).collect();
    let tally = Arc::new(Tally {
        base: timer.now(),
        runs: (0..TASKS).map(|_| AtomicUsize::new(0)).collect(),
        cancels: (0..TASKS).map(|_| AtomicUsize::new(0)).collect(),
        due: nevers(),
        ran_at: nevers(),
    });
    let (done, halfway, stopped) = (AtomicBool::new(false), AtomicUsize::new(0), AtomicBool::new(false));
    thread::scope(|s| {
        let stop = Stop(&done);
        let owners: Vec<_> = (0..THREADS)
            .map(|me| {
                let (timer, clock, tally, seed, halfway, stopped) =
                    (&timer, &clock, &tally, rng.next(), &halfway, &stopped);
                s.spawn(move || owner(me, timer, clock, tally, seed, halfway, stopped))
            })
            .collect();
        s.spawn(|| {
            let mut rng = SplitMix(seed ^ 1);
            while !done.load(Ordering::SeqCst) && halfway.load(Ordering::SeqCst) < THREADS {
                clock.advance(Duration::from_micros(rng.range(0, 700)));
                timer.advance_clock(Duration::ZERO);
                thread::yield_now();
            }
            stopped.store(true, Ordering::SeqCst);
        });
        let ends: Vec<_> = owners.into_iter().map(|o| o.join()).collect();
        drop(stop);
        ends.into_iter().for_each(|end| end.unwrap());
    });
    // The jumps: quiescent from here on.
    let start = clock.now().as_nanos() as u64;
    timer.advance_clock(Duration::ZERO);
    while let Some(next) = timer.next_wakeup() {
        let now = timer.now();
        if next > now {
            clock.advance(next - now);
        }
        timer.advance_clock(Duration::ZERO);
        let now = clock.now().as_nanos() as u64;
        for id in 0..TASKS {
            let due = tally.due[id].load(Ordering::SeqCst);
            assert!(
                tally.ended(id) || ceil_tick(due) > now,
                "task {id} due at {due} still pending at {now} (seed {seed})"
            );
        }
    }
    assert_eq!(timer.len(), 0, "seed {seed}");
    for id in 0..TASKS {
        let load = |v: &Vec<AtomicUsize>| v[id].load(Ordering::SeqCst);
        let (runs, cancels) = (load(&tally.runs), load(&tally.cancels));
        assert_eq!(runs + cancels, 1, "task {id}: ran {runs} times, cancelled {cancels} times (seed {seed})");
        if runs == 1 {
            let (ran, due) = (tally.ran_at[id].load(Ordering::SeqCst), tally.due[id].load(Ordering::SeqCst));
            assert!(ran >= due, "task {id} ran {} ns early (seed {seed})", due - ran);
            if ran > start {
                assert!(
                    ran <= ceil_tick(due).max(start),
                    "task {id} due at {due} ran at {ran} (seed {seed})"
                );
            }
        }
    }
}

#[test]
fn resets_racing_advances_leave_every_task_to_fire_by_its_tick_in_the_jumps() {
    watched("resets then jumps", || {
        for seed in 0..8 {
            round(0x3E3E + seed);
        }
    });
}
