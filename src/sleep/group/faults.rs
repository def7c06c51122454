//! Seeded faults of the tick groups, for the loom suite only (docs/loom.md). Each is one condition
//! at its site (no alternative body is longer than that); outside a fault build each folds to the
//! correct code. The models are `sleep::group_*` (`loom_tests/sleep.rs`).
//!
//! * `group_join_ignores_fired` (`mod.rs`, `State::join`): a join pushes its waker into a group
//!   that already fired, so the member is never woken and never elapses.
//! * `group_leave_counts_fired` (`member.rs`, the drop): a member that its group's fire counted
//!   out counts itself out again as it leaves, so `len()` reads one below the truth.
//! * `group_cancel_unmarked` (`mod.rs`, `State::settle`): a leave cancels the group's entry on
//!   reading no member, ignoring the thread's cache, without marking the group cancelled, so a
//!   member that the caching thread joins meanwhile is in a group whose entry is gone.
//! * `group_death_keeps_members` (`mod.rs`, `finish`): a group whose task is dropped unrun (a
//!   shutdown) neither counts out nor wakes its members.
