//! Loom models of every race in the timer.
//!
//! Built only with `RUSTFLAGS="--cfg delaywheel_loom"`; otherwise this test target is empty. Run them
//! with `scripts/loom.sh` (all of them, or one by name); `docs/loom.md` says what each proves and how
//! to debug a failure.
//!
//! Every model but the shard core's own (`shard*.rs`, `overflow_level.rs`) drives the public API
//! of a manual timer on a `ManualClock` (loom has no clock; a manual timer starts no thread and
//! never waits) from `loom::thread`s, and keeps small: 2–3 threads, wheel size 2 or 4, 1–3 tasks. The main model thread
//! is one of the racers.
#![cfg(delaywheel_loom)]

mod support;

mod advance;
mod before_origin;
mod bucket_reuse;
mod cancel;
#[cfg(feature = "async")]
mod drive;
mod early_cascade;
mod len;
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
mod shrink_steps;
mod shutdown;
#[cfg(feature = "async")]
mod sleep;
mod slot_reuse;
mod stale_time;
