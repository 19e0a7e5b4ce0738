//! Warp emulation of a PTX kernel for one concrete launch: every sampled warp runs the kernel's
//! control flow with 32 lanes, active masks, guard predicates, divergence and reconvergence at the
//! immediate post-dominator (a SIMT stack), and exact integer and address arithmetic. The result
//! is one `workload::trace::WarpTrace` per emulated warp.
//!
//! Values: each register lane holds a value or is *unknown* (a two-level lattice). Kernel
//! arguments come from `--arg` (by-value aggregate parameters by field: `p+4=7`); pointer
//! parameters without a value get distinct synthetic base addresses (`(k + 1) << 36`), so address
//! patterns are exact relative to them. Values loaded from memory or fetched from textures are
//! unknown. A register is any name the function declares, with or without `%`; vector registers
//! and vector operands are tracked per element.
//!
//! Calls into a `.func` with a body in the module are followed: the callee runs on the calling
//! lanes with its own SIMT stack, registers and parameter space (arguments and return values
//! pass through `.param` variables or registers as declared), recursion up to 64 calls deep.
//! Calls through function pointers or into functions without a body issue as one instruction
//! with unknown results (a note says so). A branch whose predicate is unknown for some lanes follows wang2019's
//! conservative rule: those lanes take both sides of a forward branch (the code is assumed to
//! run), and leave a loop at a backward branch (one more iteration would be a guess); both are
//! reported in the notes. A per-warp step budget stops runaway loops with an error.
//!
//! Sampling: blocks at the first, middle and last position of each grid dimension (up to 27
//! blocks) stand for all blocks; every warp of a sampled block is emulated (partial warps
//! included), in launch order. `Sampling::All` emulates every block.
//!
//! What it does NOT do: follow indirect calls, jump tables, or memory contents; model atomics'
//! values or texture layouts; time anything (that is `model::trace_sim`).

mod alu;
pub mod args;
pub mod decode;
pub mod kernel_file;
pub mod launch;
pub mod sampling;
mod warp;

use std::collections::BTreeSet;

use crate::error::Result;
use crate::workload::trace::WarpTrace;
use decode::{decode, DInst, Src};
use kerneltime_ptx::ast::Module;
use kerneltime_ptx::cfg::Cfg;
use kerneltime_ptx::diag::Diagnostics;
use warp::Emulator;

pub use args::{
    entry_diagnostic, find_entry, resolve_args, ArgValue, KernelArg, ParamValue, ResolvedArgs,
};
pub use launch::LaunchDims;
pub use sampling::{positions, representative, SampledBlock, Sampling};

/// Lanes per warp.
pub const WARP: usize = 32;

/// Default budget of dynamic instructions per warp.
pub const DEFAULT_STEP_BUDGET: u64 = 4_000_000;

/// Emulation options.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub step_budget: u64,
    pub sampling: Sampling,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            step_budget: DEFAULT_STEP_BUDGET,
            sampling: Sampling::Classes,
        }
    }
}

/// The result of emulating a launch.
#[derive(Debug, Clone)]
pub struct Emulation {
    pub entry: String,
    pub launch: LaunchDims,
    pub warps: Vec<WarpTrace>,
    pub sampled_blocks: Vec<SampledBlock>,
    pub params: Vec<ParamValue>,
    /// Static shared memory of the kernel, bytes.
    pub shared_bytes_static: u64,
    /// Notes for the whole launch (deduplicated from the warps).
    pub notes: Vec<String>,
    /// Registers each instruction writes and reads (by function instruction index), for
    /// dependency analyses of the traces (ILP, MLP).
    pub regs: Vec<InstrRegs>,
}

/// Register numbers an instruction writes and reads (`NO_REG` for an empty slot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstrRegs {
    pub dst: [u16; 4],
    pub src: [u16; 6],
}

/// An empty slot of [`InstrRegs`].
pub const NO_REG: u16 = u16::MAX;

fn instr_regs(d: &DInst) -> InstrRegs {
    let mut r = InstrRegs {
        dst: [NO_REG; 4],
        src: [NO_REG; 6],
    };
    for (k, x) in d.dst.iter().enumerate() {
        if let Some(x) = x {
            r.dst[k] = *x;
        }
    }
    let mut k = 0;
    let mut push = |s: Src| {
        if let Src::Reg(x) = s {
            if k < 6 {
                r.src[k] = x;
                k += 1;
            }
        }
    };
    for s in d.srcs.iter().take(d.nsrc as usize) {
        push(*s);
    }
    if let Some(m) = d.mem {
        push(m.base);
    }
    if let Some((g, _)) = d.guard {
        push(Src::Reg(g));
    }
    r
}

impl Emulation {
    /// The traces of one sampled block.
    pub fn block_warps(&self, linear: u64) -> impl Iterator<Item = &WarpTrace> {
        self.warps.iter().filter(move |w| w.block_linear == linear)
    }
}

/// Emulates a kernel of a parsed module for a launch and arguments.
pub fn emulate(
    m: &Module,
    entry: &str,
    launch: LaunchDims,
    args: &[KernelArg],
    opts: Options,
) -> Result<Emulation> {
    let f = find_entry(m, entry)?;
    launch.validate(f)?;
    let address_bits = m.address_size.unwrap_or(64);
    let resolved = resolve_args(f, args, address_bits)?;
    let mut diags = Diagnostics::default();
    let cfg = Cfg::build(f, &mut diags);
    let dec = decode(m, f, &cfg);
    let mut notes = Vec::new();
    for (op, line) in dec.opaque.iter().take(8) {
        notes.push(format!(
            "line {line}: `{op}` is not emulated; it issues and its result is unknown"
        ));
    }
    for (line, callee, why) in dec.unfollowed.iter().take(8) {
        notes.push(format!(
            "line {line}: call to `{callee}` not followed ({why}); it counts as one instruction and its results are unknown"
        ));
    }
    if dec.funcs.len() > 1 {
        let names: Vec<&str> = dec.funcs[1..].iter().map(|g| g.name.as_str()).collect();
        notes.push(format!(
            "calls followed into {} (each call runs the function with its own registers and parameters)",
            names.join(", ")
        ));
    }
    let mut em = Emulator::new(
        &dec,
        resolved.values,
        resolved.fields,
        launch,
        opts.step_budget,
    );
    let blocks = sampling::blocks(&launch, opts.sampling);
    let mut warps = Vec::new();
    let mut seen_notes = BTreeSet::new();
    for b in &blocks {
        for w in 0..launch.warps_per_block() {
            let t = em.run_warp(b.block, w)?;
            for n in &t.notes {
                if seen_notes.insert(n.clone()) {
                    notes.push(n.clone());
                }
            }
            warps.push(t);
        }
    }
    let sampled = blocks.len();
    notes.push(format!(
        "emulated {} warps of {sampled} sampled blocks out of {} blocks ({} warps per block)",
        warps.len(),
        launch.blocks(),
        launch.warps_per_block()
    ));
    Ok(Emulation {
        entry: entry.to_string(),
        launch,
        warps,
        sampled_blocks: blocks,
        params: resolved.report,
        shared_bytes_static: dec.shared_bytes,
        notes,
        regs: dec.insts.iter().map(instr_regs).collect(),
    })
}
