//! `kerneltime._native`: the Rust half of the Python package `kerneltime` (PyO3).
//!
//! The surface is deliberately small: each function takes one JSON document describing the job
//! (built by the Python layer, `kerneltime/__init__.py`, from keyword arguments) and returns one
//! JSON document, which the Python layer turns into plain dicts and lists. A job runs the
//! library exactly as the command line does (`kerneltime::tune::tune` for `rank`,
//! `kerneltime::predict_models` for `predict`), so the package and `kerneltime tune` give the
//! same numbers. Every library error becomes a `kerneltime.KerneltimeError` carrying the
//! library's one-line message; the GIL is released while the library works.
//!
//! - `space(job)`: the configurations of a search space that meet its conditions (index in
//!   the full product and values), so that Python restrictions can filter them;
//! - `select(job)`: the configuration indices a job ranks (conditions, explicit indices,
//!   sampling), which `kerneltime.ray` splits into tasks;
//! - `rank(job)`: compile, refuse and predict every selected configuration on every device and
//!   rank them per device;
//! - `predict(job)`: one launch from PTX text, a CUDA/OpenCL source (compiled in-process) or a
//!   built-in kernel program.
//!
//! What it does NOT do: print, read Python objects beyond strings, or hold any state between
//! calls (the compile cache lives on disk).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use serde::Deserialize;
use serde_json::{json, Value as Json};

use kerneltime::compile::cache::{default_dir, CompileCache};
use kerneltime::compile::{Choice, CompileJob, Language};
use kerneltime::device::{catalogue, Device};
use kerneltime::emulate::DataArg;
use kerneltime::emulate::{KernelArg, LaunchDims};
use kerneltime::error::{Error, Result};
use kerneltime::model::puchala::{Builtin, PuchalaInputs};
use kerneltime::progress::Quiet;
use kerneltime::ptx::resources::{parse_report, KernelResources};
use kerneltime::tune::launch::{by_position, signature_params, Overrides};
use kerneltime::tune::space::{self as tune_space, Selection};
use kerneltime::tune::spec::TuneSpec;
use kerneltime::tune::{find_entry_name, tune, TuneRequest, DEFAULT_MODEL};
use kerneltime::workload::params::ParamValues;
use kerneltime::{Kernel, ModelId, Options, PtxLaunch};

pyo3::create_exception!(
    kerneltime,
    KerneltimeError,
    PyException,
    "An input kerneltime cannot use, or a failure while reading or compiling it; the message is one line naming what to fix."
);

fn py_err(e: Error) -> PyErr {
    KerneltimeError::new_err(e.to_string())
}

fn job_error(what: &str, e: serde_json::Error) -> Error {
    Error::invalid(what, format!("malformed job from the Python layer: {e}"))
}

/// Where compiled results are kept, as the Python layer says.
#[derive(Debug, Deserialize, Default)]
struct CacheChoice {
    /// `false`: compile everything afresh and keep nothing.
    #[serde(default = "yes")]
    use_compile_cache: bool,
    /// A folder; absent: the user's cache folder (`~/.cache/kerneltime/compile`).
    compile_cache_dir: Option<String>,
}

fn yes() -> bool {
    true
}

impl CacheChoice {
    fn dir(&self) -> Option<PathBuf> {
        if !self.use_compile_cache {
            return None;
        }
        self.compile_cache_dir
            .as_ref()
            .map(PathBuf::from)
            .or_else(default_dir)
    }
}

/// A ranking job: the spec (a FAIR file or its text), what completes it, the devices, and which
/// configurations.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RankJob {
    spec_path: Option<String>,
    spec_text: Option<String>,
    #[serde(default)]
    origin: Option<String>,
    #[serde(default)]
    devices: Vec<String>,
    #[serde(default)]
    device_files: Vec<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    problem_size: Option<Vec<i64>>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    defines: Vec<String>,
    #[serde(default)]
    data: Vec<String>,
    #[serde(default)]
    mapped_host: Vec<String>,
    /// Only these configurations (indices in the full product).
    #[serde(default)]
    indices: Option<Vec<u64>>,
    /// A seeded uniform sample of that many (of `indices` when given, else of the space).
    #[serde(default)]
    sample: Option<usize>,
    #[serde(default)]
    seed: u64,
    #[serde(default)]
    compiler: Option<String>,
    #[serde(flatten)]
    cache: CacheChoice,
    #[serde(default)]
    host_link_gbs: Option<f64>,
    /// The core clock (MHz) every device is timed at, instead of its description's.
    #[serde(default)]
    clock_mhz: Option<f64>,
}

impl RankJob {
    fn parse(text: &str) -> Result<RankJob> {
        serde_json::from_str(text).map_err(|e| job_error("rank", e))
    }

