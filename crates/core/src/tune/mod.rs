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
}

/// The verdict on one configuration on one device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
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
    pub wall_seconds: f64,
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
    archs: Vec<ComputeCapability>,
    links: Vec<Option<HostLink>>,
    /// The data hints the emulator reads, parameters by position.
    data: Vec<BufferHint>,
    compiled: AtomicU64,
    hits: AtomicU64,
    notes: Mutex<BTreeSet<String>>,
    /// Per device: the shortest and longest host-link transfer, microseconds.
    link_range: Mutex<Vec<(f64, f64)>>,
    missing_resources: AtomicU64,
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
    let links: Vec<Option<HostLink>> = req
        .devices
        .iter()
        .map(|d| (!launcher.mapped_host.is_empty()).then(|| host_link(d, req.host_link_gbs)))
        .collect();
    let (data_hints, data, hint_notes) = load_hints(spec, &launcher, &req.overrides.data)?;
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
        notes: Mutex::new(BTreeSet::new()),
        link_range: Mutex::new(vec![(f64::INFINITY, 0.0); req.devices.len()]),
        missing_resources: AtomicU64::new(0),
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
            wall_seconds: started.elapsed().as_secs_f64(),
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
/// take as parameters).
fn load_hints(
    spec: &TuneSpec,
    launcher: &Launcher,
    given: &[DataArg],
) -> Result<(Vec<DataArg>, Vec<BufferHint>, Vec<String>)> {
    let spec_dir = Path::new(&spec.origin).parent();
    let kernel = &spec.kernel.name;
    let mut out: Vec<(usize, DataArg, BufferHint)> = Vec::new();
    let mut notes = Vec::new();
    let from_spec = spec::spec_data_hints(spec)
        .into_iter()
        .map(|h| (h, spec_dir, true));
    for (h, base, is_fill) in from_spec.chain(given.iter().map(|h| (h.clone(), None, false))) {
        let p = match launcher.find_param(&h.param, "data", kernel) {
            Ok(p) => p,
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
        out.retain(|(k, _, _)| *k != p.position);
        let loaded = BufferHint {
            param: p.position.to_string(),
            hint,
        };
        out.push((p.position, h, loaded));
    }
    let (written, loaded) = out.into_iter().map(|(_, h, b)| (h, b)).unzip();
    Ok((written, loaded, notes))
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

/// The kernel's PTX entry: its own name, else the one C++ name it mangles to
/// (`_Z<length><name>...`, a free function in the global namespace).
pub fn find_entry_name(module: &Module, name: &str) -> std::result::Result<String, String> {
    let entries: Vec<&str> = module.entries().map(|f| f.name.as_str()).collect();
    if entries.contains(&name) {
        return Ok(name.to_string());
    }
    let mangled = format!("_Z{}{name}", name.len());
    let found: Vec<&&str> = entries.iter().filter(|e| e.starts_with(&mangled)).collect();
    match found.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err(format!(
            "no kernel `{name}` in the compiled PTX; its kernels: {}",
            if entries.is_empty() {
                "none".to_string()
            } else {
                entries.join(", ")
            }
        )),
        many => Err(format!(
            "kernel `{name}` is overloaded in the compiled PTX ({}); name one",
            many.iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

impl Context<'_> {
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
        for &arch in &self.archs {
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
                arch,
            };
            let (outcome, hit) = self.cache.get_or_compile(&self.compiler, &job)?;
            if hit {
                self.hits.fetch_add(1, Ordering::Relaxed);
            } else {
                self.compiled.fetch_add(1, Ordering::Relaxed);
            }
            let (ptx, log) = match outcome {
                Outcome::Compiled { ptx, log } => (ptx, log),
                Outcome::Failed { reason, .. } => {
                    for d in wanted {
                        rows[d] = Some(self.row(c, d, Status::CompileError, reason.clone()));
                    }
                    continue;
                }
            };
            let launch = LaunchDims {
                grid: plan.grid.map(|g| g as u32),
                block: plan.block.map(|b| b as u32),
            };
            for (d, row) in self.predict_arch(c, &wanted, &ptx, &log, launch, &plan.args)? {
                rows[d] = Some(row);
            }
        }
        Ok(rows
            .into_iter()
            .enumerate()
            .map(|(d, r)| r.unwrap_or_else(|| self.row(c, d, Status::ModelError, "not predicted")))
            .collect())
    }

    /// Predicts one compiled configuration on the devices `wanted` (all of one architecture).
    fn predict_arch(
        &self,
        c: usize,
        wanted: &[usize],
        ptx: &str,
        log: &str,
        launch: LaunchDims,
        args: &[String],
    ) -> Result<Vec<(usize, Row)>> {
        let spec = &self.req.spec;
        let (module, diags) = crate::ptx::parse_bytes(ptx.as_bytes());
        let entry = find_entry_name(&module, &spec.kernel.name).map_err(|m| {
            Error::file(
                spec.origin.as_str(),
                format!("KernelSpecification.KernelName: {m}"),
            )
        })?;
        let all_failed = |status: Status, why: &str| -> Vec<(usize, Row)> {
            wanted
                .iter()
                .map(|&d| (d, self.row(c, d, status, why)))
                .collect()
        };
        if let Some(why) = crate::emulate::entry_diagnostic(&module, &diags, &entry) {
            return Ok(all_failed(Status::ModelError, &why));
        }
        let mut resources: Option<KernelResources> =
            parse_report(log).into_iter().find(|r| r.name == entry);
        if resources.is_none() {
            self.missing_resources.fetch_add(1, Ordering::Relaxed);
        }
        let dynamic_shared = spec.kernel.shared_memory_bytes;
        if let Some(r) = resources.as_mut() {
            if dynamic_shared > 0 {
                r.shared_bytes = Some(r.shared_bytes.unwrap_or(0) + dynamic_shared);
            }
        }
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
                return Ok(all_failed(Status::CannotLaunch, &message))
            }
            Err(e) => return Ok(all_failed(Status::ModelError, &e.to_string())),
        };
        let em = std::sync::Arc::new(em);
        let positions: Vec<usize> = self
            .launcher
            .mapped_host
            .iter()
            .map(|p| p.position)
            .collect();
        let traffic = mapped_traffic(&em, &positions);
        let mut out = Vec::new();
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
                        out.push((
                            d,
                            self.row(
                                c,
                                d,
                                Status::CannotLaunch,
                                format!(
                                    "no block fits on an SM of {}: {} registers per thread x {threads} threads, {} bytes of shared memory (limited by {:?})",
                                    device.name,
                                    block.registers_per_thread,
                                    block.shared_memory_per_block_bytes,
                                    o.limited_by
                                ),
                            ),
                        ));
                        continue;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        out.push((d, self.row(c, d, Status::CannotLaunch, e.to_string())));
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
                    if let Some(link) = &self.links[d] {
                        let link_us = traffic.time_us(link);
                        time_us = LinkedTime::new(time_us, link_us).headline_us();
                        if let Ok(mut r) = self.link_range.lock() {
                            r[d].0 = r[d].0.min(link_us);
                            r[d].1 = r[d].1.max(link_us);
                        }
                    }
                    if let Ok(mut notes) = self.notes.lock() {
                        for n in report.notes.iter().filter(|n| !n.starts_with("emulated ")) {
                            if notes.len() < MAX_MODEL_NOTES {
                                notes.insert(without_line(n).to_string());
                            }
                        }
                    }
                    if time_us.is_finite() && time_us > 0.0 {
                        out.push((
                            d,
                            Row {
                                config: c,
                                device: d,
                                status: Status::Ok,
                                predicted_us: Some(time_us),
                                rank: None,
                                reason: String::new(),
                            },
                        ));
                    } else {
                        out.push((
                            d,
                            self.row(
                                c,
                                d,
                                Status::ModelError,
                                format!("the model predicted {time_us} us"),
                            ),
                        ));
                    }
                }
                Err(e @ Error::MissingInput { .. }) => return Err(e),
                Err(Error::Infeasible(m)) => out.push((d, self.row(c, d, Status::CannotLaunch, m))),
                Err(e) => out.push((d, self.row(c, d, Status::ModelError, e.to_string()))),
            }
        }
        Ok(out)
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
}
