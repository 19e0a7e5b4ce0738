//! LSLAG: the linear model of architecture with a parallelism factor (Payvar, Boutellier, Morvan,
//! Rubattu and Pelcat; seed 003), for an application split between a host CPU core, a GPU and
//! the interconnect between them.
//!
//! Each of the three elements costs, for parallelism factor `gamma` and input size `S`
//! (paper eq 3-5),
//!
//! ```text
//! t_x(gamma, S) = (alpha_x / gamma + beta_x) * S        x in {k (GPU), 1 (host), c (interconnect)}
//! ```
//!
//! and the elements are assumed not to overlap in time, so the wall-clock time is (eq 2)
//! `t_w = t_k + t_1 + t_c`. `alpha` is the part of the per-item cost that parallelism divides,
//! `beta` the part it does not.
//!
//! **Time unit.** The paper does not print the unit of its times or parameters. The built-in
//! Table II sets are read as microseconds per unit of `S`: with `S` counting data items
//! (512..16384) that gives times from tens of microseconds to tens of milliseconds, which fits
//! OpenCL applications of that size, whereas milliseconds would make a 16384-item matrix product
//! on the Mali take 25 s. A parameter file states its unit (`time_unit = "us" | "ms" | "s"`) and
//! predictions convert it to microseconds; every prediction's notes say which unit was used.
//!
//! **Parameter file** (written by `kerneltime lslag fit -o`, read by `predict --params`):
//!
//! ```toml
//! time_unit = "us"              # unit of t; optional, "us" when absent (noted)
//! platform = "Baffin RX460"     # optional, shown as the prediction's device
//! app = "matrix_multiplication" # optional
//! [gpu]                         # t_k
//! alpha = 0.001
//! beta = 0.008
//! [host]                        # t_1
//! alpha = 0.0
//! beta = 0.004
//! [interconnect]                # t_c
//! alpha = 0.005
//! beta = 0.068
//! ```
//!
//! What this module does NOT do: fit parameters (see `crate::fit::lslag`), model overlap between
//! the elements, or know anything about a particular GPU device: LSLAG parameters describe one
//! application on one platform and come from measurements.

use crate::device::Device;
use crate::model::registry::{Inputs, Model, ModelId, ParamSpec, Source};
use serde::{Deserialize, Serialize};

use crate::error::{non_negative, positive, Error, Result};
use crate::model::Prediction;

/// The unit of the times a parameter set produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TimeUnit {
    /// Microseconds.
    #[default]
    Us,
    /// Milliseconds.
    Ms,
    /// Seconds.
    S,
}

impl TimeUnit {
    /// Microseconds per one of this unit.
    pub fn to_us_factor(self) -> f64 {
        match self {
            TimeUnit::Us => 1.0,
            TimeUnit::Ms => 1e3,
            TimeUnit::S => 1e6,
        }
    }

    /// The unit's symbol as written in files (`us`, `ms`, `s`).
    pub fn symbol(self) -> &'static str {
        match self {
            TimeUnit::Us => "us",
            TimeUnit::Ms => "ms",
            TimeUnit::S => "s",
        }
    }
}

/// The cost function of one element, `t = (alpha / gamma + beta) * S`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElementCost {
    /// Time per unit of `S` that parallelism divides (time unit of the parameter set).
    pub alpha: f64,
    /// Time per unit of `S` that parallelism does not divide.
    pub beta: f64,
}

impl ElementCost {
    /// `(alpha / gamma + beta) * s`; callers validate `gamma > 0`.
    pub fn time(&self, gamma: f64, s: f64) -> f64 {
        (self.alpha / gamma + self.beta) * s
    }
}

/// A full LSLAG parameter set: one cost function per element.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LslagParams {
    /// Unit of the times; `None` in a file means microseconds (and a note says so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_unit: Option<TimeUnit>,
    /// The platform the parameters were measured on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// The application the parameters were measured for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    /// The GPU (`t_k`).
    pub gpu: ElementCost,
    /// The host processor (`t_1`).
    pub host: ElementCost,
    /// The interconnect (`t_c`).
    pub interconnect: ElementCost,
}

/// The three element times and their sum, in the parameter set's time unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LslagTimes {
    pub t_w: f64,
    pub t_k: f64,
    pub t_1: f64,
    pub t_c: f64,
}

impl LslagParams {
    /// Checks that every `alpha` and `beta` is finite and non-negative; the error names the field.
    pub fn validate(&self) -> Result<()> {
        for (element, cost) in [
            ("gpu", &self.gpu),
            ("host", &self.host),
            ("interconnect", &self.interconnect),
        ] {
            non_negative(&format!("{element}.alpha"), cost.alpha)?;
            non_negative(&format!("{element}.beta"), cost.beta)?;
        }
        Ok(())
    }

