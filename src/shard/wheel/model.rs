//! The wheel against a reference, driven the Kafka way: random inserts, removes (by live and stale
//! keys), resets and advances (by steps from one tick to far beyond, and to the head of the queue),
//! with a reference heap of offers standing in for the driver's queue (`support::Drive`) and stale
//! offers (popped ones) offered again, for every wheel size the crate's tests use, from times near
//! the start and the end of the range. The reference holds each pending entry by its order
//! (deadline, 256th, sequence number) in a `BTreeMap`, so an advance to `now` must hand out exactly
//! the entries due by `now` (never early, at most one tick late) and numbered at most the round's
//! limit (some advances leave the latest inserts out; the next round takes them, the clock moved
//! or not), in that order (FIFO by sequence among equal deadlines), held: each counted in `len` and its deadline read back, a reset of it
//! refused, some removed while held (the claim then finds nothing), the rest claimed in the batch's
//! order; `len` and each key's deadline are compared after every step, the wheel is audited after
//! every advance (every bucket holding entries queued, held entries included), and the drain at the
//! end hands back exactly what the reference holds. Every payload is dropped once.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};

use proptest::prelude::*;

use super::support::{audit, Drive, Drops, Token};
use super::{Key, Refusal, MAX_TICK, MAX_WHEEL_SIZE};

/// A deadline relative to the clock.
#[derive(Clone, Copy, Debug)]
enum When {
    After(u64),
    Passed(u64),
    Beyond(u64),
}

#[derive(Clone, Debug)]
enum Op {
    Insert(When, u8),
    /// A key handed out so far, live or stale, by its index modulo their number.
    Remove(usize),
    Reset(usize, When, u8),
    /// A step, which entries of the batch a remove takes while held (bits of the mask), and how
    /// many of the latest inserts the round's limit leaves out.
    Advance(u64, u8, u64),
    ToHead(u8, u64),
    /// An offer popped so far offered again, by its index modulo their number.
    Stale(usize),
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
    prop_oneof![
        8 => delay.prop_map(When::After),
        1 => (0..100u64).prop_map(When::Passed),
        1 => (0..1_000u64).prop_map(When::Beyond),
    ]
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
        6 => (when(), any::<u8>()).prop_map(|(when, sub)| Op::Insert(when, sub)),
        2 => any::<usize>().prop_map(Op::Remove),
        2 => (any::<usize>(), when(), any::<u8>()).prop_map(|(key, when, sub)| Op::Reset(key, when, sub)),
        2 => (step, any::<u8>(), back()).prop_map(|(step, cancels, back)| Op::Advance(step, cancels, back)),
        1 => (any::<u8>(), back()).prop_map(|(cancels, back)| Op::ToHead(cancels, back)),
        1 => any::<usize>().prop_map(Op::Stale),
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
    deadline: u64,
    sub: u8,
    seq: u64,
    key: Key,
    id: u32,
}

impl Expect {
    fn order(&self) -> (u64, u8, u64) {
        (self.deadline, self.sub, self.seq)
    }
}

#[derive(Default)]
struct Reference {
    /// The clock: the last tick advanced to.
    now: u64,
    /// Inserts accepted so far.
    seq: u64,
    /// The last round's limit: it never goes down.
    limit: u64,
    /// Pending entries by their order.
    pending: BTreeMap<(u64, u8, u64), Expect>,
    /// Each pending key's order.
    places: HashMap<Key, (u64, u8, u64)>,
    /// Every key handed out.
    keys: Vec<Key>,
}

impl Reference {
    fn deadline(&self, when: When) -> u64 {
        match when {
            When::After(delay) => self.now + delay,
            When::Passed(by) => self.now.saturating_sub(by),
            When::Beyond(by) => MAX_TICK + 1 + by,
        }
    }

    fn file(&mut self, expect: Expect) {
        self.pending.insert(expect.order(), expect);
        self.places.insert(expect.key, expect.order());
    }
}

fn expect_of(f: &super::Fired<Token>) -> Expect {
    Expect { deadline: f.deadline, sub: f.sub, seq: f.seq, key: f.key, id: f.payload.id }
}

