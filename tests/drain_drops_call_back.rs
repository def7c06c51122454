//! Closures a drain drops (a shutdown's, a timed shutdown's, a drop's) whose own `Drop` calls back
//! into the same timer: `advance_clock`, `shutdown`, `schedule`, `cancel` of another task,
//! `stats()`, `shrink()`. None of them may deadlock or panic, and every task is accounted for
//! once. Each scenario runs on a thread of its own, watched: a deadlock fails the test instead of
//! hanging it.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, Weak};
use std::time::Duration;

use common::{ms, watched, DEADLOCK};
use delaywheel::{ManualClock, TaskExecution, Timer, TimerHandle};

/// What a dropped closure calls back into.
#[derive(Clone, Copy, Debug)]
enum Call {
    Advance,
    Shutdown,
    Schedule,
    Cancel,
    Stats,
    Shrink,
}

const CALLS: [Call; 6] =
    [Call::Advance, Call::Shutdown, Call::Schedule, Call::Cancel, Call::Stats, Call::Shrink];

/// A closure's captures: on drop, makes `call` on the timer (reached through `timer`, or for a
/// cancel through `other`, which it also resets and reads first) and counts the drop.
struct CallsBack {
    call: Call,
    timer: Arc<Mutex<Weak<Timer>>>,
    other: Arc<Mutex<Option<TimerHandle>>>,
    dropped: Arc<AtomicUsize>,
}

impl Drop for CallsBack {
    fn drop(&mut self) {
        self.dropped.fetch_add(1, Ordering::SeqCst);
        if let Call::Cancel = self.call {
            if let Some(other) = self.other.lock().unwrap().take() {
                other.reset(ms(5));
                let _ = (other.deadline(), other.is_pending());
                other.cancel();
            }
            return;
        }
        let Some(timer) = self.timer.lock().unwrap().upgrade() else { return };
        match self.call {
            Call::Advance => drop(timer.advance_clock(Duration::ZERO)),
            Call::Shutdown => drop(timer.shutdown()),
            Call::Schedule => drop(timer.schedule(ms(1), || {})),
            Call::Cancel => unreachable!(),
            Call::Stats => drop(timer.stats()),
            Call::Shrink => timer.shrink(),
        }
    }
}

/// A timer with one task per call that calls back when dropped, and a plain task the cancelling
/// one cancels: returns the timer, the drop count, and the scheduled count.
fn timer_with_callbacks(executors: bool) -> (ManualClock, Arc<Timer>, Arc<AtomicUsize>, usize) {
    let clock = ManualClock::new();
    let builder = Timer::builder().tick(ms(1)).wheel_size(8).clock(clock.clone()).manual();
    let builder = if executors { builder.execution(TaskExecution::Threads(1)) } else { builder };
    let timer = Arc::new(builder.build());
    let slot = Arc::new(Mutex::new(Arc::downgrade(&timer)));
    let dropped = Arc::new(AtomicUsize::new(0));
    // Due with the cancelling closure's task: the drain takes both out of one bucket.
    let other = Arc::new(Mutex::new(Some(timer.schedule(ms(310), || {}))));
    for (i, call) in CALLS.into_iter().enumerate() {
        let back = CallsBack {
            call,
            timer: Arc::clone(&slot),
            other: Arc::clone(&other),
            dropped: Arc::clone(&dropped),
        };
        timer.schedule(ms(10 + i as u64 * 100), move || drop(back));
    }
    (clock, timer, dropped, CALLS.len() + 1)
}

#[test]
fn closures_dropped_by_a_shutdown_call_back_into_their_timer() {
    for executors in [false, true] {
        watched("shutdown", move || {
            let (_clock, timer, dropped, scheduled) = timer_with_callbacks(executors);
            let unfired = timer.shutdown();
            assert_eq!(unfired.len(), scheduled);
            drop(unfired);
            assert_eq!(dropped.load(Ordering::SeqCst), CALLS.len());
        });
    }
}

#[test]
fn closures_dropped_by_a_timed_shutdown_call_back_into_their_timer() {
    for executors in [false, true] {
        watched("shutdown_timeout", move || {
            let (_clock, timer, dropped, scheduled) = timer_with_callbacks(executors);
            let unfired = timer.shutdown_timeout(ms(10));
            assert_eq!(unfired.len(), scheduled);
            drop(unfired);
            assert_eq!(dropped.load(Ordering::SeqCst), CALLS.len());
        });
    }
}

/// The drop of the timer: no `Timer` is left to call (the closures' `Weak` no longer upgrades),
/// so what a dropped closure can reach is a handle of another task: reset, read and cancel it.
#[test]
fn closures_dropped_by_a_drop_call_back_into_their_timer() {
    for executors in [false, true] {
        watched("drop", move || {
            let (_clock, timer, dropped, _) = timer_with_callbacks(executors);
            drop(timer);
            assert_eq!(dropped.load(Ordering::SeqCst), CALLS.len());
        });
    }
}

/// Inside a task (the advance holds its lock): the task shuts the timer down and drops what came
/// back, whose closures call back.
#[test]
fn closures_dropped_inside_a_task_call_back_into_their_timer() {
    for executors in [false, true] {
        watched("inside", move || {
            let (clock, timer, dropped, scheduled) = timer_with_callbacks(executors);
            let weak = Arc::downgrade(&timer);
            let (tx, rx) = mpsc::channel();
            timer.schedule(ms(1), move || {
                let unfired = weak.upgrade().unwrap().shutdown();
                let returned = unfired.len();
                drop(unfired);
                tx.send(returned).unwrap();
            });
            clock.advance(ms(1));
            timer.advance_clock(Duration::ZERO);
            assert_eq!(rx.recv_timeout(DEADLOCK).unwrap(), scheduled);
            assert_eq!(dropped.load(Ordering::SeqCst), CALLS.len());
            drop(timer);
        });
    }
}
