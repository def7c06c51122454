//! The threads a timer may own: the driver that advances the clock, and executor threads that run
//! fired tasks.
//!
//! ## Driver
//!
//! One thread loops: wait in the delay queue until the earliest bucket is due (or an earlier one is
//! added, or the manual clock moves, or the queue is closed), then `advance`. With nothing queued it
//! waits without a timeout: an idle timer uses no CPU. Shutdown closes the queue, which wakes it for
//! good; the thread then exits after the task it is running, if any.
//!
//! ## Executor
//!
//! With `TaskExecution::Threads(n)`, `advance` sends due entries down a channel to `n` threads. An
//! entry is claimed (`Pending → Fired`) on the executor thread just before it runs, so a `cancel()`
//! that arrives while it waits in the channel still wins. Closing drops the sender: on `shutdown()`
//! the threads run what is already queued (it was due) and are joined, except the thread calling
//! shutdown from inside a task, which cannot join itself; on drop they are not joined (drop must
//! not wait for slow tasks) and discard what is still queued, so no task starts after the drop.
//!
//! These are real OS threads, started with `std::thread::Builder` so they can be named; they are not
//! part of the loom models, which drive a manual timer from model threads instead.

use std::thread::{self as std_thread, Builder, JoinHandle};

use crossbeam_channel::{Receiver, Sender};

use crate::arena::EntryArena;
use crate::clock::{ClockSource, TickLength};
use crate::counters::Counters;
use crate::entry::{self, abandon, EntryId, Fire, Return};
use crate::stats::Lateness;
use crate::sync::{Arc, AtomicBool, Mutex, Ordering};
use crate::timer::Shared;

/// The driver thread of a timer.
pub(crate) struct Driver {
    thread: JoinHandle<()>,
    /// On a manual clock: the clock and the id of the listener that wakes this driver, removed
    /// when the driver stops (a clock that never moves would otherwise keep it).
    #[cfg_attr(delaywheel_loom, allow(dead_code))]
    listener: Option<(crate::clock::ManualClock, u64)>,
}

impl Driver {
    pub(crate) fn start(
        shared: &Arc<Shared>,
        name: String,
        // (No timer slack under loom: its models run no driver thread.)
        #[cfg_attr(delaywheel_loom, allow(unused_variables))] precise_wakeups: bool,
    ) -> std::io::Result<Driver> {
        let mut listener = None;
        #[cfg(not(delaywheel_loom))]
        if let crate::clock::ClockSource::Manual(clock) = shared.clock() {
            // A driver on a manual clock sleeps until the clock moves: wake it on every advance.
            let weak = Arc::downgrade(shared);
            let id = clock.on_advance(Box::new(move || match weak.upgrade() {
                Some(shared) => {
                    shared.queue().wake();
                    true
                }
                None => false,
            }));
            listener = Some((clock.clone(), id));
        }
        let shared = Arc::clone(shared);
        let thread = Builder::new().name(name).spawn(move || {
            // Woken within a thousandth of a tick, not the kernel's default 50 µs (`timer_slack.rs`).
            #[cfg(not(delaywheel_loom))]
            if precise_wakeups && !shared.clock().is_manual() {
                crate::timer_slack::lower_for_this_thread(shared.ticks());
            }
            while !shared.is_shut_down() {
                shared.queue().wait_due(shared.clock(), shared.ticks(), None);
                shared.advance();
            }
        })?;
        Ok(Driver { thread, listener })
    }

    /// The driver is stopping: nothing needs to wake it any more.
    fn unlisten(&mut self) {
        if let Some((clock, id)) = self.listener.take() {
            clock.remove_listener(id);
        }
    }

    /// Waits for the thread to exit (after the queue was closed).
    pub(crate) fn join(mut self) {
        self.unlisten();
        // A panic on the driver would be a bug in this crate (task panics are caught): surface it.
        if let Err(panic) = self.thread.join() {
            std::panic::resume_unwind(panic);
        }
    }

    /// Lets the thread exit on its own (used when the driver itself asks for the shutdown).
    pub(crate) fn detach(mut self) {
        self.unlisten();
        drop(self.thread);
    }
}

/// Executor threads for `TaskExecution::Threads`.
pub(crate) struct Executor {
    sender: Mutex<Option<Sender<EntryId>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Set when the timer is dropped: queued entries are abandoned instead of run.
    discard: Arc<AtomicBool>,
    counters: Arc<Counters>,
    arena: Arc<EntryArena>,
}

impl Executor {
    pub(crate) fn start(
        n: usize,
        name: &str,
        (counters, arena): (&Arc<Counters>, &Arc<EntryArena>),
        (lateness, clock, ticks): (&Arc<Lateness>, &ClockSource, TickLength),
    ) -> std::io::Result<Executor> {
        let (sender, receiver) = crossbeam_channel::unbounded();
        let discard = Arc::new(AtomicBool::new(false));
        let threads = (0..n)
            .map(|i| {
                let receiver: Receiver<EntryId> = receiver.clone();
                let (counters, discard) = (Arc::clone(counters), Arc::clone(&discard));
                let arena = Arc::clone(arena);
                let (lateness, clock) = (Arc::clone(lateness), clock.clone());
                Builder::new().name(format!("{name}-exec-{i}")).spawn(move || {
                    let stripe = counters.local();
                    for entry in receiver {
                        if discard.load(Ordering::Acquire) {
                            abandon(&arena, (entry, Return::Now), stripe);
                            continue;
                        }
                        let claimed = &mut |deadline_tick| {
                            stripe.fired(1);
                            lateness.record_one(ticks, deadline_tick, clock.now_nanos());
                        };
                        if entry::fire(&arena, (entry, Return::Now), stripe, claimed) == Fire::Panicked {
                            stripe.panicked();
                        }
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
                        abandon(&self.arena, (err.into_inner(), Return::Now), stripe);
                    }
                }
                None => {
                    abandon(&self.arena, (entry, Return::Now), stripe);
                }
            }
        }
    }

    /// Stops accepting tasks. With `join`, waits until the threads have run what they were given
    /// (except the calling thread, if it is one of them); with `discard`, what is still queued is
    /// abandoned instead.
    pub(crate) fn close(&self, join: bool, discard: bool) {
        if discard {
            self.discard.store(true, Ordering::Release);
        }
        drop(self.sender.lock().take());
        let threads = std::mem::take(&mut *self.threads.lock());
        if join {
            let me = std_thread::current().id();
            for thread in threads.into_iter().filter(|t| t.thread().id() != me) {
                let _ = thread.join();
            }
        }
    }
}
