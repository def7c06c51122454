//! The timer's contract pushed with the inputs a demanding user tries: odd ticks and wheel sizes,
//! far and past deadlines, the Kafka tick-driven configuration, schedules and handles outliving a
//! shutdown or the timer, panicking tasks and closures. Each case checks exact firing times on a
//! manual clock (never early, at most one tick late, exactly once) and that nothing is lost.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{ceil_to_tick, manual_timer, ms, Counter, FireLog, SplitMix};
use delaywheel::{BuildError, ManualClock, ScheduleError, Timer, TimerHandle};

/// Counts the drops of the closure that owns it.
struct Dropped(Arc<AtomicUsize>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn the_contract_names_have_the_contract_types() {
    assert_send_sync::<Timer>();
    assert_send_sync::<TimerHandle>();
    let clock = ManualClock::new();
    assert_eq!(clock.now(), Duration::ZERO, "a manual clock starts at zero");
    let timer = Timer::builder().tick(ms(1)).wheel_size(20).clock(clock.clone()).manual().build();
    // A closure that is Send but not Sync is a task.
    let cell = std::cell::Cell::new(1u32);
    let h: TimerHandle = timer.schedule(ms(5), move || cell.set(2));
    let pending: usize = timer.len();
    assert_eq!((pending, timer.is_empty()), (1, false));
    clock.advance(ms(5));
    let flushed: bool = timer.advance_clock(Duration::ZERO);
    assert!(flushed);
    assert!(!h.cancel(), "fired");
    assert!(!timer.advance_clock(Duration::ZERO), "nothing left to flush");
}

/// Steps `clock` by `step` until `until`, advancing after each step.
fn run_until(clock: &ManualClock, timer: &Timer, step: Duration, until: Duration) {
    while clock.now() < until {
        clock.advance(step.min(until - clock.now()));
        timer.advance_clock(Duration::ZERO);
    }
}

/// Every task fired once, at the first tick boundary at or after its deadline.
fn assert_on_time(log: &FireLog, deadlines: &[Duration], tick: Duration) {
    let mut runs = log.runs();
    runs.sort();
    assert_eq!(runs.len(), deadlines.len(), "each task fires exactly once");
    for (id, at) in runs {
        let due = deadlines[id];
        assert!(at >= due, "task {id} due {due:?} fired early at {at:?}");
        assert_eq!(at, ceil_to_tick(due, tick), "task {id} due {due:?} not at its tick");
    }
}

#[test]
fn odd_ticks_and_wheel_sizes_fire_every_task_on_its_tick() {
    let mut rng = SplitMix(0xC0FFEE);
    let ticks = [Duration::from_micros(1), Duration::from_micros(1_500), ms(7), Duration::from_nanos(3_333)];
    for &tick in &ticks {
        for &size in &[2usize, 3, 5, 7, 20, 60, 100, 1000] {
            let (clock, timer) = manual_timer(tick, size);
            let log = FireLog::default();
            let span = tick * 300;
            let deadlines: Vec<Duration> =
                (0..64).map(|_| Duration::from_nanos(rng.range(0, span.as_nanos() as u64))).collect();
            for (id, &d) in deadlines.iter().enumerate() {
                timer.schedule(d, log.task(id, &clock));
            }
            assert_eq!(timer.len(), deadlines.len());
            run_until(&clock, &timer, tick, span + tick);
            assert_on_time(&log, &deadlines, tick);
            assert!(timer.is_empty(), "tick {tick:?} size {size}");
        }
    }
}

#[test]
fn the_tick_driven_configuration_is_expressible_and_exact() {
    // 10 ms × 60 slots: levels of 600 ms, 36 s and 36 min.
    let tick = ms(10);
    let (clock, timer) = manual_timer(tick, 60);
    let log = FireLog::default();
    let deadlines = [ms(5), ms(599), ms(601), ms(35_999), ms(36_001), ms(2_159_995), ms(2_160_000)];
    for (id, &d) in deadlines.iter().enumerate() {
        timer.schedule(d, log.task(id, &clock));
    }
    // Jump through the idle stretches by next_wakeup, stepping finely only where work is due.
    while !timer.is_empty() {
        let next = timer.next_wakeup().unwrap();
        let now = timer.now();
        if next > now {
            clock.advance(next - now);
        }
        timer.advance_clock(Duration::ZERO);
    }
    assert_on_time(&log, &deadlines, tick);
}

#[test]
fn next_wakeup_is_never_later_than_the_earliest_tick() {
    let mut rng = SplitMix(7);
    let tick = Duration::from_micros(1_700);
    let (clock, timer) = manual_timer(tick, 7);
    let start = timer.now();
    let log = FireLog::default();
    let mut due = Vec::new();
    for id in 0..200 {
        let d = Duration::from_nanos(rng.range(0, 50_000_000_000));
        due.push((ceil_to_tick(d, tick), id));
        timer.schedule(d, log.task(id, &clock));
    }
    due.sort();
    due.dedup_by_key(|&mut (d, _)| d); // one check per tick: a jump fires all its tasks
    for &(d, id) in &due {
        let next = timer.next_wakeup().expect("pending");
        assert!(
            next <= start + d,
            "next_wakeup {:?} past the earliest tick {d:?} of task {id} (now {:?}, fired {:?})",
            next - start,
            clock.now(),
            log.runs().iter().find(|r| r.0 == id)
        );
        // Jump exactly to the tick of the earliest remaining task.
        let now = clock.now();
        if d > now {
            clock.advance(d - now);
        }
        timer.advance_clock(Duration::ZERO);
    }
    assert_eq!(timer.next_wakeup(), None);
}

#[test]
fn bad_configurations_are_refused_with_a_clear_error() {
    let refused = |b: delaywheel::TimerBuilder| b.manual().try_build().unwrap_err();
    assert!(matches!(refused(Timer::builder().tick(Duration::ZERO)), BuildError::TickTooShort(_)));
    assert!(matches!(refused(Timer::builder().tick(Duration::from_nanos(999))), BuildError::TickTooShort(_)));
    assert!(matches!(refused(Timer::builder().wheel_size(0)), BuildError::WheelSizeTooSmall(0)));
    assert!(matches!(refused(Timer::builder().wheel_size(1)), BuildError::WheelSizeTooSmall(1)));
    assert!(!refused(Timer::builder().wheel_size(1)).to_string().is_empty());
    let built = std::panic::catch_unwind(|| Timer::builder().tick(Duration::ZERO).manual().build());
    assert!(built.is_err(), "build panics on what try_build refuses, as documented");
    assert!(Timer::builder().tick(Duration::from_micros(1)).wheel_size(2).manual().try_build().is_ok());
}

#[test]
fn far_deadlines_are_refused_or_served_never_wrapped() {
    let (clock, timer) = manual_timer(ms(1), 2);
    let drops = Arc::new(AtomicUsize::new(0));
    let ran = Counter::default();
    for delay in [Duration::MAX, Duration::from_secs(u64::MAX / 2), Duration::new(u64::MAX, 999_999_999)] {
        let guard = Dropped(Arc::clone(&drops));
        let run = ran.task();
        let err = timer
            .try_schedule(delay, move || {
                let _g = guard;
                run()
            })
            .unwrap_err();
        assert!(matches!(err, ScheduleError::DelayTooLong { .. }), "{err:?}");
        let guard = Dropped(Arc::clone(&drops));
        let h = timer.schedule(delay, move || drop(guard));
        assert!(!h.cancel() && !h.is_pending() && h.deadline().is_none(), "an inert handle");
    }
    assert_eq!((drops.load(Ordering::SeqCst), timer.len()), (6, 0), "refused closures dropped");
    // The far edge of the range is served: scheduled, pending, cancellable.
    let max = timer.max_delay();
    let far = timer.schedule(max, ran.task());
    assert_eq!(far.deadline(), Some(timer.now() + max));
    let far_at = timer.schedule_at(timer.now() + max, ran.task());
    clock.advance(Duration::from_secs(3600));
    timer.advance_clock(Duration::ZERO);
    assert_eq!((timer.len(), ran.get()), (2, 0));
    assert!(far.cancel() && far_at.cancel());
    // A reset to a far deadline is refused and changes nothing.
    let h = timer.schedule(ms(5), ran.task());
    assert!(!h.reset(Duration::MAX));
    assert!(h.deadline().is_some());
    clock.advance(ms(5));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(ran.get(), 1, "the refused reset kept the task at its deadline");
}

#[test]
fn deadlines_up_to_max_delay_fire_on_their_tick_for_every_shape() {
    for tick in [Duration::from_micros(1), ms(1), Duration::from_secs(1), Duration::from_nanos(1_234_567)] {
        for size in [2usize, 3, 7, 64, 1000, 65_536] {
            let (clock, timer) = manual_timer(tick, size);
            clock.advance(Duration::from_nanos(123_456_789));
            let (log, max, base) = (FireLog::default(), timer.max_delay(), clock.now());
            let delays = [max, max - tick, max / 2, max / 3 + Duration::from_nanos(17), max / size as u32];
            for (id, &d) in delays.iter().enumerate() {
                timer.schedule(d, log.task(id, &clock));
            }
            assert_eq!(timer.len(), delays.len(), "max_delay and below are accepted");
            while !timer.is_empty() {
                let (next, now) = (timer.next_wakeup().unwrap(), timer.now());
                if next > now {
                    clock.advance(next - now);
                }
                timer.advance_clock(Duration::ZERO);
            }
            let deadlines: Vec<Duration> = delays.iter().map(|&d| base + d).collect();
            assert_on_time(&log, &deadlines, tick);
        }
    }
}

#[test]
fn a_tick_longer_than_the_clock_runs_due_tasks_and_refuses_the_rest() {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(Duration::MAX).wheel_size(2).clock(clock.clone()).manual().build();
    let ran = Counter::default();
    let _now = timer.schedule(Duration::ZERO, ran.task());
    assert!(timer.try_schedule(ms(1), ran.task()).is_err());
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(ran.get(), 1);
}

#[test]
fn instants_in_the_past_and_before_the_origin_run_at_the_next_advance() {
    let (clock, timer) = manual_timer(ms(1), 20);
    clock.advance(ms(100));
    let log = FireLog::default();
    let now = timer.now();
    let long_ago = [now - ms(1), now - ms(100), now - ms(101)]
        .into_iter()
        .chain(now.checked_sub(Duration::from_secs(3600)))
        .collect::<Vec<Instant>>();
    let mut handles = Vec::new();
    for (id, &at) in long_ago.iter().enumerate() {
        handles.push(timer.schedule_at(at, log.task(id, &clock)));
    }
    let later = timer.schedule(ms(50), log.task(99, &clock));
    assert!(later.reset_at(now - ms(150)), "a reset before the origin is a reset");
    assert_eq!(log.count(), 0, "never inside the call");
    assert_eq!(timer.len(), long_ago.len() + 1);
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.count(), long_ago.len() + 1, "all ran at the next advance");
    assert!(handles.iter().all(|h| !h.cancel()) && !later.cancel());
}

