use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Backoff, Handle, Key, LeanTimer, Own, Owned, Parked, Pool, PoolHandle, Pooled, ShardLock, Spin};
use crate::splitmix;

/// Every timeout fires once, at its deadline tick exactly, when time moves one tick at a time; and
/// when it jumps, at the first advance that reaches it. Delays reach the top levels (cascades).
#[test]
fn fires_once_never_early() {
    fires_once_never_early_with::<Parked, Owned>();
    fires_once_never_early_with::<Spin, Owned>();
    fires_once_never_early_with::<Backoff, Owned>();
    fires_once_never_early_with::<Parked, Pool>();
    fires_once_never_early_with::<Backoff, Pool>();
}

fn fires_once_never_early_with<L: ShardLock, O: Own<L>>() {
    for step in [1u64, 7, 977] {
        let timer = LeanTimer::<L, O>::start_manual();
        let fired = Arc::new(Mutex::new(Vec::new()));
        // The tick being advanced to, read by the tasks as they run.
        let clock = Arc::new(AtomicU64::new(0));
        let mut state = step;
        let mut now = 0;
        let mut expected = Vec::new();
        for id in 0..20_000u64 {
            if id % 100 == 0 {
                now += step;
                clock.store(now, Ordering::Relaxed);
                timer.advance(now);
            }
            let delay = match id % 3 {
                0 => splitmix(&mut state) % 70,
                1 => splitmix(&mut state) % 5_000,
                _ => splitmix(&mut state) % 400_000,
            };
            let deadline = now + delay.max(1);
            let (log, clock) = (Arc::clone(&fired), Arc::clone(&clock));
            timer.schedule(Duration::from_millis(delay), move || {
                log.lock().unwrap().push((id, deadline, clock.load(Ordering::Relaxed)));
            });
            expected.push(deadline);
        }
        while !timer.is_empty() {
            now += step;
            clock.store(now, Ordering::Relaxed);
            timer.advance(now);
        }
        let mut at = std::mem::take(&mut *fired.lock().unwrap());
        assert_eq!(at.len(), expected.len(), "every timeout fired once");
        at.sort_unstable();
        for (i, &(id, deadline, fired_at)) in at.iter().enumerate() {
            assert_eq!(id, i as u64, "fired once");
            assert!(fired_at >= deadline, "{id} fired at {fired_at}, due {deadline}");
            if step == 1 {
                assert_eq!(fired_at, deadline.max(1), "{id} late");
            } else {
                assert!(fired_at < deadline + step, "{id} fired at {fired_at}, due {deadline}");
            }
        }
    }
}

#[test]
fn cancel_wins_once_and_not_after_fire() {
    cancel_wins_once_with::<Parked>();
    cancel_wins_once_with::<Spin>();
    cancel_wins_once_with::<Backoff>();
}

fn cancel_wins_once_with<L: ShardLock>() {
    let timer = LeanTimer::<L>::start_manual();
    timer.reserve_here(3);
    let runs = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&runs);
    let key = timer.schedule(Duration::from_millis(10), move || {
        counted.fetch_add(1, Ordering::Relaxed);
    });
    assert!(timer.cancel(&key));
    assert!(!timer.cancel(&key));
    let counted = Arc::clone(&runs);
    let handle = timer.schedule_handle(Duration::from_millis(10), move || {
        counted.fetch_add(1, Ordering::Relaxed);
    });
    timer.advance(9);
    assert_eq!(runs.load(Ordering::Relaxed), 0);
    timer.advance(10);
    assert_eq!(runs.load(Ordering::Relaxed), 1);
    assert!(!handle.cancel());
    // A large task (boxed) is dropped, not run, when cancelled.
    let big = [7u64; 8];
    let counted = Arc::clone(&runs);
    let key = timer.schedule(Duration::from_millis(1), move || {
        counted.fetch_add(big[3], Ordering::Relaxed);
    });
    assert!(timer.cancel(&key));
    assert_eq!(Arc::strong_count(&runs), 1, "the cancelled tasks were dropped");
    timer.advance(100);
    assert_eq!(runs.load(Ordering::Relaxed), 1);
}

/// 4 threads schedule, 2 others cancel what they are sent, 2 advance the time: every timeout is
/// fired xor cancelled, exactly once, and never before its deadline. Once on a manual timer, once
/// on the real clock's driver. Here by [`Key`], through the timer.
#[test]
fn threads_fire_xor_cancel() {
    threads_fire_xor_cancel_with::<Parked, Owned, Key>();
    threads_fire_xor_cancel_with::<Spin, Owned, Key>();
    threads_fire_xor_cancel_with::<Backoff, Owned, Key>();
    threads_fire_xor_cancel_with::<Backoff, Pool, Key>();
}

