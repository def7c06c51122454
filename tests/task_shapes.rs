//! Closures and queue values of every size (0 to 1024 bytes) and alignment (1 to 128 bytes), one
//! type per shape: inline, in each class of the task slab, and boxed. Through every way a task
//! ends (fire, cancel, reset then fire, shutdown's hand-back run or dropped, the timer's drop, a
//! refusal at `max_pending`), each probe is run at most once and dropped exactly once, with its
//! bytes intact; a panic in its call or its drop is caught (or reaches the caller that dropped it)
//! and loses nothing else. Manual timers: every run and drop happens on the test's thread, so the
//! counts are thread-locals.

mod common;

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::time::Duration;

use common::{manual_timer, ms};
use delaywheel::queue::DelayQueue;
use delaywheel::{ScheduleError, Timer};

thread_local! {
    static RUNS: Cell<usize> = const { Cell::new(0) };
    static DROPS: Cell<usize> = const { Cell::new(0) };
    /// The run (counted from 1) that panics, or 0.
    static PANIC_RUN: Cell<usize> = const { Cell::new(0) };
    /// The drop (counted from 1) that panics, or 0.
    static PANIC_DROP: Cell<usize> = const { Cell::new(0) };
}

fn counts() -> (usize, usize) {
    (RUNS.get(), DROPS.get())
}

/// Bytes of one size and alignment, filled with a pattern that a run checks.
trait Bytes: Send + 'static {
    fn make(seed: u8) -> Self;
    fn bytes(&self) -> &[u8];
}

macro_rules! aligned {
    ($($name:ident = $align:literal),*) => {$(
        #[repr(C, align($align))]
        struct $name<const N: usize>([u8; N]);
        impl<const N: usize> Bytes for $name<N> {
            fn make(seed: u8) -> Self {
                $name(std::array::from_fn(|i| seed.wrapping_add((i * 7) as u8)))
            }
            fn bytes(&self) -> &[u8] {
                &self.0
            }
        }
    )*};
}

aligned!(A1 = 1, A8 = 8, A16 = 16, A32 = 32, A64 = 64, A128 = 128);

/// The captured state: counts its runs and drops, panics where the thread-locals say.
struct Probe<B: Bytes>(B);

impl<B: Bytes> Probe<B> {
    fn new(seed: u8) -> Self {
        Probe(B::make(seed))
    }

    fn ran(&self) {
        let bytes = self.0.bytes();
        if let Some(&first) = bytes.first() {
            for (i, &b) in bytes.iter().enumerate() {
                assert_eq!(b, first.wrapping_add((i * 7) as u8), "byte {i} of {}", bytes.len());
            }
        }
        let addr = self as *const Self as usize;
        assert_eq!(addr % std::mem::align_of::<B>(), 0, "misaligned");
        RUNS.set(RUNS.get() + 1);
        if RUNS.get() == PANIC_RUN.get() {
            panic!("a probe panics when run (expected by this test)");
        }
    }
}

impl<B: Bytes> Drop for Probe<B> {
    fn drop(&mut self) {
        DROPS.set(DROPS.get() + 1);
        if DROPS.get() == PANIC_DROP.get() && !std::thread::panicking() {
            panic!("a probe panics when dropped (expected by this test)");
        }
    }
}

/// A closure capturing exactly a probe: its size and alignment are the probe's.
fn task<B: Bytes>(seed: u8) -> impl FnOnce() + Send + 'static {
    let probe = Probe::<B>::new(seed);
    let f = move || probe.ran();
    assert_eq!(std::mem::size_of_val(&f), std::mem::size_of::<B>());
    assert_eq!(std::mem::align_of_val(&f), std::mem::align_of::<B>());
    f
}

fn step(clock: &delaywheel::ManualClock, timer: &Timer) {
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
}

fn reset_counts() {
    for cell in [&RUNS, &DROPS, &PANIC_RUN, &PANIC_DROP] {
        cell.set(0);
    }
}

