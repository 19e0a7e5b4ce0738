//! Warp emulation of a PTX kernel for one concrete launch: every sampled warp runs the kernel's
//! control flow with 32 lanes, active masks, guard predicates, divergence and reconvergence at the
//! immediate post-dominator (a SIMT stack), and exact integer and address arithmetic. The result
//! is one `workload::trace::WarpTrace` per emulated warp.
//!
//! Values: each register lane holds a value or is *unknown* (a two-level lattice). Kernel
//! arguments come from `--arg` (by-value aggregate parameters by field: `p+4=7`); pointer
//! parameters without a value get distinct synthetic base addresses (`(k + 1) << 36`), so address
//! patterns are exact relative to them. A register is any name the function declares, with or
//! without `%`; vector registers and vector operands are tracked per element. Memory
//! (`memstate`): shared memory (per block) and local memory (per thread) hold what the kernel
//! stored there, so a value staged through them stays exact; the warps of a block run in turn
//! from barrier to barrier, so a store before `bar.sync` is seen by every warp after it. Global
//! loads return the values of a data hint (`hints`, `--data NAME=SPEC`) when the buffer has one,
//! else unknown values; global stores are not kept. Texture fetches give unknown values.
//!
//! Calls into a `.func` with a body in the module are followed: the callee runs on the calling
//! lanes with its own SIMT stack, registers and parameter space (arguments and return values
//! pass through `.param` variables or registers as declared), recursion up to 64 calls deep.
//! Calls through function pointers or into functions without a body issue as one instruction
//! with unknown results (a note says so).
//!
//! Unknown data ([`UnknownData`]). `Worst` (the default) follows wang2019's conservative rule: a
//! forward branch whose predicate is unknown for some lanes runs both sides, an instruction whose
//! guard is unknown executes, and an unknown address is a sector of its own. `Best` takes the
//! cheapest legal reading: such lanes skip to the branch's reconvergence point when one side
//! goes straight there (else fall through), do not execute guarded instructions, and unknown
//! addresses sit side by side (coalesced), the same for every warp (so they hit in the caches).
//! Under both, a backward (loop) branch on unknown data leaves the loop (one more iteration
//! would be a guess). All of it is reported in the notes and counted in [`DataDependence`]. A
//! per-warp step budget stops runaway loops with an error.
//!
//! Atomics (`atom`, `red`) are accesses of their own: the lanes' addresses, the most lanes on
//! one address and the global addresses updated (`WarpTrace::atomic_targets`) are recorded; the
//! result of `atom` and the memory they update are unknown afterwards.
//!
//! Sampling: blocks at the first, middle and last position of each grid dimension (up to 27
//! blocks) stand for all blocks; every warp of a sampled block is emulated (partial warps
//! included), in launch order. `Sampling::All` emulates every block. The blocks launched right
//! after the representative block run at the same time on other SMs and share the L2 with it:
//! up to [`Options::wave_blocks`] of them are emulated too (within
//! [`Options::wave_budget_instructions`]) and listed in [`Emulation::wave`]; they stand for no
//! other block. So is the block launched one grid row earlier ([`Emulation::above`], within the
//! same budget): a block's neighbour in y, whose reads a stencil or a matrix product repeats.
//!
//! What it does NOT do: follow indirect calls, jump tables, or global stores; compute atomics'
//! results or texture layouts; time anything (that is `model::trace_sim`).

mod alu;
pub mod args;
pub mod decode;
pub mod dependence;
pub mod hints;
pub mod kernel_file;
pub mod launch;
mod memstate;
pub mod sampling;
mod warp;

use std::collections::BTreeSet;

use crate::error::{Error, Result};
use crate::workload::trace::WarpTrace;
use decode::{decode, DInst};
use kerneltime_ptx::ast::Module;
use kerneltime_ptx::cfg::Cfg;
use kerneltime_ptx::diag::Diagnostics;
pub use warp::local_sector_address;
use warp::{Emulator, GlobalHint};

pub use args::{
    entry_diagnostic, find_entry, param_index, resolve_args, resolve_entry_name, ArgValue,
    KernelArg, ParamValue, ResolvedArgs,
};
pub use hints::{BufferHint, DataArg, DataHint, DataSpec};
pub use launch::LaunchDims;
pub use sampling::{positions, representative, SampledBlock, Sampling};

/// Lanes per warp.
pub const WARP: usize = 32;

