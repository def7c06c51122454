//! `Timer::shrink` in resident memory: after a spike of a million pending tasks that were all
//! cancelled, or all fired, the process's RSS comes back to within 2 MB + 10 % of where it was
//! before the spike. The only test of its binary, so that no other test's memory moves the
//! process's RSS meanwhile; the variants run in it one after the other.
//!
//! The timer's pages (slots, task-slab blocks) go back to the kernel directly (`madvise`); what
//! else a spike grew (the free lists' bookkeeping, 4–8 bytes a free slot or block, and this test's
//! million handles) goes back to the allocator. glibc keeps freed memory at the top of a thread's
//! heap resident up to its trim threshold, which it raises to twice the largest mapped chunk freed
//! so far (here, a 24 MB vector of handles: 48 MB), and `malloc_trim` does not trim a thread heap's
//! top. The test runs on a harness thread, so it fixes the threshold at 1 MB, as a service that
//! cares about its RSS after a burst would (`M_TRIM_THRESHOLD`; or with jemalloc or mimalloc).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use delaywheel::{ManualClock, Timer, TimerHandle};

/// Resident memory of this process, in bytes (`/proc/self/statm`, assuming 4 KiB pages).
#[cfg(target_os = "linux")]
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    statm.split_whitespace().nth(1).unwrap().parse::<usize>().unwrap() * 4096
}

const SPIKE: u64 = 1_000_000;
const BASE: u64 = 10_000;

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

/// A spike of [`SPIKE`] tasks over [`BASE`] long ones, then all cancelled (or fired), then a
/// shrink: returns RSS (before, peak, after).
fn spike(timer: &Timer, clock: &ManualClock, big: bool, fire: bool) -> (usize, usize, usize) {
    let runs = Arc::new(AtomicU64::new(0));
    let before = rss();
    let handles: Vec<TimerHandle> =
        (0..SPIKE).map(|k| schedule(timer, Duration::from_millis(1 + k % 500), big, &runs)).collect();
    assert_eq!(timer.len() as u64, BASE + SPIKE);
    let peak = rss();
    if fire {
        for _ in 0..500 {
            clock.advance(Duration::from_millis(1));
            timer.advance_clock(Duration::ZERO);
        }
        assert_eq!(runs.load(Ordering::Relaxed), SPIKE, "every task of the spike ran once");
    } else {
        assert!(handles.iter().all(TimerHandle::cancel));
    }
    assert_eq!(timer.len() as u64, BASE);
    // (The handles go first: freed after the shrink, their 24 MB would stay with the allocator.)
    let kept = [handles[0].clone(), handles[handles.len() / 2].clone(), handles[handles.len() - 1].clone()];
    drop(handles);
    timer.shrink();
    // Handles outlive their slots' pages: they see tasks that ended, and touch no freed memory.
    for handle in &kept {
        assert!(!handle.is_pending() && !handle.cancel() && !handle.reset(Duration::from_millis(5)));
        assert_eq!(handle.deadline(), None);
    }
    let after = rss();
    assert_eq!(runs.load(Ordering::Relaxed), if fire { SPIKE } else { 0 });
    (before, peak, after)
}

#[test]
#[cfg(target_os = "linux")]
fn rss_comes_back_after_a_spike_is_cancelled_or_fired_and_the_timer_shrinks() {
    #[cfg(target_env = "gnu")]
    // SAFETY: `mallopt` takes two integers; setting a threshold is allowed at any time.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 20);
    }
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    let runs = Arc::new(AtomicU64::new(0));
    let base: Vec<TimerHandle> =
        (0..BASE).map(|_| schedule(&timer, Duration::from_secs(3600), false, &runs)).collect();
    for (big, fire) in [(false, false), (false, true), (true, false), (true, true)] {
        let (before, peak, after) = spike(&timer, &clock, big, fire);
        let what = format!(
            "{} tasks of {} bytes",
            if fire { "fired" } else { "cancelled" },
            if big { 64 } else { 8 }
        );
        // 48-byte slots, and 64-byte blocks for the big tasks: the spike is resident.
        assert!(peak - before >= SPIKE as usize * 48, "{what}: the spike added only {} bytes", peak - before);
        let bound = before + 2_000_000 + before / 10;
        assert!(after <= bound, "{what}: RSS {before} before, {peak} at the peak, {after} after the shrink");
    }
    assert!(base.iter().all(TimerHandle::is_pending), "the tasks pending throughout are untouched");
    assert_eq!(timer.len() as u64, BASE);
}

/// Calls `Timer::shrink` when dropped.
struct ShrinkOnDrop(Arc<Timer>);

impl Drop for ShrinkOnDrop {
    fn drop(&mut self) {
        self.0.shrink();
    }
}

/// A `cancel` drops the closure it won while its handle is still pinned (the grace period's
/// reader): a shrink called from that drop does not wait for its own thread's pin, and what it
/// retired is freed by the next shrink.
#[test]
fn a_shrink_from_a_closure_a_cancel_drops_returns() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let timer = Arc::new(Timer::builder().clock(ManualClock::new()).manual().build());
        let burst: Vec<_> = (0..10_000).map(|_| timer.schedule(Duration::from_secs(30), || {})).collect();
        let guard = ShrinkOnDrop(Arc::clone(&timer));
        let last = timer.schedule(Duration::from_secs(30), move || drop(guard));
        assert!(burst.iter().all(TimerHandle::cancel));
        assert!(last.cancel(), "its closure's drop shrinks, pinned");
        timer.shrink();
        tx.send(timer.len()).unwrap();
    });
    let len = rx.recv_timeout(Duration::from_secs(20)).expect("the cancel returned: no wait for its own pin");
    assert_eq!(len, 0);
}
