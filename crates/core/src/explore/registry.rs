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
//! A model is swept fast when it has an entry in [`MODELS`] with its `prepare_*` function (the
//! models themselves are defined once, in `model::registry`).
//!
//! Calibrations (issue 8, `kerneltime calibrate`) are one more axis of cells: `prepare` gets the
//! calibration file of its cell (or none) and applies its parameters once, with the same
//! functions `predict --calibration` and `evaluate` use (`fit::calibrate::apply_*`,
//! `calibrated_roofline_us`, `roofline_prediction`), so the per-point path is as fast as the
//! uncalibrated one. Only when a swept parameter is itself a calibrated field (e.g. wu's
//! `comp_cycles`, which the calibration scales) are the parameters applied per point, after the
//! swept value is set, because a scale must act on the point's value. A calibration for another
//! model, or one without parameters for the cell's device (and kernel), is an error: the sweep
//! never silently runs a cell uncalibrated under a calibration's name.
//!
//! This module does no I/O beyond what the caller gives it as text.

use std::sync::Arc;

use crate::device::Device;
use crate::error::{Error, Result};
pub use crate::fit::calibrate::CalibrationFile;
use crate::model::puchala::{self, kernel_run, launch_heuristic, CoreProgram, KernelSpec, SmShape};
use crate::model::roofline::{self, RooflineInputs};
use crate::model::{hong_kim, mwp_cwp, wu, ModelId, Prediction};
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

/// Everything `prepare` needs.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The model the cell runs.
    pub model: ModelId,
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
    /// The cell's calibration (`None`: uncalibrated).
    pub calibration: Option<&'a CalibrationFile>,
}

/// A prepared evaluator, which axes it reads, and the notes of its preparation.
pub struct Prepared {
    pub evaluator: Box<dyn Evaluator>,
    /// One flag per axis: whether this model reads it.
    pub uses: Vec<bool>,
    pub notes: Vec<String>,
}

/// One registry line.
#[derive(Clone, Copy)]
pub struct ModelEntry {
    pub id: ModelId,
    /// What workload it takes, for `--help` and errors.
    pub takes: &'static str,
    pub prepare: fn(&Context<'_>) -> Result<Prepared>,
}

/// Every model a sweep can run. The trace model (issue 7) is one more line here.
pub const MODELS: &[ModelEntry] = &[
    ModelEntry {
        id: ModelId::Roofline,
        takes:
            "`inputs` (a TOML file with `flops` and `dram_bytes`, optional `launch_overhead_us`)",
        prepare: prepare_roofline,
    },
    ModelEntry {
        id: ModelId::Wu,
        takes: "`inputs` (wu2019 analytical inputs file)",
        prepare: prepare_analytical::<WuInputs>,
    },
    ModelEntry {
        id: ModelId::MwpCwp,
        takes: "`inputs` (parra2016 MWP-CWP inputs file)",
        prepare: prepare_analytical::<MwpCwpInputs>,
    },
    ModelEntry {
        id: ModelId::HongKim,
        takes: "`inputs` (Hong and Kim 2009 inputs file)",
        prepare: prepare_analytical::<HongKimInputs>,
    },
    ModelEntry {
        id: ModelId::Puchala,
        takes: "`kernel` (a built-in such as dwt-lattice, or a kernel program file)",
        prepare: prepare_puchala,
    },
    ModelEntry {
        id: ModelId::Trace,
        takes: "`inputs` trace=KERNEL.toml (a PTX kernel file: ptx, entry, grid, block, args)",
        prepare: super::trace_cell::prepare_trace,
    },
];

impl ModelEntry {
    /// The model's name.
    pub fn name(&self) -> &'static str {
        self.id.name()
    }
}

/// The sweep's line of a model (by its registry name): its fast prepared evaluator when
/// [`MODELS`] has one, else the generic one (`prepare_generic`), which runs any model of the
/// registry on an inputs file through `Model::inputs` and `Model::predict` per point.
pub fn find(name: &str) -> Result<ModelEntry> {
    let id = name.parse::<ModelId>().map_err(|_| {
        Error::invalid(
            "model",
            format!("unknown model `{name}`; known: {}", ModelId::names()),
        )
    })?;
    Ok(MODELS
        .iter()
        .find(|m| m.id == id)
        .copied()
        .unwrap_or(ModelEntry {
            id,
            takes: "`inputs` (an inputs file with the fields the model reads)",
            prepare: prepare_generic,
        }))
}

