//! Evaluating models against measurements: per experiment (one kernel on one device over its
//! parameter series) the ratios `r_k`, MAPE, max mismatch and Kendall tau-b; per model and device
//! the eq 19 aggregates; comparison errors (eq 21-22) between two variants of the same kernel
//! measured on the same problem points.
//!
//! A model runs uncalibrated, and again with its calibration when one is given (reported as
//! `<model> (calibrated)`, with the calibration's cross-validated MAPE beside it). Rows a model
//! cannot predict are counted per reason, never silently dropped. Predictions run in parallel
//! over rows (rayon). This module does no I/O; `eval::report` writes the outputs.

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::Serialize;

use super::metrics;
use crate::error::Result;
use crate::fit::calibrate::{predict_row, Calibration, Prepared};
use crate::fit::rank::kendall_tau_b;
use crate::model::ModelId;

/// One evaluated row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Point {
    pub x: Option<f64>,
    pub measured_us: f64,
    pub model_us: f64,
    pub ratio: f64,
}

/// Accuracy of one experiment (eq 15, 16, Kendall tau-b).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Experiment {
    pub model: String,
    pub device: String,
    pub kernel: String,
    pub n: usize,
    pub mape: f64,
    pub max_error: f64,
    pub kendall_tau: Option<f64>,
    pub t_min_us: f64,
    pub t_max_us: f64,
    /// The calibration's cross-validated MAPE of this (device, kernel), when calibrated per kernel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mape_cv: Option<f64>,
    /// The evaluated rows in series order; JSON shows their ratios `r_k` (fractions) only.
    #[serde(rename = "ratios", serialize_with = "ratios_only")]
    pub points: Vec<Point>,
}

fn ratios_only<S: serde::Serializer>(
    points: &[Point],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.collect_seq(points.iter().map(|p| p.ratio))
}

/// eq 19 over one model's experiments on one device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelDeviceAggregate {
    pub model: String,
    pub device: String,
    pub n: usize,
    pub experiments: usize,
    /// Mean of the experiments' MAPE (a fraction).
    pub mape: f64,
    /// Maximum of the experiments' max mismatch (a fraction).
    pub max_error: f64,
    /// Kendall tau-b over every row of the model on the device.
    pub kendall_tau: Option<f64>,
    /// Mean of the calibration groups' cross-validated MAPE on this device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mape_cv: Option<f64>,
}

/// eq 21-22 for two variants of one kernel on one device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub model: String,
    pub device: String,
    pub a: String,
    pub b: String,
    pub n: usize,
    pub mean_error: f64,
    pub max_error: f64,
}

/// Why a measured row has no prediction, in the few kinds a summary counts (the exact reasons
/// stay in [`RunSummary::left_out`]). In the order a row meets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LeftOutKind {
    /// The row names no device, or one that is not in the catalogue or not the selected one.
    Device,
    /// The model's inputs cannot be built from the row (counters or parameters missing).
    Inputs,
    /// The calibration has no group for the row's kernel and device (nor a fallback).
    NoCalibrationGroup,
    /// The model failed on the row or gave a non-finite or negative time.
    Prediction,
}

impl LeftOutKind {
    /// A short phrase for summaries.
    pub fn phrase(self) -> &'static str {
        match self {
            LeftOutKind::Device => "device unknown or not selected",
            LeftOutKind::Inputs => "model inputs missing",
            LeftOutKind::NoCalibrationGroup => "no calibration group",
            LeftOutKind::Prediction => "prediction failed",
        }
    }
}

/// What happened to the rows of one model run: how many were predicted, how many were left
/// out and why (before the run, when the rows were read for the model, and when predicting),
/// and for a calibrated run which calibration groups (fallback steps) gave the parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub model: String,
    /// Measurement rows read.
    pub rows: usize,
    pub predicted: usize,
    /// Rows left out, per reason (reasons of the preparation start with `read: `).
    pub left_out: BTreeMap<String, usize>,
    /// The same rows counted per kind of reason; the counts add up to `rows - predicted`.
    pub left_out_by_kind: BTreeMap<LeftOutKind, usize>,
    /// Calibrated runs: rows per calibration group used (`group ..., fallback step k of 7: ...`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub groups_used: BTreeMap<String, usize>,
}

impl RunSummary {
    /// Rows left out, all reasons.
    pub fn left_out_total(&self) -> usize {
        self.left_out.values().sum()
    }
}

