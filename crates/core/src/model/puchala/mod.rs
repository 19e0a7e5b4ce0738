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
use crate::model::registry::{Inputs, Model, ModelId, ParamSpec, Source};
use crate::model::Prediction;
use crate::workload::params::{number_json, ParamValues};
use crate::workload::Launch;

pub use kernel::{kernel_run, launch_heuristic, KernelRun, SmShape};
pub use kernels::{Builtin, KernelSpec};
pub use simulate::{timeline, timeline_capped, CoreProgram, Timeline};

/// The model's registry name.
pub const MODEL: ModelId = ModelId::Puchala;

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
    non_negative("t_p_us", req.t_p_us)?;
    non_negative("t_m_cycles", req.t_m_cycles)?;
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
                    "blocks",
                    format!(
                        "kernel `{}` does not say how many threads it launches; give `blocks` and `threads_per_block`, or `threads` in the program file's [launch] table",
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

/// puchala2022's inputs: a kernel program at one point of its parameters, its launch when given
/// (otherwise Algorithm 3 decides), and `t_p`/`t_m` when given (otherwise the device profile's
/// entry named `profile`, looked up when the model runs uncalibrated).
#[derive(Debug, Clone, PartialEq)]
pub struct PuchalaInputs {
    pub kernel: KernelSpec,
    pub params: ParamValues,
    /// `(blocks, threads_per_block)`.
    pub launch: Option<(u64, u32)>,
    pub t_p_us: Option<f64>,
    pub t_m_cycles: Option<f64>,
    /// The device profile's key for `t_p`/`t_m` (a built-in kernel's name).
    pub profile: Option<String>,
    /// For a program derived from a PTX trace: the load and store durations it was given,
    /// cycles (shown in the breakdown).
    pub trace_costs: Option<(f64, f64)>,
}

impl PuchalaInputs {
    /// A built-in kernel at one point, with the device profile's `t_p`/`t_m`.
    pub fn builtin(kernel: Builtin, params: ParamValues) -> Self {
        Self {
            kernel: kernel.spec(),
            params,
            launch: None,
            t_p_us: None,
            t_m_cycles: None,
            profile: Some(kernel.name().to_string()),
            trace_costs: None,
        }
    }
}

/// puchala2022's free parameters: `t_p` (the median launch API time when measurements carry it,
/// section 5.3), `t_m`, and one scale on every memory duration of the kernel program.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "t_p_us",
        lower: 0.0,
        upper: 100.0,
        start: 5.0,
        absent: None,
    },
    ParamSpec {
        name: "t_m_cycles",
        lower: 0.0,
        upper: 200.0,
        start: 10.0,
        absent: None,
    },
    ParamSpec {
        name: "memory_scale",
        lower: 0.05,
        upper: 20.0,
        start: 1.0,
        absent: None,
    },
];

/// `t_p` and `t_m`: the given values, else the device profile's entry under `profile` (the
/// built-in kernel's name), with a note for each value taken from the profile.
pub fn free_parameters(
    device: &Device,
    profile: Option<&str>,
    kernel: &str,
    t_p_us: Option<f64>,
    t_m_cycles: Option<f64>,
) -> Result<(f64, f64, Vec<String>)> {
    let entry = profile.and_then(|k| device.puchala.get(k).map(|p| (k, p)));
    let mut notes = Vec::new();
    let mut pick =
        |given: Option<f64>, field: &str, what: &str, unit: &str, from: Option<f64>| match (
            given, from, entry,
        ) {
            (Some(v), _, _) => Ok(v),
            (None, Some(v), Some((k, _))) => {
                notes.push(format!(
                    "{what} = {v} {unit} from the device profile's puchala.{k} entry"
                ));
                Ok(v)
            }
            _ => Err(Error::missing(
                field,
                format!(
                    "device `{}` has no puchala2022 {what} for kernel `{kernel}`; give `{field}`",
                    device.name
                ),
            )),
        };
    let t_p = pick(t_p_us, "t_p_us", "t_p", "us", entry.map(|(_, p)| p.t_p_us))?;
    let t_m = pick(
        t_m_cycles,
        "t_m_cycles",
        "t_m",
        "cycles",
        entry.map(|(_, p)| p.t_m_cycles),
    )?;
    Ok((t_p, t_m, notes))
}

/// puchala2022's core-package model in the registry.
pub struct Puchala;

impl Puchala {
    fn request_for<'a>(&self, inputs: &'a Inputs) -> Result<&'a PuchalaInputs> {
        match inputs {
            Inputs::Puchala(i) => Ok(i),
            other => Err(self.wrong_inputs(other)),
        }
    }
}

impl Model for Puchala {
    fn id(&self) -> ModelId {
        ModelId::Puchala
    }
    fn summary(&self) -> &'static str {
        "Puchala et al. 2022: core-package simulation of kernel programs (calc/load/store)"
    }
    fn takes(&self) -> &'static str {
        "a built-in kernel or a kernel program file, or a PTX launch"
    }
    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }
    fn inputs(
        &self,
        source: &Source<'_>,
        device: Option<&Device>,
    ) -> Result<(Inputs, Vec<String>)> {
        match source {
            Source::Program(p) => Ok((Inputs::Puchala(Box::new((*p).clone())), Vec::new())),
            Source::Ptx(f) => {
                let device = crate::model::analytical::need_device(device, "puchala from PTX")?;
                let (i, notes) = crate::model::from_trace::puchala_inputs(device, f)?;
                Ok((Inputs::Puchala(Box::new(i)), notes))
            }
            _ => Err(self.cannot_read(source)),
        }
    }
    fn predict(
        &self,
        device: Option<&Device>,
        inputs: &Inputs,
        params: Option<&[f64]>,
    ) -> Result<Prediction> {
        let device = crate::model::analytical::need_device(device, "puchala")?;
        let i = self.request_for(inputs)?;
        match params {
            None => {
                let (t_p_us, t_m_cycles, notes) = free_parameters(
                    device,
                    i.profile.as_deref(),
                    &i.kernel.name,
                    i.t_p_us,
                    i.t_m_cycles,
                )?;
                let mut p = predict(
                    device,
                    &Request {
                        kernel: &i.kernel,
                        params: &i.params,
                        launch: i.launch,
                        t_p_us,
                        t_m_cycles,
                    },
                )?;
                if let Some((load, store)) = i.trace_costs {
                    p = p
                        .with("program_ops", i.kernel.program.ops.len())
                        .with("load_cycles", load)
                        .with("store_cycles", store);
                }
                p.notes.extend(notes);
                Ok(p)
            }
            Some(q) => {
                let mut kernel = i.kernel.clone();
                scale_memory(&mut kernel.program.ops, q[2]);
                predict(
                    device,
                    &Request {
                        kernel: &kernel,
                        params: &i.params,
                        launch: i.launch,
                        t_p_us: q[0],
                        t_m_cycles: q[1],
                    },
                )
            }
        }
    }
}

/// Multiplies every load and store duration of a program by `scale` (the calibrated memory
/// durations of puchala2022, parameter `memory_scale`).
pub fn scale_memory(ops: &mut [crate::workload::program::Op], scale: f64) {
    use crate::workload::program::Op;
    for op in ops {
        match op {
            Op::Load(d) | Op::Store(d) => *d *= scale,
            Op::Calc(_) => {}
            Op::Repeat { ops, .. } => scale_memory(ops, scale),
        }
    }
}
