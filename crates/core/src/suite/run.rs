//! Running a suite: resolve devices, compile each distinct source once (in parallel, cached),
//! emulate each distinct launch once (in parallel) and predict it with every requested model on
//! every device its cases name. Predictions go through the library's PTX path,
//! `emulate::emulate_with` (with the case's data hints) and `api::predict_models`; a case with
//! mapped host buffers gets the host-link term of `tune::host_link`, as `tune` does. A case that
//! cannot be predicted gets a failure with a reason, never disappears.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;

use super::compile::{self, Toolchain};
use super::summary::{self, CompileStats, SuiteEvaluation};
use super::{Amount, Case, DeviceRef, KernelSource, Suite};
use crate::api::{self, Kernel};
use crate::device::Device;
use crate::emulate::{emulate_with, BufferHint, KernelArg, Options};
use crate::error::{Error, Result};
use crate::fit::calibrate::CalibrationFile;
use crate::model::registry::Inputs;
use crate::model::trace_sim::TraceInputs;
use crate::model::ModelId;
use crate::progress::Progress;
use crate::ptx::ast::Module;
use crate::ptx::diag::Severity;
use crate::ptx::resources::{parse_report, KernelResources};
use crate::tune::host_link::{mapped_link, LinkedTime};

/// Failure reasons, as counted in the summary.
pub mod reason {
    pub const UNKNOWN_DEVICE: &str = "unknown device";
    pub const NO_TOOLCHAIN: &str = "no toolchain";
    pub const COMPILE: &str = "compile error";
    pub const PTX: &str = "ptx error";
    pub const BAD_CASE: &str = "bad case";
    pub const RESOURCES: &str = "no resource report";
    pub const EMULATION: &str = "emulation error";
    pub const MODEL: &str = "model error";
    pub const NO_CALIBRATION: &str = "no calibration group";
}

/// How to run a suite.
#[derive(Debug, Clone)]
pub struct SuiteOptions {
    /// Models to run, each a name of `ModelId::from_ptx()`.
    pub models: Vec<String>,
    pub toolchain: Toolchain,
    /// Where compiled PTX and resource reports are kept between runs.
    pub cache_dir: PathBuf,
    /// Most warp instructions one launch's emulation may issue (`emulate::Options`).
    pub launch_budget: u64,
    /// Calibrations to apply to models of `models`: each case also gets the model's calibrated
    /// time, as the model [`SuiteOptions::calibrated_name`], with the group the case's device
    /// and `name` take (`fit::calibrate::Calibration::lookup`).
    pub calibrations: Vec<CalibrationFile>,
    /// Keep this model's inputs in every case's result (`CaseResult::inputs`; the trace model's
    /// without the warp traces, which only a new simulation reads), for [`calibration_rows`](super::calibration_rows).
    pub keep_inputs: Option<ModelId>,
}

impl SuiteOptions {
    /// Every model name of the results: the requested models, then each calibration's.
    pub fn result_models(&self) -> Vec<String> {
        let mut out = self.models.clone();
        out.extend((0..self.calibrations.len()).map(|k| self.calibrated_name(k)));
        out
    }

    /// The name calibration `k`'s results go by: `MODEL (calibrated)`, or with several
    /// calibrations of one model (scopes side by side) `MODEL (calibrated NAME)`, NAME the
    /// calibration's (its file stem).
    pub fn calibrated_name(&self, k: usize) -> String {
        let c = &self.calibrations[k];
        let model = c.calibration.model;
        let several = self
            .calibrations
            .iter()
            .filter(|o| o.calibration.model == model)
            .count()
            > 1;
        if several {
            format!("{} (calibrated {})", model.name(), c.name)
        } else {
            format!("{} (calibrated)", model.name())
        }
    }
}

/// Why a model has no prediction for a case.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub reason: String,
    pub message: String,
}

/// One model's result on one case.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelOutcome {
    pub model: String,
    /// The predicted time in microseconds, or why there is none.
    pub outcome: std::result::Result<f64, Failure>,
}

