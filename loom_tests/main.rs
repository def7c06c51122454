//! Loom models of every race in the timer.
//!
//! Built only with `RUSTFLAGS="--cfg delaywheel_loom"`; otherwise this test target is empty. Run them
//! with `scripts/loom.sh` (all of them, or one by name); `docs/loom.md` says what each proves and how
//! to debug a failure.
//!
//! Every model but the slot lock's and the shard core's own (`slot_lock.rs`, `shard*.rs`) drives the
//! public API of a manual timer on a `ManualClock` (loom has no clock; a manual timer starts no
//! thread and never waits) from `loom::thread`s, and keeps small: 2–3 threads, wheel size 2 (8 for the paced chunk), 1–3 tasks. The main model thread
//! is one of the racers.
//!
//! The suite runs on both engines of `Timer`, the arena and the sharded core (`--cfg
//! delaywheel_core`); the models of the arena's own structures are gated `cfg(not(delaywheel_core))`.
#![cfg(delaywheel_loom)]

mod support;

mod advance;
mod before_origin;
// Models the arena's bucket expiration, reset by a flush as the bucket is reused.
#[cfg(not(delaywheel_core))]
mod bucket_reuse;
mod cancel;
#[cfg(feature = "async")]
mod drive;
mod early_cascade;
mod len;
// Models the arena's levels, each created once on first use.
#[cfg(not(delaywheel_core))]
mod overflow_level;
mod passed_mid_tick;
mod purgatory;
mod queue;
mod queue_clear;
#[cfg(feature = "async")]
mod queue_consumers;
mod queue_order;
mod reset;
mod schedule_vs_flush;
mod shard;
mod shard_core;
mod shrink;
mod shutdown;
#[cfg(feature = "async")]
mod sleep;
// Models the arena's slot lock (`src/entry/slot_lock/`).
#[cfg(not(delaywheel_core))]
mod slot_lock;
mod slot_reuse;
mod stale_time;
