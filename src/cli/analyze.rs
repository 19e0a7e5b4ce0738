//! `kerneltime analyze FILE.ptx`: what the PTX frontend sees in each kernel (blocks, loops with
//! trip counts, static counts, counts per class, the puchala2022 kernel program, diagnostics).
//!
//! It reads the files and prints; the analysis itself is `ptx::analysis`.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::{print_json, read_text};
use kerneltime::error::{Error, Result};
use kerneltime::ptx::analysis::{analyze_module, EntryAnalysis};
use kerneltime::ptx::diag::Severity;
use kerneltime::ptx::program::MemoryDurations;
use kerneltime::ptx::resources::parse_report;
use kerneltime::ptx::{analysis, parse_bytes};

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
    #[arg(long)]
    pub json: bool,
}

/// Reads, parses and analyzes; the library part of the command.
pub fn analyze(args: &AnalyzeArgs) -> Result<(Vec<EntryAnalysis>, Vec<String>)> {
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
    let bytes = kerneltime::error::read_capped(&args.file, MAX_PTX_BYTES, "a PTX file")?;
    let (module, diags) = parse_bytes(&bytes);
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
    let entries = analyze_module(
        &module,
        &diags,
        args.entry.as_deref(),
        durations,
        &resources,
    );
    if entries.is_empty() {
        if let Some(e) = &args.entry {
            let names: Vec<&str> = module.entries().map(|f| f.name.as_str()).collect();
            return Err(Error::invalid(
                "--entry",
                format!("no kernel `{e}` in the file; kernels: {}", names.join(", ")),
            ));
        }
        let first = diags
            .items
            .iter()
            .find(|d| d.severity == Severity::Error)
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
    let module_level = diags
        .items
        .iter()
        .filter(|d| module.functions.iter().all(|f| d.line < f.line))
        .count();
    if module_level > 0 {
        notes.push(format!(
            "{module_level} diagnostics before the first function"
        ));
    }
    Ok((entries, notes))
}

pub fn run(args: &AnalyzeArgs) -> Result<()> {
    let (entries, notes) = analyze(args)?;
    if args.json {
        return print_json(&json!({ "entries": entries, "notes": notes }));
    }
    for e in &entries {
        println!("{}", e.name);
        let params: Vec<String> = e
            .params
            .iter()
            .map(|p| format!("{}: {}", p.name, p.ty))
            .collect();
        println!("  params        {}", params.join(", "));
        println!("  basic blocks  {} ({} edges)", e.basic_blocks, e.edges);
        for l in &e.loops {
            let t = match &l.trip_count {
                kerneltime::ptx::loops::TripCount::Known(n) => n.to_string(),
                kerneltime::ptx::loops::TripCount::Expr(s) => s.clone(),
                kerneltime::ptx::loops::TripCount::Unknown => "unknown".into(),
            };
            println!(
                "  loop          depth {} header line {} trip count {t}",
                l.depth, l.header_line
            );
        }
        let c = &e.static_counts;
        println!(
            "  instructions  {} (global ld {} st {}, shared ld {} st {}, barriers {}, branches {})",
            c.total,
            c.global_loads,
            c.global_stores,
            c.shared_loads,
            c.shared_stores,
            c.barriers,
            c.branches
        );
        let classes: Vec<String> = e.classes.iter().map(|(k, v)| format!("{k} {v}")).collect();
        println!("  classes       {}", classes.join(", "));
        println!("  program       {}", analysis::program_json(&e.program.ops));
        for d in &e.diagnostics {
            println!("  {d}");
        }
    }
    for n in notes {
        println!("note: {n}");
    }
    Ok(())
}
