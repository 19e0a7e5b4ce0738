//! Fitting one group's parameters: NNLS for LSLAG (linear in its parameters), a closed-form
//! launch overhead with a multi-start search of the latency scales for the trace model, and the
//! bounded Nelder-Mead for the others, all minimising the mean squared relative error.

use super::validate::percentile;
use super::{params_of, predict_row, Row};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::fit::nelder_mead::{minimize, NelderMeadOptions};
use crate::model::registry::{Inputs, ModelId};

/// Relative errors of a model with parameters on some rows; a failed prediction is an error of 1.
pub(super) fn relative_errors(
    model: ModelId,
    devices: &[Device],
    rows: &[&Row],
    q: &[f64],
) -> Vec<f64> {
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
        let mut a = crate::fit::Matrix::zeros(rows.len(), 2);
        let b = vec![1.0; rows.len()];
        for (i, r) in rows.iter().enumerate() {
            if let Inputs::Lslag(crate::model::lslag::LslagInputs { gamma, s, .. }) = r.inputs {
                a.set(i, 0, s / gamma / r.measured_us);
                a.set(i, 1, s / r.measured_us);
            }
        }
        return Ok(crate::fit::nnls::nnls(&a, &b)?.x);
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

/// The parameters a fit of `rows` holds at a value rather than fits (indices into the model's
/// parameters): puchala's `t_p` when the rows carry launch API times (puchala2022 section 5.3:
/// the median), the trace model's latency scales on rows simulated once and its time scale
/// otherwise.
pub(super) fn fixed_params(model: ModelId, rows: &[&Row]) -> Vec<usize> {
    match model {
        ModelId::Puchala if rows.iter().any(|r| r.launch_api_us.is_some()) => vec![0],
        ModelId::Trace if simulated_once(rows) => vec![0, 1],
        ModelId::Trace => vec![3],
        _ => Vec::new(),
    }
}

/// Whether every row carries its simulation (a suite's cases: the PTX path simulated each launch
/// once for every model). Searching the latency scales would simulate every row again for each
/// trial (about 50 ms a case on the development suites), so such rows fit the two parameters
/// that act on the simulated time, with the latency scales at 1.
fn simulated_once(rows: &[&Row]) -> bool {
    rows.iter()
        .all(|r| matches!(&r.inputs, Inputs::Trace(t) if t.simulated.is_some()))
}

/// The trace fit of rows simulated once: with the simulated times `T_i` (overhead included),
/// the architectures' overheads `L_i` and measured `m_i`, the time scale `a` and the overhead
/// scale `o` minimise `sum ((a (T_i - L_i) + o L_i) / m_i - 1)^2`, linear in both: non-negative
/// least squares, then each clamped to its bounds.
fn fit_trace_simulated(devices: &[Device], rows: &[&Row]) -> Result<Vec<f64>> {
    let specs = params_of(ModelId::Trace);
    let mut a = crate::fit::Matrix::zeros(rows.len(), 2);
    let mut b = vec![0.0; rows.len()];
    for (i, r) in rows.iter().enumerate() {
        let t = predict_row(ModelId::Trace, &devices[r.device], r, None)?;
        let l = match &r.inputs {
            Inputs::Trace(x) => x.latencies.values.launch_overhead_us,
            _ => 0.0,
        };
        a.set(i, 0, (t - l) / r.measured_us);
        a.set(i, 1, l / r.measured_us);
        b[i] = 1.0;
    }
    let x = crate::fit::nnls::nnls(&a, &b)?.x;
    Ok(vec![
        1.0,
        1.0,
        x[1].clamp(specs[2].lower, specs[2].upper),
        x[0].clamp(specs[3].lower, specs[3].upper),
    ])
}

/// The trace fit. The launch overhead scale enters linearly, so for given latency scales its best
/// value is closed-form: with simulated times `s_i`, measured `m_i` and the devices' launch
/// overheads `L_i`, `sum ((s_i + a L_i) / m_i - 1)^2` is least at
/// `a = sum (1 - s_i / m_i) L_i / m_i / sum (L_i / m_i)^2` (clamped to its bounds). The
/// bounded Nelder-Mead then searches the two latency scales only, from a grid of starts (the
/// simulated time is piecewise linear in the latencies, with kinks where a resource changes
/// hands, so a single start can stop on a kink).
/// The time scale stays 1 here: with the latency scales free it would trade against them.
fn fit_trace(devices: &[Device], rows: &[&Row], extra_start: Option<&[f64]>) -> Result<Vec<f64>> {
    if simulated_once(rows) {
        return fit_trace_simulated(devices, rows);
    }
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
    let launch: Vec<f64> = rows
        .iter()
        .map(|r| crate::model::analytical::launch_overhead_us(Some(&devices[r.device])))
        .collect();
    let best_overhead = |sim: &[Option<f64>]| {
        let (mut num, mut den) = (0.0, 0.0);
        for ((r, s), l) in rows.iter().zip(sim).zip(&launch) {
            if let Some(s) = s {
                let w = l / r.measured_us;
                num += (1.0 - s / r.measured_us) * w;
                den += w * w;
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
            .zip(&launch)
            .map(|((r, s), l)| match s {
                Some(s) => ((s + o * l) / r.measured_us - 1.0).powi(2),
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
    q.push(1.0);
    Ok(q)
}

pub(super) fn mape_max(errors: &[f64]) -> (f64, f64) {
    let n = errors.len().max(1) as f64;
    (
        errors.iter().map(|e| e.abs()).sum::<f64>() / n,
        errors.iter().map(|e| e.abs()).fold(0.0, f64::max),
    )
}
