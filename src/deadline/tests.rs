use super::*;

#[test]
fn words_order_by_tick_then_rank() {
    let a = Deadline::new(5, 255).unwrap();
    let b = Deadline::new(6, 0).unwrap();
    let c = Deadline::new(6, 1).unwrap();
    assert!(a < b && b < c);
    assert_eq!((c.tick(), c.rank()), (6, 1));
    assert_eq!(Deadline::at_tick(MAX_DEADLINE_TICK).tick(), MAX_DEADLINE_TICK);
    assert_eq!(Deadline::new(MAX_DEADLINE_TICK + 1, 0), None);
    assert_eq!(Deadline::at_tick(7).rank(), Deadline::ON_BOUNDARY);
}

#[test]
fn batches_sort_by_deadline_then_stamp_whatever_their_size_or_span() {
    let mut rng = crate::test_rng::XorShift::new(0x9E37_79B9_7F4A_7C15);
    let mut next = move || rng.next();
    let (mut spare, mut counts) = (Vec::new(), Vec::new());
    for round in 0..400 {
        let len = (next() % 600) as usize;
        // Most rounds one tick (the counting path), some spanning two or three (the fallback).
        let ticks = if round % 4 == 0 { 3 } else { 1 };
        let mut batch: Vec<(usize, Deadline)> = (0..len)
            .map(|i| (i, Deadline::new(100 + next() % ticks, (next() % 256) as u8).unwrap()))
            .collect();
        let mut expected = batch.clone();
        expected.sort_by_key(|&(_, deadline)| deadline);
        sort_batch(&mut batch, &mut spare, &mut counts, |&(i, deadline)| (deadline, i as u64));
        // Every path is stable: equal deadlines keep the batch's order (FIFO for ties).
        assert_eq!(batch, expected, "round {round}");
        // With stamps against the batch's order, equal deadlines come out in stamp order.
        let mut reversed: Vec<(usize, Deadline)> = batch.iter().rev().copied().collect();
        sort_batch(&mut reversed, &mut spare, &mut counts, |&(i, deadline)| (deadline, i as u64));
        assert_eq!(reversed, expected, "round {round}, ties in stamp order");
    }
}

#[test]
fn exact_words_read_back_rank_and_order_below_far_ones() {
    for tick_nanos in [1_000u64, 1_003, 7_000, 1_000_000, 10_000_000, 1_500_000_000, 1 << 41] {
        let fractions = Fractions::new(tick_nanos).unwrap();
        let ranker = Ranker::new(tick_nanos);
        let exact = |below: u64| (u128::from(below) * 256 / u128::from(tick_nanos)) as u8;
        let mut previous = None;
        for i in 0..=4_096u64 {
            let below = (u128::from(tick_nanos - 1) * u128::from(i) / 4_096) as u64;
            let word = fractions.deadline(5, below).unwrap();
            assert_eq!(word.tick(), 5);
            assert_eq!(fractions.below(word.fraction().unwrap()), below, "{tick_nanos} {below}");
            assert!(word.rank() == exact(below) || word.rank() + 1 == exact(below), "{tick_nanos} {below}");
            assert!(word.rank().abs_diff(ranker.rank(below)) <= 1);
            // Distinct positions, distinct words, in order.
            if let Some((before, word_before)) = previous {
                assert_eq!(below.cmp(&before), word.cmp(&word_before), "{tick_nanos} {below}");
            }
            previous = Some((below, word));
        }
        assert_eq!(fractions.deadline(5, tick_nanos - 1).unwrap().rank(), Deadline::ON_BOUNDARY);
        let last = fractions.exact_below - 1;
        let (latest, far) =
            (fractions.deadline(last, tick_nanos - 1).unwrap(), Deadline::new(last + 1, 0).unwrap());
        assert!(latest < far && latest.tick() < far.tick() && far.fraction().is_none());
        assert_eq!(fractions.deadline(last + 1, 0), None);
    }
    assert_eq!(Fractions::new((1 << 41) + 1), None);
}

