//! Non-negative least squares: `x = argmin ||A x - b||_2` subject to `x >= 0` (element-wise).
//!
//! Method: the active-set algorithm of Lawson and Hanson (*Solving Least Squares Problems*, 1974,
//! chapter 23). The indices are split into a passive set `P` (free, positive coefficients) and an
//! active set `Z` (coefficients held at zero). Starting from `x = 0, P = {}`:
//!
//! 1. Compute the dual vector `w = A^T (b - A x)`. If `w_j <= tol` for every `j` in `Z`, `x`
//!    satisfies the Karush-Kuhn-Tucker conditions (`x >= 0`, `w <= 0` on `Z`, `w = 0` on `P`)
//!    and is optimal: stop.
//! 2. Move the `j` in `Z` with the largest `w_j` to `P`.
//! 3. Solve the unconstrained problem on the passive columns, `s_P = argmin ||A_P s - b||`
//!    (pivoted QR, [`super::ols::lstsq`]), with `s_Z = 0`.
//! 4. If every `s_i > 0` for `i` in `P`, set `x = s` and go to 1. Otherwise step from `x` toward
//!    `s` as far as feasibility allows, `x <- x + a (s - x)` with
//!    `a = min { x_i / (x_i - s_i) : i in P, s_i <= 0 }`, move the coefficients that reached zero
//!    back to `Z`, and go to 3.
//!
//! The tolerance on the dual is `tol = 10 * eps * max(m, n) * ||A||_1 * ||b||_inf` unless given.
//! When `A` is rank-deficient the minimiser may not be unique; the algorithm returns one of the
//! minimisers (the residual norm is always the unique optimum).
//!
//! What this module does NOT do: bounds other than zero, weights, or warm starts.

use super::matrix::{norm_2, Matrix};
use super::ols::lstsq;
use crate::error::{Error, Result};

/// Options of [`nnls_with`]; `None` picks the default described in the module doc.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct NnlsOptions {
    /// Largest number of unconstrained solves before giving up (default `30 * max(n, 1)`).
    pub max_iterations: Option<usize>,
    /// Tolerance on the dual vector `w` (default in the module doc).
    pub tolerance: Option<f64>,
}

/// The solution of a non-negative least-squares problem.
#[derive(Debug, Clone, PartialEq)]
pub struct Nnls {
    /// The coefficients, each `>= 0`.
    pub x: Vec<f64>,
    /// `||A x - b||_2`.
    pub residual_norm: f64,
    /// Number of unconstrained solves the algorithm used.
    pub iterations: usize,
}

/// Solves `min ||A x - b||_2` subject to `x >= 0` with default options.
pub fn nnls(a: &Matrix, b: &[f64]) -> Result<Nnls> {
    nnls_with(a, b, &NnlsOptions::default())
}