/// The same with handles that cancel by themselves on the cancelling threads: [`Handle`]s holding
/// their shard's `Arc`, and [`PoolHandle`]s.
#[test]
fn threads_fire_xor_cancel_by_handle() {
    threads_fire_xor_cancel_with::<Parked, Owned, Handle<Parked>>();
    threads_fire_xor_cancel_with::<Spin, Owned, Handle<Spin>>();
    threads_fire_xor_cancel_with::<Backoff, Owned, Handle<Backoff>>();
    threads_fire_xor_cancel_with::<Backoff, Pool, PoolHandle<Backoff>>();
}

/// What a timeout is cancelled by on another thread.
trait Cancel<L: ShardLock, O: Own<L>>: Send + 'static {
    fn schedule<F: FnOnce() + Send + 'static>(timer: &LeanTimer<L, O>, delay: Duration, task: F) -> Self;
    fn cancel(&self, timer: &LeanTimer<L, O>) -> bool;
}

impl<L: ShardLock, O: Own<L>> Cancel<L, O> for Key {
    fn schedule<F: FnOnce() + Send + 'static>(timer: &LeanTimer<L, O>, delay: Duration, task: F) -> Key {
        timer.schedule(delay, task)
    }

    fn cancel(&self, timer: &LeanTimer<L, O>) -> bool {
        timer.cancel(self)
    }
}

impl<L: ShardLock> Cancel<L, Owned> for Handle<L> {
    fn schedule<F: FnOnce() + Send + 'static>(timer: &LeanTimer<L, Owned>, delay: Duration, task: F) -> Self {
        timer.schedule_handle(delay, task)
    }

    fn cancel(&self, _: &LeanTimer<L, Owned>) -> bool {
        Handle::cancel(self)
    }
}

impl<L: Pooled> Cancel<L, Pool> for PoolHandle<L> {
    fn schedule<F: FnOnce() + Send + 'static>(timer: &LeanTimer<L, Pool>, delay: Duration, task: F) -> Self {
        timer.schedule_pooled(delay, task)
    }

    fn cancel(&self, _: &LeanTimer<L, Pool>) -> bool {
        PoolHandle::cancel(self)
    }
}

thread_local! {
    /// The tick of the manual timer's advance running on this thread: when its tasks run.
    static ADVANCING_TO: Cell<u64> = const { Cell::new(0) };
}

fn advance_here<L: ShardLock, O: Own<L>>(timer: &LeanTimer<L, O>, now: u64) {
    ADVANCING_TO.with(|at| at.set(now));
    timer.advance(now);
}

/// What the tasks of a run write: per timeout, its runs plus its winning cancels; and every run
/// before its deadline, told here rather than by a panic, which on the real clock would stop the
/// driver and leave the test to time out without the message.
struct Outcomes {
    marks: Vec<AtomicU8>,
    early: Mutex<Vec<String>>,
}

