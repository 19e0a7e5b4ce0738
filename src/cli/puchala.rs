//! The puchala2022 commands: the `puchala` arm of `predict`, `simulate` (one core package),
//! `reproduce puchala2022` (the paper's grid) and `explain dwt-matrix|dwt-lattice`.
//!
//! This file turns flags into validated model inputs, decides where `t_p`/`t_m` come from
//! (flag, else the device profile's entry for a built-in kernel, else an error naming the
//! flag) and formats the output. The model itself lives in `kerneltime::model::puchala`.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

use clap::Args;

use super::charts::puchala as puchala_plot;
use super::predict::PredictArgs;
use super::print_json;
use super::units::time_us;
use kerneltime::device::{catalogue, Device};
use kerneltime::error::{write_atomic, Error, Result};
use kerneltime::fit::calibrate::CalibrationFile;
use kerneltime::model::puchala::kernels::{dwt_lattice_complexity, dwt_matrix_complexity};
use kerneltime::model::puchala::paper::{device_grid, GridPoint, PAPER_DEVICES};
use kerneltime::model::puchala::{
    timeline_capped, Builtin, CoreProgram, KernelSpec, PuchalaInputs,
};
use kerneltime::model::{ModelId, Prediction};
use kerneltime::workload::params::{ParamSpace, ParamValues};
use kerneltime::workload::program::ProgramFile;
use kerneltime::{Kernel, Options};

/// `predict --model puchala`.
pub fn run_predict(args: &PredictArgs, calibration: Option<CalibrationFile>) -> Result<()> {
    let device = args.device.resolve()?;
    let kernel = match (&args.kernel, &args.program) {
        (Some(name), _) => Builtin::parse(name)?.spec(),
        (None, Some(path)) => {
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "program".into());
            KernelSpec::from_file(ProgramFile::load(path)?, &stem)
        }
        (None, None) => {
            return Err(Error::missing(
                "--kernel",
                "give a built-in kernel (--kernel dwt-matrix, dwt-lattice or mtx-mul-vec) or a program file (--program FILE.toml)",
            ))
        }
    };
    let space = ParamSpace::parse_all(&args.params, "--param")?;
    let calibrated = calibration.is_some();
    if calibrated && space.is_sweep() {
        return Err(Error::invalid(
            "--param",
            "give one value per parameter with --calibration",
        ));
    }
    let launch = match (args.blocks, args.threads_per_block) {
        (Some(b), Some(t)) => Some((b, t)),
        _ => None,
    };
    let options = Options {
        calibration,
        calibration_kernel: Some(kernel.name.clone()),
        ..Options::default()
    };
    let predict_at = |params: ParamValues| {
        let point = Kernel::Program(PuchalaInputs {
            kernel: kernel.clone(),
            params,
            launch,
            t_p_us: args.t_p_us,
            t_m_cycles: args.t_m_cycles,
            profile: kernel.builtin.map(|b| b.name().to_string()),
            trace_costs: None,
        });
        kerneltime::predict(&point, &device, ModelId::Puchala, &options)
    };
    if !space.is_sweep() {
        let params = space.iter_points().next().unwrap_or_default();
        let p = predict_at(params)?;
        if calibrated {
            return super::predict::print_calibrated(&p, args.json);
        }
        if args.json {
            return print_json(&p);
        }
        print!("{}", prediction_text(&p));
        return Ok(());
    }
    // A space streams: each point is printed as soon as it is predicted, so memory does not grow
    // with the number of points (the JSON is still one array, written element by element).
    let max_points = args.max_points;
    if space.len() as u64 > max_points {
        return Err(Error::invalid(
            "--param",
            format!(
                "the parameter space has {} points, more than --max-points {max_points}",
                space.len()
            ),
        ));
    }
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    let io = |e: std::io::Error| Error::io("cannot write the predictions", e);
    if args.json {
        w.write_all(b"[").map_err(io)?;
    } else {
        w.write_all(sweep_header().as_bytes()).map_err(io)?;
    }
    let bar = crate::cli::progress::Bar::stderr();
    kerneltime::progress::Progress::start(&bar, "points", space.len() as u64);
    for (i, params) in space.iter_points().enumerate() {
        let p = predict_at(params)?;
        kerneltime::progress::Progress::advance(&bar, 1);
        if args.json {
            let text = serde_json::to_string(&p)
                .map_err(|e| Error::invalid("json", format!("cannot serialize output: {e}")))?;
            let sep = if i == 0 { "\n  " } else { ",\n  " };
            w.write_all(sep.as_bytes()).map_err(io)?;
            w.write_all(text.as_bytes()).map_err(io)?;
        } else {
            w.write_all(sweep_row(&p).as_bytes()).map_err(io)?;
        }
    }
    kerneltime::progress::Progress::finish(&bar);
    if args.json {
        w.write_all(b"\n]\n").map_err(io)?;
    }
    w.flush().map_err(io)
}

