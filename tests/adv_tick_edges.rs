//! Time semantics at their edges on a `ManualClock`, as a new user checks them against
//! DESIGN.md: deadlines exactly on a tick boundary and a nanosecond either side of it, from clock
//! readings on and between boundaries; ticks that do not divide a second; `next_wakeup` against
//! a plain list of deadlines through schedules, cancels, resets and jumps (and `None` whenever
//! nothing is pending); `now()` as the clock's base plus its reading; `deadline()` through a
//! task's life; and stale handles after their slot was reused.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{manual_timer, SplitMix};
use delaywheel::{ManualClock, Timer, TimerHandle};

/// The clock reading at which each task ran, by id.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<(usize, Duration)>>>);

impl Log {
    fn task(&self, id: usize, clock: &ManualClock) -> impl FnOnce() + Send + 'static {
        let (log, clock) = (self.clone(), clock.clone());
        move || log.0.lock().unwrap().push((id, clock.now()))
    }
    fn fired(&self, id: usize) -> Option<Duration> {
        self.0.lock().unwrap().iter().find(|(i, _)| *i == id).map(|(_, at)| *at)
    }
    fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

/// The first multiple of `tick` at or after `at`.
fn boundary(at: Duration, tick: Duration) -> Duration {
    let (at, tick) = (at.as_nanos(), tick.as_nanos());
    Duration::from_nanos((at.div_ceil(tick) * tick) as u64)
}

/// Moves the clock to `to` by steps of `step`, advancing the timer after each.
fn walk(clock: &ManualClock, timer: &Timer, to: Duration, step: Duration) {
    while clock.now() < to {
        clock.advance(step.min(to - clock.now()));
        timer.advance_clock(Duration::ZERO);
    }
}

/// For ticks that do and do not divide a millisecond, wheels of 2, 3 and 20 slots, and start
/// readings on a boundary, just after one and just before the next: deadlines on a boundary a few
/// ticks and a few levels ahead, and a nanosecond either side, fire exactly at the first boundary
/// at or after them (walking the clock a nanosecond past each boundary, then to the boundary's
/// end), never early and never later.
#[test]
fn deadlines_on_and_beside_tick_boundaries_fire_at_the_first_boundary_at_or_after_them() {
    for tick_ns in [1_000u64, 7_919, 1_000_000, 3_000_001] {
        let tick = Duration::from_nanos(tick_ns);
        for wheel in [2usize, 3, 20] {
            for start_offset in [0u64, 1, tick_ns - 1] {
                let (clock, timer) = manual_timer(tick, wheel);
                clock.advance(tick * 5 + Duration::from_nanos(start_offset));
                timer.advance_clock(Duration::ZERO);
                let start = clock.now();
                let log = Log::default();
                let mut expected = Vec::new();
                for (i, ticks_ahead) in [1u32, 2, 3, 7, 9, 26, 81].into_iter().enumerate() {
                    let on = tick * (5 + ticks_ahead);
                    for (j, at) in [on - Duration::from_nanos(1), on, on + Duration::from_nanos(1)]
                        .into_iter()
                        .enumerate()
                    {
                        let id = i * 3 + j;
                        // Half by delay, half by instant: both read the same clock.
                        if id % 2 == 0 {
                            timer.schedule(at - start, log.task(id, &clock));
                        } else {
                            timer.schedule_at(timer.now() + (at - start), log.task(id, &clock));
                        }
                        expected.push((id, at));
                    }
                }
                let end = tick * (5 + 83);
                // Steps that land on every boundary and between them.
                walk(&clock, &timer, end, Duration::from_nanos(tick_ns / 2 + 1));
                assert_eq!(log.count(), expected.len(), "tick {tick:?} wheel {wheel}");
                for (id, deadline) in expected {
                    let want = boundary(deadline, tick);
                    let got = log.fired(id).unwrap();
                    // Walking by half ticks reaches the boundary itself or a step after it.
                    assert!(
                        got >= deadline && got >= want && got < want + tick,
                        "tick {tick:?} wheel {wheel} start {start:?}: task {id} due {deadline:?} \
                         (boundary {want:?}) fired at {got:?}"
                    );
                }
                assert!(timer.is_empty());
            }
        }
    }
}

