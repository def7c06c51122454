//! Scaling sweep: the cost of one schedule and of one expiry as the number of
//! pending timers grows from 10^4 to 10^7, for delaywheel and the `BinaryHeap` peer of
//! `benches/spec.rs` (and, on request, the other peers). A timing wheel should stay flat; a heap's
//! pop grows with log(pending).
//!
//! ```sh
//! cargo bench -p delaywheel-bench --bench scaling                    # 10^4, 10^5, 10^6 pending (quick)
//! SCALING_MAX_EXP=7 cargo bench -p delaywheel-bench --bench scaling # up to 10^7 (about 2 GB resident at
//! 10^7) bench/scripts/plot_scaling.sh # up to 10^7, then docs/scaling.svg from the CSV
//! ```
//!
//! Environment:
//! * `SCALING_MAX_EXP`: largest exponent, 4..=8 (default 6).
//! * `SCALING_SYSTEMS`: comma-separated, any of `delaywheel`, `heap` (`binaryheap-mutex`), `tokio`
//!   (`tokio-delayqueue`), `hhwt` (`hierarchical_hash_wheel_timer`); default `delaywheel,heap`.
//! * `SCALING_MEASURE_SECS`: criterion's measurement time per point (default 1; 10 samples, 0.3 s
//!   of warm-up each).
//! * `SCALING_CSV`: where to write the measured points (default `<target dir>/scaling.csv`).
//!
//! After the run the bench writes one CSV line per measured point,
//! `system,operation,pending,median_ns,lower_ns,upper_ns`: criterion's median estimate of ns per
//! operation and its 95 % confidence interval, read back from criterion's own
//! `<target>/criterion/scaling_<operation>/<system>/<pending>/new/estimates.json` (only points this
//! run measured; none in `--test` mode). `examples/plot_scaling.rs` draws `docs/scaling.svg` from it.
//!
//! Every timer is driven by hand on a virtual clock (`benches/spec/manual.rs`, shared with
//! `benches/timer.rs`, which says how each is driven), so that nothing but the operation is timed
//! and the background never fires. Tasks are the SPEC's 8-byte counting closure; delays come from
//! splitmix64 (seed 42 for the background, 7 for the measured timers), the same for every system.
//! * **schedule**: with P timers pending (delays in [10 s, 70 s), like SPEC W1), schedule chunks of
//!   1024 more (same range), timed; each chunk is cancelled again untimed, so P stays constant.
//!   The heap cancels lazily: its cancelled entries are purged, untimed, once they reach 10 % of P.
//!   (hierarchical_hash_wheel_timer also cancels lazily and can only drop that garbage by letting
//!   time pass, which would fire the background: with it the garbage stays, outside its id map.)
//! * **expire**: with P timers pending far away (delays in [1 h, 2 h), never reached), schedule a
//!   chunk of 1024 due within the next 8 ms (untimed), move the clock 8 ms and time the advance that
//!   fires them: cost per expiry, bucket pops and cascades included. Each advance asserts that
//!   exactly the chunk fired.

#[allow(dead_code)] // the driver-thread half serves benches/spec.rs
#[path = "spec/heap.rs"]
mod heap;
#[path = "spec/manual.rs"]
mod manual;
#[allow(dead_code)] // the workload bookkeeping serves benches/spec.rs
#[path = "spec/measure.rs"]
mod measure;
#[allow(dead_code)] // the threaded systems serve benches/spec.rs
#[path = "spec/systems.rs"]
mod systems;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput};
use manual::{Manual, ManualDelayWheel, ManualHeap, ManualHhwt, ManualTokio};
use measure::{counting_task, SplitMix64, FIRED};

const CHUNK: u64 = 1024;
const W1_RANGE: (u64, u64) = (10_000, 70_000);
const FAR_RANGE: (u64, u64) = (3_600_000, 7_200_000);

fn sizes() -> Vec<u64> {
    let max_exp: u32 = std::env::var("SCALING_MAX_EXP").ok().and_then(|e| e.parse().ok()).unwrap_or(6);
    (4..=max_exp.clamp(4, 8)).map(|e| 10u64.pow(e)).collect()
}

