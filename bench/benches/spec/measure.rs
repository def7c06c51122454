//! What the SPEC workloads measure with, shared by every system: the splitmix64 stream, the task
//! bodies and their shared counters, process CPU (`getrusage`) and resident memory (`/proc`).

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::thread::Thread;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The SPEC's PRNG: splitmix64, one stream per workload, seeded with 42 at the workload's start.
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `lo + (next() mod (hi - lo))`, unsigned.
    pub fn delay(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo)
    }
}

/// The workload's delays in whole milliseconds, drawn before the clock starts so that the PRNG is not
/// part of what is timed (every system gets the same sequence).
pub fn delays_ms(lo: u64, hi: u64, n: usize) -> Vec<u64> {
    let mut rng = SplitMix64::new(42);
    (0..n).map(|_| rng.delay(lo, hi)).collect()
}

/// The shared atomic counter every task increments when it fires.
pub static FIRED: AtomicU64 = AtomicU64::new(0);

/// The task of W1–W3, W5 and W6: increments [`FIRED`]. It captures the counter by reference, so it
/// is a real (non zero-sized, 8-byte) closure, as a task with state is, without reference-count
/// traffic that would make two inserting threads contend on something that is not the timer.
pub fn counting_task() -> impl FnOnce() + Send + 'static {
    let counter: &'static AtomicU64 = &FIRED;
    move || {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Nanoseconds on one monotonic clock shared by the bench and every task.
pub fn now_ns() -> u64 {
    static BASE: OnceLock<Instant> = OnceLock::new();
    let base = *BASE.get_or_init(Instant::now);
    u64::try_from(base.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// W4's bookkeeping: each task stores its own lateness; the one that fires last wakes the bench.
pub struct Expiry;

static LATENESS_NS: OnceLock<Box<[AtomicI64]>> = OnceLock::new();
static TARGET: AtomicU64 = AtomicU64::new(0);
static LAST_FIRE_NS: AtomicU64 = AtomicU64::new(0);
static WAITER: Mutex<Option<Thread>> = Mutex::new(None);

impl Expiry {
    /// Prepares for `n` expiries, woken on the calling thread.
    pub fn arm(n: usize) {
        let slots = LATENESS_NS.get_or_init(|| (0..n).map(|_| AtomicI64::new(i64::MIN)).collect());
        assert!(slots.len() >= n, "SPEC_N cannot grow within one run");
        for slot in &slots[..n] {
            slot.store(i64::MIN, Ordering::Relaxed);
        }
        FIRED.store(0, Ordering::SeqCst);
        TARGET.store(n as u64, Ordering::SeqCst);
        LAST_FIRE_NS.store(0, Ordering::SeqCst);
        *WAITER.lock() = Some(std::thread::current());
    }

    /// The task of W4: timer `i`, due at `due_ns` (its insert time plus its delay) on [`now_ns`].
    pub fn task(i: usize, due_ns: u64) -> impl FnOnce() + Send + 'static {
        move || Expiry::record(i, due_ns)
    }

    /// What a W4 task does when it fires: stores timer `i`'s lateness (it was due at `due_ns` on
    /// [`now_ns`]) and counts it; the last one wakes the bench.
    pub fn record(i: usize, due_ns: u64) {
        let now = now_ns();
        if let Some(slots) = LATENESS_NS.get() {
            slots[i].store(now as i64 - due_ns as i64, Ordering::Relaxed);
        }
        if FIRED.fetch_add(1, Ordering::AcqRel) + 1 == TARGET.load(Ordering::Relaxed) {
            LAST_FIRE_NS.store(now, Ordering::Release);
            if let Some(waiter) = WAITER.lock().as_ref() {
                waiter.unpark();
            }
        }
    }

    /// Waits until every armed task fired or `limit` passed; returns the time of the last fire.
    pub fn wait(limit: Duration) -> Option<u64> {
        let deadline = Instant::now() + limit;
        while FIRED.load(Ordering::Acquire) < TARGET.load(Ordering::Relaxed) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            std::thread::park_timeout(left.min(Duration::from_millis(100)));
        }
        *WAITER.lock() = None;
        Some(LAST_FIRE_NS.load(Ordering::Acquire))
    }

    /// Lateness of the first `n` timers, in nanoseconds (`None`: did not fire).
    pub fn lateness(n: usize) -> impl Iterator<Item = Option<i64>> {
        let slots = LATENESS_NS.get().expect("armed");
        slots[..n].iter().map(|slot| {
            let late = slot.load(Ordering::Relaxed);
            (late != i64::MIN).then_some(late)
        })
    }
}

/// Resident set size of this process in bytes (`/proc/self/statm`, field 2, times the page size),
/// read after `malloc_trim(0)`: glibc then returns the free pages it retains (e.g. a channel's
/// transient backlog) to the kernel, so the figure is memory in use plus fragmentation.
pub fn rss_bytes() -> u64 {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases free memory of the allocator; no precondition.
    unsafe {
        libc::malloc_trim(0);
    }
    let statm = std::fs::read_to_string("/proc/self/statm").expect("read /proc/self/statm");
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|f| f.parse().ok()).expect("statm field");
    // SAFETY: `sysconf` has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * u64::try_from(page).unwrap_or(4096)
}

/// Checks the PRNG against the reference stream for seed 0 (Vigna's `splitmix64.c`).
pub fn check_splitmix() {
    let mut rng = SplitMix64::new(0);
    assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF, "splitmix64 differs from the reference");
    assert_eq!(rng.next_u64(), 0x6E78_9E6A_A1B9_65F4, "splitmix64 differs from the reference");
}
