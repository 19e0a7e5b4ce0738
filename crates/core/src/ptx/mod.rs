//! The PTX frontend (the `kerneltime-ptx` crate, re-exported here whole) and the two passes that
//! need the rest of the library: `program` (puchala2022 kernel programs from PTX) and `analysis`
//! (the per-kernel summary of `kerneltime analyze`).

pub use kerneltime_ptx::*;

pub mod analysis;
pub mod program;
