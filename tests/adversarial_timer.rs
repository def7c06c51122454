//! The timer as a demanding user drives it: many short-lived threads each scheduling and
//! cancelling on several timers in turn, a timer dropped while other threads still hold its
//! handles, shrinks racing schedules, and out-of-range input on tiny wheels.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::{manual_timer, ms, SplitMix, Tally, Token};
use delaywheel::{ScheduleError, Timer, TimerHandle};

fn task(tally: &Arc<Tally>) -> impl FnOnce() + Send + 'static {
    let token = Token(Arc::clone(tally));
    move || {
        token.0.runs.fetch_add(1, Ordering::SeqCst);
    }
}

fn wait_until(mut done: impl FnMut() -> bool) -> bool {
    let give_up = Instant::now() + Duration::from_secs(5);
    while !done() {
        if Instant::now() > give_up {
            return false;
        }
        thread::sleep(ms(1));
    }
    true
}

/// Waves of short-lived threads, each scheduling on three driven timers in turn and cancelling
/// some of its tasks (also tasks another thread scheduled), one timer dropped half-way while
/// threads still hold its handles: every closure is dropped exactly once, each task runs at most
/// once and a winning cancel means it never ran, the live timers end empty, and a dropped timer's
/// handles answer `false` without harm.
#[test]
fn short_lived_threads_alternating_between_timers_leave_nothing_behind() {
    let tally = Arc::new(Tally::default());
    let scheduled = Arc::new(AtomicUsize::new(0));
    let cancelled = Arc::new(AtomicUsize::new(0));
    let mut timers: Vec<Option<Arc<Timer>>> =
        (0..3).map(|_| Some(Arc::new(Timer::builder().tick(ms(1)).wheel_size(4).build()))).collect();
    let mut survivors: Vec<TimerHandle> = Vec::new();
    for wave in 0..30 {
        if wave == 15 {
            // Dropped while the handles of its pending tasks live on in `survivors`.
            timers[1] = None;
        }
        let live: Vec<Arc<Timer>> = timers.iter().flatten().cloned().collect();
        let handles: Vec<Vec<TimerHandle>> = (0..4)
            .map(|t| {
                let (live, tally, scheduled, cancelled) =
                    (live.clone(), Arc::clone(&tally), Arc::clone(&scheduled), Arc::clone(&cancelled));
                thread::spawn(move || {
                    let mut rng = SplitMix((wave * 4 + t) as u64 + 1);
                    let mut mine = Vec::new();
                    for i in 0..300 {
                        let timer = &live[i % live.len()];
                        let delay = Duration::from_micros(rng.range(0, 4_000));
                        let delay = if i % 50 == 0 { Duration::from_secs(3_600) } else { delay };
                        mine.push(timer.schedule(delay, task(&tally)));
                        scheduled.fetch_add(1, Ordering::SeqCst);
                        if rng.range(0, 2) == 0 {
                            let h = &mine[rng.range(0, mine.len() as u64) as usize];
                            if h.cancel() {
                                cancelled.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                    }
                    mine
                })
            })
            .map(|thread| thread.join().unwrap())
            .collect();
        // Another thread's handles: cancel some of them from here (a thread that never scheduled
        // on this timer), and keep the hour-long ones for later.
        for handle in handles.into_iter().flatten() {
            if handle.is_pending() && handle.deadline().is_some_and(|d| d > Instant::now() + ms(60_000)) {
                survivors.push(handle);
            }
        }
    }
    // A handle of the dropped timer: harmless, and reports the task as gone.
    let dead = survivors.iter().filter(|h| !h.is_pending()).count();
    assert!(dead > 0, "the dropped timer's hour-long tasks were abandoned");
    for handle in &survivors {
        if handle.cancel() {
            cancelled.fetch_add(1, Ordering::SeqCst);
        }
        assert!(!handle.is_pending() && !handle.cancel() && !handle.reset(ms(1)));
    }
    let live: Vec<Arc<Timer>> = timers.iter().flatten().cloned().collect();
    assert!(
        wait_until(|| live.iter().all(|t| t.is_empty())),
        "len {:?}",
        live.iter().map(|t| t.len()).collect::<Vec<_>>()
    );
    let (runs, cancelled, scheduled) = (
        tally.runs.load(Ordering::SeqCst),
        cancelled.load(Ordering::SeqCst),
        scheduled.load(Ordering::SeqCst),
    );
    assert!(runs + cancelled <= scheduled, "{runs} runs + {cancelled} cancels > {scheduled}");
    for timer in &live {
        let stats = timer.stats();
        assert_eq!(stats.scheduled, stats.fired + stats.cancelled, "{stats:?}");
    }
    drop((live, timers, survivors));
    assert!(wait_until(|| tally.drops.load(Ordering::SeqCst) == scheduled), "closures leaked");
    assert_eq!(tally.drops.load(Ordering::SeqCst), scheduled);
}

/// Resident pages of this process (`/proc/self/statm`), 0 where there is none.
fn resident_pages() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0)
}

