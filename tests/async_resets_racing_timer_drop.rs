//! `Sleep`s and `Interval`s re-armed (earlier, later, to a passed instant, after completing) and
//! polled from tokio workers while the driver fires them and, mid-way, the last reference to the
//! timer is dropped: the futures keep only their own way back to the timer. No sleep completes
//! before the deadline it was last reset to, no interval tick before the instant it reports or the
//! instant it was last reset to, nothing panics, and every pending future is woken by the drop
//! (a future that is not hangs its task, and the watchdog fails the test).
#![cfg(feature = "async")]

mod common;

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use common::{watched, SplitMix};
use delaywheel::{Interval, MissedTickBehavior, Sleep, TaskExecution, Timer};

const TASKS: u64 = 48;
const STEPS: usize = 40;

/// Awaits `sleep`, or its death once the timer is gone: whether it completed.
async fn finish(sleep: &mut Sleep, gone: &AtomicBool) -> bool {
    poll_fn(|cx| match Pin::new(&mut *sleep).poll(cx) {
        Poll::Ready(()) => Poll::Ready(true),
        Poll::Pending if gone.load(Ordering::SeqCst) && sleep.error().is_some() => Poll::Ready(false),
        Poll::Pending => Poll::Pending,
    })
    .await
}

/// Polls `sleep` once.
async fn poke(sleep: &mut Sleep) -> bool {
    poll_fn(|cx| Poll::Ready(Pin::new(&mut *sleep).poll(cx).is_ready())).await
}

fn instant(rng: &mut SplitMix) -> Instant {
    let now = Instant::now();
    match rng.range(0, 3) {
        0 => now.checked_sub(Duration::from_micros(rng.range(0, 2_000))).unwrap_or(now),
        1 => now + Duration::from_micros(rng.range(0, 800)),
        _ => now + Duration::from_micros(rng.range(0, 4_000)),
    }
}

async fn sleeper(mut sleep: Sleep, gone: Arc<AtomicBool>, completed: Arc<AtomicUsize>, seed: u64) {
    let mut rng = SplitMix(seed);
    for _ in 0..STEPS {
        for _ in 0..rng.range(0, 3) {
            if poke(&mut sleep).await {
                assert!(Instant::now() >= sleep.deadline(), "a sleep completed early");
            }
            tokio::task::yield_now().await;
        }
        sleep.reset(instant(&mut rng));
        if rng.next() % 3 == 0 {
            continue;
        }
        if finish(&mut sleep, &gone).await {
            assert!(Instant::now() >= sleep.deadline(), "a sleep completed early");
            completed.fetch_add(1, Ordering::SeqCst);
        } else {
            assert!(gone.load(Ordering::SeqCst), "a sleep died before the timer was dropped");
        }
    }
}

async fn ticker(mut interval: Interval, gone: Arc<AtomicBool>, completed: Arc<AtomicUsize>, seed: u64) {
    let mut rng = SplitMix(seed);
    // The first tick is due at the interval's creation.
    let mut not_before = None;
    for _ in 0..STEPS {
        match rng.range(0, 5) {
            0 => {
                let at = instant(&mut rng);
                not_before = Some(at);
                interval.reset_at(at);
            }
            1 => {
                let after = Duration::from_micros(rng.range(0, 3_000));
                not_before = Some(Instant::now() + after);
                interval.reset_after(after);
            }
            2 => {
                not_before = Some(Instant::now());
                interval.reset_immediately();
            }
            _ => {}
        }
        let tick = poll_fn(|cx| match interval.poll_tick(cx) {
            Poll::Ready(at) => Poll::Ready(Some(at)),
            Poll::Pending if gone.load(Ordering::SeqCst) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        })
        .await;
        if let Some(at) = tick {
            assert!(Instant::now() >= at, "an interval ticked before the instant it reports");
            if let Some(not_before) = not_before.take() {
                assert!(at >= not_before, "an interval ticked before the instant it was reset to");
            }
            completed.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn round(seed: u64) {
    let mut rng = SplitMix(seed);
    let execution = if rng.next() % 2 == 0 { TaskExecution::OnDriver } else { TaskExecution::Threads(2) };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    let timer = Timer::builder().tick(Duration::from_millis(1)).wheel_size(4).execution(execution).build();
    let gone = Arc::new(AtomicBool::new(false));
    let completed = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let (gone, completed) = (Arc::clone(&gone), Arc::clone(&completed));
            let seed = rng.next();
            if t % 2 == 0 {
                let sleep = timer.sleep(Duration::from_micros(rng.range(0, 3_000)));
                runtime.spawn(sleeper(sleep, gone, completed, seed))
            } else {
                let mut interval = timer.interval(Duration::from_micros(rng.range(500, 3_000)));
                let behaviours =
                    [MissedTickBehavior::Burst, MissedTickBehavior::Delay, MissedTickBehavior::Skip];
                interval.set_missed_tick_behavior(behaviours[t as usize % 3]);
                runtime.spawn(ticker(interval, gone, completed, seed))
            }
        })
        .collect();
    std::thread::sleep(Duration::from_millis(rng.range(0, 60)));
    // Set first: a poll that finds the future pending after the drop then ends its wait.
    gone.store(true, Ordering::SeqCst);
    drop(timer);
    runtime.block_on(async {
        for task in tasks {
            task.await.unwrap();
        }
    });
}

#[test]
fn sleeps_and_intervals_re_armed_racing_the_driver_and_the_timers_drop_are_never_early() {
    watched("async resets racing the timer's drop", || {
        for seed in 0..8 {
            round(0xD20F + seed);
        }
    });
}
