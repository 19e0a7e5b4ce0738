//! The puchala2022 model: a hybrid of simulation (one core package, Algorithm 2) and analysis
//! (runs of active blocks on one SM, Algorithm 1), with the launch heuristic of Algorithm 3 and
//! the case-study kernels of the paper.
//!
//! [`predict`] is the model's entry point: a device, a kernel specification, one point of
//! kernel parameters and the two free parameters `t_p` (microseconds per launch) and `t_m`
//! (cycles to issue a memory instruction) give a [`Prediction`]. Where `t_p`/`t_m` come from
//! (flags, a device profile) is decided by the caller. Pure: no I/O.

pub mod kernel;
pub mod kernels;
pub mod paper;
pub mod simulate;

use crate::device::Device;
use crate::error::{non_negative, Error, Result};
use crate::model::Prediction;
use crate::workload::params::{number_json, ParamValues};
use crate::workload::Launch;

pub use kernel::{kernel_run, launch_heuristic, KernelRun, SmShape};
pub use kernels::{Builtin, KernelSpec};
pub use simulate::{timeline, CoreProgram, Timeline};

/// The model's registry name.
pub const MODEL: &str = "puchala";

/// Everything a prediction needs besides the device.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub kernel: &'a KernelSpec,
    pub params: &'a ParamValues,
    /// `(blocks, threads_per_block)` given by the user; otherwise Algorithm 3 decides.
    pub launch: Option<(u64, u32)>,
    /// Launch preparation time per launch, microseconds.
    pub t_p_us: f64,
    /// Cycles a core package is busy issuing one memory instruction.
    pub t_m_cycles: f64,
}

/// Predicts the kernel's time: `launches * (t_p + cycles_to_us(T_k cycles))` (eq 12, 17, 18).
pub fn predict(device: &Device, req: &Request<'_>) -> Result<Prediction> {
    non_negative("--t-p", req.t_p_us)?;
    non_negative("--t-m", req.t_m_cycles)?;
    if let Some(b) = req.kernel.builtin {
        b.check_params(req.params)?;
    }
    let shape = SmShape::of(device);
    let launches = req
        .kernel
        .launch
        .launches
        .evaluate(req.params, "launches")?;
    let launches = u32::try_from(launches)
        .ok()
        .filter(|&l| l > 0)
        .ok_or_else(|| {
            Error::invalid(
                "launches",
                format!(
                    "the number of launches must be between 1 and {}, got {launches}",
                    u32::MAX
                ),
            )
        })?;
    let (blocks, threads_per_block, heuristic) = match req.launch {
        Some((b, t)) => (b, t, false),
        None => {
            let threads = req.kernel.launch.threads.as_ref().ok_or_else(|| {
                Error::missing(
                    "--blocks",
                    format!(
                        "kernel `{}` does not say how many threads it launches; give --blocks and --threads-per-block, or `threads` in the program file's [launch] table",
                        req.kernel.name
                    ),
                )
            })?;
            let total = threads.evaluate(req.params, "threads")?;
            let (b, t) = launch_heuristic(&shape, total)?;
            (b, t, true)
        }
    };
    let instrs = req.kernel.program.expand(req.params)?;
    let core = CoreProgram::new(&instrs, req.t_m_cycles)?;
    let run = kernel_run(&shape, blocks, threads_per_block, |w| core.cycles(w))?;

    let per_launch_us = req.t_p_us + device.cycles_to_us(run.cycles);
    let time_us = f64::from(launches) * per_launch_us;
    let mut p = Prediction::new(MODEL, &device.name, time_us);
    p.cycles = Some(f64::from(launches) * run.cycles);
    p.launch = Some(Launch {
        blocks,
        threads_per_block,
        launches,
    });
    p.params = req.params.to_json();
    p = p
        .with("kernel", req.kernel.name.as_str())
        .with("launch_time_us", req.t_p_us)
        .with("t_m_cycles", req.t_m_cycles)
        .with("launch_from_heuristic", heuristic)
        .with("time_per_launch_us", per_launch_us)
        .with("cycles_per_launch", run.cycles)
        .with("blocks_per_sm", run.blocks_per_sm)
        .with("warps_per_block", run.warps_per_block)
        .with("core_packages_per_sm", run.core_packages_per_sm)
        .with("active_blocks_per_sm", run.active_blocks_per_sm)
        .with("full_runs", run.full_runs)
        .with("warps_per_core_package", run.warps_per_core_package)
        .with("cycles_per_full_run", number_json(run.cycles_per_full_run))
        .with("remaining_runs", run.remaining_runs)
        .with("remaining_blocks_per_sm", run.remaining_blocks_per_sm)
        .with(
            "warps_per_core_package_remaining_run",
            run.warps_per_core_package_remaining_run,
        )
        .with(
            "cycles_remaining_run",
            number_json(run.cycles_remaining_run),
        )
        .with("core_clock_mhz", device.core_clock_mhz);
    Ok(p)
}
