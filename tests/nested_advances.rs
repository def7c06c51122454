//! Timers whose tasks advance one another: a task of `a` advances `b`, and a task of `b`, run
//! inside that advance, calls back into `a`, whose advance this thread is still inside. The call
//! returns at once, as from a task of `a` itself (`advance_clock` returns `false`; `shutdown` and
//! the drop wait for no advance), on a manual timer and on one with a driver thread.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use common::{manual_timer, ms, watched, DEADLOCK};
use delaywheel::{ManualClock, Timer};

/// What the task of `b` does with `a`.
#[derive(Clone, Copy, Debug)]
enum Back {
    Advance(Duration),
    Shutdown,
    Drop,
}

/// Runs, on a thread of its own, a task of `a` that advances the manual timer `b` (on `b_clock`),
/// whose due task does `back` to `a`; returns what `a.advance_clock` answered inside (if it was
/// asked), or panics if the whole does not end in time (`common::watched`). `advance_a` drives
/// `a`.
fn nested(a: Timer, back: Back, advance_a: impl Fn(&Timer) + Send + 'static) -> Option<bool> {
    watched(&format!("{back:?}"), move || {
        let a = Arc::new(Mutex::new(Some(Arc::new(a))));
        let (b_clock, b) = manual_timer(ms(1), 8);
        let answer = Arc::new(Mutex::new(None));
        let (a_back, answer_back) = (Arc::clone(&a), Arc::clone(&answer));
        b.schedule(ms(1), move || {
            let a = a_back.lock().unwrap().clone().expect("a is still there");
            match back {
                Back::Advance(timeout) => *answer_back.lock().unwrap() = Some(a.advance_clock(timeout)),
                Back::Shutdown => drop(a.shutdown()),
                Back::Drop => {
                    // With a driver thread, the last reference: `a` is dropped inside its advance.
                    a_back.lock().unwrap().take();
                    drop(a);
                }
            }
        });
        let b = Arc::new((b_clock, b));
        let ran = Arc::new(AtomicUsize::new(0));
        let (b_task, ran_task) = (Arc::clone(&b), Arc::clone(&ran));
        let a_timer = a.lock().unwrap().clone().unwrap();
        a_timer.schedule(Duration::ZERO, move || {
            let (clock, b) = &*b_task;
            clock.advance(ms(1));
            b.advance_clock(Duration::ZERO);
            ran_task.fetch_add(1, Ordering::SeqCst);
        });
        advance_a(&a_timer);
        drop(a_timer);
        let give_up = std::time::Instant::now() + DEADLOCK / 2;
        while ran.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < give_up {
            thread::sleep(ms(1));
        }
        assert_eq!(ran.load(Ordering::SeqCst), 1, "{back:?}: the task of a ran to its end");
        let answer = *answer.lock().unwrap();
        answer
    })
}

fn manual_a() -> Timer {
    Timer::builder().tick(ms(1)).wheel_size(8).clock(ManualClock::new()).manual().build()
}

fn driven_a() -> Timer {
    Timer::builder().tick(ms(1)).wheel_size(8).build()
}

#[test]
fn advancing_a_timer_from_inside_its_advance_through_another_timer_returns_at_once() {
    let advance = |a: &Timer| {
        a.advance_clock(Duration::ZERO);
    };
    assert_eq!(nested(manual_a(), Back::Advance(Duration::ZERO), advance), Some(false));
    assert_eq!(nested(manual_a(), Back::Advance(ms(100)), advance), Some(false));
    assert_eq!(nested(driven_a(), Back::Advance(Duration::ZERO), |_| {}), Some(false));
    assert_eq!(nested(driven_a(), Back::Advance(ms(100)), |_| {}), Some(false));
}

#[test]
fn shutting_down_or_dropping_a_timer_from_inside_its_advance_through_another_returns_at_once() {
    for back in [Back::Shutdown, Back::Drop] {
        let advance = |a: &Timer| {
            a.advance_clock(Duration::ZERO);
        };
        assert_eq!(nested(manual_a(), back, advance), None);
        assert_eq!(nested(driven_a(), back, |_| {}), None);
    }
}
