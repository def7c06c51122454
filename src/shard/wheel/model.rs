//! The wheel against a reference, driven the Kafka way: random inserts, removes (by live and stale
//! keys), resets and advances (by steps from one tick to far beyond, and to the head of the queue),
//! with a reference heap of offers standing in for the driver's queue (`support::Drive`) and stale
//! offers (popped ones) offered again, for every wheel size the crate's tests use, from times near
//! the start and the end of the range. Deadlines are the crate's words of every form (far words
//! with a rank, exact words, words passed within the tick under way), placed by their ticks. The
//! reference holds each pending entry by its order (deadline word, stamp) in a `BTreeMap`, so an
//! advance to `now` must hand out exactly the entries whose ticks are due by `now` (never early,
//! at most one tick late) and stamped at most the round's limit (some advances leave the latest
//! inserts out; the next round takes them, the clock moved or not), in that order (by stamp among
//! equal deadlines), held: each counted in `len` and its deadline read back, a reset of it
//! refused, some removed while held (the claim then finds nothing), the rest claimed in the
//! batch's order; `len`, each key's deadline and its status (pending, then how it ended until its
//! slot is reused, then nothing) are compared after every step, the wheel is audited after every
//! advance (every bucket holding entries queued, held entries included), and the drain at the end
//! hands back exactly what the reference holds, each key then abandoned. Every payload is dropped
//! once. Besides advances, takes by a limit in the tick after the clock's (`take_due_by`: exactly
//! the reference's entries of that tick at or before the limit, within a stamp limit) and batches
//! some of whose entries are set aside, pending again, for the next advance to take
//! (`model/due_by.rs`). Most cases split buckets of 2 to 4 entries (`split.rs`), so that splits,
//! visits, and cancels, resets and takes of entries in stages are compared with the reference too.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};

use proptest::prelude::*;

use super::super::life::Status;
use super::support::{audit, walked_stats, Drive, Drops, Token};
use super::{Key, MAX_TICK, MAX_WHEEL_SIZE};
use crate::deadline::{Deadline, Fractions};

mod due_by;

/// A deadline's tick relative to the clock.
#[derive(Clone, Copy, Debug)]
enum When {
    After(u64),
    Passed(u64),
}

/// A deadline word's form within its tick: a far word's rank, an exact word's position (in the
/// nanoseconds of a 1 ms tick), or an exact word passed within the tick under way (`P`). An exact
/// form beyond the exact words' range is a far word.
#[derive(Clone, Copy, Debug)]
enum Form {
    Far(u8),
    Exact(u64),
    PassedMidTick(u64),
}

#[derive(Clone, Debug)]
enum Op {
    Insert(When, Form),
    /// A key handed out so far, live or stale, by its index modulo their number.
    Remove(usize),
    Reset(usize, When, Form),
    /// A step, which entries of the batch a remove takes while held (bits of the mask), and how
    /// many of the latest inserts the round's limit leaves out.
    Advance(u64, u8, u64),
    ToHead(u8, u64),
    /// An offer popped so far offered again, by its index modulo their number.
    Stale(usize),
    /// A take by an exact word of the tick after the clock's (its position in the tick), a stamp
    /// limit, and which entries taken a remove takes and which are set aside (`due_by.rs`).
    TakeDueBy(u64, u64, u8, u8),
    /// An advance (a step) whose batch sets entries aside (the masks as for `TakeDueBy`).
    SetAside(u64, u8, u8),
}

fn when() -> impl Strategy<Value = When> {
    let delay = prop_oneof![
        3 => 0..3u64,
        3 => 0..70u64,
        3 => 0..5_000u64,
        2 => 0..400_000u64,
        2 => 0..(1u64 << 30),
        1 => 0..(1u64 << 56),
    ];
    prop_oneof![8 => delay.prop_map(When::After), 1 => (0..100u64).prop_map(When::Passed)]
}

fn form() -> impl Strategy<Value = Form> {
    prop_oneof![
        2 => any::<u8>().prop_map(Form::Far),
        1 => (0..1_000_000u64).prop_map(Form::Exact),
        1 => (0..1_000_000u64).prop_map(Form::PassedMidTick),
    ]
}

/// The word of `form` at `tick`.
fn word(tick: u64, form: Form) -> Deadline {
    let fractions = Fractions::new(1_000_000).expect("a 1 ms tick");
    let exact = match form {
        Form::Far(_) => None,
        Form::Exact(below) => fractions.deadline(tick, below),
        Form::PassedMidTick(below) => fractions.passed(tick, below),
    };
    let rank = if let Form::Far(rank) = form { rank } else { 0 };
    exact.unwrap_or_else(|| Deadline::new(tick, rank).expect("a tick in range"))
}

