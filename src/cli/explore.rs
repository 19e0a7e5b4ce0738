//! `kerneltime sweep`, `best` and `compare` on the command line: flags (or a `--space` TOML
//! file) become a `SpaceSpec`, the library resolves and runs it, and this file prints the
//! result and draws the charts (GPU ranking bars, ratio lines). Calibration files (issue 8) are
//! one more axis (`--calibration`), applied in the registry's `prepare`.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;
use plotters::prelude::*;
use serde::Serialize;

use super::print_json;
use kerneltime::error::{write_atomic, Error, Result};
use kerneltime::explore::best::{self, Constraint, Objective};
use kerneltime::explore::space::{resolve_devices, Fnv, GeneratedInput, DEFAULT_MAX_POINTS};
use kerneltime::explore::sweep::{self, Format, SweepOptions, DEFAULT_CHUNK_POINTS};
use kerneltime::explore::trace_cell::PtxKernelFile;
use kerneltime::explore::{Space, SpaceSpec};
use kerneltime::model::puchala::paper::GridPoint;

/// The space flags shared by `sweep`, `best` and `compare`.
#[derive(Debug, Clone, Args)]
pub struct SpaceArgs {
    /// A space file (TOML: models, kernels, inputs, devices, device_files, params, t_p_us,
    /// t_m_cycles, calibrations); flags given as well replace its entries.
    #[arg(long, value_name = "FILE.toml")]
    pub space: Option<PathBuf>,
    /// Models to run (repeat or comma-separate): roofline, wu, mwp-cwp, hong-kim, puchala, trace
    /// (trace alone when --ptx is given and no model is).
    #[arg(long = "model", value_name = "NAME")]
    pub models: Vec<String>,
    /// puchala kernels: built-in names (dwt-matrix, dwt-lattice, mtx-mul-vec) or program files.
    #[arg(long = "kernel", value_name = "NAME|FILE")]
    pub kernels: Vec<String>,
    /// Analytical inputs files (for wu, mwp-cwp, hong-kim); `MODEL=FILE` gives a file to one
    /// model only.
    #[arg(long = "inputs", value_name = "FILE.toml")]
    pub inputs: Vec<PathBuf>,
    /// GPUs: catalogue names (comma lists) or filters whose conditions must all hold, e.g.
    /// `compute_capability>=8.0,sm_count>=40` or `architecture=Ampere`. Repeatable.
    #[arg(long = "device", value_name = "NAME|FILTER")]
    pub devices: Vec<String>,
    /// Device description files. Repeatable.
    #[arg(long = "device-file", value_name = "FILE.toml")]
    pub device_files: Vec<PathBuf>,
    /// A swept parameter or launch dimension: NAME=V, NAME=V1,V2, NAME=A..B, NAME=A..B:STEP,
    /// NAME=2^A..2^B (e.g. threads_per_block=32..1024:32, blocks=..., n=2^6..2^20). Repeatable.
    #[arg(long = "param", value_name = "NAME=VALUES")]
    pub params: Vec<String>,
    /// puchala2022 launch time t_p, microseconds (else each device profile's value).
    #[arg(long = "t-p", value_name = "US")]
    pub t_p_us: Option<f64>,
    /// puchala2022 memory issue time t_m, cycles (else each device profile's value).
    #[arg(long = "t-m", value_name = "CYCLES")]
    pub t_m_cycles: Option<f64>,
    /// A calibration file from `kerneltime calibrate`, or `none` (uncalibrated): each one a value
    /// of the calibration axis, applied to the cells of the model it calibrates. Repeatable.
    #[arg(long = "calibration", value_name = "CAL.toml|none")]
    pub calibrations: Vec<String>,
    /// Refuse spaces of more points than this.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_POINTS)]
    pub max_points: u64,
    #[command(flatten)]
    pub ptx: PtxKernelArgs,
}

