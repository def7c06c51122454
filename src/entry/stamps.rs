//! `Stamps`: the numbers new entries are stamped with, from one counter per timer, drawn one at a
//! time or by each thread in blocks.
//!
//! A stamp is an entry's generation in its slot (every schedule of a timer gets a stamp of its own,
//! so a ticket of an earlier occupant never matches a later one: `Life` in `entry/`) and its place
//! among equal deadlines (`deadline.rs`, "Ties"). Two rules bind it:
//!
//! * **Unique**: no two schedules of one timer get the same stamp. Every stamp comes from one
//!   counter, `issued` (the last stamp reserved), by `fetch_add`: one at a time, or a block.
//! * **Ordered**: a schedule that happens before another gets the smaller stamp, so that equal
//!   deadlines fire in scheduling order: on one thread always; across threads (ordered by a lock
//!   or a channel) for stamps drawn one at a time.
//!
//! Drawn one at a time ([`Stamps::shared`]), both rules hold across threads, at the price of one
//! write to a line every scheduling thread writes: with two threads scheduling at once, that line
//! moves between cores on nearly every schedule (docs/design.md, "Contention on many cores").
//!
//! So a schedule after a **delay on the system clock** takes its stamp from a block its thread
//! reserved ([`Stamps::thread`]): the block's stamps are unique, and ordered on that thread; a block
//! grows from 1 to [`MAX_BLOCK`] stamps while its thread keeps scheduling, so a thread wastes at
//! most about as many stamps as it uses. Across threads, block stamps follow no happens-before
//! order: the firing sorts by deadline to a 256th of a tick, then by stamp (`deadline.rs`,
//! "Ties"), so delays scheduled by different threads whose deadlines fall in the same 256th of a
//! tick (3.9 µs with a 1 ms tick) fire in either order, even when one was scheduled first with an
//! earlier deadline. A schedule at an instant (`schedule_at` and the other `_at` forms, where equal
//! deadlines are what users write) and every schedule on a manual clock (where readings repeat)
//! take their stamps one at a time, ordered across threads too.
//!
//! **Rounds.** An advance fires only the due entries stamped at most what was issued when it began
//! (`timer/advance.rs`): work scheduled by the tasks it runs waits for the next advance. A block
//! reserved before that would break it, so an advance starts a new **round** ([`begin_round`]):
//! it reads `issued`, then bumps `round` (a `Release` read-modify-write). A thread's block belongs
//! to the round it was reserved in and serves no later one. A thread that reads the new round (an
//! `Acquire` load, so the advance's read of `issued` happens before it) reserves its block after
//! that read in `issued`'s modification order, so its stamps are above it: the driver itself, an
//! executor thread handed a task, any thread the tasks talk to. A block reserved between the two
//! steps belongs to the old round and serves nothing after the bump (the other order, bump then
//! read, let such a block of the new round hold stamps at or below what the advance read: unit
//! test `a_block_reserved_while_a_round_begins_serves_nothing_at_or_below_it`). A thread with no
//! relation to the advance schedules concurrently with it, and either outcome is right for it.
//!
//! [`begin_round`]: Stamps::begin_round

use std::cell::Cell;
use std::sync::atomic::{AtomicU64 as StdAtomicU64, Ordering};

use crate::sync::UnmodelledAtomicU64;

/// The most stamps a block holds: a thread scheduling without pause reserves one block per this
/// many schedules.
pub(crate) const MAX_BLOCK: u64 = 64;

/// Every `Stamps` gets a number of its own, so that a thread's block names the counter it came from
/// (an address could be reused by a later timer's).
static NEXT_ID: StdAtomicU64 = StdAtomicU64::new(1);

/// Where a new entry's stamp comes from (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StampBy {
    /// Drawn alone: ordered across threads.
    Timer,
    /// From this thread's block: ordered on this thread (a schedule after a delay on the system
    /// clock).
    Thread,
}

/// A timer's stamp counter (see the module docs).
#[derive(Debug)]
pub(crate) struct Stamps {
    /// The last stamp reserved (0 before the first).
    issued: UnmodelledAtomicU64,
    /// The round: bumped at the start of every advance.
    round: UnmodelledAtomicU64,
    /// This counter's number, which a thread's block carries.
    id: u64,
}

/// A thread's block: stamps `start..end` of the counter `id`, reserved in `round`, of which
/// `next..end` are left.
#[derive(Clone, Copy)]
struct Block {
    id: u64,
    round: u64,
    start: u64,
    next: u64,
    end: u64,
}

thread_local! {
    static BLOCK: Cell<Block> = const { Cell::new(Block { id: 0, round: 0, start: 0, next: 0, end: 0 }) };
}

