//! The `async` side of `delaywheel::queue::DelayQueue`: `poll_expired` by hand on a manual clock,
//! `next_expired` and the `Stream` under `futures::executor` and tokio.
#![cfg(feature = "async")]

mod common;

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use common::ms;
use common::queue::{advance, manual_queue};
use common::waker::CountingWaker;
use delaywheel::queue::DelayQueue;
use futures::StreamExt;

fn assert_stream<S: futures::Stream + Unpin + Send>(_: &S) {}

#[test]
fn poll_expired_is_ready_none_when_empty_and_wakes_each_waiting_task_on_expiry() {
    let (clock, queue) = manual_queue();
    let (first, first_waker) = CountingWaker::new();
    let (second, second_waker) = CountingWaker::new();
    let mut cx1 = Context::from_waker(&first_waker);
    let mut cx2 = Context::from_waker(&second_waker);
    assert!(matches!(queue.poll_expired(&mut cx1), Poll::Ready(None)), "nothing pending");

    queue.insert("a", ms(3));
    assert!(queue.poll_expired(&mut cx1).is_pending());
    assert!(queue.poll_expired(&mut cx1).is_pending(), "polled again: registered once");
    assert!(queue.poll_expired(&mut cx2).is_pending());
    advance(&clock, &queue, ms(2));
    assert_eq!(first.count(), 0, "nothing expired yet");
    advance(&clock, &queue, ms(1));
    assert_eq!((first.count(), second.count()), (1, 1));

    match queue.poll_expired(&mut cx2) {
        Poll::Ready(Some(expired)) => assert_eq!(expired.into_inner(), "a"),
        other => panic!("expected the value, got {other:?}"),
    }
    assert!(matches!(queue.poll_expired(&mut cx1), Poll::Ready(None)), "taken by the other task");
}

#[test]
fn waiting_tasks_are_woken_when_the_last_pending_value_is_removed() {
    let (_clock, queue) = manual_queue();
    let key = queue.insert(1u8, ms(5));
    let (woken, waker) = CountingWaker::new();
    let mut cx = Context::from_waker(&waker);
    assert!(queue.poll_expired(&mut cx).is_pending());
    assert_eq!(queue.remove(&key), Some(1));
    assert_eq!(woken.count(), 1);
    assert!(matches!(queue.poll_expired(&mut cx), Poll::Ready(None)));
}

#[test]
fn the_stream_yields_in_deadline_order_and_ends_when_empty() {
    let (clock, queue) = manual_queue();
    assert_stream(&queue);
    assert_stream(&&queue);
    for (value, delay) in [(3, 30), (1, 10), (2, 20)] {
        queue.insert(value, ms(delay));
    }
    advance(&clock, &queue, ms(30));
    let values: Vec<i32> = futures::executor::block_on((&queue).map(|e| e.into_inner()).collect());
    assert_eq!(values, vec![1, 2, 3]);
    let mut queue = queue;
    assert!(futures::executor::block_on(queue.next()).is_none());
}

