//! A closure of any size stored in 24 bytes: inline in two words when it fits (size ≤ 16 bytes,
//! alignment ≤ 8), else boxed (the box is the two words' first), with a pointer to a per-type
//! table of its call and drop.

use std::marker::PhantomData;
use std::mem::{self, ManuallyDrop, MaybeUninit};

type Words = [usize; 2];

/// How to run and how to drop the closure stored in a [`Task`]'s words.
pub(crate) struct VTable {
    call: unsafe fn(*mut Words),
    drop: unsafe fn(*mut Words),
}

/// An owned `FnOnce() + Send + 'static`, run at most once (or dropped).
pub(crate) struct Task {
    words: MaybeUninit<Words>,
    vtable: &'static VTable,
}

struct Inline<F>(PhantomData<F>);

impl<F: FnOnce() + Send + 'static> Inline<F> {
    const VTABLE: VTable = VTable { call: Self::call, drop: Self::drop };

    /// # Safety
    /// `words` holds an `F` written by [`Task::inline`] and not read since.
    unsafe fn call(words: *mut Words) {
        // SAFETY: the caller's contract; the `F` is moved out and never read again.
        let f = unsafe { words.cast::<F>().read() };
        f();
    }

    /// # Safety
    /// As for `call`.
    unsafe fn drop(words: *mut Words) {
        // SAFETY: the caller's contract; the `F` is dropped in place and never read again.
        unsafe { words.cast::<F>().drop_in_place() };
    }
}

impl Task {
    /// `f` inline if it fits, else boxed.
    #[inline(always)]
    pub(crate) fn new<F: FnOnce() + Send + 'static>(f: F) -> Task {
        if Self::fits::<F>() {
            Self::inline(f)
        } else {
            Self::inline(Box::new(f) as Box<F>)
        }
    }

    const fn fits<F>() -> bool {
        mem::size_of::<F>() <= mem::size_of::<Words>() && mem::align_of::<F>() <= mem::align_of::<Words>()
    }

    #[inline(always)]
    fn inline<F: FnOnce() + Send + 'static>(f: F) -> Task {
        assert!(Self::fits::<F>());
        let mut words = MaybeUninit::<Words>::uninit();
        // SAFETY: `F` fits the two words in size and alignment (asserted above, a constant).
        unsafe { words.as_mut_ptr().cast::<F>().write(f) };
        Task { words, vtable: &Inline::<F>::VTABLE }
    }

    /// Runs the closure (consuming it).
    pub(crate) fn run(self) {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: the words hold the `F` of `vtable`, unread; `this` is never dropped, so the
        // `F` is not dropped after `call` moved it out.
        unsafe { (this.vtable.call)(this.words.as_mut_ptr()) }
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        // SAFETY: the words hold the `F` of `vtable`, unread (`run` never drops its `Task`).
        unsafe { (self.vtable.drop)(self.words.as_mut_ptr()) }
    }
}
