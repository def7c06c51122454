//! `Deadline`: a task's deadline as the wheel keeps it: its tick, and its rank within that tick.
//!
//! The wheel places and fires by tick: a task is due at the first tick boundary at or after its
//! deadline (`clock/`), so the tasks whose deadlines fall in one tick interval become a batch,
//! fired when the driver reaches the boundary (one batch per bucket visited: normally the tick's
//! level-0 bucket; see "Batches" below). The driver spends a few hundred nanoseconds
//! per task, so a batch of a thousand takes a few hundred microseconds, and the order matters: the
//! rounding has already made a task whose deadline was just after the previous boundary almost a
//! whole tick late, while one whose deadline is the boundary itself is on time. Fired in list order
//! (insertion order, or whatever order cascades left), any task may also wait for the whole batch;
//! fired in deadline order, that wait falls on the tasks the rounding made least late, and the
//! lateness a caller sees (deadline to run) is bounded by about one tick instead of one tick plus
//! the batch. So every entry keeps its deadline, in the same word as its tick, in one of two
//! encodings:
//!
//! ```text
//!  63  62     58 57                                            s+1   s  s-1                0
//! [ 0 | s - 10 | tick: the first tick boundary at or after the deadline | P | fraction (s bits) ]  exact
//!  63 62                                                              8 7                     0
//! [ 1 | tick                                                            | rank (8)              ]  far
//! ```
//!
//! An **exact** word keeps where the deadline falls in the interval `(tick - 1, tick]` as a
//! fraction of the tick in `s` bits, `s` the bits a tick's nanoseconds need (at least 10: ticks
//! are at least 1 µs). The fraction scales the nanoseconds by about `2^s / tick_nanos` (at least
//! 1), so it gives the nanoseconds back exactly ([`Fractions`]): a task's deadline reads back as
//! the instant it was given, to the nanosecond (`TimerHandle::deadline`). A tick must leave room
//! for the fraction and `P` in 58 bits, which holds up to 2^56 nanoseconds of the clock (2.3
//! years) whatever the tick; later deadlines, and those of ticks over 2^41 ns (36 minutes), are
//! **far** words, which keep their 256th of the tick (the **rank**) and read back rounded up to
//! their tick. Exact words are below every far one and their ticks below every far tick, so within
//! one timer, whose exact words all have the same `s`, comparing two words compares deadlines (but
//! for `P`, below).
//!
//! **Passed within the tick under way** (`P`). A deadline already passed when it is set must fire
//! by the next advance, also mid-tick (`clock/`): one in the interval `(f, now]`, `f` the last
//! boundary, is filed at tick `f`, which is due, although its own tick is `f + 1`. Its word has
//! tick `f`, `P` set and the fraction of its place in `(f, f + 1]`: it reads back exactly, sorts
//! after every deadline of tick `f` itself, among others like it by deadline, and before every
//! word of tick `f + 1`, also those of earlier deadlines. Its rank is the last (255), so it is
//! placed and counted with the tick's last 256th. The entries of tick `f + 1` due by then fire in
//! its batch ([`Deadline::in_own_tick`] is its word as one of `f + 1`'s, to compare with theirs),
//! which is then sorted by the instants ([`Deadline::instant_order`]; so is what the shutdown
//! hands back). A far word has no `P`: such a deadline is filed at `f` on the boundary rank, fires
//! in scheduling order among those like it, and reads back as `f`, the start of the tick under
//! way, before every deadline of `f + 1`; none of those fires beside it.
//!
//! Either way, the **rank** says in which 256th of the interval (in tick lengths) the deadline
//! falls: 0 just after the previous boundary, 255 on the boundary itself (an exact word's top 8
//! fraction bits). The driver sorts each batch it fires by its place in the tick (the rank, or
//! finer: more of an exact word's fraction, [`sort_batch`]), then each place by the words, so a
//! batch comes out in deadline order; everything else (placement, cascades, expirations) uses
//! the tick alone.
//!
//! **Batches.** The driver fires the due entries of each tick as one batch: those of the tick's
//! level-0 bucket and of the coarser buckets whose round starts at that tick (entries placed there
//! because the tick lay past level 0's window when they were scheduled), flushed in one round of
//! the queue and merged across the shards (`shard/core.rs`, "The batch"). Equal deadlines are put in the order they were
//! scheduled by the entries' stamps ([`sort_batch`], "Ties").
//!
//! The price is range: ticks go up to [`MAX_DEADLINE_TICK`] = 2^55 - 1 instead of 2^64 - 2, which is
//! still 1142 years with the smallest tick (1 µs). The clock's reading ends sooner, at `u64::MAX`
//! nanoseconds (584 years): a deadline tick is also at most the last tick that begins by then
//! (`clock/`), since a later one would never be reached. Beyond either bound `try_schedule`
//! refuses with `ScheduleError::DelayTooLong`.

