//! One shard's state: a slab of slots (generation, deadline, task, intrusive links) and a
//! hierarchical wheel of list heads, 6 levels of 64 buckets, an entry placed by the highest bit in
//! which its deadline differs from the wheel's time (tokio's placement). Sequential: its shard's
//! lock guards it. With [`FIFO`] an entry is appended at its bucket's tail and
//! carries its 256th of a tick and a sequence number, by which the timer orders a batch it fires.

use super::task::Task;
use super::{Generation, Next, FIFO};

const NIL: u32 = u32::MAX;
const LEVELS: usize = 6;
const BITS: u32 = 6;
const BUCKETS: usize = 1 << BITS;
/// Ticks the top level spans.
pub(crate) const MAX_TICKS: u64 = 1 << (BITS as usize * LEVELS);
/// The farthest deadline, in ticks after the wheel's time (about 2 years at 1 ms): one top-level
/// bucket short of the top level's span, so that no entry of the top level's next turn shares the
/// bucket the time is in (which the search for the next bucket would take for this turn's).
pub(crate) const MAX_DELAY_TICKS: u64 = MAX_TICKS - (1 << (BITS as usize * (LEVELS - 1)));

struct Slot {
    deadline: u64,
    /// Bumped when the slot is freed: a key names an occupant by (index, generation).
    generation: Generation,
    prev: u32,
    /// The next entry of its bucket, or of the free list.
    next: u32,
    /// `level * 64 + bucket` while linked.
    bucket: u16,
    /// [`FIFO`]: the 256th of its tick the deadline falls in, and the shard's count of inserts.
    sub: u8,
    seq: u32,
    task: Option<Task>,
}

/// A task due, with what orders it among a fired batch ([`FIFO`]): its deadline in 256ths of a
/// tick, then the order its shard took it in.
pub(crate) struct Fired {
    pub(crate) key: u64,
    pub(crate) seq: u32,
    pub(crate) task: Task,
}

/// A bucket due: its level, its index and the tick it is due at.
struct Due {
    level: usize,
    bucket: usize,
    tick: u64,
}

pub struct Wheel {
    slots: Vec<Slot>,
    free: u32,
    heads: [[u32; BUCKETS]; LEVELS],
    /// [`FIFO`]: each bucket's last entry (meaningful while its head is not `NIL`).
    tails: [[u32; BUCKETS]; LEVELS],
    occupied: [u64; LEVELS],
    /// The last tick advanced to: every entry due by it has fired.
    elapsed: u64,
    len: usize,
    /// [`FIFO`]: inserts so far (wrapping).
    seq: u32,
    /// Which timer's this wheel is, for pooled shards (`pool.rs`): bumped when a timer gives its
    /// shard back.
    pub(crate) epoch: u64,
}

impl Default for Wheel {
    fn default() -> Self {
        Wheel {
            slots: Vec::new(),
            free: NIL,
            heads: [[NIL; BUCKETS]; LEVELS],
            tails: [[NIL; BUCKETS]; LEVELS],
            occupied: [0; LEVELS],
            elapsed: 0,
            len: 0,
            seq: 0,
            epoch: 0,
        }
    }
}

/// The level an entry due at `deadline` goes to when the wheel's time is `base` (`deadline > base`).
#[inline(always)]
fn level_for(base: u64, deadline: u64) -> usize {
    let masked = ((base ^ deadline) | (BUCKETS as u64 - 1)).min(MAX_TICKS - 1);
    (63 - masked.leading_zeros() as usize) / BITS as usize
}

impl Wheel {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Writes `slots` more free slots (their pages touched), taken before any new one.
    pub(crate) fn reserve(&mut self, slots: usize) {
        let first = self.slots.len();
        self.slots.reserve_exact(slots);
        for index in first..first + slots {
            let next = if index + 1 < first + slots { index as u32 + 1 } else { self.free };
            let slot = Slot {
                deadline: 0,
                generation: Generation::default(),
                prev: NIL,
                next,
                bucket: 0,
                sub: 0,
                seq: 0,
                task: None,
            };
            self.slots.push(slot);
        }
        if slots > 0 {
            self.free = first as u32;
        }
    }

    /// Stores `task` due at `deadline` (at the earliest the tick after the last advanced to), in
    /// the 256th `sub` of that tick; its (slot, generation).
    ///
    /// # Panics
    ///
    /// If `deadline` is more than [`MAX_DELAY_TICKS`] after the wheel's time: never early, so no
    /// far deadline is clamped into range.
    #[inline(always)]
    pub(crate) fn insert(&mut self, deadline: u64, sub: u8, task: Task) -> (u32, Generation) {
        assert!(
            deadline.saturating_sub(self.elapsed) <= MAX_DELAY_TICKS,
            "lean core: deadline {deadline} out of range"
        );
        let deadline = deadline.max(self.elapsed + 1);
        let seq = self.seq;
        if FIFO {
            self.seq = seq.wrapping_add(1);
        }
        let index = match self.free {
            NIL => {
                let index = u32::try_from(self.slots.len()).ok().filter(|&i| i != NIL).expect("slab full");
                self.slots.push(Slot {
                    deadline,
                    generation: Generation::default(),
                    prev: NIL,
                    next: NIL,
                    bucket: 0,
                    sub,
                    seq,
                    task: Some(task),
                });
                index
            }
            index => {
                let slot = &mut self.slots[index as usize];
                self.free = slot.next;
                slot.deadline = deadline;
                if FIFO {
                    (slot.sub, slot.seq) = (sub, seq);
                }
                slot.task = Some(task);
                index
            }
        };
        self.link(self.elapsed, index);
        self.len += 1;
        (index, self.slots[index as usize].generation)
    }