/// Every way a task of shape `B` ends, on one timer.
fn closure_lifecycle<B: Bytes>() {
    let shape = (std::mem::size_of::<B>(), std::mem::align_of::<B>());
    reset_counts();
    let (clock, timer) = manual_timer(ms(1), 8);
    // Fire.
    let h = timer.schedule(ms(1), task::<B>(1));
    step(&clock, &timer);
    assert_eq!(counts(), (1, 1), "{shape:?} fired");
    assert!(!h.cancel() && !h.is_pending() && h.deadline().is_none());
    // Cancel.
    let h = timer.schedule(ms(5), task::<B>(2));
    assert!(h.cancel());
    assert!(!h.cancel() && !h.reset(ms(1)));
    assert_eq!(counts(), (1, 2), "{shape:?} cancelled");
    // Reset, then fire at the new deadline only.
    let h = timer.schedule(ms(5), task::<B>(3));
    assert!(h.reset(ms(2)));
    step(&clock, &timer);
    assert_eq!(counts(), (1, 2), "{shape:?} not before its reset deadline");
    step(&clock, &timer);
    assert_eq!(counts(), (2, 3), "{shape:?} reset then fired");
    step(&clock, &timer);
    step(&clock, &timer);
    step(&clock, &timer);
    assert_eq!(counts(), (2, 3), "{shape:?} not again at the old deadline");
    // A run that panics: caught, counted, nothing else lost.
    PANIC_RUN.set(3);
    timer.schedule(ms(1), task::<B>(4));
    timer.schedule(ms(1), task::<B>(5));
    step(&clock, &timer);
    assert_eq!(counts(), (4, 5), "{shape:?} a panicking run and its neighbour");
    assert_eq!(timer.stats().panicked, 1, "{shape:?}");
    // A drop that panics after a run: caught, counted.
    PANIC_DROP.set(6);
    timer.schedule(ms(1), task::<B>(6));
    timer.schedule(ms(1), task::<B>(7));
    step(&clock, &timer);
    assert_eq!(counts(), (6, 7), "{shape:?} a panicking drop after its run");
    assert_eq!(timer.stats().panicked, 2, "{shape:?}");
    // A drop that panics in a cancel: the panic reaches the caller, the slot is free.
    PANIC_DROP.set(8);
    let h = timer.schedule(ms(3), task::<B>(8));
    assert!(panic::catch_unwind(AssertUnwindSafe(|| h.cancel())).is_err());
    assert_eq!(counts(), (6, 8), "{shape:?} a panicking drop in cancel");
    assert!(timer.is_empty() && !h.cancel() && !h.is_pending());
    // Shutdown hands back: one run, one dropped, one whose drop panics.
    timer.schedule(ms(3), task::<B>(9));
    timer.schedule(ms(4), task::<B>(10));
    timer.schedule(ms(5), task::<B>(11));
    let mut unfired = timer.shutdown();
    assert_eq!(unfired.len(), 3, "{shape:?}");
    assert_eq!(counts(), (6, 8), "{shape:?} nothing run or dropped by the shutdown");
    unfired.remove(0).run();
    assert_eq!(counts(), (7, 9), "{shape:?} handed back and run");
    drop(unfired.remove(0));
    assert_eq!(counts(), (7, 10), "{shape:?} handed back and dropped");
    PANIC_DROP.set(11);
    assert!(panic::catch_unwind(AssertUnwindSafe(|| drop(unfired))).is_err());
    assert_eq!(counts(), (7, 11), "{shape:?} handed back, its drop panicking");
    assert!(matches!(timer.try_schedule(ms(1), task::<B>(12)), Err(ScheduleError::ShutDown)));
    assert_eq!(counts(), (7, 12), "{shape:?} refused after shutdown: dropped once");
    drop(timer);
    assert_eq!(counts(), (7, 12), "{shape:?} nothing left for the drop");
    let (_clock, timer) = manual_timer(ms(1), 8);
    let refused = timer.try_schedule(Duration::MAX, task::<B>(13));
    assert!(matches!(refused, Err(ScheduleError::DelayTooLong { .. })), "{shape:?}");
    assert_eq!(counts(), (7, 13), "{shape:?} a delay out of range: dropped once");
}

