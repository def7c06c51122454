//! The two moves of held entries besides a flush's: taking the entries of the tick after a
//! deadline passed mid-tick into the batch ahead of their tick ([`Wheel::take_due_by`]), and
//! putting a held entry back, pending ([`Wheel::set_aside`]). The module docs of `wheel/`,
//! "Passed deadlines mid-tick" and "Set aside". Beside them, the earliest tick of the passed
//! deadlines waiting on the overdue list ([`Wheel::overdue_earliest`]), whose offer is at the time.

use super::super::life::ListCode;
use super::super::slab::NIL;
use super::{Due, Key, Offers, Wheel};
use crate::deadline::Deadline;

impl<P> Wheel<P> {
    /// Holds, as a flush holds its due entries (module docs, "Held"), every entry of `limit`'s
    /// tick whose deadline word is at or before `limit` and whose stamp is at most `stamps`,
    /// appended to `out` level by level (each held before it is pushed) (module docs, "Passed
    /// deadlines mid-tick"). `limit` is a word of the tick `f + 1` after a deadline passed within
    /// `f` (`Deadline::in_own_tick`). At level 0 the list of that tick, its run walked up to
    /// `limit` and its tail whole (`sorted_run.rs`); above it, at each level created, the bucket
    /// whose range holds that tick, scanned, each entry's tick and word compared. Their
    /// expirations stay (a flush of one left empty finds nothing). Entries of that tick on the
    /// overdue list are due already and left to its drain. In a split bucket only the stage
    /// holding the tick is scanned (`split.rs`), which its visits empty before its `due`; an
    /// unsplit bucket holds fewer entries than the split size.
    pub(crate) fn take_due_by(&mut self, limit: Deadline, stamps: u64, out: &mut Vec<Due>) {
        let tick = limit.tick();
        self.take_level0_due_by(limit, stamps, out);
        for level in 1..self.levels.created() {
            let mut at = self.head_holding(level, self.levels.slot_of(level, tick), tick);
            while at != NIL {
                self.count_walked();
                let entry = self.slab.slot(at);
                let next = entry.next;
                let when = entry.entry.as_ref().expect("a linked slot is occupied").when;
                if when.tick() == tick && when <= limit && entry.life.stamp() <= stamps {
                    self.take_one(at, out);
                }
                at = next;
            }
        }
    }

    /// The earliest deadline tick on the overdue list, `None` if it is empty: its offer is at the
    /// wheel's time, which may be after it (a deadline passed when it was set). Read from the
    /// list's mark (`lists.rs`, "Kept"), O(1): never after the earliest entry's tick, earlier if
    /// a cancel or a reset took that entry out since the list's last drain.
    pub(crate) fn overdue_earliest(&self) -> Option<u64> {
        (!self.overdue.is_empty()).then_some(self.kept.earliest)
    }

    /// Puts the held entry `key` names back, pending, filed by its deadline from the wheel's
    /// time as an insert files (module docs, "Set aside"): on the overdue list if its tick is not
    /// after the time, else in its bucket. `Some(offers)`, as an insert's, if it went back;
    /// `None` if the key is stale (a remove or a drain took the entry since it was held).
    pub(crate) fn set_aside(&mut self, key: Key) -> Option<Offers> {
        let held = self.slab.get(key.slot, key.generation)?.life.list() == ListCode::HELD;
        debug_assert!(held, "a set-aside of {key:?}, pending and not held");
        if !held {
            return None;
        }
        let tick = self.slab.entry(key.slot).when.tick();
        Some(self.file(key.slot, tick))
    }
}