impl Stamps {
    pub(crate) fn new() -> Stamps {
        Stamps {
            issued: UnmodelledAtomicU64::new(0),
            round: UnmodelledAtomicU64::new(0),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// A stamp drawn alone: unique, and ordered across threads (one read-modify-write of the line
    /// every scheduling thread shares). This thread's block of this counter, if it has one, serves
    /// no stamp after it (its stamps are below this one), and counts as the size it served.
    #[inline]
    pub(crate) fn shared(&self) -> u64 {
        let stamp = self.next_alone();
        if !cfg!(delaywheel_loom) {
            let _ = BLOCK.try_with(|cell| {
                let block = cell.get();
                if block.id == self.id {
                    cell.set(Block { end: block.next, ..block });
                }
            });
        }
        stamp
    }

    fn next_alone(&self) -> u64 {
        self.reserve(1)
    }

    /// Reserves the next `size` stamps: returns the first.
    fn reserve(&self, size: u64) -> u64 {
        self.issued.fetch_add(size, Ordering::Relaxed) + 1
    }

    /// A stamp from this thread's block: unique, ordered on this thread and after every advance
    /// this thread knows of; a new block when the round moved on or the block ran out.
    #[inline]
    pub(crate) fn thread(&self) -> u64 {
        // Loom's models explore the shared counter only: a block is thread-local arithmetic.
        if cfg!(delaywheel_loom) {
            return self.next_alone();
        }
        let round = self.round.load(Ordering::Acquire);
        BLOCK
            .try_with(|cell| {
                let block = cell.get();
                let ours = block.id == self.id && block.round == round;
                if ours && block.next < block.end {
                    cell.set(Block { next: block.next + 1, ..block });
                    return block.next;
                }
                // Twice what the last block served, so that a block's unused rest is at most what
                // its thread used.
                let size = if ours { ((block.end - block.start) * 2).clamp(1, MAX_BLOCK) } else { 1 };
                let first = self.reserve(size);
                cell.set(Block { id: self.id, round, start: first, next: first + 1, end: first + size });
                first
            })
            // Thread-local storage is being torn down (a timer used from a thread-local's drop).
            .unwrap_or_else(|_| self.next_alone())
    }

    /// Starts an advance's round: every block reserved so far serves no stamp after this. Returns
    /// the last stamp reserved: every stamp drawn after this on this thread, or on a thread that
    /// learns of this call, is above it.
    pub(crate) fn begin_round(&self) -> u64 {
        self.begin_round_with(|| {})
    }

    /// [`begin_round`](Stamps::begin_round), running `between` between its two steps (the unit
    /// tests draw stamps there, as another thread may).
    #[inline]
    fn begin_round_with(&self, between: impl FnOnce()) -> u64 {
        // First what was reserved, then the new round (`Release`, which `thread` reads with
        // `Acquire`): a block reserved in the new round comes after this read, above it.
        let issued = self.issued.load(Ordering::Relaxed);
        between();
        self.round.fetch_add(1, Ordering::Release);
        issued
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Draws `per_thread` stamps on each of 4 threads, every `alone`-th one drawn alone; checks
    /// that they are unique and grow on each thread, and returns how many were reserved.
    fn draw_on_threads(per_thread: usize, alone: usize) -> u64 {
        let stamps = Stamps::new();
        let drawn: Vec<Vec<u64>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..4)
                .map(|t| {
                    let stamps = &stamps;
                    scope.spawn(move || {
                        (0..per_thread)
                            .map(|i| if (i + t) % alone == 0 { stamps.shared() } else { stamps.thread() })
                            .collect::<Vec<u64>>()
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        let mut all = HashSet::new();
        for thread in &drawn {
            assert!(thread.windows(2).all(|w| w[0] < w[1]), "a thread's stamps grow");
            assert!(thread.iter().all(|&s| s > 0 && all.insert(s)), "no stamp twice");
        }
        stamps.issued.load(Ordering::Relaxed)
    }

    #[test]
    fn stamps_are_unique_across_threads_and_ordered_on_each() {
        // From blocks only: at most one block per thread is left partly used.
        let reserved = draw_on_threads(10_000, usize::MAX);
        assert!(reserved <= 40_000 + 4 * MAX_BLOCK, "reserved {reserved} for 40,000 stamps");
        // Every 7th drawn alone, which ends the thread's block: at most twice what is used.
        let reserved = draw_on_threads(10_000, 7);
        assert!(reserved <= 2 * 40_000 + 4 * MAX_BLOCK, "reserved {reserved} for 40,000 stamps");
    }

    #[test]
    fn a_round_ends_every_block_and_the_next_stamp_is_above_it() {
        let stamps = Stamps::new();
        let first = stamps.thread();
        let _ = stamps.thread();
        let other = std::thread::scope(|scope| scope.spawn(|| stamps.thread()).join().unwrap());
        let issued = stamps.begin_round();
        assert!(issued >= first.max(other));
        assert!(stamps.thread() > issued, "this thread's old block is not used after a round");
        let other = std::thread::scope(|scope| scope.spawn(|| stamps.thread()).join().unwrap());
        assert!(other > issued);
    }

    #[test]
    fn a_block_reserved_while_a_round_begins_serves_nothing_at_or_below_it() {
        let stamps = Stamps::new();
        let _ = stamps.thread();
        // Blocks reserved between the round's two steps, as by a thread the advance does not wait
        // for; this thread then learns of the advance and must stamp above what it read.
        let issued = stamps.begin_round_with(|| {
            let _ = stamps.thread();
            let _ = stamps.thread();
        });
        let after = stamps.thread();
        assert!(after > issued, "stamp {after} drawn after the round began is at or below {issued}");
    }

    #[test]
    fn a_block_serves_only_its_own_counter() {
        let (one, two) = (Stamps::new(), Stamps::new());
        let a = one.thread();
        let b = two.thread();
        let c = one.thread();
        // Each counter hands out 1 first: a block of `one` must not serve `two` or come back.
        assert_eq!((a, b), (1, 1));
        assert!(c > a);
        assert_eq!(one.shared(), c + 1, "`one` reserved only what it handed out");
    }
}
