//! The advance a drive future's sleep waker makes (`Shared::try_advance_wakes`,
//! `driver/drive.rs`): it fires only the tasks that run no user code, sets the due closures aside
//! for the drive future's poll, and carries to the next advance the limit of a take beside a
//! passed deadline, so that the closures taken there fire at once too.
//!
//! ## Closures set aside
//!
//! A due closure of that advance is set aside (`entry/kind.rs`: no longer marked due, so a reset
//! moves it and a cancel claims it as one in a bucket) and re-added once the round is over by its
//! deadline, relative to the cursor, as an entry stamped after the advance began is. One of a tick
//! the cursor has reached lands in a due bucket, queued for the next round: the next advance (the
//! drive future's poll, which the waker wakes) fires it in that bucket's batch.
//!
//! ## The limit carried
//!
//! The closures a batch took beside a deadline passed mid-tick (`advance.rs`, "Passed deadlines
//! mid-tick") are of the tick after the cursor's, `f + 1`: re-added, they wait in its bucket, not
//! due until that tick ends. So the advance keeps the latest of their deadlines, the **limit**, in
//! its scratch (under `advance_lock`; the later of two if one is kept already, since the cursor
//! never goes back), and once its round is over queues the level-0 bucket of that batch at the
//! cursor, so that the head of the delay queue is due: the drive future's watch finds it due and
//! advances (as would a driver thread, or `advance_clock`). That queue entry does nothing when
//! popped (the bucket is stale there, or due by entries re-added to it, which fire anyway). The
//! next advance that fires everything takes, after its round, by the limit as the batch took
//! (`TimingWheel::take_due_by`, entries stamped by its round), and fires what it takes as one batch
//! sorted by the instants, equal ones by stamp: in deadline, then scheduling order. The limit goes
//! with that advance (after a shutdown no advance runs, and the drain claims the closures).
//!
//! Between the two advances:
//!
//! * **The limit** is read and written under `advance_lock` alone. The queue entry is not: any
//!   advance pops it, also a second waker's advance (another drive future's, or a runtime waking
//!   the waker of an older sleep), which fires no closure. So every waker advance that ends with
//!   a limit kept queues the entry again; one that queued it only when it kept a new limit would
//!   leave the head not due, and the closures to their tick's end (loom model
//!   `drive::closures_taken_beside_a_passed_deadline_racing_a_cancel`, seeded fault
//!   `drive_limit_queued_once`; `drive_waker_drops_limit` keeps no limit).
//! * **The closures** are pending in their bucket as any entry, not due: a cancel claims one and
//!   takes it out, a reset moves it (its new deadline, past the limit, keeps it from the take); the
//!   take reads each deadline under the slot lock and marks what it takes due, so a reset after it
//!   returns `false` and a cancel races the fire's claim, as for any batch (loom models
//!   `passed_mid_tick::*` and `drive::closures_taken_beside_a_passed_deadline_racing_*`).
//! * **Order**: every batch of the advance fires before the take. Those of earlier ticks hold
//!   earlier deadlines; one holding a deadline passed mid-tick takes the closures due by its own
//!   limit, in order among its entries; and if the cursor reached `f + 1`, that tick's visit fired
//!   them in its batch. So the take finds only closures due before any later deadline fires.
//!
//! The take costs that advance a look into the lists of tick `f + 1` (a comparison a stage whose
//! entries all lie past the limit: `wheel/bucket/due_by.rs`; else a scan of the list, or a pop of
//! its index by deadline per entry due once it has one: `wheel/slots/due_by.rs`); an advance
//! without a limit kept pays one look at the scratch.

use super::advance::{Fires, Late};
use super::{fire, Shared, Store};
use crate::deadline::Deadline;
use crate::entry::{self, Freed};
use crate::sync::{Arc, Ordering};
use crate::wheel::TimerTaskList;

/// The limit a waker advance carries to the next advance (module docs), with the bucket it queues
/// at the cursor.
pub(super) struct Carried {
    limit: Deadline,
    from: Arc<TimerTaskList>,
}

impl Carried {
    pub(super) fn limit(&self) -> Deadline {
        self.limit
    }
}

impl Shared {
    /// Moves the entries of `due` whose tasks run user code (`entry/kind.rs`, which unmarks them
    /// due) to `set_aside` (the others through `kept`, swapped with `due`), with `from`, the
    /// level-0 bucket visited with the cursor at `cursor`: they are re-added after the round by
    /// their deadlines and fired by the next advance (module docs). Those of a tick after the
    /// cursor's, taken beside a deadline passed mid-tick, leave the latest of their deadlines in
    /// `carried` as the limit (the later one if there is one). The slots are prefetched a few
    /// entries ahead, as the fire loop does (`fire::each_prefetched`). Seeded fault
    /// `drive_waker_runs_closures` (docs/loom.md): nothing is set aside.
    pub(super) fn set_aside_user_code(
        &self,
        (due, kept): (&mut Vec<fire::Stamped>, &mut Vec<fire::Stamped>),
        (from, cursor): (&Arc<TimerTaskList>, u64),
        set_aside: &mut Vec<Late>,
        carried: &mut Option<Carried>,
    ) {
        if fault!("drive_waker_runs_closures") {
            return;
        }
        let arena = &self.store.arena;
        let mut limit = None;
        kept.clear();
        fire::each_prefetched(
            arena,
            due,
            entry::arena::prefetch_ahead(due.len()),
            |&entry @ ((id, ..), deadline)| {
                if entry::kind::set_aside_if_user_code(arena, id) {
                    set_aside.push(((id, deadline), Arc::clone(from)));
                    if deadline.tick() > cursor {
                        limit = limit.max(Some(deadline));
                    }
                } else {
                    kept.push(entry);
                }
            },
        );
        std::mem::swap(due, kept);
        // Seeded fault `drive_waker_drops_limit`: the closures wait for their tick's end.
        if let Some(limit) = limit.filter(|_| !fault!("drive_waker_drops_limit")) {
            let limit = carried.as_ref().map_or(limit, |kept| kept.limit.max(limit));
            *carried = Some(Carried { limit, from: Arc::clone(from) });
        }
    }

    /// After the round of an advance that fires `fires`, the limit `carried` (module docs): a
    /// waker's advance (`fresh`: whether it kept a new one) queues its bucket at the cursor; one
    /// that fires everything takes by it and fires what it takes, through `batch` (`due`, `spare`,
    /// `freed` of the scratch), and drops it. Whether it fired anything.
    pub(super) fn end_carried(
        &self,
        (fires, fresh): (Fires, bool),
        carried: &mut Option<Carried>,
        (due, spare, freed): (&mut Vec<fire::Stamped>, &mut Vec<fire::Stamped>, &mut Freed),
        stamps: u64,
    ) -> bool {
        if fires == Fires::Wakes {
            // Seeded fault `drive_limit_queued_once`: only the advance that kept the limit queues.
            if let Some(kept) = carried.as_ref().filter(|_| fresh || !fault!("drive_limit_queued_once")) {
                self.queue.offer_next(self.current_tick.load(Ordering::Relaxed), Arc::clone(&kept.from));
            }
            return false;
        }
        let Some(Carried { limit, .. }) = carried.take() else {
            return false;
        };
        if self.is_shut_down() {
            return false;
        }
        let Store { arena, wheel, .. } = &self.store;
        wheel.take_due_by(arena, (limit, stamps), due);
        if due.is_empty() {
            return false;
        }
        self.sort_batch(due, spare, stamps);
        self.fire(due, freed);
        true
    }
}
