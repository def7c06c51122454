//! What the wheel's tests share: the audit of its invariants, payloads that count their drops, and
//! the Kafka drive with a reference heap of offers standing in for the driver's queue.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::fmt;
use std::rc::Rc;

use super::super::life::{ListCode, Status};
use super::super::slab::NIL;
use super::buckets::NO_ROUND;
use super::{BucketCode, Due, Fired, Key, Offer, Wheel, WheelStats};
use crate::deadline::Deadline;
use crate::wheel::place::{max_levels, slot_ticks};

/// A far deadline word of `tick` in its 256th `rank` (the wheel's tests know ticks and ranks).
pub(super) fn word(tick: u64, rank: u8) -> Deadline {
    Deadline::new(tick, rank).expect("a tick in range")
}

/// An order (deadline word, stamp) as (tick, rank, stamp), to compare with literals.
pub(super) fn flat((deadline, stamp): (Deadline, u64)) -> (u64, u8, u64) {
    (deadline.tick(), deadline.rank(), stamp)
}

/// Checks the wheel's invariants (module docs): the slab's, then every list (links both ways, each
/// slot's list code, and for a bucket the slot its tick names), each bucket's entries in its round
/// and slot, the overdue list's due, every occupied slot on one list or held (and due), pending;
/// and, with `queued`, that every bucket holding entries has its round queued.
pub(super) fn audit<P>(wheel: &Wheel<P>, queued: Option<&BinaryHeap<Reverse<Offer>>>) {
    wheel.slab.check();
    wheel.check_run();
    assert!(wheel.levels.created() <= max_levels(wheel.wheel_size));
    let walk = |code: BucketCode, head: u32, tail: u32, each: &mut dyn FnMut(u64)| {
        let (mut prev, mut index, mut seen) = (NIL, head, 0);
        while index != NIL {
            let slot = wheel.slab.slot(index);
            let entry = slot.entry.as_ref().expect("a linked slot is occupied");
            let tick = entry.when.tick();
            let derived = match slot.life.list().as_level() {
                Some(level) => BucketCode::encode(level, wheel.levels.slot_of(level, tick)),
                None => {
                    assert_eq!(slot.life.list(), ListCode::OVERDUE, "slot {index}'s list");
                    BucketCode::OVERDUE
                }
            };
            assert_eq!(derived, code, "slot {index}'s list, from its life word and tick");
            assert_eq!(slot.life.status(), Status::Pending, "slot {index} occupied");
            assert_eq!(slot.prev, prev, "slot {index}'s prev");
            each(tick);
            seen += 1;
            assert!(seen <= wheel.len(), "a list runs in a cycle");
            (prev, index) = (index, slot.next);
        }
        assert_eq!(tail, prev, "{code:?}: tail");
        seen
    };
    let time = wheel.time;
    let queued: Option<HashSet<Offer>> = queued.map(|queued| queued.iter().map(|q| q.0).collect());
    if let (Some(queued), false) = (&queued, wheel.overdue.is_empty()) {
        assert!(queued.iter().any(|q| q.bucket == BucketCode::OVERDUE), "the overdue list is not queued");
    }
    let mut linked = walk(BucketCode::OVERDUE, wheel.overdue.head, wheel.overdue.tail, &mut |deadline| {
        assert!(deadline <= time, "overdue entry due {deadline} after the time {time}")
    });
    let mut records = HashSet::new();
    for (level, slot, bucket) in wheel.levels.iter() {
        let code = BucketCode::encode(level, slot);
        let (expiration, ticks) = (bucket.expiration, slot_ticks(wheel.wheel_size, level).unwrap());
        if !bucket.list.is_empty() {
            assert_ne!(expiration, NO_ROUND, "{code:?} holds entries and no round");
            assert_eq!(((expiration / ticks) % wheel.wheel_size) as usize, slot, "{code:?}'s round");
            assert_eq!(expiration % ticks, 0, "{code:?}'s round starts on its slot");
        }
        let in_round = &mut |deadline| {
            assert!(
                expiration <= deadline && deadline - expiration < ticks,
                "{code:?} round {expiration} holds {deadline}, time {time}"
            );
        };
        if bucket.split == 0 {
            if let (Some(queued), false) = (&queued, bucket.list.is_empty()) {
                let offer = Offer { expiration, bucket: code };
                assert!(queued.contains(&offer), "{offer:?} holds entries and is not queued");
            }
            linked += walk(code, bucket.list.head, bucket.list.tail, in_round);
            continue;
        }
        // A split bucket (`split.rs`): its list holds no link and counts its stages' entries, each
        // stage's entries in the stage their tick names, and its next visit queued.
        assert!(level > 0 && records.insert(bucket.split), "{code:?}'s record");
        assert_eq!((bucket.list.head, bucket.list.tail), (NIL, NIL), "{code:?} split");
        let split = &wheel.splits[bucket.split as usize - 1];
        let mut in_stages = 0;
        for (index, stage) in split.stages.iter().enumerate() {
            let seen = walk(code, stage.head, stage.tail, &mut |deadline| {
                in_round(deadline);
                let plan = wheel.stage_of(level, expiration, deadline);
                assert_eq!((plan.index, (plan.opens, plan.due)), (index, split.plans[index]), "{code:?}");
            });
            assert_eq!(seen, stage.len as usize, "{code:?} stage {index}'s count");
            in_stages += seen;
        }
        assert_eq!(in_stages, bucket.list.len as usize, "{code:?} counts its stages' entries");
        linked += in_stages;
        if let (Some(queued), true) = (&queued, in_stages > 0) {
            let visit = if split.next_visit == expiration { code } else { code.visit() };
            let offer = Offer { expiration: split.next_visit, bucket: visit };
            assert!(queued.contains(&offer), "{offer:?}: a split bucket's next visit is not queued");
        }
    }
    assert_eq!(records.len() + wheel.free_splits.len(), wheel.splits.len(), "every record used or free");
    let mut held = 0;
    for index in 0..wheel.slab.slots() as u32 {
        let slot = wheel.slab.slot(index);
        if let Some(entry) = slot.entry.as_ref().filter(|_| slot.life.list() == ListCode::HELD) {
            let tick = entry.when.tick();
            assert!(tick <= time, "held entry {index} due {tick} after the time {time}");
            held += 1;
        }
    }
    assert_eq!(linked + held, wheel.len(), "every occupied slot on one list or held");
}

