//! W4 (expiry of 1,000,000 timers due within a second) and W4s (the same, once per size of the
//! task's captured state): one run of the workload, [`expire`], and the task bodies.
//!
//! W4s's task captures `B` bytes (`B / 8` words): the first word packs the timer's index and its due
//! time, the others are filled from it, and the task reads every word when it fires (a sum, checked
//! against the value the first word implies: a mismatch is counted and reported), so the captured
//! bytes are really stored and moved by the timer, not optimised away.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::measure::{delays_ms, now_ns, Expiry};
use crate::systems::System;
use crate::{line, note, stop, Config, Results};
use delaywheel_bench::process_cpu_ms;

/// The captured-state sizes of W4s, in bytes (SPEC.md).
pub const SIZES: [usize; 5] = [8, 32, 64, 128, 256];

/// What one expiry run measured.
#[derive(Clone, Copy, Debug)]
pub struct Figures {
    pub wall_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub cpu_ms: f64,
}

impl Figures {
    /// The SPEC line's fields after the workload's name.
    fn fields(&self) -> String {
        format!(
            "wall_ms={:.1} late_p50_ms={:.3} late_p99_ms={:.3} late_max_ms={:.3} cpu_ms={:.1}",
            self.wall_ms, self.p50_ms, self.p99_ms, self.max_ms, self.cpu_ms
        )
    }
}

/// One W4 run on a fresh `S`: N timers with delays in [0, 1000) ms inserted by this thread, each
/// task made by `task(i, due_ns)`, then a wait until all fired.
pub fn expire<S: System, T>(cfg: &Config, task: impl Fn(usize, u64) -> T) -> Figures
where
    T: FnOnce() + Send + 'static,
{
    let delays = delays_ms(0, 1_000, cfg.n);
    Expiry::arm(cfg.n);
    let sys = S::start();
    let mut local = sys.local();

    let cpu_before = process_cpu_ms();
    let first_insert = now_ns();
    for (i, &delay) in delays.iter().enumerate() {
        let inserted = now_ns();
        let due = inserted + delay * 1_000_000;
        drop(sys.schedule(&mut local, Duration::from_millis(delay), task(i, due)));
    }
    let last_fire = Expiry::wait(Duration::from_secs(120));
    let cpu_ms = process_cpu_ms() - cpu_before;
    drop(local);

    let mut late = Histogram::<u64>::new(3).expect("histogram");
    let (mut early, mut missing, mut earliest) = (0usize, 0usize, 0i64);
    for lateness in Expiry::lateness(cfg.n) {
        match lateness {
            None => missing += 1,
            Some(ns) if ns < 0 => {
                early += 1;
                earliest = earliest.min(ns);
                late.record(0).expect("record");
            }
            Some(ns) => late.record(ns as u64).expect("record"),
        }
    }
    let ms = |ns: u64| ns as f64 / 1e6;
    let wall_ms = match last_fire {
        Some(last) => ms(last - first_insert),
        None => f64::NAN,
    };
    if missing > 0 {
        note(format!("{} W4: {missing} of {} tasks had not fired after 120 s", S::NAME, cfg.n));
    }
    if early > 0 {
        note(format!(
            "{} W4: {early} tasks fired EARLY (earliest {:.3} ms before its deadline; counted as 0 late)",
            S::NAME,
            earliest as f64 / 1e6
        ));
    }
    stop(sys);
    Figures {
        wall_ms,
        p50_ms: ms(late.value_at_quantile(0.5)),
        p99_ms: ms(late.value_at_quantile(0.99)),
        max_ms: ms(late.max()),
        cpu_ms,
    }
}

/// W4: the task of `Expiry::task` (16 bytes: the index and the due time).
pub fn w4<S: System>(cfg: &Config, results: &mut Results) {
    let f = expire::<S, _>(cfg, Expiry::task);
    line(format!("{} W4 expire {}", S::NAME, f.fields()));
    results.extend([("W4 wall ms", f.wall_ms), ("W4 p50 ms", f.p50_ms), ("W4 p99 ms", f.p99_ms)]);
    results.extend([("W4 max ms", f.max_ms), ("W4 cpu ms", f.cpu_ms)]);
}

