//! `ChunkDeque`: a double-ended queue whose storage grows like a `VecDeque` while small and in
//! fixed-size chunks once large, so that a big list wastes at most about two chunks, not half of
//! its buffer (a `VecDeque` doubles: a list of 2.1k slots sits in a 4k-slot buffer).
//!
//! Layout: `front`, a plain `VecDeque` of at most `CHUNK` elements, holds the first elements;
//! `rest` holds the others in chunks of exactly `CHUNK` capacity, every one full but the last. A
//! list of at most `CHUNK` elements is only `front`, with `VecDeque`'s geometric growth (capped at
//! `CHUNK`) and no other allocation, so a small list costs what a `VecDeque` costs. Once `front`
//! is full, pushes go to chunks; pops at the front drain `front`, whose place the next chunk then
//! takes (an O(1) move), and pops at the back drain the last chunk; an emptied chunk is freed at
//! once. Element `i` is `front[i]`, or `rest[j / CHUNK][j % CHUNK]` with `j = i - front.len()`: O(1).

use std::collections::VecDeque;

/// Elements per full chunk (1 KiB of 4-byte elements), the default `CHUNK`. SPEC W6 (1M timers over
/// ~470 stage lists of ~2.1k) measured 53.5 B per timer with 512, 53.0 with 256, 53.1 with 128 (and
/// 56.5 with a plain `VecDeque`): below 256 the chunks' own overhead eats what the tail saves.
pub(crate) const CHUNK: usize = 256;

/// A double-ended queue with O(1) index, push and pop at both ends, that allocates in chunks of
/// `CHUNK` elements once it holds more than `CHUNK` (see the module docs).
pub(crate) struct ChunkDeque<T, const CHUNK_LEN: usize = CHUNK> {
    /// The first elements; empty only if `rest` is empty too.
    front: VecDeque<T>,
    /// The elements after `front`, in chunks of capacity `CHUNK_LEN`, all full but the last, none empty.
    rest: VecDeque<Vec<T>>,
    len: usize,
}

impl<T, const CHUNK_LEN: usize> Default for ChunkDeque<T, CHUNK_LEN> {
    fn default() -> Self {
        ChunkDeque { front: VecDeque::new(), rest: VecDeque::new(), len: 0 }
    }
}

