//! `SlotLock`: an arena slot's lock, kept in spare bits of the word that also holds the slot's
//! life (generation, occupancy, status: `entry/`), so that a slot is 48 bytes and not 56.
//!
//! parking_lot's `Mutex<EntryState>` spent a byte on its lock and seven on padding. Here the slot
//! is one `u64` **word** and the body (location, deadline, closure: 40 bytes) in an `UnsafeCell`:
//!
//! ```text
//!  63                          8 7   5   4        3        2 1 0
//! [ owner's bits (generation)   | 0 0 0 | PARKED | LOCKED | owner's bits (occupied, status) ]
//! ```
//!
//! Bits 3 and 4 ([`LOCK_BITS`]) are the lock's; all others belong to the owner (`entry/`'s
//! `Life`, which asserts that it never uses these two). The owner's bits are only read and written
//! through a [`SlotGuard`]: they are as much under the lock as the body is.
//!
//! ## Protocol
//!
//! * **Lock.** One `fetch_or(LOCKED, Acquire)`: if `LOCKED` was clear, the lock is ours, and a
//!   `Relaxed` load then reads the owner's bits as the last unlock left them (coherence: no older
//!   value than our own `fetch_or`'s, and a waiter can only add `PARKED` since). If it was set, the
//!   `fetch_or` changed nothing and the slow path runs: spin briefly (re-reading the word, and
//!   `compare_exchange` `LOCKED` in as soon as it is clear), then set `PARKED` (a `compare_exchange`
//!   from a word with `LOCKED` set), then **park**, keyed by the word's address, with a validation
//!   that `LOCKED` and `PARKED` are both still set (checked by parking_lot_core under its queue
//!   lock). A wake-up, or a failed validation, starts over. Nothing is handed off: the woken thread
//!   competes again (parking_lot's eventual fairness is left out).
//! * **Guard.** The guard copies the owner's bits at lock time ([`SlotGuard::bits`]), and
//!   [`SlotGuard::set_bits`] changes the copy only; the word keeps its value until the unlock.
//! * **Unlock** (the guard's drop) writes the copy back and clears `LOCKED` in one step. Fast path:
//!   `compare_exchange(bits at lock | LOCKED → new bits, Release)`. It fails iff `PARKED` is set,
//!   which is the only change another thread can make to a locked word (see below). Slow path:
//!   parking_lot_core's `unpark_one` wakes one thread parked on the word and, **under the queue
//!   lock**, the callback writes `new bits | PARKED if more threads are still parked` (`Release`).
//! * **Orderings.** Every acquisition (the `fetch_or`, or a `compare_exchange` that sets `LOCKED`)
//!   is `Acquire`; every unlock is a `Release` write to the same word; the `fetch_or`s of
//!   lockers that find the word locked are read-modify-writes, which continue the release sequence.
//!   So each critical section happens-before the next: the body is published through the word, and
//!   the owner's bits are *in* the word, read after the RMW that takes the lock. `PARKED` needs no
//!   ordering of its own (`Relaxed`): the queue lock orders parking against unparking.
//!
//! ## Why a write-back cannot lose `PARKED`, and no waiter sleeps forever
//!
//! While `LOCKED` is set, other threads can only (a) `fetch_or(LOCKED)`, which changes nothing, or
//! (b) set `PARKED` by `compare_exchange` from the value they read. The owner's bits and `LOCKED`
//! stay as the locker left them. The fast unlock expects exactly `bits at lock | LOCKED`, `PARKED`
//! clear, so it succeeds only if no thread is parked or about to park: `PARKED` set at the
//! acquisition (threads still parked from before) or since makes it fail. The slow path then decides
//! `PARKED` from the queue itself, and its write (a `swap`, used as a store) cannot overwrite anyone's
//! change: the word holds `LOCKED | PARKED`, which (a) and (b) leave as it is.
//!
//! A waiter sets `PARKED` before it parks, and parks only if its validation, run under the queue
//! lock, still sees `LOCKED | PARKED`. If its `compare_exchange` setting `PARKED` comes after the
//! unlock's write in the word's modification order, it fails (the word is no longer the locked value
//! it read) and the waiter starts over. If it comes before, the fast unlock fails and the slow one
//! takes the queue lock, either after the waiter queued itself (the waiter is woken, or counted in
//! "more threads parked", which keeps `PARKED`) or before it validates (the validation then reads the
//! unlock's write or a later one, no longer `LOCKED | PARKED` unless another locker took the lock
//! and `PARKED` was kept for other waiters, whose unlock will wake one). A thread that wakes and
//! takes the lock while others still sleep finds `PARKED` still set, so its own unlock takes the
//! slow path and wakes the next.
//!
//! ## Under loom
//!
//! `--cfg delaywheel_loom` builds the same algorithm from loom's atomics (the `crate::sync` facade)
//! and `loom::cell::UnsafeCell`, which checks that every access to the body is ordered by the lock.
//! loom cannot see parking_lot_core, so [`parking`] is replaced by a model of its contract: one loom
//! mutex over a queue of `(key, thread)` under which the validation and the unpark callback run, and
//! `loom::thread::park`/`unpark` for the sleep. A lost wake-up is then a thread parked forever, which
//! loom reports as a deadlock. There is no spinning under loom (a contended locker parks at once).
//! `loom_tests/slot_lock.rs` models the lock on its own; every other model uses it through the arena.
//!
//! ## Safety argument
//!
//! The body is reached only through a [`SlotGuard`], which exists only between a successful
//! acquisition and the unlock that its drop performs; by the protocol above at most one exists per
//! lock at a time, and it is not `Send` (it holds a raw pointer). `&T` and `&mut T` come from
//! `&self` and `&mut self` of the guard, so the borrow checker keeps them from overlapping. Hence
//! [`SlotLock`] is `Sync` when `T: Send` (as for `Mutex<T>`).

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::ops::{Deref, DerefMut};