fn op() -> impl Strategy<Value = Op> {
    let step = prop_oneof![
        4 => 0..3u64,
        4 => 0..100u64,
        3 => 0..10_000u64,
        2 => 0..(1u64 << 32),
        1 => 0..(1u64 << 50),
    ];
    prop_oneof![
        6 => (when(), form()).prop_map(|(when, form)| Op::Insert(when, form)),
        2 => any::<usize>().prop_map(Op::Remove),
        2 => (any::<usize>(), when(), form()).prop_map(|(key, when, form)| Op::Reset(key, when, form)),
        2 => (step, any::<u8>(), back()).prop_map(|(step, cancels, back)| Op::Advance(step, cancels, back)),
        1 => (any::<u8>(), back()).prop_map(|(cancels, back)| Op::ToHead(cancels, back)),
        1 => any::<usize>().prop_map(Op::Stale),
        1 => (0..1_000_000u64, any::<u64>(), any::<u8>(), any::<u8>())
            .prop_map(|(below, stamps, cancels, asides)| Op::TakeDueBy(below, stamps, cancels, asides)),
        1 => (0..3u64, any::<u8>(), any::<u8>()).prop_map(|(step, cancels, asides)| Op::SetAside(step, cancels, asides)),
    ]
}

/// How many of the latest inserts a round's limit leaves out.
fn back() -> impl Strategy<Value = u64> {
    prop_oneof![3 => Just(0u64), 2 => 0..4u64]
}

fn start() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        0..(1u64 << 40),
        (1u64 << 54) - 300_000..(1u64 << 54),
        MAX_TICK - 400_000..=MAX_TICK
    ]
}

fn wheel_size() -> impl Strategy<Value = u64> {
    prop_oneof![Just(2u64), Just(3), Just(20), Just(60), Just(64), Just(512), Just(MAX_WHEEL_SIZE)]
}

/// What the reference expects of a pending entry when it leaves.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Expect {
    deadline: Deadline,
    stamp: u64,
    key: Key,
    id: u32,
}

impl Expect {
    fn order(&self) -> (Deadline, u64) {
        (self.deadline, self.stamp)
    }
}

#[derive(Default)]
struct Reference {
    /// The clock: the last tick advanced to.
    now: u64,
    /// Inserts accepted so far: the next stamp.
    seq: u64,
    /// The last round's limit: it never goes down.
    limit: u64,
    /// Pending entries by their order.
    pending: BTreeMap<(Deadline, u64), Expect>,
    /// Each pending key's order.
    places: HashMap<Key, (Deadline, u64)>,
    /// Per slot, the key of its last occupant that left and how it ended (until the slot's reuse).
    ended: HashMap<u32, (Key, Status)>,
    /// Every key handed out.
    keys: Vec<Key>,
}

impl Reference {
    fn tick(&self, when: When) -> u64 {
        match when {
            When::After(delay) => self.now.saturating_add(delay).min(MAX_TICK),
            When::Passed(by) => self.now.saturating_sub(by),
        }
    }

    fn file(&mut self, expect: Expect) {
        self.pending.insert(expect.order(), expect);
        self.places.insert(expect.key, expect.order());
    }

    /// Takes `key`'s pending entry out, ended as `status`.
    fn end(&mut self, key: Key, status: Status) -> Option<Expect> {
        let expect = self.pending.remove(&self.places.remove(&key)?).unwrap();
        self.ended.insert(key.slot, (key, status));
        Some(expect)
    }

    /// What the wheel must read as `key`'s status.
    fn status(&self, key: Key) -> Option<Status> {
        if self.places.contains_key(&key) {
            return Some(Status::Pending);
        }
        self.ended.get(&key.slot).filter(|(ended, _)| *ended == key).map(|&(_, status)| status)
    }
}

fn expect_of(f: &super::Fired<Token>) -> Expect {
    Expect { deadline: f.deadline, stamp: f.stamp, key: f.key, id: f.payload.id }
}

