//! An executor whose waker polls its task inline, on the waking thread (as some actor and embedded
//! executors do): the task's code then runs inside the timer's delivery of wake-ups, on the driver
//! thread, an executor thread, a thread calling `advance_clock`, or inside a tokio worker's
//! `Timer::drive`. There it re-arms its sleep (also to a passed instant), makes and drops other
//! sleeps, schedules and cancels callbacks, inserts and removes values of a delay queue, and reads
//! the timer's views. Nothing deadlocks, no sleep completes early, every task ends; and when the
//! last task to end holds the last reference to the timer, the timer is dropped inside that
//! delivery, and that too ends cleanly (a drive future completes).
#![cfg(feature = "async")]

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Wake, Waker};
use std::time::{Duration, Instant};

use common::{watched, SplitMix};
use delaywheel::queue::DelayQueue;
use delaywheel::{ManualClock, TaskExecution, Timer};

type BoxedTask = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A task polled by whoever wakes it, at once.
struct InlineTask {
    future: Mutex<Option<BoxedTask>>,
    /// A wake that came while another thread was polling: that poll polls again.
    rewake: AtomicBool,
    done: AtomicBool,
}

impl Wake for InlineTask {
    fn wake(self: Arc<Self>) {
        InlineTask::poll(&self);
    }
}

impl InlineTask {
    fn spawn(future: impl Future<Output = ()> + Send + 'static) -> Arc<InlineTask> {
        let task = Arc::new(InlineTask {
            future: Mutex::new(Some(Box::pin(future))),
            rewake: AtomicBool::new(false),
            done: AtomicBool::new(false),
        });
        InlineTask::poll(&task);
        task
    }

    fn poll(self: &Arc<Self>) {
        self.rewake.store(true, Ordering::SeqCst);
        // A wake from inside the task's own poll, or racing another thread's poll, leaves
        // `rewake` set for the poll under way.
        while self.rewake.swap(false, Ordering::SeqCst) {
            let Ok(mut slot) = self.future.try_lock() else { return };
            let Some(future) = slot.as_mut() else { return };
            let waker = Waker::from(Arc::clone(self));
            if future.as_mut().poll(&mut Context::from_waker(&waker)).is_ready() {
                *slot = None;
                self.done.store(true, Ordering::SeqCst);
                return;
            }
            drop(slot);
        }
    }
}

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

/// Forty rounds of: await the sleep, then use the timer and the queue from inside the wake.
async fn body(timer: Arc<Timer>, id: u64, fired: Arc<AtomicU64>, queue: Arc<DelayQueue<u64>>) {
    let mut rng = SplitMix(id);
    let mut sleep = timer.sleep(us(rng.range(0, 3_000)));
    for round in 0..40 {
        let deadline = sleep.deadline();
        (&mut sleep).await;
        assert!(timer.now() >= deadline, "a sleep completed early");
        let other = timer.sleep(us(rng.range(0, 2_000)));
        let fired = Arc::clone(&fired);
        let callback = timer.schedule(us(rng.range(0, 2_000)), move || {
            fired.fetch_add(1, Ordering::Relaxed);
        });
        if rng.next() % 3 == 0 {
            callback.cancel();
        }
        drop(other);
        let key = queue.insert(id * 1_000 + round, us(rng.range(0, 1_000)));
        if rng.next() % 2 == 0 {
            queue.remove(&key);
        }
        let _ = (timer.len(), timer.stats().pending, timer.next_wakeup());
        if rng.next() % 5 == 0 {
            sleep.reset(timer.now() - us(10)); // passed: due by the next advance
        } else {
            sleep.reset(timer.now() + us(rng.range(0, 3_000)));
        }
    }
}

fn spawn_all(timer: &Arc<Timer>, n: u64) -> Vec<Arc<InlineTask>> {
    let queue = Arc::new(DelayQueue::new());
    let fired = Arc::new(AtomicU64::new(0));
    (0..n)
        .map(|id| InlineTask::spawn(body(Arc::clone(timer), id, Arc::clone(&fired), Arc::clone(&queue))))
        .collect()
}

/// Calls `step` until every task ended and the timer is empty.
fn run_to_the_end(timer: &Timer, tasks: &[Arc<InlineTask>], step: impl Fn()) {
    while !tasks.iter().all(|task| task.done.load(Ordering::SeqCst)) || !timer.is_empty() {
        step();
    }
}

fn on(timer: Timer) {
    let timer = Arc::new(timer);
    let tasks = spawn_all(&timer, 200);
    run_to_the_end(&timer, &tasks, || std::thread::sleep(us(200)));
}

#[test]
fn woken_on_the_driver_thread() {
    watched("driver thread", || on(Timer::builder().tick(us(100)).build()));
}

#[test]
fn woken_on_executor_threads() {
    watched("executor threads", || {
        on(Timer::builder().tick(us(100)).execution(TaskExecution::Threads(2)).build())
    });
}

#[test]
fn woken_inside_advance_clock() {
    watched("advance_clock", || {
        let clock = ManualClock::new();
        let timer =
            Arc::new(Timer::builder().tick(us(100)).wheel_size(4).clock(clock.clone()).manual().build());
        let tasks = spawn_all(&timer, 200);
        run_to_the_end(&timer, &tasks, || {
            clock.advance(us(37));
            timer.advance_clock(Duration::ZERO);
        });
    });
}

#[test]
fn woken_inside_a_drive_future() {
    watched("drive future", || {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build().unwrap();
        let timer = Timer::builder().tick(us(100)).manual().build();
        let _drive = rt.spawn(timer.drive(|at: Instant| tokio::time::sleep_until(at.into())));
        on(timer);
    });
}

/// The tasks hold the only references to the timer: the last to end drops it where it is woken.
fn last_reference_in_a_wake(timer: Timer) {
    let timer = Arc::new(timer);
    let tasks = spawn_all(&timer, 100);
    let weak = Arc::downgrade(&timer);
    drop(timer);
    while !tasks.iter().all(|task| task.done.load(Ordering::SeqCst)) {
        std::thread::sleep(us(500));
    }
    assert_eq!(weak.strong_count(), 0, "the last task to end dropped the timer");
}

#[test]
fn the_timer_dropped_by_a_task_woken_on_its_driver_or_executor_threads() {
    watched("last reference", || {
        for _ in 0..2 {
            last_reference_in_a_wake(Timer::builder().tick(us(100)).build());
            last_reference_in_a_wake(
                Timer::builder().tick(us(100)).execution(TaskExecution::Threads(2)).build(),
            );
        }
    });
}

#[test]
fn the_timer_dropped_by_a_task_woken_inside_its_drive_future() {
    watched("last reference, drive future", || {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build().unwrap();
        for _ in 0..2 {
            let timer = Timer::builder().tick(us(100)).manual().build();
            let drive = rt.spawn(timer.drive(|at: Instant| tokio::time::sleep_until(at.into())));
            last_reference_in_a_wake(timer);
            rt.block_on(drive).unwrap();
        }
    });
}
