//! `queue::DelayQueue` at its edges, as a new user reads DESIGN.md: `max_pending` bounds the
//! pending values and not the expired ones waiting for a consumer; `len` exact through every
//! call; keys of expired, removed and taken values after their slots were reused; `deadline` and
//! `Expired::deadline` through resets; inserts by delay and by instant on one instant in FIFO
//! order; and every refusal handing its value back.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use delaywheel::queue::{DelayQueue, Key};
use delaywheel::{ManualClock, ScheduleError, Timer};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn queue<T: Send + 'static>(max_pending: Option<usize>) -> (ManualClock, DelayQueue<T>) {
    let clock = ManualClock::new();
    let mut builder = Timer::builder().tick(ms(1)).wheel_size(4).clock(clock.clone()).manual();
    if let Some(max) = max_pending {
        builder = builder.max_pending(max);
    }
    (clock, DelayQueue::with_timer(builder.build()))
}

fn step<T>(clock: &ManualClock, q: &DelayQueue<T>, by: Duration) {
    clock.advance(by);
    q.advance_clock(Duration::ZERO);
}

/// A value counted by its drops.
struct Counted(u32, Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

/// With `max_pending(2)`: a third insert is refused with `TooManyPending` and its value handed
/// back; once the two expired (waiting for a consumer, still in `len`), two more are accepted;
/// a remove frees room at once; nothing is dropped but what was handed back and dropped.
#[test]
fn max_pending_counts_pending_values_not_expired_ones() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (clock, q) = queue::<Counted>(Some(2));
    let c = |n| Counted(n, Arc::clone(&drops));
    q.insert(c(1), ms(5));
    let k2 = q.insert(c(2), ms(6));
    let refused = q.try_insert(c(3), ms(1)).unwrap_err();
    assert_eq!(*refused.error(), ScheduleError::TooManyPending { max: 2 });
    assert_eq!(refused.into_inner().0, 3);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    let refused = q.try_insert_at(c(4), q.timer().now()).unwrap_err();
    assert!(matches!(refused.error(), ScheduleError::TooManyPending { .. }));
    drop(refused);
    assert_eq!(q.remove(&k2).map(|v| v.0), Some(2));
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    assert!(q.try_insert(c(5), ms(6)).is_ok());
    assert_eq!(q.len(), 2);
    step(&clock, &q, ms(6));
    assert_eq!(q.len(), 2, "expired, not taken");
    q.try_insert(c(6), ms(1)).map_err(|e| e.error().clone()).expect("expired values are not pending");
    q.try_insert(c(7), ms(1)).map_err(|e| e.error().clone()).expect("room for two pending");
    assert!(q.try_insert(c(8), ms(1)).is_err());
    assert_eq!(q.len(), 4);
    let firsts: Vec<u32> = std::iter::from_fn(|| q.try_recv()).map(|e| e.get_ref().0).collect();
    assert_eq!(firsts, [1, 5]);
    step(&clock, &q, ms(1));
    let rest: Vec<u32> = std::iter::from_fn(|| q.try_recv()).map(|e| e.get_ref().0).collect();
    assert_eq!(rest, [6, 7]);
    assert!(q.is_empty());
    assert_eq!(drops.load(Ordering::SeqCst), 8);
}

/// `len` after every call, `remove` of pending, expired, taken and removed keys, and the
/// `Expired` a consumer gets: its key, its value and the deadline last set.
#[test]
fn len_is_exact_through_every_call_and_expired_values_carry_their_last_deadline() {
    let (clock, q) = queue::<&'static str>(None);
    let t0 = q.timer().now();
    let a = q.insert("a", ms(10));
    let b = q.insert_at("b", t0 + ms(20));
    let c = q.insert("c", ms(30));
    assert_eq!((q.len(), q.is_empty()), (3, false));
    assert_eq!(q.remove(&c), Some("c"));
    assert_eq!((q.remove(&c), q.len()), (None, 2));
    assert!(q.reset_at(&b, t0 + ms(7) + Duration::from_nanos(3)));
    assert_eq!(q.deadline(&b), Some(t0 + ms(7) + Duration::from_nanos(3)));
    assert!(q.reset(&a, ms(9)));
    assert_eq!(q.deadline(&a), Some(t0 + ms(9)));
    step(&clock, &q, ms(7));
    assert_eq!((q.len(), q.try_recv().map(|e| e.into_inner())), (2, None), "b is due at 7 ms + 3 ns");
    step(&clock, &q, ms(1));
    assert_eq!(q.len(), 2);
    assert_eq!(q.deadline(&b), None, "expired");
    assert_eq!(q.remove(&b), None, "expired: not given back");
    assert!(!q.reset(&b, ms(100)), "expired: not moved");
    assert_eq!(q.len(), 2, "a refused remove or reset counts nothing out");
    let e = q.try_recv().unwrap();
    assert_eq!((e.key(), *e.get_ref(), e.deadline()), (b, "b", t0 + ms(7) + Duration::from_nanos(3)));
    assert_eq!(q.len(), 1);
    assert_eq!(q.remove(&b), None);
    step(&clock, &q, ms(1));
    let e = q.try_recv().unwrap();
    assert_eq!((e.key(), e.into_inner(), q.len()), (a, "a", 0));
    assert!(q.is_empty() && q.try_recv().is_none());
    assert_eq!(q.recv_timeout(Duration::ZERO).map(|e| e.into_inner()), None);
}