    /// Parses a parameter file's text (schema in the module doc); `source` names the file in
    /// errors.
    pub fn from_toml_str(text: &str, source: &std::path::Path) -> Result<Self> {
        let params: LslagParams = toml::from_str(text)
            .map_err(|e| Error::file(source, super::lsla::toml_error(text, &e)))?;
        params
            .validate()
            .map_err(|e| Error::file(source, e.to_string()))?;
        Ok(params)
    }

    /// The parameter file text, loadable by [`LslagParams::from_toml_str`].
    pub fn to_toml_string(&self) -> Result<String> {
        let body = toml::to_string(self)
            .map_err(|e| Error::invalid("lslag parameters", format!("cannot write TOML: {e}")))?;
        Ok(format!(
            "# LSLAG parameters (kerneltime): t_x(gamma, S) = (alpha / gamma + beta) * S\n\
             # for x = gpu (t_k), host (t_1), interconnect (t_c); t_w = t_k + t_1 + t_c.\n{body}"
        ))
    }

    /// The element times at `(gamma, s)` in the set's unit. Errors when `gamma <= 0` or `s < 0`
    /// (or either is not finite).
    pub fn times(&self, gamma: f64, s: f64) -> Result<LslagTimes> {
        positive("gamma", gamma)?;
        non_negative("s", s)?;
        let t_k = self.gpu.time(gamma, s);
        let t_1 = self.host.time(gamma, s);
        let t_c = self.interconnect.time(gamma, s);
        Ok(LslagTimes {
            t_w: t_k + t_1 + t_c,
            t_k,
            t_1,
            t_c,
        })
    }
}

/// The platforms of Table II.
pub const BUILTIN_PLATFORMS: &[&str] = &["Baffin RX460", "Mali T628"];
/// The applications of Table II.
pub const BUILTIN_APPS: &[&str] = &[
    "matrix_multiplication",
    "digital_predistortion",
    "gaussian_filtering",
];

/// Table II of the paper: (app, platform, [alpha_g, beta_g, alpha_1, beta_1, alpha_c, beta_c]).
/// The paper has no values for digital predistortion on the Mali.
const TABLE_II: &[(&str, &str, [f64; 6])] = &[
    (
        "matrix_multiplication",
        "Baffin RX460",
        [0.001, 0.008, 0.000, 0.004, 0.005, 0.068],
    ),
    (
        "matrix_multiplication",
        "Mali T628",
        [0.003, 0.009, 0.000, 0.009, 0.016, 1.554],
    ),
    (
        "digital_predistortion",
        "Baffin RX460",
        [0.005, 0.049, 0.002, 0.003, 0.060, 0.000],
    ),
    (
        "gaussian_filtering",
        "Baffin RX460",
        [0.000, 0.051, 0.002, 0.000, 0.004, 1.074],
    ),
    (
        "gaussian_filtering",
        "Mali T628",
        [0.003, 0.023, 0.022, 0.000, 0.082, 0.460],
    ),
];

fn lookup<'a>(what: &str, name: &str, known: &[&'a str]) -> Result<&'a str> {
    known
        .iter()
        .find(|k| k.eq_ignore_ascii_case(name.trim()))
        .copied()
        .ok_or_else(|| {
            Error::invalid(
                what,
                format!("unknown {} `{name}`; known: {}", what, known.join(", ")),
            )
        })
}

/// The built-in Table II parameter set of `app` on `platform` (names case-insensitive).
///
/// Errors name the unknown platform or application and list the known ones; digital
/// predistortion on the Mali T628 is not in the paper.
pub fn builtin(platform: &str, app: &str) -> Result<LslagParams> {
    let platform = lookup("platform", platform, BUILTIN_PLATFORMS)?;
    let app = lookup("app", app, BUILTIN_APPS)?;
    let (_, _, v) = TABLE_II
        .iter()
        .find(|(a, p, _)| *a == app && *p == platform)
        .ok_or_else(|| {
            let have: Vec<String> = TABLE_II
                .iter()
                .map(|(a, p, _)| format!("{a} on {p}"))
                .collect();
            Error::invalid(
                "app",
                format!(
                    "the paper has no parameters for {app} on {platform}; it has: {}",
                    have.join(", ")
                ),
            )
        })?;
    Ok(LslagParams {
        time_unit: Some(TimeUnit::Us),
        platform: Some(platform.to_string()),
        app: Some(app.to_string()),
        gpu: ElementCost {
            alpha: v[0],
            beta: v[1],
        },
        host: ElementCost {
            alpha: v[2],
            beta: v[3],
        },
        interconnect: ElementCost {
            alpha: v[4],
            beta: v[5],
        },
    })
}

