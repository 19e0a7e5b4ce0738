//! The model registry: the one list of models ([`ModelId`]), what each one reads and which free
//! parameters calibration fits ([`ParamSpec`]), and the one trait ([`Model`]) through which
//! `predict`, `evaluate`, `calibrate`, sweeps and the PTX path run every model.
//!
//! A model's own file implements [`Model`] for a unit struct; [`model`] maps each [`ModelId`] to
//! it. What a model needs from a kernel (an emulated PTX launch, a profiler-counter row, an inputs
//! file, a kernel program, LSLAG's factors) is the model's own decision too
//! ([`Model::inputs`]), so adding a model is one [`ModelId`] variant with its entry in
//! [`ModelId::ALL`] and [`model`], one [`Inputs`] variant, and the model's file.
//!
//! Pure: no I/O (inputs files arrive as text), no global state.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::device::Device;
use crate::error::{Error, Result};
use crate::model::from_trace::PtxFigures;
use crate::model::Prediction;
use crate::workload::analytical::{HongKimInputs, MwpCwpInputs, WuInputs};
use crate::workload::counters::CounterInputs;

/// A performance model, by the name users give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelId {
    Roofline,
    MwpCwp,
    HongKim,
    Wu,
    Lslag,
    Puchala,
    Trace,
}

