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
//!
//! ## After a shutdown
//!
//! The shared state lives as long as anything holds it: a handle (through its counter stripe),
//! a future (`Sleep`, `Interval`, `Timeout`: through its `TimerRef`), the shut-down timer itself.
//! A shutdown's or a drop's drain empties the arena, so the stop then shrinks it (`shutdown.rs`):
//! a handle or a future kept after its timer's drop keeps a few pages, not the spike's. A drop
//! that leaves nothing behind skips it (the memory goes with the drop), as does a timer that never
//! handed out [`AUTO_MIN_SLOTS`] slots (`drop(Timer::new())` stays a few frees). Its wait for
//! handles looking at the pages is bounded ([`STOP_WAIT`]). Not given back: the room of the
//! timer's capacity, and the wheel's levels and bucket queue, which at the default wheel size
//! weigh nothing measurable once the drain has flushed every bucket (after a million tasks, RSS
//! with a `Sleep` kept is the same as after its drop: docs/benchmarks.md, "Memory after a
//! spike"); a large wheel's chunks of buckets stay as they are (docs/design.md).

use std::time::{Duration, Instant};

use super::{Shared, Timer};
use crate::entry::Shrunk;
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

/// How long the shrink after a shutdown or a drop (`shutdown.rs`) waits for handles looking at
/// the pages it gives back: a pin lasts a handle operation, but a drop must not wait for ever for
/// a closure's drop (a `cancel` on another thread) that may wait for it. Pages that outlast the
/// wait stay retired: the next [`Timer::shrink`] frees them, or the arena's own drop. Under loom,
/// none: the models' time is not loom's, and a zero wait is explored both ways (over at once, or
/// run out).
#[cfg(not(delaywheel_loom))]
const STOP_WAIT: Duration = Duration::from_millis(10);
#[cfg(delaywheel_loom)]
const STOP_WAIT: Duration = Duration::ZERO;

/// Slots a timer must have handed out for a shutdown or a drop to shrink it, as for the driver's
/// shrink ([`AUTO_MIN_SLOTS`]): a small timer's drop pays for no shrink. Under loom, one: a
/// model's arena has a few slots of one page each.
#[cfg(not(delaywheel_loom))]
const STOP_MIN_SLOTS: u64 = AUTO_MIN_SLOTS as u64;
#[cfg(delaywheel_loom)]
const STOP_MIN_SLOTS: u64 = 1;

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
        // A closure dropped by a `cancel` on another thread (pinned: the grace period waits for
        // it) may wait for this thread: for the advance it runs a task of, for the executor
        // thread a shutdown joins. Seeded fault `task_shrink_waits` (docs/loom.md): it waits
        // for that closure all the same.
        let limit = match shared.may_wait_for_advance() || fault!("task_shrink_waits") {
            true => None,
            false => Some(Duration::ZERO),
        };
        let _ = shared.give_back(limit);
    }

    #[cfg(not(delaywheel_core))]
    /// After a stop's drain (`shutdown.rs`): gives back the pages the drain emptied while the
    /// arena outlives the stop, kept by the shut-down timer itself or, after its drop, by a handle
    /// or a future (see the module docs, "After a shutdown"). Waits up to [`STOP_WAIT`] for
    /// handles looking at those pages, not at all where [`shrink`](Timer::shrink) would not.
    pub(super) fn shrink_stopped(&self, dropping: bool) {
        let shared = self.shared();
        if shared.store.arena.high_water() < STOP_MIN_SLOTS || (dropping && !self.outlived()) {
            return;
        }
        let limit = if shared.may_wait_for_advance() { STOP_WAIT } else { Duration::ZERO };
        // Seeded fault `stop_shrink_waits` (docs/loom.md): it waits for them for as long as it
        // takes, also for a closure's drop that waits for the thread stopping the timer.
        let _ = shared.give_back(if fault!("stop_shrink_waits") { None } else { Some(limit) });
    }

    #[cfg(not(delaywheel_core))]
    /// Whether something else than this timer holds its store (its arena and wheel): a handle
    /// (its counter stripe) or a future (its `TimerRef`). Once this is `false` during the drop,
    /// nothing can make it `true` again: only the timer hands out either.
    fn outlived(&self) -> bool {
        #[cfg(feature = "async")]
        if self.refs().lent() {
            return true;
        }
        self.shared().counters.lent()
    }
}