fn params_text(p: &Prediction) -> String {
    p.params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The text of one prediction with its breakdown.
fn prediction_text(p: &Prediction) -> String {
    let mut s = String::new();
    let get = |p: &Prediction, k: &str| -> String {
        match p.breakdown.get(k) {
            Some(serde_json::Value::Number(n)) if n.is_f64() => {
                format!("{}", (n.as_f64().unwrap_or(0.0) * 1000.0).round() / 1000.0)
            }
            Some(serde_json::Value::String(v)) => v.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        }
    };
    let num = |p: &Prediction, k: &str| -> f64 {
        p.breakdown
            .get(k)
            .and_then(|v| v.as_f64())
            .unwrap_or(f64::NAN)
    };
    let l = p.launch.unwrap_or(kerneltime::workload::Launch {
        blocks: 0,
        threads_per_block: 0,
        launches: 0,
    });
    let _ = writeln!(
        s,
        "model puchala on {}: {} {}",
        p.device,
        get(p, "kernel"),
        params_text(p)
    );
    let _ = writeln!(s, "  time          {}", time_us(p.time_us));
    let _ = writeln!(
        s,
        "  launch        {} x ({} blocks x {} threads){}",
        l.launches,
        l.blocks,
        l.threads_per_block,
        if p.breakdown.get("launch_from_heuristic") == Some(&serde_json::Value::Bool(true)) {
            " from Algorithm 3"
        } else {
            ""
        }
    );
    let _ = writeln!(
        s,
        "  per launch    t_p {} + {} cycles at {} MHz = {}",
        time_us(num(p, "launch_time_us")),
        get(p, "cycles_per_launch"),
        get(p, "core_clock_mhz"),
        time_us(num(p, "time_per_launch_us"))
    );
    let _ = writeln!(
        s,
        "  per SM        {} blocks, {} active; {} full runs x {} cycles ({} warps per core package), {} remaining run ({} cycles, {} warps per core package)",
        get(p, "blocks_per_sm"),
        get(p, "active_blocks_per_sm"),
        get(p, "full_runs"),
        get(p, "cycles_per_full_run"),
        get(p, "warps_per_core_package"),
        get(p, "remaining_runs"),
        get(p, "cycles_remaining_run"),
        get(p, "warps_per_core_package_remaining_run"),
    );
    for n in &p.notes {
        let _ = writeln!(s, "  note          {n}");
    }
    s
}

/// The header line of a streamed sweep table.
fn sweep_header() -> String {
    format!(
        "{:<28} {:>14} {:>9} {:>8} {:>9}\n",
        "params", "time", "blocks", "threads", "launches"
    )
}

/// One row of a streamed sweep table.
fn sweep_row(p: &Prediction) -> String {
    let (b, t, l) = p
        .launch
        .map(|l| (l.blocks, l.threads_per_block, l.launches))
        .unwrap_or_default();
    format!(
        "{:<28} {:>14} {:>9} {:>8} {:>9}\n",
        params_text(p),
        time_us(p.time_us),
        b,
        t,
        l
    )
}

/// `kerneltime simulate`: Algorithm 2 for one core package.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// A kernel program file (TOML: ops of calc/load/store with cycles).
    #[arg(long, value_name = "FILE.toml")]
    pub program: PathBuf,
    /// Warps on the core package (n_w).
    #[arg(long)]
    pub warps: u32,
    /// Cycles the core package is busy issuing one memory instruction.
    #[arg(long = "t-m", value_name = "CYCLES")]
    pub t_m_cycles: f64,
    /// A kernel parameter used by repeat counts: NAME=VALUE (repeatable).
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Draw the per-warp execution profile (calc, issue, in flight, idle) to this SVG file.
    #[arg(long, value_name = "OUT.svg")]
    pub timeline: Option<PathBuf>,
    /// One JSON object on stdout: the cycles T_c with the warps, t_m and the instruction count.
    #[arg(long)]
    pub json: bool,
}

