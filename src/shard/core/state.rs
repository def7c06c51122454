//! A shard's state under its lock: the wheel, the caller's extra ([`Extra`]), the closed flag
//! (`shutdown.rs`) and the shard's [`Totals`]. Every move of the core's that is counted (an
//! insert, a reset, a claim, a cancel's take, a drain) goes through one of [`State`]'s methods,
//! which keep the totals beside the wheel's move in the same critical section; the core's `_with`
//! calls then hand the caller the extra there. The rest (a flush, `take_due_by`, a set-aside, the
//! reads of a status and a deadline) move no total and call the wheel directly.
//!
//! **The extra.** A type of the caller's (the timer's instants before the clock's origin, by
//! stamp, are one), made with `Default` when a shard's header is taken and dropped with the state
//! when it is given back. The closures the `_with` calls run on it run under the shard's lock,
//! after the entry's move: they see the entry's end and the extra in one critical section. A
//! payload is never run or dropped there (a cancel's, a claim's and a drain's are handed back
//! after the unlock), and a closure must not call into the core (the lock is not re-entrant).
//!
//! **Uncounted payloads.** [`Extra::counts`] says whether an entry counts, by its payload (every
//! one by default: a constant the compiler folds). An entry that does not (a timer's tick group,
//! whose members count themselves) is in the wheel as any other, and out of `len` and of every
//! total through each of its moves: the insert, the claim, the cancel (the pool asks
//! `ShardState::counts`), the drain and `Core::cancel_each` count it neither in nor out.
//!
//! **Totals.** Plain counters under the shard's lock, each added to by a load and a store in the
//! critical section of the move it counts: `scheduled` by an insert, `fired` by a claim that
//! found its entry, `cancelled` by a cancel that did, `abandoned` by a drain, one for each entry,
//! and `rearmed` by a reset that moved its entry, each only for an entry that counts.
//! [`Core::totals`] sums them over the shards,
//! each read under its lock in turn (never two at once): exact when no call is in flight, and
//! under concurrent use a sum of per-shard snapshots that need not add up, as the load's
//! (`stats.rs`). An entry set aside is still pending: no total moves.

use std::fmt;

use super::{Bucketed, Core, Fired, Key, Offers, Refusal, Refused, ShardState, Wheel};
use crate::deadline::Deadline;
use crate::delay_queue::DelayQueue;
use crate::sync::Arc;

/// What a [`Core`] keeps in each shard beside the wheel (module docs): the caller's type, and
/// which of its payloads `P` count (module docs, "Uncounted payloads").
pub trait Extra<P>: Default + Send + 'static {
    /// Whether the entry of `payload` counts in [`Core::len`] and the totals: every entry's,
    /// unless the caller says otherwise.
    #[inline]
    fn counts(payload: &P) -> bool {
        let _ = payload;
        true
    }

    /// Warms what `payload` points to, beyond its slot, for the driver's walk of the next tick's
    /// entries (`warm.rs`): nothing unless the caller says otherwise.
    #[inline]
    fn warm(payload: &P) {
        let _ = payload;
    }
}

impl<P> Extra<P> for () {}

impl<P> Extra<P> for u32 {}

impl<P, T: Send + 'static> Extra<P> for Vec<T> {}

/// A shard's monotonic totals, or their sum over the shards (module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Entries inserted.
    pub(crate) scheduled: u64,
    /// Entries a claim took to run.
    pub(crate) fired: u64,
    /// Entries a cancel took.
    pub(crate) cancelled: u64,
    /// Entries a drain took.
    pub(crate) abandoned: u64,
    /// Resets that moved their entry.
    pub(crate) rearmed: u64,
}

impl Totals {
    /// Adds `other`'s counts.
    fn add(&mut self, other: &Totals) {
        self.scheduled += other.scheduled;
        self.fired += other.fired;
        self.cancelled += other.cancelled;
        self.abandoned += other.abandoned;
        self.rearmed += other.rearmed;
    }
}

/// A shard's state (module docs).
pub struct State<P, X> {
    pub(crate) wheel: Wheel<P>,
    pub(crate) extra: X,
    /// Set by `Core::close` under the lock, with the drain; never cleared (`shutdown.rs`).
    pub(crate) closed: bool,
    pub(crate) totals: Totals,
    /// The core's queue of buckets, set when the core takes the shard's header (`None` in a
    /// header's empty state): a handle's reset offers through it (`handles.rs`).
    pub(crate) queue: Option<Arc<DelayQueue<Bucketed>>>,
}

impl<P, X> fmt::Debug for State<P, X> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("State")
            .field("wheel", &self.wheel)
            .field("closed", &self.closed)
            .field("totals", &self.totals)
            .finish_non_exhaustive()
    }
}

impl<P, X: Default> Default for State<P, X> {
    fn default() -> Self {
        State {
            wheel: Wheel::default(),
            extra: X::default(),
            closed: false,
            totals: Totals::default(),
            queue: None,
        }
    }
}

impl<P: Send + 'static, X: Extra<P>> ShardState for State<P, X> {
    type Payload = P;

    /// A cancel's take, counted in `cancelled` (if its payload counts).
    #[inline]
    fn take(&mut self, slot: u32, generation: u64) -> Option<P> {
        let payload = self.wheel.remove(Key { slot, generation })?;
        self.totals.cancelled += u64::from(X::counts(&payload));
        Some(payload)
    }

    #[inline]
    fn counts(payload: &P) -> bool {
        X::counts(payload)
    }
}