    /// Takes the task of `(index, generation)` out if it is still pending.
    #[inline(always)]
    pub(crate) fn remove(&mut self, index: u32, generation: Generation) -> Option<Task> {
        let slot = self.slots.get(index as usize)?;
        if slot.generation != generation || slot.task.is_none() {
            return None;
        }
        self.unlink(index);
        Some(self.free_slot(index))
    }

    #[inline(always)]
    fn free_slot(&mut self, index: u32) -> Task {
        let slot = &mut self.slots[index as usize];
        slot.generation = slot.generation.next();
        slot.next = self.free;
        self.free = index;
        self.len -= 1;
        slot.task.take().expect("a pending slot holds its task")
    }

    #[inline(always)]
    fn link(&mut self, base: u64, index: u32) {
        let deadline = self.slots[index as usize].deadline;
        let level = level_for(base, deadline);
        let bucket = ((deadline >> (BITS as usize * level)) & (BUCKETS as u64 - 1)) as usize;
        let head = self.heads[level][bucket];
        let code = (level * BUCKETS + bucket) as u16;
        if FIFO {
            // At the tail: equal deadlines in one bucket keep their order.
            let tail = if head == NIL { NIL } else { self.tails[level][bucket] };
            if tail == NIL {
                self.heads[level][bucket] = index;
            } else {
                self.slots[tail as usize].next = index;
            }
            let slot = &mut self.slots[index as usize];
            (slot.prev, slot.next, slot.bucket) = (tail, NIL, code);
            self.tails[level][bucket] = index;
        } else {
            if head != NIL {
                self.slots[head as usize].prev = index;
            }
            let slot = &mut self.slots[index as usize];
            (slot.prev, slot.next, slot.bucket) = (NIL, head, code);
            self.heads[level][bucket] = index;
        }
        self.occupied[level] |= 1 << bucket;
    }

    #[inline(always)]
    fn unlink(&mut self, index: u32) {
        let Slot { prev, next, bucket, .. } = self.slots[index as usize];
        let (level, bucket) = (bucket as usize / BUCKETS, bucket as usize % BUCKETS);
        if next != NIL {
            self.slots[next as usize].prev = prev;
        } else if FIFO {
            self.tails[level][bucket] = prev;
        }
        if prev != NIL {
            self.slots[prev as usize].next = next;
        } else {
            self.heads[level][bucket] = next;
            if next == NIL {
                self.occupied[level] &= !(1 << bucket);
            }
        }
    }

    /// The tick at which the wheel next has something to do (fire or move entries down).
    pub(crate) fn next_tick(&self) -> Option<u64> {
        self.next_due().map(|due| due.tick)
    }

    fn next_due(&self) -> Option<Due> {
        let level = (0..LEVELS).find(|&level| self.occupied[level] != 0)?;
        let shift = BITS as usize * level;
        let (slot_range, level_range) = (1u64 << shift, 1u64 << (shift + BITS as usize));
        let now_bucket = ((self.elapsed >> shift) & (BUCKETS as u64 - 1)) as u32;
        let bucket =
            (self.occupied[level].rotate_right(now_bucket).trailing_zeros() + now_bucket) as usize % BUCKETS;
        let mut tick = (self.elapsed & !(level_range - 1)) + bucket as u64 * slot_range;
        if tick <= self.elapsed {
            // Only the top level wraps: its buckets behind the time are one turn ahead.
            tick += level_range;
        }
        Some(Due { level, bucket, tick })
    }

    /// Advances to `now`: every entry due by it leaves the wheel, its task pushed on `fired`.
    /// O(buckets reached + entries moved or fired).
    pub(crate) fn advance(&mut self, now: u64, fired: &mut Vec<Fired>) {
        while let Some(due) = self.next_due().filter(|due| due.tick <= now) {
            let mut index = std::mem::replace(&mut self.heads[due.level][due.bucket], NIL);
            self.occupied[due.level] &= !(1 << due.bucket);
            while index != NIL {
                let next = self.slots[index as usize].next;
                let slot = &self.slots[index as usize];
                if slot.deadline <= due.tick {
                    let (key, seq) = (slot.deadline << 8 | u64::from(slot.sub), slot.seq);
                    fired.push(Fired { key, seq, task: self.free_slot(index) });
                } else {
                    self.link(due.tick, index);
                }
                index = next;
            }
            self.elapsed = due.tick;
        }
        self.elapsed = self.elapsed.max(now);
    }
}
