//! How good a ranking is against measured times: what an autotuning user gains by measuring
//! only the configurations the prediction puts first.
//!
//! Over the configurations that were both predicted and measured:
//!
//! - Kendall's tau-b and Spearman's rho between predicted and measured times, over the pairs
//!   where the prediction is `ok` and the measurement a time (`fit::rank`).
//! - Regret of measuring the predicted top `k` (`ok` rows by rank): the best measured time
//!   among them over the best measured time of all, minus 1 (0 = the best was found). A
//!   configuration in the top `k` that failed when measured is skipped; when all of them
//!   failed the regret is undefined. Top-1 is `k = 1`; top 5 % is `k = ceil(0.05 n)` of the
//!   `n` predicted `ok`.
//! - The baseline: the expected regret of the best of `m = 10` configurations drawn at random
//!   without replacement from the `N` with a measured time. With the times sorted ascending,
//!   `t_(i)` is the minimum with probability `C(N - i, m - 1) / C(N, m)`, so
//!   `E[min] = sum_i t_(i) C(N - i, m - 1) / C(N, m)` exactly (computed by the ratio
//!   `p_(i+1) = p_i (N - i - m + 1) / (N - i)` from `p_1 = m / N`).
//! - Refusals: precision and recall of the predicted failures (`cannot-launch` or
//!   `compile-error`) against the configurations whose measured `time` is a failure marker.
//! - Per tunable parameter, the geometric mean of predicted / measured time over the pairs that
//!   share each of its values, and their spread (the largest of those means over the smallest,
//!   among values with at least [`MIN_TREND_PAIRS`] pairs). A model that is off by the same
//!   factor everywhere ranks perfectly; a trend along one parameter (too fast for small tiles,
//!   too slow for large ones) is what mis-ranks a space, and this names the parameter.
//!
//!
//! A sample to score (`sample_measured`) is drawn from the configurations the measured cache
//! holds, so that every one has a measurement: the timed and the failed ones are two strata,
//! each given its share of the `n` (rounded; so failures are represented and the refusals'
//! precision and recall can be measured), each shuffled with its own seed
//! (`fit::split::stratum_seed(seed, "")` for the timed ones, `"failed"` for the failures).
//! The timed stratum is drawn exactly as the accuracy harness draws a tuning group's rows
//! (the same order, the file's sorted keys, and the same shuffle), so with the harness's seed
//! the timed configurations are the first ones of the harness's sample, whose compilations
//! its cache already holds.
//!
//! What it does NOT do: read files (`kt_cache`), or choose `k` for the user.

use super::kt_cache::{key_part, Measured, MeasuredCache};
use super::spec::TuneSpec;
use super::{Row, Status, TuneReport};
use crate::error::{Error, Result};
use crate::fit::rank::{kendall_tau_b, spearman_rho};
use crate::fit::split::{stratum_seed, SplitMix64};

/// A sample of the configurations a measured cache holds.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredSample {
    /// Configuration indices (in the full product), ascending.
    pub indices: Vec<u64>,
    /// The cache's timed and failed configurations that are in the space.
    pub timed: usize,
    pub failed: usize,
    /// How many of each were drawn.
    pub drawn_timed: usize,
    pub drawn_failed: usize,
    /// Cache entries that are not configurations of the space (values outside the spec's
    /// lists, or failing its conditions); never drawn.
    pub outside: usize,
}