/// Everything an evaluation found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluation {
    pub measurements: String,
    /// Rows the models could read (after the preparation left some out; see `runs`).
    pub rows: usize,
    /// Per model run: rows predicted and left out, per reason.
    pub runs: Vec<RunSummary>,
    pub aggregates: Vec<ModelDeviceAggregate>,
    pub experiments: Vec<Experiment>,
    pub comparisons: Vec<Comparison>,
    /// Per model: rows it could not predict, counted per reason.
    pub failed: BTreeMap<String, BTreeMap<String, usize>>,
    pub notes: Vec<String>,
}

/// One model run to evaluate: the model and optionally its calibration.
pub struct Run<'a> {
    pub model: ModelId,
    pub calibration: Option<&'a Calibration>,
    /// The label in tables instead of `model` / `model (calibrated)` (e.g. to tell two
    /// calibrations of one model apart).
    pub label: Option<String>,
}

impl<'a> Run<'a> {
    /// The uncalibrated model.
    pub fn plain(model: ModelId) -> Self {
        Self {
            model,
            calibration: None,
            label: None,
        }
    }

    /// The model with a calibration.
    pub fn calibrated(model: ModelId, calibration: &'a Calibration) -> Self {
        Self {
            model,
            calibration: Some(calibration),
            label: None,
        }
    }

    pub fn label(&self) -> String {
        if let Some(l) = &self.label {
            return l.clone();
        }
        match self.calibration {
            Some(_) => format!("{} (calibrated)", self.model.name()),
            None => self.model.name().to_string(),
        }
    }
}

