//! A delayed-delivery queue: messages are sent with a delay and become visible to the consumer
//! only at their time (like delayed messages in RocketMQ or Pulsar, SQS's `DelaySeconds`, or a
//! retry topic with back-off).
//!
//! ```text
//! cargo run --release --example delayed_messages
//! ```
//!
//! [`DelayedQueue`] is twenty lines on top of a [`Timer`]: `send` schedules a task that moves the
//! message into the visible channel when its delay has passed; `recall` cancels a message that is
//! not yet visible (exactly once: [`TimerHandle::cancel`] returns `true` iff the message will never
//! be delivered); `recv` blocks until the next message is visible. A producer sends 30 messages
//! with random delays up to 2 s, out of order, and recalls a few; the consumer prints each message
//! as it becomes visible, with how late it was (never early; at most one 1 ms tick plus the
//! driver's wake-up), and checks that messages arrive in order of their visibility time (to within
//! a tick).

use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use delaywheel::{Timer, TimerHandle};

mod support;
use support::SplitMix;

const TICK: Duration = Duration::from_millis(1);

/// A queue whose messages become visible after their delay.
struct DelayedQueue<T> {
    timer: Timer,
    visible: Sender<T>,
}

impl<T: Send + 'static> DelayedQueue<T> {
    fn new() -> (DelayedQueue<T>, Receiver<T>) {
        let (visible, receiver) = mpsc::channel();
        let timer = Timer::builder().tick(TICK).thread_name("delayed-queue").build();
        (DelayedQueue { timer, visible }, receiver)
    }

    /// Sends `message`, to become visible `delay` from now. The handle recalls it.
    fn send(&self, message: T, delay: Duration) -> TimerHandle {
        let visible = self.visible.clone();
        self.timer.schedule(delay, move || {
            let _ = visible.send(message); // the consumer may be gone; then the message is dropped
        })
    }

    /// Messages sent but not yet visible.
    fn in_flight(&self) -> usize {
        self.timer.len()
    }
}

#[derive(Debug)]
struct Message {
    id: usize,
    /// When it was meant to become visible.
    visible_at: Instant,
}

fn main() {
    let (queue, consumer) = DelayedQueue::new();
    let mut rng = SplitMix(42);
    let start = Instant::now();

    let mut recalled = Vec::new();
    for id in 0..30 {
        let delay = Duration::from_millis(rng.below(2_000));
        let handle = queue.send(Message { id, visible_at: Instant::now() + delay }, delay);
        println!("sent     #{id:<2} visible in {delay:>8.3?}");
        if id % 10 == 3 {
            // Changed our mind: recall it before it becomes visible.
            assert!(handle.cancel(), "recalled before delivery, exactly once");
            assert!(!handle.cancel());
            recalled.push(id);
        }
    }
    println!("{} messages in flight ({} recalled: {recalled:?})\n", queue.in_flight(), recalled.len());

    let mut last_visible_at = start;
    let mut worst = Duration::ZERO;
    for message in consumer.iter().take(30 - recalled.len()) {
        let now = Instant::now();
        assert!(now >= message.visible_at, "message #{} delivered early", message.id);
        // In order of visibility time, to within one tick: messages due in the same tick share a
        // bucket and come out in the order they were sent.
        assert!(message.visible_at + TICK >= last_visible_at, "delivered out of order");
        last_visible_at = last_visible_at.max(message.visible_at);
        let late = now - message.visible_at;
        worst = worst.max(late);
        println!("received #{:<2} at {:>8.3?}, {:>9.3?} after its time", message.id, now - start, late);
    }
    assert_eq!(queue.in_flight(), 0);
    let stats = queue.timer.stats();
    println!(
        "\nall delivered in order, none early; worst {worst:.3?} late as seen by the consumer \
         (timer firing lateness p99 {:?}, max {:?}); {} recalled",
        stats.lateness.p99, stats.lateness.max, stats.cancelled
    );
}
