//! What the timer and a handle report about pending tasks at the edges the reference model does not
//! reach: `next_wakeup` over random operations, a task waiting for an executor thread, instants
//! before the clock's origin, and resets and cancels racing the firing on executor threads.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use common::{ms, Counter, SplitMix};
use delaywheel::{ManualClock, TaskExecution, Timer, TimerHandle};

/// A task of [`next_wakeup_random_run`]: its handle, the instant of the tick it is due at, and
/// whether it ran.
struct Tracked {
    handle: TimerHandle,
    due: Instant,
    ran: Arc<AtomicBool>,
}

/// Random schedules, cancels, resets (by delay and by instant) and clock moves, with and without an
/// advance, on one manual timer; after every step `len()` is the tasks neither run nor cancelled,
/// and `next_wakeup()` is `None` exactly when none is pending and otherwise never later than the
/// tick the earliest of them is due at (or now, for one due already).
fn next_wakeup_random_run(seed: u64) {
    let mut rng = SplitMix(seed);
    let tick_nanos = [1_000, 1_500, 7_777, 1_000_000, 3_000_000_000][rng.range(0, 5) as usize];
    let wheel = [2usize, 3, 8, 20, 64][rng.range(0, 5) as usize];
    let clock = ManualClock::new();
    let timer = Timer::builder()
        .tick(Duration::from_nanos(tick_nanos))
        .wheel_size(wheel)
        .clock(clock.clone())
        .manual()
        .build();
    let base = timer.now();
    // The tick a task set at `now` for `now + delay` is due at: the first boundary at or after its
    // deadline, or for a zero delay (passed) the advance it comes to.
    let due_at = |now: Instant, delay: Duration| -> Instant {
        if delay.is_zero() {
            return now;
        }
        let ticks = (now + delay - base).as_nanos().div_ceil(u128::from(tick_nanos));
        base + Duration::from_nanos((ticks * u128::from(tick_nanos)) as u64)
    };
    let mut tasks: Vec<Tracked> = Vec::new();
    for step in 0..300 {
        let now = timer.now();
        let span = tick_nanos * (wheel as u64).pow(rng.range(0, 4) as u32) * 3;
        let delay = Duration::from_nanos(rng.range(0, span));
        match rng.range(0, 10) {
            0..=3 => {
                let ran = Arc::new(AtomicBool::new(false));
                let r = Arc::clone(&ran);
                let handle = timer.schedule(delay, move || r.store(true, Ordering::SeqCst));
                tasks.push(Tracked { handle, due: due_at(now, delay), ran });
            }
            4 if !tasks.is_empty() => {
                let i = rng.range(0, tasks.len() as u64) as usize;
                tasks[i].handle.cancel();
            }
            5 | 6 if !tasks.is_empty() => {
                let i = rng.range(0, tasks.len() as u64) as usize;
                let task = &mut tasks[i];
                let moved = match rng.range(0, 2) {
                    0 => task.handle.reset(delay),
                    _ => task.handle.reset_at(now + delay),
                };
                assert_eq!(
                    moved,
                    task.handle.is_pending(),
                    "seed {seed} step {step}: reset of a pending task"
                );
                if moved {
                    task.due = due_at(now, delay);
                }
            }
            7 => clock.advance(delay),
            _ => {
                clock.advance(delay);
                timer.advance_clock(Duration::ZERO);
            }
        }
        let pending: Vec<&Tracked> =
            tasks.iter().filter(|t| t.handle.is_pending() && !t.ran.load(Ordering::SeqCst)).collect();
        assert_eq!(timer.len(), pending.len(), "seed {seed} step {step}: len");
        let earliest = pending.iter().map(|t| t.due).min();
        match (timer.next_wakeup(), earliest) {
            (None, None) => {}
            (Some(next), Some(earliest)) => assert!(
                next <= earliest.max(timer.now()),
                "seed {seed} step {step} (tick {tick_nanos} ns, wheel {wheel}): next_wakeup {:?} after the \
                 earliest due tick {:?}",
                next - base,
                earliest - base
            ),
            (next, earliest) => {
                panic!("seed {seed} step {step}: next_wakeup {next:?}, earliest pending {earliest:?}")
            }
        }
    }
}

