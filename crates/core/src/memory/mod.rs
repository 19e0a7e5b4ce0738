//! Memory behaviour of warp accesses: coalescing of lane addresses into 32-byte sectors and
//! 128-byte lines (`coalescing`), shared-memory bank conflicts (`banks`) and an LRU cache
//! simulation for L1 and L2 hit ratios (`cache`).
//!
//! Pure arithmetic on addresses; nothing here emulates instructions or knows a device beyond the
//! sizes it is given. Times are the models' business.

pub mod banks;
pub mod cache;
pub mod coalescing;
