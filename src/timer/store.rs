//! What a handle reaches its task through ([`Store`]), and the delay queue of its buckets.

use crate::delay_queue::{DelayQueue, Identity};
use crate::entry::EntryArena;
use crate::sync::{Arc, AtomicBool};
use crate::wheel::{TimerTaskList, TimingWheel};

use super::before_origin::BeforeOrigin;
use super::counters::Stripe;
use super::reset::ResetsInFlight;
use super::time::Time;

/// A timer's entries and wheel, and what a reset needs to re-add an entry as a schedule adds one
/// (`reset.rs`: the clock and tick, the delay queue, the shutdown flag): what a handle reaches its
/// task through. Every counter stripe carries a copy (`counters.rs`), so that a handle holds one
/// reference count, on its scheduling thread's stripe, not on a line every thread shares. Not the
/// timer nor its threads: a handle outliving its timer keeps these alive, and finds its task
/// abandoned.
#[derive(Clone, Debug)]
pub(crate) struct Store {
    /// Where the entries live (`entry/arena.rs`).
    pub(crate) arena: Arc<EntryArena>,
    pub(crate) wheel: Arc<TimingWheel>,
    pub(crate) queue: Arc<BucketQueue>,
    pub(crate) shut_down: Arc<AtomicBool>,
    pub(crate) time: Time,
    /// The resets that may hold an entry out of every bucket, for the drain (`reset.rs`).
    pub(crate) resets: Arc<ResetsInFlight>,
    /// The instants of deadlines before the clock's origin (`before_origin.rs`).
    pub(crate) before_origin: Arc<BeforeOrigin>,
}

impl Store {
    /// The store of a timer of `arena` and `wheel` on a manual clock at zero with 1 ms ticks, not
    /// shut down, with a queue of its own (unit tests).
    #[cfg(test)]
    pub(crate) fn for_test(arena: EntryArena, wheel: TimingWheel) -> Store {
        let ticks =
            crate::clock::TickLength::new(std::time::Duration::from_millis(1)).expect("1 ms is a valid tick");
        Store {
            arena: Arc::new(arena),
            wheel: Arc::new(wheel),
            queue: Arc::new(DelayQueue::new()),
            shut_down: Arc::new(AtomicBool::new(false)),
            time: Time { clock: crate::clock::ClockSource::Manual(crate::clock::ManualClock::new()), ticks },
            resets: Arc::default(),
            before_origin: Arc::default(),
        }
    }
}

/// The delay queue of a timer's buckets.
pub(crate) type BucketQueue = DelayQueue<Arc<TimerTaskList>>;

/// The counter stripe a handle keeps: its `cancel()` counts there, and it reaches the timer's
/// [`Store`] through it.
pub(crate) type HandleStripe = Stripe<Store>;

/// Buckets due at one tick are visited in the order of their level and slot.
impl Identity for Arc<TimerTaskList> {
    fn identity(&self) -> u64 {
        u64::from(self.key())
    }
}
