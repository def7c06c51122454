//! `ChunkDeque`: a double-ended queue of `Copy` values whose storage grows like a `Vec` while small
//! and in fixed-size chunks once large, so that a big list wastes at most about two chunks, not half
//! of its buffer (a `VecDeque` doubles: a list of 2.1k slots sits in a 4k-slot buffer).
//!
//! Layout: one line of positions, cut into chunks of `CHUNK` (position `p` is in chunk `p / CHUNK`,
//! at `p % CHUNK`), and the elements are the `len` positions from `head` on. Element `i` is at
//! `head + i`: an add, a shift, a mask and two loads, with no wrap-around. The last chunk is a field
//! of the deque itself (`last`), the others are in a vector (`chunks`): a push, which appends to the
//! last chunk, reads no chunk header out of line (a schedule's push into a stage list of a wheel of
//! hundreds of lists would otherwise miss the cache on that header: callgrind's cache simulation,
//! SPEC W1's shape), and a list of one chunk allocates no vector of headers. Pushing at the back
//! appends to the last chunk, or moves it into `chunks` and starts a new one; popping at the front
//! moves `head` on, and the chunk it leaves is freed at once (its entry in `chunks` stays,
//! unallocated, until they are half of the chunks: then they are drained, amortised O(1)). A list
//! that fits one chunk is one `Vec` that grows by doubling up to `CHUNK` and, when full with at
//! least half its front popped, shifts its elements down instead of growing, so a small list costs
//! what a `VecDeque` costs.
//!
//! The hot paths (index, push, pops at either end, a front run in one slice scan) are small and
//! `#[inline]`; what allocates, frees or moves elements is out of line (`#[cold]` where it is a hot
//! path's rare branch), so a cancel of the front entry compiles to one lookup and a short scan.

/// Elements per full chunk (1 KiB of 4-byte elements), the default `CHUNK`. SPEC W6 (1M timers over
/// ~470 stage lists of ~2.1k) measured 53.5 B per timer with 512, 53.0 with 256, 53.1 with 128 (the
/// first layout, a `VecDeque` head; this one: 53.0 with 256) and 56.5 with a plain `VecDeque`: below
/// 256 the chunks' own overhead eats what the tail saves.
pub(crate) const CHUNK: usize = 256;

/// A double-ended queue with O(1) index, push and pop at both ends, that allocates in chunks of
/// `CHUNK_LEN` elements once it holds more than one chunk (see the module docs).
///
/// Invariants, of the chunks `chunks` followed by `last` (none if both are empty and `last` has no
/// capacity), with `first = head / CHUNK_LEN` (the head's chunk) and `tail = head + len`:
/// * the chunks before `first` are spent: empty and unallocated; `first == 0` or `2 * first` is less
///   than the number of chunks.
/// * From `first` on, chunk `k` holds the positions `k * CHUNK_LEN..` up to `tail`: its length is
///   `min(CHUNK_LEN, tail - k * CHUNK_LEN)`, so all are full but the last, and the last ends at `tail`
///   (the head's chunk keeps its popped values below `head`; they are `Copy` and never read).
/// * Only the last chunk may be empty, and only if it is the head's (`head == tail`); `chunks` is
///   empty only with `head == tail == 0`.
/// * Every chunk has a capacity of `CHUNK_LEN`, but a lone chunk (`last`, with `chunks` empty),
///   whose capacity is at most `CHUNK_LEN`.
pub(crate) struct ChunkDeque<T, const CHUNK_LEN: usize = CHUNK> {
    /// The chunks before the last.
    chunks: Vec<Vec<T>>,
    /// The last chunk, where pushes go.
    last: Vec<T>,
    /// The position of the first element.
    head: usize,
    /// Elements held: they end at position `head + len`, the tail.
    len: usize,
}

impl<T, const CHUNK_LEN: usize> Default for ChunkDeque<T, CHUNK_LEN> {
    fn default() -> Self {
        ChunkDeque { chunks: Vec::new(), last: Vec::new(), head: 0, len: 0 }
    }
}

impl<T: Copy, const CHUNK_LEN: usize> ChunkDeque<T, CHUNK_LEN> {
    /// The capacity a lone chunk starts with (a `Vec` of 4-byte values starts at 4 too).
    const MIN_CAPACITY: usize = if CHUNK_LEN < 4 { CHUNK_LEN } else { 4 };

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Element slots allocated (the popped front of the head's chunk included).
    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        match self.chunks.len() {
            0 => self.last.capacity(),
            before => (before + 1 - self.head / CHUNK_LEN) * CHUNK_LEN,
        }
    }

    /// Chunk `k`: one of `chunks`, or `last` right after them.
    #[inline(always)]
    fn chunk(&self, k: usize) -> Option<&Vec<T>> {
        match self.chunks.get(k) {
            Some(chunk) => Some(chunk),
            None => (k == self.chunks.len()).then_some(&self.last),
        }
    }

    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<&T> {
        if index >= self.len() {
            return None;
        }
        let position = self.head + index;
        self.chunk(position / CHUNK_LEN)?.get(position % CHUNK_LEN)
    }

