//! Value tasks: an [`InlineTask`] that holds a value and its exact deadline instead of a closure,
//! for the delay queue of values (`timer/values.rs`).
//!
//! A value task is stored as a closure is (inline up to two words, else in a block of the task
//! slab, else boxed: the parent module's "Representation"), as a `Valued<V>`: the deadline first
//! (`#[repr(C)]`), so that it sits at the start of the storage whatever `V` is and a reset can
//! rewrite it without knowing `V` ([`InlineTask::set_exact`]). Its vtable names the value's type
//! (`VTable::value`): [`InlineTask::take_value`] hands the value back only as that type, so a
//! value is never read as another. The timer never runs a value task: its firing hands the task to
//! the timer's value sink. Dropped unrun (cancelled without a taker, abandoned by a shutdown), it
//! drops the value; boxed for a shutdown's report, it becomes a closure that drops the value.

use std::any::TypeId;
use std::marker::PhantomData;
use std::mem;

use super::{BlockWord, Erased, InlineTask, Storage, VTable, Word};
use crate::entry::task_slab::{Freed, TaskSlab};

/// A value and its exact deadline, deadline first (see the module docs).
#[repr(C)]
struct Valued<V> {
    exact: i64,
    value: V,
}

impl<V: Send + 'static> Erased<Valued<V>> {
    /// As `Erased::VTABLE`, for a value: promoted to a `&'static` the same way.
    const VALUE_VTABLE: VTable = VTable {
        value: Some(TypeId::of::<V>),
        wake: false,
        counted: true,
        call: Self::discard,
        drop: Self::drop,
        into_box: Self::dropper,
        storage: Self::STORAGE,
    };

    /// What "running" a value task does, should anything run one: drops the value.
    ///
    /// # Safety
    ///
    /// As [`Erased::take`].
    unsafe fn discard(data: Word, freed: Option<&mut Freed>) {
        // SAFETY: this function's contract is `take`'s, passed on unchanged.
        drop(unsafe { Self::take(data, freed) });
    }

    /// A closure that drops the value: what a shutdown hands back for a value task.
    ///
    /// # Safety
    ///
    /// As [`Erased::take`].
    unsafe fn dropper(data: Word) -> Box<dyn FnOnce() + Send + 'static> {
        // SAFETY: this function's contract is `take`'s, passed on unchanged.
        let valued = unsafe { Self::take(data, None) };
        Box::new(move || drop(valued))
    }
}