/// The timer's drop drops what is pending, once each, a panicking drop among them included.
fn dropped_with_the_timer<B: Bytes>() {
    let shape = (std::mem::size_of::<B>(), std::mem::align_of::<B>());
    reset_counts();
    let (clock, timer) = manual_timer(ms(1), 8);
    let handles: Vec<_> = (0..5).map(|i| timer.schedule(ms(2 + 100 * i), task::<B>(i as u8))).collect();
    step(&clock, &timer);
    PANIC_DROP.set(3);
    // The drop's panic is caught: the timer's drop goes on with the others and does not panic.
    assert!(panic::catch_unwind(AssertUnwindSafe(|| drop(timer))).is_ok(), "{shape:?}");
    assert_eq!(counts(), (0, 5), "{shape:?} dropped with the timer");
    assert!(handles.iter().all(|h| !h.cancel() && !h.is_pending() && !h.reset(ms(1))));
    assert_eq!(counts(), (0, 5), "{shape:?}");
}

/// At `max_pending`, a task of any shape is refused with the same error and dropped once.
fn refused_at_max_pending<B: Bytes>() {
    let shape = (std::mem::size_of::<B>(), std::mem::align_of::<B>());
    reset_counts();
    let clock = delaywheel::ManualClock::new();
    let timer = Timer::builder().clock(clock.clone()).manual().max_pending(2).build();
    let first = timer.schedule(ms(5), task::<B>(1));
    timer.schedule(ms(5), task::<B>(2));
    let refused = timer.try_schedule(ms(5), task::<B>(3));
    assert_eq!(refused.unwrap_err(), ScheduleError::TooManyPending { max: 2 }, "{shape:?}");
    assert_eq!(counts(), (0, 1), "{shape:?} the refused closure dropped once");
    let inert = timer.schedule(ms(1), task::<B>(4));
    assert_eq!(counts(), (0, 2), "{shape:?}");
    assert!(!inert.cancel() && !inert.is_pending());
    assert!(first.cancel());
    timer.schedule(ms(1), task::<B>(5));
    clock.advance(ms(10));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(counts(), (2, 5), "{shape:?}");
}

