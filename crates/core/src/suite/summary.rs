//! The accuracy of a suite's predictions: per dataset x device x model the number of cases,
//! MAPE, median absolute percentage error, share within 25 %, Kendall tau-b and the geometric
//! mean of predicted/measured, with failures counted per reason. All errors are fractions
//! (0.12, not 12 %). Pure: no I/O, no model calls.

use std::collections::BTreeMap;

use serde::Serialize;

use super::run::CaseResult;
use crate::error::Result;
use crate::eval::metrics::ratios;
use crate::fit::rank::kendall_tau_b;

/// The `device` of the groups that pool every device of a dataset.
pub const ALL_DEVICES: &str = "all";

/// How close one series of predictions is to its measurements.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Accuracy {
    pub n: usize,
    /// Mean of `|predicted / measured - 1|`.
    pub mape: f64,
    /// Median of `|predicted / measured - 1|` (the mean of the two middle values for even n).
    pub median_error: f64,
    /// Share of cases with `|predicted / measured - 1| <= 0.25`.
    pub within_25: f64,
    /// Kendall tau-b between predicted and measured times; `None` for fewer than two cases or
    /// when either series is constant.
    pub kendall_tau: Option<f64>,
    /// `exp(mean(ln(predicted / measured)))`: above 1 the model predicts too slow on average.
    pub geomean_ratio: f64,
}

/// The accuracy of predictions against measurements (equally long, at least one point, every
/// prediction above zero). The error names `predicted_us` or `measured_us`.
pub fn accuracy(predicted_us: &[f64], measured_us: &[f64]) -> Result<Accuracy> {
    let r = ratios(predicted_us, measured_us)?;
    for (k, &p) in predicted_us.iter().enumerate() {
        crate::error::positive(&format!("predicted_us[{k}]"), p)?;
    }
    let n = r.len();
    let mut errors: Vec<f64> = r.iter().map(|x| (x - 1.0).abs()).collect();
    errors.sort_by(f64::total_cmp);
    let median_error = if n % 2 == 1 {
        errors[n / 2]
    } else {
        (errors[n / 2 - 1] + errors[n / 2]) / 2.0
    };
    Ok(Accuracy {
        n,
        mape: errors.iter().sum::<f64>() / n as f64,
        median_error,
        within_25: errors.iter().filter(|&&e| e <= 0.25).count() as f64 / n as f64,
        kendall_tau: kendall_tau_b(predicted_us, measured_us)?,
        geomean_ratio: (r.iter().map(|x| x.ln()).sum::<f64>() / n as f64).exp(),
    })
}

/// One row of the accuracy table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupAccuracy {
    pub dataset: String,
    /// The device's catalogue name, or [`ALL_DEVICES`].
    pub device: String,
    pub model: String,
    /// Cases the model predicted.
    pub n: usize,
    /// Cases of the group it did not predict, and why.
    pub failed: usize,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub failures: BTreeMap<String, usize>,
    pub mape: Option<f64>,
    pub median_error: Option<f64>,
    pub within_25: Option<f64>,
    pub kendall_tau: Option<f64>,
    pub geomean_ratio: Option<f64>,
}

/// Cases of a dataset that failed for one reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailureCount {
    pub dataset: String,
    pub reason: String,
    /// Cases with this failure for at least one model.
    pub cases: usize,
    /// The models it hit.
    pub models: Vec<String>,
    /// The first case's id and message.
    pub example: String,
}

/// What the compile step did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CompileStats {
    /// Distinct (source, defines, options, target) compilations and PTX resource reports.
    pub units: usize,
    pub from_cache: usize,
    pub compiled: usize,
    pub failed: usize,
}

/// A suite's evaluation.
#[derive(Debug, Clone, Serialize)]
pub struct SuiteEvaluation {
    pub suite: String,
    pub cases: usize,
    pub models: Vec<String>,
    /// Distinct emulated launches.
    pub launches: usize,
    pub groups: Vec<GroupAccuracy>,
    pub failures: Vec<FailureCount>,
    pub compile: CompileStats,
    pub notes: Vec<String>,
    #[serde(skip)]
    pub results: Vec<CaseResult>,
}

