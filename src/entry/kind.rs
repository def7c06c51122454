//! What a held entry's task runs when fired: user code (a closure), or none (an async sleep's task,
//! which hands its waker over, or a delay queue's value, which goes to the queue's ready list). The
//! waker of a drive future's sleep fires only the second kind (`timer/advance.rs`).

use super::{EntryArena, EntryId};

/// Whether the entry in slot `id`, held by the caller (taken out of its bucket, not released yet),
/// is pending with a closure that runs user code. `false` for a sleep's task and a value, and for
/// an entry no longer pending (a cancel claimed it: its holder only releases it). The task stays
/// in the slot until its holder claims or releases it, so the answer holds until then.
pub(crate) fn runs_user_code(arena: &EntryArena, id: EntryId) -> bool {
    let state = arena.lock(id);
    state.task.as_ref().is_some_and(|task| !task.is_wake() && !task.is_value())
}
