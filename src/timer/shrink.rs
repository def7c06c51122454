//! `Timer::shrink`, and the driver's automatic shrink: giving back the memory of a spike.
//!
//! The entry arena and its task slab grow to the most tasks ever pending and keep that size until
//! a shrink gives their empty pages back (`entry/shrink.rs` has the protocol). A timer with a
//! driver thread shrinks by itself, after an advance, once fewer than a quarter of its slots are
//! pending (and at least [`AUTO_MIN_SLOTS`] are resident), at most once per [`AUTO_INTERVAL`] (backing
//! off while shrinks find nothing to give back): a
//! burst that came and went is given back within about a second of draining, and a timer whose load
//! stays steady never pays for a shrink. A manual timer shrinks when told.

use std::time::{Duration, Instant};

use super::{Shared, Timer};
use crate::sync::Mutex;

/// Resident slots below which the driver does not shrink (64 pages, 768 KiB).
pub(crate) const AUTO_MIN_SLOTS: usize = 64 * crate::entry::arena::PAGE;

/// The least time between two automatic shrinks.
pub(crate) const AUTO_INTERVAL: Duration = Duration::from_secs(1);

/// How long the driver's shrink waits for handles looking at the pages it gives back; pages it
/// could not free yet are freed by the next shrink.
const AUTO_WAIT: Duration = Duration::from_millis(1);

/// The longest back-off between automatic shrinks that gave nothing back.
const AUTO_MAX_INTERVAL: Duration = Duration::from_secs(64);

/// When the driver may shrink next, and how long it waits after that if this one gives nothing
/// back (doubling up to [`AUTO_MAX_INTERVAL`]: free slots scattered over pages that all hold a
/// pending task cannot be given back, and looking again every second would cost for nothing).
#[derive(Default)]
pub(crate) struct AutoShrink {
    next: Mutex<Option<(Instant, Duration)>>,
}

impl Timer {
    /// Gives back the memory a spike of pending tasks left behind: the pages of the timer's task
    /// slots (48 bytes a task) and of its blocks for larger closures whose slots or blocks are all
    /// free, and the free lists' memory beyond what they still hold, straight to the system (on
    /// Linux: `madvise`, `mremap`); the allocator is then asked to return what else it freed
    /// (glibc's `malloc_trim`). After a million pending tasks were cancelled or fired, this brings
    /// the process's resident memory back to about what it was before them (docs/benchmarks.md).
    ///
    /// A timer with a driver thread does this by itself about a second after fewer than a quarter
    /// of its slots are still pending; call it on a manual timer, or when the memory must be back
    /// at once (after a burst you know is over). It is cheap to call when there is nothing to give
    /// back, but not free: it looks at every free slot and block, holding the free lists (a
    /// concurrent `schedule` waits), and makes one `membarrier` system call. Scheduling, cancelling
    /// and firing are not slowed by it otherwise; a later spike allocates the pages again.
    ///
    /// Handles of tasks whose slots were given back stay safe: they report the task as not pending
    /// (`cancel` and `reset` return `false`), as for any task that ended. It waits for handle
    /// operations running on other threads at the time to return (a `cancel` dropping its task's
    /// closure, at most).
    ///
    /// ```
    /// use delaywheel::{ManualClock, Timer};
    /// use std::time::Duration;
    ///
    /// let timer = Timer::builder().clock(ManualClock::new()).manual().build();
    /// let burst: Vec<_> = (0..100_000).map(|_| timer.schedule(Duration::from_secs(30), || {})).collect();
    /// burst.iter().for_each(|h| assert!(h.cancel()));
    /// timer.shrink(); // the burst's 4.8 MB of slots go back
    /// assert!(!burst[0].cancel() && !burst[0].is_pending());
    /// ```
    pub fn shrink(&self) {
        let _ = self.shared().store.arena.shrink(None);
    }
}

impl Shared {
    /// The driver's automatic shrink (see the module docs), after an advance.
    pub(crate) fn shrink_if_spent(&self) {
        let arena = &self.store.arena;
        if arena.high_water() < AUTO_MIN_SLOTS as u64 {
            return;
        }
        let resident = arena.resident_slots();
        if resident < AUTO_MIN_SLOTS || self.counters.pending().saturating_mul(4) > resident {
            return;
        }
        let mut next = self.auto_shrink.next.lock();
        let now = Instant::now();
        if next.is_some_and(|(at, _)| now < at) {
            return;
        }
        let shrunk = arena.shrink(Some(AUTO_WAIT));
        let interval = match *next {
            Some((_, interval)) if shrunk.pages + shrunk.block_pages + shrunk.waiting == 0 => {
                (interval * 2).min(AUTO_MAX_INTERVAL)
            }
            _ => AUTO_INTERVAL,
        };
        *next = Some((now + interval, interval));
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
mod tests {
    use std::time::Duration;

    use super::AUTO_MIN_SLOTS;
    use crate::{ManualClock, Timer};

    #[test]
    fn the_drivers_shrink_waits_for_a_quarter_pending_then_gives_back() {
        let clock = ManualClock::new();
        let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
        let arena = || &timer.shared().store.arena;
        let handles: Vec<_> =
            (0..4 * AUTO_MIN_SLOTS).map(|_| timer.schedule(Duration::from_secs(9), || {})).collect();
        let resident = arena().resident_slots();
        // More than a quarter pending: nothing happens.
        handles[..handles.len() / 2].iter().for_each(|h| assert!(h.cancel()));
        timer.shared().shrink_if_spent();
        assert_eq!(arena().resident_slots(), resident);
        // Under a quarter: the empty pages go.
        handles[handles.len() / 2..handles.len() - 10].iter().for_each(|h| assert!(h.cancel()));
        timer.shared().shrink_if_spent();
        assert!(
            arena().resident_slots() < resident / 4,
            "{} of {resident} slots left",
            arena().resident_slots()
        );
        assert!(!handles[0].is_pending() && !handles[0].cancel());
        assert!(handles[handles.len() - 1].is_pending(), "the tasks left are untouched");
        assert_eq!(timer.len(), 10);
    }
}
