//! The state a [`Sleep`](super::Sleep) shares with its timer task, and the thread's spare slot.
//!
//! ## The slot
//!
//! A [`Slot`] is a lock over a phase (waiting, elapsed, dead) and the waker of the last poll. Two
//! parties hold it, each through an `Arc`: the sleep, and the closure of its timer task (a
//! [`Notify`]). Run, the closure marks the slot elapsed; dropped unrun (cancelled by the sleep,
//! abandoned by a shutdown), it marks it dead. Either way it hands the stored waker over outside
//! the lock (`timer/wakes.rs`).
//!
//! ## The spare slot
//!
//! Most sleeps end by a drop whose cancel wins (a timeout whose future finished first): the
//! cancel drops the closure, and with it the closure's reference, on the dropping thread, before
//! it returns. The slot is then the sleep's alone, and instead of freeing it the drop keeps it as
//! its thread's **spare** (one per thread, in a thread-local), which the next sleep made on that
//! thread takes instead of allocating. A timeout that is pending once (armed, then dropped) so
//! costs no allocation.
//!
//! The rule that makes the reuse sound: a slot becomes the spare only when
//! [`Arc::get_mut`] says the sleep holds its **only** reference. `get_mut` reads the count with
//! `Acquire`, and every other holder's drop of its reference is a `Release` decrement, so whatever
//! the closure wrote to the slot (its last `finish`) happens before the reuse; and no closure of
//! an earlier task can reach the slot any more, so none can complete the sleep that reuses it.
//! A sleep whose task fired, or is firing, on another thread when it is dropped frees its slot as
//! usual (that thread may still hold it). The spare is given its initial state (waiting, no
//! waker) as it is kept. Loom model `sleep::spare_slot_after_fire`, seeded fault
//! `sleep_spare_slot_shared` (a slot kept while the closure still holds it).

use std::cell::Cell;
use std::task::Waker;
use std::time::Instant;

use crate::sync::{Arc, Mutex};
use crate::timer::{LiveTimer, When};
use crate::{ScheduleError, TimerHandle};

/// Where a sleep's slot is in its life.
#[derive(Debug)]
pub(super) enum Phase {
    /// The deadline has not passed.
    Waiting,
    /// The timer task ran.
    Elapsed,
    /// The sleep never completes: its task was refused, or abandoned by a shutdown.
    Dead(ScheduleError),
}

/// The state a future shares with its timer task.
#[derive(Debug)]
pub(super) struct SlotState {
    pub(super) phase: Phase,
    /// The waker of the last poll.
    pub(super) waker: Option<Waker>,
}

#[derive(Debug)]
pub(super) struct Slot {
    pub(super) state: Mutex<SlotState>,
}

crate::sync::thread_local! {
    /// This thread's spare slot: waiting, no waker, referenced by nothing else (module docs).
    static SPARE: Cell<Option<Arc<Slot>>> = const { Cell::new(None) };
}

impl Slot {
    fn waiting() -> Slot {
        Slot { state: Mutex::new(SlotState { phase: Phase::Waiting, waker: None }) }
    }

    /// A waiting slot with no waker: the thread's spare if it has one, else a new one.
    #[inline]
    pub(super) fn new() -> Arc<Slot> {
        // (`try_with` fails only while the thread's locals are being destroyed.)
        match SPARE.try_with(Cell::take) {
            Ok(Some(spare)) => spare,
            _ => Arc::new(Slot::waiting()),
        }
    }

    pub(super) fn dead(err: ScheduleError) -> Arc<Slot> {
        Arc::new(Slot { state: Mutex::new(SlotState { phase: Phase::Dead(err), waker: None }) })
    }

    /// Keeps `slot` as this thread's spare if nothing else refers to it (module docs: "The spare
    /// slot"); otherwise drops this reference.
    #[inline]
    pub(super) fn recycle(mut slot: Arc<Slot>) {
        let unshared = fault!("sleep_spare_slot_shared") || Arc::get_mut(&mut slot).is_some();
        if !unshared {
            return;
        }
        if fault!("sleep_spare_slot_shared") {
            // Seeded bug for the loom suite only (docs/loom.md): the slot is kept whether or not the
            // closure of its task still holds it, so a late fire completes the next sleep early.
            *slot.state.lock() = SlotState { phase: Phase::Waiting, waker: None };
        } else if let Some(unshared) = Arc::get_mut(&mut slot) {
            // The old state's waker (if any) is dropped here, outside any lock.
            *unshared = Slot::waiting();
        }
        // A spare already kept (a second sleep dropped before a new one took the first) is freed.
        let _ = SPARE.try_with(|spare| drop(spare.replace(Some(slot))));
    }

    /// `slot` (waiting, with no waker), its task scheduled `when` says, and `waker` stored in it
    /// (woken at once if the task already fired), with the instant of the clock reading the
    /// schedule used. The waker is stored only once the schedule succeeded, so a refused task,
    /// dropped inside the schedule, wakes nobody.
    #[inline]
    pub(super) fn arm_in(
        slot: Arc<Slot>,
        timer: &LiveTimer,
        when: When,
        waker: Option<Waker>,
    ) -> (Instant, Result<(Arc<Slot>, TimerHandle), ScheduleError>) {
        let notify = Notify(Arc::clone(&slot));
        let (now, scheduled) = timer.try_schedule_reading(when, move || notify.fire());
        let handle = match scheduled {
            Ok(handle) => handle,
            Err(refused) => return (now, Err(refused)),
        };
        if let Some(waker) = waker {
            let mut state = slot.state.lock();
            if let Phase::Waiting = state.phase {
                state.waker = Some(waker);
            } else {
                drop(state);
                waker.wake();
            }
        }
        (now, Ok((slot, handle)))
    }

    /// Leaves `Waiting` for `to` and hands the stored waker (which stays stored for a later reset)
    /// to the timer's batched wake (`timer/wakes.rs`), outside the lock; no-op if no longer waiting.
    fn finish(&self, to: Phase) {
        let waker = {
            let mut state = self.state.lock();
            if !matches!(state.phase, Phase::Waiting) {
                return;
            }
            state.phase = to;
            state.waker.clone()
        };
        if let Some(waker) = waker {
            crate::timer::wakes::wake(waker);
        }
    }
}

/// What the timer task owns: completes the slot when run, kills it when dropped unrun (abandoned by
/// a shutdown, or cancelled by the sleep itself).
struct Notify(Arc<Slot>);

impl Notify {
    fn fire(self) {
        self.0.finish(Phase::Elapsed);
    }
}

impl Drop for Notify {
    fn drop(&mut self) {
        // After `fire` the phase is `Elapsed` and this does nothing.
        self.0.finish(Phase::Dead(ScheduleError::ShutDown));
    }
}
