//! Work set while a manual clock runs ahead of the timer's cursor: the clock moves (a fraction of a
//! tick, a few ticks, levels away) without an `advance_clock`, and tasks and delay-queue values are
//! scheduled, inserted (by delay, by an instant passed or ahead), re-armed, cancelled and removed
//! against the clock's reading, not the cursor's. Random sequences on ticks from 1 µs to a third
//! of a second (odd ones too) and wheels of 2 to 1000 slots, each op checked against a list of
//! deadlines. After every advance: each task ran (each value came out) once, never before its
//! deadline; everything whose deadline's tick boundary the clock has reached is done, and so is
//! whatever was set to a deadline already passed; one advance hands things out in deadline order
//! (to a 256th of a tick) and equal deadlines in scheduling order. `cancel`, `reset`, `remove`,
//! `deadline` and `len` say what the list says after every op.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::SplitMix;
use delaywheel::queue::{DelayQueue, Key};
use delaywheel::{ManualClock, Timer, TimerHandle};

const TICKS_NS: [u64; 8] = [1_000, 1_001, 7_000, 999_999, 1_000_000, 1_500_000, 10_000_000, 333_333_333];
const WHEELS: [usize; 9] = [2, 3, 4, 7, 8, 20, 60, 256, 1000];

/// One random timer shape and the manual clock it reads.
fn timer(rng: &mut SplitMix) -> (ManualClock, Timer, u64, u64) {
    let tick = TICKS_NS[rng.range(0, TICKS_NS.len() as u64) as usize];
    let wheel = WHEELS[rng.range(0, WHEELS.len() as u64) as usize];
    let (clock, timer) = common::manual_timer(Duration::from_nanos(tick), wheel);
    (clock, timer, tick, wheel as u64)
}

/// A clock step: within a tick, a few ticks, across level 1, or further.
fn jump(rng: &mut SplitMix, tick: u64, wheel: u64) -> u64 {
    match rng.range(0, 4) {
        0 => rng.range(0, tick),
        1 => rng.range(0, tick * 5),
        2 => rng.range(0, tick * wheel * wheel),
        _ => rng.range(0, tick * wheel.pow(4).min(1 << 20)),
    }
}

/// A delay: zero, within a tick, a few ticks, a few levels, or hours to years.
fn delay(rng: &mut SplitMix, tick: u64, wheel: u64) -> u64 {
    match rng.range(0, 5) {
        0 => 0,
        1 => rng.range(0, tick),
        2 => rng.range(0, tick * 10),
        3 => rng.range(0, tick * wheel.pow(3).min(1 << 24)),
        _ => rng.range(0, 1 << 40),
    }
}

/// What the list knows of one task or value; times in nanoseconds on the manual clock.
struct Due {
    deadline: u64,
    pending: bool,
    /// Scheduling order, for the FIFO check of equal deadlines (never re-armed ones only).
    seq: u64,
    rearmed: bool,
    /// Set to a deadline at or before the clock's reading: due by the next advance.
    passed: bool,
}

impl Due {
    fn new(deadline: u64, now: u64, seq: u64) -> Due {
        Due { deadline, pending: true, seq, rearmed: false, passed: deadline <= now }
    }

    fn rearm(&mut self, deadline: u64, now: u64) {
        (self.deadline, self.rearmed, self.passed) = (deadline, true, deadline <= now);
    }
}

