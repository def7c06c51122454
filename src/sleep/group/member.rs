//! A member of a tick group (the parent module's protocol): a timeout's limit once armed, and the
//! thread's cache of its current group for one timer.
//!
//! ## The cache
//!
//! Each thread keeps its current tick (the latest it armed a timeout for; with whether that
//! deadline passed within the tick under way, `TickDue::key`) with the timer's identity
//! ([`TimerId`]: no other timer's), and the tick's group once it has one. The **first** timeout of
//! a tick on a thread arms a [`Sleep`] of its own (on the clock reading and deadline
//! its arming made: [`Limit::Solo`]) and makes that tick the thread's current one; the **second**
//! makes the tick's group, which the thread then caches, and the rest join it. A timeout of any
//! other tick or timer takes the cache's place, and the group it replaces loses the cache's hold
//! (cancelled if empty). So a group is made only where it is shared: a thread whose timeouts
//! each fall in a new tick (sporadic timeouts, two limits interleaved, two timers by turns) arms a
//! sleep per timeout, as before groups, plus a look at the cache (`timeout_profile ...
//! alternate`, docs/benchmarks.md), instead of a group per timeout; timeouts on two timers never
//! share a group.
//!
//! ## Arming and polls
//!
//! The arming reads the clock once (the deadline, exact for [`Timeout::deadline`], and the tick),
//! counts the member in (a bounded timer's `max_pending` admits it, or the member is dead of
//! [`ScheduleError::TooManyPending`]), then joins under the group's lock with the waker of the
//! poll that armed it. Every later poll reads the group's `fired` flag, and otherwise takes the
//! lock to store the poll's waker if the stored one would not wake the same task.
//!
//! [`Timeout::deadline`]: crate::Timeout::deadline

use std::cell::RefCell;
use std::fmt;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use super::{GroupPtr, GroupTask, Join, Phase};
use crate::sleep::{Due, Sleep};
use crate::sync::{Arc, Ordering};
use crate::timer::groups::TickDue;
use crate::timer::refs::TimerRef;
use crate::timer::unfired::TimerId;
use crate::timer::{LiveTimer, When};
use crate::ScheduleError;

/// A thread's current tick for one timer, and its group once a second timeout of the tick made
/// one (module docs, "The cache").
struct Cached {
    timer: TimerId,
    /// The tick group's [`TickDue::key`].
    key: u64,
    group: Option<GroupPtr>,
}

/// The thread's cache; its drop (the thread's exit) releases the hold without a cancel.
struct Cache(Option<Cached>);

impl Drop for Cache {
    fn drop(&mut self) {
        if let Some(Cached { group: Some(group), .. }) = self.0.take() {
            group.release_cache(false);
        }
    }
}

/// Makes `cached` the thread's current tick, releasing the hold of the group it replaces (which
/// is cancelled if that was the last hold but its task's); if the thread's locals are being
/// destroyed, nothing caches `cached`'s group either.
fn cache(cached: Cached) {
    let group = cached.group;
    match CACHE.try_with(|cache| cache.borrow_mut().0.replace(cached)) {
        Ok(Some(Cached { group: Some(old), .. })) => old.release_cache(true),
        Ok(_) => {}
        Err(_) => {
            if let Some(group) = group {
                group.release_cache(false);
            }
        }
    }
}

/// A lazily armed timeout's limit: a member of its thread's tick group, or, for the first
/// timeout of its tick on its thread, a sleep of its own (module docs, "The cache").
pub(crate) enum Limit {
    Member(Member),
    Solo(Sleep),
}

crate::sync::thread_local! {
    /// This thread's current group (module docs, "The cache").
    static CACHE: RefCell<Cache> = const { RefCell::new(Cache(None)) };
}

/// Where a member is.
#[derive(Debug)]
enum At {
    /// In a group, at this place of its waker list.
    Joined(GroupPtr, u32),
    /// Its group fired before it joined: elapsed.
    Elapsed,
    /// Never elapses: refused, or its timer shut down (the reason, for `Debug`).
    Dead(#[allow(dead_code)] ScheduleError),
}

/// A timeout's armed limit as a member of a tick group.
pub(crate) struct Member {
    at: At,
    deadline: Due,
    timer: Arc<TimerRef>,
}

impl Member {
    /// Arms a limit `when` says on the timer `timer` leads back to, with the waker of the poll
    /// that arms it: joins the thread's group of its tick, or makes it if a timeout of that tick
    /// came first on this thread, or else arms a sleep of its own (module docs, "The cache").
    pub(crate) fn arm(timer: Arc<TimerRef>, when: When, waker: &Waker) -> Limit {
        let Some(live) = timer.upgrade() else {
            let deadline = Due::shut_down(&timer, when);
            return Limit::Member(Member { at: At::Dead(ScheduleError::ShutDown), deadline, timer });
        };
        let (now, due) = live.tick_due(when);
        let due = match due {
            Ok(due) => due,
            Err(refused) => {
                return Limit::Member(Member { at: At::Dead(refused), deadline: Due::of(now, when), timer })
            }
        };
        let (id, key) = (live.id(), due.key());
        let current = CACHE.try_with(|cache| match &cache.borrow().0 {
            Some(c) if c.timer == id && c.key == key => Some(c.group),
            _ => None,
        });
        let Ok(Some(group)) = current else {
            cache(Cached { timer: id, key, group: None });
            return Limit::Solo(Sleep::solo(timer, (now, due), when, waker));
        };
        let at = match live.count_member_in() {
            Ok(()) => join(&timer, live, (now, due), group, waker),
            Err(refused) => At::Dead(refused),
        };
        Limit::Member(Member { at, deadline: Due::of(now, when), timer })
    }

