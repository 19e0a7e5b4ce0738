//! Accuracy metrics of puchala2022 (eq 15, 16, 19, 21, 22): how far modelled times are from
//! measured ones, per experiment and aggregated over experiments, and how well a model predicts
//! the ratio of two algorithms' times.
//!
//! - eq 15: the ratio characteristic `r_k = t_k(model) / t_k(measured)` of an experiment (a series
//!   of measurements, e.g. one kernel on one device over problem sizes).
//! - eq 16: the experiment's mean absolute percentage error `E = mean_k |1 - r_k|` and maximum
//!   mismatch `E^ = max_k |1 - r_k|`, both as fractions (0.12, not 12 %).
//! - eq 19: over experiments, the mean of the experiments' `E` and the maximum of their `E^`;
//!   groups (e.g. the matrix and lattice methods) combine the same way, mean of means and max of
//!   maxima.
//! - eq 21, 22: for two algorithms A and B measured on the same points, `R = t_A / t_B` measured
//!   (`R_d`) and modelled (`R_m`); the error `|R_d - R_m| / R_d`, its mean and maximum per
//!   experiment, then the mean of means and the maximum of maxima over experiments.
//!
//! Rank agreement (Kendall's tau-b between modelled and measured times) lives in `fit::rank`;
//! an evaluation computes it from the same modelled and measured series it passes here and reports
//! it beside these numbers. This module does no I/O, no grouping of measurements into
//! experiments and no model calls: it takes plain series of times.

use serde::Serialize;

use crate::error::{Error, Result};

/// Checks one pair of equally long, non-empty series of times.
fn check_series(model_us: &[f64], measured_us: &[f64]) -> Result<()> {
    if model_us.len() != measured_us.len() {
        return Err(Error::invalid(
            "model_us",
            format!(
                "needs one modelled time per measured time, got {} and {}",
                model_us.len(),
                measured_us.len()
            ),
        ));
    }
    if measured_us.is_empty() {
        return Err(Error::invalid(
            "measured_us",
            "needs at least one measurement",
        ));
    }
    for (k, (&m, &d)) in model_us.iter().zip(measured_us).enumerate() {
        crate::error::non_negative(&format!("model_us[{k}]"), m)?;
        crate::error::positive(&format!("measured_us[{k}]"), d)?;
    }
    Ok(())
}

/// eq 15: `r_k = model_k / measured_k` for every point.
pub fn ratios(model_us: &[f64], measured_us: &[f64]) -> Result<Vec<f64>> {
    check_series(model_us, measured_us)?;
    Ok(model_us
        .iter()
        .zip(measured_us)
        .map(|(m, d)| m / d)
        .collect())
}

/// The accuracy of one experiment (eq 15, 16), with its measured time range (t_min, t_max of
/// puchala2022 Fig 9b).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExperimentAccuracy {
    /// Number of points.
    pub n: usize,
    /// `r_k`, in the order of the input.
    pub ratios: Vec<f64>,
    /// Mean of `|1 - r_k|`, a fraction.
    pub mape: f64,
    /// Maximum of `|1 - r_k|`, a fraction.
    pub max_error: f64,
    /// Smallest and largest measured time, microseconds.
    pub t_min_us: f64,
    pub t_max_us: f64,
}

/// eq 15, 16 for one experiment.
pub fn experiment_accuracy(model_us: &[f64], measured_us: &[f64]) -> Result<ExperimentAccuracy> {
    let r = ratios(model_us, measured_us)?;
    let errors: Vec<f64> = r.iter().map(|x| (1.0 - x).abs()).collect();
    let n = r.len();
    Ok(ExperimentAccuracy {
        n,
        mape: errors.iter().sum::<f64>() / n as f64,
        max_error: errors.iter().copied().fold(0.0, f64::max),
        t_min_us: measured_us.iter().copied().fold(f64::INFINITY, f64::min),
        t_max_us: measured_us.iter().copied().fold(0.0, f64::max),
        ratios: r,
    })
}

