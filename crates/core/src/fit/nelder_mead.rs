//! Bounded Nelder-Mead minimisation of a function of a few parameters, for calibrating models
//! that are not linear in their parameters.
//!
//! The simplex method of Nelder and Mead (1965) with the usual coefficients (reflection 1,
//! expansion 2, contraction 1/2, shrink 1/2). Bounds are kept by projecting every trial point onto
//! the box. The search restarts from the best point with a fresh simplex until a restart no
//! longer improves the value, which guards against the simplex collapsing early (a known weakness
//! of the method). Non-finite function values count as +infinity.
//!
//! It does not compute gradients, handle more than a few dozen parameters well, or find global
//! minima of multimodal functions: callers give a sensible start.

use crate::error::{Error, Result};

/// Stopping rules.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NelderMeadOptions {
    /// Stop a run when the simplex's largest edge, relative to the box width, falls below this.
    pub x_tolerance: f64,
    /// ... and the spread of the function values falls below this (absolute).
    pub f_tolerance: f64,
    /// Function evaluations over all runs.
    pub max_evaluations: usize,
    /// Restarts from the best point after the first run.
    pub max_restarts: usize,
    /// Size of a new simplex's edges, relative to the box width.
    pub initial_step: f64,
}

impl Default for NelderMeadOptions {
    fn default() -> Self {
        Self {
            x_tolerance: 1e-10,
            f_tolerance: 1e-15,
            max_evaluations: 20_000,
            max_restarts: 6,
            initial_step: 0.1,
        }
    }
}

/// The best point found.
#[derive(Debug, Clone, PartialEq)]
pub struct Minimum {
    pub x: Vec<f64>,
    pub value: f64,
    pub evaluations: usize,
    /// Whether the tolerances were met (false: the evaluation budget ran out).
    pub converged: bool,
}

