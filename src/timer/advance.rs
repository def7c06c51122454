//! Advancing the clock, and the shutdown drain.
//!
//! An advance (serialised by `advance_lock`) pops every due bucket in expiration order; for each,
//! it moves the cursor to its expiration (never back) and visits it as of that tick: it takes out
//! what is due there (a level-0 bucket's entries, or the stages of a coarser bucket that may
//! cascade now, see `wheel/bucket/`) and queues it again if the visit says so. A bucket queued
//! during the advance for a tick the cursor has passed is visited as of its own tick, so that it
//! does not fire a later tick's entries before another bucket's earlier tick. The entries due at
//! the bucket's tick go straight to the batch to fire (`fire.rs`), and every other entry taken is
//! re-added relative to the cursor: it lands in a finer level (cascade), or back in a level-0
//! bucket for its own tick. Fired tasks of one bucket run after that bucket's visit, with no lock
//! held but `advance_lock`. A level-0 bucket gives up its tick a quarter at a time, queued again at
//! the cursor between two, and only a level-0 visit fires: a coarser bucket's entries due at the
//! cursor are re-added into the quarters of the cursor's level-0 bucket, visited after them
//! (`wheel/place.rs`, "Level 0 by quarters"). Entries found due but stamped after the advance
//! began are set aside and re-added once its round is over, for the next advance; so are the due
//! closures of the advance a drive future's sleep waker makes, which fires only the tasks that run
//! no user code (`Shared::try_advance_wakes`), and carries to the next advance the limit by which a
//! batch took closures of the next tick (`drive_waker.rs`).
//!
//! ## Passed deadlines mid-tick
//!
//! A deadline already passed when it is set within the tick under way, `(f, f + 1]`, is filed at
//! tick `f`, which is due, so that the next advance fires it mid-tick (`deadline.rs`, `P`). The
//! entries of tick `f + 1` were filed by their deadlines when those lay ahead, and the tick's
//! visit fires them at its end: equal deadlines scheduled earlier, and earlier deadlines, would
//! run after the passed one. So a batch that holds such deadlines (sorted, they end their tick's
//! run; the common batch is one tick, and its last entry says) also takes out, before it fires,
//! every entry of tick `f + 1` whose exact deadline is at or before the latest of them and whose
//! stamp is of this advance's round (`TimingWheel::take_due_by`: the level-0 bucket's quarters up
//! to that deadline's, and at each coarser level the stage whose range holds `f + 1`, where an
//! entry of a round starting then, or of a big stage not yet all cascaded, still waits). They are
//! due (their deadlines have passed), marked due under the slot lock as a visit marks them (a
//! reset leaves them alone; a cancel claims against the fire as for any batch: loom models
//! `passed_mid_tick::*`), and the batch is sorted again by the instants, equal ones by stamp. The
//! rest of tick `f + 1` fires at its end. The cost falls on such batches only: a look into the
//! lists named (scanned, then indexed by deadline once takes keep coming: `wheel/slots/due_by.rs`),
//! a slot lock per entry read, and a comparison sort of the batch; a batch without a passed
//! deadline pays one look at its last entry. A far word (`deadline.rs`) has no `P`: a deadline
//! passed mid-tick there reads as the tick's start and takes nothing, so such deadlines keep firing
//! before the tick's own.
//!
//! The drain, holding `advance_lock` (or inside a task of the advance), closes the levels not yet
//! created, flushes every bucket and claims every pending entry as abandoned.

use super::counters::Stripe;
use super::{fire, Shared, Store};
use crate::clock::nanos_to_duration;
use crate::deadline;
use crate::deadline::Deadline;
use crate::delay_queue::Timeline;
use crate::entry::{self, EntryId, Freed, InlineTask, Return};
use crate::sync::{Arc, MutexGuard, Ordering};
use crate::wheel::trace;
use crate::wheel::{Handoff, Popped, Readded, TimerTaskList};
use crate::UnfiredTask;

