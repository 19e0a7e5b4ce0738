//! Screening an autotuning search space without a GPU: every selected configuration of a FAIR
//! spec (`spec`, `space`) is compiled (`crate::compile`, cached), checked against each device's
//! limits (threads, registers, shared memory: `device::occupancy`) and predicted from its PTX
//! by a model of `model::from_trace` (default `trace`), in parallel; the configurations are
//! then ranked per device.
//!
//! Per configuration and device the result is `ok` (a predicted time and a rank, 1 = fastest),
//! `cannot-launch` (the device cannot run the block: too many threads, registers or shared
//! memory, or a grid beyond the limits), `compile-error` (the compiler refused it; the reason
//! is its first error line) or `model-error` (the model could not predict it; never ranked).
//! Data hints (the spec's argument fills, replaced by the caller's `data` of the same
//! parameter; `emulate::hints`) are given to the emulator, so data-dependent addresses and
//! branches follow them. Buffers declared as mapped host memory add the host-link term of
//! `host_link` (the headline `max(model, link)`, said in the notes).
//!
//! Prediction follows `kerneltime predict --ptx ... --model M`: `emulate` then
//! `model::from_trace::predict_models`. For the `trace` model only the block it simulates is
//! emulated (`Sampling::Representative`), which gives the same time (see `explore::trace_cell`).
//!
//! What it does NOT do: print, draw progress (it reports through `progress::Progress`), write
//! files (`kt_cache` builds the Kernel Tuner cache text), or judge against measurements
//! (`evaluate`).

pub mod evaluate;
pub mod expr;
pub mod host_link;
pub mod kt_cache;
pub mod launch;
pub mod prediction_cache;
pub mod space;
pub mod spec;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use rayon::prelude::*;

use crate::api::{self, Kernel};
use crate::compile::cache::CompileCache;
use crate::compile::{Choice, CompileJob, Compiler, Outcome};
use crate::device::occupancy::{occupancy, BlockResources};
use crate::device::{ComputeCapability, Device};
use crate::emulate::{
    emulate_with, BufferHint, DataArg, Emulation, KernelArg, LaunchDims, Options, Sampling,
};
use crate::error::{Error, Result};
use crate::model::ModelId;
use crate::progress::Progress;
use crate::ptx::ast::Module;
use crate::ptx::resources::{parse_report, KernelResources};

use host_link::{host_link, link_note, mapped_traffic, HostLink, LinkedTime};
use launch::{Launcher, Overrides};
use prediction_cache::{KeyBuilder, PredictionCache};
use space::{Configuration, Selection};
use spec::TuneSpec;

/// The model used when the caller names none.
pub const DEFAULT_MODEL: &str = "trace";

/// What to tune.
#[derive(Debug, Clone)]
pub struct TuneRequest {
    pub spec: TuneSpec,
    pub overrides: Overrides,
    pub devices: Vec<Device>,
    pub selection: Selection,
    /// A model that runs from PTX (`ModelId::from_ptx()`), by name.
    pub model: String,
    pub compiler: Choice,
    /// Where compiled results are kept; `None` compiles everything afresh.
    pub compile_cache: Option<PathBuf>,
    /// The host link's bandwidth per direction, GB/s, when known (else by architecture).
    pub host_link_gbs: Option<f64>,
    /// Keep and reuse whole results per configuration (`prediction_cache`) inside the compile
    /// cache's folder; nothing without a compile cache.
    pub prediction_cache: bool,
}

/// The verdict on one configuration on one device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Ok,
    CannotLaunch,
    CompileError,
    ModelError,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::CannotLaunch => "cannot-launch",
            Status::CompileError => "compile-error",
            Status::ModelError => "model-error",
        }
    }
}

/// One configuration on one device.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Row {
    /// Index into `TuneReport::configurations`.
    pub config: usize,
    /// Index into `TuneReport::devices`.
    pub device: usize,
    pub status: Status,
    pub predicted_us: Option<f64>,
    /// 1 = fastest predicted on this device; only `ok` rows have one.
    pub rank: Option<u64>,
    /// Why the status is not `ok` (empty for `ok`).
    pub reason: String,
}

/// Counters of a run.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct TuneStats {
    /// Configurations that meet the spec's conditions.
    pub space_size: usize,
    pub selected: usize,
    pub compiled: u64,
    pub cache_hits: u64,
    /// Configurations (per architecture) whose whole result came from the prediction cache
    /// (also counted in `cache_hits`).
    pub predictions_reused: u64,
    pub wall_seconds: f64,
    /// Thread time spent in each phase, summed over the workers (so up to the number of
    /// threads times `wall_seconds`).
    pub phases: PhaseSeconds,
}

