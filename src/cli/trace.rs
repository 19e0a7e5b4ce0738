//! `kerneltime trace FILE.ptx --entry NAME --grid X[,Y,Z] --block X[,Y,Z] [--arg NAME=VALUE]
//! [--data NAME=SPEC] [--best-case]`: emulates the sampled warps of one launch and prints, per
//! warp in launch order, its dynamic instruction count, global requests and sectors, shared
//! requests and bank conflicts, atomics, and notes.
//!
//! Reading files and printing only; the emulation is `emulate`, the counting `workload::trace`.

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::json;

use super::print_json;
use kerneltime::emulate::{
    emulate_with, BufferHint, DataArg, Emulation, KernelArg, LaunchDims, Options, Sampling,
    UnknownData,
};
use kerneltime::error::{Error, Result};
use kerneltime::ptx::ast::Module;
use kerneltime::ptx::parse_bytes;

#[derive(Debug, Args)]
pub struct TraceArgs {
    /// The PTX file.
    #[arg(value_name = "FILE.ptx")]
    pub file: PathBuf,
    /// The kernel to emulate.
    #[arg(long)]
    pub entry: String,
    /// Grid dimensions X[,Y,Z].
    #[arg(long)]
    pub grid: String,
    /// Block dimensions X[,Y,Z].
    #[arg(long)]
    pub block: String,
    /// A kernel argument NAME=VALUE (PTX name, name without the kernel prefix, or position);
    /// NAME+OFFSET=VALUE gives the field at byte OFFSET of a struct passed by value.
    #[arg(long = "arg", value_name = "NAME=VALUE")]
    pub args: Vec<String>,
    /// What a pointer argument (or a module's `__constant__`/`__device__` array, by name)
    /// holds: NAME=SPEC with SPEC const:V, iota[:START[:STEP]], uniform:LO:HI[:SEED] or
    /// file:PATH (.txt/.csv: text numbers; else raw little-endian bytes); loads from it return
    /// those values (repeatable).
    #[arg(long = "data", value_name = "NAME=SPEC")]
    pub data: Vec<String>,
    /// Read data the emulation cannot know in the cheapest legal way (conditional code skipped,
    /// unknown addresses coalesced) instead of wang2019's conservative rule.
    #[arg(long)]
    pub best_case: bool,
    /// Emulate every block instead of the first/interior/last classes.
    #[arg(long)]
    pub all_blocks: bool,
    /// Most instructions one warp may issue before the emulation stops with an error.
    #[arg(long, value_name = "N", default_value_t = kerneltime::emulate::DEFAULT_STEP_BUDGET)]
    pub step_budget: u64,
    /// Most warp instructions the whole launch may issue (all emulated warps together): bounds
    /// the emulation's time and memory.
    #[arg(long, value_name = "N", default_value_t = kerneltime::emulate::DEFAULT_LAUNCH_BUDGET)]
    pub launch_budget: u64,
    /// One JSON object on stdout: the launch, every emulated warp and the notes.
    #[arg(long)]
    pub json: bool,
}

/// Reads and parses a PTX file; a parse error inside `entry` is an error naming its line.
pub fn load_ptx(path: &Path, entry: &str) -> Result<(Module, String)> {
    let meta =
        std::fs::metadata(path).map_err(|e| Error::file(path, format!("cannot read: {e}")))?;
    if meta.len() > super::analyze::MAX_PTX_BYTES {
        return Err(Error::file(path, "is too large for a PTX file"));
    }
    let bytes = kerneltime::error::read_capped(path, super::analyze::MAX_PTX_BYTES, "a PTX file")?;
    ptx_entry(&bytes, entry, |d| Error::file(path, d))
}

/// Parses PTX text and finds `entry` in it (a C++ kernel name means its mangled entry); a PTX
/// error in that kernel becomes `ptx_error(message)`.
pub fn ptx_entry(
    bytes: &[u8],
    entry: &str,
    ptx_error: impl FnOnce(String) -> Error,
) -> Result<(Module, String)> {
    let (module, diags) = parse_bytes(bytes);
    let entry = kerneltime::emulate::resolve_entry_name(&module, entry)
        .map_err(|m| Error::invalid("--entry", m))?;
    if let Some(d) = kerneltime::emulate::entry_diagnostic(&module, &diags, &entry) {
        return Err(ptx_error(d));
    }
    Ok((module, entry))
}

