//! The delay queue of values' consumer side (`src/queue/ready/`): a consumer that finds nothing
//! to take registers to be woken, and must be woken when the queue becomes empty, whether a remove
//! (holding no queue lock) or another consumer's take (under the taking lock) empties it; and a
//! consumer that finds the queue ended, by a shutdown racing a clear, finds nothing counted.
//!
//! Consumers poll with `poll_expired` (feature `async`: under loom a thread cannot block on a
//! condition variable) and a waker that counts its wake-ups in a std atomic, out of loom's sight.
//! A consumer left `Pending` and never woken would wait for ever: the models assert that every
//! `Pending` was woken, and that a poll after the threads are joined settles what is left.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use delaywheel::queue::DelayQueue;
use loom::sync::Arc;

use crate::support::{manual_queue, ticks};

/// A waker counting its wake-ups.
#[derive(Default)]
struct Woken(AtomicUsize);

impl Wake for Woken {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// A consumer's first poll: what it got, and its wake-up counter.
fn poll_once(queue: &DelayQueue<u8>) -> (Poll<Option<u8>>, std::sync::Arc<Woken>) {
    let woken = std::sync::Arc::new(Woken::default());
    let waker = Waker::from(std::sync::Arc::clone(&woken));
    let polled = queue.poll_expired(&mut Context::from_waker(&waker)).map(|e| e.map(|e| e.into_inner()));
    (polled, woken)
}

/// A first poll's outcome, once every thread is joined: a `Pending` must have been woken (else the
/// consumer waits for ever), and its next poll, with nothing racing any more, is final.
fn settle(queue: &DelayQueue<u8>, (polled, woken): (Poll<Option<u8>>, std::sync::Arc<Woken>)) -> Option<u8> {
    match polled {
        Poll::Ready(got) => got,
        Poll::Pending => {
            assert!(woken.0.load(Ordering::Relaxed) > 0, "a waiting consumer was never woken");
            match poll_once(queue).0 {
                Poll::Ready(got) => got,
                Poll::Pending => panic!("a consumer waits on a settled queue"),
            }
        }
    }
}

/// A consumer polls while the only pending value is removed: either its read of the count saw the
/// remove (`Ready(None)`), or the remove saw it registered and woke it. The remove holds no queue
/// lock: the two `SeqCst` fences settle the race.
#[test]
fn remove_racing_a_waiting_consumer() {
    loom::model(|| {
        let (_clock, queue) = manual_queue();
        let key = queue.insert(1, ticks(3));
        let consumer = {
            let queue = Arc::clone(&queue);
            loom::thread::spawn(move || poll_once(&queue))
        };
        assert_eq!(queue.remove(&key), Some(1));
        let first = consumer.join().unwrap();
        assert_eq!(settle(&queue, first), None, "the removed value came out");
        assert!(queue.is_empty());
    });
}

/// One value expires while two consumers poll (one of them after advancing the timer): exactly one
/// takes it, and the other either saw the queue empty or was woken, by the expiry (it registered
/// before the value arrived) or by the take that emptied the queue (it registered between the
/// take's pop and its count-out, which the taking lock orders).
#[test]
fn two_consumers_racing_a_batch() {
    loom::model(|| {
        let (clock, queue) = manual_queue();
        queue.insert(1, ticks(1));
        clock.advance(ticks(1));
        let advancing_consumer = {
            let queue = Arc::clone(&queue);
            loom::thread::spawn(move || {
                queue.advance_clock(Duration::ZERO);
                poll_once(&queue)
            })
        };
        let here = poll_once(&queue);
        let there = advancing_consumer.join().unwrap();
        let got = [settle(&queue, here), settle(&queue, there)];
        assert!(got == [Some(1), None] || got == [None, Some(1)], "taken {got:?}: not exactly once");
        assert!(queue.is_empty());
    });
}

/// Two `next_expired` futures of one task wait; one is dropped while the value expires. The drop
/// takes out its own registration only: the other future is woken by the expiry (or, if the drop
/// came after the wake, the wake took both and the drop finds nothing), and takes the value.
#[test]
fn a_dropped_next_expired_racing_an_expiry() {
    use std::future::Future;
    use std::pin::Pin;

    loom::model(|| {
        let (clock, queue) = manual_queue();
        queue.insert(1, ticks(1));
        let woken = std::sync::Arc::new(Woken::default());
        let waker = Waker::from(std::sync::Arc::clone(&woken));
        let mut cx = Context::from_waker(&waker);
        let mut dropped = queue.next_expired();
        let mut kept = queue.next_expired();
        assert!(Pin::new(&mut dropped).poll(&mut cx).is_pending());
        assert!(Pin::new(&mut kept).poll(&mut cx).is_pending());
        let expiry = {
            let (clock, queue) = (clock.clone(), Arc::clone(&queue));
            loom::thread::spawn(move || {
                clock.advance(ticks(1));
                queue.advance_clock(Duration::ZERO);
            })
        };
        drop(dropped);
        expiry.join().unwrap();
        assert!(woken.0.load(Ordering::Relaxed) > 0, "the waiting future's task was never woken");
        match Pin::new(&mut kept).poll(&mut cx) {
            Poll::Ready(Some(expired)) => assert_eq!(expired.into_inner(), 1),
            other => panic!("the kept future got {:?}", other.map(|e| e.map(|e| e.into_inner()))),
        }
    });
}

/// A bare poll that purges (under loom the limit of kept bare wakers is 1, so a second waiting
/// task purges the first: wakes it spuriously and registers itself) while the only pending value
/// is removed. The purge lowers `waiting` for the task it takes under the arrival lock, and the
/// task making it registers as any other (count raised, fence, count read): either its read saw the
/// remove (`Ready(None)`), or the remove saw it waiting and woke it. The purged task was woken.
#[test]
fn a_purge_racing_a_remove() {
    loom::model(|| {
        let (_clock, queue) = manual_queue();
        let key = queue.insert(1, ticks(3));
        let purged = poll_once(&queue);
        assert!(purged.0.is_pending(), "nothing removed yet");
        let remover = {
            let queue = Arc::clone(&queue);
            loom::thread::spawn(move || queue.remove(&key))
        };
        let purging = poll_once(&queue);
        assert_eq!(remover.join().unwrap(), Some(1));
        assert!(purged.1 .0.load(Ordering::Relaxed) > 0, "the purged consumer was never woken");
        assert_eq!(settle(&queue, purging), None, "the removed value came out");
        assert_eq!(settle(&queue, purged), None, "the removed value came out");
        assert!(queue.is_empty());
    });
}

/// A shutdown that does not wait for the advance in progress (`shutdown_timeout(0)`, as one from
/// a task or a timer's thread) races the hand-over of a batch whose value the advance fired
/// before it: the value is never lost, and a consumer polling after the shutdown never sees the
/// end before it (the advance closes the queue after its batch when the shutdown could not).
/// A second value, due later, is handed back by the shutdown and counted out only by the queue's
/// closing, so the queue's end after the join is that closing, which some side must have done.
#[test]
fn shutdown_racing_the_hand_over_of_a_batch() {
    loom::model(|| {
        let (clock, queue) = manual_queue();
        queue.insert(1, ticks(1));
        queue.insert(2, ticks(2));
        clock.advance(ticks(1));
        let advancer = {
            let queue = Arc::clone(&queue);
            loom::thread::spawn(move || {
                queue.advance_clock(Duration::ZERO);
            })
        };
        let returned = queue.timer().shutdown_timeout(Duration::ZERO).len();
        let first = poll_once(&queue);
        advancer.join().unwrap();
        let ended_first = matches!(first.0, Poll::Ready(None));
        let got = settle(&queue, first);
        let later = queue.try_recv().map(|e| e.into_inner());
        assert!(!(ended_first && later.is_some()), "the queue ended, then a value came");
        let out = usize::from(got.is_some()) + usize::from(later.is_some());
        assert_eq!(returned + out, 2, "a value was lost or came out twice");
        assert!(matches!(poll_once(&queue).0, Poll::Ready(None)), "the queue was never closed");
    });
}

/// A waker that, when woken, looks at the queue as its consumer would: whether a poll finds the
/// queue ended, and `len()` then.
struct LooksWhenWoken {
    queue: Arc<DelayQueue<u8>>,
    seen: std::sync::Mutex<Vec<(bool, usize)>>,
}

impl Wake for LooksWhenWoken {
    fn wake(self: std::sync::Arc<Self>) {
        let ended = poll_once(&self.queue).0 == Poll::Ready(None);
        self.seen.lock().unwrap().push((ended, self.queue.len()));
    }
}

/// A consumer waits on a pending value while the queue is cleared and its timer shut down without
/// waiting; whoever claims the value, the consumer, woken by the closing, finds the queue ended
/// and `len()` 0. A shutdown that finds the advance lock held by the clear leaves the closing of
/// the queue to the clear, which closes it as it releases the lock, having counted its values out
/// before, under the ready list's locks. When the shutdown's drain claims the value, no closing
/// comes before that drain has counted it, and each closing counts out what the drains counted
/// under the lock it closes under: the clear's closing, or one racing the shutdown's own, never
/// ends the consumers while the value is still counted.
#[test]
fn a_consumer_woken_by_a_clear_racing_a_shutdown() {
    loom::model(|| {
        let (_clock, queue) = manual_queue();
        queue.insert(1, ticks(3));
        let looks = std::sync::Arc::new(LooksWhenWoken {
            queue: Arc::clone(&queue),
            seen: std::sync::Mutex::new(Vec::new()),
        });
        let waker = Waker::from(std::sync::Arc::clone(&looks));
        assert!(queue.poll_expired(&mut Context::from_waker(&waker)).is_pending());
        drop(waker);

        let stopper = {
            let queue = Arc::clone(&queue);
            loom::thread::spawn(move || queue.timer().shutdown_timeout(Duration::ZERO).len())
        };
        queue.clear();
        let drained = stopper.join().unwrap();

        let seen = looks.seen.lock().unwrap().clone();
        assert!(!seen.is_empty(), "the waiting consumer was never woken");
        assert!(
            seen.iter().all(|&(ended, len)| !ended || len == 0),
            "ended while counting: {seen:?} (the shutdown's drain claimed {drained})"
        );
        assert!(queue.is_empty() && poll_once(&queue).0 == Poll::Ready(None));
    });
}
