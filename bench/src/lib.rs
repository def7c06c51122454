//! What the benchmarks and their profiling examples share: the inner futures the async timeout
//! groups wrap (`benches/async_timeout.rs`, `examples/timeout_profile.rs`), the process CPU time
//! the SPEC runner and the floors report, and the PRNG of the examples and the lean core's tests
//! ([`splitmix`]); and [`lean_core`], a minimal timer core of another design, measured beside
//! delaywheel (docs/lean_core.md).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A future pending at its first poll (waking its task at once) and ready with 1 at the second:
/// the inner future of a timeout that has to arm its limit once and then cancels it.
#[derive(Debug, Default)]
pub struct PendingOnce(bool);

impl PendingOnce {
    /// A future not polled yet.
    pub fn new() -> PendingOnce {
        PendingOnce(false)
    }
}

impl Future for PendingOnce {
    type Output = u64;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u64> {
        if self.0 {
            return Poll::Ready(1);
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Process CPU time (user + system, every thread), in milliseconds.
#[cfg(unix)]
pub fn process_cpu_ms() -> f64 {
    // SAFETY: `getrusage` only writes the `rusage` we hand it, which is plain old data.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        let rc = libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        assert_eq!(rc, 0, "getrusage failed");
        usage
    };
    let us = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
    (us(usage.ru_utime) + us(usage.ru_stime)) / 1e3
}

/// splitmix64 (Vigna): the next number of the stream whose state is `state`. Deterministic, so
/// that a seed gives the same delays in every run and on every system measured.
pub fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub mod lean_core;