/// Thread seconds per phase of a run, summed over the parallel workers.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct PhaseSeconds {
    /// Reading whole results from the prediction cache.
    pub prediction_read: f64,
    /// Reading and decoding compile-cache hits.
    pub cache_read: f64,
    /// Compiling misses (and storing them in the cache).
    pub compile: f64,
    /// Parsing the PTX and the resource report, finding the entry.
    pub parse: f64,
    /// Emulating the launch.
    pub emulate: f64,
    /// The occupancy check and the model, every device.
    pub predict: f64,
}

/// The phases of `PhaseSeconds`, as indices into `Context::phase_ns`.
#[derive(Clone, Copy)]
enum Phase {
    CacheRead = 0,
    Compile = 1,
    Parse = 2,
    Emulate = 3,
    Predict = 4,
    PredictionRead = 5,
}

/// What one compiled (or refused) configuration gave on the devices of one architecture, in
/// the order of the devices asked for, before any of it reaches the run's counters: what the
/// prediction cache keeps.
#[derive(serde::Serialize, serde::Deserialize)]
struct ArchOutcome {
    /// The compiler's report named no resources for the kernel.
    missing_resources: bool,
    devices: Vec<DeviceOutcome>,
}

/// One device's part of an `ArchOutcome`.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct DeviceOutcome {
    status: Status,
    /// The predicted time, microseconds, as IEEE-754 bits (exact through JSON).
    time_bits: Option<u64>,
    reason: String,
    /// The host-link term added, microseconds, as bits.
    link_extra_bits: Option<u64>,
    /// The model's notes kept for the report (without line numbers).
    notes: Vec<String>,
}

impl DeviceOutcome {
    fn refused(status: Status, reason: &str) -> Self {
        DeviceOutcome {
            status,
            time_bits: None,
            reason: reason.to_string(),
            link_extra_bits: None,
            notes: Vec::new(),
        }
    }
}

/// The ranked configurations.
#[derive(Debug, Clone)]
pub struct TuneReport {
    pub kernel: String,
    pub param_names: Vec<String>,
    pub configurations: Vec<Configuration>,
    pub devices: Vec<String>,
    /// Configuration-major: the rows of configuration `c` are `rows[c * devices.len()..]`.
    pub rows: Vec<Row>,
    pub stats: TuneStats,
    /// The data hints in force (spec fills replaced by the caller's).
    pub data_hints: Vec<DataArg>,
    pub notes: Vec<String>,
}

impl TuneReport {
    /// The rows of one device, in configuration order.
    pub fn device_rows(&self, device: usize) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(move |r| r.device == device)
    }
}

/// Distinct model notes kept for the report.
const MAX_MODEL_NOTES: usize = 16;

/// A note without its `line N: ` prefix, so that the same remark about different PTX lines
/// (which move between configurations) is kept once.
fn without_line(note: &str) -> &str {
    note.strip_prefix("line ")
        .and_then(|rest| {
            let digits = rest.find(|c: char| !c.is_ascii_digit())?;
            (digits > 0).then(|| rest[digits..].strip_prefix(": "))?
        })
        .unwrap_or(note)
}

/// Everything shared by the parallel workers.
struct Context<'a> {
    req: &'a TuneRequest,
    model: ModelId,
    launcher: Launcher,
    compiler: Compiler,
    cache: CompileCache,
    source: String,
    file_name: String,
    include_dir: Option<PathBuf>,
    /// The devices' distinct architectures, each with the one the compiler compiles it for.
    archs: Vec<(ComputeCapability, ComputeCapability)>,
    links: Vec<Option<HostLink>>,
    /// The data hints the emulator reads, parameters by position.
    data: Vec<BufferHint>,
    compiled: AtomicU64,
    hits: AtomicU64,
    notes: Mutex<BTreeSet<String>>,
    /// Per device: the shortest and longest host-link transfer, microseconds.
    link_range: Mutex<Vec<(f64, f64)>>,
    missing_resources: AtomicU64,
    /// Nanoseconds per `Phase`.
    phase_ns: [AtomicU64; 6],
    predictions: PredictionCache,
    predictions_reused: AtomicU64,
    /// Per device: its full description and host link, as the prediction key reads them
    /// (formatted once, not per configuration).
    device_keys: Vec<String>,
    /// The data hints in force, as the prediction key reads them.
    hints_key: String,
}

