//! Design spaces: what a sweep runs over, as written (`SpaceSpec`, from flags or a TOML file)
//! and resolved (`Space`: prepared cells times the parameter points).
//!
//! A space has five kinds of axis: models, workloads (puchala kernels and analytical inputs
//! files), devices (catalogue names, device files, or filters such as
//! `compute_capability>=8.0,sm_count>=40`), calibrations (`kerneltime calibrate` files, or
//! `none`), and kernel parameters / launch dimensions (`--param`, parsed by `workload::params`).
//! A *cell* is one (model, workload, device, calibration) with its evaluator prepared once; the points of a space are the cells times the parameter points,
//! numbered cell-major with the first parameter axis varying slowest, so that point `i` is always
//! the same configuration (the basis of deterministic output and of resuming).
//!
//! This module validates and enumerates; it does not run models (`registry`) or write files
//! (`sweep`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use super::registry::{self, CalibrationFile, Context, Evaluator, Workload};
use crate::device::{catalogue, normalize, ComputeCapability, Device};
use crate::error::{Error, Result};
use crate::fit::calibrate::Calibration;
use crate::model::puchala::{Builtin, KernelSpec};
use crate::workload::params::{number_json, parse_axis, Axis};
use crate::workload::program::ProgramFile;

/// Default `--max-points`.
pub const DEFAULT_MAX_POINTS: u64 = 50_000_000;

/// A space as the user wrote it (flags or a `--space FILE.toml`).
///
/// ```toml
/// models = ["wu"]
/// inputs = ["wu2019-example.toml"]          # relative to this file
/// devices = ["Tesla K40", "compute_capability>=8.0,sm_count>=40"]
/// params = ["threads_per_block=32..1024:32", "n_b=2^6..2^12"]
/// calibrations = ["wu-k40.toml", "none"]    # relative to this file; `none`: uncalibrated
/// ```
///
/// A calibration runs with the cells of the model it calibrates; `none` runs with every model.
/// Without calibrations every cell is uncalibrated. A model of the sweep that no listed value
/// covers, a calibration of a model the sweep does not run, or one without parameters for a
/// swept device (and kernel) is an error.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpaceSpec {
    #[serde(default)]
    pub models: Vec<String>,
    /// puchala kernels: built-in names or kernel program files.
    #[serde(default)]
    pub kernels: Vec<String>,
    /// Analytical inputs files (`MODEL=FILE` for one model only).
    #[serde(default)]
    pub inputs: Vec<PathBuf>,
    /// Catalogue names or filters.
    #[serde(default)]
    pub devices: Vec<String>,
    #[serde(default)]
    pub device_files: Vec<PathBuf>,
    /// `NAME=SPEC` as for `--param`.
    #[serde(default)]
    pub params: Vec<String>,
    pub t_p_us: Option<f64>,
    pub t_m_cycles: Option<f64>,
    /// Calibration files, or `none` for uncalibrated cells.
    #[serde(default)]
    pub calibrations: Vec<String>,
    /// PTX kernel files written from flags (`sweep --ptx ...`), for the trace model: not a
    /// space-file key (a space file lists such files under `inputs` as `trace=FILE`).
    #[serde(skip)]
    pub trace_kernels: Vec<GeneratedInput>,
}

/// An inputs text made by the caller rather than read from a file.
#[derive(Debug, Clone)]
pub struct GeneratedInput {
    /// The workload's name in the output (the kernel column).
    pub name: String,
    /// What error messages name as its origin.
    pub origin: String,
    pub text: String,
}