/// Solves `min ||A x - b||_2` subject to `x >= 0`.
///
/// Errors when the sizes disagree, when `A` or `b` holds a NaN or an infinity, or when the
/// iteration limit is reached.
pub fn nnls_with(a: &Matrix, b: &[f64], options: &NnlsOptions) -> Result<Nnls> {
    let (m, n) = (a.rows(), a.cols());
    if b.len() != m {
        return Err(Error::invalid(
            "nnls",
            format!("A has {m} rows but b has {} entries", b.len()),
        ));
    }
    if !a.is_finite() || !b.iter().all(|v| v.is_finite()) {
        return Err(Error::invalid(
            "nnls",
            "A and b must hold finite numbers only",
        ));
    }
    let b_inf = b.iter().fold(0.0_f64, |acc, v| acc.max(v.abs()));
    let tol = options
        .tolerance
        .unwrap_or(10.0 * f64::EPSILON * (m.max(n) as f64) * a.norm_1() * b_inf);
    let max_iterations = options.max_iterations.unwrap_or(30 * n.max(1));

    let mut x = vec![0.0; n];
    let mut passive = vec![false; n];
    // Indices that entered P but whose unconstrained coefficient came out non-positive: a sign
    // that w_j > tol only by rounding. They sit out until x changes, which prevents cycling.
    let mut excluded = vec![false; n];
    let mut iterations = 0;

    loop {
        let residual: Vec<f64> = a.mul_vec(&x).iter().zip(b).map(|(p, q)| q - p).collect();
        let w = a.t_mul_vec(&residual);
        let candidate =
            (0..n)
                .filter(|&j| !passive[j] && !excluded[j])
                .fold(None, |best: Option<usize>, j| match best {
                    Some(k) if w[k] >= w[j] => Some(k),
                    _ => Some(j),
                });
        let j = match candidate {
            Some(j) if w[j] > tol => j,
            _ => break,
        };
        passive[j] = true;
        let mut first_inner = true;
        loop {
            iterations += 1;
            if iterations > max_iterations {
                return Err(Error::invalid(
                    "nnls",
                    format!("no solution within {max_iterations} iterations"),
                ));
            }
            let p_idx: Vec<usize> = (0..n).filter(|&i| passive[i]).collect();
            let sub = lstsq(&a.select_columns(&p_idx), b)?;
            let mut s = vec![0.0; n];
            for (k, &i) in p_idx.iter().enumerate() {
                s[i] = sub.x[k];
            }
            if p_idx.iter().all(|&i| s[i] > 0.0) {
                x = s;
                excluded.iter_mut().for_each(|e| *e = false);
                break;
            }
            if first_inner && s[j] <= 0.0 {
                // The new index cannot move away from zero: undo and try another one.
                passive[j] = false;
                excluded[j] = true;
                break;
            }
            first_inner = false;
            // Step toward s until the first passive coefficient reaches zero.
            let mut step = f64::INFINITY;
            let mut blocking = None;
            for &i in &p_idx {
                if s[i] <= 0.0 {
                    let ratio = x[i] / (x[i] - s[i]);
                    if ratio < step {
                        step = ratio;
                        blocking = Some(i);
                    }
                }
            }
            for &i in &p_idx {
                x[i] += step * (s[i] - x[i]);
            }
            for &i in &p_idx {
                if Some(i) == blocking || x[i] <= 0.0 {
                    x[i] = 0.0;
                    passive[i] = false;
                }
            }
            excluded.iter_mut().for_each(|e| *e = false);
        }
    }
    let r: Vec<f64> = a.mul_vec(&x).iter().zip(b).map(|(p, q)| p - q).collect();
    Ok(Nnls {
        residual_norm: norm_2(&r),
        x,
        iterations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unconstrained_optimum_already_positive() {
        // Same problem as the OLS line fit: c = [7/6, 1/2] is positive, so NNLS equals OLS.
        let a = Matrix::from_rows(&[[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]).unwrap();
        let s = nnls(&a, &[1.0, 2.0, 2.0]).unwrap();
        assert!((s.x[0] - 7.0 / 6.0).abs() < 1e-14 && (s.x[1] - 0.5).abs() < 1e-14);
    }

    #[test]
    fn constraint_binds() {
        // Fit y = c0 + c1 t to a falling line (0,2), (1,1), (2,0): OLS gives c1 = -1.
        // With c1 >= 0 the best is c1 = 0, c0 = mean(y) = 1, residual sqrt(1 + 0 + 1).
        let a = Matrix::from_rows(&[[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]).unwrap();
        let s = nnls(&a, &[2.0, 1.0, 0.0]).unwrap();
        assert_eq!(s.x[1], 0.0);
        assert!((s.x[0] - 1.0).abs() < 1e-14);
        assert!((s.residual_norm - 2.0_f64.sqrt()).abs() < 1e-14);
    }

    #[test]
    fn degenerate_inputs() {
        let a = Matrix::from_rows(&[[1.0, 2.0], [3.0, 4.0]]).unwrap();
        // b = 0: x = 0.
        assert_eq!(nnls(&a, &[0.0, 0.0]).unwrap().x, vec![0.0, 0.0]);
        // b in the negative cone: w = A^T b < 0 everywhere, x = 0, residual ||b||.
        let s = nnls(&a, &[-1.0, -1.0]).unwrap();
        assert_eq!(s.x, vec![0.0, 0.0]);
        assert!((s.residual_norm - 2.0_f64.sqrt()).abs() < 1e-15);
        // A = 0.
        let z = nnls(&Matrix::zeros(2, 3), &[1.0, 2.0]).unwrap();
        assert_eq!(z.x, vec![0.0; 3]);
        // No columns at all.
        assert!(nnls(&Matrix::zeros(2, 0), &[1.0, 2.0])
            .unwrap()
            .x
            .is_empty());
        assert!(nnls(&a, &[1.0]).is_err());
        assert!(nnls(&a, &[f64::INFINITY, 1.0]).is_err());
    }
}