/// `n` configurations of the space (`valid`: the indices that meet the conditions, ascending)
/// drawn from those the measured cache holds (see the module notes), or all of them when it
/// holds at most `n`.
pub fn sample_measured(
    spec: &TuneSpec,
    valid: &[u64],
    measured: &MeasuredCache,
    n: usize,
    seed: u64,
) -> Result<MeasuredSample> {
    let names: Vec<String> = spec.params.iter().map(|p| p.name.clone()).collect();
    let order = measured.key_order(&names)?;
    let positions: Vec<std::collections::HashMap<String, u64>> = spec
        .params
        .iter()
        .map(|p| {
            p.values
                .iter()
                .enumerate()
                .map(|(k, v)| (key_part(v), k as u64))
                .collect()
        })
        .collect();
    let (mut timed, mut failed, mut outside) = (Vec::new(), Vec::new(), 0usize);
    'entry: for (parts, m) in measured.entries() {
        // The mixed-radix index: the last parameter varies fastest.
        let mut at = vec![0u64; names.len()];
        for (part, &p) in parts.iter().zip(&order) {
            match positions[p].get(part) {
                Some(&k) => at[p] = k,
                None => {
                    outside += 1;
                    continue 'entry;
                }
            }
        }
        let index = spec
            .params
            .iter()
            .zip(&at)
            .fold(0u64, |acc, (p, &k)| acc * p.values.len() as u64 + k);
        if valid.binary_search(&index).is_err() {
            outside += 1;
            continue;
        }
        match m {
            Measured::TimeMs(_) => timed.push(index),
            Measured::Failed(_) => failed.push(index),
        }
    }
    let total = timed.len() + failed.len();
    if total == 0 {
        return Err(Error::file(
            measured.origin.as_str(),
            "holds no configuration of the spec's space to sample",
        ));
    }
    let mut want_failed = ((n as f64) * failed.len() as f64 / total as f64).round() as usize;
    want_failed = want_failed.min(failed.len());
    let want_timed = n.saturating_sub(want_failed).min(timed.len());
    let want_failed = n.saturating_sub(want_timed).min(failed.len());
    let draw = |mut units: Vec<u64>, want: usize, stratum: &str| -> Vec<u64> {
        if units.len() > want {
            SplitMix64::new(stratum_seed(seed, stratum)).shuffle(&mut units);
            units.truncate(want);
        }
        units
    };
    let (n_timed, n_failed) = (timed.len(), failed.len());
    let mut indices = draw(timed, want_timed, "");
    indices.extend(draw(failed, want_failed, "failed"));
    indices.sort_unstable();
    indices.dedup();
    Ok(MeasuredSample {
        indices,
        timed: n_timed,
        failed: n_failed,
        drawn_timed: want_timed,
        drawn_failed: want_failed,
        outside,
    })
}

/// Configurations drawn at random in the baseline.
pub const RANDOM_DRAWS: usize = 10;

/// One configuration's prediction and measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    pub status: Status,
    pub predicted_us: Option<f64>,
    pub rank: Option<u64>,
    pub measured: Measured,
}

/// Precision and recall of predicted failures.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Refusals {
    /// Predicted `cannot-launch` or `compile-error`.
    pub predicted: usize,
    /// Measured failures.
    pub measured: usize,
    /// Both.
    pub agreed: usize,
    pub precision: Option<f64>,
    pub recall: Option<f64>,
}

/// The regret of measuring the predicted top `k`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TopK {
    pub k: usize,
    pub regret: Option<f64>,
}

/// The scores of a ranking against measurements.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Evaluation {
    pub device: String,
    pub measured_file: String,
    /// Configurations predicted and found in the measurements.
    pub configurations: usize,
    /// Selected configurations the measurements do not hold.
    pub unmatched: usize,
    pub measured_ok: usize,
    pub measured_failed: usize,
    /// Pairs with a predicted and a measured time.
    pub pairs: usize,
    pub kendall_tau_b: Option<f64>,
    pub spearman: Option<f64>,
    pub measured_best_ms: Option<f64>,
    pub top1: TopK,
    pub top_k: TopK,
    pub top_5_percent: TopK,
    /// Expected regret of the best of [`RANDOM_DRAWS`] random configurations.
    pub random_10_expected_regret: Option<f64>,
    pub refusals: Refusals,
    /// Rows per status among the evaluated configurations.
    pub model_errors: usize,
    /// Per tunable parameter with more than one value, the widest spread first (filled by
    /// [`evaluate`]; [`evaluate_pairs`] has no parameter values and leaves it empty).
    pub by_parameter: Vec<ParameterTrend>,
}

/// Values of a parameter with fewer pairs than this are listed but left out of its spread.
pub const MIN_TREND_PAIRS: usize = 3;

/// How the prediction's error moves with one tunable parameter.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ParameterTrend {
    pub name: String,
    /// Per value (numeric values ascending, others in the order first met).
    pub values: Vec<ValueRatio>,
    /// The largest geometric mean over the smallest, among values with at least
    /// [`MIN_TREND_PAIRS`] pairs (1: the same error at every value); `None` with fewer than two
    /// such values.
    pub spread: Option<f64>,
}

