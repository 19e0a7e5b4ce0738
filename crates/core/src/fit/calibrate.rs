//! Calibration: fitting a model's free parameters to measured kernel times, with bootstrap
//! intervals, the training error and a grouped k-fold cross-validated error, and the calibration
//! file (`CAL.toml`) that `predict` and `evaluate` apply.
//!
//! Measurements become [`Row`]s ([`prepare`]): the device resolved against the catalogue (or the
//! caller's device), and the model inputs (the counters path of `workload::counters`, or
//! `gamma`/`s` parameters for `lslag`). [`predict_row`] evaluates a model on a row, uncalibrated
//! (`None`) or with parameters.
//!
//! Free parameters, each within physical bounds ([`param_specs`]):
//! - `roofline`: compute and memory efficiency (fractions of the peaks, 0.001..1) and the launch
//!   overhead (0..100 µs): `t = max(compute / e_c, memory / e_m) + t_launch`.
//! - `mwp-cwp`, `hong-kim`, `wu`: a DRAM latency scale (0.1..10), the departure delay (0.5..200
//!   cycles), an arithmetic latency scale (0.1..10) and the launch overhead (0..100 µs), added to
//!   the model's time.
//! - `lslag`: `alpha`, `beta` of the GPU element, `t = (alpha / gamma + beta) * s` (µs).
//! - `puchala` (rows naming a built-in kernel, dwt-matrix, dwt-lattice or mtx-mul-vec, with its
//!   parameters `n`, `k`): `t_p` (0..100 µs; the median launch API time when the rows carry one,
//!   puchala2022 section 5.3, and then not fitted), `t_m` (0..200 cycles) and one scale on every
//!   memory duration of the kernel program (0.05..20).
//! - `trace` (rows of the kernel a PTX kernel file names, `fit::trace_calibration`): a DRAM
//!   latency scale and an L2 hit latency scale (0.2..5 each, on the device's latency table) and
//!   the launch overhead (0..100 µs) added to the simulated time.
//!
//! Fitting minimises the mean squared relative error `mean (t_model / t_measured - 1)^2` (so
//! that short and long kernels weigh alike, as the MAPE does). `lslag` is linear in its
//! parameters and is solved exactly by NNLS on rows scaled by `1 / t_measured`; the others use
//! the bounded Nelder-Mead of `fit::nelder_mead`. Fits are per group: per device, or per
//! (device, kernel) with `Scope::Kernel`.
//!
//! Cross-validation keeps every measurement of one problem point (kernel and parameters, e.g.
//! input sizes) in the same fold, so repetitions of a point never sit on both sides. Bootstrap
//! intervals resample rows with replacement (seeded) and give the 2.5 and 97.5 percentiles.
//!
//! This module does no I/O beyond what callers pass; the CLI reads and writes files.

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::measurements::Measurement;
use super::nelder_mead::{minimize, NelderMeadOptions};
use super::split::SplitMix64;
use crate::device::{catalogue, Device};
use crate::error::{Error, Result};
use crate::model::registry::{self, Inputs, ModelId, ParamSpec, Source};
use crate::workload::counters::{self, KernelCounters};

/// A measurement ready for the models.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Index into [`Prepared::devices`].
    pub device: usize,
    pub kernel: String,
    /// The problem point: kernel and parameters (rows with the same key are repetitions).
    pub point: String,
    /// The parameters without the application name: rows of two kernels with the same shape
    /// solve the same problem (for comparisons, puchala2022 eq 21).
    pub shape: String,
    /// The first numeric parameter (the x axis of a series), when there is one.
    pub x: Option<f64>,
    pub measured_us: f64,
    /// The launch API time of the row (puchala2022's `t_p`), when the file has it.
    pub launch_api_us: Option<f64>,
    /// The model's inputs for this row.
    pub inputs: Inputs,
    /// File and line.
    pub source: String,
}

/// Rows with their devices and the notes of the preparation.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub devices: Vec<Device>,
    pub rows: Vec<Row>,
    /// Rows left out, with the reason, counted per reason.
    pub skipped: BTreeMap<String, usize>,
    /// Per device: the assumptions of the counters path.
    pub notes: BTreeMap<String, Vec<String>>,
}

/// Resolves devices and builds the inputs `model` needs for every measurement. With `device`,
/// rows without a device name take it and rows naming another GPU are left out.
pub fn prepare(
    measurements: &[Measurement],
    model: ModelId,
    device: Option<&Device>,
) -> Result<Prepared> {
    prepare_with(measurements, model, device, None)
}