/// Ranks the selected configurations of a spec on every device.
pub fn tune(req: &TuneRequest, progress: &dyn Progress) -> Result<TuneReport> {
    let started = std::time::Instant::now();
    let Some(model) = ModelId::ptx_model(&req.model) else {
        return Err(Error::invalid(
            "model",
            format!(
                "`{}` cannot rank PTX kernels; these can: {}",
                req.model,
                ModelId::ptx_names()
            ),
        ));
    };
    if req.devices.is_empty() {
        return Err(Error::missing("device", "tuning needs at least one device"));
    }
    let spec = &req.spec;
    let source = crate::error::read_text_file(&spec.kernel.file, "a kernel source")?;
    let launcher = Launcher::new(spec, &req.overrides, &source)?;
    let valid = space::enumerate(spec)?;
    if valid.is_empty() {
        return Err(Error::file(
            spec.origin.as_str(),
            "ConfigurationSpace: no configuration meets every condition",
        ));
    }
    let selected = space::select(&valid, &req.selection)?;
    let configurations: Vec<Configuration> = selected
        .iter()
        .map(|&i| space::configuration(spec, i))
        .collect();
    let compiler = Compiler::find(spec.kernel.language, req.compiler)?;
    let mut archs: Vec<ComputeCapability> =
        req.devices.iter().map(|d| d.compute_capability).collect();
    archs.sort_by_key(|c| c.as_number());
    archs.dedup();
    // A device the compiler does not target gets the nearest architecture it does, said once.
    let targets: Vec<(ComputeCapability, Option<String>)> =
        archs.iter().map(|&a| compiler.target(a)).collect();
    let target_notes: BTreeSet<String> = targets.iter().filter_map(|t| t.1.clone()).collect();
    let archs: Vec<(ComputeCapability, ComputeCapability)> = archs
        .into_iter()
        .zip(targets.into_iter().map(|t| t.0))
        .collect();
    let links: Vec<Option<HostLink>> = req
        .devices
        .iter()
        .map(|d| (!launcher.mapped_host.is_empty()).then(|| host_link(d, req.host_link_gbs)))
        .collect();
    let (data_hints, data, hint_notes) = load_hints(spec, &launcher, &req.overrides.data, &source)?;
    let device_keys: Vec<String> = req
        .devices
        .iter()
        .zip(&links)
        .map(|(d, l)| format!("{d:?}\n{l:?}"))
        .collect();
    let cx = Context {
        req,
        model,
        compiler,
        cache: CompileCache::new(req.compile_cache.clone()),
        file_name: spec
            .kernel
            .file
            .file_name()
            .map_or_else(|| "kernel.cu".into(), |n| n.to_string_lossy().into_owned()),
        include_dir: spec.kernel.file.parent().map(|p| p.to_path_buf()),
        source,
        archs,
        links,
        data,
        compiled: AtomicU64::new(0),
        hits: AtomicU64::new(0),
        notes: Mutex::new(target_notes),
        link_range: Mutex::new(vec![(f64::INFINITY, 0.0); req.devices.len()]),
        missing_resources: AtomicU64::new(0),
        phase_ns: Default::default(),
        predictions: PredictionCache::inside(
            req.compile_cache
                .as_deref()
                .filter(|_| req.prediction_cache),
        ),
        predictions_reused: AtomicU64::new(0),
        device_keys,
        hints_key: format!("{data_hints:?}"),
        launcher,
    };
    progress.start("configurations", configurations.len() as u64);
    let done = AtomicU64::new(0);
    let per_config: Vec<Vec<Row>> = configurations
        .par_iter()
        .enumerate()
        .map(|(c, config)| {
            let rows = cx.configuration_rows(c, config);
            progress.update(done.fetch_add(1, Ordering::Relaxed) + 1);
            rows
        })
        .collect::<Result<_>>()?;
    progress.finish();
    let mut rows: Vec<Row> = per_config.into_iter().flatten().collect();
    rank_rows(&mut rows, &configurations, req.devices.len());
    let mut notes = cx.notes(&data_hints);
    notes.extend(hint_notes);
    Ok(TuneReport {
        kernel: spec.kernel.name.clone(),
        param_names: spec.params.iter().map(|p| p.name.clone()).collect(),
        configurations,
        devices: req.devices.iter().map(|d| d.name.clone()).collect(),
        rows,
        stats: TuneStats {
            space_size: valid.len(),
            selected: selected.len(),
            compiled: cx.compiled.load(Ordering::Relaxed),
            cache_hits: cx.hits.load(Ordering::Relaxed),
            predictions_reused: cx.predictions_reused.load(Ordering::Relaxed),
            wall_seconds: started.elapsed().as_secs_f64(),
            phases: cx.phases(),
        },
        data_hints,
        notes,
    })
}