#[test]
fn next_wakeup_is_never_later_than_the_earliest_pending_tick() {
    for seed in 0..400 {
        next_wakeup_random_run(seed);
    }
}

/// Two tasks of one tick handed to a single executor thread, the first blocking it, and a third
/// due an hour later: the second waits in the executor's queue, still pending. Its `reset` is
/// refused (it is being fired), its `cancel` wins and it never runs, and `next_wakeup` points at
/// the work the clock still has (the hour-away task), not at the task the executor holds.
#[test]
fn a_task_waiting_for_an_executor_is_pending_and_cancellable_but_not_movable() {
    let clock = ManualClock::new();
    let timer = Timer::builder()
        .tick(ms(1))
        .clock(clock.clone())
        .manual()
        .execution(TaskExecution::Threads(1))
        .build();
    let (started, release) = (mpsc::channel(), mpsc::channel::<()>());
    let (started_tx, release_rx) = (started.0, Mutex::new(release.1));
    timer.schedule(ms(1), move || {
        started_tx.send(()).unwrap();
        release_rx.lock().unwrap().recv().unwrap();
    });
    let queued_ran = Counter::default();
    let queued = timer.schedule(ms(1), queued_ran.task());
    let later = timer.schedule(Duration::from_secs(3600), || {});
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    started.1.recv_timeout(Duration::from_secs(20)).unwrap();
    assert!(queued.is_pending() && !queued.is_fired());
    assert_eq!(timer.len(), 2, "the queued task and the hour-away one");
    assert!(!queued.reset(ms(50)), "being fired: not movable");
    assert!(timer.next_wakeup().unwrap() <= later.deadline().unwrap());
    assert!(timer.next_wakeup().unwrap() > timer.now(), "the queued task needs no advance");
    assert!(queued.cancel());
    assert!(queued.is_cancelled() && !queued.is_pending());
    release.0.send(()).unwrap();
    let unfired = timer.shutdown(); // joins the executor thread: the queued entry has come out
    assert_eq!((queued_ran.get(), unfired.len()), (0, 1));
    assert_eq!((timer.stats().fired, timer.stats().cancelled), (1, 1));
}

/// An instant before the clock's origin has passed, however far: it runs at the next advance, and
/// reads back as given from the handle (as the origin from a shutdown, whose deadlines are
/// `Duration`s since it), by `schedule_at` and `reset_at`.
#[test]
fn instants_before_the_clocks_origin_run_at_the_next_advance_and_read_back_as_given() {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(ms(1)).clock(clock.clone()).manual().build();
    let origin = timer.now();
    clock.advance(Duration::from_micros(2_500));
    let ran = Counter::default();
    for before in [Duration::from_nanos(1), Duration::from_secs(3600)] {
        let at = origin - before;
        let scheduled = timer.schedule_at(at, ran.task());
        let moved = timer.schedule(Duration::from_secs(60), ran.task());
        assert!(moved.reset_at(at));
        assert_eq!((scheduled.deadline(), moved.deadline()), (Some(at), Some(at)));
    }
    let kept = timer.schedule_at(origin - ms(5), ran.task());
    assert_eq!(timer.shutdown().iter().map(|t| t.deadline()).collect::<Vec<_>>(), [Duration::ZERO; 5]);
    assert!(!kept.is_pending());

    let timer = Timer::builder().tick(ms(1)).clock(clock.clone()).manual().build();
    timer.schedule_at(origin - Duration::from_secs(1), ran.task());
    timer.advance_clock(Duration::ZERO);
    assert_eq!(ran.get(), 1, "due at once, mid-tick");
}