#[test]
fn tasks_within_one_tick_fire_in_deadline_order_and_ties_in_fifo() {
    let tick = ms(10);
    let (clock, timer) = manual_timer(tick, 4);
    let order = Arc::new(Mutex::new(Vec::new()));
    let start = timer.now();
    // Scheduled far ahead (coarse level) and near (level 0), in an order unlike their deadlines.
    let plan = [(9_000u64, 0), (1_000, 1), (5_000, 2), (1_000, 3), (9_000, 4)];
    for &(us, id) in &plan {
        let order = Arc::clone(&order);
        timer.schedule_at(start + ms(1000) + Duration::from_micros(us), move || {
            order.lock().unwrap().push(id)
        });
    }
    clock.advance(ms(990));
    timer.advance_clock(Duration::ZERO);
    for &(us, id) in &plan {
        let order = Arc::clone(&order);
        timer.schedule_at(start + ms(1000) + Duration::from_micros(us), move || {
            order.lock().unwrap().push(id + 10)
        });
    }
    clock.advance(tick);
    timer.advance_clock(Duration::ZERO);
    assert!(order.lock().unwrap().is_empty(), "never early");
    clock.advance(tick);
    timer.advance_clock(Duration::ZERO);
    assert_eq!(*order.lock().unwrap(), vec![1, 3, 11, 13, 2, 12, 0, 4, 10, 14]);
}

