//! Reset, cancel and the advance that fires, on real threads released together, many rounds:
//! only outcomes are asserted (exactly once; never before the deadline a `true` reset set; a
//! value handed back by `remove` never comes out, and one that comes out carries the deadline the
//! last `true` reset set), for one-shot tasks on the advancing thread and on executor threads,
//! repeating tasks, and delay queue values.

mod common;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

use common::SplitMix;
use delaywheel::queue::DelayQueue;
use delaywheel::{ManualClock, Repeat, TaskExecution, Timer};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Runs `f(0..n)` on `n` scoped threads released together.
fn together(n: usize, f: impl Fn(usize) + Sync) {
    let barrier = Barrier::new(n);
    thread::scope(|s| {
        for i in 0..n {
            let (barrier, f) = (&barrier, &f);
            s.spawn(move || {
                barrier.wait();
                f(i)
            });
        }
    });
}

/// Moves the clock 1 ms at a time to 6 ms, advancing the timer after each step.
fn advance_to_6(clock: &ManualClock, timer: &Timer) {
    for _ in 0..6 {
        clock.advance(ms(1));
        timer.advance_clock(Duration::ZERO);
    }
}

/// Waits (for executor threads) until `done`; false after 10 s.
fn eventually(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..10_000 {
        if done() {
            return true;
        }
        thread::sleep(ms(1));
    }
    false
}

/// One task due at 2 ms; an advancing thread walks the clock to 6 ms while one thread cancels
/// and another resets it to a random instant in 0..6 ms (or by a random delay). Afterwards the
/// task ran once or one cancel won, never both; if it ran, not before 2 ms, and not before the
/// instant of a `true` reset; `len` and `deadline` agree.
fn one_shot_rounds(executors: Option<usize>, rounds: u64) {
    for round in 0..rounds {
        let mut rng = SplitMix(round + 1);
        let clock = ManualClock::new();
        let mut builder = Timer::builder().tick(ms(1)).wheel_size(4).clock(clock.clone()).manual();
        if let Some(n) = executors {
            builder = builder.execution(TaskExecution::Threads(n));
        }
        let timer = builder.build();
        let origin = timer.now();
        let runs = Arc::new(AtomicUsize::new(0));
        let ran_at = Arc::new(AtomicU64::new(u64::MAX));
        let (r, at, c) = (Arc::clone(&runs), Arc::clone(&ran_at), clock.clone());
        let h = timer.schedule(ms(2), move || {
            r.fetch_add(1, Ordering::SeqCst);
            at.store(c.now().as_nanos() as u64, Ordering::SeqCst);
        });
        let reset_to = ms(rng.range(0, 6));
        let by_delay = rng.range(0, 2) == 0;
        let cancels = rng.range(0, 3) != 0;
        let cancelled = Mutex::new(false);
        // The instant a true reset set, read right after it returned (by delay: a lower bound).
        let reset_won = Mutex::new(None::<Duration>);
        together(3, |i| match i {
            0 => advance_to_6(&clock, &timer),
            1 if cancels => *cancelled.lock().unwrap() = h.cancel(),
            1 => {}
            _ => {
                if by_delay {
                    let before = clock.now();
                    if h.reset(reset_to) {
                        *reset_won.lock().unwrap() = Some(before + reset_to);
                    }
                } else if h.reset_at(origin + reset_to) {
                    *reset_won.lock().unwrap() = Some(reset_to);
                }
            }
        });
        let cancelled = cancelled.into_inner().unwrap();
        // Whatever a reset left pending: let it come due (or cancel it when there is no cancel).
        clock.advance(ms(20));
        timer.advance_clock(Duration::ZERO);
        let want = usize::from(!cancelled);
        assert!(
            eventually(|| runs.load(Ordering::SeqCst) == want),
            "round {round}: runs {} with cancel {cancelled}",
            runs.load(Ordering::SeqCst)
        );
        assert_eq!(timer.len(), 0, "round {round}");
        assert_eq!(h.deadline(), None, "round {round}");
        if !cancelled {
            let at = Duration::from_nanos(ran_at.load(Ordering::SeqCst));
            assert!(at >= ms(2) || reset_won.lock().unwrap().is_some(), "round {round}: ran at {at:?}");
            if let Some(due) = *reset_won.lock().unwrap() {
                assert!(at >= due, "round {round}: ran at {at:?} before the reset's {due:?}");
            }
        }
        assert!(!h.cancel() && !h.reset(ms(1)), "round {round}");
        thread::sleep(Duration::ZERO);
    }
}