/// As [`prepare`], with the PTX kernel file the `trace` model reads the rows' kernel from
/// (without one, every row is left out of `trace`).
pub fn prepare_with(
    measurements: &[Measurement],
    model: ModelId,
    device: Option<&Device>,
    kernel_file: Option<&super::trace_calibration::KernelFileSource>,
) -> Result<Prepared> {
    let mut devices: Vec<Device> = Vec::new();
    let mut by_label: BTreeMap<String, Option<usize>> = BTreeMap::new();
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    let mut notes = BTreeMap::new();
    let mut lat_cache: BTreeMap<usize, Option<counters::DeviceLatencies>> = BTreeMap::new();
    if let Some(d) = device {
        devices.push(d.clone());
    }
    let mut todo: Vec<(usize, &Measurement)> = Vec::new();
    for m in measurements {
        let idx = match (&m.device, device) {
            (None, Some(_)) => Some(0),
            (None, None) => {
                *skipped
                    .entry("no device name in the row (give `device`)".into())
                    .or_default() += 1;
                None
            }
            (Some(label), given) => {
                let entry = by_label
                    .entry(label.clone())
                    .or_insert_with(|| match given {
                        Some(d) => d.answers_to(label).then_some(0),
                        None => match catalogue::find(label) {
                            Ok(d) => match devices.iter().position(|x| x.name == d.name) {
                                Some(i) => Some(i),
                                None => {
                                    devices.push(d.clone());
                                    Some(devices.len() - 1)
                                }
                            },
                            Err(_) => None,
                        },
                    });
                if entry.is_none() {
                    let why = match given {
                        Some(d) => format!("device `{label}` is not the selected {}", d.name),
                        None => format!("device `{label}` is not in the catalogue"),
                    };
                    *skipped.entry(why).or_default() += 1;
                }
                *entry
            }
        };
        if let Some(i) = idx {
            todo.push((i, m));
        }
    }
    if model.from_counters() {
        for (i, d) in devices.iter().enumerate() {
            match counters::device_latencies(d) {
                Ok(l) => {
                    notes.insert(d.name.clone(), counters::defaults_notes(d)?);
                    lat_cache.insert(i, Some(l));
                }
                Err(e) => {
                    notes.insert(d.name.clone(), vec![e.to_string()]);
                    lat_cache.insert(i, None);
                }
            }
        }
    }
    let tracer = match (model, kernel_file) {
        (ModelId::Trace, Some(src)) => {
            let b = super::trace_calibration::TraceRowBuilder::new(src, &devices);
            for (i, d) in devices.iter().enumerate() {
                notes.insert(d.name.clone(), b.notes(i));
            }
            Some(b)
        }
        _ => None,
    };
    let built: Vec<std::result::Result<Row, String>> = todo
        .par_iter()
        .map(|(i, m)| {
            let inputs = if model == ModelId::Trace {
                let b = tracer
                    .as_ref()
                    .ok_or("trace needs a PTX kernel file (`kernel_file` KERNEL.toml)")?;
                Inputs::Trace(Box::new(b.inputs(*i, m)?))
            } else if model.from_counters() {
                let lat = lat_cache
                    .get(i)
                    .and_then(|l| l.as_ref())
                    .ok_or_else(|| format!("no latency defaults for {}", devices[*i].name))?;
                let k = KernelCounters::from_measurement(m).map_err(|e| short_msg(&e))?;
                let c = counters::inputs(&devices[*i], lat, &k).map_err(|e| short_msg(&e))?;
                registry::model(model)
                    .inputs(&Source::Counters(&c), Some(&devices[*i]))
                    .map_err(|e| short_msg(&e))?
                    .0
            } else if model == ModelId::Puchala {
                let short = m.kernel.split('(').next().unwrap_or(&m.kernel);
                let kernel = crate::model::puchala::Builtin::parse(short).map_err(|_| {
                    "not a built-in puchala2022 kernel (dwt-matrix, dwt-lattice, mtx-mul-vec)"
                        .to_string()
                })?;
                let params = crate::workload::params::ParamValues::new(
                    m.params
                        .iter()
                        .filter_map(|(k, v)| v.as_f64().map(|x| (k.to_ascii_lowercase(), x))),
                );
                kernel.check_params(&params).map_err(|e| short_msg(&e))?;
                let point = crate::model::puchala::PuchalaInputs::builtin(kernel, params);
                registry::model(model)
                    .inputs(&Source::Program(&point), Some(&devices[*i]))
                    .map_err(|e| short_msg(&e))?
                    .0
            } else {
                let num = |names: &[&str]| {
                    names
                        .iter()
                        .find_map(|n| m.params.get(*n).and_then(|v| v.as_f64()))
                };
                let gamma = num(&["gamma"]).ok_or("lslag needs a `gamma` parameter")?;
                let s = num(&["s", "S"]).ok_or("lslag needs an `s` parameter")?;
                if !(gamma > 0.0 && s >= 0.0) {
                    return Err("lslag needs gamma > 0 and s >= 0".to_string());
                }
                registry::model(model)
                    .inputs(
                        &Source::Lslag {
                            gamma,
                            s,
                            params: None,
                        },
                        None,
                    )
                    .map_err(|e| short_msg(&e))?
                    .0
            };
            Ok(Row {
                device: *i,
                kernel: kernel_label(m),
                point: point_key(m),
                shape: m
                    .params
                    .iter()
                    .filter(|(k, _)| k.as_str() != "app")
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join("|"),
                x: series_x(m),
                measured_us: m.time_us,
                launch_api_us: m.launch_api_us,
                inputs,
                source: format!("{}:{}", m.source.file, m.source.line),
            })
        })
        .collect();
    let mut rows = Vec::with_capacity(built.len());
    for r in built {
        match r {
            Ok(r) => rows.push(r),
            Err(why) => *skipped.entry(why).or_default() += 1,
        }
    }
    Ok(Prepared {
        devices,
        rows,
        skipped,
        notes,
    })
}