/// Three threads schedule, reset and cancel while one advances a manual clock in random steps
/// and two executor threads run what it fires: every task not cancelled runs once, never before
/// the deadline its last `true` reset set (or its schedule), and a cancelled one never runs.
fn resets_racing_executor_firing(seed: u64) {
    const PER_THREAD: usize = 400;
    let clock = ManualClock::new();
    let builder = Timer::builder().tick(Duration::from_micros(100)).wheel_size([2, 4, 64][seed as usize % 3]);
    let timer = Arc::new(builder.clock(clock.clone()).manual().execution(TaskExecution::Threads(2)).build());
    let fired_at: Arc<Vec<AtomicU64>> = Arc::new((0..3 * PER_THREAD).map(|_| AtomicU64::new(0)).collect());
    let runs: Arc<Vec<AtomicUsize>> = Arc::new((0..3 * PER_THREAD).map(|_| AtomicUsize::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let advancer = {
        let (timer, clock, stop) = (Arc::clone(&timer), clock.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut rng = SplitMix(seed ^ 0xabc);
            while !stop.load(Ordering::SeqCst) {
                clock.advance(Duration::from_micros(rng.range(0, 300)));
                timer.advance_clock(Duration::ZERO);
                std::thread::yield_now();
            }
        })
    };
    let threads: Vec<_> = (0..3)
        .map(|t| {
            let (timer, clock) = (Arc::clone(&timer), clock.clone());
            let (fired_at, runs) = (Arc::clone(&fired_at), Arc::clone(&runs));
            std::thread::spawn(move || {
                let mut rng = SplitMix(seed * 7 + t as u64);
                // Per task: its handle, the earliest clock reading it may run at, cancelled.
                let mut mine: Vec<(usize, TimerHandle, u64, bool)> = Vec::new();
                for i in 0..PER_THREAD {
                    let id = t * PER_THREAD + i;
                    let delay = rng.range(0, 20_000_000);
                    let now = clock.now().as_nanos() as u64;
                    let (fired_at, runs, c) = (Arc::clone(&fired_at), Arc::clone(&runs), clock.clone());
                    let handle = timer.schedule(Duration::from_nanos(delay), move || {
                        runs[id].fetch_add(1, Ordering::SeqCst);
                        fired_at[id].store(c.now().as_nanos() as u64, Ordering::SeqCst);
                    });
                    mine.push((id, handle, now + delay, false));
                    for _ in 0..2 {
                        let k = rng.range(0, mine.len() as u64) as usize;
                        let delay = rng.range(0, 20_000_000);
                        let now = clock.now().as_nanos() as u64;
                        let task = &mut mine[k];
                        if rng.range(0, 4) == 0 {
                            task.3 |= task.1.cancel();
                        } else if task.1.reset(Duration::from_nanos(delay)) {
                            assert!(!task.3, "a reset moved a cancelled task");
                            task.2 = now + delay;
                        }
                    }
                }
                mine.into_iter()
                    .map(|(id, _, earliest, cancelled)| (id, earliest, cancelled))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let tasks: Vec<_> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    let give_up = Instant::now() + Duration::from_secs(30);
    let expected = tasks.iter().filter(|t| !t.2).count();
    while runs.iter().filter(|r| r.load(Ordering::SeqCst) > 0).count() < expected || !timer.is_empty() {
        assert!(Instant::now() < give_up, "seed {seed}: tasks left unrun, len {}", timer.len());
        std::thread::sleep(ms(2));
    }
    stop.store(true, Ordering::SeqCst);
    advancer.join().unwrap();
    drop(Arc::try_unwrap(timer).ok().map(|timer| timer.shutdown())); // joins the executors
    for (id, earliest, cancelled) in tasks {
        let (runs, at) = (runs[id].load(Ordering::SeqCst), fired_at[id].load(Ordering::SeqCst));
        assert_eq!(
            runs,
            usize::from(!cancelled),
            "seed {seed}: task {id} (cancelled: {cancelled}) ran {runs} times"
        );
        assert!(cancelled || at >= earliest, "seed {seed}: task {id} ran at {at}, before {earliest}");
    }
}

#[test]
fn resets_and_cancels_racing_executor_firing_keep_exactly_once_and_never_early() {
    for seed in 1..=8 {
        resets_racing_executor_firing(seed);
    }
}