impl<T, const CHUNK_LEN: usize> ChunkDeque<T, CHUNK_LEN> {
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Elements the list holds room for without allocating.
    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        self.front.capacity() + self.rest.len() * CHUNK_LEN
    }

    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<&T> {
        if index < self.front.len() {
            return self.front.get(index);
        }
        let j = index - self.front.len();
        self.rest.get(j / CHUNK_LEN)?.get(j % CHUNK_LEN)
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, index: usize) -> Option<&mut T> {
        if index < self.front.len() {
            return self.front.get_mut(index);
        }
        let j = index - self.front.len();
        self.rest.get_mut(j / CHUNK_LEN)?.get_mut(j % CHUNK_LEN)
    }

    #[inline]
    pub(crate) fn front(&self) -> Option<&T> {
        self.front.front()
    }

    #[inline]
    pub(crate) fn back(&self) -> Option<&T> {
        match self.rest.back() {
            Some(chunk) => chunk.last(),
            None => self.front.back(),
        }
    }

    #[inline]
    pub(crate) fn push_back(&mut self, value: T) {
        self.len += 1;
        match self.rest.back_mut() {
            None if self.front.len() < self.front.capacity() => self.front.push_back(value),
            Some(chunk) if chunk.len() < CHUNK_LEN => chunk.push(value),
            _ => self.push_back_grow(value),
        }
    }

    /// `push_back` when the last buffer is full: `front` grows, or a chunk is added.
    #[cold]
    fn push_back_grow(&mut self, value: T) {
        if self.rest.is_empty() && self.front.len() < CHUNK_LEN {
            // Grow as a VecDeque would (double, at least 4), but never past a chunk.
            let want = (self.front.capacity() * 2).clamp(4, CHUNK_LEN);
            self.front.reserve_exact(want - self.front.len());
            self.front.push_back(value);
        } else {
            let mut chunk = Vec::with_capacity(CHUNK_LEN);
            chunk.push(value);
            self.rest.push_back(chunk);
        }
    }

    #[inline]
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        let value = self.front.pop_front()?;
        self.len -= 1;
        if self.front.is_empty() && !self.rest.is_empty() {
            self.next_chunk_to_front();
        }
        Some(value)
    }

    /// The emptied `front` is freed and the first chunk takes its place (O(1): a `VecDeque` takes
    /// over a `Vec`'s buffer).
    #[cold]
    fn next_chunk_to_front(&mut self) {
        if let Some(chunk) = self.rest.pop_front() {
            self.front = VecDeque::from(chunk);
        }
    }

    #[inline]
    pub(crate) fn pop_back(&mut self) -> Option<T> {
        let value = match self.rest.back_mut() {
            Some(chunk) => {
                let value = chunk.pop();
                if chunk.is_empty() {
                    self.rest.pop_back();
                }
                value
            }
            None => self.front.pop_back(),
        }?;
        self.len -= 1;
        Some(value)
    }

    /// Keeps the first `len` elements (drops the others), freeing the chunks that empty.
    pub(crate) fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        if len <= self.front.len() {
            self.front.truncate(len);
            self.rest.clear();
        } else {
            let j = len - self.front.len();
            self.rest.truncate(j.div_ceil(CHUNK_LEN));
            if let Some(chunk) = self.rest.back_mut() {
                chunk.truncate(j - (j - 1) / CHUNK_LEN * CHUNK_LEN);
            }
        }
        self.len = len;
    }

    /// Gives back capacity beyond `max(len, min_capacity)` where it can: a list that fits a chunk is
    /// gathered into `front` alone, whose buffer then shrinks as `VecDeque::shrink_to` does.
    pub(crate) fn shrink_to(&mut self, min_capacity: usize) {
        if !self.rest.is_empty() {
            if self.len > CHUNK_LEN {
                // Middle chunks are full: only the two end chunks have room to spare.
                return;
            }
            let mut front = VecDeque::with_capacity(self.len.max(min_capacity).min(CHUNK_LEN));
            front.extend(self.front.drain(..));
            front.extend(self.rest.drain(..).flatten());
            self.front = front;
        }
        self.front.shrink_to(min_capacity.min(CHUNK_LEN));
    }

    /// The elements, front to back.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.front.iter().chain(self.rest.iter().flatten())
    }
}

impl<T, const CHUNK_LEN: usize> std::ops::Index<usize> for ChunkDeque<T, CHUNK_LEN> {
    type Output = T;

    #[inline]
    fn index(&self, index: usize) -> &T {
        let len = self.len;
        self.get(index).unwrap_or_else(|| panic!("index {index} out of a ChunkDeque of {len}"))
    }
}

impl<T, const CHUNK_LEN: usize> std::ops::IndexMut<usize> for ChunkDeque<T, CHUNK_LEN> {
    #[inline]
    fn index_mut(&mut self, index: usize) -> &mut T {
        let len = self.len;
        self.get_mut(index).unwrap_or_else(|| panic!("index {index} out of a ChunkDeque of {len}"))
    }
}

