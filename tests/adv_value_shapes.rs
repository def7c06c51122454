//! Values and closures of awkward shapes through the delay queue and the timer: zero-sized,
//! just past the 8 bytes a value keeps in its slot, just past the 248 bytes of a slab block, and
//! over-aligned (16 to 4096 bytes). Each is checked, wherever the library hands it back (remove,
//! `get_ref`, `get_mut`, `into_inner`, a run, a drop by the shutdown or the queue's drop), to be
//! intact and at an address of its alignment, and dropped exactly once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use delaywheel::queue::DelayQueue;
use delaywheel::{ManualClock, Timer};

/// A value of `size` bytes of payload, aligned to `align`, that checks itself.
trait Shape: Send + 'static {
    fn new(id: u64, drops: &Arc<AtomicUsize>) -> Self;
    /// Its id, after asserting its address and payload.
    fn check(&self) -> u64;
}

macro_rules! shape {
    ($name:ident, $align:literal, $bytes:literal) => {
        #[repr(align($align))]
        struct $name {
            id: u64,
            fill: [u8; $bytes],
            drops: Arc<AtomicUsize>,
        }
        impl Shape for $name {
            fn new(id: u64, drops: &Arc<AtomicUsize>) -> Self {
                $name { id, fill: [(id % 251) as u8; $bytes], drops: Arc::clone(drops) }
            }
            fn check(&self) -> u64 {
                let address = self as *const Self as usize;
                assert_eq!(address % $align, 0, "{} {} at {address:#x}", stringify!($name), self.id);
                assert!(
                    self.fill.iter().all(|&b| b == (self.id % 251) as u8),
                    "{} {} corrupt",
                    stringify!($name),
                    self.id
                );
                self.id
            }
        }
        impl Drop for $name {
            fn drop(&mut self) {
                self.check();
                self.drops.fetch_add(1, Ordering::SeqCst);
            }
        }
    };
}

shape!(Small, 8, 0);
shape!(Just16, 16, 1);
shape!(Line, 64, 3);
shape!(Block, 8, 232);
shape!(PastBlock, 8, 233);
shape!(Wide, 128, 300);
shape!(Page, 4096, 5);

fn manual() -> (ManualClock, Timer) {
    let clock = ManualClock::new();
    let timer =
        Timer::builder().tick(Duration::from_millis(1)).wheel_size(4).clock(clock.clone()).manual().build();
    (clock, timer)
}

/// 200 values: every fifth removed, every fifth reset later, the rest expired and taken (half by
/// `into_inner`); then 50 more handed back by a shutdown and dropped; then the queue dropped.
fn through_the_queue<T: Shape>() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (clock, timer) = manual();
    let q = DelayQueue::with_timer(timer);
    let keys: Vec<_> =
        (0..200u64).map(|id| q.insert(T::new(id, &drops), Duration::from_millis(1 + id % 7))).collect();
    let mut removed = 0;
    for (i, k) in keys.iter().enumerate() {
        match i % 5 {
            0 => {
                assert_eq!(q.remove(k).unwrap().check(), i as u64);
                removed += 1;
            }
            1 => assert!(q.reset(k, Duration::from_millis(20))),
            _ => {}
        }
    }
    clock.advance(Duration::from_millis(30));
    q.advance_clock(Duration::ZERO);
    let mut taken = 0;
    while let Some(mut e) = q.try_recv() {
        let id = e.get_ref().check();
        assert_eq!(e.get_mut().check(), id);
        if id % 2 == 0 {
            assert_eq!(e.into_inner().check(), id);
        }
        taken += 1;
    }
    assert_eq!(removed + taken, 200);
    assert_eq!(drops.load(Ordering::SeqCst), 200);
    for id in 0..50u64 {
        q.insert(T::new(id, &drops), Duration::from_millis(5));
    }
    for id in 0..30u64 {
        q.insert(T::new(id, &drops), Duration::from_millis(50));
    }
    clock.advance(Duration::from_millis(5));
    q.advance_clock(Duration::ZERO);
    let unfired = q.timer().shutdown();
    assert_eq!(unfired.len(), 30);
    drop(unfired);
    assert_eq!(drops.load(Ordering::SeqCst), 230);
    drop(q);
    assert_eq!(drops.load(Ordering::SeqCst), 280, "the queue's drop drops the 50 expired values");
}