/// Bits of a far deadline word that hold the rank, and of an exact word's fraction that give it.
const RANK_BITS: u32 = 8;

/// The bit that marks a far word (module docs).
const FAR: u64 = 1 << 63;

/// Where an exact word keeps its `s - SPLIT_MIN` (5 bits), above its tick and fraction.
const SPLIT_AT: u32 = 58;

/// The tick and fraction of an exact word.
const PAYLOAD: u64 = (1 << SPLIT_AT) - 1;

/// The fewest fraction bits: ticks are at least 1 µs, whose nanoseconds need 10.
const SPLIT_MIN: u32 = 10;

/// The most fraction bits an exact word may have (5 bits hold `s - SPLIT_MIN`).
const SPLIT_MAX: u32 = SPLIT_MIN + 31;

/// Deadline ticks are at most this (a far word holds the tick between its mark and its rank);
/// bucket expirations use `u64::MAX` for "none", which is thus never a deadline tick either.
pub(crate) const MAX_DEADLINE_TICK: u64 = (u64::MAX >> 1) >> RANK_BITS;

/// A task's deadline: its tick and where it falls within the tick (see the module docs). Within
/// one timer, ordered as the deadlines are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Deadline(u64);

impl Deadline {
    /// The rank of a deadline that is a tick boundary (the last moment of its interval).
    pub(crate) const ON_BOUNDARY: u8 = u8::MAX;

    /// A far word (module docs): `None` if `tick` is beyond [`MAX_DEADLINE_TICK`]. A timer's
    /// clock makes exact words where they fit ([`Fractions::deadline`]); unit tests, which know
    /// only ticks and ranks, make far ones.
    #[inline]
    pub(crate) fn new(tick: u64, rank: u8) -> Option<Deadline> {
        (tick <= MAX_DEADLINE_TICK).then_some(Deadline(FAR | tick << RANK_BITS | u64::from(rank)))
    }

    /// A deadline on the boundary of `tick` (unit tests, and callers that only know a tick).
    ///
    /// # Panics
    ///
    /// If `tick` is beyond [`MAX_DEADLINE_TICK`].
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn at_tick(tick: u64) -> Deadline {
        Deadline::new(tick, Deadline::ON_BOUNDARY).expect("a deadline tick within the range")
    }

    /// The first tick boundary at or after the deadline: where the wheel files the task (the one
    /// before it for a deadline passed within the tick under way: module docs, `P`).
    #[inline]
    pub(crate) fn tick(self) -> u64 {
        match self.split() {
            Some(split) => (self.0 & PAYLOAD) >> (split + 1),
            None => (self.0 & !FAR) >> RANK_BITS,
        }
    }

    /// Whether the word is an exact one filed at the tick before its own, set already passed
    /// within the tick under way (module docs, `P`).
    #[inline]
    pub(crate) fn passed_mid_tick(self) -> bool {
        self.split().is_some_and(|split| self.0 >> split & 1 == 1)
    }

    /// The first tick boundary at or after the deadline itself: its [`tick`](Deadline::tick), or
    /// the next one for a deadline passed within the tick under way, which is filed a tick early
    /// (module docs, `P`). What firing lateness counts from (`timer/stats.rs`).
    #[inline]
    pub(crate) fn rounded_up_tick(self) -> u64 {
        self.tick() + u64::from(self.passed_mid_tick())
    }

