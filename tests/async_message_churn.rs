//! A tokio server's shape, on a multi-thread runtime: a thousand connection tasks, each holding an
//! idle `Sleep` that every message re-arms (`Sleep::reset`), while messages also make a task drop
//! its sleep mid-wait, hand it to another task that awaits it there (a `Sleep` is `Unpin` and
//! `Send`), or run a request under a `Timeout`; a tenth of the tasks tick an `Interval` in a
//! `select!` with their channel, reset by messages. The timer runs on its own driver thread, on
//! executor threads, on a `Timer::drive` future on the runtime's workers, or on both a driver thread
//! and two drive futures at once, on several wheel shapes.
//!
//! No sleep, timeout or tick completes before its deadline (on the timer's clock and on
//! `Instant::now()`), none whose deadline passed is left waiting (a watchdog far beyond any
//! lateness), and once every task has ended the timer holds nothing.
#![cfg(feature = "async")]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{ms, SplitMix};
use delaywheel::{MissedTickBehavior, Sleep, TaskExecution, Timer, TimerBuilder};
use tokio::sync::mpsc;

/// Far beyond any lateness: a sleep still waiting this long after its deadline lost its wake-up.
const LOST: Duration = Duration::from_secs(10);

#[derive(Default)]
struct Counts {
    fired: AtomicU64,
    resets: AtomicU64,
    moved: AtomicU64,
    timeouts: AtomicU64,
    ticks: AtomicU64,
}

/// Awaits `sleep`; fails if it completes before its deadline or has not completed [`LOST`] after.
async fn await_sleep(timer: &Timer, sleep: &mut Sleep, what: &str) {
    let deadline = sleep.deadline();
    assert_eq!(sleep.error(), None, "{what}: refused");
    let wait = deadline.saturating_duration_since(timer.now()) + LOST;
    match tokio::time::timeout(wait, &mut *sleep).await {
        Ok(()) => {
            assert!(timer.now() >= deadline && Instant::now() >= deadline, "{what}: completed early");
        }
        Err(_) => panic!(
            "{what}: lost wake-up: deadline passed {:?} ago, elapsed {}, {} pending",
            timer.now().saturating_duration_since(deadline),
            sleep.is_elapsed(),
            timer.len()
        ),
    }
}

