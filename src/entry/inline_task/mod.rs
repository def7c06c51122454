//! A type-erased `FnOnce() + Send + 'static` in three words: stored inline when it fits in two,
//! in a block of the timer's task slab when it fits one, boxed otherwise.
//!
//! The shards' slabs keep one task per slot in a fixed size. A `Box<dyn FnOnce() + Send>`
//! would fit (two words) but costs one allocation per timer, however small the closure: glibc's
//! 32-byte minimum chunk and a malloc/free pair per schedule, freed on another thread than the one
//! that allocated it. Most timer closures capture an `Arc` or a reference and perhaps an id, so
//! [`InlineTask`] stores closures of up to two words in the slot itself, closures of up to 256
//! bytes in a block of the timer's task slab (`task_slab.rs`: no allocation, and the block is
//! recycled by the thread that frees it), and boxes only the rest.
//! Two words, not one: SPEC W4's task captures two; boxed, it costs the driver a cache miss on the
//! box and glibc's cross-thread frees (W4 CPU 1000-1150 ms with one word inline, 580-620 ms with
//! two, p99 lateness 18 → 1.4 ms: `bench/benches/spec.rs`).
//!
//! # Representation
//!
//! ```text
//! InlineTask { vtable: &'static VTable, data: MaybeUninit<[usize; 2]> }   24 bytes, align 8 (64-bit)
//!              │                        └─ inline: the closure `F` itself, in the data's first
//!              │                                   size_of::<F>() bytes (any of 0..=16)
//!              │                           block:  the address of a slab block holding `F` (a `Block`),
//!              │                                   then the `*const Class` it came from (`BlockWord`)
//!              │                           boxed:  the `*mut F` from `Box::into_raw(Box::new(f))`
//!              └─ one static `VTable` per closure type `F`: call, drop and into_box for that `F`,
//!                 and where it is stored
//! ```
//!
//! * **Inline** iff `size_of::<F>() <= INLINE_BYTES` (two `usize`s, 16 bytes on 64-bit targets) and
//!   `align_of::<F>() <= align_of::<usize>()`. Zero-sized closures are inline. The choice is an
//!   associated `const` per `F` ([`is_inline`]), so each `new`/`run`/`drop` compiles to one branch.
//! * **In a block** iff not inline and a slab class holds it (`task_slab::class_for`: up to 256
//!   bytes, alignment up to 64): [`InlineTask::new_in_as`] takes a block of that class, moves `F` into
//!   it, and keeps the block's and the class's addresses in the word. A run or `into_box` moves
//!   `F` out of the block, gives the block back to its class (on the consuming thread's free
//!   list), and only then calls `F`: a panic there finds the block already returned. A drop (a
//!   cancel's) drops `F` where it lies, with no copy out, and then gives the block back, from a
//!   guard that does so also while a panic of that drop unwinds.
//! * **Boxed** otherwise (captures over 256 bytes, or aligned over 64): `Box<F>` is allocated once
//!   in [`InlineTask::new_in_as`] and its thin pointer kept in the word. [`InlineTask::into_box`] hands
//!   that same allocation back, re-typed as `Box<dyn FnOnce() + Send>`; an inline or block closure
//!   is boxed only then.
//! * The vtable is a `&'static` reference, never null, so `Option<InlineTask>` uses its niche and is
//!   also 24 bytes. Each `&Erased::<F>::VTABLE` is a constant promoted to a `'static`; the same `F`
//!   may get more than one copy across codegen units, which is harmless (nothing compares vtables).
//!
//! # Safety argument
//!
//! * **Ownership.** An `InlineTask` owns exactly one `F`: inline in `data`, or in the slab block
//!   or heap allocation `data` points to (it owns that block or allocation too). `data` is written once, in
//!   `new`, and never changed; the vtable stored beside it is the one for that same `F`, so every vtable
//!   function is only ever given a word that holds (or points to) a live `F` of its own type. The `F` leaves
//!   the task exactly once: `run` and `into_box` copy `vtable` and `data` out and `mem::forget(self)` before
//!   touching the closure, so `Drop` cannot also see it; `Drop` is the only other consumer. A closure that
//!   panics in `run` was moved out already: its captures are dropped by unwinding, once, and a boxed
//!   closure's allocation was freed (a block closure's block given back) when it was moved out, before the
//!   call.
//! * **Blocks.** A block holds `F` from `new_in_as` until the one consumer moves it out (a run,
//!   `into_box`) or drops it in place (`Drop`, which gives the block back only after that drop,
//!   or as a panic of it unwinds: `GiveBack`); the block is `BLOCK_ALIGN`-aligned and its class's
//!   size, which `class_for` chose to hold `F` in size and alignment. The class outlives the block: a slab dropped with blocks still out leaks its
//!   classes rather than free them (`task_slab.rs`), so the class address in the word stays valid.
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

