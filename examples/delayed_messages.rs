//! A delayed-delivery queue: messages are sent with a delay and become visible to the consumer
//! only at their time (like delayed messages in RocketMQ or Pulsar, SQS's `DelaySeconds`, or a
//! retry topic with back-off).
//!
//! ```text
//! cargo run --release --example delayed_messages
//! ```
//!
//! [`DelayQueue`] is that queue: `insert` sends a message with its delay and returns its key;
//! `remove` recalls a message not yet visible and hands it back (exactly once: a message either
//! comes back from `remove` or reaches the consumer, never both); `recv_timeout` waits for the
//! next visible message, and returns `None` once nothing is left in flight. A producer thread
//! sends 30 messages with random delays up to 2 s, out of order, and recalls a few; the consumer
//! (the main thread) prints each message as it becomes visible, with how late it was (never early;
//! at most one 1 ms tick plus the driver's wake-up), and checks that messages arrive in order of
//! their visibility time.

use std::thread;
use std::time::{Duration, Instant};

use delaywheel::queue::DelayQueue;
use delaywheel::Timer;

mod support;
use support::SplitMix;

#[derive(Debug)]
struct Message {
    id: usize,
    body: String,
}

fn main() {
    let timer = Timer::builder().tick(Duration::from_millis(1)).thread_name("delayed-messages").build();
    let queue = DelayQueue::with_timer(timer);
    let start = Instant::now();

    let recalled = thread::scope(|s| {
        let producer = s.spawn(|| {
            let mut rng = SplitMix(42);
            let mut recalled = Vec::new();
            for id in 0..30 {
                let delay = Duration::from_millis(rng.below(2_000));
                let key = queue.insert(Message { id, body: format!("message {id}") }, delay);
                println!("sent     #{id:<2} visible in {delay:>8.3?}");
                if id % 10 == 3 {
                    // Changed our mind: recall it before it becomes visible, and get it back.
                    let message = queue.remove(&key).expect("recalled before delivery");
                    assert_eq!(queue.remove(&key).map(|m| m.id), None, "recalled once");
                    recalled.push(message.id);
                }
            }
            println!("{} messages in flight ({} recalled: {recalled:?})\n", queue.len(), recalled.len());
            recalled
        });

        // The consumer: until the producer is done and nothing is in flight (`recv_timeout` returns
        // `None` at once while the queue is empty, e.g. before the first message is sent).
        let mut last_visible_at = None;
        let mut worst = Duration::ZERO;
        let mut received = 0;
        loop {
            let Some(expired) = queue.recv_timeout(Duration::from_secs(1)) else {
                if producer.is_finished() && queue.is_empty() {
                    break;
                }
                thread::yield_now();
                continue;
            };
            let now = queue.timer().now();
            let visible_at = expired.deadline();
            assert!(now >= visible_at, "message delivered early");
            assert!(last_visible_at <= Some(visible_at), "delivered out of order");
            last_visible_at = Some(visible_at);
            let late = now - visible_at;
            worst = worst.max(late);
            let message = expired.into_inner();
            received += 1;
            println!(
                "received #{:<2} ({}) at {:>8.3?}, {late:>9.3?} after its time",
                message.id,
                message.body,
                start.elapsed()
            );
        }
        let recalled = producer.join().unwrap();
        assert_eq!(received + recalled.len(), 30, "every message delivered or recalled");
        println!("\nall {received} delivered in order, none early; worst {worst:.3?} late");
        recalled
    });
    let stats = queue.timer().stats();
    println!(
        "timer firing lateness p99 {:?}, max {:?}; {} recalled",
        stats.lateness.p99,
        stats.lateness.max,
        recalled.len()
    );
}