/// Criterion's measurement time per point (`SCALING_MEASURE_SECS`, default 1 s; the plot's run
/// uses 3 s, which evens out bursts of other load on a shared machine).
fn measurement_time() -> Duration {
    let secs: f64 = std::env::var("SCALING_MEASURE_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(1.0);
    Duration::from_secs_f64(secs.clamp(0.1, 60.0))
}

fn systems() -> Vec<&'static str> {
    let list = std::env::var("SCALING_SYSTEMS").unwrap_or_default();
    let list = if list.trim().is_empty() { "delaywheel,heap".to_string() } else { list };
    list.split(',')
        .map(|name| match name.trim() {
            "delaywheel" => ManualDelayWheel::NAME,
            "heap" | "binaryheap-mutex" => ManualHeap::NAME,
            "tokio" | "tokio-delayqueue" => ManualTokio::NAME,
            "hhwt" | "hierarchical_hash_wheel_timer" => ManualHhwt::NAME,
            other => panic!("SCALING_SYSTEMS: unknown system {other:?}"),
        })
        .collect()
}

/// The points whose benchmark ran in this process (a filter may skip some): (operation, system, P).
static RAN: Mutex<Vec<(&'static str, &'static str, u64)>> = Mutex::new(Vec::new());

fn ran(operation: &'static str, system: &'static str, pending: u64) {
    let mut ran = RAN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if !ran.contains(&(operation, system, pending)) {
        ran.push((operation, system, pending));
    }
}

/// A fresh timer holding `pending` timers with delays in [lo, hi) ms (handles dropped).
fn prefill<S: Manual>(pending: u64, (lo, hi): (u64, u64)) -> S {
    let mut timer = S::new();
    let mut rng = SplitMix64::new(42);
    for i in 0..pending {
        drop(timer.schedule(rng.delay(lo, hi), counting_task()));
        if i % 65_536 == 65_535 {
            timer.apply(); // keeps hierarchical_hash_wheel_timer's message queue short
        }
    }
    timer.apply();
    timer
}

fn schedule_at<S: Manual>(group: &mut BenchmarkGroup<'_, WallTime>, pending: u64) {
    let _context = S::context();
    let mut timer = prefill::<S>(pending, W1_RANGE);
    group.bench_with_input(BenchmarkId::new(S::NAME, pending), &pending, |b, _| {
        ran("schedule", S::NAME, pending);
        let mut rng = SplitMix64::new(7);
        let mut chunk = Vec::with_capacity(CHUNK as usize);
        let (lo, hi) = W1_RANGE;
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let k = left.min(CHUNK);
                let start = Instant::now();
                for _ in 0..k {
                    chunk.push(timer.schedule(rng.delay(lo, hi), counting_task()));
                }
                timer.apply();
                total += start.elapsed();
                for handle in chunk.drain(..) {
                    assert_ne!(timer.cancel(&handle), Some(false), "{}: cancel failed", S::NAME);
                }
                timer.apply();
                // Lazy cancellation leaves entries behind: purge (untimed) once they are 10 % of P,
                // so a heap holds P to 1.1 P + one chunk while measured.
                if timer.held().is_some_and(|held| held as u64 > pending + pending / 10) {
                    timer.collect_garbage();
                }
                left -= k;
            }
            total
        })
    });
    drop(timer);
}

fn expire_at<S: Manual>(group: &mut BenchmarkGroup<'_, WallTime>, pending: u64) {
    let _context = S::context();
    let mut timer = prefill::<S>(pending, FAR_RANGE);
    group.bench_with_input(BenchmarkId::new(S::NAME, pending), &pending, |b, _| {
        ran("expire", S::NAME, pending);
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let k = left.min(CHUNK);
                for i in 0..k {
                    drop(timer.schedule(1 + i % 8, counting_task()));
                }
                timer.apply();
                FIRED.store(0, Ordering::Relaxed);
                let start = Instant::now();
                timer.advance(8);
                total += start.elapsed();
                assert_eq!(FIRED.load(Ordering::Relaxed), k, "{}: exactly the chunk fires", S::NAME);
                left -= k;
            }
            total
        })
    });
    drop(timer);
}

