//! `Readers`: who may be looking at an arena page without holding a slot of it, and the grace
//! period that waits for them before a retired page is freed (`pages.rs`).
//!
//! A handle names a slot it does not hold: its task may have ended long ago and the slot's page
//! been retired by a shrink. So every operation that starts from a ticket (a handle's `cancel`,
//! `reset`, status queries, the shutdown scan) runs **pinned**: [`Readers::pin`] before it loads a
//! page pointer, the pin dropped after its last access to the page. A shrink retires pages (takes
//! their pointers out of the directory), then begins a grace period ([`Readers::grace`]) and frees
//! them once it is over: once every thread pinned at its start has unpinned.
//!
//! ## The pin, and why it costs two plain stores
//!
//! Each thread has a **record**, a sequence number it alone writes: odd while pinned. Pinning
//! stores `seq + 1`, unpinning `seq + 2` (a nested pin finds it odd and leaves it to the outer one). The
//! grace period reads every record and waits for each odd one to change. What must not happen: the reader
//! loads a page pointer from before the retire, while the shrink reads its record as not pinned. That is the
//! store-buffering shape (reader: store record, load pointer; shrink: store pointer, load record), which
//! needs a full fence on both sides; on Linux the reader's is only a compiler fence and the shrink's is
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` (`os.rs`), which runs a full fence on every CPU running a
//! thread of the process, as if each had executed one where it was interrupted. So the pin costs a cancel two
//! stores to a line of its own thread, and the shrink a system call. Where `membarrier` is missing, both
//! sides fall back to `fence(SeqCst)`.
//!
//! Records live as long as the process, in one registry shared by all timers; a thread that exits
//! gives its record back for the next new thread (its sequence number is even then), and so does a
//! pin in the drop of a thread-local destroyed after that give-back, as it unpins. A grace period
//! thus also waits for pins on other timers: they are as short (a handle operation, and the drop of
//! the closure a `cancel` won). A shrink that must not wait long (the driver's) bounds its wait and
//! frees what it could not yet at a later shrink.
//!
//! ## Under loom
//!
//! loom has no `membarrier`: the models use one counter of pins per model thread in the arena, and
//! read-modify-writes on both sides (the pin's and the grace period's), which order the record the
//! way the fences do in the real build. The models check the protocol (the pin covers every access,
//! the shrink frees only after the grace period: seeded fault `shrink_skips_grace`), not the
//! fences.

use std::marker::PhantomData;
use std::time::{Duration, Instant};

/// The readers of one arena (see the module docs).
pub(crate) struct Readers {
    /// Whether pins need a real fence (no `membarrier`).
    #[cfg(not(delaywheel_loom))]
    fenced: bool,
    #[cfg(delaywheel_loom)]
    pins: [crate::sync::AtomicUsize; 4],
}

/// A pinned stretch of this thread (see the module docs): unpinned when dropped. Not `Send`.
pub(crate) struct Pin<'a> {
    /// The record this pin made odd (`None`: nested in another pin of this thread, which unpins).
    #[cfg(not(delaywheel_loom))]
    record: Option<&'static imp::Record>,
    #[cfg(delaywheel_loom)]
    readers: &'a Readers,
    _marker: PhantomData<(&'a Readers, *const ())>,
}

/// A grace period begun by [`Readers::grace`]: the pins it still waits for.
pub(crate) struct Grace {
    /// `None`: the heavy barrier failed, and the grace period never ends.
    #[cfg(not(delaywheel_loom))]
    waiting: Option<Vec<(&'static imp::Record, u64)>>,
}

impl Readers {
    pub(crate) fn new() -> Readers {
        Readers {
            #[cfg(not(delaywheel_loom))]
            fenced: !crate::entry::os::heavy_barrier_available(),
            #[cfg(delaywheel_loom)]
            pins: Default::default(),
        }
    }

    /// Pins this thread until the returned value drops.
    #[inline]
    pub(crate) fn pin(&self) -> Pin<'_> {
        #[cfg(delaywheel_loom)]
        self.pins[crate::sync::thread_index() % 4].fetch_add(1, crate::sync::Ordering::AcqRel);
        Pin {
            #[cfg(not(delaywheel_loom))]
            record: imp::enter(self.fenced),
            #[cfg(delaywheel_loom)]
            readers: self,
            _marker: PhantomData,
        }
    }

    /// Begins a grace period: every thread pinned now is waited for (see the module docs). Call it
    /// after retiring the pages it guards.
    pub(crate) fn grace(&self) -> Grace {
        #[cfg(not(delaywheel_loom))]
        return Grace { waiting: imp::pinned(self.fenced) };
        #[cfg(delaywheel_loom)]
        Grace {}
    }

    /// Waits for `grace` to be over, up to `limit` (`None`: as long as it takes). Whether it is.
    /// A thread that is pinned itself must not wait (its own pin would never end):
    /// `EntryArena::shrink` does not shrink there.
    pub(crate) fn wait(&self, grace: &mut Grace, limit: Option<Duration>) -> bool {
        let give_up = limit.and_then(|limit| Instant::now().checked_add(limit));
        #[cfg(not(delaywheel_loom))]
        if grace.waiting.is_none() {
            return false;
        }
        loop {
            if self.is_over(grace) {
                return true;
            }
            if give_up.is_some_and(|at| Instant::now() >= at) {
                return false;
            }
            #[cfg(not(delaywheel_loom))]
            std::thread::yield_now();
            #[cfg(delaywheel_loom)]
            loom::thread::yield_now();
        }
    }

    /// Whether this thread is pinned.
    pub(crate) fn pinned_here(&self) -> bool {
        #[cfg(not(delaywheel_loom))]
        return imp::pinned_here();
        #[cfg(delaywheel_loom)]
        return self.pins[crate::sync::thread_index() % 4].load(crate::sync::Ordering::Acquire) > 0;
    }

    /// Whether every pin `grace` waits for has ended.
    fn is_over(&self, grace: &mut Grace) -> bool {
        #[cfg(not(delaywheel_loom))]
        {
            let _ = self;
            let Some(waiting) = &mut grace.waiting else { return false };
            waiting.retain(|&(record, seq)| record.seq() == seq);
            waiting.is_empty()
        }
        #[cfg(delaywheel_loom)]
        {
            let _ = grace;
            // Seeded fault `shrink_skips_grace` (docs/loom.md): pins are not waited for, so a
            // page is freed while a handle that loaded it is still looking.
            fault!("shrink_skips_grace")
                || self.pins.iter().all(|pins| pins.fetch_add(0, crate::sync::Ordering::AcqRel) == 0)
        }
    }
}

impl Drop for Pin<'_> {
    #[inline]
    fn drop(&mut self) {
        #[cfg(not(delaywheel_loom))]
        if let Some(record) = self.record {
            imp::leave(record);
        }
        #[cfg(delaywheel_loom)]
        self.readers.pins[crate::sync::thread_index() % 4].fetch_sub(1, crate::sync::Ordering::AcqRel);
    }
}

/// The registry of records and this thread's own (real builds only).
#[cfg(not(delaywheel_loom))]
mod imp {
    use std::cell::Cell;
    use std::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicU64, Ordering};

    use crate::sync::UnmodelledMutex;

    /// A thread's sequence number (odd while pinned), on a cache line of its own.
    #[repr(align(128))]
    pub(crate) struct Record {
        seq: AtomicU64,
        taken: AtomicBool,
        /// Taken by a thread whose thread-locals are being destroyed, after its give-back ran:
        /// the outermost pin gives it back as it unpins (only its thread reads or writes this
        /// while it holds the record).
        orphan: AtomicBool,
    }

    impl Record {
        pub(crate) fn seq(&self) -> u64 {
            self.seq.load(Ordering::Acquire)
        }

        /// Whether a thread holds this record.
        #[cfg(test)]
        pub(crate) fn is_taken(&self) -> bool {
            self.taken.load(Ordering::Acquire)
        }
    }

    /// Every record ever made (never freed: a thread that exits gives its record back).
    static RECORDS: UnmodelledMutex<Vec<&'static Record>> = UnmodelledMutex::new(Vec::new());

    std::thread_local! {
        /// This thread's record (none until its first pin).
        static RECORD: Cell<Option<&'static Record>> = const { Cell::new(None) };
        /// Gives the record back when the thread exits.
        static GIVE_BACK: GiveBack = const { GiveBack };
    }

    struct GiveBack;

    impl Drop for GiveBack {
        fn drop(&mut self) {
            if let Some(record) = RECORD.with(Cell::take) {
                record.taken.store(false, Ordering::Release);
            }
        }
    }

    /// A record for this thread: a free one, or a new one.
    #[cold]
    fn register() -> &'static Record {
        let mut records = RECORDS.lock();
        let free = records
            .iter()
            .copied()
            .find(|r| r.taken.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok());
        let record = free.unwrap_or_else(|| {
            let record: &'static Record = Box::leak(Box::new(Record {
                seq: AtomicU64::new(0),
                taken: AtomicBool::new(true),
                orphan: AtomicBool::new(false),
            }));
            records.push(record);
            record
        });
        drop(records);
        RECORD.with(|mine| mine.set(Some(record)));
        // Registers the give-back. A thread whose give-back has run already (a pin in a
        // thread-local's drop, destroyed after it) cannot register it again: its outermost pin
        // gives the record back as it unpins (`leave`), else every such thread would keep a
        // record for good, and every grace period would read them all.
        let orphan = GIVE_BACK.try_with(|_| ()).is_err();
        record.orphan.store(orphan, Ordering::Relaxed);
        record
    }

    /// Gives back the record of a thread whose give-back has run, as its outermost pin ends.
    #[cold]
    fn give_back_orphan(record: &Record) {
        RECORD.with(|mine| mine.set(None));
        record.orphan.store(false, Ordering::Relaxed);
        record.taken.store(false, Ordering::Release);
    }

    /// Pins this thread: its record, made odd; `None` if it was odd already (a nested pin).
    #[inline]
    pub(super) fn enter(fenced: bool) -> Option<&'static Record> {
        let record = RECORD.with(Cell::get).unwrap_or_else(register);
        let seq = record.seq.load(Ordering::Relaxed);
        if seq % 2 == 1 {
            return None;
        }
        record.seq.store(seq + 1, Ordering::Relaxed);
        if fenced {
            fence(Ordering::SeqCst);
        } else {
            compiler_fence(Ordering::SeqCst);
        }
        Some(record)
    }

    /// Whether this thread is pinned (its record is odd).
    pub(super) fn pinned_here() -> bool {
        RECORD.with(Cell::get).is_some_and(|record| record.seq.load(Ordering::Relaxed) % 2 == 1)
    }

    /// Unpins this thread (the outermost pin's `record`).
    #[inline]
    pub(super) fn leave(record: &Record) {
        record.seq.store(record.seq.load(Ordering::Relaxed) + 1, Ordering::Release);
        if record.orphan.load(Ordering::Relaxed) {
            give_back_orphan(record);
        }
    }

    /// The records pinned now, with their sequence numbers, after the heavy barrier; `None` if
    /// the barrier failed although the pins rely on it (then no grace period ever ends).
    pub(super) fn pinned(fenced: bool) -> Option<Vec<(&'static Record, u64)>> {
        if fenced {
            fence(Ordering::SeqCst);
        } else if !crate::entry::os::heavy_barrier() {
            return None;
        }
        let records = RECORDS.lock();
        Some(records.iter().map(|&record| (record, record.seq())).filter(|&(_, seq)| seq % 2 == 1).collect())
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
mod tests {
    use std::cell::RefCell;
    use std::sync::Mutex;

    use super::*;

    /// The records pins took in thread-locals' destructors.
    static LATE_RECORDS: Mutex<Vec<&'static imp::Record>> = Mutex::new(Vec::new());

    /// Pins when dropped, as a thread-local holding a handle does when its thread exits.
    struct PinsWhenDropped(&'static Readers);

    impl Drop for PinsWhenDropped {
        fn drop(&mut self) {
            let pin = self.0.pin();
            LATE_RECORDS.lock().unwrap().push(pin.record.expect("not nested"));
            assert!(self.0.pin().record.is_none(), "a nested pin leaves the unpin to the outer one");
            assert!(self.0.pinned_here(), "pinned while the record is the pin's own");
            drop(pin);
            assert!(!self.0.pinned_here());
        }
    }

    std::thread_local! {
        static LATE: RefCell<Option<PinsWhenDropped>> = const { RefCell::new(None) };
    }

    #[test]
    fn a_pin_in_a_thread_locals_drop_gives_its_record_back() {
        static READERS: std::sync::OnceLock<Readers> = std::sync::OnceLock::new();
        let readers = READERS.get_or_init(Readers::new);
        for _ in 0..20 {
            std::thread::spawn(move || {
                // Touched first, so destroyed after the record's give-back (which the pin below
                // registers): the drop pins once this thread's own record is gone.
                LATE.with(|late| *late.borrow_mut() = Some(PinsWhenDropped(readers)));
                drop(readers.pin());
            })
            .join()
            .unwrap();
        }
        let late = LATE_RECORDS.lock().unwrap();
        assert_eq!(late.len(), 20);
        let kept = late.iter().filter(|record| record.is_taken()).count();
        assert_eq!(kept, 0, "{kept} of the exited threads' records are never given back");
    }
}