/// The data hints in force, as written and as the emulator reads them (parameters by
/// position), and notes on spec fills left out: the spec's fills (files relative to the
/// spec's folder), each replaced by the caller's hint for the same parameter (files relative
/// to the working directory). A caller's hint that names no parameter is an error; a spec
/// fill that names none is left out with a note (a spec may list buffers the kernel does not
/// take as parameters). A hint may also name a `__constant__` or `__device__` variable the
/// source declares (a spec's constant-memory argument does); it is passed on by name (the
/// emulator finds the PTX variable).
fn load_hints(
    spec: &TuneSpec,
    launcher: &Launcher,
    given: &[DataArg],
    source: &str,
) -> Result<(Vec<DataArg>, Vec<BufferHint>, Vec<String>)> {
    let spec_dir = Path::new(&spec.origin).parent();
    let kernel = &spec.kernel.name;
    // What the emulator reads, keyed by the parameter's position (as text) or the variable's
    // name: a later hint for the same one (the caller's) replaces an earlier (the spec's).
    let mut out: Vec<(DataArg, BufferHint)> = Vec::new();
    let mut notes = Vec::new();
    let from_spec = spec::spec_data_hints(spec)
        .into_iter()
        .map(|h| (h, spec_dir, true));
    for (h, base, is_fill) in from_spec.chain(given.iter().map(|h| (h.clone(), None, false))) {
        let key = match launcher.find_param(&h.param, "data", kernel) {
            Ok(p) => p.position.to_string(),
            Err(_) if declares_variable(source, h.param.trim()) => h.param.trim().to_string(),
            Err(_) if is_fill => {
                notes.push(format!(
                    "argument `{}`: its fill {} names no parameter of kernel `{kernel}`; not used",
                    h.param, h.spec
                ));
                continue;
            }
            Err(e) => return Err(e),
        };
        let hint = h.spec.load(base)?;
        out.retain(|(_, b)| b.param != key);
        out.push((h, BufferHint { param: key, hint }));
    }
    let (written, loaded) = out.into_iter().unzip();
    Ok((written, loaded, notes))
}

/// Whether a CUDA or OpenCL source declares `name` as a device variable a host fills by name:
/// a `__constant__` or `__device__` (CUDA) or `__constant` (OpenCL) declaration naming it.
fn declares_variable(source: &str, name: &str) -> bool {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    !name.is_empty()
        && source.lines().any(|line| {
            (line.contains("__constant") || line.contains("__device__"))
                && line.match_indices(name).any(|(i, _)| {
                    !line[..i].ends_with(is_word) && !line[i + name.len()..].starts_with(is_word)
                })
        })
}

/// Gives every `ok` row its rank on its device: by predicted time, ties by configuration order.
fn rank_rows(rows: &mut [Row], configurations: &[Configuration], devices: usize) {
    for d in 0..devices {
        let mut ok: Vec<usize> = (0..rows.len())
            .filter(|&i| rows[i].device == d && rows[i].status == Status::Ok)
            .collect();
        ok.sort_by(|&a, &b| {
            let (ta, tb) = (rows[a].predicted_us, rows[b].predicted_us);
            ta.partial_cmp(&tb)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(
                    configurations[rows[a].config]
                        .index
                        .cmp(&configurations[rows[b].config].index),
                )
        });
        for (r, &i) in ok.iter().enumerate() {
            rows[i].rank = Some(r as u64 + 1);
        }
    }
}

/// The PTX entry of the spec's kernel name (`emulate::resolve_entry_name`).
pub fn find_entry_name(module: &Module, name: &str) -> std::result::Result<String, String> {
    crate::emulate::resolve_entry_name(module, name)
}