/// A PTX kernel for the trace model given by flags: the same fields as a PTX kernel file
/// (`--inputs trace=FILE.toml`, see `data/sweeps/trace/`), its expressions in the swept
/// parameters.
#[derive(Debug, Clone, Default, Args)]
pub struct PtxKernelArgs {
    /// PTX file of a kernel to sweep with the trace model.
    #[arg(long, value_name = "FILE.ptx")]
    pub ptx: Option<PathBuf>,
    /// Its entry (`.entry` name).
    #[arg(long, value_name = "NAME", requires = "ptx")]
    pub entry: Option<String>,
    /// Grid: 1-3 comma-separated expressions in the parameters, e.g. `(n + block_x - 1) / block_x`.
    #[arg(long, value_name = "X[,Y,Z]", requires = "ptx")]
    pub grid: Option<String>,
    /// Block: 1-3 comma-separated expressions, e.g. `block_x`.
    #[arg(long, value_name = "X[,Y,Z]", requires = "ptx")]
    pub block: Option<String>,
    /// A kernel argument by name or index: a number or an expression (`3=n`). Repeatable.
    #[arg(long = "arg", value_name = "NAME=EXPR", requires = "ptx")]
    pub args: Vec<String>,
    /// Registers per thread (else from --resources, else a default named in the notes).
    #[arg(long, value_name = "N", requires = "ptx")]
    pub registers: Option<u32>,
    /// ptxas -v / NVRTC / cuobjdump report with the kernel's registers and shared memory.
    #[arg(long, value_name = "LOG", requires = "ptx")]
    pub resources: Option<PathBuf>,
    /// Static shared memory per block, bytes.
    #[arg(long, value_name = "BYTES", requires = "ptx")]
    pub shared_bytes: Option<u32>,
}

impl PtxKernelArgs {
    /// The PTX kernel file these flags describe, when --ptx is given.
    fn kernel_file(&self) -> Result<Option<GeneratedInput>> {
        let Some(ptx) = &self.ptx else {
            return Ok(None);
        };
        let need = |v: &Option<String>, flag: &str, what: &str| {
            v.clone()
                .ok_or_else(|| Error::missing(flag, format!("--ptx needs {flag} {what}")))
        };
        let entry = need(&self.entry, "--entry", "NAME")?;
        let dims = |text: String| -> Vec<String> {
            text.split(',').map(|d| d.trim().to_string()).collect()
        };
        // Paths made absolute: the file is read as if it sat in the current directory.
        let absolute = |p: &PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
        let file = PtxKernelFile {
            ptx: absolute(ptx),
            entry: entry.clone(),
            grid: dims(need(&self.grid, "--grid", "X[,Y,Z]")?),
            block: dims(need(&self.block, "--block", "X[,Y,Z]")?),
            args: self.args.clone(),
            registers: self.registers,
            resources: self.resources.as_ref().map(absolute),
            shared_bytes: self.shared_bytes,
        };
        let text = toml::to_string(&file)
            .map_err(|e| Error::invalid("--ptx", format!("cannot describe the kernel: {e}")))?;
        Ok(Some(GeneratedInput {
            name: entry,
            origin: format!("--ptx {}", ptx.display()),
            text,
        }))
    }
}

impl SpaceArgs {
    /// The spec: the file's, with the flags' entries replacing it.
    pub fn spec(&self) -> Result<SpaceSpec> {
        let mut flags = SpaceSpec {
            models: self.models.clone(),
            kernels: self.kernels.clone(),
            inputs: self.inputs.clone(),
            devices: self.devices.clone(),
            device_files: self.device_files.clone(),
            params: self.params.clone(),
            t_p_us: self.t_p_us,
            t_m_cycles: self.t_m_cycles,
            calibrations: self.calibrations.clone(),
            trace_kernels: self.ptx.kernel_file()?.into_iter().collect(),
        };
        if !flags.trace_kernels.is_empty() && flags.models.is_empty() && self.space.is_none() {
            flags.models.push("trace".into());
        }
        Ok(match &self.space {
            Some(path) => SpaceSpec::load(path)?.overridden_by(flags),
            None => flags,
        })
    }

    fn build(&self) -> Result<Space> {
        Space::build(&self.spec()?, self.max_points)
    }
}

// ---------------------------------------------------------------------------------------------
// sweep