    #[inline]
    pub(crate) fn back(&self) -> Option<&T> {
        self.get(self.len().wrapping_sub(1))
    }

    #[inline]
    pub(crate) fn push_back(&mut self, value: T) {
        if self.last.len() < self.last.capacity() {
            self.last.push(value);
        } else {
            self.push_back_full(value);
        }
        self.len += 1;
    }

    /// `push_back` when the last chunk is full (or there is none): a lone chunk shifts its elements
    /// down if at least half of it was popped, or else doubles up to `CHUNK_LEN`; past that, a new
    /// chunk. The caller counts the push.
    #[cold]
    #[inline(never)]
    fn push_back_full(&mut self, value: T) {
        if self.chunks.is_empty() {
            let lone = &mut self.last;
            if self.head > 0 && self.head >= self.len {
                lone.copy_within(self.head.., 0);
                lone.truncate(self.len);
                self.head = 0;
                lone.push(value);
                return;
            }
            if lone.capacity() < CHUNK_LEN {
                let capacity = (lone.capacity() * 2).clamp(Self::MIN_CAPACITY, CHUNK_LEN);
                lone.reserve_exact(capacity - lone.len());
                lone.push(value);
                return;
            }
        }
        // The last chunk is full: it joins the others, and a new one starts.
        let full = std::mem::replace(&mut self.last, Vec::with_capacity(CHUNK_LEN));
        self.chunks.push(full);
        self.last.push(value);
    }

    /// Pops the front element and then the elements after it while `pred` holds for them; returns
    /// the front element and how many it popped in all (at least one). Inline, and one lookup of the
    /// head's chunk, which is scanned as a slice; only a run to the end of that chunk goes on out of
    /// line ([`pop_front_while`](ChunkDeque::pop_front_while)).
    #[inline]
    pub(crate) fn pop_front_run(&mut self, mut pred: impl FnMut(&T) -> bool) -> Option<(T, usize)> {
        let chunk = self.chunk(self.head / CHUNK_LEN)?;
        // The head's chunk ends at the tail or is full: all of it from `head` on is elements.
        let (&front, after) = chunk[self.head % CHUNK_LEN..].split_first()?;
        match after.iter().position(|value| !pred(value)) {
            Some(n) => {
                // `head` stays in its chunk.
                self.head += 1 + n;
                self.len -= 1 + n;
                Some((front, 1 + n))
            }
            None => {
                let n = 1 + after.len();
                self.drop_front(n);
                Some((front, n + self.pop_front_while(pred)))
            }
        }
    }

    /// Pops the elements at the front while `pred` holds for them; returns how many. Chunk by chunk,
    /// each scanned as a slice.
    #[inline(never)]
    pub(crate) fn pop_front_while(&mut self, mut pred: impl FnMut(&T) -> bool) -> usize {
        let mut popped = 0;
        while let Some(chunk) = self.chunk(self.head / CHUNK_LEN) {
            let rest = &chunk[self.head % CHUNK_LEN..];
            let run = rest.iter().position(|value| !pred(value));
            let n = run.unwrap_or(rest.len());
            popped += n;
            self.drop_front(n);
            if run.is_some() || self.len == 0 {
                break;
            }
        }
        popped
    }

    /// Pops the first `n` elements (at most [`len`](ChunkDeque::len)) without reading them.
    #[inline]
    pub(crate) fn drop_front(&mut self, n: usize) {
        debug_assert!(n <= self.len);
        let before = self.head / CHUNK_LEN;
        self.head += n;
        self.len -= n;
        if self.head / CHUNK_LEN != before {
            self.left_chunk(before);
        }
    }

    /// `head` moved from chunk `before` into a later chunk (or to the end of the last one): the chunks
    /// it left are freed, and drained from `chunks` once they are half of it. An emptied list keeps
    /// its last chunk's buffer for the next push (as a `VecDeque` keeps its buffer).
    #[cold]
    #[inline(never)]
    fn left_chunk(&mut self, before: usize) {
        let first = self.head / CHUNK_LEN;
        if self.len == 0 {
            self.last.clear();
            self.chunks.clear();
            self.head = 0;
            return;
        }
        for chunk in &mut self.chunks[before..first] {
            *chunk = Vec::new();
        }
        self.drain_spent();
    }

    /// Drains the spent chunks from `chunks` if they are at least half of it.
    fn drain_spent(&mut self) {
        let first = self.head / CHUNK_LEN;
        if first > 0 && 2 * first > self.chunks.len() {
            self.chunks.drain(..first);
            self.head -= first * CHUNK_LEN;
        }
    }

    #[inline]
    pub(crate) fn pop_back(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let value = self.last.pop()?;
        self.len -= 1;
        if self.last.is_empty() && !self.chunks.is_empty() {
            self.dropped_last_chunk();
        }
        Some(value)
    }

