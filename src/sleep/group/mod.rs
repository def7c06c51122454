//! Tick groups: the timeouts armed on one thread, on one timer, due in the same tick, sharing one
//! timer entry whose task wakes them all (a lazily armed [`Timeout`](crate::Timeout)'s limit;
//! `member.rs` arms and polls a member, and keeps the thread's current group).
//!
//! ## Why
//!
//! A timeout is mostly armed and dropped before its deadline. As a [`Sleep`](super::Sleep) of its
//! own, that is the timer's insert and cancel (one shard lock each, `shard/core.rs`), a slot's
//! reference count and a waker's clone: 25 locked read-modify-writes per timeout in the whole
//! process (docs/benchmarks.md, "Async timeouts"). Within a group, every timeout of the tick but the one
//! that makes the group arms with one lock of the group (its waker pushed) and a count of its own,
//! and drops with one lock (its waker taken out) and a count: the timer's entry, insert and cancel
//! are the group's, once per tick and thread.
//!
//! ## Never early, at most a tick late
//!
//! A member joins the group of the tick the timer would file its own entry at (`timer/groups.rs`,
//! `TickDue::key`, the schedule's own arithmetic). The group's entry is filed at that tick's
//! boundary: the advance that reaches the boundary fires it, where it would fire any member's own
//! entry at the latest. That boundary is at or after every member's deadline (each is filed there
//! because the boundary is the first at or after it; a deadline already passed is filed at the
//! current tick, whose boundary has passed too), so no member elapses early, and none later than
//! a tick after its deadline. Deadlines passed within the tick under way (filed at the tick before
//! their own, `deadline.rs`, `P`) make groups of their own, apart from the deadlines filed at
//! their own tick, so that every member of a group counts its lateness from one boundary (the
//! first at or after its deadline, as a task's own entry does: `timer/groups.rs`).
//!
//! A member that joins a group already **fired** is elapsed at once: the group fired because the
//! timer's clock reached the group's tick boundary, which is at or after this member's deadline,
//! or the member's deadline had passed when it armed (one passed within the tick under way is
//! filed at the tick before its own: `deadline.rs`, `P`); never early either way.
//!
//! ## The protocol
//!
//! A [`Group`] is a lock over its [`State`] beside a `fired` flag (set under the lock as it fires,
//! read by a member's poll without it). Under the lock, besides the way back to its timer (held
//! until the task ends, so that a group its thread still caches keeps no dropped timer alive):
//!
//! * `phase`: `Open` (its entry pending), then exactly one of `Fired` (its task ran), `Dead` (its
//!   task was dropped unrun: abandoned by a shutdown or the timer's drop, or run as an unfired task
//!   after one) or `Cancelled` (emptied and not cached, so a leave or the cache's release cancelled
//!   its entry, the phase set before the cancel, under the lock);
//! * the members' wakers, each in a place a member keeps (its index), and the number of members;
//! * three **holds**: the members (their number), the thread's cache (`cached`: the group is its
//!   thread's current one for its timer, `member.rs`), and the entry's task (`task`: the closure
//!   is neither run nor dropped yet).
//!
//! Who does what, each under the lock:
//!
//! * **Join** (only on the caching thread, through its cache): in an `Open` group, pushes the
//!   member's waker; a `Fired` one: elapsed at once; a `Dead` one: the member makes a new group
//!   (which a shut-down timer refuses: the member is then dead, as a refused sleep).
//! * **Leave** (a member's drop, on any thread): takes its waker out; it counts itself out as
//!   cancelled iff the group is still `Open` (otherwise the fire or the abandonment counted it).
//! * **Fire** and **death** (the task run, or dropped unrun): from `Open`, set the phase (and the
//!   `fired` flag), count out every member as fired (or abandoned), take every waker; after the
//!   lock, hand the wakers to the timer's batched wake (`timer/wakes.rs`), as a sleep's task does:
//!   a dead group's members are woken once and then never elapse. From `Cancelled`, nothing.
//! * **Release of the cache's hold** (the thread caches another group, or exits).
//!
//! **Who frees the group**: whoever, under the lock, drops the last of the three holds (no
//! member, not cached, no task), after releasing the lock; nobody else can reach it then. A leave
//! or a release that leaves the group with no member and not cached while its task is pending
//! cancels the entry instead (the phase set to `Cancelled` first, under the lock, so that no
//! join, which only finds the group through the cache, and no fire, which finds it `Cancelled`,
//! acts on it): the cancel drops the task, whose drop then frees the group; a cancel that lost to
//! a fire or a shutdown leaves the freeing to that task's run or drop. The thread's cache keeps its
//! group pending when emptied, for the thread's next timeout of that tick, so at most one empty
//! group per thread and timer stays pending; its entry counts in no `len()` (`timer/groups.rs`).
//! At a thread's exit the cache lets its group go without cancelling it (the thread's counter
//! stripe may be gone then): an empty one then fires, empty, at its tick and frees itself. A
//! shutdown's drain drops a group's task at once rather than hand it back with the tasks someone
//! scheduled (`timer/stop.rs`): its members are counted out and woken by the time
//! the shutdown returns, as sleeps are.
//!
//! Loom models `sleep::group_*` (docs/loom.md), seeded faults `group_join_ignores_fired`,
//! `group_leave_counts_fired`, `group_cancel_unmarked` and `group_death_keeps_members`
//! (`faults.rs`).

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

