//! Seeded faults of this room, for the loom suite only (docs/loom.md): the alternative bodies that
//! a `fault!("name")` site switches to. Outside a fault build every site folds to the correct
//! code, and these only have to compile.
//!
//! * `shard_unlock_relaxed` (`lock.rs`, at its site): the lock's unlock stores `Relaxed`, so the
//!   next holder does not synchronise with the last and reaches the value concurrently with it.
//! * `shard_epoch_unchecked` (`pool.rs`, at its site): a handle's `lock` skips the epoch compare,
//!   so a handle whose owner gave the shard back cancels in the state of whoever took it next.
//! * `shard_epoch_bumped_after_give_back` ([`give_back_then_bump`]): the give-back moves the
//!   epoch in a second critical section, after the header is back in the pool.
//! * `shard_count_after_unlock` ([`cancel_counting_after_unlock`]): a cancel counts its entry out
//!   after the unlock, racing the count's other writers.
//! * `shard_wake_never_after_look` (`wake.rs`, at its site): the driver marks its look after it,
//!   not before, so a schedule linked behind the look reads the tick of the look before.
//! * `shard_core_wake_before_link` ([`schedule_reading_wake_first`]): `Core::schedule` reads the
//!   wake-up tick before it takes the shard's lock, so before its entry is linked, and may read a
//!   tick published by a look that misses the entry.
//! * `shard_core_advance_counts_out_after_unlock` ([`advance_counting_after_unlock`]): the core's
//!   advance counts a shard's fired entries out after the unlock, racing a schedule's count-in.

use super::pool::{Handle, Header, Pool, Shard, ShardState};
use super::wake::WakeTick;
use super::wheel::driven::Driven;
use super::wheel::{Fired, Refused};
use crate::sync::Ordering;

/// `shard_epoch_bumped_after_give_back`: `Pool::give_back` with the epoch moved after the header
/// went back to the pool, where a new owner may already have taken it and made handles under the
/// old epoch, which the old owner's handles still carry.
pub(super) fn give_back_then_bump<S: ShardState>(pool: &Pool<S>, header: &'static Header<S>) -> S {
    let mut body = header.lock.lock();
    let old = std::mem::take(&mut body.state);
    header.count.store(0, Ordering::Relaxed);
    drop(body);
    pool.free.lock().push(header);
    header.lock.lock().epoch += 1;
    old
}

/// `shard_count_after_unlock`: `Handle::cancel` counting out by a load and a store after the
/// unlock, where another thread's count (under the lock) may come between the two.
pub(super) fn cancel_counting_after_unlock<S: ShardState>(handle: &Handle<S>) -> Option<S::Payload> {
    let mut shard = handle.lock()?;
    let (slot, generation) = handle.entry();
    let payload = shard.state().take(slot, generation)?;
    drop(shard);
    let count = handle.header.count.load(Ordering::Relaxed);
    handle.header.count.store(count.wrapping_sub(1), Ordering::Relaxed);
    Some(payload)
}

/// `shard_core_advance_counts_out_after_unlock`: one shard's part of `Core::advance`, counting
/// the fired entries out by a load and a store after the unlock, where a schedule's count-in
/// (under the lock) may come between the two and be lost.
pub(super) fn advance_counting_after_unlock<P: Send + 'static>(
    shard: &Shard<Driven<P>>,
    now: u64,
    out: &mut Vec<Fired<P>>,
) {
    let before = out.len();
    shard.lock().state().advance(now, out);
    let count = shard.header.count.load(Ordering::Relaxed);
    shard.header.count.store(count.wrapping_sub(out.len() - before), Ordering::Relaxed);
}

/// `shard_core_wake_before_link`: `Core::schedule` into `shard` reading the wake-up tick before the
/// lock, where a look that misses the entry, not linked yet, may have published the tick read.
pub(super) fn schedule_reading_wake_first<P: Send + 'static>(
    word: &WakeTick,
    shard: &Shard<Driven<P>>,
    deadline: u64,
    sub: u8,
    seq: u64,
    payload: P,
) -> Result<(super::core::Handle<P>, bool), Refused<P>> {
    let wake = word.wakes_driver(deadline);
    let mut shard = shard.lock();
    let key = shard.state().insert(deadline, sub, seq, payload)?;
    shard.count_in(1);
    Ok((shard.handle(key.slot, key.generation), wake))
}
