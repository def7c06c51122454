//! Seeded faults of this room, for the loom suite only (docs/loom.md): the alternative bodies that
//! a `fault!("name")` site switches to. Outside a fault build every site folds to the correct
//! code, and these only have to compile.
//!
//! * `cancel_check_then_act` ([`cancel_check_then_act`]): the `Pending` check and the transition in
//!   two critical sections, so a firing in between runs the task and the cancel still returns
//!   `true`.
//! * `fire_decrements_unclaimed` (`fire.rs`): a firing that lost the race still counts the entry
//!   out of `len()`, which its winner already did (netty#14959).
//! * `len_reads_scheduled_first`, `len_relaxed_reads` ([`misread_pending`]): `len()` reads the
//!   "in" stripes before the "out" ones, or the "out" ones `Relaxed` (`sync/striped.rs` shows why
//!   either can read one less than the truth).
//! * `before_origin_word_outside_records` (`before_origin.rs`, at its site: two lines): a reset
//!   writes the word before it takes the records' lock, and only a reset to the origin's word
//!   sets or removes the record.
//! * `drive_waker_runs_closures` (`drive_waker.rs`, at its site): the advance of a drive future's
//!   sleep waker sets no closure aside, so user code runs inside the runtime's timer.
//! * `drive_waker_drops_limit`, `drive_limit_queued_once` (`drive_waker.rs`, at their sites): that
//!   advance keeps no limit for the closures it took beside a deadline passed mid-tick, or queues
//!   the bucket that makes the head due only when it keeps a new one, so a second waker advance
//!   pops it: either way they wait for their tick's end.
//! * `next_wakeup_ignores_advance` (`advance.rs`, `Shared::next_work_tick`): `next_wakeup` reads
//!   the queue's head while another thread's advance holds entries it cascades, and answers past
//!   their tick.
//! * `scan_leaves_unpinned` (`cancel.rs`, at its site): the arena scan of a detached drain or a
//!   delay queue's clear is pinned only for the claim, not while the claimed entry leaves its
//!   lane, so a shrink may free the page of a slot the leave locks.
//! * `stop_shrink_waits` (`shrink.rs`, at its site): the shrink after a shutdown or a drop waits
//!   for the handles looking at its pages without a bound, so a closure's drop that waits for
//!   the thread stopping the timer never returns, nor does the stop.

use super::counters::Counters;
use super::{HandleStripe, Store};
use crate::entry::faults as entry_faults;
use crate::entry::Ticket;
use crate::sync::Ordering;
use crate::wheel::bucket::Removed;
use crate::wheel::TimerTaskList;

/// `cancel_check_then_act`: `cancel.rs`'s cancel with the `Pending` check and the transition in two
/// critical sections.
pub(super) fn cancel_check_then_act(ticket: Ticket, stripe: &HandleStripe) -> bool {
    let Store { arena, wheel, .. } = stripe.context();
    let Some(lane) = entry_faults::check_pending(arena, ticket) else {
        return false;
    };
    let Ok(task) = entry_faults::cancel_unchecked(arena, ticket) else {
        // Fired and released meanwhile: the bug reports a cancel anyway.
        stripe.cancelled();
        return true;
    };
    stripe.cancelled();
    drop(task);
    if let Some((bucket, lane)) = lane.and_then(|lane| Some((wheel.bucket_by_key(lane.bucket())?, lane))) {
        if let Removed::Taken = TimerTaskList::remove(bucket, arena, ticket, lane.lane()) {
            arena.free(ticket.id);
        }
    }
    true
}

/// `len_reads_scheduled_first` and `len_relaxed_reads`: `Counters::pending` in the wrong order, or
/// with the wrong ordering.
pub(super) fn misread_pending<C>(counters: &Counters<C>) -> usize {
    let order = if fault!("len_relaxed_reads") { Ordering::Relaxed } else { Ordering::Acquire };
    let (scheduled, out) = match fault!("len_reads_scheduled_first") {
        true => {
            let scheduled = counters.scheduled();
            (scheduled, counters.out(order))
        }
        false => {
            let out = counters.out(order);
            (counters.scheduled(), out)
        }
    };
    crate::sync::striped::difference(scheduled, out)
}
