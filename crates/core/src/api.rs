//! The library's front door: [`predict`] one model on one kernel and GPU, [`predict_all`] every
//! model that can read the kernel with the spread between them as a band, and
//! [`predict_models`] for a chosen list; [`sweep`] a design space into a file, [`calibrate`] a
//! model's free parameters on measurements and [`evaluate`] models against them, each reporting
//! progress through a [`crate::progress::Progress`]. All of them run the models through the one
//! registry (`model::registry`).
//!
//! ```
//! use kerneltime::{predict, Kernel, ModelId, Options, PtxLaunch};
//! use kerneltime::device::catalogue;
//! use kerneltime::emulate::{ArgValue, KernelArg, LaunchDims};
//!
//! let ptx = r#"
//! .version 7.0
//! .target sm_70
//! .address_size 64
//! .visible .entry scale(.param .u64 x, .param .u32 n)
//! {
//!     .reg .pred %p<2>; .reg .b32 %r<6>; .reg .f32 %f<3>; .reg .b64 %rd<5>;
//!     ld.param.u64 %rd1, [x];
//!     ld.param.u32 %r2, [n];
//!     mov.u32 %r3, %ctaid.x; mov.u32 %r4, %ntid.x; mov.u32 %r5, %tid.x;
//!     mad.lo.s32 %r1, %r3, %r4, %r5;
//!     setp.ge.u32 %p1, %r1, %r2;
//!     @%p1 bra DONE;
//!     cvta.to.global.u64 %rd2, %rd1;
//!     mul.wide.u32 %rd3, %r1, 4;
//!     add.s64 %rd4, %rd2, %rd3;
//!     ld.global.f32 %f1, [%rd4];
//!     mul.f32 %f2, %f1, 0f40000000;
//!     st.global.f32 [%rd4], %f2;
//! DONE:
//!     ret;
//! }
//! "#;
//! let launch = LaunchDims { grid: [4096, 1, 1], block: [256, 1, 1] };
//! let args = vec![KernelArg::new("n", ArgValue::Int(1 << 20))];
//! let kernel = Kernel::Ptx(PtxLaunch::parse(ptx, "scale", launch, args).unwrap());
//! let a100 = catalogue::find("A100").unwrap();
//! let p = predict(&kernel, a100, ModelId::Trace, &Options::default()).unwrap();
//! assert_eq!(p.model, ModelId::Trace);
//! assert!(p.time_us > 0.0);
//! ```
//!
//! Errors name the input to fix (`grid`, `args`, `t_p_us`), never a command-line flag.

use std::sync::Arc;

use serde::Serialize;

use crate::compile::cache::CompileCache;
use crate::compile::{Choice, CompileJob, Compiler, Outcome};
use crate::device::Device;
use crate::emulate::{self, BufferHint, Emulation, KernelArg, LaunchDims, UnknownData};
use crate::error::{Error, Result};
use crate::fit::calibrate::CalibrationFile;
use crate::model::bounds::{self, LowerBound};
use crate::model::from_trace::{self, PtxFigures, PtxRequest, TraceMix};
use crate::model::puchala::PuchalaInputs;
use crate::model::registry::{model, Inputs, ModelId, Source};
use crate::model::Prediction;
use crate::workload::counters::{self, KernelCounters};
use kerneltime_ptx::ast::Module;
use kerneltime_ptx::resources::{parse_report, KernelResources};

pub use crate::eval::evaluate::evaluate;
pub use crate::explore::sweep::run_to_file as sweep;
pub use crate::fit::calibrate::calibrate_with_progress as calibrate;

/// A kernel source compiled to PTX for one GPU ([`compile_kernel`]).
#[derive(Debug, Clone)]
pub struct CompiledKernel {
    pub ptx: String,
    /// The compiler's resource report, one entry per kernel: registers, shared and local
    /// memory, spills.
    pub resources: Vec<KernelResources>,
    /// Where those figures come from, for the notes: "registers from the compiler's report
    /// (LOCATION)", and which architecture it compiled for when not the device's.
    pub origin: String,
    /// Whether the result came from the compile cache.
    pub cached: bool,
}

impl CompiledKernel {
    /// The report's entry for PTX kernel `entry` (`None` when the report does not name it).
    pub fn resources_of(&self, entry: &str) -> Option<KernelResources> {
        self.resources.iter().find(|r| r.name == entry).cloned()
    }
}

