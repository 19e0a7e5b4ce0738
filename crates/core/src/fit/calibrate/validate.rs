//! Calibrating every group of prepared rows, for every requested scope: the fit on (a seeded
//! sample of) the group's rows, the training error, grouped k-fold cross-validation (a problem
//! point never sits on both sides), optional seeded bootstrap intervals, and the warnings of
//! what the rows cannot determine (too few rows or points, flat directions, an estimate outside
//! its bootstrap percentiles). Progress is reported per fit. Writing the file is the caller's.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use super::file::DeviceDescription;
use super::fit::{fit_rows, fit_rows_from, mape_max, relative_errors};
use super::{params_of, skipped_text, Calibration, GroupCalibration, Prepared, Row, Scope};
use crate::error::{Error, Result};
use crate::fit::split::SplitMix64;
use crate::model::registry::ModelId;

/// Fitting options.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrateOptions {
    /// The scopes to fit (each gives its own groups), most specific first.
    pub scopes: Vec<Scope>,
    /// Folds of the grouped cross-validation (0 or 1: none).
    pub folds: usize,
    /// Bootstrap resamples (0: no intervals).
    pub bootstrap: usize,
    pub seed: u64,
    /// Largest number of rows one fit uses (a seeded sample beyond it); errors use every row.
    pub max_fit_rows: usize,
}

impl Default for CalibrateOptions {
    /// Every scope, 3-fold cross-validation, no bootstrap (ask for one), fits on at most 400
    /// rows: the whole amaris2018 development split calibrates in well under a minute per model
    /// on two cores (README, "Calibration speed").
    fn default() -> Self {
        Self {
            scopes: Scope::ALL.to_vec(),
            folds: 3,
            bootstrap: 0,
            seed: 2026,
            max_fit_rows: 400,
        }
    }
}

impl CalibrateOptions {
    /// The options with one scope.
    pub fn with_scope(scope: Scope) -> Self {
        Self {
            scopes: vec![scope],
            ..Self::default()
        }
    }
}

/// A change of the objective below this within a parameter's bounds makes the parameter flat
/// (not identifiable from the rows).
pub const FLAT_OBJECTIVE: f64 = 1e-6;

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

/// Which rows one group holds.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct GroupKey {
    scope: Scope,
    kernel: Option<String>,
    /// The device index (kernel and device scopes).
    device: Option<usize>,
    /// The family key (architecture scopes).
    family: Option<String>,
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