/// Every built-in parameter set, in Table II order.
pub fn builtins() -> Vec<LslagParams> {
    TABLE_II
        .iter()
        .filter_map(|(a, p, _)| builtin(p, a).ok())
        .collect()
}

/// The LSLAG prediction at `(gamma, s)`: `time_us` is `t_w` in microseconds, and the breakdown
/// holds `t_w_us`, `t_k_us`, `t_1_us`, `t_c_us`.
pub fn predict(params: &LslagParams, gamma: f64, s: f64) -> Result<Prediction> {
    params.validate()?;
    let t = params.times(gamma, s)?;
    let unit = params.time_unit.unwrap_or_default();
    let f = unit.to_us_factor();
    let device = params
        .platform
        .clone()
        .unwrap_or_else(|| "unspecified platform".to_string());
    let mut p = Prediction::new(ModelId::Lslag, &device, t.t_w * f)
        .with("t_w_us", t.t_w * f)
        .with("t_k_us", t.t_k * f)
        .with("t_1_us", t.t_1 * f)
        .with("t_c_us", t.t_c * f);
    p.params.insert("gamma".into(), gamma.into());
    p.params.insert("s".into(), s.into());
    if let Some(app) = &params.app {
        p.params.insert("app".into(), app.clone().into());
    }
    for (name, c) in [
        ("gpu", params.gpu),
        ("host", params.host),
        ("interconnect", params.interconnect),
    ] {
        p.params.insert(format!("alpha_{name}"), c.alpha.into());
        p.params.insert(format!("beta_{name}"), c.beta.into());
    }
    match params.time_unit {
        None => p.notes.push(
            "the parameter set gives no time_unit; its times are taken as microseconds".into(),
        ),
        Some(TimeUnit::Us) => p
            .notes
            .push("parameters in microseconds per unit of S; no conversion".into()),
        Some(u) => p.notes.push(format!(
            "parameters in {} per unit of S; times multiplied by {f} to give microseconds",
            u.symbol()
        )),
    }
    p.notes.push(
        "t_w = t_k + t_1 + t_c assumes the GPU, host and interconnect never overlap in time".into(),
    );
    Ok(p)
}

/// Where the built-in Table II sets come from, for the notes of predictions that use them.
pub const BUILTIN_NOTE: &str =
    "parameters from Table II of the LSLAG paper (3 decimals as printed); \
     the paper does not print their time unit, read here as microseconds";

/// [`predict`] with a built-in Table II set ([`builtin`]), noting where the numbers come from.
pub fn predict_builtin(platform: &str, app: &str, gamma: f64, s: f64) -> Result<Prediction> {
    let params = builtin(platform, app)?;
    let mut p = predict(&params, gamma, s)?;
    p.notes.insert(0, BUILTIN_NOTE.into());
    Ok(p)
}

/// LSLAG's inputs: the parallelism factor and the input size, with the platform's parameters
/// (built-in or fitted) when the model runs uncalibrated.
#[derive(Debug, Clone, PartialEq)]
pub struct LslagInputs {
    pub gamma: f64,
    pub s: f64,
    pub params: Option<LslagParams>,
}

/// LSLAG's calibration parameters: the GPU element's `alpha` and `beta`,
/// `t = (alpha / gamma + beta) * s` (µs), fitted by NNLS.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "alpha_us",
        lower: 0.0,
        upper: f64::MAX,
        start: 0.0,
        absent: None,
    },
    ParamSpec {
        name: "beta_us",
        lower: 0.0,
        upper: f64::MAX,
        start: 0.0,
        absent: None,
    },
];

/// LSLAG in the model registry.
pub struct Lslag;

