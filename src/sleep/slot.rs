//! The state a [`Sleep`](super::Sleep) shares with its timer task, and the thread's spare slot.
//!
//! ## The slot
//!
//! A [`Slot`] is a lock over a phase (waiting, elapsed, dead) and the waker of the last poll. Two
//! parties hold it, each through an `Arc`: the sleep, and the closure of its timer task (a
//! [`Notify`]). Run, the closure marks the slot elapsed; dropped unrun (abandoned by a shutdown,
//! or cancelled by a [`reset`](super::Sleep::reset) that moves the sleep to a new slot), it marks
//! it dead. Either way it hands the stored waker over outside the lock (`timer/wakes.rs`). Dropped
//! unrun by the cancel of the sleep's own drop, it marks nothing and wakes nobody ("The drop").
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
//! Every drop offers its slot ([`Slot::recycle`]): a sleep whose task fired, or is firing, on
//! another thread keeps the slot as the spare too if that closure has already given up its
//! reference, and only frees its own reference while the closure still holds one. A
//! [`reset`](super::Sleep::reset) that moves the sleep to a new slot takes the spare for it, and
//! offers the old slot the same way. The spare is given its initial state (waiting, no waker) as it
//! is kept, so a stored waker is dropped then, within the drop. Loom model `sleep::spare_slot_after_fire`,
//! seeded fault `sleep_spare_slot_shared` (a slot kept while the closure still holds it).
//!
//! ## The drop
//!
//! A sleep's drop takes no lock of the slot when its cancel wins. Two flags beside the lock tell
//! it what it needs:
//!
//! * `settled`, set under the lock as the phase leaves waiting (the task ran, or its closure was
//!   dropped unrun): the entry is no longer pending, so the drop needs no cancel, which would
//!   take the bucket's lock only to find that out. Read `Relaxed`: a stale `false` costs a cancel
//!   that returns `false`, never a wrong outcome, and `true` is never wrong (it is set only once
//!   the phase left waiting, and cleared only by the reuse of an unshared slot).
//! * `gone`, set by the drop before its cancel: the closure, dropped unrun, then neither marks the
//!   slot dead nor wakes the stored waker. A cancel that wins drops the closure on the dropping
//!   thread, after that store, so the closure sees it: a cancelled sleep wakes nobody. A cancel
//!   that loses found the task fired, firing or abandoned by a shutdown on another thread, whose
//!   closure need not see the store; the drop then clears the waker under the lock, so the
//!   closure's `finish` either took it already (the task had fired or been abandoned at the
//!   moment of the drop: the one wake-up the `Sleep` docs allow) or finds none.
//!
//! Loom model
//! `sleep::spare_slot_after_fire` (seeded fault `sleep_drop_not_gone`: the drop does not mark the
//! slot gone, and the closure its cancel drops wakes the sleep's last waker).
//!
//! ## Wakers are dropped unlocked
//!
//! A waker the slot stops holding (replaced by a poll's, or taken out by a drop that lost its
//! cancel) is taken out under the lock and dropped after it is released. Its drop may be its
//! task's last reference, and run any code: the drop of a future that holds the sleep's timer
//! last, say, whose shutdown drops this very sleep's task, whose closure then takes this lock
//! (`finish`): under the lock, the thread would wait for itself.

use std::cell::Cell;
use std::task::Waker;

use crate::sync::{Arc, AtomicBool, Mutex, Ordering};
use crate::timer::groups::TickDue;
use crate::timer::unfired::TimerId;
use crate::timer::{LentHandle, LiveTimer, When};
use crate::ScheduleError;

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
    /// Set under the lock as the phase leaves `Waiting` (never unset but by the reuse of an
    /// unshared slot): the task's entry is no longer pending (module docs: "The drop").
    settled: AtomicBool,
    /// Set by the sleep's drop before its cancel: nobody polls the slot any more, and the task's
    /// closure, dropped unrun, wakes nobody.
    gone: AtomicBool,
}

crate::sync::thread_local! {
    /// This thread's spare slot: waiting, no waker, referenced by nothing else (module docs).
    static SPARE: Cell<Option<Arc<Slot>>> = const { Cell::new(None) };
}

impl Slot {
    /// Takes the registered waker out under the slot's lock, for the caller to drop or wake once
    /// the lock is released ("Wakers are dropped unlocked").
    pub(super) fn take_waker(&self) -> Option<Waker> {
        self.state.lock().waker.take()
    }

    fn with(phase: Phase, waker: Option<Waker>) -> Slot {
        let settled = AtomicBool::new(!matches!(phase, Phase::Waiting));
        Slot { state: Mutex::new(SlotState { phase, waker }), settled, gone: AtomicBool::new(false) }
    }

    /// A waiting slot with no waker: the thread's spare if it has one, else a new one.
    #[inline]
    pub(super) fn new() -> Arc<Slot> {
        // (`try_with` fails only while the thread's locals are being destroyed.)
        match SPARE.try_with(Cell::take) {
            Ok(Some(spare)) => spare,
            _ => Arc::new(Slot::with(Phase::Waiting, None)),
        }
    }

    /// A slot dead of `err`, keeping `waker` (the waker of the last poll, for a reset that
    /// revives the sleep to wake).
    pub(super) fn dead(err: ScheduleError, waker: Option<Waker>) -> Arc<Slot> {
        Arc::new(Slot::with(Phase::Dead(err), waker))
    }