impl SpaceSpec {
    /// Reads a space file; relative paths in it are relative to the file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = crate::error::read_text_file(path, "a space or inputs file")?;
        let mut spec: SpaceSpec = toml::from_str(&text).map_err(|e| {
            Error::file(
                path,
                e.message().to_string() + &crate::device::toml_position(&text, e.span()),
            )
        })?;
        let dir = path.parent().unwrap_or(Path::new(""));
        let rebase = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = dir.join(&*p);
            }
        };
        spec.inputs.iter_mut().for_each(rebase);
        spec.device_files.iter_mut().for_each(rebase);
        for c in &mut spec.calibrations {
            if !c.eq_ignore_ascii_case("none") && Path::new(c).is_relative() {
                *c = dir.join(&*c).display().to_string();
            }
        }
        for k in &mut spec.kernels {
            if k.ends_with(".toml") && Path::new(k).is_relative() {
                *k = dir.join(&*k).display().to_string();
            }
        }
        Ok(spec)
    }

    /// `other`'s non-empty fields replace this spec's (flags over a file).
    pub fn overridden_by(mut self, other: SpaceSpec) -> Self {
        macro_rules! take {
            ($($f:ident),*) => {$(if !other.$f.is_empty() { self.$f = other.$f; })*};
        }
        take!(
            models,
            kernels,
            inputs,
            devices,
            device_files,
            params,
            calibrations,
            trace_kernels
        );
        self.t_p_us = other.t_p_us.or(self.t_p_us);
        self.t_m_cycles = other.t_m_cycles.or(self.t_m_cycles);
        self
    }
}

/// One (model, workload, device) with its prepared evaluator.
pub struct Cell {
    pub model: &'static str,
    pub kernel: String,
    /// The device name, or `none` for analytical models run on the inputs file's own values.
    pub device: String,
    /// The device's SM count (NaN without a device), for objectives such as time x SMs.
    pub sm_count: f64,
    /// The calibration file's stem, or `none`.
    pub calibration: String,
    pub evaluator: Box<dyn Evaluator>,
    pub notes: Vec<String>,
}

/// A resolved space: cells times parameter points.
pub struct Space {
    pub cells: Vec<Cell>,
    pub axes: Vec<Axis>,
    /// Points per cell.
    pub points_per_cell: u64,
    /// Distinct model names in the order given.
    pub models: Vec<&'static str>,
    /// A hash of everything that decides the output (models, workload texts, devices, axes,
    /// free parameters): a checkpoint only resumes the same sweep.
    pub fingerprint: u64,
}

