//! A task's closure whose `Drop` calls back into its own timer, from every place a closure is
//! dropped unrun: a cancel, a refused schedule, a shutdown's drain (the handed-back task dropped),
//! the timer's drop (through handles: the timer itself is gone by then), and a cancel that drops
//! the last reference to the timer. Nothing deadlocks or panics, on every kind of timer, and every
//! closure is dropped exactly once. Each case runs watched (`common::watched`): a deadlock fails
//! it instead of hanging it. (The drains' drops of closures calling back, every call on its own:
//! `drain_drops_call_back.rs`.)

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use common::{ms, watched, SplitMix};
use delaywheel::{ManualClock, TaskExecution, Timer, TimerHandle};

/// Runs its closure when dropped.
struct OnDrop(Option<Box<dyn FnOnce() + Send>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

fn on_drop(f: impl FnOnce() + Send + 'static) -> OnDrop {
    OnDrop(Some(Box::new(f)))
}

/// A kind of timer: its name and how to build one.
type Kind = (&'static str, fn() -> Timer);

/// Every kind of timer: manual or driven, on a manual or the system clock, tasks on the
/// advancing thread or on executor threads.
fn kinds() -> Vec<Kind> {
    vec![
        ("manual", || Timer::builder().clock(ManualClock::new()).manual().build()),
        ("manual, executors", || {
            let executors = TaskExecution::Threads(2);
            Timer::builder().clock(ManualClock::new()).manual().execution(executors).build()
        }),
        ("driver", Timer::new),
        ("driver, executors", || Timer::builder().execution(TaskExecution::Threads(2)).build()),
        ("driver on a manual clock", || Timer::builder().clock(ManualClock::new()).build()),
    ]
}

/// A closure's drop that uses every operation of the timer, if it is still there.
fn calls_back(timer: Weak<Timer>, drops: &Arc<AtomicUsize>) -> OnDrop {
    let drops = Arc::clone(drops);
    on_drop(move || {
        drops.fetch_add(1, Ordering::SeqCst);
        let Some(timer) = timer.upgrade() else { return };
        let _ = (timer.stats(), timer.len(), timer.next_wakeup());
        let handle = timer.schedule(ms(1), || {});
        handle.cancel();
        timer.advance_clock(Duration::ZERO);
        timer.shrink();
        let _ = timer.try_schedule(Duration::ZERO, || {});
    })
}

#[test]
fn drops_from_a_cancel_a_refused_schedule_and_a_shutdown_call_back_into_the_timer() {
    for (name, kind) in kinds() {
        watched(name, move || {
            let timer = Arc::new(kind());
            let drops = Arc::new(AtomicUsize::new(0));
            let guard = calls_back(Arc::downgrade(&timer), &drops);
            assert!(timer.schedule(ms(60_000), move || drop(guard)).cancel(), "{name}");
            assert_eq!(drops.load(Ordering::SeqCst), 1, "{name}: dropped by the cancel");
            // A closure whose drop shuts the timer down, dropped by a cancel while others wait.
            let weak = Arc::downgrade(&timer);
            let shuts_down = on_drop(move || drop(weak.upgrade().map(|timer| timer.shutdown())));
            let handle = timer.schedule(ms(60_000), move || drop(shuts_down));
            for _ in 0..10 {
                let guard = calls_back(Arc::downgrade(&timer), &drops);
                timer.schedule(ms(30_000), move || drop(guard));
            }
            assert!(handle.cancel(), "{name}");
            assert!(timer.is_empty(), "{name}: the shutdown took the rest");
            assert_eq!(drops.load(Ordering::SeqCst), 11, "{name}: the handed-back tasks were dropped");
            // Refused: the closure is dropped inside the schedule, and calls back into it.
            let guard = calls_back(Arc::downgrade(&timer), &drops);
            assert!(timer.try_schedule(ms(1), move || drop(guard)).is_err(), "{name}");
            assert_eq!(drops.load(Ordering::SeqCst), 12, "{name}");
        });
    }
}

#[test]
fn a_cancel_that_drops_the_last_reference_to_the_timer_stops_it() {
    for (name, kind) in kinds() {
        watched(name, move || {
            let timer = Arc::new(kind());
            let gone = Arc::new(AtomicBool::new(false));
            let (last, g) = (Arc::clone(&timer), Arc::clone(&gone));
            let guard = on_drop(move || {
                drop(last);
                g.store(true, Ordering::SeqCst);
            });
            let handle = timer.schedule(ms(60_000), move || drop(guard));
            let other = timer.schedule(ms(60_000), || {});
            drop(timer);
            assert!(handle.cancel(), "{name}");
            assert!(gone.load(Ordering::SeqCst), "{name}");
            assert!(!other.is_pending() && !other.cancel(), "{name}: the drop inside the cancel took it");
        });
    }
}

/// Drops that cancel and reset other tasks of the timer while its drop (`drop`) or its shutdown
/// drains it: every closure is dropped once, and no task is left pending.
fn drops_using_handles(name: &'static str, kind: fn() -> Timer, drop_timer: bool) {
    watched(name, move || {
        const TASKS: usize = 2_000;
        let timer = kind();
        let handles: Arc<Mutex<Vec<TimerHandle>>> = Arc::default();
        let drops = Arc::new(AtomicUsize::new(0));
        let mut rng = SplitMix(7);
        for _ in 0..TASKS {
            let (handles_of, drops, pick) = (Arc::clone(&handles), Arc::clone(&drops), rng.next());
            let guard = on_drop(move || {
                drops.fetch_add(1, Ordering::SeqCst);
                // Cloned out: the cancel drops a closure whose drop takes this lock.
                let other = {
                    let handles = handles_of.lock().unwrap();
                    handles[pick as usize % handles.len()].clone()
                };
                match pick % 3 {
                    0 => _ = other.cancel(),
                    1 => _ = other.reset(Duration::ZERO),
                    _ => _ = other.reset(ms(1_000_000)),
                }
            });
            let handle = timer.schedule(ms(1_000 + rng.range(0, 100_000)), move || drop(guard));
            handles.lock().unwrap().push(handle);
        }
        let (returned, cancelled) = if drop_timer {
            drop(timer);
            (0, None)
        } else {
            let returned = timer.shutdown().len();
            (returned, Some(timer.stats().cancelled))
        };
        assert_eq!(drops.load(Ordering::SeqCst), TASKS, "{name}: every closure dropped once");
        assert!(handles.lock().unwrap().iter().all(|h| !h.is_pending()), "{name}: a task left pending");
        if let Some(cancelled) = cancelled {
            assert_eq!(returned as u64 + cancelled, TASKS as u64, "{name}: returned + cancelled");
        }
    });
}

#[test]
fn drops_during_the_timers_drop_cancel_and_reset_other_tasks() {
    for (name, kind) in kinds() {
        drops_using_handles(name, kind, true);
    }
}

#[test]
fn drops_of_handed_back_tasks_cancel_and_reset_other_tasks() {
    for (name, kind) in kinds() {
        drops_using_handles(name, kind, false);
    }
}
