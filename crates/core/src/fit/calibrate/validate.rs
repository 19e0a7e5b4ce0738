//! Calibrating every group of prepared rows: the fit on (a seeded sample of) the rows, the
//! training error, grouped k-fold cross-validation (a problem point never sits on both sides) and
//! seeded bootstrap intervals, with progress reported as groups finish.

use std::collections::BTreeMap;

use rayon::prelude::*;

use super::fit::{fit_rows, fit_rows_from, mape_max, relative_errors};
use super::{params_of, skipped_text, Calibration, GroupCalibration, Prepared, Row, Scope};
use crate::error::{Error, Result};
use crate::fit::split::SplitMix64;
use crate::model::registry::ModelId;

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
    calibrate_with_progress(model, prepared, options, source, &crate::progress::Quiet)
}

/// As [`calibrate`], reporting one stage of `fits` (one per group) to `progress`.
pub fn calibrate_with_progress(
    model: ModelId,
    prepared: &Prepared,
    options: &CalibrateOptions,
    source: &str,
    progress: &dyn crate::progress::Progress,
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
    progress.start("fits", keys.len() as u64);
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
            progress.update(done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) as u64 + 1);
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
    progress.finish();
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

pub(super) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = p * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}