    /// `pop_back` emptied the last chunk, which is not a lone one: it goes, and the chunk before it
    /// is the last (or, if that emptied the list, whose other chunks are then all spent, none is
    /// left).
    #[cold]
    #[inline(never)]
    fn dropped_last_chunk(&mut self) {
        if self.len == 0 {
            self.chunks.clear();
            self.last = Vec::new();
            self.head = 0;
            return;
        }
        self.last = self.chunks.pop().expect("a chunk before the last");
        self.drain_spent();
    }

    /// Keeps only the elements for which `keep` holds, in order; `keep` gets each element with its
    /// index and the index it has if kept. O(len), into new buffers: the kept elements are pushed
    /// onto a new list with room for `capacity` (up to a chunk) from the start.
    pub(crate) fn retain(&mut self, capacity: usize, mut keep: impl FnMut(&T, usize, usize) -> bool) {
        let mut kept =
            ChunkDeque { last: Vec::with_capacity(capacity.min(CHUNK_LEN)), ..ChunkDeque::default() };
        for (index, value) in self.iter().enumerate() {
            if keep(value, index, kept.len) {
                kept.push_back(*value);
            }
        }
        *self = kept;
    }

    /// Gives back capacity beyond `max(len, min_capacity)` where it can: a list that fits a chunk is
    /// gathered into one lone chunk, whose buffer then shrinks as `Vec::shrink_to` does. A longer
    /// list only gives back the spare entries of `chunks`.
    pub(crate) fn shrink_to(&mut self, min_capacity: usize) {
        let len = self.len();
        if len > CHUNK_LEN {
            self.drain_spent();
            self.chunks.shrink_to(0);
            return;
        }
        let capacity = len.max(min_capacity.min(CHUNK_LEN));
        if capacity == 0 {
            *self = ChunkDeque::default();
            return;
        }
        if self.chunks.is_empty() {
            let lone = &mut self.last;
            lone.copy_within(self.head.., 0);
            lone.truncate(len);
            lone.shrink_to(capacity);
        } else {
            let mut lone = Vec::with_capacity(capacity);
            lone.extend(self.iter().copied());
            self.chunks = Vec::new();
            self.last = lone;
        }
        self.head = 0;
    }

    /// Visits the elements front to back while `f` returns `true`, giving it each element and the
    /// one `ahead` places after it if that is in the same chunk or the next (for prefetching; an
    /// `ahead` past a chunk, such as `usize::MAX`, gives `None`); returns how many elements `f`
    /// accepted. A scan of each chunk as a slice.
    #[inline]
    pub(crate) fn scan_ahead(&self, ahead: usize, mut f: impl FnMut(T, Option<T>) -> bool) -> usize {
        let mut accepted = 0;
        let mut slices = self.slices().peekable();
        while let Some(slice) = slices.next() {
            let next = slices.peek().copied().unwrap_or_default();
            for (j, &value) in slice.iter().enumerate() {
                let later = j.saturating_add(ahead);
                let later = match slice.get(later) {
                    Some(&later) => Some(later),
                    None => next.get(later - slice.len()).copied(),
                };
                if !f(value, later) {
                    return accepted;
                }
                accepted += 1;
            }
        }
        accepted
    }

    /// The elements, front to back, as at most `len / CHUNK_LEN + 2` slices.
    pub(crate) fn slices(&self) -> impl Iterator<Item = &[T]> {
        let first = self.head / CHUNK_LEN;
        let skip = self.head % CHUNK_LEN;
        self.chunks.iter().chain([&self.last]).skip(first).enumerate().map(move |(k, chunk)| {
            if k == 0 {
                &chunk[skip..]
            } else {
                &chunk[..]
            }
        })
    }

    /// The elements, front to back.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.slices().flatten()
    }
}

impl<T: Copy, const CHUNK_LEN: usize> std::ops::Index<usize> for ChunkDeque<T, CHUNK_LEN> {
    type Output = T;

    #[inline]
    fn index(&self, index: usize) -> &T {
        if index >= self.len {
            out_of_bounds(index, self.len);
        }
        let position = self.head + index;
        let (k, at) = (position / CHUNK_LEN, position % CHUNK_LEN);
        if k < self.chunks.len() {
            &self.chunks[k][at]
        } else {
            &self.last[at]
        }
    }
}

impl<T: Copy, const CHUNK_LEN: usize> std::ops::IndexMut<usize> for ChunkDeque<T, CHUNK_LEN> {
    #[inline]
    fn index_mut(&mut self, index: usize) -> &mut T {
        if index >= self.len {
            out_of_bounds(index, self.len);
        }
        let position = self.head + index;
        let (k, at) = (position / CHUNK_LEN, position % CHUNK_LEN);
        if k < self.chunks.len() {
            &mut self.chunks[k][at]
        } else {
            &mut self.last[at]
        }
    }
}

/// The panic of an index past the end, out of line (no spill on the indexing path).
#[cold]
#[inline(never)]
#[track_caller]
fn out_of_bounds(index: usize, len: usize) -> ! {
    panic!("index {index} out of a ChunkDeque of {len}")
}

#[cfg(test)]
mod tests;
