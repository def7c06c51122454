//! `Timer::schedule_repeating`: exact run times for both modes on a manual clock, cancellation
//! from outside and from inside the task, shutdown, panics, and a race against a real driver.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use common::{manual_timer, ms};
use delaywheel::{ManualClock, MissedTickBehavior, Repeat, RepeatingHandle, Timer};

/// Records the manual clock's time at every run.
#[derive(Clone, Default)]
struct Runs(Arc<Mutex<Vec<Duration>>>);

impl Runs {
    fn task(&self, clock: &ManualClock, work: Duration) -> impl FnMut() + Send + 'static {
        let (runs, clock) = (Arc::clone(&self.0), clock.clone());
        move || {
            runs.lock().unwrap().push(clock.now());
            clock.advance(work); // the task "takes" this long
        }
    }
    fn get(&self) -> Vec<Duration> {
        self.0.lock().unwrap().clone()
    }
}

/// Advances the clock 1 ms at a time up to `to`, advancing the timer at each step.
fn step_to(clock: &ManualClock, timer: &Timer, to: Duration) {
    while clock.now() < to {
        clock.advance(ms(1).min(to - clock.now()));
        timer.advance_clock(Duration::ZERO);
    }
}

fn times(list: &[u64]) -> Vec<Duration> {
    list.iter().map(|&t| ms(t)).collect()
}

#[test]
fn fixed_rate_runs_on_its_grid() {
    let (clock, timer) = manual_timer(ms(1), 4); // small wheel: runs cascade through levels
    let runs = Runs::default();
    let handle = timer.schedule_repeating(ms(10), Repeat::FixedRate(ms(10)), runs.task(&clock, ms(3)));
    step_to(&clock, &timer, ms(55));
    // The task takes 3 ms, yet the rate does not drift.
    assert_eq!(runs.get(), times(&[10, 20, 30, 40, 50]));
    assert_eq!(handle.runs(), 5);
    assert_eq!(timer.len(), 1, "exactly one entry pending: the next run");
}

#[test]
fn fixed_delay_counts_from_the_end_of_each_run() {
    let (clock, timer) = manual_timer(ms(1), 4);
    let runs = Runs::default();
    let _handle = timer.schedule_repeating(ms(10), Repeat::FixedDelay(ms(10)), runs.task(&clock, ms(3)));
    step_to(&clock, &timer, ms(60));
    assert_eq!(runs.get(), times(&[10, 23, 36, 49]));
}

#[test]
fn fixed_rate_skips_missed_runs_instead_of_bursting() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let runs = Runs::default();
    let handle = timer.schedule_repeating(ms(10), Repeat::FixedRate(ms(10)), runs.task(&clock, ms(0)));
    clock.advance(ms(35)); // the driver stalled through the runs due at 10, 20 and 30
    timer.advance_clock(Duration::ZERO);
    assert_eq!(runs.get(), times(&[35]), "one late run, no burst");
    step_to(&clock, &timer, ms(60));
    assert_eq!(runs.get(), times(&[35, 40, 50, 60]), "back on the grid");
    assert_eq!(handle.runs(), 4);
}

/// A repetition every 10 ms from 10 ms whose driver stalls from 0 to 35 ms, then is stepped to 62 ms:
/// the run times.
fn stalled_every(missed: MissedTickBehavior) -> Vec<Duration> {
    let (clock, timer) = manual_timer(ms(1), 8);
    let runs = Runs::default();
    let handle = timer.schedule_repeating(ms(10), Repeat::Every(ms(10), missed), runs.task(&clock, ms(0)));
    clock.advance(ms(35)); // the runs due at 10, 20 and 30 ms are all late
    timer.advance_clock(Duration::ZERO);
    step_to(&clock, &timer, ms(62));
    assert!(handle.cancel());
    assert!(timer.is_empty());
    runs.get()
}

#[test]
fn every_with_burst_runs_the_missed_runs_back_to_back_then_keeps_the_grid() {
    // 10 ran at 35; 20 and 30 were due already: each runs at the next advance (one advance does
    // bounded work), at 36 and 37 ms here; then 40, 50, 60 on the grid.
    assert_eq!(stalled_every(MissedTickBehavior::Burst), times(&[35, 36, 37, 40, 50, 60]));
}

#[test]
fn every_with_delay_starts_a_new_grid_after_the_late_run() {
    assert_eq!(stalled_every(MissedTickBehavior::Delay), times(&[35, 45, 55]));
}