fn run(wheel_size: u64, start: u64, split_at: u32, ops: &[Op]) {
    let drops = Drops::default();
    let mut drive = Drive::new(wheel_size);
    drive.wheel.set_split_at(split_at);
    let mut model = Reference { now: start, ..Reference::default() };
    assert!(drive.advance(start).is_empty());
    let mut ids = 0u32;
    for op in ops {
        let mut key_used = None;
        match *op {
            Op::Insert(when, form) => {
                let deadline = word(model.tick(when), form);
                let id = ids;
                ids += 1;
                let Ok((key, offer)) = drive.wheel.insert(deadline, model.seq, drops.token(id)) else {
                    panic!("{deadline:?} refused");
                };
                assert!(!model.places.contains_key(&key), "{key:?} handed out twice");
                assert_eq!(key.generation, model.seq, "the key's generation is the stamp");
                drive.queue.extend(offer.iter().map(Reverse));
                model.ended.remove(&key.slot);
                model.file(Expect { deadline, stamp: model.seq, key, id });
                model.seq += 1;
                model.keys.push(key);
                key_used = Some(key);
            }
            Op::Remove(pick) if !model.keys.is_empty() => {
                let key = model.keys[pick % model.keys.len()];
                let expected = model.end(key, Status::Cancelled).map(|expect| expect.id);
                assert_eq!(drive.wheel.remove(key).map(|token| token.id), expected, "remove {key:?}");
                key_used = Some(key);
            }
            Op::Reset(pick, when, form) if !model.keys.is_empty() => {
                let key = model.keys[pick % model.keys.len()];
                let deadline = word(model.tick(when), form);
                let expected = match model.places.get(&key) {
                    None => false,
                    Some(&place) => {
                        let expect = model.pending.remove(&place).unwrap();
                        model.file(Expect { deadline, ..expect });
                        true
                    }
                };
                let offers = drive.wheel.reset(key, deadline);
                drive.queue.extend(offers.iter().flat_map(|offers| offers.iter()).map(Reverse));
                assert_eq!(offers.is_some(), expected, "reset {key:?} to {deadline:?}");
                key_used = Some(key);
            }
            Op::Remove(_) | Op::Reset(..) => {}
            Op::Advance(step, cancels, back) => {
                let now = model.now.saturating_add(step).min(MAX_TICK);
                advance(&mut drive, &mut model, (now, back), cancels);
            }
            Op::ToHead(cancels, back) => {
                if let Some(next) = drive.next_tick() {
                    let now = next.max(model.now);
                    advance(&mut drive, &mut model, (now, back), cancels);
                }
            }
            Op::Stale(pick) if !drive.popped.is_empty() => {
                let offer = drive.popped[pick % drive.popped.len()];
                drive.queue.push(Reverse(offer));
            }
            Op::Stale(_) => {}
            Op::TakeDueBy(below, stamps, cancels, asides) => {
                due_by::take_due_by(&mut drive, &mut model, below, stamps, (cancels, asides));
            }
            Op::SetAside(step, cancels, asides) => {
                let now = model.now.saturating_add(step).min(MAX_TICK);
                due_by::advance_setting_aside(&mut drive, &mut model, now, (cancels, asides));
            }
        }
        assert_eq!(drive.wheel.len(), model.pending.len());
        check_stats(&drive.wheel, &model, 0);
        assert!(drive.wheel.time() <= model.now, "the wheel's time passed the clock");
        if let Some(key) = key_used {
            let expected = model.places.get(&key).map(|place| model.pending[place].deadline);
            assert_eq!(drive.wheel.deadline(key), expected, "deadline of {key:?}");
            assert_eq!(drive.wheel.status(key), model.status(key), "status of {key:?}");
        }
        let earliest = model.pending.keys().map(|(deadline, _)| deadline.tick()).min();
        if let (Some(next), Some(first)) = (drive.next_tick(), earliest) {
            assert!(next <= first.max(model.now), "head {next} after the earliest entry's {first}");
        }
    }
    let mut out = Vec::new();
    drive.wheel.drain_all(&mut out);
    audit(&drive.wheel, None);
    let mut expected: Vec<Expect> = model.pending.values().copied().collect();
    expected.sort_by_key(|expect| expect.key.slot);
    let drained: Vec<Expect> = out.iter().map(expect_of).collect();
    assert_eq!(drained, expected, "the drain hands back what is pending, in slot order");
    drop(out);
    for &key in &model.keys {
        if model.places.contains_key(&key) {
            model.ended.insert(key.slot, (key, Status::Abandoned));
        }
    }
    model.places.clear();
    for &key in &model.keys {
        assert_eq!(drive.wheel.status(key), model.status(key), "status of {key:?} after the drain");
        assert!(drive.wheel.remove(key).is_none(), "every key stale after the drain");
    }
    drop(drive);
    drops.assert_each_once(ids);
}

