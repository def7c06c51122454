//! The assembled shard core: shard headers from the pool whose state is a wheel with the queue of
//! its buckets ([`Driven`]: Kafka's geometry, `wheel/`), one [`WakeTick`], and the operations a timer runs on them. It knows ticks, sequence numbers and
//! payloads, not threads, clocks or parking: a schedule says whether its caller must wake the
//! driver, and the driver asks what tick to sleep until.
//!
//! **Shards.** [`Core::new`] takes its headers from [`Pool::global`], as many as it is given
//! (rounded up to a power of two; a caller passes the cores, `available_parallelism`). A thread
//! schedules into the shard of its thread index (`crate::sync::thread_index`, handed out round
//! robin at a thread's first use) masked to the shard count, so threads that do not share a shard
//! do not share a lock; any thread cancels, resets and reads a deadline through a handle, in the
//! handle's shard. Dropping the core gives every header back (the last first, so that the next
//! core to take as many gets them in the same order): each state is swapped out under its lock and
//! its pending payloads dropped after the unlock (`pool.rs`, "Giving back").
//!
//! **What each lock orders.** A shard's [`ShardLock`](super::lock::ShardLock) orders everything
//! done to the entries of its shard: a schedule's insert and count-in, a cancel's remove and
//! count-out, a reset's move, the driver's advance and count-out, its look at the next tick, the
//! drain. So a cancel and the advance that would fire the same entry take it exactly once between
//! them (whoever holds the lock first), and a reset either moves a pending entry or finds it gone.
//! No lock is held across two shards, and none while a payload is dropped or handed back: a cancel
//! returns the payload after its unlock, the advance and the drain append to the caller's batch
//! under the lock and the caller drops or runs it afterwards (a panicking `Drop` leaves no lock
//! held). The count of each shard is written under its lock only, by a load and a store, and
//! [`Core::len`] sums them without locks (`pool.rs`, "`len` without the lock": it counts every
//! entry pending throughout the read, exact when nothing is in flight). The caller's sequence
//! number rides in the entry: the core adds no shared counter.
//!
//! **The wake-up hand-shake** (`wake.rs`) on these pieces:
//!
//! * [`Core::schedule`] reads the wake-up tick after its entry is linked, inside the shard's
//!   critical section, and returns whether the deadline is earlier than it (the caller then wakes
//!   the driver after the unlock). [`Core::reset`] does the same when it moves an entry earlier (a
//!   move later needs no wake: a look that saw the entry published a tick no later than its old
//!   deadline).
//! * [`Core::before_sleep`], the driver before it sleeps: stores "never" ([`WakeTick::before_look`]),
//!   then locks each shard in turn for its next tick, and publishes the earliest
//!   ([`WakeTick::publish`]); the driver sleeps until that tick, or until woken if `None`.
//!
//! A schedule whose critical section comes after the driver's look at its shard reads "never" or a
//! tick published after that look, and is told to wake the driver if its deadline is earlier; one
//! that comes before it is found by the look. Where in the critical section the read falls does
//! not matter (the lock makes the section one step for the look), but it must be inside it or
//! after it: the seeded fault `shard_core_wake_before_link` reads before the lock, and the loom
//! model `shard_core::a_schedule_racing_the_look_wakes_the_driver` catches it.
//!
//! **The fired batch.** [`Core::advance`] takes each shard's due entries under its lock (counted
//! out there), appended to one batch, and sorts what it appended by [`Fired::order`] (deadline, its
//! 256th, sequence) through `deadline::sort_batch`: one tick's batch is counting-sorted by its
//! 256ths, equal deadlines put in sequence order. [`Merge`] keeps the sort's buffers between
//! advances.

use std::fmt;

use super::faults;
use super::pool::{self, Pool, Shard, ShardState};
use super::wake::WakeTick;
use super::wheel::driven::Driven;
use super::wheel::{Fired, Key, Refusal, Refused, DEFAULT_WHEEL_SIZE};
use crate::deadline::{self, Deadline};

/// An entry of a [`Core`]: cancels, resets and reads its deadline from any thread; finds nothing
/// once the entry left (fired, cancelled, drained) or the core was dropped.
pub type Handle<P> = pool::Handle<Driven<P>>;

impl<P: Send + 'static> ShardState for Driven<P> {
    type Payload = P;

    #[inline]
    fn take(&mut self, slot: u32, generation: u64) -> Option<P> {
        self.remove(Key { slot, generation })
    }
}

/// The shard core (module docs).
pub struct Core<P: Send + 'static> {
    shards: Box<[Shard<Driven<P>>]>,
    /// The shard count less one (a power of two less one).
    mask: usize,
    wake: WakeTick,
}

