//! What a handle does through the core, from any thread: cancel, reset, and read the deadline
//! and the status of its entry, each under the entry's shard's lock (module docs of `core.rs`),
//! with the `_with` calls that run the caller's closure on the shard's extra there.

use super::{Core, Extra, Handle, Key, OfferOnDrop, Offers};
use crate::deadline::Deadline;
use crate::shard::faults;
use crate::shard::life::Status;

impl<P: Send + 'static, X: Extra> Core<P, X> {
    /// The index of the shard `handle` names: the index the handle carries, if this core's
    /// header is there (from any thread, no search); `None` if the handle is another core's,
    /// whatever index it carries. Every call through a handle but [`cancel`](Core::cancel) asks
    /// it first, so that a closure never runs on another core's extra.
    #[inline]
    pub(super) fn index_of(&self, handle: &Handle<P, X>) -> Option<usize> {
        let index = handle.index();
        let shard = self.shards.get(index)?;
        std::ptr::eq(shard.header, handle.header).then_some(index)
    }

    /// Takes `handle`'s entry out if it is pending, counted out: its payload, for the caller to
    /// drop or return (after the unlock). `None` if it fired, was cancelled or drained. The
    /// handle is not checked against this core (module docs of `core.rs`, "Shards"): another
    /// core's entry is taken from its own shard, counted out there.
    #[inline]
    pub fn cancel(&self, handle: &Handle<P, X>) -> Option<P> {
        handle.cancel()
    }

    /// [`cancel`](Core::cancel), running `f` on the shard's extra under its lock once the entry
    /// is out and counted out (not if nothing was taken, nor for another core's handle, which
    /// takes nothing); the payload is handed back after the unlock. Should `f` panic, the entry
    /// stays taken, counted out and `Cancelled`, and its payload is dropped after the unlock.
    #[inline]
    pub fn cancel_with(&self, handle: &Handle<P, X>, f: impl FnOnce(&mut X)) -> Option<P> {
        self.index_of(handle)?;
        handle.cancel_with(|state| f(&mut state.extra))
    }

    /// Moves `handle`'s pending entry to `deadline` in place, keeping its stamp, and offers its
    /// new bucket if the move set the bucket's round: `true` if it moved, `false` if the entry is
    /// not pending, is held by a batch (being fired), or the handle is another core's (found
    /// before anything moves, so that an entry never moves unoffered).
    #[inline]
    pub fn reset(&self, handle: &Handle<P, X>, deadline: Deadline) -> bool {
        self.reset_with(handle, deadline, |_| {})
    }

    /// [`reset`](Core::reset), running `f` on the shard's extra under its lock once the entry
    /// moved and the move is counted (not if it did not). Should `f` panic, the entry stays
    /// moved and counted, the lock is released and its new bucket offered (it fires when due).
    #[inline]
    pub fn reset_with(&self, handle: &Handle<P, X>, deadline: Deadline, f: impl FnOnce(&mut X)) -> bool {
        let Some(index) = self.index_of(handle) else { return false };
        if fault!("shard_core_reset_offers_before_link") {
            self.offer(index, faults::offers_before_link(&self.shards[index], deadline));
            let Some(mut shard) = handle.lock() else { return false };
            let (slot, generation) = handle.entry();
            return shard.state().reset(Key { slot, generation }, deadline).is_some();
        }
        // Declared before the lock's guard: it offers after the unlock, `f`'s panic included.
        let mut offer = OfferOnDrop { core: self, index, offers: Offers::default() };
        let Some(mut shard) = handle.lock() else { return false };
        let (slot, generation) = handle.entry();
        let state = shard.state();
        let Some(offers) = state.reset(Key { slot, generation }, deadline) else {
            return false;
        };
        offer.offers = offers;
        f(&mut state.extra);
        drop(shard);
        drop(offer);
        true
    }

    /// The deadline of `handle`'s entry, `None` if it is not pending (a held entry is pending
    /// until claimed) or the handle is another core's.
    pub fn deadline(&self, handle: &Handle<P, X>) -> Option<Deadline> {
        self.deadline_with(handle, |deadline, _| deadline)
    }

    /// Where `handle`'s entry is in its life (module docs, "Status"), read under its shard's
    /// lock: `Pending` until a claim, a cancel or a drain takes it, then `Fired`, `Cancelled` or
    /// `Abandoned` until its slot is reused; `None` then, once the core is dropped, and for
    /// another core's handle.
    pub fn status(&self, handle: &Handle<P, X>) -> Option<Status> {
        self.index_of(handle)?;
        let (slot, generation) = handle.entry();
        handle.lock()?.state().wheel.status(Key { slot, generation })
    }
}