#[test]
fn a_task_rescheduling_itself_now_runs_once_per_advance() {
    fn again(timer: Arc<Timer>, runs: Arc<AtomicUsize>) {
        runs.fetch_add(1, Ordering::SeqCst);
        let t = Arc::clone(&timer);
        timer.schedule(Duration::ZERO, move || again(t, runs));
    }
    let (_clock, timer) = manual_timer(ms(1), 8);
    let timer = Arc::new(timer);
    let runs = Arc::new(AtomicUsize::new(0));
    let (t, r) = (Arc::clone(&timer), Arc::clone(&runs));
    timer.schedule(Duration::ZERO, move || again(t, r));
    for n in 1..=5 {
        timer.advance_clock(Duration::ZERO);
        assert_eq!(runs.load(Ordering::SeqCst), n, "bounded work per advance");
    }
    assert_eq!(timer.len(), 1);
    drop(timer.shutdown());
}

#[test]
fn after_shutdown_every_schedule_is_refused_and_nothing_runs() {
    let (clock, timer) = manual_timer(ms(1), 20);
    let drops = Arc::new(AtomicUsize::new(0));
    let ran = Counter::default();
    let pending = timer.schedule(ms(10), ran.task());
    let unfired = timer.shutdown();
    assert_eq!(unfired.len(), 1, "shutdown reports the unfired task");
    assert!(!pending.cancel() && !pending.reset(ms(1)));
    let guard = Dropped(Arc::clone(&drops));
    assert_eq!(timer.try_schedule(ms(1), move || drop(guard)).unwrap_err(), ScheduleError::ShutDown);
    let guard = Dropped(Arc::clone(&drops));
    let at = timer.now() + ms(1);
    assert_eq!(timer.try_schedule_at(at, move || drop(guard)).unwrap_err(), ScheduleError::ShutDown);
    let guard = Dropped(Arc::clone(&drops));
    let inert = timer.schedule(Duration::ZERO, move || drop(guard));
    assert!(!inert.cancel() && !inert.is_pending());
    assert_eq!(drops.load(Ordering::SeqCst), 3, "refused closures are dropped at once");
    clock.advance(ms(20));
    timer.advance_clock(Duration::ZERO);
    assert_eq!((ran.get(), timer.len()), (0, 0));
    assert!(timer.shutdown().is_empty(), "a second shutdown is harmless");
    for task in unfired {
        task.run();
    }
    assert_eq!(ran.get(), 1, "an unfired task handed back can still be run by its owner");
}