/// The wheel's load found by walking it (every list by its links, every slot for the held ones,
/// every bucket written), none of the counts [`Wheel::stats`] reads: what that must equal.
pub(super) fn walked_stats<P>(wheel: &Wheel<P>) -> WheelStats {
    let walk = |mut index: u32| {
        let mut count = 0;
        while index != NIL {
            (count, index) = (count + 1, wheel.slab.slot(index).next);
        }
        count
    };
    let mut stats =
        WheelStats { pending_per_level: vec![0; wheel.levels.created()], ..WheelStats::default() };
    let mut levels = HashSet::new();
    for (level, slot, bucket) in wheel.levels.iter() {
        let entries = match bucket.split {
            0 => walk(bucket.list.head),
            record => wheel.splits[record as usize - 1].stages.iter().map(|stage| walk(stage.head)).sum(),
        };
        assert_eq!(bucket.list.len as usize, entries, "bucket ({level}, {slot})'s count");
        stats.pending_per_level[level] += entries;
        let most = stats.fullest_bucket.map_or(0, |(_, _, most)| most);
        if entries > most {
            stats.fullest_bucket = Some((level, slot, entries));
        }
        stats.resident_buckets += 1;
        levels.insert(level);
    }
    stats.levels_in_use = levels.len();
    stats.overdue = walk(wheel.overdue.head);
    stats.held = (0..wheel.slab.slots() as u32)
        .map(|index| wheel.slab.slot(index))
        .filter(|slot| slot.entry.is_some() && slot.life.list() == ListCode::HELD)
        .count();
    stats
}

/// The Kafka drive: a wheel and a heap of its offers (the driver's queue), every offer queued.
pub(super) struct Drive<P> {
    pub(super) wheel: Wheel<P>,
    pub(super) queue: BinaryHeap<Reverse<Offer>>,
    /// Offers the queue popped so far (for stale offers offered again).
    pub(super) popped: Vec<Offer>,
    /// Advances so far, and how many make one audit (1: each).
    advances: u64,
    pub(super) audit_every: u64,
    /// The stamp of the next [`insert`](Drive::insert).
    pub(super) stamp: u64,
    /// The most entries one flush (one hold of the shard's lock) and one advance walked.
    pub(super) load: Load,
}

/// The most entries one flush (or visit, the splits it made included), one advance, and one
/// insert or reset (a split) of a [`Drive`] walked under the lock: held, cascaded, kept or moved
/// to a stage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Load {
    pub(super) per_flush: usize,
    pub(super) per_advance: usize,
    pub(super) per_insert: usize,
}

impl<P> Drive<P> {
    pub(super) fn new(wheel_size: u64) -> Self {
        Drive {
            wheel: Wheel::new(wheel_size),
            queue: BinaryHeap::new(),
            popped: Vec::new(),
            advances: 0,
            audit_every: 1,
            stamp: 0,
            load: Load::default(),
        }
    }

    /// Inserts at `deadline` in its 256th `sub` with the next stamp of the drive's count (0, 1,
    /// 2, ... in a test that gives no stamps itself).
    pub(super) fn insert(&mut self, deadline: u64, sub: u8, payload: P) -> Key {
        let stamp = self.stamp;
        self.insert_seq(deadline, sub, stamp, payload)
    }

