//! What an entry carries and the memory behind it: a task's closure stored type-erased in 24
//! bytes ([`InlineTask`], the payload of every slot of the sharded core, `shard/`), the blocks of
//! closures over 16 bytes (`task_slab.rs`, with its caches and free lists), the stamps that order
//! and name entries (`stamps.rs`), and the system calls that map and give back memory (`os.rs`).
//!
//! The parts: `inline_task/` (the erased closure and its kinds: a task, a future's wake, a tick
//! group's wake, a delay queue's value), `task_slab.rs` (blocks in size classes up to 256 bytes,
//! in pages given back by a shrink), `block_cache.rs` and `thread_cache.rs` (a thread's cache of
//! free blocks), `free_lists.rs` (the free lists behind them, striped by thread) over
//! `mapped_vec.rs` (their pool, an array in a mapping of its own), `stamps.rs` and `os.rs`.

mod block_cache;
mod free_lists;
// A module with `unsafe` code (see the crate's "Unsafe code"): the free lists' pool, own mapping.
#[allow(unsafe_code)]
mod mapped_vec;
// A module with `unsafe` code (see the crate's "Unsafe code"): a closure stored in a slot.
#[allow(unsafe_code)]
mod inline_task;
// A module with `unsafe` code (see the crate's "Unsafe code"): the task slab's pages, the
// mappings of the shard core's slabs and reserve (`shard/`), the heap's trim after a shrink.
#[allow(unsafe_code)]
pub(crate) mod os;
// A module with `unsafe` code (see the crate's "Unsafe code"): the task slab's pages given back.
#[allow(unsafe_code)]
pub(crate) mod page_reclaim;
pub(crate) mod stamps;
mod thread_cache;
// A module with `unsafe` code (see the crate's "Unsafe code"): blocks for big closures.
#[allow(unsafe_code)]
pub(crate) mod task_slab;

pub(crate) use inline_task::InlineTask;
pub(crate) use os::shrink_buffer;
pub(crate) use stamps::StampBy;
pub(crate) use task_slab::Freed;

/// A task's closure, boxed: what shutdown hands back.
pub(crate) type Task = Box<dyn FnOnce() + Send + 'static>;