/// Values of shape `B` in a delay queue: taken, removed, reset, dropped with the queue, refused.
fn queue_values<B: Bytes>() {
    let shape = (std::mem::size_of::<B>(), std::mem::align_of::<B>());
    reset_counts();
    let clock = delaywheel::ManualClock::new();
    let timer =
        Timer::builder().tick(ms(1)).wheel_size(8).clock(clock.clone()).manual().max_pending(4).build();
    let queue: DelayQueue<Probe<B>> = DelayQueue::with_timer(timer);
    let advance = |by| {
        clock.advance(by);
        queue.advance_clock(Duration::ZERO);
    };
    let k1 = queue.insert(Probe::new(1), ms(1));
    let k2 = queue.insert(Probe::new(2), ms(5));
    let k3 = queue.insert(Probe::new(3), ms(5));
    assert!(queue.reset(&k3, ms(2)));
    let k4 = queue.insert(Probe::new(4), ms(9));
    let refused = queue.try_insert(Probe::new(5), ms(1)).unwrap_err();
    assert_eq!(*refused.error(), ScheduleError::TooManyPending { max: 4 }, "{shape:?}");
    refused.into_inner().ran();
    assert_eq!(counts(), (1, 1), "{shape:?} the refused value handed back");
    advance(ms(1));
    let e = queue.try_recv().expect("due");
    assert_eq!(e.key(), k1);
    e.into_inner().ran();
    assert_eq!(counts(), (2, 2), "{shape:?} expired and taken");
    queue.remove(&k2).expect("pending").ran();
    assert_eq!(counts(), (3, 3), "{shape:?} removed");
    assert!(queue.remove(&k2).is_none() && !queue.reset(&k2, ms(1)) && queue.deadline(&k2).is_none());
    advance(ms(1));
    PANIC_DROP.set(4);
    let e = queue.try_recv().expect("reset to 2 ms");
    assert_eq!(e.key(), k3);
    assert!(panic::catch_unwind(AssertUnwindSafe(|| drop(e))).is_err());
    assert_eq!(counts(), (3, 4), "{shape:?} a value whose drop panics, dropped by its taker");
    // One expired and not taken, one pending: both dropped with the queue, once.
    queue.insert(Probe::new(6), ms(1));
    advance(ms(1));
    assert_eq!(queue.len(), 2, "{shape:?}");
    drop(queue);
    assert_eq!(counts(), (3, 6), "{shape:?} dropped with the queue");
    let _ = k4;
    // Dropped with the queue, whichever drop panics: caught, the others dropped too.
    for panic_at in 1..=3 {
        reset_counts();
        let (clock, timer) = manual_timer(ms(1), 8);
        let queue: DelayQueue<Probe<B>> = DelayQueue::with_timer(timer);
        queue.insert(Probe::new(1), ms(1));
        queue.insert(Probe::new(2), ms(5));
        queue.insert(Probe::new(3), ms(6));
        clock.advance(ms(1));
        queue.advance_clock(Duration::ZERO);
        PANIC_DROP.set(panic_at);
        assert!(panic::catch_unwind(AssertUnwindSafe(|| drop(queue))).is_ok(), "{shape:?}");
        assert_eq!(counts(), (0, 3), "{shape:?} dropped with the queue, drop {panic_at} panicking");
    }
    // A delay out of range: the value handed back, dropped once.
    reset_counts();
    let (_clock, timer) = manual_timer(ms(1), 8);
    let queue: DelayQueue<Probe<B>> = DelayQueue::with_timer(timer);
    let refused = queue.try_insert(Probe::new(1), Duration::MAX).unwrap_err();
    assert!(matches!(refused.error(), ScheduleError::DelayTooLong { .. }), "{shape:?}");
    assert_eq!(counts(), (0, 0), "{shape:?}");
    drop(refused);
    assert_eq!(counts(), (0, 1), "{shape:?}");
    // Handed back by a shutdown: running the task drops the value, as dropping it does.
    queue.insert(Probe::new(2), ms(5));
    queue.insert(Probe::new(3), ms(6));
    let mut unfired = queue.timer().shutdown();
    assert_eq!((unfired.len(), counts()), (2, (0, 1)), "{shape:?}");
    unfired.remove(0).run();
    drop(unfired);
    assert_eq!(counts(), (0, 3), "{shape:?} values handed back by a shutdown");
    assert!(queue.is_empty() && queue.try_recv().is_none());
}

fn every_lifecycle<B: Bytes>() {
    closure_lifecycle::<B>();
    dropped_with_the_timer::<B>();
    refused_at_max_pending::<B>();
    queue_values::<B>();
}

/// Every size of the list at one alignment.
macro_rules! every_size {
    ($wrap:ident) => {
        for_sizes!($wrap: 0, 1, 8, 16, 17, 24, 32, 64, 65, 128, 200, 248, 256, 257, 1024)
    };
}

macro_rules! for_sizes {
    ($wrap:ident: $($size:literal),*) => {
        $(every_lifecycle::<$wrap<$size>>();)*
    };
}

/// Inline (up to 16 bytes), each class (to 64, 128 and 256 bytes) and boxed, at alignment 1.
#[test]
fn every_size_at_alignment_1() {
    every_size!(A1);
}

/// Sizes rounded up to whole words: each side of every bound.
#[test]
fn word_aligned_sizes() {
    for_sizes!(A8: 0, 8, 16, 24, 64, 72, 128, 136, 256, 264);
}

/// Over-aligned captures: a block up to 64-byte alignment, boxed past it (a ZST too).
#[test]
fn alignments_16_to_128() {
    for_sizes!(A16: 0, 16, 17, 64, 200, 257);
    for_sizes!(A32: 0, 32, 64, 256, 257);
    for_sizes!(A64: 0, 1, 64, 65, 256, 1024);
    for_sizes!(A128: 0, 1, 128, 256, 257);
}