#[cfg(delaywheel_loom)]
mod faults;
mod member;

use std::ptr::NonNull;
use std::task::Waker;

use crate::sync::{Arc, AtomicBool, Mutex, Ordering};
use crate::timer::refs::TimerRef;
use crate::timer::unfired::TimerId;
use crate::timer::LentHandle;

pub(crate) use member::{Limit, Member};

/// Where a group is in its life (module docs, "The protocol").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Open,
    Fired,
    Dead,
    Cancelled,
}

/// A group's state, under its lock.
struct State {
    phase: Phase,
    /// The members' wakers, by the index each member keeps; `None` where a place is vacant, or
    /// once the fire or the death took the waker.
    wakers: Vec<Option<Waker>>,
    /// The vacant places of `wakers`.
    vacant: Vec<u32>,
    /// How many members hold the group.
    members: usize,
    /// The thread's cache holds the group.
    cached: bool,
    /// The entry's task holds the group (neither run nor dropped yet).
    task: bool,
    /// The first tick boundary at or after each member's deadline (`TickDue::late_from`), which
    /// their firing's lateness counts from.
    late_from: u64,
    /// The group's entry (set as soon as it is scheduled, before anyone can cancel it).
    handle: LentHandle,
    /// The way back to the timer, for the cancel of the entry and the counts of the members,
    /// until the task ends: a group its thread still caches then keeps no timer alive.
    timer: Option<Arc<TimerRef>>,
}

/// The timeouts of one tick on one thread (module docs).
pub(super) struct Group {
    /// Set under the lock as the group fires; a member's poll reads it first.
    fired: AtomicBool,
    state: Mutex<State>,
}

/// A group, shared by its holds (module docs: its lifetime is the protocol's, not a count's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct GroupPtr(NonNull<Group>);

// SAFETY: a group is shared state behind its lock and an atomic flag, reached from any thread
// through this pointer while a hold keeps it (module docs); `Waker` and `Arc<TimerRef>` are `Send`
// and `Sync`.
unsafe impl Send for GroupPtr {}
// SAFETY: as `Send`: every access through a shared pointer goes through the lock or the atomic.
unsafe impl Sync for GroupPtr {}

/// What the holder that changed a group's holds must do once its lock is released.
enum Settle {
    Keep,
    /// Free it: every hold is gone.
    Free,
    /// Cancel its entry (the phase is `Cancelled` already), through its timer.
    Cancel(LentHandle, Arc<TimerRef>),
}

/// What a join found.
pub(super) enum Join {
    /// A member, at this place of the waker list.
    Member(u32),
    Fired,
    Dead,
}

impl GroupPtr {
    /// A new group on `timer`, `Open`, held by the cache (of the thread making it) and its task
    /// (about to be scheduled).
    fn new(timer: Arc<TimerRef>, late_from: u64) -> GroupPtr {
        let state = State {
            phase: Phase::Open,
            wakers: Vec::new(),
            vacant: Vec::new(),
            members: 0,
            cached: true,
            task: true,
            late_from,
            handle: LentHandle::refused(),
            timer: Some(timer),
        };
        let group = Box::new(Group { fired: AtomicBool::new(false), state: Mutex::new(state) });
        GroupPtr(NonNull::from(Box::leak(group)))
    }

    /// The group. Callers hold a hold of it (a member's, the cache's, the task's).
    #[inline]
    fn get(&self) -> &Group {
        // SAFETY: the group is freed only once no hold is left (module docs), and the caller has
        // one, which it gives up only after its last use of this borrow.
        unsafe { self.0.as_ref() }
    }

