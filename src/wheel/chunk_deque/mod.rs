//! `ChunkDeque`: a double-ended queue of `Copy` values whose storage grows like a `Vec` while small
//! and in fixed-size chunks once large, so that a big list wastes at most about two chunks, not half
//! of its buffer (a `VecDeque` doubles: a list of 2.1k slots sits in a 4k-slot buffer).
//!
//! Layout: one line of positions, cut into chunks of `CHUNK` (position `p` is `chunks[p / CHUNK][p %
//! CHUNK]`), and the elements are the `len` positions from `head` on. Element `i` is at `head + i`:
//! an add, a shift, a mask and two loads, with no wrap-around. Pushing at the back appends to the
//! last chunk, or starts a chunk; popping at the front moves `head` on, and the chunk it leaves is
//! freed at once (its entry in `chunks` stays, unallocated, until they are half the vector: then they
//! are drained, amortised O(1)). A list that fits one chunk is one `Vec` that grows by doubling up to
//! `CHUNK` and, when full with at least half its front popped, shifts its elements down instead of
//! growing, so a small list costs what a `VecDeque` costs.
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
/// Invariants, with `first = head / CHUNK_LEN` (the head's chunk) and `tail = head + len`:
/// * `chunks[..first]` are spent: empty and unallocated; `first == 0` or `2 * first < chunks.len()`.
/// * From `first` on, chunk `k` holds the positions `k * CHUNK_LEN..` up to `tail`: its length is
///   `min(CHUNK_LEN, tail - k * CHUNK_LEN)`, so all are full but the last, and the last ends at `tail`
///   (the head's chunk keeps its popped values below `head`; they are `Copy` and never read).
/// * Only the last chunk may be empty, and only if it is the head's (`head == tail`); `chunks` is
///   empty only with `head == tail == 0`.
/// * Every chunk has a capacity of `CHUNK_LEN`, but a lone chunk (`chunks.len() == 1`), whose
///   capacity is at most `CHUNK_LEN`.
pub(crate) struct ChunkDeque<T, const CHUNK_LEN: usize = CHUNK> {
    chunks: Vec<Vec<T>>,
    /// The position of the first element.
    head: usize,
    /// Elements held: they end at position `head + len`, the tail.
    len: usize,
}

impl<T, const CHUNK_LEN: usize> Default for ChunkDeque<T, CHUNK_LEN> {
    fn default() -> Self {
        ChunkDeque { chunks: Vec::new(), head: 0, len: 0 }
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
        match self.chunks.as_slice() {
            [lone] => lone.capacity(),
            chunks => (chunks.len() - self.head / CHUNK_LEN) * CHUNK_LEN,
        }
    }

    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<&T> {
        if index >= self.len() {
            return None;
        }
        let position = self.head + index;
        self.chunks.get(position / CHUNK_LEN)?.get(position % CHUNK_LEN)
    }

    #[inline]
    pub(crate) fn back(&self) -> Option<&T> {
        self.get(self.len().wrapping_sub(1))
    }

    #[inline]
    pub(crate) fn push_back(&mut self, value: T) {
        match self.chunks.last_mut() {
            Some(last) if last.len() < last.capacity() => last.push(value),
            _ => self.push_back_full(value),
        }
        self.len += 1;
    }

    /// `push_back` when the last chunk is full (or there is none): a lone chunk shifts its elements
    /// down if at least half of it was popped, or else doubles up to `CHUNK_LEN`; past that, a new
    /// chunk. The caller counts the push.
    #[cold]
    #[inline(never)]
    fn push_back_full(&mut self, value: T) {
        if let [lone] = self.chunks.as_mut_slice() {
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
        let mut chunk =
            Vec::with_capacity(if self.chunks.is_empty() { Self::MIN_CAPACITY } else { CHUNK_LEN });
        chunk.push(value);
        push_chunk(&mut self.chunks, chunk);
    }

    /// Pops the front element and then the elements after it while `pred` holds for them; returns
    /// the front element and how many it popped in all (at least one). Inline, and one lookup of the
    /// head's chunk, which is scanned as a slice; only a run to the end of that chunk goes on out of
    /// line ([`pop_front_while`](ChunkDeque::pop_front_while)).
    #[inline]
    pub(crate) fn pop_front_run(&mut self, mut pred: impl FnMut(&T) -> bool) -> Option<(T, usize)> {
        let chunk = self.chunks.get(self.head / CHUNK_LEN)?;
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
        while let Some(chunk) = self.chunks.get(self.head / CHUNK_LEN) {
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
            let mut last = self.chunks.pop().unwrap_or_default();
            last.clear();
            self.chunks.clear();
            self.chunks.push(last);
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
        if first > 0 && 2 * first >= self.chunks.len() {
            self.chunks.drain(..first);
            self.head -= first * CHUNK_LEN;
        }
    }

    #[inline]
    pub(crate) fn pop_back(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let last = self.chunks.last_mut()?;
        let value = last.pop()?;
        self.len -= 1;
        if last.is_empty() && self.chunks.len() > 1 {
            self.dropped_last_chunk();
        }
        Some(value)
    }

    /// `pop_back` emptied the last chunk, which is not the head's: it goes.
    #[cold]
    #[inline(never)]
    fn dropped_last_chunk(&mut self) {
        self.chunks.pop();
        self.drain_spent();
    }

    /// Keeps only the elements for which `keep` holds, in order; `keep` gets each element with its
    /// index and the index it has if kept. O(len), into new buffers: the kept elements are pushed
    /// onto a new list with room for `capacity` (up to a chunk) from the start.
    pub(crate) fn retain(&mut self, capacity: usize, mut keep: impl FnMut(&T, usize, usize) -> bool) {
        let mut kept = ChunkDeque::default();
        if capacity > 0 {
            push_chunk(&mut kept.chunks, Vec::with_capacity(capacity.min(CHUNK_LEN)));
        }
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
        if let [lone] = self.chunks.as_mut_slice() {
            lone.copy_within(self.head.., 0);
            lone.truncate(len);
            lone.shrink_to(capacity);
        } else {
            let mut lone = Vec::with_capacity(capacity);
            lone.extend(self.iter().copied());
            self.chunks = vec![lone];
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
        self.chunks[first.min(self.chunks.len())..].iter().enumerate().map(move |(k, chunk)| {
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
        &self.chunks[position / CHUNK_LEN][position % CHUNK_LEN]
    }
}

impl<T: Copy, const CHUNK_LEN: usize> std::ops::IndexMut<usize> for ChunkDeque<T, CHUNK_LEN> {
    #[inline]
    fn index_mut(&mut self, index: usize) -> &mut T {
        if index >= self.len {
            out_of_bounds(index, self.len);
        }
        let position = self.head + index;
        &mut self.chunks[position / CHUNK_LEN][position % CHUNK_LEN]
    }
}

/// Appends `chunk` to `chunks`, giving a first chunk a vector of exactly one: a `Vec` grows from
/// empty to room for four, 96 bytes of chunk headers for the lone chunk most lists only ever have,
/// and a bucket keeps the buffers of every list it used (four stage lists per lane).
fn push_chunk<T>(chunks: &mut Vec<Vec<T>>, chunk: Vec<T>) {
    if chunks.capacity() == 0 {
        chunks.reserve_exact(1);
    }
    chunks.push(chunk);
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
