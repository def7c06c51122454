//! `queue::DelayQueue` on the seeds' wheel (10 ms tick, 60 slots) and 2- and 3-slot ones: values due in
//! one tick come out in deadline order to a 256th of the tick, whichever level they waited in and
//! whether inserted by delay, by instant or moved there by a reset, equal deadlines first inserted
//! first (nine chosen values, and thousands of random ones); `len` is pending plus
//! expired-not-taken through every call; an expired value can be neither reset nor removed; a key
//! names nothing in another queue, even where its slot there holds a value; and (feature `async`)
//! `poll_expired` is `Ready(None)` exactly when nothing is pending or expired.

mod common;

use std::time::Duration;

use common::{manual_timer, ms};
use delaywheel::queue::{DelayQueue, Key};
use delaywheel::ManualClock;

const TICK: Duration = Duration::from_millis(10);

fn queue(wheel: usize) -> (ManualClock, DelayQueue<u32>) {
    let (clock, timer) = manual_timer(TICK, wheel);
    (clock, DelayQueue::with_timer(timer))
}

fn step(clock: &ManualClock, q: &DelayQueue<u32>, by: Duration) {
    clock.advance(by);
    q.advance_clock(Duration::ZERO);
}

fn drain(q: &DelayQueue<u32>) -> Vec<u32> {
    std::iter::from_fn(|| q.try_recv().map(|e| e.into_inner())).collect()
}

/// Values of one tick (40 s out: a far level when inserted), inserted in reverse deadline order
/// by delay and by instant, some moved in by resets from other levels: they come out in
/// deadline order by 256ths, ties first inserted first.
#[test]
fn one_tick_comes_out_by_256ths_from_every_level_ties_first_inserted_first() {
    for wheel in [60usize, 2] {
        for jump in [false, true] {
            let (clock, q) = queue(wheel);
            let origin = q.timer().now();
            let sub = TICK / 256;
            let base = TICK * 3_999;
            // (value, 256ths into the tick, how it gets there)
            let plan: [(u32, u32, u8); 9] = [
                (0, 250, 0),
                (1, 200, 1),
                (2, 200, 0),
                (3, 100, 2),
                (4, 100, 1),
                (5, 7, 3),
                (6, 7, 0),
                (7, 1, 2),
                (8, 255, 3),
            ];
            let mut keys: Vec<Key> = Vec::new();
            for &(v, k, how) in &plan {
                let at = base + sub * k + Duration::from_nanos(1);
                let key = match how {
                    0 => q.insert(v, at - clock.now()),
                    1 => q.insert_at(v, origin + at),
                    2 => q.insert(v, Duration::from_secs(3 * 3600)), // moved earlier below
                    _ => q.insert(v, ms(5)),                         // moved later below
                };
                keys.push(key);
            }
            step(&clock, &q, ms(2));
            for (i, &(_, k, how)) in plan.iter().enumerate() {
                let at = origin + base + sub * k + Duration::from_nanos(1);
                if how >= 2 {
                    assert!(q.reset_at(&keys[i], at));
                }
                assert_eq!(q.deadline(&keys[i]), Some(at));
            }
            assert_eq!(q.len(), plan.len());
            step(&clock, &q, Duration::from_secs(39) - ms(2));
            assert!(drain(&q).is_empty());
            if jump {
                step(&clock, &q, Duration::from_secs(3600));
            } else {
                while !q.timer().is_empty() {
                    step(&clock, &q, TICK);
                }
            }
            assert_eq!(q.len(), plan.len(), "expired, not taken");
            // Ties: 200ths (1 then 2), 100ths (3 then 4: 3 was inserted first), 7ths (5, 6).
            assert_eq!(drain(&q), [7, 5, 6, 3, 4, 1, 2, 0, 8], "wheel {wheel}, jump {jump}");
            assert!(q.is_empty());
        }
    }
}

/// `len` is pending + expired-not-taken through inserts, removes, resets, expiries and takes;
/// an expired value's key can be neither reset nor removed, nor read a deadline.
#[test]
fn len_through_every_call_and_expired_keys_are_dead() {
    let (clock, q) = queue(60);
    let a = q.insert(1, ms(10));
    let b = q.insert(2, ms(20));
    let c = q.insert(3, Duration::from_secs(40));
    assert_eq!(q.len(), 3);
    assert!(q.reset(&c, ms(10)));
    step(&clock, &q, ms(10));
    assert_eq!(q.len(), 3, "two expired, one pending");
    assert!(!q.reset(&a, ms(100)), "expired: no reset");
    assert!(!q.reset_at(&c, q.timer().now() + ms(100)));
    assert_eq!(q.remove(&a), None);
    assert_eq!(q.deadline(&a), None);
    assert_eq!(q.len(), 3);
    assert!(q.reset(&b, Duration::from_secs(3600)));
    assert_eq!(q.remove(&b), Some(2), "removed after a reset");
    assert_eq!(q.len(), 2);
    let e = q.try_recv().unwrap();
    assert_eq!((e.key(), *e.get_ref()), (a, 1));
    assert_eq!(q.len(), 1);
    assert_eq!(q.try_recv().unwrap().key(), c);
    assert!(q.is_empty());
    step(&clock, &q, Duration::from_secs(7200));
    assert!(q.try_recv().is_none() && q.is_empty());
}

