//! The assembled shard core (`src/shard/core.rs`) on its real pieces: the shard lock, the pooled
//! headers with their `Wheel` state, and the driver's queue of buckets. Payloads count their ends
//! in std atomics, observations kept out of loom's sight.
//!
//! * `a_schedule_racing_the_poll_is_flushed_by_the_next_advance`: a schedule due at tick 5 into a
//!   wheel of 4 buckets a level (level 1's round at 4, cascading to level 0 at 5) against the
//!   driver's advance to 5, then, once the schedule is done, a second advance to 5: the entry
//!   fires exactly once, in one of the two, whether the driver polled before the offer (the
//!   bucket linked, its offer queued after the poll), between, or after.
//! * `cancel_racing_advance`: a cancel of an entry due at tick 1, then a schedule, on one thread,
//!   against the advance to tick 1 and the claim of its batch: the entry ends exactly once
//!   (cancelled or claimed), and `len` counts exactly the entry scheduled after.
//! * `a_cancel_before_the_claim_wins`: a cancel of an entry due at tick 1 against the driver's
//!   advance to tick 1 (which holds the entry) and its claim, with a flag the driver sets just
//!   before it claims: exactly one of the claim and the cancel gets the payload, a cancel that
//!   completed before the flag was set (so before the claim began) got it, and the handle's status
//!   says which (`Cancelled` or `Fired`).
//! * `a_reset_racing_the_advance_runs_the_entry_once_and_offers_its_new_round`: a reset of an
//!   entry due at tick 2 to tick 1, through the handle alone from another thread, against the driver's advances to 1 and
//!   to 2 (yielding between them as it waits for its next tick), each with the claims of its
//!   batch, then, once the reset is done, a last advance to 2 and its claims: the entry runs
//!   exactly once, at 1 if the reset moved it (its new round offered, so an advance under way or
//!   the next takes it) or at 2 if the reset returned `false` (held by the batch or claimed).
//! * `a_passed_deadline_racing_the_drain_is_taken_by_this_advance_or_the_next`: a schedule of a
//!   passed deadline against the advance that drains the overdue list (one passed deadline on it
//!   already), then a second advance: each entry is taken once over the two, whether the schedule
//!   linked before the drain, or after it (the drain cleared the list's "offered" flag, so the
//!   schedule offers it again).
//! * `a_schedule_above_the_limit_is_taken_by_the_next_advance`: a schedule numbered above the
//!   round's limit, due at the advance's tick, against the advance (level 1's round at 4 cascading
//!   to level 0 at 5), then a second advance whose limit covers it: the first takes only the entry
//!   its limit covers, the second the other, once, on the overdue list whether the first's flush
//!   moved it there or the schedule filed it there.
//! * `a_passed_deadline_racing_a_flush_that_keeps_an_entry_is_taken_by_the_next_advance`: K,
//!   numbered above the round's limit and due at the advance's tick, kept by its flush, against a
//!   passed deadline P scheduled from another thread, which links onto the overdue list and sets
//!   its "offered" flag under the lock and offers after its unlock (the flush then relies on that
//!   offer and makes none): a second advance takes K and P, once each.
//! * `a_set_aside_racing_the_poll_is_taken_by_the_next_advance`: an entry due at tick 1, held by
//!   an advance to 1, set aside from another thread against the driver's next advance to 1, then,
//!   once the set-aside is done, a last advance to 1: the entry is taken exactly once over the two
//!   advances (its offer made for the next round after the link and the unlock), and claimed.
//! * `entries_moved_from_behind_the_time_are_taken_by_the_round_under_way`: a schedule of X, due
//!   at 1 and filed from time 0, then of W at 5, against the driver's advance to 2 (K, due at 2 and
//!   above its limit, kept for the next round): whenever the advance pops bucket 2 before X's
//!   offer, bucket 1 is behind the time, and W's new round there moves X to the overdue list while
//!   its offer for the next round is pending; once both schedules are done before one of the
//!   advance's polls, that advance takes X.
//! * `a_split_racing_the_poll_is_visited_by_this_advance_or_the_next`: a schedule that splits its
//!   bucket (level 1's round at 4, split at 2 entries, stage 0 of tick 4 opening at 1) against the
//!   driver's advance to 1, then, once the schedule is done, a second advance to 1: the visit at 1
//!   is taken by one of the two, so tick 4's entry is at level 0 ahead of the round, and both
//!   entries fire once at their ticks.
//! * `a_schedule_racing_the_close_is_drained_or_refused`: a schedule against `Core::close` of its
//!   shard (one entry pending already): the schedule is either drained by the close (linked first)
//!   or refused with `Refusal::Closed`, its payload handed back (the flag read set in its
//!   insert's critical section), and `len` is then 0.
//! * `two_shards_growing_at_once_take_their_own_runs`: a core of two shards built with room for
//!   two runs (`Core::with_capacity`), one schedule into each shard from two threads, each finding
//!   its slab empty: each shard takes a run of its own from the reserve under its shard's lock
//!   (the reserve's lock inside it), and after both the reserve is empty and the units the shards
//!   took add up to the capacity. The reserve's runs are bookkeeping under loom (no mapping).
//! * `a_shrink_giving_back_racing_a_growth_adds_up`: a core of two shards built with room for two
//!   runs, shard 0 holding one (grown, then emptied); `Core::shrink` from one thread gives it back
//!   while a schedule into shard 1 from another takes a run: after both, shard 0 holds none, shard
//!   1 the run (or the unit its entry occupies, if the shrink reached it after its growth), and the
//!   reserve the rest, adding up to the capacity.