/// Minimises `f` over the box `lower..=upper` starting from `start` (projected into the box).
pub fn minimize<F: FnMut(&[f64]) -> f64>(
    mut f: F,
    start: &[f64],
    lower: &[f64],
    upper: &[f64],
    options: &NelderMeadOptions,
) -> Result<Minimum> {
    let n = start.len();
    if n == 0 || lower.len() != n || upper.len() != n {
        return Err(Error::invalid(
            "bounds",
            format!(
                "needs one lower and one upper bound per parameter, got {} parameters, {} lower, {} upper",
                n,
                lower.len(),
                upper.len()
            ),
        ));
    }
    for k in 0..n {
        if !(lower[k].is_finite() && upper[k].is_finite() && lower[k] <= upper[k]) {
            return Err(Error::invalid(
                format!("bounds[{k}]"),
                format!(
                    "needs finite lower <= upper, got {} and {}",
                    lower[k], upper[k]
                ),
            ));
        }
        if !start[k].is_finite() {
            return Err(Error::invalid(format!("start[{k}]"), "must be finite"));
        }
    }
    let width: Vec<f64> = (0..n).map(|k| (upper[k] - lower[k]).max(1e-300)).collect();
    let project = |x: &mut [f64]| {
        for k in 0..n {
            x[k] = x[k].clamp(lower[k], upper[k]);
        }
    };
    let mut evals = 0usize;
    let mut eval = |x: &[f64], evals: &mut usize| {
        *evals += 1;
        let v = f(x);
        if v.is_finite() {
            v
        } else {
            f64::INFINITY
        }
    };

    let mut best: Vec<f64> = start.to_vec();
    project(&mut best);
    let mut best_value = eval(&best, &mut evals);
    let mut converged = false;
    for restart in 0..=options.max_restarts {
        // A fresh simplex around the best point; steps go inward when at a bound.
        let mut simplex: Vec<Vec<f64>> = vec![best.clone()];
        for k in 0..n {
            let mut p = best.clone();
            let step = options.initial_step * width[k];
            p[k] = if p[k] + step <= upper[k] {
                p[k] + step
            } else {
                p[k] - step
            };
            project(&mut p);
            simplex.push(p);
        }
        let mut values: Vec<f64> = simplex.iter().map(|p| eval(p, &mut evals)).collect();
        let mut run_converged = false;
        while evals < options.max_evaluations {
            // Order the simplex.
            let mut order: Vec<usize> = (0..=n).collect();
            order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
            simplex = order.iter().map(|&i| simplex[i].clone()).collect();
            values = order.iter().map(|&i| values[i]).collect();
            let size = simplex[1..]
                .iter()
                .map(|p| {
                    (0..n)
                        .map(|k| ((p[k] - simplex[0][k]) / width[k]).abs())
                        .fold(0.0, f64::max)
                })
                .fold(0.0, f64::max);
            let spread = values[n] - values[0];
            if size < options.x_tolerance && (spread <= options.f_tolerance || !spread.is_finite())
            {
                run_converged = true;
                break;
            }
            if size < options.x_tolerance * 1e-3 {
                run_converged = true;
                break;
            }
            let centroid: Vec<f64> = (0..n)
                .map(|k| simplex[..n].iter().map(|p| p[k]).sum::<f64>() / n as f64)
                .collect();
            let along = |t: f64| {
                let mut p: Vec<f64> = (0..n)
                    .map(|k| centroid[k] + t * (simplex[n][k] - centroid[k]))
                    .collect();
                project(&mut p);
                p
            };
            let reflected = along(-1.0);
            let fr = eval(&reflected, &mut evals);
            if fr < values[0] {
                let expanded = along(-2.0);
                let fe = eval(&expanded, &mut evals);
                if fe < fr {
                    simplex[n] = expanded;
                    values[n] = fe;
                } else {
                    simplex[n] = reflected;
                    values[n] = fr;
                }
            } else if fr < values[n - 1] {
                simplex[n] = reflected;
                values[n] = fr;
            } else {
                let (contracted, fc) = if fr < values[n] {
                    let c = along(-0.5);
                    let v = eval(&c, &mut evals);
                    (c, v)
                } else {
                    let c = along(0.5);
                    let v = eval(&c, &mut evals);
                    (c, v)
                };
                if fc < values[n].min(fr) {
                    simplex[n] = contracted;
                    values[n] = fc;
                } else {
                    // Shrink towards the best point.
                    for i in 1..=n {
                        let mut p: Vec<f64> = (0..n)
                            .map(|k| simplex[0][k] + 0.5 * (simplex[i][k] - simplex[0][k]))
                            .collect();
                        project(&mut p);
                        values[i] = eval(&p, &mut evals);
                        simplex[i] = p;
                    }
                }
            }
        }
        let (i_best, &v_best) = values
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .unwrap_or((0, &f64::INFINITY));
        let improved = v_best < best_value;
        let moved = improved
            && (0..n)
                .any(|k| ((simplex[i_best][k] - best[k]) / width[k]).abs() > options.x_tolerance);
        if improved {
            best = simplex[i_best].clone();
            best_value = v_best;
        }
        converged = run_converged;
        if !run_converged || (restart > 0 && !moved) {
            break;
        }
    }
    Ok(Minimum {
        x: best,
        value: best_value,
        evaluations: evals,
        converged,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rosenbrock_minimum_at_one_one() {
        // Rosenbrock's function has its only minimum, 0, at (1, 1).
        let f = |x: &[f64]| (1.0 - x[0]).powi(2) + 100.0 * (x[1] - x[0] * x[0]).powi(2);
        let m = minimize(
            f,
            &[-1.2, 1.0],
            &[-5.0, -5.0],
            &[5.0, 5.0],
            &NelderMeadOptions::default(),
        )
        .unwrap();
        assert!((m.x[0] - 1.0).abs() < 1e-6, "{m:?}");
        assert!((m.x[1] - 1.0).abs() < 1e-6, "{m:?}");
        assert!(m.converged);
    }

    #[test]
    fn bound_is_respected_and_active() {
        // (x - 3)^2 on [0, 2]: the constrained minimum is the bound 2, value 1.
        let m = minimize(
            |x: &[f64]| (x[0] - 3.0).powi(2),
            &[0.5],
            &[0.0],
            &[2.0],
            &NelderMeadOptions::default(),
        )
        .unwrap();
        assert!((m.x[0] - 2.0).abs() < 1e-9, "{m:?}");
        assert!((m.value - 1.0).abs() < 1e-9);
    }

    #[test]
    fn three_parameter_quadratic() {
        let target = [0.3, 12.0, -4.5];
        let f = |x: &[f64]| {
            (x[0] - target[0]).powi(2) * 100.0
                + (x[1] - target[1]).powi(2)
                + (x[2] - target[2]).powi(2) * 3.0
                + (x[0] - target[0]) * (x[2] - target[2])
        };
        let m = minimize(
            f,
            &[0.9, 1.0, 0.0],
            &[0.0, 0.0, -10.0],
            &[1.0, 20.0, 10.0],
            &NelderMeadOptions::default(),
        )
        .unwrap();
        for (x, t) in m.x.iter().zip(target) {
            assert!((x - t).abs() < 1e-6, "{m:?}");
        }
    }

    #[test]
    fn nan_values_are_avoided_and_bad_bounds_rejected() {
        let m = minimize(
            |x: &[f64]| {
                if x[0] < 0.5 {
                    f64::NAN
                } else {
                    (x[0] - 0.7).powi(2)
                }
            },
            &[0.9],
            &[0.0],
            &[1.0],
            &NelderMeadOptions::default(),
        )
        .unwrap();
        assert!((m.x[0] - 0.7).abs() < 1e-6);
        assert!(minimize(
            |_| 0.0,
            &[0.0],
            &[1.0],
            &[0.0],
            &NelderMeadOptions::default()
        )
        .is_err());
        assert!(minimize(
            |_| 0.0,
            &[0.0],
            &[0.0, 0.0],
            &[1.0],
            &NelderMeadOptions::default()
        )
        .is_err());
    }
}
