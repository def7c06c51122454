//! What `shutdown()` hands back, checked against a list of deadlines: every pending task once, in
//! deadline order with equal deadlines in scheduling order (a reset task by when it was first
//! scheduled), each `UnfiredTask::deadline` the reading its handle's `deadline()` gave (zero
//! before the clock's origin); after random schedules (by delay and by instant, sub-tick,
//! equal, passed mid-tick, before the origin), resets, cancels and advances on small wheels.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::SplitMix;
use delaywheel::{ManualClock, TaskExecution, Timer, TimerHandle};

/// One scheduled task: its handle, its scheduling sequence number, its deadline as a reading of
/// the clock (`None`: before the origin) and as the instant given.
struct Task {
    handle: TimerHandle,
    seq: usize,
    due: Option<Duration>,
    at: Instant,
}

/// Waits up to 10 s for `done`.
fn eventually(mut done: impl FnMut() -> bool) -> bool {
    (0..10_000).any(|_| {
        done() || {
            std::thread::sleep(Duration::from_millis(1));
            false
        }
    })
}

/// A timer after a random sequence of schedules (by delay and by instant, sub-tick, equal,
/// passed mid-tick, before the origin), resets, cancels and advances on a small wheel; every
/// reading and delay a multiple of `unit` (1 ns, or a 256th of the tick so that the firing's
/// rank within a tick is the exact instant; then, on the advancing thread, what each advance fires
/// is checked: none early, in deadline then scheduling order).
struct Run {
    clock: ManualClock,
    timer: Timer,
    origin: Instant,
    ran: Arc<Mutex<Vec<usize>>>,
    tasks: Vec<Task>,
}

fn random_run(seed: u64, ranks: bool, execution: TaskExecution) -> Run {
    let mut rng = SplitMix(seed);
    let tick_ns = rng.range(4, 20_000) * 256;
    let unit = if ranks { tick_ns / 256 } else { 1 };
    let tick = Duration::from_nanos(tick_ns);
    let wheel = rng.range(2, 10) as usize;
    let clock = ManualClock::new();
    let timer = Timer::builder()
        .tick(tick)
        .wheel_size(wheel)
        .clock(clock.clone())
        .execution(execution)
        .manual()
        .build();
    let origin = timer.now();
    let ran: Arc<Mutex<Vec<usize>>> = Arc::default();
    let mut tasks: Vec<Task> = Vec::new();
    let units = |rng: &mut SplitMix, lo: u64, hi_ticks: u64| {
        Duration::from_nanos(rng.range(lo, hi_ticks * 256) * unit)
    };
    // A few shared deadlines, so that ties are common.
    let shared: Vec<Duration> = (0..4).map(|_| units(&mut rng, 1, 40)).collect();
    for _ in 0..300 {
        let now = clock.now();
        match rng.range(0, 12) {
            0..=3 => {
                let seq = tasks.len();
                let r = Arc::clone(&ran);
                let task = move || r.lock().unwrap().push(seq);
                let (handle, due, at) = match rng.range(0, 5) {
                    0 => {
                        let d = units(&mut rng, 0, 60);
                        (timer.schedule(d, task), Some(now + d), origin + now + d)
                    }
                    1 => {
                        let at = shared[rng.range(0, 4) as usize].max(now);
                        (timer.schedule_at(origin + at, task), Some(at), origin + at)
                    }
                    2 => {
                        // Passed: within the tick under way, or earlier.
                        let back = units(&mut rng, 0, 3).min(now);
                        (
                            timer.schedule_at(origin + (now - back), task),
                            Some(now - back),
                            origin + now - back,
                        )
                    }
                    3 => match origin.checked_sub(Duration::from_millis(rng.range(1, 50))) {
                        Some(before) => (timer.schedule_at(before, task), None, before),
                        None => (timer.schedule(Duration::ZERO, task), Some(now), origin + now),
                    },
                    _ => {
                        let d = Duration::from_nanos(rng.range(0, 86) * unit);
                        (timer.schedule(d, task), Some(now + d), origin + now + d)
                    }
                };
                tasks.push(Task { handle, seq, due, at });
            }
            4 | 5 if !tasks.is_empty() => {
                let i = rng.range(0, tasks.len() as u64) as usize;
                let at = if rng.range(0, 2) == 0 {
                    shared[rng.range(0, 4) as usize].max(now)
                } else {
                    now + units(&mut rng, 0, 60)
                };
                if tasks[i].handle.reset_at(origin + at) {
                    tasks[i].due = Some(at);
                    tasks[i].at = origin + at;
                }
            }
            6 if !tasks.is_empty() => {
                let i = rng.range(0, tasks.len() as u64) as usize;
                tasks[i].handle.cancel();
            }
            _ => {
                clock.advance(units(&mut rng, 0, 2));
                let before = ran.lock().unwrap().len();
                timer.advance_clock(Duration::ZERO);
                if ranks && execution == TaskExecution::OnDriver {
                    // What one advance fires: none early, in deadline then scheduling order.
                    let now = origin + clock.now();
                    let batch: Vec<(Instant, usize)> =
                        ran.lock().unwrap()[before..].iter().map(|&seq| (tasks[seq].at, seq)).collect();
                    assert!(batch.iter().all(|&(at, _)| at <= now), "seed {seed}: early in {batch:?}");
                    assert!(batch.windows(2).all(|w| w[0] <= w[1]), "seed {seed}: order {batch:?}");
                }
            }
        }
    }
    Run { clock, timer, origin, ran, tasks }
}