/// One case's predictions.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseResult {
    pub id: String,
    pub dataset: String,
    /// The device's catalogue name (as written when it could not be resolved).
    pub device: String,
    /// The PTX entry that ran (a C++ name is replaced by its mangled entry).
    pub entry: String,
    pub measured_us: f64,
    /// One per requested model, in the requested order.
    pub models: Vec<ModelOutcome>,
    /// What a reader of this case should know (assumptions, unused hints).
    pub notes: Vec<String>,
    /// The inputs of `SuiteOptions::keep_inputs`'s model, when it predicted this case.
    pub inputs: Option<Inputs>,
}

impl CaseResult {
    fn fail_all(&mut self, reason: &str, message: &str) {
        for m in &mut self.models {
            m.outcome = Err(Failure {
                reason: reason.to_string(),
                message: message.to_string(),
            });
        }
    }
    fn failed(&self) -> bool {
        self.models.iter().all(|m| m.outcome.is_err()) && !self.models.is_empty()
    }
}

/// Where a case's PTX text comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum PtxOrigin {
    /// Compile unit `k`.
    Unit(usize),
    File(PathBuf),
}

/// A distinct compilation: a source for a target, or a ptxas report of a PTX file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Unit {
    Source(compile::SourceSpec, u32),
    Report(PathBuf, u32),
}

/// A model's time or why there is none.
type ModelResult = std::result::Result<f64, Failure>;

/// What a prediction depends on besides the launch: the device and the resources.
type PredictKey = (String, Option<KernelResources>);

/// The result of a unit: PTX (for sources) and the report text.
type UnitResult = std::result::Result<(Option<Arc<str>>, String, bool), (String, String)>;

