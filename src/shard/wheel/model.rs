//! The wheel against a reference: random inserts, removes (by live and stale keys), resets and
//! advances (by steps from one tick to past the time's end, and to the next tick), from times
//! near the start, the top level's turn and the end of the range. The reference files each entry
//! at its tick (or the tick after the time, for a deadline already passed) in a `BTreeMap` ordered
//! by (that tick, the order it was linked in), so an advance to `now` must hand out exactly the
//! entries filed up to `now`, in that order, each with its deadline, 256th, sequence number and
//! key; `len`, the time, each key's deadline and the next tick (a lower bound, never after the
//! earliest entry) are compared after every step, the wheel is audited after every step, and the
//! drain at the end hands back exactly what the reference holds. Every payload is dropped once.

use std::collections::{BTreeMap, HashMap};

use proptest::prelude::*;

use super::support::{audit, fire, Drops, Token};
use super::{Key, Refusal, Wheel, MAX_TICK, TIME_END};

/// A deadline relative to the wheel's time.
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
    Advance(u64),
    ToNextTick,
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
        4 => 1..3u64,
        4 => 0..100u64,
        3 => 0..10_000u64,
        2 => 0..(1u64 << 32),
        1 => 0..(1u64 << 50),
    ];
    prop_oneof![
        6 => (when(), any::<u8>()).prop_map(|(when, sub)| Op::Insert(when, sub)),
        2 => any::<usize>().prop_map(Op::Remove),
        2 => (any::<usize>(), when(), any::<u8>()).prop_map(|(key, when, sub)| Op::Reset(key, when, sub)),
        2 => step.prop_map(Op::Advance),
        1 => Just(Op::ToNextTick),
    ]
}

fn start() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        0..(1u64 << 40),
        (1u64 << 54) - 300_000..(1u64 << 54),
        MAX_TICK - 400_000..=MAX_TICK
    ]
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

#[derive(Default)]
struct Reference {
    time: u64,
    /// Inserts accepted so far.
    seq: u64,
    /// Links (inserts and resets) so far.
    links: u64,
    /// Pending entries by (filed tick, link order).
    pending: BTreeMap<(u64, u64), Expect>,
    /// Each pending key's place in `pending`.
    places: HashMap<Key, (u64, u64)>,
    /// Every key handed out.
    keys: Vec<Key>,
}

impl Reference {
    fn deadline(&self, when: When) -> u64 {
        match when {
            When::After(delay) => self.time + delay,
            When::Passed(by) => self.time.saturating_sub(by),
            When::Beyond(by) => MAX_TICK + 1 + by,
        }
    }

    /// Files `expect` as the wheel does: at its tick, or at the tick after the time.
    fn file(&mut self, expect: Expect) {
        let at = expect.deadline.max(self.time + 1).min(TIME_END);
        self.links += 1;
        self.pending.insert((at, self.links), expect);
        self.places.insert(expect.key, (at, self.links));
    }

    fn earliest(&self) -> Option<u64> {
        self.pending.keys().next().map(|&(at, _)| at)
    }
}

fn run(start: u64, ops: &[Op]) {
    let drops = Drops::default();
    let mut wheel = Wheel::new();
    let mut model = Reference::default();
    assert!(fire(&mut wheel, start).is_empty());
    model.time = start;
    let mut ids = 0u32;
    for op in ops {
        let mut key_used = None;
        match *op {
            Op::Insert(when, sub) => {
                let deadline = model.deadline(when);
                let id = ids;
                ids += 1;
                match wheel.insert(deadline, sub, model.seq, drops.token(id)) {
                    Ok(key) => {
                        assert!(deadline <= MAX_TICK, "{deadline} accepted");
                        assert!(!model.places.contains_key(&key), "{key:?} handed out twice");
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
                assert_eq!(wheel.remove(key).map(|token| token.id), expected, "remove {key:?}");
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
                assert_eq!(wheel.reset(key, deadline, sub), expected, "reset {key:?} to {deadline}");
                key_used = Some(key);
            }
            Op::Remove(_) | Op::Reset(..) => {}
            Op::Advance(step) => {
                let now = model.time.saturating_add(step);
                advance(&mut wheel, &mut model, now);
            }
            Op::ToNextTick => {
                if let Some(next) = wheel.next_tick() {
                    advance(&mut wheel, &mut model, next);
                }
            }
        }
        assert_eq!((wheel.len(), wheel.time()), (model.pending.len(), model.time));
        let next = wheel.next_tick();
        assert_eq!(next.is_some(), model.earliest().is_some());
        if let (Some(next), Some(earliest)) = (next, model.earliest()) {
            assert!(next <= earliest, "next tick {next} after the earliest entry's {earliest}");
            assert!(next > model.time || model.time == TIME_END, "next tick {next} not after the time");
        }
        if let Some(key) = key_used {
            let expected = model.places.get(&key).map(|place| {
                let expect = model.pending[place];
                (expect.deadline, expect.sub)
            });
            assert_eq!(wheel.deadline(key), expected, "deadline of {key:?}");
        }
        audit(&wheel);
    }
    let mut out = Vec::new();
    wheel.drain_all(&mut out);
    audit(&wheel);
    let mut expected: Vec<Expect> = model.pending.values().copied().collect();
    expected.sort_by_key(|expect| expect.key.slot);
    let drained: Vec<Expect> = out
        .iter()
        .map(|f| Expect { deadline: f.deadline, sub: f.sub, seq: f.seq, key: f.key, id: f.payload.id })
        .collect();
    assert_eq!(drained, expected, "the drain hands back what is pending, in slot order");
    drop(out);
    assert!(model.keys.iter().all(|&key| wheel.remove(key).is_none()), "every key stale after the drain");
    drop(wheel);
    drops.assert_each_once(ids);
}

/// Advances both to `now`: the wheel hands out exactly what the reference has filed up to it, in
/// the reference's order.
fn advance(wheel: &mut Wheel<Token>, model: &mut Reference, now: u64) {
    let now = now.min(TIME_END);
    let fired: Vec<Expect> = fire(wheel, now)
        .iter()
        .map(|f| Expect { deadline: f.deadline, sub: f.sub, seq: f.seq, key: f.key, id: f.payload.id })
        .collect();
    let mut expected = Vec::new();
    while let Some(entry) = model.pending.first_entry().filter(|entry| entry.key().0 <= now) {
        let expect = entry.remove();
        model.places.remove(&expect.key);
        assert!(expect.deadline <= now, "never early");
        expected.push(expect);
    }
    model.time = model.time.max(now);
    assert_eq!(fired, expected, "advance to {now}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn behaves_as_the_reference(start in start(), ops in proptest::collection::vec(op(), 1..300)) {
        run(start, &ops);
    }
}