/// Compiles a CUDA or OpenCL kernel source to PTX for `job.arch` with the compiler `choice`
/// finds (NVRTC loaded at run time, else nvcc; OpenCL through clang), through `cache` when it
/// has a folder. An architecture the compiler does not target is replaced by the nearest one
/// it does ([`Compiler::target`], said in `origin`). A compiler that refuses the source is
/// an error on `field` with its first error line; a compiler that cannot be found or run is an
/// error saying what is missing.
pub fn compile_kernel(
    job: &CompileJob<'_>,
    choice: Choice,
    cache: &CompileCache,
    field: &str,
) -> Result<CompiledKernel> {
    let compiler = Compiler::find(job.language, choice)?;
    let (arch, target_note) = compiler.target(job.arch);
    let job = CompileJob {
        arch,
        ..job.clone()
    };
    let (outcome, cached) = cache.get_or_compile(&compiler, &job)?;
    match outcome {
        Outcome::Compiled { ptx, log } => Ok(CompiledKernel {
            ptx,
            resources: parse_report(&log),
            origin: format!(
                "registers from the compiler's report ({}){}",
                compiler.location(),
                target_note.map_or(String::new(), |n| format!("; {n}"))
            ),
            cached,
        }),
        Outcome::Failed { reason, .. } => Err(Error::invalid(
            field,
            format!("the compiler refused the kernel: {reason}"),
        )),
    }
}

/// A PTX kernel launch.
#[derive(Debug, Clone)]
pub struct PtxLaunch {
    /// The parsed PTX module ([`PtxLaunch::parse`] reads text).
    pub module: Arc<Module>,
    /// The kernel's entry name.
    pub entry: String,
    pub launch: LaunchDims,
    /// Scalar arguments (pointer parameters without a value get synthetic allocations).
    pub args: Vec<KernelArg>,
    /// The compiler's resource report for the kernel (registers, shared memory, spills).
    pub resources: Option<kerneltime_ptx::resources::KernelResources>,
    /// What pointer arguments point to (data hints), by parameter.
    pub data: Vec<BufferHint>,
}

impl PtxLaunch {
    /// Parses PTX text; a problem inside the kernel `entry` is an error naming its line (the
    /// rest of the module may hold PTX we do not read).
    pub fn parse(
        ptx: &str,
        entry: &str,
        launch: LaunchDims,
        args: Vec<KernelArg>,
    ) -> Result<PtxLaunch> {
        let (module, diags) = kerneltime_ptx::parse(ptx);
        if let Some(d) = emulate::entry_diagnostic(&module, &diags, entry) {
            return Err(Error::invalid("ptx", d));
        }
        Ok(PtxLaunch {
            module: Arc::new(module),
            entry: entry.to_string(),
            launch,
            args,
            resources: None,
            data: Vec::new(),
        })
    }
}

/// A kernel, in any of the forms the models read.
#[derive(Debug, Clone)]
pub enum Kernel {
    /// A PTX launch, emulated once for every model.
    Ptx(PtxLaunch),
    /// A launch already emulated (reuse one emulation for several devices or calls), with its
    /// resources.
    Emulated {
        emulation: Arc<Emulation>,
        resources: Option<kerneltime_ptx::resources::KernelResources>,
    },
    /// A puchala2022 kernel program (built-in or from a file) at one point of its parameters.
    Program(PuchalaInputs),
    /// An inputs file's text: the analytical models' parameters, or roofline's `flops` and
    /// `dram_bytes`. `origin` names it in errors.
    InputsFile { text: String, origin: String },
    /// One profiler-counter row (the amaris2018 layout), through the counters path.
    Counters(Box<KernelCounters>),
    /// LSLAG's parallelism factor and input size, with the platform's parameters when known.
    Lslag {
        gamma: f64,
        s: f64,
        params: Option<crate::model::lslag::LslagParams>,
    },
}

impl Kernel {
    /// The name calibration groups of kernel scope are looked up by.
    pub fn name(&self) -> String {
        match self {
            Kernel::Ptx(p) => p.entry.clone(),
            Kernel::Emulated { emulation, .. } => emulation.entry.clone(),
            Kernel::Program(p) => p.kernel.name.clone(),
            Kernel::InputsFile { .. } | Kernel::Counters(_) | Kernel::Lslag { .. } => String::new(),
        }
    }
}