/// Round after round of new threads, each scheduling and cancelling on two timers alternately:
/// the timers' slots stay few (the threads' slot caches go back as they exit) and memory flat.
/// New threads add to new lanes of the buckets, created on first use, until every lane of every
/// bucket in use exists: the lanes are set to 8, so that this ceiling (about 1.5 MiB per level in
/// use) does not depend on the host's cores.
#[test]
fn thread_churn_over_two_timers_keeps_memory_flat() {
    let timers = [Timer::builder().bucket_lanes(8).build(), Timer::builder().bucket_lanes(8).build()];
    let round = |seed: u64| {
        thread::scope(|s| {
            for t in 0..2 {
                let timers = &timers;
                s.spawn(move || {
                    let mut rng = SplitMix(seed * 2 + t);
                    for i in 0..2_000 {
                        let handle = timers[i % 2].schedule(ms(rng.range(100, 10_000)), || {});
                        assert!(handle.cancel());
                    }
                });
            }
        });
    };
    for seed in 0..50 {
        round(seed);
    }
    let before = resident_pages();
    for seed in 50..400 {
        round(seed);
    }
    let grown = resident_pages().saturating_sub(before) * 4096;
    assert!(grown < 4 << 20, "resident memory grew by {grown} bytes over 350 rounds of thread churn");
    for timer in &timers {
        assert!(timer.is_empty());
        let stats = timer.stats();
        assert_eq!((stats.scheduled, stats.cancelled, stats.fired), (800_000, 800_000, 0));
    }
}

