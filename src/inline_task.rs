//! Placeholder for the inline task storage (replaced by the real module on merge): the same API,
//! boxed.

/// A type-erased task.
pub(crate) struct InlineTask(Box<dyn FnOnce() + Send + 'static>);

impl InlineTask {
    pub(crate) fn new<F: FnOnce() + Send + 'static>(f: F) -> InlineTask {
        InlineTask(Box::new(f))
    }
    pub(crate) fn run(self) {
        (self.0)()
    }
    pub(crate) fn into_box(self) -> Box<dyn FnOnce() + Send + 'static> {
        self.0
    }
}

impl std::fmt::Debug for InlineTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InlineTask")
    }
}
