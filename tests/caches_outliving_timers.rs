//! Threads' caches of free slots and blocks against the timers they came from: a thread that keeps
//! caching for timers dropped one after the other (each new timer's allocations may land where
//! the last one's were), a timer dropped by the thread that holds its last reference, and a
//! thread-local whose destructor schedules, cancels, shrinks and drops a timer after the crate's
//! own thread-locals (the caches, the pin's record, the stamp block) are gone. Every closure of
//! every size runs or is dropped exactly once; under AddressSanitizer and LeakSanitizer a slab
//! that counted a cached block as held would leak its classes, and one that counted a held block
//! as free would unmap it under its closure.

mod common;

use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use common::{Tally, Token};
use delaywheel::{ManualClock, Timer, TimerHandle};

/// A closure of `W` words besides its probe: inline (W = 0), a block of each class, or boxed.
fn task<const W: usize>(tally: &Arc<Tally>) -> impl FnOnce() + Send + 'static {
    let words = [7u64; W];
    let probe = Token(Arc::clone(tally));
    move || {
        assert!(words.iter().all(|&w| w == 7), "a closure's captures read back intact");
        probe.0.runs.fetch_add(1, Ordering::SeqCst);
    }
}

/// Schedules one task of each shape on `timer`, due in `delay`.
fn one_of_each(timer: &Timer, tally: &Arc<Tally>, delay: Duration) -> Vec<TimerHandle> {
    vec![
        timer.schedule(delay, task::<0>(tally)),
        timer.schedule(delay, task::<4>(tally)),
        timer.schedule(delay, task::<12>(tally)),
        timer.schedule(delay, task::<28>(tally)),
        timer.schedule(delay, task::<40>(tally)),
    ]
}

fn manual() -> (ManualClock, Timer) {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    (clock, timer)
}

#[test]
fn a_thread_caching_for_timers_dropped_one_after_another_is_exactly_once() {
    let tally = Arc::new(Tally::default());
    let (work, jobs) = mpsc::channel::<(Arc<Timer>, bool)>();
    let (done, finished) = mpsc::channel::<()>();
    let worker_tally = Arc::clone(&tally);
    let worker = std::thread::spawn(move || {
        for (timer, keep_last) in jobs {
            // Schedules and cancels on this thread: its caches take the timer's slots and blocks,
            // and keep them when the timer goes.
            for _ in 0..40 {
                for handle in one_of_each(&timer, &worker_tally, Duration::from_secs(5)) {
                    assert!(handle.cancel());
                }
            }
            let pending = one_of_each(&timer, &worker_tally, Duration::from_millis(3));
            drop(pending);
            if keep_last {
                // This thread drops the timer last, its caches still full of the timer's items.
                while Arc::strong_count(&timer) > 1 {
                    std::thread::yield_now();
                }
                drop(timer);
                done.send(()).unwrap();
            } else {
                drop(timer);
                done.send(()).unwrap();
            }
        }
    });
    let mut expected = 0;
    for round in 0..200 {
        let (clock, timer) = manual();
        let timer = Arc::new(timer);
        // This thread caches the timer's items too.
        for handle in one_of_each(&timer, &tally, Duration::from_secs(9)) {
            assert!(handle.cancel());
        }
        let keep_last = round % 2 == 0;
        work.send((Arc::clone(&timer), keep_last)).unwrap();
        if keep_last {
            drop(timer);
            finished.recv().unwrap();
        } else {
            finished.recv().unwrap();
            clock.advance(Duration::from_millis(3));
            timer.advance_clock(Duration::ZERO);
            if round % 4 == 1 {
                timer.shrink();
            }
            drop(timer);
        }
        expected += 5 * 40 + 5 + 5;
    }
    drop(work);
    worker.join().unwrap();
    assert_eq!(tally.drops.load(Ordering::SeqCst), expected, "every closure dropped once");
    assert!(tally.runs.load(Ordering::SeqCst) <= 100 * 5, "only the fired rounds ran");
}

/// What a thread-local keeps until its thread exits.
struct LateUser {
    timer: Option<Timer>,
    handles: Vec<TimerHandle>,
    tally: Arc<Tally>,
}

impl Drop for LateUser {
    fn drop(&mut self) {
        let timer = self.timer.take().expect("a timer");
        for handle in self.handles.drain(..).step_by(2) {
            assert!(handle.cancel(), "a pending task cancelled from a thread-local's drop");
        }
        for _ in 0..300 {
            for handle in one_of_each(&timer, &self.tally, Duration::from_secs(7)) {
                assert!(handle.cancel());
            }
        }
        let kept = one_of_each(&timer, &self.tally, Duration::from_secs(7));
        timer.shrink();
        assert!(kept.iter().all(TimerHandle::is_pending));
        drop(timer);
        assert!(kept.iter().all(|handle| !handle.is_pending() && !handle.cancel()));
    }
}

thread_local! {
    static LATE: RefCell<Option<LateUser>> = const { RefCell::new(None) };
}

#[test]
fn a_thread_locals_drop_after_the_caches_are_gone_is_exactly_once() {
    for first in [true, false] {
        let tally = Arc::new(Tally::default());
        let thread_tally = Arc::clone(&tally);
        std::thread::spawn(move || {
            // Touched first, the user's thread-local is destroyed after the crate's (and touched
            // last, before them).
            if first {
                LATE.with(|late| drop(late.borrow()));
            }
            let (_clock, timer) = manual();
            let mut handles = Vec::new();
            for _ in 0..100 {
                handles.extend(one_of_each(&timer, &thread_tally, Duration::from_secs(3)));
            }
            for handle in handles.drain(..250) {
                assert!(handle.cancel());
            }
            timer.shrink();
            let user = LateUser { timer: Some(timer), handles, tally: Arc::clone(&thread_tally) };
            LATE.with(|late| *late.borrow_mut() = Some(user));
        })
        .join()
        .unwrap();
        let scheduled = 500 + 300 * 5 + 5;
        assert_eq!(tally.drops.load(Ordering::SeqCst), scheduled, "first: {first}");
        assert_eq!(tally.runs.load(Ordering::SeqCst), 0);
    }
}
