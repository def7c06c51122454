//! The core's shutdown: each shard closed and drained under its lock ([`Core::close`]), a drain
//! that leaves the shards open ([`Core::drain_all`]), and the give-back of the headers when the
//! core is dropped.
//!
//! **Closed, then never stranded.** [`Core::close`] takes the shards in index order, never two
//! locks at once; under each shard's lock, in one critical section, it sets the shard's closed
//! flag (`state.rs`; never cleared) and drains the shard: every entry taken out, held ones too,
//! counted out and in `abandoned`. A schedule reads the flag in its insert's critical section
//! (`State::insert`) and is refused with [`Refusal::Closed`](super::Refusal::Closed) if it is set, its payload handed back
//! after the unlock. The shard's lock orders the two: a schedule whose critical section comes
//! first linked its entry before the drain, which takes it; one that comes after finds the flag
//! and links nothing. So a schedule racing the close is either drained by it or refused, never
//! left in a closed shard; once the close and every schedule racing it returned, `len()` is 0 and
//! stays 0, the offers left in the queue are stale, and handles and claims find nothing. A
//! reset and a set-aside move entries already in, and a cancel and a claim take them out: none
//! links one in. A schedule that read the flag in a critical section of its own, before the
//! insert's, could link its entry after a close between the two had drained the shard, an entry
//! that nothing takes until the core is dropped: the seeded fault
//! `shard_core_closed_read_outside_lock`, which the loom model
//! `shard_core::a_schedule_racing_the_close_is_drained_or_refused` catches.

use super::{Core, Extra, Fired, Merge};

impl<P: Send + 'static, X: Extra<P>> Core<P, X> {
    /// The shutdown (module docs): each shard closed and drained in one critical section, its
    /// entries appended to `out` and sorted by [`Fired::order`]; from then on every schedule is
    /// refused with [`Refusal::Closed`](super::Refusal::Closed). The caller drops or returns the payloads.
    pub fn close(&self, out: &mut Vec<Fired<P>>, merge: &mut Merge) {
        self.close_with(out, merge, |_| {});
    }

    /// [`close`](Core::close), running `f` on each shard's extra under its lock, after its drain
    /// and its count, on every shard whether or not it drained anything. Should `f` panic, the
    /// shards up to its own are closed, drained and counted, the lock is released, the payloads
    /// drained are left in `out` (unsorted) and the shards after it stay open.
    pub fn close_with(&self, out: &mut Vec<Fired<P>>, merge: &mut Merge, f: impl FnMut(&mut X)) {
        self.drain((true, false), out, merge, f);
    }

    /// [`close_with`](Core::close_with), leaving the entries held by a batch in their shards for
    /// their claims (a timer's executor threads, joined after this, run what they were handed):
    /// a claim on a closed shard still takes its entry. A later close drains what the claims
    /// left.
    pub fn close_keeping_held(&self, out: &mut Vec<Fired<P>>, merge: &mut Merge, f: impl FnMut(&mut X)) {
        self.drain((true, true), out, merge, f);
    }

    /// Every pending entry taken out, held ones too (each shard under its lock, counted out and in
    /// `abandoned`), appended to `out` and sorted by [`Fired::order`]; every handle and every
    /// claim of a batch under way finds nothing afterwards, and the offers left in the queue are
    /// stale. The shards stay open (a [`close`](Core::close) closes them). The caller drops or
    /// returns the payloads.
    pub fn drain_all(&self, out: &mut Vec<Fired<P>>, merge: &mut Merge) {
        self.drain((false, false), out, merge, |_| {});
    }

    /// Drains each shard under its lock in turn (but the held entries, if `keep_held`), first
    /// closing it if `close`, then running `f` on its extra.
    fn drain(
        &self,
        (close, keep_held): (bool, bool),
        out: &mut Vec<Fired<P>>,
        merge: &mut Merge,
        mut f: impl FnMut(&mut X),
    ) {
        let start = out.len();
        for shard in self.shards.iter() {
            let mut guard = shard.lock();
            let state = guard.state();
            state.closed |= close;
            let drained = state.drain(out, keep_held);
            if drained > 0 {
                guard.count_out(drained);
            }
            f(&mut guard.state().extra);
        }
        merge.sort_fired(&mut out[start..]);
    }
}

impl<P: Send + 'static, X: Extra<P>> Drop for Core<P, X> {
    /// Gives every header back, the last first; each state's payloads are dropped after its
    /// header is unlocked and back in the pool. Should one panic, the rest are still given back.
    fn drop(&mut self) {
        let shards = std::mem::take(&mut self.shards).into_vec();
        shards.into_iter().rev().for_each(drop);
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
mod tests;
