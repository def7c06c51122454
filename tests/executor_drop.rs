//! Dropping a timer whose executor threads are busy: when the drop returns, every task queued
//! for them and not started has had its closure dropped (its handle finds nothing pending), and
//! none starts afterwards, also while the threads are taking tasks from their channel, and while
//! the tasks cancel and reset one another and closures panic as they are dropped; and a shutdown
//! returns beside an executor task that advances its own timer.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use common::{manual_with_executors, ms};
use delaywheel::{TaskExecution, Timer, TimerHandle};

#[test]
fn a_drop_beside_a_blocked_executor_releases_the_queued_closures_before_it_returns() {
    let (clock, timer) = manual_with_executors(1);
    let (started_tx, started_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let _ = timer.schedule(ms(1), move || {
        started_tx.send(()).unwrap();
        let _ = release_rx.recv_timeout(Duration::from_secs(30));
    });
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    started_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    // Due and handed to the one executor thread, which is inside the blocked task.
    let resource = Arc::new(());
    let ran = Arc::new(AtomicUsize::new(0));
    let handles: Vec<TimerHandle> = (0..100)
        .map(|_| {
            let (r, ran) = (Arc::clone(&resource), Arc::clone(&ran));
            timer.schedule(ms(1), move || {
                ran.fetch_add(1, Ordering::SeqCst);
                drop(r);
            })
        })
        .collect();
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    drop(timer);
    assert_eq!(Arc::strong_count(&resource), 1, "queued closures outlive the drop");
    assert!(handles.iter().all(|h| !h.is_pending() && !h.cancel()), "a queued task is still pending");
    release_tx.send(()).unwrap();
    thread::sleep(ms(100));
    assert_eq!(ran.load(Ordering::SeqCst), 0, "a queued task ran after the drop");
}

#[test]
fn drops_racing_executor_threads_leave_no_task_to_start_after_them() {
    for round in 0..40 {
        let (clock, timer) = manual_with_executors(4);
        let after_drop = Arc::new(AtomicBool::new(false));
        let late = Arc::new(AtomicUsize::new(0));
        let handles: Vec<TimerHandle> = (0..2_000u64)
            .map(|i| {
                let (after_drop, late) = (Arc::clone(&after_drop), Arc::clone(&late));
                timer.schedule(ms(1 + i % 3), move || {
                    if after_drop.load(Ordering::SeqCst) {
                        late.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        clock.advance(ms(3));
        timer.advance_clock(Duration::ZERO);
        // Drop while the executors are busy taking the batch from their channel.
        for _ in 0..(round % 8) * 50 {
            std::hint::spin_loop();
        }
        drop(timer);
        // Each task was claimed by an executor before the drop returned (it may be just
        // starting: at most one per thread) or dropped by the drop: none is left to start later.
        let pending = handles.iter().filter(|h| h.is_pending() || h.cancel()).count();
        assert_eq!(pending, 0, "round {round}: tasks still pending after the drop returned");
        after_drop.store(true, Ordering::SeqCst);
        thread::sleep(ms(20));
        assert!(late.load(Ordering::SeqCst) <= 4, "round {round}: tasks started after the drop");
    }
}

/// Counts its drops, and panics in one of them when told to (the closure owning it unwinds).
struct Token {
    drops: Arc<AtomicUsize>,
    panics: bool,
}

impl Drop for Token {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        if self.panics && !thread::panicking() {
            panic!("a closure's drop panics");
        }
    }
}

#[test]
fn a_drop_racing_executors_whose_tasks_panic_and_move_others_drops_each_closure_once() {
    const TASKS: usize = 2_000;
    for round in 0..10u64 {
        let timer = Timer::builder().execution(TaskExecution::Threads(2)).build();
        let mut rng = common::SplitMix(round);
        let drops: Vec<Arc<AtomicUsize>> = (0..TASKS).map(|_| Arc::default()).collect();
        let (after_drop, late) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
        let others: Arc<std::sync::OnceLock<Vec<TimerHandle>>> = Arc::default();
        let handles: Vec<TimerHandle> = drops
            .iter()
            .map(|drops| {
                let token = Token { drops: Arc::clone(drops), panics: rng.next() % 7 == 0 };
                let (after_drop, late, others, pick) =
                    (Arc::clone(&after_drop), Arc::clone(&late), Arc::clone(&others), rng.next());
                timer.schedule(Duration::from_micros(rng.range(0, 20_000)), move || {
                    late.fetch_add(usize::from(after_drop.load(Ordering::SeqCst)), Ordering::SeqCst);
                    // The task moves or cancels another task, which may be queued for an executor.
                    if let Some(others) = others.get() {
                        let other = &others[pick as usize % others.len()];
                        match pick % 3 {
                            0 => _ = other.cancel(),
                            1 => _ = other.reset(Duration::ZERO),
                            _ => _ = other.reset(ms(5)),
                        }
                    }
                    drop(token);
                })
            })
            .collect();
        let _ = others.set(handles.clone());
        thread::sleep(Duration::from_micros(rng.range(0, 15_000)));
        drop(timer);
        after_drop.store(true, Ordering::SeqCst);
        // Each closure ran or was dropped by the drop, but those the two executors were running.
        let undropped = drops.iter().filter(|d| d.load(Ordering::SeqCst) == 0).count();
        assert!(undropped <= 2, "round {round}: {undropped} closures outlive the drop");
        assert!(handles.iter().all(|h| !h.is_pending()), "round {round}: a task is still pending");
        // The closures the executors were running are dropped when those tasks end: wait for
        // them (a while for a late start to show, and as long as a loaded machine takes).
        thread::sleep(ms(20));
        let give_up = Instant::now() + Duration::from_secs(20);
        while drops.iter().any(|d| d.load(Ordering::SeqCst) == 0) && Instant::now() < give_up {
            thread::sleep(ms(1));
        }
        assert!(late.load(Ordering::SeqCst) <= 2, "round {round}: tasks started after the drop");
        assert!(drops.iter().all(|d| d.load(Ordering::SeqCst) > 0), "round {round}: a closure never dropped");
        assert!(
            drops.iter().all(|d| d.load(Ordering::SeqCst) == 1),
            "round {round}: a closure dropped twice"
        );
    }
}

#[test]
fn a_shutdown_beside_an_executor_task_advancing_its_own_timer_returns() {
    let (clock, timer) = manual_with_executors(1);
    let timer = Arc::new(timer);
    let (started_tx, started_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let (advanced_tx, advanced_rx) = mpsc::channel();
    let inner = Arc::clone(&timer);
    let _ = timer.schedule(ms(1), move || {
        started_tx.send(()).unwrap();
        let _ = release_rx.recv_timeout(Duration::from_secs(30));
        // The shutdown has set its flag: this advance finds it and hands nothing over.
        inner.advance_clock(Duration::ZERO);
        advanced_tx.send(()).unwrap();
    });
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    started_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let (done_tx, done_rx) = mpsc::channel();
    let stopper = Arc::clone(&timer);
    thread::spawn(move || done_tx.send(stopper.shutdown().len()).unwrap());
    // The shutdown is joining the executor thread, which is inside the blocked task.
    thread::sleep(ms(100));
    release_tx.send(()).unwrap();
    advanced_rx.recv_timeout(Duration::from_secs(10)).expect("the task's advance waits for the shutdown");
    let unfired = done_rx.recv_timeout(Duration::from_secs(10)).expect("the shutdown waits for the task");
    assert_eq!(unfired, 0);
}
