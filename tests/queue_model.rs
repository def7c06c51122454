//! Property test of the delay queue of values (`queue::DelayQueue`) against a reference model, on
//! a manual timer: random inserts (by delay, by instant, at instants already passed, far future),
//! removes, resets (by delay and by instant) of any key, clock moves, advances, and takes.
//!
//! The model is a list of values with their deadlines, using the timer's rounding rules
//! (`common/model_deadlines.rs`). After every step: `len()` counts the pending and the expired
//! values not yet taken; `remove` hands a value back iff it is pending; `reset` is true iff the
//! value is pending and the deadline representable; `deadline` reads back the deadline set, to
//! the nanosecond (past the 292 years an `i64` of nanoseconds holds: the start of its tick). After
//! an advance exactly the values whose tick has begun have expired, and those of the next tick
//! up to a deadline passed within the tick under way that expired (`fired_by_advance`). Taken
//! values come out once, in deadline order: within one advance in the order of the ticks whose
//! batches expired them, in deadline order within a tick (where the timer keeps deadlines
//! exactly), equal deadlines in insertion order; across advances by deadline (a value set to an
//! instant already passed expires at the next advance, and overtakes the values waiting that are
//! due after it), equal deadlines in the order the advances expired them; each with its deadline. A shutdown, late in some sequences, hands back exactly the
//! pending values, which leave `len()`; inserts are refused then, the value handed back.
//!
//! `DELAYWHEEL_PROPTEST_CASES` sets the number of cases (default 256).

#[path = "common/model_deadlines.rs"]
mod deadlines;
#[path = "common/model_runs.rs"]
mod runs;

use std::time::{Duration, Instant};

use deadlines::{due_tick, fired_by_advance, passed_instant, reported};
use delaywheel::queue::{DelayQueue, Key};
use delaywheel::{ManualClock, ScheduleError, Timer};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    /// `try_insert` with a delay of this many nanoseconds (`None`: `Duration::MAX`).
    Insert(Option<u64>),
    /// `try_insert_at` this many nanoseconds from now.
    InsertAt(u64),
    /// `try_insert_at` this many nanoseconds before now: already passed.
    InsertPast(u64),
    /// `remove` of the key with this index (modulo the number of keys).
    Remove(usize),
    /// `reset` (even index) or `reset_at(now + delay)` (odd) of the key with this index.
    Reset(usize, Option<u64>),
    /// Move the clock by this many nanoseconds, then `advance_clock`.
    Advance(u64),
    /// Move the clock only.
    MoveClock(u64),
    /// `try_recv` up to this many values.
    Take(u8),
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
}

#[derive(Debug)]
struct Entry {
    key: Option<Key>,
    /// The deadline, as a reading of the clock.
    deadline: Duration,
    /// The tick boundary at which it expires.
    due: Duration,
    /// Whether the timer keeps the deadline exactly within its tick (the order check's scope).
    ordered: bool,
    state: State,
    /// The advance that expired it.
    batch: usize,
    /// The tick whose batch expired it (`deadlines::fired_by_advance`).
    tick: Duration,
}

impl Entry {
    fn refused() -> Entry {
        let zero = Duration::ZERO;
        let (key, ordered, state) = (None, false, State::Refused);
        Entry { key, deadline: zero, due: zero, ordered, state, batch: 0, tick: zero }
    }

    /// What `deadline` reads back: the deadline, or past an `i64` of nanoseconds its due tick.
    fn reads_back(&self) -> Duration {
        match self.deadline.as_nanos() < i64::MAX as u128 {
            true => self.deadline,
            false => self.due,
        }
    }

    fn set(&mut self, now: Duration, delay: Duration, tick: Duration) {
        self.deadline = now + delay;
        self.due = due_tick(now, delay, tick);
        self.ordered = reported(now, delay, tick) == self.deadline;
    }
}

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// Whether `a` may come out right before `b`, both expired by the same advance.
fn in_order(entries: &[Entry], a: usize, b: usize) -> bool {
    let (x, y) = (&entries[a], &entries[b]);
    if x.tick != y.tick {
        return x.tick < y.tick;
    }
    if x.deadline == y.deadline && (x.due == y.due || x.ordered && y.ordered) {
        return a < b;
    }
    !(x.ordered && y.ordered) || x.deadline <= y.deadline
}

/// Whether `x` may come out while `y` waits, both expired: in deadline order where the timer keeps
/// both deadlines exactly (equal deadlines in the order the advances expired them, and within one
/// advance in the timer's order); else, within one advance, in the timer's order or by the
/// deadlines they come out with.
fn may_precede(entries: &[Entry], x: usize, y: usize) -> bool {
    let (a, b) = (&entries[x], &entries[y]);
    if a.ordered && b.ordered {
        return a.deadline < b.deadline
            || (a.deadline == b.deadline
                && (a.batch < b.batch || (a.batch == b.batch && in_order(entries, x, y))));
    }
    a.batch != b.batch || in_order(entries, x, y) || a.reads_back() < b.reads_back()
}

