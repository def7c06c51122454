//! Tasks that, as they run (on the driver or on executor threads), cancel other tasks, re-arm
//! others earlier, later or to a passed instant, try to re-arm themselves, shrink the timer and
//! schedule follow-ups; closures that, dropped unrun (by a cancel or a shutdown's drain),
//! schedule onto the same timer; and a shutdown from a task or from outside racing all of it.
//! Each task runs once or is dropped unrun once, never before the deadline of its last `true`
//! reset; a running task cannot re-arm itself; every closure a schedule accepted is run or dropped
//! by the time the shutdown returned and the executors finished, and nothing stays pending.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread;
use std::time::{Duration, Instant};

use common::{watched, SplitMix};
use delaywheel::{TaskExecution, Timer, TimerHandle};

const TASKS: usize = 3_000;

struct World {
    timer: OnceLock<Weak<Timer>>,
    base: Instant,
    handles: Vec<OnceLock<TimerHandle>>,
    /// Per task: nanoseconds after `base` of its deadline (its schedule's or its last `true`
    /// reset's); the lock serialises the resets of one task with their bookkeeping.
    due: Vec<Mutex<u64>>,
    runs: Vec<AtomicUsize>,
    unrun: Vec<AtomicUsize>,
    cancels: Vec<AtomicUsize>,
    ran_at: Vec<AtomicUsize>,
    self_resets: AtomicUsize,
    /// Closures scheduled from a drop, and those gone (run or dropped).
    echoes: AtomicUsize,
    echoes_gone: AtomicUsize,
}

impl World {
    fn timer(&self) -> Option<Arc<Timer>> {
        self.timer.get().and_then(Weak::upgrade)
    }