use super::advancing::Advancing;

impl Shared {
    /// The tick of [`Timer::next_work`](super::Timer::next_work): the earliest queued bucket's,
    /// else the wheel's cursor; the cursor while an advance holds the advance lock.
    pub(crate) fn next_work_tick(&self) -> u64 {
        let head = || self.queue().head().unwrap_or_else(|| self.current_tick());
        if fault!("next_wakeup_ignores_advance") {
            return head();
        }
        match self.advance_lock.try_lock() {
            Some(_serial) => head(),
            None => self.current_tick(),
        }
    }

    /// The non-blocking advance: flush every bucket due at the clock's current tick.
    pub(crate) fn advance(&self) -> bool {
        if self.advancing_here() {
            return false;
        }
        let flushed = self.advance_serial(self.advance_lock.lock(), Fires::All);
        self.released_advance_lock();
        flushed
    }

    /// [`advance`](Self::advance) unless another advance holds the advance lock (then `None` at
    /// once), firing only the tasks that run no user code: for the waker of a drive future's sleep
    /// (`driver/drive.rs`), which runs inside the runtime's timer and wakes the drive future after
    /// this. A closure due meanwhile is set aside like an entry stamped after the advance began
    /// (re-added once the round is over; one taken beside a deadline passed mid-tick is taken
    /// again by the next advance: `drive_waker.rs`) and runs in the drive future's poll: user
    /// code there may block or call into the runtime, which inside its timer would stall the
    /// runtime's I/O, deadlock its reactor (smol's) or abort the process (tokio's
    /// `block_in_place`). A sleep's task only hands its waker over, and a value goes to its
    /// queue's ready list: both fire here.
    #[cfg(feature = "async")]
    pub(crate) fn try_advance_wakes(&self) -> Option<bool> {
        if self.advancing_here() {
            return None;
        }
        let serial = self.advance_lock.try_lock()?;
        let flushed = self.advance_serial(serial, Fires::Wakes);
        self.released_advance_lock();
        Some(flushed)
    }

    /// [`advance`](Self::advance) holding `advance_lock`.
    fn advance_serial(&self, mut serial: MutexGuard<'_, Scratch>, fires: Fires) -> bool {
        #[cfg(not(feature = "async"))]
        let Fires::All = fires;
        if self.is_shut_down() {
            return false;
        }
        let _advancing = Advancing::enter(&self.advancer);
        let now_tick = self.time.now_tick();
        let wheel = &self.store.wheel;
        let mut flushed = false;
        let Scratch {
            cascade,
            due,
            late,
            set_aside,
            spare,
            freed,
            #[cfg(feature = "async")]
            carried,
        } = &mut *serial;
        #[cfg(feature = "async")]
        let kept_before = carried.as_ref().map(|kept| kept.limit());
        // One round of the queue: what is scheduled meanwhile and already due waits for the next
        // advance (`delay_queue/`, "Rounds"), so an advance does bounded work.
        let round = self.queue.round();
        // So is such work in a bucket this round visits anyway (it held a later round, say):
        // entries stamped after this are left for the next advance (`entry/stamps.rs`, "Rounds").
        let stamps = self.store.arena.begin_stamp_round();
        while let Some((expiration, bucket)) = self.queue.poll_due(now_tick, round) {
            let cursor = self.current_tick.load(Ordering::Relaxed).max(expiration);
            self.current_tick.store(cursor, Ordering::Release);
            // The tasks due at one tick fire as one batch, so that equal deadlines fire in stamp
            // order (`deadline.rs`, "Ties"): the coarser buckets whose round starts at this tick
            // may hold some (filed there while the tick was past level 0's window), so they are
            // visited first, into the same batch (their own queue entries are then stale).
            // A bucket queued for a tick the cursor has passed (a schedule at an instant already
            // passed, a re-add) is visited as of its own tick, not the cursor, so that what it
            // holds for a later tick waits for that tick's turn (re-queued there) and ticks fire
            // in order across buckets.
            if bucket.level() == 0 {
                for coarse in wheel.round_starts(expiration) {
                    let due_at = coarse.expiration();
                    if due_at <= expiration {
                        let out = Handoff { cascade, due, late, stamps };
                        flushed |= self.visit(coarse, due_at, cursor, out, set_aside);
                    }
                }
            }
            flushed |=
                self.visit(&bucket, expiration, cursor, Handoff { cascade, due, late, stamps }, set_aside);
            if !due.is_empty() {
                self.sort_batch(due, spare, stamps);
                // After the sort, which may add entries of the tick under way.
                #[cfg(feature = "async")]
                if fires == Fires::Wakes && self.executor.is_none() {
                    self.set_aside_user_code((due, spare), (&bucket, cursor), set_aside, carried);
                }
                if !due.is_empty() {
                    self.fire(due, freed);
                }
            }
        }
        #[cfg(feature = "async")]
        {
            // Whether this advance kept a new limit (seeded fault `drive_limit_queued_once`).
            let fresh = carried.as_ref().map(|kept| kept.limit()) != kept_before;
            flushed |= self.end_carried((fires, fresh), carried, (due, spare, freed), stamps);
        }
        self.readd_late(set_aside);
        self.queue.end_round();
        serial.trim();
        if now_tick > self.current_tick.load(Ordering::Relaxed) {
            self.current_tick.store(now_tick, Ordering::Release);
        }
        flushed
    }

