//! A task-slab class's shrink (`task_slab.rs`), in steps of bounded work: the pages whose blocks
//! are all free go back to their [`PageSource`](crate::entry::os::PageSource), a step at a time
//! between the driver's ticks (`timer/shrink.rs`, "In steps").
//!
//! ## A round
//!
//! A shrink of a class is a **round**, whose state ([`Reclaim`]) the class keeps under a lock of
//! its own, so that whoever takes the next step (the driver, `Timer::shrink`, a stop) goes on with
//! it. Its first step gives the stepping thread's cached blocks back to the lists (the other
//! threads' caches come back at their next take: `thread_cache.rs`) and takes a map of the class's
//! chunks ([`PageMap`]: their addresses, sorted, one per 64 pages), which names each page by an
//! index. Then:
//!
//! * **Take.** Each step takes up to [`STEP_BLOCKS`] free blocks off the lists, stripe by stripe
//!   and then from the pool's end (`FreeLists::drain_stripe`, `drain_pool`, each under that list's
//!   lock alone), and **holds** them: a held block is on no list and in no cache, so nobody can
//!   take it. The round counts the blocks it holds of each page; a page all of whose
//!   [`BLOCKS_PER_PAGE`] blocks it holds is **emptied**: no block of it is anywhere else, so nobody
//!   holds one or can take one, and the step gives it back to the source (`madvise`) once the
//!   lists' locks are released. A step stops at [`STEP_PAGES`] pages emptied. The pool gives the
//!   round at most the blocks listed at its start, so that frees racing it cannot keep it taking.
//! * **Put back.** Once the lists are drained, each step puts up to [`STEP_BLOCKS`] held blocks
//!   back on the pool, leaving out those of pages given back.
//!
//! ## Why racing schedules and frees are safe
//!
//! Between two steps every lock is released, and a schedule or a free on any thread may come in
//! (the lists, caches and source are not modelled under loom: `sync.rs`, "Unmodelled"; the
//! interleavings are covered by the deterministic tests below and in `timer/shrink_tests.rs`,
//! which take a step, schedule or free, and take the next):
//!
//! * A block taken by a schedule was on a list or in a cache when it was taken, never held by the
//!   round; so its page is never emptied while it is out, and the round never touches its bytes.
//! * A block freed meanwhile goes to a cache or a list: the round may take it later (it is free) or
//!   not (its page then stays). Either way the count of its page only counts blocks that were free
//!   when taken, each at most once: a held block is on no list until the put-back.
//! * A page given back goes to the source's spare pages, which a schedule may take again at once
//!   (its blocks fresh, on no list). Its count stays at [`BLOCKS_PER_PAGE`], so a block of it that
//!   the round takes later is held apart (with the blocks of chunks mapped after the round began,
//!   which the map does not know) and put back as it is; and the blocks held before it was
//!   emptied are dropped by the put-back, never listed again.
//! * The class's count of its pages drops as a page goes back, and its count of free blocks
//!   (`Class::out`, what the slab's drop reads) adds the blocks held that go back to the lists: a
//!   slab dropped between two steps finds every block it handed out accounted for.
//!
//! Why no loom model: the round adds no hand-over the models would need to see. A block reaches a
//! closure's reader only through its entry's payload, whose moves its shard's lock orders (modelled);
//! the round's moves are the lists' own moves under the lists' locks, as a take's and a spill's are,
//! and the round touches no block's bytes, only its address.
//!
//! ## What it costs
//!
//! A step takes at most [`STEP_BLOCKS`] blocks, a binary search among the map's chunks each (a few
//! hundred after a spike of a million: in the cache), and gives back at most [`STEP_PAGES`] pages:
//! 0.3 to 0.5 ms (docs/benchmarks.md, "Memory after a spike"). The blocks held sit in mappings of
//! their own ([`MappedVec`]: 8 bytes a block, as in the pool they came from, which gives its pages
//! back as it drains), cut back as the put-back goes. While a round holds a spike's free blocks, a
//! schedule finds none of them on the lists and takes a page given back or a fresh one.
//!
//! Lock order: the round's lock, then one list's lock (or the page count's, or the source's); a
//! take or a free never takes the round's lock.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::ptr::NonNull;

use crate::entry::free_lists::FreeLists;
use crate::entry::mapped_vec::MappedVec;
use crate::entry::os::PAGES_PER_CHUNK;
use crate::entry::task_slab::{Block, Class, BLOCKS_PER_PAGE};

/// The most blocks a step takes off the lists, or puts back on them.
pub(crate) const STEP_BLOCKS: usize = 8_192;

