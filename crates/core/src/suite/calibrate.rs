//! A suite's cases as calibration rows (`kerneltime calibrate --suite`): every case is compiled,
//! emulated and predicted as `evaluate --suite` does, and each one the model predicted becomes a
//! [`Row`] with the model's inputs, the case's device, its `name` as the kernel and its measured
//! time, so that `fit::calibrate` fits the model's parameters per scope on launches compiled from
//! source, as it does on a measurement file.
//!
//! What it does NOT do: fit (that is `fit::calibrate`), or keep the warp traces: the trace
//! model's rows keep its simulation, so they fit the parameters that act on the simulated time
//! (`fit::calibrate`'s trace fit of rows simulated once). Cases with mapped host memory are left
//! out: their measured time includes the host link, which no model parameter describes.

use std::collections::{BTreeMap, BTreeSet};

use super::run::{evaluate_suite, SuiteOptions};
use super::{Suite, SuiteEvaluation};
use crate::device::Device;
use crate::error::Result;
use crate::fit::calibrate::{Prepared, Row};
use crate::model::ModelId;
use crate::progress::Progress;

/// Runs `suite` with `model` (keeping its inputs) and turns the cases it predicted into rows;
/// the others are counted in `skipped` by reason. Also returns the run's evaluation.
pub fn calibration_rows(
    suite: &Suite,
    opts: &SuiteOptions,
    model: ModelId,
    progress: &dyn Progress,
) -> Result<(Prepared, SuiteEvaluation)> {
    let opts = SuiteOptions {
        models: vec![model.name().to_string()],
        calibrations: Vec::new(),
        keep_inputs: Some(model),
        ..opts.clone()
    };
    let evaluation = evaluate_suite(suite, &opts, progress)?;
    let mut prepared = Prepared {
        devices: Vec::new(),
        rows: Vec::new(),
        skipped: BTreeMap::new(),
        skipped_for_device: BTreeSet::new(),
        notes: BTreeMap::new(),
    };
    let mut skip = |why: String| *prepared.skipped.entry(why).or_default() += 1;
    let mut devices: Vec<Device> = Vec::new();
    for (case, result) in suite.cases.iter().zip(&evaluation.results) {
        if !case.mapped_host.is_empty() {
            skip("mapped host memory (the host link is no parameter of the model)".into());
            continue;
        }
        let outcome = result.models.first().map(|m| &m.outcome);
        let inputs = match (outcome, &result.inputs) {
            (Some(Ok(_)), Some(i)) => i.clone(),
            (Some(Err(f)), _) => {
                skip(format!("no prediction: {}", f.reason));
                continue;
            }
            _ => {
                skip("no prediction".into());
                continue;
            }
        };
        let device = match devices.iter().position(|d| d.name == result.device) {
            Some(i) => i,
            None => match case.device.load() {
                Ok(d) => {
                    devices.push(d);
                    devices.len() - 1
                }
                Err(_) => {
                    skip(format!("device `{}` is unknown", case.device));
                    continue;
                }
            },
        };
        let mut args = case.args.clone();
        args.sort();
        let shape = format!(
            "grid {:?} block {:?} {}",
            case.launch.grid,
            case.launch.block,
            args.join(" ")
        );
        prepared.rows.push(Row {
            device,
            kernel: case.name.clone(),
            point: format!("{} {shape}", case.name),
            shape,
            x: None,
            measured_us: case.measured_us,
            launch_api_us: None,
            inputs,
            source: format!("{} case {}", suite.file.display(), case.id),
        });
    }
    prepared.devices = devices;
    Ok((prepared, evaluation))
}