    /// Puts the batch `due` in deadline order, equal deadlines in stamp order (`deadline.rs`,
    /// "Ties"), with the entries of the tick under way that fire beside a deadline passed within
    /// it added where they belong (see the module docs, "Passed deadlines mid-tick").
    pub(super) fn sort_batch(
        &self,
        due: &mut Vec<fire::Stamped>,
        spare: &mut Vec<fire::Stamped>,
        stamps: u64,
    ) {
        deadline::sort_batch(due, spare, |&(_, stamp, _)| stamp);
        let batch = due.len();
        let (first, last) = (due[0].1, due[batch - 1].1);
        let Store { arena, wheel, .. } = &self.store;
        if first.tick() == last.tick() {
            // One tick, the common case: its passed deadlines, if any, sort last.
            if let Some(limit) = last.in_own_tick() {
                wheel.take_due_by(arena, (limit, stamps), due);
            }
        } else {
            // A bucket holding overdue ticks too: the latest passed deadline of each.
            for i in 0..batch {
                let ends_tick = i + 1 == batch || due[i + 1].1.tick() != due[i].1.tick();
                if let Some(limit) = due[i].1.in_own_tick().filter(|_| ends_tick) {
                    wheel.take_due_by(arena, (limit, stamps), due);
                }
            }
        }
        if due.len() > batch {
            due.sort_by_key(|&((_, stamp, _), deadline)| (deadline.instant_order(), stamp));
        }
        // Deadlines before the clock's origin share its word: in the order of their instants.
        self.store.before_origin.order_batch(self.time.ticks.origin(), due, |&(_, stamp, _)| stamp);
    }

