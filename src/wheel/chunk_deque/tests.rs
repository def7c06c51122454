//! `ChunkDeque`'s unit tests.

use std::collections::VecDeque;

use super::*;
use proptest::prelude::*;

/// The chunks of `deque`, `chunks` then `last`, as [`ChunkDeque`]'s invariants count them: none if
/// neither holds anything.
fn chunks<const C: usize>(deque: &ChunkDeque<u32, C>) -> Vec<&Vec<u32>> {
    if deque.chunks.is_empty() && deque.last.capacity() == 0 {
        assert!(deque.last.is_empty());
        return Vec::new();
    }
    deque.chunks.iter().chain([&deque.last]).collect()
}

/// Checks the layout invariants (see [`ChunkDeque`]) and that the contents equal `model`.
fn check<const C: usize>(deque: &ChunkDeque<u32, C>, model: &VecDeque<u32>) {
    assert_eq!(deque.len(), model.len());
    assert_eq!(deque.is_empty(), model.is_empty());
    let (head, tail, chunks) = (deque.head, deque.head + deque.len, &chunks(deque));
    assert!(head <= tail);
    let first = head / C;
    assert!(first == 0 || 2 * first < chunks.len(), "spent chunks not drained: {first} of {}", chunks.len());
    for chunk in &chunks[..first] {
        assert_eq!(chunk.capacity(), 0, "a spent chunk allocated");
    }
    if chunks.is_empty() {
        assert_eq!((head, tail), (0, 0));
    }
    for (k, chunk) in chunks.iter().enumerate().skip(first) {
        assert!(tail >= k * C, "chunk {k} past the tail");
        assert_eq!(chunk.len(), C.min(tail - k * C), "chunk {k}");
        assert!(!chunk.is_empty() || (k == first && head == tail), "an empty chunk {k}");
        if chunks.len() == 1 {
            assert!(chunk.capacity() <= C);
        } else {
            assert_eq!(chunk.capacity(), C);
        }
    }
    if head < tail {
        assert_eq!((tail - 1) / C, chunks.len() - 1, "chunks past the tail");
    } else {
        assert!(chunks.len() <= first + 1, "chunks past the tail of an empty list");
    }
    for (i, value) in model.iter().enumerate() {
        assert_eq!(deque.get(i), Some(value), "index {i}");
    }
    assert_eq!(deque.get(model.len()), None);
    assert_eq!(deque.get(usize::MAX), None);
    assert_eq!(deque.get(0), model.front());
    assert_eq!(deque.back(), model.back());
    assert!(deque.iter().eq(model.iter()));
    assert!(deque.slices().count() <= model.len() / C + 2);
    assert!(deque.capacity() >= deque.len());
}