    /// A deadline passed within the tick under way as the word of its own tick, `tick + 1`
    /// (module docs, `P`): what the entries of that tick compare with to fire beside it
    /// (`shard/core.rs`, "Passed deadlines mid-tick"). `None` for any other word, and where
    /// `tick + 1` has no exact word.
    #[inline]
    pub(crate) fn in_own_tick(self) -> Option<Deadline> {
        let split = self.split().filter(|_| self.passed_mid_tick())?;
        // Adding the `P` bit to itself clears it and carries into the tick.
        let word = self.0 + (1 << split);
        (word >> SPLIT_AT == self.0 >> SPLIT_AT).then_some(Deadline(word))
    }

    /// The order of deadlines across two ticks when a batch holds both: the word, but a deadline
    /// passed within the tick under way counts as of its own tick ([`in_own_tick`]), so that it
    /// sorts among that tick's by its instant (a far word by itself).
    ///
    /// [`in_own_tick`]: Deadline::in_own_tick
    #[inline]
    pub(crate) fn instant_order(self) -> u64 {
        match self.split() {
            // Adding the `P` bit to itself: the carry lands in the tick (or, at the last exact
            // tick, just above every exact word of this `s`, still below every far word).
            Some(split) => self.0 + (self.0 & (1 << split)),
            None => self.0,
        }
    }

    /// An exact word's fraction bits `s`; `None` for a far word.
    #[inline]
    fn split(self) -> Option<u32> {
        (self.0 & FAR == 0).then(|| (self.0 >> SPLIT_AT) as u32 + SPLIT_MIN)
    }

    /// An exact word's fraction of its tick interval; `None` for a far word.
    #[inline]
    pub(crate) fn fraction(self) -> Option<u64> {
        self.split().map(|split| self.0 & ((1 << split) - 1))
    }

    /// Which 256th of its tick interval the deadline falls in (0 = just after the previous
    /// boundary); the last for a deadline passed within the tick under way (module docs, `P`).
    /// The tests' reading: the sort reads finer places (`sort_bucket`).
    #[cfg(test)]
    pub(crate) fn rank(self) -> u8 {
        match self.split() {
            // The fraction's top 8 bits, all set when `P` (the bit above them) is.
            Some(split) => {
                let rank = (self.0 >> (split - RANK_BITS)) as u8;
                let passed = (self.0 >> split) as u8 & 1;
                rank | passed.wrapping_neg()
            }
            None => self.0 as u8,
        }
    }
}

/// Converts a position within a tick into a rank, for one tick length.
///
/// `below` is how far the deadline lies below the first nanosecond of the *next* interval minus
/// one, i.e. `deadline - (tick - 1) * tick_nanos - 1`, in `0..tick_nanos`. The rank is
/// `below * 256 / tick_nanos`, computed as a multiply-high by a precomputed reciprocal (this runs on
/// every schedule, and a division by a run-time tick length is the slowest instruction there is).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ranker {
    /// `floor(2^(64 + RANK_BITS) / tick_nanos)`; below 2^63 for ticks of at least 1 µs.
    reciprocal: u64,
}

impl Ranker {
    /// The ranker for ticks of `tick_nanos` (at least 1000, as `TickLength` requires).
    pub(crate) fn new(tick_nanos: u64) -> Ranker {
        debug_assert!(tick_nanos >= 1_000);
        Ranker { reciprocal: ((1u128 << (64 + RANK_BITS)) / u128::from(tick_nanos)) as u64 }
    }

    /// The rank of a deadline `below` nanoseconds into its interval (see [`Ranker`]): monotonic in
    /// `below`, 0 for 0, and at most 255 for any `below < tick_nanos`, since
    /// `below * reciprocal < tick_nanos * 2^(64 + RANK_BITS) / tick_nanos`.
    #[inline]
    pub(crate) fn rank(self, below: u64) -> u8 {
        ((u128::from(below) * u128::from(self.reciprocal)) >> 64) as u8
    }
}

