//! Fitting the LSLAG cost functions (and the LSLA baseline) to measurements, and judging the fit
//! by its fidelity, as in section V-VI of the LSLAG paper (seed 003).
//!
//! **Samples** are CSV text with a header naming at least the columns `gamma, s, t_w, t_1, t_k`
//! (any order, other columns ignored), one row per measurement: parallelism factor, input size,
//! wall-clock time, host-only time and GPU kernel time. The interconnect time is derived,
//! `t_c = t_w - t_1 - t_k` (it may come out slightly negative from measurement noise; such rows
//! are counted in the notes). Errors name the file and the line.
//!
//! **Fit.** The rows are split at random (seeded, [`super::split::train_test_split`]) into a
//! training and a test set. For each element `x` in {gpu (`t_k`), host (`t_1`), interconnect
//! (`t_c`)} the training rows give one non-negative least-squares problem ([`super::nnls`]):
//!
//! ```text
//! LSLAG:  t_x = alpha_x * (S / gamma) + beta_x * S        alpha_x, beta_x >= 0
//! LSLA:   t_x = a_x * S + b_x                             a_x, b_x >= 0   (no parallelism)
//! ```
//!
//! **Fidelity** is Kendall's tau-b ([`super::rank::kendall_tau_b`]) between the modelled
//! `t_w = t_k + t_1 + t_c` and the measured `t_w` over the test rows: 1 when the model orders
//! every pair of test measurements as they were measured. Spearman's rho is reported beside it.
//!
//! What this module does NOT do: read files (callers pass the text and the file name for
//! messages), weight rows, or average repetitions before fitting (every row is one equation).

use std::path::Path;

use serde::Serialize;

use super::matrix::Matrix;
use super::nnls::nnls;
use super::ols::lstsq;
use super::rank::{kendall_tau_b, spearman_rho};
use super::split::train_test_split;
use crate::error::{Error, Result};
use crate::model::lslag::{ElementCost, LslagParams, TimeUnit};

/// The columns a samples file must have.
pub const REQUIRED_COLUMNS: [&str; 5] = ["gamma", "s", "t_w", "t_1", "t_k"];

/// Coefficients fitted per element (both models).
pub const PARAMS_PER_ELEMENT: usize = 2;

/// One measurement.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    /// The 1-based line of the row in its file.
    pub line: usize,
    pub gamma: f64,
    pub s: f64,
    pub t_w: f64,
    pub t_1: f64,
    pub t_k: f64,
}

impl Sample {
    /// The derived interconnect time `t_w - t_1 - t_k`.
    pub fn t_c(&self) -> f64 {
        self.t_w - self.t_1 - self.t_k
    }
}

/// Parses samples CSV text (format in the module doc); `source` names the file in errors.
pub fn parse_samples_csv(text: &str, source: &Path) -> Result<Vec<Sample>> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let header = reader
        .headers()
        .map_err(|e| Error::file(source, format!("line 1: cannot read the header: {e}")))?
        .clone();
    let mut col = [0usize; 5];
    for (k, name) in REQUIRED_COLUMNS.iter().enumerate() {
        col[k] = header
            .iter()
            .position(|h| h.eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                Error::file(
                    source,
                    format!(
                        "line 1: missing column `{name}`; the header must name {}",
                        REQUIRED_COLUMNS.join(", ")
                    ),
                )
            })?;
    }
    let mut samples = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line() as usize);
            Error::file(source, format!("line {line}: {e}"))
        })?;
        let line = record.position().map_or(0, |p| p.line() as usize);
        let mut v = [0.0; 5];
        for (k, name) in REQUIRED_COLUMNS.iter().enumerate() {
            let field = record.get(col[k]).unwrap_or("");
            if field.is_empty() {
                return Err(Error::file(
                    source,
                    format!("line {line}: no value in column `{name}`"),
                ));
            }
            let x: f64 = field.parse().map_err(|_| {
                Error::file(
                    source,
                    format!("line {line}: `{name}` is not a number: `{field}`"),
                )
            })?;
            if !x.is_finite() {
                return Err(Error::file(
                    source,
                    format!("line {line}: `{name}` must be a finite number, got `{field}`"),
                ));
            }
            v[k] = x;
        }
        let [gamma, s, t_w, t_1, t_k] = v;
        if gamma <= 0.0 {
            return Err(Error::file(
                source,
                format!("line {line}: `gamma` must be above zero, got {gamma}"),
            ));
        }
        if s <= 0.0 {
            return Err(Error::file(
                source,
                format!("line {line}: `s` must be above zero, got {s}"),
            ));
        }
        for (name, t) in [("t_w", t_w), ("t_1", t_1), ("t_k", t_k)] {
            if t < 0.0 {
                return Err(Error::file(
                    source,
                    format!("line {line}: `{name}` is a time and must not be negative, got {t}"),
                ));
            }
        }
        samples.push(Sample {
            line,
            gamma,
            s,
            t_w,
            t_1,
            t_k,
        });
    }
    if samples.is_empty() {
        return Err(Error::file(source, "no samples after the header"));
    }
    Ok(samples)
}

