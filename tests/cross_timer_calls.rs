//! Two driven timers (one firing on its driver, one on executor threads) and a delay queue on the
//! first, whose tasks call into each other: advance, shrink, schedule onto, cancel and re-arm
//! tasks of, and clear the queue of the other timer, and at the end each shuts the other down at
//! about the same moment. Nothing deadlocks (the watchdog fails the test otherwise), each task
//! runs once or is dropped unrun once, and each value comes out, is cleared or is dropped once.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread;
use std::time::{Duration, Instant};

use common::{watched, SplitMix};
use delaywheel::queue::DelayQueue;
use delaywheel::{TaskExecution, Timer, TimerHandle};

/// Per task or value: runs (or takes), and drops unrun.
#[derive(Default)]
struct Tally {
    made: AtomicUsize,
    ran: AtomicUsize,
    unrun: AtomicUsize,
}

struct Probe {
    tally: Arc<Tally>,
    ran: bool,
}

impl Probe {
    fn new(tally: &Arc<Tally>) -> Probe {
        tally.made.fetch_add(1, Ordering::SeqCst);
        Probe { tally: Arc::clone(tally), ran: false }
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        let counter = if self.ran { &self.tally.ran } else { &self.tally.unrun };
        counter.fetch_add(1, Ordering::SeqCst);
    }
}

/// What the tasks reach: the queue (on timer 0), timer 1, and recent handles of each.
struct World {
    queue: OnceLock<Weak<DelayQueue<Probe>>>,
    other: OnceLock<Weak<Timer>>,
    handles: [Mutex<Vec<TimerHandle>>; 2],
    tally: Arc<Tally>,
    values: Arc<Tally>,
    ending: AtomicBool,
}

impl World {
    fn timer(&self, which: usize) -> Option<Arc<dyn AsTimer>> {
        match which {
            0 => self.queue.get()?.upgrade().map(|q| q as Arc<dyn AsTimer>),
            _ => self.other.get()?.upgrade().map(|t| t as Arc<dyn AsTimer>),
        }
    }
}

trait AsTimer: Send + Sync {
    fn timer(&self) -> &Timer;
}

impl AsTimer for Timer {
    fn timer(&self) -> &Timer {
        self
    }
}

impl AsTimer for DelayQueue<Probe> {
    fn timer(&self) -> &Timer {
        DelayQueue::timer(self)
    }
}

/// A task of timer `mine`, which calls into the other one.
fn schedule(world: &Arc<World>, mine: usize, rng: &mut SplitMix) {
    let Some(owner) = world.timer(mine) else { return };
    let probe = Probe::new(&world.tally);
    let (w, seed) = (Arc::clone(world), rng.next());
    let task = move || {
        // The whole probe moves in (a field alone would be captured otherwise).
        let mut probe = probe;
        probe.ran = true;
        let mut rng = SplitMix(seed);
        let theirs = 1 - mine;
        let Some(other) = w.timer(theirs) else { return };
        let t = other.timer();
        match rng.range(0, 12) {
            0 => drop(t.advance_clock(Duration::ZERO)),
            1 => t.shrink(),
            2 | 3 => schedule(&w, theirs, &mut rng),
            4 | 5 => {
                if let Some(h) = w.handles[theirs].lock().unwrap().pop() {
                    h.cancel();
                }
            }
            6 | 7 => {
                let h = w.handles[theirs].lock().unwrap().last().cloned();
                if let Some(h) = h {
                    h.reset(Duration::from_micros(rng.range(0, 3_000)));
                }
            }
            8 => {
                if let Some(q) = w.queue.get().and_then(Weak::upgrade) {
                    if rng.range(0, 4) == 0 {
                        q.clear();
                    } else {
                        q.insert(Probe::new(&w.values), Duration::from_micros(rng.range(0, 3_000)));
                    }
                }
            }
            9 if w.ending.load(Ordering::SeqCst) => drop(t.shutdown()),
            _ => schedule(&w, mine, &mut rng),
        }
    };
    if let Ok(h) = owner.timer().try_schedule(Duration::from_micros(rng.range(0, 4_000)), task) {
        let mut handles = world.handles[mine].lock().unwrap();
        handles.push(h);
        if handles.len() > 64 {
            handles.drain(..32);
        }
    }
}

fn round(seed: u64) {
    let mut rng = SplitMix(seed);
    let first = Timer::builder().tick(Duration::from_millis(1)).wheel_size(4).build();
    let second = Arc::new(
        Timer::builder()
            .tick(Duration::from_millis(1))
            .wheel_size(8)
            .execution(TaskExecution::Threads(2))
            .build(),
    );
    let queue = Arc::new(DelayQueue::with_timer(first));
    let world = Arc::new(World {
        queue: OnceLock::new(),
        other: OnceLock::new(),
        handles: Default::default(),
        tally: Arc::default(),
        values: Arc::default(),
        ending: AtomicBool::new(false),
    });
    let _ = world.queue.set(Arc::downgrade(&queue));
    let _ = world.other.set(Arc::downgrade(&second));
    let until = Instant::now() + Duration::from_millis(40);
    while Instant::now() < until {
        for _ in 0..20 {
            schedule(&world, rng.range(0, 2) as usize, &mut rng);
        }
        while let Some(expired) = queue.try_recv() {
            let mut probe = expired.into_inner();
            probe.ran = true;
        }
        thread::sleep(Duration::from_millis(1));
    }
    world.ending.store(true, Ordering::SeqCst);
    for _ in 0..40 {
        schedule(&world, rng.range(0, 2) as usize, &mut rng);
    }
    thread::sleep(Duration::from_millis(10));
    drop(queue.timer().shutdown());
    drop(second.shutdown());
    world.handles.iter().for_each(|h| h.lock().unwrap().clear());
    drop((queue, second));
    // Tasks that started before the shutdowns finish on their threads.
    let settled = |t: &Tally| {
        t.made.load(Ordering::SeqCst) == t.ran.load(Ordering::SeqCst) + t.unrun.load(Ordering::SeqCst)
    };
    let end = Instant::now() + Duration::from_secs(5);
    while !(settled(&world.tally) && settled(&world.values)) && Instant::now() < end {
        thread::sleep(Duration::from_millis(1));
    }
    for (what, t) in [("task", &world.tally), ("value", &world.values)] {
        let (made, ran, unrun) =
            (t.made.load(Ordering::SeqCst), t.ran.load(Ordering::SeqCst), t.unrun.load(Ordering::SeqCst));
        assert_eq!(
            made,
            ran + unrun,
            "{what}s: {made} made, {ran} run or taken, {unrun} dropped (seed {seed})"
        );
    }
}

#[test]
fn two_timers_whose_tasks_call_into_each_other_and_shut_each_other_down_never_deadlock() {
    watched("cross-timer calls", || {
        for seed in 0..10 {
            round(0xC705 + seed);
        }
    });
}
