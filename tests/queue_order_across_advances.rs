//! A delay queue's values come out in deadline order across advances, on a manual clock: a value
//! inserted or reset to an instant already passed expires at the next advance and comes out before
//! the expired values still waiting that are due after it, whichever way the consumer takes
//! (`try_recv`, `try_recv_many`, `recv_timeout`), and `next_deadline` names it first.

use std::time::Duration;

use delaywheel::queue::DelayQueue;
use delaywheel::{ManualClock, Timer};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn manual_queue() -> (ManualClock, DelayQueue<u32>) {
    let clock = ManualClock::new();
    let timer = Timer::builder().clock(clock.clone()).tick(ms(1)).manual().build();
    (clock, DelayQueue::with_timer(timer))
}

/// Values 10, 20, 30 due at those milliseconds, expired by three advances, none taken.
fn three_waiting() -> (ManualClock, DelayQueue<u32>) {
    let (clock, q) = manual_queue();
    for v in [10, 20, 30] {
        q.insert(v, ms(u64::from(v)));
    }
    for _ in 0..3 {
        clock.advance(ms(10));
        q.advance_clock(Duration::ZERO);
    }
    (clock, q)
}

fn take_all(q: &DelayQueue<u32>) -> Vec<u32> {
    std::iter::from_fn(|| q.try_recv()).map(|e| e.into_inner()).collect()
}

#[test]
fn a_value_inserted_in_the_past_overtakes_those_due_after_it() {
    let (_clock, q) = three_waiting();
    let start = q.timer().now() - ms(30);
    q.insert_at(15, start + ms(15));
    q.insert_at(5, start + ms(5));
    assert_eq!(q.next_deadline(), Some(start + ms(10)), "not expired before the next advance");
    q.advance_clock(Duration::ZERO);
    assert_eq!(q.next_deadline(), Some(start + ms(5)));
    let out: Vec<(u32, Duration)> =
        std::iter::from_fn(|| q.try_recv()).map(|e| (*e.get_ref(), e.deadline() - start)).collect();
    assert_eq!(out, [(5, ms(5)), (10, ms(10)), (15, ms(15)), (20, ms(20)), (30, ms(30))]);
    assert!(q.is_empty());
}

#[test]
fn a_value_reset_into_the_past_overtakes_what_the_consumers_side_holds() {
    let (_clock, q) = three_waiting();
    let start = q.timer().now() - ms(30);
    let later = q.insert(99, ms(100));
    // The first take moves the three over to the consumers' side; 20 and 30 wait there.
    assert_eq!(q.try_recv().map(|e| e.into_inner()), Some(10));
    assert!(q.reset_at(&later, start + ms(25)));
    q.advance_clock(Duration::ZERO);
    assert_eq!(take_all(&q), [20, 99, 30]);
}

#[test]
fn equal_deadlines_keep_the_order_they_expired_in() {
    let (_clock, q) = three_waiting();
    let start = q.timer().now() - ms(30);
    q.insert_at(21, start + ms(20));
    q.insert_at(11, start + ms(10));
    q.advance_clock(Duration::ZERO);
    assert_eq!(take_all(&q), [10, 11, 20, 21, 30]);
}

#[test]
fn batch_takes_and_blocking_takes_keep_deadline_order() {
    let (_clock, q) = three_waiting();
    let start = q.timer().now() - ms(30);
    assert_eq!(q.recv_timeout(ms(10)).map(|e| e.into_inner()), Some(10));
    q.insert_at(12, start + ms(12));
    q.advance_clock(Duration::ZERO);
    let mut into = Vec::new();
    assert_eq!(q.try_recv_many(&mut into, 2), 2);
    assert_eq!(into.iter().map(|e| *e.get_ref()).collect::<Vec<_>>(), [12, 20]);
    q.insert_at(25, start + ms(25));
    q.insert_at(1, start + ms(1));
    q.advance_clock(Duration::ZERO);
    assert_eq!(q.recv_timeout(ms(10)).map(|e| e.into_inner()), Some(1));
    assert_eq!(q.recv_timeout(ms(10)).map(|e| e.into_inner()), Some(25));
    assert_eq!(take_all(&q), [30]);
}

#[test]
fn many_rounds_of_past_and_future_values_come_out_sorted_among_those_waiting() {
    let (clock, q) = manual_queue();
    let start = q.timer().now();
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut taken = 0;
    for round in 0..200u32 {
        for i in 0..5 {
            let now = q.timer().now() - start;
            // Any instant from the start to 20 ms ahead: past ones expire at the next advance.
            let at = start + (now + ms(20)).mul_f64(next(1000) as f64 / 1000.0);
            q.insert_at(round * 10 + i, at);
        }
        clock.advance(ms(next(4)));
        q.advance_clock(Duration::ZERO);
        // Take some of what expired; what a take gets is due no later than anything left waiting.
        let mut out: Vec<Duration> = Vec::new();
        for _ in 0..next(8) {
            match q.try_recv() {
                Some(e) => out.push(e.deadline() - start),
                None => break,
            }
        }
        assert!(out.windows(2).all(|w| w[0] <= w[1]), "round {round}: {out:?}");
        if let (Some(last), Some(next)) = (out.last(), q.next_deadline()) {
            assert!(next - start >= *last || next > q.timer().now(), "round {round}: {next:?} waits");
        }
        taken += out.len();
    }
    clock.advance(ms(100));
    q.advance_clock(Duration::ZERO);
    taken += take_all(&q).len();
    assert_eq!(taken, 1000);
}
