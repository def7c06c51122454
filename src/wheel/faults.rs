//! Seeded faults of this room, for the loom suite only (docs/loom.md): the alternative bodies that
//! a `fault!("name")` site switches to. Outside a fault build every site folds to the correct
//! code, and these only have to compile.
//!
//! * `expiration_never_lowered` ([`never_lowered`]): only an empty bucket's expiration is set, so
//!   an earlier round added by a scheduler with a stale view of time waits for the later one.
//! * `lowering_not_atomic` ([`lower_by_store`]): a store, as when one bucket lock serialised the
//!   adds: two lanes' adds both see it higher, both store and both queue the bucket, and the later
//!   store may raise it back over the earlier, lower one.
//! * `shutdown_flag_read_before_lock` ([`insert_reading_the_flag_first`]): the drain can flush the
//!   bucket between the read and the insert.
//! * `chunk_not_requeued` (`bucket/`): the rest of a chunked stage is not re-queued, so it waits
//!   for a later add to lower the expiration, or forever.
//! * `level0_rest_not_requeued` (`bucket/`): a level-0 visit that takes one quarter of its tick
//!   leaves the quarters still in the bucket out of the next expiration, so they wait for a later
//!   add to queue the bucket, or forever.
//! * `lane_created_outside_gate` (`bucket/lanes.rs`): a lane is created without the gate, so a
//!   visit that found it missing sets the expiration after an add to it read it.
//! * `flush_resets_after_unlock` (`bucket/`): the visit's reset leaves the critical section, so an
//!   add in between sees the old expiration, does not queue the bucket, and is stranded.
//! * `drain_skips_uncreated_levels` ([`close_skips`]): the drain looks at the chunks of buckets that
//!   exist and closes none, so a chunk (a level) created meanwhile holds entries the drain never
//!   sees.
//! * `drain_skips_uncreated_chunks` ([`close_skips`]): the drain closes the first chunk of each
//!   level only, as if a level were created whole, so a later chunk of a level in use, created
//!   meanwhile, holds entries the drain never sees.
//! * `due_by_unmarked` (`slots/due_by.rs`): the entries taken out beside a deadline passed mid-tick are
//!   not marked due, so a reset racing the take moves one (`true`) that fires at once all the same.
//! * `due_by_trusts_index` (`slots/due_by.rs`): an entry a later take pops from the list's index is
//!   taken by its key, so one a reset moved later in place fires before its new deadline.

use super::bucket::{TimerTaskList, NO_EXPIRATION};
use super::place::StagePlan;
use super::ShutDown;
use crate::entry::{EntryArena, EntryId, Fresh};
use crate::sync::{AtomicBool, AtomicU64, Ordering};

/// `expiration_never_lowered`: whether to keep `current` although the add's tick is lower (`false`
/// unless the fault is on).
#[inline(always)]
pub(super) fn never_lowered(current: u64) -> bool {
    fault!("expiration_never_lowered") && current != NO_EXPIRATION
}

/// `lowering_not_atomic`: lowers `expiration` to `tick` with a store.
pub(super) fn lower_by_store(expiration: &AtomicU64, tick: u64) {
    expiration.store(tick, Ordering::Release);
}

/// `shutdown_flag_read_before_lock`: `TimerTaskList::insert_new` with the flag read before the
/// lane lock, and not under it.
pub(super) fn insert_reading_the_flag_first(
    bucket: &TimerTaskList,
    arena: &EntryArena,
    (entry, fresh): (EntryId, &mut Fresh),
    plan: StagePlan,
    shut_down: &AtomicBool,
    queue: impl FnOnce(u64),
) -> Result<Option<u64>, ShutDown> {
    if shut_down.load(Ordering::Acquire) {
        return Err(ShutDown);
    }
    let added = bucket.add_with(
        arena,
        entry,
        plan,
        || false,
        |state, lane| {
            state.occupy(fresh, lane);
            true
        },
        queue,
    );
    added.ok_or(ShutDown)
}

/// `drain_skips_uncreated_levels`, `drain_skips_uncreated_chunks`: whether the shutdown's close
/// only looks at chunk cell `cell` (of `per_level` per level) instead of closing it if missing
/// (`false` unless a fault is on).
#[inline(always)]
pub(super) fn close_skips(cell: usize, per_level: usize) -> bool {
    if fault!("drain_skips_uncreated_chunks") {
        return cell % per_level != 0;
    }
    fault!("drain_skips_uncreated_levels")
}
