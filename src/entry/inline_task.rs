//! A type-erased `FnOnce() + Send + 'static` in three words, stored inline when it fits in two.
//!
//! The timer's slot arena keeps one task per slot in a fixed size. A `Box<dyn FnOnce() + Send>`
//! would fit (two words) but costs one allocation per timer, however small the closure: glibc's
//! 32-byte minimum chunk and a malloc/free pair per schedule, freed on another thread than the one
//! that allocated it. Most timer closures capture an `Arc` or a reference and perhaps an id, so
//! [`InlineTask`] stores closures of up to two words in the slot itself and boxes only the rest.
//! (One word was tried first: SPEC W4's task captures two, was boxed, and the driver paid a cache
//! miss on the box and glibc's cross-thread frees: W4 CPU 1000-1150 ms. With two words inline,
//! 580-620 ms, and p99 lateness 18 → 1.4 ms.)
//!
//! # Representation
//!
//! ```text
//! InlineTask { vtable: &'static VTable, data: MaybeUninit<[usize; 2]> }   24 bytes, align 8 (64-bit)
//!              │                        └─ inline: the closure `F` itself, in the data's first
//!              │                                   size_of::<F>() bytes (any of 0..=16)
//!              │                           boxed:  the `*mut F` from `Box::into_raw(Box::new(f))`
//!              └─ one static `VTable` per closure type `F`: call, drop and into_box for that `F`,
//!                 and whether it is stored inline
//! ```
//!
//! * **Inline** iff `size_of::<F>() <= INLINE_BYTES` (two `usize`s, 16 bytes on 64-bit targets) and
//!   `align_of::<F>() <= align_of::<usize>()`. Zero-sized closures are inline. The choice is an
//!   associated `const` per `F` ([`is_inline`]), so each `new`/`run`/`drop` compiles to one branch.
//! * **Boxed** otherwise (bigger captures, or an over-aligned capture such as a
//!   `#[repr(align(16))]` value): `Box<F>` is allocated once in [`InlineTask::new`] and its thin
//!   pointer kept in the word. [`InlineTask::into_box`] hands that same allocation back, re-typed as
//!   `Box<dyn FnOnce() + Send>`; an inline closure is boxed only then.
//! * The vtable is a `&'static` reference, never null, so `Option<InlineTask>` uses its niche and is
//!   also 24 bytes. Each `&Erased::<F>::VTABLE` is a constant promoted to a `'static`; the same `F`
//!   may get more than one copy across codegen units, which is harmless (nothing compares vtables).
//!
//! # Safety argument
//!
//! * **Ownership.** An `InlineTask` owns exactly one `F`: inline in `data`, or in the heap
//!   allocation `data` points to. `data` is written once, in `new`, and never changed; the vtable
//!   stored beside it is the one for that same `F`, so every vtable function is only ever given a
//!   word that holds (or points to) a live `F` of its own type. The `F` leaves the task exactly once:
//!   `run` and `into_box` copy `vtable` and `data` out and `mem::forget(self)` before touching the
//!   closure, so `Drop` cannot also see it; `Drop` is the only other consumer. A closure that panics
//!   in `run` was moved out already: its captures are dropped by unwinding, once, and a boxed
//!   closure's allocation was freed when it was moved out of its box, before the call.
//! * **Alignment and size.** The "word" is a `MaybeUninit<[usize; 2]>`, so it is `usize`-aligned
//!   wherever it lives (inside the task or copied to a vtable function's argument), and only types
//!   with `size_of <= INLINE_BYTES` and `align_of <= align_of::<usize>()` are cast to it: the
//!   `*mut F`/`*const F` casts of its address are aligned and in bounds. A boxed closure's word
//!   holds a `*mut F` in its first `usize`, a thin pointer (F is `Sized`) of `usize` size and
//!   alignment (asserted at compile time below).
//! * **Bytes and provenance.** `MaybeUninit` copies every byte as it is, initialised or not, with
//!   any pointer provenance it carries, so an inline closure that captures a reference or an `Arc`
//!   reads back a valid pointer, and a closure smaller than the word leaves the rest uninitialised
//!   without ever having those bytes read as a `usize`. The box pointer is written as a pointer (not
//!   cast to an integer), for the same reason.
//! * **Threads.** `new` accepts only `F: Send`, so moving the owner of an `F` to another thread is
//!   sound: `InlineTask` is `Send` through its `PhantomData<Box<dyn FnOnce() + Send>>` marker, which
//!   also makes it not `Sync` (see [`InlineTask`] for why that is the choice).
//!
//! Every `unsafe` block and function below says which of these it relies on (`// SAFETY:`, checked
//! present by `clippy::undocumented_unsafe_blocks`). The module's tests run under AddressSanitizer
//! (`scripts/asan.sh`), valgrind (`scripts/valgrind.sh`) and Miri
//! (`cargo +nightly miri test --lib inline_task`, where the component is installed).
//!
//! Prior art: crossbeam-epoch's `Deferred` (a `FnOnce()` inline in three words, boxed otherwise).

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::fmt;
use std::marker::PhantomData;
use std::mem::{self, MaybeUninit};

