//! Measurements become rows for the models: the device resolved against the catalogue (or the
//! caller's device), the model's inputs through the registry (the counters path, a built-in
//! puchala kernel, LSLAG factors, or an emulated launch of a PTX kernel file), the problem point
//! that groups repetitions, and the reasons rows are left out.

use std::collections::{BTreeMap, BTreeSet};

use rayon::prelude::*;

use crate::device::{catalogue, Device};
use crate::error::{Error, Result};
use crate::fit::measurements::Measurement;
use crate::model::registry::{self, Inputs, ModelId, Source};
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
    /// The reasons of `skipped` that are about the row's device (no name, not in the catalogue,
    /// not the selected one); every other reason is about the model's inputs.
    pub skipped_for_device: BTreeSet<String>,
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
    kernel_file: Option<&crate::fit::trace_calibration::KernelFileSource>,
) -> Result<Prepared> {
    let mut devices: Vec<Device> = Vec::new();
    let mut by_label: BTreeMap<String, Option<usize>> = BTreeMap::new();
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    let mut skipped_for_device = BTreeSet::new();
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
                let why = "no device name in the row (give `device`)".to_string();
                *skipped.entry(why.clone()).or_default() += 1;
                skipped_for_device.insert(why);
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
                    *skipped.entry(why.clone()).or_default() += 1;
                    skipped_for_device.insert(why);
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
            let b = crate::fit::trace_calibration::TraceRowBuilder::new(src, &devices);
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
        skipped_for_device,
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