/// `kerneltime sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub space: SpaceArgs,
    /// Output file: .csv or .jsonl, optionally .gz (compressed).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: PathBuf,
    /// Output format when the extension does not say (csv, jsonl).
    #[arg(long)]
    pub format: Option<String>,
    /// Continue an interrupted sweep of the same space into the same file.
    #[arg(long)]
    pub resume: bool,
    /// Points per checkpoint.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_CHUNK_POINTS)]
    pub chunk_points: u64,
    /// Testing aid: stop once this many points are written, leaving the checkpoint.
    #[arg(long, value_name = "N", hide = true)]
    pub stop_after: Option<u64>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `sweep`.
pub fn run_sweep(args: &SweepArgs) -> Result<()> {
    let (from_name, gzip) = Format::from_path(&args.output);
    let format = match (&args.format, from_name) {
        (Some(f), _) => Format::parse(f)?,
        (None, Some(f)) => f,
        (None, None) => {
            return Err(Error::invalid(
                "--output",
                format!(
                    "cannot tell the format of {} from its extension; use .csv, .jsonl (optionally .gz) or give --format",
                    args.output.display()
                ),
            ))
        }
    };
    if args.chunk_points == 0 {
        return Err(Error::invalid("--chunk-points", "must be at least 1"));
    }
    let space = args.space.build()?;
    let opts = SweepOptions {
        format,
        gzip,
        resume: args.resume,
        chunk_points: args.chunk_points,
        stop_after: args.stop_after,
    };
    let summary = sweep::run_to_file(&space, &args.output, &opts, &super::progress::Bar::stderr())?;
    if args.json {
        return print_json(&summary);
    }
    if summary.stopped {
        println!(
            "stopped after {} of {} points (checkpoint kept; rerun with --resume)",
            summary.points,
            space.len()
        );
        return Ok(());
    }
    println!(
        "wrote {} points to {} in {:.2} s ({:.0} points/s{}): {} ok, {} infeasible, {} invalid",
        summary.points,
        summary.output.display(),
        summary.seconds,
        summary.points_per_second,
        if summary.resumed_points > 0 {
            format!(", resumed after {} points", summary.resumed_points)
        } else {
            String::new()
        },
        summary.counts.ok,
        summary.counts.infeasible,
        summary.counts.invalid
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// best

/// `kerneltime best`.
#[derive(Debug, Args)]
pub struct BestArgs {
    #[command(flatten)]
    pub space: SpaceArgs,
    /// What to minimise: time, cycles, time-per-element, time-x-sms.
    #[arg(long, default_value = "time")]
    pub objective: String,
    /// The parameter counting elements, for time-per-element.
    #[arg(long, default_value = "n")]
    pub elements: String,
    /// A constraint QUANTITY OP NUMBER: a swept parameter or time_us, cycles, occupancy,
    /// threads_per_block, blocks, shared_memory_bytes (e.g. occupancy>=0.5). Repeatable.
    #[arg(long = "constraint", value_name = "EXPR")]
    pub constraints: Vec<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `best`.
pub fn run_best(args: &BestArgs) -> Result<()> {
    let space = args.space.build()?;
    let objective = Objective::parse(&args.objective, &args.elements, &space)?;
    let constraints = args
        .constraints
        .iter()
        .map(|c| Constraint::parse(c, &space))
        .collect::<Result<Vec<_>>>()?;
    let report = best::search(&space, objective, &args.objective, &constraints)?;
    if args.json {
        return print_json(&report);
    }
    print!("{}", best_text(&report));
    Ok(())
}

fn params_text(p: &serde_json::Map<String, serde_json::Value>) -> String {
    p.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn best_text(r: &best::BestReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "objective: {} ({}) over {} points{}",
        r.objective,
        r.objective_unit,
        r.points,
        if r.constraints.is_empty() {
            String::new()
        } else {
            format!(", subject to {}", r.constraints.join(", "))
        }
    );
    for m in &r.models {
        match &m.best {
            Some(b) => {
                let _ = writeln!(
                    s,
                    "{}: best {} on {}{} with {} -> {} {} ({:.3} us)",
                    m.model,
                    b.kernel,
                    b.device,
                    calibration_text(&b.calibration),
                    params_text(&b.params),
                    b.objective,
                    r.objective_unit,
                    b.time_us
                );
                if let (Some(ru), Some(margin)) = (&m.runner_up, m.margin_percent) {
                    let _ = writeln!(
                        s,
                        "  runner-up {} on {}{} with {} -> {} ({:+.3} %)",
                        ru.kernel,
                        ru.device,
                        calibration_text(&ru.calibration),
                        params_text(&ru.params),
                        ru.objective,
                        margin
                    );
                }
            }
            None => {
                let _ = writeln!(s, "{}: no admissible point", m.model);
            }
        }
        let _ = writeln!(
            s,
            "  {} feasible points, {} satisfy the constraints{}",
            m.feasible_points,
            m.admissible_points,
            if m.unknown_points > 0 {
                format!(
                    ", {} excluded because the model does not report a constrained quantity",
                    m.unknown_points
                )
            } else {
                String::new()
            }
        );
    }
    if r.models.len() > 1 {
        let _ = writeln!(
            s,
            "models choosing {}'s configuration: {}",
            r.models[0].model,
            r.agreeing_models.join(", ")
        );
    }
    if let Some(p) = &r.prediction {
        for n in &p.notes {
            let _ = writeln!(s, "note: {n}");
        }
    }
    s
}

/// ` (calibrated with STEM)`, or nothing for an uncalibrated configuration.
fn calibration_text(name: &str) -> String {
    if name == "none" {
        String::new()
    } else {
        format!(" (calibrated with {name})")
    }
}

// ---------------------------------------------------------------------------------------------
// compare

/// `kerneltime compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub space: SpaceArgs,
    /// Rank GPUs for one kernel (default: the whole catalogue, or the --device filters) instead
    /// of comparing two kernels.
    #[arg(long)]
    pub rank_devices: bool,
    /// What ranks GPUs (the minimum over the parameter space): time, cycles, time-per-element,
    /// time-x-sms.
    #[arg(long, default_value = "time")]
    pub objective: String,
    /// The parameter counting elements, for time-per-element.
    #[arg(long, default_value = "n")]
    pub elements: String,
    /// Write compare.csv and SVG charts into this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// One point of a two-kernel comparison.
#[derive(Debug, Clone, Serialize)]
pub struct RatioPoint {
    pub device: String,
    pub params: serde_json::Map<String, serde_json::Value>,
    pub time_a_us: Option<f64>,
    pub time_b_us: Option<f64>,
    /// `time_a / time_b`.
    pub ratio: Option<f64>,
}

/// A two-kernel comparison.
#[derive(Debug, Clone, Serialize)]
pub struct KernelComparison {
    pub model: String,
    pub kernel_a: String,
    pub kernel_b: String,
    pub points: Vec<RatioPoint>,
    /// Points where kernel a is faster.
    pub a_faster: usize,
    pub b_faster: usize,
}

/// One GPU of a ranking.
#[derive(Debug, Clone, Serialize)]
pub struct RankedDevice {
    pub rank: usize,
    pub device: String,
    pub objective: f64,
    pub time_us: f64,
    pub params: serde_json::Map<String, serde_json::Value>,
}

/// A GPU ranking.
#[derive(Debug, Clone, Serialize)]
pub struct Ranking {
    pub model: String,
    pub kernel: String,
    pub objective: String,
    pub objective_unit: String,
    pub devices: Vec<RankedDevice>,
    /// Devices the model cannot run the kernel on, with the reason.
    pub skipped: Vec<(String, String)>,
}

/// Runs `compare`.
pub fn run_compare(args: &CompareArgs) -> Result<()> {
    if args.rank_devices {
        let ranking = rank_devices(args)?;
        if let Some(dir) = &args.out {
            write_atomic(&dir.join("ranking.csv"), ranking_csv(&ranking).as_bytes())?;
            write_atomic(&dir.join("ranking.svg"), ranking_svg(&ranking)?.as_bytes())?;
        }
        if args.json {
            return print_json(&ranking);
        }
        println!(
            "{} on {}: GPUs by {} ({})",
            ranking.kernel, ranking.model, ranking.objective, ranking.objective_unit
        );
        for d in &ranking.devices {
            println!(
                "{:>3}. {:<40} {:>14.4}  {}",
                d.rank,
                d.device,
                d.objective,
                params_text(&d.params)
            );
        }
        for (d, why) in &ranking.skipped {
            println!("skipped {d}: {why}");
        }
        if let Some(dir) = &args.out {
            println!("wrote ranking.csv and ranking.svg in {}", dir.display());
        }
        return Ok(());
    }
    let space = args.space.build()?;
    let cmp = compare_kernels(&space)?;
    let mut charts = Vec::new();
    if let Some(dir) = &args.out {
        write_atomic(&dir.join("compare.csv"), compare_csv(&cmp).as_bytes())?;
        for (device, svg) in compare_svgs(&space, &cmp)? {
            let name = format!("ratio-{}.svg", file_slug(&device));
            write_atomic(&dir.join(&name), svg.as_bytes())?;
            charts.push(name);
        }
    }
    if args.json {
        return print_json(&cmp);
    }
    println!(
        "{} / {} on {}: {} is faster at {} points, {} at {}",
        cmp.kernel_a,
        cmp.kernel_b,
        cmp.model,
        cmp.kernel_a,
        cmp.a_faster,
        cmp.kernel_b,
        cmp.b_faster
    );
    for p in &cmp.points {
        println!(
            "{:<36} {:<24} {}",
            p.device,
            params_text(&p.params),
            p.ratio.map_or("-".to_string(), |r| format!("{r:.4}"))
        );
    }
    if let Some(dir) = &args.out {
        println!(
            "wrote compare.csv and {} in {}",
            charts.join(", "),
            dir.display()
        );
    }
    Ok(())
}

/// Two kernels (or two inputs files) of one model, point by point.
pub fn compare_kernels(space: &Space) -> Result<KernelComparison> {
    if space.models.len() != 1 {
        return Err(Error::invalid(
            "--model",
            "compare takes one model (it compares two kernels under it)",
        ));
    }
    let mut kernels: Vec<&str> = Vec::new();
    for c in &space.cells {
        if !kernels.contains(&c.kernel.as_str()) {
            kernels.push(&c.kernel);
        }
    }
    if kernels.len() != 2 {
        return Err(Error::invalid(
            "--kernel",
            format!(
                "compare needs exactly two kernels (or two --inputs files), got {}",
                kernels.len()
            ),
        ));
    }
    let outcomes = sweep::fold(
        space,
        Vec::new,
        |acc: &mut Vec<(u64, Option<f64>)>, i, _, _, r| {
            acc.push((i, r.as_ref().ok().map(|o| o.time_us)));
        },
        |mut a, b| {
            a.extend(b);
            a
        },
    );
    let mut times = vec![None; space.len() as usize];
    for (i, t) in outcomes {
        times[i as usize] = t;
    }
    let per_cell = space.points_per_cell;
    let mut points = Vec::new();
    let (mut a_faster, mut b_faster) = (0, 0);
    for (ca, cell_a) in space.cells.iter().enumerate() {
        if cell_a.kernel != kernels[0] {
            continue;
        }
        let Some(cb) = space.cells.iter().position(|c| {
            c.kernel == kernels[1]
                && c.device == cell_a.device
                && c.calibration == cell_a.calibration
        }) else {
            continue;
        };
        for p in 0..per_cell {
            let ta = times[(ca as u64 * per_cell + p) as usize];
            let tb = times[(cb as u64 * per_cell + p) as usize];
            let ratio = match (ta, tb) {
                (Some(a), Some(b)) if b > 0.0 => Some(a / b),
                _ => None,
            };
            match ratio {
                Some(r) if r < 1.0 => a_faster += 1,
                Some(r) if r > 1.0 => b_faster += 1,
                _ => {}
            }
            points.push(RatioPoint {
                device: cell_a.device.clone(),
                params: space.params_json(ca as u64 * per_cell + p),
                time_a_us: ta,
                time_b_us: tb,
                ratio,
            });
        }
    }
    Ok(KernelComparison {
        model: space.models[0].to_string(),
        kernel_a: kernels[0].to_string(),
        kernel_b: kernels[1].to_string(),
        points,
        a_faster,
        b_faster,
    })
}

fn compare_csv(c: &KernelComparison) -> String {
    let mut names: Vec<&String> = c
        .points
        .first()
        .map(|p| p.params.keys().collect())
        .unwrap_or_default();
    names.sort();
    let mut s = String::from("device,");
    for n in &names {
        let _ = write!(s, "{},", sweep::csv_field(n));
    }
    let _ = writeln!(s, "time_{}_us,time_{}_us,ratio", c.kernel_a, c.kernel_b);
    let num = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for p in &c.points {
        let _ = write!(s, "{},", sweep::csv_field(&p.device));
        for n in &names {
            let _ = write!(
                s,
                "{},",
                p.params.get(*n).map(|v| v.to_string()).unwrap_or_default()
            );
        }
        let _ = writeln!(
            s,
            "{},{},{}",
            num(p.time_a_us),
            num(p.time_b_us),
            num(p.ratio)
        );
    }
    s
}

/// One ratio chart per device: the puchala2022 chart (reused) for the DWT pair over n and k,
/// else ratio lines against the parameter with the most values.
fn compare_svgs(space: &Space, c: &KernelComparison) -> Result<Vec<(String, String)>> {
    let mut devices: Vec<&str> = Vec::new();
    for p in &c.points {
        if !devices.contains(&p.device.as_str()) {
            devices.push(&p.device);
        }
    }
    let names: Vec<&str> = space.axes.iter().map(|a| a.name.as_str()).collect();
    let dwt_pair = c.kernel_a == "dwt-matrix"
        && c.kernel_b == "dwt-lattice"
        && names.len() == 2
        && names.iter().any(|n| n.eq_ignore_ascii_case("n"))
        && names.iter().any(|n| n.eq_ignore_ascii_case("k"));
    let mut out = Vec::new();
    for d in devices {
        let pts: Vec<&RatioPoint> = c.points.iter().filter(|p| p.device == d).collect();
        let svg = if dwt_pair {
            let grid = dwt_grid(space, d, &pts)?;
            super::puchala_plot::ratio_svg(d, &grid)?
        } else {
            ratio_lines_svg(d, c, space, &pts)?
        };
        out.push((d.to_string(), svg));
    }
    Ok(out)
}

/// The comparison as puchala2022 grid points (full predictions), for the paper's chart.
fn dwt_grid(space: &Space, device: &str, pts: &[&RatioPoint]) -> Result<Vec<GridPoint>> {
    let cell = |kernel: &str| {
        space
            .cells
            .iter()
            .find(|c| c.kernel == kernel && c.device == device)
            .ok_or_else(|| Error::invalid("compare", format!("no {kernel} cell for {device}")))
    };
    let (ma, la) = (cell("dwt-matrix")?, cell("dwt-lattice")?);
    let get = |p: &RatioPoint, name: &str| {
        p.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| v.as_f64())
    };
    let mut grid = Vec::new();
    for p in pts {
        let (Some(n), Some(k)) = (get(p, "n"), get(p, "k")) else {
            continue;
        };
        let values: Vec<f64> = space
            .axes
            .iter()
            .map(|a| {
                if a.name.eq_ignore_ascii_case("n") {
                    n
                } else {
                    k
                }
            })
            .collect();
        let (Ok(m), Ok(l)) = (ma.evaluator.predict(&values), la.evaluator.predict(&values)) else {
            continue;
        };
        grid.push(GridPoint {
            device: device.to_string(),
            k: k as u32,
            n: n as u64,
            ratio: m.time_us / l.time_us,
            matrix: m,
            lattice: l,
        });
    }
    Ok(grid)
}

fn draw_err(e: impl std::fmt::Display) -> Error {
    Error::invalid("svg", format!("cannot draw the chart: {e}"))
}

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];

/// Ratio against the parameter with the most values (log2 when all are powers of two), one line
/// per combination of the others.
fn ratio_lines_svg(
    device: &str,
    c: &KernelComparison,
    space: &Space,
    pts: &[&RatioPoint],
) -> Result<String> {
    let x_axis = space
        .axes
        .iter()
        .max_by_key(|a| a.values.len())
        .map(|a| a.name.clone());
    let log2 = space
        .axes
        .iter()
        .find(|a| Some(&a.name) == x_axis.as_ref())
        .is_some_and(|a| {
            a.values
                .iter()
                .all(|v| *v > 0.0 && (v.log2().fract() == 0.0))
                && a.values.len() > 2
        });
    let x_of = |p: &RatioPoint| -> f64 {
        let v = x_axis
            .as_ref()
            .and_then(|n| p.params.get(n))
            .and_then(|v| v.as_f64())
            .unwrap_or(0.0);
        if log2 {
            v.log2()
        } else {
            v
        }
    };
    let key = |p: &RatioPoint| -> String {
        p.params
            .iter()
            .filter(|(k, _)| Some(*k) != x_axis.as_ref())
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut lines: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for p in pts {
        let Some(r) = p.ratio else { continue };
        let k = key(p);
        match lines.iter_mut().find(|(n, _)| *n == k) {
            Some((_, l)) => l.push((x_of(p), r)),
            None => lines.push((k, vec![(x_of(p), r)])),
        }
    }
    let all: Vec<(f64, f64)> = lines.iter().flat_map(|(_, l)| l.iter().copied()).collect();
    if all.is_empty() {
        return Err(Error::Infeasible(format!(
            "no point on {device} where both kernels run, so there is no ratio to draw"
        )));
    }
    let (x0, x1) = all
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.0), b.max(p.0))
        });
    let (y0, y1) = all
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.1), b.max(p.1))
        });
    let xpad = ((x1 - x0) * 0.03).max(0.5);
    let ypad = ((y1 - y0) * 0.08).max(0.05);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "{device}: {} / {} time ratio ({})",
                    c.kernel_a, c.kernel_b, c.model
                ),
                ("sans-serif", 20),
            )
            .margin(14)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(x0 - xpad..x1 + xpad, (y0 - ypad).max(0.0)..y1 + ypad)
            .map_err(draw_err)?;
        let x_name = x_axis.clone().unwrap_or_else(|| "point".into());
        let fmt = move |v: &f64| {
            if log2 {
                format!("2^{}", v.round())
            } else {
                format!("{v}")
            }
        };
        chart
            .configure_mesh()
            .x_label_formatter(&fmt)
            .x_desc(if log2 {
                format!("{x_name} (log2 scale)")
            } else {
                x_name
            })
            .y_desc(format!("T_{} / T_{}", c.kernel_a, c.kernel_b))
            .draw()
            .map_err(draw_err)?;
        for (i, (name, line)) in lines.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let series = chart
                .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
                .map_err(draw_err)?;
            if i < 12 {
                series
                    .label(if name.is_empty() {
                        "ratio".to_string()
                    } else {
                        name.clone()
                    })
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
            }
        }
        chart
            .draw_series(LineSeries::new(
                vec![(x0 - xpad, 1.0), (x1 + xpad, 1.0)],
                BLACK.mix(0.4),
            ))
            .map_err(draw_err)?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// Ranks devices: each device's minimum objective over the parameter space.