/// Converts a position within a tick into an exact word's fraction and back, for one tick length
/// (module docs). `below` is as for [`Ranker`]; the fraction is `floor(below * k)` with
/// `k = reciprocal / 2^64`, a little under `2^s / tick_nanos` and at least 1, so that distinct
/// positions get distinct fractions and `ceil(fraction / k)` is `below` again (`below` lies in
/// `[fraction / k, (fraction + 1) / k)`, an interval no longer than 1 starting at `fraction / k`).
/// Its top 8 bits are the rank, to within one as [`Ranker`]'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fractions {
    /// `floor(2^(64 + s) / tick_nanos)`: at least 2^64, as `2^s >= tick_nanos`.
    reciprocal: u128,
    /// The fraction's bits `s`.
    split: u32,
    /// Ticks below this have exact words: `tick << (s + 1)` fits in the payload.
    exact_below: u64,
}

impl Fractions {
    /// `None` for ticks longer than `2^SPLIT_MAX` nanoseconds: their deadlines are far words.
    pub(crate) fn new(tick_nanos: u64) -> Option<Fractions> {
        let split = (u64::BITS - tick_nanos.saturating_sub(1).leading_zeros()).max(SPLIT_MIN);
        (split <= SPLIT_MAX).then(|| Fractions {
            reciprocal: (1u128 << (64 + split)) / u128::from(tick_nanos),
            split,
            exact_below: 1 << (SPLIT_AT - split - 1),
        })
    }

    /// The exact word of a deadline `below` nanoseconds into the interval before `tick` (less one,
    /// as for [`Ranker`]); `None` if `tick` is too far for one (the caller makes a far word).
    #[inline]
    pub(crate) fn deadline(self, tick: u64, below: u64) -> Option<Deadline> {
        self.word(tick, 0, below)
    }

    /// The exact word of a deadline `below` nanoseconds into the interval *after* `tick` (as for
    /// [`Ranker`]), set already passed and filed at `tick` (module docs, `P`); `None` if `tick` is
    /// too far for one.
    #[inline]
    pub(crate) fn passed(self, tick: u64, below: u64) -> Option<Deadline> {
        self.word(tick, 1, below)
    }

    #[inline(always)]
    fn word(self, tick: u64, passed: u64, below: u64) -> Option<Deadline> {
        let fraction = ((u128::from(below) * self.reciprocal) >> 64) as u64;
        let split = u64::from(self.split - SPLIT_MIN) << SPLIT_AT;
        let word = split | tick << (self.split + 1) | passed << self.split | fraction;
        (tick < self.exact_below).then_some(Deadline(word))
    }

    /// The `below` of an exact word's `fraction` (see [`Fractions`]).
    pub(crate) fn below(self, fraction: u64) -> u64 {
        (u128::from(fraction) << 64).div_ceil(self.reciprocal) as u64
    }
}

/// The smallest batch [`sort_batch`] counting-sorts.
const COUNTING_SORT_MIN: usize = 64;

/// The most bits of a counting sort's key: 4,096 counters.
const KEY_BITS_MAX: u32 = 12;

impl Deadline {
    /// The bucket of a counting sort over `bits` bits (at least [`RANK_BITS`]) that this deadline
    /// falls in among its tick's (`split` is [`split`](Deadline::split) of every word of the
    /// tick): the top `bits` bits of an exact word's fraction, the last bucket when `P` is set; a
    /// far word's rank, scaled. Never lower for a later word of the same tick.
    #[inline]
    fn sort_bucket(self, split: Option<u32>, bits: u32) -> usize {
        let mask = (1 << bits) - 1;
        match split {
            Some(split) => {
                let top = (self.0 >> (split - bits)) as usize & mask;
                let passed = (self.0 >> split) as usize & 1;
                top | passed.wrapping_neg() & mask
            }
            None => usize::from(self.0 as u8) << (bits - RANK_BITS),
        }
    }
}