/// A word no earlier must mean a tick no earlier, for every pair of kinds (exact, `P`, far): the
/// wheel places by the tick what the batch orders by the word.
#[test]
fn a_word_no_earlier_is_of_a_tick_no_earlier() {
    for tick_nanos in [1_000u64, 1_000_000, 1 << 41] {
        let fractions = Fractions::new(tick_nanos).unwrap();
        let last = fractions.exact_below - 1;
        let mut words = Vec::new();
        for tick in [0, 1, 2, last - 1, last] {
            for below in [0, 1, tick_nanos / 2, tick_nanos - 1] {
                words.push(fractions.deadline(tick, below).unwrap());
                words.push(fractions.passed(tick, below).unwrap());
            }
        }
        for tick in [last + 1, last + 2, MAX_DEADLINE_TICK] {
            for rank in [0, 1, 255] {
                words.push(Deadline::new(tick, rank).unwrap());
            }
        }
        for &a in &words {
            for &b in &words {
                assert!(a > b || a.tick() <= b.tick(), "{tick_nanos}: {a:?} {b:?}");
            }
        }
    }
}

#[test]
fn batches_of_exact_words_sort_by_deadline_then_stamp() {
    let mut rng = crate::test_rng::XorShift::new(0x5151_2626_3737_4848);
    let mut next = move || rng.next();
    let (mut spare, mut counts) = (Vec::new(), Vec::new());
    // Fractions of 10 bits (1 µs: fewer than the buckets of a big batch), 20 (1 ms) and 34 (10 s).
    for tick_nanos in [1_000u64, 1_000_000, 10_000_000_000] {
        let fractions = Fractions::new(tick_nanos).unwrap();
        for round in 0..120 {
            // Up to past the most buckets a counting sort takes (4,096).
            let len = 64 + (next() % if round % 3 == 0 { 6_000 } else { 500 }) as usize;
            // Few distinct positions, so that equal deadlines are common and buckets hold several.
            let spread = if round % 2 == 0 { 40 } else { tick_nanos };
            let mut batch: Vec<(usize, Deadline)> = (0..len)
                .map(|i| {
                    let below = next() % spread * (tick_nanos / spread);
                    // Some passed within the tick under way: after every other word of the tick.
                    let word = if next() % 8 == 0 {
                        fractions.passed(100, below)
                    } else {
                        fractions.deadline(100, below)
                    };
                    (i, word.unwrap())
                })
                .collect();
            let mut expected = batch.clone();
            expected.sort_by_key(|&(i, deadline)| (deadline, i));
            batch.reverse();
            sort_batch(&mut batch, &mut spare, &mut counts, |&(i, deadline)| (deadline, i as u64));
            assert_eq!(batch, expected, "{tick_nanos} ns, round {round}");
        }
    }
}

#[test]
fn ranks_are_the_256ths_of_the_interval() {
    for tick_nanos in [1_000u64, 1_003, 7_000, 1_000_000, 1_500_000_000, u64::MAX] {
        let ranker = Ranker::new(tick_nanos);
        let exact = |below: u64| (u128::from(below) * 256 / u128::from(tick_nanos)) as u8;
        let probes: Vec<u64> =
            (0..4_096u64).map(|i| (u128::from(tick_nanos - 1) * u128::from(i) / 4_095) as u64).collect();
        for &below in probes.iter().chain(&[1, tick_nanos / 2, tick_nanos - 2]) {
            // The reciprocal rounds down, so a rank is the exact one or one less, never more.
            let rank = ranker.rank(below);
            assert!(rank == exact(below) || rank + 1 == exact(below), "{tick_nanos} {below}");
        }
        let ranks: Vec<u8> = probes.iter().map(|&below| ranker.rank(below)).collect();
        assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "monotonic for {tick_nanos}");
        assert_eq!((ranks[0], ranker.rank(tick_nanos - 1)), (0, 255), "{tick_nanos}");
    }
}