/// Parses the launch flags.
pub fn launch_of(grid: &str, block: &str) -> Result<LaunchDims> {
    Ok(LaunchDims {
        grid: LaunchDims::parse_dims("--grid", grid)?,
        block: LaunchDims::parse_dims("--block", block)?,
    })
}

/// Reads `--data NAME=SPEC` flags, loading the files they name (relative to the working
/// directory).
pub fn data_hints(texts: &[String]) -> Result<Vec<BufferHint>> {
    texts
        .iter()
        .map(|t| DataArg::parse("data", t)?.load(None))
        .collect()
}

/// Emulates a kernel of a module read by `load_ptx` (`entry`: its PTX entry) with data hints.
pub fn emulate_module_with(
    module: &Module,
    entry: &str,
    grid: &str,
    block: &str,
    args: &[String],
    data: &[BufferHint],
    opts: Options,
) -> Result<Emulation> {
    let launch = launch_of(grid, block)?;
    let args = KernelArg::parse_all(args)?;
    emulate_with(module, entry, launch, &args, data, opts).map_err(name_budget_flags)
}

/// An emulation error that advises raising a budget, with the flag that raises it in this
/// command (`--step-budget`, `--launch-budget`).
pub fn name_budget_flags(e: Error) -> Error {
    match e {
        Error::InvalidInput { name, message } => {
            let message = message
                .replace("raise the per-warp step budget", "raise --step-budget")
                .replace("raise the per-launch budget", "raise --launch-budget");
            Error::InvalidInput { name, message }
        }
        other => other,
    }
}

/// Emulation options with the two budgets of `--step-budget` and `--launch-budget`, checked.
pub fn budgets(step_budget: u64, launch_budget: u64) -> Result<Options> {
    if step_budget == 0 {
        return Err(Error::invalid("--step-budget", "must be at least 1"));
    }
    if launch_budget == 0 {
        return Err(Error::invalid("--launch-budget", "must be at least 1"));
    }
    Ok(Options {
        step_budget,
        launch_budget,
        ..Options::default()
    })
}

pub fn run(a: &TraceArgs) -> Result<()> {
    let opts = Options {
        sampling: if a.all_blocks {
            Sampling::All
        } else {
            Sampling::Classes
        },
        unknown: if a.best_case {
            UnknownData::Best
        } else {
            UnknownData::Worst
        },
        ..budgets(a.step_budget, a.launch_budget)?
    };
    let data = data_hints(&a.data)?;
    let (module, entry) = load_ptx(&a.file, &a.entry)?;
    let em = emulate_module_with(&module, &entry, &a.grid, &a.block, &a.args, &data, opts)?;
    let warps: Vec<_> = em.warps.iter().map(|w| w.summary()).collect();
    if a.json {
        return print_json(&json!({
            "entry": em.entry,
            "launch": em.launch,
            "params": em.params,
            "sampled_blocks": em.sampled_blocks,
            "warps": warps,
            "wave_blocks": em.wave,
            "above_block": em.above,
            "unknown_data": em.unknown,
            "data_dependence": em.data_dependence,
            "notes": em.notes,
        }));
    }
    println!(
        "{}: grid {:?}, block {:?}, {} sampled blocks",
        em.entry,
        em.launch.grid,
        em.launch.block,
        em.sampled_blocks.len()
    );
    println!(
        "{:>14} {:>5} {:>8} {:>7} {:>8} {:>7} {:>8} {:>7} {:>5} {:>6}",
        "block",
        "warp",
        "instr",
        "ld.req",
        "ld.sect",
        "st.req",
        "st.sect",
        "sh.req",
        "ways",
        "atomic"
    );
    for w in &warps {
        println!(
            "{:>14} {:>5} {:>8} {:>7} {:>8} {:>7} {:>8} {:>7} {:>5} {:>6}",
            format!("{},{},{}", w.block[0], w.block[1], w.block[2]),
            w.warp,
            w.dynamic_instructions,
            w.global_load_requests,
            w.global_load_sectors,
            w.global_store_requests,
            w.global_store_sectors,
            w.shared_requests,
            w.shared_bank_conflict_ways,
            w.atomic_requests
        );
    }
    for n in &em.notes {
        println!("note: {n}");
    }
    Ok(())
}