/// Tasks whose captured words did not read back as written (must stay 0).
static MISMATCHED: AtomicU64 = AtomicU64::new(0);

/// The sum a task of `W` words expects of its words after the first, `packed` being the first.
fn filler_sum<const W: usize>(packed: u64) -> u64 {
    (1..W as u64).fold(0u64, |sum, k| sum.wrapping_add(filler(packed, k)))
}

/// Word `k` of a task's captured state.
fn filler(packed: u64, k: u64) -> u64 {
    packed.rotate_left(k as u32).wrapping_mul(0x9E37_79B9_7F4A_7C15 | k)
}

/// W4s's task for timer `i` due at `due_ns`, capturing `W` words (`8 * W` bytes).
fn sized_task<const W: usize>(i: usize, due_ns: u64) -> impl FnOnce() + Send + 'static {
    // 20 bits of index (SPEC_N up to 2^20 = 1,048,576), 44 of due time (ns: about 4.9 hours).
    assert!(i < 1 << 20 && due_ns < 1 << 44, "W4s packs the index and due time in one word");
    let packed = due_ns << 20 | i as u64;
    let mut state = [0u64; W];
    state[0] = packed;
    for (k, word) in state.iter_mut().enumerate().skip(1) {
        *word = filler(packed, k as u64);
    }
    move || {
        let state = std::hint::black_box(state);
        let packed = state[0];
        let sum = state[1..].iter().fold(0u64, |sum, &word| sum.wrapping_add(word));
        if sum != filler_sum::<W>(packed) {
            MISMATCHED.fetch_add(1, Ordering::Relaxed);
        }
        Expiry::record((packed & ((1 << 20) - 1)) as usize, packed >> 20);
    }
}

/// W4 once for a task of `bytes` bytes of captured state.
fn expire_sized<S: System>(cfg: &Config, bytes: usize) -> Figures {
    match bytes {
        8 => expire::<S, _>(cfg, sized_task::<1>),
        32 => expire::<S, _>(cfg, sized_task::<4>),
        64 => expire::<S, _>(cfg, sized_task::<8>),
        128 => expire::<S, _>(cfg, sized_task::<16>),
        256 => expire::<S, _>(cfg, sized_task::<32>),
        _ => panic!("W4s sizes are {SIZES:?}, not {bytes}"),
    }
}

/// W4s: W4 once per captured-state size in `sizes` (SPEC.md's by default), each line followed by a
/// comment with its ratios to the 8-byte run.
pub fn w4s<S: System>(sizes: &[usize], cfg: &Config, results: &mut Results) {
    let mut base: Option<Figures> = None;
    for &bytes in sizes {
        MISMATCHED.store(0, Ordering::SeqCst);
        let f = expire_sized::<S>(cfg, bytes);
        line(format!("{} W4s expire bytes={bytes} {}", S::NAME, f.fields()));
        let mismatched = MISMATCHED.load(Ordering::SeqCst);
        if mismatched > 0 {
            note(format!("{} W4s bytes={bytes}: {mismatched} tasks read back other words", S::NAME));
        }
        let key: &'static str = Box::leak(format!("W4s{bytes} cpu ms").into_boxed_str());
        results.insert(key, f.cpu_ms);
        let key: &'static str = Box::leak(format!("W4s{bytes} p99 ms").into_boxed_str());
        results.insert(key, f.p99_ms);
        match base {
            None if bytes == 8 => base = Some(f),
            None => {}
            Some(b) => note(format!(
                "{} W4s bytes={bytes} vs 8: cpu {:.2}x, p99 {:+.3} ms, wall {:.2}x",
                S::NAME,
                f.cpu_ms / b.cpu_ms,
                f.p99_ms - b.p99_ms,
                f.wall_ms / b.wall_ms
            )),
        }
    }
}
