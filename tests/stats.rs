//! `Timer::stats()`'s wheel load (tasks per level, the fullest bucket) and mean lateness, and
//! `Purgatory::stats()`, on a manual clock with exact values.

mod common;
mod purgatory_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{manual_timer, ms};
use delaywheel::purgatory::{DelayedOperation, PurgatoryStats};
use delaywheel::{LatenessSummary, TimerStats};
use purgatory_support::{advance, manual_purgatory, MockOp};

/// The fullest bucket as (level, slot, entries).
fn fullest(s: &TimerStats) -> Option<(usize, usize, usize)> {
    s.fullest_bucket.map(|b| (b.level, b.slot, b.entries))
}

#[test]
fn stats_count_the_tasks_of_each_level_and_find_the_fullest_bucket() {
    // Wheel of 8 one-millisecond slots: level 0 spans 8 ms, level 1 64 ms.
    let (clock, timer) = manual_timer(ms(1), 8);
    let empty = timer.stats();
    assert_eq!((empty.pending_per_level, empty.fullest_bucket), (vec![], None));

    let fine: Vec<_> = [2, 3, 5].into_iter().map(|d| timer.schedule(ms(d), || {})).collect();
    let coarse: Vec<_> = [20, 22].into_iter().map(|d| timer.schedule(ms(d), || {})).collect();
    assert!(fine.iter().all(|h| h.position().unwrap().level == 0));
    let at = coarse[0].position().unwrap();
    assert_eq!((at.level, at.slot), (1, 2), "20 ms and 22 ms share level 1's slot 2");
    assert_eq!(coarse[1].position().unwrap().slot, 2);

    let s = timer.stats();
    assert_eq!(s.pending_per_level, vec![3, 2]);
    assert_eq!(fullest(&s), Some((1, 2, 2)));

    // A tie is broken towards the lowest level: a second task at 3 ms.
    let extra = timer.schedule(ms(3), || {});
    let s = timer.stats();
    assert_eq!(s.pending_per_level, vec![4, 2]);
    assert_eq!(fullest(&s), Some((0, 3, 2)));
    assert!(extra.cancel());
    assert!(fine[0].cancel());
    assert_eq!(timer.stats().pending_per_level, vec![2, 2]);

    // The level-0 tasks fire; the level-1 ones stay until their round.
    clock.advance(ms(5));
    timer.advance_clock(Duration::ZERO);
    let s = timer.stats();
    assert_eq!((s.pending, s.pending_per_level.clone()), (2, vec![0, 2]));
    assert_eq!(fullest(&s), Some((1, 2, 2)));

    // At 16 ms level 1's slot 2 cascades both into level 0 (20 ms and 22 ms: slots 4 and 6).
    clock.advance(ms(11));
    timer.advance_clock(Duration::ZERO);
    let s = timer.stats();
    assert_eq!(s.pending_per_level, vec![2, 0]);
    assert_eq!(s.fullest_bucket.map(|b| (b.level, b.entries)), Some((0, 1)));

    clock.advance(ms(6));
    timer.advance_clock(Duration::ZERO);
    let s = timer.stats();
    assert_eq!((s.pending, s.pending_per_level, s.fullest_bucket), (0, vec![0, 0], None));
}

#[test]
fn lateness_has_the_mean_beside_the_percentiles() {
    let (clock, timer) = manual_timer(ms(1), 8);
    assert_eq!(timer.stats().lateness, LatenessSummary::default());
    for d in [1, 2, 3, 6] {
        timer.schedule(ms(d), || {});
    }
    // All four run at 10 ms: 9, 8, 7 and 4 ms late, a mean of 7 ms.
    clock.advance(ms(10));
    timer.advance_clock(Duration::ZERO);
    let l = timer.stats().lateness;
    assert_eq!((l.count, l.max), (4, ms(9)));
    let within_1pct = |got: Duration, want: Duration| got.abs_diff(want) <= want / 100;
    assert!(within_1pct(l.mean, ms(7)), "{l:?}");
    assert!(l.mean <= l.max);
}

/// An operation whose `try_complete` says no to the two tries of `try_complete_else_watch`, then
/// panics.
#[derive(Default)]
struct PanicsWhenChecked {
    tries: AtomicUsize,
}

impl DelayedOperation for PanicsWhenChecked {
    fn try_complete(&self) -> bool {
        if self.tries.fetch_add(1, Ordering::SeqCst) >= 2 {
            panic!("try_complete panics");
        }
        false
    }
    fn on_complete(&self) {}
    fn on_expiration(&self) {}
}

#[test]
fn purgatory_stats_count_completions_expiries_and_panics() {
    let (clock, purgatory) = manual_purgatory::<&str, MockOp>();
    assert_eq!(purgatory.stats(), PurgatoryStats::default());

    // Completed at once (not watched), then three waiting: one under two keys.
    assert!(purgatory.try_complete_else_watch(Arc::new(MockOp::completable()), ms(50), ["a"]));
    let (r1, r2, r3) = (Arc::new(MockOp::new()), Arc::new(MockOp::new()), Arc::new(MockOp::new()));
    assert!(!purgatory.try_complete_else_watch(r1.clone(), ms(50), ["a", "b"]));
    assert!(!purgatory.try_complete_else_watch(r2.clone(), ms(10), ["b"]));
    assert!(!purgatory.try_complete_else_watch(r3.clone(), ms(50), ["c"]));
    let s = purgatory.stats();
    assert_eq!((s.delayed, s.watched, s.keys, s.completed, s.expired, s.panicked), (3, 4, 3, 1, 0, 0));

    r1.set_completable();
    assert_eq!(purgatory.check_and_complete(&"a"), 1);
    let s = purgatory.stats();
    assert_eq!((s.delayed, s.watched, s.keys, s.completed, s.expired, s.panicked), (2, 2, 2, 2, 0, 0));

    advance(&clock, &purgatory, ms(10));
    let s = purgatory.stats();
    assert_eq!((s.delayed, s.watched, s.keys, s.completed, s.expired, s.panicked), (1, 1, 1, 2, 1, 0));
    assert_eq!(purgatory.stats().expired, purgatory.expired());

    // A panicking try_complete is caught by check_and_complete and counted; the operation waits
    // on, and then expires.
    let (clock, purgatory) = manual_purgatory::<&str, PanicsWhenChecked>();
    assert!(!purgatory.try_complete_else_watch(Arc::default(), ms(10), ["k"]));
    assert_eq!(purgatory.check_and_complete(&"k"), 0);
    let s = purgatory.stats();
    assert_eq!((s.delayed, s.watched, s.keys, s.completed, s.expired, s.panicked), (1, 1, 1, 0, 0, 1));
    advance(&clock, &purgatory, ms(10));
    let s = purgatory.stats();
    assert_eq!((s.delayed, s.watched, s.keys, s.completed, s.expired, s.panicked), (0, 0, 0, 0, 1, 1));
}