    /// Visits `bucket`, popped at (or found due by) `expiration`, as of that tick, with the cursor
    /// at `cursor` (at or after it; what is re-added is placed relative to the cursor):
    /// queues it again if the visit says so, re-adds what it cascades, and leaves the entries due
    /// by `expiration` in `out.due`, to fire, and those found due but stamped after the advance
    /// began in `set_aside`, with `bucket`. `false` for a stale queue entry (nothing done).
    fn visit(
        &self,
        bucket: &Arc<TimerTaskList>,
        expiration: u64,
        cursor: u64,
        out: Handoff<'_>,
        set_aside: &mut Vec<Late>,
    ) -> bool {
        let arena = &self.store.arena;
        let Handoff { cascade, due, late, stamps } = out;
        let due_before = due.len();
        match bucket.visit_into(arena, expiration, Handoff { cascade, due, late, stamps }) {
            Popped::Stale => return false,
            Popped::Visited { requeue: Some(next) } => self.queue.offer_within(next, Arc::clone(bucket)),
            Popped::Visited { requeue: None } => {}
        }
        let out = trace::Flushed { due: due.len() - due_before, moved: cascade.len(), late: late.len() };
        set_aside.extend(late.drain(..).map(|held| (held, Arc::clone(bucket))));
        // The entries of a level-0 bucket due at the cursor went straight to `due`; the rest
        // cascade, by the deadline in their slots (a reset may have moved one in transit:
        // `entry/`), queued in this round.
        for held in cascade.drain(..) {
            self.readd(bucket, held, cursor, |expiration, bucket| {
                self.queue.offer_within(expiration, bucket)
            });
        }
        trace::flushed((bucket.level(), bucket.slot()), expiration, cursor, out);
        true
    }

    /// Re-adds `held`, taken out of `from` with the cursor at `cursor`; `queue` queues the bucket it
    /// lands in if that lowers the bucket's expiration.
    fn readd(
        &self,
        from: &Arc<TimerTaskList>,
        held: (EntryId, Deadline),
        cursor: u64,
        queue: impl FnMut(u64, Arc<TimerTaskList>),
    ) {
        let Store { arena, wheel, .. } = &self.store;
        let readded = match wheel.readd(arena, held, cursor, None, queue) {
            // A detached drain (`drain_detached`) closed the level it goes to meanwhile.
            Readded::ShutDown => wheel.park(from, arena, held),
            readded => readded,
        };
        match readded {
            Readded::Inserted => {}
            // Cancelled in transit: the cancel left the slot to us, its holder.
            Readded::NotPending => entry::discard(arena, held.0),
            Readded::ShutDown => unreachable!("a park ignores the shutdown flag"),
        }
    }

    /// Re-adds the entries found due but stamped after the advance began, once its round is over:
    /// scheduled while it runs, they are queued for the next advance.
    fn readd_late(&self, set_aside: &mut Vec<Late>) {
        let cursor = self.current_tick.load(Ordering::Relaxed);
        for (held, from) in set_aside.drain(..) {
            self.readd(&from, held, cursor, |expiration, bucket| self.queue.offer_next(expiration, bucket));
        }
    }

    /// Drains the wheel once no advance is in progress.
    pub(super) fn drain_locked(&self, report: bool) -> Vec<UnfiredTask> {
        let _serial = self.advance_lock.lock();
        self.drain(report)
    }

    /// Claims every pending entry in every bucket as abandoned. With `report`, returns their tasks
    /// in deadline order; otherwise drops them.
    pub(super) fn drain(&self, report: bool) -> Vec<UnfiredTask> {
        let mut unfired = Vec::new();
        self.drain_buckets(report, &mut unfired);
        self.drain_refused_resets(report, &mut unfired);
        self.unfired(unfired)
    }

