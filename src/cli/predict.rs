//! `kerneltime predict`: one model, one device, one or many points.
//!
//! The flags of every model are declared here once; each model's arm checks that it got the
//! flags it needs and hands validated inputs to the library.

use std::path::PathBuf;

use clap::Args;

use super::DeviceSelection;
use kerneltime::error::{Error, Result};

/// The models `predict --model` accepts.
pub const MODELS: &[&str] = &[
    "roofline", "mwp-cwp", "hong-kim", "wu", "puchala", "lslag", "trace", "all",
];

#[derive(Debug, Args)]
pub struct PredictArgs {
    /// The model: see `kerneltime predict --help` for the list.
    #[arg(long)]
    pub model: String,
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
    /// A ptxas -v / NVRTC / cuobjdump -res-usage report.
    #[arg(long, value_name = "LOG")]
    pub resources: Option<PathBuf>,

    /// A calibration file from `kerneltime calibrate`.
    #[arg(long, value_name = "CAL.toml")]
    pub calibration: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &PredictArgs) -> Result<()> {
    let model = args.model.as_str();
    if let Some(cal) = &args.calibration {
        return super::evaluate::run_predict_calibrated(args, cal);
    }
    if super::ptx_predict::wants_ptx(model, args) {
        return super::ptx_predict::run(model, args);
    }
    match model {
        "roofline" => run_roofline(args),
        "mwp-cwp" | "hong-kim" | "wu" => super::analytical::run_predict(model, args),
        "puchala" => super::puchala::run_predict(args),
        "lslag" => super::lslag::run_predict(args),
        _ => Err(Error::invalid(
            "--model",
            format!(
                "unknown model `{model}`; known models: {}",
                MODELS.join(", ")
            ),
        )),
    }
}

/// `--model roofline`: flops and DRAM bytes from `--inputs FILE.toml`.
fn run_roofline(args: &PredictArgs) -> Result<()> {
    use kerneltime::model::roofline::{predict, RooflineInputs};
    let device = args.device.resolve()?;
    let path = args.inputs.as_ref().ok_or_else(|| {
        Error::missing(
            "--inputs",
            "the roofline model needs --inputs FILE.toml with `flops` and `dram_bytes` (optional `launch_overhead_us`)",
        )
    })?;
    let text = super::read_text(path)?;
    let inputs = RooflineInputs::from_toml(&text, &path.display().to_string())?;
    let p = predict(&device, &inputs)?;
    if args.json {
        return super::print_json(&p);
    }
    let b = &p.breakdown;
    let num = |k: &str| b.get(k).and_then(|v| v.as_f64()).unwrap_or(f64::NAN);
    println!("{} on {}: {:.3} us", p.model, p.device, p.time_us);
    println!("  compute      {:.3} us", num("compute_us"));
    println!("  memory       {:.3} us", num("memory_us"));
    println!("  launch       {:.3} us", num("launch_us"));
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