/// Aggregates over experiments (eq 19, eq 22): mean of their mean errors, maximum of their
/// maximum errors.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Aggregate {
    /// Number of experiments (or groups) aggregated.
    pub experiments: usize,
    /// Total number of points behind them.
    pub n: usize,
    /// Mean of the per-experiment mean errors, a fraction.
    pub mean_error: f64,
    /// Maximum of the per-experiment maximum errors, a fraction.
    pub max_error: f64,
}

/// Mean of means, max of maxima over `(n, mean, max)` triples.
fn aggregate_triples(items: impl Iterator<Item = (usize, f64, f64)>) -> Result<Aggregate> {
    let (mut count, mut n, mut sum, mut max) = (0usize, 0usize, 0.0, 0.0f64);
    for (k, mean, mx) in items {
        count += 1;
        n += k;
        sum += mean;
        max = max.max(mx);
    }
    if count == 0 {
        return Err(Error::invalid(
            "experiments",
            "needs at least one experiment",
        ));
    }
    Ok(Aggregate {
        experiments: count,
        n,
        mean_error: sum / count as f64,
        max_error: max,
    })
}

/// eq 19 for one group of experiments (e.g. one method, or one model on one device).
pub fn aggregate(experiments: &[ExperimentAccuracy]) -> Result<Aggregate> {
    aggregate_triples(experiments.iter().map(|e| (e.n, e.mape, e.max_error)))
}

/// eq 19 across groups: `E = mean of the groups' E`, `E^ = max of their E^` (puchala2022 averages
/// its two methods this way). `experiments` of the result counts the groups.
pub fn combine(groups: &[Aggregate]) -> Result<Aggregate> {
    aggregate_triples(groups.iter().map(|g| (g.n, g.mean_error, g.max_error)))
}

/// How well a model predicts the ratio of two algorithms' times over one experiment (eq 21).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComparisonAccuracy {
    pub n: usize,
    /// `R_d = t_A / t_B` measured, per point.
    pub measured_ratios: Vec<f64>,
    /// `R_m = t_A / t_B` modelled, per point.
    pub model_ratios: Vec<f64>,
    /// Mean of `|R_d - R_m| / R_d`, a fraction.
    pub mean_error: f64,
    /// Maximum of `|R_d - R_m| / R_d`, a fraction.
    pub max_error: f64,
}

/// eq 21: algorithms A and B on the same points (same order), modelled and measured.
pub fn comparison_accuracy(
    a_model_us: &[f64],
    a_measured_us: &[f64],
    b_model_us: &[f64],
    b_measured_us: &[f64],
) -> Result<ComparisonAccuracy> {
    check_series(a_model_us, a_measured_us)?;
    check_series(b_model_us, b_measured_us)?;
    if a_measured_us.len() != b_measured_us.len() {
        return Err(Error::invalid(
            "b_measured_us",
            format!(
                "algorithms A and B need the same points, got {} and {}",
                a_measured_us.len(),
                b_measured_us.len()
            ),
        ));
    }
    for (k, &m) in b_model_us.iter().enumerate() {
        crate::error::positive(&format!("b_model_us[{k}]"), m)?;
    }
    let measured: Vec<f64> = a_measured_us
        .iter()
        .zip(b_measured_us)
        .map(|(a, b)| a / b)
        .collect();
    let model: Vec<f64> = a_model_us
        .iter()
        .zip(b_model_us)
        .map(|(a, b)| a / b)
        .collect();
    let errors: Vec<f64> = measured
        .iter()
        .zip(&model)
        .map(|(d, m)| (d - m).abs() / d)
        .collect();
    let n = errors.len();
    Ok(ComparisonAccuracy {
        n,
        mean_error: errors.iter().sum::<f64>() / n as f64,
        max_error: errors.iter().copied().fold(0.0, f64::max),
        measured_ratios: measured,
        model_ratios: model,
    })
}