/// The pairs that share one value of a parameter.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ValueRatio {
    pub value: String,
    pub pairs: usize,
    /// Geometric mean of predicted / measured time.
    pub geomean_ratio: f64,
}

/// The trends of `names` over `pairs` (each: its values of the parameters, in `names`' order,
/// and its predicted / measured time, finite and positive). Parameters with one value are left
/// out.
pub fn parameter_trends(names: &[String], pairs: &[(Vec<String>, f64)]) -> Vec<ParameterTrend> {
    let mut trends: Vec<ParameterTrend> = names
        .iter()
        .enumerate()
        .filter_map(|(p, name)| {
            // (value, pairs, sum of log ratios), in the order first met.
            let mut groups: Vec<(String, usize, f64)> = Vec::new();
            for (values, ratio) in pairs {
                let v = &values[p];
                let at = match groups.iter().position(|g| &g.0 == v) {
                    Some(at) => at,
                    None => {
                        groups.push((v.clone(), 0, 0.0));
                        groups.len() - 1
                    }
                };
                groups[at].1 += 1;
                groups[at].2 += ratio.ln();
            }
            if groups.len() < 2 {
                return None;
            }
            let numbers: Option<Vec<f64>> = groups.iter().map(|g| g.0.parse().ok()).collect();
            if let Some(numbers) = numbers {
                let mut keyed: Vec<_> = numbers.into_iter().zip(groups).collect();
                keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
                groups = keyed.into_iter().map(|(_, g)| g).collect();
            }
            let values: Vec<ValueRatio> = groups
                .into_iter()
                .map(|(value, n, logs)| ValueRatio {
                    value,
                    pairs: n,
                    geomean_ratio: (logs / n as f64).exp(),
                })
                .collect();
            let counted: Vec<f64> = values
                .iter()
                .filter(|v| v.pairs >= MIN_TREND_PAIRS)
                .map(|v| v.geomean_ratio)
                .collect();
            let spread = (counted.len() >= 2).then(|| {
                let hi = counted.iter().copied().fold(f64::MIN, f64::max);
                let lo = counted.iter().copied().fold(f64::MAX, f64::min);
                hi / lo
            });
            Some(ParameterTrend {
                name: name.clone(),
                values,
                spread,
            })
        })
        .collect();
    // Widest spread first; parameters without one (a spread is at least 1) last, in their
    // order.
    trends.sort_by(|a, b| b.spread.unwrap_or(0.0).total_cmp(&a.spread.unwrap_or(0.0)));
    trends
}

/// Matches one device's rows of a report with a measured cache.
pub fn pairs(
    report: &TuneReport,
    device: usize,
    measured: &MeasuredCache,
) -> Result<(Vec<Pair>, usize)> {
    let mut out = Vec::new();
    let mut unmatched = 0;
    for (r, m) in measured_rows(report, device, measured)? {
        match m {
            Some(m) => out.push(Pair {
                status: r.status,
                predicted_us: r.predicted_us,
                rank: r.rank,
                measured: m.clone(),
            }),
            None => unmatched += 1,
        }
    }
    Ok((out, unmatched))
}

/// Expected minimum of `m` values drawn without replacement from `sorted` (ascending).
pub fn expected_min_of_random(sorted: &[f64], m: usize) -> Option<f64> {
    let n = sorted.len();
    if n == 0 || m == 0 {
        return None;
    }
    let m = m.min(n);
    let mut p = m as f64 / n as f64;
    let mut e = 0.0;
    for (i, t) in sorted.iter().enumerate() {
        // p is the probability that sorted[i] (the (i+1)-th smallest) is the minimum.
        e += p * t;
        let i1 = (i + 1) as f64;
        let next = n as f64 - i1 - m as f64 + 1.0;
        if next <= 0.0 {
            break;
        }
        p *= next / (n as f64 - i1);
    }
    Some(e)
}

fn top_k_regret(ranked: &[&Pair], k: usize, best: Option<f64>) -> TopK {
    let best_found = ranked
        .iter()
        .take(k)
        .filter_map(|p| match p.measured {
            Measured::TimeMs(t) => Some(t),
            Measured::Failed(_) => None,
        })
        .fold(f64::INFINITY, f64::min);
    let regret = match best {
        Some(b) if best_found.is_finite() => Some(best_found / b - 1.0),
        _ => None,
    };
    TopK { k, regret }
}