impl Space {
    /// Resolves a spec: parses the axes, finds the devices, prepares every cell. Errors are one
    /// sentence each, naming the flag.
    pub fn build(spec: &SpaceSpec, max_points: u64) -> Result<Space> {
        let mut fp = Fnv::new();
        if spec.models.is_empty() {
            return Err(Error::missing(
                "model",
                "give at least one model to sweep (e.g. `model` wu)",
            ));
        }
        let mut models: Vec<&'static str> = Vec::new();
        for m in &spec.models {
            for name in m.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let entry = registry::find(name)?;
                if !models.contains(&entry.name()) {
                    models.push(entry.name());
                }
            }
        }
        // Parameter axes.
        let mut axes: Vec<Axis> = Vec::new();
        for text in &spec.params {
            let axis = parse_axis(text, "param")?;
            if axis.values.is_empty() {
                return Err(Error::invalid(
                    format!("param {}", axis.name),
                    "has no values",
                ));
            }
            if axes.iter().any(|a| a.name.eq_ignore_ascii_case(&axis.name)) {
                return Err(Error::invalid(
                    format!("param {}", axis.name),
                    "is given twice; give all its values in one flag (e.g. n=64,128)",
                ));
            }
            axes.push(axis);
        }
        let points_per_cell = axes
            .iter()
            .fold(1u64, |acc, a| acc.saturating_mul(a.values.len() as u64));
        // Workloads.
        let mut kernels = Vec::new();
        for k in &spec.kernels {
            for name in k.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                kernels.push(load_kernel(name, &mut fp)?);
            }
        }
        // Analytical inputs files, each for every analytical model or, written `MODEL=FILE`, for one.
        let mut inputs: Vec<(Option<&'static str>, Workload)> = Vec::new();
        for given in &spec.inputs {
            let text_path = given.to_string_lossy();
            let (only, path) = match text_path.split_once('=') {
                Some((m, p)) if m.parse::<crate::model::ModelId>().is_ok() => {
                    (Some(registry::find(m)?.name()), PathBuf::from(p))
                }
                _ => (None, given.clone()),
            };
            let text = crate::error::read_text_file(&path, "a space or inputs file")?;
            fp.add(text.as_bytes());
            fp.add(only.unwrap_or("").as_bytes());
            let name = path.file_stem().map_or_else(
                || path.display().to_string(),
                |s| s.to_string_lossy().into_owned(),
            );
            inputs.push((
                only,
                Workload::Inputs {
                    name,
                    origin: path.display().to_string(),
                    text,
                },
            ));
        }
        for g in &spec.trace_kernels {
            fp.add(g.text.as_bytes());
            fp.add(b"trace");
            inputs.push((
                Some(registry::find("trace")?.name()),
                Workload::Inputs {
                    name: g.name.clone(),
                    origin: g.origin.clone(),
                    text: g.text.clone(),
                },
            ));
        }
        let inputs_for = |m: &str| -> Vec<&Workload> {
            inputs
                .iter()
                .filter(|(only, _)| only.is_none_or(|o| o == m))
                .map(|(_, w)| w)
                .collect()
        };
        let kernel_refs: Vec<&Workload> = kernels.iter().collect();
        let devices = resolve_devices(&spec.devices, &spec.device_files, &mut fp)?;
        let calibrations = load_calibrations(&spec.calibrations, &models, &mut fp)?;
        let calibrations_for = |m: &str| -> Vec<Option<&CalibrationFile>> {
            calibrations
                .iter()
                .filter(|c| c.as_ref().is_none_or(|c| c.calibration.model.name() == m))
                .map(Option::as_ref)
                .collect()
        };
        // Count before preparing anything expensive.
        let mut cell_count = 0u64;
        for m in &models {
            let cals = calibrations_for(m).len();
            if cals == 0 {
                return Err(Error::missing(
                    "calibration",
                    format!(
                        "no calibration on the axis is for model {m}; add ``calibration` none` to run it uncalibrated"
                    ),
                ));
            }
            let w = if registry::takes_kernels(m) {
                kernels.len()
            } else {
                inputs_for(m).len()
            };
            if w == 0 {
                let entry = registry::find(m)?;
                return Err(Error::missing(
                    if registry::takes_kernels(m) {
                        "kernel"
                    } else {
                        "inputs"
                    },
                    format!("model {m} needs {}", entry.takes),
                ));
            }
            cell_count += (w * devices.len().max(1) * cals) as u64;
        }
        let total = cell_count.saturating_mul(points_per_cell);
        if total > max_points {
            return Err(Error::invalid(
                "max_points",
                format!(
                    "the space has {total} points ({cell_count} model/kernel/device cells x {points_per_cell} parameter points), more than the limit of {max_points}; narrow it or raise `max_points`"
                ),
            ));
        }
        let names: Vec<String> = axes.iter().map(|a| a.name.clone()).collect();
        let first: Vec<f64> = axes.iter().map(|a| a.values[0]).collect();
        let mut used = vec![false; axes.len()];
        let mut cells = Vec::new();
        for m in &models {
            let entry = registry::find(m)?;
            let workloads = if registry::takes_kernels(m) {
                kernel_refs.clone()
            } else {
                inputs_for(m)
            };
            for w in workloads {
                let device_list: Vec<Option<&Arc<Device>>> = if devices.is_empty() {
                    vec![None]
                } else {
                    devices.iter().map(Some).collect()
                };
                for d in device_list {
                    for cal in calibrations_for(m) {
                        let cx = Context {
                            model: entry.id,
                            workload: w,
                            device: d,
                            axes: &names,
                            first_values: &first,
                            t_p_us: spec.t_p_us,
                            t_m_cycles: spec.t_m_cycles,
                            calibration: cal,
                        };
                        let prepared = (entry.prepare)(&cx)?;
                        for (u, p) in used.iter_mut().zip(&prepared.uses) {
                            *u |= *p;
                        }
                        cells.push(Cell {
                            model: entry.name(),
                            kernel: w.name().to_string(),
                            device: d.map_or_else(|| "none".to_string(), |d| d.name.clone()),
                            sm_count: d.map_or(f64::NAN, |d| f64::from(d.sm_count)),
                            calibration: cal.map_or_else(|| "none".to_string(), |c| c.name.clone()),
                            evaluator: prepared.evaluator,
                            notes: prepared.notes,
                        });
                    }
                }
            }
        }
        if let Some(i) = used.iter().position(|u| !u) {
            return Err(Error::invalid(
                format!("param {}", axes[i].name),
                format!(
                    "no model of the sweep ({}) reads a parameter of this name",
                    models.join(", ")
                ),
            ));
        }
        for m in &models {
            fp.add(m.as_bytes());
        }
        for c in &cells {
            fp.add(c.kernel.as_bytes());
            fp.add(c.device.as_bytes());
            fp.add(c.calibration.as_bytes());
        }
        for a in &axes {
            fp.add(a.name.as_bytes());
            for v in &a.values {
                fp.add(&v.to_bits().to_le_bytes());
            }
        }
        for v in [spec.t_p_us, spec.t_m_cycles] {
            fp.add(&v.map_or(u64::MAX, f64::to_bits).to_le_bytes());
        }
        Ok(Space {
            cells,
            axes,
            points_per_cell,
            models,
            fingerprint: fp.0,
        })
    }

    /// Number of points.
    pub fn len(&self) -> u64 {
        self.cells.len() as u64 * self.points_per_cell
    }

    /// Whether the space has no point.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The cell and the per-axis value indices of point `index`.
    pub fn decode(&self, index: u64, value_index: &mut [usize]) -> usize {
        let cell = (index / self.points_per_cell) as usize;
        let mut rest = index % self.points_per_cell;
        for (slot, axis) in value_index.iter_mut().zip(&self.axes).rev() {
            let n = axis.values.len() as u64;
            *slot = (rest % n) as usize;
            rest /= n;
        }
        cell
    }

    /// Advances `value_index` to the next point; returns whether the cell changed.
    pub fn advance(&self, value_index: &mut [usize]) -> bool {
        for (slot, axis) in value_index.iter_mut().zip(&self.axes).rev() {
            *slot += 1;
            if *slot < axis.values.len() {
                return false;
            }
            *slot = 0;
        }
        true
    }

    /// The values of point `index`, one per axis.
    pub fn values(&self, index: u64) -> (usize, Vec<f64>) {
        let mut vi = vec![0; self.axes.len()];
        let cell = self.decode(index, &mut vi);
        let values = self
            .axes
            .iter()
            .zip(&vi)
            .map(|(a, &i)| a.values[i])
            .collect();
        (cell, values)
    }

    /// The parameters of point `index` as a JSON object.
    pub fn params_json(&self, index: u64) -> serde_json::Map<String, serde_json::Value> {
        let (_, values) = self.values(index);
        self.axes
            .iter()
            .zip(values)
            .map(|(a, v)| (a.name.clone(), number_json(v)))
            .collect()
    }
}

