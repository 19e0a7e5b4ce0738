//! Numerical tools for fitting models to measurements and judging the fits.
//!
//! - [`matrix`]: a small dense row-major matrix, enough for least-squares problems of a few
//!   dozen columns.
//! - [`ols`]: ordinary (unconstrained) linear least squares by Householder QR with column pivoting.
//! - [`nnls`]: non-negative least squares (Lawson and Hanson's active-set algorithm).
//! - [`rank`]: rank correlations (Kendall's tau-b with ties in O(n log n), Spearman's rho) and
//!   Pearson's r.
//! - [`split`]: a small seeded pseudo-random generator of our own and train/test splits.
//! - [`measurements`]: reading measured kernel times (CSV, nvprof, Nsight, Kernel Tuner,
//!   profiler-counter tables) into one `Measurement` record.
//! - [`lslag`]: reading LSLAG measurement files; fitting the LSLAG and LSLA cost functions.
//!
//! What this module does NOT do: it is not a general linear-algebra library (no sparse matrices,
//! no SIMD, no problems with thousands of columns); apart from `measurements` it never reads
//! files itself (callers pass text); and it does not pick a model: callers build the design
//! matrix.

pub mod calibrate;
pub mod lslag;
pub mod matrix;
pub mod measurements;
pub mod nelder_mead;
pub mod nnls;
pub mod ols;
pub mod rank;
pub mod split;
pub mod trace_calibration;

pub use matrix::Matrix;
