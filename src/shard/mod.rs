//! The shard core: the timer core `Timer` moves onto (docs/lean_core.md, "A core rebuilt this
//! way, room by room"). Each shard is one lock over a slab of slots with intrusive list links and
//! a wheel of list heads; a thread schedules into a shard of its own, any thread cancels through
//! its handle's shard, and the driver takes what is due shard by shard. The rooms here are built
//! and modelled beside today's core, which `Timer` still runs on; nothing outside this room uses
//! them yet.
//!
//! * `wake.rs`: the driver's wake-up tick, the hand-shake by which a schedule wakes a driver that
//!   sleeps past the schedule's deadline.
//! * `slab.rs`: one shard's slots, each named by a 64-bit generation, and their free list; slots
//!   written ahead and given back.
//! * `wheel.rs`: one shard's wheel over its slab, sequential (the shard's lock guards it):
//!   placement, insert, remove, reset in place, the advance with its cascades, the next tick, and
//!   the drain at shutdown; a fired batch carries what merges it across shards (deadline, its
//!   256th of a tick, sequence).
#![cfg_attr(not(test), allow(dead_code))]

mod slab;
pub(crate) mod wake;
pub(crate) mod wheel;
