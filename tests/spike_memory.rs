//! `Timer::shrink` in resident memory: after a spike of a million pending tasks that were all
//! cancelled, or all fired, the process's RSS comes back to within 2 MB + 10 % of where it was
//! before the spike; and so it does after a shutdown that finds such a spike spent, with no shrink. The only test of its binary, so that no other test's memory moves the
//! process's RSS meanwhile; the variants run in it one after the other.
//!
//! What a shrink gives back must reach the kernel, not only the allocator: the timer's pages are
//! emptied with `madvise`, and the free lists' pool (4–8 bytes a free slot or block) is unmapped.
//! Memory given back to glibc on a thread other than the main one stays resident: glibc trims only
//! the main heap's top (`malloc_trim` too), and a thread heap's top only past a trim threshold
//! that it raises, once a large buffer was freed, to twice that buffer's size (up to 64 MB). So the
//! spikes run on a spawned thread, after a 16 MB buffer was freed (as in any service that once
//! freed a large buffer): what a shrink left to the allocator would stay resident here.
//!
//! The test's own million handles live in one buffer, allocated (and written) before the first
//! "before" and reused: its 24 MB are resident throughout, and not counted in the 10 %.

#![cfg(target_os = "linux")]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::rss;
use delaywheel::{ManualClock, Timer, TimerHandle};

const SPIKE: usize = 1_000_000;
const BASE: usize = 10_000;

/// A task capturing 8 bytes (inline in its slot) or 64 (a task-slab block), counting its runs.
fn schedule(timer: &Timer, delay: Duration, big: bool, runs: &Arc<AtomicU64>) -> TimerHandle {
    let runs = Arc::clone(runs);
    if big {
        let words = [1u64; 6];
        timer.schedule(delay, move || {
            runs.fetch_add(words[5], Ordering::Relaxed);
        })
    } else {
        timer.schedule(delay, move || {
            runs.fetch_add(1, Ordering::Relaxed);
        })
    }
}

/// A spike of [`SPIKE`] tasks over [`BASE`] long ones, their handles in `handles` (empty, with
/// room for them), then all cancelled (or fired), then `settle` (a shrink, or a shutdown): returns
/// RSS (before, peak, after).
fn spike(
    timer: &Timer,
    clock: &ManualClock,
    handles: &mut Vec<TimerHandle>,
    (big, fire): (bool, bool),
    settle: impl FnOnce(&Timer),
) -> (usize, usize, usize) {
    let runs = Arc::new(AtomicU64::new(0));
    let before = rss();
    handles
        .extend((0..SPIKE as u64).map(|k| schedule(timer, Duration::from_millis(1 + k % 500), big, &runs)));
    assert_eq!(timer.len(), BASE + SPIKE);
    let peak = rss();
    if fire {
        for _ in 0..500 {
            clock.advance(Duration::from_millis(1));
            timer.advance_clock(Duration::ZERO);
        }
        assert_eq!(runs.load(Ordering::Relaxed), SPIKE as u64, "every task of the spike ran once");
    } else {
        assert!(handles.iter().all(TimerHandle::cancel));
    }
    assert_eq!(timer.len(), BASE);
    let kept = [handles[0].clone(), handles[SPIKE / 2].clone(), handles[SPIKE - 1].clone()];
    handles.clear();
    settle(timer);
    // Handles outlive their slots' pages: they see tasks that ended, and touch no freed memory.
    for handle in &kept {
        assert!(!handle.is_pending() && !handle.cancel() && !handle.reset(Duration::from_millis(5)));
        assert_eq!(handle.deadline(), None);
    }
    let after = rss();
    assert_eq!(runs.load(Ordering::Relaxed), if fire { SPIKE as u64 } else { 0 });
    (before, peak, after)
}

/// The spikes, on the calling thread (see the module docs).
fn spikes() {
    // Raises glibc's thresholds: its mmap threshold to 16 MB, its trim threshold to 32 MB.
    drop(std::hint::black_box(vec![1u8; 16 << 20]));
    let mut handles: Vec<TimerHandle> = Vec::with_capacity(SPIKE);
    // Written once, so that its pages are resident in every "before".
    let spare = handles.spare_capacity_mut();
    // SAFETY: the spare capacity is `spare.len()` items of `MaybeUninit`, any bytes; non-zero
    // bytes, so that no zeroed allocation skips the writes.
    unsafe { spare.as_mut_ptr().write_bytes(0x5a, spare.len()) };
    std::hint::black_box(handles.spare_capacity_mut());
    let own = handles.capacity() * std::mem::size_of::<TimerHandle>();
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    let runs = Arc::new(AtomicU64::new(0));
    let base: Vec<TimerHandle> =
        (0..BASE).map(|_| schedule(&timer, Duration::from_secs(3600), false, &runs)).collect();
    let start = rss();
    let check = |what: &str, (before, peak, after): (usize, usize, usize)| {
        // 48-byte slots, and 64-byte blocks for the big tasks: the spike is resident, over what
        // the process held before the first (a spike may reuse pages an earlier shrink kept
        // within its bound).
        assert!(peak >= start + SPIKE * 48, "{what}: {peak} at the peak, {start} before the first spike");
        let bound = before + 2_000_000 + (before - own) / 10;
        assert!(after <= bound, "{what}: RSS {before} before, {peak} at the peak, {after} after");
    };
    for (big, fire) in [(false, false), (false, true), (true, false), (true, true)] {
        let rss = spike(&timer, &clock, &mut handles, (big, fire), Timer::shrink);
        let size = if big { 64 } else { 8 };
        check(&format!("{} tasks of {size} bytes", if fire { "fired" } else { "cancelled" }), rss);
    }
    assert!(base.iter().all(TimerHandle::is_pending), "the tasks pending throughout are untouched");
    assert_eq!(timer.len(), BASE);
    // Last, a shutdown in place of the shrink: the timer kept after it gives back what its drain
    // emptied, the spike's spent pages with it.
    let shut_down = |timer: &Timer| assert_eq!(timer.shutdown().len(), BASE, "the long tasks handed back");
    check(
        "cancelled tasks of 8 bytes, then a shutdown",
        spike(&timer, &clock, &mut handles, (false, false), shut_down),
    );
    assert!(base.iter().all(|handle| !handle.is_pending()));
}

#[test]
fn rss_comes_back_after_a_spike_on_a_spawned_thread_is_cancelled_or_fired_and_the_timer_shrinks() {
    std::thread::Builder::new().name("spike".into()).spawn(spikes).unwrap().join().unwrap();
}