use crate::sync::{AtomicU64, Ordering};

/// Set while a guard exists.
const LOCKED: u64 = 1 << 3;
/// Set while a thread may be parked (or about to park) on the word.
const PARKED: u64 = 1 << 4;
/// The bits of the word that are the lock's own; the owner's bits are all the others.
pub const LOCK_BITS: u64 = LOCKED | PARKED;

/// A lock over `T` and the owner's bits of its word (see the module docs).
pub struct SlotLock<T> {
    word: AtomicU64,
    body: cell::Cell<T>,
    /// Where threads wait for this lock: parking_lot_core's table, keyed by the word's address
    /// (nothing here: zero bytes), or under loom this lock's own queue.
    queue: parking::Queue,
}

impl<T> std::fmt::Debug for SlotLock<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlotLock").field("word", &self.word.load(Ordering::Relaxed)).finish_non_exhaustive()
    }
}

// SAFETY: see "Safety argument" in the module docs: the body is only reached through the one guard
// the lock admits at a time, as with `Mutex<T>`, which is `Sync` for `T: Send`.
unsafe impl<T: Send> Sync for SlotLock<T> {}

impl<T> SlotLock<T> {
    /// An unlocked lock over `body`, with owner's bits `bits` (which must leave [`LOCK_BITS`] clear).
    pub fn new(bits: u64, body: T) -> SlotLock<T> {
        debug_assert_eq!(bits & LOCK_BITS, 0, "owner's bits in the lock's place");
        SlotLock {
            word: AtomicU64::new(bits & !LOCK_BITS),
            body: cell::Cell::new(body),
            // A unit struct in std builds, a queue under loom: one expression for both.
            #[allow(clippy::default_constructed_unit_structs)]
            queue: parking::Queue::default(),
        }
    }