/// Keys of values that expired, were taken or removed, after their slots went to many later
/// values: none of them removes, resets or reads a later value, and every later value comes out
/// once, at its own deadline.
#[test]
fn old_keys_after_slot_reuse_name_nothing() {
    let (clock, q) = queue::<u32>(None);
    let mut old: Vec<Key> = Vec::new();
    for i in 0..300u32 {
        let k = q.insert(i, ms(1));
        if i % 3 == 0 {
            assert_eq!(q.remove(&k), Some(i));
        }
        old.push(k);
    }
    step(&clock, &q, ms(1));
    let taken = std::iter::from_fn(|| q.try_recv()).count();
    assert_eq!(taken, 200);
    let fresh: Vec<Key> = (0..5_000u32).map(|i| q.insert(1_000 + i, ms(20))).collect();
    for k in &old {
        assert_eq!(q.remove(k), None);
        assert!(!q.reset(k, Duration::ZERO));
        assert!(!q.reset_at(k, q.timer().now()));
        assert_eq!(q.deadline(k), None);
    }
    assert_eq!(q.len(), 5_000);
    step(&clock, &q, ms(19));
    assert!(q.try_recv().is_none(), "no old key moved a later value earlier");
    step(&clock, &q, ms(1));
    let out: Vec<u32> = std::iter::from_fn(|| q.try_recv()).map(|e| e.into_inner()).collect();
    assert_eq!(out, (1_000..6_000).collect::<Vec<_>>(), "FIFO for one deadline");
    assert!(fresh.iter().all(|k| q.remove(k).is_none()));
}

/// Values due at one instant, inserted by delay and by instant from different clock readings
/// (some reset onto that instant, some reset away from it and back), come out in the order they
/// were first inserted; a value reset to a deadline already passed comes out at the next advance
/// before the values that expired earlier with later deadlines.
#[test]
fn one_instant_by_delay_and_by_instant_comes_out_first_inserted_first() {
    let (clock, q) = queue::<u32>(None);
    let at = q.timer().now() + ms(50) + Duration::from_micros(300);
    let mut keys = Vec::new();
    for i in 0..40u32 {
        let k = match i % 4 {
            0 => q.insert_at(i, at),
            1 => q.insert(i, at - q.timer().now()),
            2 => {
                let k = q.insert(i, ms(500));
                assert!(q.reset_at(&k, at));
                k
            }
            _ => {
                let k = q.insert_at(i, at);
                assert!(q.reset(&k, ms(1)));
                assert!(q.reset_at(&k, at));
                k
            }
        };
        keys.push(k);
        if i % 7 == 0 {
            step(&clock, &q, Duration::from_micros(700));
        }
    }
    let now = q.timer().now();
    assert!(now < at);
    step(&clock, &q, at - now);
    assert_eq!(q.len(), 40);
    let late = q.insert(1_000, ms(200));
    step(&clock, &q, ms(1));
    assert!(q.reset_at(&late, at - ms(1)));
    assert_eq!(q.deadline(&late), Some(at - ms(1)));
    q.advance_clock(Duration::ZERO);
    let out: Vec<u32> = std::iter::from_fn(|| q.try_recv()).map(|e| e.into_inner()).collect();
    let mut want = vec![1_000];
    want.extend(0..40);
    assert_eq!(out, want);
}

/// Every refusal hands the value back: a deadline beyond the range (by delay and by instant), and
/// after a shutdown; `insert` drops the value and returns a key that names nothing.
#[test]
fn refusals_hand_the_value_back_and_insert_drops_it() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (_clock, q) = queue::<Counted>(None);
    let c = |n| Counted(n, Arc::clone(&drops));
    let e = q.try_insert(c(1), Duration::MAX).unwrap_err();
    assert!(matches!(e.error(), ScheduleError::DelayTooLong { .. }));
    assert_eq!(e.into_inner().0, 1);
    let far = q.timer().now() + Duration::from_secs(3_600 * 24 * 365 * 10_000);
    let e = q.try_insert_at(c(2), far).unwrap_err();
    assert!(matches!(e.error(), ScheduleError::DelayTooLong { .. }), "{:?}", e.error());
    assert!(format!("{e:?}").contains("DelayTooLong"));
    drop(e);
    let k = q.insert(c(3), Duration::MAX);
    assert_eq!((q.len(), q.deadline(&k).is_none(), q.remove(&k).is_none()), (0, true, true));
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    let pending = q.insert(c(4), ms(5));
    q.timer().shutdown();
    let e = q.try_insert(c(5), ms(1)).unwrap_err();
    assert_eq!(*e.error(), ScheduleError::ShutDown);
    assert_eq!(e.into_inner().0, 5);
    q.insert_at(c(6), q.timer().now());
    assert_eq!(drops.load(Ordering::SeqCst), 6, "the shutdown dropped the pending value");
    assert_eq!((q.len(), q.remove(&pending).is_none(), q.try_recv().is_none()), (0, true, true));
}