impl<P: Send + 'static> Core<P> {
    /// A core of `shards` shards (rounded up to a power of two, at least one), headers taken from
    /// the pool.
    pub fn new(shards: usize) -> Core<P> {
        Core::with_wheel_size(shards, DEFAULT_WHEEL_SIZE)
    }

    /// [`new`](Core::new) with wheels of `wheel_size` buckets a level.
    ///
    /// # Panics
    ///
    /// If `wheel_size` is below 2 or above 2²⁴ (`Wheel::new`).
    pub fn with_wheel_size(shards: usize, wheel_size: u64) -> Core<P> {
        let count = shards.max(1).next_power_of_two();
        let pool = Pool::global();
        let shards: Box<[Shard<Driven<P>>]> = (0..count).map(|_| pool.take()).collect();
        for shard in shards.iter() {
            let mut shard = shard.lock();
            if shard.state().wheel().wheel_size() != wheel_size {
                *shard.state() = Driven::new(wheel_size);
            }
        }
        Core { shards, mask: count - 1, wake: WakeTick::new() }
    }

    /// How many shards it has.
    pub fn shards(&self) -> usize {
        self.shards.len()
    }

    /// The calling thread's shard.
    #[inline]
    fn own_shard(&self) -> &Shard<Driven<P>> {
        &self.shards[crate::sync::thread_index() & self.mask]
    }

    /// Files `payload` due at tick `deadline` (its 256th `sub`, the caller's sequence number `seq`)
    /// in the calling thread's shard: its handle, and whether the caller must wake the driver (the
    /// deadline is earlier than the tick it sleeps until; module docs).
    ///
    /// # Errors
    ///
    /// The payload back with the reason ([`Refusal`]), handed back after the unlock.
    #[inline]
    pub fn schedule(
        &self,
        deadline: u64,
        sub: u8,
        seq: u64,
        payload: P,
    ) -> Result<(Handle<P>, bool), Refused<P>> {
        self.schedule_in(self.own_shard(), deadline, sub, seq, payload)
    }

    /// [`schedule`](Core::schedule) into `shard`.
    #[inline]
    fn schedule_in(
        &self,
        shard: &Shard<Driven<P>>,
        deadline: u64,
        sub: u8,
        seq: u64,
        payload: P,
    ) -> Result<(Handle<P>, bool), Refused<P>> {
        if fault!("shard_core_wake_before_link") {
            return faults::schedule_reading_wake_first(&self.wake, shard, deadline, sub, seq, payload);
        }
        let mut shard = shard.lock();
        let key = shard.state().insert(deadline, sub, seq, payload)?;
        shard.count_in(1);
        let handle = shard.handle(key.slot, key.generation);
        // After the link, in the critical section (module docs).
        let wake = self.wake.wakes_driver(deadline);
        drop(shard);
        Ok((handle, wake))
    }

    /// Takes `handle`'s entry out if it is pending, counted out: its payload, for the caller to
    /// drop or return (after the unlock). `None` if it fired, was cancelled or drained.
    #[inline]
    pub fn cancel(&self, handle: &Handle<P>) -> Option<P> {
        handle.cancel()
    }

    /// Moves `handle`'s pending entry to `deadline` and `sub` in place, keeping its sequence
    /// number: `Some(wake)`, `wake` telling whether the caller must wake the driver (moved earlier
    /// than the tick it sleeps until); `None` if the entry is not pending.
    ///
    /// # Errors
    ///
    /// [`Refusal::TooFar`] if the entry is pending and `deadline` is beyond the range; it stays.
    #[inline]
    pub fn reset(&self, handle: &Handle<P>, deadline: u64, sub: u8) -> Result<Option<bool>, Refusal> {
        let Some(mut shard) = handle.lock() else { return Ok(None) };
        let (slot, generation) = handle.entry();
        let key = Key { slot, generation };
        let wheel = shard.state();
        let Some((old, _)) = wheel.deadline(key) else { return Ok(None) };
        wheel.reset(key, deadline, sub)?;
        let wake = deadline < old && self.wake.wakes_driver(deadline);
        drop(shard);
        Ok(Some(wake))
    }

    /// The deadline tick and 256th of `handle`'s entry, `None` if it is not pending.
    pub fn deadline(&self, handle: &Handle<P>) -> Option<(u64, u8)> {
        let (slot, generation) = handle.entry();
        handle.lock()?.state().deadline(Key { slot, generation })
    }

    /// The driver: takes every entry due by tick `now` out of every shard (each under its lock,
    /// counted out there), appended to `out` and sorted, what was appended, by [`Fired::order`]
    /// (module docs). `merge` holds the sort's buffers between calls.
    pub fn advance(&self, now: u64, out: &mut Vec<Fired<P>>, merge: &mut Merge) {
        let start = out.len();
        for shard in self.shards.iter() {
            if fault!("shard_core_advance_counts_out_after_unlock") {
                faults::advance_counting_after_unlock(shard, now, out);
                continue;
            }
            let mut shard = shard.lock();
            let before = out.len();
            shard.state().advance(now, out);
            if out.len() > before {
                shard.count_out(out.len() - before);
            }
        }
        merge.sort(&mut out[start..]);
    }

    /// The earliest tick at which [`advance`](Core::advance) has work, over every shard (each
    /// under its lock; `Driven::next_tick`: never after the earliest entry is due); `None` if
    /// nothing is pending.
    pub fn next_tick(&self) -> Option<u64> {
        self.shards.iter().filter_map(|shard| shard.lock().state().next_tick()).min()
    }

    /// The driver, before it sleeps: the wake-up hand-shake's look (module docs). The tick to
    /// sleep until, or `None` to sleep until woken; a schedule that needs an earlier wake-up is
    /// told to wake the driver, also one that came before this call and after the last advance.
    pub fn before_sleep(&self) -> Option<u64> {
        self.wake.before_look();
        let next = self.next_tick();
        self.wake.publish(next);
        next
    }

    /// The entries pending, summed over the shards' counts without locks (`pool.rs`, "`len`
    /// without the lock"): every entry pending throughout the call is counted, and the sum is
    /// exact when no schedule, cancel or advance is in flight.
    pub fn len(&self) -> usize {
        self.shards.iter().fold(0usize, |sum, shard| sum.wrapping_add(shard.len()))
    }

    /// Whether [`len`](Core::len) is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A shutdown: every pending entry taken out (each shard under its lock, counted out), appended
    /// to `out` and sorted by [`Fired::order`]; every handle finds nothing afterwards. The caller
    /// drops or returns the payloads.
    pub fn drain_all(&self, out: &mut Vec<Fired<P>>, merge: &mut Merge) {
        let start = out.len();
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            let before = out.len();
            shard.state().drain_all(out);
            if out.len() > before {
                shard.count_out(out.len() - before);
            }
        }
        merge.sort(&mut out[start..]);
    }
}