/// An error's message without the row position (so that skip reasons can be counted).
pub(crate) fn short_msg(e: &Error) -> String {
    let s = e.to_string();
    match s.find(" (") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// The name of a kernel's experiments: `app/kernel` when the row names an application that is
/// not just the kernel (amaris2018's matMul variants share one kernel signature), else the
/// kernel's name; argument lists are dropped.
pub fn kernel_label(m: &Measurement) -> String {
    let short = m
        .kernel
        .split('(')
        .next()
        .unwrap_or(&m.kernel)
        .trim()
        .to_string();
    match m.params.get("app").and_then(|v| v.as_str()) {
        Some(app) if !app.is_empty() && app != short => format!("{app}/{short}"),
        _ => short,
    }
}

/// The problem point of a measurement: kernel and every parameter.
fn point_key(m: &Measurement) -> String {
    let mut k = m.kernel.clone();
    for (name, v) in &m.params {
        k.push_str(&format!("|{name}={v}"));
    }
    k
}

/// The x value of a series: `input_size_1`, `n`, `N`, `size` or the first numeric parameter.
fn series_x(m: &Measurement) -> Option<f64> {
    for n in ["input_size_1", "n", "N", "size", "s"] {
        if let Some(v) = m.params.get(n).and_then(|v| v.as_f64()) {
            return Some(v);
        }
    }
    m.params.values().find_map(|v| v.as_f64())
}

/// The free parameters of a model, in the order of parameter vectors.
pub fn params_of(model: ModelId) -> &'static [ParamSpec] {
    registry::model(model).params()
}

/// The model's time for a row, µs; `params` in the order of the model's parameters
/// (`model::registry::ModelId::params`), `None` for the uncalibrated model. Goes through the
/// registry, as every prediction does.
pub fn predict_row(
    model: ModelId,
    device: &Device,
    row: &Row,
    params: Option<&[f64]>,
) -> Result<f64> {
    registry::model(model).time_us(Some(device), &row.inputs, params)
}

/// A calibration file as it is applied: its parameters with the name and origin notes and
/// errors show (a sweep's calibration axis, `predict --calibration`).
#[derive(Debug, Clone)]
pub struct CalibrationFile {
    /// Shown in the `calibration` column (the file stem).
    pub name: String,
    /// Names the file in errors and notes.
    pub origin: String,
    pub calibration: Calibration,
}

impl CalibrationFile {
    /// The parameter vector for `model` on a device and kernel, with the note that names them,
    /// or an error of one sentence (wrong model, no device, device or kernel not covered).
    pub fn params_for(
        &self,
        model: ModelId,
        device: Option<&Device>,
        kernel: &str,
    ) -> Result<(Vec<f64>, String)> {
        let cal = &self.calibration;
        if cal.model != model {
            return Err(Error::invalid(
                "calibration",
                format!("{} calibrates {}, not {model}", self.origin, cal.model),
            ));
        }
        let device = device.ok_or_else(|| {
            Error::missing(
                "device",
                format!(
                    "the calibration {} is per device: give `device` to run it on",
                    self.origin
                ),
            )
        })?;
        let q = cal.params_for(device, kernel).ok_or_else(|| {
            let kernels: Vec<&str> = cal
                .groups
                .iter()
                .filter(|g| g.device == device.name || device.answers_to(&g.device))
                .filter_map(|g| g.kernel.as_deref())
                .collect();
            if kernel.is_empty() && !kernels.is_empty() {
                return Error::missing(
                    "kernel",
                    format!(
                        "{} is calibrated per kernel on {}; name one of: {}",
                        self.origin,
                        device.name,
                        kernels.join(", ")
                    ),
                );
            }
            let covered: Vec<String> = cal
                .groups
                .iter()
                .map(|g| match &g.kernel {
                    Some(k) => format!("{} ({k})", g.device),
                    None => g.device.clone(),
                })
                .collect();
            Error::invalid(
                "calibration",
                format!(
                    "{} has no parameters for device `{}` and kernel `{kernel}`; it covers: {}",
                    self.origin,
                    device.name,
                    covered.join(", ")
                ),
            )
        })?;
        let note = format!(
            "calibrated with {}: {}",
            self.origin,
            registry::named_params(cal.model, &q)
        );
        Ok((q, note))
    }
}

/// How rows are grouped for fitting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// One parameter set per device.
    Device,
    /// One parameter set per (device, kernel).
    Kernel,
}

impl Scope {
    pub fn parse(text: &str) -> Result<Scope> {
        match text.trim() {
            "device" => Ok(Scope::Device),
            "kernel" => Ok(Scope::Kernel),
            _ => Err(Error::invalid(
                "scope",
                format!("expected `device` or `kernel`, got `{text}`"),
            )),
        }
    }
}