impl ModelId {
    /// Every model, in the order lists and tables show them.
    pub const ALL: &'static [ModelId] = &[
        ModelId::Roofline,
        ModelId::MwpCwp,
        ModelId::HongKim,
        ModelId::Wu,
        ModelId::Lslag,
        ModelId::Puchala,
        ModelId::Trace,
    ];

    /// The name users type (`mwp-cwp`).
    pub fn name(self) -> &'static str {
        match self {
            ModelId::Roofline => "roofline",
            ModelId::MwpCwp => "mwp-cwp",
            ModelId::HongKim => "hong-kim",
            ModelId::Wu => "wu",
            ModelId::Lslag => "lslag",
            ModelId::Puchala => "puchala",
            ModelId::Trace => "trace",
        }
    }

    /// One line for help texts: the model and the paper it follows.
    pub fn summary(self) -> &'static str {
        model(self).summary()
    }

    /// The models that run on an emulated PTX launch, in the order `--model all` shows them,
    /// which is also the order they are trusted uncalibrated (the accuracy harness in the README:
    /// trace has the smallest median error; the analytical models from the same traces next; the
    /// roofline last): `api::Recommended::pick` takes the first that ran.
    pub fn from_ptx() -> impl Iterator<Item = ModelId> {
        [
            ModelId::Trace,
            ModelId::MwpCwp,
            ModelId::HongKim,
            ModelId::Wu,
            ModelId::Puchala,
            ModelId::Roofline,
        ]
        .into_iter()
    }

    /// The model `name` names, when it runs on an emulated PTX launch.
    pub fn ptx_model(name: &str) -> Option<ModelId> {
        name.parse::<ModelId>()
            .ok()
            .filter(|m| ModelId::from_ptx().any(|x| x == *m))
    }

    /// The names of the models that run from PTX, joined for messages.
    pub fn ptx_names() -> String {
        ModelId::from_ptx()
            .map(|m| m.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The models that run on a profiler-counter row.
    pub fn from_counters(self) -> bool {
        matches!(
            self,
            ModelId::Roofline | ModelId::MwpCwp | ModelId::HongKim | ModelId::Wu
        )
    }

    /// The names of every model, joined for messages and help (`roofline, mwp-cwp, ...`).
    pub fn names() -> String {
        ModelId::ALL
            .iter()
            .map(|m| m.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// A help paragraph listing every model with its summary, one per line.
    pub fn help() -> String {
        ModelId::ALL
            .iter()
            .map(|m| format!("{:<9} {}", m.name(), m.summary()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl fmt::Display for ModelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for ModelId {
    type Err = Error;

    /// Reads a model name (case-insensitive); the error lists the models.
    fn from_str(text: &str) -> Result<ModelId> {
        let t = text.trim().to_ascii_lowercase();
        ModelId::ALL
            .iter()
            .copied()
            .find(|m| m.name() == t)
            .ok_or_else(|| {
                Error::invalid(
                    "model",
                    format!("unknown model `{text}`; known: {}", ModelId::names()),
                )
            })
    }
}

/// One free parameter of a model and its physical bounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ParamSpec {
    pub name: &'static str,
    pub lower: f64,
    pub upper: f64,
    /// Where a fit starts.
    pub start: f64,
    /// The value a calibration file written before this parameter existed stands for (`None`:
    /// such a file is refused).
    pub absent: Option<f64>,
}

/// A model's inputs, prepared for one device: one variant per model.
#[derive(Debug, Clone, PartialEq)]
pub enum Inputs {
    Roofline(crate::model::roofline::RooflineInputs),
    MwpCwp(MwpCwpInputs),
    HongKim(HongKimInputs),
    Wu(WuInputs),
    Lslag(crate::model::lslag::LslagInputs),
    Puchala(Box<crate::model::puchala::PuchalaInputs>),
    Trace(Box<crate::model::trace_sim::TraceInputs>),
}

/// What a kernel is, as the models see it. Each model turns the kinds it can read into its
/// [`Inputs`] ([`Model::inputs`]).
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// An emulated and simulated PTX launch (`model::from_trace`).
    Ptx(&'a PtxFigures),
    /// A profiler-counter row through the counters path (`workload::counters`).
    Counters(&'a CounterInputs),
    /// An inputs file's text (the analytical models and roofline read their fields from it);
    /// `origin` names the file in errors.
    File { text: &'a str, origin: &'a str },
    /// A puchala2022 kernel program at one point of its parameters.
    Program(&'a crate::model::puchala::PuchalaInputs),
    /// LSLAG's parallelism factor and input size, with the platform's parameters when known.
    Lslag {
        gamma: f64,
        s: f64,
        params: Option<&'a crate::model::lslag::LslagParams>,
    },
}

impl Source<'_> {
    /// What kind of kernel this is, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Ptx(_) => "a PTX launch",
            Source::Counters(_) => "profiler counters",
            Source::File { .. } => "an inputs file",
            Source::Program(_) => "a kernel program",
            Source::Lslag { .. } => "LSLAG factors (gamma, s)",
        }
    }
}

/// One model: its free parameters, how it reads a kernel, and how it predicts. Implemented in
/// each model's own file.
pub trait Model: Sync {
    /// Which model this is.
    fn id(&self) -> ModelId;

    /// One line: the model and its paper.
    fn summary(&self) -> &'static str;

    /// What the model reads, for help and errors.
    fn takes(&self) -> &'static str;

    /// The free parameters calibration fits, in the order of parameter vectors.
    fn params(&self) -> &'static [ParamSpec];

    /// The model's inputs for a kernel on a device, with the notes of every assumption made.
    /// A kind of kernel the model cannot read is an error naming what it reads. `device` is
    /// `None` only for the models that can run without one (the analytical models take the clock
    /// of their inputs file, lslag its platform's parameters); the others say they need one.
    fn inputs(
        &self,
        source: &Source<'_>,
        device: Option<&Device>,
    ) -> Result<(Inputs, Vec<String>)> {
        let _ = device;
        Err(self.cannot_read(source))
    }

    /// The full prediction (breakdown and notes): uncalibrated (`params` `None`) or with
    /// parameters in the order of [`Model::params`].
    fn predict(
        &self,
        device: Option<&Device>,
        inputs: &Inputs,
        params: Option<&[f64]>,
    ) -> Result<Prediction>;

    /// The time alone, µs: the path fits and sweeps call millions of times. Equal to
    /// `predict(..).time_us`.
    fn time_us(
        &self,
        device: Option<&Device>,
        inputs: &Inputs,
        params: Option<&[f64]>,
    ) -> Result<f64> {
        self.predict(device, inputs, params).map(|p| p.time_us)
    }

    /// The error for a kind of kernel this model does not read.
    fn cannot_read(&self, source: &Source<'_>) -> Error {
        Error::invalid(
            "model",
            format!(
                "{} does not run on {}; it reads {}",
                self.id(),
                source.kind(),
                self.takes()
            ),
        )
    }

    /// The error for inputs of another model.
    fn wrong_inputs(&self, inputs: &Inputs) -> Error {
        Error::invalid(
            "model",
            format!(
                "{} cannot run on inputs prepared for {:?}",
                self.id(),
                inputs_kind(inputs)
            ),
        )
    }
}

fn inputs_kind(i: &Inputs) -> ModelId {
    match i {
        Inputs::Roofline(_) => ModelId::Roofline,
        Inputs::MwpCwp(_) => ModelId::MwpCwp,
        Inputs::HongKim(_) => ModelId::HongKim,
        Inputs::Wu(_) => ModelId::Wu,
        Inputs::Lslag(_) => ModelId::Lslag,
        Inputs::Puchala(_) => ModelId::Puchala,
        Inputs::Trace(_) => ModelId::Trace,
    }
}

/// The model behind an id.
pub fn model(id: ModelId) -> &'static dyn Model {
    use crate::model::{hong_kim, lslag, mwp_cwp, puchala, roofline, trace_sim, wu};
    match id {
        ModelId::Roofline => &roofline::Roofline,
        ModelId::MwpCwp => &mwp_cwp::MwpCwp,
        ModelId::HongKim => &hong_kim::HongKim,
        ModelId::Wu => &wu::Wu,
        ModelId::Lslag => &lslag::Lslag,
        ModelId::Puchala => &puchala::Puchala,
        ModelId::Trace => &trace_sim::Trace,
    }
}

/// The parameter vector's values named, for notes (`dram_latency_scale=1.2, ...`).
pub fn named_params(id: ModelId, q: &[f64]) -> String {
    model(id)
        .params()
        .iter()
        .zip(q)
        .map(|(s, v)| format!("{}={v}", s.name))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_every_model_is_registered_under_its_own_id() {
        for &m in ModelId::ALL {
            assert_eq!(m.name().parse::<ModelId>().unwrap(), m);
            assert_eq!(m.to_string(), m.name());
            assert_eq!(model(m).id(), m, "{m}");
            assert!(!model(m).summary().is_empty() && !model(m).takes().is_empty());
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.name()));
        }
        let e = "nope".parse::<ModelId>().unwrap_err().to_string();
        assert!(e.contains("nope") && e.contains("mwp-cwp"), "{e}");
        assert_eq!("MWP-CWP".parse::<ModelId>().unwrap(), ModelId::MwpCwp);
    }
}
