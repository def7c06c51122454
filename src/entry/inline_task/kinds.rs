//! What a task is, beside its closure: one that only hands a waker over when run (an async
//! sleep's), and one whose entry the timer does not count (a tick group's, `sleep/group/`).

#[cfg(feature = "async")]
use std::marker::PhantomData;

use super::InlineTask;
#[cfg(feature = "async")]
use super::{task_slab::TaskSlab, Erased, VTable};

impl InlineTask {
    /// Whether this task only hands a waker over when run ([`new_in_as`](Self::new_in_as)).
    #[cfg_attr(not(feature = "async"), allow(dead_code))]
    #[inline]
    pub(crate) fn is_wake(&self) -> bool {
        self.vtable.wake
    }

    /// Whether the entry holding this task counts in the timer's pending count: every task but a
    /// tick group's ([`new_uncounted_in`](Self::new_uncounted_in)). A claim counts its entry out
    /// only if so (`shard/core.rs`'s `Extra::counts`, `timer/shared.rs`).
    #[inline]
    pub(crate) fn is_counted(&self) -> bool {
        self.vtable.counted
    }

    /// Stores `f` as [`new_in_as`](Self::new_in_as) does, marked as a waker's task (`wake`) that
    /// is **not counted**: its entry is no task of `len()`, and whoever claims it counts nothing
    /// out ([`is_counted`](Self::is_counted)). A tick group's task (`sleep/group/`).
    #[cfg(feature = "async")]
    #[inline]
    pub(crate) fn new_uncounted_in<F: FnOnce() + Send + 'static>(
        f: F,
        slab: &TaskSlab,
    ) -> Option<InlineTask> {
        let data = Erased::<F>::store(f, slab).ok()?;
        Some(InlineTask { vtable: &Erased::<F>::UNCOUNTED_VTABLE, data, _owns: PhantomData })
    }
}

#[cfg(feature = "async")]
impl<F: FnOnce() + Send + 'static> Erased<F> {
    /// As `WAKE_VTABLE`, for a task its entry does not count (a tick group's).
    const UNCOUNTED_VTABLE: VTable = VTable { wake: true, counted: false, ..Self::VTABLE };
}