/// How to fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitOptions {
    /// Seed of the train/test split.
    pub seed: u64,
    /// Share of the rows held out for the fidelity, in `[0, 1)`.
    pub test_fraction: f64,
    /// Unit of the times in the samples (written into the parameter set).
    pub time_unit: TimeUnit,
}

impl Default for FitOptions {
    /// The paper's split (80/20), seed 0, microseconds.
    fn default() -> Self {
        Self {
            seed: 0,
            test_fraction: 0.2,
            time_unit: TimeUnit::Us,
        }
    }
}

/// One element's fitted coefficients and training residual.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ElementFit {
    /// `alpha, beta` (LSLAG) or `a, b` (LSLA), by name.
    #[serde(flatten)]
    pub coefficients: serde_json::Map<String, serde_json::Value>,
    /// `||A x - t||` over the training rows.
    pub train_residual_norm: f64,
    /// Root-mean-square training residual.
    pub train_rms: f64,
}

/// One value per element.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Elements<T> {
    pub gpu: T,
    pub host: T,
    pub interconnect: T,
}

/// A fitted model (LSLAG or LSLA) with its residuals and fidelity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelFit {
    /// The cost function of every element.
    pub formula: &'static str,
    pub elements: Elements<ElementFit>,
    /// RMS of modelled minus measured `t_w` over the training rows.
    pub t_w_train_rms: f64,
    /// RMS of modelled minus measured `t_w` over the test rows (`None` without test rows).
    pub t_w_test_rms: Option<f64>,
    /// Mean of `|modelled - measured| / measured` `t_w` over the test rows with `t_w > 0`.
    pub t_w_test_mean_relative_error: Option<f64>,
    /// Kendall's tau-b of modelled vs measured `t_w` over the test rows (`None` when undefined:
    /// fewer than two test rows or a constant side).
    pub fidelity: Option<f64>,
    /// Spearman's rho over the same rows.
    pub spearman_rho: Option<f64>,
}

/// Everything `lslag fit` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FitReport {
    pub samples: usize,
    pub train_rows: usize,
    pub test_rows: usize,
    pub seed: u64,
    pub test_fraction: f64,
    pub time_unit: TimeUnit,
    /// The proposed model.
    pub lslag: ModelFit,
    /// The baseline without parallelism.
    pub lsla: ModelFit,
    pub notes: Vec<String>,
    /// The fitted LSLAG parameter set (what `-o` writes).
    #[serde(skip)]
    pub params: LslagParams,
}

type Row = fn(&Sample) -> [f64; 2];

fn lslag_row(x: &Sample) -> [f64; 2] {
    [x.s / x.gamma, x.s]
}

fn lsla_row(x: &Sample) -> [f64; 2] {
    [x.s, 1.0]
}

