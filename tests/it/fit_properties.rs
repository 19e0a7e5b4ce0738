//! Properties of the fit numerics on random inputs (proptest): the O(n log n) Kendall tau-b
//! equals the O(n^2) pair count, and every NNLS solution satisfies the optimality conditions.

use kerneltime::fit::matrix::Matrix;
use kerneltime::fit::nnls::nnls;
use kerneltime::fit::ols::lstsq;
use kerneltime::fit::rank::{kendall_tau_b, kendall_tau_b_naive};
use proptest::prelude::*;

proptest! {
    #[test]
    fn fast_tau_matches_pair_count(pairs in prop::collection::vec((0i32..6, 0i32..6), 0..80)) {
        // Small integer ranges force many ties in x, in y and in both.
        let x: Vec<f64> = pairs.iter().map(|p| p.0 as f64).collect();
        let y: Vec<f64> = pairs.iter().map(|p| p.1 as f64).collect();
        let fast = kendall_tau_b(&x, &y).unwrap();
        let slow = kendall_tau_b_naive(&x, &y).unwrap();
        match (fast, slow) {
            (Some(a), Some(b)) => prop_assert!((a - b).abs() < 1e-12, "{} vs {}", a, b),
            (a, b) => prop_assert_eq!(a, b),
        }
    }

    #[test]
    fn nnls_satisfies_kkt(
        rows in 1usize..8,
        cols in 1usize..6,
        seed in prop::collection::vec(-10.0f64..10.0, 8 * 6 + 8),
    ) {
        let a = Matrix::new(rows, cols, seed[..rows * cols].to_vec()).unwrap();
        let b = &seed[48..48 + rows];
        let s = nnls(&a, b).unwrap();
        let ax = a.mul_vec(&s.x);
        let r: Vec<f64> = b.iter().zip(&ax).map(|(b, f)| b - f).collect();
        let w = a.t_mul_vec(&r);
        let tol = 1e-8 * a.norm_1().max(1.0) * b.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        for (xj, wj) in s.x.iter().zip(&w) {
            prop_assert!(*xj >= 0.0);
            if *xj > 0.0 {
                prop_assert!(wj.abs() < tol, "w = {} at x = {}", wj, xj);
            } else {
                prop_assert!(*wj < tol, "w = {} > 0 at x = 0", wj);
            }
        }
        // Never worse than the unconstrained fit when that fit happens to be non-negative.
        let ols = lstsq(&a, b).unwrap();
        if ols.x.iter().all(|v| *v >= 0.0) {
            prop_assert!(s.residual_norm <= ols.residual_norm + tol);
        }
    }
}