impl<T, const CHUNK_LEN: usize> IntoIterator for ChunkDeque<T, CHUNK_LEN> {
    type Item = T;
    type IntoIter = std::iter::Chain<
        std::collections::vec_deque::IntoIter<T>,
        std::iter::Flatten<std::collections::vec_deque::IntoIter<Vec<T>>>,
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.front.into_iter().chain(self.rest.into_iter().flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Checks the layout invariants and that the contents equal `model`.
    fn check<const C: usize>(deque: &ChunkDeque<u32, C>, model: &VecDeque<u32>) {
        assert_eq!(deque.len(), model.len());
        assert_eq!(deque.is_empty(), model.is_empty());
        assert!(deque.front.len() <= C && deque.front.capacity() <= C);
        assert!(!deque.front.is_empty() || deque.rest.is_empty(), "an empty front with chunks after it");
        for (i, chunk) in deque.rest.iter().enumerate() {
            assert_eq!(chunk.capacity(), C);
            assert!(!chunk.is_empty());
            assert!(i + 1 == deque.rest.len() || chunk.len() == C, "a middle chunk not full");
        }
        assert_eq!(deque.front.len() + deque.rest.iter().map(Vec::len).sum::<usize>(), deque.len());
        for (i, value) in model.iter().enumerate() {
            assert_eq!(deque.get(i), Some(value), "index {i}");
        }
        assert_eq!(deque.get(model.len()), None);
        assert_eq!(deque.front(), model.front());
        assert_eq!(deque.back(), model.back());
    }

    #[derive(Clone, Debug)]
    enum Op {
        PushBack(u32),
        PopFront,
        PopBack,
        Set(usize, u32),
        Truncate(usize),
        ShrinkTo(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => any::<u32>().prop_map(Op::PushBack),
            2 => Just(Op::PopFront),
            2 => Just(Op::PopBack),
            2 => (any::<usize>(), any::<u32>()).prop_map(|(i, v)| Op::Set(i, v)),
            1 => (0usize..40).prop_map(Op::Truncate),
            1 => (0usize..40).prop_map(Op::ShrinkTo),
        ]
    }

    /// Runs `ops` on a `ChunkDeque` with chunks of `C` and on a `VecDeque`; they must agree.
    fn against_vec_deque<const C: usize>(ops: &[Op]) {
        let mut deque = ChunkDeque::<u32, C>::default();
        let mut model = VecDeque::new();
        for op in ops {
            match *op {
                Op::PushBack(v) => {
                    deque.push_back(v);
                    model.push_back(v);
                }
                Op::PopFront => assert_eq!(deque.pop_front(), model.pop_front()),
                Op::PopBack => assert_eq!(deque.pop_back(), model.pop_back()),
                Op::Set(i, v) if !model.is_empty() => {
                    let i = i % model.len();
                    deque[i] = v;
                    model[i] = v;
                }
                Op::Set(..) => {}
                Op::Truncate(len) => {
                    deque.truncate(len);
                    model.truncate(len);
                }
                Op::ShrinkTo(min) => {
                    deque.shrink_to(min);
                    assert!(deque.capacity() >= deque.len());
                    if deque.len() <= C {
                        // Gathered into `front` alone, then shrunk as a VecDeque.
                        assert!(deque.rest.is_empty());
                        assert!(deque.capacity() <= deque.len().max(min.min(C)));
                    }
                }
            }
            check(&deque, &model);
        }
        assert!(deque.into_iter().eq(model));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn behaves_as_a_vec_deque_with_small_chunks(ops in proptest::collection::vec(op(), 0..400)) {
            against_vec_deque::<4>(&ops);
        }

        #[test]
        fn behaves_as_a_vec_deque_with_odd_chunks(ops in proptest::collection::vec(op(), 0..400)) {
            against_vec_deque::<7>(&ops);
        }
    }

    #[test]
    fn a_small_list_is_one_buffer_that_grows_as_a_vec_deque() {
        let mut deque = ChunkDeque::<u32>::default();
        assert_eq!(deque.capacity(), 0);
        for i in 0..10 {
            deque.push_back(i);
        }
        assert_eq!(deque.capacity(), 16);
        assert!(deque.rest.is_empty());
    }

    #[test]
    fn a_large_list_wastes_at_most_two_chunks_and_frees_them_as_it_drains() {
        let mut deque = ChunkDeque::<u32>::default();
        let n = 8_500;
        for i in 0..n {
            deque.push_back(i);
            assert!(deque.capacity() < deque.len().max(CHUNK / 2) * 2);
            assert!(deque.capacity() <= (deque.len() / CHUNK + 1) * CHUNK);
        }
        for i in 0..n - 10 {
            assert_eq!(deque.pop_front(), Some(i));
            assert!(deque.capacity() < deque.len() + 2 * CHUNK);
        }
        assert_eq!(deque.len(), 10);
        deque.shrink_to(32);
        assert_eq!(deque.capacity(), 32);
        assert!(deque.into_iter().eq(n - 10..n));
    }
}
