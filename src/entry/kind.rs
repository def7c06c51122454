//! What a held entry's task runs when fired: user code (a closure), or none (an async sleep's task,
//! which hands its waker over, or a delay queue's value, which goes to the queue's ready list). The
//! waker of a drive future's sleep fires only the second kind (`timer/advance.rs`).

use super::{EntryArena, EntryId, Life};

/// Whether the entry in slot `id`, taken out of its bucket to fire (marked due by the visit, held
/// by the caller, not released yet), is pending with a closure that runs user code; if so, it is
/// no longer marked due: the caller re-adds it instead of firing it, so it is in transit to a
/// re-add, where a reset writes its new deadline and the re-add places it by that (`retarget.rs`),
/// as for an entry a visit found due but stamped after the advance began. `false` for a sleep's
/// task and a value, and for an entry no longer pending (a cancel claimed it: its holder only
/// releases it). The task stays in the slot until its holder claims or releases it, so the answer
/// holds until then.
pub(crate) fn set_aside_if_user_code(arena: &EntryArena, id: EntryId) -> bool {
    let mut state = arena.lock(id);
    let user_code = state.task.as_ref().is_some_and(|task| !task.is_wake() && !task.is_value());
    // Seeded fault `drive_set_aside_stays_due` (docs/loom.md): it stays marked due, so a reset
    // returns `false` though the closure waits, pending, for a later advance.
    if user_code && !fault!("drive_set_aside_stays_due") {
        state.set_life(Life(state.life().0 & !Life::DUE));
    }
    user_code
}
