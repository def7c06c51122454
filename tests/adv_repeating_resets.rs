//! `RepeatingHandle::reset` and `reset_at` as a user re-arms a heartbeat: earlier and later, into
//! the past, from inside the run itself, after a cancel and after a shutdown, for each `Repeat`
//! kind; the runs' clock readings are checked against the grid the docs promise.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::manual_timer;
use delaywheel::{ManualClock, MissedTickBehavior, Repeat, RepeatingHandle, Timer};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Clock readings of each run.
#[derive(Clone, Default)]
struct Runs(Arc<Mutex<Vec<Duration>>>);

impl Runs {
    fn task(&self, clock: &ManualClock) -> impl FnMut() + Send + 'static {
        let (runs, clock) = (self.clone(), clock.clone());
        move || runs.0.lock().unwrap().push(clock.now())
    }
    fn get(&self) -> Vec<Duration> {
        self.0.lock().unwrap().clone()
    }
}

/// Walks the clock 1 ms at a time to `to`, advancing the timer at each step.
fn walk(clock: &ManualClock, timer: &Timer, to: Duration) {
    while clock.now() < to {
        clock.advance(ms(1));
        timer.advance_clock(Duration::ZERO);
    }
}

fn kinds() -> Vec<(&'static str, Repeat)> {
    vec![
        ("fixed rate", Repeat::FixedRate(ms(10))),
        ("fixed delay", Repeat::FixedDelay(ms(10))),
        ("every burst", Repeat::Every(ms(10), MissedTickBehavior::Burst)),
        ("every delay", Repeat::Every(ms(10), MissedTickBehavior::Delay)),
        ("every skip", Repeat::Every(ms(10), MissedTickBehavior::Skip)),
    ]
}

/// A reset later and one earlier: the next run comes at the new deadline exactly (never before),
/// and the runs after it a period apart from there, for every kind (tasks take no time, so every
/// kind keeps the same grid).
#[test]
fn a_reset_moves_the_next_run_and_the_grid_follows_from_there() {
    for (name, repeat) in kinds() {
        let (clock, timer) = manual_timer(ms(1), 4);
        let runs = Runs::default();
        let h = timer.schedule_repeating(ms(10), repeat, runs.task(&clock));
        walk(&clock, &timer, ms(10));
        assert_eq!(runs.get(), [ms(10)], "{name}");
        assert!(h.reset(ms(37)), "{name}: later, to 47 ms");
        walk(&clock, &timer, ms(46));
        assert_eq!(runs.get(), [ms(10)], "{name}: never before the new deadline");
        walk(&clock, &timer, ms(57));
        assert_eq!(runs.get(), [ms(10), ms(47), ms(57)], "{name}");
        let at = timer.now() + ms(3);
        assert!(h.reset_at(at), "{name}: earlier, to 60 ms");
        walk(&clock, &timer, ms(80));
        assert_eq!(runs.get(), [ms(10), ms(47), ms(57), ms(60), ms(70), ms(80)], "{name}");
        assert_eq!(h.runs(), 6);
        assert!(h.cancel(), "{name}");
        assert!(!h.reset(ms(1)) && !h.reset_at(timer.now()), "{name}: cancelled: nothing to move");
        walk(&clock, &timer, ms(120));
        assert_eq!(h.runs(), 6, "{name}");
        assert!(timer.is_empty(), "{name}");
    }
}

