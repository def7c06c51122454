//! The assembled shard core (`src/shard/core.rs`) on its real pieces: the shard lock, the pooled
//! headers with their `Wheel` state, and the wake-up tick. Payloads count their ends in std
//! atomics, observations kept out of loom's sight.
//!
//! * `a_schedule_racing_the_look_wakes_the_driver`: entries due at ticks 10 and 100, a look
//!   before the model published 10; the driver, woken at 10, advances (taking that entry), looks
//!   (`Core::before_sleep`) and sleeps until woken, until its look publishes 50, while the main
//!   thread schedules an entry due at 50 and wakes the driver if `Core::schedule` says so. A sleep
//!   that nothing cuts short is one past the deadline: loom reports it as a deadlock.
//! * `cancel_racing_advance`: a cancel of an entry due at tick 1, then a schedule, on one thread,
//!   against the advance to tick 1: the entry ends exactly once (cancelled or fired), and `len`
//!   counts exactly the entry scheduled after.

use std::sync::atomic::{AtomicUsize, Ordering};

use delaywheel::loom_internals::shard::core::{Core, Merge};
use loom::sync::Arc;
use loom::thread;

/// The deadline of the entry scheduled during the driver's look.
const DUE: u64 = 50;

/// The driver, woken at tick 10: advances, then looks and sleeps until woken, until its look
/// finds the entry due at [`DUE`].
fn drive(core: &Core<u64>) {
    let mut out = Vec::new();
    core.advance(10, &mut out, &mut Merge::default());
    assert_eq!(out.iter().map(|fired| fired.order()).collect::<Vec<_>>(), [(10, 0, 0)]);
    while core.before_sleep() != Some(DUE) {
        thread::park();
    }
}

/// Seeded fault `shard_core_wake_before_link`: the schedule reads the wake-up tick before its lock,
/// reads the 10 of the look before, and a look that missed the entry not yet linked leaves the
/// driver asleep (a deadlock).
#[test]
fn a_schedule_racing_the_look_wakes_the_driver() {
    loom::model(|| {
        // Leaked, not in an `Arc`: an execution that deadlocks unwinds with the driver parked,
        // and dropping loom objects then would panic again and abort the test.
        let core: &'static Core<u64> = Box::leak(Box::new(Core::new(1)));
        for (seq, deadline) in [10, 100].into_iter().enumerate() {
            core.schedule(deadline, 0, seq as u64, deadline).expect("in range");
        }
        assert_eq!(core.before_sleep(), Some(10));
        let driver = thread::spawn(move || drive(core));
        let (_, wake) = core.schedule(DUE, 0, 2, DUE).expect("in range");
        if wake {
            driver.thread().unpark();
        }
        driver.join().unwrap();
        assert_eq!(core.len(), 2, "the entries due at 50 and 100");
    });
}

/// A payload that counts its drop.
struct Payload(std::sync::Arc<AtomicUsize>);

impl Drop for Payload {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Seeded fault `shard_core_advance_counts_out_after_unlock`: the advance's count-out after the
/// unlock loses the count-in of the schedule between its load and store ("len() once quiet").
#[test]
fn cancel_racing_advance() {
    loom::model(|| {
        let ends = std::sync::Arc::new(AtomicUsize::new(0));
        let core = Arc::new(Core::new(1));
        let (a, _) = core.schedule(1, 0, 0, Payload(std::sync::Arc::clone(&ends))).map_err(drop).unwrap();
        let other = {
            let (core, ends) = (Arc::clone(&core), std::sync::Arc::clone(&ends));
            thread::spawn(move || {
                let cancelled = core.cancel(&a).is_some();
                core.schedule(5, 0, 1, Payload(ends)).map_err(drop).unwrap();
                cancelled
            })
        };
        let mut out = Vec::new();
        core.advance(1, &mut out, &mut Merge::default());
        let fired = out.len();
        drop(out);
        let cancelled = other.join().unwrap();
        assert_eq!(fired + usize::from(cancelled), 1, "A ended once (fired {fired}, cancelled {cancelled})");
        assert_eq!(ends.load(Ordering::Relaxed), 1);
        assert_eq!(core.len(), 1, "len() once quiet: the later entry alone is pending");
        assert_eq!(core.cancel(&a).map(drop), None, "A's handle finds nothing");
    });
}