/// Runs every case of a suite and summarizes the predictions. Only a bad model name is an
/// error; everything that goes wrong with a case is counted in the result.
pub fn evaluate_suite(
    suite: &Suite,
    opts: &SuiteOptions,
    progress: &dyn Progress,
) -> Result<SuiteEvaluation> {
    for m in &opts.models {
        if ModelId::ptx_model(m).is_none() {
            return Err(Error::invalid(
                "model",
                format!(
                    "`{m}` cannot run from PTX; these can: {}",
                    ModelId::ptx_names()
                ),
            ));
        }
    }
    if opts.models.is_empty() {
        return Err(Error::invalid("model", "give at least one model"));
    }
    for c in &opts.calibrations {
        if !opts
            .models
            .iter()
            .any(|m| ModelId::ptx_model(m) == Some(c.calibration.model))
        {
            return Err(Error::invalid(
                "calibration",
                format!(
                    "{} calibrates {}, which the suite's run does not evaluate",
                    c.origin, c.calibration.model
                ),
            ));
        }
    }
    let all_models = opts.result_models();
    let cases = &suite.cases;
    let mut results: Vec<CaseResult> = cases
        .iter()
        .map(|c| CaseResult {
            id: c.id.clone(),
            dataset: c.dataset.clone(),
            device: c.device.to_string(),
            entry: c.entry.clone(),
            measured_us: c.measured_us,
            models: all_models
                .iter()
                .map(|m| ModelOutcome {
                    model: m.clone(),
                    outcome: Err(Failure {
                        reason: "not run".into(),
                        message: String::new(),
                    }),
                })
                .collect(),
            notes: Vec::new(),
            inputs: None,
        })
        .collect();

    // Devices.
    let mut devices: BTreeMap<DeviceRef, std::result::Result<Arc<Device>, String>> =
        BTreeMap::new();
    for c in cases {
        devices
            .entry(c.device.clone())
            .or_insert_with(|| c.device.load().map(Arc::new).map_err(|e| e.to_string()));
    }
    let device_of = |c: &Case| devices[&c.device].as_ref().ok().cloned();
    for (c, r) in cases.iter().zip(results.iter_mut()) {
        match &devices[&c.device] {
            Ok(d) => r.device = d.name.clone(),
            Err(e) => r.fail_all(reason::UNKNOWN_DEVICE, e),
        }
    }

    // Compile units.
    let mut units: Vec<Unit> = Vec::new();
    let mut unit_index: HashMap<Unit, usize> = HashMap::new();
    let mut origin: Vec<Option<(PtxOrigin, Option<usize>)>> = vec![None; cases.len()];
    for (i, c) in cases.iter().enumerate() {
        let Some(dev) = device_of(c) else { continue };
        let sm = dev.compute_capability.as_number();
        let mut add = |u: Unit| -> usize {
            *unit_index.entry(u.clone()).or_insert_with(|| {
                units.push(u);
                units.len() - 1
            })
        };
        match &c.kernel {
            KernelSource::Source(spec) => match compile::target_sm(spec, sm) {
                Ok((target, note)) => {
                    let k = add(Unit::Source(spec.clone(), target));
                    results[i].notes.extend(note);
                    origin[i] = Some((PtxOrigin::Unit(k), Some(k)));
                }
                Err(m) => results[i].fail_all(reason::COMPILE, &m),
            },
            KernelSource::Ptx(p) => {
                let wants_report =
                    c.registers == Amount::Compiler || c.shared_bytes == Amount::Compiler;
                let report = wants_report.then(|| add(Unit::Report(p.clone(), sm)));
                origin[i] = Some((PtxOrigin::File(p.clone()), report));
            }
        }
    }
    let tc = &opts.toolchain;
    progress.start("compilations", units.len() as u64);
    let done = AtomicU64::new(0);
    let unit_results: Vec<UnitResult> = units
        .par_iter()
        .map(|u| {
            let r = run_unit(u, tc, &opts.cache_dir);
            progress.update(done.fetch_add(1, Ordering::Relaxed) + 1);
            r
        })
        .collect();
    progress.finish();
    let mut stats = CompileStats {
        units: units.len(),
        ..CompileStats::default()
    };
    for r in &unit_results {
        match r {
            Ok((_, _, true)) => stats.from_cache += 1,
            Ok(_) => stats.compiled += 1,
            Err(_) => stats.failed += 1,
        }
        if let Ok((Some(ptx), _, _)) = r {
            *stats
                .ptx_by
                .entry(super::summary::ptx_producer(ptx))
                .or_default() += 1;
        }
    }

    // Launches: (PTX, entry, launch, arguments, data hints) -> cases.
    let mut jobs: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut texts: HashMap<PtxOrigin, OnceLock<std::result::Result<Arc<Parsed>, String>>> =
        HashMap::new();
    for (i, c) in cases.iter().enumerate() {
        let Some((o, report)) = &origin[i] else {
            continue;
        };
        if let Some(k) = report {
            if let Err((why, m)) = &unit_results[*k] {
                results[i].fail_all(why, m);
                continue;
            }
        }
        if let PtxOrigin::Unit(k) = o {
            if let Err((why, m)) = &unit_results[*k] {
                results[i].fail_all(why, m);
                continue;
            }
        }
        texts.entry(o.clone()).or_default();
        let mut args = c.args.clone();
        args.sort();
        let data: Vec<String> = c.data.iter().map(|h| h.to_string()).collect();
        let key = format!(
            "{o:?}\u{1f}{}\u{1f}{:?}\u{1f}{:?}\u{1f}{}\u{1f}{}",
            c.entry,
            c.launch.grid,
            c.launch.block,
            args.join("\u{1e}"),
            data.join("\u{1e}")
        );
        jobs.entry(key).or_default().push(i);
    }
    let jobs: Vec<Vec<usize>> = jobs.into_values().collect();
    progress.start("launches", jobs.len() as u64);
    let done = AtomicUsize::new(0);
    let per_job: Vec<Vec<(usize, CaseResult)>> = jobs
        .par_iter()
        .map(|members| {
            let first = members[0];
            let Some((o, _)) = &origin[first] else {
                return Vec::new();
            };
            let module = texts[o].get_or_init(|| load_module(o, &unit_results));
            let out = run_job(
                members,
                cases,
                &results,
                module,
                &origin,
                &unit_results,
                &device_of,
                opts,
            );
            progress.update(done.fetch_add(1, Ordering::Relaxed) as u64 + 1);
            out
        })
        .collect();
    progress.finish();
    for (i, r) in per_job.into_iter().flatten() {
        results[i] = r;
    }
    let failed_cases = results.iter().filter(|r| r.failed()).count();
    let mut notes = suite.notes.clone();
    if failed_cases > 0 {
        notes.push(format!(
            "{failed_cases} of {} cases have no prediction from any model",
            cases.len()
        ));
    }
    Ok(SuiteEvaluation {
        suite: suite.file.display().to_string(),
        cases: cases.len(),
        models: all_models.clone(),
        launches: jobs.len(),
        groups: summary::groups(&results, &all_models)?,
        failures: summary::failures(&results),
        compile: stats,
        notes,
        results,
    })
}