use super::task_slab::{self, Block, Class, Freed, TaskSlab};

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

/// Whether a closure of type `F` is stored inline (`true`), or in a block or a box.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) const fn is_inline<F: FnOnce() + Send + 'static>() -> bool {
    Erased::<F>::INLINE
}

/// Where a task's closure is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Storage {
    /// In the task's own word.
    Inline,
    /// In a block of a task slab's class (of that many bytes).
    Block(usize),
    /// In a `Box<F>` of its own.
    Boxed,
}

/// What the word of a closure stored in a block holds: the block (holding the `F`) and its class.
#[repr(C)]
#[derive(Clone, Copy)]
struct BlockWord {
    block: Block,
    class: *const Class,
}

const _: () = assert!(mem::size_of::<BlockWord>() <= INLINE_BYTES);
const _: () = assert!(mem::align_of::<BlockWord>() <= INLINE_ALIGN);

/// A type-erased `FnOnce() + Send + 'static`, run at most once, in 24 bytes (see the module docs).
///
/// `Send`, not `Sync`. `Sync` would be sound as the type is, because no `&self` method reaches the
/// closure (`Debug` and [`is_inline`](Self::is_inline) read only the vtable), so a shared reference
/// gives another thread nothing of the closure's, which is only `Send`. It is left off because nothing
/// needs it (a slot is reached under its shard's lock) and because it would turn unsound unnoticed
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
///
/// `call`, `drop` and `into_box` are `unsafe fn`s with [`Erased::take`]'s contract: the word passed
/// is one `Erased::<F>::store` wrote for this vtable's `F`, still holding that `F`, and it is not
/// used again (each consumes the `F`). A task keeps its vtable beside its word and passes the word
/// to exactly one of them (module docs, "Ownership").
struct VTable {
    /// For a value task (`inline_task/value.rs`): the `TypeId` of the value it holds; `None` for a closure.
    value: Option<fn() -> std::any::TypeId>,
    /// Whether calling it only hands a waker over (an async sleep's task, `sleep/slot.rs`): no
    /// user code runs, so the waker of a drive future's sleep may fire it (`timer/advance.rs`).
    wake: bool,
    /// Whether its entry counts in `len()`: all but a tick group's task (`kinds.rs`).
    counted: bool,
    /// Moves the `F` out and calls it; a block it was in goes to the `Freed`, if one is given, or
    /// back to its class at once. `unsafe`: the contract above.
    call: unsafe fn(Word, Option<&mut Freed>),
    /// Drops the `F` without calling it. `unsafe`: the contract above.
    drop: unsafe fn(Word),
    /// Moves the `F` out into a `Box<dyn FnOnce() + Send>` (reusing its box if it has one).
    /// `unsafe`: the contract above.
    into_box: unsafe fn(Word) -> Box<dyn FnOnce() + Send + 'static>,
    /// Whether the word holds `F` itself, a block holding it, or its box.
    storage: Storage,
}

