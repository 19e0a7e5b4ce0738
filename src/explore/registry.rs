//! The sweep's model registry: a model name plus a workload and a device become an
//! [`Evaluator`], prepared once, that maps one point of the parameter space to a time.
//!
//! Preparing does everything that does not depend on the point (reading the inputs file, filling
//! device fields, looking up `t_p`/`t_m`, matching parameter names to model fields), so that the
//! per-point path only copies a small struct, sets the swept fields and runs the model. Every
//! evaluator has two paths: [`Evaluator::evaluate`], the allocation-light one the sweep calls
//! millions of times (time, cycles, occupancy, launch), and [`Evaluator::predict`], the full
//! [`Prediction`] with breakdown and notes for the few points a report shows. Both go through the
//! same model functions, so they agree (tests check it).
//!
//! Adding a model is one entry in [`MODELS`] and one `prepare_*` function. A calibration file
//! (issue 8) would be one more argument to `prepare` (the calibrated free parameters), so it plugs
//! in as one more axis of cells. This module does no I/O beyond what the caller gives it as text.

use std::sync::Arc;

use crate::device::Device;
use crate::error::{Error, Result};
use crate::model::puchala::{self, kernel_run, launch_heuristic, CoreProgram, KernelSpec, SmShape};
use crate::model::{hong_kim, mwp_cwp, wu, Prediction};
use crate::workload::analytical::{HongKimInputs, MwpCwpInputs, Resolved, WuInputs};
use crate::workload::params::ParamValues;

/// What the sweep keeps of one point: NaN where the model does not say.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    pub time_us: f64,
    pub cycles: f64,
    /// The model's own active warps over the SM's maximum warps (0..1).
    pub occupancy: f64,
    pub threads_per_block: f64,
    pub blocks: f64,
    /// Shared memory per block, bytes.
    pub shared_memory_bytes: f64,
}

impl Outcome {
    fn new(time_us: f64) -> Self {
        Self {
            time_us,
            cycles: f64::NAN,
            occupancy: f64::NAN,
            threads_per_block: f64::NAN,
            blocks: f64::NAN,
            shared_memory_bytes: f64::NAN,
        }
    }
}

/// Per-thread scratch space the sweep hands to every evaluation (so that nothing is allocated
/// per point): the point as named values.
#[derive(Debug, Clone, Default)]
pub struct Scratch {
    pub params: ParamValues,
}

/// A model prepared for one workload and one device.
pub trait Evaluator: Send + Sync {
    /// The fast path: the point's values, one per axis of the space, in axis order.
    fn evaluate(&self, values: &[f64], scratch: &mut Scratch) -> Result<Outcome>;
    /// The full prediction for one point (breakdown and notes).
    fn predict(&self, values: &[f64]) -> Result<Prediction>;
}

/// What a model is run on: a puchala kernel (built-in or program file) or an analytical inputs
/// file's text.
#[derive(Debug, Clone)]
pub enum Workload {
    Kernel(KernelSpec),
    Inputs {
        /// Shown in the `kernel` column (the file name).
        name: String,
        /// Names the file in errors.
        origin: String,
        text: String,
    },
}

impl Workload {
    /// The name shown in results.
    pub fn name(&self) -> &str {
        match self {
            Workload::Kernel(k) => &k.name,
            Workload::Inputs { name, .. } => name,
        }
    }
}

/// Everything `prepare` needs besides the model name.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub workload: &'a Workload,
    /// `None`: the analytical models take the clock and device fields from the inputs file.
    pub device: Option<&'a Arc<Device>>,
    /// The names of the space's axes, in order.
    pub axes: &'a [String],
    /// The first value of every axis (used to fill swept fields a file leaves out).
    pub first_values: &'a [f64],
    /// puchala2022 free parameters given by flags (else the device profile's).
    pub t_p_us: Option<f64>,
    pub t_m_cycles: Option<f64>,
}

/// A prepared evaluator, which axes it reads, and the notes of its preparation.
pub struct Prepared {
    pub evaluator: Box<dyn Evaluator>,
    /// One flag per axis: whether this model reads it.
    pub uses: Vec<bool>,
    pub notes: Vec<String>,
}

