//! Re-arming a pending task in place: [`TimerHandle::reset`](crate::TimerHandle::reset) and
//! [`reset_at`](crate::TimerHandle::reset_at).
//!
//! ## Protocol
//!
//! A reset keeps the entry, its slot and its closure, and gives it a new deadline. It never claims
//! the entry: the status stays `Pending` throughout, so exactly-once rests on the one claim alone,
//! and a reset racing a fire or a cancel cannot make a task run twice or not at all.
//!
//! 1. **Later: rewrite in place.** Under the slot lock alone, check the generation, the status and
//!    the due mark ([`EntryState::retarget`]). If the entry is in a bucket and the new deadline is
//!    no earlier (in ticks) than its deadline, write the new deadline and leave the entry where it
//!    is: `true`, no lane lock, no list touched, nothing queued. Its bucket is visited no later
//!    than the old deadline needed, and the visit decides by the deadline in the slot, read under
//!    the slot lock when it takes the entry out: due at the cursor, it fires; otherwise it is
//!    re-added relative to the cursor by that deadline, as every cascade is (it may land in a
//!    coarser level than it came from). The same goes for an entry in transit to a cascade's
//!    re-add, whatever the new deadline: that re-add compares the deadline in the slot, under both
//!    locks, with the one it placed by, and places a moved entry again. This is the common case of
//!    an idle timeout re-armed on every message, and costs one slot lock (a cache miss at most).
//! 2. **Earlier, in a bucket: take it out.** The bucket would be visited too late. Under the lock of
//!    the lane the location named and the slot's, look again ([`TimerTaskList::retarget`]): if the
//!    entry is still in that lane (and the deadline still earlier), it leaves it (location cleared,
//!    new deadline written) and the resetter holds it, as a visit holds an entry it cascades. If it
//!    moved to another lane meanwhile, look there (the loop ends when it is found, gone, in transit
//!    or rewritten in place). If a visit took it out to fire it (the due mark), or it is no longer
//!    the ticket's pending entry, change nothing: `false`.
//! 3. **Re-add** (when the resetter holds it): through the wheel, relative to the current tick of
//!    the clock, as a schedule adds ([`TimingWheel::readd`]): an already-passed deadline goes to
//!    the level-0 bucket of its tick, which the next advance fires; the bucket is queued if its
//!    expiration went down, and queueing an earlier head wakes a sleeping driver
//!    (`DelayQueue::offer`): a reset to an earlier deadline is served in time. The insert reads
//!    the shutdown flag under its lane lock, as a schedule's does: a reset racing shutdown either
//!    inserts before the drain reaches that bucket (the drain then finds it) or sees the flag and
//!    hands the entry to the drain (below); `true` either way, since the reset came before the
//!    shutdown's claim: the drain hands back the task with the new deadline. A cancel while the
//!    resetter held it found it in transit and left it to the resetter, whose re-add reports it
//!    not pending; the resetter releases the slot (`true`: the reset came first, the cancel after
//!    it).
//!
//! **Held entries and the drain** ([`ResetsInFlight`]). Between steps 2 and 3 the entry is in no
//! bucket, so a shutdown's bucket drain cannot find it, and the reset must not drop it either: the
//! task would be neither fired, cancelled nor handed back. So a reset that may take an entry out
//! counts itself in flight (a `SeqCst` increment before step 2, a decrement after step 3), and one
//! whose re-add finds the timer shut down leaves the entry, still pending, on the refused list.
//! The drain, after its flush (and its arena scan, when it has one), waits until no reset is in
//! flight, then claims every refused entry as abandoned, as it claims what its flush finds (the
//! claim decides once, against a scan that claimed it first). A reset counted in flight before that
//! wait has either re-added its entry before the shutdown flag was set (the flush finds it) or
//! refused it (the list has it); one counted after the wait finds no entry pending in a bucket, since
//! the flush and the scan took them all, and returns `false` (the task comes back from the drain
//! with its old deadline). The wait is short: a reset in flight runs no user code and takes only
//! lane and slot locks, and the delay queue's inside a lane lock, none of which the drain holds
//! while it waits. (loom model `reset::earlier_reset_racing_shutdown`; seeded fault
//! `reset_drops_refused_entry`: the reset abandons the entry itself.)
//!
//! A rewrite in place racing shutdown: the drain takes the entry out of its bucket under the slot
//! lock, marking it due, and then claims it, so the rewrite either comes first (`true`, and the
//! drain hands back the task with the new deadline) or finds it due or claimed (`false`).
//!
//! **Cascades of a re-armed entry.** An entry re-armed later in place is re-added once, by its
//! latest deadline, when its old bucket comes due, however many times it was re-armed meanwhile;
//! from there on it cascades as a new schedule would (at most once per level). So the re-adds a
//! re-armed entry costs the driver are at most one per re-arm, and in the common case (re-armed far
//! more often than its timeout passes) about one per timeout period, where moving it would cost the
//! resetter a list unlink and an insert every time. A load that never re-arms (SPEC W4) pays
//! nothing.
//!
//! Cost: in place, one slot lock; moved earlier, the slot lock, two `SeqCst` read-modify-writes
//! on the timer's in-flight count, a lane lock and the slot lock again as a cancel, plus the re-add
//! of a schedule (a lane lock, a slot lock, the queue lock only when the bucket's expiration
//! changes), and no allocation either way.

