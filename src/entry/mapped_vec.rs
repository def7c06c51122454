//! `MappedVec`: a growable array of plain items in a mapping of its own (`os.rs`), not in the
//! allocator's heap: the free lists' pool (`free_lists.rs`), which a spike grows to an item per
//! free slot or block (4 or 8 MB a million) and a shrink cuts back.
//!
//! It grows by doubling with `mremap` (the kernel moves page tables; nothing is copied), and
//! [`shrink_to_fit`](MappedVec::shrink_to_fit) gives the pages past its items back to the kernel at
//! once, on any thread. A `Vec` freed or shrunk goes back to the allocator instead, which on a
//! thread other than the main one keeps it resident (glibc trims only the main heap's top, and a
//! thread heap's top only past a trim threshold that a freed large buffer raises to up to 64 MB).
//! Elsewhere than Linux the mapping is an allocation (`os.rs`), resized with `realloc`.
//!
//! Only what the pool needs (and a shrink's blocks held, `page_reclaim.rs`): push a slice, read
//! and cut the tail.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::entry::os::{self, OS_PAGE};

/// A growable array of `T` in its own mapping (see the module docs).
pub(crate) struct MappedVec<T: Copy> {
    /// The mapping's first byte (dangling while `bytes` is 0).
    at: NonNull<T>,
    /// Items in use, from the first.
    len: usize,
    /// The mapping's size: 0 (none), or whole system pages.
    bytes: usize,
    _items: PhantomData<T>,
}

// SAFETY: the vector owns its mapping and its items (`T: Send`); nothing in it is thread-bound.
unsafe impl<T: Copy + Send> Send for MappedVec<T> {}
// SAFETY: `&MappedVec` only reads items (`T: Sync`).
unsafe impl<T: Copy + Sync> Sync for MappedVec<T> {}

impl<T: Copy> MappedVec<T> {
    /// Items of `T` fit a mapping: not zero-sized, aligned within a page (evaluated, and failing
    /// the build, where `new` is used for a `T` that does not).
    const FITS: () = assert!(std::mem::size_of::<T>() > 0 && std::mem::align_of::<T>() <= OS_PAGE);

    /// An empty vector: no mapping until the first item.
    pub(crate) const fn new() -> MappedVec<T> {
        let () = Self::FITS;
        MappedVec { at: NonNull::dangling(), len: 0, bytes: 0, _items: PhantomData }
    }

    /// Items it holds without a remap.
    fn capacity(&self) -> usize {
        self.bytes / std::mem::size_of::<T>()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn as_slice(&self) -> &[T] {
        // SAFETY: the first `len` items of the mapping were written (`extend_from_slice`), and the
        // pointer is aligned for `T` (a page) or dangling with `len` 0.
        unsafe { std::slice::from_raw_parts(self.at.as_ptr(), self.len) }
    }

    /// Resizes the mapping to `bytes` (0: unmapped), keeping the items.
    fn resize(&mut self, bytes: usize) {
        debug_assert!(bytes % OS_PAGE == 0 && bytes >= self.len * std::mem::size_of::<T>());
        if bytes == self.bytes {
            return;
        }
        let at = self.at.cast::<u8>();
        self.at = match (self.bytes, bytes) {
            (0, _) => os::map(bytes, false),
            (_, 0) => {
                // SAFETY: `at` is this vector's whole mapping of `self.bytes` (made by `os::map` or
                // `os::remap`), which nothing else refers to; it is replaced by a dangling pointer.
                unsafe { os::unmap(at, self.bytes) };
                NonNull::<T>::dangling().cast()
            }
            // SAFETY: as above, and `self.at` is replaced by the result at once.
            (old, new) => unsafe { os::remap(at, old, new) },
        }
        .cast();
        self.bytes = bytes;
    }

    /// Bytes of whole system pages that hold `items` items.
    fn pages_for(items: usize) -> usize {
        (items * std::mem::size_of::<T>()).div_ceil(OS_PAGE) * OS_PAGE
    }

    /// Appends `items`, doubling the mapping as needed.
    pub(crate) fn extend_from_slice(&mut self, items: &[T]) {
        let len = self.len + items.len();
        if len > self.capacity() {
            self.resize(Self::pages_for(len.max(2 * self.capacity())));
        }
        // SAFETY: the mapping holds `len` items (just resized), aligned for `T` (a page, or dangling
        // with nothing to copy); `items` is not in it (borrowed while `self` is mutably borrowed).
        unsafe { self.at.as_ptr().add(self.len).copy_from_nonoverlapping(items.as_ptr(), items.len()) };
        self.len = len;
    }

    /// Drops the items from `len` on (nothing if it holds fewer).
    pub(crate) fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Gives the mapping's pages past the items back to the kernel (all of it if there is none).
    pub(crate) fn shrink_to_fit(&mut self) {
        self.resize(Self::pages_for(self.len));
    }

    /// The mapping's size in bytes (resident at most).
    #[cfg(test)]
    pub(crate) fn mapped_bytes(&self) -> usize {
        self.bytes
    }
}

impl<T: Copy> Drop for MappedVec<T> {
    fn drop(&mut self) {
        self.len = 0;
        self.resize(0);
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
mod tests {
    use super::*;

    #[test]
    fn grows_keeps_its_items_and_gives_pages_back() {
        let mut vec = MappedVec::<u32>::new();
        assert_eq!((vec.len(), vec.mapped_bytes()), (0, 0));
        for chunk in 0..1000u32 {
            let items: Vec<u32> = (chunk * 100..chunk * 100 + 100).collect();
            vec.extend_from_slice(&items);
        }
        assert_eq!(vec.len(), 100_000);
        assert!(vec.as_slice().iter().copied().eq(0..100_000));
        assert!(vec.mapped_bytes() >= 400_000 && vec.mapped_bytes() <= 800_000, "{}", vec.mapped_bytes());
        vec.truncate(10);
        vec.shrink_to_fit();
        assert_eq!(vec.mapped_bytes(), OS_PAGE);
        assert!(vec.as_slice().iter().copied().eq(0..10));
        vec.truncate(0);
        vec.shrink_to_fit();
        assert_eq!(vec.mapped_bytes(), 0);
        vec.extend_from_slice(&[5]);
        assert_eq!(vec.as_slice(), &[5]);
    }
}
