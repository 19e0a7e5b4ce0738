//! The design-space commands on the command line: `sweep` (every point into CSV or JSON lines),
//! `best` (the configuration that minimises an objective under constraints) and `compare` (two
//! kernels point by point, or GPUs ranked for one kernel). This file holds the flags they share
//! (the space: models, kernels or inputs, devices, parameters, calibrations, a PTX kernel by
//! flags); each command has its own file. The work is `kerneltime::explore`.

mod best;
mod compare;
mod sweep;

pub use best::{run_best, BestArgs};
pub use compare::{run_compare, CompareArgs};
pub use sweep::{run_sweep, SweepArgs};

use std::path::PathBuf;

use clap::Args;

use kerneltime::error::{Error, Result};
use kerneltime::explore::space::{GeneratedInput, DEFAULT_MAX_POINTS};
use kerneltime::explore::trace_cell::PtxKernelFile;
use kerneltime::explore::{Space, SpaceSpec};

/// The space flags shared by `sweep`, `best` and `compare`.
#[derive(Debug, Clone, Args)]
pub struct SpaceArgs {
    /// A space file (TOML: models, kernels, inputs, devices, device_files, params, t_p_us,
    /// t_m_cycles, calibrations); flags given as well replace its entries.
    #[arg(long, value_name = "FILE.toml")]
    pub space: Option<PathBuf>,
    /// Models to run (repeat or comma-separate): roofline, wu, mwp-cwp, hong-kim, puchala, trace
    /// (trace alone when --ptx is given and no model is).
    #[arg(long = "model", value_name = "NAME")]
    pub models: Vec<String>,
    /// puchala kernels: built-in names (dwt-matrix, dwt-lattice, mtx-mul-vec) or program files.
    #[arg(long = "kernel", value_name = "NAME|FILE")]
    pub kernels: Vec<String>,
    /// Analytical inputs files (for wu, mwp-cwp, hong-kim); `MODEL=FILE` gives a file to one
    /// model only.
    #[arg(long = "inputs", value_name = "FILE.toml")]
    pub inputs: Vec<PathBuf>,
    /// GPUs: catalogue names (comma lists) or filters whose conditions must all hold, e.g.
    /// `compute_capability>=8.0,sm_count>=40` or `architecture=Ampere`. Repeatable.
    #[arg(long = "device", value_name = "NAME|FILTER")]
    pub devices: Vec<String>,
    /// Device description files. Repeatable.
    #[arg(long = "device-file", value_name = "FILE.toml")]
    pub device_files: Vec<PathBuf>,
    /// A swept parameter or launch dimension: NAME=V, NAME=V1,V2, NAME=A..B, NAME=A..B:STEP,
    /// NAME=2^A..2^B (e.g. threads_per_block=32..1024:32, blocks=..., n=2^6..2^20). Repeatable.
    #[arg(long = "param", value_name = "NAME=VALUES")]
    pub params: Vec<String>,
    /// puchala2022 launch time t_p, microseconds (else each device profile's value).
    #[arg(long = "t-p", value_name = "US")]
    pub t_p_us: Option<f64>,
    /// puchala2022 memory issue time t_m, cycles (else each device profile's value).
    #[arg(long = "t-m", value_name = "CYCLES")]
    pub t_m_cycles: Option<f64>,
    /// A calibration file from `kerneltime calibrate`, or `none` (uncalibrated): each one a value
    /// of the calibration axis, applied to the cells of the model it calibrates. Repeatable.
    #[arg(long = "calibration", value_name = "CAL.toml|none")]
    pub calibrations: Vec<String>,
    /// Refuse spaces of more points than this.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_POINTS)]
    pub max_points: u64,
    #[command(flatten)]
    pub ptx: PtxKernelArgs,
}