#[cfg(not(delaywheel_core))]
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
        let shrunk = self.give_back(Some(AUTO_WAIT));
        let interval = match *next {
            Some((_, interval)) if shrunk.pages + shrunk.block_pages + shrunk.waiting == 0 => {
                (interval * 2).min(AUTO_MAX_INTERVAL)
            }
            _ => AUTO_INTERVAL,
        };
        *next = Some((now + interval, interval));
    }

    /// Gives back the arena's empty pages, waiting up to `limit` for handles looking at them
    /// (`entry/shrink.rs`), and the records of ended tasks' deadlines before the origin
    /// (`before_origin.rs`).
    fn give_back(&self, limit: Option<Duration>) -> Shrunk {
        let store = &self.store;
        let shrunk = store.arena.shrink(limit);
        store.before_origin.prune(&store.arena);
        shrunk
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

// The arena's page directory; the core's twins are `on_core/shrink_tests.rs`.
#[cfg(all(test, not(delaywheel_loom), not(delaywheel_core)))]
mod tests {
    use std::time::Duration;

    use super::{AUTO_INTERVAL, AUTO_LULL, AUTO_MIN_SLOTS};
    use crate::entry::arena::PAGE;
    use crate::sync::Arc;
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

    /// The tasks of a spike: half of them capture 64 bytes (a task-slab block each).
    const SPIKE: usize = 1_000_000;

    /// A spike of [`SPIKE`] tasks due over the ten seconds after the next minute on `timer`, on a
    /// driver thread or a manual clock; all their handles dropped but the one returned.
    fn spike_on(timer: &Timer) -> TimerHandle {
        let words = [7u64; 8];
        let handles: Vec<_> = (0..SPIKE as u64)
            .map(|k| {
                let delay = Duration::from_millis(60_000 + k % 10_000);
                match k % 2 {
                    0 => timer.schedule(delay, || {}),
                    _ => timer.schedule(delay, move || {
                        std::hint::black_box(words);
                    }),
                }
            })
            .collect();
        handles[SPIKE / 2].clone()
    }

    fn timer(driven: bool) -> Timer {
        let builder = Timer::builder().tick(Duration::from_millis(1));
        match driven {
            true => builder.build(),
            false => builder.clock(ManualClock::new()).manual().build(),
        }
    }

    /// A timer dropped with a spike pending while one of its handles stays: the drop's drain
    /// empties the arena and its shrink gives back the slots' pages and the blocks' (the handle
    /// keeps the arena, not its pages). The handle finds its task ended, and touches no freed page.
    #[test]
    fn a_dropped_timers_pages_go_back_while_a_handle_stays() {
        for driven in [false, true] {
            let timer = timer(driven);
            let arena = Arc::clone(&timer.shared().store.arena);
            let kept = spike_on(&timer);
            assert!(arena.resident_slots() >= SPIKE && arena.tasks().pages() > 0);
            assert!(kept.is_pending());
            drop(timer);
            let resident = arena.resident_slots();
            assert!(resident <= 4 * PAGE, "driven {driven}: {resident} slots of {SPIKE} left");
            assert_eq!(arena.tasks().pages(), 0, "driven {driven}: the blocks' pages go too");
            assert!(!kept.is_pending() && !kept.cancel() && !kept.reset(Duration::from_millis(5)));
            assert_eq!(kept.deadline(), None);
        }
    }

    /// As above with a `Sleep` kept instead of a handle: it is dead once its timer is dropped (it
    /// never completes, `error` says why, a reset schedules nothing), as `sleep.rs` says.
    #[cfg(feature = "async")]
    #[test]
    fn a_dropped_timers_pages_go_back_while_a_sleep_stays() {
        use std::future::Future;
        use std::task::{Context, Poll};

        let timer = timer(false);
        let arena = Arc::clone(&timer.shared().store.arena);
        drop(spike_on(&timer));
        let mut sleep = timer.sleep(Duration::from_secs(1));
        let mut cx = Context::from_waker(futures::task::noop_waker_ref());
        assert_eq!(std::pin::Pin::new(&mut sleep).poll(&mut cx), Poll::Pending);
        drop(timer);
        assert!(arena.resident_slots() <= 4 * PAGE, "{} slots of {SPIKE} left", arena.resident_slots());
        assert_eq!(arena.tasks().pages(), 0);
        assert_eq!(std::pin::Pin::new(&mut sleep).poll(&mut cx), Poll::Pending);
        assert_eq!(sleep.error(), Some(crate::ScheduleError::ShutDown));
        sleep.reset(std::time::Instant::now());
        assert_eq!(std::pin::Pin::new(&mut sleep).poll(&mut cx), Poll::Pending);
        assert_eq!(sleep.error(), Some(crate::ScheduleError::ShutDown));
    }

    /// What a drop asks before it shrinks: whether a handle or a future outlives the timer. With
    /// neither, the drop frees everything itself and pays for no shrink.
    #[test]
    fn a_drop_shrinks_only_what_a_handle_or_a_future_outlives_it_with() {
        let timer = timer(false);
        assert!(!timer.outlived());
        let handle = timer.schedule(Duration::from_secs(1), || {});
        assert!(timer.outlived());
        let copy = handle.clone();
        drop(handle);
        assert!(timer.outlived());
        drop(copy);
        assert!(!timer.outlived());
        #[cfg(feature = "async")]
        {
            let sleep = timer.sleep(Duration::from_secs(1));
            assert!(timer.outlived());
            drop(sleep);
            assert!(!timer.outlived());
        }
    }

    /// An explicit shutdown shrinks too: the timer it leaves keeps no spike.
    #[test]
    fn a_shutdown_gives_the_drained_pages_back() {
        let timer = timer(true);
        let kept = spike_on(&timer);
        assert_eq!(timer.shutdown().len(), SPIKE);
        let resident = timer.shared().store.arena.resident_slots();
        assert!(resident <= 4 * PAGE, "{resident} slots of {SPIKE} left");
        assert!(!kept.is_pending() && !kept.cancel());
    }
}