    /// Keeps `slot` as this thread's spare if nothing else refers to it (module docs: "The spare
    /// slot"); otherwise drops this reference.
    #[inline]
    pub(super) fn recycle(mut slot: Arc<Slot>) {
        if fault!("sleep_spare_slot_shared") {
            // Seeded bug for the loom suite only (docs/loom.md): the slot is kept whether or not the
            // closure of its task still holds it, so a late fire completes the next sleep early.
            *slot.state.lock() = SlotState { phase: Phase::Waiting, waker: None };
            slot.settled.store(false, Ordering::Relaxed);
            slot.gone.store(false, Ordering::Relaxed);
        } else {
            let Some(unshared) = Arc::get_mut(&mut slot) else { return };
            // The old state's waker (if any) is dropped here, outside any lock.
            *unshared = Slot::with(Phase::Waiting, None);
        }
        // A spare already kept (a second sleep dropped before a new one took the first) is freed.
        let _ = SPARE.try_with(|spare| drop(spare.replace(Some(slot))));
    }

    /// `slot` (waiting, with no waker), its task scheduled `when` says, and the waker in `waker`
    /// moved into it (woken at once if the task already fired), with the clock reading the
    /// schedule used (nanoseconds, as `LiveTimer::try_schedule_reading`). The waker is taken only
    /// once the schedule succeeded: a refused task, dropped inside the schedule, wakes nobody, and
    /// the caller keeps the waker for the dead slot it makes instead.
    #[inline]
    pub(super) fn arm_in(
        slot: Arc<Slot>,
        timer: &LiveTimer,
        when: When,
        waker: &mut Option<Waker>,
    ) -> (u64, Result<(Arc<Slot>, LentHandle), ScheduleError>) {
        let notify = Notify(Some(Arc::clone(&slot)), timer.id());
        let (now, scheduled) = timer.try_schedule_reading(when, move || notify.fire());
        (now, Slot::armed(slot, scheduled, waker))
    }

    /// [`arm_in`](Slot::arm_in) on the clock reading `now` and the deadline `due` a lazy timeout's
    /// arming made (`group/member.rs`: the first timeout of its tick on its thread).
    #[inline]
    pub(super) fn arm_solo(
        slot: Arc<Slot>,
        timer: &LiveTimer,
        (now, due): (u64, TickDue),
        waker: &mut Option<Waker>,
    ) -> Result<(Arc<Slot>, LentHandle), ScheduleError> {
        let notify = Notify(Some(Arc::clone(&slot)), timer.id());
        Slot::armed(slot, timer.schedule_solo(now, due, move || notify.fire()), waker)
    }

    /// The end of an arming: the waker moved into `slot` once its task is `scheduled`. The task
    /// may have fired on another thread since (it is in a bucket from the insert on): the waker is
    /// stored only while the slot is still waiting, and woken here otherwise, so that a lazy
    /// timeout's arming poll, which returns pending, is woken exactly once either way (loom
    /// model `sleep::solo_arm_racing_fire`, seeded fault `solo_arm_ignores_fired`: the waker
    /// stored into a slot that already elapsed).
    #[inline]
    fn armed(
        slot: Arc<Slot>,
        scheduled: Result<LentHandle, ScheduleError>,
        waker: &mut Option<Waker>,
    ) -> Result<(Arc<Slot>, LentHandle), ScheduleError> {
        let handle = scheduled?;
        if let Some(waker) = waker.take() {
            let mut state = slot.state.lock();
            if fault!("solo_arm_ignores_fired") || matches!(state.phase, Phase::Waiting) {
                state.waker = Some(waker);
            } else {
                drop(state);
                waker.wake();
            }
        }
        Ok((slot, handle))
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
            self.settled.store(true, Ordering::Relaxed);
            state.waker.clone()
        };
        if let Some(waker) = waker {
            crate::timer::wakes::wake(waker);
        }
    }
}

/// What the timer task owns: completes the slot when run, kills it when dropped unrun (abandoned by
/// a shutdown) unless the sleep is gone (its drop cancelled the task). `None` once run. With its
/// timer's identity: run as an [`UnfiredTask`](crate::UnfiredTask) after a shutdown, it was not
/// fired by the timer (its deadline may be ahead) and does what its drop does.
struct Notify(Option<Arc<Slot>>, TimerId);

impl Notify {
    fn fire(mut self) {
        if self.1.runs_unfired_here() {
            return;
        }
        if let Some(slot) = self.0.take() {
            slot.finish(Phase::Elapsed);
        }
    }
}

impl Drop for Notify {
    fn drop(&mut self) {
        let Some(slot) = self.0.take() else { return };
        if fault!("sleep_drop_not_gone") || !slot.gone.load(Ordering::Relaxed) {
            slot.finish(Phase::Dead(ScheduleError::ShutDown));
        }
    }
}

impl Slot {
    /// What a sleep's drop does with its slot (module docs: "The drop"): cancels the task unless
    /// the slot is settled, marking the slot gone first, then keeps the slot as the spare if it can.
    #[inline]
    pub(super) fn drop_sleep(slot: Arc<Slot>, handle: LentHandle, timer: &LiveTimer) {
        if !slot.settled.load(Ordering::Relaxed) {
            if !fault!("sleep_drop_not_gone") {
                slot.gone.store(true, Ordering::Relaxed);
            }
            if !handle.cancel(timer) {
                // Lost to a firing or a shutdown on another thread, whose closure may not see
                // `gone`: take the waker out under the lock its `finish` takes (and drop it after).
                drop(slot.take_waker());
            }
        }
        Slot::recycle(slot);
    }
}
