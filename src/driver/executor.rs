//! Executor threads for `TaskExecution::Threads`: they run fired tasks off the driver (see the
//! parent module's docs), through the timer's one firing (`timer/fire.rs`).

use std::thread::{self as std_thread, Builder, JoinHandle};

use crossbeam_channel::{Receiver, Sender};

use crate::entry::{EntryArena, EntryId, Freed, Return};
use crate::sync::{Arc, AtomicBool, Mutex, Ordering};
use crate::timer::counters::Counters;
use crate::timer::fire;
use crate::timer::stats::Lateness;
use crate::timer::{Store, Time};

/// Executor threads for `TaskExecution::Threads`.
pub(crate) struct Executor {
    sender: Mutex<Option<Sender<EntryId>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Set when the timer is dropped: queued entries (claimed by the drop's drain already) are
    /// released without a try to fire them.
    discard: Arc<AtomicBool>,
    counters: Arc<Counters<Store>>,
    arena: Arc<EntryArena>,
}

impl Executor {
    pub(crate) fn start(
        n: usize,
        name: &str,
        (counters, arena): (&Arc<Counters<Store>>, &Arc<EntryArena>),
        (lateness, time): (&Arc<Lateness>, &Time),
    ) -> std::io::Result<Executor> {
        let (sender, receiver) = crossbeam_channel::unbounded();
        let discard = Arc::new(AtomicBool::new(false));
        let threads = (0..n)
            .map(|i| {
                let receiver: Receiver<EntryId> = receiver.clone();
                let (counters, discard) = (Arc::clone(counters), Arc::clone(&discard));
                let arena = Arc::clone(arena);
                let (lateness, Time { clock, ticks }) = (Arc::clone(lateness), time.clone());
                Builder::new().name(format!("{name}-exec-{i}")).spawn(move || {
                    crate::timer::advancing::mark_timer_thread();
                    let stripe = counters.local();
                    for entry in receiver {
                        if discard.load(Ordering::Acquire) {
                            fire::abandon(&arena, (entry, Return::Now), stripe);
                            continue;
                        }
                        let claimed = &mut |deadline_tick| {
                            stripe.fired(1);
                            lateness.record_one(ticks, deadline_tick, clock.now_nanos());
                        };
                        let freed = &mut Freed::default();
                        fire::fire_one(&arena, (entry, Return::Now), stripe, freed, claimed, None);
                    }
                })
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(Executor {
            sender: Mutex::new(Some(sender)),
            threads: Mutex::new(threads),
            discard,
            counters: Arc::clone(counters),
            arena: Arc::clone(arena),
        })
    }

    /// Hands due entries to the executor threads. After `close`, they are dropped (still pending;
    /// the shutdown drain does not see them, so they are claimed as abandoned here).
    pub(crate) fn submit(&self, due: impl Iterator<Item = EntryId>) {
        let sender = self.sender.lock().clone();
        let stripe = self.counters.local();
        for entry in due {
            match &sender {
                Some(sender) => {
                    if let Err(err) = sender.send(entry) {
                        fire::abandon(&self.arena, (err.into_inner(), Return::Now), stripe);
                    }
                }
                None => {
                    fire::abandon(&self.arena, (entry, Return::Now), stripe);
                }
            }
        }
    }

    /// Stops accepting tasks. With `join`, waits until the threads have run what they were given
    /// (except the calling thread, if it is one of them), also when another call is joining them
    /// already (shutdowns from several threads: each returns once the tasks ran); with `discard`,
    /// what is still queued is abandoned instead. Without `join` the threads are left to exit on
    /// their own (their handles are dropped with the executor).
    pub(crate) fn close(&self, join: bool, discard: bool) {
        if discard {
            self.discard.store(true, Ordering::Release);
        }
        drop(self.sender.lock().take());
        if join {
            // Held while joining, so that a concurrent joiner waits for the same exits. Only a
            // caller that may wait joins (`Timer::stop`: never from a timer's driver or executor
            // thread), and the threads never take this lock: a task that closes its own executor
            // without joining cannot wait for a joiner that waits for it.
            let mut threads = self.threads.lock();
            let me = std_thread::current().id();
            for thread in threads.drain(..).filter(|t| t.thread().id() != me) {
                let _ = thread.join();
            }
        }
    }
}