/// As [`calibrate`], reporting one stage of `fits` (every fit: the estimate, each fold and each
/// bootstrap resample) to `progress`.
pub fn calibrate_with_progress(
    model: ModelId,
    prepared: &Prepared,
    options: &CalibrateOptions,
    source: &str,
    progress: &dyn crate::progress::Progress,
) -> Result<Calibration> {
    if options.scopes.is_empty() {
        return Err(Error::invalid("scope", "names no scope"));
    }
    let mut scopes = options.scopes.clone();
    scopes.sort();
    scopes.dedup();
    let devices = &prepared.devices;
    let family = |i: usize| super::file::family_of(&devices[i]);
    let mut members: BTreeMap<GroupKey, Vec<usize>> = BTreeMap::new();
    for (ri, r) in prepared.rows.iter().enumerate() {
        for &scope in &scopes {
            let key = GroupKey {
                scope,
                kernel: scope.per_kernel().then(|| r.kernel.clone()),
                device: matches!(scope, Scope::Kernel | Scope::Device).then_some(r.device),
                family: matches!(scope, Scope::KernelArchitecture | Scope::Architecture)
                    .then(|| family(r.device)),
            };
            members.entry(key).or_default().push(ri);
        }
    }
    if members.is_empty() {
        return Err(Error::invalid(
            "measurements",
            format!(
                "no row can be used by {} (left out: {})",
                model.name(),
                skipped_text(&prepared.skipped)
            ),
        ));
    }
    let specs = params_of(model);
    let keys: Vec<GroupKey> = members.keys().cloned().collect();
    // A broader group with exactly the rows of a narrower one (one device, one kernel) gets the
    // narrower group's fit instead of a second, identical one.
    let mut first_with: BTreeMap<&[usize], usize> = BTreeMap::new();
    let same_as: Vec<Option<usize>> = keys
        .iter()
        .enumerate()
        .map(|(gi, k)| {
            let rows = members[k].as_slice();
            match first_with.get(rows) {
                Some(&g) => Some(g),
                None => {
                    first_with.insert(rows, gi);
                    None
                }
            }
        })
        .collect();
    let rows_of = |gi: usize| -> Vec<&Row> {
        members[&keys[gi]]
            .iter()
            .map(|&i| &prepared.rows[i])
            .collect()
    };
    let unique: Vec<usize> = (0..keys.len()).filter(|&g| same_as[g].is_none()).collect();
    // Work units for the progress bar: the estimate, the folds and the resamples of each group.
    let folds_of = |gi: usize| {
        let mut p: Vec<&str> = members[&keys[gi]]
            .iter()
            .map(|&i| prepared.rows[i].point.as_str())
            .collect();
        p.sort_unstable();
        p.dedup();
        if options.folds >= 2 && p.len() >= options.folds {
            options.folds
        } else {
            0
        }
    };
    let total: usize = unique
        .iter()
        .map(|&g| 1 + folds_of(g) + options.bootstrap)
        .sum();
    let done = AtomicUsize::new(0);
    let tick = || {
        progress.update(done.fetch_add(1, Ordering::Relaxed) as u64 + 1);
    };
    progress.start("fits", total as u64);
    // Large groups first, so that the last fits running are small ones.
    let mut order = unique.clone();
    order.sort_by_key(|&g| std::cmp::Reverse(members[&keys[g]].len()));
    let fitted: Vec<(usize, Result<GroupCalibration>)> = order
        .par_iter()
        .map(|&gi| {
            let rows = rows_of(gi);
            // The group's own seed, from what it is (not its place among the other groups), so
            // that a group's fit does not change when other groups are added or left out.
            let mut rng = SplitMix64::new(options.seed ^ group_seed(&keys[gi], devices));
            let g = fit_group(model, prepared, &keys[gi], &rows, options, &mut rng, &tick);
            (gi, g)
        })
        .collect();
    progress.finish();
    let mut by_index: Vec<Option<GroupCalibration>> = vec![None; keys.len()];
    for (gi, g) in fitted {
        by_index[gi] = Some(g?);
    }
    for gi in 0..keys.len() {
        if let Some(src) = same_as[gi] {
            let mut g = by_index[src].clone().expect("fitted above");
            let key = &keys[gi];
            g.scope = Some(key.scope);
            g.kernel = key.kernel.clone();
            g.device = key
                .device
                .map_or(String::new(), |d| devices[d].name.clone());
            g.architecture = key.family.clone();
            by_index[gi] = Some(g);
        }
    }
    let groups: Vec<GroupCalibration> = by_index.into_iter().flatten().collect();
    let mut notes = Vec::new();
    if !prepared.skipped.is_empty() {
        notes.push(format!(
            "rows left out: {}",
            skipped_text(&prepared.skipped)
        ));
    }
    let all: Vec<&Row> = prepared.rows.iter().collect();
    let held: Vec<&str> = super::fit::fixed_params(model, &all)
        .into_iter()
        .map(|k| params_of(model)[k].name)
        .collect();
    if !held.is_empty() && !all.is_empty() {
        let why = if model == ModelId::Trace && held.len() == 2 {
            " (the rows keep their simulation, as a suite's cases do: other latencies would simulate every row again for each trial)"
        } else {
            ""
        };
        notes.push(format!("held, not fitted: {}{why}", held.join(", ")));
    }
    notes.push(format!(
        "each fit uses at most {} rows (a seeded sample); errors are computed on every row of the group",
        options.max_fit_rows
    ));
    if options.bootstrap > 0 {
        notes.push(format!(
            "intervals: 2.5 and 97.5 percentiles of {} fits to resamples (with replacement) of the rows of each group's fit, each started also from the group's estimate",
            options.bootstrap
        ));
    } else {
        notes.push("no intervals: bootstrap 0 (ask for resamples to get 95 % intervals)".into());
    }
    notes.push(format!(
        "lookup order for a (kernel, device) pair: {}",
        super::file::FALLBACK_ORDER
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{}. {s}", i + 1))
            .collect::<Vec<_>>()
            .join("; ")
    ));
    let warned = groups.iter().filter(|g| !g.warnings.is_empty()).count();
    if warned > 0 {
        notes.push(format!(
            "{warned} of {} groups have warnings (parameters the rows cannot determine)",
            groups.len()
        ));
    }
    Ok(Calibration {
        model,
        scopes,
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
        devices: devices.iter().map(DeviceDescription::of).collect(),
        groups,
        notes,
    })
}

/// The mean squared relative error of `q` on `rows` (the fits' objective).
fn objective(model: ModelId, prepared: &Prepared, rows: &[&Row], q: &[f64]) -> f64 {
    let e = relative_errors(model, &prepared.devices, rows, q);
    e.iter().map(|x| x * x).sum::<f64>() / e.len().max(1) as f64
}