/// The calibration axis: each item a calibration file or `none` (`None`); no item is one
/// uncalibrated value. A calibration of a model the sweep does not run is an error.
fn load_calibrations(
    items: &[String],
    models: &[&'static str],
    fp: &mut Fnv,
) -> Result<Vec<Option<CalibrationFile>>> {
    if items.is_empty() {
        return Ok(vec![None]);
    }
    let mut out: Vec<Option<CalibrationFile>> = Vec::new();
    for item in items {
        let item = item.trim();
        if item.eq_ignore_ascii_case("none") {
            fp.add(b"none");
            if !out.iter().any(Option::is_none) {
                out.push(None);
            }
            continue;
        }
        let path = Path::new(item);
        let text = crate::error::read_text_file(path, "a space or inputs file")?;
        let origin = path.display().to_string();
        let calibration = Calibration::from_toml(&text, &origin)?;
        let model = calibration.model.name();
        if !models.contains(&model) {
            return Err(Error::invalid(
                "calibration",
                format!(
                    "{origin} calibrates {model}, not a model of this sweep ({})",
                    models.join(", ")
                ),
            ));
        }
        let name = path
            .file_stem()
            .map_or_else(|| origin.clone(), |s| s.to_string_lossy().into_owned());
        if out.iter().flatten().any(|c| c.name == name) {
            return Err(Error::invalid(
                "calibration",
                format!(
                    "two calibrations are named `{name}`; rename one (the column shows file stems)"
                ),
            ));
        }
        fp.add(name.as_bytes());
        fp.add(text.as_bytes());
        out.push(Some(CalibrationFile {
            name,
            origin,
            calibration,
        }));
    }
    Ok(out)
}

/// A built-in kernel name or a kernel program file.
fn load_kernel(name: &str, fp: &mut Fnv) -> Result<Workload> {
    fp.add(name.as_bytes());
    if name.ends_with(".toml") || Path::new(name).exists() {
        let path = Path::new(name);
        let file = ProgramFile::load(path)?;
        let text =
            std::fs::read(path).map_err(|e| Error::file(path, format!("cannot read: {e}")))?;
        fp.add(&text);
        let stem = path
            .file_stem()
            .map_or_else(|| name.to_string(), |s| s.to_string_lossy().into_owned());
        return Ok(Workload::Kernel(KernelSpec::from_file(file, &stem)));
    }
    Builtin::parse(name).map(|b| Workload::Kernel(b.spec()))
}

// ---------------------------------------------------------------------------------------------
// devices

/// One condition of a device filter.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub field: String,
    pub op: Op,
    pub value: String,
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Ge,
    Le,
    Gt,
    Lt,
    Eq,
    Ne,
}

