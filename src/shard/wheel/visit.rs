//! A visit of a split bucket's stages (`split.rs`; docs/lean_core.md, "A big bucket's cascade"):
//! the queue popped the bucket's visit code at the visit's tick, or its own code at its round.
//!
//! A visit moves the time to its tick (never backwards) and cascades a **chunk** of each open stage
//! (its `opens` at or before the time) that holds entries: sized to finish the stage in half the
//! ticks left before its `due` (`ceil(entries / ((due - time) / 2))`), at least [`MIN_CHUNK`],
//! the whole stage once its `due` is a tick away or passed. Each entry leaves its stage from the
//! head (`Wheel::pop_stage`: the stage is known, so its list is not looked up from its tick, as a
//! cancel's unlink looks it up) and is placed again from the time, as a flush places it: a later
//! deadline to the finer level, whose new rounds are offers for the caller to make within the
//! round (the stage is open, so it fits there); a due one held for the batch if its stamp is
//! within the round's limit, else moved to the overdue list, whose offer for the next round the
//! visit returns (the wheel's docs, "Rounds"). Then it offers the next visit, within the round
//! (`Wheel::offer_visit`: the next tick while an open stage holds entries, else the next stage's
//! `opens`, or the bucket's round, whose own offer is that visit),
//! or, the stages empty, forgets the record and the bucket's round. A visit offer at another tick
//! than the record's next visit is stale and changes nothing, as a flush of another round.
//!
//! So one lock hold walks a visit's chunks, and a split bucket's entries cascade ahead of its
//! round, spread over the ticks from each stage's `opens` to its `due`: on SPEC W4's shape the
//! most walked by one flush or visit is figured in docs/lean_core.md.

use super::{BucketCode, Due, Offer, Wheel};

/// The least a visit cascades of an open stage (all of it if it holds fewer).
pub(super) const MIN_CHUNK: u64 = 256;

impl<P> Wheel<P> {
    /// The queue popped the visit code of `bucket` at `expiration`: the visit, if it is the
    /// record's next (module docs); else nothing.
    #[cold]
    pub(super) fn flush_visit(
        &mut self,
        bucket: BucketCode,
        expiration: u64,
        limit: u64,
        out: &mut Vec<Due>,
        offers: &mut Vec<Offer>,
    ) -> Option<Offer> {
        let (level, slot) = bucket.decode();
        let record = self.levels.get(level, slot).map_or(0, |b| b.split);
        if record == 0 || self.splits[record as usize - 1].next_visit != expiration {
            return None;
        }
        self.visit(level, slot, expiration, limit, (out, offers))
    }

    /// Visits the split bucket `slot` of `level` at `tick` (module docs).
    #[cold]
    pub(super) fn visit(
        &mut self,
        level: usize,
        slot: usize,
        tick: u64,
        limit: u64,
        (out, offers): (&mut Vec<Due>, &mut Vec<Offer>),
    ) -> Option<Offer> {
        self.time = self.time.max(tick);
        let time = self.time;
        let record = self.levels.get(level, slot).expect("a split bucket exists").split as usize - 1;
        let mut next_round = None;
        for stage in 0..self.splits[record].stages.len() {
            let (opens, due) = self.splits[record].plans[stage];
            let entries = u64::from(self.splits[record].stages[stage].len);
            if entries == 0 || opens > time {
                continue;
            }
            let visits = due.saturating_sub(time) / 2;
            let chunk = if visits == 0 { entries } else { entries.div_ceil(visits).max(MIN_CHUNK) };
            for _ in 0..chunk {
                // Room first, before the entry leaves its stage (`flush.rs`).
                out.reserve(1);
                offers.reserve(super::flush::OFFERS_PER_FILE);
                let Some(index) = self.pop_stage(level, slot, (record, stage)) else { break };
                self.count_walked();
                let taken = self.slab.slot(index);
                let deadline = taken.entry.as_ref().expect("a taken slot is occupied").when.tick();
                if deadline > time {
                    offers.extend(self.file(index, deadline).iter());
                } else if taken.life.stamp() <= limit {
                    out.push(self.hold(index));
                } else {
                    next_round = next_round.or(self.link_overdue(index));
                }
            }
        }
        let bucket = self.levels.get(level, slot).expect("a split bucket exists");
        if bucket.list.is_empty() {
            self.forget_split(level, slot);
        } else {
            offers.extend(self.offer_visit(level, slot, time + 1).iter());
        }
        next_round
    }
}