fn run_unit(u: &Unit, tc: &Toolchain, cache: &Path) -> UnitResult {
    match u {
        Unit::Source(spec, sm) => {
            if let Some(why) = tc.missing_for(spec.compiler) {
                return Err((reason::NO_TOOLCHAIN.into(), why));
            }
            compile::compile_source(spec, *sm, tc, cache)
                .map(|c| (Some(Arc::from(c.ptx)), c.report, c.cached))
                .map_err(|m| (reason::COMPILE.into(), m))
        }
        Unit::Report(path, sm) => {
            let ptx = std::fs::read_to_string(path).map_err(|e| {
                (
                    reason::PTX.to_string(),
                    format!("cannot read {}: {e}", path.display()),
                )
            })?;
            if tc.ptxas12.is_none() && tc.ptxas13.is_none() {
                return Err((
                    reason::NO_TOOLCHAIN.into(),
                    "ptxas not found for registers = \"compiler\" (install with scripts/install-gpu-toolchain.sh)".into(),
                ));
            }
            compile::ptxas_report(&ptx, *sm, tc, cache)
                .map(|(log, _, cached)| (None, log, cached))
                .map_err(|m| (reason::COMPILE.into(), m))
        }
    }
}

/// A parsed PTX file and the lines of its parse errors.
struct Parsed {
    module: Module,
    errors: Vec<(u32, String)>,
}

impl Parsed {
    /// The first parse error inside `entry`'s body, if any (errors elsewhere do not matter).
    fn error_in(&self, entry: &str) -> Option<&str> {
        let lines = crate::emulate::args::entry_lines(&self.module, entry)?;
        self.errors
            .iter()
            .find(|(l, _)| lines.contains(l))
            .map(|(_, m)| m.as_str())
    }
}

/// Parses the PTX of an origin.
fn load_module(o: &PtxOrigin, units: &[UnitResult]) -> std::result::Result<Arc<Parsed>, String> {
    let bytes: Vec<u8> = match o {
        PtxOrigin::Unit(k) => match &units[*k] {
            Ok((Some(ptx), _, _)) => ptx.as_bytes().to_vec(),
            _ => return Err("the compilation gave no PTX".into()),
        },
        PtxOrigin::File(p) => {
            crate::error::read_capped(p, MAX_PTX_BYTES, "a PTX file").map_err(|e| e.to_string())?
        }
    };
    let (module, diags) = crate::ptx::parse_bytes(&bytes);
    let errors = diags
        .items
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| (d.line, d.to_string()))
        .collect();
    Ok(Arc::new(Parsed { module, errors }))
}

/// Largest PTX file read.
const MAX_PTX_BYTES: u64 = 512 << 20;

/// The PTX entry a case's `entry` names: the entry itself, else the one mangled C++ entry of
/// that source name (`cn_pnpoly` -> `_Z9cn_pnpolyPiP6float2i`).
fn resolve_entry(m: &Module, entry: &str) -> Option<String> {
    crate::emulate::resolve_entry_name(m, entry).ok()
}