use std::mem;

use super::{HandleStripe, Store};
#[cfg(test)]
use crate::deadline::Deadline;
use crate::entry::{self, EntryId, Retargeted, Target, Ticket};
use crate::sync::{AtomicUsize, Mutex, Ordering};
use crate::wheel::{Readded, TimerTaskList};

#[cfg(doc)]
use crate::{entry::EntryState, wheel::TimingWheel};

/// The resets that may hold an entry out of every bucket, and the entries they could not re-add
/// because the timer shut down: what a drain collects after its flush ("Held entries and the
/// drain" in the module docs).
#[derive(Debug, Default)]
pub(crate) struct ResetsInFlight {
    /// Resets between taking an entry out of its bucket and re-adding it (or refusing it).
    holding: AtomicUsize,
    /// Entries a reset took out and could not re-add: still pending, for the drain to claim.
    refused: Mutex<Vec<EntryId>>,
}

impl ResetsInFlight {
    /// Waits until no reset is in flight (see the module docs: it is never long), then takes the
    /// entries resets refused, for the drain to claim.
    pub(crate) fn settle(&self) -> Vec<EntryId> {
        while self.holding.load(Ordering::SeqCst) != 0 {
            crate::sync::yield_now();
        }
        mem::take(&mut *self.refused.lock())
    }
}

/// A reset counted in flight until dropped (also by a panic).
struct InFlight<'a>(&'a ResetsInFlight);