/// Default budget of dynamic instructions per warp.
pub const DEFAULT_STEP_BUDGET: u64 = 4_000_000;

/// Default budget of warp instructions per launch, over every emulated warp of every sampled
/// block: under 1 GB of traces and about ten seconds of emulation on a laptop core.
pub const DEFAULT_LAUNCH_BUDGET: u64 = 32_000_000;

/// How lanes whose branch predicate, guard or address depends on unknown data are taken (module
/// doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UnknownData {
    /// wang2019's conservative rule: both sides run, guarded code executes, scattered addresses.
    #[default]
    Worst,
    /// The cheapest legal reading: conditional code skipped, coalesced addresses.
    Best,
}

/// Further blocks that run at the same time as the representative one, emulated by default.
pub const DEFAULT_WAVE_BLOCKS: u32 = 3;
/// Warp instructions the wave blocks may add to an emulation by default.
pub const DEFAULT_WAVE_BUDGET_INSTRUCTIONS: u64 = 300_000;

/// Emulation options.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub step_budget: u64,
    /// Most warp instructions the whole launch may issue ([`DEFAULT_LAUNCH_BUDGET`]).
    pub launch_budget: u64,
    pub sampling: Sampling,
    pub unknown: UnknownData,
    /// Blocks launched right after the representative one (they run at the same time on other
    /// SMs) to emulate for the L2 they share.
    pub wave_blocks: u32,
    /// Most warp instructions those blocks may add (each costs what the representative block
    /// issued); fewer blocks are emulated when they would exceed it.
    pub wave_budget_instructions: u64,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            step_budget: DEFAULT_STEP_BUDGET,
            launch_budget: DEFAULT_LAUNCH_BUDGET,
            sampling: Sampling::Classes,
            unknown: UnknownData::Worst,
            wave_blocks: DEFAULT_WAVE_BLOCKS,
            wave_budget_instructions: DEFAULT_WAVE_BUDGET_INSTRUCTIONS,
        }
    }
}

/// What the emulation could not know, summed over the emulated warps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct DataDependence {
    /// Branch executions whose predicate depended on unknown data for some lane.
    pub branches: u64,
    /// Lanes of accesses whose address depended on unknown data.
    pub unknown_address_lanes: u64,
    /// Lanes of predicated instructions whose guard depended on unknown data.
    pub unknown_guard_lanes: u64,
}

impl DataDependence {
    /// Whether the best and worst readings of unknown data can differ.
    pub fn any(&self) -> bool {
        self.branches + self.unknown_address_lanes + self.unknown_guard_lanes > 0
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
    /// Linear indices of the emulated blocks that run at the same time as the representative
    /// block, the representative first (see the module doc).
    pub wave: Vec<u64>,
    /// The emulated block launched one grid row (`gridDim.x` blocks) before the representative
    /// one, when the grid has more than one row: what it read may still be in the L2 when the
    /// representative block reads its own neighbouring rows (see the module doc).
    pub above: Option<u64>,
    /// How unknown data were read.
    pub unknown: UnknownData,
    /// What depended on unknown data.
    pub data_dependence: DataDependence,
    /// [`Emulation::footprint`], computed on first use from `warps` and `sampled_blocks` (an
    /// emulation is not changed after it is made).
    footprint: std::sync::OnceLock<Footprint>,
    /// [`Emulation::parallelism`], likewise.
    parallelism: std::sync::OnceLock<Vec<(f64, f64)>>,
}

/// The global sectors the sampled blocks (those standing for at least one block of the launch)
/// load or store without atomics, in two sets, sectors read and sectors written: per block the
/// sectors of a set only that block touched, and how many of a set's sectors several blocks
/// touched. The launch's compulsory DRAM and L2 traffic (`model::bounds`) follow from it with
/// the blocks each sampled block stands for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Footprint {
    /// Sectors (of either set) that more than one sampled block touched.
    pub shared_sectors: u64,
    /// Per sampled block (linear index): its sectors (of either set) no other block touched.
    pub own_sectors: std::collections::BTreeMap<u64, u64>,
}

/// Register numbers an instruction writes and reads (`NO_REG` for an empty slot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstrRegs {
    pub dst: [u16; 4],
    pub src: [u16; 6],
}

/// An empty slot of [`InstrRegs`].
pub const NO_REG: u16 = u16::MAX;

