//! The model's steps for held entries besides an advance's: the entries of the tick after the
//! clock's taken by a limit ([`Wheel::take_due_by`](super::super::Wheel::take_due_by)), and held
//! entries set aside, pending again, for the next advance to take.

use std::cmp::Reverse;

use super::super::super::life::Status;
use super::super::support::{audit, Drive, Token};
use super::super::Due;
use super::{Expect, Reference, MAX_TICK};
use crate::deadline::Fractions;

/// What becomes of each held entry: bit `i % 8` of `cancels` removes the `i`th, else bit `i % 8`
/// of `asides` sets it aside (the reference files it again, pending), else it is claimed.
pub(super) fn settle(
    drive: &mut Drive<Token>,
    model: &mut Reference,
    batch: &[Due],
    expected: &[Expect],
    (cancels, asides): (u8, u8),
) {
    let bit = |mask: u8, at: usize| mask & (1 << (at % 8)) != 0;
    for (at, (due, expect)) in batch.iter().zip(expected).enumerate() {
        assert_eq!(drive.wheel.status(due.key), Some(Status::Pending), "held: pending");
        if bit(cancels, at) {
            assert_eq!(drive.wheel.remove(due.key).map(|token| token.id), Some(expect.id), "removed held");
            model.ended.insert(due.key.slot, (due.key, Status::Cancelled));
            assert!(drive.wheel.set_aside(due.key).is_none(), "a set-aside after the remove finds nothing");
        } else if bit(asides, at) {
            let offers = drive.wheel.set_aside(due.key).expect("held: set aside");
            drive.queue.extend(offers.iter().map(Reverse));
            model.file(*expect);
            assert_eq!(drive.wheel.deadline(due.key), Some(expect.deadline), "set aside: pending");
        } else {
            assert_eq!(drive.wheel.claim(due.key).map(|token| token.id), Some(expect.id), "claim");
            model.ended.insert(due.key.slot, (due.key, Status::Fired));
        }
        assert_eq!(drive.wheel.status(due.key), model.status(due.key), "status of {:?}", due.key);
    }
    assert_eq!(drive.wheel.len(), model.pending.len());
    audit(&drive.wheel, Some(&drive.queue));
}

/// Takes, by the exact word `below` nanoseconds into the tick after the clock's and the stamp
/// limit `stamps` (modulo the stamps handed out, plus one), exactly the reference's entries of
/// that tick at or before the word and within the limit, held; then settles them.
pub(super) fn take_due_by(
    drive: &mut Drive<Token>,
    model: &mut Reference,
    below: u64,
    stamps: u64,
    masks: (u8, u8),
) {
    let tick = model.now + 1;
    let fractions = Fractions::new(1_000_000).expect("a 1 ms tick");
    let Some(limit) = fractions.deadline(tick, below % 1_000_000).filter(|_| tick <= MAX_TICK) else {
        return;
    };
    let stamps = stamps % (model.seq + 1);
    let mut batch = Vec::new();
    drive.wheel.take_due_by(limit, stamps, &mut batch);
    batch.sort_by_key(Due::order);
    let taken: Vec<(u64, Expect)> = model
        .pending
        .range(..=(limit, u64::MAX))
        .filter(|((deadline, stamp), _)| deadline.tick() == tick && *stamp <= stamps)
        .map(|(&(_, stamp), &expect)| (stamp, expect))
        .collect();
    let expected: Vec<Expect> = taken.iter().map(|&(_, expect)| expect).collect();
    for expect in &expected {
        model.pending.remove(&expect.order());
        model.places.remove(&expect.key);
    }
    let held: Vec<_> = batch.iter().map(|d| (d.deadline, d.stamp, d.key)).collect();
    let wanted: Vec<_> = expected.iter().map(|e| (e.deadline, e.stamp, e.key)).collect();
    assert_eq!(held, wanted, "take_due_by {limit:?}, stamps at most {stamps}");
    assert_eq!(drive.wheel.len(), model.pending.len() + batch.len(), "held entries are counted");
    settle(drive, model, &batch, &expected, masks);
}

/// Advances both to `now`, as the model's advance does, but sets aside the entries `asides`
/// picks (and removes those `cancels` picks): the next advance takes the set-aside ones again.
pub(super) fn advance_setting_aside(
    drive: &mut Drive<Token>,
    model: &mut Reference,
    now: u64,
    masks: (u8, u8),
) {
    let (batch, expected) = super::advance_by(drive, model, now, u64::MAX);
    settle(drive, model, &batch, &expected, masks);
}