/// How to predict.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Calibrated parameters to apply (`None`: uncalibrated).
    pub calibration: Option<CalibrationFile>,
    /// The kernel name the calibration's kernel-scope groups are looked up by (default: the
    /// kernel's own name, [`Kernel::name`]).
    pub calibration_kernel: Option<String>,
    /// puchala2022's `t_p` (µs) and `t_m` (cycles); else the device profile's.
    pub t_p_us: Option<f64>,
    pub t_m_cycles: Option<f64>,
    /// How a PTX launch is emulated.
    pub emulation: emulate::Options,
    /// Dynamic shared memory per block (`.extern .shared`), bytes, for occupancy.
    pub dynamic_shared_bytes: u32,
    /// Where the resource report came from, for the notes (e.g. ptxas run automatically).
    pub resources_origin: Option<String>,
    /// For an already emulated kernel ([`Kernel::Emulated`]) that depended on unknown data: the
    /// same launch emulated with [`UnknownData::Best`] (a PTX kernel is emulated both ways here).
    pub best_case: Option<Arc<Emulation>>,
    /// With [`predict_models`]: the transfer of mapped host memory over the host link the
    /// launch makes (microseconds) and the note that explains it
    /// (`tune::host_link::mapped_link`). The transfer overlaps the kernel's work, so every
    /// model's time becomes max(model, transfer) (`tune::host_link::LinkedTime`'s headline).
    pub host_transfer: Option<(f64, String)>,
}

/// A model that could not run on this kernel, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelError {
    pub model: ModelId,
    pub error: String,
}

/// The spread of the models' times: the uncertainty band.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Band {
    pub min_us: f64,
    pub max_us: f64,
    pub geometric_mean_us: f64,
    /// max / min.
    pub spread_ratio: f64,
    pub models: usize,
}

impl Band {
    /// The band of the finite, positive times among `times`, when there are at least two.
    pub fn of(times: impl IntoIterator<Item = f64>) -> Option<Band> {
        let times: Vec<f64> = times
            .into_iter()
            .filter(|t| t.is_finite() && *t > 0.0)
            .collect();
        (times.len() > 1).then(|| {
            let min = times.iter().copied().fold(f64::INFINITY, f64::min);
            let max = times.iter().copied().fold(0.0, f64::max);
            let g = (times.iter().map(|t| t.ln()).sum::<f64>() / times.len() as f64).exp();
            Band {
                min_us: min,
                max_us: max,
                geometric_mean_us: g,
                spread_ratio: max / min,
                models: times.len(),
            }
        })
    }
}

/// Several models on one PTX launch.
#[derive(Debug, Clone, Serialize)]
pub struct ModelsReport {
    pub entry: String,
    pub device: String,
    pub launch: LaunchDims,
    /// Per-warp figures of the launch, from its traces.
    pub mix: TraceMix,
    pub predictions: Vec<Prediction>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ModelError>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub band: Option<Band>,
    /// The launch's physical lower bound from its emulation (compulsory DRAM and L2 traffic at
    /// the achievable bandwidths, instruction issue, same-address atomics, launch overhead).
    pub bound: LowerBound,
    /// The models whose time fell below `bound` (each says so in its notes).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bound_violations: Vec<ModelId>,
    /// The one number to trust when one is wanted ([`Recommended::pick`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recommended: Option<Recommended>,
    pub notes: Vec<String>,
    /// Each model's inputs for this launch (the trace model's with its simulation), so that
    /// calibrated parameters can be applied without emulating or simulating again (a suite's
    /// calibrations).
    #[serde(skip)]
    pub inputs: Vec<(ModelId, Inputs)>,
}

/// The recommended answer among several models' predictions of one PTX launch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommended {
    pub model: ModelId,
    pub time_us: f64,
    /// Whether the model's time was below the launch's physical bound and was raised to it.
    pub raised_to_bound: bool,
    pub why: String,
}

impl Recommended {
    /// The first model of [`ModelId::from_ptx`] that ran (that order is the order they are
    /// trusted uncalibrated, from the accuracy harness), held to the launch's bound: no launch is
    /// faster than its compulsory traffic, issue and launch overhead, so a time below the bound
    /// is raised to it.
    pub fn pick(predictions: &[Prediction], bound: &LowerBound) -> Option<Recommended> {
        let p = ModelId::from_ptx().find_map(|m| predictions.iter().find(|p| p.model == m))?;
        let raised = p.time_us + 1e-9 < bound.bound_us;
        let mut why = format!(
            "{}: the most accurate uncalibrated model that ran on this launch, by the accuracy harness",
            p.model
        );
        if raised {
            why.push_str(&format!(
                "; raised from {:.3} us to the launch's physical bound ({})",
                p.time_us, bound.binding
            ));
        }
        Some(Recommended {
            model: p.model,
            time_us: p.time_us.max(bound.bound_us),
            raised_to_bound: raised,
            why,
        })
    }
}