/// The groups of a set of case results: per dataset (first-seen order), per device (first-seen
/// order, then [`ALL_DEVICES`] when the dataset has several), per model (in `models` order).
pub fn groups(results: &[CaseResult], models: &[String]) -> Result<Vec<GroupAccuracy>> {
    let mut datasets: Vec<&str> = Vec::new();
    for r in results {
        if !datasets.contains(&r.dataset.as_str()) {
            datasets.push(&r.dataset);
        }
    }
    let mut out = Vec::new();
    for ds in datasets {
        let mut devices: Vec<&str> = Vec::new();
        for r in results.iter().filter(|r| r.dataset == ds) {
            if !devices.contains(&r.device.as_str()) {
                devices.push(&r.device);
            }
        }
        if devices.len() > 1 {
            devices.push(ALL_DEVICES);
        }
        for dev in devices {
            for (mi, model) in models.iter().enumerate() {
                let mut g = GroupAccuracy {
                    dataset: ds.to_string(),
                    device: dev.to_string(),
                    model: model.clone(),
                    n: 0,
                    failed: 0,
                    failures: BTreeMap::new(),
                    mape: None,
                    median_error: None,
                    within_25: None,
                    kendall_tau: None,
                    geomean_ratio: None,
                };
                let (mut pred, mut meas) = (Vec::new(), Vec::new());
                let members = results
                    .iter()
                    .filter(|r| r.dataset == ds && (dev == ALL_DEVICES || r.device == dev));
                for r in members {
                    match &r.models[mi].outcome {
                        Ok(p) => {
                            pred.push(*p);
                            meas.push(r.measured_us);
                        }
                        Err(f) => {
                            g.failed += 1;
                            super::bump(&mut g.failures, &f.reason);
                        }
                    }
                }
                if !pred.is_empty() {
                    let a = accuracy(&pred, &meas)?;
                    g.n = a.n;
                    g.mape = Some(a.mape);
                    g.median_error = Some(a.median_error);
                    g.within_25 = Some(a.within_25);
                    g.kendall_tau = a.kendall_tau;
                    g.geomean_ratio = Some(a.geomean_ratio);
                }
                out.push(g);
            }
        }
    }
    Ok(out)
}