/// One registry line.
pub struct ModelEntry {
    pub name: &'static str,
    /// What workload it takes, for `--help` and errors.
    pub takes: &'static str,
    pub prepare: fn(&Context<'_>) -> Result<Prepared>,
}

/// Every model a sweep can run. The trace model (issue 7) is one more line here.
pub const MODELS: &[ModelEntry] = &[
    ModelEntry {
        name: "wu",
        takes: "--inputs (wu2019 analytical inputs file)",
        prepare: prepare_analytical::<WuInputs>,
    },
    ModelEntry {
        name: "mwp-cwp",
        takes: "--inputs (parra2016 MWP-CWP inputs file)",
        prepare: prepare_analytical::<MwpCwpInputs>,
    },
    ModelEntry {
        name: "hong-kim",
        takes: "--inputs (Hong and Kim 2009 inputs file)",
        prepare: prepare_analytical::<HongKimInputs>,
    },
    ModelEntry {
        name: "puchala",
        takes: "--kernel (a built-in such as dwt-lattice, or a kernel program file)",
        prepare: prepare_puchala,
    },
    ModelEntry {
        name: "trace",
        takes: "--inputs trace=KERNEL.toml (a PTX kernel file: ptx, entry, grid, block, args)",
        prepare: super::trace_cell::prepare_trace,
    },
];

/// The registry line of a model, or an error listing the models.
pub fn find(name: &str) -> Result<&'static ModelEntry> {
    MODELS.iter().find(|m| m.name == name).ok_or_else(|| {
        Error::invalid(
            "--model",
            format!(
                "unknown model `{name}`; a sweep can run: {}",
                MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
            ),
        )
    })
}

/// Which models take which kind of workload.
pub fn takes_kernels(model: &str) -> bool {
    model == "puchala"
}

// ---------------------------------------------------------------------------------------------
// analytical models

/// Sets one field of an inputs struct.
type Setter<T> = fn(&mut T, f64);

/// What the sweep needs to know about an analytical inputs struct.
trait Analytical: Copy + Send + Sync + 'static {
    const MODEL: &'static str;
    /// Inputs-file fields a parameter can sweep (same names as in the file).
    const FIELDS: &'static [(&'static str, Setter<Self>)];
    /// Launch-dimension names that stand for a field (`blocks` is wu's `n_b`).
    const ALIASES: &'static [(&'static str, &'static str)];
    fn resolve(text: &str, origin: &str, device: Option<&Device>) -> Result<Resolved<Self>>;
    /// The file's clock, MHz (used without a device).
    fn clock_mhz(&self) -> f64;
    /// Runs the model: cycles, microseconds added after the clock (transfers) and the outcome
    /// fields the model knows.
    fn run(&self, device: Option<&Device>) -> Result<(f64, f64, Outcome)>;
    /// The full prediction; `gpu_us` is the cycles already converted to time.
    fn full(&self, device_name: &str, gpu_us: f64) -> Result<Prediction>;
}

macro_rules! setters {
    ($t:ty; $($f:ident),* $(,)?) => {
        &[$((stringify!($f), |i: &mut $t, v: f64| i.$f = v)),*]
    };
}

impl Analytical for WuInputs {
    const MODEL: &'static str = "wu";
    const FIELDS: &'static [(&'static str, Setter<Self>)] = setters!(WuInputs;
        comp_cycles, mem_insts_global, mem_insts_shared, mem_insts_local, n_conf, sync_insts,
        mem_l_global, mem_l_shared, departure_delay, threads_per_block, warp_size, n_ws, max_b,
        max_w, max_r, reg_per_thread, max_smem_bytes, smem_used_bytes, smem_unit_bytes, n_b, n_sm,
        freq_mhz, comu_bytes);
    const ALIASES: &'static [(&'static str, &'static str)] = &[
        ("blocks", "n_b"),
        ("shared_memory_bytes", "smem_used_bytes"),
    ];
    fn resolve(text: &str, origin: &str, device: Option<&Device>) -> Result<Resolved<Self>> {
        WuInputs::from_toml(text, origin, device)
    }
    fn clock_mhz(&self) -> f64 {
        self.freq_mhz
    }
    fn run(&self, _device: Option<&Device>) -> Result<(f64, f64, Outcome)> {
        let r = wu::predict(self)?;
        let mut o = Outcome::new(f64::NAN);
        o.cycles = r.exec_cycles_sm;
        o.occupancy = r.warps_active / self.max_w;
        o.threads_per_block = self.threads_per_block;
        o.blocks = self.n_b;
        o.shared_memory_bytes = self.smem_used_bytes;
        Ok((r.exec_cycles_sm, r.transfer_us, o))
    }
    fn full(&self, device_name: &str, gpu_us: f64) -> Result<Prediction> {
        // `to_prediction` adds the transfer time itself (eq 22).
        Ok(wu::predict(self)?.to_prediction(device_name, gpu_us))
    }
}

