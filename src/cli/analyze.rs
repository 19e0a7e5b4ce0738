//! `kerneltime analyze FILE.ptx`: what the PTX frontend sees in each kernel (blocks, loops with
//! trip counts, static counts, counts per class, the puchala2022 kernel program, diagnostics).
//!
//! It reads the files and prints; the analysis itself is `ptx::analysis`, which parses and
//! analyzes one kernel at a time: each kernel is printed as soon as it is analyzed (with
//! `--json`, one JSON document with one kernel per line), so memory stays near the size of the
//! input however many kernels it holds.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::read_text;
use kerneltime::error::{Error, Result};
use kerneltime::ptx::analysis::{self, analyze_each, EntryAnalysis, JsonEntries, StreamSummary};
use kerneltime::ptx::program::MemoryDurations;
use kerneltime::ptx::resources::{parse_report, KernelResources};

/// Largest PTX file accepted, bytes.
pub const MAX_PTX_BYTES: u64 = 512 * 1024 * 1024;

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// The PTX file.
    #[arg(value_name = "FILE.ptx")]
    pub file: PathBuf,
    /// Analyze only this kernel.
    #[arg(long)]
    pub entry: Option<String>,
    /// A `ptxas -v` output, NVRTC log or `cuobjdump -res-usage` output for the same code.
    #[arg(long, value_name = "LOG")]
    pub resources: Option<PathBuf>,
    /// Duration of a global load in the kernel program, cycles (calibrated; 0 if not given).
    #[arg(long, default_value_t = 0.0)]
    pub load_cycles: f64,
    /// Duration of a global store in the kernel program, cycles (calibrated; 0 if not given).
    #[arg(long, default_value_t = 0.0)]
    pub store_cycles: f64,
    /// One JSON document: `{"entries": [...], "notes": [...]}`, one kernel per line.
    #[arg(long)]
    pub json: bool,
}

/// The inputs of an analysis, read and checked.
struct Inputs {
    bytes: Vec<u8>,
    durations: MemoryDurations,
    resources: Vec<KernelResources>,
}

fn read_inputs(args: &AnalyzeArgs) -> Result<Inputs> {
    let durations = MemoryDurations {
        load_cycles: kerneltime::error::non_negative("--load-cycles", args.load_cycles)?,
        store_cycles: kerneltime::error::non_negative("--store-cycles", args.store_cycles)?,
    };
    let meta = std::fs::metadata(&args.file)
        .map_err(|e| Error::file(&args.file, format!("cannot read: {e}")))?;
    if meta.len() > MAX_PTX_BYTES {
        return Err(Error::file(
            &args.file,
            format!(
                "is {} bytes, more than the {MAX_PTX_BYTES} bytes accepted for a PTX file",
                meta.len()
            ),
        ));
    }
    let resources = match &args.resources {
        Some(p) => {
            let r = parse_report(&read_text(p)?);
            if r.is_empty() {
                return Err(Error::file(
                    p,
                    "is neither a ptxas -v / NVRTC log nor cuobjdump -res-usage output",
                ));
            }
            r
        }
        None => Vec::new(),
    };
    let bytes = read_sized(&args.file, meta.len())?;
    Ok(Inputs {
        bytes,
        durations,
        resources,
    })
}

/// Reads a file of about `len` bytes into a buffer of that size (no regrowth copies), at most
/// [`MAX_PTX_BYTES`].
fn read_sized(path: &std::path::Path, len: u64) -> Result<Vec<u8>> {
    use std::io::Read;
    let file =
        std::fs::File::open(path).map_err(|e| Error::file(path, format!("cannot read: {e}")))?;
    let mut bytes = Vec::with_capacity(len.min(MAX_PTX_BYTES) as usize + 1);
    file.take(MAX_PTX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::file(path, format!("cannot read: {e}")))?;
    if bytes.len() as u64 > MAX_PTX_BYTES {
        return Err(Error::file(
            path,
            format!("is larger than the {MAX_PTX_BYTES} bytes accepted for a PTX file"),
        ));
    }
    Ok(bytes)
}

