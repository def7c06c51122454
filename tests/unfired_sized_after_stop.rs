//! Closures of every size class handed back by a shutdown of a timer that handed out enough slots
//! for the stop to give pages back (`timer/shrink.rs`, "After a shutdown"): each is run or dropped
//! by the caller afterwards, exactly once, its bytes intact, whatever the stop's shrink and a later
//! `shrink` gave back; the same for the values a dropped delay queue held.

#[path = "common/sized_task.rs"]
#[allow(dead_code)]
mod sized;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use delaywheel::queue::DelayQueue;
use delaywheel::{ManualClock, Timer, TimerHandle};
use sized::{by_class, Carried, Probe, Visit, CLASSES};

/// Tasks per size class: past the 16,384 slots from which a stop shrinks.
const PER_CLASS: usize = 2_000;

struct Schedule<'a>(&'a Timer, Duration, Arc<Probe>);

impl Visit for Schedule<'_> {
    type Out = TimerHandle;
    fn visit<V: Carried>(self) -> TimerHandle {
        let value = V::new(self.2);
        self.0.schedule(self.1, move || value.run())
    }
}

#[test]
fn unfired_closures_of_every_size_outlive_the_stops_shrink() {
    let clock = ManualClock::new();
    let timer =
        Timer::builder().tick(Duration::from_millis(1)).wheel_size(8).clock(clock.clone()).manual().build();
    let runs = Arc::new(AtomicUsize::new(0));
    let mut probes = Vec::new();
    let mut handles = Vec::new();
    for class in 0..CLASSES {
        for i in 0..PER_CLASS {
            let r = Arc::clone(&runs);
            let probe = Probe::new(probes.len(), move |_| {
                r.fetch_add(1, Ordering::SeqCst);
            });
            let delay = Duration::from_millis(1 + (i % 500) as u64);
            handles.push(by_class(class, Schedule(&timer, delay, Arc::clone(&probe))));
            probes.push(probe);
        }
    }
    // Cancel most, so that whole pages of slots and blocks are free when the stop shrinks.
    let mut cancelled = 0;
    for (i, handle) in handles.iter().enumerate() {
        if i % 7 != 0 {
            assert!(handle.cancel());
            cancelled += 1;
        }
    }
    let unfired = timer.shutdown();
    assert_eq!(unfired.len() + cancelled, probes.len());
    timer.shrink();
    assert!(handles.iter().all(|h| !h.cancel() && !h.is_pending()));
    let mut ran = 0;
    for (i, task) in unfired.into_iter().enumerate() {
        if i % 2 == 0 {
            task.run();
            ran += 1;
        } else {
            drop(task);
        }
    }
    assert_eq!(runs.load(Ordering::SeqCst), ran);
    drop(handles);
    drop(timer);
    for probe in &probes {
        assert_eq!(probe.drops(), 1, "closure {}", probe.id);
        assert!(probe.intact(), "closure {} damaged", probe.id);
    }
}

struct Fill<'a>(&'a [Arc<Probe>], &'a ManualClock, Duration);

impl Visit for Fill<'_> {
    type Out = ();
    fn visit<V: Carried>(self) {
        let timer = Timer::builder().tick(Duration::from_millis(1)).clock(self.1.clone()).manual().build();
        let queue = DelayQueue::<V>::with_timer(timer);
        let keys: Vec<_> = self
            .0
            .iter()
            .map(|p| queue.insert(V::new(Arc::clone(p)), self.2 * (1 + p.id % 3) as u32))
            .collect();
        for key in keys.iter().step_by(3) {
            drop(queue.remove(key));
        }
        self.1.advance(self.2);
        queue.advance_clock(Duration::ZERO);
        queue.timer().shrink();
        for _ in 0..100 {
            drop(queue.try_recv());
        }
        drop(queue);
    }
}

#[test]
fn a_dropped_queue_drops_values_of_every_size_once() {
    for class in 0..CLASSES {
        let clock = ManualClock::new();
        let probes: Vec<_> = (0..20_000).map(|id| Probe::new(id, |_| {})).collect();
        by_class(class, Fill(&probes, &clock, Duration::from_millis(5)));
        for probe in &probes {
            assert_eq!(probe.drops(), 1, "class {class}: value {}", probe.id);
            assert!(probe.intact(), "class {class}: value {} damaged", probe.id);
        }
    }
}
