//! `kerneltime predict`: one model, one device, one or many points.
//!
//! The flags of every model are declared here once; each model's arm checks that it got the
//! flags it needs and hands validated inputs to the library.

use std::path::PathBuf;

use clap::Args;

use super::units::time_us;
use super::DeviceSelection;
use kerneltime::error::{Error, Result};
use kerneltime::fit::calibrate::{Calibration, CalibrationFile};
use kerneltime::{Kernel, ModelId, Options, Prediction};

#[derive(Debug, Args)]
pub struct PredictArgs {
    /// The model, or `all` (every model that reads a PTX launch, with the band between them).
    /// Optional with `--ptx`: every model, headed by the recommended answer.
    #[arg(long, long_help = model_help())]
    pub model: Option<String>,
    #[command(flatten)]
    pub device: DeviceSelection,

    // --- kernel programs (puchala) ---
    /// A built-in kernel (dwt-matrix, dwt-lattice, mtx-mul-vec).
    #[arg(long, conflicts_with = "program")]
    pub kernel: Option<String>,
    /// A kernel program file (TOML: ops of calc/load/store with cycles).
    #[arg(long, value_name = "FILE.toml")]
    pub program: Option<PathBuf>,
    /// A kernel parameter: NAME=VALUE, NAME=V1,V2,... or NAME=2^A..2^B (repeatable).
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Refuse parameter spaces of more points than this (as `sweep` does); the points of a
    /// space are printed as they are predicted, so memory does not grow with their number.
    #[arg(long, value_name = "N", default_value_t = kerneltime::explore::space::DEFAULT_MAX_POINTS)]
    pub max_points: u64,
    /// Blocks per launch (with --threads-per-block; otherwise the launch heuristic decides).
    #[arg(long, requires = "threads_per_block")]
    pub blocks: Option<u64>,
    /// Threads per block (with --blocks).
    #[arg(long, requires = "blocks")]
    pub threads_per_block: Option<u32>,
    /// Launch preparation time t_p, microseconds.
    #[arg(long = "t-p", value_name = "US")]
    pub t_p_us: Option<f64>,
    /// Cycles a core package is busy issuing one memory instruction, t_m.
    #[arg(long = "t-m", value_name = "CYCLES")]
    pub t_m_cycles: Option<f64>,

    // --- analytical models (mwp-cwp, hong-kim, wu) ---
    /// An analytical inputs file (TOML, one field per paper parameter).
    #[arg(long, value_name = "FILE.toml")]
    pub inputs: Option<PathBuf>,
    /// Single-thread CPU time, microseconds: adds the estimated speedup (wu2019).
    #[arg(long, value_name = "US")]
    pub cpu_time_us: Option<f64>,

    // --- lslag ---
    /// A fitted LSLAG parameter file (TOML).
    #[arg(long = "params", value_name = "FILE.toml")]
    pub lslag_params: Option<PathBuf>,
    /// A built-in LSLAG platform (with --app).
    #[arg(long)]
    pub platform: Option<String>,
    /// A built-in LSLAG application (with --platform).
    #[arg(long)]
    pub app: Option<String>,
    /// Parallelism factor gamma.
    #[arg(long)]
    pub gamma: Option<f64>,
    /// Input size S.
    #[arg(long)]
    pub s: Option<f64>,