/// Device fields a filter can test (numbers unless noted).
pub const FILTER_FIELDS: &[&str] = &[
    "name (text)",
    "architecture (text)",
    "compute_capability",
    "sm_count",
    "cores_per_sm",
    "core_clock_mhz",
    "boost_clock_mhz",
    "memory_bandwidth_gbs",
    "l2_cache_bytes",
    "memory_size_bytes",
    "max_threads_per_block",
    "max_warps_per_sm",
    "registers_per_sm",
    "shared_memory_per_sm_bytes",
];

/// Parses `FIELD OP VALUE` (OP one of `>=`, `<=`, `!=`, `>`, `<`, `=`).
pub fn parse_condition(text: &str) -> Option<Result<Condition>> {
    const OPS: [(&str, Op); 7] = [
        (">=", Op::Ge),
        ("<=", Op::Le),
        ("!=", Op::Ne),
        ("==", Op::Eq),
        (">", Op::Gt),
        ("<", Op::Lt),
        ("=", Op::Eq),
    ];
    let (pos, sym, op) = OPS
        .iter()
        .filter_map(|(s, o)| text.find(s).map(|p| (p, *s, *o)))
        .min_by_key(|(p, s, _)| (*p, std::cmp::Reverse(s.len())))?;
    let field = text[..pos].trim().to_ascii_lowercase();
    let value = text[pos + sym.len()..].trim().to_string();
    let known = FILTER_FIELDS
        .iter()
        .any(|f| f.split(' ').next() == Some(field.as_str()));
    if !known {
        return Some(Err(Error::invalid(
            "device",
            format!(
                "`{field}` in filter `{text}` is not a device field; filters can test: {}",
                FILTER_FIELDS.join(", ")
            ),
        )));
    }
    if value.is_empty() {
        return Some(Err(Error::invalid(
            "device",
            format!("filter `{text}` has no value after `{sym}`"),
        )));
    }
    let c = Condition { field, op, value };
    // Check the value's type once.
    if let Some(Err(e)) = catalogue::all().first().map(|d| c.matches(d)) {
        return Some(Err(e));
    }
    Some(Ok(c))
}