fn threads_fire_xor_cancel_with<L: ShardLock, O: Own<L>, C: Cancel<L, O>>() {
    for manual in [true, false] {
        const PER: usize = 20_000;
        let timer =
            Arc::new(if manual { LeanTimer::<L, O>::start_manual() } else { LeanTimer::<L, O>::start() });
        let outcomes = Arc::new(Outcomes {
            marks: (0..4 * PER).map(|_| AtomicU8::new(0)).collect(),
            early: Mutex::new(Vec::new()),
        });
        let done = Arc::new(AtomicU64::new(0));
        let (tx, rx) = crossbeam_channel::unbounded::<(usize, C)>();
        std::thread::scope(|s| {
            for t in 0..4 {
                let (timer, outcomes, tx, done) = (&timer, &outcomes, tx.clone(), &done);
                s.spawn(move || {
                    let mut state = t as u64;
                    for i in 0..PER {
                        let id = t * PER + i;
                        let delay = splitmix(&mut state) % 20;
                        let outcomes = Arc::clone(outcomes);
                        let start = Instant::now();
                        // The deadline's tick is at least this: the time can only have moved on.
                        let due = timer.core.manual.load(Ordering::Relaxed) + delay;
                        let cancel = C::schedule(timer, Duration::from_millis(delay), move || {
                            let early = if manual {
                                let at = ADVANCING_TO.with(Cell::get);
                                (at < due).then(|| format!("{id} ran at tick {at}, due at {due} or later"))
                            } else {
                                let waited = start.elapsed();
                                let delay = Duration::from_millis(delay);
                                (waited < delay).then(|| format!("{id} ran after {waited:?} of {delay:?}"))
                            };
                            if let Some(early) = early {
                                outcomes.early.lock().unwrap().push(early);
                            }
                            outcomes.marks[id].fetch_add(1, Ordering::Relaxed);
                        });
                        tx.send((id, cancel)).unwrap();
                    }
                    done.fetch_add(1, Ordering::Release);
                });
            }
            drop(tx);
            for _ in 0..2 {
                let (timer, outcomes, rx) = (&timer, &outcomes, rx.clone());
                s.spawn(move || {
                    for (id, cancel) in rx {
                        if id % 2 == 0 && cancel.cancel(timer) {
                            outcomes.marks[id].fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
            if manual {
                for _ in 0..2 {
                    let (timer, done) = (&timer, &done);
                    s.spawn(move || {
                        let mut now = 0;
                        while done.load(Ordering::Acquire) < 4 {
                            now += 1;
                            advance_here(timer, now);
                            std::thread::yield_now();
                        }
                    });
                }
            }
        });
        if manual {
            advance_here(&timer, u64::MAX / 4);
        } else {
            // Every timeout is marked once it ran or was cancelled; the driver counts a task out
            // before it runs it, so an empty timer alone does not mean every run has happened (a
            // loaded host can stall the driver in between). The last sleep gives a second run
            // time to show.
            let until = Instant::now() + Duration::from_secs(10);
            let unmarked = || outcomes.marks.iter().any(|mark| mark.load(Ordering::Relaxed) == 0);
            while (!timer.is_empty() || unmarked())
                && outcomes.early.lock().unwrap().is_empty()
                && Instant::now() < until
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let early = outcomes.early.lock().unwrap();
        assert!(
            early.is_empty(),
            "{} ran early (manual: {manual}), e.g. {:?}",
            early.len(),
            &early[..early.len().min(5)]
        );
        assert!(timer.is_empty(), "{} left pending (manual: {manual})", timer.len());
        for (id, mark) in outcomes.marks.iter().enumerate() {
            assert_eq!(mark.load(Ordering::Relaxed), 1, "timeout {id} (manual: {manual})");
        }
    }
}

/// With `LEAN_FIFO`: equal deadlines fire in schedule order, also when the earlier ones cascaded
/// down from a higher level and the later ones went straight to level 0.
#[test]
fn fifo_among_equal_deadlines() {
    if !super::FIFO {
        return;
    }
    let timer = LeanTimer::<Backoff, Pool>::start_manual();
    let order = Arc::new(Mutex::new(Vec::new()));
    for id in 0..200u64 {
        if id == 100 {
            timer.advance(4_000);
        }
        let log = Arc::clone(&order);
        // All due at tick 5,000: the first 100 from level 2, the rest from level 0 or 1.
        timer.schedule(Duration::from_millis(5_000 - if id < 100 { 0 } else { 4_000 }), move || {
            log.lock().unwrap().push(id);
        });
    }
    timer.advance(5_000);
    assert_eq!(*order.lock().unwrap(), (0..200).collect::<Vec<_>>());
}

/// The top level: after jumps of the time, a deadline of this turn fires before one of the next
/// turn whose top-level bucket is nearer the time's (at the bucket it is due in, never early), and
/// the farthest deadline fires at its tick.
#[test]
fn top_level_turns_fire_in_order() {
    use super::wheel::MAX_DELAY_TICKS;
    const TOP: u64 = 1 << 30; // ticks per top-level bucket
    let timer = LeanTimer::<Parked, Owned>::start_manual();
    let fired = Arc::new(Mutex::new(Vec::new()));
    let clock = Arc::new(AtomicU64::new(0));
    let now = 3 * TOP + 5;
    clock.store(now, Ordering::Relaxed);
    timer.advance(now);
    let deadlines = [now + MAX_DELAY_TICKS, 4 * TOP, 2 * TOP + MAX_DELAY_TICKS / 2];
    for (id, &deadline) in deadlines.iter().enumerate() {
        let (log, clock) = (Arc::clone(&fired), Arc::clone(&clock));
        timer.schedule(Duration::from_millis(deadline - now), move || {
            log.lock().unwrap().push((id, clock.load(Ordering::Relaxed)));
        });
    }
    let mut order = deadlines.to_vec();
    order.sort_unstable();
    for (step, &deadline) in order.iter().enumerate() {
        for at in [deadline - 1, deadline] {
            clock.store(at, Ordering::Relaxed);
            timer.advance(at);
            assert_eq!(fired.lock().unwrap().len(), step + usize::from(at == deadline), "at {at}");
        }
        let last = *fired.lock().unwrap().last().unwrap();
        assert_eq!(last, (deadlines.iter().position(|&d| d == deadline).unwrap(), deadline));
    }
    assert!(timer.is_empty());
}

#[test]
#[should_panic(expected = "out of range")]
fn a_deadline_past_the_range_is_refused() {
    let timer = LeanTimer::<Parked, Owned>::start_manual();
    timer.schedule(Duration::from_millis(super::wheel::MAX_DELAY_TICKS + 1), || {});
}