/// One more than the highest register number `regs` write or read (0 when none): the size of a
/// table indexed by register.
pub fn register_count(regs: &[InstrRegs]) -> usize {
    regs.iter()
        .flat_map(|r| r.dst.iter().chain(&r.src))
        .filter(|&&x| x != NO_REG)
        .map(|&x| usize::from(x) + 1)
        .max()
        .unwrap_or(0)
}

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
    for (slot, x) in r.src.iter_mut().zip(d.source_regs()) {
        *slot = x;
    }
    r
}

impl Emulation {
    /// This emulation without its warp traces, sampled blocks and register table: what a kept
    /// simulation's inputs hold on to (nothing can be simulated from it again).
    pub fn without_traces(&self) -> Emulation {
        Emulation {
            entry: self.entry.clone(),
            launch: self.launch,
            warps: Vec::new(),
            sampled_blocks: Vec::new(),
            params: self.params.clone(),
            shared_bytes_static: self.shared_bytes_static,
            notes: self.notes.clone(),
            regs: Vec::new(),
            wave: Vec::new(),
            above: None,
            unknown: self.unknown,
            data_dependence: self.data_dependence,
            footprint: std::sync::OnceLock::new(),
            parallelism: std::sync::OnceLock::new(),
        }
    }
    /// The traces of one sampled block.
    pub fn block_warps(&self, linear: u64) -> impl Iterator<Item = &WarpTrace> {
        self.warps.iter().filter(move |w| w.block_linear == linear)
    }

    /// The sampled blocks' global sectors ([`Footprint`]), counted once per emulation: every
    /// device's bound reads the same one.
    pub fn footprint(&self) -> &Footprint {
        self.footprint.get_or_init(|| {
            use crate::workload::trace::{Atomic, MemSpace};
            let counted: crate::hash::FastSet<u64> = self
                .sampled_blocks
                .iter()
                .filter(|b| b.represents > 0)
                .map(|b| b.linear)
                .collect();
            // sector -> (first block, touched by several), for sectors read and sectors
            // written: a sector a kernel loads and then stores crosses the DRAM bus twice
            // (read, then the dirty sector written back), one it only stores once.
            let mut sectors: [crate::hash::FastMap<u64, (u64, bool)>; 2] = Default::default();
            for t in self
                .warps
                .iter()
                .filter(|t| counted.contains(&t.block_linear))
            {
                for a in &t.accesses {
                    if a.space != MemSpace::Global || a.atomic != Atomic::No {
                        continue;
                    }
                    let touched = &mut sectors[usize::from(a.store)];
                    for &s in &t.sector_ids[a.sector_start as usize..a.sector_end as usize] {
                        let e = touched.entry(s).or_insert((t.block_linear, false));
                        if e.0 != t.block_linear {
                            e.1 = true;
                        }
                    }
                }
            }
            // Counted per block in block order, so that the sums do not depend on the order a
            // hash map hands the sectors out.
            let mut f = Footprint::default();
            for (b, shared) in sectors.iter().flat_map(|m| m.values()) {
                if *shared {
                    f.shared_sectors += 1;
                } else {
                    *f.own_sectors.entry(*b).or_default() += 1;
                }
            }
            f
        })
    }

    /// ILP and MLP of each warp, in `warps` order ([`dependence`]), analysed once per
    /// emulation: every device's figures read the same.
    pub fn parallelism(&self) -> &[(f64, f64)] {
        self.parallelism
            .get_or_init(|| dependence::parallelism(self))
    }

    /// The distinct global sectors one emulated block reads or writes.
    pub fn block_global_sectors(&self, linear: u64) -> std::collections::HashSet<u64> {
        use crate::workload::trace::MemSpace;
        self.block_warps(linear)
            .flat_map(|w| {
                w.accesses
                    .iter()
                    .filter(|a| a.space == MemSpace::Global)
                    .flat_map(|a| &w.sector_ids[a.sector_start as usize..a.sector_end as usize])
            })
            .copied()
            .collect()
    }

    /// How much of the representative block's global data its neighbours read too, from the
    /// emulated neighbours (see [`Sharing`]); `None` when neither the next block nor the block
    /// one grid row earlier was emulated.
    pub fn sharing(&self) -> Option<Sharing> {
        let rep = representative(&self.sampled_blocks)?.linear;
        let next = (self.wave.first() == Some(&rep))
            .then(|| self.wave.get(1).copied())
            .flatten();
        if next.is_none() && self.above.is_none() {
            return None;
        }
        let own = self.block_global_sectors(rep);
        let new_share = |of: &std::collections::HashSet<u64>,
                         seen: &std::collections::HashSet<u64>| {
            if of.is_empty() {
                1.0
            } else {
                of.iter().filter(|s| !seen.contains(s)).count() as f64 / of.len() as f64
            }
        };
        Some(Sharing {
            block_sectors: own.len(),
            new_along_x: next.map(|b| new_share(&self.block_global_sectors(b), &own)),
            new_along_y: self
                .above
                .map(|a| new_share(&own, &self.block_global_sectors(a))),
        })
    }
}

