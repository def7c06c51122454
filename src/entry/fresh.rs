//! `Fresh`: a new entry's contents before it occupies a slot, with its stamp.

use super::location::{self, LaneKey};
use super::{EntryArena, EntryId, InlineTask, StampBy, Ticket};
use crate::deadline::Deadline;

/// A new entry's contents, on its way into a slot its scheduler holds (vacant until then). The
/// insert that publishes the entry in a bucket writes them into the slot in the same critical
/// section that sets the location (`EntryState::occupy`): one slot lock per schedule. If the
/// insert is refused (shutdown), the task is still here and is dropped with it.
pub(crate) struct Fresh {
    pub(super) task: Option<InlineTask>,
    pub(super) deadline: Deadline,
    /// The new entry's stamp (its generation, see `Life` in `entry/`), and the bucket lane that took the
    /// entry: its [`Ticket`].
    pub(super) generation: u64,
    pub(super) bucket: LaneKey,
}

impl Fresh {
    /// A new entry for `task`, stored for `arena` (inline, in a block of its task slab, or boxed:
    /// `inline_task/`) and marked as a task that only hands a waker over when run (an async
    /// sleep's) if `wake`; `None` (and `task` dropped) if the slab's class for it has no room. Its
    /// stamp is drawn here, as `by` says ([`EntryArena::stamp`]). Inlined into every schedule:
    /// left to the compiler, a closure stored in a block gets it out of line, and the new entry
    /// comes back through memory (47 more instructions per schedule + cancel pair at 64 bytes).
    #[inline(always)]
    pub(crate) fn new_as<F>(
        deadline: Deadline,
        task: F,
        arena: &EntryArena,
        by: StampBy,
        wake: bool,
    ) -> Option<Fresh>
    where
        F: FnOnce() + Send + 'static,
    {
        Some(Fresh::holding(InlineTask::new_in_as(task, arena.tasks(), wake)?, deadline, arena, by))
    }

    /// A new entry for a tick group's `task`, not counted in the timer's pending count
    /// ([`InlineTask::new_uncounted_in`]); otherwise as [`new_as`](Self::new_as).
    #[cfg(feature = "async")]
    pub(crate) fn new_uncounted<F>(
        deadline: Deadline,
        task: F,
        arena: &EntryArena,
        by: StampBy,
    ) -> Option<Fresh>
    where
        F: FnOnce() + Send + 'static,
    {
        Some(Fresh::holding(InlineTask::new_uncounted_in(task, arena.tasks())?, deadline, arena, by))
    }

    /// [`new_as`](Self::new_as) for a task that runs user code, for tests.
    #[cfg(test)]
    pub(crate) fn new<F>(deadline: Deadline, task: F, arena: &EntryArena, by: StampBy) -> Option<Fresh>
    where
        F: FnOnce() + Send + 'static,
    {
        Fresh::new_as(deadline, task, arena, by, false)
    }

    /// A new entry for the stored `task` (a closure or a value), due at `deadline`, stamped here
    /// as `by` says; its lane is set by the insert that publishes it. Inlined into every schedule:
    /// out of line, the task is moved through the stack and a W7 pair costs about 12 ns more.
    #[inline(always)]
    pub(super) fn holding(task: InlineTask, deadline: Deadline, arena: &EntryArena, by: StampBy) -> Fresh {
        let bucket = LaneKey::new(location::BucketKey::FIRST, 0);
        Fresh { task: Some(task), deadline, generation: arena.stamp(by), bucket }
    }

    /// The new entry's deadline.
    pub(crate) fn deadline(&self) -> Deadline {
        self.deadline
    }

    /// The ticket of the entry, once an insert has put it in slot `id`.
    pub(crate) fn ticket(&self, id: EntryId) -> Option<Ticket> {
        self.task.is_none().then_some(Ticket { id, bucket: self.bucket, generation: self.generation })
    }
}