    fn nanos(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.base).as_nanos() as u64
    }

    fn reset(&self, id: usize, rng: &mut SplitMix) {
        let (Some(timer), Some(h)) = (self.timer(), self.handles[id].get()) else { return };
        let now = timer.now();
        let to = match rng.range(0, 3) {
            0 => now.checked_sub(Duration::from_micros(rng.range(0, 2_000))).unwrap_or(now),
            1 => now + Duration::from_micros(rng.range(0, 1_000)),
            _ => now + Duration::from_micros(rng.range(0, 8_000)),
        };
        let mut due = self.due[id].lock().unwrap();
        if h.reset_at(to) {
            *due = self.nanos(to);
        }
    }

    fn cancel(&self, id: usize) {
        if self.handles[id].get().is_some_and(TimerHandle::cancel) {
            self.cancels[id].fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Counts the echo closure's end, run or dropped.
struct Echo(Arc<World>);

impl Drop for Echo {
    fn drop(&mut self) {
        self.0.echoes_gone.fetch_add(1, Ordering::SeqCst);
    }
}

/// A task's closure state; dropped unrun, it schedules an echo onto the same timer.
struct Probe {
    world: Arc<World>,
    id: usize,
    ran: bool,
}

impl Drop for Probe {
    fn drop(&mut self) {
        if self.ran {
            return;
        }
        self.world.unrun[self.id].fetch_add(1, Ordering::SeqCst);
        if let Some(timer) = self.world.timer() {
            self.world.echoes.fetch_add(1, Ordering::SeqCst);
            let echo = Echo(Arc::clone(&self.world));
            // Refused (the timer shut down), the closure is dropped here.
            let _ = timer.try_schedule(Duration::from_micros(self.id as u64 % 3_000), move || drop(echo));
        }
    }
}

fn task(world: &Arc<World>, id: usize, seed: u64) -> impl FnOnce() + Send + 'static {
    let mut probe = Probe { world: Arc::clone(world), id, ran: false };
    move || {
        probe.ran = true;
        let world = &probe.world;
        let Some(timer) = world.timer() else { return };
        world.ran_at[id].store(world.nanos(timer.now()) as usize, Ordering::SeqCst);
        world.runs[id].fetch_add(1, Ordering::SeqCst);
        let mut rng = SplitMix(seed);
        if let Some(me) = world.handles[id].get() {
            if me.reset(Duration::from_millis(5)) {
                world.self_resets.fetch_add(1, Ordering::SeqCst);
            }
        }
        for _ in 0..rng.range(0, 4) {
            let other = rng.range(0, TASKS as u64) as usize;
            match rng.range(0, 10) {
                0..=2 => world.cancel(other),
                3..=8 => world.reset(other, &mut rng),
                _ => timer.shrink(),
            }
        }
    }
}

fn round(seed: u64) {
    let mut rng = SplitMix(seed);
    let execution = if rng.next() % 3 == 0 { TaskExecution::OnDriver } else { TaskExecution::Threads(3) };
    let timer = Arc::new(
        Timer::builder()
            .tick(Duration::from_micros([1, 50, 1_000][rng.range(0, 3) as usize]))
            .bucket_lanes([2, 16][rng.range(0, 2) as usize])
            .wheel_size(4)
            .execution(execution)
            .build(),
    );
    let cells = |n: usize| (0..n).map(|_| AtomicUsize::new(0)).collect::<Vec<_>>();
    let world = Arc::new(World {
        timer: OnceLock::new(),
        base: timer.now(),
        handles: (0..TASKS).map(|_| OnceLock::new()).collect(),
        due: (0..TASKS).map(|_| Mutex::new(0)).collect(),
        runs: cells(TASKS),
        unrun: cells(TASKS),
        cancels: cells(TASKS),
        ran_at: cells(TASKS),
        self_resets: AtomicUsize::new(0),
        echoes: AtomicUsize::new(0),
        echoes_gone: AtomicUsize::new(0),
    });
    world.timer.set(Arc::downgrade(&timer)).unwrap();
    let from_task = rng.next() % 2 == 0;
    let shut_at = rng.range(0, TASKS as u64) as usize;
    let scheduled = thread::scope(|s| {
        let outside = s.spawn(|| {
            let mut rng = SplitMix(seed ^ 0xFFFF);
            let until = Instant::now() + Duration::from_millis(15);
            while Instant::now() < until {
                let id = rng.range(0, TASKS as u64) as usize;
                if rng.next() % 2 == 0 {
                    world.cancel(id)
                } else {
                    world.reset(id, &mut rng)
                }
            }
        });
        let mut scheduled = 0;
        for id in 0..TASKS {
            let at = timer.now() + Duration::from_micros(rng.range(0, 10_000));
            let mut due = world.due[id].lock().unwrap();
            *due = world.nanos(at);
            // A refusal (after the shutdown) drops the closure, as unrun.
            if let Ok(h) = timer.try_schedule_at(at, task(&world, id, rng.next())) {
                world.handles[id].set(h).unwrap();
                scheduled += 1;
            }
            drop(due);
            if id == shut_at && from_task {
                let w = Arc::downgrade(&timer);
                timer.schedule(Duration::from_micros(rng.range(0, 3_000)), move || {
                    if let Some(t) = w.upgrade() {
                        t.shutdown().into_iter().for_each(drop);
                    }
                });
            }
        }
        thread::sleep(Duration::from_millis(rng.range(0, 15)));
        if !from_task {
            timer.shutdown().into_iter().for_each(drop);
        }
        outside.join().unwrap();
        scheduled
    });
    // Wait for the shutdown from a task too, and for the executors to finish what they started.
    timer.shutdown().into_iter().for_each(drop);
    assert_eq!(timer.len(), 0, "seed {seed}");
    let until = Instant::now() + Duration::from_secs(5);
    let settled = || {
        (0..TASKS)
            .all(|id| world.runs[id].load(Ordering::SeqCst) + world.unrun[id].load(Ordering::SeqCst) == 1)
    };
    let echoes_done = || world.echoes.load(Ordering::SeqCst) == world.echoes_gone.load(Ordering::SeqCst);
    while !(settled() && echoes_done()) && Instant::now() < until {
        thread::sleep(Duration::from_millis(1));
    }
    assert!(scheduled > 0);
    assert_eq!(world.self_resets.load(Ordering::SeqCst), 0, "a running task re-armed itself (seed {seed})");
    for id in 0..TASKS {
        let load = |v: &Vec<AtomicUsize>| v[id].load(Ordering::SeqCst);
        let (runs, unrun, cancels) = (load(&world.runs), load(&world.unrun), load(&world.cancels));
        assert_eq!(runs + unrun, 1, "task {id}: ran {runs} times, dropped unrun {unrun} times (seed {seed})");
        assert!(cancels <= unrun, "task {id}: {cancels} true cancels (seed {seed})");
        if runs == 1 {
            let (ran, due) = (load(&world.ran_at) as u64, *world.due[id].lock().unwrap());
            assert!(ran >= due, "task {id} ran {} ns early (seed {seed})", due - ran);
        }
    }
    let (echoes, gone) = (world.echoes.load(Ordering::SeqCst), world.echoes_gone.load(Ordering::SeqCst));
    assert_eq!(echoes, gone, "closures scheduled from drops left neither run nor dropped (seed {seed})");
}

#[test]
fn tasks_cancelling_and_re_arming_each_other_racing_a_shutdown_keep_every_promise() {
    watched("tasks moving each other", || {
        for seed in 0..12 {
            round(0x7A5C + seed);
        }
    });
}
