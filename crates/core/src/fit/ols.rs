//! Ordinary linear least squares: `x = argmin ||A x - b||_2` with no constraint on `x`.
//!
//! Method: Householder QR with column pivoting. At step `k` the remaining column with the largest
//! norm is swapped to position `k`, then a reflection `H_k = I - 2 v v^T / (v^T v)` zeroes it
//! below the diagonal; the same reflections are applied to `b`. This gives `A P = Q R` and
//! `Q^T b = c`. The numerical rank `r` is the number of diagonal entries with
//! `|R_kk| > max(m, n) * eps * |R_00|`. The solution solves the leading `r x r` triangle,
//! `R_11 z = c[..r]`, and sets the remaining (dependent) coefficients to zero: for a
//! rank-deficient `A` this is a *basic* solution, not the minimum-norm one. The residual norm is
//! `||c[r..]||`.
//!
//! Unlike the normal equations `A^T A x = A^T b`, QR does not square the condition number.
//!
//! What this module does NOT do: weights, regularisation, or the minimum-norm solution of a
//! rank-deficient problem; callers that need those should scale rows or add columns.

use super::matrix::{norm_2, Matrix};
use crate::error::{Error, Result};

/// The solution of a least-squares problem.
#[derive(Debug, Clone, PartialEq)]
pub struct LeastSquares {
    /// The coefficients, one per column of `A`.
    pub x: Vec<f64>,
    /// The numerical rank of `A` found by the pivoted QR.
    pub rank: usize,
    /// `||A x - b||_2`.
    pub residual_norm: f64,
}

/// Solves `min ||A x - b||_2` (see the module doc for the method and the rank-deficient case).
///
/// Errors when `b.len() != A.rows()` or when `A` or `b` holds a NaN or an infinity.
pub fn lstsq(a: &Matrix, b: &[f64]) -> Result<LeastSquares> {
    let (m, n) = (a.rows(), a.cols());
    if b.len() != m {
        return Err(Error::invalid(
            "least squares",
            format!("A has {m} rows but b has {} entries", b.len()),
        ));
    }
    if !a.is_finite() || !b.iter().all(|v| v.is_finite()) {
        return Err(Error::invalid(
            "least squares",
            "A and b must hold finite numbers only",
        ));
    }
    // Column-major working copy, so that a column is contiguous.
    let mut cols: Vec<Vec<f64>> = (0..n)
        .map(|j| (0..m).map(|i| a.get(i, j)).collect())
        .collect();
    let mut perm: Vec<usize> = (0..n).collect();
    let mut c = b.to_vec();
    let steps = m.min(n);
    let mut rank = 0;
    let mut tol = 0.0;
    let mut diag = vec![0.0; steps];
    for k in 0..steps {
        // Pivot: the remaining column with the largest norm below row k.
        let (best, best_norm) =
            (k..n)
                .map(|j| (j, norm_2(&cols[j][k..])))
                .fold(
                    (k, -1.0),
                    |acc, (j, nj)| if nj > acc.1 { (j, nj) } else { acc },
                );
        if k == 0 {
            tol = (m.max(n) as f64) * f64::EPSILON * best_norm;
        }
        if best_norm <= tol || best_norm == 0.0 {
            break;
        }
        cols.swap(k, best);
        perm.swap(k, best);
        // Householder vector for cols[k][k..].
        let x0 = cols[k][k];
        let alpha = if x0 >= 0.0 { -best_norm } else { best_norm };
        let mut v: Vec<f64> = cols[k][k..].to_vec();
        v[0] -= alpha;
        let vtv: f64 = v.iter().map(|t| t * t).sum();
        if vtv > 0.0 {
            for col in cols.iter_mut().skip(k + 1) {
                reflect(&v, vtv, &mut col[k..]);
            }
            reflect(&v, vtv, &mut c[k..]);
        }
        cols[k][k] = alpha;
        for t in cols[k][k + 1..].iter_mut() {
            *t = 0.0;
        }
        diag[k] = alpha;
        rank = k + 1;
    }
    // Back substitution on the leading rank x rank triangle.
    let mut z = vec![0.0; rank];
    for i in (0..rank).rev() {
        let mut s = c[i];
        for (j, zj) in z.iter().enumerate().skip(i + 1) {
            s -= cols[j][i] * zj;
        }
        z[i] = s / diag[i];
    }
    let mut x = vec![0.0; n];
    for (k, zk) in z.iter().enumerate() {
        x[perm[k]] = *zk;
    }
    // The residual from the solution itself (robust also when rank < m).
    let ax = a.mul_vec(&x);
    let r: Vec<f64> = ax.iter().zip(b).map(|(p, q)| p - q).collect();
    Ok(LeastSquares {
        x,
        rank,
        residual_norm: norm_2(&r),
    })
}