/// Closures capturing each shape: run, cancelled, handed back by a shutdown and run.
fn through_the_timer<T: Shape>() {
    let drops = Arc::new(AtomicUsize::new(0));
    let runs = Arc::new(AtomicUsize::new(0));
    let (clock, timer) = manual();
    let task = |id: u64| {
        let (value, runs) = (T::new(id, &drops), Arc::clone(&runs));
        move || {
            assert_eq!(value.check(), id);
            runs.fetch_add(1, Ordering::SeqCst);
        }
    };
    let handles: Vec<_> =
        (0..100u64).map(|id| timer.schedule(Duration::from_millis(1 + id % 9), task(id))).collect();
    for h in handles.iter().step_by(3) {
        assert!(h.cancel());
    }
    clock.advance(Duration::from_millis(5));
    timer.advance_clock(Duration::ZERO);
    for unfired in timer.shutdown() {
        unfired.run();
    }
    assert_eq!(runs.load(Ordering::SeqCst), 100 - 34);
    assert_eq!(drops.load(Ordering::SeqCst), 100);
}

#[test]
fn values_of_every_shape_come_back_intact_aligned_and_are_dropped_once() {
    through_the_queue::<Small>();
    through_the_queue::<Just16>();
    through_the_queue::<Line>();
    through_the_queue::<Block>();
    through_the_queue::<PastBlock>();
    through_the_queue::<Wide>();
    through_the_queue::<Page>();
}

#[test]
fn closures_capturing_every_shape_run_intact_aligned_and_are_dropped_once() {
    through_the_timer::<Small>();
    through_the_timer::<Just16>();
    through_the_timer::<Line>();
    through_the_timer::<Block>();
    through_the_timer::<PastBlock>();
    through_the_timer::<Wide>();
    through_the_timer::<Page>();
}

static TINY_DROPS: AtomicUsize = AtomicUsize::new(0);
static ZST_DROPS: AtomicUsize = AtomicUsize::new(0);

/// 8 bytes: kept in the entry's slot beside its deadline.
struct Tiny(u64);

impl Drop for Tiny {
    fn drop(&mut self) {
        TINY_DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

struct Zst;

impl Drop for Zst {
    fn drop(&mut self) {
        ZST_DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

/// Values of 8 bytes (in the slot) and of none: removed, taken and dropped by the queue's drop,
/// each once, the 8-byte ones with their bits intact.
#[test]
fn values_of_eight_bytes_and_of_none_are_kept_in_place_and_dropped_once() {
    let (clock, timer) = manual();
    let tiny = DelayQueue::with_timer(timer);
    let (zclock, ztimer) = manual();
    let zst = DelayQueue::with_timer(ztimer);
    for i in 0..100u64 {
        let bits = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let k = tiny.insert(Tiny(bits), Duration::from_millis(1 + i % 3));
        let z = zst.insert(Zst, Duration::from_millis(1 + i % 3));
        if i % 4 == 0 {
            assert_eq!(tiny.remove(&k).map(|t| t.0), Some(bits));
            assert!(zst.remove(&z).is_some());
        }
    }
    assert_eq!((TINY_DROPS.load(Ordering::SeqCst), ZST_DROPS.load(Ordering::SeqCst)), (25, 25));
    clock.advance(Duration::from_millis(2));
    tiny.advance_clock(Duration::ZERO);
    zclock.advance(Duration::from_millis(2));
    zst.advance_clock(Duration::ZERO);
    let mut seen = Vec::new();
    while let Some(e) = tiny.try_recv() {
        seen.push(e.into_inner().0);
    }
    let taken_zst = std::iter::from_fn(|| zst.try_recv()).count();
    let want: Vec<u64> = (0..100u64)
        .filter(|i| i % 4 != 0 && i % 3 != 2)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .collect();
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    let mut want_sorted = want.clone();
    want_sorted.sort_unstable();
    assert_eq!(sorted, want_sorted);
    assert_eq!(taken_zst, want.len());
    drop(tiny);
    drop(zst);
    assert_eq!((TINY_DROPS.load(Ordering::SeqCst), ZST_DROPS.load(Ordering::SeqCst)), (100, 100));
}