impl<P: Send + 'static, X: Extra<P>> State<P, X> {
    /// Inserts `payload` unless the shard is closed (`shutdown.rs`), counted in `scheduled` (if
    /// it counts: the caller counts it in `len` as well): its key and what to offer.
    #[inline]
    pub(in crate::shard) fn insert(
        &mut self,
        deadline: Deadline,
        stamp: u64,
        payload: P,
    ) -> Result<(Key, Offers), Refused<P>> {
        // The flag read in the insert's critical section (`shutdown.rs`).
        if self.closed && !fault!("shard_core_closed_read_outside_lock") {
            return Err(Refused { payload, reason: Refusal::Closed });
        }
        let counts = u64::from(X::counts(&payload));
        let inserted = self.wheel.insert(deadline, stamp, payload)?;
        self.totals.scheduled += counts;
        Ok(inserted)
    }

    /// Moves `key`'s pending entry to `deadline`, counted in `rearmed` if it moved (and its
    /// payload counts).
    #[inline]
    pub(in crate::shard) fn reset(&mut self, key: Key, deadline: Deadline) -> Option<Offers> {
        let (offers, counts) = self.wheel.reset_read(key, deadline, X::counts)?;
        self.totals.rearmed += u64::from(counts);
        Some(offers)
    }

    /// Takes `key`'s held entry to run it, counted in `fired` (if it counts: the caller counts
    /// it out of `len` as well).
    #[inline]
    pub(crate) fn claim(&mut self, key: Key) -> Option<P> {
        let payload = self.wheel.claim(key)?;
        self.totals.fired += u64::from(X::counts(&payload));
        Some(payload)
    }

    /// Takes out every pending entry whose payload `pick` picks, held ones too, as a cancel
    /// takes one, counted in `cancelled`, appended to `out`: how many of them count.
    fn remove_each(&mut self, pick: impl FnMut(&P) -> bool, out: &mut Vec<P>) -> usize {
        let before = out.len();
        self.wheel.remove_each(pick, out);
        let counted = out[before..].iter().filter(|payload| X::counts(payload)).count();
        self.totals.cancelled += counted as u64;
        counted
    }

    /// Takes every entry out into `out` (but those held by a batch, if `keep_held`), counted in
    /// `abandoned`: how many of them count.
    pub(super) fn drain(&mut self, out: &mut Vec<Fired<P>>, keep_held: bool) -> usize {
        let before = out.len();
        match keep_held {
            true => self.wheel.drain_unheld(out),
            false => self.wheel.drain_all(out),
        }
        let drained = out[before..].iter().filter(|fired| X::counts(&fired.payload)).count();
        self.totals.abandoned += drained as u64;
        drained
    }
}

impl<P: Send + 'static, X: Extra<P>> Core<P, X> {
    /// The shards' totals summed (module docs), each shard read under its lock in turn.
    pub fn totals(&self) -> Totals {
        let mut totals = Totals::default();
        for shard in self.shards.iter() {
            let shard_totals = shard.lock().state().totals;
            totals.add(&shard_totals);
        }
        totals
    }

    /// Takes out every pending entry whose payload `pick` picks, held ones too, each shard under
    /// its lock in turn (never two), as [`cancel`](Core::cancel) takes one: counted out, in
    /// `cancelled`, its status `Cancelled` (a claim of a held one finds nothing); the payloads
    /// appended to `out`, for the caller to drop after. O(slots written). A schedule racing it
    /// into a shard it already passed is not taken.
    pub fn cancel_each(&self, mut pick: impl FnMut(&P) -> bool, out: &mut Vec<P>) {
        for shard in self.shards.iter() {
            let mut guard = shard.lock();
            let counted = guard.state().remove_each(&mut pick, out);
            guard.count_out(counted);
        }
    }

    /// Runs `f` on each shard's extra under its lock, one shard at a time, in index order (on
    /// every shard: no entry moves).
    pub fn for_each_extra(&self, mut f: impl FnMut(&mut X)) {
        for shard in self.shards.iter() {
            f(&mut shard.lock().state().extra);
        }
    }

    /// Runs `f` on the deadline of `handle`'s pending entry and its shard's extra, in one critical
    /// section: what `f` returns, or `None` if the entry is not pending or the handle is another
    /// core's (`f` not run).
    pub fn deadline_with<R>(
        &self,
        handle: &super::Handle<P, X>,
        f: impl FnOnce(Deadline, &mut X) -> R,
    ) -> Option<R> {
        self.index_of(handle)?;
        let (slot, generation) = handle.entry();
        let mut shard = handle.lock()?;
        let state = shard.state();
        let deadline = state.wheel.deadline(Key { slot, generation })?;
        Some(f(deadline, &mut state.extra))
    }
}

#[cfg(delaywheel_loom)]
impl<P: Send + 'static, X: Extra<P>> Core<P, X> {
    /// Sets every shard's wheel's split size (`wheel/split.rs`): the loom models split small
    /// buckets.
    pub(crate) fn set_split_at(&self, entries: u32) {
        for shard in self.shards.iter() {
            shard.lock().state().wheel.set_split_at(entries);
        }
    }
}