pub fn run_simulate(args: &SimulateArgs) -> Result<()> {
    let file = ProgramFile::load(&args.program)?;
    let params = single_point(&args.params)?;
    let instrs = file.program.expand(&params)?;
    kerneltime::error::non_negative("--t-m", args.t_m_cycles)?;
    let cycles = CoreProgram::new(&instrs, args.t_m_cycles)?.cycles(u64::from(args.warps));
    if let Some(path) = &args.timeline {
        // The cap is applied while recording, so a huge program fails fast in bounded memory.
        let tl = timeline_capped(
            &instrs,
            args.warps,
            args.t_m_cycles,
            puchala_plot::MAX_TIMELINE_SEGMENTS,
        )
        .map_err(|e| Error::invalid("--timeline", format!("too many segments to draw: {e}")))?;
        let title = format!(
            "{}: {} warps, t_m = {} cycles, T_c = {} cycles",
            args.program.display(),
            args.warps,
            args.t_m_cycles,
            tl.cycles
        );
        let svg = puchala_plot::timeline_svg(&tl, &title)?;
        write_atomic(path, svg.as_bytes())?;
    }
    if args.json {
        print_json(&serde_json::json!({
            "cycles": cycles,
            "warps": args.warps,
            "t_m_cycles": args.t_m_cycles,
            "instructions": instrs.len(),
        }))
    } else {
        println!(
            "T_c = {cycles} cycles ({} warps, t_m {} cycles, {} instructions per warp)",
            args.warps,
            args.t_m_cycles,
            instrs.len()
        );
        Ok(())
    }
}

/// Parameters that must each have one value.
fn single_point(args: &[String]) -> Result<ParamValues> {
    let space = ParamSpace::parse_all(args, "--param")?;
    if space.is_sweep() {
        return Err(Error::invalid(
            "--param",
            "this command takes one value per parameter, not a list or range",
        ));
    }
    Ok(space.points().into_iter().next().unwrap_or_default())
}

/// `kerneltime reproduce PAPER`.
#[derive(Debug, Args)]
pub struct ReproduceArgs {
    /// The paper to reproduce: puchala2022.
    pub paper: String,
    /// Directory for the CSV and SVG files.
    #[arg(long, value_name = "DIR", default_value = "reproduce-puchala2022")]
    pub out: PathBuf,
    /// Extra device profile files (used when the catalogue lacks a paper profile of that name).
    #[arg(long = "device-file", value_name = "FILE.toml")]
    pub device_files: Vec<PathBuf>,
    /// One JSON object on stdout: the grid's points, skipped devices and files written.
    #[arg(long)]
    pub json: bool,
}