/// The most pages a step gives back (a page of 256-byte blocks is 16 KiB: 2 MiB a step at most).
pub(crate) const STEP_PAGES: usize = STEP_BLOCKS / BLOCKS_PER_PAGE;

/// A page's count once the round has emptied it.
const EMPTIED: u8 = BLOCKS_PER_PAGE as u8;

/// What a step did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Step {
    /// Pages given back.
    pub(crate) given: usize,
    /// Blocks taken off the lists or put back on them.
    pub(crate) blocks: usize,
    /// Whether the round ended with this step.
    pub(crate) done: bool,
}

/// A class's chunks, by address: a page's index is its chunk's rank times [`PAGES_PER_CHUNK`] plus
/// its place in the chunk.
pub(crate) struct PageMap {
    /// Each chunk's first byte (as a `Block`: an address that grants nothing by itself).
    chunks: Vec<Block>,
    page_bytes: usize,
}

impl PageMap {
    /// The page of `block`, if it lies in a chunk of the map.
    fn page_of(&self, block: Block) -> Option<usize> {
        let at = block.as_ptr() as usize;
        let chunk = self.chunks.partition_point(|chunk| chunk.as_ptr() as usize <= at).checked_sub(1)?;
        let page = (at - self.chunks[chunk].as_ptr() as usize) / self.page_bytes;
        (page < PAGES_PER_CHUNK).then_some(chunk * PAGES_PER_CHUNK + page)
    }

    /// The first byte of page `index`.
    fn page(&self, index: usize) -> NonNull<u8> {
        let chunk = self.chunks[index / PAGES_PER_CHUNK];
        let at = chunk.as_ptr().wrapping_add(index % PAGES_PER_CHUNK * self.page_bytes);
        NonNull::new(at).expect("a page inside a mapped chunk")
    }
}

/// A class's shrink under way, if any (see the module docs).
#[derive(Default)]
pub(crate) struct Reclaim {
    round: Option<Round>,
}

impl Reclaim {
    /// Blocks held that go back to the lists: free, though on no list.
    pub(crate) fn held_free(&self) -> usize {
        self.round.as_ref().map_or(0, |round| round.live)
    }
}

struct Round {
    map: PageMap,
    /// Blocks held of each page, by index; [`EMPTIED`] once it is given back.
    counts: Vec<u8>,
    /// Blocks held of pages the map knows, counted in `counts`.
    held: MappedVec<Block>,
    /// Blocks held apart: of pages given back and taken again, or of chunks mapped since.
    apart: MappedVec<Block>,
    /// Blocks held that go back to the lists.
    live: usize,
    /// The next stripe to drain; past the last, the pool.
    stripe: usize,
    /// Blocks the pool may still give the round.
    quota: usize,
    /// Whether the lists are drained and the put-back has begun.
    putting_back: bool,
}

/// A step's take: what it holds of each page, what it emptied.
struct Hold<'a> {
    map: &'a PageMap,
    counts: &'a mut [u8],
    held: &'a mut MappedVec<Block>,
    apart: &'a mut MappedVec<Block>,
    live: &'a mut usize,
    emptied: Vec<usize>,
    taken: usize,
}

impl Hold<'_> {
    /// Holds `block`, just taken off a list; whether the step takes more.
    fn hold(&mut self, block: Block) -> bool {
        self.taken += 1;
        match self.map.page_of(block) {
            Some(page) if self.counts[page] < EMPTIED => {
                self.counts[page] += 1;
                if self.counts[page] == EMPTIED {
                    // Its other blocks, held before, are no longer free blocks of the class.
                    *self.live -= BLOCKS_PER_PAGE - 1;
                    self.emptied.push(page);
                } else {
                    self.held.extend_from_slice(std::slice::from_ref(&block));
                    *self.live += 1;
                }
            }
            _ => {
                self.apart.extend_from_slice(std::slice::from_ref(&block));
                *self.live += 1;
            }
        }
        !self.full()
    }

    fn full(&self) -> bool {
        self.taken >= STEP_BLOCKS || self.emptied.len() >= STEP_PAGES
    }
}