/// Which models take which kind of workload.
pub fn takes_kernels(model: &str) -> bool {
    model == ModelId::Puchala.name()
}

// ---------------------------------------------------------------------------------------------
// any model of the registry, generically

/// A model without a fast sweep path: per point, the swept values are written into the inputs
/// file's fields and the model reads and predicts it through the registry. Slow (the file is read
/// per point) but exactly the model's own `predict`.
struct GenericEvaluator {
    model: ModelId,
    table: toml::Table,
    origin: String,
    axes: Vec<String>,
    device: Option<Arc<Device>>,
    params: Option<Vec<f64>>,
    notes: Vec<String>,
}

impl GenericEvaluator {
    fn run(&self, values: &[f64]) -> Result<Prediction> {
        let mut table = self.table.clone();
        for (name, v) in self.axes.iter().zip(values) {
            table.insert(name.clone(), toml::Value::Float(*v));
        }
        let text = toml::to_string(&table).map_err(|e| Error::file(&self.origin, e))?;
        let m = crate::model::model(self.model);
        let source = crate::model::Source::File {
            text: &text,
            origin: &self.origin,
        };
        let (inputs, notes) = m.inputs(&source, self.device.as_deref())?;
        let mut p = m.predict(self.device.as_deref(), &inputs, self.params.as_deref())?;
        p.notes.extend(notes);
        Ok(p)
    }
}

impl Evaluator for GenericEvaluator {
    fn evaluate(&self, values: &[f64], _scratch: &mut Scratch) -> Result<Outcome> {
        let p = self.run(values)?;
        let mut o = Outcome::new(p.time_us);
        o.cycles = p.cycles.unwrap_or(f64::NAN);
        Ok(o)
    }

    fn predict(&self, values: &[f64]) -> Result<Prediction> {
        let mut p = self.run(values)?;
        p.notes.extend(self.notes.iter().cloned());
        Ok(p)
    }
}

/// Prepares any model of the registry on an inputs file: every axis is written into the file as
/// a field of its name, so the model reads the swept value wherever it reads that field.
fn prepare_generic(cx: &Context<'_>) -> Result<Prepared> {
    let (text, origin) = match cx.workload {
        Workload::Inputs { text, origin, .. } => (text, origin),
        Workload::Kernel(k) => {
            return Err(Error::invalid(
                "model",
                format!(
                    "model {} reads an inputs file (`inputs`), not the kernel `{}`",
                    cx.model, k.name
                ),
            ))
        }
    };
    let table: toml::Table = toml::from_str(text).map_err(|e| Error::file(origin, e.message()))?;
    let mut notes = vec![format!(
        "{} has no fast sweep path: each point writes the swept values into {origin} and runs the model on it",
        cx.model
    )];
    let params = match cx.calibration {
        Some(cal) => {
            let (q, note) =
                cal.params_for(cx.model, cx.device.map(|d| &**d), cx.workload.name())?;
            notes.push(note);
            Some(q)
        }
        None => None,
    };
    let ev = GenericEvaluator {
        model: cx.model,
        table,
        origin: origin.clone(),
        axes: cx.axes.to_vec(),
        device: cx.device.cloned(),
        params,
        notes: notes.clone(),
    };
    // The model must read the file at the first point.
    ev.run(cx.first_values)?;
    Ok(Prepared {
        evaluator: Box::new(ev),
        uses: vec![true; cx.axes.len()],
        notes,
    })
}

// ---------------------------------------------------------------------------------------------
// analytical models

/// Sets one field of an inputs struct.
type Setter<T> = fn(&mut T, f64);

/// What the sweep needs to know about an analytical inputs struct.
trait Analytical: Copy + Send + Sync + 'static {
    const MODEL: ModelId;
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
    /// Fields the calibration's parameters change (scale or replace).
    const CALIBRATED: &'static [&'static str];
    /// Applies calibrated parameters (`fit::calibrate`'s order); the launch overhead `q[3]` is
    /// added to the time by the caller.
    fn calibrate(&mut self, q: &[f64]);
}

macro_rules! setters {
    ($t:ty; $($f:ident),* $(,)?) => {
        &[$((stringify!($f), |i: &mut $t, v: f64| i.$f = v)),*]
    };
}