pub fn run_reproduce(args: &ReproduceArgs) -> Result<()> {
    if kerneltime::device::normalize(&args.paper) != "puchala2022" {
        return Err(Error::invalid(
            "PAPER",
            format!("unknown paper `{}`; known: puchala2022", args.paper),
        ));
    }
    let extra: Vec<Device> = args
        .device_files
        .iter()
        .map(|p| Device::load(p))
        .collect::<Result<_>>()?;
    let mut grids: Vec<(String, Vec<GridPoint>)> = Vec::new();
    let mut skipped = Vec::new();
    for name in PAPER_DEVICES {
        let device = match extra.iter().find(|d| d.answers_to(name)) {
            Some(d) => d.clone(),
            None => match catalogue::find(name) {
                Ok(d) => d.clone(),
                Err(_) => {
                    skipped.push(name);
                    continue;
                }
            },
        };
        grids.push((device.name.clone(), device_grid(&device)?));
    }
    if grids.is_empty() {
        return Err(Error::missing(
            "device profiles",
            "none of the paper's six (puchala2022) device profiles is in the catalogue; give them with --device-file",
        ));
    }
    let mut csv = String::from(
        "device,k,n,matrix_time_us,lattice_time_us,ratio,matrix_blocks,matrix_threads_per_block,lattice_blocks,lattice_threads_per_block,lattice_launches\n",
    );
    for (_, points) in &grids {
        for p in points {
            let (ml, ll) = (p.matrix.launch, p.lattice.launch);
            let _ = writeln!(
                csv,
                "\"{}\",{},{},{},{},{},{},{},{},{},{}",
                p.device,
                p.k,
                p.n,
                p.matrix.time_us,
                p.lattice.time_us,
                p.ratio,
                ml.map_or(0, |l| l.blocks),
                ml.map_or(0, |l| l.threads_per_block),
                ll.map_or(0, |l| l.blocks),
                ll.map_or(0, |l| l.threads_per_block),
                ll.map_or(0, |l| l.launches),
            );
        }
    }
    let csv_path = args.out.join("puchala2022_ratios.csv");
    kerneltime::error::create_output_dir(&args.out)?;
    write_atomic(&csv_path, csv.as_bytes())?;
    let mut files = vec![csv_path];
    for (name, points) in &grids {
        let svg = puchala_plot::ratio_svg(name, points)?;
        let path = args
            .out
            .join(format!("puchala2022_ratio_{}.svg", slug(name)));
        write_atomic(&path, svg.as_bytes())?;
        files.push(path);
    }
    if args.json {
        let all: Vec<&GridPoint> = grids.iter().flat_map(|(_, p)| p.iter()).collect();
        print_json(&serde_json::json!({
            "points": all,
            "skipped_devices": skipped,
            "files": files,
        }))?;
    } else {
        print!("{}", ratio_table(&grids));
        for name in &skipped {
            println!("note: skipped `{name}`: not in the catalogue (give it with --device-file)");
        }
        for f in &files {
            println!("wrote {}", f.display());
        }
    }
    Ok(())
}

fn slug(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    s.trim_matches('-').to_string()
}

/// One block per GPU: rows N, columns K, cells the matrix/lattice ratio.
fn ratio_table(grids: &[(String, Vec<GridPoint>)]) -> String {
    let mut s = String::new();
    for (name, points) in grids {
        let mut ks: Vec<u32> = points.iter().map(|p| p.k).collect();
        ks.sort_unstable();
        ks.dedup();
        let mut ns: Vec<u64> = points.iter().map(|p| p.n).collect();
        ns.sort_unstable();
        ns.dedup();
        let _ = writeln!(s, "{name}: modelled T_matrix / T_lattice");
        let _ = write!(s, "{:>10}", "N");
        for k in &ks {
            let _ = write!(s, " {:>9}", format!("K={k}"));
        }
        s.push('\n');
        for n in &ns {
            let _ = write!(s, "{:>10}", format!("2^{}", n.trailing_zeros()));
            for k in &ks {
                let r = points
                    .iter()
                    .find(|p| p.n == *n && p.k == *k)
                    .map_or(f64::NAN, |p| p.ratio);
                let _ = write!(s, " {r:>9.3}");
            }
            s.push('\n');
        }
        s.push('\n');
    }
    s
}

