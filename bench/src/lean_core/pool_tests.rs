//! Pooled shards: handles used after their timer is dropped, and after a new timer took the shard
//! (the same slots and generations in a new slab), find nothing; every task ends once.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{Backoff, LeanTimer, Parked, Pool, PoolHandle, Pooled};
use crate::splitmix;

/// Counts, per timeout, how its task ended: run, cancelled, and (always, once) its closure dropped.
struct Marks {
    runs: Vec<AtomicU8>,
    cancels: Vec<AtomicU8>,
    ends: Vec<AtomicU8>,
}

impl Marks {
    fn new(n: usize) -> Arc<Marks> {
        let zeros = || (0..n).map(|_| AtomicU8::new(0)).collect();
        Arc::new(Marks { runs: zeros(), cancels: zeros(), ends: zeros() })
    }

    /// `runs[id]` + `cancels[id]` (each checked to be at most 1 in all), and that it ended once.
    fn outcome(&self, id: usize) -> u8 {
        let (runs, cancels) =
            (self.runs[id].load(Ordering::Relaxed), self.cancels[id].load(Ordering::Relaxed));
        assert_eq!(self.ends[id].load(Ordering::Relaxed), 1, "timeout {id} ended once");
        assert!(runs + cancels <= 1, "timeout {id}: {runs} runs, {cancels} cancels");
        runs + cancels
    }
}

/// Captured by a task: marks its end when dropped (after a run, a cancel, or with its timer).
struct Probe(Arc<Marks>, usize);

impl Drop for Probe {
    fn drop(&mut self) {
        self.0.ends[self.1].fetch_add(1, Ordering::Relaxed);
    }
}

fn task(marks: &Arc<Marks>, id: usize) -> impl FnOnce() + Send + 'static {
    let probe = Probe(Arc::clone(marks), id);
    move || {
        probe.0.runs[probe.1].fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn handles_after_drop_and_reuse() {
    handles_after_drop_and_reuse_with::<Parked>();
    handles_after_drop_and_reuse_with::<Backoff>();
}

fn handles_after_drop_and_reuse_with<L: Pooled>() {
    const N: usize = 1_000;
    // Other tests take shards of the same pool at once: retry until the new timer got the old one's.
    for _ in 0..50 {
        let marks = Marks::new(2 * N);
        let old = LeanTimer::<L, Pool>::start_manual();
        let handles: Vec<PoolHandle<L>> = (0..N)
            .map(|id| old.schedule_pooled(Duration::from_millis(5 + id as u64 % 7), task(&marks, id)))
            .collect();
        for (id, handle) in handles.iter().enumerate().filter(|(id, _)| id % 3 == 0) {
            assert!(handle.cancel());
            marks.cancels[id].fetch_add(1, Ordering::Relaxed);
        }
        old.advance(5);
        drop(old);
        // Every task ended: run (due at 5), cancelled, or dropped with its timer.
        let ended = (0..N).map(|id| marks.outcome(id)).filter(|&o| o == 1).count();
        assert!(ended > N / 3 && ended < N, "{ended} ran or were cancelled");
        assert!(handles.iter().all(|handle| !handle.cancel()), "a handle of a dropped timer cancelled");
        let new = LeanTimer::<L, Pool>::start_manual();
        let fresh: Vec<PoolHandle<L>> =
            (N..2 * N).map(|id| new.schedule_pooled(Duration::from_millis(9), task(&marks, id))).collect();
        let reused = std::ptr::eq(fresh[0].shard(), handles[0].shard());
        // The old handles name the same header, slots and generations as the new ones: the epoch
        // alone tells them apart.
        assert!(handles.iter().all(|handle| !handle.cancel()), "an old handle cancelled a new timeout");
        assert_eq!(new.len(), N);
        new.advance(9);
        assert!(new.is_empty());
        assert!(fresh.iter().all(|handle| !handle.cancel()));
        assert!((N..2 * N).all(|id| marks.outcome(id) == 1 && marks.runs[id].load(Ordering::Relaxed) == 1));
        if reused {
            return;
        }
    }
    panic!("no timer took the shard of the one dropped before it");
}

/// 4 threads schedule on a timer, 2 cancel every other handle they are sent, one advances the time
/// and then drops the timer while the cancels go on; another thread then schedules on a new timer
/// (taking the pooled shards back), sends its handles to the same cancellers, and runs them all.
/// Every task ends once; a cancel after the first timer's drop never wins on it.
#[test]
fn threads_across_drop_and_reuse() {
    threads_across_drop_and_reuse_with::<Parked>();
    threads_across_drop_and_reuse_with::<Backoff>();
}

fn threads_across_drop_and_reuse_with<L: Pooled>() {
    const PER: usize = 10_000;
    let marks = Marks::new(5 * PER);
    let gone = AtomicBool::new(false);
    let first = Arc::new(LeanTimer::<L, Pool>::start_manual());
    let (tx, rx) = crossbeam_channel::unbounded::<(usize, PoolHandle<L>)>();
    let scheduled = std::sync::Barrier::new(5);
    std::thread::scope(|s| {
        for t in 0..4 {
            let (timer, marks, tx, scheduled) = (Arc::clone(&first), &marks, tx.clone(), &scheduled);
            s.spawn(move || {
                let mut state = t as u64;
                for i in 0..PER {
                    let id = t * PER + i;
                    let delay = Duration::from_millis(splitmix(&mut state) % 20);
                    tx.send((id, timer.schedule_pooled(delay, task(marks, id)))).unwrap();
                }
                drop(timer);
                scheduled.wait();
            });
        }
        for _ in 0..2 {
            let (marks, rx, gone) = (&marks, rx.clone(), &gone);
            s.spawn(move || {
                for (id, handle) in rx {
                    if id % 2 == 0 {
                        let after_drop = gone.load(Ordering::Acquire) && id < 4 * PER;
                        if handle.cancel() {
                            assert!(!after_drop, "timeout {id} cancelled after its timer was dropped");
                            marks.cancels[id].fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
        let (marks, gone, scheduled) = (&marks, &gone, &scheduled);
        s.spawn(move || {
            for now in 1..10 {
                first.advance(now);
                std::thread::yield_now();
            }
            scheduled.wait();
            drop(first);
            gone.store(true, Ordering::Release);
            let timer = LeanTimer::<L, Pool>::start_manual();
            for id in 4 * PER..5 * PER {
                tx.send((id, timer.schedule_pooled(Duration::from_millis(id as u64 % 20), task(marks, id))))
                    .unwrap();
            }
            drop(tx);
            for now in 1..=20 {
                timer.advance(now);
            }
            assert!(timer.is_empty());
        });
    });
    let dropped = (0..4 * PER).filter(|&id| marks.outcome(id) == 0).count();
    assert!(
        (4 * PER..5 * PER).all(|id| marks.outcome(id) == 1),
        "the second timer's timeouts end by run or cancel"
    );
    eprintln!("{dropped} of the first timer's timeouts dropped with it");
}

/// A pooled handle is `Copy` whatever its lock: a copy names the same timeout, and of the two only
/// the first cancel wins.
#[test]
fn a_copied_handle_names_the_same_timeout() {
    let timer = LeanTimer::<Backoff, Pool>::start_manual();
    let handle = timer.schedule_pooled(Duration::from_millis(5), || {});
    let copy = handle;
    assert!(copy.cancel());
    assert!(!handle.cancel());
    assert!(timer.is_empty());
}