    /// Frees the group.
    ///
    /// # Safety
    ///
    /// No hold is left (the caller dropped the last one, under the lock, and released the lock),
    /// and nobody uses the group again.
    unsafe fn free(self) {
        // SAFETY: made by `Box::leak` in `new`; the caller's contract: nobody else reaches it.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }

    /// Joins `waker`'s member to the group, if it is `Open`; the caller is its caching thread.
    fn join(self, waker: &Waker) -> Join {
        let mut state = self.get().state.lock();
        let joined = state.join(waker);
        drop(state);
        joined
    }

    /// Does what `settle` says, once the lock is released.
    fn settle(self, settle: Settle) {
        match settle {
            Settle::Keep => {}
            // SAFETY: `settle` said every hold was gone, under the lock, which we released.
            Settle::Free => unsafe { self.free() },
            // The task, dropped by a cancel that wins, frees the group (its last hold); a cancel
            // that lost leaves that to the task's run or drop.
            Settle::Cancel(handle, timer) => drop(handle.cancel(timer.held())),
        }
    }

    /// Gives up the cache's hold (the thread caches another group: `may_cancel`; or exits: the
    /// entry of an empty group is left to fire, module docs).
    fn release_cache(self, may_cancel: bool) {
        let group = self.get();
        let mut state = group.state.lock();
        state.cached = false;
        let settle = state.settle(may_cancel);
        drop(state);
        self.settle(settle);
    }
}

impl State {
    fn join(&mut self, waker: &Waker) -> Join {
        match self.phase {
            Phase::Open => {}
            // The seeded fault `group_join_ignores_fired` joins a fired group: never woken.
            Phase::Fired if !fault!("group_join_ignores_fired") => return Join::Fired,
            Phase::Fired => {}
            Phase::Dead | Phase::Cancelled => return Join::Dead,
        }
        self.members += 1;
        let waker = Some(waker.clone());
        Join::Member(match self.vacant.pop() {
            Some(place) => {
                self.wakers[place as usize] = waker;
                place
            }
            None => {
                self.wakers.push(waker);
                u32::try_from(self.wakers.len() - 1).expect("fewer than 2^32 timeouts in one group")
            }
        })
    }

    /// What the holds now ask for (module docs, "Who frees the group"), after a leave or the
    /// release of the cache's hold; sets `Cancelled` when it asks for a cancel.
    fn settle(&mut self, may_cancel: bool) -> Settle {
        let pending = self.task && self.phase == Phase::Open;
        // (The task holds the timer until it ends: `pending` implies it is there.)
        let timer = || Arc::clone(self.timer.as_ref().expect("a pending group holds its timer"));
        if fault!("group_cancel_unmarked") && self.members == 0 && pending && may_cancel {
            // Seeded bug for the loom suite only (docs/loom.md): the cancel reads the members
            // alone, ignoring the cache's hold, and does not mark the group cancelled first, so
            // that a join on the caching thread joins a group whose entry is then cancelled.
            return Settle::Cancel(self.handle, timer());
        }
        if self.members > 0 || self.cached {
            return Settle::Keep;
        }
        if !self.task {
            return Settle::Free;
        }
        if pending && may_cancel {
            self.phase = Phase::Cancelled;
            return Settle::Cancel(self.handle, timer());
        }
        Settle::Keep
    }
}

/// The group's timer task: fires the group when run, kills it when dropped unrun (module docs),
/// with its timer's identity (run as an [`UnfiredTask`](crate::UnfiredTask) after a shutdown, it
/// does what its drop does, as a sleep's task: `sleep/slot.rs`). `None` once run.
struct GroupTask(Option<GroupPtr>, TimerId);

impl GroupTask {
    fn fire(mut self) {
        if self.1.runs_unfired_here() {
            return;
        }
        if let Some(group) = self.0.take() {
            finish(group, Phase::Fired);
        }
    }
}

impl Drop for GroupTask {
    fn drop(&mut self) {
        if let Some(group) = self.0.take() {
            finish(group, Phase::Dead);
        }
    }
}

/// The task's end, run or dropped (`to`: `Fired` or `Dead`): gives up the task's hold; from `Open`,
/// moves to `to`, counts every member out and wakes them, after the lock (module docs).
fn finish(ptr: GroupPtr, to: Phase) {
    let group = ptr.get();
    let mut state = group.state.lock();
    state.task = false;
    let timer = state.timer.take().expect("a group's task holds its timer until it ends");
    let mut wakers = Vec::new();
    let keeps = to == Phase::Dead && fault!("group_death_keeps_members");
    if state.phase == Phase::Open && !keeps {
        state.phase = to;
        if to == Phase::Fired {
            group.fired.store(true, Ordering::Release);
        }
        wakers.extend(state.wakers.iter_mut().filter_map(Option::take));
        // Counted out before any is woken; fired, each with its lateness.
        let (live, n) = (timer.held(), state.members as u64);
        match to {
            Phase::Fired => live.members_fired(n, state.late_from),
            _ => live.members_out(n, false, false),
        }
    }
    let free = state.members == 0 && !state.cached;
    drop(state);
    // Maybe the last way back to a dropped timer: released outside the lock.
    drop(timer);
    if free {
        // SAFETY: the task's was the last hold (no member, not cached), dropped under the lock.
        unsafe { ptr.free() };
    }
    // Outside a batch (an executor thread's fire) each wake runs here: a panicking one must not
    // cost the other members their wake-up, so it is resumed once every member was woken.
    let mut panics = crate::unwind::FirstPanic::default();
    for waker in wakers {
        panics.run(|| crate::timer::wakes::wake(waker));
    }
    panics.resume();
}
