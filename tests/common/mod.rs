//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod hand_sleep;
pub mod model;
pub mod queue;
#[cfg(feature = "async")]
pub mod waker;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use delaywheel::{ManualClock, Timer};

/// splitmix64: a tiny deterministic PRNG, so every test is reproducible.
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo)
    }
}

/// How long a scenario run by [`watched`] may take before it is called a deadlock.
pub const DEADLOCK: Duration = Duration::from_secs(20);

/// Runs `scenario` on a thread of its own, named `name`, and returns what it returns; panics if
/// it panics or does not finish within [`DEADLOCK`]: a deadlock fails the test instead of hanging
/// it.
pub fn watched<T: Send + 'static>(name: &str, scenario: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    let worker = std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            let _ = tx.send(scenario());
        })
        .unwrap();
    match rx.recv_timeout(DEADLOCK) {
        Ok(out) => {
            worker.join().unwrap();
            out
        }
        // The sender is gone without a message: the scenario panicked.
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("a scenario that returned sent what it returned"),
        },
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("{name}: deadlocked (no end within {DEADLOCK:?})")
        }
    }
}

/// A manual timer on a fresh manual clock.
pub fn manual_timer(tick: Duration, wheel_size: usize) -> (ManualClock, Timer) {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(tick).wheel_size(wheel_size).clock(clock.clone()).manual().build();
    (clock, timer)
}

/// A manual timer (1 ms tick, 8 slots) on a fresh manual clock whose tasks run on `threads`
/// executor threads.
pub fn manual_with_executors(threads: usize) -> (ManualClock, Timer) {
    let clock = ManualClock::new();
    let timer = Timer::builder()
        .tick(Duration::from_millis(1))
        .wheel_size(8)
        .clock(clock.clone())
        .manual()
        .execution(delaywheel::TaskExecution::Threads(threads))
        .build();
    (clock, timer)
}

/// Counts the runs and the drops of the closures that carry a [`Token`] of it.
#[derive(Default)]
pub struct Tally {
    pub runs: AtomicUsize,
    pub drops: AtomicUsize,
}

/// Carried by a closure: counts the closure's drop in its [`Tally`] (the closure counts its run).
pub struct Token(pub Arc<Tally>);

impl Drop for Token {
    fn drop(&mut self) {
        self.0.drops.fetch_add(1, Ordering::SeqCst);
    }
}

/// Records, per task id, every clock time at which it ran.
#[derive(Clone, Default)]
pub struct FireLog {
    runs: Arc<Mutex<Vec<(usize, Duration)>>>,
}

impl FireLog {
    /// A task that records `id` and the clock time when it runs.
    pub fn task(&self, id: usize, clock: &ManualClock) -> impl FnOnce() + Send + 'static {
        let runs = Arc::clone(&self.runs);
        let clock = clock.clone();
        move || runs.lock().unwrap().push((id, clock.now()))
    }

    pub fn runs(&self) -> Vec<(usize, Duration)> {
        self.runs.lock().unwrap().clone()
    }

    pub fn ids(&self) -> Vec<usize> {
        self.runs().into_iter().map(|(id, _)| id).collect()
    }

    pub fn count(&self) -> usize {
        self.runs.lock().unwrap().len()
    }
}

/// A counter and a closure factory incrementing it.
#[derive(Clone, Default)]
pub struct Counter(pub Arc<AtomicUsize>);

impl Counter {
    pub fn task(&self) -> impl FnOnce() + Send + 'static {
        let c = Arc::clone(&self.0);
        move || {
            c.fetch_add(1, Ordering::SeqCst);
        }
    }

    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// The first tick boundary at or after `deadline`.
pub fn ceil_to_tick(deadline: Duration, tick: Duration) -> Duration {
    let ticks = deadline.as_nanos().div_ceil(tick.as_nanos());
    Duration::from_nanos((ticks * tick.as_nanos()) as u64)
}

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Resident memory of this process, in bytes (`/proc/self/statm`, in system pages). The memory
/// tests that read it are each the only test of their binary, so that no other test's memory
/// moves it meanwhile.
#[cfg(target_os = "linux")]
pub fn rss() -> usize {
    // SAFETY: `sysconf` takes an integer and reads no memory of ours.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap();
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    statm.split_whitespace().nth(1).unwrap().parse::<usize>().unwrap() * page
}

/// Sets its flag when dropped, also by a panic: the other threads of a test stop when one of its
/// checks fails, so the test ends with that failure instead of hanging.
pub struct Stop<'a>(pub &'a AtomicBool);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}
