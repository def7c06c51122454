//! Re-arming a pending task in place: [`TimerHandle::reset`](crate::TimerHandle::reset) and
//! [`reset_at`](crate::TimerHandle::reset_at).
//!
//! ## Protocol
//!
//! A reset keeps the entry, its slot and its closure, and moves it to a new deadline, with the same
//! locks a cancel takes and in the same order (bucket lane, then slot: `entry/`). It never claims
//! the entry: the status stays `Pending` throughout, so exactly-once rests on the one
//! claim alone, and a reset racing a fire or a cancel cannot make a task run twice or not at all.
//!
//! 1. **Find and take.** Starting from the lane its ticket names (where the entry was first added:
//!    the common case for a timeout re-armed before its first cascade), under that lane's lock and
//!    the slot's, check the generation and the status ([`EntryState::retarget`]): if the entry is
//!    in that lane, it leaves it (location cleared, new deadline written) and the resetter holds it,
//!    as a visit holds an entry it cascades. If it is in another lane, look there (it may have moved
//!    again meanwhile: the loop ends when it is found, gone or in transit). If a visit holds it in
//!    transit to a re-add, write the new deadline and stop: that re-add places it by the deadline
//!    in the slot. If a visit took it out to fire it (the due mark), or it is no longer the
//!    ticket's pending entry, change nothing: `false`.
//! 2. **Re-add** (when the resetter holds it): through the wheel, relative to the current tick of
//!    the clock, as a schedule adds ([`TimingWheel::readd`]): an already-passed deadline goes to
//!    the level-0 bucket of its tick, which the next advance fires; the bucket is queued if its
//!    expiration went down, and queueing an earlier head wakes a sleeping driver
//!    (`DelayQueue::offer`): a reset to an earlier deadline is served in time. The insert reads
//!    the shutdown flag under its lane lock, as a schedule's does: a reset racing shutdown either
//!    inserts before the drain reaches that bucket (the drain then finds it) or sees the flag and
//!    abandons the entry itself (`false`). A cancel while the resetter held it found it in
//!    transit and left it to the resetter, whose re-add reports it not pending; the resetter
//!    releases the slot (`true`: the reset came first, the cancel after it).
//!
//! Cost: one lane lock and one slot lock as a cancel, plus the re-add of a schedule (a lane lock,
//! a slot lock, the queue lock only when the bucket's expiration changes), and no allocation.

use super::fire::abandon_take;
use super::{HandleStripe, Store};
use crate::deadline::Deadline;
use crate::entry::{self, Retargeted, Task, Ticket};
use crate::wheel::{Inserted, Readded, TimerTaskList};

#[cfg(doc)]
use crate::{entry::EntryState, wheel::TimingWheel};

