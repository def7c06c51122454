//! A small deterministic generator for the unit tests' randomised checks (xorshift64): the same
//! sequence on every run, so that a failure reproduces.

/// Marsaglia's xorshift64 (13, 7, 17).
pub(crate) struct XorShift(u64);

impl XorShift {
    /// From `seed`, which must not be zero (zero is a fixed point).
    pub(crate) fn new(seed: u64) -> XorShift {
        assert_ne!(seed, 0, "xorshift needs a non-zero seed");
        XorShift(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}