/// Stepping exactly onto each boundary: the task due on it fires in that advance, the one due a
/// nanosecond after waits a whole tick, the one a nanosecond before fires on the same boundary.
#[test]
fn a_deadline_on_a_boundary_fires_on_it_and_a_nanosecond_later_waits_a_tick() {
    let tick = Duration::from_millis(10);
    let (clock, timer) = manual_timer(tick, 4);
    let log = Log::default();
    for k in 1..=40u32 {
        let on = tick * k;
        timer.schedule(on - Duration::from_nanos(1), log.task(3 * k as usize, &clock));
        timer.schedule(on, log.task(3 * k as usize + 1, &clock));
        timer.schedule(on + Duration::from_nanos(1), log.task(3 * k as usize + 2, &clock));
    }
    for k in 1..=41u32 {
        clock.advance(tick);
        timer.advance_clock(Duration::ZERO);
        let now = tick * k;
        assert_eq!(clock.now(), now);
        if k <= 40 {
            assert_eq!(log.fired(3 * k as usize), Some(now), "before boundary {k}");
            assert_eq!(log.fired(3 * k as usize + 1), Some(now), "on boundary {k}");
        }
        if k >= 2 {
            assert_eq!(log.fired(3 * (k as usize - 1) + 2), Some(now), "after boundary {}", k - 1);
        }
        if k <= 40 {
            assert_eq!(log.fired(3 * k as usize + 2), None, "a nanosecond after boundary {k}");
        }
    }
    assert!(timer.is_empty());
}