/// Predicts a kernel's time on a device with one model.
pub fn predict(
    kernel: &Kernel,
    device: &Device,
    model_id: ModelId,
    options: &Options,
) -> Result<Prediction> {
    match ptx_figures(kernel, device, options)? {
        Some(f) => predict_source(
            &Source::Ptx(&f),
            Some(device),
            model_id,
            options,
            &kernel.name(),
        )
        .map(|mut p| {
            if p.launch.is_none() {
                p.launch = f.trace.launch;
            }
            p.notes.extend(f.notes.iter().cloned());
            p
        }),
        None => with_source(kernel, device, |source| {
            predict_source(source, Some(device), model_id, options, &kernel.name())
        }),
    }
}

/// Every model that reads a PTX launch, with the band of their times.
pub fn predict_all(kernel: &Kernel, device: &Device, options: &Options) -> Result<ModelsReport> {
    let models: Vec<ModelId> = ModelId::from_ptx().collect();
    predict_models(kernel, device, &models, options)
}

/// `models` on one PTX launch (emulated and simulated once). With one model its error is
/// returned; with several, failures are listed in `errors` and the others still run.
pub fn predict_models(
    kernel: &Kernel,
    device: &Device,
    models: &[ModelId],
    options: &Options,
) -> Result<ModelsReport> {
    let f = ptx_figures(kernel, device, options)?.ok_or_else(|| {
        Error::invalid(
            "kernel",
            "several models side by side run on a PTX launch; give the kernel as PTX",
        )
    })?;
    let mut predictions = Vec::new();
    let mut errors = Vec::new();
    let mut inputs = Vec::new();
    for &id in models {
        match predict_source_keeping(&Source::Ptx(&f), Some(device), id, options, &kernel.name()) {
            Ok((mut p, i)) => {
                if p.launch.is_none() {
                    p.launch = f.trace.launch;
                }
                predictions.push(p);
                inputs.push((id, i));
            }
            Err(e) if models.len() == 1 => return Err(e),
            Err(e) => errors.push(ModelError {
                model: id,
                error: e.to_string(),
            }),
        }
    }
    let mut notes = f.notes.clone();
    if let Some((transfer_us, note)) = &options.host_transfer {
        for p in &mut predictions {
            p.time_us = p.time_us.max(*transfer_us);
        }
        notes.push(note.clone());
    }
    // Every model against one physical bound (`model::bounds`), with a note when below it.
    let bound = bounds::lower_bound(device, &f.emulation, &f.latencies.values);
    let mut bound_violations = Vec::new();
    for p in &mut predictions {
        if p.time_us + 1e-9 < bound.bound_us {
            p.notes.push(bound.note(p.time_us));
            bound_violations.push(p.model);
        }
    }
    let band = Band::of(predictions.iter().map(|p| p.time_us));
    let recommended = (models.len() > 1)
        .then(|| Recommended::pick(&predictions, &bound))
        .flatten();
    Ok(ModelsReport {
        entry: f.emulation.entry.clone(),
        device: device.name.clone(),
        launch: f.emulation.launch,
        mix: f.mix.clone(),
        predictions,
        errors,
        band,
        bound,
        bound_violations,
        recommended,
        notes,
        inputs,
    })
}

/// Emulates a PTX launch.
pub fn emulate_launch(launch: &PtxLaunch, options: &emulate::Options) -> Result<Emulation> {
    emulate::emulate_with(
        &launch.module,
        &launch.entry,
        launch.launch,
        &launch.args,
        &launch.data,
        *options,
    )
}