impl Round {
    /// Takes up to [`STEP_BLOCKS`] blocks off the lists, stopping once [`STEP_PAGES`] pages are
    /// emptied: the indices of the pages emptied, and how many blocks it took.
    fn take(&mut self, lists: &FreeLists<Block>) -> (Vec<usize>, usize) {
        let Round { map, counts, held, apart, live, stripe, quota, putting_back } = self;
        let mut hold = Hold { map, counts, held, apart, live, emptied: Vec::new(), taken: 0 };
        while *stripe < lists.stripes() {
            let (_, left) = lists.drain_stripe(*stripe, STEP_BLOCKS - hold.taken, |block| hold.hold(block));
            if left == 0 {
                *stripe += 1;
            }
            if hold.full() {
                return (hold.emptied, hold.taken);
            }
        }
        let want = (STEP_BLOCKS - hold.taken).min(*quota);
        let (moved, left) = lists.drain_pool(want, |block| hold.hold(block));
        *quota -= moved;
        if left == 0 || *quota == 0 {
            *putting_back = true;
        }
        (hold.emptied, hold.taken)
    }

    /// Puts up to [`STEP_BLOCKS`] held blocks back on the pool, but for those of pages given back:
    /// how many it went through, and whether every held block is back.
    fn put_back(&mut self, lists: &FreeLists<Block>) -> (usize, bool) {
        let from_apart = self.apart.len().min(STEP_BLOCKS);
        let keep = self.apart.len() - from_apart;
        lists.put_back(&self.apart.as_slice()[keep..], |_| true);
        self.apart.truncate(keep);
        let from_held = self.held.len().min(STEP_BLOCKS - from_apart);
        let keep = self.held.len() - from_held;
        let (map, counts) = (&self.map, &self.counts);
        let listed = |block: Block| map.page_of(block).map_or(true, |page| counts[page] < EMPTIED);
        let back = lists.put_back(&self.held.as_slice()[keep..], listed);
        self.held.truncate(keep);
        // Their mapping goes back as they do: the last step unmaps no spike's worth at once.
        self.held.shrink_to_fit();
        self.apart.shrink_to_fit();
        self.live -= from_apart + back;
        (from_apart + from_held, self.apart.len() + self.held.len() == 0)
    }
}

