//! Bare `DelayQueue::poll_expired` polls, which have no drop to take a task's registration out: the
//! queue keeps a bounded number of their wakers (purging them with spurious wake-ups), a task that
//! still waits polls again and gets its value, and many tasks that really wait are not woken for
//! ever (the bound follows them). Tasks run on a small executor of the test's own: a waker puts its
//! task at the back of a run queue, and counts as alive while anyone holds it.
#![cfg(feature = "async")]

mod common;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use common::ms;
use common::queue::{advance, manual_queue};
use common::waker::CountingWaker;
use delaywheel::queue::DelayQueue;

/// Tasks by number: a woken task goes to the back of the run queue.
#[derive(Default)]
struct Executor {
    run: Arc<Mutex<VecDeque<usize>>>,
    /// Tasks whose waker is still held (by the test or by the queue).
    alive: Arc<AtomicUsize>,
    /// Wake-ups of all tasks.
    wakes: Arc<AtomicUsize>,
}

struct Task {
    id: usize,
    run: Arc<Mutex<VecDeque<usize>>>,
    alive: Arc<AtomicUsize>,
    wakes: Arc<AtomicUsize>,
}

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::Relaxed);
        self.run.lock().unwrap().push_back(self.id);
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        self.alive.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Executor {
    fn task(&self, id: usize) -> Waker {
        self.alive.fetch_add(1, Ordering::Relaxed);
        let (run, alive, wakes) = (Arc::clone(&self.run), Arc::clone(&self.alive), Arc::clone(&self.wakes));
        Waker::from(Arc::new(Task { id, run, alive, wakes }))
    }

    fn alive(&self) -> usize {
        self.alive.load(Ordering::Relaxed)
    }

    fn wakes(&self) -> usize {
        self.wakes.load(Ordering::Relaxed)
    }

    fn next(&self) -> Option<usize> {
        self.run.lock().unwrap().pop_front()
    }
}

fn poll<T: std::fmt::Debug>(queue: &DelayQueue<T>, waker: &Waker) -> Poll<Option<T>> {
    queue.poll_expired(&mut Context::from_waker(waker)).map(|expired| expired.map(|e| e.into_inner()))
}

/// A task that polls once and is dropped (a `select!` that another branch won).
fn poll_once_and_go(queue: &DelayQueue<&str>, dropped: &Executor) {
    let waker = dropped.task(0);
    assert!(poll(queue, &waker).is_pending());
}

/// 100,000 tasks poll once each and are gone, around one value far off: the queue keeps a bounded
/// number of their wakers (it kept all of them). A task that keeps polling gets the value once.
#[test]
fn bare_pollers_that_are_gone_are_not_kept() {
    let (clock, queue) = manual_queue();
    queue.insert("later", ms(5));
    let (keeper, keeper_waker) = CountingWaker::new();
    let dropped = Executor::default();
    assert!(poll(&queue, &keeper_waker).is_pending());
    let mut most_alive = 0;
    for i in 0..100_000 {
        poll_once_and_go(&queue, &dropped);
        most_alive = most_alive.max(dropped.alive());
        if i % 1_000 == 0 {
            assert!(poll(&queue, &keeper_waker).is_pending(), "nothing expired yet");
        }
    }
    assert!(most_alive <= 200, "{most_alive} wakers of tasks that are gone kept at once");
    assert!(dropped.wakes() <= 2 * 100_000, "{} spurious wake-ups", dropped.wakes());

    assert!(poll(&queue, &keeper_waker).is_pending());
    let before = keeper.count();
    advance(&clock, &queue, ms(5));
    assert!(keeper.count() > before, "the waiting task was not woken by the expiry");
    assert!(matches!(poll(&queue, &keeper_waker), Poll::Ready(Some("later"))));
    assert!(matches!(poll(&queue, &keeper_waker), Poll::Ready(None)), "taken once");
}

