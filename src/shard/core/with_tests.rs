//! The `_with` calls' edges: a closure that panics leaves the move done and counted and the lock
//! free, its payload dropped; a handle of another core runs no closure and moves nothing.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::state::Totals;
use super::{Core, Merge};
use crate::deadline::Deadline;

/// A payload that counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs `f`, which must panic.
fn must_panic(f: impl FnOnce()) {
    assert!(panic::catch_unwind(AssertUnwindSafe(f)).is_err(), "the closure panics");
}

/// A closure that panics (expected by these tests).
fn boom(_: &mut u32) {
    panic!("a panicking closure (expected by this test)");
}

/// A panicking closure in `schedule_with`, `claim_with` and `cancel_with`: each move stays done
/// and counted (`len` and the totals exact), a payload taken out is dropped, and the shard's lock
/// is free for the next call on it, and the panicking schedule's bucket is offered: its entry
/// fires when due.
#[test]
fn a_panicking_closure_leaves_the_move_counted_and_the_lock_free() {
    let drops = Arc::new(AtomicUsize::new(0));
    let core: Core<Counted, u32> = Core::with_extra(1, 8);
    let payload = || Counted(Arc::clone(&drops));
    core.schedule(Deadline::at_tick(5), 0, payload()).map_err(drop).unwrap();
    must_panic(|| drop(core.schedule_with(Deadline::at_tick(7), 1, payload(), boom)));
    assert_eq!(core.len(), 2, "the entry stays in, counted");
    assert_eq!(core.totals(), Totals { scheduled: 2, ..Totals::default() });
    assert_eq!(drops.load(Ordering::Relaxed), 0);

    let (mut out, mut merge) = (Vec::new(), Merge::default());
    core.advance(5, u64::MAX, &mut out, &mut merge);
    assert_eq!(out.len(), 1, "the lock is free: the advance holds the entry");
    must_panic(|| drop(core.claim_with(&out[0], boom)));
    assert_eq!(drops.load(Ordering::Relaxed), 1, "the claimed payload dropped");
    assert_eq!(core.len(), 1, "the claim counted out");
    assert_eq!(core.totals(), Totals { scheduled: 2, fired: 1, ..Totals::default() });
    assert!(core.claim(&out[0]).is_none(), "taken once");

    let handle = core.schedule(Deadline::at_tick(9), 2, payload()).map_err(drop).unwrap();
    must_panic(|| drop(core.cancel_with(&handle, boom)));
    assert_eq!(drops.load(Ordering::Relaxed), 2, "the cancelled payload dropped");
    assert_eq!(core.len(), 1, "the cancel counted out");
    assert_eq!(core.totals(), Totals { scheduled: 3, fired: 1, cancelled: 1, ..Totals::default() });
    assert!(core.cancel(&handle).is_none(), "taken once");

    out.clear();
    core.advance(7, u64::MAX, &mut out, &mut merge);
    assert_eq!(out.iter().map(|due| due.order().1).collect::<Vec<_>>(), [1], "offered: it fires at 7");
    assert!(core.claim(&out[0]).is_some());
    assert_eq!(drops.load(Ordering::Relaxed), 3);

    core.schedule_with(Deadline::at_tick(9), 3, payload(), |extra| *extra += 1).map_err(drop).unwrap();
    let mut extras = Vec::new();
    core.for_each_extra(|extra| extras.push(*extra));
    assert_eq!((core.len(), extras), (1, vec![1]), "the shard works on");
    let mut drained = Vec::new();
    core.close(&mut drained, &mut merge);
    assert_eq!(drained.iter().map(|fired| fired.order().1).collect::<Vec<_>>(), [3]);
    assert_eq!(core.len(), 0);
    assert_eq!(core.totals(), Totals { scheduled: 4, fired: 2, cancelled: 1, abandoned: 1, rearmed: 0 });
}

/// `cancel_with`, `deadline_with`, `deadline` and `status` through another core's handle: no
/// closure runs, nothing moves or is counted, and the entry fires on its own core.
#[test]
fn another_cores_handle_runs_no_closure_and_moves_nothing() {
    let (mine, other): (Core<char, u32>, Core<char, u32>) = (Core::with_extra(2, 8), Core::with_extra(2, 8));
    let a = other.schedule(Deadline::at_tick(4), 0, 'a').map_err(drop).unwrap();
    assert_eq!(mine.cancel_with(&a, |extra| *extra += 1), None);
    assert_eq!(mine.deadline_with(&a, |deadline, extra| (deadline, *extra)), None);
    assert_eq!((mine.deadline(&a), mine.status(&a)), (None, None));
    let mut extras = Vec::new();
    other.for_each_extra(|extra| extras.push(*extra));
    assert_eq!(extras, [0, 0], "no closure ran on the other core's extras");
    assert_eq!(other.totals(), Totals { scheduled: 1, ..Totals::default() });
    assert_eq!(other.deadline(&a), Some(Deadline::at_tick(4)));
    let (mut out, mut merge) = (Vec::new(), Merge::default());
    other.advance(4, u64::MAX, &mut out, &mut merge);
    assert_eq!(out.iter().map(|due| other.claim(due)).collect::<Vec<_>>(), [Some('a')]);
    assert!(mine.is_empty() && other.is_empty());
}

/// A `reset_with` whose closure panics: the entry stays moved and counted as re-armed, and its
/// new bucket is offered, so it fires at its new tick (and not at its old one).
#[test]
fn a_panicking_reset_closure_leaves_the_entry_moved_and_offered() {
    let core: Core<char, u32> = Core::with_extra(1, 8);
    let handle = core.schedule(Deadline::at_tick(2), 0, 'a').map_err(drop).unwrap();
    must_panic(|| assert!(core.reset_with(&handle, Deadline::at_tick(6), boom)));
    assert_eq!(core.deadline(&handle), Some(Deadline::at_tick(6)));
    assert_eq!(core.totals(), Totals { scheduled: 1, rearmed: 1, ..Totals::default() });
    let (mut out, mut merge) = (Vec::new(), Merge::default());
    core.advance(5, u64::MAX, &mut out, &mut merge);
    assert!(out.is_empty(), "not at its old tick");
    core.advance(6, u64::MAX, &mut out, &mut merge);
    assert_eq!(
        out.iter().map(|due| core.claim(due)).collect::<Vec<_>>(),
        [Some('a')],
        "offered: it fires at 6"
    );
}