/// The error when no kernel was analyzed, or the notes of a run that analyzed some.
fn conclude(args: &AnalyzeArgs, s: &StreamSummary) -> Result<Vec<String>> {
    if s.analyzed == 0 {
        if let Some(e) = &args.entry {
            return Err(Error::invalid(
                "--entry",
                format!(
                    "no kernel `{e}` in the file; kernels: {}",
                    s.kernels.join(", ")
                ),
            ));
        }
        let first = s
            .first_error
            .as_ref()
            .map(|d| format!("; first problem at {d}"))
            .unwrap_or_default();
        return Err(Error::file(
            &args.file,
            format!("contains no kernel (`.entry` with a body){first}"),
        ));
    }
    let mut notes = Vec::new();
    if args.load_cycles == 0.0 || args.store_cycles == 0.0 {
        notes.push(
            "global load/store durations not given (--load-cycles/--store-cycles): 0 used in kernel_program"
                .to_string(),
        );
    }
    if s.outside_functions > 0 {
        notes.push(format!(
            "{} diagnostics outside any function",
            s.outside_functions
        ));
    }
    Ok(notes)
}

/// An output error (a closed pipe ends the process quietly before this, see `main`).
fn io_error(e: std::io::Error) -> Error {
    Error::io("cannot write the analysis to standard output", e)
}

pub fn run(args: &AnalyzeArgs) -> Result<()> {
    let inputs = read_inputs(args)?;
    let text = kerneltime::ptx::text_of(&inputs.bytes);
    let stdout = std::io::stdout();
    let out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    if args.json {
        let mut json = JsonEntries::new(out);
        let summary = analyze_each(
            &text,
            args.entry.as_deref(),
            inputs.durations,
            &inputs.resources,
            |e| json.entry(&e),
        )
        .map_err(io_error)?;
        let notes = conclude(args, &summary)?;
        json.finish(&notes).map_err(io_error)?;
        return Ok(());
    }
    let mut out = out;
    let summary = analyze_each(
        &text,
        args.entry.as_deref(),
        inputs.durations,
        &inputs.resources,
        |e| print_entry(&mut out, &e),
    )
    .map_err(io_error)?;
    let notes = conclude(args, &summary)?;
    for n in notes {
        writeln!(out, "note: {n}").map_err(io_error)?;
    }
    out.flush().map_err(io_error)
}

fn print_entry(out: &mut impl Write, e: &EntryAnalysis) -> std::io::Result<()> {
    writeln!(out, "{}", e.name)?;
    let params: Vec<String> = e
        .params
        .iter()
        .map(|p| format!("{}: {}", p.name, p.ty))
        .collect();
    writeln!(out, "  params        {}", params.join(", "))?;
    writeln!(
        out,
        "  basic blocks  {} ({} edges)",
        e.basic_blocks, e.edges
    )?;
    for l in &e.loops {
        let t = match &l.trip_count {
            kerneltime::ptx::loops::TripCount::Known(n) => n.to_string(),
            kerneltime::ptx::loops::TripCount::Expr(s) => s.clone(),
            kerneltime::ptx::loops::TripCount::Unknown => "unknown".into(),
        };
        writeln!(
            out,
            "  loop          depth {} header line {} trip count {t}",
            l.depth, l.header_line
        )?;
    }
    let c = &e.static_counts;
    writeln!(
        out,
        "  instructions  {} (global ld {} st {}, shared ld {} st {}, barriers {}, branches {})",
        c.total,
        c.global_loads,
        c.global_stores,
        c.shared_loads,
        c.shared_stores,
        c.barriers,
        c.branches
    )?;
    let classes: Vec<String> = e.classes.iter().map(|(k, v)| format!("{k} {v}")).collect();
    writeln!(out, "  classes       {}", classes.join(", "))?;
    writeln!(
        out,
        "  program       {}",
        analysis::program_json(&e.program.ops)
    )?;
    for d in &e.diagnostics {
        writeln!(out, "  {d}")?;
    }
    Ok(())
}