impl<P: Send + 'static> Drop for Core<P> {
    /// Gives every header back, the last first; each state's payloads are dropped after its
    /// header is unlocked and back in the pool. Should one panic, the rest are still given back.
    fn drop(&mut self) {
        let shards = std::mem::take(&mut self.shards).into_vec();
        shards.into_iter().rev().for_each(drop);
    }
}

impl<P: Send + 'static> fmt::Debug for Core<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Core")
            .field("shards", &self.shards.len())
            .field("len", &self.len())
            .field("wake", &self.wake.get())
            .finish()
    }
}

/// The buffers with which [`Core::advance`] and [`Core::drain_all`] sort a batch through
/// `deadline::sort_batch`: the batch's order keys (index, deadline and 256th) and its spare.
#[derive(Debug, Default)]
pub struct Merge {
    keys: Vec<(u32, Deadline)>,
    spare: Vec<(u32, Deadline)>,
}

/// Marks a position of `keys` whose entry is in place (while [`Merge::sort`] permutes).
const PLACED: u32 = u32::MAX;

impl Merge {
    /// Sorts `batch` by [`Fired::order`]: the keys through `deadline::sort_batch`, then the
    /// entries moved into their order in one pass over the permutation's cycles.
    fn sort<P>(&mut self, batch: &mut [Fired<P>]) {
        if batch.len() < 2 {
            return;
        }
        if batch.len() >= PLACED as usize {
            batch.sort_by_key(Fired::order);
            return;
        }
        self.keys.clear();
        self.keys.extend(batch.iter().enumerate().map(|(index, fired)| {
            let deadline = Deadline::new(fired.deadline, fired.sub).expect("a wheel's deadline is in range");
            (index as u32, deadline)
        }));
        deadline::sort_batch(&mut self.keys, &mut self.spare, |&index| batch[index as usize].seq);
        // Position `i` takes the entry at `keys[i].0`: follow each cycle of the permutation,
        // swapping each position's entry in, and mark the positions done.
        for start in 0..batch.len() {
            let mut at = start;
            loop {
                let from = std::mem::replace(&mut self.keys[at].0, PLACED);
                if from == PLACED || from as usize == start {
                    break;
                }
                batch.swap(at, from as usize);
                at = from as usize;
            }
        }
        self.keys.clear();
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
mod tests;
#[cfg(all(test, not(delaywheel_loom)))]
mod threads;