    /// Inserts with the stamp `stamp` (the drive's count then goes on after it).
    pub(super) fn insert_seq(&mut self, deadline: u64, sub: u8, stamp: u64, payload: P) -> Key {
        self.stamp = self.stamp.max(stamp + 1);
        let (key, offers) = self
            .wheel
            .insert(word(deadline, sub), stamp, payload)
            .unwrap_or_else(|_| panic!("{deadline} refused"));
        self.queue.extend(offers.iter().map(Reverse));
        self.load.per_insert = self.load.per_insert.max(std::mem::take(&mut self.wheel.walked));
        key
    }

    /// [`Wheel::reset`] to `deadline` in its 256th `sub`, its offers queued: whether it moved.
    pub(super) fn reset(&mut self, key: Key, deadline: u64, sub: u8) -> bool {
        let Some(offers) = self.wheel.reset(key, word(deadline, sub)) else { return false };
        self.queue.extend(offers.iter().map(Reverse));
        self.load.per_insert = self.load.per_insert.max(std::mem::take(&mut self.wheel.walked));
        true
    }

    /// Advances tick by tick from the tick after `from` to `to`, each entry claimed: (tick,
    /// payload) of each fired, each at its own tick, the stats checked against a walk after each
    /// advance.
    pub(super) fn fire_ticks(&mut self, from: u64, to: u64) -> Vec<(u64, P)> {
        let mut fired = Vec::new();
        for now in from + 1..=to {
            fired.extend(self.advance(now).into_iter().map(|f| {
                assert_eq!(f.deadline.tick(), now, "fired at its tick");
                (now, f.payload)
            }));
            assert_eq!(self.wheel.stats(), walked_stats(&self.wheel), "tick {now}");
        }
        fired
    }

    /// [`collect`](Drive::collect), then each due entry claimed in the batch's order: what fired.
    pub(super) fn advance(&mut self, now: u64) -> Vec<Fired<P>> {
        let batch = self.collect(now);
        let claim = |due: Due| {
            let payload = self.wheel.claim(due.key).expect("a held entry is claimed once");
            Fired { deadline: due.deadline, stamp: due.stamp, key: due.key, payload }
        };
        batch.into_iter().map(claim).collect()
    }

    /// Pops and flushes every offer due by `now` (the overdue list's too), queueing the flushes'
    /// offers: what fell due, held, sorted by [`Due::order`], the wheel audited.
    pub(super) fn collect(&mut self, now: u64) -> Vec<Due> {
        self.collect_by(now, u64::MAX)
    }

    /// [`collect`](Drive::collect) as one round with the sequence-number limit `limit`: the
    /// offers a flush returns for the next round are queued once the round is over.
    pub(super) fn collect_by(&mut self, now: u64, limit: u64) -> Vec<Due> {
        let (mut out, mut offers, mut next) = (Vec::new(), Vec::new(), Vec::new());
        let mut walked = 0;
        while let Some(&Reverse(offer)) = self.queue.peek() {
            if offer.expiration > now {
                break;
            }
            self.queue.pop();
            self.popped.push(offer);
            self.wheel.walked = 0;
            next.extend(self.wheel.flush(offer.bucket, offer.expiration, limit, &mut out, &mut offers));
            let entries = std::mem::take(&mut self.wheel.walked);
            self.load.per_flush = self.load.per_flush.max(entries);
            walked += entries;
            self.queue.extend(offers.drain(..).map(Reverse));
        }
        self.queue.extend(next.into_iter().map(Reverse));
        self.load.per_advance = self.load.per_advance.max(walked);
        out.sort_by_key(Due::order);
        self.advances += 1;
        if self.advances % self.audit_every == 0 {
            audit(&self.wheel, Some(&self.queue));
        }
        out
    }

    /// The earliest expiration queued.
    pub(super) fn next_tick(&self) -> Option<u64> {
        self.queue.peek().map(|offer| offer.0.expiration)
    }
}

/// Counts drops per token id.
#[derive(Clone, Default)]
pub(super) struct Drops(Rc<RefCell<Vec<u32>>>);

/// A payload that counts its drop.
pub(super) struct Token {
    pub(super) id: u32,
    drops: Drops,
}

impl Drops {
    pub(super) fn token(&self, id: u32) -> Token {
        Token { id, drops: self.clone() }
    }

    /// Each of tokens `0..n` dropped exactly once, no other.
    pub(super) fn assert_each_once(&self, n: u32) {
        let drops = self.0.borrow();
        assert_eq!(drops.len(), n as usize, "tokens dropped");
        for (id, &count) in drops.iter().enumerate() {
            assert_eq!(count, 1, "token {id} dropped {count} times");
        }
    }
}

impl Drop for Token {
    fn drop(&mut self) {
        let mut drops = self.drops.0.borrow_mut();
        let id = self.id as usize;
        if drops.len() <= id {
            drops.resize(id + 1, 0);
        }
        drops[id] += 1;
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token({})", self.id)
    }
}
