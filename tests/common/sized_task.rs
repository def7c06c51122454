//! Closures and values of many sizes, each carrying a [`Probe`] that counts its drops and checks
//! that the bytes it carries are intact when it runs and when it is dropped. The reference models
//! of the timer (`model.rs`, tasks) and of the delay queue (`queue_model.rs`, values) use them so
//! that every way the timer keeps a closure or a value is checked for leaks, double drops and
//! damaged bytes: inline in its slot (up to 16 bytes), in a block of 64, 128 or 256 bytes of the
//! task slab, and boxed (over 256 bytes, or aligned over 64).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// What a carried value reports to its model: its drops, whether its bytes stayed intact, and
/// (for a task) its run.
pub struct Probe {
    pub id: usize,
    drops: AtomicUsize,
    damaged: AtomicBool,
    /// Whether the value panics when dropped without having run (after counting the drop).
    panics_when_dropped: bool,
    ran: AtomicBool,
    on_run: Box<dyn Fn(usize) + Send + Sync>,
}

/// In the message of a carried value's panicking drop: the models' panic hook passes over it.
pub const DROP_PANIC: &str = "a carried value dropped (expected by the model)";

impl Probe {
    /// A probe for value `id`, calling `on_run(id)` when a task carrying it runs (which may panic).
    pub fn new(id: usize, on_run: impl Fn(usize) + Send + Sync + 'static) -> Arc<Probe> {
        Probe::with_drop_panic(id, false, on_run)
    }

    /// As [`Probe::new`]; if `panics`, the value panics when dropped without having run.
    pub fn with_drop_panic(
        id: usize,
        panics: bool,
        on_run: impl Fn(usize) + Send + Sync + 'static,
    ) -> Arc<Probe> {
        let (drops, damaged, ran) = (AtomicUsize::new(0), AtomicBool::new(false), AtomicBool::new(false));
        Arc::new(Probe { id, drops, damaged, panics_when_dropped: panics, ran, on_run: Box::new(on_run) })
    }

    /// How many times the value carrying it was dropped (by its run too).
    pub fn drops(&self) -> usize {
        self.drops.load(Ordering::SeqCst)
    }

    /// Whether the carried bytes read back as written at every run and drop so far.
    pub fn intact(&self) -> bool {
        !self.damaged.load(Ordering::SeqCst)
    }
}

/// A value carrying a probe: built with its bytes written, checked by [`Carried::check`].
pub trait Carried: Send + 'static {
    fn new(probe: Arc<Probe>) -> Self;
    fn probe(&self) -> &Arc<Probe>;
    /// Marks the probe damaged if the carried bytes differ from what was written.
    fn check(&self);
    /// As the closure of a task: checks the bytes, reports the run, then drops the value.
    fn run(self)
    where
        Self: Sized,
    {
        self.check();
        self.probe().ran.store(true, Ordering::SeqCst);
        (self.probe().on_run)(self.probe().id);
    }
}

/// The byte `i` of value `id`.
fn pattern(id: usize, i: usize) -> u8 {
    (id.wrapping_mul(0x9E37_79B9) ^ i.wrapping_mul(31) ^ 0xA5) as u8
}

/// A probe and `N` bytes: `8 + N` bytes in all.
pub struct Payload<const N: usize> {
    probe: Arc<Probe>,
    bytes: [u8; N],
}

impl<const N: usize> Carried for Payload<N> {
    fn new(probe: Arc<Probe>) -> Self {
        let id = probe.id;
        Payload { probe, bytes: std::array::from_fn(|i| pattern(id, i)) }
    }

    fn probe(&self) -> &Arc<Probe> {
        &self.probe
    }

    fn check(&self) {
        let id = self.probe.id;
        if self.bytes.iter().enumerate().any(|(i, &b)| b != pattern(id, i)) {
            self.probe.damaged.store(true, Ordering::SeqCst);
        }
    }
}

impl<const N: usize> Drop for Payload<N> {
    fn drop(&mut self) {
        self.check();
        self.probe.drops.fetch_add(1, Ordering::SeqCst);
        let ran = self.probe.ran.load(Ordering::SeqCst);
        if self.probe.panics_when_dropped && !ran && !std::thread::panicking() {
            panic!("{DROP_PANIC}");
        }
    }
}

/// A payload aligned to 128 bytes: boxed by the timer whatever its size.
#[repr(align(128))]
pub struct Aligned(Payload<8>);

impl Carried for Aligned {
    fn new(probe: Arc<Probe>) -> Self {
        Aligned(Payload::new(probe))
    }

    fn probe(&self) -> &Arc<Probe> {
        self.0.probe()
    }

    fn check(&self) {
        self.0.check()
    }
}

/// How many size classes [`by_class`] knows.
pub const CLASSES: u8 = 13;

/// Something to do with a carried type, chosen at run time by [`by_class`].
pub trait Visit {
    type Out;
    fn visit<V: Carried>(self) -> Self::Out;
}

/// Calls `visitor` with the carried type of size class `class % CLASSES`: 8, 16 (the slot's inline
/// word), 24, 40, 64 (the smallest block), 72, 128, 136, 200, 256 (the largest block), 264 and
/// 1,024 bytes (boxed), and an 8-byte payload aligned to 128 (boxed).
pub fn by_class<R: Visit>(class: u8, visitor: R) -> R::Out {
    match class % CLASSES {
        0 => visitor.visit::<Payload<0>>(),
        1 => visitor.visit::<Payload<8>>(),
        2 => visitor.visit::<Payload<16>>(),
        3 => visitor.visit::<Payload<32>>(),
        4 => visitor.visit::<Payload<56>>(),
        5 => visitor.visit::<Payload<64>>(),
        6 => visitor.visit::<Payload<120>>(),
        7 => visitor.visit::<Payload<128>>(),
        8 => visitor.visit::<Payload<192>>(),
        9 => visitor.visit::<Payload<248>>(),
        10 => visitor.visit::<Payload<256>>(),
        11 => visitor.visit::<Payload<1016>>(),
        _ => visitor.visit::<Aligned>(),
    }
}