/// The PTX path's figures, when the kernel is PTX.
fn ptx_figures(kernel: &Kernel, device: &Device, options: &Options) -> Result<Option<PtxFigures>> {
    let (em, resources) = match kernel {
        Kernel::Ptx(launch) => (
            Arc::new(emulate_launch(launch, &options.emulation)?),
            launch.resources.clone(),
        ),
        Kernel::Emulated {
            emulation,
            resources,
        } => (emulation.clone(), resources.clone()),
        _ => return Ok(None),
    };
    // When the emulation depended on data it could not know, the best case too (a band).
    let best_case = match kernel {
        Kernel::Ptx(launch)
            if em.data_dependence.any() && options.emulation.unknown == UnknownData::Worst =>
        {
            let o = emulate::Options {
                unknown: UnknownData::Best,
                ..options.emulation
            };
            Some(Arc::new(emulate_launch(launch, &o)?))
        }
        _ => options.best_case.clone(),
    };
    let req = PtxRequest {
        resources,
        t_p_us: options.t_p_us,
        t_m_cycles: options.t_m_cycles,
        dynamic_shared_bytes: options.dynamic_shared_bytes,
        resources_origin: options.resources_origin.clone(),
        best_case,
    };
    from_trace::figures(device, em, &req).map(Some)
}

/// Runs `f` on the registry's view of a kernel that is not PTX.
fn with_source<T>(
    kernel: &Kernel,
    device: &Device,
    f: impl FnOnce(&Source<'_>) -> Result<T>,
) -> Result<T> {
    match kernel {
        Kernel::Program(p) => f(&Source::Program(p)),
        Kernel::InputsFile { text, origin } => f(&Source::File { text, origin }),
        Kernel::Counters(k) => {
            let lat = counters::device_latencies(device)?;
            let c = counters::inputs(device, &lat, k)?;
            f(&Source::Counters(&c))
        }
        Kernel::Lslag { gamma, s, params } => f(&Source::Lslag {
            gamma: *gamma,
            s: *s,
            params: params.as_ref(),
        }),
        Kernel::Ptx(_) | Kernel::Emulated { .. } => Err(Error::invalid(
            "kernel",
            "a PTX kernel is emulated first (internal)",
        )),
    }
}

/// One model on a prepared source (the registry's view of a kernel): the model's inputs, the
/// calibration's parameters when `options` has one (looked up by `kernel_name` unless
/// `options.calibration_kernel` says otherwise), and the prediction with the inputs' notes.
/// `device` is `None` only for models that run without one (the analytical models on an inputs
/// file take its clock; lslag with a platform's parameters).
pub fn predict_source(
    source: &Source<'_>,
    device: Option<&Device>,
    id: ModelId,
    options: &Options,
    kernel_name: &str,
) -> Result<Prediction> {
    predict_source_keeping(source, device, id, options, kernel_name).map(|(p, _)| p)
}

/// [`predict_source`] with the model's inputs it built.
fn predict_source_keeping(
    source: &Source<'_>,
    device: Option<&Device>,
    id: ModelId,
    options: &Options,
    kernel_name: &str,
) -> Result<(Prediction, Inputs)> {
    let m = model(id);
    let (inputs, notes) = m.inputs(source, device)?;
    let params = match &options.calibration {
        None => None,
        Some(cal) => {
            let name = options.calibration_kernel.as_deref().unwrap_or(kernel_name);
            Some(cal.params_for(id, device, name)?)
        }
    };
    let mut p = m.predict(device, &inputs, params.as_ref().map(|(q, _)| q.as_slice()))?;
    finite_answer(&p)?;
    p.notes.extend(notes);
    if let Some((_, note)) = params {
        p.notes.push(note);
    }
    Ok((p, inputs))
}

/// Refuses a prediction whose time is not a finite, non-negative number of at most a year, naming
/// the breakdown values that are themselves non-finite or absurd (the inputs that caused it).
fn finite_answer(p: &Prediction) -> Result<()> {
    let t = p.time_us;
    if crate::model::is_physical_time_us(t) {
        return Ok(());
    }
    let mut suspects: Vec<String> = p
        .breakdown
        .iter()
        .filter_map(|(k, v)| v.as_f64().map(|x| (k, x)))
        .filter(|(_, x)| !x.is_finite() || x.abs() > 1e15)
        .map(|(k, x)| format!("{k} = {x:e}"))
        .collect();
    suspects.truncate(4);
    let why = if suspects.is_empty() {
        "an input is out of range".to_string()
    } else {
        format!("out of range: {}", suspects.join(", "))
    };
    Err(Error::invalid(
        "inputs",
        format!(
            "the {} time on {} would be {t:e} us, which is not a physical answer; {why}",
            p.model, p.device
        ),
    ))
}
