//! The calibration file (`CAL.toml`): the model, the scope of its groups, each group's fitted
//! parameters with their intervals and errors, and how it was fitted. Reading, writing and looking
//! up a group; no fitting here.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::params_of;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::model::registry::ModelId;

/// How rows are grouped for fitting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// One parameter set per device.
    Device,
    /// One parameter set per (device, kernel).
    Kernel,
}

impl Scope {
    pub fn parse(text: &str) -> Result<Scope> {
        match text.trim() {
            "device" => Ok(Scope::Device),
            "kernel" => Ok(Scope::Kernel),
            _ => Err(Error::invalid(
                "scope",
                format!("expected `device` or `kernel`, got `{text}`"),
            )),
        }
    }
}

/// The fitted parameters of one group with their errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupCalibration {
    pub device: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// Rows and distinct problem points behind the fit.
    pub n: usize,
    pub points: usize,
    pub params: BTreeMap<String, f64>,
    /// 95 % bootstrap intervals `[low, high]`.
    #[serde(default)]
    pub intervals: BTreeMap<String, [f64; 2]>,
    /// MAPE and max error on the training rows (fractions).
    pub mape_train: f64,
    pub max_error_train: f64,
    /// Grouped k-fold cross-validated MAPE and max error, when there were enough points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mape_cv: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error_cv: Option<f64>,
}

/// A calibration file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub model: ModelId,
    pub scope: Scope,
    /// The measurement file(s) it was fitted to.
    pub measurements: String,
    pub rows: usize,
    pub folds: usize,
    pub bootstrap: usize,
    pub seed: u64,
    pub objective: String,
    /// Parameter names in order, with their bounds.
    pub parameters: Vec<String>,
    pub groups: Vec<GroupCalibration>,
    #[serde(default)]
    pub notes: Vec<String>,
}

impl Calibration {
    pub fn to_toml(&self) -> Result<String> {
        toml::to_string(self)
            .map_err(|e| Error::invalid("calibration", format!("cannot write TOML: {e}")))
    }

    /// Reads a calibration file's text; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self> {
        let c: Calibration = toml::from_str(text).map_err(|e| Error::file(origin, e.message()))?;
        let specs = params_of(c.model);
        for g in &c.groups {
            for s in specs {
                if !g.params.contains_key(s.name) {
                    return Err(Error::file(
                        origin,
                        format!(
                            "group for device `{}` lacks parameter `{}` of model {}",
                            g.device,
                            s.name,
                            c.model.name()
                        ),
                    ));
                }
            }
        }
        Ok(c)
    }

    /// The parameter vector for a device and kernel: the (device, kernel) group, else the device
    /// group; `None` when the calibration has neither.
    pub fn params_for(&self, device: &Device, kernel: &str) -> Option<Vec<f64>> {
        let on_device =
            |g: &&GroupCalibration| g.device == device.name || device.answers_to(&g.device);
        let g = self
            .groups
            .iter()
            .filter(on_device)
            .find(|g| g.kernel.as_deref() == Some(kernel))
            .or_else(|| {
                self.groups
                    .iter()
                    .filter(on_device)
                    .find(|g| g.kernel.is_none())
            })?;
        Some(
            params_of(self.model)
                .iter()
                .map(|s| g.params[s.name])
                .collect(),
        )
    }

    /// The cross-validated MAPE of a device (and kernel) group, when there is one.
    pub fn group_for(&self, device: &str, kernel: Option<&str>) -> Option<&GroupCalibration> {
        self.groups
            .iter()
            .find(|g| g.device == device && (g.kernel.is_none() || g.kernel.as_deref() == kernel))
    }
}
