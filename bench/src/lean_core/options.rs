//! The prototype's options, each one of delaywheel's features, fixed when the crate is built
//! (`option_env!`: an option off costs nothing); the module docs of `lean_core` list them.

/// `LEAN_FIFO` set when the crate was built: FIFO among equal deadlines, a fired batch in deadline
/// order to a 256th of the tick.
pub const FIFO: bool = option_env!("LEAN_FIFO").is_some();

/// A slot's generation: `u64` with `LEAN_GEN64`, else `u32`.
pub type Generation = <[(); 1 + GEN64 as usize] as Width>::Generation;

/// `LEAN_GEN64` set when the crate was built.
pub const GEN64: bool = option_env!("LEAN_GEN64").is_some();

/// Picks the generation's type by its width in words ([`Generation`]).
pub trait Width {
    type Generation: Copy + Eq + Default + std::fmt::Debug + Send + Sync + 'static + Next;
}

impl Width for [(); 1] {
    type Generation = u32;
}

impl Width for [(); 2] {
    type Generation = u64;
}

/// A generation's successor (wrapping).
pub trait Next {
    fn next(self) -> Self;
}

impl Next for u32 {
    #[inline(always)]
    fn next(self) -> u32 {
        self.wrapping_add(1)
    }
}

impl Next for u64 {
    #[inline(always)]
    fn next(self) -> u64 {
        self.wrapping_add(1)
    }
}

/// How the length is counted (`LEAN_LEN` when the crate was built).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Len {
    /// Locking each shard in turn and reading its wheel's count.
    Locked,
    /// A count per shard, a load and a `Relaxed` store under the shard's lock; read without locks.
    Store,
    /// A count per shard, `fetch_add` / `fetch_sub`; read without locks.
    Rmw,
}

/// `LEAN_LEN`: `store`, `rmw`, or unset ([`Len::Locked`]).
pub const LEN: Len = match option_env!("LEAN_LEN") {
    Some(v) if !v.is_empty() && v.as_bytes()[0] == b'r' => Len::Rmw,
    Some(v) if !v.is_empty() => Len::Store,
    _ => Len::Locked,
};