#[test]
fn every_with_skip_is_fixed_rate() {
    assert_eq!(stalled_every(MissedTickBehavior::Skip), times(&[35, 40, 50, 60]));
}

#[test]
fn every_on_time_keeps_its_grid_whatever_the_behaviour() {
    for missed in [MissedTickBehavior::Burst, MissedTickBehavior::Delay, MissedTickBehavior::Skip] {
        let (clock, timer) = manual_timer(ms(1), 4);
        let runs = Runs::default();
        let _h = timer.schedule_repeating(ms(10), Repeat::Every(ms(10), missed), runs.task(&clock, ms(3)));
        step_to(&clock, &timer, ms(45));
        assert_eq!(runs.get(), times(&[10, 20, 30, 40]), "{missed:?}: a 3 ms task does not drift the grid");
    }
}

#[test]
fn a_zero_period_is_raised_to_one_tick() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let runs = Runs::default();
    let _fixed_delay =
        timer.schedule_repeating(ms(0), Repeat::FixedDelay(Duration::ZERO), runs.task(&clock, ms(0)));
    step_to(&clock, &timer, ms(3));
    assert_eq!(runs.get(), times(&[1, 2, 3]), "one run per tick, and advance_clock returns");
    let rate = Runs::default();
    let _fixed_rate =
        timer.schedule_repeating(ms(0), Repeat::FixedRate(Duration::ZERO), rate.task(&clock, ms(0)));
    timer.advance_clock(Duration::ZERO);
    step_to(&clock, &timer, ms(5));
    assert_eq!(rate.get(), times(&[3, 4, 5]));
}

#[test]
fn cancel_from_outside_stops_future_runs_exactly_once() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let runs = Runs::default();
    let handle = timer.schedule_repeating(ms(10), Repeat::FixedRate(ms(10)), runs.task(&clock, ms(0)));
    let clone = handle.clone();
    step_to(&clock, &timer, ms(25));
    assert!(handle.is_active());
    assert!(clone.cancel(), "a clone cancels the same repetition");
    assert!(!handle.cancel(), "only one cancel returns true");
    assert!(!handle.is_active());
    assert_eq!(timer.len(), 0, "the pending run left the wheel at once");
    step_to(&clock, &timer, ms(100));
    assert_eq!(runs.get(), times(&[10, 20]));
    assert_eq!(timer.stats().cancelled, 1);
}

#[test]
fn cancel_from_inside_the_task_makes_that_run_the_last() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let me: Arc<OnceLock<RepeatingHandle>> = Arc::default();
    let results = Arc::new(Mutex::new(Vec::new()));
    let (me2, results2, clock2) = (Arc::clone(&me), Arc::clone(&results), clock.clone());
    let mut n = 0;
    let handle = timer.schedule_repeating(ms(5), Repeat::FixedDelay(ms(5)), move || {
        n += 1;
        if n == 3 {
            let first = me2.get().unwrap().cancel();
            let second = me2.get().unwrap().cancel();
            results2.lock().unwrap().push((clock2.now(), first, second));
        }
    });
    me.set(handle.clone()).unwrap();
    step_to(&clock, &timer, ms(50));
    assert_eq!(*results.lock().unwrap(), vec![(ms(15), true, false)]);
    assert_eq!(handle.runs(), 3);
    assert!(!handle.is_active());
    assert!(timer.is_empty(), "the run that cancelled did not re-arm");
}

#[test]
fn shutdown_ends_the_repetition() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let runs = Runs::default();
    let handle = timer.schedule_repeating(ms(10), Repeat::FixedRate(ms(10)), runs.task(&clock, ms(0)));
    step_to(&clock, &timer, ms(10));
    let unfired = timer.shutdown();
    assert_eq!(unfired.len(), 1, "the next run is handed back");
    // Running the handed-back run runs the task once; its re-arm is refused.
    unfired.into_iter().for_each(|task| task.run());
    assert_eq!(runs.get(), times(&[10, 10]));
    assert!(!handle.is_active());
    assert!(!handle.cancel(), "nothing left to stop");
}