/// A PTX kernel for the trace model given by flags: the same fields as a PTX kernel file
/// (`--inputs trace=FILE.toml`, see `data/sweeps/trace/`), its expressions in the swept
/// parameters.
#[derive(Debug, Clone, Default, Args)]
pub struct PtxKernelArgs {
    /// PTX file of a kernel to sweep with the trace model.
    #[arg(long, value_name = "FILE.ptx")]
    pub ptx: Option<PathBuf>,
    /// Its entry (`.entry` name).
    #[arg(long, value_name = "NAME", requires = "ptx")]
    pub entry: Option<String>,
    /// Grid: 1-3 comma-separated expressions in the parameters, e.g. `(n + block_x - 1) / block_x`.
    #[arg(long, value_name = "X[,Y,Z]", requires = "ptx")]
    pub grid: Option<String>,
    /// Block: 1-3 comma-separated expressions, e.g. `block_x`.
    #[arg(long, value_name = "X[,Y,Z]", requires = "ptx")]
    pub block: Option<String>,
    /// A kernel argument by name or index: a number or an expression (`3=n`). Repeatable.
    #[arg(long = "arg", value_name = "NAME=EXPR", requires = "ptx")]
    pub args: Vec<String>,
    /// Registers per thread (else from --resources, else a default named in the notes).
    #[arg(long, value_name = "N", requires = "ptx")]
    pub registers: Option<u32>,
    /// ptxas -v / NVRTC / cuobjdump report with the kernel's registers and shared memory.
    #[arg(long, value_name = "LOG", requires = "ptx")]
    pub resources: Option<PathBuf>,
    /// Static shared memory per block, bytes.
    #[arg(long, value_name = "BYTES", requires = "ptx")]
    pub shared_bytes: Option<u32>,
}

impl PtxKernelArgs {
    /// The PTX kernel file these flags describe, when --ptx is given.
    fn kernel_file(&self) -> Result<Option<GeneratedInput>> {
        let Some(ptx) = &self.ptx else {
            return Ok(None);
        };
        let need = |v: &Option<String>, flag: &str, what: &str| {
            v.clone()
                .ok_or_else(|| Error::missing(flag, format!("--ptx needs {flag} {what}")))
        };
        let entry = need(&self.entry, "--entry", "NAME")?;
        let dims = |text: String| -> Vec<String> {
            text.split(',').map(|d| d.trim().to_string()).collect()
        };
        // Paths made absolute: the file is read as if it sat in the current directory.
        let absolute = |p: &PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
        let file = PtxKernelFile {
            ptx: absolute(ptx),
            entry: entry.clone(),
            grid: dims(need(&self.grid, "--grid", "X[,Y,Z]")?),
            block: dims(need(&self.block, "--block", "X[,Y,Z]")?),
            args: self.args.clone(),
            registers: self.registers,
            resources: self.resources.as_ref().map(absolute),
            shared_bytes: self.shared_bytes,
        };
        let text = toml::to_string(&file)
            .map_err(|e| Error::invalid("--ptx", format!("cannot describe the kernel: {e}")))?;
        Ok(Some(GeneratedInput {
            name: entry,
            origin: format!("--ptx {}", ptx.display()),
            text,
        }))
    }
}

impl SpaceArgs {
    /// The spec: the file's, with the flags' entries replacing it.
    pub fn spec(&self) -> Result<SpaceSpec> {
        let mut flags = SpaceSpec {
            models: self.models.clone(),
            kernels: self.kernels.clone(),
            inputs: self.inputs.clone(),
            devices: self.devices.clone(),
            device_files: self.device_files.clone(),
            params: self.params.clone(),
            t_p_us: self.t_p_us,
            t_m_cycles: self.t_m_cycles,
            calibrations: self.calibrations.clone(),
            trace_kernels: self.ptx.kernel_file()?.into_iter().collect(),
        };
        if !flags.trace_kernels.is_empty() && flags.models.is_empty() && self.space.is_none() {
            flags.models.push("trace".into());
        }
        Ok(match &self.space {
            Some(path) => SpaceSpec::load(path)?.overridden_by(flags),
            None => flags,
        })
    }

    fn build(&self) -> Result<Space> {
        Space::build(&self.spec()?, self.max_points)
    }
}

fn params_text(p: &serde_json::Map<String, serde_json::Value>) -> String {
    p.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn file_slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    s.split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}
