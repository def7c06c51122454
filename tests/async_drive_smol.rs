//! `Timer::drive` on smol: its timer (async-io's) fires inside its reactor, holding the reactor's
//! lock, so the advance in the runtime sleep's waker runs there. Sleeps woken from there complete,
//! never early; a callback that calls `smol::block_on` on a future that needs the reactor runs in
//! the drive future's poll, where it completes: inside the reactor it would wait for the lock its
//! own thread holds, for good. A watchdog aborts the test binary if a scenario does not end within
//! a few seconds, rather than hang.
#![cfg(feature = "async")]

mod common;

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::ms;
use delaywheel::Timer;

/// Aborts the process unless dropped within its time (also when the scenario panics: the panic
/// drops it and fails the test as it is).
struct Watchdog(#[allow(dead_code)] mpsc::Sender<()>);

impl Watchdog {
    fn arm(name: &'static str, within: Duration) -> Watchdog {
        let (done, wait) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = wait.recv_timeout(within) {
                eprintln!("{name}: no end within {within:?}: deadlocked");
                std::process::abort();
            }
        });
        Watchdog(done)
    }
}

/// A timer with no driver thread on the system clock, tick 1 ms, and its drive future spawned on
/// smol's global executor with `smol::Timer::at`; `scenario` runs in `smol::block_on`, then the
/// timer shuts down and the drive future completes.
fn on_smol<F: std::future::Future<Output = ()>>(scenario: impl FnOnce(Arc<Timer>) -> F) {
    let timer = Arc::new(Timer::builder().tick(ms(1)).manual().build());
    smol::block_on(async {
        let driver = smol::spawn(timer.drive(smol::Timer::at));
        scenario(Arc::clone(&timer)).await;
        timer.shutdown();
        driver.await;
    });
}

/// 20 sleeps 1–20 ms out, awaited at once: each completes, never before its deadline.
#[test]
fn sleeps_driven_on_smol_complete_never_early() {
    let _watchdog = Watchdog::arm("smol sleeps", Duration::from_secs(5));
    on_smol(|timer| async move {
        let sleeps: Vec<_> = (1..=20)
            .map(|i| {
                let (due, sleep) = (timer.now() + ms(i), timer.sleep(ms(i)));
                smol::spawn(async move {
                    sleep.await;
                    assert!(Instant::now() >= due, "sleep {i} completed {:?} early", due - Instant::now());
                })
            })
            .collect();
        for sleep in sleeps {
            sleep.await;
        }
    });
}

/// Callbacks 1–10 ms out, each blocking on a 1 ms `smol::Timer` with `smol::block_on`, beside
/// sleeps due at the same ticks: every callback returns, once, never early, and every sleep
/// completes.
#[test]
fn a_callback_driven_on_smol_may_block_on_smol() {
    let _watchdog = Watchdog::arm("smol block_on in a callback", Duration::from_secs(5));
    let ran = Arc::new(Mutex::new(Vec::new()));
    let runs = Arc::clone(&ran);
    on_smol(|timer| async move {
        let mut sleeps = Vec::new();
        for i in 1..=10 {
            let (due, runs) = (timer.now() + ms(i), Arc::clone(&runs));
            timer.schedule_at(due, move || {
                smol::block_on(smol::Timer::after(ms(1)));
                runs.lock().unwrap().push((i, due, Instant::now()));
            });
            sleeps.push(smol::spawn(timer.sleep_until(due)));
        }
        for sleep in sleeps {
            sleep.await;
        }
        while runs.lock().unwrap().len() < 10 {
            smol::Timer::after(ms(1)).await;
        }
        // Room for a second run of any of them to show.
        smol::Timer::after(ms(20)).await;
    });
    let ran = ran.lock().unwrap().clone();
    assert!(ran.iter().all(|&(_, due, at)| at >= due), "never early");
    let mut ids: Vec<u64> = ran.iter().map(|run| run.0).collect();
    ids.sort_unstable();
    assert_eq!(ids, (1..=10).collect::<Vec<u64>>(), "each once");
}
