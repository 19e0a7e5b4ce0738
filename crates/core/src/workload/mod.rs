//! Plain data describing what runs: launches and (later) programs, traces and instruction mixes.
//!
//! Nothing here knows about a particular model or device; conversions between workload forms
//! live here so that every model sees the same numbers.

pub mod analytical;
pub mod counters;
pub mod measurement;
pub mod params;
pub mod program;
pub mod trace;

use serde::Serialize;

/// How a kernel is launched: a grid of blocks, each of `threads_per_block` threads, repeated
/// `launches` times (lattice DWT runs several launches).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Launch {
    pub blocks: u64,
    pub threads_per_block: u32,
    pub launches: u32,
}

impl Launch {
    /// Threads per launch.
    pub fn total_threads(&self) -> u64 {
        self.blocks * u64::from(self.threads_per_block)
    }

    /// Warps per block (a partial warp counts as a warp).
    pub fn warps_per_block(&self) -> u32 {
        self.threads_per_block.div_ceil(32)
    }
}