/// Fitting options.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CalibrateOptions {
    pub scope: Scope,
    /// Folds of the grouped cross-validation (0 or 1: none).
    pub folds: usize,
    /// Bootstrap resamples (0: no intervals).
    pub bootstrap: usize,
    pub seed: u64,
    /// Largest number of rows one fit uses (a seeded sample beyond it); errors use every row.
    pub max_fit_rows: usize,
}

impl Default for CalibrateOptions {
    fn default() -> Self {
        Self {
            scope: Scope::Kernel,
            folds: 5,
            bootstrap: 20,
            seed: 2026,
            max_fit_rows: 2000,
        }
    }
}

/// The fitted parameters of one group with their errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupCalibration {
    pub device: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// Rows and distinct problem points behind the fit.
    pub n: usize,
    pub points: usize,
    pub params: BTreeMap<String, f64>,
    /// 95 % bootstrap intervals `[low, high]`.
    #[serde(default)]
    pub intervals: BTreeMap<String, [f64; 2]>,
    /// MAPE and max error on the training rows (fractions).
    pub mape_train: f64,
    pub max_error_train: f64,
    /// Grouped k-fold cross-validated MAPE and max error, when there were enough points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mape_cv: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error_cv: Option<f64>,
}

/// A calibration file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub model: ModelId,
    pub scope: Scope,
    /// The measurement file(s) it was fitted to.
    pub measurements: String,
    pub rows: usize,
    pub folds: usize,
    pub bootstrap: usize,
    pub seed: u64,
    pub objective: String,
    /// Parameter names in order, with their bounds.
    pub parameters: Vec<String>,
    pub groups: Vec<GroupCalibration>,
    #[serde(default)]
    pub notes: Vec<String>,
}

impl Calibration {
    pub fn to_toml(&self) -> Result<String> {
        toml::to_string(self)
            .map_err(|e| Error::invalid("calibration", format!("cannot write TOML: {e}")))
    }

    /// Reads a calibration file's text; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self> {
        let c: Calibration = toml::from_str(text).map_err(|e| Error::file(origin, e.message()))?;
        let specs = params_of(c.model);
        for g in &c.groups {
            for s in specs {
                if !g.params.contains_key(s.name) {
                    return Err(Error::file(
                        origin,
                        format!(
                            "group for device `{}` lacks parameter `{}` of model {}",
                            g.device,
                            s.name,
                            c.model.name()
                        ),
                    ));
                }
            }
        }
        Ok(c)
    }

    /// The parameter vector for a device and kernel: the (device, kernel) group, else the device
    /// group; `None` when the calibration has neither.
    pub fn params_for(&self, device: &Device, kernel: &str) -> Option<Vec<f64>> {
        let on_device =
            |g: &&GroupCalibration| g.device == device.name || device.answers_to(&g.device);
        let g = self
            .groups
            .iter()
            .filter(on_device)
            .find(|g| g.kernel.as_deref() == Some(kernel))
            .or_else(|| {
                self.groups
                    .iter()
                    .filter(on_device)
                    .find(|g| g.kernel.is_none())
            })?;
        Some(
            params_of(self.model)
                .iter()
                .map(|s| g.params[s.name])
                .collect(),
        )
    }

    /// The cross-validated MAPE of a device (and kernel) group, when there is one.
    pub fn group_for(&self, device: &str, kernel: Option<&str>) -> Option<&GroupCalibration> {
        self.groups
            .iter()
            .find(|g| g.device == device && (g.kernel.is_none() || g.kernel.as_deref() == kernel))
    }
}

/// Relative errors of a model with parameters on some rows; a failed prediction is an error of 1.
fn relative_errors(model: ModelId, devices: &[Device], rows: &[&Row], q: &[f64]) -> Vec<f64> {
    rows.iter()
        .map(
            |r| match predict_row(model, &devices[r.device], r, Some(q)) {
                Ok(t) if t.is_finite() => t / r.measured_us - 1.0,
                _ => 1.0,
            },
        )
        .collect()
}

/// Fits one group's parameters.
pub fn fit_rows(model: ModelId, devices: &[Device], rows: &[&Row]) -> Result<Vec<f64>> {
    fit_rows_from(model, devices, rows, None)
}

