//! Measurement suites: the accuracy harness the project runs on itself. A suite file lists
//! kernel launches with their measured times; [`evaluate_suite`] compiles and emulates each
//! distinct launch once, predicts it with every requested PTX model and reports, per dataset x
//! device x model, how far the predictions are from the measurements.
//!
//! # The suite file (TOML)
//!
//! Paths are relative to the suite file. Top-level keys: `defaults` (a table of case fields every
//! case and group template inherits), `case` (an array of cases) and `group` (an array of case
//! groups read from a measurement file). Unknown keys are errors naming the case and the key.
//!
//! ```toml
//! [defaults]
//! dataset = "tiny"                    # label of the accuracy table the case counts in
//! device = "RTX 2080 Ti"              # catalogue name, or a device file `*.toml`
//!
//! [[case]]
//! id = "saxpy-1M"                     # optional; default "case N"
//! source = "saxpy.cu"                 # CUDA (.cu) or OpenCL (.cl), compiled by the toolchain
//! # ptx = "saxpy.sm75.ptx"            #   ... or a PTX file (exactly one of the two)
//! compiler = "nvrtc"                  # nvrtc (default for .cu), nvcc, clang (default for .cl)
//! arch = "sm_75"                      # optional; default: the device's, within the compiler's range
//! defines = { SCALE = 2 }             # -DSCALE=2 (true -> 1, "" -> -DNAME)
//! options = ["-std=c++11"]            # passed to the compiler as written
//! include = ["stub"]                  # include directories
//! entry = "saxpy"                     # the kernel; a C++ source name finds its mangled entry
//! name = "saxpy"                      # optional: the kernel in calibrations (kernel scopes)
//!                                     #   and reports; default: `entry` as written
//! grid = [4096, 1, 1]                 # 1 to 3 numbers, one number, or "X,Y,Z"
//! block = [256]
//! args = { n = 1048576, 1 = "2.5" }   # by PTX parameter name, short name (param_3) or index
//! data = { x = "uniform:0:1:7" }      # buffer contents: const:V, iota[:START[:STEP]],
//!                                     #   uniform:LO:HI[:SEED], file:PATH
//! registers = "compiler"              # a number, or "compiler": the compiler's resource report
//! shared_bytes = "compiler"           # static shared memory per block, likewise
//! dynamic_shared_bytes = 0            # added to the static shared memory for occupancy
//! mapped_host = ["x"]                 # buffers that are host memory mapped into the device
//! measured_us = 61.2                  # the measured kernel time, microseconds
//! ```
//!
//! Defaults when a field is absent: `registers` and `shared_bytes` are "compiler" for `source`
//! cases and unknown for `ptx` cases (the models then assume 32 registers and the PTX's static
//! shared memory, and say so); `dataset` is the suite file's name without extension.
//!
//! A group reads a measurement file (any format `fit::measurements` reads) and turns each
//! selected row into a case through a template:
//!
//! ```toml
//! [[group]]
//! dataset = "nca"
//! measurements = "measurements_dev.csv.gz"
//! format = "counters"                 # optional; detected from the content otherwise
//! where = { app = "matMul_gpu", device = ["GTX-680", "TitanX"] }   # every key must match
//! sample = 30                         # optional: at most 30 sampling units per stratum ...
//! sample_per = ["device"]             # ... of these columns (default: the whole group);
//! sample_by = ["input_size_1"]        # a unit: every row with one value of these columns
//!                                     #   (default: one row)
//! seed = 2026                         # the sample's seed (default 1)
//! [group.case]                        # any case field; strings may hold {EXPR}
//! source = "kernels/{app}.cu"
//! defines = { Tile_Width = "{block_x}" }
//! args = { 3 = "{input_size_1}", 2 = "{input_size_1 / 32 / 128}" }
//! registers = "{regs_per_thread}"
//! ```
//!
//! `{NAME}` is a column of the row, as text; `{EXPR}` is a whole-number expression over numeric
//! columns (`+ - * / %`, parentheses; `/` truncates, so a rounded-up division is
//! `(n + b - 1) / b`); `{{` and `}}` are literal braces. A row's columns are the reader's fields
//! `kernel`, `device`, `time_us`, `grid_x..z`, `block_x..z`, `samples`, `launch_api_us`,
//! `line`, the profiler counters (`regs_per_thread`, `static_smem_bytes`,
//! `dynamic_smem_bytes`, `inst_executed`, ...), and every parameter of the row (a Kernel Tuner
//! configuration's tunable parameters and `problem_size_x..z`, the amaris2018 `app`,
//! `input_size_1`, ...); the reader's own fields win over a parameter of the same name. Template fields that are absent default to the row's:
//! `measured_us = "{time_us}"`, `device = "{device}"`, `grid` and `block` from the row, and
//! `entry` = the row's kernel name up to its first `(`. Sampling keeps the chosen rows in file
//! order; each stratum is drawn with its own seed derived from `seed` and the stratum's values,
//! so adding a device to a file does not change another device's sample. With `sample_by`,
//! whole configurations are drawn: `sample_by = ["input_size_1", "block_x"]` without
//! `sample_per` keeps every device's rows of the same sizes, so each launch is emulated once for
//! all of them.
//!
//! # What it does and does not do
//!
//! Failed cases (unknown device, no toolchain, compile error, PTX error, emulation error, model
//! error, a case that names no kernel parameter) are counted per reason in every group they
//! belong to, never dropped. Data hints (`emulate::hints`, the one reader of their text) are
//! checked against the kernel's parameters and given to the emulator, their files read with the
//! capped reader; the case's notes name them. Mapped host buffers add the host-link term of
//! `tune::host_link`, the same term `tune` adds, with the same headline and band.
//! Compilation goes through [`compile`] (external toolchain processes, cached on disk). This
//! module does not draw tables or write files: the command line does.

