//! A model's free parameters and running a model with them: the registry's parameter specs, a
//! row's time with parameters, and a calibration file's parameters for a device and kernel
//! (`CalibrationFile`, what `predict --calibration`, `evaluate` and sweeps apply), found along the
//! file's fallback order (`file::FALLBACK_ORDER`).

use super::{Calibration, Row};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::model::registry::{self, ModelId, ParamSpec};

/// The free parameters of a model, in the order of parameter vectors.
pub fn params_of(model: ModelId) -> &'static [ParamSpec] {
    registry::model(model).params()
}

/// The model's time for a row, µs; `params` in the order of the model's parameters
/// (`model::registry::ModelId::params`), `None` for the uncalibrated model. Goes through the
/// registry, as every prediction does.
pub fn predict_row(
    model: ModelId,
    device: &Device,
    row: &Row,
    params: Option<&[f64]>,
) -> Result<f64> {
    registry::model(model).time_us(Some(device), &row.inputs, params)
}

/// A calibration file as it is applied: its parameters with the name and origin notes and
/// errors show (a sweep's calibration axis, `predict --calibration`).
#[derive(Debug, Clone)]
pub struct CalibrationFile {
    /// Shown in the `calibration` column (the file stem).
    pub name: String,
    /// Names the file in errors and notes.
    pub origin: String,
    pub calibration: Calibration,
}

impl CalibrationFile {
    /// The parameter vector for `model` on a device and kernel, with the note that names them,
    /// or an error of one sentence (wrong model, no device, device or kernel not covered).
    pub fn params_for(
        &self,
        model: ModelId,
        device: Option<&Device>,
        kernel: &str,
    ) -> Result<(Vec<f64>, String)> {
        let cal = &self.calibration;
        if cal.model != model {
            return Err(Error::invalid(
                "calibration",
                format!("{} calibrates {}, not {model}", self.origin, cal.model),
            ));
        }
        let device = device.ok_or_else(|| {
            Error::missing(
                "device",
                format!(
                    "the calibration {} applies per device: give `device` to run it on",
                    self.origin
                ),
            )
        })?;
        let found = cal.lookup(device, kernel).ok_or_else(|| {
            let kernels: Vec<&str> = cal
                .groups
                .iter()
                .filter_map(|g| g.kernel.as_deref())
                .collect();
            if kernel.is_empty() && kernels.len() == cal.groups.len() {
                let mut k = kernels;
                k.sort_unstable();
                k.dedup();
                return Error::missing(
                    "kernel",
                    format!(
                        "{} is calibrated per kernel only; name one of: {}",
                        self.origin,
                        k.join(", ")
                    ),
                );
            }
            Error::invalid(
                "calibration",
                format!(
                    "{} has no parameters for device `{}` and kernel `{kernel}`: {}",
                    self.origin,
                    device.name,
                    cal.no_group_reason(device, kernel)
                ),
            )
        })?;
        let q = found.params;
        let note = format!(
            "calibrated with {}, {}: {}",
            self.origin,
            found.how,
            registry::named_params(cal.model, &q)
        );
        Ok((q, note))
    }
}