impl Analytical for MwpCwpInputs {
    const MODEL: &'static str = "mwp-cwp";
    const FIELDS: &'static [(&'static str, Setter<Self>)] = setters!(MwpCwpInputs;
        inst, mem_inst, total_warps, active_sms, avg_inst_lat, ilp, n, warp_size, simd_width,
        dram_lat, avg_trans_warp, departure_delay, miss_ratio_l2, hit_lat_l2, miss_ratio_l1,
        hit_lat_l1, freq_ghz, data_size_bytes, mem_peak_bandwidth_gbs, mlp, w_serial);
    const ALIASES: &'static [(&'static str, &'static str)] = &[];
    fn resolve(text: &str, origin: &str, device: Option<&Device>) -> Result<Resolved<Self>> {
        MwpCwpInputs::from_toml(text, origin, device)
    }
    fn clock_mhz(&self) -> f64 {
        self.freq_ghz * 1000.0
    }
    fn run(&self, device: Option<&Device>) -> Result<(f64, f64, Outcome)> {
        let r = mwp_cwp::predict(self)?;
        let mut o = Outcome::new(f64::NAN);
        o.cycles = r.t_exec;
        if let Some(d) = device {
            o.occupancy = self.n / f64::from(d.limits.max_warps_per_sm);
        }
        Ok((r.t_exec, 0.0, o))
    }
    fn full(&self, device_name: &str, time_us: f64) -> Result<Prediction> {
        Ok(mwp_cwp::predict(self)?.to_prediction(device_name, time_us))
    }
}

impl Analytical for HongKimInputs {
    const MODEL: &'static str = "hong-kim";
    const FIELDS: &'static [(&'static str, Setter<Self>)] = setters!(HongKimInputs;
        warp_size, issue_cycles, freq_ghz, mem_bandwidth_gbs, mem_ld, departure_del_uncoal,
        departure_del_coal, threads_per_block, blocks, active_sms, active_blocks_per_sm,
        comp_insts, uncoal_mem_insts, coal_mem_insts, synch_insts, uncoal_per_mw,
        load_bytes_per_warp);
    const ALIASES: &'static [(&'static str, &'static str)] = &[];
    fn resolve(text: &str, origin: &str, device: Option<&Device>) -> Result<Resolved<Self>> {
        HongKimInputs::from_toml(text, origin, device)
    }
    fn clock_mhz(&self) -> f64 {
        self.freq_ghz * 1000.0
    }
    fn run(&self, device: Option<&Device>) -> Result<(f64, f64, Outcome)> {
        let r = hong_kim::predict(self)?;
        let mut o = Outcome::new(f64::NAN);
        o.cycles = r.exec_cycles_with_synch;
        o.threads_per_block = self.threads_per_block;
        o.blocks = self.blocks;
        if let Some(d) = device {
            let warps = (self.threads_per_block / self.warp_size).ceil();
            o.occupancy = self.active_blocks_per_sm * warps / f64::from(d.limits.max_warps_per_sm);
        }
        Ok((r.exec_cycles_with_synch, 0.0, o))
    }
    fn full(&self, device_name: &str, time_us: f64) -> Result<Prediction> {
        Ok(hong_kim::predict(self)?.to_prediction(device_name, time_us))
    }
}

/// An analytical model with its inputs resolved for one device.
struct AnalyticalEvaluator<T: Analytical> {
    base: T,
    device: Option<Arc<Device>>,
    /// (axis index, setter) for every axis the model reads.
    setters: Vec<(usize, Setter<T>)>,
    notes: Vec<String>,
}

impl<T: Analytical> AnalyticalEvaluator<T> {
    fn inputs(&self, values: &[f64]) -> T {
        let mut i = self.base;
        for &(axis, set) in &self.setters {
            set(&mut i, values[axis]);
        }
        i
    }

    fn time(&self, i: &T, cycles: f64, extra_us: f64) -> f64 {
        match &self.device {
            Some(d) => d.cycles_to_us(cycles) + extra_us,
            None => cycles / i.clock_mhz() + extra_us,
        }
    }
}

impl<T: Analytical> Evaluator for AnalyticalEvaluator<T> {
    fn evaluate(&self, values: &[f64], _scratch: &mut Scratch) -> Result<Outcome> {
        let i = self.inputs(values);
        let (cycles, extra_us, mut o) = i.run(self.device.as_deref())?;
        o.time_us = self.time(&i, cycles, extra_us);
        Ok(o)
    }