impl Condition {
    /// Whether a device satisfies the condition (an error for a malformed value).
    pub fn matches(&self, d: &Device) -> Result<bool> {
        let bad = |what: &str| {
            Error::invalid(
                "device",
                format!(
                    "`{}` in the filter on {} is not {what}",
                    self.value, self.field
                ),
            )
        };
        let text = |s: &str| -> Result<bool> {
            let eq = normalize(s) == normalize(&self.value);
            match self.op {
                Op::Eq => Ok(eq),
                Op::Ne => Ok(!eq),
                _ => Err(bad("comparable: text fields take = or != only")),
            }
        };
        let ord = |o: std::cmp::Ordering| -> bool {
            use std::cmp::Ordering::*;
            match self.op {
                Op::Ge => o != Less,
                Op::Le => o != Greater,
                Op::Gt => o == Greater,
                Op::Lt => o == Less,
                Op::Eq => o == Equal,
                Op::Ne => o != Equal,
            }
        };
        let num = |v: f64| -> Result<bool> {
            let x: f64 = self.value.parse().map_err(|_| bad("a number"))?;
            Ok(v.partial_cmp(&x).is_some_and(ord))
        };
        let l = &d.limits;
        match self.field.as_str() {
            "name" => Ok(match self.op {
                Op::Eq => d.answers_to(&self.value),
                Op::Ne => !d.answers_to(&self.value),
                _ => return Err(bad("comparable: text fields take = or != only")),
            }),
            "architecture" => text(&d.architecture),
            "compute_capability" => {
                let cc = ComputeCapability::parse(&self.value)
                    .map_err(|_| bad("a compute capability such as 8.0"))?;
                Ok(ord(d.compute_capability.cmp(&cc)))
            }
            "sm_count" => num(f64::from(d.sm_count)),
            "cores_per_sm" => num(f64::from(d.cores_per_sm)),
            "core_clock_mhz" => num(d.core_clock_mhz),
            "boost_clock_mhz" => num(d.boost_clock_mhz),
            "memory_bandwidth_gbs" => num(d.memory_bandwidth_gbs),
            "l2_cache_bytes" => num(d.l2_cache_bytes as f64),
            "memory_size_bytes" => match d.memory_size_bytes {
                Some(v) => num(v as f64),
                None => Ok(false),
            },
            "max_threads_per_block" => num(f64::from(l.max_threads_per_block)),
            "max_warps_per_sm" => num(f64::from(l.max_warps_per_sm)),
            "registers_per_sm" => num(f64::from(l.registers_per_sm)),
            "shared_memory_per_sm_bytes" => num(f64::from(l.shared_memory_per_sm_bytes)),
            other => Err(Error::invalid(
                "device",
                format!("`{other}` is not a device field"),
            )),
        }
    }
}