mod calibrate;
pub mod compile;
mod read;
pub mod run;
mod summary;
mod template;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::emulate::{DataArg, LaunchDims};
use crate::error::Result;

pub use calibrate::calibration_rows;
pub use compile::{Compiler, Toolchain};
pub use run::{evaluate_suite, reason, CaseResult, Failure, ModelOutcome, SuiteOptions};
pub use summary::{
    accuracy, Accuracy, CompileStats, FailureCount, GroupAccuracy, SuiteEvaluation, ALL_DEVICES,
};

/// A suite read from its file: the cases in file order (plain cases first, then each group's).
#[derive(Debug, Clone)]
pub struct Suite {
    /// The suite file as given.
    pub file: PathBuf,
    pub cases: Vec<Case>,
    /// What reading did that a user should know (rows filtered out, samples drawn).
    pub notes: Vec<String>,
}

impl Suite {
    /// Reads and checks a suite file, and the measurement files its groups name.
    pub fn load(path: &Path) -> Result<Suite> {
        let text = crate::error::read_text_file(path, "a suite file")?;
        Suite::from_toml(&text, path)
    }

    /// Parses a suite's text; `path` names it in errors and anchors its relative paths.
    pub fn from_toml(text: &str, path: &Path) -> Result<Suite> {
        read::parse_suite(text, path)
    }
}

/// One measured launch.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The case's name in reports: its `id`, else `case N` or `group G row FILE:LINE`.
    pub id: String,
    pub dataset: String,
    pub kernel: KernelSource,
    pub entry: String,
    /// What calibrations (their kernel-scope groups) and reports call the kernel: the `name`
    /// field, by default `entry` as written.
    pub name: String,
    pub launch: LaunchDims,
    /// Kernel arguments as `NAME=VALUE`, in the form `emulate::resolve_args` takes.
    pub args: Vec<String>,
    /// Buffer contents by parameter name (a file's path already joined to the suite's
    /// folder).
    pub data: Vec<DataArg>,
    pub registers: Amount,
    pub shared_bytes: Amount,
    pub dynamic_shared_bytes: u64,
    /// Parameters whose buffers are host memory mapped into the device.
    pub mapped_host: Vec<String>,
    /// A catalogue name or a device file.
    pub device: DeviceRef,
    pub measured_us: f64,
}

/// Where a case's PTX comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum KernelSource {
    /// A PTX file.
    Ptx(PathBuf),
    /// A CUDA or OpenCL source compiled by the toolchain.
    Source(compile::SourceSpec),
}

/// A device by catalogue name or description file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeviceRef {
    Name(String),
    File(PathBuf),
}

impl DeviceRef {
    /// The device: from the catalogue by name, or read from its file.
    pub fn load(&self) -> Result<crate::device::Device> {
        match self {
            DeviceRef::Name(n) => crate::device::catalogue::find(n).cloned(),
            DeviceRef::File(p) => crate::device::Device::load(p),
        }
    }
}

impl fmt::Display for DeviceRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceRef::Name(n) => f.write_str(n),
            DeviceRef::File(p) => write!(f, "{}", p.display()),
        }
    }
}

/// A resource amount: given, from the compiler's report, or not known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Amount {
    Given(u64),
    Compiler,
    Unknown,
}

/// Counts per key in first-seen order (for deterministic reports).
pub(crate) fn bump(map: &mut BTreeMap<String, usize>, key: &str) {
    *map.entry(key.to_string()).or_insert(0) += 1;
}