    // --- PTX (trace and every model from one kernel) ---
    /// A PTX file.
    #[arg(long, value_name = "FILE.ptx")]
    pub ptx: Option<PathBuf>,
    /// The kernel entry in the PTX file.
    #[arg(long)]
    pub entry: Option<String>,
    /// Grid dimensions X[,Y,Z].
    #[arg(long)]
    pub grid: Option<String>,
    /// Block dimensions X[,Y,Z].
    #[arg(long)]
    pub block: Option<String>,
    /// A scalar kernel argument NAME=VALUE (repeatable).
    #[arg(long = "arg", value_name = "NAME=VALUE")]
    pub args: Vec<String>,
    /// A CUDA (.cu) or OpenCL (.cl) kernel source, instead of --ptx: compiled for the device's
    /// architecture (CUDA through NVRTC loaded at run time, else nvcc; OpenCL through clang), with
    /// the registers, shared memory and spills of the compiler's report.
    #[arg(long, value_name = "FILE.cu", conflicts_with = "ptx")]
    pub source: Option<PathBuf>,
    /// A preprocessor define K=V (or K for K=1) for --source (repeatable).
    #[arg(long = "define", value_name = "K=V", requires = "source")]
    pub defines: Vec<String>,
    /// A compiler option for --source, passed as given, e.g. --compiler-option=-std=c++17
    /// (repeatable).
    #[arg(
        long = "compiler-option",
        value_name = "OPT",
        requires = "source",
        allow_hyphen_values = true
    )]
    pub compiler_options: Vec<String>,
    /// The CUDA compiler for --source: auto (NVRTC when found, else nvcc), nvrtc or nvcc.
    #[arg(long, default_value = "auto")]
    pub compiler: String,
    /// Keep compiled results of --source here (default: the user's cache folder,
    /// kerneltime/compile; the same entries as `tune`'s).
    #[arg(long, value_name = "DIR", conflicts_with = "no_compile_cache")]
    pub compile_cache: Option<PathBuf>,
    /// Compile --source afresh and keep nothing.
    #[arg(long)]
    pub no_compile_cache: bool,
    /// A ptxas -v / NVRTC / cuobjdump -res-usage report (without one, ptxas is run when it is
    /// on this machine; else 32 registers are assumed).
    #[arg(long, value_name = "LOG")]
    pub resources: Option<PathBuf>,
    /// What a pointer argument (or a module's `__constant__`/`__device__` array, by name)
    /// holds: NAME=SPEC with SPEC const:V, iota[:START[:STEP]], uniform:LO:HI[:SEED] or
    /// file:PATH (.txt/.csv: text numbers; else raw little-endian bytes); loads from it return
    /// those values (repeatable).
    #[arg(long = "data", value_name = "NAME=SPEC")]
    pub data: Vec<String>,
    /// Most instructions one warp may issue before the emulation stops with an error.
    #[arg(long, value_name = "N", default_value_t = kerneltime::emulate::DEFAULT_STEP_BUDGET)]
    pub step_budget: u64,
    /// Most warp instructions the whole launch may issue (all emulated warps together): bounds
    /// the emulation's time and memory.
    #[arg(long, value_name = "N", default_value_t = kerneltime::emulate::DEFAULT_LAUNCH_BUDGET)]
    pub launch_budget: u64,
    /// Dynamic shared memory per block (`.extern .shared`, the launch's third parameter),
    /// bytes, counted by occupancy.
    #[arg(long, value_name = "BYTES", default_value_t = 0)]
    pub dynamic_shared_bytes: u32,
    /// A pointer argument that is host memory mapped into the device (zero-copy), by name or
    /// position (repeatable): its bytes cross the host link while the kernel runs, so every
    /// model's time is at least that transfer (the link and the bytes in the notes).
    #[arg(long = "mapped-host", value_name = "NAME")]
    pub mapped_host: Vec<String>,

    /// A calibration file from `kerneltime calibrate`.
    #[arg(long, value_name = "CAL.toml")]
    pub calibration: Option<PathBuf>,
    /// One JSON object on stdout: the prediction (with --model all, every model's and the band); a
    /// --param list or range of puchala prints one JSON array, one object per point.
    #[arg(long)]
    pub json: bool,
}

/// The `--model` help: every model of the registry with what it is.
fn model_help() -> String {
    format!(
        "The model, or `all` (every model that reads a PTX launch, side by side with the band \
         between them and the recommended answer). With --ptx or --source and no --model: `all`. Models:\n{}",
        ModelId::help()
    )
}