/// Devices from names, filters and files, in the order given, without duplicates.
///
/// Each `--device` item is split at commas: parts without an operator are names (any of them),
/// parts with one are conditions that must all hold. An item cannot mix the two.
pub fn resolve_devices(
    items: &[String],
    files: &[PathBuf],
    fp: &mut Fnv,
) -> Result<Vec<Arc<Device>>> {
    let mut out: Vec<Arc<Device>> = Vec::new();
    let push = |d: Device, out: &mut Vec<Arc<Device>>| {
        if !out.iter().any(|x| x.name == d.name) {
            out.push(Arc::new(d));
        }
    };
    for item in items {
        let parts: Vec<&str> = item
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if parts.is_empty() {
            return Err(Error::invalid("device", "an empty device item"));
        }
        let mut conditions = Vec::new();
        let mut names = Vec::new();
        for p in &parts {
            match parse_condition(p) {
                Some(c) => conditions.push(c?),
                None => names.push(*p),
            }
        }
        if !conditions.is_empty() && !names.is_empty() {
            return Err(Error::invalid(
                "device",
                format!(
                    "`{item}` mixes device names and filter conditions; give them as separate `device` flags"
                ),
            ));
        }
        for n in names {
            push(catalogue::find(n)?.clone(), &mut out);
        }
        if !conditions.is_empty() {
            let mut matched = 0;
            for d in catalogue::all() {
                let mut ok = true;
                for c in &conditions {
                    ok &= c.matches(d)?;
                }
                if ok {
                    matched += 1;
                    push(d.clone(), &mut out);
                }
            }
            if matched == 0 {
                return Err(Error::invalid(
                    "device",
                    format!("no catalogue device matches the filter `{item}`"),
                ));
            }
        }
    }
    for f in files {
        let text = std::fs::read(f).map_err(|e| Error::file(f, format!("cannot read: {e}")))?;
        fp.add(&text);
        push(Device::load(f)?, &mut out);
    }
    Ok(out)
}

/// FNV-1a, 64 bits: a small stable hash for checkpoints (not for security).
#[derive(Debug, Clone, Copy)]
pub struct Fnv(pub u64);

impl Fnv {
    pub fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    pub fn add(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
        // A separator, so that ("ab", "c") and ("a", "bc") differ.
        self.0 ^= 0xff;
        self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
    }
}

impl Default for Fnv {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_parse_and_match() {
        let c = parse_condition("compute_capability>=8.0").unwrap().unwrap();
        assert_eq!(c.op, Op::Ge);
        assert_eq!(c.value, "8.0");
        assert!(parse_condition("Tesla K40").is_none());
        assert!(parse_condition("speed>=3").unwrap().is_err());
        assert!(parse_condition("sm_count>=many").unwrap().is_err());
        assert!(parse_condition("architecture>=Ampere").unwrap().is_err());
    }

    #[test]
    fn filters_combine_with_and() {
        let mut fp = Fnv::new();
        let all = resolve_devices(&["compute_capability>=8.0".into()], &[], &mut fp).unwrap();
        assert!(!all.is_empty());
        assert!(all
            .iter()
            .all(|d| d.compute_capability >= ComputeCapability::new(8, 0)));
        let both = resolve_devices(
            &["compute_capability>=8.0,sm_count>=80".into()],
            &[],
            &mut fp,
        )
        .unwrap();
        assert!(both.len() <= all.len());
        assert!(both.iter().all(|d| d.sm_count >= 80));
        assert!(resolve_devices(&["sm_count>=100000".into()], &[], &mut fp).is_err());
        assert!(resolve_devices(&["Tesla K40,sm_count>=2".into()], &[], &mut fp).is_err());
    }

    #[test]
    fn decode_is_the_inverse_of_advance() {
        let spec = SpaceSpec {
            models: vec!["puchala".into()],
            kernels: vec!["dwt-matrix".into()],
            devices: vec!["GeForce RTX 2080 (puchala2022)".into()],
            params: vec!["n=2^6..2^8".into(), "k=8,10".into()],
            ..Default::default()
        };
        let s = Space::build(&spec, 1000).unwrap();
        assert_eq!(s.len(), 6);
        let mut vi = vec![0; 2];
        s.decode(0, &mut vi);
        for i in 1..s.len() {
            s.advance(&mut vi);
            let mut fresh = vec![0; 2];
            s.decode(i, &mut fresh);
            assert_eq!(vi, fresh);
        }
        // n varies slowest: point 3 is (n = 128, k = 10).
        assert_eq!(s.values(3).1, vec![128.0, 10.0]);
    }
}