    /// Asks the CPU to start loading this lock's cache line, and does nothing else: for a loop that
    /// locks many slots lying far apart (a bucket visit, a fired batch), issued a few slots ahead.
    /// A plain load there would not help: the `lock bts` of the slot in hand waits for every earlier
    /// load to complete, so each miss would still be taken one at a time; a prefetch is not ordered
    /// by locked instructions, so the misses overlap. A no-op off x86-64 and under loom.
    #[inline]
    pub fn prefetch(&self) {
        #[cfg(all(target_arch = "x86_64", not(delaywheel_loom)))]
        // SAFETY: `_mm_prefetch` is `unsafe` only because it is a `target_feature(enable = "sse")`
        // function, and SSE is part of every x86-64 target. A prefetch is a hint: it never faults,
        // has no architectural effect, and here is given the address of a live `&self` anyway.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>((self as *const Self).cast::<i8>());
        }
    }

    /// Whether a guard exists right now: for the loom build's check that a page is not freed while
    /// one of its slots is locked (`entry/pages.rs`). A read-modify-write, which reads the last
    /// value: a plain load may read a lock from before the page's last index reached the shrink
    /// through the free lists, a hand-over that loom does not see (`free_lists.rs`).
    #[cfg(delaywheel_loom)]
    pub fn is_locked(&self) -> bool {
        self.word.fetch_or(0, Ordering::Relaxed) & LOCKED != 0
    }

    /// Locks the slot, parking the thread while another holds it.
    #[inline]
    pub fn lock(&self) -> SlotGuard<'_, T> {
        // Only the LOCKED bit of the `fetch_or` is used, so that x86 takes it with one `lock bts`
        // (using the whole value makes it a load and a `lock cmpxchg` loop: +3 ns a cancel in W2).
        // The owner's bits are then read with a plain load: they are this lock's now, and a waiter
        // can only set PARKED meanwhile.
        let word = if self.word.fetch_or(LOCKED, Ordering::Acquire) & LOCKED == 0 {
            self.word.load(Ordering::Relaxed)
        } else {
            self.lock_slow()
        };
        let bits = word & !LOCK_BITS;
        SlotGuard {
            body: self.body.get_mut(),
            held: Held { word: &self.word, queue: &self.queue, at_lock: bits, bits },
        }
    }

    /// The contended path: spin, then park until the word is unlocked (module docs); returns the
    /// word as the successful `compare_exchange` found it.
    #[cold]
    fn lock_slow(&self) -> u64 {
        let mut spin = parking::Spin::default();
        let mut word = self.word.load(Ordering::Relaxed);
        loop {
            if word & LOCKED == 0 {
                match self.word.compare_exchange_weak(
                    word,
                    word | LOCKED,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return word,
                    Err(now) => word = now,
                }
                continue;
            }
            if word & PARKED == 0 {
                if spin.spin() {
                    word = self.word.load(Ordering::Relaxed);
                    continue;
                }
                if let Err(now) =
                    self.word.compare_exchange_weak(word, word | PARKED, Ordering::Relaxed, Ordering::Relaxed)
                {
                    word = now;
                    continue;
                }
            }
            let validate = || self.word.load(Ordering::Relaxed) & LOCK_BITS == LOCK_BITS;
            // SAFETY: `validate` is one atomic load: it neither panics nor calls into parking_lot.
            unsafe { parking::park(&self.word, &self.queue, validate) };
            spin = parking::Spin::default();
            word = self.word.load(Ordering::Relaxed);
        }
    }

    /// The raw word, for tests that watch the lock bits.
    #[cfg(all(test, not(delaywheel_loom)))]
    fn raw(&self) -> u64 {
        self.word.load(Ordering::Relaxed)
    }
}

/// A held [`SlotLock`]: derefs to the body, and carries the owner's bits (see the module docs).
/// Dropping it unlocks.
pub struct SlotGuard<'a, T> {
    // Declared before `held`, so dropped first: under loom, the access to the body ends before the
    // unlock (fields drop in declaration order).
    body: cell::Access<T>,
    held: Held<'a>,
}

