//! kerneltime predicts how long GPU kernels take on a given GPU without running them.
//!
//! Read the modules in this order: `device` (GPUs, limits, occupancy), `workload` (what runs),
//! `model` (the performance models and `Prediction`), then `cli` (the command line, the only
//! place that knows about flags and output formats). `error` holds the one error type.

pub mod compile;
pub mod device;
pub mod emulate;
pub mod error;
pub mod eval;
pub mod explore;
pub mod fit;
pub mod memory;
pub mod model;
pub mod progress;
pub mod ptx;
pub mod tune;
pub mod workload;

pub use error::{Error, Result};
