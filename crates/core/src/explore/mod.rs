//! Design-space exploration: sweeps over models, kernels, devices, calibrations and kernel parameters
//! (`space`, `sweep`), the model registry that prepares each (model, kernel, device) once
//! (`registry`), the search for the best configuration under constraints (`best`), and
//! comparisons of two kernels or of GPUs over a space (`compare`).
//!
//! The flow: a `SpaceSpec` (flags or a TOML file) resolves into a `Space` of prepared cells
//! times parameter points; `sweep` evaluates the points in parallel and streams rows to a file,
//! or folds them (`best`). Results are in point order, so output is deterministic. Charts and
//! flags live in `cli::explore`; this module draws nothing and parses no command line.

pub mod best;
pub mod compare;
pub mod registry;
pub mod space;
pub mod sweep;
pub mod trace_cell;

pub use registry::{Evaluator, Outcome, Workload, MODELS};
pub use space::{Space, SpaceSpec};