/// Whether a case's name (PTX name, short name or index) names a parameter of the entry.
fn names_param(m: &Module, entry: &str, name: &str) -> bool {
    let Some(f) = m.entries().find(|f| f.name == entry) else {
        return false;
    };
    let prefix = format!("{entry}_");
    f.params
        .iter()
        .any(|p| p.name == name || p.name.strip_prefix(&prefix) == Some(name))
        || name.parse::<usize>().is_ok_and(|k| k < f.params.len())
}

#[allow(clippy::too_many_arguments)]
fn run_job(
    members: &[usize],
    cases: &[Case],
    results: &[CaseResult],
    parsed: &std::result::Result<Arc<Parsed>, String>,
    origin: &[Option<(PtxOrigin, Option<usize>)>],
    units: &[UnitResult],
    device_of: &(dyn Fn(&Case) -> Option<Arc<Device>> + Sync),
    opts: &SuiteOptions,
) -> Vec<(usize, CaseResult)> {
    let mut out: Vec<(usize, CaseResult)> =
        members.iter().map(|&i| (i, results[i].clone())).collect();
    let fail = |out: &mut Vec<(usize, CaseResult)>, why: &str, m: &str| {
        for (_, r) in out.iter_mut() {
            r.fail_all(why, m);
        }
    };
    let c0 = &cases[members[0]];
    let parsed = match parsed {
        Ok(p) => p,
        Err(e) => {
            fail(&mut out, reason::PTX, e);
            return out;
        }
    };
    let module = &parsed.module;
    let Some(entry) = resolve_entry(module, &c0.entry) else {
        let names: Vec<&str> = module.entries().map(|f| f.name.as_str()).collect();
        fail(
            &mut out,
            reason::PTX,
            &format!(
                "no kernel `{}` in the PTX; kernels: {}",
                c0.entry,
                names.join(", ")
            ),
        );
        return out;
    };
    if let Some(e) = parsed.error_in(&entry) {
        fail(
            &mut out,
            reason::PTX,
            &format!("kernel `{entry}` has PTX the emulator cannot read: {e}"),
        );
        return out;
    }
    let mut skip = vec![false; members.len()];
    for (k, &i) in members.iter().enumerate() {
        let c = &cases[i];
        let r = &mut out[k].1;
        r.entry = entry.clone();
        if entry != c.entry {
            r.notes
                .push(format!("entry `{}` is the PTX kernel `{entry}`", c.entry));
        }
        // A data hint may also describe a module variable (a `__constant__` array).
        let bad: Vec<&str> = c
            .data
            .iter()
            .map(|h| h.param.as_str())
            .filter(|n| {
                !names_param(module, &entry, n)
                    && !crate::emulate::decode::hintable_variables(module).any(|v| v.name == *n)
            })
            .chain(
                c.mapped_host
                    .iter()
                    .map(String::as_str)
                    .filter(|n| !names_param(module, &entry, n)),
            )
            .collect();
        if !bad.is_empty() {
            r.fail_all(
                reason::BAD_CASE,
                &format!(
                    "`{}` names no parameter of kernel `{entry}` (nor, for a data hint, a constant or global variable of its module)",
                    bad.join("`, `")
                ),
            );
            skip[k] = true;
            continue;
        }
        if !c.data.is_empty() {
            let hints: Vec<String> = c.data.iter().map(|h| h.to_string()).collect();
            r.notes.push(format!(
                "data hints used by the emulation: {}",
                hints.join(", ")
            ));
        }
    }
    // The cases of a job share their hints (they are part of the job's key), so a bad hint
    // name has failed them all.
    if skip.iter().all(|&s| s) {
        return out;
    }
    let hints: Vec<BufferHint> = match c0.data.iter().map(|h| h.load(None)).collect() {
        Ok(h) => h,
        Err(e) => {
            fail(&mut out, reason::BAD_CASE, &e.to_string());
            return out;
        }
    };
    let em = match KernelArg::parse_all(&c0.args).and_then(|args| {
        emulate_with(
            module,
            &entry,
            c0.launch,
            &args,
            &hints,
            Options {
                launch_budget: opts.launch_budget,
                ..Options::default()
            },
        )
    }) {
        Ok(e) => e,
        Err(e) => {
            fail(&mut out, reason::EMULATION, &e.to_string());
            return out;
        }
    };
    let em = Arc::new(em);
    let models: Vec<ModelId> = opts
        .models
        .iter()
        .filter_map(|m| ModelId::ptx_model(m))
        .collect();
    // Predictions per (device, resources): cases on the same GPU with the same resources share.
    let mut memo: Vec<(PredictKey, Predicted)> = Vec::new();
    for (k, &i) in members.iter().enumerate() {
        let c = &cases[i];
        let r = &mut out[k].1;
        if skip[k] {
            continue;
        }
        let Some(device) = device_of(c) else { continue };
        let report = origin[i]
            .as_ref()
            .and_then(|(_, u)| u.as_ref())
            .and_then(|&u| units[u].as_ref().ok())
            .map(|(_, log, _)| log.as_str());
        let resources = match resources_of(c, &entry, report, em.shared_bytes_static, &mut r.notes)
        {
            Ok(x) => x,
            Err(m) => {
                r.fail_all(reason::RESOURCES, &m);
                continue;
            }
        };
        let key = (device.name.clone(), resources.clone());
        let (outcomes, inputs) = match memo.iter().find(|(k, _)| *k == key) {
            Some((_, o)) => o.clone(),
            None => {
                let o = predict_all(&device, &em, &models, resources);
                memo.push((key, o.clone()));
                o
            }
        };
        let calibrated = opts
            .calibrations
            .iter()
            .map(|cal| calibrated_time(cal, &device, &c.name, &inputs));
        let outcomes: Vec<ModelResult> = outcomes.into_iter().chain(calibrated).collect();
        if let Some(keep) = opts.keep_inputs {
            r.inputs = inputs
                .iter()
                .find(|(m, _)| *m == keep)
                .map(|(_, i)| without_traces(i));
        }
        let link_us = if c.mapped_host.is_empty() {
            None
        } else {
            let shown: Vec<&str> = c.mapped_host.iter().map(String::as_str).collect();
            match mapped_link(module, &entry, &em, &c.mapped_host, &shown, &device) {
                Ok((us, note)) => {
                    r.notes.push(note);
                    Some(us)
                }
                Err(e) => {
                    r.fail_all(reason::BAD_CASE, &e.to_string());
                    continue;
                }
            }
        };
        for (m, o) in r.models.iter_mut().zip(outcomes) {
            m.outcome = match (o, link_us) {
                (Ok(t), Some(l)) => Ok(LinkedTime::new(t, l).headline_us()),
                (o, _) => o,
            };
        }
    }
    out
}