    /// The deadline, exact, on the timer's clock.
    pub(crate) fn deadline(&self) -> Instant {
        self.deadline.instant(&self.timer)
    }

    /// What the arming found, without another lock: `Ready` iff its group had fired.
    pub(crate) fn armed(&self) -> Poll<()> {
        match self.at {
            At::Elapsed => Poll::Ready(()),
            At::Joined(..) | At::Dead(_) => Poll::Pending,
        }
    }

    /// Polls the limit (module docs, "Arming and polls").
    pub(crate) fn poll(&mut self, cx: &Context<'_>) -> Poll<()> {
        let At::Joined(ptr, place) = self.at else {
            return self.armed();
        };
        let group = ptr.get();
        if group.fired.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        let mut state = group.state.lock();
        match state.phase {
            Phase::Fired => return Poll::Ready(()),
            // Dead: never elapses, nothing to wake (its waker was woken once).
            Phase::Dead | Phase::Cancelled => return Poll::Pending,
            Phase::Open => {}
        }
        let stored = &mut state.wakers[place as usize];
        let replaced = match stored {
            Some(waker) if waker.will_wake(cx.waker()) => None,
            _ => stored.replace(cx.waker().clone()),
        };
        drop(state);
        // Dropped unlocked, as a sleep's (`sleep/slot.rs`: "Wakers are dropped unlocked").
        drop(replaced);
        Poll::Pending
    }
}

/// Joins `current`, the thread's group for `live` at `due`'s tick, or a new one (`None`: a
/// timeout of the tick came first on this thread, with a sleep of its own); the member is counted
/// in.
fn join(
    timer: &Arc<TimerRef>,
    live: &LiveTimer,
    (now, due): (u64, TickDue),
    current: Option<GroupPtr>,
    waker: &Waker,
) -> At {
    if let Some(group) = current {
        match group.join(waker) {
            Join::Member(place) => return At::Joined(group, place),
            Join::Fired => {
                live.uncount_member_in();
                return At::Elapsed;
            }
            // Abandoned by a shutdown: a new group, which the timer refuses (or, should the
            // timer accept it, a live one).
            Join::Dead => {}
        }
    }
    let id = live.id();
    let group = GroupPtr::new(Arc::clone(timer), due.late_from());
    let task = GroupTask(Some(group), id);
    let handle = match live.schedule_group(now, due, move || task.fire()) {
        Ok(handle) => handle,
        Err(refused) => {
            // SAFETY: the refused task was dropped inside the schedule (its hold gone); the cache
            // never held the group and no member joined: the arming's was the last reference.
            unsafe { group.free() };
            live.uncount_member_in();
            return At::Dead(refused);
        }
    };
    let joined = {
        let mut state = group.get().state.lock();
        state.handle = handle;
        state.join(waker)
    };
    cache(Cached { timer: id, key: due.key(), group: Some(group) });
    match joined {
        Join::Member(place) => At::Joined(group, place),
        Join::Fired => {
            live.uncount_member_in();
            At::Elapsed
        }
        Join::Dead => {
            live.uncount_member_in();
            At::Dead(ScheduleError::ShutDown)
        }
    }
}

impl Drop for Member {
    /// Leaves the group (parent module: "Leave"), counted out as cancelled if before its tick.
    fn drop(&mut self) {
        let At::Joined(ptr, place) = self.at else { return };
        let group = ptr.get();
        let mut state = group.state.lock();
        let waker = state.wakers[place as usize].take();
        state.vacant.push(place);
        state.members -= 1;
        let open = state.phase == Phase::Open;
        if open || fault!("group_leave_counts_fired") {
            // Seeded fault `group_leave_counts_fired`: a member counted out by its group's fire
            // counts itself out again.
            self.timer.held().members_out(1, true, false);
        }
        let settle = state.settle(true);
        drop(state);
        drop(waker);
        ptr.settle(settle);
    }
}

impl fmt::Debug for Member {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Member").field("at", &self.at).field("deadline", &self.deadline).finish()
    }
}