/// Failures per dataset and reason, in first-seen order.
pub fn failures(results: &[CaseResult]) -> Vec<FailureCount> {
    let mut out: Vec<FailureCount> = Vec::new();
    for r in results {
        let mut counted: Vec<&str> = Vec::new();
        for m in &r.models {
            let Err(f) = &m.outcome else { continue };
            let i = match out
                .iter()
                .position(|c| c.dataset == r.dataset && c.reason == f.reason)
            {
                Some(i) => i,
                None => {
                    out.push(FailureCount {
                        dataset: r.dataset.clone(),
                        reason: f.reason.clone(),
                        cases: 0,
                        models: Vec::new(),
                        example: format!("{}: {}", r.id, f.message),
                    });
                    out.len() - 1
                }
            };
            if !counted.contains(&f.reason.as_str()) {
                out[i].cases += 1;
                counted.push(&f.reason);
            }
            if !out[i].models.contains(&m.model) {
                out[i].models.push(m.model.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::run::{Failure, ModelOutcome};

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn metrics_by_hand() {
        // Ratios predicted/measured: 0.8, 1.1, 1.3, 0.95.
        let measured = [10.0, 20.0, 40.0, 100.0];
        let predicted = [8.0, 22.0, 52.0, 95.0];
        let a = accuracy(&predicted, &measured).unwrap();
        assert_eq!(a.n, 4);
        // Errors 0.2, 0.1, 0.3, 0.05: mean 0.65 / 4 = 0.1625; sorted 0.05 0.1 0.2 0.3, median
        // (0.1 + 0.2) / 2 = 0.15; three of four are within 0.25.
        assert!(close(a.mape, 0.1625), "{}", a.mape);
        assert!(close(a.median_error, 0.15), "{}", a.median_error);
        assert!(close(a.within_25, 0.75));
        // Both series increase: every pair concordant.
        assert!(close(a.kendall_tau.unwrap(), 1.0));
        // (0.8 * 1.1 * 1.3 * 0.95)^(1/4) = 1.0868^(1/4) = 1.020326...
        assert!(
            close(a.geomean_ratio, 1.0868f64.powf(0.25)),
            "{}",
            a.geomean_ratio
        );
    }

    #[test]
    fn odd_count_median_and_discordant_pairs() {
        // Ratios 0.5, 1, 2: errors 0.5, 0, 1 -> median 0.5, mape 0.5, within 1/3.
        // Predicted 1, 2, 6 vs measured 2, 2, 3: pair (1,2) predicted rises, measured tied;
        // (1,3) and (2,3) both rise. Concordant 2, discordant 0, one pair tied in measured
        // only: tau-b = 2 / sqrt(3 * 2) = 0.8165.
        let a = accuracy(&[1.0, 2.0, 6.0], &[2.0, 2.0, 3.0]).unwrap();
        assert!(close(a.median_error, 0.5));
        assert!(close(a.mape, 0.5));
        assert!(close(a.within_25, 1.0 / 3.0));
        assert!(close(a.kendall_tau.unwrap(), 2.0 / 6f64.sqrt()));
        assert!(close(a.geomean_ratio, 1.0));
        // One point: no rank agreement.
        assert_eq!(accuracy(&[1.0], &[2.0]).unwrap().kendall_tau, None);
        assert!(accuracy(&[0.0], &[2.0]).is_err());
        assert!(accuracy(&[], &[]).is_err());
    }

    fn result(
        dataset: &str,
        device: &str,
        measured: f64,
        outcome: std::result::Result<f64, &str>,
    ) -> CaseResult {
        CaseResult {
            id: format!("{dataset}-{device}-{measured}"),
            dataset: dataset.into(),
            device: device.into(),
            entry: "k".into(),
            measured_us: measured,
            models: vec![ModelOutcome {
                model: "trace".into(),
                outcome: outcome.map_err(|r| Failure {
                    reason: r.into(),
                    message: "why".into(),
                }),
            }],
            notes: vec![],
            inputs: None,
        }
    }

    #[test]
    fn groups_count_failures_and_pool_devices() {
        let results = vec![
            result("a", "X", 10.0, Ok(12.0)),
            result("a", "Y", 10.0, Ok(8.0)),
            result("a", "Y", 20.0, Err("compile error")),
            result("b", "X", 5.0, Err("unknown device")),
        ];
        let g = groups(&results, &["trace".to_string()]).unwrap();
        let names: Vec<(&str, &str)> = g
            .iter()
            .map(|x| (x.dataset.as_str(), x.device.as_str()))
            .collect();
        assert_eq!(names, [("a", "X"), ("a", "Y"), ("a", "all"), ("b", "X")]);
        assert_eq!((g[0].n, g[0].failed), (1, 0));
        assert!(close(g[0].median_error.unwrap(), 0.2));
        assert_eq!((g[1].n, g[1].failed), (1, 1));
        assert_eq!(g[1].failures.get("compile error"), Some(&1));
        assert_eq!((g[2].n, g[2].failed), (2, 1));
        assert!(close(g[2].geomean_ratio.unwrap(), (1.2f64 * 0.8).sqrt()));
        assert_eq!((g[3].n, g[3].failed, g[3].mape), (0, 1, None));
        let f = failures(&results);
        assert_eq!(f.len(), 2);
        assert_eq!((f[0].reason.as_str(), f[0].cases), ("compile error", 1));
        assert_eq!(f[1].dataset, "b");
    }
}
