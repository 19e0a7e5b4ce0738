//! kerneltime predicts how long GPU kernels take on a given GPU without running them.
//!
//! Start at [`predict`] (see [`api`] for an example): a [`Kernel`] (PTX launch, kernel program,
//! analytical inputs, profiler counters), a [`device::Device`] from the catalogue and a
//! [`ModelId`] give a [`Prediction`] with its breakdown and notes. [`predict_all`] runs every
//! model that reads the kernel and gives the band between them; [`sweep`], [`calibrate`] and
//! [`evaluate`] run design spaces, fits and accuracy checks.
//!
//! The modules are layers, lowest first (a module uses only those before it; a test keeps it so):
//! `error`, `progress`, `device` (GPUs, limits, occupancy, latencies), `workload` (plain data:
//! launches, kernel programs, inputs, measurements, traces), `memory` (coalescing, banks,
//! caches), `emulate` (warps running PTX), `ptx` (kernel programs and summaries from PTX),
//! `model` (the registry and the models), `fit` (readers, numerics, calibration), `eval`
//! (metrics, evaluation), `explore` (spaces, sweeps, best, comparisons), `api`. The PTX frontend
//! is its own crate, `kerneltime-ptx`; the command line is `kerneltime-cli`.

pub mod api;
pub mod compile;
pub mod device;
pub mod emulate;
pub mod error;
pub mod eval;
pub mod explore;
pub mod fit;
pub mod hash;
pub mod memory;
pub mod model;
pub mod progress;
pub mod ptx;
pub mod suite;
pub mod tune;
pub mod workload;

pub use api::{
    calibrate, evaluate, predict, predict_all, predict_models, sweep, Band, Kernel, ModelError,
    ModelsReport, Options, PtxLaunch, Recommended,
};
pub use error::{Error, Result};
pub use model::{ModelId, Prediction};