    fn predict(&self, values: &[f64]) -> Result<Prediction> {
        let i = self.inputs(values);
        let (cycles, _, _) = i.run(self.device.as_deref())?;
        let name = self
            .device
            .as_ref()
            .map_or("none (clock from the inputs file)", |d| d.name.as_str());
        let mut p = i.full(name, self.time(&i, cycles, 0.0))?;
        p.notes.extend(self.notes.iter().cloned());
        Ok(p)
    }
}

fn prepare_analytical<T: Analytical>(cx: &Context<'_>) -> Result<Prepared> {
    let (text, origin) = match cx.workload {
        Workload::Inputs { text, origin, .. } => (text, origin),
        Workload::Kernel(k) => {
            return Err(Error::invalid(
                "--model",
                format!(
                    "model {} reads an analytical inputs file (--inputs), not the kernel `{}`",
                    T::MODEL,
                    k.name
                ),
            ))
        }
    };
    // Which axes name a field (directly or by alias).
    let mut setters = Vec::new();
    let mut uses = vec![false; cx.axes.len()];
    let mut fill = Vec::new();
    for (a, axis) in cx.axes.iter().enumerate() {
        let field = T::ALIASES
            .iter()
            .find(|(alias, _)| alias == axis)
            .map_or(axis.as_str(), |(_, f)| *f);
        if let Some((name, set)) = T::FIELDS.iter().find(|(n, _)| *n == field) {
            setters.push((a, *set));
            uses[a] = true;
            fill.push((*name, cx.first_values[a]));
        }
    }
    // A swept field may be left out of the file (the sweep gives it): put the first value in so
    // that reading the file does not fail on it.
    let mut table: toml::Table =
        toml::from_str(text).map_err(|e| Error::file(origin, e.message()))?;
    for (name, v) in fill {
        table.entry(name).or_insert(toml::Value::Float(v));
    }
    let text = toml::to_string(&table).map_err(|e| Error::file(origin, e))?;
    let device = cx.device.cloned();
    let resolved = T::resolve(&text, origin, device.as_deref())?;
    let mut notes = resolved.notes;
    if device.is_none() {
        notes.push(format!(
            "no device: cycles become time with the inputs file's clock ({} MHz)",
            resolved.inputs.clock_mhz()
        ));
    }
    Ok(Prepared {
        evaluator: Box::new(AnalyticalEvaluator {
            base: resolved.inputs,
            device,
            setters,
            notes: notes.clone(),
        }),
        uses,
        notes,
    })
}

// ---------------------------------------------------------------------------------------------
// puchala

/// puchala2022 for one kernel on one device, with its `t_p`/`t_m`.
struct PuchalaEvaluator {
    kernel: KernelSpec,
    device: Arc<Device>,
    shape: SmShape,
    t_p_us: f64,
    t_m_cycles: f64,
    axes: Vec<String>,
    /// Axis indices of `blocks` and `threads_per_block` when both are swept.
    launch_axes: Option<(usize, usize)>,
    notes: Vec<String>,
}

impl PuchalaEvaluator {
    fn fill(&self, values: &[f64], params: &mut ParamValues) {
        for (name, v) in self.axes.iter().zip(values) {
            params.set(name, *v);
        }
    }

    fn launch(&self, values: &[f64]) -> Result<Option<(u64, u32)>> {
        let Some((b, t)) = self.launch_axes else {
            return Ok(None);
        };
        let blocks = crate::workload::params::whole(values[b])
            .and_then(|v| u64::try_from(v).ok())
            .ok_or_else(|| Error::invalid("--param blocks", "must be a whole number"))?;
        let threads = crate::workload::params::whole(values[t])
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| Error::invalid("--param threads_per_block", "must be a whole number"))?;
        Ok(Some((blocks, threads)))
    }
}