    fn spec(&self) -> Result<TuneSpec> {
        match (&self.spec_path, &self.spec_text) {
            (Some(p), None) => TuneSpec::load(Path::new(p)),
            (None, Some(t)) => TuneSpec::parse(t, self.origin.as_deref().unwrap_or("tune_params")),
            _ => Err(Error::missing(
                "spec",
                "give either a FAIR spec file or a kernel with tune_params",
            )),
        }
    }

    fn devices(&self) -> Result<Vec<Device>> {
        let mut out = Vec::new();
        for name in &self.devices {
            out.push(catalogue::find(name)?.clone());
        }
        for path in &self.device_files {
            out.push(Device::load(Path::new(path))?);
        }
        out.into_iter()
            .map(|d| d.at_core_clock(self.clock_mhz, "clock_mhz="))
            .collect()
    }

    /// The selection: the sample is drawn from the explicit indices when there are some, with
    /// the algorithm `kerneltime tune --sample` uses on the whole space.
    fn selection(&self) -> Result<Selection> {
        if self.sample == Some(0) {
            return Err(Error::invalid("sample", "must be at least 1"));
        }
        Ok(match (&self.indices, self.sample) {
            (None, None) => Selection::All,
            (None, Some(n)) => Selection::Sample { n, seed: self.seed },
            (Some(ix), None) => Selection::Indices(ix.clone()),
            (Some(ix), Some(n)) => {
                let mut sorted = ix.clone();
                sorted.sort_unstable();
                sorted.dedup();
                Selection::Indices(tune_space::select(
                    &sorted,
                    &Selection::Sample { n, seed: self.seed },
                )?)
            }
        })
    }

    fn overrides(&self) -> Result<Overrides> {
        Ok(Overrides {
            problem_size: self.problem_size.clone(),
            args: self.args.clone(),
            defines: self.defines.clone(),
            data: self
                .data
                .iter()
                .map(|d| DataArg::parse("data", d))
                .collect::<Result<_>>()?,
            mapped_host: self.mapped_host.clone(),
        })
    }
}

fn space_json(job: &str) -> Result<String> {
    let job = RankJob::parse(job)?;
    let spec = job.spec()?;
    let valid = tune_space::enumerate(&spec)?;
    let configurations: Vec<Json> = valid
        .iter()
        .map(|&i| {
            let c = tune_space::configuration(&spec, i);
            json!([i, c.values.iter().map(|v| v.to_json()).collect::<Vec<_>>()])
        })
        .collect();
    Ok(json!({"names": spec.names(), "configurations": configurations}).to_string())
}

fn select_json(job: &str) -> Result<String> {
    let job = RankJob::parse(job)?;
    let spec = job.spec()?;
    let valid = tune_space::enumerate(&spec)?;
    let picked = tune_space::select(&valid, &job.selection()?)?;
    Ok(json!(picked).to_string())
}

fn rank_json(job: &str) -> Result<String> {
    let job = RankJob::parse(job)?;
    let devices = job.devices()?;
    if devices.is_empty() {
        return Err(Error::missing(
            "device",
            "give a GPU by name (device=\"RTX 2080 Ti\") or a device file",
        ));
    }
    let req = TuneRequest {
        spec: job.spec()?,
        overrides: job.overrides()?,
        devices,
        selection: job.selection()?,
        model: job
            .model
            .clone()
            .unwrap_or_else(|| DEFAULT_MODEL.to_string()),
        compiler: Choice::parse(job.compiler.as_deref().unwrap_or("auto"))?,
        compile_cache: job.cache.dir(),
        host_link_gbs: job.host_link_gbs,
        prediction_cache: true,
    };
    let report = tune(&req, &Quiet)?;
    let rows: Vec<Json> = report
        .rows
        .iter()
        .map(|r| {
            let c = &report.configurations[r.config];
            json!({
                "index": c.index,
                "device": report.devices[r.device],
                "values": c.values.iter().map(|v| v.to_json()).collect::<Vec<_>>(),
                "status": r.status.name(),
                "predicted_us": r.predicted_us,
                "rank": r.rank,
                "reason": r.reason,
            })
        })
        .collect();
    Ok(json!({
        "kernel": report.kernel,
        "param_names": report.param_names,
        "devices": report.devices,
        "rows": rows,
        "stats": report.stats,
        "notes": report.notes,
    })
    .to_string())
}

