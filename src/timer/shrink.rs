//! `Timer::shrink`, and the driver's automatic shrink: giving back the memory of a spike.
//!
//! The entry arena and its task slab grow to the most tasks ever pending and keep that size until
//! a shrink gives their empty pages back (`entry/shrink.rs` has the protocol). A timer with a
//! driver thread shrinks by itself, after an advance, once fewer than a quarter of its slots are
//! pending (and at least [`AUTO_MIN_SLOTS`] are resident), at most once per [`AUTO_INTERVAL`]
//! (backing off while shrinks find nothing to give back): a burst that came and went is given back
//! within about a second of draining, and a timer whose load stays steady never pays for a shrink.
//! A manual timer shrinks when told. A timer with a capacity shrinks after a spike within it too:
//! the capacity keeps its slot pages, and the shrink gives back the blocks of closures over 16
//! bytes, which are not part of it.
//!
//! A shrink holds the driver while it counts the free lists: about 20 ms after a million tasks of
//! 64 bytes, during which nothing fires. So the driver shrinks in a lull, when nothing is due
//! within [`AUTO_LULL`]: the tail of a burst still firing every tick (SPEC W4's last quarter) is
//! not held up, and the shrink comes once it has drained. A load that stays low without a lull
//! (tasks due every few milliseconds) is shrunk anyway once it has stayed low for
//! [`AUTO_INTERVAL`].

use std::time::{Duration, Instant};

use super::{Shared, Timer};
use crate::sync::Mutex;

/// Resident slots below which the driver does not shrink (64 pages, 768 KiB).
pub(crate) const AUTO_MIN_SLOTS: usize = 64 * crate::entry::arena::PAGE;

/// The least time between two automatic shrinks.
pub(crate) const AUTO_INTERVAL: Duration = Duration::from_secs(1);

/// How far the next due bucket must be for the driver to shrink without waiting for the load to
/// stay low for [`AUTO_INTERVAL`] (see the module docs).
pub(crate) const AUTO_LULL: Duration = Duration::from_millis(10);

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
    /// Since when fewer than a quarter of the slots have been pending, without a lull.
    low_since: Mutex<Option<Instant>>,
}

impl Timer {
    /// Gives back the memory a spike of pending tasks left behind: the pages of the timer's task
    /// slots (48 bytes a task) and of its blocks for larger closures whose slots or blocks are all
    /// free, and the free lists' memory beyond what they still hold, straight to the system (on
    /// Linux: `madvise`, `mremap`); the allocator is then asked to return what else it freed
    /// (glibc's `malloc_trim`). After a million pending tasks were cancelled or fired, this brings
    /// the process's resident memory back to about what it was before them (docs/benchmarks.md).
    ///
    /// A timer with a driver thread does this by itself once fewer than a quarter of its slots are
    /// still pending, in the first lull of its firing (nothing due for 10 ms), or after a second
    /// of such a low load without one; call it on a manual timer, or when the memory must be back
    /// at once (after a burst you know is over). It is cheap to call when there is nothing to give
    /// back, but not free: it looks at every free slot and block, holding the free lists (a
    /// concurrent `schedule` waits), and makes one `membarrier` system call. Scheduling, cancelling
    /// and firing are not slowed by it otherwise; a later spike allocates the pages again.
    ///
    /// The room a timer was built with ([`TimerBuilder::capacity`](crate::TimerBuilder::capacity))
    /// stays: only the pages beyond it go back.
    ///
    /// Handles of tasks whose slots were given back stay safe: they report the task as not pending
    /// (`cancel` and `reset` return `false`), as for any task that ended. It waits for handle
    /// operations running on other threads at the time to return (a `cancel` dropping its task's
    /// closure, at most). Called where such a closure's drop may be waiting for this thread, it
    /// does not wait: in a task, a waker, on a driver or executor thread of any timer, the pages
    /// that operations are still looking at are given back by a later shrink (the driver's own, or
    /// the next call); from the drop of a closure a `cancel` won, it gives nothing back.
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
        let shared = self.shared();
        let store = &shared.store;
        // A closure dropped by a `cancel` on another thread (pinned: the grace period waits for
        // it) may wait for this thread: for the advance it runs a task of, for the executor
        // thread a shutdown joins. Seeded fault `task_shrink_waits` (docs/loom.md): it waits
        // for that closure all the same.
        let limit = match shared.may_wait_for_advance() || fault!("task_shrink_waits") {
            true => None,
            false => Some(Duration::ZERO),
        };
        let _ = store.arena.shrink(limit);
        // The records of ended tasks' deadlines before the origin go too (`before_origin.rs`).
        store.before_origin.prune(&store.arena);
    }
}

impl Shared {
    /// The driver's automatic shrink (see the module docs), after an advance.
    pub(crate) fn shrink_if_spent(&self) {
        let arena = &self.store.arena;
        if !self.held_a_spike() {
            return;
        }
        let resident = arena.resident_slots();
        if resident < AUTO_MIN_SLOTS || self.counters.pending().saturating_mul(4) > resident {
            *self.auto_shrink.low_since.lock() = None;
            return;
        }
        let mut next = self.auto_shrink.next.lock();
        let now = Instant::now();
        if next.is_some_and(|(at, _)| now < at) {
            return;
        }
        let mut low_since = self.auto_shrink.low_since.lock();
        if !self.in_lull() && now.duration_since(*low_since.get_or_insert(now)) < AUTO_INTERVAL {
            return;
        }
        *low_since = None;
        drop(low_since);
        let shrunk = arena.shrink(Some(AUTO_WAIT));
        self.store.before_origin.prune(arena);
        let interval = match *next {
            Some((_, interval)) if shrunk.pages + shrunk.block_pages + shrunk.waiting == 0 => {
                (interval * 2).min(AUTO_MAX_INTERVAL)
            }
            _ => AUTO_INTERVAL,
        };
        *next = Some((now + interval, interval));
    }

