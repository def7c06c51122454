//! [`TaskLines`]: where a task's closure lies outside its slot (a block, or a box), for a loop over
//! many tasks to prefetch.

use super::{task_slab, InlineTask, Storage};

/// The cache lines a task's closure occupies outside its slot (a block, or a box), for a loop over
/// many tasks to start loading them early ([`TaskLines::prefetch`]): the first line's address with
/// `log2` of the line count in its low bits (a block is line-aligned, 1, 2 or 4 lines; a box gets
/// the line its closure starts in), or 0 for a closure stored inline. A hint only: prefetching it
/// after the closure moved on loads a line nobody needs, nothing more.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TaskLines(pub(super) usize);

const LINE: usize = 64;

impl TaskLines {
    /// Asks the CPU to start loading the lines, and does nothing else (see `SlotLock::prefetch`
    /// for why a prefetch, not a load). A no-op off x86-64 and under loom.
    #[inline]
    pub(crate) fn prefetch(self) {
        if self.0 == 0 {
            return;
        }
        let first = self.0 & !(LINE - 1);
        for line in 0..1usize << (self.0 & (LINE - 1)) {
            let _address = first.wrapping_add(line * LINE);
            #[cfg(all(target_arch = "x86_64", not(delaywheel_loom)))]
            // SAFETY: `_mm_prefetch` is `unsafe` only because it is a `target_feature(enable =
            // "sse")` function, and SSE is part of every x86-64 target. A prefetch never faults and
            // has no architectural effect, whatever the address (this one may be stale).
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>(_address as *const i8);
            }
        }
    }
}

impl InlineTask {
    /// Where this task's closure lies outside its slot ([`TaskLines`]).
    #[inline]
    pub(crate) fn lines(&self) -> TaskLines {
        let lines_log2 = match self.vtable.storage {
            Storage::Inline => return TaskLines(0),
            Storage::Block(size) => (size / LINE).trailing_zeros() as usize,
            Storage::Boxed => 0,
        };
        // SAFETY: a block or boxed closure's word starts with a pointer (`BlockWord::block`, a
        // `Block`: a transparent `NonNull<u8>`; or the `*mut F`), written in `store` and never changed: the word's first `usize` is
        // initialised, aligned and in bounds. Only its address is taken, as a number.
        let address = unsafe { self.data.as_ptr().cast::<usize>().read() };
        TaskLines(address & !(LINE - 1) | lines_log2)
    }
}

// Blocks are line-aligned, each class a power-of-two number of lines whose log2 fits below a line's
// address bits.
const _: () = {
    assert!(task_slab::BLOCK_ALIGN % LINE == 0);
    let mut class = 0;
    while class < task_slab::CLASSES.len() {
        let lines = task_slab::CLASSES[class] / LINE;
        assert!(lines.is_power_of_two() && lines.trailing_zeros() < LINE.trailing_zeros());
        class += 1;
    }
};
