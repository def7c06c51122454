//! Helpers shared by the examples: command-line flags, a progress line, a small PRNG and
//! log-normal latencies, a calendar of due events, and the process's CPU time and memory.
#![allow(dead_code)]

use std::time::Duration;

pub mod flags;
pub mod progress;

/// The z-score of the 75th percentile of a standard normal distribution.
const Z75: f64 = 0.674_489_750_196_081_7;

/// The log-normal distribution (in milliseconds) with this median and 75th percentile.
///
/// # Panics
///
/// Unless `0 < median_ms < p75_ms`.
pub fn log_normal(median_ms: f64, p75_ms: f64) -> LogNormal {
    assert!(0.0 < median_ms && median_ms < p75_ms, "need 0 < median < p75");
    let mu = median_ms.ln();
    LogNormal { mu, sigma: (p75_ms.ln() - mu) / Z75 }
}

/// A log-normal distribution: `exp(mu + sigma * z)` for a standard normal `z`.
#[derive(Clone, Copy, Debug)]
pub struct LogNormal {
    mu: f64,
    sigma: f64,
}

impl LogNormal {
    /// One sample (a standard normal by the Box-Muller transform).
    pub fn sample(&self, rng: &mut SplitMix) -> f64 {
        let u1 = 1.0 - rng.unit(); // in (0, 1], so its logarithm is finite
        let u2 = rng.unit();
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        (self.mu + self.sigma * z).exp()
    }
}

/// Pre-drawn log-normal latencies given by their median and 75th percentile (as Kafka's
/// `TestPurgatoryPerformance` draws them), picked with a cheap PRNG in the hot loop. The table is
/// small enough to stay in cache.
pub struct Latencies {
    nanos: Vec<u64>,
    rng: SplitMix,
}

impl Latencies {
    /// # Panics
    ///
    /// Unless `0 < median_ms < p75_ms`.
    pub fn new(median_ms: f64, p75_ms: f64, seed: u64) -> Self {
        let dist = log_normal(median_ms, p75_ms);
        let mut draw = SplitMix(seed ^ 0x5EED);
        let nanos = (0..1 << 16).map(|_| (dist.sample(&mut draw) * 1e6).min(1e15) as u64).collect();
        Latencies { nanos, rng: SplitMix(seed) }
    }

    /// The next latency, in nanoseconds.
    pub fn next_nanos(&mut self) -> u64 {
        self.nanos[self.rng.next() as usize & (self.nanos.len() - 1)]
    }
}

/// Arrivals at a target rate from `start`, for the load generators: the numbers of the requests
/// due so far, at most [`Pacer::BATCH`] at a time, until `total` were handed out or the arrival
/// time (`total / rate`) is over. A generator that falls behind a rate it cannot reach stops at
/// that time (the achieved rate shows the shortfall) instead of catching up without end, one
/// ever larger batch after another.
pub struct Pacer {
    start: std::time::Instant,
    rate: f64,
    total: u64,
    sent: u64,
}

impl Pacer {
    /// The most requests handed out at once.
    pub const BATCH: u64 = 4096;

    pub fn new(start: std::time::Instant, rate: f64, total: u64) -> Self {
        Pacer { start, rate, total, sent: 0 }
    }

    /// The next requests due, sleeping `nap` at a time until some are; `None` once every
    /// request was handed out, or the arrival time is over with more than a batch still to come.
    pub fn next_due(&mut self, nap: Duration) -> Option<std::ops::Range<u64>> {
        loop {
            let left = self.total - self.sent;
            let elapsed = self.start.elapsed().as_secs_f64();
            let over = elapsed * self.rate >= self.total as f64;
            if left == 0 || (over && left > Self::BATCH) {
                return None;
            }
            let due = ((elapsed * self.rate) as u64).min(self.total).min(self.sent + Self::BATCH);
            if due > self.sent {
                let due = self.sent..due;
                self.sent = due.end;
                return Some(due);
            }
            std::thread::sleep(nap);
        }
    }

    /// The requests handed out so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }
}

/// The timer `builder` describes, or, for a configuration the flags made invalid (a tick under
/// 1 µs, a wheel size under 2, ...), the builder's error and exit status 2, as for a bad flag.
pub fn build_timer(builder: delaywheel::TimerBuilder) -> delaywheel::Timer {
    builder.try_build().unwrap_or_else(|error| {
        eprintln!("error: {error}\n\nFor more information, try '--help'.");
        std::process::exit(2)
    })
}

/// splitmix64: a tiny, fast PRNG for hot loops.
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`), by a multiply-shift of the next output.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }

    /// A number in `[0, 1)` with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Events due at whole milliseconds, in a ring of per-millisecond slots (O(1) per event), for the
/// threads that simulate acknowledgements. Events due beyond the ring's span are delivered at its
/// far end (only an overloaded run lags that much).
pub struct Calendar<E> {
    slots: Vec<Vec<E>>,
    next_ms: u64,
    len: usize,
}

impl<E> Calendar<E> {
    /// A calendar spanning at least `span`.
    pub fn new(span: Duration) -> Self {
        let slots = (span.as_millis() as usize + 64).next_power_of_two();
        Calendar { slots: (0..slots).map(|_| Vec::new()).collect(), next_ms: 0, len: 0 }
    }

    pub fn insert(&mut self, due_ms: u64, event: E) {
        let due_ms = due_ms.clamp(self.next_ms, self.next_ms + self.slots.len() as u64 - 1);
        let mask = self.slots.len() - 1;
        self.slots[due_ms as usize & mask].push(event);
        self.len += 1;
    }

    /// Hands every event due at or before `now_ms` to `deliver`; returns how many.
    pub fn deliver_due(&mut self, now_ms: u64, mut deliver: impl FnMut(E)) -> usize {
        let mut delivered = 0;
        let mask = self.slots.len() - 1;
        while self.next_ms <= now_ms {
            let slot = std::mem::take(&mut self.slots[self.next_ms as usize & mask]);
            delivered += slot.len();
            slot.into_iter().for_each(&mut deliver);
            self.next_ms += 1;
        }
        self.len -= delivered;
        delivered
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// User + system CPU time of the whole process.
pub fn process_cpu() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `getrusage` only writes the struct we pass, which is valid and writable; it was
    // zeroed first, a valid `rusage` (integers only) even if the call fails.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1_000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// CPU time of the calling thread.
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `clock_gettime` only writes the timespec we pass, which is valid and writable.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// A field of `/proc/self/status` in bytes (`VmRSS`: resident now; `VmHWM`: peak resident).
pub fn proc_status_bytes(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Bytes as MiB.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}