impl InlineTask {
    /// Stores `f`: in the task's own word if it fits ([`is_inline`]), else in a block of `slab`'s
    /// class for it if one holds it, else in a `Box<F>`. `None` (and `f` dropped) if that class
    /// has no block left (`TaskSlab::with_max_pages`). `wake` marks a closure that only hands a
    /// waker over when run (an async sleep's task): [`is_wake`](Self::is_wake) says so.
    #[inline]
    pub(crate) fn new_in_as<F: FnOnce() + Send + 'static>(
        f: F,
        slab: &TaskSlab,
        wake: bool,
    ) -> Option<InlineTask> {
        let data = Erased::<F>::store(f, slab).ok()?;
        let vtable = if wake { &Erased::<F>::WAKE_VTABLE } else { &Erased::<F>::VTABLE };
        Some(InlineTask { vtable, data, _owns: PhantomData })
    }

    /// A closure that runs user code, stored as [`new_in_as`](Self::new_in_as) stores it in a slab
    /// that lives for the rest of the process, for tests.
    #[cfg(test)]
    pub(crate) fn new<F: FnOnce() + Send + 'static>(f: F) -> InlineTask {
        static SLAB: std::sync::OnceLock<TaskSlab> = std::sync::OnceLock::new();
        InlineTask::new_in_as(f, SLAB.get_or_init(TaskSlab::new), false).expect("an unlimited slab has room")
    }

    /// Whether this task's closure is stored inline (`false`: in a block or boxed).
    #[cfg(test)]
    pub(crate) fn is_inline(&self) -> bool {
        self.vtable.storage == Storage::Inline
    }

    /// Where this task's closure is stored.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn storage(&self) -> Storage {
        self.vtable.storage
    }

    /// Asks the processor to fetch a block closure's bytes into the cache, for the driver's walk
    /// of the next tick's entries (`shard/core/warm.rs`): the call that moves the closure out of
    /// its block then finds it there. Nothing for a closure stored inline (the slot's read brought
    /// it) or boxed. A prefetch is a hint, not a read: it reads nothing the task owns.
    #[inline]
    pub(crate) fn prefetch(&self) {
        let Storage::Block(size) = self.vtable.storage else { return };
        // SAFETY: a block closure's word holds the `BlockWord` `new_in_as` wrote (aligned, in
        // bounds: asserted at the top of the module); it is copied, not moved out (`BlockWord` is
        // `Copy`), and the task keeps it.
        let BlockWord { block, .. } = unsafe { self.data.as_ptr().cast::<BlockWord>().read() };
        prefetch_lines(block.as_ptr(), size);
    }

    /// Calls the closure, once. A panic in it propagates to the caller; the closure's captures are
    /// then dropped once, by the unwinding, and nothing is left for this task's `Drop`.
    #[cfg(test)]
    pub(crate) fn run(self) {
        self.run_with(None);
    }

    /// [`run`](Self::run), leaving the closure's block (if it had one) in `freed`, which gives it
    /// back to its class with the others of a batch.
    #[inline]
    pub(crate) fn run_into(self, freed: &mut Freed) {
        self.run_with(Some(freed));
    }

    #[inline]
    fn run_with(self, freed: Option<&mut Freed>) {
        let (vtable, data) = (self.vtable, self.data);
        // The closure now belongs to `data` alone: `Drop` must not see it again.
        mem::forget(self);
        // SAFETY: `vtable` is the vtable `new` stored with `data` for the same `F`, `data` still holds
        // that `F` (written once in `new`, never consumed: every consumer takes `self` by value and
        // forgets or is the drop), and the `F` is consumed only here since `self` was forgotten.
        unsafe { (vtable.call)(data, freed) }
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
        match self.storage() {
            Storage::Inline => f.write_str("InlineTask(inline)"),
            Storage::Block(size) => write!(f, "InlineTask(block of {size})"),
            Storage::Boxed => f.write_str("InlineTask(boxed)"),
        }
    }
}

/// A block whose closure was dropped in place, given back to its class when this guard drops:
/// after the closure's drop, or while a panic of that drop unwinds.
struct GiveBack {
    block: Block,
    class: *const Class,
}

impl Drop for GiveBack {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the class outlives its blocks (module docs, "Blocks"), so the address is a live
        // `Class`, reached by shared reference only.
        unsafe { &*self.class }.free(self.block);
    }
}