/// Checks what one advance handed out (`(index, clock reading then)`, in order) and marks it done.
fn check_advance(out: &[(usize, u64)], list: &mut [Due], now: u64, tick: u64, ctx: &str) {
    for &(i, at) in out {
        let due = &mut list[i];
        assert!(due.pending, "{ctx}: #{i} out twice, or after a cancel");
        assert!(at >= due.deadline, "{ctx}: #{i} early: at {at} ns, deadline {} ns", due.deadline);
        due.pending = false;
    }
    for pair in out.windows(2) {
        let (a, b) = (&list[pair[0].0], &list[pair[1].0]);
        assert!(
            a.deadline <= b.deadline + tick / 256,
            "{ctx}: #{} (deadline {}) before #{} (deadline {})",
            pair[0].0,
            a.deadline,
            pair[1].0,
            b.deadline
        );
        if a.deadline == b.deadline && !a.rearmed && !b.rearmed {
            assert!(a.seq < b.seq, "{ctx}: equal deadlines out of scheduling order");
        }
    }
    for (i, due) in list.iter().enumerate().filter(|(_, due)| due.pending) {
        let boundary = due.deadline.div_ceil(tick) * tick;
        assert!(
            !due.passed,
            "{ctx}: #{i} set to a passed deadline {} ns, still pending at {now}",
            due.deadline
        );
        assert!(
            now < boundary,
            "{ctx}: #{i} due at {} ns (boundary {boundary}) still pending at {now}",
            due.deadline
        );
    }
}

fn nanos(clock: &ManualClock) -> u64 {
    clock.now().as_nanos() as u64
}

fn timer_run(seed: u64) {
    let mut rng = SplitMix(seed);
    let (clock, timer, tick, wheel) = timer(&mut rng);
    let origin = timer.now();
    let fired: Arc<Mutex<Vec<(usize, u64)>>> = Arc::default();
    let (mut list, mut handles) = (Vec::<Due>::new(), Vec::<TimerHandle>::new());
    for step in 0..400 {
        let ctx = format!("seed {seed} step {step} (tick {tick} ns, wheel {wheel})");
        let now = nanos(&clock);
        match rng.range(0, 10) {
            0 | 1 => clock.advance(Duration::from_nanos(jump(&mut rng, tick, wheel))),
            2 | 3 => {
                timer.advance_clock(Duration::ZERO);
                let out = std::mem::take(&mut *fired.lock().unwrap());
                check_advance(&out, &mut list, now, tick, &ctx);
            }
            4..=6 => {
                let i = list.len();
                let (log, c) = (Arc::clone(&fired), clock.clone());
                let task = move || log.lock().unwrap().push((i, nanos(&c)));
                let d = delay(&mut rng, tick, wheel);
                let (deadline, handle) = match rng.range(0, 3) {
                    0 => (now + d, timer.schedule(Duration::from_nanos(d), task)),
                    1 => (now + d, timer.schedule_at(origin + Duration::from_nanos(now + d), task)),
                    _ => {
                        let back = now.saturating_sub(d);
                        (back, timer.schedule_at(origin + Duration::from_nanos(back), task))
                    }
                };
                assert_eq!(handle.deadline(), Some(origin + Duration::from_nanos(deadline)), "{ctx}");
                list.push(Due::new(deadline, now, step));
                handles.push(handle);
            }
            7 | 8 if !list.is_empty() => {
                let i = rng.range(0, list.len() as u64) as usize;
                let d = [0, rng.range(0, tick * 3), rng.range(0, tick * 1000)][rng.range(0, 3) as usize];
                let moved = handles[i].reset(Duration::from_nanos(d));
                assert_eq!(moved, list[i].pending, "{ctx}: reset of #{i}");
                if moved {
                    list[i].rearm(now + d, now);
                }
            }
            9 if !list.is_empty() => {
                let i = rng.range(0, list.len() as u64) as usize;
                assert_eq!(handles[i].cancel(), list[i].pending, "{ctx}: cancel of #{i}");
                list[i].pending = false;
            }
            _ => {}
        }
        assert_eq!(timer.len(), list.iter().filter(|due| due.pending).count(), "{ctx}: len");
    }
}