/// The measured time of each element, in the order gpu, host, interconnect.
const TARGETS: [fn(&Sample) -> f64; 3] = [|x| x.t_k, |x| x.t_1, |x| x.t_c()];

fn rms(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    (v.iter().map(|x| x * x).sum::<f64>() / v.len() as f64).sqrt()
}

/// Fits one model on the training rows and scores it on the test rows.
fn fit_model(
    samples: &[Sample],
    train: &[usize],
    test: &[usize],
    row: Row,
    names: [&str; 2],
    formula: &'static str,
    notes: &mut Vec<String>,
) -> Result<(ModelFit, [[f64; 2]; 3])> {
    let rows: Vec<[f64; 2]> = train.iter().map(|&i| row(&samples[i])).collect();
    let a = Matrix::from_rows(&rows)?;
    let mut coefficients = [[0.0; 2]; 3];
    let mut fits = Vec::with_capacity(3);
    for (k, target) in TARGETS.iter().enumerate() {
        let b: Vec<f64> = train.iter().map(|&i| target(&samples[i])).collect();
        let sol = nnls(&a, &b)?;
        coefficients[k] = [sol.x[0], sol.x[1]];
        let mut map = serde_json::Map::new();
        map.insert(names[0].into(), sol.x[0].into());
        map.insert(names[1].into(), sol.x[1].into());
        fits.push(ElementFit {
            coefficients: map,
            train_residual_norm: sol.residual_norm,
            train_rms: sol.residual_norm / (train.len() as f64).sqrt(),
        });
    }
    if lstsq(&a, &vec![0.0; a.rows()])?.rank < PARAMS_PER_ELEMENT {
        notes.push(format!(
            "{formula}: the training rows do not separate the two coefficients (one value of \
             the second column per value of the first); each element's split between them is \
             one of many equally good ones"
        ));
    }
    let model_t_w = |x: &Sample| -> f64 {
        let r = row(x);
        coefficients
            .iter()
            .map(|c| c[0] * r[0] + c[1] * r[1])
            .sum::<f64>()
    };
    let train_err: Vec<f64> = train
        .iter()
        .map(|&i| model_t_w(&samples[i]) - samples[i].t_w)
        .collect();
    let modelled: Vec<f64> = test.iter().map(|&i| model_t_w(&samples[i])).collect();
    let measured: Vec<f64> = test.iter().map(|&i| samples[i].t_w).collect();
    let test_err: Vec<f64> = modelled.iter().zip(&measured).map(|(m, t)| m - t).collect();
    let rel: Vec<f64> = modelled
        .iter()
        .zip(&measured)
        .filter(|(_, t)| **t > 0.0)
        .map(|(m, t)| (m - t).abs() / t)
        .collect();
    let mut it = fits.into_iter();
    let (Some(gpu), Some(host), Some(interconnect)) = (it.next(), it.next(), it.next()) else {
        return Err(Error::Infeasible(
            "internal: three element fits expected".into(),
        ));
    };
    Ok((
        ModelFit {
            formula,
            elements: Elements {
                gpu,
                host,
                interconnect,
            },
            t_w_train_rms: rms(&train_err),
            t_w_test_rms: (!test.is_empty()).then(|| rms(&test_err)),
            t_w_test_mean_relative_error: (!rel.is_empty())
                .then(|| rel.iter().sum::<f64>() / rel.len() as f64),
            fidelity: kendall_tau_b(&modelled, &measured)?,
            spearman_rho: spearman_rho(&modelled, &measured)?,
        },
        coefficients,
    ))
}