/// Evaluates each run on the prepared rows; `progress` advances by one per predicted row.
pub fn evaluate(
    prepared: &Prepared,
    runs: &[Run],
    source: &str,
    progress: &dyn crate::progress::Progress,
) -> Result<Evaluation> {
    let mut experiments = Vec::new();
    let mut aggregates = Vec::new();
    let mut comparisons = Vec::new();
    let mut failed = BTreeMap::new();
    let mut summaries = Vec::new();
    let read_total = prepared.rows.len() + prepared.skipped.values().sum::<usize>();
    for run in runs {
        let label = run.label();
        // Per row: the time, or why not; and the calibration group that gave the parameters.
        type Outcome = (
            std::result::Result<f64, (LeftOutKind, String)>,
            Option<(usize, String)>,
        );
        let results: Vec<Outcome> = prepared
            .rows
            .par_iter()
            .map(|r| {
                progress.advance(1);
                let device = &prepared.devices[r.device];
                let (params, group) = match run.calibration {
                    Some(c) => match c.lookup(device, &r.kernel) {
                        Some(l) => (Some(l.params), Some((l.group, l.how))),
                        None => {
                            let why = c.no_group_reason(device, &r.kernel);
                            return (Err((LeftOutKind::NoCalibrationGroup, why)), None);
                        }
                    },
                    None => (None, None),
                };
                let t = match predict_row(run.model, device, r, params.as_deref()) {
                    Ok(t) if t.is_finite() && t >= 0.0 => Ok(t),
                    Ok(t) => Err(format!("non-finite or negative prediction {t}")),
                    Err(e) => Err(short(&e.to_string())),
                };
                let t = t.map_err(|why| (LeftOutKind::Prediction, why));
                (t, group)
            })
            .collect();
        let mut by_exp: BTreeMap<(usize, String), Vec<Point>> = BTreeMap::new();
        let mut fails: BTreeMap<String, usize> = BTreeMap::new();
        let mut by_kind: BTreeMap<LeftOutKind, usize> = BTreeMap::new();
        for (why, n) in &prepared.skipped {
            let kind = if prepared.skipped_for_device.contains(why) {
                LeftOutKind::Device
            } else {
                LeftOutKind::Inputs
            };
            *by_kind.entry(kind).or_default() += n;
        }
        let mut groups_used: BTreeMap<String, usize> = BTreeMap::new();
        // Per experiment: the calibration groups its rows used.
        let mut exp_groups: BTreeMap<(usize, String), Vec<usize>> = BTreeMap::new();
        for (r, (res, group)) in prepared.rows.iter().zip(results) {
            match res {
                Ok(t) => {
                    by_exp
                        .entry((r.device, r.kernel.clone()))
                        .or_default()
                        .push(Point {
                            x: r.x,
                            measured_us: r.measured_us,
                            model_us: t,
                            ratio: t / r.measured_us,
                        });
                    if let Some((gi, how)) = group {
                        *groups_used.entry(how).or_default() += 1;
                        let v = exp_groups.entry((r.device, r.kernel.clone())).or_default();
                        if !v.contains(&gi) {
                            v.push(gi);
                        }
                    }
                }
                Err((kind, why)) => {
                    *fails.entry(why).or_default() += 1;
                    *by_kind.entry(kind).or_default() += 1;
                }
            }
        }
        let predicted: usize = by_exp.values().map(Vec::len).sum();
        let mut left_out: BTreeMap<String, usize> = prepared
            .skipped
            .iter()
            .map(|(k, v)| (format!("read: {k}"), *v))
            .collect();
        for (k, v) in &fails {
            *left_out.entry(k.clone()).or_default() += v;
        }
        summaries.push(RunSummary {
            model: label.clone(),
            rows: read_total,
            predicted,
            left_out,
            left_out_by_kind: by_kind,
            groups_used,
        });
        if !fails.is_empty() {
            failed.insert(label.clone(), fails);
        }
        // A calibration group's cross-validated MAPE speaks for these rows only when the group
        // was fitted on this device alone.
        let own_cv = |dev: usize, gis: &[usize]| -> Option<f64> {
            let c = run.calibration?;
            let name = &prepared.devices[dev].name;
            let cvs: Vec<f64> = gis
                .iter()
                .map(|&g| &c.groups[g])
                .filter(|g| g.devices.len() == 1 && &g.devices[0] == name)
                .filter_map(|g| g.mape_cv)
                .collect();
            (cvs.len() == gis.len() && !cvs.is_empty())
                .then(|| cvs.iter().sum::<f64>() / cvs.len() as f64)
        };
        let mut per_device: BTreeMap<usize, Vec<Experiment>> = BTreeMap::new();
        for ((dev, kernel), mut points) in by_exp {
            points.sort_by(|a, b| {
                a.x.unwrap_or(0.0)
                    .total_cmp(&b.x.unwrap_or(0.0))
                    .then(a.measured_us.total_cmp(&b.measured_us))
            });
            let model_us: Vec<f64> = points.iter().map(|p| p.model_us).collect();
            let measured: Vec<f64> = points.iter().map(|p| p.measured_us).collect();
            let acc = metrics::experiment_accuracy(&model_us, &measured)?;
            let device = &prepared.devices[dev];
            let gis = exp_groups
                .get(&(dev, kernel.clone()))
                .cloned()
                .unwrap_or_default();
            // Only a kernel group's CV is an error of this experiment's rows.
            let mape_cv = own_cv(dev, &gis).filter(|_| {
                run.calibration
                    .is_some_and(|c| gis.iter().all(|&g| c.groups[g].kernel.is_some()))
            });
            per_device.entry(dev).or_default().push(Experiment {
                model: label.clone(),
                device: device.name.clone(),
                kernel,
                n: acc.n,
                mape: acc.mape,
                max_error: acc.max_error,
                kendall_tau: kendall_tau_b(&model_us, &measured)?,
                t_min_us: acc.t_min_us,
                t_max_us: acc.t_max_us,
                mape_cv,
                points,
            });
        }
        for (dev, exps) in per_device {
            let device = &prepared.devices[dev];
            let accs: Vec<metrics::ExperimentAccuracy> = exps
                .iter()
                .map(|e| metrics::ExperimentAccuracy {
                    n: e.n,
                    ratios: Vec::new(),
                    mape: e.mape,
                    max_error: e.max_error,
                    t_min_us: e.t_min_us,
                    t_max_us: e.t_max_us,
                })
                .collect();
            let agg = metrics::aggregate(&accs)?;
            let all_model: Vec<f64> = exps
                .iter()
                .flat_map(|e| e.points.iter().map(|p| p.model_us))
                .collect();
            let all_measured: Vec<f64> = exps
                .iter()
                .flat_map(|e| e.points.iter().map(|p| p.measured_us))
                .collect();
            let mut gis: Vec<usize> = exp_groups
                .iter()
                .filter(|((d, _), _)| *d == dev)
                .flat_map(|(_, v)| v.iter().copied())
                .collect();
            gis.sort_unstable();
            gis.dedup();
            let mape_cv = own_cv(dev, &gis);
            aggregates.push(ModelDeviceAggregate {
                model: label.clone(),
                device: device.name.clone(),
                n: agg.n,
                experiments: agg.experiments,
                mape: agg.mean_error,
                max_error: agg.max_error,
                kendall_tau: kendall_tau_b(&all_model, &all_measured)?,
                mape_cv,
            });
            comparisons.extend(compare(&label, &device.name, &exps, prepared, dev)?);
            experiments.extend(exps);
        }
    }
    let mut notes = Vec::new();
    if !prepared.skipped.is_empty() {
        notes.push(format!(
            "rows left out before evaluation: {}",
            crate::fit::calibrate::skipped_text(&prepared.skipped)
        ));
    }
    for (d, n) in &prepared.notes {
        for line in n {
            notes.push(format!("{d}: {line}"));
        }
    }
    Ok(Evaluation {
        measurements: source.to_string(),
        rows: prepared.rows.len(),
        runs: summaries,
        aggregates,
        experiments,
        comparisons,
        failed,
        notes,
    })
}

