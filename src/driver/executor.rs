//! Executor threads for `TaskExecution::Threads`: they run fired tasks off the driver (see the
//! parent module's docs), through the timer's one firing (`timer/fire.rs`: an
//! `ExecutorRoom` fires and abandons the `ExecutorJob`s handed over).

use std::thread::{self as std_thread, Builder, JoinHandle};

use crossbeam_channel::{Receiver, Sender};

use crate::sync::{Arc, AtomicBool, Mutex, Ordering};
use crate::timer::{ExecutorJob, ExecutorRoom};

/// Executor threads for `TaskExecution::Threads`.
pub(crate) struct Executor {
    sender: Mutex<Option<Sender<ExecutorJob>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Set when the timer is dropped: queued entries (claimed by the drop's drain already) are
    /// released without a try to fire them.
    discard: Arc<AtomicBool>,
    /// What the threads fire with; a job this executor cannot hand over is abandoned through it.
    room: ExecutorRoom,
}

impl Executor {
    pub(crate) fn start(n: usize, name: &str, room: &ExecutorRoom) -> std::io::Result<Executor> {
        let (sender, receiver) = crossbeam_channel::unbounded();
        let discard = Arc::new(AtomicBool::new(false));
        let threads = (0..n)
            .map(|i| {
                let receiver: Receiver<ExecutorJob> = receiver.clone();
                let (room, discard) = (room.clone(), Arc::clone(&discard));
                Builder::new().name(format!("{name}-exec-{i}")).spawn(move || {
                    crate::timer::advancing::mark_timer_thread();
                    let thread = room.thread();
                    for job in receiver {
                        if discard.load(Ordering::Acquire) {
                            thread.abandon(job);
                            continue;
                        }
                        thread.run(job);
                    }
                })
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(Executor {
            sender: Mutex::new(Some(sender)),
            threads: Mutex::new(threads),
            discard,
            room: room.clone(),
        })
    }

    /// Hands due entries to the executor threads. After `close`, they are dropped (still pending;
    /// the shutdown drain does not see them, so they are claimed as abandoned here).
    pub(crate) fn submit(&self, due: impl Iterator<Item = ExecutorJob>) {
        let sender = self.sender.lock().clone();
        let thread = self.room.thread();
        for job in due {
            match &sender {
                Some(sender) => {
                    if let Err(err) = sender.send(job) {
                        thread.abandon(err.into_inner());
                    }
                }
                None => thread.abandon(job),
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