struct Model {
    clock: ManualClock,
    queue: DelayQueue<usize>,
    base: Instant,
    tick: Duration,
    entries: Vec<Entry>,
    advances: usize,
    shut_down: bool,
}

impl Model {
    fn key(&self, i: usize) -> Option<(usize, Key)> {
        let i = i % self.entries.len().max(1);
        Some((i, self.entries.get(i)?.key?))
    }

    fn insert(&mut self, delay: Option<Duration>, at: Option<Duration>, step: usize) -> Result<(), String> {
        let (id, now, tick) = (self.entries.len(), self.clock.now(), self.tick);
        let result = match (delay, at) {
            (Some(delay), _) => self.queue.try_insert(id, delay),
            (None, Some(at)) => self.queue.try_insert_at(id, self.base + at),
            (None, None) => unreachable!(),
        };
        let key = match result {
            Ok(_) if self.shut_down => return Err(format!("step {step}: accepted after the shutdown")),
            Ok(key) => key,
            Err(refused) if self.shut_down => {
                ensure!(refused.error() == &ScheduleError::ShutDown, "step {step}: {refused:?}");
                ensure!(refused.into_inner() == id, "step {step}: refused value not handed back");
                self.entries.push(Entry::refused());
                return Ok(());
            }
            Err(refused) => {
                let max = self.queue.timer().max_delay();
                ensure!(delay.is_some_and(|d| d > max), "step {step}: refused {delay:?} {at:?}: {refused:?}");
                ensure!(refused.into_inner() == id, "step {step}: refused value not handed back");
                self.entries.push(Entry::refused());
                return Ok(());
            }
        };
        let mut entry = Entry { key: Some(key), ..Entry::refused() };
        entry.state = State::Pending;
        match (delay, at) {
            (Some(delay), _) => entry.set(now, delay, tick),
            (None, Some(at)) if at > now => entry.set(now, at - now, tick),
            (None, Some(at)) => {
                let (due, read) = passed_instant(now, at, tick);
                (entry.deadline, entry.due, entry.ordered) = (at, due, read == at);
            }
            (None, None) => unreachable!(),
        }
        self.entries.push(entry);
        Ok(())
    }

    fn step(&mut self, step: usize, op: Op) -> Result<(), String> {
        let now = self.clock.now();
        match op {
            Op::Insert(nanos) => {
                self.insert(Some(nanos.map_or(Duration::MAX, Duration::from_nanos)), None, step)?
            }
            Op::InsertAt(nanos) => self.insert(None, Some(now + Duration::from_nanos(nanos)), step)?,
            Op::InsertPast(back) => {
                self.insert(None, Some(now.saturating_sub(Duration::from_nanos(back))), step)?
            }
            Op::Remove(i) => {
                let Some((i, key)) = self.key(i) else { return Ok(()) };
                let pending = self.entries[i].state == State::Pending;
                ensure!(self.queue.remove(&key) == pending.then_some(i), "step {step}: remove of {i}");
                if pending {
                    self.entries[i].state = State::Removed;
                }
            }
            Op::Reset(i, nanos) => {
                let Some((i, key)) = self.key(i) else { return Ok(()) };
                let delay = nanos.map_or(Duration::MAX, Duration::from_nanos);
                // The clock stays far from its end: the range is `max_delay` and its second of slack.
                let in_range = delay <= self.queue.timer().max_delay() + Duration::from_secs(1);
                let moved = match now.checked_add(delay).and_then(|d| self.base.checked_add(d)) {
                    Some(at) if i % 2 == 1 => self.queue.reset_at(&key, at),
                    _ => self.queue.reset(&key, delay),
                };
                let entry = &mut self.entries[i];
                ensure!(
                    moved == (entry.state == State::Pending && in_range),
                    "step {step}: reset of {i}: {moved}"
                );
                if moved {
                    entry.set(now, delay, self.tick);
                }
            }
            Op::MoveClock(nanos) => self.clock.advance(Duration::from_nanos(nanos)),
            Op::Advance(nanos) => {
                self.clock.advance(Duration::from_nanos(nanos));
                self.queue.advance_clock(Duration::ZERO);
                self.advances += 1;
                let now = self.clock.now();
                let pending =
                    |e: &Entry| (e.state == State::Pending).then_some((e.deadline, e.due, e.ordered));
                let pending: Vec<_> = self.entries.iter().map(pending).collect();
                let fires = fired_by_advance(&pending, [], now, self.tick);
                for (entry, tick) in self.entries.iter_mut().zip(fires) {
                    if let Some(tick) = tick {
                        (entry.state, entry.batch, entry.tick) = (State::Expired, self.advances, tick);
                    }
                }
                for (i, entry) in self.entries.iter().enumerate() {
                    let Some(key) = &entry.key else { continue };
                    let expected = (entry.state == State::Pending).then(|| self.base + entry.reads_back());
                    ensure!(self.queue.deadline(key) == expected, "step {step}: deadline of {i}: {entry:?}");
                }
            }
            Op::Shutdown => {
                let unfired = self.queue.timer().shutdown();
                let pending = self.entries.iter().filter(|e| e.state == State::Pending).count();
                ensure!(unfired.len() == pending, "step {step}: {} handed back of {pending}", unfired.len());
                for entry in self.entries.iter_mut().filter(|e| e.state == State::Pending) {
                    entry.state = State::ShutDown;
                }
                self.shut_down = true;
            }
            Op::Take(n) => {
                for _ in 0..n {
                    let Some(out) = self.queue.try_recv() else {
                        ensure!(
                            self.entries.iter().all(|e| e.state != State::Expired),
                            "step {step}: an expired value is not handed out"
                        );
                        break;
                    };
                    let deadline = out.deadline() - self.base;
                    self.take(step, (out.into_inner(), deadline))?;
                }
            }
        }
        let live = self.entries.iter().filter(|e| matches!(e.state, State::Pending | State::Expired)).count();
        ensure!(self.queue.len() == live, "step {step}: len {} against {live}", self.queue.len());
        Ok(())
    }

