//! The driver's own shrink (after a cancelled spike, in a lull of the firing) racing threads that
//! schedule, re-arm and cancel short tasks in bursts, and that keep calling `cancel`, `reset`,
//! `deadline` and `is_pending` on the spike's cancelled handles, whose pages that shrink gives
//! back: a stale handle names nothing, each short task runs once or is cancelled once and never
//! before the deadline of its last `true` reset, and every closure is dropped once. (Memory safety
//! of the stale looks at freed pages: run this binary under AddressSanitizer.)

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::{watched, SplitMix};
use delaywheel::{Timer, TimerHandle};

const SPIKE: usize = 40_000;
const WORKERS: usize = 2;

/// Counts a closure's drops.
struct Dropped(Arc<AtomicUsize>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[derive(Default)]
struct Tally {
    made: AtomicUsize,
    runs: AtomicUsize,
    cancels: AtomicUsize,
    /// Per task, nanoseconds after the round's start: its last `true` deadline (written by its
    /// owner only) and when it ran.
    times: std::sync::Mutex<Vec<Arc<[AtomicU64; 2]>>>,
}

fn worker(
    timer: &Timer,
    spike: &[TimerHandle],
    tally: &Arc<Tally>,
    drops: &Arc<AtomicUsize>,
    stop: &AtomicBool,
    seed: u64,
) {
    let mut rng = SplitMix(seed);
    let base = timer.now();
    let nanos = move |at: Instant| at.saturating_duration_since(base).as_nanos() as u64;
    let mut mine: Vec<(TimerHandle, Arc<[AtomicU64; 2]>)> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        // Bursts, then a lull in which the driver may shrink.
        let burst = Instant::now() + Duration::from_millis(20);
        while Instant::now() < burst {
            let stale = &spike[rng.range(0, spike.len() as u64) as usize];
            assert!(!stale.cancel() && !stale.reset(Duration::ZERO), "a stale handle named a task");
            assert!(stale.deadline().is_none() && !stale.is_pending(), "a stale handle reads a pending task");
            let at = timer.now() + Duration::from_micros(rng.range(0, 4_000));
            let times = Arc::new([AtomicU64::new(nanos(at)), AtomicU64::new(u64::MAX)]);
            tally.times.lock().unwrap().push(Arc::clone(&times));
            let (tally2, times2, guard) = (Arc::clone(tally), Arc::clone(&times), Dropped(Arc::clone(drops)));
            tally.made.fetch_add(1, Ordering::SeqCst);
            let h = timer.schedule_at(at, move || {
                let _guard = guard;
                // The timer runs on the real clock.
                times2[1].store(nanos(Instant::now()), Ordering::SeqCst);
                tally2.runs.fetch_add(1, Ordering::SeqCst);
            });
            mine.push((h, times));
            let k = rng.range(0, mine.len() as u64) as usize;
            match rng.range(0, 4) {
                0 if mine[k].0.cancel() => {
                    tally.cancels.fetch_add(1, Ordering::SeqCst);
                }
                0 => {}
                1 | 2 => {
                    let to = timer.now() + Duration::from_micros(rng.range(0, 4_000));
                    let (h, times) = &mine[k];
                    if h.reset_at(to) {
                        times[0].store(nanos(to), Ordering::SeqCst);
                    }
                }
                _ => {}
            }
            if mine.len() > 256 {
                mine.drain(..128);
            }
        }
        thread::sleep(Duration::from_millis(rng.range(12, 25)));
    }
}

#[test]
fn the_drivers_shrink_racing_resets_and_stale_handles_keeps_every_promise() {
    watched("auto shrink racing resets", || {
        let timer = Timer::builder().tick(Duration::from_millis(1)).wheel_size(16).build();
        let drops = Arc::new(AtomicUsize::new(0));
        let tally = Arc::new(Tally::default());
        let spike: Vec<TimerHandle> = (0..SPIKE)
            .map(|_| {
                let guard = Dropped(Arc::clone(&drops));
                timer.schedule(Duration::from_secs(60), move || drop(guard))
            })
            .collect();
        assert!(spike.iter().all(TimerHandle::cancel), "the spike is pending");
        assert_eq!(drops.load(Ordering::SeqCst), SPIKE);
        let stop = AtomicBool::new(false);
        thread::scope(|s| {
            for w in 0..WORKERS {
                let (timer, spike, tally, drops, stop) = (&timer, &spike[..], &tally, &drops, &stop);
                s.spawn(move || worker(timer, spike, tally, drops, stop, 0x5A + w as u64));
            }
            // The driver shrinks in a lull, and at most once a second.
            thread::sleep(Duration::from_millis(1_300));
            stop.store(true, Ordering::Relaxed);
        });
        let until = Instant::now() + Duration::from_secs(5);
        let settled = || {
            tally.runs.load(Ordering::SeqCst) + tally.cancels.load(Ordering::SeqCst)
                == tally.made.load(Ordering::SeqCst)
        };
        while !settled() && Instant::now() < until {
            thread::sleep(Duration::from_millis(1));
        }
        let (made, runs, cancels) = (
            tally.made.load(Ordering::SeqCst),
            tally.runs.load(Ordering::SeqCst),
            tally.cancels.load(Ordering::SeqCst),
        );
        assert_eq!(runs + cancels, made, "each task runs once or is cancelled once");
        for times in tally.times.lock().unwrap().iter() {
            let (due, ran) = (times[0].load(Ordering::SeqCst), times[1].load(Ordering::SeqCst));
            assert!(ran == u64::MAX || ran >= due, "a task ran {} ns before its deadline", due - ran);
        }
        assert_eq!(timer.len(), 0);
        assert_eq!(drops.load(Ordering::SeqCst), SPIKE + made, "every closure dropped once");
    });
}
