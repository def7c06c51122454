//! The shard core: the engine `Timer` runs on (`crate::timer`; docs/lean_core.md, "A
//! core rebuilt this way, room by room"). Each shard is one lock over a slab of slots with
//! intrusive list links and a wheel of list heads; a thread schedules into a shard of its own, any
//! thread cancels through its handle's shard, and the driver polls one delay queue of the shards'
//! buckets, flushes each bucket due under its shard's lock, holding its due entries there, and
//! claims each under that lock just before it runs it (a cancel until then wins).
//!
//! * `core.rs`: [`Core`](core::Core), the rooms below assembled: shard headers from the pool
//!   whose state is a wheel beside the caller's extra, a closed flag and the shard's totals, a
//!   thread's schedules into a shard of its own, cancel, reset and
//!   deadline through a handle, the driver's one delay queue of buckets (`crate::delay_queue`,
//!   keyed by shard and bucket: a schedule offers a bucket whose round it set, after linking; the
//!   advance polls and flushes) and its batch merged in deadline and sequence order, held until
//!   each entry's claim, the count without locks, the close and drain at shutdown (a schedule racing
//!   it drained or refused). Its module docs state which lock orders what.
//! * `lock.rs`: [`ShardLock`](lock::ShardLock), the shard's lock: test-and-set, its unlock one
//!   `Release` store (one read-modify-write per critical section), its waiters spinning, yielding,
//!   then sleeping in bounded steps (no fairness; a sleeping waiter sees the unlock up to about
//!   115 µs late; none burns a core).
//! * `pool.rs`: shard headers (the lock over the shard's state and epoch, and the count `len`
//!   reads without the lock) from a process-wide pool, never freed, so that a handle (`&'static`
//!   header, epoch, slot, generation; `Copy`) cancels with no reference count: it locks the header
//!   and compares the epoch, which moves when the owner gives the header back. The state is the
//!   caller's type ([`ShardState`](pool::ShardState)).
//! * `slab.rs`: one shard's slots, each named by its occupant's stamp (the caller's, unique per
//!   wheel: the slot's generation), and their free list; slots written ahead and given back. On
//!   Linux the slots are a mapping of their own (`slab/slots.rs`), into which a growing slab moves
//!   runs of resident slots from its core's reserve.
//! * `reserve.rs`: [`Reserve`](reserve::Reserve), room written ahead for a whole core
//!   (`Core::with_capacity`, `core/room.rs`): units of 256 slots made resident at the build, taken
//!   in runs by whichever shard grows and given back by its shrink; its lock is taken only inside a
//!   shard's.
//! * `life.rs`: a slot's life word, the stamp, the list the entry is on and how it ended (kept
//!   until the slot's reuse, so that a key reads it: [`Status`](life::Status)).
//! * `wheel/`: one shard's wheel over its slab, sequential (the shard's lock guards it), in the
//!   timer's contract's geometry (Kafka's): levels of `wheel_size` buckets created as deadlines
//!   need them, each bucket a list and the start of its round, placed by `crate::wheel::place`;
//!   an insert, a reset or a cascade reports when it set a bucket's round, for the caller to offer
//!   the bucket to its queue, and the queue's pops come back as flushes; deadlines already passed
//!   wait on an overdue list, offered to the queue at the wheel's time. A flush holds its due
//!   entries in their slots for the batch's claims; a batch carries what merges it across shards
//!   (the crate's `Deadline` word and the caller's stamp). A slot is 48 bytes for a payload of
//!   `Option<InlineTask>`'s size. Each bucket and level counts its entries under the shard's
//!   lock, and `Core::stats` reads each shard's load under its lock in turn (`wheel/stats.rs`,
//!   `core/stats.rs`): what `Timer::stats()` reports of the wheel.
//! * `faults.rs`: the room's seeded faults for the loom models (`loom_tests/shard.rs`,
//!   `loom_tests/shard_core.rs`, docs/loom.md); `stand_in.rs`: a small state (slots of payloads)
//!   for the pool's tests and models.
#![cfg_attr(not(test), allow(dead_code))]

pub(crate) mod core;
mod faults;
pub(crate) mod life;
// A module with `unsafe` code (see the crate's "Unsafe code"): the lock's cell behind its guard.
#[allow(unsafe_code)]
pub(crate) mod lock;
pub(crate) mod pool;
// A module with `unsafe` code (see the crate's "Unsafe code"): the reserve's mapping, unmapped.
#[allow(unsafe_code)]
pub(crate) mod reserve;
mod slab;
#[cfg(test)]
pub(crate) use slab::{STEP_BYTES, STEP_SLOTS};
#[cfg(any(test, delaywheel_loom))]
pub(crate) mod stand_in;
pub(crate) mod wheel;

#[cfg(all(test, not(delaywheel_loom)))]
mod lock_tests;
#[cfg(all(test, not(delaywheel_loom)))]
mod pool_tests;