#[test]
fn handles_outlive_their_timer_and_its_driver_stops_promptly() {
    common::watched("drop with a driver", || {
        let drops = Arc::new(AtomicUsize::new(0));
        let ran = Counter::default();
        let timer = Timer::builder().tick(ms(1)).wheel_size(20).build();
        let mut handles = Vec::new();
        for _ in 0..100 {
            let (guard, run) = (Dropped(Arc::clone(&drops)), ran.task());
            handles.push(timer.schedule(Duration::from_secs(3600), move || {
                let _g = guard;
                run()
            }));
        }
        drop(timer);
        assert_eq!(drops.load(Ordering::SeqCst), 100, "unfired closures dropped with the timer");
        for h in &handles {
            assert!(!h.cancel() && !h.reset(ms(1)) && h.deadline().is_none() && !h.is_pending());
        }
        assert_eq!(ran.get(), 0, "dropped, not run");
    });
}

#[test]
fn dropping_a_handle_does_not_cancel_and_cancel_is_true_once() {
    let (clock, timer) = manual_timer(ms(1), 20);
    let ran = Counter::default();
    let _ = timer.schedule(ms(3), ran.task()); // its handle dropped at once
    let h = timer.schedule(ms(3), ran.task());
    let h2 = timer.schedule(ms(3), ran.task());
    assert!(h2.cancel());
    assert!(!h2.cancel(), "a second cancel is false");
    assert_eq!(timer.len(), 2, "len drops at once on cancel");
    clock.advance(ms(3));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(ran.get(), 2);
    assert!(!h.cancel());
}

#[test]
fn a_panicking_task_loses_no_other_task() {
    let (clock, timer) = manual_timer(ms(1), 20);
    let ran = Counter::default();
    for i in 0..6 {
        if i % 2 == 0 {
            timer.schedule(ms(2), || panic!("a faulty task"));
        }
        timer.schedule(ms(2), ran.task());
    }
    clock.advance(ms(2));
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| timer.advance_clock(Duration::ZERO)));
    timer.advance_clock(Duration::ZERO);
    assert_eq!((ran.get(), timer.len()), (6, 0), "every good task ran once, nothing pending");
    let after = timer.schedule(ms(1), ran.task());
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    assert!(!after.cancel() && ran.get() == 7, "the timer keeps working");
}

#[test]
fn a_real_clock_advance_waits_up_to_its_timeout_for_work() {
    let timer = Timer::builder().tick(ms(1)).manual().build();
    let ran = Counter::default();
    // Read before the schedule: the deadline is at least 20 ms after it, however long the
    // thread waits between the two.
    let start = Instant::now();
    timer.schedule(ms(20), ran.task());
    while ran.get() == 0 {
        assert!(start.elapsed() < Duration::from_secs(5), "the task never fired");
        timer.advance_clock(Duration::from_millis(50));
    }
    assert!(start.elapsed() >= ms(20), "never early");
    assert!(!timer.advance_clock(Duration::from_millis(5)), "an idle wait flushes nothing");
}
