//! The wheel's arithmetic and its trace events, which each shard's wheel (`shard/wheel/`) uses:
//! where a deadline goes (`place.rs`, pure arithmetic: the level, the slot, the round and the
//! stage of a tick from a wheel's time) and what a flush reports to the `tracing` feature
//! (`trace.rs`).

pub(crate) mod place;
pub(crate) mod trace;