impl<'a> InFlight<'a> {
    fn enter(resets: &'a ResetsInFlight) -> Self {
        resets.holding.fetch_add(1, Ordering::SeqCst);
        InFlight(resets)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.holding.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Moves the pending entry `ticket` names to `deadline` (see the module docs): `true` iff it was
/// pending and is now due at `deadline` (or, when the timer shut down meanwhile, handed back by
/// its drain with that deadline). Never drops a closure: an entry the timer's shutdown keeps from
/// being re-added goes to the drain.
pub(crate) fn reset(ticket: Ticket, stripe: &HandleStripe, to: impl Into<Target>) -> bool {
    let to = to.into();
    let deadline = to.deadline;
    let Store { arena, wheel, queue, shut_down, time, resets, .. } = stripe.context();
    // 1. Under the slot lock alone: done unless the entry must move earlier.
    let mut lane = match entry::retarget(arena, ticket, to, wheel.slot_bits()) {
        Retargeted::Rewritten => {
            stripe.rearmed();
            return true;
        }
        Retargeted::Gone => return false,
        Retargeted::Elsewhere(lane) => lane,
        Retargeted::Here(_) => unreachable!("no lane is locked"),
    };
    // From here this call may hold the entry out of every bucket: a drain waits for it.
    let _in_flight = InFlight::enter(resets);
    // 2. Under the lock of the lane the entry is in, and the slot's.
    loop {
        // Every bucket a location names exists; chunks of buckets are never torn down
        // (`wheel/chunks.rs`).
        let bucket = wheel.bucket_by_key(lane.bucket()).expect("a location names an existing bucket");
        match TimerTaskList::retarget(bucket, arena, ticket, lane.lane(), to) {
            Retargeted::Here(_) => break,
            Retargeted::Elsewhere(other) => lane = other,
            Retargeted::Rewritten => {
                stripe.rearmed();
                return true;
            }
            Retargeted::Gone => return false,
        }
    }
    // 3. Held by this call: re-added as a schedule adds, or refused if the timer is shutting down.
    let base = time.ticks.floor(time.clock.now_nanos());
    let queue = |expiration, bucket| queue.offer(expiration, bucket);
    match wheel.readd(arena, (ticket.id, deadline), base, Some(shut_down), queue) {
        Readded::Inserted => {}
        // Cancelled while held: the cancel left the slot to this call (`entry/`). Seeded fault
        // `reset_leaks_cancelled` (docs/loom.md): the holder forgets to release it.
        Readded::NotPending if fault!("reset_leaks_cancelled") => {}
        Readded::NotPending => entry::discard(arena, ticket.id),
        // Seeded fault `reset_drops_refused_entry` (docs/loom.md): the reset abandons the entry
        // itself, and no one hands its task back.
        Readded::ShutDown if fault!("reset_drops_refused_entry") => {
            drop(entry::abandon_take(arena, ticket.id))
        }
        Readded::ShutDown => resets.refused.lock().push(ticket.id),
    }
    stripe.rearmed();
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::{new_entry, EntryArena};
    use crate::sync::Arc;
    use crate::timer::counters::Counters;
    use crate::wheel::{Handoff, Popped, TimingWheel};

    /// A wheel of 4 slots (levels of 1, 4, 16 ticks per slot) with its arena and counters, on a
    /// manual clock at zero.
    fn parts() -> (Arc<EntryArena>, Arc<TimingWheel>, Counters<Store>) {
        let store = Store::for_test(EntryArena::unaudited(), TimingWheel::new(4));
        // The tickets of held entries name bucket key 0 (`new_entry`): level 0 must exist.
        assert!(store.wheel.bucket(0, 0).is_some());
        let counters = Counters::new(usize::MAX, &store);
        (Arc::clone(&store.arena), Arc::clone(&store.wheel), counters)
    }

    /// Re-adds `held` relative to `base`: the tick and bucket it queued, if it queued one.
    fn readd(wheel: &TimingWheel, arena: &EntryArena, held: (EntryId, Deadline), base: u64) -> Queued {
        let mut queued = None;
        let readded = wheel.readd(arena, held, base, None, |at, bucket| queued = Some((at, bucket)));
        assert!(matches!(readded, Readded::Inserted));
        queued
    }

    type Queued = Option<(u64, Arc<TimerTaskList>)>;

    fn level_of(store: &Store, ticket: Ticket) -> Option<(usize, u64)> {
        crate::timer::position::of(store, ticket).map(|p| (p.level, p.deadline_tick))
    }

    #[test]
    fn a_reset_takes_the_entry_from_the_bucket_it_cascaded_to_and_queues_the_new_one() {
        let (arena, wheel, counters) = parts();
        let stripe = counters.local();
        let ticket = new_entry(&arena, 50, || {}).unwrap();
        let held = (ticket.id, Deadline::at_tick(50));
        assert!(matches!(readd(&wheel, &arena, held, 0), Some((48, _))));
        assert_eq!(level_of(stripe.context(), ticket), Some((2, 50)));
        // Not in the bucket its ticket names: found where its location says.
        assert!(reset(ticket, stripe, Deadline::at_tick(5)));
        assert_eq!(level_of(stripe.context(), ticket), Some((1, 5)));
        assert_eq!(stripe.context().queue.head(), Some(4), "the level-1 bucket of tick 5 is queued");
        assert_eq!(counters.snapshot().rearmed, 1);
    }

    #[test]
    fn a_later_reset_leaves_the_entry_in_its_bucket_whose_visit_re_adds_it_by_the_new_deadline() {
        let (arena, wheel, counters) = parts();
        let stripe = counters.local();
        let visit = |bucket: &TimerTaskList, cursor| {
            let (mut cascade, mut due) = (Vec::new(), Vec::new());
            let popped = bucket.visit_into(
                &arena,
                cursor,
                Handoff { cascade: &mut cascade, due: &mut due, late: &mut Vec::new(), stamps: u64::MAX },
            );
            assert_eq!(popped, Popped::Visited { requeue: None });
            (cascade, due)
        };
        // In a level-2 bucket (slots of 16 ticks) whose round starts at 48.
        let ticket = new_entry(&arena, 50, || {}).unwrap();
        let Some((48, bucket)) = readd(&wheel, &arena, (ticket.id, Deadline::at_tick(50)), 0) else {
            panic!("not queued at 48");
        };
        assert!(reset(ticket, stripe, Deadline::at_tick(60)));
        assert_eq!(level_of(stripe.context(), ticket), Some((2, 60)), "still in its bucket");
        assert_eq!(stripe.context().queue.head(), None, "nothing queued: the bucket is due first");
        // Its visit at 48 finds it not due and re-adds it by 60: level 1, round 60.
        let (cascade, due) = visit(&bucket, 48);
        assert_eq!((cascade.as_slice(), due.len()), ([(ticket.id, Deadline::at_tick(60))].as_slice(), 0));
        let Some((60, bucket)) = readd(&wheel, &arena, cascade[0], 48) else {
            panic!("not placed by the new deadline");
        };
        assert_eq!(level_of(stripe.context(), ticket), Some((1, 60)));
        // Due at 60, it goes from there to the quarters of the level-0 bucket of 60, which fires.
        let (cascade, due) = visit(&bucket, 60);
        assert_eq!((cascade.as_slice(), due.len()), ([(ticket.id, Deadline::at_tick(60))].as_slice(), 0));
        let Some((60, bucket)) = readd(&wheel, &arena, cascade[0], 60) else {
            panic!("not filed in level 0 at 60");
        };
        let (cascade, due) = visit(&bucket, 60);
        assert_eq!((cascade.len(), due.len()), (0, 1), "due at 60");
        // In a level-0 bucket too: later in place, then not due at its round.
        let other = new_entry(&arena, 62, || {}).unwrap();
        let Some((62, bucket)) = readd(&wheel, &arena, (other.id, Deadline::at_tick(62)), 60) else {
            panic!("not queued at 62");
        };
        assert!(reset(other, stripe, Deadline::at_tick(63)));
        assert_eq!(level_of(stripe.context(), other), Some((0, 63)));
        let (cascade, due) = visit(&bucket, 62);
        assert_eq!((cascade.as_slice(), due.len()), ([(other.id, Deadline::at_tick(63))].as_slice(), 0));
        assert_eq!(counters.snapshot().rearmed, 2);
    }

    #[test]
    fn a_reset_in_transit_is_honoured_by_the_re_add_and_a_due_entry_is_left_alone() {
        let (arena, wheel, counters) = parts();
        let stripe = counters.local();
        let ticket = new_entry(&arena, 50, || {}).unwrap();
        let Some((48, bucket)) = readd(&wheel, &arena, (ticket.id, Deadline::at_tick(50)), 0) else {
            panic!("not queued at 48");
        };
        // The visit at 48 takes it into transit to cascade (due at 50).
        let (mut cascade, mut due) = (Vec::new(), Vec::new());
        let visit = bucket.visit_into(
            &arena,
            48,
            Handoff { cascade: &mut cascade, due: &mut due, late: &mut Vec::new(), stamps: u64::MAX },
        );
        assert_eq!((visit, cascade.len(), due.len()), (Popped::Visited { requeue: None }, 1, 0));
        // A reset now writes the deadline; the driver's re-add, placing by the old one, is told.
        assert!(reset(ticket, stripe, Deadline::at_tick(60)));
        assert_eq!(level_of(stripe.context(), ticket), None, "in transit");
        let Some((60, bucket)) = readd(&wheel, &arena, cascade[0], 48) else {
            panic!("not placed by the new deadline");
        };
        assert_eq!(level_of(stripe.context(), ticket), Some((1, 60)));
        // At 60 it goes to the level-0 bucket of 60, taken out from there to fire: due, so a
        // reset changes nothing.
        let visit = |bucket: &TimerTaskList, cascade: &mut Vec<_>, due: &mut Vec<_>| {
            let out = Handoff { cascade, due, late: &mut Vec::new(), stamps: u64::MAX };
            bucket.visit_into(&arena, 60, out)
        };
        cascade.clear();
        assert_eq!(visit(&bucket, &mut cascade, &mut due), Popped::Visited { requeue: None });
        let Some((60, bucket)) = readd(&wheel, &arena, cascade[0], 60) else {
            panic!("not filed in level 0 at 60");
        };
        assert_eq!(visit(&bucket, &mut cascade, &mut due), Popped::Visited { requeue: None });
        assert_eq!(due.len(), 1);
        assert!(!reset(ticket, stripe, Deadline::at_tick(99)));
        assert_eq!(crate::entry::deadline(&arena, ticket), Some(Deadline::at_tick(60)));
        assert_eq!(counters.snapshot().rearmed, 1);
    }

    #[test]
    fn a_reset_racing_shutdown_leaves_the_entry_it_holds_to_the_drain() {
        let (arena, wheel, counters) = parts();
        let stripe = counters.local();
        let ticket = new_entry(&arena, 50, || {}).unwrap();
        readd(&wheel, &arena, (ticket.id, Deadline::at_tick(50)), 0);
        stripe.context().shut_down.store(true, crate::sync::Ordering::SeqCst);
        assert!(reset(ticket, stripe, Deadline::at_tick(3)), "moved before the shutdown's claim");
        assert_eq!(crate::entry::status(&arena, ticket), Some(crate::entry::Status::Pending), "not dropped");
        assert_eq!(level_of(stripe.context(), ticket), None, "in no bucket");
        assert_eq!(stripe.context().resets.settle(), vec![ticket.id], "left to the drain");
        assert!(stripe.context().resets.settle().is_empty(), "once");
    }
}