impl InlineTask {
    /// A value task holding `value` due at `exact` (stored as [`new_in_as`](Self::new_in_as) stores a
    /// closure); `value` back if the task slab's class for it has no block left.
    #[inline]
    pub(crate) fn value_in<V: Send + 'static>(
        value: V,
        exact: i64,
        slab: &TaskSlab,
    ) -> Result<InlineTask, V> {
        match Erased::<Valued<V>>::store(Valued { exact, value }, slab) {
            Ok(data) => {
                Ok(InlineTask { vtable: &Erased::<Valued<V>>::VALUE_VTABLE, data, _owns: PhantomData })
            }
            Err(valued) => Err(valued.value),
        }
    }

    /// Whether this is a value task.
    #[inline]
    pub(crate) fn is_value(&self) -> bool {
        self.vtable.value.is_some()
    }

    /// The value and its exact deadline, if this is a value task holding a `V`; the task back
    /// otherwise.
    #[inline]
    pub(crate) fn take_value<V: Send + 'static>(self) -> Result<(V, i64), InlineTask> {
        if self.vtable.value.map(|type_id| type_id()) != Some(TypeId::of::<V>()) {
            return Err(self);
        }
        let data = self.data;
        // The value now belongs to `data` alone: `Drop` must not see it again.
        mem::forget(self);
        // SAFETY: only `value_in::<V>` makes a vtable naming `V`'s `TypeId`, and it stores a
        // `Valued<V>` with `Erased::<Valued<V>>::store` beside it: `data` holds a live
        // `Valued<V>`, consumed only here since `self` was forgotten (parent module, "Ownership").
        let Valued { exact, value } = unsafe { Erased::<Valued<V>>::take(data, None) };
        Ok((value, exact))
    }

    /// Where the stored value or closure begins: in the word, in its block, or in its box.
    fn payload(&mut self) -> *mut u8 {
        match self.vtable.storage {
            Storage::Inline => self.data.as_mut_ptr().cast::<u8>(),
            // SAFETY: a block task's word holds the `BlockWord` `store` wrote (aligned, in bounds:
            // asserted in the parent module).
            Storage::Block(_) => unsafe { self.data.as_ptr().cast::<BlockWord>().read() }.block.as_ptr(),
            // SAFETY: a boxed task's word holds its `*mut F`, written as a pointer at the word's
            // (aligned) start.
            Storage::Boxed => unsafe { self.data.as_ptr().cast::<*mut u8>().read() },
        }
    }

    /// The exact deadline of a value task; `None` for a closure.
    pub(crate) fn exact(&mut self) -> Option<i64> {
        if !self.is_value() {
            return None;
        }
        // SAFETY: only `value_in` makes a value task, and its storage begins with the live
        // `Valued`'s `exact` (`#[repr(C)]`, first field), aligned for an `i64`: `store` placed the
        // `Valued` at its own alignment, at least an `i64`'s (inline only if the word's suffices,
        // else in a block or a box aligned for it). `&mut self` excludes any other access to it.
        Some(unsafe { self.payload().cast::<i64>().read() })
    }

    /// Rewrites the exact deadline of a value task (a reset); does nothing to a closure.
    pub(crate) fn set_exact(&mut self, exact: i64) {
        if self.is_value() {
            // SAFETY: as in `exact`; the write replaces a plain `i64`, nothing is dropped.
            unsafe { self.payload().cast::<i64>().write(exact) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::task_slab::TaskSlab;
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_value_comes_back_only_as_its_own_type_with_its_deadline() {
        let slab = TaskSlab::new();
        let marker = Arc::new(());
        for exact in [-5_i64, 7] {
            let inline = InlineTask::value_in(Arc::clone(&marker), exact, &slab).unwrap();
            let block =
                InlineTask::value_in([Arc::clone(&marker), Arc::clone(&marker)], exact, &slab).unwrap();
            let boxed = InlineTask::value_in((Arc::clone(&marker), [0u8; 400]), exact, &slab).unwrap();
            assert_eq!(
                [inline.storage(), block.storage(), boxed.storage()],
                [Storage::Inline, Storage::Block(64), Storage::Boxed]
            );
            for mut task in [inline, block, boxed] {
                assert!(task.is_value());
                assert_eq!(task.exact(), Some(exact));
                task.set_exact(exact * 3);
                let task = task.take_value::<u64>().unwrap_err();
                drop(task);
            }
            assert_eq!(Arc::strong_count(&marker), 1, "dropped unrun, the values went");
            let mut task = InlineTask::value_in(Arc::clone(&marker), exact, &slab).unwrap();
            task.set_exact(exact + 1);
            let (value, at) = task.take_value::<Arc<()>>().unwrap();
            assert_eq!((Arc::strong_count(&value), at), (2, exact + 1));
            let (block, _) = InlineTask::value_in([Arc::clone(&marker), Arc::clone(&marker)], exact, &slab)
                .unwrap()
                .take_value::<[Arc<()>; 2]>()
                .unwrap();
            drop((value, block));
            // Boxed for a shutdown's report: running the box drops the value.
            InlineTask::value_in(Arc::clone(&marker), exact, &slab).unwrap().into_box()();
            assert_eq!(Arc::strong_count(&marker), 1);
        }
        let mut closure = InlineTask::new(|| {});
        assert!(!closure.is_value() && closure.exact().is_none());
        assert!(closure.take_value::<()>().is_err());
    }
}