#[test]
fn a_run_handed_back_by_shutdown_keeps_the_repetition_until_it_is_run_dropped_or_cancelled() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let runs = Runs::default();
    let handle = timer.schedule_repeating(ms(10), Repeat::FixedRate(ms(10)), runs.task(&clock, ms(0)));
    let unfired = timer.shutdown();
    assert!(handle.is_active(), "the handed-back run may still begin");
    assert!(handle.cancel(), "the cancel stops the handed-back run");
    assert!(!handle.is_active() && !handle.cancel());
    unfired.into_iter().for_each(|task| task.run());
    assert!(runs.get().is_empty(), "a run began after cancel returned true");
    assert_eq!(Arc::strong_count(&runs.0), 1, "the task's closure was dropped");

    let (clock, timer) = manual_timer(ms(1), 8);
    let runs = Runs::default();
    let handle = timer.schedule_repeating(ms(10), Repeat::FixedRate(ms(10)), runs.task(&clock, ms(0)));
    drop(timer.shutdown());
    assert!(!handle.is_active() && !handle.cancel(), "dropping the handed-back run ends it");
}

#[test]
fn dropping_the_timer_ends_the_repetition_and_the_handle_does_not_keep_it_alive() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let runs = Runs::default();
    let handle = timer.schedule_repeating(ms(10), Repeat::FixedRate(ms(10)), runs.task(&clock, ms(0)));
    drop(timer);
    assert!(!handle.is_active());
    assert!(!handle.cancel());
    assert_eq!(Arc::strong_count(&runs.0), 1, "the task's closure was dropped");
}

#[test]
fn a_panicking_run_ends_the_repetition() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let mut n = 0;
    let handle = timer.schedule_repeating(ms(1), Repeat::FixedDelay(ms(1)), move || {
        n += 1;
        assert!(n < 2, "second run panics");
    });
    step_to(&clock, &timer, ms(10));
    assert_eq!(handle.runs(), 2);
    assert!(!handle.is_active());
    assert_eq!(timer.stats().panicked, 1);
    assert!(timer.is_empty());
}

#[test]
fn refused_first_run_gives_an_error_or_an_inert_handle() {
    let timer = Timer::builder().manual().build();
    timer.shutdown();
    assert!(timer.try_schedule_repeating(ms(1), Repeat::FixedRate(ms(1)), || {}).is_err());
    let inert = timer.schedule_repeating(ms(1), Repeat::FixedRate(ms(1)), || {});
    assert!(!inert.is_active());
    assert!(!inert.cancel());
}

#[test]
fn on_a_driver_thread_no_run_begins_after_cancel_returns_true() {
    let timer = Timer::builder().tick(Duration::from_micros(100)).build();
    for round in 0..20u64 {
        let began = Arc::new(AtomicU64::new(0));
        let b = Arc::clone(&began);
        let handle = timer.schedule_repeating(
            Duration::ZERO,
            Repeat::FixedRate(Duration::from_micros(200)),
            move || {
                b.fetch_add(1, Ordering::SeqCst);
            },
        );
        std::thread::sleep(Duration::from_micros(300 * (round % 7)));
        assert!(handle.cancel());
        let at_cancel = handle.runs();
        std::thread::sleep(ms(5));
        assert_eq!(handle.runs(), at_cancel, "a run began after cancel returned true");
        // A run counted just before the cancel may still be finishing on a loaded machine.
        let give_up = std::time::Instant::now() + Duration::from_secs(5);
        while began.load(Ordering::SeqCst) < at_cancel && std::time::Instant::now() < give_up {
            std::thread::sleep(ms(1));
        }
        let began = began.load(Ordering::SeqCst);
        assert_eq!(began, at_cancel, "every counted run ran exactly once");
    }
    assert!(timer.is_empty());
}

#[test]
fn a_first_run_beyond_the_range_is_refused_with_the_delay_asked_for() {
    let (_clock, timer) = manual_timer(ms(1), 8);
    let repeats = [
        Repeat::FixedDelay(ms(5)),
        Repeat::FixedRate(ms(5)),
        Repeat::Every(ms(5), MissedTickBehavior::Delay),
    ];
    for repeat in repeats {
        for delay in [Duration::MAX, timer.max_delay() + Duration::from_secs(2)] {
            let refused = timer.try_schedule_repeating(delay, repeat, || {}).unwrap_err();
            let max = timer.max_delay();
            assert_eq!(refused, delaywheel::ScheduleError::DelayTooLong { delay, max }, "{repeat:?}");
        }
    }
    assert!(timer.is_empty());
}