    /// The drain when the advance in progress cannot be waited for (called from inside one of its
    /// tasks, from a timer's thread, or by a drop or a timed shutdown that gave up waiting or does
    /// not join the executor threads): the bucket drain, then a scan of the arena that claims
    /// every entry still pending as abandoned,
    /// wherever it is held (the rest of the batch being fired, a visit's transit, an executor's
    /// channel, a bucket a visit re-added to after its flush). The holders only release what they
    /// then find claimed (`entry/`), except a bucket, which no visit reaches any more: the scan
    /// takes such an entry out of its lane itself, as a cancel does. So each entry is fired by the
    /// advance or claimed here, exactly once, and none is left out of the accounting. A task the
    /// advance claimed before the scan reached it may still be running, or about to run, when this
    /// returns.
    ///
    /// No entry becomes pending behind the scan: schedules and resets read `shut_down` (set
    /// before this runs) under the lane lock they insert with, and a visit's re-add of an entry the
    /// scan claimed is refused. (loom model `shutdown::detached_drain_racing_a_cascade`.)
    pub(super) fn drain_detached(&self, report: bool) -> Vec<UnfiredTask> {
        let mut unfired = Vec::new();
        self.drain_buckets(report, &mut unfired);
        let stripe = self.counters.local();
        let arena = &self.store.arena;
        let mut values = 0;
        let claim = |index| {
            entry::abandon_held_elsewhere(arena, index).map(|(task, at, in_bucket)| ((task, at), in_bucket))
        };
        // (The seeded fault `drain_scan_leaves_bucketed` leaves a claimed entry in its bucket: its
        // slot is never released.)
        let leave = !fault!("drain_scan_leaves_bucketed");
        super::cancel::claim_each_held(&self.store, claim, leave, |(task, (deadline, stamp))| {
            super::fire::count_abandoned(&task, stripe);
            values += u64::from(task.is_value());
            hand_over(task, (deadline, stamp), report, stripe, &mut unfired);
        });
        self.count_abandoned_values(values);
        self.drain_refused_resets(report, &mut unfired);
        self.unfired(unfired)
    }

    fn drain_buckets(&self, report: bool, unfired: &mut Vec<Unfired>) {
        let Store { arena, wheel, .. } = &self.store;
        for bucket in wheel.close_levels() {
            self.abandon_held(bucket.flush(arena).into_iter().map(|(entry, _)| entry), report, unfired);
        }
    }

    /// Claims each held entry of `entries` as abandoned: with `report`, its task and deadline go
    /// to `unfired`; otherwise the task is dropped (a panic of its drop caught and counted). The
    /// values among them are counted in `abandoned_values`.
    fn abandon_held(
        &self,
        entries: impl IntoIterator<Item = EntryId>,
        report: bool,
        unfired: &mut Vec<Unfired>,
    ) {
        let stripe = self.counters.local();
        let arena = &self.store.arena;
        let mut values = 0;
        for entry in entries {
            if !report {
                values +=
                    u64::from(fire::abandon(arena, (entry, Return::Now), stripe) == fire::Abandoned::Value);
            } else if let Some((task, deadline, stamp)) = fire::abandon_take(arena, entry, stripe) {
                values += u64::from(task.is_value());
                hand_over(task, (deadline, stamp), true, stripe, unfired);
            }
        }
        self.count_abandoned_values(values);
    }

    /// Counts `values` value entries a drain claimed, for the closing of the delay queue to count
    /// out of its `len` (`shutdown.rs`, `close_values`).
    fn count_abandoned_values(&self, values: u64) {
        // Seeded fault `shutdown_leaves_values_counted` (docs/loom.md): the values are not counted,
        // so the queue's `len` keeps them after the shutdown.
        if !fault!("shutdown_leaves_values_counted") {
            self.abandoned_values.fetch_add(values, Ordering::Relaxed);
        }
    }

    /// Claims the entries resets took out of their buckets and could not re-add, once no reset is
    /// in flight: after the flush (and the scan), so that none is missed (`reset.rs`, "Held
    /// entries and the drain"). Seeded fault `drain_skips_held_resets`: the drain does not wait.
    fn drain_refused_resets(&self, report: bool, unfired: &mut Vec<Unfired>) {
        if fault!("drain_skips_held_resets") {
            return;
        }
        self.abandon_held(self.store.resets.settle(), report, unfired);
    }

