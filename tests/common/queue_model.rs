//! The operation language and reference model of the delay queue of values (`queue::DelayQueue`)
//! on a manual timer, shared by the property test (`tests/queue_model.rs`) and the fuzz target
//! (`fuzz/fuzz_targets/queue_ops.rs`): inserts (by delay, by instant, at instants already passed,
//! far future; `try_` and plain), removes, resets (by delay and by instant) and deadlines of any
//! key (also given to another queue, where it names nothing), clock moves, advances, takes one at
//! a time and in batches, clears, shrinks of the timer, and a shutdown, on a timer with a capacity
//! and a bound on pending values or none. The values are of one size class per run
//! (`sized_task.rs`), each counting its drops; in some runs every third value panics when dropped
//! (caught wherever the model drops it; the queue's `clear` and drop catch it themselves, and a
//! refused `insert` lets it out).
//!
//! The model is a list of values with their deadlines, using the timer's rounding rules
//! (`model_deadlines.rs`). After every step: `len()` counts the pending and the expired values not
//! yet taken, and `is_empty()` agrees; every value is dropped exactly once when it leaves the queue
//! (taken and dropped by the model, removed, cleared, refused, handed back by the shutdown) and not
//! before, its bytes intact; a shutdown hands back one task per pending value and no other, in
//! deadline order, each with its value's deadline as the timer keeps it; `next_deadline()` is
//! `None` for an empty queue, the deadline of an expired value while one waits (the one the next
//! take returns), else no later than the tick the earliest pending value is due at. `remove` hands
//! a value back iff it is pending; `reset` is true iff the value is pending and the deadline
//! representable; `deadline` reads back the deadline set, to the nanosecond (past the 292 years an
//! `i64` of nanoseconds holds: the start of its tick). An insert is refused exactly when and why
//! the model predicts (shut down, a deadline out of range, `max_pending` values pending: `refusal`
//! in `model_deadlines.rs`), the value handed back (`try_`) or dropped. After an advance exactly
//! the values whose tick has begun have expired, and those of the next tick up to a deadline passed
//! within the tick under way that expired (`fired_by_advance`). Taken values come out once, in
//! deadline order (`queue_order.rs`): to the nanosecond where the timer keeps deadlines exactly, to
//! a 256th of the tick where it keeps far words; also across advances (a value set to an instant
//! already passed expires at the next advance, and overtakes the values waiting that are due after
//! it); equal deadlines in the order the advances expired them, and within one advance in insertion
//! order; each with its deadline. Dropping the queue at the end drops every value it still holds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use delaywheel::queue::{DelayQueue, Key};
use delaywheel::{ManualClock, Timer};

include!("model_base.rs");
use deadlines::{due_tick, far_slot, reported};
use panics::pass_over_expected_panics;
use sized::{by_class, Carried, Probe, Visit};

/// The queue a sequence runs on: its timer's tick, wheel size, `capacity` and `max_pending`
/// (`None`: unbounded), and the size class of its values.
#[derive(Clone, Copy, Debug)]
pub struct QueueShape {
    pub tick_us: u64,
    pub wheel_size: usize,
    pub capacity: usize,
    pub max_pending: Option<usize>,
    pub class: u8,
    /// Whether every third value (by insertion) panics when dropped.
    pub drop_panics: bool,
}

#[derive(Clone, Debug)]
pub enum Op {
    /// `try_insert` with a delay of this many nanoseconds (`None`: `Duration::MAX`).
    Insert(Option<u64>),
    /// `insert` (refusal drops the value, the key names nothing) with this delay.
    InsertPlain(Option<u64>),
    /// `try_insert_at` (`insert_at` if the flag is set) this many nanoseconds from now.
    InsertAt(u64, bool),
    /// `try_insert_at` this many nanoseconds before now: already passed.
    InsertPast(u64),
    /// `remove` of the key with this index (modulo the number of keys).
    Remove(usize),
    /// `reset` (even index) or `reset_at(now + delay)` (odd) of the key with this index.
    Reset(usize, Option<u64>),
    /// `deadline` of the key with this index.
    Deadline(usize),
    /// The key with this index given to a second queue (`remove`, `reset`, `deadline`), and that
    /// queue's key with this index to this one: a key names nothing in another queue, whose
    /// values stay as they are, also where the two keys' slots and generations are equal.
    ForeignKey(usize),
    /// Move the clock by this many nanoseconds, then `advance_clock`.
    Advance(u64),
    /// Move the clock only.
    MoveClock(u64),
    /// `try_recv` up to this many values.
    Take(u8),
    /// `try_recv_many` with this limit.
    TakeMany(u8),
    /// `clear`.
    Clear,
    /// `Timer::shrink` on the queue's timer.
    Shrink,
    /// Shut the queue's timer down.
    Shutdown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Pending,
    Expired,
    Taken,
    Removed,
    Refused,
    /// Taken by the shutdown, with the rest of the pending values.
    ShutDown,
    Cleared,
}

