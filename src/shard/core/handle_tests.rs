//! A handle alone (`handles.rs`, "A handle alone"): it resets, reads and cancels its entry with no
//! `Core` at hand, from another thread, its reset's new bucket offered to the core's queue through
//! its shard's state; once its core is dropped it finds nothing, and a reset racing the drop
//! neither panics nor loses a payload.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use super::{Core, Handle, Merge};
use crate::deadline::Deadline;
use crate::shard::life::Status;

/// A payload that counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// The stamps of what an advance to `now` holds, each claimed.
fn fire(core: &Core<u32>, now: u64) -> Vec<u64> {
    let (mut out, mut merge) = (Vec::new(), Merge::default());
    core.advance(now, u64::MAX, &mut out, &mut merge);
    out.iter().map(|due| (due.order().1, core.claim(due).expect("held, not taken"))).map(|(s, _)| s).collect()
}

/// Resets through the handle alone, on another thread, to a later bucket whose round no entry
/// set and to an earlier one: each moves the entry and offers its bucket, so the entry fires at
/// the last deadline exactly, not at the first, and the handle then reads it fired.
#[test]
fn a_handle_alone_resets_its_entry_and_its_bucket_is_offered() {
    let core: Core<u32> = Core::with_wheel_size(2, 8);
    let handle = core.schedule(Deadline::at_tick(5), 1, 10).map_err(drop).unwrap();
    let moved = thread::scope(|scope| {
        scope
            .spawn(|| {
                let later = handle.reset(Deadline::at_tick(40));
                let read = handle.deadline();
                let earlier = handle.reset(Deadline::at_tick(20));
                (later, read, earlier, handle.deadline(), handle.status())
            })
            .join()
            .unwrap()
    });
    let pending = Some(Status::Pending);
    assert_eq!(moved, (true, Some(Deadline::at_tick(40)), true, Some(Deadline::at_tick(20)), pending));
    assert_eq!(core.totals().rearmed, 2);
    for now in 1..20 {
        assert_eq!(fire(&core, now), [] as [u64; 0], "not before its deadline (tick {now})");
    }
    assert_eq!(fire(&core, 20), [1], "at the last reset's tick");
    assert_eq!((handle.status(), handle.deadline()), (Some(Status::Fired), None));
    assert!(!handle.reset(Deadline::at_tick(30)), "fired: nothing to move");
    assert_eq!(fire(&core, 40), [] as [u64; 0], "the moved-from rounds fire nothing");
}

/// A handle outliving its core: its reset, reads and cancel find nothing, and its entry's
/// payload is dropped once, with the core.
#[test]
fn a_handle_outliving_its_core_finds_nothing() {
    let drops = Arc::new(AtomicUsize::new(0));
    let core: Core<Counted> = Core::with_wheel_size(1, 8);
    let handle: Handle<Counted> =
        core.schedule(Deadline::at_tick(5), 1, Counted(Arc::clone(&drops))).map_err(drop).unwrap();
    drop(core);
    assert_eq!(drops.load(Ordering::Relaxed), 1, "dropped with the core");
    assert!(!handle.reset(Deadline::at_tick(9)));
    assert_eq!((handle.deadline(), handle.status()), (None, None));
    assert!(handle.cancel().is_none());
    assert_eq!(drops.load(Ordering::Relaxed), 1, "once");
}

/// Resets through handles racing the core's drop on another thread: every payload is dropped
/// exactly once, by the drop, and no reset panics, whichever side of the drop it falls on (a
/// reset whose offer comes after the drop offers to the queue its clone keeps alive).
#[test]
fn resets_racing_the_cores_drop_lose_nothing() {
    for round in 0..50u64 {
        let drops = Arc::new(AtomicUsize::new(0));
        let core: Core<Counted> = Core::with_wheel_size(2, 8);
        let handles: Vec<Handle<Counted>> = (0..64u64)
            .map(|stamp| {
                let payload = Counted(Arc::clone(&drops));
                core.schedule(Deadline::at_tick(3 + stamp % 5), stamp, payload).map_err(drop).unwrap()
            })
            .collect();
        thread::scope(|scope| {
            scope.spawn(|| {
                for (i, handle) in handles.iter().enumerate() {
                    // Each to a bucket of its own round, so most resets offer.
                    handle.reset(Deadline::at_tick(100 + round + i as u64 * 9));
                }
            });
            drop(core);
        });
        assert_eq!(drops.load(Ordering::Relaxed), 64, "each payload once (round {round})");
        assert!(handles.iter().all(|handle| handle.status().is_none()), "the core is gone");
    }
}