/// The storage "word": two `usize`s, uninitialised outside the closure's own bytes.
type Word = MaybeUninit<[usize; 2]>;

/// The largest closure, in bytes, stored inline (16 on 64-bit targets); its alignment must also be
/// at most `align_of::<usize>()`.
pub(crate) const INLINE_BYTES: usize = mem::size_of::<Word>();

/// The largest alignment a closure may have to be stored inline.
const INLINE_ALIGN: usize = mem::align_of::<Word>();

// A boxed closure's word holds its `*mut F`: a thin pointer must fit the word exactly.
const _: () = assert!(mem::size_of::<*mut ()>() <= INLINE_BYTES);
const _: () = assert!(mem::align_of::<*mut ()>() <= INLINE_ALIGN);

/// Whether a closure of type `F` is stored inline (`true`) or boxed by [`InlineTask::new`].
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) const fn is_inline<F: FnOnce() + Send + 'static>() -> bool {
    Erased::<F>::INLINE
}

/// A type-erased `FnOnce() + Send + 'static`, run at most once, in 24 bytes (see the module docs).
///
/// `Send`, not `Sync`. `Sync` would be sound today, because no `&self` method reaches the closure
/// (`Debug` and [`is_inline`](Self::is_inline) read only the vtable), so a shared reference gives
/// another thread nothing of the closure's, which is only `Send`. It is left off because nothing
/// needs it (a slot is reached under its arena's lock) and because it would turn unsound unnoticed
/// if a method that touches the closure through `&self` were ever added.
pub(crate) struct InlineTask {
    /// The functions for this task's closure type; never null, which gives `Option` its niche.
    vtable: &'static VTable,
    /// The closure itself (inline) or its `*mut F` (boxed), as `vtable.inline` says.
    data: Word,
    /// Owns a `Send` closure: `Send` but not `Sync`, exactly like `Box<dyn FnOnce() + Send>`, and
    /// dropping an `InlineTask` may drop such a closure.
    _owns: PhantomData<Box<dyn FnOnce() + Send>>,
}

/// The operations on one closure type `F`, each taking the word of a task that holds an `F`.
struct VTable {
    /// Moves the `F` out and calls it.
    call: unsafe fn(Word),
    /// Drops the `F` without calling it.
    drop: unsafe fn(Word),
    /// Moves the `F` out into a `Box<dyn FnOnce() + Send>` (reusing its box if it has one).
    into_box: unsafe fn(Word) -> Box<dyn FnOnce() + Send + 'static>,
    /// Whether the word holds `F` itself (`true`) or a `*mut F`.
    inline: bool,
}