/// Advances both to `now` in one round of limit `limit`: the wheel's batch, which must hold exactly
/// what the reference has due by `now` and numbered at most `limit`, in its order (each taken out
/// of the reference's pending entries), and counted; and the reference's entries of it.
fn advance_by(
    drive: &mut Drive<Token>,
    model: &mut Reference,
    now: u64,
    limit: u64,
) -> (Vec<super::Due>, Vec<Expect>) {
    let batch = drive.collect_by(now, limit);
    let taken: Vec<_> = model
        .pending
        .keys()
        .filter(|(deadline, stamp)| deadline.tick() <= now && *stamp <= limit)
        .copied()
        .collect();
    let mut expected = Vec::new();
    for order in taken {
        let expect = model.pending.remove(&order).unwrap();
        model.places.remove(&expect.key);
        expected.push(expect);
    }
    model.now = model.now.max(now);
    let held: Vec<_> = batch.iter().map(|d| (d.deadline, d.stamp, d.key)).collect();
    let wanted: Vec<_> = expected.iter().map(|e| (e.deadline, e.stamp, e.key)).collect();
    assert_eq!(held, wanted, "advance to {now}, limit {limit}");
    assert_eq!(drive.wheel.len(), model.pending.len() + batch.len(), "held entries are counted");
    (batch, expected)
}

/// Advances both to `now` in one round whose limit leaves out the `back` latest inserts (the
/// limit never goes down): the wheel holds exactly what is due by `now` and numbered at most the
/// limit, in the reference's order, and leaves the rest due for a later round; held, each is
/// counted, reads its deadline back and refuses a reset; the entries `cancels` picks (bit `i % 8`
/// for the `i`th) are removed while held, and every entry is then claimed in the batch's order:
/// the removed ones find nothing, the others their payloads.
fn advance(drive: &mut Drive<Token>, model: &mut Reference, (now, back): (u64, u64), cancels: u8) {
    model.limit = model.limit.max(model.seq.saturating_sub(1 + back));
    let (batch, expected) = advance_by(drive, model, now, model.limit);
    let picked = |at: usize| cancels & (1 << (at % 8)) != 0;
    let mut held = batch.len();
    check_stats(&drive.wheel, model, held);
    for (at, (due, expect)) in batch.iter().zip(&expected).enumerate() {
        assert_eq!(drive.wheel.deadline(due.key), Some(due.deadline), "held: pending");
        assert_eq!(drive.wheel.status(due.key), Some(Status::Pending), "held: pending");
        assert!(!drive.reset(due.key, (now + 1).min(MAX_TICK), 0), "held: a reset is refused");
        if picked(at) {
            assert_eq!(drive.wheel.remove(due.key).map(|token| token.id), Some(expect.id), "removed held");
            model.ended.insert(due.key.slot, (due.key, Status::Cancelled));
            held -= 1;
            check_stats(&drive.wheel, model, held);
        }
    }
    for (at, (due, expect)) in batch.iter().zip(&expected).enumerate() {
        let claimed = drive.wheel.claim(due.key).map(|token| token.id);
        assert_eq!(claimed, (!picked(at)).then_some(expect.id), "claim of {:?}", due.key);
        if claimed.is_some() {
            model.ended.insert(due.key.slot, (due.key, Status::Fired));
            held -= 1;
        }
        check_stats(&drive.wheel, model, held);
        assert_eq!(drive.wheel.status(due.key), model.status(due.key), "status of {:?}", due.key);
    }
    assert_eq!(drive.wheel.len(), model.pending.len());
}

/// The wheel's load against its walk (`support::walked_stats`) and the reference's: `held`
/// entries held by the batch under way, the others in the levels or on the overdue list, and
/// every one due after the wheel's time in a level.
fn check_stats(wheel: &super::Wheel<Token>, model: &Reference, held: usize) {
    let stats = wheel.stats();
    assert_eq!(stats, walked_stats(wheel), "the counts against the walk");
    assert_eq!(stats.held, held, "held entries");
    let in_levels: usize = stats.pending_per_level.iter().sum();
    assert_eq!(in_levels + stats.overdue, model.pending.len(), "levels and overdue list");
    let time = wheel.time();
    let ahead = model.pending.keys().filter(|(deadline, _)| deadline.tick() > time).count();
    assert!(ahead <= in_levels, "{ahead} entries due after the time {time}, {in_levels} in levels");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn behaves_as_the_reference(
        wheel_size in wheel_size(),
        start in start(),
        split_at in prop_oneof![2 => 2..5u32, 1 => Just(super::split::SPLIT_AT)],
        ops in proptest::collection::vec(op(), 1..300),
    ) {
        run(wheel_size, start, split_at, &ops);
    }
}