impl Analytical for WuInputs {
    const MODEL: ModelId = ModelId::Wu;
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
    const CALIBRATED: &'static [&'static str] = &["mem_l_global", "departure_delay", "comp_cycles"];
    fn calibrate(&mut self, q: &[f64]) {
        wu::apply_params(self, q);
    }
}

impl Analytical for MwpCwpInputs {
    const MODEL: ModelId = ModelId::MwpCwp;
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
    const CALIBRATED: &'static [&'static str] = &["dram_lat", "departure_delay", "avg_inst_lat"];
    fn calibrate(&mut self, q: &[f64]) {
        mwp_cwp::apply_params(self, q);
    }
}

impl Analytical for HongKimInputs {
    const MODEL: ModelId = ModelId::HongKim;
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
    const CALIBRATED: &'static [&'static str] = &[
        "mem_ld",
        "departure_del_coal",
        "departure_del_uncoal",
        "issue_cycles",
    ];
    fn calibrate(&mut self, q: &[f64]) {
        hong_kim::apply_params(self, q);
    }
}

/// An analytical model with its inputs resolved for one device.
struct AnalyticalEvaluator<T: Analytical> {
    base: T,
    device: Option<Arc<Device>>,
    /// (axis index, setter) for every axis the model reads.
    setters: Vec<(usize, Setter<T>)>,
    /// Calibrated parameters still to apply per point (only when a swept field is a calibrated
    /// one; otherwise `base` is already calibrated).
    calibrate_per_point: Option<Vec<f64>>,
    /// The calibration's launch overhead, µs (0 uncalibrated), added to every time.
    launch_us: f64,
    notes: Vec<String>,
}

impl<T: Analytical> AnalyticalEvaluator<T> {
    fn inputs(&self, values: &[f64]) -> T {
        let mut i = self.base;
        for &(axis, set) in &self.setters {
            set(&mut i, values[axis]);
        }
        if let Some(q) = &self.calibrate_per_point {
            i.calibrate(q);
        }
        i
    }

    fn time(&self, i: &T, cycles: f64, extra_us: f64) -> f64 {
        // `launch_us` is 0 uncalibrated (adding it is then exact).
        match &self.device {
            Some(d) => d.cycles_to_us(cycles) + extra_us + self.launch_us,
            None => cycles / i.clock_mhz() + extra_us + self.launch_us,
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
                "model",
                format!(
                    "model {} reads an analytical inputs file (`inputs`), not the kernel `{}`",
                    T::MODEL,
                    k.name
                ),
            ))
        }
    };
    let (setters, uses, text) = swept_fields(cx, T::FIELDS, T::ALIASES, text, origin)?;
    let device = cx.device.cloned();
    let resolved = T::resolve(&text, origin, device.as_deref())?;
    let mut notes = resolved.notes;
    if device.is_none() {
        notes.push(format!(
            "no device: cycles become time with the inputs file's clock ({} MHz)",
            resolved.inputs.clock_mhz()
        ));
    }
    let mut base = resolved.inputs;
    let mut calibrate_per_point = None;
    let mut launch_us = 0.0;
    if let Some(cal) = cx.calibration {
        let (q, note) = cal.params_for(T::MODEL, device.as_deref(), cx.workload.name())?;
        notes.push(note);
        launch_us = crate::model::analytical::launch_us(Some(&q), device.as_deref());
        // A swept calibrated field: the calibration must act on each point's value.
        let swept_calibrated =
            cx.axes.iter().enumerate().any(|(a, _)| {
                uses[a] && T::CALIBRATED.contains(&field_name(&cx.axes[a], T::ALIASES))
            });
        if swept_calibrated {
            calibrate_per_point = Some(q);
        } else {
            base.calibrate(&q);
        }
    }
    Ok(Prepared {
        evaluator: Box::new(AnalyticalEvaluator {
            base,
            device,
            setters,
            calibrate_per_point,
            launch_us,
            notes: notes.clone(),
        }),
        uses,
        notes,
    })
}

/// The field an axis name stands for (itself, or the field of an alias).
fn field_name<'a>(axis: &'a str, aliases: &[(&'static str, &'static str)]) -> &'a str {
    aliases
        .iter()
        .find(|(alias, _)| *alias == axis)
        .map_or(axis, |(_, f)| f)
}