#[derive(Debug)]
struct Entry {
    key: Option<Key>,
    /// The deadline, as a reading of the clock.
    deadline: Duration,
    /// The tick boundary at which it expires.
    due: Duration,
    /// Whether the timer keeps the deadline exactly within its tick.
    ordered: bool,
    /// Where the timer keeps it only to a 256th of the tick (a far word), that 256th
    /// (`deadlines::far_slot`).
    slot: Option<u128>,
    state: State,
    /// The advance that expired it.
    batch: usize,
    /// The tick whose batch expired it (`deadlines::fired_by_advance`).
    tick: Duration,
}

impl Entry {
    fn refused() -> Entry {
        let zero = Duration::ZERO;
        let (key, ordered, slot, state) = (None, false, None, State::Refused);
        Entry { key, deadline: zero, due: zero, ordered, slot, state, batch: 0, tick: zero }
    }

    /// What `deadline` reads back: the deadline, or past an `i64` of nanoseconds its due tick.
    fn reads_back(&self) -> Duration {
        match self.deadline.as_nanos() < i64::MAX as u128 {
            true => self.deadline,
            false => self.due,
        }
    }

    /// What the timer reads back (`UnfiredTask::deadline`): the deadline where the timer keeps it
    /// exactly, else the start of the tick it is filed at.
    fn timer_reads(&self) -> Duration {
        match self.ordered {
            true => self.deadline,
            false => self.due,
        }
    }

    fn set(&mut self, now: Duration, delay: Duration, tick: Duration) {
        self.deadline = now + delay;
        self.due = due_tick(now, delay, tick);
        self.ordered = reported(now, delay, tick) == self.deadline;
        self.slot = far_slot(self.deadline, self.due, tick);
    }

    /// Whether the queue still holds the value.
    fn held(&self) -> bool {
        matches!(self.state, State::Pending | State::Expired)
    }
}

// The order checks of values taken.
#[path = "queue_order.rs"]
mod order;

// The steps of the model.
#[path = "queue_steps.rs"]
mod steps;

struct Model<V> {
    clock: ManualClock,
    queue: DelayQueue<V>,
    base: Instant,
    tick: Duration,
    max_pending: usize,
    drop_panics: bool,
    entries: Vec<Entry>,
    /// The probe of every value, by its index.
    probes: Vec<Arc<Probe>>,
    advances: usize,
    shut_down: bool,
    /// A second queue, on a manual timer of its own, with [`OTHERS`] values pending an hour:
    /// their keys name the same slots and generations as this queue's first ones.
    other: DelayQueue<usize>,
    others: Vec<(Key, Instant)>,
}

/// How many values the second queue holds.
const OTHERS: usize = 8;

/// Runs `ops` on a queue of this shape, checking every step against the model.
pub fn check(shape: QueueShape, ops: Vec<Op>) -> Result<(), String> {
    by_class(shape.class, Run(shape, ops))
}

/// [`check`] for the values of one size class.
struct Run(QueueShape, Vec<Op>);

impl Visit for Run {
    type Out = Result<(), String>;
    fn visit<V: Carried>(self) -> Self::Out {
        let Run(shape, ops) = self;
        pass_over_expected_panics();
        let clock = ManualClock::new();
        let tick = Duration::from_micros(shape.tick_us);
        let builder = Timer::builder().tick(tick).wheel_size(shape.wheel_size).clock(clock.clone()).manual();
        let builder = builder.capacity(shape.capacity);
        let max_pending = shape.max_pending.unwrap_or(usize::MAX);
        let timer = match shape.max_pending {
            Some(max) => builder.max_pending(max).build(),
            None => builder.build(),
        };
        let base = timer.now() - clock.now();
        let queue = DelayQueue::<V>::with_timer(timer);
        let (entries, probes, advances, shut_down) = (Vec::new(), Vec::new(), 0, false);
        let drop_panics = shape.drop_panics;
        let other =
            DelayQueue::with_timer(Timer::builder().tick(tick).clock(ManualClock::new()).manual().build());
        let hour = Duration::from_secs(3_600);
        let others = (0..OTHERS).map(|i| (other.insert(i, hour), other.timer().now() + hour)).collect();
        let mut model = Model {
            clock,
            queue,
            base,
            tick,
            max_pending,
            drop_panics,
            entries,
            probes,
            advances,
            shut_down,
            other,
            others,
        };
        for (step, op) in ops.into_iter().enumerate() {
            model.step(step, op)?;
        }
        model.step(usize::MAX, Op::Advance(0))?;
        model.step(usize::MAX, Op::Take(u8::MAX))?;
        // Dropping the queue drops every value it holds, catching the panics of their drops.
        let Model { queue, probes, .. } = model;
        drop(queue);
        for probe in &probes {
            ensure!(probe.drops() == 1, "value {} dropped {} times with the queue", probe.id, probe.drops());
            ensure!(probe.intact(), "value {} damaged", probe.id);
        }
        Ok(())
    }
}
