//! What the wheel's tests share: the audit of its invariants, payloads that count their drops, and
//! an advance that audits.

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

use super::super::slab::NIL;
use super::{bucket_for, decode, level_for, Fired, Wheel, TIME_END};

/// Checks the wheel's invariants (module docs): the slab's, then every list (links both ways, each
/// slot's bucket, each entry in the bucket its filed tick and the time give, occupancy bits), every
/// occupied slot on one list, and the next tick after the time.
pub(super) fn audit<P>(wheel: &Wheel<P>) {
    wheel.slab.check();
    let mut linked = 0;
    for (level, lists) in wheel.lists.iter().enumerate() {
        for (bucket, &list) in lists.iter().enumerate() {
            let in_use = (wheel.occupied[level] >> bucket) & 1 == 1;
            assert_eq!(list.head != NIL, in_use, "level {level} bucket {bucket}: occupancy bit");
            let (mut prev, mut index) = (NIL, list.head);
            while index != NIL {
                let slot = wheel.slab.slot(index);
                let entry = slot.entry.as_ref().expect("a linked slot is occupied");
                assert_eq!(decode(entry.bucket), (level, bucket), "slot {index}'s bucket");
                assert_eq!(slot.prev, prev, "slot {index}'s prev");
                let at = wheel.filed_at(entry.deadline());
                let (time, deadline) = (wheel.time, entry.deadline());
                assert_eq!(
                    (level_for(time, at), bucket_for(level, at)),
                    (level, bucket),
                    "slot {index} due {deadline} filed at {at}, time {time}"
                );
                linked += 1;
                assert!(linked <= wheel.len(), "a list runs in a cycle");
                (prev, index) = (index, slot.next);
            }
            assert_eq!(list.tail, prev, "level {level} bucket {bucket}: tail");
        }
    }
    assert_eq!(linked, wheel.len(), "every occupied slot on one list");
    assert_eq!(wheel.is_empty(), wheel.next_tick().is_none());
    if let Some(tick) = wheel.next_tick() {
        assert!(tick > wheel.time || wheel.time == TIME_END, "next tick {tick}, time {}", wheel.time);
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

/// Advances `wheel` to `now`: what fired, audited.
pub(super) fn fire<P>(wheel: &mut Wheel<P>, now: u64) -> Vec<Fired<P>> {
    let mut out = Vec::new();
    wheel.advance(now, &mut out);
    audit(wheel);
    out
}
