//! Delay-queue values whose own `Drop` calls back into their queue: it inserts a follow-up value,
//! removes or re-arms another value, clears the queue, takes a value, advances the queue's timer or
//! shuts it down. Such values are dropped wherever the queue lets go of them: by a consumer taking
//! them, by `remove`, by `clear`, by a shutdown of the timer, by the queue's own drop. Nothing
//! deadlocks or panics, and every value, follow-ups included, is dropped exactly once. On a manual
//! clock.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use common::{manual_timer, ms, watched};
use delaywheel::queue::{DelayQueue, Key};

/// What a value's drop does to its queue.
#[derive(Clone, Copy, Debug)]
enum OnDrop {
    Nothing,
    InsertFollowUp,
    RemoveAnother,
    Clear,
    TakeOne,
    ResetAnother,
    Advance,
    ShutDown,
}

const ON_DROP: [OnDrop; 8] = [
    OnDrop::Nothing,
    OnDrop::InsertFollowUp,
    OnDrop::RemoveAnother,
    OnDrop::Clear,
    OnDrop::TakeOne,
    OnDrop::ResetAnother,
    OnDrop::Advance,
    OnDrop::ShutDown,
];

/// Counts its drops, by id, and calls back into its queue as `on_drop` says.
struct Value {
    queue: Weak<DelayQueue<Value>>,
    id: usize,
    on_drop: OnDrop,
    shared: Arc<Shared>,
}

/// Drops per id (follow-ups get ids from 1000) and the keys of the values inserted.
#[derive(Default)]
struct Shared {
    drops: Mutex<Vec<usize>>,
    keys: Mutex<Vec<Key>>,
    next_follow_up: AtomicUsize,
}

impl Shared {
    fn dropped(&self, id: usize) {
        let mut drops = self.drops.lock().unwrap();
        if drops.len() <= id {
            drops.resize(id + 1, 0);
        }
        drops[id] += 1;
    }
}

impl Drop for Value {
    fn drop(&mut self) {
        self.shared.dropped(self.id);
        let Some(queue) = self.queue.upgrade() else { return };
        let _ = (queue.len(), queue.is_empty(), queue.next_deadline());
        let last_key = || self.shared.keys.lock().unwrap().pop();
        match self.on_drop {
            OnDrop::Nothing => {}
            OnDrop::InsertFollowUp if self.id < 1_000 => {
                let id = 1_000 + self.shared.next_follow_up.fetch_add(1, Ordering::SeqCst);
                let value = Value {
                    queue: Weak::clone(&self.queue),
                    id,
                    on_drop: OnDrop::Nothing,
                    shared: Arc::clone(&self.shared),
                };
                let key = queue.insert(value, ms(1));
                self.shared.keys.lock().unwrap().push(key);
            }
            OnDrop::InsertFollowUp => {}
            OnDrop::RemoveAnother => drop(last_key().and_then(|key| queue.remove(&key))),
            OnDrop::Clear => queue.clear(),
            OnDrop::TakeOne => drop(queue.try_recv()),
            OnDrop::ResetAnother => drop(last_key().map(|key| queue.reset(&key, Duration::ZERO))),
            OnDrop::Advance => drop(queue.advance_clock(Duration::ZERO)),
            OnDrop::ShutDown => drop(queue.timer().shutdown()),
        }
    }
}

/// How the test lets go of the values, after the first of them have come due.
#[derive(Clone, Copy, Debug)]
enum LetGo {
    Take,
    Remove,
    Clear,
    ShutDown,
    DropTheQueue,
}

fn scenario(on_drop: OnDrop, let_go: LetGo) {
    let (clock, timer) = manual_timer(ms(1), 4);
    let queue = Arc::new(DelayQueue::with_timer(timer));
    let shared = Arc::new(Shared::default());
    for id in 0..60 {
        // Every other value calls back; the rest do nothing, so callbacks meet plain values.
        let on_drop = if id % 2 == 0 { on_drop } else { OnDrop::Nothing };
        let value = Value { queue: Arc::downgrade(&queue), id, on_drop, shared: Arc::clone(&shared) };
        let key = queue.insert(value, Duration::from_micros((id as u64 * 331) % 9_000));
        shared.keys.lock().unwrap().push(key);
    }
    clock.advance(ms(3));
    queue.advance_clock(Duration::ZERO);
    match let_go {
        LetGo::Take => while queue.try_recv().is_some() {},
        LetGo::Remove => {
            let keys = shared.keys.lock().unwrap().clone();
            keys.iter().for_each(|key| drop(queue.remove(key)));
        }
        LetGo::Clear => queue.clear(),
        LetGo::ShutDown => drop(queue.timer().shutdown()),
        LetGo::DropTheQueue => {}
    }
    if !matches!(let_go, LetGo::DropTheQueue) {
        clock.advance(ms(20));
        queue.advance_clock(Duration::ZERO);
        while queue.try_recv().is_some() {}
    }
    drop(Arc::try_unwrap(queue).expect("the values hold only weak references"));
    let follow_ups = shared.next_follow_up.load(Ordering::SeqCst);
    let drops = shared.drops.lock().unwrap();
    for id in (0..60).chain(1_000..1_000 + follow_ups) {
        assert_eq!(
            drops.get(id),
            Some(&1),
            "{on_drop:?} / {let_go:?}: value {id} dropped {:?} times",
            drops.get(id)
        );
    }
    assert_eq!(drops.iter().sum::<usize>(), 60 + follow_ups, "{on_drop:?} / {let_go:?}: unknown drops");
}

#[test]
fn values_whose_drop_calls_back_are_each_dropped_once_wherever_the_queue_lets_go() {
    for on_drop in ON_DROP {
        for let_go in [LetGo::Take, LetGo::Remove, LetGo::Clear, LetGo::ShutDown, LetGo::DropTheQueue] {
            watched(&format!("{on_drop:?} / {let_go:?}"), move || scenario(on_drop, let_go));
        }
    }
}