impl Context<'_> {
    /// Adds the time since `since` to `phase`.
    fn charge(&self, phase: Phase, since: std::time::Instant) {
        let ns = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.phase_ns[phase as usize].fetch_add(ns, Ordering::Relaxed);
    }

    fn phases(&self) -> PhaseSeconds {
        let s = |p: Phase| self.phase_ns[p as usize].load(Ordering::Relaxed) as f64 * 1e-9;
        PhaseSeconds {
            prediction_read: s(Phase::PredictionRead),
            cache_read: s(Phase::CacheRead),
            compile: s(Phase::Compile),
            parse: s(Phase::Parse),
            emulate: s(Phase::Emulate),
            predict: s(Phase::Predict),
        }
    }

    fn row(&self, config: usize, device: usize, status: Status, reason: impl Into<String>) -> Row {
        Row {
            config,
            device,
            status,
            predicted_us: None,
            rank: None,
            reason: reason.into(),
        }
    }

    /// What the device's hardware refuses before anything is compiled.
    fn launch_refusal(&self, device: &Device, grid: [u64; 3], block: [u64; 3]) -> Option<String> {
        let threads: u64 = block.iter().product();
        let max = u64::from(device.limits.max_threads_per_block);
        if threads > max {
            return Some(format!(
                "a block of {threads} threads exceeds the {max} threads per block of {}",
                device.name
            ));
        }
        if block[0] > 1024 || block[1] > 1024 || block[2] > 64 {
            return Some(format!(
                "block {}x{}x{} exceeds CUDA's block dimensions (x and y up to 1024, z up to 64)",
                block[0], block[1], block[2]
            ));
        }
        if grid[0] > i32::MAX as u64 || grid[1] > 65535 || grid[2] > 65535 {
            return Some(format!(
                "grid {}x{}x{} exceeds CUDA's grid dimensions (x up to 2^31-1, y and z up to 65535)",
                grid[0], grid[1], grid[2]
            ));
        }
        None
    }

    fn configuration_rows(&self, c: usize, config: &Configuration) -> Result<Vec<Row>> {
        let plan = self.launcher.plan(config)?;
        let devices = &self.req.devices;
        let mut rows: Vec<Option<Row>> = vec![None; devices.len()];
        for (d, dev) in devices.iter().enumerate() {
            if let Some(why) = self.launch_refusal(dev, plan.grid, plan.block) {
                rows[d] = Some(self.row(c, d, Status::CannotLaunch, why));
            }
        }
        for &(arch, target) in &self.archs {
            let wanted: Vec<usize> = (0..devices.len())
                .filter(|&d| rows[d].is_none() && devices[d].compute_capability == arch)
                .collect();
            if wanted.is_empty() {
                continue;
            }
            let job = CompileJob {
                source: &self.source,
                file_name: &self.file_name,
                include_dir: self.include_dir.as_deref(),
                language: self.req.spec.kernel.language,
                defines: &plan.defines,
                options: &self.req.spec.kernel.compiler_options,
                arch: target,
            };
            let launch = LaunchDims {
                grid: plan.grid.map(|g| g as u32),
                block: plan.block.map(|b| b as u32),
            };
            let t = std::time::Instant::now();
            let key = self.prediction_key(&job, launch, &plan.args, &wanted);
            if let Some(outcome) = self.predictions.get::<ArchOutcome>(&key) {
                if outcome.devices.len() == wanted.len() {
                    self.hits.fetch_add(1, Ordering::Relaxed);
                    self.predictions_reused.fetch_add(1, Ordering::Relaxed);
                    for (d, row) in self.apply(c, &wanted, outcome) {
                        rows[d] = Some(row);
                    }
                    self.charge(Phase::PredictionRead, t);
                    continue;
                }
            }
            let t = std::time::Instant::now();
            let (outcome, hit) = self.cache.get_or_compile(&self.compiler, &job)?;
            self.charge(
                if hit {
                    Phase::CacheRead
                } else {
                    Phase::Compile
                },
                t,
            );
            if hit {
                self.hits.fetch_add(1, Ordering::Relaxed);
            } else {
                self.compiled.fetch_add(1, Ordering::Relaxed);
            }
            let outcome = match outcome {
                Outcome::Compiled { ptx, log } => {
                    self.predict_arch(&wanted, &ptx, &log, launch, &plan.args)?
                }
                Outcome::Failed { reason, .. } => ArchOutcome {
                    missing_resources: false,
                    devices: vec![
                        DeviceOutcome::refused(Status::CompileError, &reason);
                        wanted.len()
                    ],
                },
            };
            self.predictions.put(&key, &outcome)?;
            for (d, row) in self.apply(c, &wanted, outcome) {
                rows[d] = Some(row);
            }
        }
        Ok(rows
            .into_iter()
            .enumerate()
            .map(|(d, r)| r.unwrap_or_else(|| self.row(c, d, Status::ModelError, "not predicted")))
            .collect())
    }

    /// The prediction cache's key of one configuration on the devices `wanted` (all of one
    /// architecture): the compilation's key and everything the prediction reads besides.
    fn prediction_key(
        &self,
        job: &CompileJob<'_>,
        launch: LaunchDims,
        args: &[String],
        wanted: &[usize],
    ) -> String {
        let spec = &self.req.spec;
        let mut k = KeyBuilder::new();
        k.field(&crate::compile::cache::key(&self.compiler, job))
            .field(&spec.kernel.name)
            .field(&spec.kernel.shared_memory_bytes.to_string())
            .field(&format!("{:?} {:?}", launch.grid, launch.block))
            .field(&args.join("\n"))
            .field(self.model.name());
        for p in &self.launcher.mapped_host {
            k.field(&p.position.to_string());
        }
        for &d in wanted {
            k.field(&self.device_keys[d]);
        }
        k.field(&self.hints_key);
        k.finish()
    }

    /// Turns what one configuration gave on the devices `wanted` into rows, and adds its
    /// notes, host-link terms and missing resource report to the run's.
    fn apply(&self, c: usize, wanted: &[usize], outcome: ArchOutcome) -> Vec<(usize, Row)> {
        if outcome.missing_resources {
            self.missing_resources.fetch_add(1, Ordering::Relaxed);
        }
        wanted
            .iter()
            .zip(outcome.devices)
            .map(|(&d, o)| {
                if let Some(extra) = o.link_extra_bits.map(f64::from_bits) {
                    if let Ok(mut r) = self.link_range.lock() {
                        r[d].0 = r[d].0.min(extra);
                        r[d].1 = r[d].1.max(extra);
                    }
                }
                if let Ok(mut notes) = self.notes.lock() {
                    for n in &o.notes {
                        if notes.len() < MAX_MODEL_NOTES {
                            notes.insert(n.clone());
                        }
                    }
                }
                let row = Row {
                    config: c,
                    device: d,
                    status: o.status,
                    predicted_us: o.time_bits.map(f64::from_bits),
                    rank: None,
                    reason: o.reason,
                };
                (d, row)
            })
            .collect()
    }

    /// Predicts one compiled configuration on the devices `wanted` (all of one architecture),
    /// touching none of the run's counters: `apply` does that.
    fn predict_arch(
        &self,
        wanted: &[usize],
        ptx: &str,
        log: &str,
        launch: LaunchDims,
        args: &[String],
    ) -> Result<ArchOutcome> {
        let spec = &self.req.spec;
        let t = std::time::Instant::now();
        let (module, diags) = crate::ptx::parse_bytes(ptx.as_bytes());
        let entry = find_entry_name(&module, &spec.kernel.name).map_err(|m| {
            Error::file(
                spec.origin.as_str(),
                format!("KernelSpecification.KernelName: {m}"),
            )
        })?;
        let all_failed = |status: Status, why: &str| ArchOutcome {
            missing_resources: false,
            devices: vec![DeviceOutcome::refused(status, why); wanted.len()],
        };
        if let Some(why) = crate::emulate::entry_diagnostic(&module, &diags, &entry) {
            return Ok(all_failed(Status::ModelError, &why));
        }
        let mut resources: Option<KernelResources> =
            parse_report(log).into_iter().find(|r| r.name == entry);
        let missing_resources = resources.is_none();
        let dynamic_shared = spec.kernel.shared_memory_bytes;
        if let Some(r) = resources.as_mut() {
            if dynamic_shared > 0 {
                r.shared_bytes = Some(r.shared_bytes.unwrap_or(0) + dynamic_shared);
            }
        }
        self.charge(Phase::Parse, t);
        let t = std::time::Instant::now();
        let sampling = if self.model == ModelId::Trace {
            Sampling::Representative
        } else {
            Sampling::Classes
        };
        let options = Options {
            sampling,
            ..Options::default()
        };
        let em: Emulation = match KernelArg::parse_all(args)
            .and_then(|args| emulate_with(&module, &entry, launch, &args, &self.data, options))
        {
            Ok(em) => em,
            Err(e @ Error::MissingInput { .. }) => return Err(e),
            // A hint on a parameter that is not a pointer is the caller's mistake.
            Err(Error::InvalidInput { name, message }) if name == "data" => {
                return Err(Error::InvalidInput { name, message })
            }
            Err(Error::InvalidInput { name, message }) if name == "block" || name == "grid" => {
                return Ok(ArchOutcome {
                    missing_resources,
                    ..all_failed(Status::CannotLaunch, &message)
                })
            }
            Err(e) => {
                return Ok(ArchOutcome {
                    missing_resources,
                    ..all_failed(Status::ModelError, &e.to_string())
                })
            }
        };
        self.charge(Phase::Emulate, t);
        let t = std::time::Instant::now();
        let em = std::sync::Arc::new(em);
        let positions: Vec<usize> = self
            .launcher
            .mapped_host
            .iter()
            .map(|p| p.position)
            .collect();
        let traffic = mapped_traffic(&em, &positions);
        let mut out = Vec::with_capacity(wanted.len());
        for &d in wanted {
            let device = &self.req.devices[d];
            let threads = launch.threads_per_block();
            if let Some(r) = &resources {
                let block = BlockResources {
                    threads_per_block: threads,
                    registers_per_thread: u32::try_from(r.registers.unwrap_or(0))
                        .unwrap_or(u32::MAX),
                    shared_memory_per_block_bytes: u32::try_from(
                        r.shared_bytes.unwrap_or(dynamic_shared),
                    )
                    .unwrap_or(u32::MAX),
                };
                match occupancy(device, &block) {
                    Ok(o) if o.active_blocks_per_sm == 0 => {
                        out.push(DeviceOutcome::refused(
                            Status::CannotLaunch,
                            &format!(
                                "no block fits on an SM of {}: {} registers per thread x {threads} threads, {} bytes of shared memory (limited by {:?})",
                                device.name,
                                block.registers_per_thread,
                                block.shared_memory_per_block_bytes,
                                o.limited_by
                            ),
                        ));
                        continue;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        out.push(DeviceOutcome::refused(Status::CannotLaunch, &e.to_string()));
                        continue;
                    }
                }
            }
            let kernel = Kernel::Emulated {
                emulation: em.clone(),
                resources: resources.clone(),
            };
            match api::predict_models(&kernel, device, &[self.model], &api::Options::default()) {
                Ok(report) => {
                    let mut time_us = report.predictions.first().map_or(f64::NAN, |p| p.time_us);
                    let mut link_extra_bits = None;
                    if let Some(link) = &self.links[d] {
                        let link_us = traffic.time_us(link);
                        time_us = LinkedTime::new(time_us, link_us).headline_us();
                        link_extra_bits = Some(link_us.to_bits());
                    }
                    let notes: Vec<String> = report
                        .notes
                        .iter()
                        .filter(|n| !n.starts_with("emulated "))
                        .map(|n| without_line(n).to_string())
                        .collect();
                    let (status, time_bits, reason) = if time_us.is_finite() && time_us > 0.0 {
                        (Status::Ok, Some(time_us.to_bits()), String::new())
                    } else {
                        (
                            Status::ModelError,
                            None,
                            format!("the model predicted {time_us} us"),
                        )
                    };
                    out.push(DeviceOutcome {
                        status,
                        time_bits,
                        reason,
                        link_extra_bits,
                        notes,
                    });
                }
                Err(e @ Error::MissingInput { .. }) => return Err(e),
                Err(Error::Infeasible(m)) => {
                    out.push(DeviceOutcome::refused(Status::CannotLaunch, &m))
                }
                Err(e) => out.push(DeviceOutcome::refused(Status::ModelError, &e.to_string())),
            }
        }
        self.charge(Phase::Predict, t);
        Ok(ArchOutcome {
            missing_resources,
            devices: out,
        })
    }

    fn notes(&self, hints: &[DataArg]) -> Vec<String> {
        let req = self.req;
        let mut notes = vec![format!("compiler: {}", self.compiler.location())];
        let (compiled, hits) = (
            self.compiled.load(Ordering::Relaxed),
            self.hits.load(Ordering::Relaxed),
        );
        notes.push(match self.cache.dir() {
            Some(dir) => format!(
                "compile cache {}: {hits} results reused, {compiled} compiled",
                dir.display()
            ),
            None => format!("no compile cache: {compiled} compiled"),
        });
        if let Some(dir) = self.predictions.dir() {
            notes.push(format!(
                "prediction cache {}: {} whole results reused",
                dir.display(),
                self.predictions_reused.load(Ordering::Relaxed)
            ));
        }
        notes.extend(self.launcher.notes.iter().cloned());
        if req.model == "trace" {
            notes.push("the trace model emulates only the block it simulates (the interior class), which gives the time `kerneltime predict --model trace` gives".into());
        }
        let missing = self.missing_resources.load(Ordering::Relaxed);
        if missing > 0 {
            notes.push(format!("{missing} compilations gave no resource report for the kernel: 32 registers assumed and no register or shared-memory check"));
        }
        if !hints.is_empty() {
            let list: Vec<String> = hints.iter().map(|h| h.to_string()).collect();
            notes.push(format!(
                "data hints used by the emulation: {}",
                list.join(", ")
            ));
        }
        for a in &req.spec.kernel.arguments {
            if let Some(why) = &a.fill_unused {
                if !hints.iter().any(|h| h.param == a.name) {
                    notes.push(format!(
                        "argument `{}`: {why} gives no data hint; loads from it stay unknown",
                        a.name
                    ));
                }
            }
        }
        let names: Vec<&str> = self
            .launcher
            .mapped_host
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        if let Ok(ranges) = self.link_range.lock() {
            for (d, link) in self.links.iter().enumerate() {
                let (Some(link), (lo, hi)) = (link, ranges[d]) else {
                    continue;
                };
                if lo.is_finite() {
                    notes.push(format!(
                        "{}: {}",
                        req.devices[d].name,
                        link_note(&names, link, (lo, hi))
                    ));
                }
            }
        }
        if let Ok(n) = self.notes.lock() {
            notes.extend(n.iter().cloned());
        }
        notes
    }
}