impl InlineTask {
    /// Stores `f`: in the task's own word if it fits ([`is_inline`]), in a `Box<F>` otherwise.
    #[inline]
    pub(crate) fn new<F: FnOnce() + Send + 'static>(f: F) -> InlineTask {
        let mut data = Word::uninit();
        if Erased::<F>::INLINE {
            // SAFETY: `data` is valid for writes of `INLINE_BYTES` bytes at `usize` alignment, and
            // INLINE means `size_of::<F>() <= INLINE_BYTES` and `align_of::<F>() <= INLINE_ALIGN`,
            // so the cast pointer is aligned and the write in bounds. The word now owns `f`.
            unsafe { data.as_mut_ptr().cast::<F>().write(f) };
        } else {
            let boxed: *mut F = Box::into_raw(Box::new(f));
            // SAFETY: a `*mut F` (thin, `F: Sized`) has the size and alignment of `usize` (asserted
            // at the top of the module), so the write is aligned and in bounds. The word now owns the
            // box, written as a pointer to keep its provenance.
            unsafe { data.as_mut_ptr().cast::<*mut F>().write(boxed) };
        }
        InlineTask { vtable: &Erased::<F>::VTABLE, data, _owns: PhantomData }
    }

    /// Whether this task's closure is stored inline (`false`: it is boxed).
    #[inline]
    pub(crate) fn is_inline(&self) -> bool {
        self.vtable.inline
    }

    /// Calls the closure, once. A panic in it propagates to the caller; the closure's captures are
    /// then dropped once, by the unwinding, and nothing is left for this task's `Drop`.
    #[inline]
    pub(crate) fn run(self) {
        let (vtable, data) = (self.vtable, self.data);
        // The closure now belongs to `data` alone: `Drop` must not see it again.
        mem::forget(self);
        // SAFETY: `vtable` is the vtable `new` stored with `data` for the same `F`, `data` still holds
        // that `F` (written once in `new`, never consumed: every consumer takes `self` by value and
        // forgets or is the drop), and the `F` is consumed only here since `self` was forgotten.
        unsafe { (vtable.call)(data) }
    }

    /// Gives the closure back as a box, for tasks handed back unrun (at shutdown). A boxed closure
    /// returns its own allocation; an inline one is boxed now.
    #[inline]
    pub(crate) fn into_box(self) -> Box<dyn FnOnce() + Send + 'static> {
        let (vtable, data) = (self.vtable, self.data);
        mem::forget(self);
        // SAFETY: as in `run`: the matching vtable, a word that still holds its `F`, consumed once.
        unsafe { (vtable.into_box)(data) }
    }
}

impl Drop for InlineTask {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `run` and `into_box` forget the task, so a task being dropped still owns its `F`;
        // `self.vtable` matches it, and the word is not used again (the task is being dropped).
        unsafe { (self.vtable.drop)(self.data) }
    }
}

impl fmt::Debug for InlineTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_inline() { "InlineTask(inline)" } else { "InlineTask(boxed)" })
    }
}

/// The per-closure-type parts: the inline decision and the vtable.
struct Erased<F>(PhantomData<F>);