/// As [`fit_rows`], also trying `extra_start` (the bootstrap starts from the group's estimate,
/// so that a resample lands in the same basin rather than in another local minimum).
pub fn fit_rows_from(
    model: ModelId,
    devices: &[Device],
    rows: &[&Row],
    extra_start: Option<&[f64]>,
) -> Result<Vec<f64>> {
    let specs = params_of(model);
    if rows.is_empty() {
        return Err(Error::invalid("measurements", "no rows to fit"));
    }
    if model == ModelId::Lslag {
        // Linear: t/t_meas = alpha * (s / gamma) / t_meas + beta * s / t_meas, NNLS on 1.
        let mut a = super::Matrix::zeros(rows.len(), 2);
        let b = vec![1.0; rows.len()];
        for (i, r) in rows.iter().enumerate() {
            if let Inputs::Lslag(crate::model::lslag::LslagInputs { gamma, s, .. }) = r.inputs {
                a.set(i, 0, s / gamma / r.measured_us);
                a.set(i, 1, s / r.measured_us);
            }
        }
        return Ok(super::nnls::nnls(&a, &b)?.x);
    }
    if model == ModelId::Trace {
        return fit_trace(devices, rows, extra_start);
    }
    let mut lower: Vec<f64> = specs.iter().map(|s| s.lower).collect();
    let mut upper: Vec<f64> = specs.iter().map(|s| s.upper).collect();
    let mut first_start = specs.iter().map(|s| s.start).collect::<Vec<f64>>();
    if model == ModelId::Puchala {
        // puchala2022 section 5.3: t_p is the median launch API time when the data has it.
        let mut api: Vec<f64> = rows.iter().filter_map(|r| r.launch_api_us).collect();
        if !api.is_empty() {
            api.sort_by(f64::total_cmp);
            let t_p = percentile(&api, 0.5);
            lower[0] = t_p;
            upper[0] = t_p;
            first_start[0] = t_p;
        }
    }
    let objective = |q: &[f64]| {
        let e = relative_errors(model, devices, rows, q);
        e.iter().map(|x| x * x).sum::<f64>() / e.len() as f64
    };
    // A few starts (the models have kinks); keep the best.
    let mut starts: Vec<Vec<f64>> = vec![first_start.clone()];
    let mut alt = first_start;
    alt[1] = (specs[1].start * 0.2).max(specs[1].lower);
    starts.push(alt);
    if let Some(x) = extra_start {
        let mut x = x.to_vec();
        // A fixed t_p (launch API median) stays fixed.
        for (k, v) in x.iter_mut().enumerate() {
            *v = v.clamp(lower[k], upper[k]);
        }
        starts.push(x);
    }
    let mut best: Option<(Vec<f64>, f64)> = None;
    for s in starts {
        let m = minimize(objective, &s, &lower, &upper, &NelderMeadOptions::default())?;
        if best.as_ref().is_none_or(|(_, v)| m.value < *v) {
            best = Some((m.x, m.value));
        }
    }
    Ok(best.map(|b| b.0).unwrap_or_default())
}

/// The trace fit. The launch overhead enters linearly, so for given latency scales its best value
/// is closed-form: with simulated times `s_i` and measured `m_i`, `sum ((s_i + o) / m_i - 1)^2`
/// is least at `o = sum (1 - s_i / m_i) / m_i / sum 1 / m_i^2` (clamped to its bounds). The
/// bounded Nelder-Mead then searches the two latency scales only, from a grid of starts (the
/// simulated time is piecewise linear in the latencies, with kinks where a resource changes
/// hands, so a single start can stop on a kink).
fn fit_trace(devices: &[Device], rows: &[&Row], extra_start: Option<&[f64]>) -> Result<Vec<f64>> {
    let specs = params_of(ModelId::Trace);
    let (o_lo, o_hi) = (specs[2].lower, specs[2].upper);
    let simulate = |q: &[f64]| -> Vec<Option<f64>> {
        rows.iter()
            .map(|r| {
                predict_row(
                    ModelId::Trace,
                    &devices[r.device],
                    r,
                    Some(&[q[0], q[1], 0.0]),
                )
                .ok()
                .filter(|t| t.is_finite())
            })
            .collect()
    };
    let best_overhead = |sim: &[Option<f64>]| {
        let (mut num, mut den) = (0.0, 0.0);
        for (r, s) in rows.iter().zip(sim) {
            if let Some(s) = s {
                num += (1.0 - s / r.measured_us) / r.measured_us;
                den += 1.0 / (r.measured_us * r.measured_us);
            }
        }
        if den > 0.0 {
            (num / den).clamp(o_lo, o_hi)
        } else {
            o_lo
        }
    };
    let objective = |q: &[f64]| {
        let sim = simulate(q);
        let o = best_overhead(&sim);
        rows.iter()
            .zip(&sim)
            .map(|(r, s)| match s {
                Some(s) => ((s + o) / r.measured_us - 1.0).powi(2),
                None => 1.0,
            })
            .sum::<f64>()
            / rows.len() as f64
    };
    let lower = [specs[0].lower, specs[1].lower];
    let upper = [specs[0].upper, specs[1].upper];
    let mut starts: Vec<[f64; 2]> = Vec::new();
    for a in [0.5, 1.0, 2.0] {
        for b in [0.5, 1.0, 2.0] {
            starts.push([a, b]);
        }
    }
    if let Some(x) = extra_start {
        starts.insert(
            0,
            [
                x[0].clamp(lower[0], upper[0]),
                x[1].clamp(lower[1], upper[1]),
            ],
        );
    }
    let mut best: Option<(Vec<f64>, f64)> = None;
    for s in starts {
        let m = minimize(objective, &s, &lower, &upper, &NelderMeadOptions::default())?;
        if best.as_ref().is_none_or(|(_, v)| m.value < *v) {
            best = Some((m.x, m.value));
        }
        if best.as_ref().is_some_and(|(_, v)| *v < 1e-24) {
            break;
        }
    }
    let mut q = best.map(|b| b.0).unwrap_or_else(|| vec![1.0, 1.0]);
    let o = best_overhead(&simulate(&q));
    q.push(o);
    Ok(q)
}