/// How much of a block's global data (sectors) its neighbouring blocks also read: a stencil's
/// halo, the rows of a matrix its neighbours share. The first block to touch a sector brings it
/// from DRAM; the others find it in the L2 when they run close enough in time. Measured on the
/// representative block: along x, the share of the next block's sectors the representative did
/// not read; along y, the share of the representative's sectors the block one grid row earlier
/// did not read. A block adds about `block_sectors x new_along_x x new_along_y` sectors to what
/// its neighbours read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sharing {
    /// Distinct global sectors of the representative block.
    pub block_sectors: usize,
    /// The share of the next block's sectors that are new (`None`: not emulated).
    pub new_along_x: Option<f64>,
    /// The share of the representative's sectors the block a grid row earlier did not read
    /// (`None`: the grid has one row).
    pub new_along_y: Option<f64>,
}

impl Sharing {
    /// The share of a block's sectors that no neighbour read (1 when nothing is shared); the
    /// neighbour a grid row earlier counts only `along_y`.
    pub fn new_fraction(&self, along_y: bool) -> f64 {
        self.new_along_x.unwrap_or(1.0) * self.new_along_y.filter(|_| along_y).unwrap_or(1.0)
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
    emulate_with(m, entry, launch, args, &[], opts)
}

/// [`emulate`] with data hints for pointer parameters.
pub fn emulate_with(
    m: &Module,
    entry: &str,
    launch: LaunchDims,
    args: &[KernelArg],
    data: &[BufferHint],
    opts: Options,
) -> Result<Emulation> {
    let f = find_entry(m, entry)?;
    launch.validate(f)?;
    let address_bits = m.address_size.unwrap_or(64);
    let resolved = resolve_args(f, args, address_bits)?;
    let params = &resolved.values;
    let mut notes = Vec::new();
    let mut globals = Vec::new();
    for h in data {
        // A name that is no parameter may be a module variable: a `__constant__` or
        // `__device__` array the host fills before the launch (`cudaMemcpyToSymbol`).
        let k = match param_index(f, &h.param, "data") {
            Ok(k) => k,
            Err(e) => {
                let Some((base, size)) = decode::module_variable(m, f, h.param.trim()) else {
                    let vars: Vec<&str> = decode::hintable_variables(m)
                        .map(|v| v.name.as_str())
                        .collect();
                    if vars.is_empty() {
                        return Err(e);
                    }
                    let params: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).collect();
                    return Err(Error::invalid(
                        "data",
                        format!(
                            "`{}` names neither a parameter of kernel `{}` (by name or position 0..{}: {}) nor a constant or global variable of the module ({})",
                            h.param.trim(),
                            f.name,
                            params.len(),
                            params.join(", "),
                            vars.join(", ")
                        ),
                    ));
                };
                notes.push(format!(
                    "data hint: loads from the module variable `{}` ({size} bytes) read {}",
                    h.param.trim(),
                    h.hint.describe()
                ));
                globals.push(GlobalHint {
                    base,
                    end: base.saturating_add(size.max(1)),
                    hint: h.hint.clone(),
                });
                continue;
            }
        };
        let p = &f.params[k];
        let address_type = if address_bits == 32 {
            matches!(p.ty.as_str(), "u32" | "b32" | "s32")
        } else {
            matches!(p.ty.as_str(), "u64" | "b64" | "s64")
        };
        let Some(base) = params[k].filter(|_| address_type && p.array.is_none()) else {
            return Err(Error::invalid(
                "data",
                format!(
                    "`{}` is a .{} parameter, not a pointer: a data hint describes the buffer a pointer argument points to",
                    p.name, p.ty
                ),
            ));
        };
        let end = match h.hint.extent_bytes(1) {
            Some(n) if matches!(h.hint, DataHint::Bytes(_)) => base.saturating_add(n),
            _ => base.saturating_add(1 << decode::GLOBAL_STRIDE_SHIFT),
        };
        notes.push(format!(
            "data hint: loads from `{}` read {}",
            p.name,
            h.hint.describe()
        ));
        globals.push(GlobalHint {
            base,
            end,
            hint: h.hint.clone(),
        });
    }
    let mut diags = Diagnostics::default();
    let cfg = Cfg::build(f, &mut diags);
    let dec = decode(m, f, &cfg);
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
        resolved.values.clone(),
        resolved.fields.clone(),
        launch,
        globals,
        &opts,
    );
    let mut blocks = sampling::blocks(&launch, opts.sampling);
    let mut warps = Vec::new();
    let mut seen_notes = BTreeSet::new();
    let mut keep = |traces: Vec<WarpTrace>, warps: &mut Vec<WarpTrace>, notes: &mut Vec<String>| {
        for t in traces {
            for n in &t.notes {
                if seen_notes.insert(n.clone()) {
                    notes.push(n.clone());
                }
            }
            warps.push(t);
        }
    };
    for b in &blocks {
        let traces = em.run_block(b.block)?;
        keep(traces, &mut warps, &mut notes);
    }
    // The blocks launched right after the representative one share the L2 with it.
    let mut wave = Vec::new();
    let mut added = 0;
    let (mut above, mut above_added) = (None, 0);
    if let Some(rep) = representative(&blocks).cloned() {
        wave.push(rep.linear);
        let cost: u64 = warps
            .iter()
            .filter(|w| w.block_linear == rep.linear)
            .map(|w| w.ops.len() as u64)
            .sum::<u64>()
            .max(1);
        let mut budget = opts.wave_budget_instructions;
        for j in 1..=u64::from(opts.wave_blocks) {
            let lin = rep.linear + j;
            if lin >= launch.blocks() {
                break;
            }
            if blocks.iter().any(|b| b.linear == lin) {
                wave.push(lin);
                continue;
            }
            if cost > budget {
                break;
            }
            budget -= cost;
            let block = sampling::block_at(&launch, lin);
            let traces = em.run_block(block)?;
            keep(traces, &mut warps, &mut notes);
            blocks.push(SampledBlock {
                block,
                linear: lin,
                represents: 0,
                class: "wave".into(),
            });
            wave.push(lin);
            added += 1;
        }
        // The block one grid row earlier: a stencil's or a matrix product's neighbour in y.
        let gx = u64::from(launch.grid[0]);
        if rep.linear >= gx {
            let lin = rep.linear - gx;
            if blocks.iter().any(|b| b.linear == lin) {
                above = Some(lin);
            } else if cost <= budget {
                let block = sampling::block_at(&launch, lin);
                let traces = em.run_block(block)?;
                keep(traces, &mut warps, &mut notes);
                blocks.push(SampledBlock {
                    block,
                    linear: lin,
                    represents: 0,
                    class: "above".into(),
                });
                above = Some(lin);
                above_added = 1;
            }
        }
    }
    // Launch order: the wave blocks among the sampled ones.
    blocks.sort_by_key(|b| b.linear);
    warps.sort_by_key(|w| w.block_linear);
    let sampled = blocks.len() - added - above_added;
    notes.push(format!(
        "emulated {} warps of {sampled} sampled blocks out of {} blocks ({} warps per block)",
        warps.len(),
        launch.blocks(),
        launch.warps_per_block()
    ));
    if added > 0 {
        notes.push(format!(
            "emulated {added} more blocks launched right after the representative block {} (they run at the same time and share the L2)",
            wave[0]
        ));
    }
    if let Some(a) = above {
        notes.push(format!(
            "emulated block {a}, launched one grid row ({} blocks) before the representative block, for what it leaves in the L2",
            launch.grid[0]
        ));
    }
    let mut dd = DataDependence::default();
    for w in &warps {
        dd.branches += w.data_dependent_branches;
        dd.unknown_address_lanes += w.unknown_address_lanes;
        dd.unknown_guard_lanes += w.unknown_guard_lanes;
    }
    Ok(Emulation {
        entry: entry.to_string(),
        launch,
        warps,
        sampled_blocks: blocks,
        params: resolved.report,
        shared_bytes_static: dec.shared_bytes,
        notes,
        regs: dec.insts.iter().map(instr_regs).collect(),
        wave,
        above,
        unknown: opts.unknown,
        data_dependence: dd,
        footprint: std::sync::OnceLock::new(),
        parallelism: std::sync::OnceLock::new(),
    })
}
