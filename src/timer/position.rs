//! [`WheelPosition`]: where a pending task sits in the wheel, for diagnostics and teaching.

/// Where a pending task currently sits in the hierarchy: which level, which slot (bucket), and
/// when that bucket expires. Returned by [`TimerHandle::position`](crate::TimerHandle::position).
///
/// **Diagnostic only.** It is a snapshot read under the lock of the entry's shard (each thread
/// schedules into a shard of its own, with its own wheel); the entry moves whenever its bucket is
/// flushed (cascading to a finer level, or firing) or the task is re-armed, so by the time you look
/// at it, it may be out of date. Ticks count from the timer clock's origin: multiply by
/// [`Timer::tick`](crate::Timer::tick) for a time.
///
/// Level `k` has [`Timer::wheel_size`](crate::Timer::wheel_size) slots of `wheel_size^k` ticks
/// each; see `docs/design.md` ("How a task cascades") for a worked example, and the
/// `cascade_tour` example, which prints these positions as a clock advances.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct WheelPosition {
    /// The wheel level: 0 is the finest (one tick per slot); each level above is an overflow wheel
    /// `wheel_size` times coarser.
    pub level: usize,
    /// The slot (bucket) within that level, `0..wheel_size`.
    pub slot: usize,
    /// The tick at which the driver next visits that bucket: the start of the task's round in the
    /// slot (never after its deadline), or earlier when the bucket holds enough tasks to be
    /// cascaded ahead of its round in stages (see `docs/design.md`). When its stage is visited the
    /// task cascades to a finer level, or fires if its deadline has come. A task re-armed
    /// ([`TimerHandle::reset`](crate::TimerHandle::reset)) moves to the new deadline's bucket at
    /// once.
    pub expiration_tick: u64,
    /// The tick the task fires at: its deadline rounded up to a tick, or the tick under way for a
    /// deadline set already passed (after a later re-arm, later than `expiration_tick`'s bucket
    /// would suggest).
    pub deadline_tick: u64,
}