fn mape_max(errors: &[f64]) -> (f64, f64) {
    let n = errors.len().max(1) as f64;
    (
        errors.iter().map(|e| e.abs()).sum::<f64>() / n,
        errors.iter().map(|e| e.abs()).fold(0.0, f64::max),
    )
}

/// A seeded sample of at most `max` rows (all when fewer).
fn sample<'a>(rows: &[&'a Row], max: usize, rng: &mut SplitMix64) -> Vec<&'a Row> {
    if rows.len() <= max || max == 0 {
        return rows.to_vec();
    }
    let mut idx: Vec<usize> = (0..rows.len()).collect();
    rng.shuffle(&mut idx);
    idx.truncate(max);
    idx.sort_unstable();
    idx.into_iter().map(|i| rows[i]).collect()
}

/// Calibrates every group of `prepared`.
pub fn calibrate(
    model: ModelId,
    prepared: &Prepared,
    options: &CalibrateOptions,
    source: &str,
) -> Result<Calibration> {
    calibrate_with_progress(model, prepared, options, source, &|_, _| {})
}

/// As [`calibrate`]; `progress(done, total)` is called as each group's fit finishes.
pub fn calibrate_with_progress(
    model: ModelId,
    prepared: &Prepared,
    options: &CalibrateOptions,
    source: &str,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Calibration> {
    let mut groups: BTreeMap<(usize, Option<String>), Vec<&Row>> = BTreeMap::new();
    for r in &prepared.rows {
        let kernel = match options.scope {
            Scope::Device => None,
            Scope::Kernel => Some(r.kernel.clone()),
        };
        groups.entry((r.device, kernel)).or_default().push(r);
    }
    if groups.is_empty() {
        return Err(Error::invalid(
            "measurements",
            format!(
                "no row can be used by {} (skipped: {})",
                model.name(),
                skipped_text(&prepared.skipped)
            ),
        ));
    }
    let specs = params_of(model);
    let devices = &prepared.devices;
    let keys: Vec<_> = groups.keys().cloned().collect();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let total = keys.len();
    let fitted: Vec<Result<GroupCalibration>> = keys
        .par_iter()
        .enumerate()
        .map(|(gi, key)| {
            let rows = &groups[key];
            let mut rng = SplitMix64::new(options.seed ^ (gi as u64).wrapping_mul(0x9e37_79b9));
            let q = fit_rows(
                model,
                devices,
                &sample(rows, options.max_fit_rows, &mut rng),
            )?;
            let (mape_train, max_train) = mape_max(&relative_errors(model, devices, rows, &q));
            // Grouped k-fold: points are shuffled and dealt to folds.
            let mut points: Vec<&str> = rows.iter().map(|r| r.point.as_str()).collect();
            points.sort_unstable();
            points.dedup();
            let n_points = points.len();
            let (mut mape_cv, mut max_cv) = (None, None);
            if options.folds >= 2 && n_points >= options.folds {
                rng.shuffle(&mut points);
                let fold_of: BTreeMap<&str, usize> = points
                    .iter()
                    .enumerate()
                    .map(|(i, p)| (*p, i % options.folds))
                    .collect();
                let mut errors = Vec::with_capacity(rows.len());
                for f in 0..options.folds {
                    let train: Vec<&Row> = rows
                        .iter()
                        .copied()
                        .filter(|r| fold_of[r.point.as_str()] != f)
                        .collect();
                    let test: Vec<&Row> = rows
                        .iter()
                        .copied()
                        .filter(|r| fold_of[r.point.as_str()] == f)
                        .collect();
                    let qf = fit_rows(
                        model,
                        devices,
                        &sample(&train, options.max_fit_rows, &mut rng),
                    )?;
                    errors.extend(relative_errors(model, devices, &test, &qf));
                }
                let (a, b) = mape_max(&errors);
                mape_cv = Some(a);
                max_cv = Some(b);
            }
            let mut intervals = BTreeMap::new();
            if options.bootstrap > 0 {
                let mut draws: Vec<Vec<f64>> = vec![Vec::new(); specs.len()];
                let m = rows.len().min(options.max_fit_rows.max(1));
                for _ in 0..options.bootstrap {
                    let resample: Vec<&Row> = (0..m)
                        .map(|_| rows[rng.below(rows.len() as u64) as usize])
                        .collect();
                    let qb = fit_rows_from(model, devices, &resample, Some(&q))?;
                    for (k, v) in qb.into_iter().enumerate() {
                        draws[k].push(v);
                    }
                }
                for (k, s) in specs.iter().enumerate() {
                    let d = &mut draws[k];
                    d.sort_by(f64::total_cmp);
                    intervals.insert(
                        s.name.to_string(),
                        [percentile(d, 0.025), percentile(d, 0.975)],
                    );
                }
            }
            progress(
                done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1,
                total,
            );
            Ok(GroupCalibration {
                device: devices[key.0].name.clone(),
                kernel: key.1.clone(),
                n: rows.len(),
                points: n_points,
                params: specs
                    .iter()
                    .zip(&q)
                    .map(|(s, v)| (s.name.to_string(), *v))
                    .collect(),
                intervals,
                mape_train,
                max_error_train: max_train,
                mape_cv,
                max_error_cv: max_cv,
            })
        })
        .collect();
    let groups = fitted.into_iter().collect::<Result<Vec<_>>>()?;
    let mut notes = Vec::new();
    if !prepared.skipped.is_empty() {
        notes.push(format!(
            "rows left out: {}",
            skipped_text(&prepared.skipped)
        ));
    }
    notes.push(format!(
        "each fit uses at most {} rows (a seeded sample); errors are computed on every row",
        options.max_fit_rows
    ));
    if options.bootstrap > 0 {
        notes.push(format!(
            "intervals: 2.5 and 97.5 percentiles of {} fits to resamples (with replacement) of min(n, {}) rows, each started also from the group's estimate",
            options.bootstrap, options.max_fit_rows
        ));
    }
    Ok(Calibration {
        model,
        scope: options.scope,
        measurements: source.to_string(),
        rows: prepared.rows.len(),
        folds: options.folds,
        bootstrap: options.bootstrap,
        seed: options.seed,
        objective: "mean squared relative error (t_model / t_measured - 1)^2".into(),
        parameters: specs
            .iter()
            .map(|s| {
                format!(
                    "{} in [{}, {}]",
                    s.name,
                    s.lower,
                    if s.upper == f64::MAX {
                        "inf".to_string()
                    } else {
                        s.upper.to_string()
                    }
                )
            })
            .collect(),
        groups,
        notes,
    })
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = p * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// "reason (count), ..." for notes.
pub fn skipped_text(skipped: &BTreeMap<String, usize>) -> String {
    if skipped.is_empty() {
        return "none".into();
    }
    skipped
        .iter()
        .map(|(k, v)| format!("{k} ({v})"))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::measurements::{Counters, Dim3};

    /// Counter rows over a range of sizes: some compute-bound, some memory-bound.
    fn synthetic_rows(n: usize) -> Vec<Measurement> {
        (0..n)
            .map(|i| {
                let size = 1u64 << (8 + i % 12);
                let mut m =
                    Measurement::new(if i % 2 == 0 { "a" } else { "b" }, 1.0, "synthetic", i + 2);
                m.device = Some("GTX-680".into());
                m.grid = Some(Dim3::new(size.div_ceil(256).max(1), 1, 1));
                m.block = Some(Dim3::new(256, 1, 1));
                m.params
                    .insert("input_size_1".into(), serde_json::json!(size));
                m.params.insert("rep".into(), serde_json::json!(i / 24));
                let warps = (size.div_ceil(256).max(1) * 8) as f64;
                // Kernel "a": many instructions per byte; "b": few.
                let inst_per_warp = if i % 2 == 0 { 400.0 } else { 20.0 };
                m.counters = Some(Counters {
                    regs_per_thread: Some(20),
                    warps_launched: Some(warps),
                    inst_executed: Some(warps * inst_per_warp),
                    gld_transactions: Some(warps * 4.0),
                    gst_transactions: Some(warps),
                    dram_read_transactions: Some(warps * 4.0 * (1.0 + (i % 5) as f64)),
                    dram_write_transactions: Some(warps),
                    ..Counters::default()
                });
                m
            })
            .collect()
    }

    fn with_model_times(model: ModelId, truth: &[f64], ms: &mut [Measurement]) -> Prepared {
        let p = prepare(ms, model, None).unwrap();
        for (r, m) in p.rows.iter().zip(ms.iter_mut()) {
            m.time_us = predict_row(model, &p.devices[r.device], r, Some(truth)).unwrap();
        }
        prepare(ms, model, None).unwrap()
    }

    #[test]
    fn roofline_calibration_recovers_its_own_parameters() {
        let truth = [0.35, 0.8, 4.2];
        let mut ms = synthetic_rows(96);
        let p = with_model_times(ModelId::Roofline, &truth, &mut ms);
        assert_eq!(p.rows.len(), 96);
        let opts = CalibrateOptions {
            scope: Scope::Device,
            folds: 4,
            bootstrap: 3,
            ..CalibrateOptions::default()
        };
        let c = calibrate(ModelId::Roofline, &p, &opts, "synthetic").unwrap();
        assert_eq!(c.groups.len(), 1);
        let g = &c.groups[0];
        for (s, t) in params_of(ModelId::Roofline).iter().zip(truth) {
            assert!(
                (g.params[s.name] - t).abs() < 1e-6,
                "{}: {} vs {t}",
                s.name,
                g.params[s.name]
            );
        }
        assert!(g.mape_train < 1e-6);
        // The cross-validated error is its own number, also near zero on noise-free data.
        let cv = g.mape_cv.expect("cross-validated");
        assert!(cv < 1e-5, "{cv}");
        // The file round-trips and applies.
        let text = c.to_toml().unwrap();
        let back = Calibration::from_toml(&text, "cal.toml").unwrap();
        let q = back.params_for(&p.devices[0], "a").unwrap();
        assert!((q[0] - truth[0]).abs() < 1e-6);
    }

    #[test]
    fn wu_calibration_recovers_its_own_parameters() {
        // Latency-bound rows: the departure delay and latency scale both matter.
        let truth = [1.7, 6.0, 0.8, 2.5];
        let mut ms = synthetic_rows(48);
        let p = with_model_times(ModelId::Wu, &truth, &mut ms);
        let opts = CalibrateOptions {
            scope: Scope::Device,
            folds: 0,
            bootstrap: 0,
            ..CalibrateOptions::default()
        };
        let c = calibrate(ModelId::Wu, &p, &opts, "synthetic").unwrap();
        let g = &c.groups[0];
        assert!(g.mape_train < 1e-6, "{g:?}");
        assert!(g.mape_cv.is_none());
        // Identifiable parameters: the launch overhead and the time they produce.
        assert!(
            (g.params["launch_overhead_us"] - truth[3]).abs() < 1e-4,
            "{g:?}"
        );
    }

    #[test]
    fn lslag_calibration_is_exact_nnls() {
        let (alpha, beta) = (30.0, 0.5);
        let mut ms = Vec::new();
        for (i, gamma) in [1.0, 2.0, 4.0, 8.0].iter().enumerate() {
            for s in [10.0, 100.0, 1000.0] {
                let mut m = Measurement::new("k", (alpha / gamma + beta) * s, "lslag", i + 2);
                m.device = Some("GTX-680".into());
                m.params.insert("gamma".into(), serde_json::json!(gamma));
                m.params.insert("s".into(), serde_json::json!(s));
                ms.push(m);
            }
        }
        let p = prepare(&ms, ModelId::Lslag, None).unwrap();
        let c = calibrate(
            ModelId::Lslag,
            &p,
            &CalibrateOptions {
                bootstrap: 5,
                ..Default::default()
            },
            "x",
        )
        .unwrap();
        let g = &c.groups[0];
        assert!((g.params["alpha_us"] - alpha).abs() < 1e-6);
        assert!((g.params["beta_us"] - beta).abs() < 1e-6);
        assert!(g.mape_cv.unwrap() < 1e-9);
    }

    fn puchala_rows(truth: &[f64], api_us: Option<f64>) -> Vec<Measurement> {
        let mut ms = Vec::new();
        for k in [8.0, 12.0] {
            for e in 6..=16 {
                let mut m = Measurement::new("dwt_matrix", 1.0, "p", ms.len() + 2);
                m.device = Some("GTX 1070 (puchala2022)".into());
                m.params.insert("n".into(), serde_json::json!(2f64.powi(e)));
                m.params.insert("k".into(), serde_json::json!(k));
                m.launch_api_us = api_us;
                ms.push(m);
            }
        }
        let p = prepare(&ms, ModelId::Puchala, None).unwrap();
        assert_eq!(p.rows.len(), ms.len(), "{:?}", p.skipped);
        for (r, m) in p.rows.iter().zip(ms.iter_mut()) {
            m.time_us =
                predict_row(ModelId::Puchala, &p.devices[r.device], r, Some(truth)).unwrap();
        }
        ms
    }

    #[test]
    fn puchala_calibration_recovers_t_p_t_m_and_memory_scale() {
        let truth = [6.5, 23.0, 1.4];
        let ms = puchala_rows(&truth, None);
        let p = prepare(&ms, ModelId::Puchala, None).unwrap();
        let opts = CalibrateOptions {
            scope: Scope::Kernel,
            folds: 0,
            bootstrap: 0,
            ..Default::default()
        };
        let g = &calibrate(ModelId::Puchala, &p, &opts, "p").unwrap().groups[0];
        for (s, t) in params_of(ModelId::Puchala).iter().zip(truth) {
            assert!(
                (g.params[s.name] - t).abs() < 1e-6,
                "{}: {} vs {t}",
                s.name,
                g.params[s.name]
            );
        }
        // With launch API times in the data, t_p is their median and is not fitted.
        let ms = puchala_rows(&truth, Some(6.5));
        let p = prepare(&ms, ModelId::Puchala, None).unwrap();
        let g = &calibrate(ModelId::Puchala, &p, &opts, "p").unwrap().groups[0];
        assert_eq!(g.params["t_p_us"], 6.5);
        assert!((g.params["t_m_cycles"] - 23.0).abs() < 1e-6, "{g:?}");
    }

    #[test]
    fn unknown_models_and_missing_rows() {
        assert_eq!("puchala".parse::<ModelId>().unwrap(), ModelId::Puchala);
        assert!("nope".parse::<ModelId>().is_err());
        let ms = vec![Measurement::new("k", 1.0, "f", 2)];
        let p = prepare(&ms, ModelId::Roofline, None).unwrap();
        assert!(p.rows.is_empty());
        assert!(calibrate(ModelId::Roofline, &p, &CalibrateOptions::default(), "f").is_err());
    }
}