/// A task that waits is woken spuriously by a purge; it polls again (registering again) and is
/// woken when its value expires.
#[test]
fn a_waiting_task_woken_by_a_purge_polls_again_and_gets_its_value() {
    let (clock, queue) = manual_queue();
    queue.insert("due", ms(3));
    let (live, live_waker) = CountingWaker::new();
    let dropped = Executor::default();
    assert!(poll(&queue, &live_waker).is_pending());
    let mut seen = 0;
    for _ in 0..10_000 {
        poll_once_and_go(&queue, &dropped);
        if live.count() > seen {
            seen = live.count();
            assert!(poll(&queue, &live_waker).is_pending(), "a spurious wake-up: nothing expired");
        }
    }
    assert!(seen > 0, "10,000 tasks gone and the waiting task never woken: nothing was purged");
    assert!(dropped.alive() <= 200, "{} wakers of tasks that are gone kept", dropped.alive());

    advance(&clock, &queue, ms(3));
    assert!(live.count() > seen, "the waiting task was not woken by the expiry");
    assert!(matches!(poll(&queue, &live_waker), Poll::Ready(Some("due"))));
}

/// Runs the executor's woken tasks (each waits: it polls again) until none is woken or `budget`
/// polls were made; returns the polls made.
fn run_waiting(queue: &DelayQueue<&str>, live: &Executor, wakers: &[Waker], budget: usize) -> usize {
    let mut polls = 0;
    while polls < budget {
        let Some(id) = live.next() else { break };
        assert!(poll(queue, &wakers[id]).is_pending(), "nothing expired yet");
        polls += 1;
    }
    polls
}

/// Many tasks that really wait, each polled again only after all the others (a FIFO executor):
/// the purges' spurious wake-ups die out instead of going on for ever, and then the expiry wakes
/// every task and exactly one gets the value.
#[test]
fn many_waiting_bare_pollers_are_not_woken_for_ever() {
    const TASKS: usize = 5_000;
    let (clock, queue) = manual_queue();
    queue.insert("due", ms(5));
    let live = Executor::default();
    let wakers: Vec<Waker> = (0..TASKS).map(|id| live.task(id)).collect();
    live.run.lock().unwrap().extend(0..TASKS);
    let polls = run_waiting(&queue, &live, &wakers, 100 * TASKS);
    assert!(live.next().is_none(), "still waking the waiting tasks after {polls} polls");
    assert!(polls <= 40 * TASKS, "{polls} polls of {TASKS} waiting tasks before they settled");

    let before = live.wakes();
    advance(&clock, &queue, ms(5));
    assert_eq!(live.wakes() - before, TASKS, "the expiry wakes every waiting task once");
    let got: Vec<_> = std::iter::from_fn(|| live.next())
        .filter_map(|id| match poll(&queue, &wakers[id]) {
            Poll::Ready(got) => got,
            Poll::Pending => panic!("a task waits on a queue with nothing pending"),
        })
        .collect();
    assert_eq!(got, ["due"], "the value goes to exactly one task");
}

/// Tasks that wait among a stream of tasks that poll once and are gone: the queue keeps about
/// twice the waiting tasks' wakers, not the gone ones', and wakes each waiting task O(1) times per
/// task gone.
#[test]
fn waiting_bare_pollers_among_many_that_are_gone() {
    const WAITING: usize = 300;
    const GONE: usize = 100_000;
    let (_clock, queue) = manual_queue();
    queue.insert("later", ms(5));
    let (live, dropped) = (Executor::default(), Executor::default());
    let wakers: Vec<Waker> = (0..WAITING).map(|id| live.task(id)).collect();
    live.run.lock().unwrap().extend(0..WAITING);
    let mut most_alive = 0;
    let mut polls = 0;
    for _ in 0..GONE {
        poll_once_and_go(&queue, &dropped);
        most_alive = most_alive.max(dropped.alive());
        polls += run_waiting(&queue, &live, &wakers, 4);
    }
    polls += run_waiting(&queue, &live, &wakers, 100 * WAITING);
    assert!(live.next().is_none(), "the waiting tasks still woken after the others are gone");
    assert!(most_alive <= 4 * WAITING + 100, "{most_alive} wakers of tasks that are gone kept at once");
    assert!(polls <= 4 * GONE, "{polls} polls of the waiting tasks for {GONE} tasks gone");
}