/// Counts of each status per device: `(device, status) -> rows`.
pub fn status_counts(report: &TuneReport) -> BTreeMap<(usize, &'static str), usize> {
    let mut m = BTreeMap::new();
    for r in &report.rows {
        *m.entry((r.device, r.status.name())).or_insert(0) += 1;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::expr::Value;

    fn row(config: usize, device: usize, status: Status, t: Option<f64>) -> Row {
        Row {
            config,
            device,
            status,
            predicted_us: t,
            rank: None,
            reason: String::new(),
        }
    }

    #[test]
    fn ranks_are_per_device_by_time_then_configuration() {
        let configs: Vec<Configuration> = (0..4)
            .map(|i| Configuration {
                index: i as u64 * 10,
                values: vec![Value::Int(i)],
            })
            .collect();
        let mut rows = vec![
            row(0, 0, Status::Ok, Some(5.0)),
            row(0, 1, Status::Ok, Some(1.0)),
            row(1, 0, Status::Ok, Some(2.0)),
            row(1, 1, Status::CannotLaunch, None),
            row(2, 0, Status::CompileError, None),
            row(2, 1, Status::Ok, Some(1.0)),
            row(3, 0, Status::Ok, Some(2.0)),
            row(3, 1, Status::Ok, Some(0.5)),
        ];
        rank_rows(&mut rows, &configs, 2);
        let ranks: Vec<Option<u64>> = rows.iter().map(|r| r.rank).collect();
        assert_eq!(
            ranks,
            vec![
                Some(3),
                Some(2),
                Some(1),
                None,
                None,
                Some(3),
                Some(2),
                Some(1)
            ]
        );
    }

    #[test]
    fn line_numbers_are_dropped_from_notes() {
        assert_eq!(
            without_line("line 182: data-dependent branch (32 lanes)"),
            "data-dependent branch (32 lanes)"
        );
        assert_eq!(without_line("line x: y"), "line x: y");
        assert_eq!(without_line("eq 8: 5 cycles"), "eq 8: 5 cycles");
    }

    #[test]
    fn mangled_entries_are_found_by_source_name() {
        let ptx = ".version 8.0\n.target sm_75\n.address_size 64\n.visible .entry _Z9cn_pnpolyPiP6float2i(.param .u64 a)\n{\nret;\n}\n.visible .entry other()\n{\nret;\n}\n";
        let (m, _) = crate::ptx::parse(ptx);
        assert_eq!(
            find_entry_name(&m, "cn_pnpoly").unwrap(),
            "_Z9cn_pnpolyPiP6float2i"
        );
        assert_eq!(find_entry_name(&m, "other").unwrap(), "other");
        let e = find_entry_name(&m, "cn_pnpol").unwrap_err();
        assert!(
            e.contains("no kernel `cn_pnpol`") && e.contains("other"),
            "{e}"
        );
    }

    #[test]
    fn constant_and_device_arrays_are_found_by_name() {
        let src = "#define VERTICES 600\n__constant__ float2 d_vertices[VERTICES];\n\
                   __device__ int counter;\n__constant float lut[4];\n\
                   __global__ void k(float2 *d_vertices_copy) {}\n";
        assert!(declares_variable(src, "d_vertices"));
        assert!(declares_variable(src, "counter"));
        assert!(declares_variable(src, "lut"));
        // A longer name holding it, a kernel parameter, or nothing at all is not one.
        assert!(!declares_variable(src, "d_vert"));
        assert!(!declares_variable(src, "d_vertices_copy"));
        assert!(!declares_variable(src, "points"));
        assert!(!declares_variable(src, ""));
    }
}