/// A prediction job: one launch on one device.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PredictJob {
    device: Option<String>,
    device_file: Option<String>,
    #[serde(default)]
    model: Option<String>,
    /// PTX text.
    ptx: Option<String>,
    /// CUDA or OpenCL source text, compiled in-process.
    source: Option<String>,
    #[serde(default)]
    source_name: Option<String>,
    #[serde(default)]
    include_dir: Option<String>,
    #[serde(default)]
    language: Option<String>,
    kernel_name: Option<String>,
    grid: Option<Vec<u32>>,
    block: Option<Vec<u32>>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    defines: Vec<(String, String)>,
    #[serde(default)]
    compiler_options: Vec<String>,
    /// A ptxas -v / NVRTC / cuobjdump report.
    #[serde(default)]
    resources: Option<String>,
    #[serde(default)]
    dynamic_shared_bytes: u32,
    /// A built-in kernel program (dwt-matrix, dwt-lattice, mtx-mul-vec) and its parameters.
    builtin: Option<String>,
    #[serde(default)]
    params: BTreeMap<String, f64>,
    #[serde(default)]
    compiler: Option<String>,
    #[serde(flatten)]
    cache: CacheChoice,
    /// The core clock (MHz) the device is timed at, instead of its description's.
    #[serde(default)]
    clock_mhz: Option<f64>,
}