/// `next_wakeup` against a list of deadlines through random schedules (also at instants already
/// passed and before the clock's origin), cancels, resets and clock jumps, on wheels of 2 to
/// 70 001 slots and clocks far along: `None` exactly when `len()` is 0, otherwise never later than
/// the earliest tick a pending task is due at (now, for a deadline passed when it was set); and
/// jumping the clock to it again and again fires every task by its boundary, never early.
#[test]
fn next_wakeup_is_none_iff_empty_and_never_later_than_the_earliest_boundary() {
    for seed in 1..=96u64 {
        let mut rng = SplitMix(seed);
        let tick = Duration::from_micros(rng.range(1, 3_000));
        // Small wheels (many levels), and wheels whose buckets span several chunks of 512.
        let wheel = [2, 3, 5, 8, 511, 513, 1_500, 70_001][seed as usize % 8];
        // Half the seeds start the clock far along before the timer is built: near and past
        // 2^56 ns, where deadlines stop reading back to the nanosecond (`TimerHandle::deadline`).
        let clock = ManualClock::new();
        let origin = Timer::builder().clock(clock.clone()).manual().build().now();
        match seed % 4 {
            1 => clock.advance(Duration::from_nanos((1 << 56) - rng.range(0, tick.as_nanos() as u64 * 50))),
            3 => clock
                .advance(Duration::from_secs(3 * 365 * 86_400) + Duration::from_nanos(rng.range(0, 1 << 30))),
            _ => {}
        }
        let timer = Timer::builder().tick(tick).wheel_size(wheel).clock(clock.clone()).manual().build();
        let log = Log::default();
        let mut tasks: Vec<(TimerHandle, Duration, bool)> = Vec::new();
        for step in 0..600usize {
            match rng.range(0, 11) {
                0..=3 => {
                    // Mostly near; sometimes levels away on the big wheels too.
                    let span = if rng.range(0, 4) == 0 { wheel as u64 * wheel.min(64) as u64 } else { 200 };
                    let delay = Duration::from_nanos(rng.range(1, tick.as_nanos() as u64 * span));
                    let id = tasks.len();
                    tasks.push((timer.schedule(delay, log.task(id, &clock)), clock.now() + delay, false));
                }
                7 => {
                    // A deadline already passed: in the tick under way, ticks back, or before the
                    // clock's origin (due at once: read as zero here).
                    let back = Duration::from_nanos(rng.range(0, tick.as_nanos() as u64 * 3));
                    let id = tasks.len();
                    let (at, due) = match (origin + clock.now()).checked_sub(back) {
                        Some(at) if rng.range(0, 4) != 0 => (at, at.saturating_duration_since(origin)),
                        _ => (origin.checked_sub(back).unwrap_or(origin), Duration::ZERO),
                    };
                    tasks.push((timer.schedule_at(at, log.task(id, &clock)), due, true));
                }
                4 if !tasks.is_empty() => {
                    let i = rng.range(0, tasks.len() as u64) as usize;
                    let was_pending = log.fired(i).is_none() && tasks[i].0.is_pending();
                    assert_eq!(tasks[i].0.cancel(), was_pending, "seed {seed} step {step}");
                }
                5 | 6 if !tasks.is_empty() => {
                    let i = rng.range(0, tasks.len() as u64) as usize;
                    let delay = Duration::from_nanos(rng.range(1, tick.as_nanos() as u64 * 200));
                    let pending = tasks[i].0.is_pending();
                    if rng.range(0, 4) == 0 {
                        let at = clock.now().saturating_sub(delay / 100);
                        assert_eq!(tasks[i].0.reset_at(origin + at), pending, "seed {seed} step {step}");
                        if pending {
                            tasks[i].1 = at;
                            tasks[i].2 = true;
                        }
                    } else {
                        assert_eq!(tasks[i].0.reset(delay), pending, "seed {seed} step {step}");
                        if pending {
                            tasks[i].1 = clock.now() + delay;
                            tasks[i].2 = false;
                        }
                    }
                }
                _ => {
                    // Jump to the next wakeup, or a random distance.
                    match timer.next_wakeup() {
                        Some(at) if rng.range(0, 2) == 0 => {
                            let to = at.saturating_duration_since(origin);
                            clock.advance_to(to.max(clock.now()));
                        }
                        _ => clock.advance(Duration::from_nanos(rng.range(0, tick.as_nanos() as u64 * 30))),
                    }
                    timer.advance_clock(Duration::ZERO);
                    // Everything due by the last boundary reached has fired, at or after its
                    // deadline.
                    let now = clock.now();
                    for (i, (h, due, passed)) in tasks.iter().enumerate() {
                        if (boundary(*due, tick) <= now || *passed) && h.is_pending() {
                            panic!("seed {seed} step {step}: task {i} due {due:?} still pending at {now:?}");
                        }
                        if let Some(at) = log.fired(i) {
                            assert!(at >= *due, "seed {seed}: task {i} due {due:?} fired early at {at:?}");
                        }
                    }
                }
            }
            // When each pending task is due: its boundary, or now for a deadline passed when set
            // (due at the next advance).
            let pending: Vec<Duration> = tasks
                .iter()
                .filter(|(h, ..)| h.is_pending())
                .map(|&(_, due, passed)| if passed { clock.now() } else { boundary(due, tick) })
                .collect();
            assert_eq!(timer.len(), pending.len(), "seed {seed} step {step}");
            match (timer.next_wakeup(), pending.iter().min()) {
                (None, None) => {}
                (Some(at), Some(&earliest)) => {
                    let limit = origin + earliest;
                    assert!(at <= limit, "seed {seed} step {step}: next_wakeup {at:?} after {limit:?}");
                }
                (got, earliest) => {
                    panic!("seed {seed} step {step}: next_wakeup {got:?} with earliest {earliest:?} pending")
                }
            }
        }
    }
}

/// A timer on a `ManualClock` reads its instants as the clock's base plus its reading: the base is
/// taken when the clock is created (not when the timer is built, however much later), clones and
/// two timers on one clock agree, and deadlines read back to the nanosecond.
#[test]
fn now_is_the_clocks_base_plus_its_reading_whenever_the_timer_was_built() {
    let before = Instant::now();
    let clock = ManualClock::new();
    let after = Instant::now();
    std::thread::sleep(Duration::from_millis(20));
    clock.advance(Duration::from_nanos(1_234_567));
    let a = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    std::thread::sleep(Duration::from_millis(5));
    let b =
        Timer::builder().tick(Duration::from_millis(7)).wheel_size(3).clock(clock.clone()).manual().build();
    let base = a.now() - Duration::from_nanos(1_234_567);
    assert!(before <= base && base <= after, "the base is the clock's creation");
    assert_eq!(a.now(), b.now());
    clock.advance(Duration::from_secs(3_600));
    assert_eq!(a.now(), base + Duration::from_nanos(1_234_567) + Duration::from_secs(3_600));
    assert_eq!(a.now(), b.now());
    let h = b.schedule(Duration::from_nanos(999), || {});
    assert_eq!(h.deadline(), Some(a.now() + Duration::from_nanos(999)));
    let at = a.now() + Duration::from_millis(13) + Duration::from_nanos(3);
    let g = a.schedule_at(at, || {});
    assert_eq!(g.deadline(), Some(at));
}