#[derive(Clone, Debug)]
enum Op {
    PushBack(u32),
    PopFront,
    PopBack,
    Set(usize, u32),
    RetainBelow(u32, usize),
    DropFront(usize),
    PopFrontWhileBelow(u32),
    PopFrontRunBelow(u32),
    ScanAhead(usize, usize),
    ShrinkTo(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => any::<u32>().prop_map(Op::PushBack),
        2 => Just(Op::PopFront),
        2 => Just(Op::PopBack),
        2 => (any::<usize>(), any::<u32>()).prop_map(|(i, v)| Op::Set(i, v)),
        1 => (any::<u32>(), 0usize..12).prop_map(|(limit, capacity)| Op::RetainBelow(limit, capacity)),
        1 => (0usize..12).prop_map(Op::DropFront),
        1 => any::<u32>().prop_map(Op::PopFrontWhileBelow),
        1 => any::<u32>().prop_map(Op::PopFrontRunBelow),
        1 => (prop_oneof![0usize..=4, Just(usize::MAX)], 0usize..40)
            .prop_map(|(ahead, stop)| Op::ScanAhead(ahead, stop)),
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
            Op::PopFront => assert_eq!(deque.pop_front_run(|_| false), model.pop_front().map(|v| (v, 1))),
            Op::PopBack => assert_eq!(deque.pop_back(), model.pop_back()),
            Op::Set(i, v) if !model.is_empty() => {
                let i = i % model.len();
                deque[i] = v;
                model[i] = v;
            }
            Op::Set(..) => {}
            Op::DropFront(n) => {
                let n = n.min(model.len());
                deque.drop_front(n);
                model.drain(..n);
            }
            Op::PopFrontWhileBelow(limit) => {
                let n = model.iter().take_while(|&&v| v < limit).count();
                assert_eq!(deque.pop_front_while(|&v| v < limit), n);
                model.drain(..n);
            }
            Op::PopFrontRunBelow(limit) => {
                let n = model.iter().skip(1).take_while(|&&v| v < limit).count();
                let expected = model.pop_front().map(|front| (front, 1 + n));
                assert_eq!(deque.pop_front_run(|&v| v < limit), expected);
                model.drain(..expected.map_or(0, |_| n));
            }
            Op::ScanAhead(ahead, stop) => {
                let mut seen: usize = 0;
                let accepted = deque.scan_ahead(ahead, |value, later| {
                    let expected = model.get(seen.saturating_add(ahead)).copied();
                    assert_eq!((value, later), (model[seen], expected));
                    seen += 1;
                    seen <= stop
                });
                assert_eq!(accepted, stop.min(model.len()));
            }
            Op::RetainBelow(limit, capacity) => {
                let mut kept = 0;
                deque.retain(capacity, |&v, index, to| {
                    assert_eq!(v, model[index]);
                    assert_eq!(to, kept);
                    kept += usize::from(v < limit);
                    v < limit
                });
                model.retain(|&v| v < limit);
            }
            Op::ShrinkTo(min) => {
                deque.shrink_to(min);
                if deque.len() <= C {
                    // Gathered into one lone chunk, then shrunk as a Vec.
                    assert!(deque.chunks.is_empty());
                    assert!(deque.capacity() <= deque.len().max(min.min(C)));
                }
            }
        }
        check(&deque, &model);
    }
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
fn a_small_list_is_one_buffer_that_grows_as_a_vec() {
    let mut deque = ChunkDeque::<u32>::default();
    assert_eq!(deque.capacity(), 0);
    for i in 0..10 {
        deque.push_back(i);
    }
    assert_eq!(deque.capacity(), 16);
    // The lone chunk is the deque's own field: no vector of chunk headers is allocated, so an idle
    // list's buffers are all it keeps.
    assert_eq!((deque.chunks.len(), deque.chunks.capacity()), (0, 0));
    let mut kept = ChunkDeque::<u32>::default();
    kept.push_back(1);
    kept.retain(8, |_, _, _| true);
    assert_eq!((kept.chunks.capacity(), kept.capacity()), (0, 8));
}

#[test]
fn a_small_rolling_list_shifts_down_instead_of_growing() {
    let mut deque = ChunkDeque::<u32>::default();
    for i in 0..5 {
        deque.push_back(i);
    }
    for i in 5..10_000 {
        deque.push_back(i);
        assert_eq!(deque.pop_front_run(|_| false), Some((i - 5, 1)));
        assert!(deque.capacity() <= 16, "capacity {}", deque.capacity());
    }
    assert!(deque.iter().copied().eq(9_995..10_000));
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
        assert_eq!(deque.pop_front_run(|_| false), Some((i, 1)));
        assert!(deque.capacity() < deque.len() + 2 * CHUNK);
        assert!(deque.chunks.len() < 2 * (deque.len() / CHUNK + 2), "spent chunks not drained");
    }
    assert_eq!(deque.len(), 10);
    deque.shrink_to(32);
    assert_eq!(deque.capacity(), 32);
    assert!(deque.iter().copied().eq(n - 10..n));
}
