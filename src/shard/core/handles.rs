//! What a handle does, from any thread: cancel, reset, and read the deadline and the status of
//! its entry, each under the entry's shard's lock (module docs of `core.rs`), with the `_with`
//! calls that run the caller's closure on the shard's extra there.
//!
//! **A handle alone.** Each works on the handle by itself ([`Handle::reset`], [`Handle::status`],
//! [`Handle::deadline`], and the pool's `cancel`), so that a caller that keeps only handles (a
//! timer's handle, 32 bytes, no reference to its timer) needs no `Core`: the handle reaches its
//! shard through its header (`pool.rs`, "A handle"), and a reset's offer reaches the core's
//! queue through the shard's state, which holds it in an `Arc` (`State::queue`). The reset
//! clones that `Arc` under the lock only when it has something to offer (its move set a round),
//! and offers after the unlock as every move does ("The queue of buckets"): the clone keeps the
//! queue alive should the core be dropped between the unlock and the offer, which then goes to a
//! queue nobody polls and is dropped with it. A handle whose core is gone finds its header's
//! epoch moved and nothing else. The core's calls ([`Core::reset`], ...) add one check, that the
//! handle is this core's ([`Core::index_of`]), and are otherwise the handle's.

use super::{Bucketed, Core, Extra, Handle, Key, OfferOnDrop, Offers};
use crate::deadline::Deadline;
use crate::delay_queue::DelayQueue;
use crate::shard::faults;
use crate::shard::life::Status;
use crate::sync::Arc;

impl<P: Send + 'static, X: Extra<P>> Handle<P, X> {
    /// Moves this handle's pending entry to `deadline` in place, keeping its stamp, and offers its
    /// new bucket if the move set the bucket's round (module docs, "A handle alone"): `true` if it
    /// moved, `false` if the entry is not pending, is held by a batch (being fired), or its core
    /// is gone.
    #[inline]
    pub fn reset(&self, deadline: Deadline) -> bool {
        self.reset_with(deadline, |_| {})
    }

    /// [`reset`](Handle::reset), running `f` on the shard's extra under its lock once the entry
    /// moved and the move is counted (not if it did not). Should `f` panic, the entry stays moved
    /// and counted, the lock is released and its new bucket offered (it fires when due).
    #[inline]
    pub fn reset_with(&self, deadline: Deadline, f: impl FnOnce(&mut X)) -> bool {
        self.reset_in(|_| Some((deadline, ())), |state, _, ()| f(&mut state.extra))
    }

    /// [`reset_with`](Handle::reset_with), the deadline read from the shard's extra in the move's
    /// own critical section (a timer keeps its clock and tick there): `to` gives the deadline and
    /// what `f` runs with once the entry moved, or `None` to move nothing (then `false`). One lock
    /// hold reads and moves.
    #[inline]
    pub fn reset_by<T>(
        &self,
        to: impl FnOnce(&X) -> Option<(Deadline, T)>,
        f: impl FnOnce(&mut X, T),
    ) -> bool {
        self.reset_in(to, |state, _, made| f(&mut state.extra, made))
    }

    /// [`reset_with`](Handle::reset_with), `f` given the entry's payload too, to rewrite in place
    /// (a value's exact deadline) in the move's critical section.
    #[inline]
    pub fn reset_with_payload(&self, deadline: Deadline, f: impl FnOnce(&mut P, &mut X)) -> bool {
        self.reset_in(
            |_| Some((deadline, ())),
            |state, key, ()| {
                let payload = state.wheel.payload_mut(key).expect("the entry moved: it is pending");
                f(payload, &mut state.extra);
            },
        )
    }

    /// Runs `f` on the deadline and the payload of this handle's pending entry (held ones too)
    /// and its shard's extra, in one critical section: what `f` returns, or `None` if the entry
    /// is not pending or its core is gone.
    pub fn with_entry<R>(&self, f: impl FnOnce(Deadline, &mut P, &mut X) -> R) -> Option<R> {
        let (slot, generation) = self.entry();
        let key = Key { slot, generation };
        let mut shard = self.lock()?;
        let state = shard.state();
        let deadline = state.wheel.deadline(key)?;
        let payload = state.wheel.payload_mut(key)?;
        Some(f(deadline, payload, &mut state.extra))
    }

    /// Where this handle's pending entry is filed, with its deadline: ((level, slot, its
    /// bucket's expiration), deadline), `None` if it is not pending, held by a batch, or its core
    /// is gone. An overdue entry reads as level 0's slot of its tick, expiring at the wheel's time
    /// (`Wheel::position`). A diagnostic.
    pub fn position(&self) -> Option<((usize, usize, u64), Deadline)> {
        let (slot, generation) = self.entry();
        let key = Key { slot, generation };
        let mut shard = self.lock()?;
        let wheel = &shard.state().wheel;
        Some((wheel.position(key)?, wheel.deadline(key)?))
    }

    /// The reset: `to` reads the deadline from the extra under the lock, and `f` runs on the state
    /// there once the entry `key` moved.
    #[inline]
    fn reset_in<T>(
        &self,
        to: impl FnOnce(&X) -> Option<(Deadline, T)>,
        f: impl FnOnce(&mut super::State<P, X>, Key, T),
    ) -> bool {
        if fault!("shard_core_reset_offers_before_link") {
            let Some((deadline, _)) = self.lock().and_then(|mut shard| to(&shard.state().extra)) else {
                return false;
            };
            return faults::reset_offering_first(self, deadline);
        }
        // Declared before the lock's guard: it offers after the unlock, `f`'s panic included.
        let mut offer: OfferOnDrop<Arc<DelayQueue<Bucketed>>> =
            OfferOnDrop { queue: None, index: self.index(), offers: Offers::default() };
        let Some(mut shard) = self.lock() else { return false };
        let (slot, generation) = self.entry();
        let key = Key { slot, generation };
        let state = shard.state();
        let Some((deadline, made)) = to(&state.extra) else { return false };
        let Some(offers) = state.reset(key, deadline) else {
            return false;
        };
        if offers != Offers::default() {
            offer.queue.clone_from(&state.queue);
            offer.offers = offers;
        }
        f(state, key, made);
        drop(shard);
        drop(offer);
        true
    }

    /// The deadline of this handle's entry, `None` if it is not pending (a held entry is pending
    /// until claimed) or its core is gone.
    pub fn deadline(&self) -> Option<Deadline> {
        let (slot, generation) = self.entry();
        self.lock()?.state().wheel.deadline(Key { slot, generation })
    }

    /// Where this handle's entry is in its life (`core.rs`'s module docs, "Status"), read under
    /// its shard's lock: `Pending` until a claim, a cancel or a drain takes it, then `Fired`,
    /// `Cancelled` or `Abandoned` until its slot is reused; `None` then, and once its core is
    /// dropped.
    pub fn status(&self) -> Option<Status> {
        let (slot, generation) = self.entry();
        self.lock()?.state().wheel.status(Key { slot, generation })
    }
}

impl<P: Send + 'static, X: Extra<P>> Core<P, X> {
    /// The handle of `due`'s entry (its shard locked to read the header's epoch): the one
    /// [`schedule`](Core::schedule) returned for it, to name the entry to the caller's own callers
    /// (a delay queue's key of a fired value).
    pub fn handle_of(&self, due: &super::Due) -> Handle<P, X> {
        let guard = self.shards[usize::from(due.shard)].lock();
        guard.handle(due.shard, due.entry.key.slot, due.entry.key.generation)
    }

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
        self.index_of(handle).is_some() && handle.reset_with(deadline, f)
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
        handle.status()
    }
}