/// Fits LSLAG and the LSLA baseline to `samples` (see the module doc); `source` names the file in
/// errors.
pub fn fit(samples: &[Sample], options: &FitOptions, source: &Path) -> Result<FitReport> {
    let split = train_test_split(samples.len(), options.test_fraction, options.seed)?;
    if split.train.len() < PARAMS_PER_ELEMENT {
        return Err(Error::file(
            source,
            format!(
                "{} sample(s) leave {} training row(s) with `test_fraction` {}; fitting {} \
                 parameters per element needs at least {} training rows",
                samples.len(),
                split.train.len(),
                options.test_fraction,
                PARAMS_PER_ELEMENT,
                PARAMS_PER_ELEMENT
            ),
        ));
    }
    let mut notes = Vec::new();
    let negative_t_c = samples.iter().filter(|x| x.t_c() < 0.0).count();
    if negative_t_c > 0 {
        let first = samples.iter().find(|x| x.t_c() < 0.0).map_or(0, |x| x.line);
        notes.push(format!(
            "{negative_t_c} row(s) have t_w < t_1 + t_k, i.e. a negative derived t_c (first at \
             line {first}); they are fitted as measured"
        ));
    }
    if split.test.len() < 2 {
        notes.push("fewer than two test rows: the fidelity is undefined".into());
    }
    let (lslag, c) = fit_model(
        samples,
        &split.train,
        &split.test,
        lslag_row,
        ["alpha", "beta"],
        "t = (alpha / gamma + beta) * S",
        &mut notes,
    )?;
    let (lsla, _) = fit_model(
        samples,
        &split.train,
        &split.test,
        lsla_row,
        ["a", "b"],
        "t = a * S + b",
        &mut notes,
    )?;
    let cost = |k: usize| ElementCost {
        alpha: c[k][0],
        beta: c[k][1],
    };
    Ok(FitReport {
        samples: samples.len(),
        train_rows: split.train.len(),
        test_rows: split.test.len(),
        seed: options.seed,
        test_fraction: options.test_fraction,
        time_unit: options.time_unit,
        lslag,
        lsla,
        notes,
        params: LslagParams {
            time_unit: Some(options.time_unit),
            platform: None,
            app: None,
            gpu: cost(0),
            host: cost(1),
            interconnect: cost(2),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> &'static Path {
        Path::new("m.csv")
    }

    #[test]
    fn parse_and_errors_name_the_line() {
        let ok = "s,gamma,t_w,t_1,t_k,note\n512,8,10,2,3,x\n1024, 16 ,20,4,5,y\n";
        let v = parse_samples_csv(ok, p()).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!((v[1].line, v[1].gamma, v[1].s), (3, 16.0, 1024.0));
        // t_c = 20 - 4 - 5
        assert_eq!(v[1].t_c(), 11.0);
        let cases = [
            (
                "gamma,s,t_w,t_1\n8,512,1,1\n",
                "line 1: missing column `t_k`",
            ),
            (
                "gamma,s,t_w,t_1,t_k\n8,512,1,1,1\n0,512,1,1,1\n",
                "line 3: `gamma`",
            ),
            ("gamma,s,t_w,t_1,t_k\n8,512,-1,0,0\n", "line 2: `t_w`"),
            ("gamma,s,t_w,t_1,t_k\n8,512,1,NaN,0\n", "line 2: `t_1`"),
            (
                "gamma,s,t_w,t_1,t_k\n8,512,1,1\n",
                "line 2: no value in column `t_k`",
            ),
            (
                "gamma,s,t_w,t_1,t_k\n8,abc,1,1,1\n",
                "line 2: `s` is not a number",
            ),
            ("gamma,s,t_w,t_1,t_k\n", "no samples"),
        ];
        for (text, want) in cases {
            let e = parse_samples_csv(text, p()).unwrap_err().to_string();
            assert!(e.starts_with("m.csv: ") && e.contains(want), "{e} / {want}");
        }
    }

    #[test]
    fn too_few_rows() {
        let v = parse_samples_csv("gamma,s,t_w,t_1,t_k\n8,512,10,2,3\n", p()).unwrap();
        let e = fit(&v, &FitOptions::default(), p())
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least 2 training rows"), "{e}");
    }
}