/// Two queues of identical history hand out keys naming the same slots: a key of one names
/// nothing in the other.
#[test]
fn a_key_names_nothing_in_another_queue() {
    let (c1, q1) = queue(60);
    let (c2, q2) = queue(60);
    let k1 = q1.insert(10, ms(30));
    let k2 = q2.insert(20, ms(30));
    assert_ne!(k1, k2);
    assert_eq!(q2.remove(&k1), None);
    assert!(!q2.reset(&k1, ms(1)));
    assert!(!q2.reset_at(&k1, q2.timer().now()));
    assert_eq!(q2.deadline(&k1), None);
    assert_eq!((q1.len(), q2.len()), (1, 1));
    assert_eq!(q2.deadline(&k2), Some(q2.timer().now() + ms(30)));
    step(&c1, &q1, ms(30));
    step(&c2, &q2, ms(30));
    assert_eq!(drain(&q1), [10]);
    assert_eq!(drain(&q2), [20]);
}

/// Thousands of values in three ticks 40 s out, inserted by instant and by delay (the latter far
/// away, then moved in), re-armed at random, from four clock readings (so from different levels),
/// on wheels of 60, 3 and 2 slots: each comes out once, no value before one whose deadline is a
/// 256th of a tick or more earlier, and equal deadlines first inserted first.
#[test]
fn thousands_of_values_in_three_ticks_come_out_by_256ths_and_fifo() {
    let sub = TICK / 256;
    for seed in 1..4u64 {
        for wheel in [60usize, 3, 2] {
            let (clock, q) = queue(wheel);
            let o = q.timer().now();
            let mut rng = common::SplitMix(seed);
            let base = TICK * 4_000;
            // A deadline in the three ticks from `base`: a whole millisecond (ties) or any nanosecond.
            let pick = |rng: &mut common::SplitMix| {
                base + if rng.range(0, 4) == 0 {
                    ms(rng.range(0, 30))
                } else {
                    Duration::from_nanos(rng.range(0, 30_000_000))
                }
            };
            let (mut deadlines, mut keys) = (Vec::new(), Vec::new());
            for _ in 0..4 {
                for _ in 0..500 {
                    let id = deadlines.len() as u32;
                    let at = pick(&mut rng);
                    let far = rng.range(0, 3) == 0;
                    keys.push(if far {
                        q.insert(id, Duration::from_secs(7200))
                    } else {
                        q.insert_at(id, o + at)
                    });
                    deadlines.push(at);
                }
                for _ in 0..150 {
                    let i = rng.range(0, keys.len() as u64) as usize;
                    deadlines[i] = pick(&mut rng);
                    assert!(q.reset_at(&keys[i], o + deadlines[i]));
                }
                for (key, &at) in keys.iter().zip(&deadlines) {
                    if q.deadline(key) != Some(o + at) {
                        assert!(q.reset_at(key, o + at), "the far ones move in");
                    }
                }
                step(&clock, &q, Duration::from_secs(9) + ms(rng.range(0, 900)));
            }
            step(&clock, &q, Duration::from_secs(3600));
            let out = drain(&q);
            assert_eq!(out.len(), deadlines.len(), "as many out as in");
            let mut seen = out.clone();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), deadlines.len(), "each value once");
            // Every pair: the latest deadline out so far is less than a 256th after each next
            // one, and the last value out at each deadline was inserted before the next one.
            let mut latest: Option<(u32, Duration)> = None;
            let mut last_at = std::collections::HashMap::new();
            for &b in &out {
                let db = deadlines[b as usize];
                if let Some((a, da)) = latest {
                    assert!(da < db + sub, "seed {seed} wheel {wheel}: {a} ({da:?}) before {b} ({db:?})");
                }
                if latest.map_or(true, |(_, da)| db > da) {
                    latest = Some((b, db));
                }
                if let Some(a) = last_at.insert(db, b) {
                    assert!(a < b, "seed {seed} wheel {wheel}: {a} before {b}, both {db:?}");
                }
            }
        }
    }
}

#[cfg(feature = "async")]
mod polls {
    use super::*;
    use common::waker::CountingWaker;
    use std::task::{Context, Poll};

    fn poll(q: &DelayQueue<u32>, w: &std::task::Waker) -> Poll<Option<u32>> {
        q.poll_expired(&mut Context::from_waker(w)).map(|o| o.map(|e| e.into_inner()))
    }

    /// `Ready(None)` on an empty queue; `Pending` while values are pending only; a value once it
    /// expired; `Ready(None)` again when the last one was taken or removed; a waiting poller is
    /// woken by an expiry and by the queue becoming empty through a remove.
    #[test]
    fn poll_expired_is_ready_none_exactly_when_nothing_is_pending_or_expired() {
        let (clock, q) = queue(60);
        let (count, w) = CountingWaker::new();
        assert_eq!(poll(&q, &w), Poll::Ready(None));
        let a = q.insert(1, ms(20));
        let _b = q.insert(2, Duration::from_secs(40));
        assert_eq!(poll(&q, &w), Poll::Pending);
        step(&clock, &q, ms(10));
        assert_eq!(poll(&q, &w), Poll::Pending);
        let before = count.count();
        step(&clock, &q, ms(10));
        assert!(count.count() > before, "woken by the expiry");
        assert_eq!(q.remove(&a), None);
        assert_eq!(poll(&q, &w), Poll::Ready(Some(1)));
        assert_eq!(poll(&q, &w), Poll::Pending, "one still pending");
        let c = q.insert(3, ms(5));
        assert_eq!(poll(&q, &w), Poll::Pending);
        step(&clock, &q, Duration::from_secs(40));
        assert_eq!(poll(&q, &w), Poll::Ready(Some(3)));
        assert_eq!(poll(&q, &w), Poll::Ready(Some(2)));
        assert_eq!(poll(&q, &w), Poll::Ready(None));
        let d = q.insert(4, ms(50));
        assert_eq!(poll(&q, &w), Poll::Pending);
        let before = count.count();
        assert_eq!(q.remove(&d), Some(4));
        assert!(count.count() > before, "woken when the queue became empty");
        assert_eq!(poll(&q, &w), Poll::Ready(None));
        assert_eq!(q.remove(&c), None);
    }
}