    /// Whether the timer ever handed out [`AUTO_MIN_SLOTS`] slots: below that, no automatic
    /// shrink runs, and the driver's wait has no bound of its own.
    fn held_a_spike(&self) -> bool {
        self.store.arena.high_water() >= AUTO_MIN_SLOTS as u64
    }

    /// How long the driver may wait for a due bucket before it looks again whether to shrink
    /// (see the module docs): `None`, as long as the queue says, until [`AUTO_MIN_SLOTS`] slots
    /// were ever handed out; then until the next automatic shrink may come, and at least
    /// [`AUTO_INTERVAL`] (a shrink allowed now but not wanted, the load being high, must not make
    /// the driver spin). Read under the bucket queue's lock: the back-off's lock is only tried
    /// (`shrink_if_spent` holds it while it reads the queue's head).
    pub(crate) fn shrink_wait(&self) -> Option<Duration> {
        if !self.held_a_spike() {
            return None;
        }
        let next = self.auto_shrink.next.try_lock().and_then(|next| next.map(|(at, _)| at));
        Some(next.map_or(AUTO_INTERVAL, |at| at.saturating_duration_since(Instant::now()).max(AUTO_INTERVAL)))
    }

    /// Has the allocation that first hands out [`AUTO_MIN_SLOTS`] slots wake the driver's wait, so
    /// that it bounds its wait by [`shrink_wait`](Shared::shrink_wait) from then on (see the
    /// module docs). For a timer with a driver thread, when it starts (never under loom, whose
    /// models run no driver and have no weak references).
    #[cfg(not(delaywheel_loom))]
    pub(crate) fn wake_driver_at_spikes(this: &crate::sync::Arc<Shared>) {
        let shared = crate::sync::Arc::downgrade(this);
        this.store.arena.on_high_water(
            AUTO_MIN_SLOTS as u64,
            Box::new(move || {
                if let Some(shared) = shared.upgrade() {
                    shared.queue().wake();
                }
            }),
        );
    }

    /// Whether nothing is due within [`AUTO_LULL`]: no bucket is queued that soon (by the timer's
    /// clock, manual or not).
    fn in_lull(&self) -> bool {
        let time = self.time();
        self.queue().head().map_or(true, |expiration| {
            let until = time.ticks.start_nanos(expiration).saturating_sub(u128::from(time.clock.now_nanos()));
            until >= AUTO_LULL.as_nanos()
        })
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
mod tests {
    use std::time::Duration;

    use super::{AUTO_INTERVAL, AUTO_LULL, AUTO_MIN_SLOTS};
    use crate::{ManualClock, Timer, TimerHandle};

    /// A manual timer with enough tasks pending, 9 s out, for the driver's shrink to look at.
    fn spiked() -> (ManualClock, Timer, Vec<TimerHandle>) {
        let clock = ManualClock::new();
        let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
        let handles =
            (0..4 * AUTO_MIN_SLOTS).map(|_| timer.schedule(Duration::from_secs(9), || {})).collect();
        (clock, timer, handles)
    }

    #[test]
    fn the_drivers_shrink_waits_for_a_quarter_pending_then_gives_back() {
        let (_clock, timer, handles) = spiked();
        let arena = || &timer.shared().store.arena;
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

    #[test]
    fn the_drivers_shrink_waits_for_a_lull_or_a_second_of_low_load() {
        let (clock, timer, handles) = spiked();
        let arena = || &timer.shared().store.arena;
        let resident = arena().resident_slots();
        handles[..handles.len() - 10].iter().for_each(|h| assert!(h.cancel()));
        // Under a quarter pending, but a task is due within the lull: the driver keeps firing.
        let soon = timer.schedule(AUTO_LULL / 2, || {});
        timer.shared().shrink_if_spent();
        assert_eq!(arena().resident_slots(), resident, "no shrink while a task is due within the lull");
        // Once it has fired, nothing is due for seconds: the shrink comes.
        clock.advance(AUTO_LULL);
        timer.advance_clock(Duration::ZERO);
        assert!(!soon.is_pending());
        timer.shared().shrink_if_spent();
        assert!(arena().resident_slots() < resident / 4, "{} of {resident} left", arena().resident_slots());

        // A load that stays low with tasks always due soon is shrunk after a second of it.
        let again: Vec<_> =
            (0..2 * AUTO_MIN_SLOTS).map(|_| timer.schedule(Duration::from_secs(20), || {})).collect();
        again.iter().for_each(|h| assert!(h.cancel()));
        let resident = arena().resident_slots();
        let _soon = timer.schedule(AUTO_LULL / 2, || {});
        std::thread::sleep(AUTO_INTERVAL); // the shrink just made allows the next after this
        timer.shared().shrink_if_spent();
        assert_eq!(arena().resident_slots(), resident, "low, but not for a second yet");
        std::thread::sleep(AUTO_INTERVAL);
        timer.shared().shrink_if_spent();
        assert!(arena().resident_slots() < resident / 4, "{} of {resident} left", arena().resident_slots());
    }
}