/// A connection: its idle sleep re-armed by messages; some messages drop it, move it to
/// `moved`, or run a request under a timeout. When the channel closes, it awaits its last sleep.
async fn connection(
    timer: Arc<Timer>,
    id: u64,
    mut messages: mpsc::Receiver<u64>,
    moved: mpsc::UnboundedSender<Sleep>,
    counts: Arc<Counts>,
) {
    let mut rng = SplitMix(id);
    let mut idle = timer.sleep(ms(rng.range(1, 16)));
    loop {
        tokio::select! {
            message = messages.recv() => {
                let Some(message) = message else { break };
                match message % 10 {
                    0 => idle = timer.sleep(ms(rng.range(1, 16))), // the old one dropped mid-wait
                    1 => {
                        let old = std::mem::replace(&mut idle, timer.sleep(ms(rng.range(1, 16))));
                        counts.moved.fetch_add(1, Ordering::Relaxed);
                        let _ = moved.send(old);
                    }
                    2 => {
                        let request = timer.timeout(ms(rng.range(0, 4)), std::future::pending::<()>());
                        let limit = request.deadline();
                        let outcome = tokio::time::timeout(LOST + ms(5), request).await;
                        assert!(matches!(outcome, Ok(Err(_))), "a timeout never elapsed");
                        assert!(timer.now() >= limit, "a timeout elapsed early");
                        counts.timeouts.fetch_add(1, Ordering::Relaxed);
                    }
                    _ => {
                        idle.reset(timer.now() + ms(rng.range(0, 12)));
                        counts.resets.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            () = &mut idle => {
                let deadline = idle.deadline();
                assert!(timer.now() >= deadline && Instant::now() >= deadline, "an idle sleep completed early");
                counts.fired.fetch_add(1, Ordering::Relaxed);
                idle.reset(timer.now() + ms(rng.range(1, 20)));
            }
        }
    }
    await_sleep(&timer, &mut idle, "last idle sleep").await;
}

/// Awaits every sleep handed over, each in a task of its own.
async fn adopter(timer: Arc<Timer>, mut moved: mpsc::UnboundedReceiver<Sleep>) {
    let mut adopted = tokio::task::JoinSet::new();
    while let Some(mut sleep) = moved.recv().await {
        let timer = Arc::clone(&timer);
        adopted.spawn(async move { await_sleep(&timer, &mut sleep, "moved sleep").await });
    }
    while let Some(done) = adopted.join_next().await {
        done.unwrap();
    }
}

/// A task ticking an interval in a `select!` with its channel; messages reset the interval.
async fn ticker(timer: Arc<Timer>, id: u64, mut messages: mpsc::Receiver<u64>, counts: Arc<Counts>) {
    let behaviours = [MissedTickBehavior::Burst, MissedTickBehavior::Delay, MissedTickBehavior::Skip];
    let mut interval = timer.interval(ms(3 + id % 5));
    interval.set_missed_tick_behavior(behaviours[id as usize % 3]);
    loop {
        tokio::select! {
            message = messages.recv() => match message {
                Some(m) if m % 3 == 0 => interval.reset(),
                Some(m) if m % 3 == 1 => interval.reset_after(ms(m % 7)),
                Some(_) => {}
                None => break,
            },
            due = interval.tick() => {
                assert!(timer.now() >= due, "a tick came early");
                counts.ticks.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// `tasks` tasks, `rounds` rounds of about `tasks` messages each to random tasks.
async fn churn(timer: Arc<Timer>, tasks: u64, rounds: u64, seed: u64) -> Arc<Counts> {
    let counts = Arc::new(Counts::default());
    let (moved_tx, moved_rx) = mpsc::unbounded_channel();
    let adopter = tokio::spawn(adopter(Arc::clone(&timer), moved_rx));
    let mut senders = Vec::new();
    let mut joins = Vec::new();
    for id in 0..tasks {
        let (tx, rx) = mpsc::channel(4);
        senders.push(tx);
        let (timer, counts) = (Arc::clone(&timer), Arc::clone(&counts));
        joins.push(if id % 10 == 9 {
            tokio::spawn(ticker(timer, id, rx, counts))
        } else {
            tokio::spawn(connection(timer, seed * tasks + id, rx, moved_tx.clone(), counts))
        });
    }
    drop(moved_tx);
    let mut rng = SplitMix(seed);
    for round in 0..rounds {
        for _ in 0..tasks {
            let to = rng.range(0, tasks) as usize;
            let _ = senders[to].try_send(rng.next());
        }
        if round % 4 == 0 {
            tokio::time::sleep(ms(1)).await;
        } else {
            tokio::task::yield_now().await;
        }
    }
    drop(senders);
    for join in joins {
        join.await.unwrap();
    }
    adopter.await.unwrap();
    counts
}

fn runtime(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_time().build().unwrap()
}

/// One churn on a timer from `builder`, driven by its own thread (`threads`), by `drives` drive
/// futures, or both; then the timer is dropped and the drive futures must end.
fn run(builder: TimerBuilder, threads: bool, drives: usize, workers: usize, seed: u64) {
    let rt = runtime(workers);
    let timer = Arc::new(if threads { builder.build() } else { builder.manual().build() });
    let drives: Vec<_> = (0..drives)
        .map(|_| rt.spawn(timer.drive(|at: Instant| tokio::time::sleep_until(at.into()))))
        .collect();
    let counts = rt.block_on(churn(Arc::clone(&timer), 1000, 150, seed));
    assert!(counts.fired.load(Ordering::Relaxed) + counts.ticks.load(Ordering::Relaxed) > 0);
    assert!(counts.resets.load(Ordering::Relaxed) > 0 && counts.moved.load(Ordering::Relaxed) > 0);
    assert!(counts.timeouts.load(Ordering::Relaxed) > 0);
    assert_eq!(timer.len(), 0, "every future ended, yet the timer holds tasks");
    assert_eq!(timer.stats().pending, 0);
    drop(Arc::try_unwrap(timer).expect("the tasks let go of the timer"));
    rt.block_on(async {
        for drive in drives {
            tokio::time::timeout(LOST, drive)
                .await
                .expect("the timer's drop ends its drive futures")
                .unwrap();
        }
    });
}

fn tick_1ms() -> TimerBuilder {
    Timer::builder().tick(ms(1))
}

#[test]
fn on_a_driver_thread_nothing_is_early_or_lost() {
    run(tick_1ms(), true, 0, 2, 1);
    run(tick_1ms(), true, 0, 4, 2);
}

#[test]
fn on_a_drive_future_nothing_is_early_or_lost() {
    run(tick_1ms(), false, 1, 2, 3);
    run(tick_1ms(), false, 1, 4, 4);
}

#[test]
fn on_two_drive_futures_beside_a_driver_thread_nothing_is_early_or_lost() {
    run(tick_1ms(), true, 2, 3, 5);
}

#[test]
fn on_executor_threads_nothing_is_early_or_lost() {
    run(tick_1ms().execution(TaskExecution::Threads(2)), true, 0, 3, 6);
    run(tick_1ms().execution(TaskExecution::Threads(2)), false, 1, 3, 7);
}

#[test]
fn on_odd_wheels_nothing_is_early_or_lost() {
    // Tiny ticks on a two-slot wheel (many levels, cascades on every advance), the seeds'
    // tick-driven configuration, and a prepared capacity on a three-slot wheel.
    let wheels = [
        Timer::builder().tick(Duration::from_micros(10)).wheel_size(2),
        Timer::builder().tick(ms(10)).wheel_size(60),
        Timer::builder().tick(Duration::from_micros(100)).wheel_size(3).capacity(10_000),
    ];
    for (k, builder) in wheels.into_iter().enumerate() {
        run(builder, k % 2 == 0, k % 2, 3, 8 + k as u64);
    }
}