/// Sorts `batch` by deadline, and equal deadlines by `stamp` (see "Ties" below; `spare` and
/// `counts` are buffers the caller keeps, to avoid an allocation per batch). A batch the driver
/// fires is normally one tick's tasks, which differ only in their place within the tick: those are
/// put in order by counting them into buckets of that place (two passes, stable), as many buckets
/// as the batch has entries, rounded up to a power of two (256 to 4,096: the top 8 to 12 bits of a
/// word's fraction), so that a bucket holds about one task and few words or stamps are compared. A
/// batch that spans ticks (a late driver catching up) is sorted by comparison, and so is one of
/// fewer than [`COUNTING_SORT_MIN`] tasks.
///
/// **Ties.** Tasks due at the same instant fire in the order they were scheduled. The order in
/// which a visit found them is not that order: a task filed in a coarser level long ago is
/// cascaded into the tick's bucket after tasks scheduled later straight into it, a big stage
/// arrives in chunks, and two threads schedule into two shards. Each entry carries
/// its **stamp**, its schedule's place among the timer's (`entry/stamps.rs`: ordered on each
/// thread, and across threads for instants and on a manual clock; the slot's generation too),
/// and equal deadlines are put in stamp order. After the counting sort that is one pass that
/// compares neighbours of one bucket and sorts only the runs found out of order.
pub(crate) fn sort_batch<T: Copy>(
    batch: &mut [T],
    spare: &mut Vec<T>,
    counts: &mut Vec<u32>,
    order: impl Fn(&T) -> (Deadline, u64),
) {
    if batch.len() < COUNTING_SORT_MIN || u32::try_from(batch.len()).is_err() {
        // Too few to repay the pass over the counters (a driver catching up over many ticks
        // fires one small batch per tick), or too many for them: a comparison sort.
        batch.sort_by_key(&order);
        return;
    }
    let deadline = |item: &T| order(item).0;
    let first = deadline(&batch[0]);
    let split = first.split();
    // As many buckets as entries (a power of two, within the bounds), or the 256 ranks of a far
    // word; an exact word's fraction has at least `SPLIT_MIN` bits.
    let wanted = (usize::BITS - (batch.len() - 1).leading_zeros()).clamp(RANK_BITS, KEY_BITS_MAX);
    let bits = split.map_or(RANK_BITS, |split| wanted.min(split));
    let bucket = |item: &T| deadline(item).sort_bucket(split, bits);
    counts.clear();
    counts.resize(1 << bits, 0);
    let starts = &mut counts[..];
    // Below the tick: an exact word's `P` and fraction, a far word's rank.
    let below_tick = split.map_or((1 << RANK_BITS) - 1, |split| (1u64 << (split + 1)) - 1);
    let mut one_tick = true;
    for item in batch.iter() {
        one_tick &= deadline(item).0 & !below_tick == first.0 & !below_tick;
        starts[bucket(item)] += 1;
    }
    if !one_tick {
        batch.sort_by_key(&order);
        return;
    }
    let mut next = 0;
    for start in starts.iter_mut() {
        (*start, next) = (next, next + *start);
    }
    spare.clear();
    spare.resize(batch.len(), batch[0]);
    for &item in batch.iter() {
        let start = &mut starts[bucket(&item)];
        spare[*start as usize] = item;
        *start += 1;
    }
    batch.copy_from_slice(spare);
    // Empty, so that the caller's trimming can give a burst's buffer back (`shrink_to` keeps the length).
    spare.clear();
    order_ties(batch, bucket, &order);
}

/// Puts each run of one bucket in a batch counting-sorted by `bucket` into the order `order`
/// gives (deadline, then stamp): one pass, sorting only a run found out of order (a run is
/// usually a single task, or in order: what one thread scheduled into its shard's bucket).
fn order_ties<T>(batch: &mut [T], bucket: impl Fn(&T) -> usize, order: impl Fn(&T) -> (Deadline, u64)) {
    let mut run = 0;
    let mut run_bucket = batch.first().map_or(0, &bucket);
    let mut in_order = true;
    for i in 1..=batch.len() {
        let at = batch.get(i).map(&bucket);
        if at == Some(run_bucket) {
            in_order &= order(&batch[i - 1]) <= order(&batch[i]);
            continue;
        }
        if !in_order {
            batch[run..i].sort_by_key(&order);
            in_order = true;
        }
        run = i;
        run_bucket = at.unwrap_or(0);
    }
}

#[cfg(test)]
mod tests;