impl<F: FnOnce() + Send + 'static> Erased<F> {
    /// `F` fits the word: it goes inline.
    const INLINE: bool = mem::size_of::<F>() <= INLINE_BYTES && mem::align_of::<F>() <= INLINE_ALIGN;

    /// Only fn pointers and a `bool`: no interior mutability and no `Drop`, so `&Self::VTABLE` is
    /// promoted to a `&'static`.
    const VTABLE: VTable =
        VTable { call: Self::call, drop: Self::drop, into_box: Self::into_box, inline: Self::INLINE };

    /// Moves the `F` out of `data` (and frees its box, if boxed).
    ///
    /// # Safety
    ///
    /// `data` is the word of a task made by `InlineTask::new::<F>`, whose `F` has not been consumed,
    /// and it is not used again after this (the `F` now belongs to the caller).
    #[inline]
    unsafe fn take(data: Word) -> F {
        if Self::INLINE {
            // SAFETY: INLINE: `new` wrote an `F` at the start of the word; the word is `usize`-aligned
            // and `F` fits it in size and alignment. The caller guarantees that `F` is still live and
            // that nobody reads it again, so this read moves it out.
            unsafe { data.as_ptr().cast::<F>().read() }
        } else {
            // SAFETY: forwarded from this function's own contract; moving `F` out of the box frees
            // the allocation.
            *unsafe { Self::unbox(data) }
        }
    }

    /// Takes back the box of a boxed (not `INLINE`) closure.
    ///
    /// # Safety
    ///
    /// As [`Self::take`], and `F` is not `INLINE`.
    #[inline]
    unsafe fn unbox(data: Word) -> Box<F> {
        debug_assert!(!Self::INLINE);
        // SAFETY: boxed: `new` wrote the `*mut F` from `Box::into_raw` at the start of the (aligned)
        // word. The caller guarantees that box is still owned by this word and never used again, so
        // `Box::from_raw` takes it back exactly once.
        unsafe { Box::from_raw(data.as_ptr().cast::<*mut F>().read()) }
    }

    /// # Safety
    ///
    /// As [`Self::take`].
    unsafe fn call(data: Word) {
        // SAFETY: forwarded from this function's own contract.
        let f = unsafe { Self::take(data) };
        f();
    }

    /// # Safety
    ///
    /// As [`Self::take`].
    unsafe fn drop(data: Word) {
        if Self::INLINE {
            // SAFETY: forwarded from this function's own contract.
            drop(unsafe { Self::take(data) });
        } else {
            // SAFETY: forwarded from this function's own contract; dropping the box drops `F` in
            // place and frees it.
            drop(unsafe { Self::unbox(data) });
        }
    }

    /// # Safety
    ///
    /// As [`Self::take`].
    unsafe fn into_box(data: Word) -> Box<dyn FnOnce() + Send + 'static> {
        if Self::INLINE {
            // SAFETY: forwarded from this function's own contract.
            Box::new(unsafe { Self::take(data) })
        } else {
            // SAFETY: forwarded from this function's own contract: the box is re-typed, unmoved.
            unsafe { Self::unbox(data) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{self, AssertUnwindSafe};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// The inline decision for a closure value's type (closure types cannot be named).
    fn inline_for<F: FnOnce() + Send + 'static>(_: &F) -> bool {
        is_inline::<F>()
    }

    /// Counts its drops in a shared counter; 8 bytes.
    struct DropCounter(Arc<AtomicUsize>);

    impl Drop for DropCounter {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Over-aligned: never inline, whatever its size.
    #[repr(align(16))]
    struct Aligned16(u8);

    fn counter() -> Arc<AtomicUsize> {
        Arc::new(AtomicUsize::new(0))
    }

    /// A task that only drops `guard`: boxed (a 16-byte pad makes it too big) or inline.
    fn guarded_task(boxed: bool, guard: DropCounter) -> InlineTask {
        if boxed {
            let pad = [0u64; 2];
            InlineTask::new(move || drop((guard, pad)))
        } else {
            InlineTask::new(move || drop(guard))
        }
    }

    fn load(c: &AtomicUsize) -> usize {
        c.load(Ordering::SeqCst)
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn sizes() {
        assert_eq!(INLINE_BYTES, 16);
        assert_eq!(mem::size_of::<InlineTask>(), 24);
        assert_eq!(mem::align_of::<InlineTask>(), 8);
        assert_eq!(mem::size_of::<Option<InlineTask>>(), 24);
    }

    #[test]
    fn send_and_not_sync() {
        fn assert_send<T: Send>() {}
        assert_send::<InlineTask>();

        // Ambiguous (does not compile) if `InlineTask: Sync`: both impls would apply.
        trait AmbiguousIfSync<A> {
            fn check() {}
        }
        impl<T: ?Sized> AmbiguousIfSync<()> for T {}
        impl<T: ?Sized + Sync> AmbiguousIfSync<u8> for T {}
        <InlineTask as AmbiguousIfSync<_>>::check();
    }

    #[test]
    fn inline_or_boxed_by_capture() {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let by_ref: &'static AtomicUsize = &COUNT;
        let one_ref = move || {
            by_ref.fetch_add(1, Ordering::SeqCst);
        };
        assert!(inline_for(&one_ref));
        assert!(InlineTask::new(one_ref).is_inline());

        let arc = counter();
        let one_arc = move || {
            arc.fetch_add(1, Ordering::SeqCst);
        };
        assert!(inline_for(&one_arc));
        assert!(InlineTask::new(one_arc).is_inline());

        let zst = || {};
        assert_eq!(mem::size_of_val(&zst), 0);
        assert!(inline_for(&zst));
        assert!(InlineTask::new(zst).is_inline());

        let one_byte = 7u8;
        let small = move || assert_eq!(one_byte, 7);
        assert!(InlineTask::new(small).is_inline());

        let (a, b, c) = (1u64, 2u64, 3u64);
        let three = move || assert_eq!(a + b + c, 6);
        assert_eq!(mem::size_of_val(&three), 24);
        assert!(!inline_for(&three));
        assert!(!InlineTask::new(three).is_inline());

        let aligned = Aligned16(1);
        // Moves the whole value in (`aligned.0` alone would capture just the `u8` field).
        let over_aligned = move || {
            let whole = aligned;
            assert_eq!(whole.0, 1);
        };
        assert_eq!(mem::align_of_val(&over_aligned), 16);
        assert!(!inline_for(&over_aligned));
        assert!(!InlineTask::new(over_aligned).is_inline());
    }

    #[test]
    fn debug_says_inline_or_boxed() {
        assert_eq!(format!("{:?}", InlineTask::new(|| {})), "InlineTask(inline)");
        let big = [0u64; 4];
        assert_eq!(format!("{:?}", InlineTask::new(move || assert_eq!(big.len(), 4))), "InlineTask(boxed)");
    }

    #[test]
    fn run_runs_once_inline() {
        let runs = counter();
        let r = Arc::clone(&runs);
        let task = InlineTask::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
        });
        assert!(task.is_inline());
        assert_eq!(load(&runs), 0, "not run before run()");
        task.run();
        assert_eq!(load(&runs), 1);
        assert_eq!(Arc::strong_count(&runs), 1, "the captured Arc was released after running");
    }

    #[test]
    fn run_runs_once_boxed() {
        let runs = counter();
        let r = Arc::clone(&runs);
        let add = [1usize, 10, 100];
        let task = InlineTask::new(move || {
            r.fetch_add(add.iter().sum(), Ordering::SeqCst);
        });
        assert!(!task.is_inline());
        assert_eq!(load(&runs), 0, "not run before run()");
        task.run();
        assert_eq!(load(&runs), 111, "ran once, with its captures intact");
        assert_eq!(Arc::strong_count(&runs), 1, "the captured Arc was released after running");
    }

    #[test]
    fn run_zst_and_static_ref() {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let by_ref: &'static AtomicUsize = &COUNT;
        InlineTask::new(move || {
            by_ref.fetch_add(1, Ordering::SeqCst);
        })
        .run();
        // A ZST closure reaching the same static through its path, not a capture.
        InlineTask::new(|| {
            COUNT.fetch_add(10, Ordering::SeqCst);
        })
        .run();
        assert_eq!(load(&COUNT), 11);
    }

    #[test]
    fn small_capture_keeps_its_bytes() {
        // 1, 2 and 4 bytes in a 16-byte store: the rest of it is never read as a value.
        let (b, h, w) = (0xa5u8, 0xbeefu16, 0xdead_beefu32);
        let seen = counter();
        let s = Arc::clone(&seen);
        InlineTask::new(move || assert_eq!(b, 0xa5)).run();
        InlineTask::new(move || assert_eq!(h, 0xbeef)).run();
        InlineTask::new(move || assert_eq!(w, 0xdead_beef)).run();
        InlineTask::new(move || {
            s.fetch_add(1, Ordering::SeqCst);
        })
        .run();
        assert_eq!(load(&seen), 1);
    }

    #[test]
    fn over_aligned_capture_is_aligned_when_run() {
        let aligned = Aligned16(42);
        let hits = counter();
        let h = Arc::clone(&hits);
        let task = InlineTask::new(move || {
            assert_eq!(&aligned as *const Aligned16 as usize % 16, 0);
            assert_eq!(aligned.0, 42);
            h.fetch_add(1, Ordering::SeqCst);
        });
        assert!(!task.is_inline());
        task.run();
        assert_eq!(load(&hits), 1);
    }

    #[test]
    fn drop_without_run_releases_the_arc_once_inline() {
        let arc = counter();
        let a = Arc::clone(&arc);
        let task = InlineTask::new(move || {
            a.fetch_add(1, Ordering::SeqCst);
        });
        assert!(task.is_inline());
        assert_eq!(Arc::strong_count(&arc), 2);
        drop(task);
        assert_eq!(Arc::strong_count(&arc), 1, "released exactly once");
        assert_eq!(load(&arc), 0, "never ran");
    }

    #[test]
    fn drop_without_run_releases_the_arc_once_boxed() {
        let arc = counter();
        let a = Arc::clone(&arc);
        let pad = [0u64; 2];
        let task = InlineTask::new(move || {
            a.fetch_add(1 + pad.len(), Ordering::SeqCst);
        });
        assert!(!task.is_inline());
        assert_eq!(Arc::strong_count(&arc), 2);
        drop(task);
        assert_eq!(Arc::strong_count(&arc), 1, "released exactly once");
        assert_eq!(load(&arc), 0, "never ran");
    }

    #[test]
    fn drop_counter_guard_dropped_once_without_run() {
        for boxed in [false, true] {
            let drops = counter();
            let guard = DropCounter(Arc::clone(&drops));
            let task = guarded_task(boxed, guard);
            assert_eq!(task.is_inline(), !boxed);
            assert_eq!(load(&drops), 0);
            drop(task);
            assert_eq!(load(&drops), 1, "boxed: {boxed}");
            assert_eq!(Arc::strong_count(&drops), 1, "boxed: {boxed}");
        }
    }

    #[test]
    fn option_none_and_some() {
        let arc = counter();
        let a = Arc::clone(&arc);
        let mut slot: Option<InlineTask> = Some(InlineTask::new(move || drop(a)));
        assert!(slot.is_some());
        slot.take().unwrap().run();
        assert!(slot.is_none());
        assert_eq!(Arc::strong_count(&arc), 1);
    }

    /// Runs a task that panics with a drop-counting guard captured; returns (`run` panicked, guard
    /// drops, guard's `Arc` released).
    fn run_panicking(boxed: bool) -> (bool, usize, bool) {
        let drops = counter();
        let guard = DropCounter(Arc::clone(&drops));
        let task = if boxed {
            let pad = [7u64; 3];
            InlineTask::new(move || {
                let _guard = &guard;
                assert_eq!(pad[2], 7);
                panic!("task panicked on purpose");
            })
        } else {
            InlineTask::new(move || {
                let _guard = &guard;
                panic!("task panicked on purpose");
            })
        };
        assert_eq!(task.is_inline(), !boxed);
        let result = panic::catch_unwind(AssertUnwindSafe(|| task.run()));
        let message_ok = match &result {
            Err(payload) => payload.downcast_ref::<&str>() == Some(&"task panicked on purpose"),
            Ok(()) => false,
        };
        assert!(message_ok, "the closure's own panic reached the caller");
        (result.is_err(), load(&drops), Arc::strong_count(&drops) == 1)
    }

    #[test]
    fn panic_propagates_and_drops_captures_once_inline() {
        let (panicked, drops, released) = run_panicking(false);
        assert!(panicked);
        assert_eq!(drops, 1, "the guard was dropped exactly once by unwinding");
        assert!(released);
    }

    #[test]
    fn panic_propagates_and_drops_captures_once_boxed() {
        let (panicked, drops, released) = run_panicking(true);
        assert!(panicked);
        assert_eq!(drops, 1, "the guard was dropped exactly once by unwinding");
        assert!(released);
    }

    #[test]
    fn into_box_then_call_runs_once() {
        for boxed in [false, true] {
            let runs = counter();
            let drops = counter();
            let r = Arc::clone(&runs);
            let guard = DropCounter(Arc::clone(&drops));
            let task = if boxed {
                let pad = [0u64; 2];
                InlineTask::new(move || {
                    let _guard = guard;
                    r.fetch_add(1 + pad[0] as usize, Ordering::SeqCst);
                })
            } else {
                // The Arc and the guard in one Arc-sized capture (two words would fit too).
                let both = Arc::new((r, guard));
                InlineTask::new(move || {
                    both.0.fetch_add(1, Ordering::SeqCst);
                })
            };
            assert_eq!(task.is_inline(), !boxed);
            let f = task.into_box();
            assert_eq!((load(&runs), load(&drops)), (0, 0), "boxed: {boxed}");
            f();
            assert_eq!((load(&runs), load(&drops)), (1, 1), "boxed: {boxed}");
            assert_eq!(Arc::strong_count(&runs), 1, "boxed: {boxed}");
            assert_eq!(Arc::strong_count(&drops), 1, "boxed: {boxed}");
        }
    }

    #[test]
    fn into_box_then_drop_releases_once() {
        for boxed in [false, true] {
            let drops = counter();
            let guard = DropCounter(Arc::clone(&drops));
            let task = guarded_task(boxed, guard);
            assert_eq!(task.is_inline(), !boxed);
            let f = task.into_box();
            assert_eq!(load(&drops), 0, "boxed: {boxed}");
            drop(f);
            assert_eq!(load(&drops), 1, "boxed: {boxed}");
            assert_eq!(Arc::strong_count(&drops), 1, "boxed: {boxed}");
        }
    }

    #[test]
    fn into_box_zst() {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let f = InlineTask::new(|| {
            COUNT.fetch_add(1, Ordering::SeqCst);
        })
        .into_box();
        f();
        assert_eq!(load(&COUNT), 1);
    }

    #[test]
    fn moved_to_another_thread_and_run_there() {
        for boxed in [false, true] {
            let runs = counter();
            let r = Arc::clone(&runs);
            let task = if boxed {
                let name = String::from("elsewhere");
                InlineTask::new(move || {
                    assert_eq!(std::thread::current().name(), Some(name.as_str()));
                    r.fetch_add(1, Ordering::SeqCst);
                })
            } else {
                InlineTask::new(move || {
                    assert_eq!(std::thread::current().name(), Some("elsewhere"));
                    r.fetch_add(1, Ordering::SeqCst);
                })
            };
            assert_eq!(task.is_inline(), !boxed);
            std::thread::Builder::new()
                .name("elsewhere".into())
                .spawn(move || task.run())
                .unwrap()
                .join()
                .expect("the task ran on the other thread");
            assert_eq!(load(&runs), 1, "boxed: {boxed}");
            assert_eq!(Arc::strong_count(&runs), 1, "boxed: {boxed}");
        }
    }

    #[test]
    fn string_and_vec_captures_keep_their_contents() {
        let out = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let o = Arc::clone(&out);
        let text = String::from("a string that lives on the heap");
        let numbers: Vec<u32> = (0..1000).collect();
        assert_eq!(mem::size_of_val(&text), 24);
        let task = InlineTask::new(move || {
            let sum: u32 = numbers.iter().sum();
            o.lock().push(format!("{text} {sum}"));
        });
        assert!(!task.is_inline());
        task.run();
        assert_eq!(*out.lock(), vec![String::from("a string that lives on the heap 499500")]);

        // Dropped unrun: the Vec's and String's buffers are freed (ASan/valgrind check the leak).
        let text = String::from("never printed");
        let numbers = vec![1u8; 4096];
        drop(InlineTask::new(move || panic!("{text} {}", numbers.len())));
    }

    #[test]
    fn boxed_capture_as_one_word_is_inline() {
        // A Box is one pointer: the closure is inline, and it owns the Box's allocation.
        let value = Box::new(123u64);
        let seen = counter();
        let s = Arc::clone(&seen);
        let both = Box::new((value, s));
        let task = InlineTask::new(move || {
            assert_eq!(*both.0, 123);
            both.1.fetch_add(1, Ordering::SeqCst);
        });
        assert!(task.is_inline());
        task.run();
        assert_eq!(load(&seen), 1);
        assert_eq!(Arc::strong_count(&seen), 1);
    }

    #[test]
    fn many_tasks_in_a_vec() {
        // Like a slot arena: many tasks moved around by a growing Vec, run or dropped in any order.
        let runs = counter();
        let mut tasks: Vec<Option<InlineTask>> = Vec::new();
        for i in 0..1000usize {
            let r = Arc::clone(&runs);
            tasks.push(Some(if i % 3 == 0 {
                let pad = [i as u64; 2];
                InlineTask::new(move || {
                    r.fetch_add(1 + pad[0] as usize - i, Ordering::SeqCst);
                })
            } else {
                InlineTask::new(move || {
                    r.fetch_add(1, Ordering::SeqCst);
                })
            }));
        }
        for (i, slot) in tasks.iter_mut().enumerate() {
            if i % 2 == 0 {
                slot.take().unwrap().run();
            }
        }
        assert_eq!(load(&runs), 500);
        drop(tasks);
        assert_eq!(load(&runs), 500, "dropped tasks never ran");
        assert_eq!(Arc::strong_count(&runs), 1);
    }
}