impl Run {
    /// The pending tasks as (sequence number, deadline reading, instant), in the order they are
    /// due to fire; each handle's `deadline()` checked against the instant given.
    fn pending_in_order(&self, seed: u64) -> Vec<(usize, Duration, Instant)> {
        let mut pending: Vec<(usize, Duration, Instant)> = self
            .tasks
            .iter()
            .filter(|t| t.handle.is_pending())
            .map(|t| {
                let read = t.handle.deadline().expect("pending");
                assert_eq!(read, t.at, "seed {seed}: task {} reads its deadline back", t.seq);
                (t.seq, t.due.unwrap_or_default(), t.at)
            })
            .collect();
        assert_eq!(self.timer.len(), pending.len(), "seed {seed}");
        pending.sort_by_key(|&(seq, _, at)| (at, seq));
        pending
    }
}

#[test]
fn shutdown_hands_back_every_pending_task_in_deadline_then_scheduling_order() {
    for seed in 1..=60u64 {
        let run = random_run(seed, false, TaskExecution::OnDriver);
        let expected = run.pending_in_order(seed);
        let fired_before = run.ran.lock().unwrap().len();
        let unfired = run.timer.shutdown();
        let deadlines: Vec<Duration> = unfired.iter().map(|t| t.deadline()).collect();
        let want: Vec<Duration> = expected.iter().map(|&(_, due, _)| due).collect();
        assert_eq!(deadlines, want, "seed {seed}: deadlines of the unfired tasks");
        for task in unfired {
            task.run();
        }
        let order: Vec<usize> = run.ran.lock().unwrap()[fired_before..].to_vec();
        let want: Vec<usize> = expected.iter().map(|&(seq, _, _)| seq).collect();
        assert_eq!(order, want, "seed {seed}: order");
        let _ = run.origin;
    }
}

/// The same sequences with every instant on a 256th of the tick, then one jump past every
/// deadline: one advance fires every pending task in deadline order, equal deadlines in
/// scheduling order, on the advancing thread and on one executor thread.
#[test]
fn one_jump_fires_every_pending_task_in_deadline_then_scheduling_order() {
    for execution in [TaskExecution::OnDriver, TaskExecution::Threads(1)] {
        for seed in 1..=60u64 {
            let run = random_run(seed, true, execution);
            // Executor threads may still hold tasks the sequence's advances handed them: pending
            // (a cancel would still win) but in no bucket. Wait until they ran.
            let handed_over =
                || run.tasks.iter().any(|t| t.handle.is_pending() && t.handle.position().is_none());
            assert!(eventually(|| !handed_over()), "{execution:?} seed {seed}: the executor runs");
            let expected = run.pending_in_order(seed);
            let fired_before = run.ran.lock().unwrap().len();
            run.clock.advance(Duration::from_secs(3_600));
            run.timer.advance_clock(Duration::ZERO);
            let all = fired_before + expected.len();
            assert!(
                eventually(|| run.ran.lock().unwrap().len() == all),
                "{execution:?} seed {seed}: all fire"
            );
            let order: Vec<usize> = run.ran.lock().unwrap()[fired_before..].to_vec();
            let want: Vec<usize> = expected.iter().map(|&(seq, _, _)| seq).collect();
            assert_eq!(order, want, "{execution:?} seed {seed}: firing order");
        }
    }
}

/// The two cases the random sequences above found, pinned: one instant scheduled every 15 ms from
/// 0 to 75 ms (so the tasks sit in levels from coarse to fine), and instants before the clock's
/// origin scheduled latest first; the shutdown hands them back in the order they would fire in.
#[test]
fn equal_instants_across_levels_and_instants_before_the_origin_come_back_in_firing_order() {
    let clock = ManualClock::new();
    let timer =
        Timer::builder().tick(Duration::from_millis(1)).wheel_size(4).clock(clock.clone()).manual().build();
    let origin = timer.now();
    let ran: Arc<Mutex<Vec<usize>>> = Arc::default();
    let task = |id: usize| {
        let ran = Arc::clone(&ran);
        move || ran.lock().unwrap().push(id)
    };
    for id in 0..6 {
        timer.schedule_at(origin + Duration::from_millis(100), task(id));
        clock.advance(Duration::from_millis(15));
        timer.advance_clock(Duration::ZERO);
    }
    let before: Vec<Instant> =
        (1..=4).filter_map(|k| origin.checked_sub(Duration::from_millis(k * 10))).collect();
    for (k, &at) in before.iter().enumerate() {
        timer.schedule_at(at, task(10 + k));
    }
    let unfired = timer.shutdown();
    for t in unfired {
        t.run();
    }
    let mut want: Vec<usize> = (0..before.len()).rev().map(|k| 10 + k).collect();
    want.extend(0..6);
    assert_eq!(*ran.lock().unwrap(), want);
}
