//! Cancelling a task from its handle's ticket: the claim under the lock of the bucket lane the
//! entry was first added to, and the way out of the bucket lane it is in (the lock order and the
//! claim are the entry's, `entry/`).

use super::{HandleStripe, Store};
use crate::entry::location::LaneKey;
use crate::entry::{Claimed, InlineTask, Ticket};
use crate::wheel::bucket::Removed;
use crate::wheel::TimerTaskList;

/// Cancels the pending entry `ticket` names in `stripe`'s timer: `true` iff this call did it, and
/// then counted it out on `stripe`. The closure is dropped here, outside the locks and after the
/// entry left its bucket and its slot was returned (so a panic of that drop, which leaves this call,
/// loses nothing).
///
/// The claim is made under the lock of the bucket lane the entry was first added to (the ticket's),
/// then the slot's, in the lock order: when the entry is still there (the common case: most
/// timeouts are cancelled before their first cascade), it leaves the list in the same critical
/// section, one slot lock in all. Otherwise (it cascaded, or a visit holds it) the claim tells where
/// it is, and it leaves that bucket afterwards ([`leave_bucket`]) or its holder releases it.
pub(crate) fn cancel(ticket: Ticket, stripe: &HandleStripe) -> bool {
    if fault!("cancel_check_then_act") {
        return super::faults::cancel_check_then_act(ticket, stripe);
    }
    // Last, once the slot and the counters are settled: a closure whose drop panics unwinds out of
    // this call (the caller's own value, dropped on its thread) and leaks nothing.
    cancel_take(ticket, stripe).map(drop).is_some()
}

/// [`cancel`], handing back the task (closure or value) of the entry it cancelled, for the caller
/// to drop or take the value out of (`values.rs`).
#[inline]
pub(crate) fn cancel_take(ticket: Ticket, stripe: &HandleStripe) -> Option<InlineTask> {
    let Store { arena, wheel, .. } = stripe.context();
    // The key is written by the insert into that bucket (`TimerTaskList::insert_new`), and a chunk
    // of buckets once created is never replaced (`wheel/chunks.rs`): the bucket exists.
    let first = wheel.bucket_by_key(ticket.bucket.bucket());
    let first = first.expect("a ticket names the bucket its entry was added to");
    let (task, claimed) = TimerTaskList::cancel(first, arena, ticket)?;
    // (A tick group's task is no task of `len()`: `InlineTask::is_counted`.)
    if task.is_counted() {
        stripe.cancelled();
    }
    match claimed {
        // Taken out and released under the locks: the slot is ours to return.
        Claimed::Here(_) => arena.free(ticket.id),
        // The bucket lane that held it at the claim: after the claim the entry can only leave it (a
        // visit), never move to another (a re-add refuses it), so this is the one lookup.
        Claimed::Elsewhere(lane) => leave_bucket(stripe.context(), ticket, lane),
        Claimed::InTransit => {}
    }
    Some(task)
}

/// A scan of every slot the arena has handed out: `claim` claims the entry at an index wherever
/// it is held (without releasing it) and names the bucket lane it is in, if any; each claimed
/// entry is taken out of that lane (unless `leave` is false: the seeded faults of the callers)
/// and its task handed to `each`. The shutdown's detached drain and a delay queue's clear.
pub(super) fn claim_each_held<T>(
    store: &Store,
    claim: impl Fn(usize) -> Option<(T, Option<Ticket>)>,
    leave: bool,
    mut each: impl FnMut(T),
) {
    for index in 0..store.arena.high_water() as usize {
        // Pinned until the entry has left its lane: the scan claims it without holding it, so its
        // holder (the bucket, or a drain that flushed it) may release it meanwhile, and a shrink
        // give its page back (`entry/shrink.rs`), while the leave still locks its slot. A cancel
        // is pinned so too (`handle.rs`). Not while `each` drops the task: that is user code.
        // Seeded fault `scan_leaves_unpinned` (docs/loom.md): only the claim is pinned.
        let pin = store.arena.pin();
        let Some((task, in_bucket)) = claim(index) else { continue };
        let pin = (!fault!("scan_leaves_unpinned")).then_some(pin);
        if let Some(ticket) = in_bucket.filter(|_| leave) {
            leave_bucket(store, ticket, ticket.bucket);
        }
        drop(pin);
        each(task);
    }
}

/// Takes a claimed entry (cancelled, or abandoned by the shutdown scan) out of the bucket lane
/// `lane`, if it is still there, and then releases it.
pub(super) fn leave_bucket(Store { arena, wheel, .. }: &Store, ticket: Ticket, lane: LaneKey) {
    let bucket = wheel.bucket_by_key(lane.bucket()).expect("a location names an existing bucket");
    match TimerTaskList::remove(bucket, arena, ticket, lane.lane()) {
        // Released under the locks: the slot is ours to return.
        Removed::Taken => arena.free(ticket.id),
        // In transit (its holder releases it), or already released.
        Removed::Gone => {}
        Removed::Elsewhere => unreachable!("a claimed entry moved to another bucket"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::{new_entry, status, EntryArena, Fire, Freed, Return, Status};
    use crate::timer::counters::Counters;
    use crate::timer::fire::fire_one;
    use crate::wheel::TimingWheel;

    #[test]
    fn a_stale_ticket_does_nothing_to_the_next_occupant() {
        let store = Store::for_test(EntryArena::unaudited(), TimingWheel::new(4));
        // The tickets of held entries name bucket key 0 (`new_entry`), where a cancel looks first.
        assert!(store.wheel.bucket(0, 0).is_some());
        let counters = Counters::new(usize::MAX, &store);
        let stripe = counters.local();
        let arena = &*store.arena;
        let first = new_entry(arena, 5, || {}).unwrap();
        assert_eq!(
            fire_one(arena, (first.id, Return::Now), stripe, &mut Freed::default(), &mut |_| {}, None),
            Fire::Ran
        );
        assert_eq!(status(arena, first), Some(Status::Fired), "kept until reuse");
        // Freed slots wait behind older ones (`entry/arena.rs`): schedule until the slot comes back.
        let mut others = 0;
        let second = loop {
            let entry = new_entry(arena, 6, || {}).unwrap();
            if entry.id == first.id {
                break entry;
            }
            assert_eq!(status(arena, first), Some(Status::Fired), "kept while not reused");
            assert_eq!(
                fire_one(arena, (entry.id, Return::Now), stripe, &mut Freed::default(), &mut |_| {}, None),
                Fire::Ran
            );
            others += 1;
            assert!(others < 1_000, "the freed slot is never reused");
        };
        assert!(others >= crate::entry::arena::BATCH / 2, "reused after {others} other schedules");
        assert!(!cancel(first, stripe), "the old ticket cannot cancel the new task");
        assert_eq!(status(arena, first), None);
        assert_eq!(status(arena, second), Some(Status::Pending));
        assert!(cancel(second, stripe));
        assert_eq!(status(arena, second), Some(Status::Cancelled));
    }
}