/// Prefetches the cache lines of `bytes` at `at` (x86-64; elsewhere nothing).
#[inline]
fn prefetch_lines(at: *const u8, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    for line in (0..bytes).step_by(64) {
        // SAFETY: a prefetch is a hint to the cache, not a memory access: it faults on no address
        // and reads nothing the language sees.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                at.wrapping_add(line).cast(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (at, bytes);
}

/// The per-type parts: the inline decision, moving the `F` out, and (for a closure) the vtable.
struct Erased<F>(PhantomData<F>);

impl<F: Send + 'static> Erased<F> {
    /// `F` fits the word: it goes inline.
    const INLINE: bool = mem::size_of::<F>() <= INLINE_BYTES && mem::align_of::<F>() <= INLINE_ALIGN;

    /// Not inline, and a slab class holds `F`: the class (an index into `task_slab::CLASSES`).
    const CLASS: Option<usize> =
        if Self::INLINE { None } else { task_slab::class_for(mem::size_of::<F>(), mem::align_of::<F>()) };

    const STORAGE: Storage = match Self::CLASS {
        _ if Self::INLINE => Storage::Inline,
        Some(class) => Storage::Block(task_slab::CLASSES[class]),
        None => Storage::Boxed,
    };

    /// Stores `f` in a word: inline, in a block of `slab`'s class for it, or boxed (see
    /// [`InlineTask::new_in_as`]); `f` back if that class has no block left. The word owns `f` then,
    /// to be consumed once through the vtable of the same `F`.
    #[inline]
    fn store(f: F, slab: &TaskSlab) -> Result<Word, F> {
        let mut data = Word::uninit();
        if Erased::<F>::INLINE {
            // SAFETY: `data` is valid for writes of `INLINE_BYTES` bytes at `usize` alignment, and
            // INLINE means `size_of::<F>() <= INLINE_BYTES` and `align_of::<F>() <= INLINE_ALIGN`,
            // so the cast pointer is aligned and the write in bounds. The word now owns `f`.
            unsafe { data.as_mut_ptr().cast::<F>().write(f) };
        } else if let Some(class) = Erased::<F>::CLASS {
            let class = slab.class(class);
            let Some(block) = class.alloc() else { return Err(f) };
            // SAFETY: the block is ours (just taken), `BLOCK_ALIGN`-aligned and its class's size
            // in bytes, and CLASS chose a class that holds `F` in size and alignment.
            unsafe { block.as_ptr().cast::<F>().write(f) };
            let word = BlockWord { block, class };
            // SAFETY: a `BlockWord` fits the word in size and alignment (asserted above). The word
            // now owns the block and the `F` in it.
            unsafe { data.as_mut_ptr().cast::<BlockWord>().write(word) };
        } else {
            let boxed: *mut F = Box::into_raw(Box::new(f));
            // SAFETY: a `*mut F` (thin, `F: Sized`) has the size and alignment of `usize` (asserted
            // at the top of the module), so the write is aligned and in bounds. The word now owns the
            // box, written as a pointer to keep its provenance.
            unsafe { data.as_mut_ptr().cast::<*mut F>().write(boxed) };
        }
        Ok(data)
    }

    /// Moves the `F` out of `data` (and frees its box, or gives its block back to its class).
    ///
    /// # Safety
    ///
    /// `data` is a word that [`Self::store`] wrote (for `InlineTask::new_in_as` or `value_in`), whose
    /// `F` has not been consumed, and it is not used again after this (the `F` now belongs to the
    /// caller).
    #[inline]
    unsafe fn take(data: Word, freed: Option<&mut Freed>) -> F {
        if Self::INLINE {
            // SAFETY: INLINE: `new` wrote an `F` at the start of the word; the word is `usize`-aligned
            // and `F` fits it in size and alignment. The caller guarantees that `F` is still live and
            // that nobody reads it again, so this read moves it out.
            unsafe { data.as_ptr().cast::<F>().read() }
        } else if Self::CLASS.is_some() {
            // SAFETY: a block closure's word holds the `BlockWord` `new_in_as` wrote (aligned, in
            // bounds: asserted at the top of the module).
            let BlockWord { block, class } = unsafe { data.as_ptr().cast::<BlockWord>().read() };
            // SAFETY: `new_in_as` moved an `F` into the block, which is aligned and big enough for it
            // (CLASS); the caller guarantees it is still live and read once, so this moves it out.
            let f = unsafe { block.as_ptr().cast::<F>().read() };
            // The block is empty now: back to its class (or to `freed`, which returns it with
            // its batch), before `f` is called or dropped.
            match freed {
                Some(freed) => freed.push(class, block),
                // SAFETY: the class outlives its blocks (module docs, "Blocks"), so the address
                // is a live `Class`, reached by shared reference only.
                None => unsafe { &*class }.free(block),
            }
            f
        } else {
            // SAFETY: this function's contract is `unbox`'s, and `F` is boxed (neither INLINE nor
            // in a block: the branches above). Moving `F` out of the box frees the allocation.
            *unsafe { Self::unbox(data) }
        }
    }

    /// Takes back the box of a boxed (not `INLINE`) closure.
    ///
    /// # Safety
    ///
    /// As [`Self::take`], and `F` is boxed (neither `INLINE` nor in a block: `store` then wrote the
    /// `*mut F` of a `Box<F>`).
    #[inline]
    unsafe fn unbox(data: Word) -> Box<F> {
        debug_assert!(!Self::INLINE && Self::CLASS.is_none());
        // SAFETY: boxed: `new` wrote the `*mut F` from `Box::into_raw` at the start of the (aligned)
        // word. The caller guarantees that box is still owned by this word and never used again, so
        // `Box::from_raw` takes it back exactly once.
        unsafe { Box::from_raw(data.as_ptr().cast::<*mut F>().read()) }
    }

    /// Drops the `F` a word holds (the vtable's `drop`).
    ///
    /// # Safety
    ///
    /// As [`Self::take`].
    unsafe fn drop(data: Word) {
        if Self::INLINE {
            // SAFETY: this function's contract is `take`'s, passed on unchanged.
            drop(unsafe { Self::take(data, None) });
        } else if Self::CLASS.is_some() {
            // SAFETY: a block closure's word holds the `BlockWord` `store` wrote (aligned, in
            // bounds: asserted at the top of the module).
            let BlockWord { block, class } = unsafe { data.as_ptr().cast::<BlockWord>().read() };
            // Gives the block back once `F` is dropped, or as a panic of that drop unwinds.
            let _back = GiveBack { block, class };
            // SAFETY: `store` moved an `F` into the block, which is aligned and big enough for it
            // (CLASS); the caller guarantees it is still live and consumed only here, so it is
            // dropped once, where it lies. Nothing reads the block after: the guard gives back its
            // address alone.
            unsafe { std::ptr::drop_in_place(block.as_ptr().cast::<F>()) };
        } else {
            // SAFETY: this function's contract, and `F` is boxed (the branch), as `unbox` requires;
            // dropping the box drops `F` in place and frees it.
            drop(unsafe { Self::unbox(data) });
        }
    }
}

