//! `Timer::shrink` waits for handle operations in progress on other threads, a `cancel` dropping
//! its closure at most; such a drop may itself wait for the shrinking thread. Each case here sets
//! that up deterministically (channels order the steps) and fails on the watchdog if the two wait
//! for each other:
//!
//! * a task shrinks while a closure's drop (in a `cancel` on another thread) advances the timer,
//!   whose advance lock the task's thread holds;
//! * a task on an executor thread shrinks while such a drop shuts the timer down, which waits for
//!   the executor threads;
//! * a thread shrinks while such a drop shrinks too: the first shrink waits for the drop's pin
//!   while holding what the second would wait for.

mod common;

use std::sync::{mpsc, Arc};
use std::time::Duration;

use common::{manual_timer, watched};
use delaywheel::{ManualClock, TaskExecution, Timer};

/// Runs its closure when dropped.
struct OnDrop(Option<Box<dyn FnOnce() + Send>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// Pages of slots all free, for a shrink to retire (and then to wait for a grace period).
fn empty_pages(timer: &Timer) {
    let spike: Vec<_> = (0..20_000).map(|_| timer.schedule(Duration::from_secs(60), || {})).collect();
    assert!(spike.iter().all(|h| h.cancel()));
}

/// Schedules a task whose closure, dropped by a `cancel`, says so on `pinned`, waits for `go`,
/// then runs `then` on the timer; returns its handle, for the cancel.
fn victim(
    timer: &Arc<Timer>,
    pinned: mpsc::Sender<()>,
    go: mpsc::Receiver<()>,
    then: impl FnOnce(&Timer) + Send + 'static,
) -> delaywheel::TimerHandle {
    let weak = Arc::downgrade(timer);
    let guard = OnDrop(Some(Box::new(move || {
        pinned.send(()).unwrap();
        go.recv().unwrap();
        // The other side is then in its shrink, or about to be.
        std::thread::sleep(Duration::from_millis(20));
        if let Some(timer) = weak.upgrade() {
            then(&timer);
        }
    })));
    timer.schedule(Duration::from_secs(60), move || drop(guard))
}

/// A task that waits until the victim's closure is being dropped, lets it go on, and shrinks.
fn shrinking_task(timer: &Arc<Timer>, pinned: mpsc::Receiver<()>, go: mpsc::Sender<()>) {
    let weak = Arc::downgrade(timer);
    timer.schedule(Duration::ZERO, move || {
        pinned.recv().unwrap();
        go.send(()).unwrap();
        if let Some(timer) = weak.upgrade() {
            timer.shrink();
        }
    });
}

#[test]
fn a_task_that_shrinks_does_not_wait_for_a_closures_drop_that_advances() {
    watched("shrink in a task, advance in a drop", || {
        let (_clock, timer): (ManualClock, Timer) = manual_timer(Duration::from_millis(1), 8);
        let timer = Arc::new(timer);
        empty_pages(&timer);
        let ((pinned_tx, pinned_rx), (go_tx, go_rx)) = (mpsc::channel(), mpsc::channel());
        let handle = victim(&timer, pinned_tx, go_rx, |timer| {
            timer.advance_clock(Duration::ZERO);
        });
        shrinking_task(&timer, pinned_rx, go_tx);
        let canceller = std::thread::spawn(move || handle.cancel());
        timer.advance_clock(Duration::ZERO);
        assert!(canceller.join().unwrap());
        timer.shrink();
    });
}

#[test]
fn an_executor_task_that_shrinks_does_not_wait_for_a_closures_drop_that_shuts_down() {
    watched("shrink on an executor, shutdown in a drop", || {
        let clock = ManualClock::new();
        let timer = Timer::builder()
            .tick(Duration::from_millis(1))
            .clock(clock.clone())
            .manual()
            .execution(TaskExecution::Threads(1))
            .build();
        let timer = Arc::new(timer);
        empty_pages(&timer);
        let ((pinned_tx, pinned_rx), (go_tx, go_rx)) = (mpsc::channel(), mpsc::channel());
        let handle = victim(&timer, pinned_tx, go_rx, |timer| drop(timer.shutdown()));
        shrinking_task(&timer, pinned_rx, go_tx);
        let canceller = std::thread::spawn(move || handle.cancel());
        timer.advance_clock(Duration::ZERO);
        assert!(canceller.join().unwrap());
        assert!(timer.is_empty());
    });
}

#[test]
fn a_shrink_does_not_wait_for_a_closures_drop_that_shrinks() {
    watched("shrink, and shrink in a drop", || {
        let (_clock, timer): (ManualClock, Timer) = manual_timer(Duration::from_millis(1), 8);
        let timer = Arc::new(timer);
        empty_pages(&timer);
        let ((pinned_tx, pinned_rx), (go_tx, go_rx)) = (mpsc::channel(), mpsc::channel());
        let handle = victim(&timer, pinned_tx, go_rx, Timer::shrink);
        let canceller = std::thread::spawn(move || handle.cancel());
        pinned_rx.recv().unwrap();
        go_tx.send(()).unwrap();
        timer.shrink();
        assert!(canceller.join().unwrap());
    });
}
