//! The fit numerics against an independent implementation: SciPy's `nnls`, `kendalltau` (tau-b)
//! and `spearmanr`, and a Python SplitMix64. The inputs and SciPy's answers live together in
//! `tests/reference/fit_reference_data.rs`, written once by `tests/reference/gen_fit_reference.py`;
//! these tests need no Python.

#[path = "../reference/fit_reference_data.rs"]
mod data;

use kerneltime::fit::matrix::Matrix;
use kerneltime::fit::nnls::nnls;
use kerneltime::fit::rank::{kendall_tau_b, kendall_tau_b_naive, spearman_rho};
use kerneltime::fit::split::SplitMix64;

/// `|got - want| <= 1e-9 * max(1, |want|)`.
fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-9 * want.abs().max(1.0)
}

#[test]
fn nnls_agrees_with_scipy() {
    for case in data::NNLS_CASES {
        let a = Matrix::new(case.rows, case.cols, case.a.to_vec()).unwrap();
        let got = nnls(&a, case.b).unwrap();
        assert!(
            close(got.residual_norm, case.residual_norm),
            "{}: residual {} vs SciPy {}",
            case.name,
            got.residual_norm,
            case.residual_norm
        );
        assert!(got.x.iter().all(|&v| v >= 0.0), "{}: negative x", case.name);
        // The fitted vector A x is unique even when x is not.
        let fitted = a.mul_vec(&got.x);
        let want_fitted = a.mul_vec(case.x);
        for (g, w) in fitted.iter().zip(&want_fitted) {
            assert!(close(*g, *w), "{}: A x {g} vs SciPy {w}", case.name);
        }
        // x itself is unique only with full column rank (`case.full_rank`); for the
        // rank-deficient cases here both implementations still pick the same minimiser (both
        // admit the first index of largest dual, and a column dependent on the passive ones never
        // has a positive dual), so the comparison is made for every case.
        for (g, w) in got.x.iter().zip(case.x) {
            assert!(
                close(*g, *w),
                "{} (full column rank: {}): x {:?} vs SciPy {:?}",
                case.name,
                case.full_rank,
                got.x,
                case.x
            );
        }
        // Optimality (KKT): the dual w = A^T (b - A x) is <= 0 where x = 0 and ~0 where x > 0.
        let r: Vec<f64> = case.b.iter().zip(&fitted).map(|(b, f)| b - f).collect();
        let w = a.t_mul_vec(&r);
        // Relative to the scale of w: ||A||_1 * max(1, ||b||_inf).
        let b_inf = case.b.iter().fold(1.0_f64, |m, v| m.max(v.abs()));
        let kkt_tol = 1e-9 * a.norm_1().max(1.0) * b_inf;
        for (xj, wj) in got.x.iter().zip(&w) {
            if *xj > 0.0 {
                assert!(
                    wj.abs() < kkt_tol,
                    "{}: w = {wj} at a positive x",
                    case.name
                );
            } else {
                assert!(*wj < kkt_tol, "{}: w = {wj} > 0 at x = 0", case.name);
            }
        }
    }
}

#[test]
fn kendall_and_spearman_agree_with_scipy() {
    for case in data::RANK_CASES {
        let tau = kendall_tau_b(case.x, case.y).unwrap();
        let slow = kendall_tau_b_naive(case.x, case.y).unwrap();
        let rho = spearman_rho(case.x, case.y).unwrap();
        if case.tau_b.is_nan() {
            assert_eq!(tau, None, "{}: SciPy says undefined", case.name);
            assert_eq!(slow, None, "{}", case.name);
        } else {
            let t = tau.unwrap_or(f64::NAN);
            assert!(
                close(t, case.tau_b),
                "{}: tau {t} vs SciPy {}",
                case.name,
                case.tau_b
            );
            assert!(close(slow.unwrap_or(f64::NAN), case.tau_b), "{}", case.name);
        }
        if case.spearman_rho.is_nan() {
            assert_eq!(rho, None, "{}: SciPy says undefined", case.name);
        } else {
            let r = rho.unwrap_or(f64::NAN);
            assert!(
                close(r, case.spearman_rho),
                "{}: rho {r} vs SciPy {}",
                case.name,
                case.spearman_rho
            );
        }
    }
}

#[test]
fn splitmix64_matches_the_python_reference() {
    let mut g = SplitMix64::new(0);
    assert_eq!(
        [
            g.next_u64(),
            g.next_u64(),
            g.next_u64(),
            g.next_u64(),
            g.next_u64()
        ],
        data::SPLITMIX64_SEED_0
    );
    let mut g = SplitMix64::new(1234567);
    assert_eq!(
        [
            g.next_u64(),
            g.next_u64(),
            g.next_u64(),
            g.next_u64(),
            g.next_u64()
        ],
        data::SPLITMIX64_SEED_1234567
    );
}