/// A launch's times (or failures) per model on one device, and the inputs of the models that
/// predicted it.
type Predicted = (Vec<ModelResult>, Vec<(ModelId, Inputs)>);

/// A calibrated model's time from its inputs on a device (a failure when the calibration has no
/// group for the device and kernel, or the model did not predict the case).
fn calibrated_time(
    cal: &CalibrationFile,
    device: &Device,
    kernel: &str,
    inputs: &[(ModelId, Inputs)],
) -> ModelResult {
    let model = cal.calibration.model;
    let fail = |reason: &str, m: String| Failure {
        reason: reason.into(),
        message: m,
    };
    let Some((_, i)) = inputs.iter().find(|(m, _)| *m == model) else {
        return Err(fail(
            reason::MODEL,
            format!("{model} has no uncalibrated prediction to calibrate"),
        ));
    };
    let (q, _) = cal
        .params_for(model, Some(device), kernel)
        .map_err(|e| fail(reason::NO_CALIBRATION, e.to_string()))?;
    match crate::model::registry::model(model).time_us(Some(device), i, Some(&q)) {
        Ok(t) if t.is_finite() && t > 0.0 => Ok(t),
        Ok(t) => Err(fail(reason::MODEL, format!("predicted {t} us"))),
        Err(e) => Err(fail(reason::MODEL, e.to_string())),
    }
}