fn short(s: &str) -> String {
    match s.find(" (") {
        Some(i) => s[..i].to_string(),
        None => s.to_string(),
    }
}

/// Comparisons between variants of one kernel (same name after the `app/` prefix) over the problem
/// points both were measured on; repetitions of a point are averaged first.
fn compare(
    label: &str,
    device: &str,
    exps: &[Experiment],
    prepared: &Prepared,
    dev: usize,
) -> Result<Vec<Comparison>> {
    // Mean measured and modelled time per (kernel, shape), from the rows in the same order as
    // the predictions: recompute from points is not possible (points lack the shape), so pair
    // rows and points by (kernel, x, measured).
    let mut per: BTreeMap<&str, BTreeMap<&str, (f64, f64, usize)>> = BTreeMap::new();
    for e in exps {
        let mut lookup: BTreeMap<(u64, u64), Vec<f64>> = BTreeMap::new();
        for p in &e.points {
            lookup
                .entry((p.x.unwrap_or(0.0).to_bits(), p.measured_us.to_bits()))
                .or_default()
                .push(p.model_us);
        }
        for r in prepared
            .rows
            .iter()
            .filter(|r| r.device == dev && r.kernel == e.kernel)
        {
            if let Some(m) = lookup
                .get_mut(&(r.x.unwrap_or(0.0).to_bits(), r.measured_us.to_bits()))
                .and_then(|v| v.pop())
            {
                let s = per
                    .entry(e.kernel.as_str())
                    .or_default()
                    .entry(r.shape.as_str())
                    .or_insert((0.0, 0.0, 0));
                s.0 += r.measured_us;
                s.1 += m;
                s.2 += 1;
            }
        }
    }
    let base = |k: &str| k.rsplit('/').next().unwrap_or(k).to_string();
    let kernels: Vec<&str> = per.keys().copied().collect();
    let mut out = Vec::new();
    for (i, a) in kernels.iter().enumerate() {
        for b in &kernels[i + 1..] {
            if base(a) != base(b) || !a.contains('/') {
                continue;
            }
            let (pa, pb) = (&per[a], &per[b]);
            let shared: Vec<&str> = pa.keys().filter(|s| pb.contains_key(*s)).copied().collect();
            if shared.len() < 2 {
                continue;
            }
            let mean = |v: &(f64, f64, usize)| (v.0 / v.2 as f64, v.1 / v.2 as f64);
            let (mut am, mut ad, mut bm, mut bd) = (vec![], vec![], vec![], vec![]);
            for s in shared {
                let (d, m) = mean(&pa[s]);
                ad.push(d);
                am.push(m);
                let (d, m) = mean(&pb[s]);
                bd.push(d);
                bm.push(m);
            }
            if bm.iter().any(|v| *v <= 0.0) {
                continue;
            }
            let c = metrics::comparison_accuracy(&am, &ad, &bm, &bd)?;
            out.push(Comparison {
                model: label.to_string(),
                device: device.to_string(),
                a: a.to_string(),
                b: b.to_string(),
                n: c.n,
                mean_error: c.mean_error,
                max_error: c.max_error,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::calibrate::{prepare, CalibrateOptions, Scope};
    use crate::fit::measurements::{Counters, Dim3, Measurement};

    fn rows() -> Vec<Measurement> {
        let mut out = Vec::new();
        for app in ["mm_a", "mm_b"] {
            for (i, n) in [256u64, 512, 1024, 2048].iter().enumerate() {
                let mut m = Measurement::new("mm(float*)", 0.0, "t.csv", i + 2);
                m.device = Some("GTX-680".into());
                m.grid = Some(Dim3::new(n / 16, 1, 1));
                m.block = Some(Dim3::new(128, 1, 1));
                m.params.insert("app".into(), serde_json::json!(app));
                m.params.insert("input_size_1".into(), serde_json::json!(n));
                let w = (n / 16 * 4) as f64;
                let k = if app == "mm_a" { 1.0 } else { 3.0 };
                m.counters = Some(Counters {
                    regs_per_thread: Some(10),
                    warps_launched: Some(w),
                    inst_executed: Some(w * 100.0 * k),
                    gld_transactions: Some(w * 8.0),
                    gst_transactions: Some(w),
                    dram_read_transactions: Some(w * 8.0 * k),
                    dram_write_transactions: Some(w),
                    ..Counters::default()
                });
                // Measured: a launch term plus a per-warp cost (made up for the test).
                m.time_us = 10.0 + 0.01 * w * k;
                out.push(m);
            }
        }
        out
    }

    /// Roofline calibrated per kernel on `p`, without a bootstrap.
    fn kernel_calibration(p: &Prepared, folds: usize) -> Calibration {
        crate::fit::calibrate::calibrate(
            ModelId::Roofline,
            p,
            &CalibrateOptions {
                scopes: vec![Scope::Kernel],
                folds,
                bootstrap: 0,
                ..Default::default()
            },
            "t.csv",
        )
        .unwrap()
    }

    #[test]
    fn experiments_aggregates_and_comparisons() {
        let ms = rows();
        let p = prepare(&ms, ModelId::Roofline, None).unwrap();
        let cal = kernel_calibration(&p, 2);
        let runs = [
            Run::plain(ModelId::Roofline),
            Run::calibrated(ModelId::Roofline, &cal),
        ];
        let e = evaluate(&p, &runs, "t.csv", &crate::progress::Quiet).unwrap();
        // Two variants x two runs.
        assert_eq!(e.experiments.len(), 4);
        assert_eq!(e.aggregates.len(), 2);
        for x in &e.experiments {
            assert_eq!(x.n, 4);
            // MAPE is the mean of |1 - r|, recomputed here by hand.
            let m: f64 = x
                .points
                .iter()
                .map(|p| (1.0 - p.model_us / p.measured_us).abs())
                .sum::<f64>()
                / 4.0;
            assert!((x.mape - m).abs() < 1e-12);
        }
        let cal_agg = e
            .aggregates
            .iter()
            .find(|a| a.model == "roofline (calibrated)")
            .unwrap();
        assert!(cal_agg.mape_cv.is_some());
        assert!(e
            .aggregates
            .iter()
            .find(|a| a.model == "roofline")
            .unwrap()
            .mape_cv
            .is_none());
        // mm_a and mm_b are variants of `mm` on the same sizes: one comparison per run.
        assert_eq!(e.comparisons.len(), 2);
        assert_eq!(e.comparisons[0].n, 4);
    }

    /// Each left-out row is counted once, under the kind of its reason: a device not in the
    /// catalogue, a row without counters, and the rows of a kernel the calibration has no
    /// group for.
    #[test]
    fn rows_left_out_are_counted_per_kind() {
        let mut ms = rows();
        let mut unknown = ms[0].clone();
        unknown.device = Some("Voodoo-5".into());
        let mut bare = ms[1].clone();
        bare.counters = None;
        ms.push(unknown);
        ms.push(bare);
        // Calibrated on the four mm_a rows only, per kernel: no group for mm_b.
        let train = prepare(&ms[..4], ModelId::Roofline, None).unwrap();
        let cal = kernel_calibration(&train, 0);
        let p = prepare(&ms, ModelId::Roofline, None).unwrap();
        let runs = [
            Run::plain(ModelId::Roofline),
            Run::calibrated(ModelId::Roofline, &cal),
        ];
        let e = evaluate(&p, &runs, "t.csv", &crate::progress::Quiet).unwrap();
        let kinds = |r: &RunSummary| -> Vec<(LeftOutKind, usize)> {
            r.left_out_by_kind.iter().map(|(k, n)| (*k, *n)).collect()
        };
        // 10 rows: 8 with counters on a known GPU, one on an unknown GPU, one without counters.
        let plain = &e.runs[0];
        assert_eq!((plain.rows, plain.predicted), (10, 8));
        assert_eq!(
            kinds(plain),
            [(LeftOutKind::Device, 1), (LeftOutKind::Inputs, 1)]
        );
        let calibrated = &e.runs[1];
        assert_eq!((calibrated.rows, calibrated.predicted), (10, 4));
        assert_eq!(
            kinds(calibrated),
            [
                (LeftOutKind::Device, 1),
                (LeftOutKind::Inputs, 1),
                (LeftOutKind::NoCalibrationGroup, 4)
            ]
        );
        for r in &e.runs {
            assert_eq!(r.left_out_total(), r.rows - r.predicted);
            assert_eq!(
                r.left_out_by_kind.values().sum::<usize>(),
                r.left_out_total()
            );
        }
    }
}