/// `kerneltime explain TOPIC`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// What to explain: dwt-matrix or dwt-lattice.
    pub topic: String,
    /// Values for the formulas: n=SIZE, k=FILTER_LENGTH (lists and ranges allowed).
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// One JSON object on stdout: the explanation and the values per point.
    #[arg(long)]
    pub json: bool,
}

pub fn run_explain(args: &ExplainArgs) -> Result<()> {
    let kernel = Builtin::parse(&args.topic)
        .ok()
        .filter(|b| *b != Builtin::MtxMulVec)
        .ok_or_else(|| {
            Error::invalid(
                "TOPIC",
                format!(
                    "nothing to explain for `{}`; topics: dwt-matrix, dwt-lattice",
                    args.topic
                ),
            )
        })?;
    let space = ParamSpace::parse_all(&args.params, "--param")?;
    let text = explain_text(kernel);
    let mut values = Vec::new();
    if !args.params.is_empty() {
        for p in space.points() {
            let n = p.get("n").ok_or_else(|| {
                Error::missing("--param n", "give the transform size, e.g. --param n=1024")
            })?;
            let k = p.get("k").ok_or_else(|| {
                Error::missing("--param k", "give the filter length, e.g. --param k=8")
            })?;
            kerneltime::error::positive("--param n", n)?;
            kerneltime::error::positive("--param k", k)?;
            let c = match kernel {
                Builtin::DwtMatrix => dwt_matrix_complexity(n, k),
                _ => dwt_lattice_complexity(n, k),
            };
            values.push((n, k, c));
        }
    }
    if args.json {
        let rows: Vec<_> = values
            .iter()
            .map(|(n, k, c)| serde_json::json!({"n": n, "k": k, "complexity": c}))
            .collect();
        return print_json(
            &serde_json::json!({"topic": kernel.name(), "explanation": text, "values": rows}),
        );
    }
    print!("{text}");
    if !values.is_empty() {
        println!(
            "\n{:>10} {:>6} {:>16} {:>9} {:>18} {:>9}",
            "n", "k", "operations 1D", "steps 1D", "operations 2D", "steps 2D"
        );
        for (n, k, c) in values {
            println!(
                "{n:>10} {k:>6} {:>16} {:>9} {:>18} {:>9}",
                c.operations_1d, c.steps_1d, c.operations_2d, c.steps_2d
            );
        }
    }
    Ok(())
}

fn explain_text(kernel: Builtin) -> String {
    let common = "\
Two-dimensional case: an n x n image is transformed row by row and then column by column. Each
pass is one 1D transform over the flattened image, every row (or column) padded with k - 2
cyclic repeats, so over n (n + k - 2) values; two passes double both counts:
  operations_2D(n, k) = 2 * operations_1D(n (n + k - 2), k)      (eq 8, 9)
  steps_2D(k)         = 2 * steps_1D(k)                          (eq 10, 11)
Operations count additions and multiplications together; steps are the sequential steps with
unlimited processors.
";
    match kernel {
        Builtin::DwtMatrix => format!(
            "\
dwt-matrix: the DWT as a product of the n x n transform matrix with the input vector. Every
output coefficient is a dot product of k filter taps with k inputs: k multiplications and
k - 1 additions.
  operations_1D(n, k) = n (2k - 1)                                (eq 4)
  steps_1D(k)         = 2k - 1                                    (eq 6)
On the GPU (Listing 7, eq 17): one launch of n threads, each running
calc 33, then k times (load 120, load 160, calc 17), then store 100.
{common}"
        ),
        _ => format!(
            "\
dwt-lattice: the DWT through a lattice of k/2 + 1 stages of butterflies; each butterfly
combines two values with two multiplications and two additions.
  operations_1D(n, k) = n (k + 1)                                 (eq 5)
  steps_1D(k)         = 2k + 2                                    (eq 7)
It needs about half the operations of the matrix method for the same number of steps.
On the GPU (Listing 9, eq 18): k/2 + 1 launches of n/2 threads, each running
calc 30, load 10, load 10, load 120, load 120, calc 18, store 100, store 100.
{common}"
        ),
    }
}