pub fn run(args: &PredictArgs) -> Result<()> {
    let calibration = match &args.calibration {
        Some(path) => Some(load_calibration(path)?),
        None => None,
    };
    let model = match &args.model {
        Some(m) => m.trim(),
        None if args.ptx.is_some() || args.source.is_some() => "all",
        None => {
            return Err(Error::missing(
                "--model",
                format!(
                    "predict needs --model MODEL ({}), or --ptx / --source for every model with the recommended answer",
                    ModelId::names()
                ),
            ))
        }
    };
    if model == "all" {
        return super::ptx_predict::run(None, args, calibration);
    }
    let id: ModelId = model.parse().map_err(|_| {
        Error::invalid(
            "--model",
            format!(
                "unknown model `{model}`; known models: {}, all",
                ModelId::names()
            ),
        )
    })?;
    if let Some(cal) = &calibration {
        if cal.calibration.model != id {
            return Err(Error::invalid(
                "--calibration",
                format!(
                    "{} calibrates {}, not {id}",
                    cal.origin, cal.calibration.model
                ),
            ));
        }
    }
    if super::ptx_predict::wants_ptx(id, args) {
        return super::ptx_predict::run(Some(id), args, calibration);
    }
    // Models with a text layout of their own; every other model reads an inputs file and is
    // printed from its breakdown (so a new model of the registry needs nothing here).
    match id {
        ModelId::Roofline => run_roofline(args, calibration),
        ModelId::Puchala => super::puchala::run_predict(args, calibration),
        ModelId::Lslag => super::lslag::run_predict(args, calibration),
        _ => super::analytical::run_predict(id, args, calibration),
    }
}

/// The kernel a calibration's kernel-scope groups are looked up by: `--kernel`, or for trace the
/// PTX entry; none (device groups only) otherwise.
pub fn calibration_kernel(args: &PredictArgs, id: ModelId) -> String {
    args.kernel
        .clone()
        .or_else(|| (id == ModelId::Trace).then(|| args.entry.clone()).flatten())
        .unwrap_or_default()
}

/// Reads a calibration file for `--calibration`.
pub fn load_calibration(path: &std::path::Path) -> Result<CalibrationFile> {
    let origin = path.display().to_string();
    let calibration = Calibration::from_toml(&super::read_text(path)?, &origin)?;
    Ok(CalibrationFile {
        name: path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        origin,
        calibration,
    })
}

/// Prints a calibrated prediction: one line with the time, then its notes (or JSON).
pub fn print_calibrated(p: &Prediction, json: bool) -> Result<()> {
    if json {
        return super::print_json(p);
    }
    println!(
        "{} on {} (calibrated): {}",
        p.model,
        p.device,
        time_us(p.time_us)
    );
    for n in &p.notes {
        println!("  note: {n}");
    }
    Ok(())
}

/// `--model roofline`: flops and DRAM bytes from `--inputs FILE.toml`.
fn run_roofline(args: &PredictArgs, calibration: Option<CalibrationFile>) -> Result<()> {
    let device = args.device.resolve()?;
    let path = args.inputs.as_ref().ok_or_else(|| {
        Error::missing(
            "--inputs",
            "the roofline model needs --inputs FILE.toml with `flops` and `dram_bytes` (optional `launch_overhead_us`)",
        )
    })?;
    let text = super::read_text(path)?;
    let origin = path.display().to_string();
    let calibrated = calibration.is_some();
    let options = Options {
        calibration,
        calibration_kernel: Some(calibration_kernel(args, ModelId::Roofline)),
        ..Options::default()
    };
    let p = kerneltime::predict(
        &Kernel::InputsFile { text, origin },
        &device,
        ModelId::Roofline,
        &options,
    )?;
    if calibrated {
        return print_calibrated(&p, args.json);
    }
    if args.json {
        return super::print_json(&p);
    }
    let b = &p.breakdown;
    let num = |k: &str| b.get(k).and_then(|v| v.as_f64()).unwrap_or(f64::NAN);
    println!("{} on {}: {}", p.model, p.device, time_us(p.time_us));
    println!("  compute      {}", time_us(num("compute_us")));
    println!("  memory       {}", time_us(num("memory_us")));
    println!("  launch       {}", time_us(num("launch_us")));
    println!(
        "  bound        {}",
        b.get("bound").and_then(|v| v.as_str()).unwrap_or("?")
    );
    println!(
        "  intensity    {:.3} FLOP/B (ridge point {:.3} FLOP/B)",
        num("arithmetic_intensity_flop_per_byte"),
        num("ridge_point_flop_per_byte")
    );
    for n in &p.notes {
        println!("  note: {n}");
    }
    Ok(())
}