    fn unfired(&self, mut unfired: Vec<Unfired>) -> Vec<UnfiredTask> {
        // In the order they would have fired in: by the instants (a deadline passed within the
        // tick under way is filed a tick early, its word below the next tick's: `deadline.rs`,
        // `P`), equal ones by stamp, those before the clock's origin by their recorded instants
        // (a record a shrink racing the shutdown pruned reads as the origin's). Each is reported at
        // its deadline (`TickLength::deadline_nanos`).
        unfired.sort_by_key(|&((stamp, _), deadline)| (deadline.instant_order(), stamp));
        self.store.before_origin.order_batch(self.time.ticks.origin(), &mut unfired, |&(stamp, _)| stamp);
        let at = |deadline: Deadline| nanos_to_duration(self.time.ticks.deadline_nanos(deadline));
        let timer = self.timer_id();
        let mut unfired: Vec<UnfiredTask> = unfired
            .into_iter()
            .map(|((_, task), deadline)| UnfiredTask { deadline: at(deadline), task, timer })
            .collect();
        unfired.sort_by_key(|task| task.deadline);
        unfired
    }
}

/// What an advance fires: every due task, or only those that run no user code (the rest are set
/// aside for the next advance: [`Shared::try_advance_wakes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fires {
    All,
    #[cfg(feature = "async")]
    Wakes,
}

/// A task a drain claimed, for the shutdown to hand back: its stamp (the
/// scheduling order) and closure, and its deadline.
type Unfired = ((u64, entry::Task), Deadline);

/// An entry a visit found due but stamped after the advance began, with the bucket it left.
pub(super) type Late = ((EntryId, Deadline), Arc<TimerTaskList>);

/// Vectors reused by every advance, kept under `advance_lock`. A fresh vector per visit would be
/// one large allocation per tick, and glibc consolidates every freed small chunk (the fired
/// entries) on each large allocation: `malloc_consolidate` takes about 9% of the driver's time in
/// SPEC W4 that way.
#[derive(Default)]
pub(super) struct Scratch {
    /// Entries a bucket visit took out to cascade, with their deadlines, to re-add (held: `entry/`).
    cascade: Vec<(EntryId, Deadline)>,
    /// Entries a visit found due but stamped after the advance began (`Handoff::late`)...
    late: Vec<(EntryId, Deadline)>,
    /// ... set aside with the bucket they left, to re-add after the round.
    set_aside: Vec<Late>,
    /// Entries found due, with their stamps and deadlines, to fire in deadline order (held).
    due: Vec<fire::Stamped>,
    /// The buffer `deadline::sort_batch` sorts `due` through (it swaps the two).
    spare: Vec<fire::Stamped>,
    /// The slab blocks of the closures a batch ran, given back after it (`entry/task_slab.rs`).
    freed: Freed,
    /// The limit a sleep waker's advance carries to the next advance (`drive_waker.rs`).
    #[cfg(feature = "async")]
    carried: Option<super::drive_waker::Carried>,
}

impl Scratch {
    /// Entries kept for reuse; beyond this (after a burst) the buffers are given back.
    const KEEP: usize = 1 << 14;

    fn trim(&mut self) {
        // Their pages go back to the kernel at once, whatever the allocator keeps.
        fn keep<T: Copy>(buffer: &mut Vec<T>) {
            entry::shrink_buffer(buffer, Scratch::KEEP);
        }
        keep(&mut self.cascade);
        keep(&mut self.late);
        if self.set_aside.capacity() > Scratch::KEEP {
            self.set_aside = Vec::new();
        }
        keep(&mut self.due);
        keep(&mut self.spare);
    }
}

/// A task a drain claimed: into the list a shutdown returns (`report`), or dropped, a panic of
/// its drop counted. A tick group's task (`sleep/group/`, not counted: `InlineTask::is_counted`)
/// is no task of the user's and is always dropped here, which abandons its members there and
/// then: the timeouts are counted out of `len()` and woken by the time the shutdown returns, as
/// sleeps are, and the list holds only tasks someone scheduled.
fn hand_over<C>(
    task: InlineTask,
    (deadline, stamp): (Deadline, u64),
    report: bool,
    stripe: &Stripe<C>,
    unfired: &mut Vec<Unfired>,
) {
    if report && task.is_counted() {
        unfired.push(((stamp, task.into_box()), deadline));
    } else if crate::unwind::drop_caught(task) {
        stripe.panicked(1);
    }
}