/// Moves the pending entry `ticket` names to `deadline` (see the module docs): `true` iff it was
/// pending and is now due at `deadline`. A task abandoned because the timer shut down during the
/// reset comes back for the caller to drop once it holds no lock of its own (its drop may run any
/// code: a repeating task's takes its repetition's lock).
pub(crate) fn reset(ticket: Ticket, stripe: &HandleStripe, deadline: Deadline) -> (bool, Option<Task>) {
    let Store { arena, wheel, queue, shut_down, time } = stripe.context();
    let mut lane = ticket.bucket;
    loop {
        // The ticket's bucket exists (its entry was added to it), and so does every bucket a
        // location names; levels are never torn down (`TimingWheel::bucket_by_key`).
        let bucket =
            wheel.bucket_by_key(lane.bucket()).expect("a ticket or location names an existing bucket");
        match TimerTaskList::retarget(bucket, arena, ticket, lane.lane(), deadline) {
            Retargeted::Here(_) => break,
            Retargeted::Elsewhere(other) => lane = other,
            Retargeted::Rewritten => {
                stripe.rearmed();
                return (true, None);
            }
            Retargeted::Gone => return (false, None),
        }
    }
    // Held by this call: re-added as a schedule adds, or abandoned if the timer is shutting down.
    let base = time.ticks.floor(time.clock.now_nanos());
    match wheel.readd(arena, (ticket.id, deadline), base, Some(shut_down)) {
        Readded::Inserted(Inserted::Queue(expiration, bucket)) => queue.offer(expiration, bucket),
        Readded::Inserted(Inserted::Done) => {}
        // Cancelled while held: the cancel left the slot to this call (`entry/`). Seeded fault
        // `reset_leaks_cancelled` (docs/loom.md): the holder forgets to release it.
        Readded::NotPending if fault!("reset_leaks_cancelled") => {}
        Readded::NotPending => entry::discard(arena, ticket.id),
        Readded::ShutDown => return (false, abandon_take(arena, ticket.id, stripe).map(|(task, _)| task)),
    }
    stripe.rearmed();
    (true, None)
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

    /// A reset that must not hand back a closure (the timer is not shutting down).
    fn moved(ticket: Ticket, stripe: &HandleStripe, to: Deadline) -> bool {
        let (moved, task) = reset(ticket, stripe, to);
        assert!(task.is_none());
        moved
    }

    fn level_of(store: &Store, ticket: Ticket) -> Option<(usize, u64)> {
        crate::timer::position::of(store, ticket).map(|p| (p.level, p.deadline_tick))
    }

    #[test]
    fn a_reset_takes_the_entry_from_the_bucket_it_cascaded_to_and_queues_the_new_one() {
        let (arena, wheel, counters) = parts();
        let stripe = counters.local();
        let ticket = new_entry(&arena, 50, || {}).unwrap();
        let held = (ticket.id, Deadline::at_tick(50));
        assert!(matches!(wheel.readd(&arena, held, 0, None), Readded::Inserted(Inserted::Queue(48, _))));
        assert_eq!(level_of(stripe.context(), ticket), Some((2, 50)));
        // Not in the bucket its ticket names: found where its location says.
        assert!(moved(ticket, stripe, Deadline::at_tick(5)));
        assert_eq!(level_of(stripe.context(), ticket), Some((1, 5)));
        assert_eq!(stripe.context().queue.head(), Some(4), "the level-1 bucket of tick 5 is queued");
        assert_eq!(counters.snapshot().rearmed, 1);
    }

    #[test]
    fn a_reset_in_transit_is_honoured_by_the_re_add_and_a_due_entry_is_left_alone() {
        let (arena, wheel, counters) = parts();
        let stripe = counters.local();
        let ticket = new_entry(&arena, 50, || {}).unwrap();
        let Readded::Inserted(Inserted::Queue(48, bucket)) =
            wheel.readd(&arena, (ticket.id, Deadline::at_tick(50)), 0, None)
        else {
            panic!("not queued at 48");
        };
        // The visit at 48 takes it into transit to cascade (due at 50).
        let (mut cascade, mut due) = (Vec::new(), Vec::new());
        let visit = bucket.visit_into(&arena, 48, Handoff { cascade: &mut cascade, due: &mut due });
        assert_eq!((visit, cascade.len(), due.len()), (Popped::Visited { requeue: None }, 1, 0));
        // A reset now writes the deadline; the driver's re-add, placing by the old one, is told.
        assert!(moved(ticket, stripe, Deadline::at_tick(60)));
        assert_eq!(level_of(stripe.context(), ticket), None, "in transit");
        let Readded::Inserted(Inserted::Queue(60, bucket)) = wheel.readd(&arena, cascade[0], 48, None) else {
            panic!("not placed by the new deadline");
        };
        assert_eq!(level_of(stripe.context(), ticket), Some((1, 60)));
        // Taken out to fire at 60: due, so a reset changes nothing.
        let visit = bucket.visit_into(&arena, 60, Handoff { cascade: &mut cascade, due: &mut due });
        assert_eq!((visit, due.len()), (Popped::Visited { requeue: None }, 1));
        assert!(!moved(ticket, stripe, Deadline::at_tick(99)));
        assert_eq!(crate::entry::deadline(&arena, ticket), Some(Deadline::at_tick(60)));
        assert_eq!(counters.snapshot().rearmed, 1);
    }

    #[test]
    fn a_reset_racing_shutdown_abandons_the_entry_it_holds() {
        let (arena, wheel, counters) = parts();
        let stripe = counters.local();
        let ticket = new_entry(&arena, 50, || {}).unwrap();
        assert!(matches!(
            wheel.readd(&arena, (ticket.id, Deadline::at_tick(50)), 0, None),
            Readded::Inserted(_)
        ));
        stripe.context().shut_down.store(true, crate::sync::Ordering::SeqCst);
        let (moved, task) = reset(ticket, stripe, Deadline::at_tick(3));
        assert!(!moved && task.is_some(), "the closure comes back to be dropped");
        assert_eq!(crate::entry::status(&arena, ticket), Some(crate::entry::Status::Abandoned));
    }
}