/// Scores matched pairs; `top_k` is the caller's `k`.
pub fn evaluate_pairs(pairs: &[Pair], top_k: usize) -> Result<(Evaluation, Vec<f64>)> {
    let times: Vec<f64> = pairs
        .iter()
        .filter_map(|p| match p.measured {
            Measured::TimeMs(t) => Some(t),
            Measured::Failed(_) => None,
        })
        .collect();
    let best = times
        .iter()
        .copied()
        .fold(None, |b: Option<f64>, t| Some(b.map_or(t, |b| b.min(t))));
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for p in pairs {
        if let (Status::Ok, Some(pred), Measured::TimeMs(t)) =
            (p.status, p.predicted_us, &p.measured)
        {
            x.push(pred);
            y.push(*t);
        }
    }
    let mut ranked: Vec<&Pair> = pairs
        .iter()
        .filter(|p| p.status == Status::Ok && p.rank.is_some())
        .collect();
    ranked.sort_by_key(|p| p.rank);
    let n_ok = ranked.len();
    let five = ((n_ok as f64) * 0.05).ceil().max(1.0) as usize;
    let mut sorted = times.clone();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let random = match (expected_min_of_random(&sorted, RANDOM_DRAWS), best) {
        (Some(e), Some(b)) => Some(e / b - 1.0),
        _ => None,
    };
    let predicted_failed =
        |p: &Pair| matches!(p.status, Status::CannotLaunch | Status::CompileError);
    let measured_failed = |p: &Pair| matches!(p.measured, Measured::Failed(_));
    let predicted = pairs.iter().filter(|p| predicted_failed(p)).count();
    let failed = pairs.iter().filter(|p| measured_failed(p)).count();
    let agreed = pairs
        .iter()
        .filter(|p| predicted_failed(p) && measured_failed(p))
        .count();
    let ratio = |a: usize, b: usize| (b > 0).then(|| a as f64 / b as f64);
    let eval = Evaluation {
        device: String::new(),
        measured_file: String::new(),
        configurations: pairs.len(),
        unmatched: 0,
        measured_ok: times.len(),
        measured_failed: failed,
        pairs: x.len(),
        kendall_tau_b: kendall_tau_b(&x, &y)?,
        spearman: spearman_rho(&x, &y)?,
        measured_best_ms: best,
        top1: top_k_regret(&ranked, 1, best),
        top_k: top_k_regret(&ranked, top_k.max(1), best),
        top_5_percent: top_k_regret(&ranked, five, best),
        random_10_expected_regret: random,
        refusals: Refusals {
            predicted,
            measured: failed,
            agreed,
            precision: ratio(agreed, predicted),
            recall: ratio(agreed, failed),
        },
        model_errors: pairs
            .iter()
            .filter(|p| p.status == Status::ModelError)
            .count(),
        by_parameter: Vec::new(),
    };
    Ok((eval, sorted))
}

/// Scores one device's ranking of a report against a measured cache.
pub fn evaluate(
    report: &TuneReport,
    device: usize,
    measured: &MeasuredCache,
    top_k: usize,
) -> Result<Evaluation> {
    let (pairs, unmatched) = pairs(report, device, measured)?;
    let (mut e, _) = evaluate_pairs(&pairs, top_k)?;
    e.device = report.devices[device].clone();
    e.measured_file = measured.origin.clone();
    e.unmatched = unmatched;
    let ratios: Vec<(Vec<String>, f64)> = timed_pairs(report, device, measured)?
        .into_iter()
        .map(|p| (p.values, p.predicted_us / p.measured_us))
        .collect();
    e.by_parameter = parameter_trends(&report.param_names, &ratios);
    Ok(e)
}

/// A configuration predicted `ok` and measured with a time.
#[derive(Debug, Clone, PartialEq)]
pub struct TimedPair {
    /// Its parameters' values, in the report's `param_names` order.
    pub values: Vec<String>,
    pub predicted_us: f64,
    pub measured_us: f64,
}