/// eq 22: mean of the experiments' mean comparison errors, maximum of their maxima.
pub fn aggregate_comparisons(experiments: &[ComparisonAccuracy]) -> Result<Aggregate> {
    aggregate_triples(experiments.iter().map(|e| (e.n, e.mean_error, e.max_error)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn ratios_mape_and_max_mismatch_by_hand() {
        // r = 110/100, 90/100, 100/100 = 1.1, 0.9, 1.0; |1 - r| = 0.1, 0.1, 0.0
        let e = experiment_accuracy(&[110.0, 90.0, 100.0], &[100.0, 100.0, 100.0]).unwrap();
        assert_eq!(e.n, 3);
        assert!(close(e.ratios[0], 1.1) && close(e.ratios[1], 0.9) && close(e.ratios[2], 1.0));
        assert!(close(e.mape, 0.2 / 3.0));
        assert!(close(e.max_error, 0.1));
        assert_eq!((e.t_min_us, e.t_max_us), (100.0, 100.0));
    }

    #[test]
    fn measured_range_and_asymmetric_errors() {
        // r = 5/4 = 1.25 and 30/40 = 0.75: errors 0.25 and 0.25; a model twice too slow
        // at one point gives error 1.0.
        let e = experiment_accuracy(&[5.0, 30.0, 20.0], &[4.0, 40.0, 10.0]).unwrap();
        assert!(close(e.mape, (0.25 + 0.25 + 1.0) / 3.0));
        assert!(close(e.max_error, 1.0));
        assert_eq!((e.t_min_us, e.t_max_us), (4.0, 40.0));
    }

    #[test]
    fn eq19_mean_of_means_and_max_of_maxima() {
        let a = experiment_accuracy(&[110.0, 90.0], &[100.0, 100.0]).unwrap(); // E 0.1, E^ 0.1
        let b = experiment_accuracy(&[103.0, 100.0], &[100.0, 100.0]).unwrap(); // E 0.015, E^ 0.03
        let m = aggregate(&[a, b]).unwrap();
        assert_eq!((m.experiments, m.n), (2, 4));
        assert!(close(m.mean_error, (0.1 + 0.015) / 2.0));
        assert!(close(m.max_error, 0.1));
        // Two methods: E = (E^M + E^L)/2, E^ = max.
        let l = Aggregate {
            experiments: 1,
            n: 3,
            mean_error: 0.04,
            max_error: 0.2,
        };
        let all = combine(&[m, l]).unwrap();
        assert!(close(all.mean_error, (0.0575 + 0.04) / 2.0));
        assert!(close(all.max_error, 0.2));
        assert_eq!(all.n, 7);
    }

    #[test]
    fn eq21_22_comparison_error_by_hand() {
        // R_d = 10/5 = 2, 20/10 = 2; R_m = 12/5 = 2.4, 18/10 = 1.8
        // errors |2 - 2.4|/2 = 0.2, |2 - 1.8|/2 = 0.1
        let c =
            comparison_accuracy(&[12.0, 18.0], &[10.0, 20.0], &[5.0, 10.0], &[5.0, 10.0]).unwrap();
        assert!(close(c.measured_ratios[0], 2.0) && close(c.model_ratios[0], 2.4));
        assert!(close(c.mean_error, 0.15));
        assert!(close(c.max_error, 0.2));
        let perfect = comparison_accuracy(&[4.0], &[8.0], &[2.0], &[4.0]).unwrap(); // R_m = R_d = 2
        assert!(close(perfect.max_error, 0.0));
        let agg = aggregate_comparisons(&[c, perfect]).unwrap();
        assert!(close(agg.mean_error, 0.075));
        assert!(close(agg.max_error, 0.2));
    }

    #[test]
    fn bad_series_are_errors_naming_the_field() {
        assert!(ratios(&[1.0], &[1.0, 2.0])
            .unwrap_err()
            .to_string()
            .contains("model_us"));
        assert!(ratios(&[], &[]).is_err());
        assert!(ratios(&[1.0], &[0.0])
            .unwrap_err()
            .to_string()
            .contains("measured_us[0]"));
        assert!(ratios(&[f64::NAN], &[1.0])
            .unwrap_err()
            .to_string()
            .contains("model_us[0]"));
        assert!(aggregate(&[]).is_err());
        assert!(comparison_accuracy(&[1.0], &[1.0], &[0.0], &[1.0])
            .unwrap_err()
            .to_string()
            .contains("b_model_us[0]"));
        assert!(comparison_accuracy(&[1.0], &[1.0], &[1.0, 1.0], &[1.0, 1.0]).is_err());
    }
}
