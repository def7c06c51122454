//! A delay queue whose timer shuts down while an advance is handing a batch over: the values
//! fired before the shutdown reach the consumers, and the consumers see the end only after them.

mod common;

use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

use common::ms;
use common::queue::manual_queue;
use delaywheel::queue::DelayQueue;

/// A consumer thread: takes `queue`'s values, waiting up to `wait` for each, until it finds the
/// queue ended (or waited in vain), then says so on `ended` and returns what it took.
fn consume<T: Send + 'static>(
    queue: &Arc<DelayQueue<T>>,
    wait: Duration,
    ended: mpsc::Sender<()>,
) -> thread::JoinHandle<Vec<T>> {
    let queue = Arc::clone(queue);
    thread::spawn(move || {
        let mut seen = Vec::new();
        while let Some(expired) = queue.recv_timeout(wait) {
            seen.push(expired.into_inner());
        }
        ended.send(()).ok();
        seen
    })
}

/// A task of the queue's timer, in the batch after a value of the same tick, shuts the timer
/// down: the value fired first, so it is handed to the queue, and a consumer that waits sees it
/// before the end (`None`), never the end and then the value. The end does come once the advance
/// is over (a value due later, drained by the shutdown, is counted out by the queue's closing
/// only: nothing else ends the wait).
#[test]
fn a_shutdown_from_a_task_keeps_the_batch_fired_before_it_and_ends_after_it() {
    let (clock, queue) = manual_queue::<&str>();
    let queue = Arc::new(queue);
    queue.insert("fired first", ms(2));
    queue.insert("never", ms(6));
    let (ended_tx, ended_rx) = mpsc::channel();
    let ended_rx = Arc::new(Mutex::new(ended_rx));
    let consumer = consume(&queue, Duration::from_secs(60), ended_tx);
    let during = Arc::new(Mutex::new(None));
    {
        let (weak, during, ended_rx) = (Arc::downgrade(&queue), Arc::clone(&during), Arc::clone(&ended_rx));
        queue.timer().schedule(ms(2), move || {
            let queue = weak.upgrade().expect("the queue outlives its advance");
            assert_eq!(queue.timer().shutdown().len(), 1, "the later value is handed back");
            // The consumer must not end while the batch's value is still being handed over.
            let ended = ended_rx.lock().unwrap().recv_timeout(ms(300)).is_ok();
            *during.lock().unwrap() = Some(ended);
        });
    }
    clock.advance(ms(2));
    queue.advance_clock(Duration::ZERO);
    assert_eq!(*during.lock().unwrap(), Some(false), "the consumer ended inside the advance");
    let ended = ended_rx.lock().unwrap().recv_timeout(Duration::from_secs(20));
    assert!(ended.is_ok(), "the consumer still waits once the advance is over");
    assert_eq!(consumer.join().unwrap(), ["fired first"]);
    assert!(queue.try_recv().is_none());
}

/// The same with a `shutdown_timeout` from another thread that gives up waiting for a task of
/// the advance: the value the advance fired before that task reaches a consumer, before the end.
#[test]
fn a_timed_shutdown_that_gives_up_waiting_ends_the_queue_after_the_batch() {
    let (clock, queue) = manual_queue::<u32>();
    let queue: Arc<DelayQueue<u32>> = Arc::new(queue);
    queue.insert(7, ms(2));
    let (started_tx, started_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    queue.timer().schedule(ms(2), move || {
        started_tx.send(()).unwrap();
        go_rx.recv_timeout(Duration::from_secs(10)).ok();
    });
    let advancer = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || {
            clock.advance(ms(2));
            queue.advance_clock(Duration::ZERO);
        })
    };
    started_rx.recv().unwrap();
    assert!(queue.timer().shutdown_timeout(Duration::ZERO).is_empty());
    let (ended_tx, ended_rx) = mpsc::channel();
    let consumer = consume(&queue, Duration::from_secs(10), ended_tx);
    assert!(ended_rx.recv_timeout(ms(300)).is_err(), "the consumer ended inside the advance");
    go_tx.send(()).unwrap();
    advancer.join().unwrap();
    assert_eq!(consumer.join().unwrap(), [7]);
}