/// Inputs to keep past the launch's job: the trace model's without the warp traces (an
/// emulation can hold gigabytes of them; its kept simulation is what calibrated parameters that
/// leave the latencies alone read).
fn without_traces(inputs: &Inputs) -> Inputs {
    match inputs {
        Inputs::Trace(t) => Inputs::Trace(Box::new(TraceInputs {
            emulation: Arc::new(t.emulation.without_traces()),
            ..(**t).clone()
        })),
        other => other.clone(),
    }
}

/// Every model on one launch and device: a time or a failure per model, and the inputs of those
/// that predicted.
fn predict_all(
    device: &Device,
    em: &Arc<crate::emulate::Emulation>,
    models: &[ModelId],
    resources: Option<KernelResources>,
) -> Predicted {
    let kernel = Kernel::Emulated {
        emulation: em.clone(),
        resources,
    };
    let options = api::Options::default();
    let fail = |m: String| Failure {
        reason: reason::MODEL.into(),
        message: m,
    };
    // One model at a time would repeat the trace simulation; with several, `predict_models`
    // runs it once and lists the others' errors.
    let report = api::predict_models(&kernel, device, models, &options);
    match report {
        Err(e) => (
            models.iter().map(|_| Err(fail(e.to_string()))).collect(),
            Vec::new(),
        ),
        Ok(api::ModelsReport {
            predictions,
            errors,
            inputs,
            ..
        }) => (
            models
                .iter()
                .map(|m| {
                    if let Some(p) = predictions.iter().find(|p| p.model == *m) {
                        if p.time_us.is_finite() && p.time_us > 0.0 {
                            Ok(p.time_us)
                        } else {
                            Err(fail(format!("predicted {} us", p.time_us)))
                        }
                    } else if let Some(e) = errors.iter().find(|e| e.model == *m) {
                        Err(fail(e.error.clone()))
                    } else {
                        Err(fail("the model gave no prediction".into()))
                    }
                })
                .collect(),
            inputs,
        ),
    }
}

/// The resources the models get for a case: given numbers, the report's, or none.
fn resources_of(
    c: &Case,
    entry: &str,
    report: Option<&str>,
    static_shared_bytes: u64,
    notes: &mut Vec<String>,
) -> std::result::Result<Option<KernelResources>, String> {
    let from_report = match report {
        Some(text) => Some(
            parse_report(text)
                .into_iter()
                .find(|r| r.name == entry)
                .ok_or_else(|| format!("the compiler's resource report has no kernel `{entry}`"))?,
        ),
        None => None,
    };
    let arch = from_report
        .as_ref()
        .and_then(|r| r.arch.clone())
        .unwrap_or_else(|| "the compiled target".into());
    let mut res = from_report.clone().unwrap_or_default();
    res.name = entry.to_string();
    match c.registers {
        Amount::Given(n) => res.registers = Some(n),
        Amount::Compiler => {
            let r = from_report
                .as_ref()
                .and_then(|r| r.registers)
                .ok_or("the resource report gives no register count")?;
            notes.push(format!(
                "{r} registers per thread from the ptxas report for {arch}"
            ));
        }
        Amount::Unknown => res.registers = None,
    }
    let dynamic = c.dynamic_shared_bytes;
    let shared = match c.shared_bytes {
        Amount::Given(s) => Some(s),
        // ptxas leaves out `bytes smem` when a kernel has none.
        Amount::Compiler => Some(
            from_report
                .as_ref()
                .and_then(|r| r.shared_bytes)
                .unwrap_or(0),
        ),
        Amount::Unknown if dynamic > 0 => Some(static_shared_bytes),
        Amount::Unknown => None,
    };
    res.shared_bytes = shared.map(|s| s + dynamic);
    if dynamic > 0 {
        notes.push(format!(
            "{dynamic} bytes of dynamic shared memory added to the {} static bytes for occupancy",
            shared.unwrap_or(0)
        ));
    }
    let empty = KernelResources {
        name: entry.to_string(),
        ..KernelResources::default()
    };
    Ok((res != empty).then_some(res))
}
