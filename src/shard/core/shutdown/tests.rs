//! A shard's state on one thread: a closed shard refuses with the payload back, the totals after a
//! scripted mix of every move, and the extra seen under the shard's lock by each `_with` call.

use super::super::super::life::Status;
use super::super::super::wheel::Refusal;
use super::super::state::Totals;
use super::super::{Core, Merge};
use crate::deadline::Deadline;

fn at(tick: u64) -> Deadline {
    Deadline::at_tick(tick)
}

/// The close drains every entry (the held one too) and refuses every schedule after it, in each
/// shard, with the payload back; a drain without the close leaves the shards open.
#[test]
fn a_closed_shard_refuses_with_the_payload_back() {
    let core: Core<&str> = Core::with_wheel_size(2, 8);
    let a = core.schedule_in(0, at(1), 1, "a").map_err(drop).unwrap();
    core.schedule_in(1, at(30), 2, "b").map_err(drop).unwrap();
    let (mut batch, mut merge) = (Vec::new(), Merge::default());
    core.advance(1, u64::MAX, &mut batch, &mut merge);
    assert_eq!(batch.len(), 1, "a held until its claim");
    let mut out = Vec::new();
    core.drain_all(&mut out, &mut merge);
    assert_eq!(out.iter().map(|fired| fired.payload).collect::<Vec<_>>(), ["a", "b"]);
    core.schedule_in(1, at(30), 3, "c").map_err(drop).expect("open after a drain");

    out.clear();
    core.close(&mut out, &mut merge);
    assert_eq!(out.iter().map(|fired| (fired.payload, fired.stamp)).collect::<Vec<_>>(), [("c", 3)]);
    assert_eq!(core.len(), 0);
    for shard in 0..2 {
        let refused = core.schedule_in(shard, at(40), 4, "d").map(drop).unwrap_err();
        assert_eq!((refused.payload, refused.reason), ("d", Refusal::Closed), "shard {shard}");
    }
    let refused = core.schedule(at(2), 5, "e").map(drop).unwrap_err();
    assert_eq!((refused.payload, refused.reason), ("e", Refusal::Closed));
    assert_eq!((core.len(), core.claim(&batch[0]), core.cancel(&a)), (0, None, None));
    assert_eq!(core.status(&a), Some(Status::Abandoned));
    out.clear();
    core.close(&mut out, &mut merge);
    assert!(out.is_empty(), "a second close drains nothing");
    let totals = core.totals();
    assert_eq!((totals.scheduled, totals.abandoned), (3, 3), "refusals are not scheduled");
}

/// Each total counts exactly the moves that happened: failed cancels, claims and resets count
/// nothing, a set-aside nothing, and the shards' totals are summed.
#[test]
fn totals_are_exact_after_a_scripted_mix() {
    let core: Core<u32> = Core::with_wheel_size(2, 8);
    let h: Vec<_> = (0..6)
        .map(|i| core.schedule_in(i % 2, at(2 + i as u64), i as u64, i as u32).map_err(drop).unwrap())
        .collect();
    assert_eq!(core.totals(), Totals { scheduled: 6, ..Totals::default() });
    // Cancels: 0 once (the second finds nothing).
    assert_eq!((core.cancel(&h[0]), core.cancel(&h[0])), (Some(0), None));
    // Resets: 1 moves to 9 and back to 3 (two), a reset of the cancelled 0 does not move.
    assert!(core.reset(&h[1], at(9)) && core.reset(&h[1], at(3)) && !core.reset(&h[0], at(4)));
    // The advance to 3 holds 1 (moved back to tick 3); set aside, the advance to 4 takes it with 2.
    let (mut batch, mut merge) = (Vec::new(), Merge::default());
    core.advance(3, u64::MAX, &mut batch, &mut merge);
    assert_eq!(batch.iter().map(|due| due.entry.stamp).collect::<Vec<_>>(), [1]);
    assert!(!core.reset(&h[1], at(9)), "held: not moved");
    assert!(core.set_aside(&batch[0]));
    batch.clear();
    core.advance(4, u64::MAX, &mut batch, &mut merge);
    assert_eq!(batch.iter().map(|due| due.entry.stamp).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(core.cancel(&h[2]), Some(2), "a cancel of a held entry wins");
    let claimed: Vec<_> = batch.iter().map(|due| core.claim(due)).collect();
    assert_eq!(claimed, [Some(1), None]);
    assert_eq!(core.claim(&batch[0]), None, "claimed once");
    let mut out = Vec::new();
    core.close(&mut out, &mut merge);
    assert_eq!(out.iter().map(|fired| fired.payload).collect::<Vec<_>>(), [3, 4, 5]);
    assert!(core.schedule_in(0, at(9), 9, 9).is_err());
    let totals = core.totals();
    assert_eq!(totals, Totals { scheduled: 6, fired: 1, cancelled: 2, abandoned: 3, rearmed: 2 });
    let ended = totals.fired + totals.cancelled + totals.abandoned;
    assert_eq!(ended, totals.scheduled, "every entry ended once");
}

/// What each `_with` call's closure sees of the extra, and that it runs with the shard locked,
/// only when the entry moved.
#[test]
fn the_extra_is_seen_under_the_lock() {
    let core: Core<u32, Vec<(&'static str, u32)>> = Core::with_extra(1, 8);
    let locked = || core.shards[0].header.lock.try_lock().is_none();
    let log = |what: &'static str, id: u32| {
        move |extra: &mut Vec<(&'static str, u32)>| {
            assert!(locked(), "{what} {id}: under the shard's lock");
            extra.push((what, id));
        }
    };
    let h: Vec<_> = (0..3)
        .map(|i| core.schedule_with(at(2), u64::from(i), i, log("scheduled", i)).map_err(drop).unwrap())
        .collect();
    assert_eq!(core.cancel_with(&h[0], log("cancelled", 0)), Some(0));
    assert_eq!(core.cancel_with(&h[0], log("cancelled again", 0)), None);
    assert!(core.reset_with(&h[1], at(3), log("rearmed", 1)));
    assert!(!core.reset_with(&h[0], at(3), log("rearmed", 0)));
    let read = core.deadline_with(&h[1], |deadline, extra| {
        assert!(locked());
        (deadline, extra.len())
    });
    assert_eq!(read, Some((at(3), 5)), "three schedules, a cancel and a reset");
    assert_eq!(core.deadline_with(&h[0], |_, _| unreachable!("not pending")), None);
    let (mut batch, mut merge) = (Vec::new(), Merge::default());
    core.advance(2, u64::MAX, &mut batch, &mut merge);
    assert_eq!(core.claim_with(&batch[0], log("fired", 2)), Some(2));
    assert_eq!(core.claim_with(&batch[0], log("fired again", 2)), None);
    let mut out = Vec::new();
    core.close_with(&mut out, &mut merge, |extra| {
        assert!(locked());
        extra.push(("closed", 0));
    });
    assert_eq!(out.len(), 1);
    assert!(core.schedule_in_with(0, at(9), 9, 9, log("scheduled after the close", 9)).is_err());
    let mut seen = Vec::new();
    core.for_each_extra(|extra| {
        assert!(locked());
        seen.clone_from(extra);
    });
    let expected = [
        ("scheduled", 0),
        ("scheduled", 1),
        ("scheduled", 2),
        ("cancelled", 0),
        ("rearmed", 1),
        ("fired", 2),
        ("closed", 0),
    ];
    assert_eq!(seen, expected);
}
