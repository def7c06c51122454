//! Driver threads sharing one `ManualClock`: every advance wakes each driver through a listener
//! the clock runs under its listeners lock. Tasks that advance the clock, and timers built and
//! dropped (listeners added and removed) while other threads advance it, never deadlock, and
//! every task runs once.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

use common::ms;
use delaywheel::{ManualClock, Timer};

fn driven(clock: &ManualClock) -> Timer {
    Timer::builder().tick(ms(1)).wheel_size(8).clock(clock.clone()).build()
}

#[test]
fn tasks_advancing_the_clock_and_timers_coming_and_going_never_deadlock() {
    let (done_tx, done_rx) = mpsc::channel();
    thread::spawn(move || {
        let clock = ManualClock::new();
        let timers: Vec<Arc<Timer>> = (0..3).map(|_| Arc::new(driven(&clock))).collect();
        let ran = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let mut scheduled = 0;
        thread::scope(|s| {
            // Two threads move the clock, a third builds and drops timers on it (each adds a
            // listener, and removes it as it stops), some of them dropped from their own tasks.
            for _ in 0..2 {
                let (clock, stop) = (clock.clone(), Arc::clone(&stop));
                s.spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        clock.advance(Duration::from_micros(300));
                        thread::yield_now();
                    }
                });
            }
            let (clock2, stop2) = (clock.clone(), Arc::clone(&stop));
            s.spawn(move || {
                while !stop2.load(Ordering::Relaxed) {
                    let timer = driven(&clock2);
                    let c = clock2.clone();
                    let _ = timer.schedule(ms(1), move || c.advance(Duration::from_micros(100)));
                    thread::yield_now();
                    drop(timer);
                }
            });
            for round in 0..20_000u64 {
                let timer = &timers[(round % 3) as usize];
                let (ran, c) = (Arc::clone(&ran), clock.clone());
                let other = Arc::clone(&timers[((round + 1) % 3) as usize]);
                let _ = timer.schedule(ms(round % 4), move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                    // A task moves the clock its drivers wait on and schedules on another timer.
                    c.advance(Duration::from_micros(50));
                    let _ = other.schedule(ms(1), || {});
                });
                scheduled += 1;
            }
            let give_up = std::time::Instant::now() + Duration::from_secs(30);
            while ran.load(Ordering::SeqCst) < scheduled && std::time::Instant::now() < give_up {
                thread::sleep(ms(1));
            }
            stop.store(true, Ordering::Relaxed);
        });
        assert_eq!(ran.load(Ordering::SeqCst), scheduled, "a task never ran");
        for timer in timers {
            let _ = Arc::try_unwrap(timer).map(|t| t.shutdown());
        }
        done_tx.send(()).unwrap();
    });
    done_rx.recv_timeout(Duration::from_secs(60)).expect("deadlock: the test did not finish");
}