impl Model for Lslag {
    fn id(&self) -> ModelId {
        ModelId::Lslag
    }
    fn summary(&self) -> &'static str {
        "Payvar et al.: linear model of architecture with a parallelism factor (NNLS-fitted)"
    }
    fn takes(&self) -> &'static str {
        "gamma and s, with a platform's parameters (built-in or fitted) or a calibration"
    }
    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }
    fn inputs(
        &self,
        source: &Source<'_>,
        _device: Option<&Device>,
    ) -> Result<(Inputs, Vec<String>)> {
        match source {
            Source::Lslag { gamma, s, params } => {
                positive("gamma", *gamma)?;
                non_negative("s", *s)?;
                Ok((
                    Inputs::Lslag(LslagInputs {
                        gamma: *gamma,
                        s: *s,
                        params: params.cloned(),
                    }),
                    Vec::new(),
                ))
            }
            _ => Err(self.cannot_read(source)),
        }
    }
    fn predict(
        &self,
        device: Option<&Device>,
        inputs: &Inputs,
        params: Option<&[f64]>,
    ) -> Result<Prediction> {
        let Inputs::Lslag(i) = inputs else {
            return Err(self.wrong_inputs(inputs));
        };
        match (params, &i.params) {
            (Some(q), _) => {
                let name = device.map_or("unspecified platform", |d| d.name.as_str());
                Ok(Prediction::new(ModelId::Lslag, name, (q[0] / i.gamma + q[1]) * i.s))
            }
            (None, Some(p)) => predict(p, i.gamma, i.s),
            (None, None) => Err(Error::missing(
                "calibration",
                "lslag has no uncalibrated form without a platform's parameters: give a calibration (alpha, beta) from `kerneltime calibrate --model lslag`",
            )),
        }
    }
    fn time_us(
        &self,
        device: Option<&Device>,
        inputs: &Inputs,
        params: Option<&[f64]>,
    ) -> Result<f64> {
        match (inputs, params) {
            (Inputs::Lslag(i), Some(q)) => Ok((q[0] / i.gamma + q[1]) * i.s),
            _ => self.predict(device, inputs, params).map(|p| p.time_us),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_ii_by_hand() {
        // B1 (matrix multiplication, Baffin) at gamma = 8, S = 1024:
        // t_k = (0.001/8 + 0.008) * 1024 = 8.32, t_1 = 0.004 * 1024 = 4.096,
        // t_c = (0.005/8 + 0.068) * 1024 = 70.272, t_w = 82.688.
        let p = builtin("Baffin RX460", "matrix_multiplication").unwrap();
        let t = p.times(8.0, 1024.0).unwrap();
        assert!((t.t_k - 8.32).abs() < 1e-12);
        assert!((t.t_1 - 4.096).abs() < 1e-12);
        assert!((t.t_c - 70.272).abs() < 1e-12);
        assert!((t.t_w - 82.688).abs() < 1e-12);
        let pred = predict(&p, 8.0, 1024.0).unwrap();
        assert!((pred.time_us - 82.688).abs() < 1e-12);
        assert_eq!(pred.device, "Baffin RX460");
        assert!(pred.breakdown.contains_key("t_c_us"));
    }

    #[test]
    fn unit_conversion_and_names() {
        // M3 (Gaussian filtering, Mali) in ms at gamma = 256, S = 512:
        // t_1 = (0.022/256 + 0) * 512 = 0.044 ms = 44 us.
        let mut p = builtin("mali t628", "GAUSSIAN_FILTERING").unwrap();
        p.time_unit = Some(TimeUnit::Ms);
        let pred = predict(&p, 256.0, 512.0).unwrap();
        let t1 = pred.breakdown["t_1_us"].as_f64().unwrap();
        assert!((t1 - 44.0).abs() < 1e-9);
        let e = builtin("Mali T628", "digital_predistortion").unwrap_err();
        assert!(e.to_string().contains("no parameters"), "{e}");
        let e = builtin("Adreno", "matrix_multiplication").unwrap_err();
        assert!(e.to_string().contains("Baffin RX460, Mali T628"), "{e}");
        let e = builtin("Mali T628", "fft").unwrap_err();
        assert!(e.to_string().contains("gaussian_filtering"), "{e}");
        assert_eq!(builtins().len(), 5);
    }

    #[test]
    fn bad_gamma_and_s() {
        let p = builtin("Baffin RX460", "gaussian_filtering").unwrap();
        assert!(p.times(0.0, 512.0).is_err());
        assert!(p.times(8.0, -1.0).is_err());
        assert!(p.times(f64::NAN, 1.0).is_err());
    }

    #[test]
    fn toml_round_trip_and_errors() {
        let p = builtin("Mali T628", "matrix_multiplication").unwrap();
        let text = p.to_toml_string().unwrap();
        let back = LslagParams::from_toml_str(&text, "x.toml".as_ref()).unwrap();
        assert_eq!(back, p);
        let bad = text.replace("alpha = 0.016", "alpha = -0.016");
        let e = LslagParams::from_toml_str(&bad, "x.toml".as_ref()).unwrap_err();
        assert!(e.to_string().contains("interconnect.alpha"), "{e}");
        let e = LslagParams::from_toml_str("[gpu]\nalpha = 1.0\n", "y.toml".as_ref()).unwrap_err();
        assert!(e.to_string().starts_with("y.toml"), "{e}");
    }
}