use std::sync::atomic::{AtomicUsize, Ordering};

use delaywheel::loom_internals::shard::core::{
    advance_with, at_tick, pending_per_level, refused_parts, reserve_units, run_units, set_split_at,
    taken_units, Core, Deadline, Due, Merge, Refusal, Status,
};
use loom::sync::atomic::AtomicBool;
use loom::sync::Arc;
use loom::thread;

/// Seeded fault `shard_core_offer_before_link`: the schedule offers its bucket before the insert
/// links the entry; the driver pops it and flushes a bucket whose round is not set (a stale offer),
/// the insert then sets the round without offering it, and neither advance fires the entry.
#[test]
fn a_schedule_racing_the_poll_is_flushed_by_the_next_advance() {
    loom::model(|| {
        let core: Arc<Core<u64>> = Arc::new(Core::with_wheel_size(1, 4));
        let scheduler = {
            let core = Arc::clone(&core);
            thread::spawn(move || {
                core.schedule(at_tick(5), 0, 5).map_err(drop).unwrap();
            })
        };
        let (mut out, mut merge) = (Vec::new(), Merge::default());
        core.advance(5, u64::MAX, &mut out, &mut merge);
        scheduler.join().unwrap();
        core.advance(5, u64::MAX, &mut out, &mut merge);
        assert_eq!(out.iter().map(|due| due.order()).collect::<Vec<_>>(), [(at_tick(5), 0)], "fired once");
        assert_eq!(core.len(), 1, "held until claimed");
        assert_eq!(core.claim(&out[0]), Some(5));
        assert_eq!(core.len(), 0);
    });
}

/// A payload that counts its drop.
struct Payload(std::sync::Arc<AtomicUsize>);