fn run(wheel_size: u64, start: u64, ops: &[Op]) {
    let drops = Drops::default();
    let mut drive = Drive::new(wheel_size);
    let mut model = Reference { now: start, ..Reference::default() };
    assert!(drive.advance(start).is_empty());
    let mut ids = 0u32;
    for op in ops {
        let mut key_used = None;
        match *op {
            Op::Insert(when, sub) => {
                let deadline = model.deadline(when);
                let id = ids;
                ids += 1;
                match drive.wheel.insert(deadline, sub, model.seq, drops.token(id)) {
                    Ok((key, offer)) => {
                        assert!(deadline <= MAX_TICK, "{deadline} accepted");
                        assert!(!model.places.contains_key(&key), "{key:?} handed out twice");
                        drive.queue.extend(offer.iter().map(Reverse));
                        model.file(Expect { deadline, sub, seq: model.seq, key, id });
                        model.seq += 1;
                        model.keys.push(key);
                        key_used = Some(key);
                    }
                    Err(refused) => {
                        assert!(deadline > MAX_TICK, "{deadline} refused");
                        assert_eq!((refused.payload.id, refused.reason), (id, Refusal::TooFar));
                    }
                }
            }
            Op::Remove(pick) if !model.keys.is_empty() => {
                let key = model.keys[pick % model.keys.len()];
                let expected =
                    model.places.remove(&key).map(|place| model.pending.remove(&place).unwrap().id);
                assert_eq!(drive.wheel.remove(key).map(|token| token.id), expected, "remove {key:?}");
                key_used = Some(key);
            }
            Op::Reset(pick, when, sub) if !model.keys.is_empty() => {
                let key = model.keys[pick % model.keys.len()];
                let deadline = model.deadline(when);
                let expected = match model.places.get(&key) {
                    None => Ok(false),
                    Some(_) if deadline > MAX_TICK => Err(Refusal::TooFar),
                    Some(&place) => {
                        let expect = model.pending.remove(&place).unwrap();
                        model.file(Expect { deadline, sub, ..expect });
                        Ok(true)
                    }
                };
                assert_eq!(drive.reset(key, deadline, sub), expected, "reset {key:?} to {deadline}");
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
        }
        assert_eq!(drive.wheel.len(), model.pending.len());
        assert!(drive.wheel.time() <= model.now, "the wheel's time passed the clock");
        if let Some(key) = key_used {
            let expected = model.places.get(&key).map(|place| {
                let expect = model.pending[place];
                (expect.deadline, expect.sub)
            });
            assert_eq!(drive.wheel.deadline(key), expected, "deadline of {key:?}");
        }
        if let (Some(next), Some(first)) = (drive.next_tick(), model.pending.keys().next()) {
            assert!(next <= first.0.max(model.now), "head {next} after the earliest entry's {}", first.0);
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
    assert!(
        model.keys.iter().all(|&key| drive.wheel.remove(key).is_none()),
        "every key stale after the drain"
    );
    drop(drive);
    drops.assert_each_once(ids);
}

/// Advances both to `now` in one round whose limit leaves out the `back` latest inserts (the
/// limit never goes down): the wheel holds exactly what is due by `now` and numbered at most the
/// limit, in the reference's order, and leaves the rest due for a later round; held, each is
/// counted, reads its deadline back and refuses a reset; the entries `cancels` picks (bit `i % 8`
/// for the `i`th) are removed while held, and every entry is then claimed in the batch's order:
/// the removed ones find nothing, the others their payloads.
fn advance(drive: &mut Drive<Token>, model: &mut Reference, (now, back): (u64, u64), cancels: u8) {
    model.limit = model.limit.max(model.seq.saturating_sub(1 + back));
    let limit = model.limit;
    let batch = drive.collect_by(now, limit);
    let taken: Vec<_> = model.pending.range(..=(now, u8::MAX, u64::MAX)).map(|(&order, _)| order).collect();
    let mut expected = Vec::new();
    for order in taken.into_iter().filter(|order| order.2 <= limit) {
        let expect = model.pending.remove(&order).unwrap();
        model.places.remove(&expect.key);
        expected.push(expect);
    }
    model.now = model.now.max(now);
    let held: Vec<_> = batch.iter().map(|d| (d.deadline, d.sub, d.seq, d.key)).collect();
    let wanted: Vec<_> = expected.iter().map(|e| (e.deadline, e.sub, e.seq, e.key)).collect();
    assert_eq!(held, wanted, "advance to {now}, limit {limit}");
    assert_eq!(drive.wheel.len(), model.pending.len() + batch.len(), "held entries are counted");
    let picked = |at: usize| cancels & (1 << (at % 8)) != 0;
    for (at, (due, expect)) in batch.iter().zip(&expected).enumerate() {
        assert_eq!(drive.wheel.deadline(due.key), Some((due.deadline, due.sub)), "held: pending");
        assert_eq!(drive.wheel.reset(due.key, now + 1, 0), Ok(None), "held: a reset is refused");
        if picked(at) {
            assert_eq!(drive.wheel.remove(due.key).map(|token| token.id), Some(expect.id), "removed held");
        }
    }
    for (at, (due, expect)) in batch.iter().zip(&expected).enumerate() {
        let claimed = drive.wheel.claim(due.key).map(|token| token.id);
        assert_eq!(claimed, (!picked(at)).then_some(expect.id), "claim of {:?}", due.key);
    }
    assert_eq!(drive.wheel.len(), model.pending.len());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn behaves_as_the_reference(
        wheel_size in wheel_size(),
        start in start(),
        ops in proptest::collection::vec(op(), 1..300),
    ) {
        run(wheel_size, start, &ops);
    }
}
