//! kerneltime predicts how long GPU kernels take on a given GPU without running them.
//!
//! Read the modules in this order: `device` (GPUs, limits, occupancy), `workload` (what runs),
//! `model` (the performance models and `Prediction`), then `cli` (the command line, the only
//! place that knows about flags and output formats). `error` holds the one error type.

pub mod api;
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
pub mod workload;

pub use api::{
    predict, predict_all, predict_models, Band, Kernel, ModelError, ModelsReport, Options,
    PtxLaunch,
};
pub use error::{Error, Result};
pub use model::{ModelId, Prediction};