impl<F: FnOnce() + Send + 'static> Erased<F> {
    /// Only fn pointers and an enum: no interior mutability and no `Drop`, so `&Self::VTABLE` is
    /// promoted to a `&'static`.
    const VTABLE: VTable = VTable {
        value: None,
        wake: false,
        counted: true,
        call: Self::call,
        drop: Self::drop,
        into_box: Self::into_box,
        storage: Self::STORAGE,
    };

    /// As [`VTABLE`](Self::VTABLE), for a closure that only hands a waker over.
    const WAKE_VTABLE: VTable = VTable { wake: true, ..Self::VTABLE };

    /// Moves the `F` out and calls it (the vtable's `call`).
    ///
    /// # Safety
    ///
    /// As [`Self::take`].
    unsafe fn call(data: Word, freed: Option<&mut Freed>) {
        // SAFETY: this function's contract is `take`'s, passed on unchanged.
        let f = unsafe { Self::take(data, freed) };
        f();
    }

    /// Moves the `F` out into a box, or re-types its own box (the vtable's `into_box`).
    ///
    /// # Safety
    ///
    /// As [`Self::take`].
    unsafe fn into_box(data: Word) -> Box<dyn FnOnce() + Send + 'static> {
        if Self::INLINE || Self::CLASS.is_some() {
            // SAFETY: this function's contract is `take`'s, passed on unchanged.
            Box::new(unsafe { Self::take(data, None) })
        } else {
            // SAFETY: this function's contract, and `F` is boxed (the branch), as `unbox` requires;
            // the box is re-typed, unmoved.
            unsafe { Self::unbox(data) }
        }
    }
}

mod kinds;
#[cfg(test)]
mod tests;
mod value;
