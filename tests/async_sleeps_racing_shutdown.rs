//! Tokio tasks sleeping, re-arming and dropping `Sleep`s and `Timeout`s on a driven timer (on
//! the driver and on executor threads) while it shuts down: no sleep completes before its
//! deadline, nothing panics, every task sees the end (a refused sleep, or the shutdown signal
//! while its sleep stays pending), and nothing is left pending.
#![cfg(feature = "async")]

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::task::Poll;
use std::time::{Duration, Instant};

use common::{ms, SplitMix};
use delaywheel::{TaskExecution, Timer};

fn round(execution: TaskExecution, seed: u64) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(3).build().unwrap();
    let timer = Arc::new(Timer::builder().tick(ms(1)).wheel_size(8).execution(execution).build());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let early = Arc::new(AtomicUsize::new(0));
    let completed = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..12u64)
        .map(|t| {
            let (timer, early, completed) = (Arc::clone(&timer), Arc::clone(&early), Arc::clone(&completed));
            let mut stop = stop_rx.clone();
            runtime.spawn(async move {
                let mut rng = SplitMix(seed * 100 + t);
                loop {
                    let Ok(mut sleep) = timer.try_sleep(Duration::from_micros(rng.range(0, 3_000))) else {
                        return;
                    };
                    match rng.range(0, 4) {
                        0 => sleep.reset(timer.now() + Duration::from_micros(rng.range(0, 2_000))),
                        1 => {
                            // A timeout whose inner future is another sleep, possibly the earlier.
                            let inner = timer.sleep(Duration::from_micros(rng.range(0, 2_000)));
                            let due = inner.deadline();
                            let timeout = timer.timeout(Duration::from_micros(rng.range(0, 2_000)), inner);
                            let limit = timeout.deadline();
                            tokio::select! {
                                out = timeout => {
                                    if timer.now() < if out.is_ok() { due } else { limit } {
                                        early.fetch_add(1, Ordering::SeqCst);
                                    }
                                }
                                _ = stop.changed() => return,
                            }
                            continue;
                        }
                        2 => {
                            // Polled once, then dropped pending (its task cancelled).
                            std::future::poll_fn(|cx| {
                                let _ = Pin::new(&mut sleep).poll(cx);
                                Poll::Ready(())
                            })
                            .await;
                            continue;
                        }
                        _ => {}
                    }
                    let due = sleep.deadline();
                    tokio::select! {
                        () = &mut sleep => {
                            completed.fetch_add(1, Ordering::SeqCst);
                            if timer.now() < due {
                                early.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                        _ = stop.changed() => return,
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_micros(10_000 + seed % 7 * 1_000));
    // The shutdown comes once a sleep has completed: on a loaded machine, the runtime's threads
    // and the driver may not have run within the first milliseconds.
    let give_up = Instant::now() + Duration::from_secs(20);
    while completed.load(Ordering::SeqCst) == 0 && Instant::now() < give_up {
        std::thread::sleep(Duration::from_micros(200));
    }
    let unfired = timer.shutdown();
    drop(unfired); // each handed-back wake-up wakes its sleep once, which stays pending
    stop_tx.send(true).unwrap();
    runtime.block_on(async {
        for task in tasks {
            task.await.unwrap();
        }
    });
    assert_eq!(early.load(Ordering::SeqCst), 0, "{execution:?} seed {seed}: a sleep completed early");
    assert!(completed.load(Ordering::SeqCst) > 0, "{execution:?} seed {seed}: no sleep completed");
    assert_eq!(timer.len(), 0, "{execution:?} seed {seed}: left pending");
}

#[test]
fn sleeps_resets_and_timeouts_racing_a_shutdown_end_cleanly_and_never_early() {
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        for seed in 0..10 {
            round(TaskExecution::OnDriver, seed);
            round(TaskExecution::Threads(2), seed);
        }
        done_tx.send(()).unwrap();
    });
    done_rx.recv_timeout(Duration::from_secs(60)).expect("a task never ended (or a round failed)");
}