fn for_system(name: &str, group: &mut BenchmarkGroup<'_, WallTime>, pending: u64, schedule: bool) {
    macro_rules! run {
        ($system:ty) => {
            if schedule {
                schedule_at::<$system>(group, pending)
            } else {
                expire_at::<$system>(group, pending)
            }
        };
    }
    match name {
        n if n == ManualDelayWheel::NAME => run!(ManualDelayWheel),
        n if n == ManualHeap::NAME => run!(ManualHeap),
        n if n == ManualTokio::NAME => run!(ManualTokio),
        n if n == ManualHhwt::NAME => run!(ManualHhwt),
        _ => unreachable!("names come from systems()"),
    }
}

fn sweep(c: &mut Criterion, operation: &str, schedule: bool) {
    let mut group = c.benchmark_group(format!("scaling_{operation}"));
    group.throughput(Throughput::Elements(1));
    group.sample_size(10).warm_up_time(Duration::from_millis(300)).measurement_time(measurement_time());
    for pending in sizes() {
        for name in systems() {
            for_system(name, &mut group, pending, schedule);
        }
    }
    group.finish();
}

/// The directory criterion writes to: its own rule (`CRITERION_HOME`, else `<target dir>/criterion`),
/// the target directory found as the ancestor of this executable that has a `criterion` folder.
fn criterion_dir() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return Some(PathBuf::from(home));
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return Some(Path::new(&target).join("criterion"));
    }
    let exe = std::env::current_exe().ok()?;
    exe.ancestors().map(|dir| dir.join("criterion")).find(|dir| dir.is_dir())
}

/// Criterion's median estimate and its confidence interval, in ns, from one `estimates.json`.
fn median_ns(estimates: &Path) -> Option<(f64, f64, f64)> {
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(estimates).ok()?).ok()?;
    let median = &json["median"];
    let interval = &median["confidence_interval"];
    Some((
        median["point_estimate"].as_f64()?,
        interval["lower_bound"].as_f64()?,
        interval["upper_bound"].as_f64()?,
    ))
}

/// Writes the points measured in this run (estimates newer than `started`) as CSV.
fn write_csv(started: SystemTime) {
    let Some(dir) = criterion_dir() else {
        eprintln!("# scaling: criterion's output directory not found; no CSV written");
        return;
    };
    let path = std::env::var_os("SCALING_CSV").map(PathBuf::from).unwrap_or_else(|| {
        dir.parent().map_or_else(|| PathBuf::from("scaling.csv"), |target| target.join("scaling.csv"))
    });
    let mut lines = vec!["system,operation,pending,median_ns,lower_ns,upper_ns".to_string()];
    for &(operation, system, pending) in RAN.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).iter() {
        let estimates = dir.join(format!("scaling_{operation}")).join(system).join(pending.to_string());
        let estimates = estimates.join("new").join("estimates.json");
        let fresh = std::fs::metadata(&estimates).and_then(|m| m.modified()).is_ok_and(|m| m >= started);
        match median_ns(&estimates) {
            Some((median, lower, upper)) if fresh => {
                lines.push(format!("{system},{operation},{pending},{median:.2},{lower:.2},{upper:.2}"));
            }
            _ => {} // not measured in this run (`--test`, `--list`, a baseline elsewhere)
        }
    }
    if lines.len() == 1 {
        return;
    }
    let written = std::fs::File::create(&path)
        .and_then(|mut file| file.write_all((lines.join("\n") + "\n").as_bytes()));
    match written {
        Ok(()) => eprintln!("# scaling: {} points written to {}", lines.len() - 1, path.display()),
        Err(error) => eprintln!("# scaling: cannot write {}: {error}", path.display()),
    }
}

fn main() {
    let started = SystemTime::now();
    let mut criterion = Criterion::default().configure_from_args();
    sweep(&mut criterion, "schedule", true);
    sweep(&mut criterion, "expire", false);
    criterion.final_summary();
    write_csv(started);
}