/// `deadline()` through a task's life: the instant given, the one a `true` reset set, unchanged by
/// a reset refused for range, `None` after the fire, a cancel or a shutdown; and a reset after any
/// of those is `false` and leaves `deadline()` at `None`.
#[test]
fn deadline_follows_resets_and_is_none_once_the_task_is_no_longer_pending() {
    let tick = Duration::from_millis(1);
    let (clock, timer) = manual_timer(tick, 8);
    let ran = Arc::new(AtomicUsize::new(0));
    let counted = |ran: &Arc<AtomicUsize>| {
        let ran = Arc::clone(ran);
        move || {
            ran.fetch_add(1, Ordering::SeqCst);
        }
    };
    let t0 = timer.now();
    let h = timer.schedule(Duration::from_millis(50), counted(&ran));
    assert_eq!(h.deadline(), Some(t0 + Duration::from_millis(50)));
    assert!(h.reset(Duration::from_millis(5)));
    assert_eq!(h.deadline(), Some(t0 + Duration::from_millis(5)));
    assert!(h.reset_at(t0 + Duration::from_secs(100)));
    assert_eq!(h.deadline(), Some(t0 + Duration::from_secs(100)));
    assert!(!h.reset(Duration::MAX), "beyond the range: refused");
    assert_eq!(h.deadline(), Some(t0 + Duration::from_secs(100)), "a refused reset changes nothing");
    assert!(h.reset_at(t0 + Duration::from_nanos(2_500_001)));
    clock.advance(Duration::from_nanos(2_999_999));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(ran.load(Ordering::SeqCst), 0, "due at 2.5 ms: fires at the 3 ms boundary, not before");
    assert_eq!(h.deadline(), Some(t0 + Duration::from_nanos(2_500_001)));
    clock.advance(Duration::from_nanos(1));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(h.deadline(), None);
    assert!(!h.reset(Duration::from_millis(1)) && !h.reset_at(timer.now()));
    assert_eq!(h.deadline(), None);
    clock.advance(Duration::from_millis(10));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(ran.load(Ordering::SeqCst), 1, "a refused reset revives nothing");

    let c = timer.schedule(Duration::from_millis(3), counted(&ran));
    assert!(c.cancel());
    assert!(!c.reset(Duration::ZERO));
    assert_eq!(c.deadline(), None);
    let s = timer.schedule(Duration::from_millis(3), counted(&ran));
    let unfired = timer.shutdown();
    assert_eq!(unfired.len(), 1);
    assert_eq!(s.deadline(), None);
    assert!(!s.reset(Duration::from_millis(1)) && !s.cancel());
    clock.advance(Duration::from_millis(10));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}

/// A handle whose task fired or was cancelled, its slot then reused by many later tasks: its
/// `cancel`, `reset`, `reset_at` and `deadline` touch none of them.
#[test]
fn a_stale_handle_never_moves_cancels_or_reads_a_later_task() {
    let (clock, timer) = manual_timer(Duration::from_millis(1), 4);
    let log = Log::default();
    let mut stale = Vec::new();
    for i in 0..64 {
        let h = timer.schedule(Duration::from_millis(1), log.task(usize::MAX - i, &clock));
        if i % 2 == 0 {
            assert!(h.cancel());
        }
        stale.push(h);
    }
    clock.advance(Duration::from_millis(1));
    timer.advance_clock(Duration::ZERO);
    let fresh: Vec<TimerHandle> =
        (0..4_096).map(|i| timer.schedule(Duration::from_millis(30), log.task(i, &clock))).collect();
    for h in &stale {
        assert!(!h.cancel());
        assert!(!h.reset(Duration::ZERO));
        assert!(!h.reset_at(timer.now()));
        assert_eq!(h.deadline(), None);
        assert!(!h.is_pending());
    }
    assert_eq!(timer.len(), fresh.len());
    let due = timer.now() + Duration::from_millis(30);
    assert!(fresh.iter().all(|h| h.deadline() == Some(due)));
    clock.advance(Duration::from_millis(29));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.count(), 32, "nothing the stale handles did moved a later task earlier");
    clock.advance(Duration::from_millis(1));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.count(), 32 + fresh.len());
}