impl<T> SlotGuard<'_, T> {
    /// The owner's bits, as the last unlock left them or as this guard set them.
    #[inline]
    pub fn bits(&self) -> u64 {
        self.held.bits
    }

    /// Sets the owner's bits, written to the word by the unlock. [`LOCK_BITS`] must be clear.
    #[inline]
    pub fn set_bits(&mut self, bits: u64) {
        debug_assert_eq!(bits & LOCK_BITS, 0, "owner's bits in the lock's place");
        self.held.bits = bits & !LOCK_BITS;
    }
}

impl<T> Deref for SlotGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this guard is the only one of its lock (module docs), so nothing writes the body
        // while the returned borrow of `self` lives.
        unsafe { self.body.as_ref() }
    }
}

impl<T> DerefMut for SlotGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and the borrow of `self` is exclusive, so no other reference to the
        // body made through this guard lives meanwhile.
        unsafe { self.body.as_mut() }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for SlotGuard<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlotGuard").field("bits", &self.bits()).field("body", &**self).finish()
    }
}

/// The lock side of a guard: its drop is the unlock.
struct Held<'a> {
    word: &'a AtomicU64,
    queue: &'a parking::Queue,
    /// The owner's bits when the lock was taken: the word is `at_lock | LOCKED` until the unlock,
    /// unless a waiter set `PARKED`.
    at_lock: u64,
    /// The owner's bits to write back.
    bits: u64,
}

/// The unlock's ordering: `Release`, so the next locker sees the body as the owner left it.
/// (The seeded fault `slot_unlock_relaxed`, docs/loom.md, makes it `Relaxed`.)
const UNLOCK: Ordering = if fault!("slot_unlock_relaxed") { Ordering::Relaxed } else { Ordering::Release };

impl Drop for Held<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.word.compare_exchange(self.at_lock | LOCKED, self.bits, UNLOCK, Ordering::Relaxed).is_err() {
            unlock_slow(self.word, self.queue, self.bits);
        }
    }
}

/// The unlock when `PARKED` is set: wakes one parked thread and, under the queue lock, writes the
/// owner's bits back unlocked, keeping `PARKED` iff threads are still parked (module docs).
#[cold]
fn unlock_slow(word: &AtomicU64, queue: &parking::Queue, bits: u64) {
    debug_assert_eq!(word.load(Ordering::Relaxed) & LOCK_BITS, LOCK_BITS);
    let write_back = |more_parked: bool| {
        // The seeded fault `slot_unlock_drops_parked` (docs/loom.md) drops `PARKED` although
        // threads are still parked, so the next unlock takes the fast path and wakes nobody.
        let more_parked = more_parked && !fault!("slot_unlock_drops_parked");
        // A swap, though a store would do (the word is `LOCKED | PARKED` and others' writes leave it
        // so): loom's modification order is partial, and would let a later read-modify-write read a
        // waiter's no-op `fetch_or` as if it came after a store that did not see it (loom#254,
        // loom#389; fix proposed in loom#391). It can go back to a store once loom has that fix.
        word.swap(if more_parked { bits | PARKED } else { bits }, UNLOCK);
    };
    // SAFETY: `write_back` is one atomic swap: it neither panics nor calls into parking_lot.
    unsafe { parking::unpark_one(word, queue, write_back) };
}

// The body's cell and the parking of waiters: `std`'s and parking_lot_core's, or loom's.
#[cfg(not(delaywheel_loom))]
mod cell;
#[cfg(delaywheel_loom)]
#[path = "loom_cell.rs"]
mod cell;
#[cfg(not(delaywheel_loom))]
mod parking;
#[cfg(delaywheel_loom)]
#[path = "loom_parking.rs"]
mod parking;

#[cfg(all(test, not(delaywheel_loom)))]
mod tests;
