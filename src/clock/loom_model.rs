//! Under loom, a system clock reads no real time: its reading starts at zero and moves only by
//! [`ClockSource::advance_model`] (`loom_internals::advance_system_clock`), so that every
//! execution of a model reads the same times and takes the same operations, as loom requires
//! (docs/loom.md).

use std::time::Duration;

use super::{duration_nanos, ClockSource};

impl ClockSource {
    /// Moves a system clock's model reading by `by`.
    ///
    /// # Panics
    ///
    /// On a manual clock, which moves by its own advance.
    pub(crate) fn advance_model(&self, by: Duration) {
        let ClockSource::System { model, .. } = self else {
            panic!("a manual clock moves by its own advance")
        };
        model.fetch_add(duration_nanos(by), std::sync::atomic::Ordering::SeqCst);
    }
}