fn dims(v: &Option<Vec<u32>>, name: &str) -> Result<[u32; 3]> {
    let v = v.as_ref().ok_or_else(|| {
        Error::missing(
            name,
            format!("a PTX or source kernel needs its {name} dimensions, e.g. {name}=(256,)"),
        )
    })?;
    if v.is_empty() || v.len() > 3 || v.contains(&0) {
        return Err(Error::invalid(
            name,
            format!("give one to three dimensions of at least 1, got {v:?}"),
        ));
    }
    let mut out = [1u32; 3];
    out[..v.len()].copy_from_slice(v);
    Ok(out)
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Registers and spills of PTX text from ptxas when one is on this machine (as `predict --ptx`
/// does without `--resources`), through a temporary file.
fn ptxas_report(ptx: &str, entry: &str, device: &Device) -> Option<(KernelResources, String)> {
    let path = std::env::temp_dir().join(format!(
        "kerneltime-py-{}-{}.ptx",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&path, ptx).ok()?;
    let rep = kerneltime::compile::ptxas::ptxas_resources(&path, entry, device.compute_capability);
    let _ = std::fs::remove_file(&path);
    rep.map(|r| {
        let note = r.note();
        (r.resources, note)
    })
}

fn predict_json(job: &str) -> Result<String> {
    let job: PredictJob = serde_json::from_str(job).map_err(|e| job_error("predict", e))?;
    let device = match (&job.device, &job.device_file) {
        (Some(name), None) => catalogue::find(name)?.clone(),
        (None, Some(path)) => Device::load(Path::new(path))?,
        _ => {
            return Err(Error::missing(
                "device",
                "give one GPU by name (device=\"A100\") or device_file=",
            ))
        }
    };
    let device = device.at_core_clock(job.clock_mhz, "clock_mhz=")?;
    let model_name = job.model.as_deref().unwrap_or(if job.builtin.is_some() {
        "puchala"
    } else {
        DEFAULT_MODEL
    });
    if let Some(name) = &job.builtin {
        let id: ModelId = model_name.parse()?;
        let params = ParamValues::new(job.params.iter().map(|(k, v)| (k.clone(), *v)));
        let kernel = Kernel::Program(PuchalaInputs::builtin(Builtin::parse(name)?, params));
        let p = kerneltime::predict(&kernel, &device, id, &Options::default())?;
        return serde_json::to_string(&p).map_err(|e| job_error("prediction", e));
    }
    let models: Vec<ModelId> = if model_name == "all" {
        ModelId::from_ptx().collect()
    } else {
        vec![model_name.parse()?]
    };
    let kernel_name = job.kernel_name.clone().ok_or_else(|| {
        Error::missing(
            "kernel_name",
            "name the kernel to predict (its entry or source name)",
        )
    })?;
    let launch = LaunchDims {
        grid: dims(&job.grid, "grid")?,
        block: dims(&job.block, "block")?,
    };
    // A source's parameter names stand for their positions (PTX names them by position).
    let mut params: Vec<String> = Vec::new();
    let (ptx, compiled_resources, origin) = match (&job.ptx, &job.source) {
        (Some(ptx), None) => (ptx.clone(), None, None),
        (None, Some(source)) => {
            let language = match job
                .language
                .as_deref()
                .unwrap_or("cuda")
                .to_ascii_lowercase()
                .as_str()
            {
                "cuda" => Language::Cuda,
                "opencl" => Language::OpenCl,
                other => {
                    return Err(Error::invalid(
                        "lang",
                        format!("`{other}` is not supported; CUDA and OpenCL are"),
                    ))
                }
            };
            let cache = CompileCache::new(job.cache.dir());
            let include_dir = job.include_dir.as_ref().map(PathBuf::from);
            let cjob = CompileJob {
                source,
                file_name: job.source_name.as_deref().unwrap_or("kernel.cu"),
                include_dir: include_dir.as_deref(),
                language,
                defines: &job.defines,
                options: &job.compiler_options,
                arch: device.compute_capability,
            };
            let choice = Choice::parse(job.compiler.as_deref().unwrap_or("auto"))?;
            let c = kerneltime::api::compile_kernel(&cjob, choice, &cache, "source")?;
            params = signature_params(source, &kernel_name, language);
            (c.ptx, Some(c.resources), Some(c.origin))
        }
        _ => {
            return Err(Error::missing(
                "kernel",
                "give exactly one of ptx=, source= (CUDA/OpenCL) or builtin=",
            ))
        }
    };
    let (module, diags) = kerneltime::ptx::parse_bytes(ptx.as_bytes());
    let entry =
        find_entry_name(&module, &kernel_name).map_err(|m| Error::invalid("kernel_name", m))?;
    if let Some(d) = kerneltime::emulate::entry_diagnostic(&module, &diags, &entry) {
        return Err(Error::invalid("ptx", d));
    }
    let (resources, resources_origin) = if let Some(text) = &job.resources {
        let r = parse_report(text)
            .into_iter()
            .find(|r| r.name == entry)
            .ok_or_else(|| {
                Error::invalid(
                    "resources",
                    format!("the report has no entry for kernel `{entry}`"),
                )
            })?;
        (Some(r), None)
    } else if let Some(all) = compiled_resources {
        let r = all.into_iter().find(|r| r.name == entry);
        let o = r.as_ref().and(origin);
        (r, o)
    } else {
        match ptxas_report(&ptx, &entry, &device) {
            Some((r, note)) => (Some(r), Some(note)),
            None => (None, None),
        }
    };
    let kernel = Kernel::Ptx(PtxLaunch {
        module: Arc::new(module),
        entry,
        launch,
        args: KernelArg::parse_all(
            &job.args
                .iter()
                .map(|a| by_position(a, &params))
                .collect::<Vec<_>>(),
        )?,
        resources,
        data: Vec::new(),
    });
    let options = Options {
        dynamic_shared_bytes: job.dynamic_shared_bytes,
        resources_origin,
        ..Options::default()
    };
    let report = kerneltime::predict_models(&kernel, &device, &models, &options)?;
    let out = if models.len() == 1 {
        let mut p =
            serde_json::to_value(&report.predictions[0]).map_err(|e| job_error("prediction", e))?;
        if let Some(notes) = p.get_mut("notes").and_then(Json::as_array_mut) {
            for n in &report.notes {
                if !notes.iter().any(|m| m.as_str() == Some(n)) {
                    notes.push(json!(n));
                }
            }
        }
        p
    } else {
        serde_json::to_value(&report).map_err(|e| job_error("prediction", e))?
    };
    Ok(out.to_string())
}

/// The configurations of a search space that meet its conditions: JSON
/// `{"names": [...], "configurations": [[index, [values...]], ...]}`.
#[pyfunction]
fn space(py: Python<'_>, job: String) -> PyResult<String> {
    py.detach(|| space_json(&job)).map_err(py_err)
}

/// The configuration indices a job ranks, ascending: JSON list.
#[pyfunction]
fn select(py: Python<'_>, job: String) -> PyResult<String> {
    py.detach(|| select_json(&job)).map_err(py_err)
}

/// Ranks a job's configurations on its devices: JSON with `rows`, `stats` and `notes`.
#[pyfunction]
fn rank(py: Python<'_>, job: String) -> PyResult<String> {
    py.detach(|| rank_json(&job)).map_err(py_err)
}

/// Predicts one launch: JSON of the prediction (or of every model's, with `model="all"`).
#[pyfunction]
fn predict(py: Python<'_>, job: String) -> PyResult<String> {
    py.detach(|| predict_json(&job)).map_err(py_err)
}

/// The catalogue's GPU names.
#[pyfunction]
fn devices() -> Vec<String> {
    catalogue::all().iter().map(|d| d.name.clone()).collect()
}

/// The models that rank PTX kernels (`rank(model=...)`).
#[pyfunction]
fn ptx_models() -> String {
    ModelId::ptx_names().to_string()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("KerneltimeError", m.py().get_type::<KerneltimeError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(space, m)?)?;
    m.add_function(wrap_pyfunction!(select, m)?)?;
    m.add_function(wrap_pyfunction!(rank, m)?)?;
    m.add_function(wrap_pyfunction!(predict, m)?)?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_models, m)?)?;
    Ok(())
}