/// Matches the axes to a model's fields: the setters of the swept ones, which axes the model
/// reads, and the inputs text with every swept field the file leaves out filled with the axis'
/// first value (so that reading the file does not fail on it).
#[allow(clippy::type_complexity)]
fn swept_fields<T>(
    cx: &Context<'_>,
    fields: &[(&'static str, Setter<T>)],
    aliases: &[(&'static str, &'static str)],
    text: &str,
    origin: &str,
) -> Result<(Vec<(usize, Setter<T>)>, Vec<bool>, String)> {
    let mut setters = Vec::new();
    let mut uses = vec![false; cx.axes.len()];
    let mut fill = Vec::new();
    for (a, axis) in cx.axes.iter().enumerate() {
        let field = field_name(axis, aliases);
        if let Some((name, set)) = fields.iter().find(|(n, _)| *n == field) {
            setters.push((a, *set));
            uses[a] = true;
            fill.push((*name, cx.first_values[a]));
        }
    }
    let mut table: toml::Table =
        toml::from_str(text).map_err(|e| Error::file(origin, e.message()))?;
    for (name, v) in fill {
        table.entry(name).or_insert(toml::Value::Float(v));
    }
    let text = toml::to_string(&table).map_err(|e| Error::file(origin, e))?;
    Ok((setters, uses, text))
}

// ---------------------------------------------------------------------------------------------
// roofline

/// The roofline's sweepable fields (the names of its inputs file).
const ROOFLINE_FIELDS: &[(&str, Setter<RooflineInputs>)] = &[
    ("flops", |i, v| i.flops = v),
    ("dram_bytes", |i, v| i.dram_bytes = v),
    ("launch_overhead_us", |i, v| i.launch_overhead_us = Some(v)),
];

/// The roofline for one inputs file on one device.
struct RooflineEvaluator {
    base: RooflineInputs,
    device: Arc<Device>,
    setters: Vec<(usize, Setter<RooflineInputs>)>,
    /// The calibrated parameters (compute and memory efficiency, launch overhead).
    calibrated: Option<Vec<f64>>,
    /// The device's table launch overhead, for points whose inputs give none.
    default_launch_us: f64,
    notes: Vec<String>,
}

impl RooflineEvaluator {
    fn inputs(&self, values: &[f64]) -> RooflineInputs {
        let mut i = self.base;
        for &(axis, set) in &self.setters {
            set(&mut i, values[axis]);
        }
        i
    }
}

impl Evaluator for RooflineEvaluator {
    fn evaluate(&self, values: &[f64], _scratch: &mut Scratch) -> Result<Outcome> {
        let i = self.inputs(values);
        crate::error::non_negative("flops", i.flops)?;
        crate::error::non_negative("dram_bytes", i.dram_bytes)?;
        // Uncalibrated, the roofline is its calibrated form at full efficiency with the
        // table's (or the file's) launch overhead: max(c / 1, m / 1) + launch is exactly
        // `model::roofline::predict`'s time.
        let time_us = match &self.calibrated {
            Some(q) => roofline::calibrated_us(&self.device, &i, q),
            None => {
                let launch_us = match i.launch_overhead_us {
                    Some(us) => crate::error::non_negative("launch_overhead_us", us)?,
                    None => self.default_launch_us,
                };
                roofline::bound_us(&self.device, &i, 1.0, 1.0, launch_us)
            }
        };
        Ok(Outcome::new(time_us))
    }

    fn predict(&self, values: &[f64]) -> Result<Prediction> {
        let i = self.inputs(values);
        let mut p = roofline::prediction(&self.device, &i, self.calibrated.as_deref())?;
        p.notes.extend(self.notes.iter().cloned());
        Ok(p)
    }
}

fn prepare_roofline(cx: &Context<'_>) -> Result<Prepared> {
    let (text, origin) = match cx.workload {
        Workload::Inputs { text, origin, .. } => (text, origin),
        Workload::Kernel(k) => {
            return Err(Error::invalid(
                "model",
                format!(
                    "model roofline reads an inputs file with `flops` and `dram_bytes` (`inputs`), not the kernel `{}`",
                    k.name
                ),
            ))
        }
    };
    let device = cx.device.cloned().ok_or_else(|| {
        Error::missing(
            "device",
            "model roofline needs a device (`device` NAME or a filter) for its peaks",
        )
    })?;
    let (setters, uses, text) = swept_fields(cx, ROOFLINE_FIELDS, &[], text, origin)?;
    let base = RooflineInputs::from_toml(&text, origin)?;
    let (default_launch_us, source) = roofline::default_launch_overhead(&device);
    let mut notes = Vec::new();
    let mut calibrated = None;
    if let Some(cal) = cx.calibration {
        let (q, note) = cal.params_for(ModelId::Roofline, Some(&device), cx.workload.name())?;
        notes.push(note);
        calibrated = Some(q);
    } else if base.launch_overhead_us.is_none() {
        notes.push(format!(
            "launch overhead {default_launch_us} us from {source}"
        ));
    }
    Ok(Prepared {
        evaluator: Box::new(RooflineEvaluator {
            base,
            device,
            setters,
            calibrated,
            default_launch_us,
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
            .ok_or_else(|| Error::invalid("param blocks", "must be a whole number"))?;
        let threads = crate::workload::params::whole(values[t])
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| Error::invalid("param threads_per_block", "must be a whole number"))?;
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
                        "param blocks",
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
    let mut kernel = match cx.workload {
        Workload::Kernel(k) => k.clone(),
        Workload::Inputs { origin, .. } => {
            return Err(Error::invalid(
                "model",
                format!(
                "model puchala runs a kernel (`kernel` NAME or FILE), not the inputs file {origin}"
            ),
            ))
        }
    };
    let device = cx.device.cloned().ok_or_else(|| {
        Error::missing(
            "device",
            "model puchala needs a device (`device` NAME or a filter)",
        )
    })?;
    let profile = kernel.builtin.and_then(|b| device.puchala.get(b.name()));
    let mut notes = Vec::new();
    let kernel_name = kernel.name.clone();
    let mut pick = |flag: Option<f64>, from: Option<f64>, name: &str| match (flag, from) {
        (Some(v), _) => Ok(v),
        (None, Some(v)) => {
            notes.push(format!(
                "{name} = {v} from {}'s puchala.{} entry",
                device.name, kernel_name
            ));
            Ok(v)
        }
        (None, None) => Err(Error::missing(
            format!("--{}", name.replace('_', "-")),
            format!(
                "device `{}` has no puchala2022 {name} for kernel `{}`; give --{}",
                device.name,
                kernel_name,
                name.replace('_', "-")
            ),
        )),
    };
    let (t_p_us, t_m_cycles) = match cx.calibration {
        // The calibration's t_p, t_m and memory scale, applied as `predict --calibration` does.
        Some(cal) => {
            let (q, note) = cal.params_for(ModelId::Puchala, Some(&device), &kernel.name)?;
            puchala::scale_memory(&mut kernel.program.ops, q[2]);
            notes.push(note);
            if cx.t_p_us.is_some() || cx.t_m_cycles.is_some() {
                notes.push(format!(
                    "t_p and t_m from {} (the calibration), not `t_p_us`/`t_m_cycles`",
                    cal.origin
                ));
            }
            (q[0], q[1])
        }
        None => (
            pick(cx.t_p_us, profile.map(|p| p.t_p_us), "t_p")?,
            pick(cx.t_m_cycles, profile.map(|p| p.t_m_cycles), "t_m")?,
        ),
    };
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
                "param",
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::device::catalogue;
    use crate::fit::calibrate::{params_of, Calibration, GroupCalibration, Scope};
    use crate::model::ModelId;

    fn calibration(model: ModelId, device: &str, q: &[f64]) -> CalibrationFile {
        let params: BTreeMap<String, f64> = params_of(model)
            .iter()
            .zip(q)
            .map(|(s, v)| (s.name.to_string(), *v))
            .collect();
        CalibrationFile {
            name: "cal".into(),
            origin: "cal.toml".into(),
            calibration: Calibration {
                model,
                scopes: vec![Scope::Device],
                measurements: String::new(),
                rows: 0,
                folds: 0,
                bootstrap: 0,
                seed: 0,
                objective: String::new(),
                parameters: params.keys().cloned().collect(),
                devices: Vec::new(),
                groups: vec![GroupCalibration {
                    device: device.into(),
                    params,
                    ..GroupCalibration::new(Scope::Device)
                }],
                notes: Vec::new(),
            },
        }
    }

    /// Sweeping any field of a calibrated analytical model gives what setting the field, then
    /// applying the calibration, then running the model gives: the `CALIBRATED` lists decide
    /// whether parameters are applied once or per point, and this checks them field by field
    /// (dropping `comp_cycles` from wu's list makes it fail).
    fn calibrated_fields_agree<T: Analytical>(file: &str, model: ModelId) {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/analytical/");
        let text = std::fs::read_to_string(format!("{path}{file}")).unwrap();
        let device = Arc::new(catalogue::find("Tesla K40").unwrap().clone());
        let q = [1.5, 6.0, 1.25, 4.0];
        let cal = calibration(model, &device.name, &q);
        let base = T::resolve(&text, file, Some(&device)).unwrap().inputs;
        let workload = Workload::Inputs {
            name: "w".into(),
            origin: file.into(),
            text: text.clone(),
        };
        let mut ok = 0;
        for (field, set) in T::FIELDS {
            for v in [3.0, 48.0, 700.0] {
                let axes = [field.to_string()];
                let cx = Context {
                    model: T::MODEL,
                    workload: &workload,
                    device: Some(&device),
                    axes: &axes,
                    first_values: &[v],
                    t_p_us: None,
                    t_m_cycles: None,
                    calibration: Some(&cal),
                };
                let prepared = prepare_analytical::<T>(&cx).unwrap();
                let fast = prepared
                    .evaluator
                    .evaluate(&[v], &mut Scratch::default())
                    .map(|o| o.time_us);
                let mut i = base;
                set(&mut i, v);
                i.calibrate(&q);
                let expected = i.run(Some(&device)).map(|(c, extra, _)| {
                    device.cycles_to_us(c)
                        + extra
                        + crate::model::analytical::launch_us(Some(&q), Some(&device))
                });
                match (fast, expected) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!(a, b, "{} {field} = {v}", T::MODEL);
                        ok += 1;
                    }
                    (Err(_), Err(_)) => {}
                    (a, b) => panic!("{} {field} = {v}: {a:?} vs {b:?}", T::MODEL),
                }
            }
        }
        assert!(ok >= T::FIELDS.len(), "{}: only {ok} points ran", T::MODEL);
    }

    #[test]
    fn calibrated_sweeps_of_every_field_apply_parameters_after_the_point() {
        calibrated_fields_agree::<WuInputs>("wu2019-example.toml", ModelId::Wu);
        calibrated_fields_agree::<MwpCwpInputs>(
            "parra2016-stencil-order2-8warps.toml",
            ModelId::MwpCwp,
        );
        calibrated_fields_agree::<HongKimInputs>(
            "hong-kim-2009-worked-example.toml",
            ModelId::HongKim,
        );
    }

    #[test]
    fn the_generic_path_gives_the_fast_paths_times() {
        // A model with no entry in MODELS still sweeps: per point through the registry. Its times
        // must be the fast path's (wu here, which has both).
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/analytical/");
        let text = std::fs::read_to_string(format!("{path}wu2019-example.toml")).unwrap();
        let device = Arc::new(catalogue::find("Tesla K40").unwrap().clone());
        let workload = Workload::Inputs {
            name: "wu".into(),
            origin: "wu2019-example.toml".into(),
            text,
        };
        let axes = ["threads_per_block".to_string(), "n_b".to_string()];
        let cx = Context {
            model: ModelId::Wu,
            workload: &workload,
            device: Some(&device),
            axes: &axes,
            first_values: &[128.0, 64.0],
            t_p_us: None,
            t_m_cycles: None,
            calibration: None,
        };
        let fast = prepare_analytical::<WuInputs>(&cx).unwrap();
        let generic = prepare_generic(&cx).unwrap();
        let mut scratch = Scratch::default();
        for point in [[128.0, 64.0], [256.0, 1000.0], [1024.0, 13.0]] {
            let a = fast
                .evaluator
                .evaluate(&point, &mut scratch)
                .unwrap()
                .time_us;
            let b = generic
                .evaluator
                .evaluate(&point, &mut scratch)
                .unwrap()
                .time_us;
            assert!((a - b).abs() <= 1e-9 * a, "{point:?}: {a} vs {b}");
        }
        // A model the registry knows but MODELS does not list gets the generic entry.
        assert_eq!(find("lslag").unwrap().id, ModelId::Lslag);
        assert!(find("nope").is_err());
    }
}