pub fn rank_devices(args: &CompareArgs) -> Result<Ranking> {
    let spec = args.space.spec()?;
    if spec.models.len() != 1 || spec.models[0].contains(',') {
        return Err(Error::invalid("--model", "--rank-devices takes one model"));
    }
    if spec.kernels.len() + spec.inputs.len() != 1 {
        return Err(Error::invalid(
            "--kernel",
            "--rank-devices ranks GPUs for one kernel: give one --kernel or one --inputs",
        ));
    }
    let items = if spec.devices.is_empty() && spec.device_files.is_empty() {
        vec!["sm_count>=1".to_string()]
    } else {
        spec.devices.clone()
    };
    let devices = resolve_devices(&items, &[], &mut Fnv::new())?;
    let mut per_device: Vec<SpaceSpec> = devices
        .iter()
        .map(|d| SpaceSpec {
            devices: vec![d.name.clone()],
            device_files: Vec::new(),
            ..spec.clone()
        })
        .collect();
    for f in &spec.device_files {
        per_device.push(SpaceSpec {
            devices: Vec::new(),
            device_files: vec![f.clone()],
            ..spec.clone()
        });
    }
    let mut ranked = Vec::new();
    let mut skipped = Vec::new();
    let mut model = String::new();
    let mut kernel = String::new();
    for s in &per_device {
        let label = s
            .devices
            .first()
            .cloned()
            .or_else(|| s.device_files.first().map(|p| p.display().to_string()))
            .unwrap_or_default();
        let space = match Space::build(s, args.space.max_points) {
            Ok(space) => space,
            Err(e) => {
                skipped.push((label, e.to_string()));
                continue;
            }
        };
        let objective = Objective::parse(&args.objective, &args.elements, &space)?;
        match best::search(&space, objective, &args.objective, &[]) {
            Ok(r) => {
                if let Some(b) = r.models.first().and_then(|m| m.best.clone()) {
                    model = b.model.clone();
                    kernel = b.kernel.clone();
                    ranked.push(RankedDevice {
                        rank: 0,
                        device: b.device,
                        objective: b.objective,
                        time_us: b.time_us,
                        params: b.params,
                    });
                }
            }
            Err(e) => skipped.push((label, e.to_string())),
        }
    }
    if ranked.is_empty() {
        return Err(Error::Infeasible(format!(
            "no device could run the kernel{}",
            skipped
                .first()
                .map(|(d, why)| format!(" (e.g. {d}: {why})"))
                .unwrap_or_default()
        )));
    }
    // Stable: equal objectives keep the catalogue order.
    ranked.sort_by(|a, b| a.objective.total_cmp(&b.objective));
    for (i, d) in ranked.iter_mut().enumerate() {
        d.rank = i + 1;
    }
    let unit = match args.objective.as_str() {
        "cycles" => "cycles",
        "time-per-element" => "us per element",
        "time-x-sms" => "us x SMs",
        _ => "us",
    };
    Ok(Ranking {
        model,
        kernel,
        objective: args.objective.clone(),
        objective_unit: unit.to_string(),
        devices: ranked,
        skipped,
    })
}