/// Applies `H = I - 2 v v^T / (v^T v)` to `y` in place.
fn reflect(v: &[f64], vtv: f64, y: &mut [f64]) {
    let dot: f64 = v.iter().zip(y.iter()).map(|(a, b)| a * b).sum();
    let f = 2.0 * dot / vtv;
    for (yi, vi) in y.iter_mut().zip(v) {
        *yi -= f * vi;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_square_system() {
        // [[2, 1], [1, 3]] x = [3, 5]  ->  x = [0.8, 1.4]  (det 5; x1 = (9-5)/5, x2 = (10-3)/5)
        let a = Matrix::from_rows(&[[2.0, 1.0], [1.0, 3.0]]).unwrap();
        let s = lstsq(&a, &[3.0, 5.0]).unwrap();
        assert!((s.x[0] - 0.8).abs() < 1e-14 && (s.x[1] - 1.4).abs() < 1e-14);
        assert_eq!(s.rank, 2);
        assert!(s.residual_norm < 1e-14);
    }

    #[test]
    fn line_fit_by_hand() {
        // y = c0 + c1 t through (0,1), (1,2), (2,2): normal equations
        // [[3, 3], [3, 5]] c = [5, 6]  ->  c1 = (3*6 - 3*5)/(15-9) = 0.5, c0 = (5 - 1.5)/3 = 7/6.
        let a = Matrix::from_rows(&[[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]).unwrap();
        let s = lstsq(&a, &[1.0, 2.0, 2.0]).unwrap();
        assert!((s.x[0] - 7.0 / 6.0).abs() < 1e-14);
        assert!((s.x[1] - 0.5).abs() < 1e-14);
        // residuals: 1 - 7/6 = -1/6, 2 - 10/6 = 1/3, 2 - 13/6 = -1/6 -> norm sqrt(1/36+4/36+1/36)
        assert!((s.residual_norm - (6.0_f64 / 36.0).sqrt()).abs() < 1e-14);
    }

    #[test]
    fn rank_deficient_gives_a_basic_solution() {
        // Two equal columns: any split of the coefficient works; the fit itself is exact.
        let a = Matrix::from_rows(&[[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]).unwrap();
        let s = lstsq(&a, &[2.0, 4.0, 6.0]).unwrap();
        assert_eq!(s.rank, 1);
        assert!((s.x[0] + s.x[1] - 2.0).abs() < 1e-14);
        assert!(s.x[0] == 0.0 || s.x[1] == 0.0);
        assert!(s.residual_norm < 1e-13);
    }

    #[test]
    fn zero_matrix_and_bad_input() {
        let a = Matrix::zeros(3, 2);
        let s = lstsq(&a, &[1.0, 2.0, 2.0]).unwrap();
        assert_eq!(s.rank, 0);
        assert_eq!(s.x, vec![0.0, 0.0]);
        assert!((s.residual_norm - 3.0).abs() < 1e-15);
        assert!(lstsq(&a, &[1.0]).is_err());
        assert!(lstsq(&a, &[1.0, f64::NAN, 0.0]).is_err());
    }
}