impl Drop for Payload {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Seeded fault `shard_core_claim_counts_out_after_unlock`: the claim's count-out after the unlock
/// loses the count-in of the schedule between its load and store ("len() once quiet").
#[test]
fn cancel_racing_advance() {
    loom::model(|| {
        let ends = std::sync::Arc::new(AtomicUsize::new(0));
        let core = Arc::new(Core::new(1));
        let a = core.schedule(at_tick(1), 0, Payload(std::sync::Arc::clone(&ends))).map_err(drop).unwrap();
        let other = {
            let (core, ends) = (Arc::clone(&core), std::sync::Arc::clone(&ends));
            thread::spawn(move || {
                let cancelled = core.cancel(&a).is_some();
                core.schedule(at_tick(5), 1, Payload(ends)).map_err(drop).unwrap();
                cancelled
            })
        };
        let mut out = Vec::new();
        core.advance(1, u64::MAX, &mut out, &mut Merge::default());
        let fired = out.iter().filter_map(|due| core.claim(due)).count();
        let cancelled = other.join().unwrap();
        assert_eq!(fired + usize::from(cancelled), 1, "A ended once (fired {fired}, cancelled {cancelled})");
        assert_eq!(ends.load(Ordering::Relaxed), 1);
        assert_eq!(core.len(), 1, "len() once quiet: the later entry alone is pending");
        assert_eq!(core.cancel(&a).map(drop), None, "A's handle finds nothing");
    });
}

/// Seeded fault `shard_core_claims_at_collection`: the advance takes the payload when it collects
/// the entry, so a cancel between the advance and the flag finds nothing though the claim has not
/// begun ("a cancel that completed before the claim began wins").
#[test]
fn a_cancel_before_the_claim_wins() {
    loom::model(|| {
        let core: Arc<Core<u64>> = Arc::new(Core::new(1));
        let claiming = Arc::new(AtomicBool::new(false));
        let a = core.schedule(at_tick(1), 0, 7).map_err(drop).unwrap();
        let canceller = {
            let (core, claiming) = (Arc::clone(&core), Arc::clone(&claiming));
            thread::spawn(move || {
                let cancelled = core.cancel(&a);
                (cancelled, claiming.load(loom::sync::atomic::Ordering::SeqCst))
            })
        };
        let mut out = Vec::new();
        core.advance(1, u64::MAX, &mut out, &mut Merge::default());
        claiming.store(true, loom::sync::atomic::Ordering::SeqCst);
        let claimed: Vec<u64> = out.iter().filter_map(|due| core.claim(due)).collect();
        let (cancelled, claim_begun) = canceller.join().unwrap();
        assert_eq!(claimed.len() + usize::from(cancelled.is_some()), 1, "exactly one of claim and cancel");
        assert!(claimed.iter().chain(&cancelled).all(|&payload| payload == 7));
        if !claim_begun {
            assert_eq!(cancelled, Some(7), "a cancel that completed before the claim began wins");
        }
        assert_eq!(core.len(), 0);
        assert_eq!(core.deadline(&a), None);
        let ended = if cancelled.is_some() { Status::Cancelled } else { Status::Fired };
        assert_eq!(core.status(&a), Some(ended), "the status says which took it");
    });
}

/// Seeded fault `shard_core_reset_offers_before_link`: the reset offers the bucket of tick 1
/// before it moves the entry there; the driver's advance to 1 pops the offer and flushes a bucket
/// whose round is not set yet (a stale offer), the move then sets the round without offering it,
/// and no later advance runs the entry.
#[test]
fn a_reset_racing_the_advance_runs_the_entry_once_and_offers_its_new_round() {
    loom::model(|| {
        let core: Arc<Core<u64>> = Arc::new(Core::with_wheel_size(1, 4));
        let a = core.schedule(at_tick(2), 0, 7).map_err(drop).unwrap();
        // The handle alone: its offer reaches the queue through its shard's state.
        let resetter = thread::spawn(move || a.reset(at_tick(1)));
        let (mut out, mut merge, mut ran) = (Vec::new(), Merge::default(), Vec::new());
        let mut tick = |now: u64, ran: &mut Vec<(Deadline, u64)>| {
            core.advance(now, u64::MAX, &mut out, &mut merge);
            ran.extend(out.drain(..).filter_map(|due| Some((due.order().0, core.claim(&due)?))));
        };
        tick(1, &mut ran);
        // The driver waits for its next tick.
        thread::yield_now();
        tick(2, &mut ran);
        let moved = resetter.join().unwrap();
        tick(2, &mut ran);
        let deadline = at_tick(if moved { 1 } else { 2 });
        assert_eq!(ran, [(deadline, 7)], "ran once, at the deadline the reset left it (moved: {moved})");
        assert_eq!(core.len(), 0);
        assert_eq!(core.deadline(&a), None);
        assert!(!core.reset(&a, at_tick(3)), "ran: nothing to move");
        assert_eq!(core.status(&a), Some(Status::Fired));
    });
}

/// Seeded fault `shard_core_overdue_flag_left_set`: the drain leaves the overdue list's flag set,
/// so a passed deadline linked after the drain offers nothing and neither advance takes it.
#[test]
fn a_passed_deadline_racing_the_drain_is_taken_by_this_advance_or_the_next() {
    loom::model(|| {
        let core: Arc<Core<u64>> = Arc::new(Core::with_wheel_size(1, 4));
        core.schedule(at_tick(0), 1, 1).map_err(drop).unwrap();
        let scheduler = {
            let core = Arc::clone(&core);
            thread::spawn(move || {
                core.schedule(at_tick(0), 2, 2).map_err(drop).unwrap();
            })
        };
        let (mut out, mut merge) = (Vec::new(), Merge::default());
        core.advance(0, 2, &mut out, &mut merge);
        scheduler.join().unwrap();
        core.advance(0, 2, &mut out, &mut merge);
        let mut fired: Vec<u64> = out.iter().map(|due| core.claim(due).expect("held")).collect();
        fired.sort_unstable();
        assert_eq!(fired, [1, 2], "each taken once by the two advances");
        assert_eq!(core.len(), 0);
    });
}

/// Seeded fault `shard_core_kept_not_offered`: the advance drops the next round's offer of the
/// overdue list its flush moved the later entry to, and the second advance finds nothing ("taken
/// by the next advance").
#[test]
fn a_schedule_above_the_limit_is_taken_by_the_next_advance() {
    loom::model(|| {
        let core: Arc<Core<u64>> = Arc::new(Core::with_wheel_size(1, 4));
        core.schedule(at_tick(5), 1, 1).map_err(drop).unwrap();
        let scheduler = {
            let core = Arc::clone(&core);
            thread::spawn(move || {
                core.schedule(at_tick(5), 2, 2).map_err(drop).unwrap();
            })
        };
        let (mut out, mut merge) = (Vec::new(), Merge::default());
        core.advance(5, 1, &mut out, &mut merge);
        let first: Vec<u64> = out.drain(..).map(|due| core.claim(&due).expect("held")).collect();
        assert_eq!(first, [1], "the first advance takes what its limit covers");
        scheduler.join().unwrap();
        core.advance(5, 2, &mut out, &mut merge);
        let second: Vec<u64> = out.drain(..).map(|due| core.claim(&due).expect("held")).collect();
        assert_eq!(second, [2], "taken by the next advance, once");
        assert_eq!(core.len(), 0);
        core.advance(5, 2, &mut out, &mut merge);
        assert!(out.is_empty(), "never taken twice");
    });
}

/// Seeded fault `shard_core_kept_not_offered` (the advance drops the flush's offer for the next
/// round, and the second advance finds only P, or nothing). A flush
/// that keeps K above the round's limit offers the overdue list for the next round only if no
/// offer is pending since the list's last drain, and a passed deadline P scheduled from another
/// thread links onto that list and sets the flag in its critical section but offers after its
/// unlock. Whichever comes first, the list is offered for the next advance: K and P are taken
/// by it, once each.
#[test]
fn a_passed_deadline_racing_a_flush_that_keeps_an_entry_is_taken_by_the_next_advance() {
    loom::model(|| {
        let core: Arc<Core<u64>> = Arc::new(Core::with_wheel_size(1, 4));
        core.schedule(at_tick(5), 1, 1).map_err(drop).unwrap();
        core.schedule(at_tick(5), 2, 2).map_err(drop).unwrap();
        let scheduler = {
            let core = Arc::clone(&core);
            thread::spawn(move || {
                core.schedule(at_tick(0), 3, 3).map_err(drop).unwrap();
            })
        };
        let (mut out, mut merge) = (Vec::new(), Merge::default());
        core.advance(5, 1, &mut out, &mut merge);
        let first: Vec<u64> = out.drain(..).map(|due| core.claim(&due).expect("held")).collect();
        assert_eq!(first, [1], "the first advance takes what its limit covers");
        scheduler.join().unwrap();
        core.advance(5, 3, &mut out, &mut merge);
        let mut second: Vec<u64> = out.drain(..).map(|due| core.claim(&due).expect("held")).collect();
        second.sort_unstable();
        assert_eq!(second, [2, 3], "the kept entry and the passed deadline, by the next advance");
        assert_eq!(core.len(), 0);
        core.advance(5, 3, &mut out, &mut merge);
        assert!(out.is_empty(), "never taken twice");
    });
}

/// Seeded fault `shard_core_set_aside_offered_before_link`: the set-aside offers the overdue list
/// before it puts the entry back on it; the driver's advance pops the offer and drains the list
/// while it is empty, the link then owes an offer it never makes, and no later advance takes the
/// entry.
#[test]
fn a_set_aside_racing_the_poll_is_taken_by_the_next_advance() {
    loom::model(|| {
        let core: Arc<Core<u64>> = Arc::new(Core::with_wheel_size(1, 4));
        core.schedule(at_tick(1), 0, 7).map_err(drop).unwrap();
        let (mut out, mut merge) = (Vec::new(), Merge::default());
        core.advance(1, 0, &mut out, &mut merge);
        let due = out.pop().expect("due at 1");
        let aside = {
            let core = Arc::clone(&core);
            thread::spawn(move || core.set_aside(&due))
        };
        core.advance(1, 0, &mut out, &mut merge);
        assert!(aside.join().unwrap(), "held: set aside");
        core.advance(1, 0, &mut out, &mut merge);
        assert_eq!(out.iter().map(|due| due.order()).collect::<Vec<_>>(), [(at_tick(1), 0)], "taken once");
        assert_eq!(core.len(), 1, "held until claimed");
        assert_eq!(core.claim(&out[0]), Some(7));
        assert_eq!(core.len(), 0);
    });
}

/// Seeded fault `shard_core_moved_overdue_not_offered`: the entries a bucket behind the time moves
/// to the overdue list offer it only as a passed deadline does, not while the list's offer for the
/// next round is pending: X, filed in bucket 1 at time 0, is left behind when the advance pops
/// bucket 2 before X's offer is made (the time moves to 2, K kept for the next round); W then sets
/// a new round in bucket 1, moving X with no offer, X's old offer is stale, and the advance leaves
/// X, due and within its limit, to the next.
#[test]
fn entries_moved_from_behind_the_time_are_taken_by_the_round_under_way() {
    loom::model(|| {
        let core: Arc<Core<u64>> = Arc::new(Core::with_wheel_size(1, 4));
        let claim = |out: &mut Vec<Due>| -> Vec<u64> {
            out.drain(..).map(|due| core.claim(&due).expect("held")).collect()
        };
        core.schedule(at_tick(2), 8, 8).map_err(drop).unwrap();
        let (linked, done) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let scheduler = {
            let (core, linked, done) = (Arc::clone(&core), Arc::clone(&linked), Arc::clone(&done));
            thread::spawn(move || {
                let link = |_: &mut ()| linked.store(true, loom::sync::atomic::Ordering::Release);
                core.schedule_with(at_tick(1), 5, 5, link).map(drop).map_err(drop).unwrap();
                core.schedule(at_tick(5), 9, 9).map_err(drop).unwrap();
                done.store(true, loom::sync::atomic::Ordering::Release);
            })
        };
        // X filed from time 0, in bucket 1: its offer races the advance's polls.
        while !linked.load(loom::sync::atomic::Ordering::Acquire) {
            thread::yield_now();
        }
        let (mut out, mut merge) = (Vec::new(), Merge::default());
        let mut seen = false;
        advance_with(&core, (2, 6), &mut out, &mut merge, || {
            seen |= done.load(loom::sync::atomic::Ordering::Acquire);
        });
        let first = claim(&mut out);
        scheduler.join().unwrap();
        if seen {
            assert_eq!(first, [5], "the schedules were done before a poll: X taken by this advance");
        }
        core.advance(2, 9, &mut out, &mut merge);
        let second = claim(&mut out);
        assert_eq!(second, if first.contains(&5) { vec![8] } else { vec![5, 8] }, "the rest, once");
        core.advance(5, 9, &mut out, &mut merge);
        assert_eq!(claim(&mut out), [9]);
        assert_eq!(core.len(), 0);
    });
}

/// Seeded fault `shard_core_closed_read_outside_lock`: the schedule reads the closed flag in a
/// critical section of its own, before its insert's; a close between the two drains the shard,
/// and the entry is then linked into the closed shard, neither drained nor refused.
#[test]
fn a_schedule_racing_the_close_is_drained_or_refused() {
    loom::model(|| {
        let core: Arc<Core<u64>> = Arc::new(Core::with_wheel_size(1, 4));
        core.schedule(at_tick(3), 1, 1).map_err(drop).unwrap();
        let scheduler = {
            let core = Arc::clone(&core);
            thread::spawn(move || core.schedule(at_tick(2), 2, 2).map(drop).map_err(refused_parts))
        };
        let (mut out, mut merge) = (Vec::new(), Merge::default());
        core.close(&mut out, &mut merge);
        let scheduled = match scheduler.join().unwrap() {
            Ok(()) => true,
            Err(refused) => {
                assert_eq!(refused, (2, Refusal::Closed), "refused as closed, its payload handed back");
                false
            }
        };
        let drained: Vec<u64> = out.iter().map(|fired| fired.order().1).collect();
        let expected: &[u64] = if scheduled { &[2, 1] } else { &[1] };
        assert_eq!(drained, expected, "drained by the close or refused (scheduled: {scheduled})");
        assert_eq!(core.len(), 0, "nothing left in the closed shard");
        assert!(core.schedule(at_tick(2), 3, 3).is_err(), "closed");
    });
}

/// Seeded fault `shard_core_close_takes_held`: the close that keeps the held entries for their
/// claims (a timer's shutdown joining its executor threads) drains them too, and the claim after
/// it finds nothing: a task handed over before the shutdown would never run.
#[test]
fn a_claim_racing_a_close_keeping_held_takes_its_entry() {
    loom::model(|| {
        let core: Arc<Core<u64>> = Arc::new(Core::with_wheel_size(1, 4));
        core.schedule(at_tick(1), 1, 1).map_err(drop).unwrap();
        core.schedule(at_tick(3), 2, 2).map_err(drop).unwrap();
        let (mut due, mut merge) = (Vec::new(), Merge::default());
        core.advance(1, u64::MAX, &mut due, &mut merge);
        assert_eq!(due.len(), 1, "the entry of tick 1 held");
        let claimer = {
            let (core, held) = (Arc::clone(&core), due[0]);
            thread::spawn(move || core.claim(&held))
        };
        let mut out = Vec::new();
        core.close_keeping_held(&mut out, &mut merge, |_| {});
        assert_eq!(claimer.join().unwrap(), Some(1), "the held entry is its claim's");
        let drained: Vec<u64> = out.iter().map(|fired| fired.order().1).collect();
        assert_eq!(drained, [2], "the rest drained");
        let mut rest = Vec::new();
        core.close(&mut rest, &mut merge);
        assert!(rest.is_empty() && core.is_empty(), "nothing left");
        assert!(core.schedule(at_tick(2), 3, 3).is_err(), "closed");
    });
}

/// Seeded fault `shard_core_reserve_head_read_outside_lock`: a growing slab reads the run it takes
/// under one hold of the reserve's lock and takes it under another; two shards growing at once
/// both take the same run, and the reserve keeps units the shards hold too.
#[test]
fn two_shards_growing_at_once_take_their_own_runs() {
    let (run, unit) = run_units::<u64>();
    loom::model(move || {
        let core: Arc<Core<u64>> = Arc::new(Core::with_capacity(2, 4, 2 * run * unit));
        assert_eq!(reserve_units(&core), Some((2 * run, 2 * run)));
        // The model's main thread schedules into shard 0, the thread it spawns into shard 1.
        let scheduler = {
            let core = Arc::clone(&core);
            thread::spawn(move || core.schedule(at_tick(2), 2, 2).map(drop).map_err(drop).unwrap())
        };
        core.schedule(at_tick(1), 1, 1).map(drop).map_err(drop).unwrap();
        scheduler.join().unwrap();
        assert_eq!(core.len(), 2);
        let taken = taken_units(&core);
        let (held, capacity) = reserve_units(&core).unwrap();
        assert_eq!(held + taken.iter().sum::<usize>(), capacity, "held {held}, taken {taken:?}: they add up");
        assert_eq!((held, taken), (0, vec![run, run]), "a run each");
    });
}

/// Seeded fault `shard_core_visit_offered_before_split`: the schedule offers the visit of the
/// bucket its insert splits before the insert's critical section, and drops the visit the split
/// reports; the driver pops it before the split (stale: nothing to visit) and no visit is queued
/// after it, so the stage waits for the round and the second advance to 1 finds nothing.
#[test]
fn a_split_racing_the_poll_is_visited_by_this_advance_or_the_next() {
    loom::model(|| {
        let core: Arc<Core<u64>> = Arc::new(Core::with_wheel_size(1, 4));
        set_split_at(&core, 2);
        core.schedule(at_tick(4), 0, 4).map_err(drop).unwrap();
        let scheduler = {
            let core = Arc::clone(&core);
            thread::spawn(move || {
                core.schedule(at_tick(5), 1, 5).map_err(drop).unwrap();
            })
        };
        let (mut out, mut merge) = (Vec::new(), Merge::default());
        core.advance(1, u64::MAX, &mut out, &mut merge);
        scheduler.join().unwrap();
        core.advance(1, u64::MAX, &mut out, &mut merge);
        assert!(out.is_empty(), "nothing due at 1");
        assert_eq!(pending_per_level(&core), [1, 1], "stage 0 (tick 4) cascaded ahead of its round");
        for tick in [4, 5] {
            core.advance(tick, u64::MAX, &mut out, &mut merge);
            let fired: Vec<_> = out.drain(..).map(|due| core.claim(&due)).collect();
            assert_eq!(fired, [Some(tick)], "fired once, at its tick");
        }
        assert_eq!(core.len(), 0);
    });
}

/// Seeded fault `shard_core_reserve_give_back_outside_lock`: a shrink's give-back copies the
/// reserve's list under one hold of its lock and writes it back, with the run given back, under
/// another; a growth taking a run between the two finds it back on the list: held twice.
#[test]
fn a_shrink_giving_back_racing_a_growth_adds_up() {
    let (run, unit) = run_units::<u64>();
    loom::model(move || {
        let core: Arc<Core<u64>> = Arc::new(Core::with_capacity(2, 4, 2 * run * unit));
        // Shard 0 (the model's main thread's) grows by a run, then empties.
        let handle = core.schedule(at_tick(1), 1, 1).map_err(drop).unwrap();
        assert_eq!(core.cancel(&handle), Some(1));
        assert_eq!(taken_units(&core), [run, 0]);
        // The thread it spawns schedules into shard 1, which takes a run, while it shrinks.
        let scheduler = {
            let core = Arc::clone(&core);
            thread::spawn(move || core.schedule(at_tick(2), 2, 2).map(drop).map_err(drop).unwrap())
        };
        assert!(core.shrink() > 0, "shard 0 cut its slots");
        scheduler.join().unwrap();
        let taken = taken_units(&core);
        let (held, capacity) = reserve_units(&core).unwrap();
        assert_eq!(held + taken.iter().sum::<usize>(), capacity, "held {held}, taken {taken:?}: they add up");
        // Shard 1 keeps the unit its entry occupies if the shrink reached it after its growth.
        assert!(taken[0] == 0 && (taken[1] == run || taken[1] == 1), "given back, a run taken: {taken:?}");
    });
}