/// Fits one group: estimate, errors, cross-validation, bootstrap and warnings.
fn fit_group(
    model: ModelId,
    prepared: &Prepared,
    key: &GroupKey,
    rows: &[&Row],
    options: &CalibrateOptions,
    rng: &mut SplitMix64,
    tick: &(dyn Fn() + Sync),
) -> Result<GroupCalibration> {
    let devices = &prepared.devices;
    let specs = params_of(model);
    let fit_sample = sample(rows, options.max_fit_rows, rng);
    let q = fit_rows(model, devices, &fit_sample)?;
    tick();
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
            let (train, test): (Vec<&Row>, Vec<&Row>) = rows
                .iter()
                .copied()
                .partition(|r| fold_of[r.point.as_str()] != f);
            // Started as the estimate was, not from it: the held-out fold stays unseen.
            let qf = fit_rows(model, devices, &sample(&train, options.max_fit_rows, rng))?;
            errors.extend(relative_errors(model, devices, &test, &qf));
            tick();
        }
        let (a, b) = mape_max(&errors);
        mape_cv = Some(a);
        max_cv = Some(b);
    }
    let mut warnings = Vec::new();
    let fixed = super::fit::fixed_params(model, &fit_sample);
    let free: Vec<usize> = (0..specs.len())
        .filter(|&k| specs[k].lower < specs[k].upper && !fixed.contains(&k))
        .collect();
    if rows.len() <= free.len() {
        warnings.push(format!(
            "only {} rows for {} free parameters: the fit can match them exactly, so its training error says nothing",
            rows.len(),
            free.len()
        ));
    }
    if n_points < 2 {
        warnings.push(
            "one problem point: every row is a repetition of the same launch, so the parameters are not identifiable".to_string(),
        );
    }
    // Flat directions: moving one parameter across its bounds barely changes the objective.
    let base = objective(model, prepared, &fit_sample, &q);
    let mut flat = Vec::new();
    for &k in &free {
        let s = &specs[k];
        let hi = if s.upper == f64::MAX {
            (q[k] * 10.0).max(q[k] + 1.0)
        } else {
            s.upper
        };
        let moved = [s.lower, hi].iter().fold(0.0f64, |m, &v| {
            let mut x = q.clone();
            x[k] = v;
            m.max((objective(model, prepared, &fit_sample, &x) - base).abs())
        });
        if moved < FLAT_OBJECTIVE {
            flat.push(k);
            warnings.push(format!(
                "`{}` is not identifiable: moving it across [{}, {}] changes the objective by {moved:.1e} (< {FLAT_OBJECTIVE:e}); its value is the fit's, not the data's",
                s.name, s.lower, hi
            ));
        }
    }
    let mut intervals = BTreeMap::new();
    let identifiable = rows.len() > free.len() && n_points >= 2;
    if options.bootstrap > 0 {
        let mut draws: Vec<Vec<f64>> = vec![Vec::new(); specs.len()];
        for _ in 0..options.bootstrap {
            let resample: Vec<&Row> = (0..fit_sample.len())
                .map(|_| fit_sample[rng.below(fit_sample.len() as u64) as usize])
                .collect();
            let qb = fit_rows_from(model, devices, &resample, Some(&q))?;
            for (k, v) in qb.into_iter().enumerate() {
                draws[k].push(v);
            }
            tick();
        }
        if identifiable {
            for (k, s) in specs.iter().enumerate() {
                if flat.contains(&k) || !free.contains(&k) {
                    continue;
                }
                let d = &mut draws[k];
                d.sort_by(f64::total_cmp);
                let (lo, hi) = (percentile(d, 0.025), percentile(d, 0.975));
                if !(lo <= q[k] && q[k] <= hi) {
                    warnings.push(format!(
                        "the estimate of `{}` ({:.6}) lies outside its bootstrap percentiles [{lo:.6}, {hi:.6}] (a skewed or multimodal fit); the interval is widened to include it",
                        s.name, q[k]
                    ));
                }
                intervals.insert(s.name.to_string(), [lo.min(q[k]), hi.max(q[k])]);
            }
        } else {
            warnings.push("no intervals: the rows cannot determine the parameters".to_string());
        }
    }
    let mut g = GroupCalibration::new(key.scope);
    g.kernel = key.kernel.clone();
    if let Some(d) = key.device {
        g.device = devices[d].name.clone();
    }
    g.architecture = key.family.clone();
    let mut used: Vec<usize> = rows.iter().map(|r| r.device).collect();
    used.sort_unstable();
    used.dedup();
    g.devices = used.iter().map(|&i| devices[i].name.clone()).collect();
    g.n = rows.len();
    g.points = n_points;
    g.params = specs
        .iter()
        .zip(&q)
        .map(|(s, v)| (s.name.to_string(), *v))
        .collect();
    g.intervals = intervals;
    g.mape_train = mape_train;
    g.max_error_train = max_train;
    g.mape_cv = mape_cv;
    g.max_error_cv = max_cv;
    g.warnings = warnings;
    Ok(g)
}

pub(super) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = p * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// A seed from a group's scope, kernel, device name and family (FNV-1a).
fn group_seed(key: &GroupKey, devices: &[crate::device::Device]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes.iter().chain([0xffu8].iter()) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    eat(format!("{:?}", key.scope).as_bytes());
    eat(key.kernel.as_deref().unwrap_or("").as_bytes());
    eat(key
        .device
        .map_or("", |d| devices[d].name.as_str())
        .as_bytes());
    eat(key.family.as_deref().unwrap_or("").as_bytes());
    h
}