/// A reset to an instant already passed (and to one before the clock's origin) runs the next run at
/// the next advance, once, and the repetition goes on a period after that instant's grid for the
/// grid kinds, a period after the run for `FixedDelay`.
#[test]
fn a_reset_into_the_past_runs_at_the_next_advance_once() {
    for (name, repeat) in kinds() {
        let (clock, timer) = manual_timer(ms(1), 4);
        let origin = timer.now();
        let runs = Runs::default();
        let h = timer.schedule_repeating(ms(100), repeat, runs.task(&clock));
        walk(&clock, &timer, ms(30));
        assert!(h.reset_at(origin + ms(25)), "{name}");
        assert!(runs.get().is_empty(), "{name}: the reset runs nothing by itself");
        clock.advance(ms(1));
        timer.advance_clock(Duration::ZERO);
        assert_eq!(runs.get(), [ms(31)], "{name}");
        // The next run: a period after the run for FixedDelay, else on the grid of 25 ms:
        // 35 ms (tokio's Burst, Skip: the first grid point; Delay: a period after the late run).
        walk(&clock, &timer, ms(60));
        let got = runs.get();
        let expected: &[Duration] = match repeat {
            Repeat::FixedDelay(_) => &[ms(31), ms(41), ms(51)],
            Repeat::Every(_, MissedTickBehavior::Delay) => &[ms(31), ms(41), ms(51)],
            _ => &[ms(31), ms(35), ms(45), ms(55)],
        };
        assert_eq!(got, expected, "{name}");
        assert!(h.cancel());
    }
}

/// Inside its own run the next run is being fired: a reset from there returns `false` and changes
/// nothing, and the repetition goes on on its grid.
#[test]
fn a_reset_from_inside_the_run_is_refused_and_the_grid_goes_on() {
    for (name, repeat) in kinds() {
        let (clock, timer) = manual_timer(ms(1), 4);
        let slot: Arc<Mutex<Option<RepeatingHandle>>> = Arc::default();
        let answers: Arc<Mutex<Vec<bool>>> = Arc::default();
        let runs = Runs::default();
        let (s, a, mut record) = (Arc::clone(&slot), Arc::clone(&answers), runs.task(&clock));
        let h = timer.schedule_repeating(ms(10), repeat, move || {
            record();
            if let Some(h) = s.lock().unwrap().as_ref() {
                a.lock().unwrap().push(h.reset(ms(1_000)));
            }
        });
        *slot.lock().unwrap() = Some(h.clone());
        walk(&clock, &timer, ms(40));
        assert_eq!(runs.get(), [ms(10), ms(20), ms(30), ms(40)], "{name}");
        assert_eq!(*answers.lock().unwrap(), [false; 4], "{name}");
        assert!(h.cancel());
        // The handle inside the closure is dropped with it: no cycle keeps anything.
        slot.lock().unwrap().take();
    }
}

/// After a shutdown (and after the timer's drop) a reset is `false`; a handle to a refused
/// repetition is inert.
#[test]
fn resets_after_shutdown_drop_or_refusal_are_false() {
    let (clock, timer) = manual_timer(ms(1), 4);
    let runs = Runs::default();
    let h = timer.schedule_repeating(ms(10), Repeat::FixedRate(ms(10)), runs.task(&clock));
    let unfired = timer.shutdown();
    assert_eq!(unfired.len(), 1);
    drop(unfired);
    assert!(!h.reset(ms(5)) && !h.reset_at(timer.now()));
    assert!(!h.is_active() && !h.cancel());

    let (clock, timer) = manual_timer(ms(1), 4);
    let h = timer.schedule_repeating(ms(10), Repeat::FixedDelay(ms(10)), runs.task(&clock));
    let now = timer.now();
    drop(timer);
    assert!(!h.reset(ms(5)) && !h.reset_at(now));
    assert!(!h.is_active());

    let (clock, timer) = manual_timer(ms(1), 4);
    let inert = timer.schedule_repeating(Duration::MAX, Repeat::FixedRate(ms(10)), runs.task(&clock));
    assert!(!inert.reset(ms(5)) && !inert.is_active() && !inert.cancel());
    assert!(timer.is_empty());
    let h = timer.schedule_repeating(ms(10), Repeat::FixedRate(ms(10)), runs.task(&clock));
    assert!(!h.reset(Duration::MAX), "beyond the range: refused");
    walk(&clock, &timer, ms(20));
    assert_eq!(runs.get(), [ms(10), ms(20)], "a refused reset changes nothing");
}