impl Evaluator for PuchalaEvaluator {
    fn evaluate(&self, values: &[f64], scratch: &mut Scratch) -> Result<Outcome> {
        // The steps of `puchala::predict`, without building the breakdown map.
        let params = &mut scratch.params;
        self.fill(values, params);
        if let Some(b) = self.kernel.builtin {
            b.check_params(params)?;
        }
        let launches = self.kernel.launch.launches.evaluate(params, "launches")?;
        if launches == 0 || launches > u64::from(u32::MAX) {
            return Err(Error::invalid(
                "launches",
                format!("the number of launches must be between 1 and {}", u32::MAX),
            ));
        }
        let (blocks, threads_per_block) = match self.launch(values)? {
            Some(l) => l,
            None => {
                let threads = self.kernel.launch.threads.as_ref().ok_or_else(|| {
                    Error::missing(
                        "--param blocks",
                        "the kernel does not say how many threads it launches",
                    )
                })?;
                launch_heuristic(&self.shape, threads.evaluate(params, "threads")?)?
            }
        };
        let instrs = self.kernel.program.expand(params)?;
        let core = CoreProgram::new(&instrs, self.t_m_cycles)?;
        let run = kernel_run(&self.shape, blocks, threads_per_block, |w| core.cycles(w))?;
        let launches = launches as f64;
        let mut o = Outcome::new(launches * (self.t_p_us + self.device.cycles_to_us(run.cycles)));
        o.cycles = launches * run.cycles;
        o.occupancy = (run.active_blocks_per_sm * u64::from(run.warps_per_block)) as f64
            / f64::from(self.shape.max_warps_per_sm);
        o.threads_per_block = f64::from(threads_per_block);
        o.blocks = blocks as f64;
        Ok(o)
    }

    fn predict(&self, values: &[f64]) -> Result<Prediction> {
        let mut params = ParamValues::default();
        self.fill(values, &mut params);
        let req = puchala::Request {
            kernel: &self.kernel,
            params: &params,
            launch: self.launch(values)?,
            t_p_us: self.t_p_us,
            t_m_cycles: self.t_m_cycles,
        };
        let mut p = puchala::predict(&self.device, &req)?;
        p.notes.extend(self.notes.iter().cloned());
        Ok(p)
    }
}

fn prepare_puchala(cx: &Context<'_>) -> Result<Prepared> {
    let kernel = match cx.workload {
        Workload::Kernel(k) => k.clone(),
        Workload::Inputs { origin, .. } => {
            return Err(Error::invalid(
                "--model",
                format!(
                "model puchala runs a kernel (--kernel NAME or FILE), not the inputs file {origin}"
            ),
            ))
        }
    };
    let device = cx.device.cloned().ok_or_else(|| {
        Error::missing(
            "--device",
            "model puchala needs a device (--device NAME or a filter)",
        )
    })?;
    let profile = kernel.builtin.and_then(|b| device.puchala.get(b.name()));
    let mut notes = Vec::new();
    let mut pick = |flag: Option<f64>, from: Option<f64>, name: &str| match (flag, from) {
        (Some(v), _) => Ok(v),
        (None, Some(v)) => {
            notes.push(format!(
                "{name} = {v} from {}'s puchala.{} entry",
                device.name, kernel.name
            ));
            Ok(v)
        }
        (None, None) => Err(Error::missing(
            format!("--{}", name.replace('_', "-")),
            format!(
                "device `{}` has no puchala2022 {name} for kernel `{}`; give --{}",
                device.name,
                kernel.name,
                name.replace('_', "-")
            ),
        )),
    };
    let t_p_us = pick(cx.t_p_us, profile.map(|p| p.t_p_us), "t_p")?;
    let t_m_cycles = pick(cx.t_m_cycles, profile.map(|p| p.t_m_cycles), "t_m")?;
    let mut names = kernel.program.parameter_names();
    if let Some(t) = &kernel.launch.threads {
        names.extend(t.parameter_names());
    }
    names.extend(kernel.launch.launches.parameter_names());
    let pos = |n: &str| cx.axes.iter().position(|a| a == n);
    let launch_axes = match (pos("blocks"), pos("threads_per_block")) {
        (Some(b), Some(t)) => Some((b, t)),
        (None, None) => None,
        _ => {
            return Err(Error::invalid(
                "--param",
                "model puchala needs both `blocks` and `threads_per_block` to fix the launch (or neither, for Algorithm 3)",
            ))
        }
    };
    let uses = cx
        .axes
        .iter()
        .map(|a| {
            names.iter().any(|n| n.eq_ignore_ascii_case(a))
                || (launch_axes.is_some() && (a == "blocks" || a == "threads_per_block"))
        })
        .collect();
    let shape = SmShape::of(&device);
    Ok(Prepared {
        evaluator: Box::new(PuchalaEvaluator {
            kernel,
            device,
            shape,
            t_p_us,
            t_m_cycles,
            axes: cx.axes.to_vec(),
            launch_axes,
            notes: notes.clone(),
        }),
        uses,
        notes,
    })
}