fn ranking_csv(r: &Ranking) -> String {
    let mut s = String::from("rank,device,objective,time_us,params\n");
    for d in &r.devices {
        let _ = writeln!(
            s,
            "{},{},{},{},{}",
            d.rank,
            sweep::csv_field(&d.device),
            d.objective,
            d.time_us,
            sweep::csv_field(&params_text(&d.params))
        );
    }
    s
}

/// Horizontal bars, fastest on top.
fn ranking_svg(r: &Ranking) -> Result<String> {
    let n = r.devices.len();
    let height = (90 + 24 * n) as u32;
    let x_max = r
        .devices
        .iter()
        .map(|d| d.objective)
        .fold(0.0_f64, f64::max)
        .max(1e-12)
        * 1.08;
    let names: Vec<String> = r.devices.iter().map(|d| d.device.clone()).collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{} ({}): GPUs by {}", r.kernel, r.model, r.objective),
                ("sans-serif", 20),
            )
            .margin(14)
            .x_label_area_size(40)
            .y_label_area_size(300)
            .build_cartesian_2d(0.0..x_max, 0.0..n as f64)
            .map_err(draw_err)?;
        let label = move |y: &f64| {
            let i = n as f64 - y - 0.5;
            if i >= 0.0 && (i - i.round()).abs() < 1e-6 {
                names.get(i.round() as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(2 * n + 1)
            .y_label_formatter(&label)
            .x_desc(format!("{} ({})", r.objective, r.objective_unit))
            .draw()
            .map_err(draw_err)?;
        chart
            .draw_series(r.devices.iter().enumerate().map(|(i, d)| {
                let y = (n - 1 - i) as f64;
                Rectangle::new(
                    [(0.0, y + 0.15), (d.objective, y + 0.85)],
                    COLORS[0].filled(),
                )
            }))
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

fn file_slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    s.split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}