/// The configurations of `device` predicted `ok` and measured with a time (both positive).
pub fn timed_pairs(
    report: &TuneReport,
    device: usize,
    measured: &MeasuredCache,
) -> Result<Vec<TimedPair>> {
    Ok(measured_rows(report, device, measured)?
        .filter(|(r, _)| r.status == Status::Ok)
        .filter_map(|(r, m)| match (r.predicted_us, m) {
            (Some(us), Some(Measured::TimeMs(ms))) if us > 0.0 && *ms > 0.0 => Some(TimedPair {
                values: report.configurations[r.config]
                    .values
                    .iter()
                    .map(|v| v.to_string())
                    .collect(),
                predicted_us: us,
                measured_us: ms * 1e3,
            }),
            _ => None,
        })
        .collect())
}

/// Every row of `device` with its measurement, if the measured cache holds its configuration.
fn measured_rows<'a>(
    report: &'a TuneReport,
    device: usize,
    measured: &'a MeasuredCache,
) -> Result<impl Iterator<Item = (&'a Row, Option<&'a Measured>)> + 'a> {
    let order = measured.key_order(&report.param_names)?;
    Ok(report.device_rows(device).map(move |r| {
        (
            r,
            measured.get(&order, &report.configurations[r.config].values),
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(rank: u64, pred: f64, meas: f64) -> Pair {
        Pair {
            status: Status::Ok,
            predicted_us: Some(pred),
            rank: Some(rank),
            measured: Measured::TimeMs(meas),
        }
    }

    #[test]
    fn trends_name_the_parameter_the_error_moves_with() {
        let names: Vec<String> = ["tile", "method", "filter"].map(String::from).to_vec();
        let pair = |tile: &str, method: &str, ratio: f64| {
            (
                vec![tile.to_string(), method.to_string(), "15".to_string()],
                ratio,
            )
        };
        // tile 1: ratios 0.5, 0.5 and 2 (geometric mean 0.5^(1/3)); tile 10: 2, 8 and 4
        // (geometric mean 64^(1/3) = 4); tile 2: one pair (100), listed but too few pairs for
        // the spread. method a: 2, 0.5, 4 and 100; method b: 0.5, 8 and 2.
        let pairs = vec![
            pair("10", "a", 2.0),
            pair("1", "b", 0.5),
            pair("1", "a", 0.5),
            pair("10", "b", 8.0),
            pair("10", "a", 4.0),
            pair("1", "b", 2.0),
            pair("2", "a", 100.0),
        ];
        let t = parameter_trends(&names, &pairs);
        // `filter` has one value: left out.
        assert_eq!(t.len(), 2);
        // tile's spread: 4 / 0.5^(1/3) = 5.04, the widest, so first.
        assert_eq!(t[0].name, "tile");
        let v: Vec<(&str, usize)> = t[0]
            .values
            .iter()
            .map(|v| (v.value.as_str(), v.pairs))
            .collect();
        assert_eq!(v, [("1", 3), ("2", 1), ("10", 3)], "numeric order");
        assert!((t[0].values[0].geomean_ratio - 0.5f64.powf(1.0 / 3.0)).abs() < 1e-12);
        assert!((t[0].values[1].geomean_ratio - 100.0).abs() < 1e-9);
        assert!((t[0].values[2].geomean_ratio - 4.0).abs() < 1e-12);
        assert!((t[0].spread.unwrap() - 4.0 / 0.5f64.powf(1.0 / 3.0)).abs() < 1e-9);
        // method: a has 2, 0.5, 4, 100 (geometric mean (400)^(1/4) = 4.472), b has 0.5, 8, 2
        // (geometric mean 2): spread 2.236.
        assert_eq!(t[1].name, "method");
        assert!((t[1].values[0].geomean_ratio - 400f64.powf(0.25)).abs() < 1e-9);
        assert!((t[1].values[1].geomean_ratio - 2.0).abs() < 1e-12);
        assert!((t[1].spread.unwrap() - 400f64.powf(0.25) / 2.0).abs() < 1e-9);
        // A model off by the same factor everywhere has no trend.
        let flat: Vec<_> = pairs.iter().map(|(v, _)| (v.clone(), 3.0)).collect();
        let t = parameter_trends(&names, &flat);
        assert!(t.iter().all(|p| (p.spread.unwrap() - 1.0).abs() < 1e-12));
    }

    #[test]
    fn the_random_baseline_is_the_exact_expectation() {
        // Best of 2 drawn from {1, 2, 3}: pairs (1,2) (1,3) (2,3) equally likely, minima
        // 1, 1, 2: expectation 4/3.
        let e = expected_min_of_random(&[1.0, 2.0, 3.0], 2).unwrap();
        assert!((e - 4.0 / 3.0).abs() < 1e-12, "{e}");
        // Best of 1 is the mean.
        let e = expected_min_of_random(&[1.0, 2.0, 6.0], 1).unwrap();
        assert!((e - 3.0).abs() < 1e-12);
        // Drawing everything finds the minimum.
        assert_eq!(expected_min_of_random(&[2.0, 5.0], 10), Some(2.0));
        // Best of 10 from 1..=20: P(min = i) = C(20 - i, 9) / C(20, 10); summed by hand with
        // exact integers: sum_i i C(20 - i, 9) = C(21, 11) = 352716, over C(20, 10) = 184756.
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        let e = expected_min_of_random(&v, 10).unwrap();
        assert!((e - 352_716.0 / 184_756.0).abs() < 1e-12, "{e}");
    }

    #[test]
    fn scores_of_a_hand_made_ranking() {
        // Measured: 10, 20, 30, 40 ms and one failure. Predicted ranks put 20 first, then 10,
        // then 40, then 30; the failure is predicted `cannot-launch`, and one configuration the
        // prediction refuses actually ran (40 is measured twice: the refused one is 50).
        let pairs = vec![
            ok(2, 1.0, 10.0),
            ok(1, 0.5, 20.0),
            ok(4, 4.0, 30.0),
            ok(3, 3.0, 40.0),
            Pair {
                status: Status::CannotLaunch,
                predicted_us: None,
                rank: None,
                measured: Measured::Failed("RuntimeFailedConfig".into()),
            },
            Pair {
                status: Status::CompileError,
                predicted_us: None,
                rank: None,
                measured: Measured::TimeMs(50.0),
            },
        ];
        let (e, _) = evaluate_pairs(&pairs, 2).unwrap();
        assert_eq!(e.pairs, 4);
        // Predicted 0.5 1 3 4 vs measured 20 10 40 30: of 6 pairs, (0.5,1) and (3,4) are
        // discordant, the other 4 concordant: tau = (4 - 2) / 6.
        assert!((e.kendall_tau_b.unwrap() - 2.0 / 6.0).abs() < 1e-12);
        // Ranks 2 1 4 3 vs 1 2 3 4: d^2 = 1+1+1+1 = 4, rho = 1 - 6*4/(4*15) = 0.6.
        assert!((e.spearman.unwrap() - 0.6).abs() < 1e-12);
        assert_eq!(e.measured_best_ms, Some(10.0));
        // Top 1 is the 20 ms configuration: regret 20/10 - 1 = 1.
        assert_eq!(
            e.top1,
            TopK {
                k: 1,
                regret: Some(1.0)
            }
        );
        // Top 2 holds the 10 ms one: regret 0.
        assert_eq!(
            e.top_k,
            TopK {
                k: 2,
                regret: Some(0.0)
            }
        );
        // 5 % of 4 is 0.2, rounded up to 1.
        assert_eq!(e.top_5_percent.k, 1);
        // Best of 10 random from five times {10, 20, 30, 40, 50}: all drawn, minimum 10.
        assert_eq!(e.random_10_expected_regret, Some(0.0));
        // Predicted failures 2, measured failures 1, agreed 1.
        assert_eq!(e.refusals.precision, Some(0.5));
        assert_eq!(e.refusals.recall, Some(1.0));
        assert_eq!(e.measured_ok, 5);
        assert_eq!(e.measured_failed, 1);
    }

    #[test]
    fn a_top_k_that_only_failed_has_no_regret() {
        let pairs = vec![
            Pair {
                status: Status::Ok,
                predicted_us: Some(1.0),
                rank: Some(1),
                measured: Measured::Failed("RuntimeFailedConfig".into()),
            },
            ok(2, 2.0, 5.0),
        ];
        let (e, _) = evaluate_pairs(&pairs, 1).unwrap();
        assert_eq!(e.top1.regret, None);
        assert_eq!(e.top_k.regret, None);
        assert_eq!(e.refusals.precision, None);
        assert_eq!(e.refusals.recall, Some(0.0));
    }
}
