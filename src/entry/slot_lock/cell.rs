//! The body's cell: `std`'s (`loom_cell.rs` has loom's, which checks every access against the
//! lock's orderings).

pub(super) struct Cell<T>(std::cell::UnsafeCell<T>);

impl<T> Cell<T> {
    pub(super) fn new(body: T) -> Cell<T> {
        Cell(std::cell::UnsafeCell::new(body))
    }

    #[inline]
    pub(super) fn get_mut(&self) -> Access<T> {
        Access(self.0.get())
    }
}

/// The access a guard has to its body.
pub(super) struct Access<T>(*mut T);

impl<T> Access<T> {
    /// # Safety
    /// `self` is a held guard's, and no `&mut T` to the body lives as long as the result.
    #[inline]
    pub(super) unsafe fn as_ref(&self) -> &T {
        // SAFETY: the pointer comes from the live lock's cell (the guard borrows the lock);
        // no `&mut` to it lives, by this function's contract.
        unsafe { &*self.0 }
    }

    /// # Safety
    /// `self` is a held guard's, and no other reference to the body lives as long as the result.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn as_mut(&self) -> &mut T {
        // SAFETY: as in `as_ref`, and no other reference lives, by this function's contract.
        unsafe { &mut *self.0 }
    }
}
