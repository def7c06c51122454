//! The body's cell under loom, which checks every access against the lock's orderings.

pub(super) struct Cell<T>(loom::cell::UnsafeCell<T>);

impl<T> Cell<T> {
    pub(super) fn new(body: T) -> Cell<T> {
        Cell(loom::cell::UnsafeCell::new(body))
    }

    /// Starts a write access that loom tracks until the `Access` is dropped.
    pub(super) fn get_mut(&self) -> Access<T> {
        Access(self.0.get_mut())
    }
}

pub(super) struct Access<T>(loom::cell::MutPtr<T>);

impl<T> Access<T> {
    /// # Safety
    /// As in the std build.
    pub(super) unsafe fn as_ref(&self) -> &T {
        // SAFETY: as in the std build; loom's write access lasts as long as `self`.
        self.0.with(|body| unsafe { &*body })
    }

    /// # Safety
    /// As in the std build.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn as_mut(&self) -> &mut T {
        // SAFETY: as in the std build; loom's write access lasts as long as `self`.
        self.0.with(|body| unsafe { &mut *body })
    }
}
