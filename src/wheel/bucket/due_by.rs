//! Taking out of a bucket the entries due by a deadline that has passed, ahead of their tick's
//! visit: the entries of the tick under way that fire beside a deadline passed within it
//! (`timer/advance.rs`, "Passed deadlines mid-tick").

use super::{DueEntry, TimerTaskList, NO_EXPIRATION};
use crate::deadline::Deadline;
use crate::entry::EntryArena;

impl TimerTaskList {
    /// Takes out of the stages `stages` of every lane the entries whose deadline is at or before
    /// `limit` and whose stamp is at most `stamps`, into `due`, marked due and held by the caller
    /// to fire (`Slots::take_due_by`); the others stay. One lane's lock at a time, as a cancel
    /// takes it: the expiration is left as it is (lower than needed at worst, so a visit comes
    /// and finds less), and an entry added meanwhile in a lane already passed was scheduled
    /// after the passed deadline that asks for this. An empty bucket is not locked.
    pub(crate) fn take_due_by(
        &self,
        arena: &EntryArena,
        (limit, stamps): (Deadline, u64),
        stages: std::ops::RangeInclusive<usize>,
        due: &mut Vec<DueEntry>,
    ) {
        if self.expiration() == NO_EXPIRATION {
            return;
        }
        for lane in self.created() {
            let mut lane = lane.stages.lock();
            // A stage whose entries are all due after `limit` is not scanned (`Stage::floor`): a
            // stream of passed deadlines before them costs a comparison each, not a scan.
            let stages = lane[stages.clone()].iter_mut();
            for stage in stages.filter(|stage| stage.slots.live() > 0 && stage.floor <= limit) {
                stage.floor =
                    stage.slots.take_due_by(arena, (limit, stamps), |entry, (deadline, stamp, lines)| {
                        due.push(((entry, stamp, lines), deadline));
                    });
                stage.reset_if_empty();
            }
        }
    }
}
