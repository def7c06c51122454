//! The driver's wake-up tick: how a schedule into a shard tells a sleeping driver that it must
//! wake earlier, without a lock or a read-modify-write of its own.
//!
//! ## The hand-shake
//!
//! One word per timer, [`WakeTick`], holds the tick the driver sleeps until, or [`NEVER`] while the
//! driver is looking at the shards (and while nothing is pending anywhere). Its two sides:
//!
//! * **The driver**, each time it looks for work: stores [`NEVER`]
//!   ([`before_look`](WakeTick::before_look)), **then** locks each shard in turn and reads the
//!   earliest tick it needs, and after the last one publishes the earliest over all shards
//!   ([`publish`](WakeTick::publish)) and sleeps until it (or for good if there is none), to be
//!   woken early by a schedule.
//! * **A schedule**: inside its shard's critical section, after its entry is linked, reads the
//!   word ([`wakes_driver`](WakeTick::wakes_driver): is its deadline earlier than the tick the
//!   driver sleeps until?), and if so wakes the driver after the unlock.
//!
//! **Why no entry is missed.** Take a schedule and the driver's look at the schedule's shard; the
//! shard lock orders their critical sections.
//!
//! * The schedule's comes first: the driver's look finds the entry.
//! * The driver's comes first: the driver stored [`NEVER`] before it (program order), its unlock
//!   releases that to the schedule's lock, so the schedule's read is ordered after the store and
//!   returns [`NEVER`] or what the driver published after it, never a tick of an earlier look
//!   (coherence). [`NEVER`] wakes the driver for any deadline; a published tick was computed without
//!   this entry, and the schedule wakes the driver if its deadline is earlier, while an entry due at
//!   or after that tick is found when the driver wakes at it. A wake that comes before the driver
//!   sleeps is kept by the wake-up itself (a thread's unpark token, a waker's wake), so the sleep
//!   returns at once and the driver looks again.
//!
//! The read must come after the entry is linked, in the same critical section or after it: a
//! schedule that read the word before its lock could read a tick published by a look that missed
//! it, and then the driver, having woken at that tick and looked again before the entry was
//! linked, could sleep past the entry's deadline (the loom model
//! `shard_wake::schedule_reading_before_its_lock_can_leave_the_driver_asleep` finds that
//! interleaving; on the assembled core, `core.rs`, the seeded fault `shard_core_wake_before_link`
//! makes `shard_core::a_schedule_racing_the_look_wakes_the_driver` fail). The driver's [`NEVER`] must be stored before its look, not after (seeded fault
//! `shard_wake_never_after_look`, caught by `shard_wake::schedule_behind_the_look_wakes_the_driver`).
//! Both accesses are `Relaxed`: the shard lock orders them, and the word carries no data but
//! itself.
//!
//! Several drivers (a thread and drive futures) share one word as they share the advance lock:
//! only the one holding it looks and publishes; whom a wake reaches is the waker list's business,
//! not this word's.

use crate::sync::{AtomicU64, Ordering};

/// The word's value while the driver looks, or sleeps with nothing pending: every deadline is
/// earlier, so every schedule wakes the driver.
pub const NEVER: u64 = u64::MAX;

/// The tick the driver sleeps until (see the module docs).
#[derive(Debug)]
pub struct WakeTick {
    tick: AtomicU64,
}

impl Default for WakeTick {
    fn default() -> Self {
        WakeTick::new()
    }
}

impl WakeTick {
    /// A word that wakes the driver for any schedule (no look has published a tick yet).
    pub fn new() -> WakeTick {
        WakeTick { tick: AtomicU64::new(NEVER) }
    }

    /// The driver, before it locks the first shard of a look: from here on every schedule wakes it.
    pub fn before_look(&self) {
        if !fault!("shard_wake_never_after_look") {
            self.tick.store(NEVER, Ordering::Relaxed);
        }
    }

    /// The driver, after the last shard of a look: it sleeps until `next` (the earliest tick any
    /// shard needs), or until woken if `None`.
    pub fn publish(&self, next: Option<u64>) {
        if fault!("shard_wake_never_after_look") {
            // The fault: the "looking" mark comes after the look, so a schedule linked behind the
            // look may read the tick of the look before.
            self.tick.store(NEVER, Ordering::Relaxed);
        }
        self.tick.store(next.unwrap_or(NEVER), Ordering::Relaxed);
    }

    /// A schedule, in its shard's critical section after its entry due at `deadline` is linked:
    /// whether it must wake the driver (after its unlock).
    #[inline]
    pub fn wakes_driver(&self, deadline: u64) -> bool {
        deadline < self.tick.load(Ordering::Relaxed)
    }

    /// The tick last published, or [`NEVER`] (for statistics and tests: a snapshot).
    pub fn get(&self) -> u64 {
        self.tick.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
mod tests {
    use super::{WakeTick, NEVER};

    #[test]
    fn a_fresh_word_wakes_for_any_deadline() {
        let word = WakeTick::new();
        assert_eq!(word.get(), NEVER);
        assert!(word.wakes_driver(0));
        assert!(word.wakes_driver(NEVER - 1));
    }

    #[test]
    fn a_published_tick_wakes_only_for_earlier_deadlines() {
        let word = WakeTick::new();
        word.publish(Some(10));
        assert!(word.wakes_driver(9));
        assert!(!word.wakes_driver(10), "the driver wakes at 10 anyway");
        assert!(!word.wakes_driver(11));
        word.before_look();
        assert!(word.wakes_driver(11), "a look under way is woken by every schedule");
        word.publish(None);
        assert!(word.wakes_driver(1_000_000));
    }
}