    /// Checks the value `id`, taken with `deadline`, against the model.
    fn take(&mut self, step: usize, (id, deadline): (usize, Duration)) -> Result<(), String> {
        let entry = &self.entries[id];
        ensure!(entry.state == State::Expired, "step {step}: took {id}: {entry:?}");
        ensure!(deadline == entry.reads_back(), "step {step}: {id} came out with {deadline:?}: {entry:?}");
        let waiting = |y: usize| y != id && self.entries[y].state == State::Expired;
        let before = (0..self.entries.len()).find(|&y| waiting(y) && !may_precede(&self.entries, id, y));
        ensure!(before.is_none(), "step {step}: {id} came out before {before:?}: {entry:?}");
        self.entries[id].state = State::Taken;
        Ok(())
    }
}

fn check(tick_us: u64, wheel_size: usize, ops: Vec<Op>) -> Result<(), String> {
    let clock = ManualClock::new();
    let tick = Duration::from_micros(tick_us);
    let timer = Timer::builder().tick(tick).wheel_size(wheel_size).clock(clock.clone()).manual().build();
    let base = timer.now() - clock.now();
    let queue = DelayQueue::with_timer(timer);
    let (entries, advances, shut_down) = (Vec::new(), 0, false);
    let mut model = Model { clock, queue, base, tick, entries, advances, shut_down };
    for (step, op) in ops.into_iter().enumerate() {
        model.step(step, op)?;
    }
    model.step(usize::MAX, Op::Advance(0))?;
    model.step(usize::MAX, Op::Take(u8::MAX))
}

fn delay() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![
        3 => (0u64..3).prop_map(Some),
        4 => (0u64..50_000_000).prop_map(Some),
        2 => (0u64..5_000_000_000_000).prop_map(Some),
        1 => (0u64..u64::MAX / 4).prop_map(Some),
        1 => (1u64 << 63..u64::MAX).prop_map(Some), // past an i64 of nanoseconds
        1 => Just(None),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => delay().prop_map(Op::Insert),
        2 => delay().prop_map(|d| Op::InsertAt(d.unwrap_or(u64::MAX / 2))),
        1 => prop_oneof![0u64..2_000_000, 0u64..50_000_000].prop_map(Op::InsertPast),
        2 => any::<usize>().prop_map(Op::Remove),
        3 => (any::<usize>(), delay()).prop_map(|(i, d)| Op::Reset(i, d)),
        4 => prop_oneof![Just(0u64), 0u64..2_000, 0u64..20_000_000, 0u64..2_000_000_000, 0u64..10_000_000_000_000]
            .prop_map(Op::Advance),
        1 => prop_oneof![Just(0u64), 0u64..2_000, 0u64..20_000_000].prop_map(Op::MoveClock),
        3 => (0u8..8).prop_map(Op::Take),
    ]
}

/// A sequence with at most one shutdown, late in it, so that most operations run on a live timer.
fn ops() -> impl Strategy<Value = Vec<Op>> {
    runs::with_one_late(proptest::collection::vec(op(), 100..400), Just(Op::Shutdown))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: runs::cases(), ..ProptestConfig::default() })]

    #[test]
    fn delay_queue_matches_the_reference_model(
        tick_us in runs::tick_us(),
        wheel_size in runs::wheel_size(),
        ops in ops(),
    ) {
        check(tick_us, wheel_size, ops).map_err(TestCaseError::fail)?;
    }
}