impl Class {
    /// One step of this class's shrink (see the module docs): starts a round if none is under way.
    pub(crate) fn shrink_step(&self) -> Step {
        let mut reclaim = self.reclaim.lock();
        let Some(round) = reclaim.round.as_mut() else {
            if *self.pages.lock() == 0 {
                return Step { done: true, ..Step::default() };
            }
            // The lists are what the round takes from: this thread's cached blocks go back to them
            // first, other threads' at their next take (`block_cache.rs`).
            self.free.before_shrink();
            let chunks =
                self.source.chunks().into_iter().map(|chunk| Block::from_ptr(chunk.as_ptr())).collect();
            let map = PageMap { chunks, page_bytes: self.source.page_bytes() };
            let counts = vec![0; map.chunks.len() * PAGES_PER_CHUNK];
            reclaim.round = Some(Round {
                map,
                counts,
                held: MappedVec::new(),
                apart: MappedVec::new(),
                live: 0,
                stripe: 0,
                quota: self.free.lists.listed_count_with(|listed| listed),
                putting_back: false,
            });
            return Step::default();
        };
        if round.putting_back {
            let (blocks, done) = round.put_back(&self.free.lists);
            if done {
                reclaim.round = None;
            }
            return Step { given: 0, blocks, done };
        }
        let (emptied, blocks) = round.take(&self.free.lists);
        let pages: Vec<NonNull<u8>> = emptied.iter().map(|&page| round.map.page(page)).collect();
        if !pages.is_empty() {
            *self.pages.lock() -= pages.len();
            // SAFETY: pages of this class's source (pages of its chunks), each given back once
            // (its count reached `EMPTIED` once in this round, and a count never drops within a
            // round): every block of each was free and is held by this round, on no list and in no
            // cache, so nobody holds one or can take one, and only a block's holder touches its
            // bytes; the blocks held are never listed again (`put_back` leaves them out).
            unsafe { self.source.give_back(pages) };
        }
        Step { given: emptied.len(), blocks, done: false }
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
mod tests {
    use std::collections::HashSet;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::entry::task_slab::TaskSlab;

    /// This thread's CPU time (Linux; elsewhere zero): a step's own work, without the time the
    /// host's other load preempts it for.
    fn thread_cpu() -> Duration {
        #[cfg(target_os = "linux")]
        {
            let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: `clock_gettime` writes one `timespec`, ours.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
            Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
        }
        #[cfg(not(target_os = "linux"))]
        Duration::ZERO
    }

    /// `n` blocks of the 64-byte class taken, then all given back on this thread.
    fn spent(n: usize) -> TaskSlab {
        let slab = TaskSlab::new();
        let blocks: Vec<Block> = (0..n).map(|_| slab.class(0).alloc().expect("room")).collect();
        blocks.into_iter().for_each(|block| slab.class(0).free(block));
        slab
    }

    /// Takes `block` and fills it with `seed`'s pattern.
    fn fill(block: Block, seed: u64) -> (Block, u64) {
        // SAFETY: a block just taken from its class: its 64 bytes are the taker's.
        unsafe { block.as_ptr().cast::<[u64; 8]>().write([seed; 8]) };
        (block, seed)
    }

    /// Whether `block` still holds `seed`'s pattern, then gives it back to its class.
    fn intact(slab: &TaskSlab, (block, seed): (Block, u64)) -> bool {
        // SAFETY: a block taken (and filled) by the caller and not given back yet.
        let words = unsafe { block.as_ptr().cast::<[u64; 8]>().read() };
        slab.class(0).free(block);
        words == [seed; 8]
    }

    /// Every step of a round over a million free blocks (a tenth in a debug build) handles at most
    /// [`STEP_BLOCKS`] blocks and gives back at most [`STEP_PAGES`] pages, and the round gives
    /// every page back. Prints the longest step.
    #[test]
    fn each_step_is_bounded_and_the_round_gives_every_empty_page_back() {
        let n = if cfg!(debug_assertions) { 100_000 } else { 1_000_000 };
        let slab = spent(n);
        let pages = slab.pages();
        assert_eq!(pages, n.div_ceil(BLOCKS_PER_PAGE));
        let (mut steps, mut given, mut longest, mut most_cpu) = (0, 0, Duration::ZERO, Duration::ZERO);
        loop {
            let (start, cpu) = (Instant::now(), thread_cpu());
            let step = slab.shrink_step(0);
            longest = longest.max(start.elapsed());
            most_cpu = most_cpu.max(thread_cpu() - cpu);
            steps += 1;
            assert!(step.blocks <= STEP_BLOCKS, "step {steps}: {} blocks", step.blocks);
            assert!(step.given <= STEP_PAGES, "step {steps}: {} pages", step.given);
            given += step.given;
            if step.done {
                break;
            }
        }
        eprintln!(
            "{n} blocks of 64 bytes, {pages} pages: {steps} steps, the longest {longest:?} \
             ({most_cpu:?} of the thread's CPU at most)"
        );
        assert_eq!((given, slab.pages(), slab.blocks_out()), (pages, 0, 0));
        assert!(steps > n / STEP_BLOCKS, "{steps} steps");
        assert_eq!(slab.class(0).free.lists.listed().len(), 0, "no block of a page given back listed");
    }

    /// Blocks taken between two steps, on this thread and another, hold what their takers wrote
    /// until they are given back, none is handed out twice, and blocks freed between two steps
    /// on another thread are found free by a later round.
    #[test]
    fn blocks_taken_or_freed_between_two_steps_stay_valid() {
        let slab = Arc::new(spent(100_000));
        let mut taken: Vec<(Block, u64)> = Vec::new();
        let mut seed = 0;
        let mut step = 0;
        loop {
            // This thread's takes (from the lists, or a page the round gave back), and another
            // thread's, which frees half of what it took.
            for _ in 0..300 {
                seed += 1;
                taken.push(fill(slab.class(0).alloc().expect("room"), seed));
            }
            let other = Arc::clone(&slab);
            let from = seed;
            let theirs: Vec<(usize, u64)> = std::thread::spawn(move || {
                let mut kept = Vec::new();
                for k in 0..300 {
                    let (block, seed) = fill(other.class(0).alloc().expect("room"), from + 1000 + k);
                    match k % 2 {
                        0 => other.class(0).free(block),
                        _ => kept.push((block.as_ptr() as usize, seed)),
                    }
                }
                kept
            })
            .join()
            .unwrap();
            seed += 1300;
            taken.extend(theirs.into_iter().map(|(at, seed)| (Block::from_ptr(at as *mut u8), seed)));
            step += 1;
            if slab.shrink_step(0).done {
                break;
            }
        }
        assert!(step > 2 * 100_000 / STEP_BLOCKS, "{step} steps");
        let distinct: HashSet<usize> = taken.iter().map(|&(block, _)| block.as_ptr() as usize).collect();
        assert_eq!(distinct.len(), taken.len(), "a block handed out twice");
        assert_eq!(slab.blocks_out(), taken.len());
        assert!(slab.pages() * BLOCKS_PER_PAGE >= taken.len());
        let held = taken.len();
        assert!(taken.into_iter().all(|block| intact(&slab, block)), "a block's bytes lost ({held} held)");
        assert_eq!(slab.blocks_out(), 0);
        slab.shrink();
        assert_eq!(slab.pages(), 0, "every block free again: every page goes");
    }
}