#[test]
fn reset_cancel_and_advance_racing_keep_exactly_once_and_never_early() {
    one_shot_rounds(None, 1_500);
}

#[test]
fn the_same_with_executor_threads() {
    one_shot_rounds(Some(2), 600);
}

/// A repeating task every 1 ms, reset by one thread while another cancels it and a third
/// advances: the cancel always wins (nothing else ends the repetition), and no run begins after
/// the threads are done.
#[test]
fn repeating_reset_racing_cancel_and_advance_is_always_cancelled() {
    for round in 0..800u64 {
        let clock = ManualClock::new();
        let timer = Timer::builder().tick(ms(1)).wheel_size(4).clock(clock.clone()).manual().build();
        let origin = timer.now();
        let h = timer.schedule_repeating(ms(1), Repeat::FixedRate(ms(1)), || {});
        let cancelled = Mutex::new(false);
        together(3, |i| match i {
            0 => advance_to_6(&clock, &timer),
            1 => *cancelled.lock().unwrap() = h.cancel(),
            _ => {
                for k in 0..3 {
                    h.reset_at(origin + ms(round % 4 + k));
                }
            }
        });
        assert!(cancelled.into_inner().unwrap(), "round {round}: the only cancel must win");
        let runs = h.runs();
        clock.advance(ms(20));
        timer.advance_clock(Duration::ZERO);
        assert_eq!(h.runs(), runs, "round {round}: a run after the cancel");
        assert!(!h.is_active() && timer.is_empty(), "round {round}");
    }
}

/// A value due at 2 ms; one thread removes it, one resets it, one advances. It is handed back by
/// the remove or taken by a consumer, exactly once; taken, it carries the deadline the reset set
/// if the reset returned `true`, else its first.
#[test]
fn queue_remove_reset_and_advance_racing_hand_the_value_out_once() {
    for round in 0..1_500u64 {
        let mut rng = SplitMix(round + 7);
        let clock = ManualClock::new();
        let timer = Timer::builder().tick(ms(1)).wheel_size(4).clock(clock.clone()).manual().build();
        let q = DelayQueue::with_timer(timer);
        let origin = q.timer().now();
        let key = q.insert(round, ms(2));
        let reset_to = origin + ms(rng.range(0, 6)) + Duration::from_nanos(rng.range(0, 1_000));
        let removed = Mutex::new(None);
        let reset = Mutex::new(false);
        together(3, |i| match i {
            0 => {
                for _ in 0..6 {
                    clock.advance(ms(1));
                    q.advance_clock(Duration::ZERO);
                }
            }
            1 => *removed.lock().unwrap() = q.remove(&key),
            _ => *reset.lock().unwrap() = q.reset_at(&key, reset_to),
        });
        clock.advance(ms(20));
        q.advance_clock(Duration::ZERO);
        let taken: Vec<_> = std::iter::from_fn(|| q.try_recv()).collect();
        let removed = removed.into_inner().unwrap();
        assert_eq!(taken.len() + usize::from(removed.is_some()), 1, "round {round}");
        if let Some(v) = removed {
            assert_eq!(v, round);
        }
        if let Some(e) = taken.first() {
            let want = if *reset.lock().unwrap() { reset_to } else { origin + ms(2) };
            assert_eq!((*e.get_ref(), e.deadline()), (round, want), "round {round}");
        }
        assert!(q.is_empty() && q.deadline(&key).is_none(), "round {round}");
    }
}