#[test]
fn next_expired_waits_for_a_clock_advanced_by_another_thread() {
    let (clock, queue) = manual_queue();
    queue.insert("later", ms(50));
    queue.insert("sooner", ms(20));
    thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..50 {
                thread::sleep(Duration::from_micros(200));
                advance(&clock, &queue, ms(1));
            }
        });
        let got = futures::executor::block_on(async {
            let a = queue.next_expired().await.unwrap();
            let b = queue.next_expired().await.unwrap();
            [a.into_inner(), b.into_inner()]
        });
        assert_eq!(got, ["sooner", "later"]);
    });
    assert!(futures::executor::block_on(queue.next_expired()).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_tasks_under_tokio_share_the_queue_and_see_each_value_once() {
    let queue = Arc::new(DelayQueue::new());
    for i in 0..200u32 {
        queue.insert(i, ms(u64::from(i % 7)));
    }
    let all = common::queue::take_all_with_tasks(&queue, 3).await;
    assert_eq!(all, (0..200).collect::<Vec<_>>());
}

/// A task waiting in `poll_expired` when the queue's timer shuts down is woken, and the stream
/// ends (`Ready(None)`) instead of waiting for values that will never expire.
#[test]
fn poll_expired_wakes_and_ends_when_the_timer_shuts_down() {
    let (_clock, queue) = manual_queue();
    let (counter, waker) = CountingWaker::new();
    let mut cx = Context::from_waker(&waker);
    queue.insert("never", ms(5));
    assert!(queue.poll_expired(&mut cx).is_pending());
    drop(queue.timer().shutdown());
    assert_eq!(counter.count(), 1, "woken by the shutdown");
    assert!(matches!(queue.poll_expired(&mut cx), Poll::Ready(None)));
}

/// `next_expired` futures dropped while they wait (the losers of a `select!`) leave no waker in
/// the queue: a queue polled by many short-lived tasks keeps none of them. One that stays keeps
/// its registration, also when another future of the same task is dropped.
#[test]
fn a_dropped_next_expired_future_takes_its_waker_out() {
    let (clock, queue) = manual_queue();
    queue.insert("later", ms(5));
    let mut wakers = Vec::new();
    for _ in 0..1_000 {
        let (counter, waker) = CountingWaker::new();
        let mut next = queue.next_expired();
        assert!(common::waker::poll(std::pin::Pin::new(&mut next), &waker).is_pending());
        drop(next);
        drop(waker);
        wakers.push(counter);
    }
    let kept = wakers.iter().filter(|counter| Arc::strong_count(counter) > 1).count();
    assert_eq!(kept, 0, "wakers of dropped futures still held by the queue");

    // Two futures of one task: dropping one leaves the other registered.
    let (counter, waker) = CountingWaker::new();
    let mut first = queue.next_expired();
    let mut second = queue.next_expired();
    assert!(common::waker::poll(std::pin::Pin::new(&mut first), &waker).is_pending());
    assert!(common::waker::poll(std::pin::Pin::new(&mut second), &waker).is_pending());
    drop(first);
    advance(&clock, &queue, ms(5));
    assert!(counter.count() >= 1, "the remaining future's task was woken");
    let got = common::waker::poll(std::pin::Pin::new(&mut second), &waker);
    assert!(matches!(got, Poll::Ready(Some(ref e)) if *e.get_ref() == "later"));
}

/// A task polling `poll_expired` and another's first `next_expired` poll register apart: the
/// future does not take over the bare registration, and both tasks are woken on expiry.
#[test]
fn a_next_expired_future_and_a_bare_poll_register_apart() {
    let (clock, queue) = manual_queue();
    queue.insert("a", ms(2));
    let (bare, bare_waker) = CountingWaker::new();
    assert!(queue.poll_expired(&mut Context::from_waker(&bare_waker)).is_pending());
    let (future, future_waker) = CountingWaker::new();
    let mut next = queue.next_expired();
    assert!(common::waker::poll(std::pin::Pin::new(&mut next), &future_waker).is_pending());
    advance(&clock, &queue, ms(2));
    assert_eq!((bare.count(), future.count()), (1, 1), "each task woken once");
}

/// A task whose drop uses the queue (its last reference held by the queue's registration).
struct UsesTheQueue(&'static DelayQueue<u32>);

impl std::task::Wake for UsesTheQueue {
    fn wake(self: Arc<Self>) {}
}

impl Drop for UsesTheQueue {
    fn drop(&mut self) {
        let _ = self.0.try_recv();
    }
}

/// A `next_expired` future polled by another task than before replaces its waker, and the old one
/// (possibly its task's last reference, whose drop takes the queue's locks) is dropped after the
/// queue's locks are released.
#[test]
fn a_next_expired_future_moved_to_another_task_drops_the_old_waker_outside_the_locks() {
    let (_clock, queue) = manual_queue::<u32>();
    let queue: &'static DelayQueue<u32> = Box::leak(Box::new(queue));
    queue.insert(1, Duration::from_secs(60));
    let (done, finished) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let mut next = queue.next_expired();
        let first = std::task::Waker::from(Arc::new(UsesTheQueue(queue)));
        assert!(common::waker::poll(std::pin::Pin::new(&mut next), &first).is_pending());
        drop(first); // the queue's registration now holds that task's last reference
        let second = std::task::Waker::from(Arc::new(UsesTheQueue(queue)));
        assert!(common::waker::poll(std::pin::Pin::new(&mut next), &second).is_pending());
        done.send(()).unwrap();
    });
    finished.recv_timeout(Duration::from_secs(10)).expect("the second poll deadlocked");
}

/// A task's waker that panics when woken.
struct Panicking;

impl Wake for Panicking {
    fn wake(self: Arc<Self>) {
        panic!("a consumer's waker that panics");
    }
}

#[test]
fn a_consumer_waker_that_panics_is_caught_counted_and_the_other_consumers_still_wake() {
    let (clock, queue) = manual_queue();
    let bad = Waker::from(Arc::new(Panicking));
    let (good, good_waker) = CountingWaker::new();
    queue.insert(1, ms(1));
    queue.insert(2, ms(2));
    assert!(queue.poll_expired(&mut Context::from_waker(&bad)).is_pending());
    let mut next = Box::pin(queue.next_expired());
    assert!(next.as_mut().poll(&mut Context::from_waker(&good_waker)).is_pending());
    advance(&clock, &queue, ms(1)); // the expiry wakes both: the panic stays inside
    assert_eq!(good.count(), 1);
    assert_eq!(queue.timer().stats().panicked, 1, "counted as a sleep's panicking wake is");
    drop(next);
    advance(&clock, &queue, ms(1)); // the timer goes on
    assert_eq!(queue.len(), 2);
    assert_eq!(queue.try_recv().map(|e| e.into_inner()), Some(1));
    assert_eq!(queue.try_recv().map(|e| e.into_inner()), Some(2));

    // A remove that empties the queue wakes every waiting consumer and still returns its value.
    let key = queue.insert(3, ms(5));
    assert!(queue.poll_expired(&mut Context::from_waker(&bad)).is_pending());
    assert!(queue.poll_expired(&mut Context::from_waker(&good_waker)).is_pending());
    assert_eq!(queue.remove(&key), Some(3));
    assert_eq!(good.count(), 2);

    // So does the shutdown.
    queue.insert(4, ms(5));
    assert!(queue.poll_expired(&mut Context::from_waker(&bad)).is_pending());
    assert!(queue.poll_expired(&mut Context::from_waker(&good_waker)).is_pending());
    assert_eq!(queue.timer().shutdown().len(), 1);
    assert_eq!(good.count(), 3);
}

#[test]
fn a_consumer_waker_that_panics_does_not_end_the_driver_thread() {
    let queue = DelayQueue::new();
    queue.insert(1, ms(1));
    assert!(queue.poll_expired(&mut Context::from_waker(&Waker::from(Arc::new(Panicking)))).is_pending());
    let first = queue.recv_timeout(Duration::from_secs(5)).map(|e| e.into_inner());
    assert_eq!(first, Some(1));
    queue.insert(2, ms(1));
    let second = queue.recv_timeout(Duration::from_secs(5)).map(|e| e.into_inner());
    assert_eq!(second, Some(2), "the driver expires values after the panicking wake");
    assert_eq!(queue.timer().stats().panicked, 1);
}