fn queue_run(seed: u64) {
    let mut rng = SplitMix(seed);
    let (clock, timer, tick, wheel) = timer(&mut rng);
    let origin = timer.now();
    let queue: DelayQueue<usize> = DelayQueue::with_timer(timer);
    let instant = |ns: u64| origin + Duration::from_nanos(ns);
    let (mut list, mut keys) = (Vec::<Due>::new(), Vec::<Key>::new());
    for step in 0..400 {
        let ctx = format!("seed {seed} step {step} (tick {tick} ns, wheel {wheel})");
        let now = nanos(&clock);
        match rng.range(0, 10) {
            0 | 1 => clock.advance(Duration::from_nanos(jump(&mut rng, tick, wheel))),
            2 | 3 => {
                queue.advance_clock(Duration::ZERO);
                let mut out = Vec::new();
                while let Some(expired) = queue.try_recv() {
                    let i = *expired.get_ref();
                    assert_eq!(expired.key(), keys[i], "{ctx}: key of #{i}");
                    assert_eq!(expired.deadline(), instant(list[i].deadline), "{ctx}: deadline of #{i}");
                    out.push((i, now));
                }
                check_advance(&out, &mut list, now, tick, &ctx);
            }
            4..=6 => {
                let i = list.len();
                let d = delay(&mut rng, tick, wheel);
                let (deadline, key) = match rng.range(0, 3) {
                    0 => (now + d, queue.insert(i, Duration::from_nanos(d))),
                    1 => (now + d, queue.insert_at(i, instant(now + d))),
                    _ => (now.saturating_sub(d), queue.insert_at(i, instant(now.saturating_sub(d)))),
                };
                list.push(Due::new(deadline, now, step));
                keys.push(key);
            }
            7 if !list.is_empty() => {
                let i = rng.range(0, list.len() as u64) as usize;
                let d = [0, rng.range(0, tick * 3), rng.range(0, tick * 1000)][rng.range(0, 3) as usize];
                let back = rng.range(0, 2) == 0;
                let deadline = if back { now.saturating_sub(d) } else { now + d };
                let moved = if back {
                    queue.reset_at(&keys[i], instant(deadline))
                } else {
                    queue.reset(&keys[i], Duration::from_nanos(d))
                };
                assert_eq!(moved, list[i].pending, "{ctx}: reset of #{i}");
                if moved {
                    list[i].rearm(deadline, now);
                }
            }
            8 if !list.is_empty() => {
                let i = rng.range(0, list.len() as u64) as usize;
                let want = list[i].pending.then_some(i);
                assert_eq!(queue.remove(&keys[i]), want, "{ctx}: remove of #{i}");
                list[i].pending = false;
            }
            _ => {}
        }
        for (i, due) in list.iter().enumerate() {
            let want = due.pending.then(|| instant(due.deadline));
            assert_eq!(queue.deadline(&keys[i]), want, "{ctx}: deadline of #{i}");
        }
        assert_eq!(queue.len(), list.iter().filter(|due| due.pending).count(), "{ctx}: len");
    }
}

#[test]
fn tasks_set_while_the_clock_is_ahead_of_the_cursor_run_on_time_once_in_order() {
    for seed in 0..1500 {
        timer_run(seed);
    }
}

#[test]
fn values_set_while_the_clock_is_ahead_of_the_cursor_come_out_on_time_once_in_order() {
    for seed in 0..1000 {
        queue_run(seed);
    }
}

#[test]
fn an_instant_of_the_clock_not_yet_advanced_to_is_its_reading_not_the_cursors() {
    let (clock, timer) = common::manual_timer(Duration::from_millis(10), 4);
    let origin = timer.now();
    clock.advance(Duration::from_millis(3_600_000 + 3));
    assert_eq!(timer.now(), origin + Duration::from_millis(3_600_003));
    let fired = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&fired);
    let c = clock.clone();
    let handle = timer.schedule(Duration::from_millis(15), move || log.lock().unwrap().push(c.now()));
    assert_eq!(handle.deadline(), Some(origin + Duration::from_millis(3_600_018)));
    for (by, expect) in [(0, 0), (16, 0), (1, 1)] {
        clock.advance(Duration::from_millis(by));
        timer.advance_clock(Duration::ZERO);
        assert_eq!(fired.lock().unwrap().len(), expect, "at {:?}", clock.now());
    }
    // The tick boundary at or after 3 600 018 ms: 3 600 020 ms.
    assert_eq!(*fired.lock().unwrap(), [Duration::from_millis(3_600_020)]);
}