/// A spike cancelled, then shrinks on one thread while others schedule, cancel and fire on the
/// driven timer: the spike's handles stay safe, every task runs exactly once or is cancelled.
#[test]
fn shrinks_racing_schedules_cancels_and_firings_lose_nothing() {
    let timer = Timer::builder().tick(ms(1)).build();
    let tally = Arc::new(Tally::default());
    let spike: Vec<TimerHandle> =
        (0..200_000).map(|_| timer.schedule(Duration::from_secs(60), task(&tally))).collect();
    let cancelled = AtomicUsize::new(0);
    let scheduled = AtomicUsize::new(spike.len());
    thread::scope(|s| {
        let (timer, spike, tally, cancelled, scheduled) = (&timer, &spike, &tally, &cancelled, &scheduled);
        s.spawn(move || {
            for chunk in spike.chunks(10_000) {
                chunk.iter().for_each(|h| assert!(h.cancel()));
                cancelled.fetch_add(chunk.len(), Ordering::SeqCst);
                timer.shrink();
            }
            for _ in 0..20 {
                timer.shrink();
                assert!(spike.iter().step_by(97).all(|h| !h.is_pending() && !h.cancel() && !h.reset(ms(1))));
            }
        });
        for t in 0..2 {
            s.spawn(move || {
                let mut rng = SplitMix(t + 7);
                for i in 0..30_000 {
                    let handle = timer.schedule(Duration::from_micros(rng.range(0, 3_000)), task(tally));
                    scheduled.fetch_add(1, Ordering::SeqCst);
                    if i % 3 == 0 && handle.cancel() {
                        cancelled.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
        }
    });
    assert!(wait_until(|| timer.is_empty()), "len {}", timer.len());
    let (scheduled, cancelled) = (scheduled.load(Ordering::SeqCst), cancelled.load(Ordering::SeqCst));
    assert!(wait_until(|| tally.runs.load(Ordering::SeqCst) + cancelled == scheduled));
    assert_eq!(tally.drops.load(Ordering::SeqCst), scheduled, "each closure dropped once");
    let stats = timer.stats();
    assert_eq!((stats.scheduled as usize, stats.cancelled as usize), (scheduled, cancelled));
}

/// A tiny wheel (2 slots, 1 µs tick) and out-of-range input: zero and huge delays, instants far in
/// the past and beyond the range, `max_pending` exhausted through every `try_` form. Clear errors,
/// nothing lost, every task fires at its tick.
#[test]
fn a_tiny_wheel_takes_bad_input_with_clear_errors_and_loses_nothing() {
    let clock = delaywheel::ManualClock::new();
    let timer = Timer::builder()
        .tick(Duration::from_micros(1))
        .wheel_size(2)
        .max_pending(3)
        .clock(clock.clone())
        .manual()
        .build();
    let tally = Arc::new(Tally::default());
    let now = timer.now();
    let past = now.checked_sub(Duration::from_secs(3_600 * 24 * 365)).unwrap_or(now);
    let a = timer.try_schedule(Duration::ZERO, task(&tally)).unwrap();
    let b = timer.try_schedule_at(past, task(&tally)).unwrap();
    let c = timer.try_schedule(Duration::from_secs(3_600), task(&tally)).unwrap();
    assert_eq!(
        timer.try_schedule(ms(1), task(&tally)).unwrap_err(),
        ScheduleError::TooManyPending { max: 3 }
    );
    assert_eq!(
        timer.try_schedule_at(now, task(&tally)).unwrap_err(),
        ScheduleError::TooManyPending { max: 3 }
    );
    assert_eq!(tally.drops.load(Ordering::SeqCst), 2, "refused closures are dropped");
    assert!(c.reset(Duration::from_micros(5)), "a reset needs no room");
    assert!(!c.reset(Duration::MAX));
    timer.advance_clock(Duration::ZERO);
    assert!(a.is_fired() && b.is_fired() && c.is_pending());
    // The range ends a second (`max_delay`'s slack) past `max_delay`.
    let reach = timer.max_delay() + Duration::from_secs(1);
    for delay in [Duration::MAX, reach + Duration::from_micros(1)] {
        assert!(matches!(timer.try_schedule(delay, || {}), Err(ScheduleError::DelayTooLong { .. })));
    }
    if let Some(beyond) = now.checked_add(reach + Duration::from_secs(1)) {
        assert!(matches!(timer.try_schedule_at(beyond, || {}), Err(ScheduleError::DelayTooLong { .. })));
    }
    // The longest delay accepted is served, many levels up a 2-slot wheel.
    let far = timer.try_schedule(timer.max_delay(), task(&tally)).unwrap();
    assert!(far.deadline().is_none() || far.is_pending());
    clock.advance(Duration::from_micros(4));
    timer.advance_clock(Duration::ZERO);
    assert!(c.is_pending(), "early");
    clock.advance(Duration::from_micros(1));
    timer.advance_clock(Duration::ZERO);
    assert!(c.is_fired());
    assert_eq!(timer.len(), 1);
    assert!(far.cancel());
    assert_eq!(tally.runs.load(Ordering::SeqCst), 3);
    assert_eq!(tally.drops.load(Ordering::SeqCst), 6);
    assert!(timer.is_empty());
}

/// A manual clock moved by the largest amounts: the advance does bounded work, fires what is due
/// exactly once and panics on nothing.
#[test]
fn clock_jumps_to_the_end_of_time_fire_everything_due_once() {
    let (clock, timer) = manual_timer(Duration::from_micros(1), 2);
    let tally = Arc::new(Tally::default());
    let mut rng = SplitMix(3);
    for _ in 0..1_000 {
        timer.schedule(Duration::from_nanos(rng.range(0, 1 << 40)), task(&tally));
    }
    clock.advance(Duration::MAX);
    let started = Instant::now();
    while timer.advance_clock(Duration::ZERO) {}
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert_eq!(tally.runs.load(Ordering::SeqCst), 1_000);
    assert!(timer.is_empty());
    // At the end of the clock nothing more is due, and a new delay is refused or served.
    match timer.try_schedule(ms(1), task(&tally)) {
        Ok(handle) => assert!(handle.cancel()),
        Err(error) => assert!(matches!(error, ScheduleError::DelayTooLong { .. }), "{error:?}"),
    }
    timer.schedule(Duration::ZERO, task(&tally));
    while timer.advance_clock(Duration::ZERO) {}
    assert_eq!(tally.runs.load(Ordering::SeqCst), 1_001);
    assert_eq!(tally.drops.load(Ordering::SeqCst), 1_002);
}
