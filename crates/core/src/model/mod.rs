//! Performance models and their common output, `Prediction`.
//!
//! Each model is a pure function of its inputs and a device: no I/O, no global state, the same
//! inputs give the same prediction. A model that lacks an input returns `Error::MissingInput`
//! naming it; any default it does use is listed in the prediction's `notes`.

pub mod analytical;
pub mod bounds;
pub mod from_trace;
pub mod hong_kim;
pub mod lsla;
pub mod lslag;
pub mod microbench;
pub mod mwp_cwp;
pub mod puchala;
pub mod registry;
pub mod roofline;
pub mod trace_sim;
pub mod wu;

/// Longest time a prediction may report: a year, in microseconds. Anything longer comes from an
/// input out of range (a clock of 1e-300 MHz, 1e308 blocks), not from a kernel.
pub const MAX_TIME_US: f64 = 3.2e13;

/// Whether a time is a physical answer: finite, not negative, at most [`MAX_TIME_US`].
pub fn is_physical_time_us(t: f64) -> bool {
    t.is_finite() && (0.0..=MAX_TIME_US).contains(&t)
}

use serde::Serialize;

use crate::workload::Launch;
pub use registry::{model, Inputs, Model, ModelId, ParamSpec, Source};

/// What every model returns: the time, how it was reached and what was assumed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    /// The model (serialized as its name: `puchala`, `mwp-cwp`, ...).
    pub model: ModelId,
    /// The device's name.
    pub device: String,
    /// Predicted time in microseconds.
    pub time_us: f64,
    /// Predicted core-clock cycles, when the model counts cycles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycles: Option<f64>,
    /// The launch the prediction is for, when the model knows one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch: Option<Launch>,
    /// Parameters of this point (kernel parameters of a sweep), by name.
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub params: serde_json::Map<String, serde_json::Value>,
    /// Every intermediate quantity, by name with its unit in the name.
    pub breakdown: serde_json::Map<String, serde_json::Value>,
    /// Assumptions and defaults used.
    pub notes: Vec<String>,
}

impl Prediction {
    /// A prediction with no breakdown yet.
    pub fn new(model: ModelId, device: &str, time_us: f64) -> Self {
        Self {
            model,
            device: device.to_string(),
            time_us,
            cycles: None,
            launch: None,
            params: serde_json::Map::new(),
            breakdown: serde_json::Map::new(),
            notes: Vec::new(),
        }
    }

    /// Adds one breakdown entry.
    pub fn with(mut self, key: &str, value: impl Into<serde_json::Value>) -> Self {
        self.breakdown.insert(key.to_string(), value.into());
        self
    }
}
