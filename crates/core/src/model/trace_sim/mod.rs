//! The `trace` model (wang2019, SPEC.md section 4): one round of active blocks simulated on the
//! warp pipeline of one SM, then scaled to the launch with eq 8.
//!
//! - Active blocks per SM: exact occupancy (`device::occupancy`), limited to the blocks each SM
//!   actually gets (`ceil(blocks / N_SM)`): `n_round = min(N_awg, ceil(blocks / N_SM))`.
//! - Traces: every block of the round replays the warps of the most representative sampled block
//!   (the interior class). Runs of non-memory instructions form one *comp* operation (Fig 2's
//!   "comp"), timed by an in-order scoreboard over the registers each instruction reads and
//!   writes (`Scoreboard`): an instruction issues one dispatch after the one before it, when
//!   its unit (integer, fp32, fp64, special function, conversions; each takes a warp
//!   instruction every `32 / (results per clock per SM / schedulers)` cycles, side by side;
//!   shifts and compares take the integer unit at their own rates; what ptxas folds, predicate
//!   logic into a compare and fixed-address constants into operands, is not issued; a
//!   constant at a register address is an `LDC`, its result `const_ldc` later) is free
//!   and its operands are ready; an instruction after a branch waits until the branch has
//!   resolved (the integer latency). The comp operation holds the warp's scheduler for its
//!   dispatches or its busiest unit, whichever is longer, and the warp until its last result is
//!   ready: a dependent chain costs the sum of its latencies, independent chains overlap. A run
//!   of the same instructions as an earlier one (a loop body) takes that run's result without
//!   the scoreboard when the costs make it exact (`Compressor::cached_run`).
//!   IEEE fp32/fp64 divide, reciprocal and square root are their SASS sequences (a special-
//!   function seed and a dependent fma chain). A global or local access holds the SM's
//!   load/store path for its transfer time (sectors through L1, missing sectors at the DRAM
//!   rate per SM); a store or atomic holds the warp for its latency, a load's result comes
//!   the expected latency of its sectors later (L1 hit, L2 hit, DRAM by the cache
//!   simulation; see *Memory latency and active warps* below) and is waited for as a shared
//!   load's is (below). The cache simulation
//!   runs the representative block with the wave blocks launched right after it (an L1 each,
//!   the L2 scaled to their share of the data the resident blocks read, which neighbouring
//!   blocks share: [`L2Share`]); when the block one grid row earlier
//!   was emulated and a grid row of blocks reads less than the L2 holds, what that block read
//!   is left in the L2 first (a stencil's or a matrix product's neighbour in y). A shared
//!   access holds the shared-memory path for one 128-byte wavefront per conflict way, at the
//!   architecture's `shared_bytes_per_clk_sm`, at least for its active lanes at the
//!   `shared_lanes_per_clk_sm` of the SM's load/store units, and at least for the bytes it
//!   moves to or from the lanes' registers at `shared_bytes_per_clk_sm` (a broadcast `LDS.128`
//!   still returns 512 bytes: NVIDIA's answer on its developer forum, "Unexpected shared memory
//!   bank conflict" (2019): the return bandwidth is 128 bytes a cycle, one register, so an
//!   `LDS.128` takes 4 requests). A load, shared, global or local, holds the warp only
//!   while its path takes it, and its result is waited for by the first instruction that
//!   reads it, one latency after the load as ptxas places it: moved up ahead of independent
//!   instructions by up to its latency, not above the last branch, barrier, store or atomic,
//!   nor above the instruction that made its address (`Compressor::load`); so independent
//!   loads overlap and a pointer chase is serialized (a load right after a load of the same
//!   path joins its path operation: `Compressor::push_load`). The comp run before a load ends
//!   at its last dispatch, its results pending the same way. A barrier holds the warp's
//!   scheduler for its share of the architecture's `barrier_per_clk_sm`, then waits for every
//!   unfinished warp of its block.
//! - Fig 2's rule: before each operation a warp checks the resource; if busy it waits until it
//!   frees, then locks it and reports the operation's latency; the timer advances to the smallest
//!   pending report (an event queue ordered by time, ties by warp). A scheduler serves its warps
//!   in the order they are ready; the load/store and shared paths, which every scheduler
//!   shares, in the order requests are issued (a warp held up behind another's long comp asks
//!   for the path when its scheduler issues the request, not before). The simulation itself
//!   is [`round`]; times there are integers in 1/1024 cycle.
//! - Large traces ([`Overlap`]): the cache simulation and the compression run on a second thread
//!   and stream the warp programs into the round as they are known, so the two overlap (the
//!   caches start beside the DRAM row pass, whose costs the compression waits for); the result
//!   is the same as one after the other (tested).
//! - Eq 8: `T = T_pipeline(n_round) * ceil(blocks / N_SM) / n_round`, cycles, then microseconds
//!   via the device clock.
//!
//!
//! Memory latency and active warps ([`LatencyRule`]). SPEC.md section 4 scales the memory
//! latency by `max warps per SM / active warps` ("bandwidth sharing"). Read literally, that
//! makes a load 32 times slower when 2 of 64 warps are active, when in fact a lone warp sees
//! the unloaded latency and it is a *full* SM whose requests queue. The default,
//! `LatencyRule::Queueing`, therefore uses the unloaded latency (the table's L1/L2/DRAM values,
//! measured by micro-benchmarks with one warp) and lets the queueing come from the simulation:
//! every request holds the SM's load/store path for its transfer time, missing sectors at the
//! SM's share of DRAM bandwidth, and later requests wait for it, so a round with many
//! outstanding requests sees a latency of roughly `max(unloaded, queue length x transfer time)`
//! and one with few warps sees the unloaded one. Scaling the latency as well would count the
//! bandwidth sharing twice. `LatencyRule::PaperWarpRatio` keeps the literal reading for
//! reproducing wang2019.
//!
//! Pure: no I/O, and the second thread changes no result. It does not emulate (see `emulate`)
//! and does not add launch overhead.

use crate::device::latencies::Resolved as LatencyTable;
use crate::device::occupancy::{occupancy, BlockResources};
use crate::device::Device;
use crate::emulate::{Emulation, InstrRegs, NO_REG};
use crate::error::{Error, Result};
use crate::memory::cache::{self, CacheResult};
use crate::model::bounds;
use crate::model::registry::{Inputs, Model, ModelId, ParamSpec, Source};
use crate::model::Prediction;
use crate::workload::trace::{Atomic, LatencyClass, MemSpace, TraceOp, WarpTrace};
use crate::workload::Launch;
use std::sync::Arc;

pub mod round;
pub mod spills;

pub use round::TICKS_PER_CYCLE;

/// The pipeline time (cycles) of one round of `blocks` blocks of complete warp programs: see
/// [`round::simulate`].
pub fn simulate_round(warps: &[Vec<SimOp>], blocks: usize, schedulers: u32) -> f64 {
    round::simulate(&mut round::Programs::complete(warps), blocks, schedulers)
}

/// The model's registry name.
pub const MODEL: ModelId = ModelId::Trace;

/// Bytes per sector.
const SECTOR: f64 = 32.0;
/// L1 bandwidth per SM, bytes per clock (126-128 B/clk/SM on V100/A100/H100: arch_latencies.md).
const L1_BYTES_PER_CLK: f64 = 128.0;

/// How the memory latency of a round depends on its number of active warps (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LatencyRule {
    /// The unloaded latency; contention comes from queueing on the SM's load/store path.
    #[default]
    Queueing,
    /// SPEC.md section 4 read literally: latency x max warps per SM / active warps.
    PaperWarpRatio,
}

impl LatencyRule {
    /// The factor on every load latency for a round of `active_warps` warps.
    pub fn scale(self, max_warps_per_sm: u32, active_warps: u32) -> f64 {
        match self {
            LatencyRule::Queueing => 1.0,
            LatencyRule::PaperWarpRatio => {
                f64::from(max_warps_per_sm) / f64::from(active_warps.max(1))
            }
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            LatencyRule::Queueing => "queueing",
            LatencyRule::PaperWarpRatio => "paper-warp-ratio",
        }
    }
}

/// What the kernel asks of an SM (from a resource report or defaults).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct KernelResources {
    pub registers_per_thread: u32,
    /// Static plus dynamic shared memory per block.
    pub shared_bytes_per_block: u32,
    /// Bytes of spill stores and spill loads in the code (`ptxas -v`), per thread.
    pub spill_store_bytes: u32,
    pub spill_load_bytes: u32,
}

impl KernelResources {
    /// The resources a loaded PTX kernel file gives.
    pub fn of_file(file: &crate::emulate::kernel_file::KernelFile) -> Self {
        Self {
            registers_per_thread: file.registers_per_thread,
            shared_bytes_per_block: file.shared_bytes_per_block,
            spill_store_bytes: file.spill_store_bytes,
            spill_load_bytes: file.spill_load_bytes,
        }
    }
}

/// One operation of the compressed trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SimOp {
    /// Holds the warp's scheduler for `occupy` cycles, the warp for `latency`.
    Comp {
        occupy: f64,
        latency: f64,
    },
    /// Holds the load/store path for `occupy`, the warp for `latency`.
    Global {
        occupy: f64,
        latency: f64,
    },
    Shared {
        occupy: f64,
        latency: f64,
    },
    Barrier,
}

/// Per-operation cycles derived from the latency table and the device.
#[derive(Debug, Clone, Copy)]
pub struct Costs {
    pub schedulers: u32,
    /// Cycles the SM's share of the achievable DRAM bandwidth takes per 32-byte sector.
    pub dram_cycles_per_sector: f64,
    /// Cycles the SM's share of the L2 bandwidth takes per sector.
    pub l2_cycles_per_sector: f64,
    pub memory_latency_scale: f64,
}

impl Costs {
    /// Costs with no L2 bandwidth limit (tests of the round alone).
    pub fn new(schedulers: u32, dram_cycles_per_sector: f64, memory_latency_scale: f64) -> Self {
        Self {
            schedulers,
            dram_cycles_per_sector,
            l2_cycles_per_sector: 0.0,
            memory_latency_scale,
        }
    }
}

/// The units that execute non-memory warp instructions, side by side: integer, fp32, fp64,
/// special functions, 32-bit and 64-bit conversions (the classes of `bounds::unit_rate`).
const PIPES: usize = 6;
const INT: u8 = 0;
const FP32: u8 = 1;
const FP64: u8 = 2;
const SFU: u8 = 3;
const CVT: u8 = 4;
const CVT64: u8 = 5;
/// Instructions no unit of [`PIPES`] executes (constant and parameter operands): dispatch only.
const NO_PIPE: u8 = u8::MAX;

/// The dependent fma steps of an IEEE fp32 divide after its reciprocal seed, as ptxas emits it
/// for sm_52 and sm_86 (checked with the toolchain's cuobjdump): `MUFU.RCP`, `FCHK`, five
/// `FFMA`, a branch around the slow path; reciprocal and square root take three or four.
pub const FP32_SEQUENCE_FMAS: f64 = 5.0;
/// The same for fp64: `MUFU.RCP64H`, then eight dependent `DFMA`/`DMUL` (sm_86).
pub const FP64_SEQUENCE_FMAS: f64 = 8.0;

/// ptxas's slow path of an IEEE fp32 divide (`div.rn.f32`) for a zero, infinite or NaN operand,
/// as the sm_86 SASS of the project's build of the pnpoly tuning kernel executes it (CUDA 13.5
/// ptxas, read with cuobjdump; the sm_75 subroutine is the same): the call (two moves and
/// `CALL`), the exponent extraction and range test (`SHF` x2, `LOP3` x2, `IADD3` x2, `ISETP` x2,
/// a predicated `MOV`, a branch), the NaN test (`FSETP` x2, `PLOP3`, a branch), the zero test
/// (`LOP3`, a branch), the result (`MUFU.RSQ` of a NaN, a branch) and the return (two moves,
/// `RET`): 24 instructions. A quotient out of range takes the longer rescaling path (about 70
/// instructions); it is counted as this one.
pub struct SlowDivide;

impl SlowDivide {
    /// Every instruction of the path.
    pub const DISPATCHES: f64 = 24.0;
    /// Those on the integer unit: the 14 integer, compare and predicate instructions and the 6
    /// branches (the model's branches take the integer unit); three `IMAD.MOV` run on the fma
    /// pipe and one `MUFU.RSQ` on the special-function unit.
    pub const INTEGER: f64 = 20.0;
    /// Branches of the path (`CALL`, four `BRA`, `RET`): each holds the warp's next dispatch
    /// until it resolves.
    pub const BRANCHES: f64 = 6.0;
    /// Integer-latency steps on the path's dependent chain: the call, six to the exponent test's
    /// branch, three to the NaN test's, two to the zero test's, the move and the return after the
    /// special-function result.
    pub const CHAIN: f64 = 14.0;

    /// The path's dependent latency after the fast sequence: its integer chain and the
    /// special-function result.
    pub fn latency(l: &crate::device::latencies::Latencies) -> f64 {
        Self::CHAIN * l.int + l.special
    }
}

/// The dependent latency of an IEEE divide, reciprocal or square root: the seed, then the fma
/// chain (fp32 or fp64).
pub fn sequence_latency(l: &crate::device::latencies::Latencies, fp64: bool) -> f64 {
    if fp64 {
        l.special + FP64_SEQUENCE_FMAS * l.fp64
    } else {
        l.special + FP32_SEQUENCE_FMAS * l.fp32
    }
}

/// One step of an instruction on the scoreboard: its latency from issue to result, the unit it
/// holds and for how many cycles, the scheduler dispatches it takes (a SASS sequence lumped
/// into one step takes several) and how many more cycles pass before the warp's next dispatch
/// (a branch: a GPU fetches the next instruction once the branch has resolved, after its
/// latency). A step after the first waits for the one before it.
#[derive(Debug, Clone, Copy)]
struct Step {
    latency: f64,
    cycles: f64,
    unit: u8,
    dispatches: f64,
    resolve: f64,
}

/// The steps of an instruction class (the later ones are absent when their `dispatches` is
/// zero).
type ClassCost = [Step; 3];

const NONE: Step = Step {
    latency: 0.0,
    cycles: 0.0,
    unit: NO_PIPE,
    dispatches: 0.0,
    resolve: 0.0,
};

/// What a non-memory instruction of class `c` costs: its dependent-issue latency, the cycles it
/// holds its unit (`32 / (results per clock per SM / schedulers)`, at least one) and the unit;
/// IEEE divide, reciprocal and square root as their SASS sequences.
fn class_costs(
    l: &crate::device::latencies::Latencies,
    schedulers: f64,
    c: LatencyClass,
) -> ClassCost {
    let issue = |per_clk_sm: f64| (32.0 / (per_clk_sm / schedulers).max(1e-9)).max(1.0);
    let one = |latency: f64, cycles: f64, unit: u8| {
        [
            Step {
                latency,
                cycles,
                unit,
                dispatches: 1.0,
                resolve: 0.0,
            },
            NONE,
            NONE,
        ]
    };
    let int = issue(l.int_per_clk_sm);
    // A branch resolves after the integer latency; the next instruction is dispatched then.
    let branch = Step {
        resolve: (l.int - 1.0).max(0.0),
        ..one(l.int, int, INT)[0]
    };
    let (fp32, fp64, sfu) = (
        issue(l.fp32_per_clk_sm),
        issue(l.fp64_per_clk_sm),
        issue(l.sfu_per_clk_sm),
    );
    // The seed on the special-function unit with the range check, then the dependent fma chain
    // and the branch around the slow path. The fp32 divide's range check (`FCHK`) is a second
    // special-function instruction: ptxas puts an 8-cycle stall between `MUFU.RCP` and the
    // independent `FCHK` after it on sm_75 and sm_86, the cycles the unit is busy with the seed
    // (4 lanes per scheduler at 16 results per clock per SM), where an fma-pipe instruction
    // would follow at once. Reciprocal, square root and fp64 check with integer or fp compares.
    let sequence = |sfu_ops: f64, fmas: f64, fma_latency: f64, fma_cycles: f64, unit: u8| {
        [
            Step {
                latency: l.special,
                cycles: sfu_ops * sfu,
                unit: SFU,
                dispatches: 2.0,
                resolve: 0.0,
            },
            Step {
                latency: fmas * fma_latency,
                cycles: fmas * fma_cycles,
                unit,
                dispatches: fmas + 1.0,
                resolve: branch.resolve,
            },
            NONE,
        ]
    };
    // The divide's slow path after its fast sequence (see [`SlowDivide`]): its `MUFU.RSQ` is a
    // third special-function instruction of the first step; the rest is integer work on a
    // dependent chain of branches.
    let slow_divide = || {
        let [mut seed, fmas, _] = sequence(3.0, FP32_SEQUENCE_FMAS, l.fp32, fp32, FP32);
        seed.dispatches += 1.0;
        let path = Step {
            latency: SlowDivide::latency(l),
            cycles: SlowDivide::INTEGER * int,
            unit: INT,
            dispatches: SlowDivide::DISPATCHES - 1.0,
            resolve: SlowDivide::BRANCHES * branch.resolve,
        };
        [seed, fmas, path]
    };
    match c {
        LatencyClass::Branch => [branch, NONE, NONE],
        LatencyClass::Int | LatencyClass::Other | LatencyClass::Warp => one(l.int, int, INT),
        // Shifts and compares take the integer unit at their own rate (half the add rate on
        // 5.x and 6.x, a fifth of it for 3.0 shifts).
        LatencyClass::Shift => one(l.int, issue(l.shift_per_clk_sm), INT),
        LatencyClass::Compare => one(l.int, issue(l.compare_per_clk_sm), INT),
        // One IMAD, or on 5.x/6.x three XMADs, at the multiply rate.
        LatencyClass::IntMul => [
            Step {
                dispatches: l.int_mul_instructions,
                ..one(
                    l.int_mul,
                    l.int_mul_instructions * issue(l.int_mul_per_clk_sm),
                    INT,
                )[0]
            },
            NONE,
            NONE,
        ],
        LatencyClass::IntDiv => one(l.int_div, int * 8.0, INT),
        LatencyClass::Fp32 => one(l.fp32, fp32, FP32),
        LatencyClass::Fp64 => one(l.fp64, fp64, FP64),
        LatencyClass::Special => one(l.special, sfu, SFU),
        LatencyClass::Fp32Sequence => sequence(1.0, FP32_SEQUENCE_FMAS, l.fp32, fp32, FP32),
        LatencyClass::Fp32Divide => sequence(2.0, FP32_SEQUENCE_FMAS, l.fp32, fp32, FP32),
        LatencyClass::Fp32DivideSlow => slow_divide(),
        LatencyClass::Fp64Sequence => sequence(1.0, FP64_SEQUENCE_FMAS, l.fp64, fp64, FP64),
        LatencyClass::Convert => one(l.convert, issue(l.convert_per_clk_sm), CVT),
        LatencyClass::Convert64 => one(l.convert, issue(l.convert64_per_clk_sm), CVT64),
        LatencyClass::Param => one(l.const_, 1.0, NO_PIPE),
        // A constant load at a register address is an LDC through the constant cache.
        LatencyClass::ConstLoad => one(l.const_ldc, 1.0, NO_PIPE),
        // The barrier instruction's own issue: the scheduler's share of the SM's barrier rate.
        LatencyClass::Barrier => one(0.0, issue(l.barrier_per_clk_sm), NO_PIPE),
        // Folded by ptxas into a compare or an operand: no dispatch, no unit.
        LatencyClass::Folded => [NONE, NONE, NONE],
        // Memory classes are timed by the memory path; this is their issue slot.
        _ => one(l.int, 1.0, NO_PIPE),
    }
}

/// Compresses one warp's trace into simulation operations.
pub fn compress(
    w: &WarpTrace,
    regs: &[InstrRegs],
    hits: &[cache::AccessHits],
    lat: &crate::device::latencies::Latencies,
    costs: &Costs,
) -> Vec<SimOp> {
    let mut c = Compressor::new(w, regs, lat, costs);
    c.advance(hits, usize::MAX);
    c.finish()
}

/// For each warp, the first earlier warp of its kind (`None` for the first): the same
/// instructions and requests ([`compress_alike`]), so that two such warps with the same hits
/// compress to the same program. The warps of a block that take the same path differ only in
/// their addresses, and often not in their hits (dwt_matrix: 6 of 8 warps). Reading every
/// warp's instructions costs about 0.2 ms for 50,000 of them (memory-bound), against about 0.7
/// ms to compress them.
fn twins(warps: &[&WarpTrace]) -> Vec<Option<usize>> {
    let mut twin: Vec<Option<usize>> = Vec::with_capacity(warps.len());
    for (k, w) in warps.iter().enumerate() {
        let first = (0..k).find(|&j| twin[j].is_none() && compress_alike(warps[j], w));
        twin.push(first);
    }
    twin
}

/// Whether the compression reads the same of `a` and `b`: their instructions and their
/// requests' kinds and shapes (not their addresses, which the hits stand for).
fn compress_alike(a: &WarpTrace, b: &WarpTrace) -> bool {
    a.ops == b.ops
        && a.accesses.len() == b.accesses.len()
        && a.accesses.iter().zip(&b.accesses).all(|(u, v)| {
            u.space == v.space
                && u.store == v.store
                && u.lanes == v.lanes
                && u.sectors == v.sectors
                && u.lines == v.lines
                && u.bank_ways == v.bank_ways
                && u.bytes_per_lane == v.bytes_per_lane
                && u.atomic == v.atomic
                && u.same_address_lanes == v.same_address_lanes
                && u.distinct_addresses == v.distinct_addresses
        })
}

/// Whether warps `i` and `k` have the same instructions, by [`twins`]'s result.
fn same_kind(twin: &[Option<usize>], i: usize, k: usize) -> bool {
    twin[i].unwrap_or(i) == twin[k].unwrap_or(k)
}

/// [`compress`] for every warp, once for warps of a kind (see [`twins`]) with the same hits.
fn compress_all(
    warps: &[&WarpTrace],
    twin: &[Option<usize>],
    regs: &[InstrRegs],
    hits: &[Vec<cache::AccessHits>],
    lat: &crate::device::latencies::Latencies,
    costs: &Costs,
) -> Vec<Vec<SimOp>> {
    let mut programs: Vec<Vec<SimOp>> = Vec::with_capacity(warps.len());
    for (k, w) in warps.iter().enumerate() {
        let same =
            twin[k].and_then(|_| (0..k).find(|&j| same_kind(twin, j, k) && hits[j] == hits[k]));
        let program = match same {
            Some(j) => programs[j].clone(),
            None => compress(w, regs, &hits[k], lat, costs),
        };
        programs.push(program);
    }
    programs
}

/// [`compress`] in pieces: `advance` goes as far as the cache hits known so far allow, and
/// `take_settled` hands out the operations no later instruction can change.
#[derive(Debug)]
pub struct Compressor<'a> {
    w: &'a WarpTrace,
    /// Registers each instruction reads and writes (`Emulation::regs`); an instruction without
    /// an entry waits for the one before it.
    regs: &'a [InstrRegs],
    lat: &'a crate::device::latencies::Latencies,
    memory_latency_scale: f64,
    dram_cycles_per_sector: f64,
    l2_cycles_per_sector: f64,
    /// The steps of each class by its discriminant (`LatencyClass` is `repr(u8)` with fewer
    /// than 32 values).
    table: [ClassCost; 32],
    /// The next trace instruction.
    pos: usize,
    /// The comp operation being gathered: the in-order issue of its instructions on the
    /// warp's clock and the cycles of the scheduler and its units (see [`Scoreboard`]).
    board: Scoreboard,
    /// Whole comp runs already timed, by their first instruction (see
    /// [`Compressor::cached_run`]); empty when the costs are not all exact (see [`exact_steps`]).
    runs: Vec<CachedRun>,
    /// Warp clock (the scoreboard's) from which ptxas may move a load up: the last branch,
    /// barrier, store or atomic (see [`Compressor::load`]).
    region_start: f64,
    /// Whether the last operation is a load's, with nothing since (see
    /// [`Compressor::push_load`]).
    joinable: bool,
    /// When the last pending result (of a shared load, or of a run ended at its last dispatch)
    /// is ready (warp clock); runs start with every register ready only once the clock has
    /// passed it, and only then may they use the run cache.
    pending_until: f64,
    /// Warp clock at the end of the last comp run that ran until all its results were ready
    /// (`flush`): every register written before it is ready by then, in cached runs too.
    settled: f64,
    out: Vec<SimOp>,
}

/// A comp run timed once: where it first occurred in the trace, its length and what the
/// scoreboard gave for it.
#[derive(Debug, Clone, Copy)]
struct CachedRun {
    first: u32,
    len: u32,
    occupy: f64,
    latency: f64,
    /// Cycles from the run's start until the instruction after its last branch may dispatch
    /// (negative without a branch).
    branch: f64,
}

/// Slots of the run cache (direct-mapped; a loop body is a handful of distinct runs).
const RUN_SLOTS: usize = 64;

/// The most instructions one comp operation gathers: a longer stretch without a memory access
/// (a loop whose only loads are constant operands, such as pnpoly's 600-vertex loop, whose
/// iterations all join one run) is cut into pieces of this many, each ended at its last
/// dispatch with its results left pending. The scheduler interleaves warps instruction by
/// instruction; the round takes a comp operation whole, so one of thousands of cycles would
/// hold its scheduler and then make the other warps wait for its latency too: a scheduler with
/// N such warps would be busy (N - 1) x occupy + latency instead of the larger of N x occupy
/// and latency. 64 instructions are tens to hundreds of cycles, on the scale of a memory
/// access; runs of at most 64 instructions are unchanged.
const MAX_RUN_ISSUES: u32 = 64;

/// Whether every step value is a multiple of 1/1024 below 2^16 in magnitude. Then every time on
/// the scoreboard is a sum of such values, and while the warp's clock stays below 2^40 (and a
/// run has at most 2^16 instructions) each sum, maximum and difference is exact in `f64`: a
/// run's (occupy, latency) does not depend on the clock it starts at, bit for bit.
fn exact_steps(table: &[ClassCost; 32]) -> bool {
    table.iter().flatten().all(|s| {
        [s.latency, s.cycles, s.dispatches, s.resolve]
            .iter()
            .all(|&v| (v * 1024.0).fract() == 0.0 && v.abs() <= 65536.0)
    })
}

impl<'a> Compressor<'a> {
    pub fn new(
        w: &'a WarpTrace,
        regs: &'a [InstrRegs],
        lat: &'a crate::device::latencies::Latencies,
        costs: &Costs,
    ) -> Self {
        let s = f64::from(costs.schedulers.max(1));
        let mut table = [[NONE; 3]; 32];
        for c in LatencyClass::ALL {
            table[c as usize] = class_costs(lat, s, c);
        }
        let empty = CachedRun {
            first: 0,
            len: 0,
            occupy: 0.0,
            latency: 0.0,
            branch: -1.0,
        };
        let runs = if exact_steps(&table) {
            vec![empty; RUN_SLOTS]
        } else {
            Vec::new()
        };
        Self {
            w,
            regs,
            lat,
            memory_latency_scale: costs.memory_latency_scale,
            dram_cycles_per_sector: costs.dram_cycles_per_sector,
            l2_cycles_per_sector: costs.l2_cycles_per_sector,
            table,
            pos: 0,
            board: Scoreboard::new(regs),
            runs,
            region_start: 0.0,
            joinable: false,
            pending_until: 0.0,
            settled: 0.0,
            // At most a comp before each request, and barriers are rare.
            out: Vec::with_capacity(2 * w.accesses.len() + 4),
        }
    }

    /// After a flush: when a register the access at `instr` reads (its address, a store's
    /// value, its guard) is a load's result not ready yet, the warp waits for it.
    fn wait_for_operands(&mut self, instr: u32) {
        let start = self.board.start;
        let ready = self.operands_after(instr, start);
        if ready > start {
            self.wait(ready - start);
            self.board.restart_at(ready);
        }
    }

    /// The warp waits `cycles` with its scheduler free: the operation before holds the warp
    /// that much longer after it ends (one operation fewer for the round), or, after a
    /// barrier or at the start, an operation of its own.
    fn wait(&mut self, cycles: f64) {
        if cycles <= 0.0 {
            return;
        }
        self.joinable = false;
        match self.out.last_mut() {
            Some(
                SimOp::Comp { occupy, latency }
                | SimOp::Global { occupy, latency }
                | SimOp::Shared { occupy, latency },
            ) => *latency = latency.max(*occupy) + cycles,
            _ => self.push(SimOp::Comp {
                occupy: 0.0,
                latency: cycles,
            }),
        }
    }

    /// After a flush, at an access or barrier no load moves above (a barrier, a store or an
    /// atomic, which may write what a later load reads): every pending result is ready, and
    /// later loads move up no further than here.
    fn fence(&mut self) {
        if self.pending_until > self.board.start {
            self.board.restart_at(self.pending_until);
        }
        self.region_start = self.board.start;
    }

    /// The latest ready time above `above` among the registers the instruction at `instr`
    /// reads (its address, a store's value, its guard); `above` when none is later.
    fn operands_after(&self, instr: u32, above: f64) -> f64 {
        self.regs.get(instr as usize).map_or(above, |r| {
            r.src
                .iter()
                .filter(|&&x| x != NO_REG)
                .fold(above, |t, &x| t.max(self.board.ready[usize::from(x)]))
        })
    }

    /// A load (shared, global or local), timed as ptxas schedules one: its result is waited
    /// for by the first instruction that reads it (the scoreboard), not by the load, and
    /// ptxas moves the load up, with the integer arithmetic of its address, ahead of
    /// independent instructions far enough to cover its latency where it can (the SASS of an
    /// unrolled loop of shared loads and fmas issues ten or more `LDS` ahead of their
    /// `FFMA`s; an unrolled loop of global loads issues its `LDG`s back to back), but not
    /// above the last branch (a loop's next iteration), barrier, store or atomic (data
    /// another warp or this one wrote). The load holds its path (see [`Compressor::path`])
    /// for `cycles` and its dispatch where it stands in the trace; only its result's time
    /// moves. `latency` is from issue to result.
    fn load(&mut self, instr: u32, space: MemSpace, cycles: f64, latency: f64) {
        let issue = self.board.start;
        let regs = self.regs.get(instr as usize);
        // Nor above the instruction that made its address: an operand that was pending (a
        // load's result, or one of a run that ended at its last dispatch) bounds the move
        // exactly; registers written before the last full flush were ready by then (the run
        // cache keeps no per-register times, so older ones are not looked at).
        let operands = self.operands_after(instr, self.settled);
        let earliest = (issue - latency).max(self.region_start).max(operands);
        let ready = (earliest + latency).max(issue + cycles);
        self.push_load(self.path(space, cycles, cycles));
        self.board.restart_at(issue + cycles);
        if let Some(r) = regs {
            for &x in r.dst.iter().filter(|&&x| x != NO_REG) {
                self.board.ready[usize::from(x)] = ready;
            }
            self.pending_until = self.pending_until.max(ready);
        }
    }

    /// The path operation of an access to `space`: a global or local access on the load/store
    /// path; a shared one there too where shared memory and the L1 are one SRAM behind one
    /// data path (`shared_on_l1_path`: Fermi, Kepler, Volta and later), so that its wavefronts
    /// queue with the global and local requests' lines, else on the shared path of its own
    /// (Maxwell and Pascal).
    fn path(&self, space: MemSpace, occupy: f64, latency: f64) -> SimOp {
        if space != MemSpace::Shared || self.lat.shared_on_l1_path {
            SimOp::Global { occupy, latency }
        } else {
            SimOp::Shared { occupy, latency }
        }
    }

    fn push(&mut self, op: SimOp) {
        self.joinable = false;
        self.out.push(op);
    }

    /// A load's path operation: joined to the one before when that is a load of the same
    /// path right before it (no instruction and no wait between): the path takes them back to
    /// back either way, and the round has one operation fewer (the warp's second dispatch is
    /// not booked on its scheduler).
    fn push_load(&mut self, op: SimOp) {
        let joined = self.joinable
            && match (self.out.last_mut(), op) {
                (Some(SimOp::Global { occupy, latency }), SimOp::Global { occupy: more, .. })
                | (Some(SimOp::Shared { occupy, latency }), SimOp::Shared { occupy: more, .. }) => {
                    *occupy += more;
                    *latency = *occupy;
                    true
                }
                _ => false,
            };
        if !joined {
            self.out.push(op);
        }
        self.joinable = true;
    }

    /// Ends the comp run being gathered at its last dispatch (before a load: the warp
    /// issues the load without waiting for the run's results, which stay pending).
    fn flush_issued(&mut self) {
        if self.board.is_fresh() {
            return;
        }
        let lead = self.board.lead();
        let (occupy, latency, end) = self.board.end_run_issued();
        self.pending_until = self.pending_until.max(end);
        self.push_run(occupy, latency, lead);
    }

    /// A comp run of `occupy` scheduler cycles and `latency` from its start, whose first
    /// instruction waited `lead` cycles for a pending operand: the warp waits with its
    /// scheduler free (the scheduler issues other warps' work meanwhile), so that the run
    /// holds the scheduler only from its first dispatch.
    fn push_run(&mut self, occupy: f64, latency: f64, lead: f64) {
        self.wait(lead);
        let latency = latency - lead;
        if occupy > 0.0 || latency > 0.0 {
            self.push(SimOp::Comp { occupy, latency });
        }
    }

    /// Whether the instruction at `pos` is a shared, global or local load (before which a
    /// comp run ends at its last dispatch, see [`Compressor::flush_issued`]).
    #[inline]
    fn is_load(&self, pos: usize) -> bool {
        self.w.ops.get(pos).is_some_and(|op| {
            self.w
                .accesses
                .get(op.access as usize)
                .is_some_and(|a| a.space != MemSpace::Const && a.is_load())
        })
    }

    #[inline]
    fn flush(&mut self) {
        // An empty run (the second of two accesses back to back) ends at its start: nothing to
        // push, and the scoreboard is already as `end_run` would leave it.
        if self.board.is_fresh() {
            return;
        }
        let lead = self.board.lead();
        let (occupy, latency) = self.board.end_run();
        self.settled = self.board.start;
        self.push_run(occupy, latency, lead);
    }

    /// Compresses instructions up to the first one whose memory request is `known` or later
    /// (`hits[..known]` are final).
    pub fn advance(&mut self, hits: &[cache::AccessHits], known: usize) {
        let (w, lat) = (self.w, self.lat);
        loop {
            // A comp operation of `MAX_RUN_ISSUES` instructions ends here, at its last dispatch.
            if self.board.issued >= MAX_RUN_ISSUES {
                self.flush_issued();
            }
            // Most instructions are neither memory accesses nor barriers: they join the comp
            // operation being gathered.
            let begin = self.pos;
            let pos = match self.cached_run(begin) {
                Some(end) => end,
                None => {
                    let room = (MAX_RUN_ISSUES - self.board.issued) as usize;
                    let end = w.ops[begin..]
                        .iter()
                        .take(room)
                        .position(|op| {
                            op.access != TraceOp::NO_ACCESS || op.latency == LatencyClass::Barrier
                        })
                        .map_or((begin + room).min(w.ops.len()), |k| begin + k);
                    if end > begin {
                        self.run_of(begin, end);
                    }
                    end
                }
            };
            self.pos = pos;
            if self.board.issued >= MAX_RUN_ISSUES {
                continue;
            }
            let Some(op) = w.ops.get(self.pos) else {
                return;
            };
            let acc = (op.access != TraceOp::NO_ACCESS).then(|| &w.accesses[op.access as usize]);
            if acc.is_some() && op.access as usize >= known {
                return;
            }
            self.pos += 1;
            match (op.latency, acc) {
                (LatencyClass::Barrier, _) => {
                    self.flush();
                    self.fence();
                    // The warp issues the barrier (its scheduler busy for the barrier rate's
                    // share), then waits for the rest of its block.
                    let issue = self.table[LatencyClass::Barrier as usize & 31][0].cycles;
                    self.push(SimOp::Comp {
                        occupy: issue,
                        latency: issue,
                    });
                    self.push(SimOp::Barrier);
                }
                (_, Some(a)) if matches!(a.space, MemSpace::Global | MemSpace::Local) => {
                    let is_load = a.is_load();
                    if is_load {
                        self.flush_issued();
                    } else {
                        self.flush();
                    }
                    self.wait_for_operands(op.instr);
                    let h = hits.get(op.access as usize).copied().unwrap_or_default();
                    let (h1, h2) = (f64::from(h.l1), f64::from(h.l2));
                    let sectors = f64::from(a.sectors.max(1));
                    let to_l2 = sectors * (1.0 - h1);
                    let to_dram = sectors * f64::from(h.dram);
                    // The L1, L2 and DRAM stages pipeline: a request holds the path for its
                    // slowest stage.
                    // The load/store path also handles one 128-byte line (tag) at a time:
                    // an uncoalesced request is replayed once per line it touches.
                    let lines = f64::from(a.lines.max(1));
                    let mut occupy = (sectors * SECTOR / L1_BYTES_PER_CLK)
                        .max(lines / lat.l1_lines_per_clk_sm.max(1e-9))
                        .max(to_l2 * self.l2_cycles_per_sector)
                        .max(to_dram * self.dram_cycles_per_sector)
                        .max(1.0);
                    let latency = match a.atomic {
                        Atomic::No if a.store => lat.l1_hit,
                        Atomic::No => {
                            (h1 * lat.l1_hit
                                + (1.0 - h1) * (h2 * lat.l2_hit + (1.0 - h2) * lat.dram))
                                * self.memory_latency_scale
                        }
                        // A reduction is sent like a store; the warp does not wait for it.
                        Atomic::Red => lat.l1_hit,
                        // `atom` returns the old value from the L2, after the lanes on the
                        // same address were served one after another there.
                        Atomic::Atom => {
                            (1.0 - h2) * lat.dram
                                + lat.l2_hit
                                + f64::from(a.same_address_lanes.max(1))
                                    / lat.global_atomic_same_address_per_clk
                        }
                    };
                    if a.atomic != Atomic::No {
                        // Each address is one read-modify-write at the L2 at the SM's share
                        // of the distinct-address atomic rate.
                        occupy = occupy.max(
                            f64::from(a.distinct_addresses.max(1))
                                / lat.global_atomic_distinct_per_clk_sm,
                        );
                    }
                    if is_load {
                        // Loads overlap (memory-level parallelism): each holds the warp only
                        // while the path takes it, and its result comes a latency later.
                        self.load(op.instr, a.space, occupy, latency);
                    } else {
                        self.push(SimOp::Global { occupy, latency });
                        // Later loads may read what it wrote: none moves above it.
                        self.fence();
                    }
                }
                (_, Some(a)) if a.space == MemSpace::Shared && a.atomic != Atomic::No => {
                    // Shared atomics: the lanes at the unit's rate, each further lane on one
                    // address one more read-modify-write pass.
                    self.flush();
                    self.wait_for_operands(op.instr);
                    let occupy = (f64::from(a.lanes) / lat.shared_atomic_per_clk_sm
                        + f64::from(a.same_address_lanes.max(1) - 1)
                            * lat.shared_atomic_conflict_cycles)
                        .max(1.0);
                    let op = self.path(MemSpace::Shared, occupy, lat.shared_load + occupy);
                    self.push(op);
                    self.fence();
                }
                (_, Some(a)) if a.space == MemSpace::Shared => {
                    // Each conflict way is one 128-byte wavefront through the banks, at the
                    // architecture's shared bandwidth (2 cycles each on Fermi and Turing); the
                    // load/store units take the active lanes' addresses at their own rate (a
                    // whole warp in 2 cycles where the SM has 16 of them).
                    if a.store {
                        self.flush();
                    } else {
                        self.flush_issued();
                    }
                    self.wait_for_operands(op.instr);
                    let banks = f64::from(a.bank_ways.max(1)) * 128.0
                        / lat.shared_bytes_per_clk_sm.max(1e-9);
                    let lanes =
                        (f64::from(a.lanes.max(1)) / lat.shared_lanes_per_clk_sm.max(1e-9)).ceil();
                    // The data goes to or from the lanes' registers at the same bytes per
                    // clock, broadcast or not: a warp's LDS.128 moves 512 bytes (four
                    // registers a lane), four clocks at 128 B/clk.
                    let data = f64::from(a.lanes) * f64::from(a.bytes_per_lane)
                        / lat.shared_bytes_per_clk_sm.max(1e-9);
                    let cycles = banks.max(lanes).max(data);
                    let latency = lat.shared_load + cycles - 1.0;
                    if a.store {
                        let op = self.path(MemSpace::Shared, cycles, latency);
                        self.push(op);
                        // Later loads may read what it wrote: none moves above it.
                        self.fence();
                    } else {
                        self.load(op.instr, MemSpace::Shared, cycles, latency);
                    }
                }
                (c, _) => {
                    let cost = &self.table[c as usize & 31];
                    self.board.issue(self.regs.get(op.instr as usize), cost);
                }
            }
        }
    }

    /// Whether the instruction at `pos` ends a comp run: a global, local or shared access, a
    /// barrier, or the end of the trace (not a constant-space access, which joins the run).
    #[inline]
    fn ends_run(&self, pos: usize) -> bool {
        match self.w.ops.get(pos) {
            None => true,
            Some(op) if op.latency == LatencyClass::Barrier => true,
            Some(op) => self
                .w
                .accesses
                .get(op.access as usize)
                .is_some_and(|a| a.space != MemSpace::Const),
        }
    }

    /// Whether the run cache may be used for a run starting now: the costs are exact, the
    /// scoreboard has nothing of this run yet and the warp's clock is below 2^40 cycles (see
    /// [`exact_steps`]).
    #[inline]
    fn cache_usable(&self) -> bool {
        !self.runs.is_empty()
            && self.board.is_fresh()
            && self.board.start <= (1u64 << 40) as f64
            && self.pending_until <= self.board.start
    }

    /// The run cache's slot for runs starting with instruction `instr`.
    #[inline]
    fn slot(instr: u32) -> usize {
        ((instr as usize).wrapping_mul(0x9E37_79B9) >> 8) % RUN_SLOTS
    }

    /// When the instructions from `begin` on are a whole run timed before (the same
    /// instructions, then one that ends the run), ends the run with that result and returns
    /// where it ends. The scoreboard's registers are all ready by a run's start, so a run's
    /// result depends only on its instructions.
    #[inline]
    fn cached_run(&mut self, begin: usize) -> Option<usize> {
        let w = self.w;
        if !self.cache_usable() {
            return None;
        }
        let e = self.runs[Self::slot(w.ops.get(begin)?.instr)];
        let (first, len) = (e.first as usize, e.len as usize);
        if len == 0 || w.ops.get(begin..begin + len)? != &w.ops[first..first + len] {
            return None;
        }
        // The same instructions as a run (none an access or a barrier) and one that ends the
        // run after them: the run is exactly these.
        if !self.ends_run(begin + len) || self.is_load(begin + len) {
            return None;
        }
        if e.branch >= 0.0 {
            self.region_start = self.board.start + e.branch;
        }
        self.board.close_with(e.occupy, e.latency);
        Some(begin + len)
    }

    /// Issues the instructions `begin..end` (none a memory access or a barrier) and, when they
    /// are a whole run (the scoreboard has nothing of this run yet and the instruction at `end`
    /// ends it) and the costs are exact, keeps its result for a later identical run (a loop
    /// body; see [`Compressor::cached_run`]).
    fn run_of(&mut self, begin: usize, end: usize) {
        let w = self.w;
        let len = end - begin;
        let cacheable =
            self.cache_usable() && len <= 1 << 16 && self.ends_run(end) && !self.is_load(end);
        let start = self.board.start;
        let mut branch = -1.0;
        for op in &w.ops[begin..end] {
            let cost = &self.table[op.latency as usize & 31];
            self.board.issue(self.regs.get(op.instr as usize), cost);
            if op.latency == LatencyClass::Branch {
                branch = self.board.dispatch_free - start;
            }
        }
        if branch >= 0.0 {
            self.region_start = start + branch;
        }
        if cacheable {
            let (occupy, latency) = self.board.settle();
            self.runs[Self::slot(w.ops[begin].instr)] = CachedRun {
                first: begin as u32,
                len: len as u32,
                occupy,
                latency,
                branch,
            };
        }
    }

    /// The operations compressed so far that nothing can change any more: all but the last
    /// (a wait for a pending operand may still be added to it).
    pub fn take_settled(&mut self) -> Vec<SimOp> {
        let keep = self.out.len().min(1);
        let rest = self.out.split_off(self.out.len() - keep);
        std::mem::replace(&mut self.out, rest)
    }

    /// The remaining operations, once `advance` has seen every request.
    pub fn finish(mut self) -> Vec<SimOp> {
        self.flush();
        self.out
    }
}

/// The in-order issue of a warp's non-memory instructions. An instruction issues when the one
/// before it has been dispatched (one cycle), its unit is free (each unit of [`PIPES`] takes a
/// warp instruction every `32 / (lanes per scheduler)` cycles, and units work side by side) and
/// its operands are ready (the dependent-issue latency of the instruction that wrote them), as a
/// scoreboard does; the instruction after a branch is dispatched once the branch has resolved.
/// A run of such instructions (a comp operation) holds the warp until its last
/// result is ready, so a chain of dependent instructions costs the sum of their latencies and
/// independent ones (an unrolled loop over several points or accumulators) overlap; it holds
/// the scheduler for its dispatches or its busiest unit, whichever is longer, so that the warps
/// of a scheduler share its units. Registers written by atomics are ready when the run starts
/// (the access before the run held the warp until then); a load's result, and the results of
/// a run that ended at its last dispatch before one, carry the time they are ready
/// (`Compressor::load`, `Compressor::flush_issued`).
///
/// Times are on one clock per warp that never goes back, so results of earlier runs are never
/// later than a new run's start and need no clearing.
#[derive(Debug)]
struct Scoreboard {
    /// When each register's value is ready (warp clock, cycles).
    ready: Vec<f64>,
    /// Start of the run being gathered.
    start: f64,
    /// When the next instruction may be dispatched.
    dispatch_free: f64,
    /// When each unit takes its next instruction of this warp.
    unit_free: [f64; PIPES],
    /// Dispatches and unit cycles of the run.
    dispatches: f64,
    unit_cycles: [f64; PIPES],
    /// When the last result of the run is ready.
    end: f64,
    /// When the previous instruction's result is ready (for instructions without registers).
    previous: f64,
    /// Instructions issued in the run being gathered.
    issued: u32,
    /// When the run's first instruction was dispatched (its start until then: the warp waits
    /// for a pending operand and its scheduler is free).
    first: f64,
    /// The result of a run already ended (its result known before the next instruction that
    /// ends it), which `end_run` hands out.
    ended: Option<(f64, f64)>,
}

impl Scoreboard {
    fn new(regs: &[InstrRegs]) -> Self {
        Self {
            ready: vec![0.0; crate::emulate::register_count(regs)],
            start: 0.0,
            dispatch_free: 0.0,
            unit_free: [0.0; PIPES],
            dispatches: 0.0,
            unit_cycles: [0.0; PIPES],
            end: 0.0,
            previous: 0.0,
            issued: 0,
            first: 0.0,
            ended: None,
        }
    }

    /// Whether the run being gathered has no instruction yet.
    fn is_fresh(&self) -> bool {
        self.issued == 0 && self.ended.is_none()
    }

    /// Ends a run of known result, as `end_run` would have after issuing its instructions (its
    /// last result ready `latency` after its start); the next `end_run` returns the result.
    fn close_with(&mut self, occupy: f64, latency: f64) {
        self.restart_at(self.start + latency);
        self.ended = Some((occupy, latency));
    }

    /// Ends the run now and keeps its result for the next `end_run` (the run is known to be
    /// whole before the instruction that ends it is reached).
    fn settle(&mut self) -> (f64, f64) {
        let r = self.end_run();
        self.ended = Some(r);
        r
    }

    /// Starts the next run at `end`: every unit, the dispatcher and the previous result free
    /// then, nothing issued.
    fn restart_at(&mut self, end: f64) {
        self.start = end;
        self.dispatch_free = end;
        self.unit_free = [end; PIPES];
        self.dispatches = 0.0;
        self.unit_cycles = [0.0; PIPES];
        self.previous = end;
        self.end = end;
        self.issued = 0;
        self.first = end;
    }

    /// Issues one instruction: its steps one after the other, the first when its operands
    /// are ready.
    #[inline]
    fn issue(&mut self, regs: Option<&InstrRegs>, cost: &ClassCost) {
        debug_assert!(self.ended.is_none());
        self.issued += 1;
        let mut ready = match regs {
            Some(r) => r
                .src
                .iter()
                .filter(|&&x| x != NO_REG)
                .fold(self.start, |t, &x| t.max(self.ready[usize::from(x)])),
            None => self.previous,
        };
        let first = self.issued == 1;
        for (k, s) in cost.iter().take_while(|s| s.dispatches > 0.0).enumerate() {
            let mut t = self.dispatch_free.max(ready);
            if let Some(u) = self.unit_free.get_mut(usize::from(s.unit)) {
                t = t.max(*u);
                *u = t + s.cycles;
                self.unit_cycles[usize::from(s.unit)] += s.cycles;
            }
            if first && k == 0 {
                self.first = t;
            }
            self.dispatch_free = t + s.dispatches + s.resolve;
            self.dispatches += s.dispatches;
            ready = t + s.latency;
        }
        if let Some(r) = regs {
            for &x in r.dst.iter().filter(|&&x| x != NO_REG) {
                self.ready[usize::from(x)] = ready;
            }
        }
        self.previous = ready;
        self.end = self.end.max(ready);
    }

    /// The run's scheduler cycles (its dispatches or its busiest unit, whichever is longer) and
    /// when everything it started is through (warp clock).
    fn totals(&self) -> (f64, f64) {
        let occupy = self
            .unit_cycles
            .iter()
            .fold(self.dispatches, |a, &b| a.max(b));
        let end = self
            .unit_free
            .iter()
            .fold(self.end.max(self.dispatch_free), |a, &b| a.max(b));
        (occupy, end)
    }

    /// Cycles from the run's start until its first dispatch: a wait for a pending operand (0
    /// for a run whose result is already known: a cached or settled one starts with every
    /// register ready).
    fn lead(&self) -> f64 {
        if self.ended.is_some() || self.issued == 0 {
            0.0
        } else {
            (self.first - self.start).max(0.0)
        }
    }

    /// Ends the run at its last dispatch, its results left pending on the scoreboard (for the
    /// instructions that read them to wait for): (scheduler cycles, cycles from its start
    /// until that dispatch) and when its last result is ready (warp clock).
    fn end_run_issued(&mut self) -> (f64, f64, f64) {
        debug_assert!(self.ended.is_none());
        let (occupy, end) = self.totals();
        let latency = self.dispatch_free - self.start;
        self.restart_at(self.dispatch_free);
        (occupy, latency, end)
    }

    /// Ends the run: (scheduler cycles, cycles from its start until its last result is ready);
    /// the next run starts then.
    fn end_run(&mut self) -> (f64, f64) {
        if let Some(r) = self.ended.take() {
            return r;
        }
        let (occupy, end) = self.totals();
        let latency = end - self.start;
        self.restart_at(end);
        (occupy, latency)
    }
}

/// Everything the model computed besides the time.
#[derive(Debug, Clone)]
pub struct TraceRun {
    pub active_blocks_per_sm: u32,
    pub occupancy_limited_by: Vec<crate::device::occupancy::Limiter>,
    /// Blocks of the busiest SM: `ceil(blocks / SMs)`.
    pub blocks_per_sm: u64,
    /// Blocks per SM in a full round (or in the only, partial one).
    pub blocks_in_round: u32,
    pub warps_in_round: u32,
    /// Cycles of that round.
    pub pipeline_cycles: f64,
    /// Full waves (0: the launch is one partial wave).
    pub full_waves: u64,
    /// With continuous dispatch simulated: the cycles one more loaded wave adds.
    pub steady_wave_cycles: Option<f64>,
    /// The partial last wave after full ones: blocks on its busiest SM, SMs running, cycles.
    pub tail_blocks_per_sm: u32,
    pub tail_sms: u32,
    pub tail_pipeline_cycles: f64,
    /// Cycles the launch's same-address global atomics take queued at one L2 slice.
    pub atomic_serial_cycles: f64,
    /// Kernel cycles: the rounds, or the atomic queue when longer.
    pub cycles: f64,
    pub launch_overhead_us: f64,
    /// The cycles as time plus the launch overhead.
    pub simulated_us: f64,
    /// The prediction: `simulated_us`, raised to `bound` when below it.
    pub time_us: f64,
    /// The bound of the traffic the model charges.
    pub bound: bounds::LowerBound,
    pub cache: CacheResult,
    pub memory_latency_scale: f64,
    /// DRAM cycles per sector of the SM's share: the bandwidth's, or the row activations'
    /// when the sectors open rows faster than the DRAM can activate them.
    pub dram_cycles_per_sector: f64,
    /// DRAM row activations per DRAM sector charged to the timed block (0 without an
    /// activation limit); see `activations_per_sector`.
    pub dram_activations_per_sector: f64,
    pub l2_cycles_per_sector: f64,
    pub l1_bytes: u64,
    /// The L1 share of one block of the round.
    pub l1_bytes_per_block: u64,
    pub l2_bytes_per_sm: u64,
    /// The L2 capacity of the cache simulation: the simulated blocks' share of the data the
    /// resident blocks hold (see [`L2Share`]).
    pub l2_simulated_bytes: u64,
    pub l2_share: L2Share,
    /// Blocks resident on the GPU at once.
    pub resident_blocks: u64,
    /// Blocks whose accesses the cache simulation ran (the representative one first).
    pub wave_blocks_simulated: usize,
    /// The block one grid row earlier whose reads were left in the L2 before the wave blocks
    /// ran (`None` when the grid has one row, or a grid row reads more than the L2 holds).
    pub above_block_in_l2: Option<u64>,
    pub l1_policy: cache::L1Policy,
    /// Local accesses added per warp for the resource report's spills.
    pub spill_accesses_per_warp: f64,
    pub sim_ops_per_warp: f64,
    pub representative_block: u64,
    pub representative_warps: usize,
    pub latency_rule: LatencyRule,
}

/// The model's numbers for a launch from its emulation, without the breakdown and notes of
/// [`predict`] (the path a sweep takes). Only the representative block's warps are read, so an
/// emulation of that block alone (`Sampling::Representative`) gives the same result.
pub fn run(
    device: &Device,
    em: &Emulation,
    res: KernelResources,
    lat: &LatencyTable,
) -> Result<TraceRun> {
    run_on(device, em.launch, em, res, lat)
}

/// [`run`] for `launch`, whose block shape must be the emulation's: the emulated warps stand
/// for the blocks of `launch` (a sweep reuses a block's emulation for another grid when the
/// kernel does not read the grid size, see `explore::trace_cell`).
pub fn run_on(
    device: &Device,
    launch: crate::emulate::LaunchDims,
    em: &Emulation,
    res: KernelResources,
    lat: &LatencyTable,
) -> Result<TraceRun> {
    run_with_rule(device, launch, em, res, lat, LatencyRule::default())
}

/// [`run_on`] with a chosen [`LatencyRule`].
pub fn run_with_rule(
    device: &Device,
    launch: crate::emulate::LaunchDims,
    em: &Emulation,
    res: KernelResources,
    lat: &LatencyTable,
    rule: LatencyRule,
) -> Result<TraceRun> {
    run_with(device, launch, em, res, lat, rule, Overlap::Auto)
}

/// Whether the cache simulation and trace compression run on a second thread while the round
/// is simulated. The result is the same either way (tested); only the wall time differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overlap {
    /// On a machine with more than one core, for traces of at least
    /// [`OVERLAP_MIN_TRACE_OPS`] instructions (smaller ones finish before a thread starts).
    #[default]
    Auto,
    /// Always (also on one core, where it only costs a thread).
    On,
    Off,
}

/// Most events (operations of a round's warps) for which two waves are simulated with
/// continuous dispatch (see [`run_with`]).
pub const CONTINUOUS_MAX_EVENTS: usize = 200_000;

/// Trace instructions of the representative block below which waves are simulated with
/// continuous dispatch (at or above it, each wave is one round, eq 8), whether or not the round
/// is overlapped with the caches ([`Overlap`]): the result must not depend on the machine's
/// cores.
pub const CONTINUOUS_MAX_TRACE_OPS: usize = 100_000;

/// Trace instructions of the representative block from which [`Overlap::Auto`] overlaps.
pub const OVERLAP_MIN_TRACE_OPS: usize = 100_000;

/// [`run_with_rule`] with a chosen [`Overlap`].
///
/// Waves: a launch of `B` blocks on `N` SMs holding `n` blocks each runs `floor(B / (n N))` full
/// waves of `n` blocks per SM, then a last, partial wave of the remaining blocks, whose busiest
/// SM runs `ceil(rest / N)` of them while only `min(N, rest)` SMs share the DRAM. Each is one
/// simulated round; the partial wave costs the whole round of the blocks still running.
pub fn run_with(
    device: &Device,
    launch: crate::emulate::LaunchDims,
    em: &Emulation,
    res: KernelResources,
    lat: &LatencyTable,
    rule: LatencyRule,
    overlap: Overlap,
) -> Result<TraceRun> {
    if launch.block != em.launch.block {
        return Err(Error::invalid(
            "block",
            "the launch's block shape differs from the emulated one",
        ));
    }
    let l = &lat.values;
    let threads = launch.threads_per_block();
    let occ = occupancy(
        device,
        &BlockResources {
            threads_per_block: threads,
            registers_per_thread: res.registers_per_thread,
            shared_memory_per_block_bytes: res.shared_bytes_per_block,
        },
    )?;
    if occ.active_blocks_per_sm == 0 {
        return Err(Error::Infeasible(format!(
            "a block of {threads} threads with {} registers per thread and {} bytes of shared memory does not fit on an SM of {} (limited by {:?})",
            res.registers_per_thread, res.shared_bytes_per_block, device.name, occ.limited_by
        )));
    }
    let blocks = launch.blocks();
    let n_sm = u64::from(device.sm_count.max(1));
    let active = u64::from(occ.active_blocks_per_sm);
    let per_wave = active * n_sm;
    let full_waves = blocks / per_wave;
    let rest = blocks % per_wave;
    // (blocks per SM, SMs running) of the main round and of the partial last wave.
    let (main, tail) = if full_waves > 0 {
        (
            (active, n_sm),
            (rest > 0).then(|| (rest.div_ceil(n_sm), rest.min(n_sm))),
        )
    } else {
        ((rest.div_ceil(n_sm).max(1), rest.min(n_sm).max(1)), None)
    };
    let n_round = main.0 as u32;
    let blocks_per_sm = blocks.div_ceil(n_sm);
    let warps_per_block = launch.warps_per_block();
    let warps_in_round = n_round * warps_per_block;

    // L1: the on-chip memory shared memory does not take, shared by the blocks of the round
    // (one simulated block gets its share). L2: shared by the blocks resident on the GPU at
    // once; the emulated wave blocks stand for them with the L2 scaled to their share.
    let shared_used =
        u64::from(occ.active_blocks_per_sm) * occ.allocated_shared_memory_per_block_bytes;
    let l1_bytes = device.l1_shared_per_sm_bytes.saturating_sub(shared_used);
    let l1_block_bytes = l1_bytes / u64::from(n_round);
    let resident = blocks.min(per_wave).max(1);
    let rep = crate::emulate::representative(&em.sampled_blocks)
        .ok_or_else(|| Error::missing("trace", "the emulation sampled no block"))?;
    let wave: Vec<u64> = if em.wave.first() == Some(&rep.linear) {
        em.wave.iter().copied().take(resident as usize).collect()
    } else {
        vec![rep.linear]
    };
    // How much of its data the representative block shares with its neighbours (`Some`
    // whenever the block above was emulated).
    let sharing = em.sharing();
    // What the block one grid row earlier read is still in the L2 when the blocks launched
    // since (a row of the grid) read no more than the L2 holds.
    let warm_l2 = em
        .above
        .filter(|_| {
            let footprint = sharing.map_or(0, |s| s.block_sectors) as u64;
            footprint * SECTOR as u64 * u64::from(launch.grid[0]) <= device.l2_cache_bytes
        })
        .map_or_else(Vec::new, |a| global_sectors_in_order(em.block_warps(a)));
    let above_block_in_l2 = em.above.filter(|_| !warm_l2.is_empty());
    let l2_blocks = wave.len() + usize::from(above_block_in_l2.is_some());
    let l2_share = L2Share::of(em, sharing, &wave, &warm_l2, launch.grid[0], resident);
    let l2_sim_bytes = (device.l2_cache_bytes as f64 * l2_share.fraction(l2_blocks, resident))
        .min(device.l2_cache_bytes as f64) as u64;
    let memory_latency_scale = rule.scale(device.limits.max_warps_per_sm, warps_in_round);
    // The DRAM activates a row at most every `ns_per_activation` (all channels together).
    let activation = device.dram_activation();
    // The traces: the representative block's warps, then the other wave blocks' (caches only),
    // with the spills of the resource report placed in them.
    let static_instr = em.regs.len();
    let spilled = res.spill_store_bytes + res.spill_load_bytes > 0;
    let owned: Vec<WarpTrace> = if spilled {
        wave.iter()
            .flat_map(|&b| em.warps.iter().filter(move |w| w.block_linear == b))
            .map(|w| {
                spills::with_spills(
                    w,
                    res.spill_store_bytes,
                    res.spill_load_bytes,
                    static_instr,
                    launch,
                )
            })
            .collect()
    } else {
        Vec::new()
    };
    let sim_warps: Vec<&WarpTrace> = if spilled {
        owned.iter().collect()
    } else {
        wave.iter()
            .flat_map(|&b| em.warps.iter().filter(move |w| w.block_linear == b))
            .collect()
    };
    let l1_of: Vec<u16> = sim_warps
        .iter()
        .map(|w| wave.iter().position(|&b| b == w.block_linear).unwrap_or(0) as u16)
        .collect();
    let n_rep = l1_of.iter().take_while(|&&k| k == 0).count();
    // The row pass (on this thread while the caches start on another when they overlap).
    let row_pass = || {
        activation.as_ref().map_or(0.0, |a| {
            activations_per_sector(&sim_warps, &l1_of, wave.len(), resident, a.row_bytes)
        })
    };
    let costs_for = |sms: u64, activations_per_sector: f64| {
        let sms = sms.max(1) as f64;
        let dram_bytes_per_clk_sm =
            device.memory_bandwidth_gbs * l.dram_efficiency * 1e3 / device.core_clock_mhz / sms;
        let l2_bytes_per_clk_sm = l.l2_bytes_per_clk_sm * n_sm as f64 / sms;
        // The SM's share of the activations: one every `ns_per_activation x SMs sharing`.
        let activation_cycles_sm = activation.as_ref().map_or(0.0, |a| {
            a.ns_per_activation() * device.core_clock_mhz / 1e3 * sms
        });
        Costs {
            schedulers: device.warp_schedulers_per_sm,
            dram_cycles_per_sector: (SECTOR / dram_bytes_per_clk_sm.max(1e-9))
                .max(activations_per_sector * activation_cycles_sm),
            l2_cycles_per_sector: SECTOR / l2_bytes_per_clk_sm.max(1e-9),
            memory_latency_scale,
        }
    };
    let policy = cache::L1Policy {
        global_loads: l.global_loads_cached_in_l1,
        opt_in: l.global_l1_opt_in,
    };
    let caches = CacheSetup {
        l1_of: l1_of.clone(),
        l1_sectors: (l1_block_bytes / 32) as usize,
        l2_sectors: (l2_sim_bytes / 32) as usize,
        policy,
        warm_l2,
    };
    let trace_ops: usize = sim_warps[..n_rep].iter().map(|w| w.ops.len()).sum();
    let overlap = match overlap {
        Overlap::Auto => {
            trace_ops >= OVERLAP_MIN_TRACE_OPS
                && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
        }
        Overlap::On => true,
        Overlap::Off => false,
    };
    let schedulers = device.warp_schedulers_per_sm;
    // `twin`: the warps of a kind (see `twins`), for the tail's compression too.
    let (pipeline_cycles, cache, traffic, twin, sim_ops, waves, activations_per_sector, costs) =
        if overlap {
            let ((c, mut programs), produced, (aps, costs)) = overlapped_round(
                &sim_warps,
                &em.regs,
                n_rep,
                &caches,
                l,
                || {
                    let aps = row_pass();
                    (aps, costs_for(main.1, aps))
                },
                n_round,
                schedulers,
            );
            let Produced {
                cache,
                traffic,
                twin,
            } = produced;
            let ops = programs.ops();
            let waves = (trace_ops < CONTINUOUS_MAX_TRACE_OPS)
                .then(|| continuous_waves(&mut programs, c, full_waves, n_round, schedulers))
                .flatten();
            (c, cache, traffic, twin, ops, waves, aps, costs)
        } else {
            let activations_per_sector = row_pass();
            let costs = costs_for(main.1, activations_per_sector);
            let mut sim = caches.sim(&sim_warps);
            while sim.run_rounds(usize::MAX) {}
            let cache = sim.finish();
            let traffic = Traffic::of(&sim_warps[..n_rep], &cache.hits);
            let twin = twins(&sim_warps[..n_rep]);
            let programs =
                compress_all(&sim_warps[..n_rep], &twin, &em.regs, &cache.hits, l, &costs);
            let mut programs = round::Programs::complete(&programs);
            let cycles = round::simulate(&mut programs, n_round as usize, schedulers);
            let ops = programs.ops();
            let waves = (trace_ops < CONTINUOUS_MAX_TRACE_OPS)
                .then(|| continuous_waves(&mut programs, cycles, full_waves, n_round, schedulers))
                .flatten();
            (
                cycles,
                cache,
                traffic,
                twin,
                ops,
                waves,
                activations_per_sector,
                costs,
            )
        };
    // The partial last wave: its blocks on fewer SMs, each with a larger DRAM share.
    let tail_cycles = match tail {
        Some((t, sms)) => {
            let c = costs_for(sms, activations_per_sector);
            let programs = compress_all(&sim_warps[..n_rep], &twin, &em.regs, &cache.hits, l, &c);
            round::simulate(
                &mut round::Programs::complete(&programs),
                t as usize,
                schedulers,
            )
        }
        None => 0.0,
    };
    let rounds_cycles = match waves {
        Some((k, end, steady)) => end + (full_waves - k) as f64 * steady,
        None => pipeline_cycles * full_waves.max(1) as f64,
    } + tail_cycles;
    // Same-address global atomics of the whole launch queue at one L2 slice.
    let hot_atomic_lanes = bounds::hot_atomic_lanes(em);
    let atomic_serial_cycles = hot_atomic_lanes / l.global_atomic_same_address_per_clk;
    let cycles = rounds_cycles.max(atomic_serial_cycles);
    let simulated_us = device.cycles_to_us(cycles) + l.launch_overhead_us;
    // The bound of the traffic the model charges: the representative block's, times the blocks.
    let b = blocks as f64;
    let mut work = bounds::Work {
        hot_atomic_lanes,
        warp_instructions: traffic.warp_instructions * b,
        dram_bytes: traffic.dram_bytes * b,
        l2_bytes: traffic.l2_bytes * b,
        ..Default::default()
    };
    work.dram_activations = work.dram_bytes / SECTOR * activations_per_sector;
    let bound = bounds::LowerBound::of(device, l, &work);
    let time_us = simulated_us.max(bound.bound_us);
    Ok(TraceRun {
        active_blocks_per_sm: occ.active_blocks_per_sm,
        occupancy_limited_by: occ.limited_by,
        blocks_per_sm,
        blocks_in_round: n_round,
        warps_in_round,
        pipeline_cycles,
        full_waves,
        steady_wave_cycles: waves.map(|w| w.2),
        tail_blocks_per_sm: tail.map_or(0, |t| t.0 as u32),
        tail_sms: tail.map_or(0, |t| t.1 as u32),
        tail_pipeline_cycles: tail_cycles,
        atomic_serial_cycles,
        cycles,
        launch_overhead_us: l.launch_overhead_us,
        simulated_us,
        time_us,
        bound,
        cache,
        memory_latency_scale,
        dram_cycles_per_sector: costs.dram_cycles_per_sector,
        dram_activations_per_sector: activations_per_sector,
        l2_cycles_per_sector: costs.l2_cycles_per_sector,
        l1_bytes,
        l1_bytes_per_block: l1_block_bytes,
        l2_bytes_per_sm: device.l2_cache_bytes / n_sm,
        l2_simulated_bytes: l2_sim_bytes,
        l2_share,
        resident_blocks: resident,
        wave_blocks_simulated: wave.len(),
        above_block_in_l2,
        l1_policy: policy,
        spill_accesses_per_warp: if spilled {
            let extra: usize = sim_warps[..n_rep]
                .iter()
                .map(|w| w.accesses.len())
                .sum::<usize>()
                - wave
                    .first()
                    .map(|&r| {
                        em.warps
                            .iter()
                            .filter(|w| w.block_linear == r)
                            .map(|w| w.accesses.len())
                            .sum::<usize>()
                    })
                    .unwrap_or(0);
            extra as f64 / n_rep.max(1) as f64
        } else {
            0.0
        },
        sim_ops_per_warp: sim_ops as f64 / f64::from(warps_per_block.max(1)),
        representative_block: rep.linear,
        representative_warps: n_rep,
        latency_rule: rule,
    })
}

/// What the representative block's warps ask of the memory system, for the bounds: warp
/// instructions, DRAM and L2 bytes (per block, summed warp by warp in access order).
#[derive(Debug, Clone, Copy, Default)]
struct Traffic {
    warp_instructions: f64,
    dram_bytes: f64,
    l2_bytes: f64,
}

impl Traffic {
    fn of(warps: &[&WarpTrace], hits: &[Vec<cache::AccessHits>]) -> Self {
        let mut t = Traffic::default();
        for (w, h) in warps.iter().zip(hits) {
            t.warp_instructions += w.ops.len() as f64;
            for (a, h) in w.accesses.iter().zip(h) {
                if matches!(a.space, MemSpace::Global | MemSpace::Local) {
                    let n = f64::from(a.sectors);
                    t.dram_bytes += SECTOR * n * f64::from(h.dram);
                    t.l2_bytes += SECTOR * n * (1.0 - f64::from(h.l1));
                }
            }
        }
        t
    }
}

/// Sector visits after which [`activations_per_sector`] stops at the end of a round.
const ROW_SAMPLE_SECTORS: usize = 1 << 17;

/// DRAM rows opened per DRAM sector by these warps' global and local accesses; `block_of[k]`
/// is warp `k`'s simulated block (of `sim_blocks`), which stand for `resident` blocks.
///
/// The DRAM sectors are the first touches: the warps issue one request each in turn (the cache
/// simulation's order), and a sector seen before is taken to be found in the L2. A row stays
/// open while requests that arrive together use it: the requests of one instruction's same
/// execution (its n-th time in each warp) across the warps. Per such group, the distinct rows
/// (`row_bytes` of contiguous addresses) of its new sectors, over their count. A coalesced
/// stream opens one row per `row_bytes / 32` sectors; a column walk (each lane in its own row,
/// the next sector of that row only on a later iteration) or a scattered gather opens one row
/// per sector.
///
/// The simulated blocks are a few of the blocks running at once, and the first of them, the one
/// whose warps are timed, takes the first touch of every sector they share. Three corrections
/// scale them to the wave:
/// - a sector every simulated block reads is taken to be read by every resident block: one
///   fetch for `resident` blocks, `sim_blocks / resident` of one in the simulation (a sector
///   only some of them read stays one fetch: neighbours sharing a halo);
/// - where the simulated blocks' sectors share rows, the other resident blocks are taken to
///   share them in the same proportion, up to full rows;
/// - the result is per DRAM sector of the timed block (block 0): the activations of an average
///   block over the sectors the cache simulation charges block 0.
///
/// A ratio: the rounds up to [`ROW_SAMPLE_SECTORS`] sector visits stand for the rest.
fn activations_per_sector(
    warps: &[&WarpTrace],
    block_of: &[u16],
    sim_blocks: usize,
    resident: u64,
    row_bytes: u64,
) -> f64 {
    // (instruction << 32 | its execution count in the warp, new sector, its block)
    let mut keyed: Vec<(u64, u64, u16)> = Vec::new();
    // Sector -> the simulated blocks that read it (a bit each, modulo 64).
    let mut readers = SectorBits::default();
    // Per warp, executions so far by instruction index (grown as instructions appear).
    let mut execs: Vec<Vec<u32>> = vec![Vec::new(); warps.len()];
    let mut next = vec![0usize; warps.len()];
    let mut visits = 0usize;
    let mut live = true;
    while live && visits < ROW_SAMPLE_SECTORS {
        live = false;
        for (k, w) in warps.iter().enumerate() {
            let Some(a) = w.accesses.get(next[k]) else {
                continue;
            };
            live = true;
            crate::memory::prefetch_ahead(w, next[k], a.sector_start as usize);
            next[k] += 1;
            if !matches!(a.space, MemSpace::Global | MemSpace::Local) {
                continue;
            }
            let counts = &mut execs[k];
            let i = a.instr as usize;
            if i >= counts.len() {
                counts.resize(i + 1, 0);
            }
            let key = (u64::from(a.instr) << 32) | u64::from(counts[i]);
            counts[i] += 1;
            let b = block_of.get(k).copied().unwrap_or(0);
            let bit = 1u64 << (b % 64);
            let sectors = &w.sector_ids[a.sector_start as usize..a.sector_end as usize];
            visits += sectors.len();
            for &s in sectors {
                if readers.add(s, bit) {
                    keyed.push((key, s, b));
                }
            }
        }
    }
    // No sector charged to the timed block (or none at all): nothing to scale.
    let charged = keyed.iter().filter(|&&(_, _, b)| b == 0).count();
    if charged == 0 {
        return 0.0;
    }
    keyed.sort_unstable();
    let per_row = (row_bytes / SECTOR as u64).max(1);
    let nb = sim_blocks.max(1) as f64;
    let resident = (resident as f64).max(nb);
    let mut activations = 0.0;
    for group in keyed.chunk_by(|x, y| x.0 == y.0) {
        // Rows of the group, and rows summed over its blocks (as if each were alone).
        let mut rows: Vec<u64> = group.iter().map(|&(_, s, _)| s / per_row).collect();
        rows.dedup();
        let mut block_rows: Vec<(u16, u64)> =
            group.iter().map(|&(_, s, b)| (b, s / per_row)).collect();
        block_rows.sort_unstable();
        block_rows.dedup();
        let (r, br, n) = (
            rows.len() as f64,
            block_rows.len() as f64,
            group.len() as f64,
        );
        // How far the blocks share rows: 0 not at all, 1 every block every row.
        let sharing = if nb > 1.0 {
            ((br / r - 1.0) / (nb - 1.0)).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let per_sector =
            (r / n * (br / r) / (1.0 + sharing * (resident - 1.0))).max(1.0 / per_row as f64);
        let fetches: f64 = group
            .iter()
            .map(|&(_, s, _)| {
                // (One simulated block reads all of its sectors: no lookup.)
                if nb > 1.0 && f64::from(readers.get(s).count_ones().max(1)) >= nb {
                    nb / resident
                } else {
                    1.0
                }
            })
            .sum();
        activations += fetches * per_sector;
    }
    activations / nb / charged as f64
}

/// Sector -> a bit set (never 0 once added) for the row pass: open addressing with linear
/// probing over at least twice the sectors held, a zero bit set marking a free slot, and the
/// last sector added checked first (the warps of a round often read the same sector in turn).
/// It replaces a `HashMap` whose hashing took most of the pass.
#[derive(Default)]
struct SectorBits {
    /// (sector, bits); bits 0: free.
    slots: Vec<(u64, u64)>,
    len: usize,
    /// The slot of the sector added last.
    last: usize,
}

impl SectorBits {
    /// The slot holding `sector`, or the free slot where it would go (the table is not empty).
    #[inline]
    fn find(&self, sector: u64) -> usize {
        let mask = self.slots.len() - 1;
        let shift = 64 - self.slots.len().trailing_zeros();
        let mut i = (sector.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize;
        loop {
            let (s, bits) = self.slots[i];
            if bits == 0 || s == sector {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    /// Adds `bit` (not 0) to `sector`'s set; true when the sector is new.
    #[inline]
    fn add(&mut self, sector: u64, bit: u64) -> bool {
        if let Some(slot) = self.slots.get_mut(self.last) {
            if slot.0 == sector && slot.1 != 0 {
                slot.1 |= bit;
                return false;
            }
        }
        if 2 * (self.len + 1) > self.slots.len() {
            self.grow();
        }
        let i = self.find(sector);
        self.last = i;
        let slot = &mut self.slots[i];
        let new = slot.1 == 0;
        *slot = (sector, slot.1 | bit);
        self.len += usize::from(new);
        new
    }

    /// The bits of `sector` (0 when never added).
    fn get(&self, sector: u64) -> u64 {
        if self.slots.is_empty() {
            return 0;
        }
        self.slots[self.find(sector)].1
    }

    fn grow(&mut self) {
        let len = (2 * self.slots.len()).max(1024);
        let old = std::mem::replace(&mut self.slots, vec![(0, 0); len]);
        for (s, bits) in old.into_iter().filter(|&(_, bits)| bits != 0) {
            let i = self.find(s);
            self.slots[i] = (s, bits);
        }
        self.last = usize::MAX;
    }
}

/// How the caches are set up for a round: each warp's L1 (one per simulated block), the sizes
/// and the L1 policy.
struct CacheSetup {
    l1_of: Vec<u16>,
    l1_sectors: usize,
    l2_sectors: usize,
    policy: cache::L1Policy,
    /// Sectors an earlier block left in the L2 (in the order it touched them).
    warm_l2: Vec<u64>,
}

impl CacheSetup {
    fn sim<'a>(&self, warps: &'a [&'a WarpTrace]) -> cache::CacheSim<'a> {
        let mut sim = cache::CacheSim::with_blocks(
            warps,
            self.l1_of.clone(),
            self.l1_sectors,
            self.l2_sectors,
            self.policy,
        );
        sim.warm_l2(&self.warm_l2);
        sim
    }
}

/// A block's global sectors in the order its warps touch them when they issue one request each
/// in turn (as the cache simulation interleaves them).
fn global_sectors_in_order<'a>(warps: impl Iterator<Item = &'a WarpTrace>) -> Vec<u64> {
    let warps: Vec<&WarpTrace> = warps.collect();
    let mut out = Vec::new();
    let longest = warps.iter().map(|w| w.accesses.len()).max().unwrap_or(0);
    for k in 0..longest {
        for w in &warps {
            if let Some(a) = w.accesses.get(k).filter(|a| a.space == MemSpace::Global) {
                out.extend_from_slice(
                    &w.sector_ids[a.sector_start as usize..a.sector_end as usize],
                );
            }
        }
    }
    out
}

/// The simulated blocks' share of the L2: their distinct global sectors over an estimate of the
/// distinct sectors of all the blocks resident at once, not their share of the block count.
/// Blocks that run together often read the same data (a stencil's halo rows, the rows of a
/// matrix its neighbours also read), and the L2 holds each sector once.
///
/// Each resident block beyond the simulated ones adds what its neighbours did not read: the
/// share of the next block's sectors the representative block did not read (along x), times
/// the share of the representative's sectors the block one grid row earlier did not read (along
/// y, when a grid row is shorter than the resident blocks, so that such neighbours run at the
/// same time). Without emulated neighbours the blocks share nothing, and the share is the
/// simulated blocks' count over the resident blocks'.
#[derive(Debug, Clone, Copy, Default)]
pub struct L2Share {
    /// Distinct sectors of the simulated blocks (the wave blocks and the block left in the L2).
    pub simulated_sectors: usize,
    /// Distinct sectors of the representative block.
    pub block_sectors: usize,
    /// The share of a block's sectors its running neighbours did not read (1 without any).
    pub new_fraction: f64,
}

impl L2Share {
    /// From the emulation's [`Emulation::sharing`], the simulated wave blocks and the sectors
    /// left in the L2 first.
    fn of(
        em: &Emulation,
        sharing: Option<crate::emulate::Sharing>,
        wave: &[u64],
        warm_l2: &[u64],
        grid_x: u32,
        resident: u64,
    ) -> Self {
        let Some(sharing) = sharing else {
            return Self::default();
        };
        // Along y only when a grid row is shorter than the resident blocks: then the block a
        // row earlier runs at the same time.
        let new_fraction = sharing.new_fraction(u64::from(grid_x) < resident);
        let mut union = std::collections::HashSet::new();
        for &b in wave {
            union.extend(em.block_global_sectors(b));
        }
        union.extend(warm_l2);
        Self {
            simulated_sectors: union.len(),
            block_sectors: sharing.block_sectors,
            new_fraction,
        }
    }

    /// The fraction of the L2 the simulated blocks (`simulated`, of `resident`) get.
    fn fraction(&self, simulated: usize, resident: u64) -> f64 {
        if self.block_sectors == 0 {
            return simulated as f64 / (resident as f64).max(simulated as f64).max(1.0);
        }
        self.simulated_sectors as f64 / self.resident_sectors(simulated, resident).max(1.0)
    }

    /// How the share was found, for the notes.
    fn describe(&self, simulated: usize, resident: u64) -> String {
        if self.block_sectors == 0 {
            return format!("{simulated} / {resident} resident blocks");
        }
        format!(
            "the {} distinct sectors of the {simulated} simulated blocks / the {:.0} of the {resident} resident blocks, estimated: each further block adds {:.1} % of its {} sectors, what the neighbours running with it did not read",
            self.simulated_sectors,
            self.resident_sectors(simulated, resident),
            self.new_fraction * 100.0,
            self.block_sectors
        )
    }

    /// Distinct sectors of the resident blocks, estimated.
    pub fn resident_sectors(&self, simulated: usize, resident: u64) -> f64 {
        let others = (resident as f64 - simulated as f64).max(0.0)
            * self.block_sectors as f64
            * self.new_fraction;
        self.simulated_sectors as f64 + others
    }
}

/// Requests per warp that the cache simulation runs before the compressed operations so far
/// are handed to the round.
const OVERLAP_PIECE_REQUESTS: usize = 256;

/// What the second thread of [`overlapped_round`] hands back besides the programs.
struct Produced {
    cache: CacheResult,
    traffic: Traffic,
    /// The warps of a kind ([`twins`]).
    twin: Vec<Option<usize>>,
}

/// The caches and the compression on a second thread, streaming the programs of the first
/// `n_rep` warps (the representative block) into the round simulation on this one.
///
/// The compression needs the costs, which need the row pass (`costs`, run on this thread), and
/// the warps of a kind ([`twins`], found on this thread too); the caches need neither: they
/// start at once on the second thread, beside those, and the compression catches up with them
/// when the costs arrive. The bounds' traffic is summed there too, once the caches are done,
/// while the round still runs.
///
/// Returns ((pipeline cycles, the programs, complete), what the second thread found, (activations per
/// sector, costs)).
#[allow(clippy::too_many_arguments)]
fn overlapped_round(
    warps: &[&WarpTrace],
    regs: &[InstrRegs],
    n_rep: usize,
    caches: &CacheSetup,
    lat: &crate::device::latencies::Latencies,
    costs: impl FnOnce() -> (f64, Costs),
    n_round: u32,
    schedulers: u32,
) -> ((f64, round::Programs), Produced, (f64, Costs)) {
    let (mut feed, mut programs) = round::Feed::new(n_rep);
    let (costs_tx, costs_rx) = std::sync::mpsc::sync_channel::<(Costs, Vec<Option<usize>>)>(1);
    std::thread::scope(|scope| {
        let producer = scope.spawn(move || {
            let mut sim = caches.sim(warps);
            // A warp with the instructions of an earlier one takes that warp's pieces while
            // their hits are the same (`follow`; no compressor of its own until they differ).
            // Both arrive with the costs.
            let mut twin: Vec<Option<usize>> = Vec::new();
            let mut follow: Vec<Option<usize>> = Vec::new();
            let mut compressors: Vec<Option<Compressor<'_>>> = Vec::new();
            // Per warp, the requests whose hits the compression has used, where its last piece
            // started, and that piece's steps.
            let mut compressed = vec![0usize; n_rep];
            let mut piece_from = vec![0usize; n_rep];
            let mut pieces: Vec<Vec<u32>> = vec![Vec::new(); n_rep];
            let mut costs = None;
            let finish = |sim: cache::CacheSim<'_>, twin: Vec<Option<usize>>| {
                let cache = sim.finish();
                let traffic = Traffic::of(&warps[..n_rep], &cache.hits);
                Produced {
                    cache,
                    traffic,
                    twin,
                }
            };
            // A send fails only when the round has stopped listening (it panicked), and the
            // costs fail to come only when that thread panicked first: stop too.
            loop {
                let more = sim.run_rounds(OVERLAP_PIECE_REQUESTS);
                if costs.is_none() {
                    let arrived = if more {
                        costs_rx.try_recv().ok()
                    } else {
                        match costs_rx.recv() {
                            Ok(c) => Some(c),
                            Err(_) => return finish(sim, twin),
                        }
                    };
                    if let Some((c, kinds)) = arrived {
                        follow = kinds.clone();
                        twin = kinds;
                        costs = Some(c);
                    }
                    if let Some(c) = &costs {
                        compressors = warps[..n_rep]
                            .iter()
                            .zip(&twin)
                            .map(|(w, t)| t.is_none().then(|| Compressor::new(w, regs, lat, c)))
                            .collect();
                    }
                }
                // When the costs arrive, the compression catches up with the caches a piece at a
                // time, so that the round starts after the first piece, not after everything the
                // caches did meanwhile.
                loop {
                    let mut behind = false;
                    for k in 0..compressors.len() {
                        let (from, done) = (compressed[k], sim.done(k));
                        let known = done.min(from + OVERLAP_PIECE_REQUESTS);
                        behind |= known < done;
                        compressed[k] = known;
                        piece_from[k] = from;
                        if compressors[k].is_none() {
                            // The piece of an earlier warp of its kind that covered the same
                            // requests with the same hits (all of them, so the same compressor
                            // state): the one it follows, or another when those differ.
                            let hk = sim.hits(k);
                            let covers = |i: usize| piece_from[i] == from && compressed[i] == known;
                            let j = follow[k].expect("a warp without a compressor follows one");
                            let same = if covers(j) && hk[from..known] == sim.hits(j)[from..known] {
                                Some(j)
                            } else {
                                (0..k).find(|&i| {
                                    i != j
                                        && same_kind(&twin, i, k)
                                        && covers(i)
                                        && hk[..known] == sim.hits(i)[..known]
                                })
                            };
                            if let Some(i) = same {
                                follow[k] = Some(i);
                                // Kept as this warp's piece: a later warp may follow it.
                                pieces[k] = pieces[i].clone();
                                if !pieces[k].is_empty()
                                    && !feed.send_steps(k, pieces[k].clone(), false)
                                {
                                    return finish(sim, twin);
                                }
                                continue;
                            }
                            // Its own compression from here, caught up to where the pieces it
                            // took brought it (those operations were sent already).
                            let costs = costs.as_ref().expect("compressors exist once costs do");
                            let mut c = Compressor::new(warps[k], regs, lat, costs);
                            c.advance(hk, from);
                            c.take_settled();
                            compressors[k] = Some(c);
                            follow[k] = None;
                        }
                        let c = compressors[k].as_mut().expect("set above");
                        c.advance(sim.hits(k), known);
                        let ops = c.take_settled();
                        pieces[k] = feed.number(&ops);
                        if !ops.is_empty() && !feed.send_steps(k, pieces[k].clone(), false) {
                            return finish(sim, twin);
                        }
                    }
                    if !behind {
                        break;
                    }
                }
                if !more {
                    break;
                }
            }
            for k in 0..compressors.len() {
                let last = match compressors[k].take() {
                    Some(c) => feed.number(&c.finish()),
                    None => pieces[follow[k].expect("followed to the end")].clone(),
                };
                pieces[k] = last.clone();
                if !feed.send_steps(k, last, true) {
                    break;
                }
            }
            finish(sim, twin)
        });
        // Moved in, so that a panic here drops it and the second thread stops waiting.
        let costs_tx = costs_tx;
        let costs = costs();
        let kinds = twins(&warps[..n_rep]);
        // The second thread waits for these (it has stopped only if it panicked).
        let _ = costs_tx.send((costs.1, kinds));
        let cycles = round::simulate(&mut programs, n_round as usize, schedulers);
        let cache = match producer.join() {
            Ok(cache) => cache,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        ((cycles, programs), cache, costs)
    })
}

/// Blocks follow each other in their slots without waiting for a whole wave to end: up to three
/// waves with continuous dispatch give the first waves exactly, and what each wave after the
/// first added, what a further loaded wave costs (its fill and drain overlap its neighbours',
/// and blocks that started together drift out of step, so that one block's memory phase meets
/// another's arithmetic). `None` for a launch of one wave, or when the events would pass
/// [`CONTINUOUS_MAX_EVENTS`] (the caller also keeps it to blocks of fewer than
/// [`CONTINUOUS_MAX_TRACE_OPS`] trace instructions); else (waves simulated, their end, a further wave's cycles), with
/// `round_cycles` the one round already simulated.
fn continuous_waves(
    programs: &mut round::Programs,
    round_cycles: f64,
    full_waves: u64,
    n_round: u32,
    schedulers: u32,
) -> Option<(u64, f64, f64)> {
    let simulated = full_waves.min(3) as usize;
    (full_waves >= 2 && programs.ops() * n_round as usize * simulated <= CONTINUOUS_MAX_EVENTS)
        .then(|| {
            let end = round::simulate_waves(programs, n_round as usize, simulated, schedulers);
            let steady = (end - round_cycles).max(0.0) / (simulated - 1) as f64;
            (simulated as u64, end, steady)
        })
}

/// Predicts the launch's time from its emulation.
pub fn predict(
    device: &Device,
    em: &Emulation,
    res: KernelResources,
    lat: &LatencyTable,
) -> Result<(Prediction, TraceRun)> {
    predict_with_rule(device, em, res, lat, LatencyRule::default())
}

/// [`predict`] with a chosen [`LatencyRule`].
pub fn predict_with_rule(
    device: &Device,
    em: &Emulation,
    res: KernelResources,
    lat: &LatencyTable,
    rule: LatencyRule,
) -> Result<(Prediction, TraceRun)> {
    let r = run_with_rule(device, em.launch, em, res, lat, rule)?;
    let launch = em.launch;
    let mut p = Prediction::new(MODEL, &device.name, r.time_us);
    p.cycles = Some(r.cycles);
    p.launch = Some(Launch {
        blocks: launch.blocks(),
        threads_per_block: launch.threads_per_block(),
        launches: 1,
    });
    let mean_instr =
        em.warps.iter().map(|w| w.ops.len() as f64).sum::<f64>() / em.warps.len().max(1) as f64;
    let (pipeline_cycles, n_round, blocks_per_sm) =
        (r.pipeline_cycles, r.blocks_in_round, r.blocks_per_sm);
    p = p
        .with("pipeline_cycles_one_round", pipeline_cycles)
        .with("active_blocks_per_sm", r.active_blocks_per_sm)
        .with(
            "occupancy_limited_by",
            serde_json::to_value(&r.occupancy_limited_by).unwrap_or_default(),
        )
        .with("blocks_per_sm", blocks_per_sm)
        .with("blocks_in_round", n_round)
        .with("warps_in_round", r.warps_in_round)
        .with("representative_block", r.representative_block)
        .with("sim_ops_per_warp", r.sim_ops_per_warp)
        .with("dynamic_instructions_per_warp_mean", mean_instr)
        .with("l1_hit_ratio", r.cache.l1_hit_ratio)
        .with("l2_hit_ratio", r.cache.l2_hit_ratio)
        .with("l1_bytes", r.l1_bytes)
        .with("l2_bytes_per_sm", r.l2_bytes_per_sm)
        .with("memory_latency_scale", r.memory_latency_scale)
        .with("memory_latency_rule", rule.name())
        .with("dram_cycles_per_sector", r.dram_cycles_per_sector)
        .with("dram_activations_per_sector", r.dram_activations_per_sector)
        .with("l2_cycles_per_sector", r.l2_cycles_per_sector)
        .with("full_waves", r.full_waves)
        .with("steady_wave_cycles", r.steady_wave_cycles)
        .with("tail_blocks_per_sm", r.tail_blocks_per_sm)
        .with("tail_pipeline_cycles", r.tail_pipeline_cycles)
        .with("atomic_serial_cycles", r.atomic_serial_cycles)
        .with("launch_overhead_us", r.launch_overhead_us)
        .with("simulated_us", r.simulated_us)
        .with(
            "lower_bound",
            serde_json::to_value(r.bound).unwrap_or_default(),
        )
        .with("l1_bytes_per_block", r.l1_bytes_per_block)
        .with("l2_simulated_bytes", r.l2_simulated_bytes)
        .with("l2_new_sector_fraction", r.l2_share.new_fraction)
        .with("resident_blocks", r.resident_blocks)
        .with("wave_blocks_simulated", r.wave_blocks_simulated)
        .with("above_block_in_l2", r.above_block_in_l2)
        .with("spill_accesses_per_warp", r.spill_accesses_per_warp)
        .with("latency_architecture", lat.architecture.as_str())
        .with(
            "latencies_cycles",
            serde_json::to_value(&lat.values).unwrap_or_default(),
        )
        .with(
            "latency_sources",
            serde_json::to_value(&lat.sources).unwrap_or_default(),
        )
        .with("core_clock_mhz", device.core_clock_mhz);
    p.notes.push(if r.full_waves == 0 {
        format!(
            "one partial wave: a round of {n_round} blocks per SM on {} SMs, {pipeline_cycles:.0} cycles",
            launch.blocks().min(u64::from(device.sm_count))
        )
    } else if let Some(steady) = r.steady_wave_cycles {
        format!(
            "waves with continuous dispatch: up to three waves of {n_round} blocks per SM simulated (a block starts when one ends), {steady:.0} cycles for each wave after the first, {} full waves{}",
            r.full_waves,
            if r.tail_blocks_per_sm > 0 {
                format!(
                    ", then a last round of {} blocks per SM on {} SMs, {:.0} cycles (a partial wave costs the whole round of the blocks still running)",
                    r.tail_blocks_per_sm, r.tail_sms, r.tail_pipeline_cycles
                )
            } else {
                String::new()
            }
        )
    } else if r.tail_blocks_per_sm > 0 {
        format!(
            "waves (eq 8 with a partial last wave): {} full rounds of {n_round} blocks per SM x {pipeline_cycles:.0} cycles + a last round of {} blocks per SM on {} SMs, {:.0} cycles (a partial wave costs the whole round of the blocks still running)",
            r.full_waves, r.tail_blocks_per_sm, r.tail_sms, r.tail_pipeline_cycles
        )
    } else {
        format!(
            "waves (eq 8): {} full rounds of {n_round} blocks per SM x {pipeline_cycles:.0} cycles",
            r.full_waves
        )
    });
    p.notes.push(format!(
        "launch overhead {:.2} us added (data/latencies.toml {} launch_overhead_us)",
        r.launch_overhead_us, lat.architecture
    ));
    p.notes.push(format!(
        "every block of the round replays sampled block {} (the interior class); caches: its {} warps with an L1 of {} bytes (the SM's {} bytes shared by {n_round} blocks), {}, and an L2 shared with {} more blocks running at the same time{} ({} bytes: the device's {} bytes x {})",
        r.representative_block,
        r.representative_warps,
        r.l1_bytes_per_block,
        r.l1_bytes,
        if r.l1_policy.global_loads {
            "plain global loads cached in L1"
        } else {
            "plain global loads not cached in L1 (only ld.global.nc and local memory are; the architecture's default)"
        },
        r.wave_blocks_simulated.saturating_sub(1),
        r.above_block_in_l2.map_or_else(String::new, |a| format!(
            ", after block {a} (one grid row earlier: a grid row reads less than the L2 holds) left what it read there"
        )),
        r.l2_simulated_bytes,
        device.l2_cache_bytes,
        r.l2_share.describe(
            r.wave_blocks_simulated + usize::from(r.above_block_in_l2.is_some()),
            r.resident_blocks
        )
    ));
    p.notes.push(format!(
        "DRAM at the achievable bandwidth: {} GB/s x dram_efficiency {}, or the row activations when slower ({:.2} cycles per sector per SM); stores are written back once per sector (L2 write-back, no fetch on write)",
        device.memory_bandwidth_gbs, lat.values.dram_efficiency, r.dram_cycles_per_sector
    ));
    match device.dram_activation() {
        Some(a) => p.notes.push(format!(
            "DRAM rows: {:.3} activations of a {}-byte row per DRAM sector (the requests of one instruction's same execution share rows; the {} simulated blocks scaled to the {} resident); {} channels activate a row every {} ns each ({}: {}), so a sector costs at least {:.3} ns of the whole DRAM's time{}",
            r.dram_activations_per_sector,
            a.row_bytes,
            r.wave_blocks_simulated,
            r.resident_blocks,
            a.channels,
            a.activate_ns,
            a.memory_type,
            a.source,
            r.dram_activations_per_sector * a.ns_per_activation(),
            if r.dram_activations_per_sector * a.ns_per_activation() * device.memory_bandwidth_gbs * lat.values.dram_efficiency > SECTOR {
                ": the activations, not the bandwidth, limit DRAM"
            } else {
                ""
            }
        )),
        None => p.notes.push(format!(
            "DRAM rows: no activation limit ({})",
            match (&device.memory_type, device.memory_bus_bits) {
                (Some(t), Some(_)) => format!("no activation timing for {t} in data/dram.toml"),
                _ => "the device file names no memory_type and memory_bus_bits".to_string(),
            }
        )),
    }
    if r.atomic_serial_cycles > 0.0 {
        p.notes.push(format!(
            "same-address global atomics: the hottest address takes {:.0} updates at {} per clock at one L2 slice = {:.0} cycles{}",
            r.atomic_serial_cycles * lat.values.global_atomic_same_address_per_clk,
            lat.values.global_atomic_same_address_per_clk,
            r.atomic_serial_cycles,
            if r.atomic_serial_cycles >= r.cycles - 1e-9 {
                ", longer than the rounds: they decide the time"
            } else {
                ""
            }
        ));
    }
    if r.spill_accesses_per_warp > 0.0 {
        p.notes.push(format!(
            "spills of the resource report ({} bytes of stores, {} of loads per thread) as {:.1} local accesses per warp, spread evenly over its instructions in proportion to the static code",
            res.spill_store_bytes, res.spill_load_bytes, r.spill_accesses_per_warp
        ));
    }
    p.notes.push(r.bound.note(r.simulated_us));
    if r.time_us > r.simulated_us {
        p.notes.push(format!(
            "the simulated {:.3} us is below the {} bound: the prediction is raised to the bound, {:.3} us",
            r.simulated_us, r.bound.binding, r.time_us
        ));
    }
    p.notes.push(match rule {
        LatencyRule::Queueing => format!(
            "memory latency: the unloaded latency; {} warps queue on the SM's load/store path at its DRAM share (SPEC.md section 4's max/active warps scaling is the option paper-warp-ratio)",
            r.warps_in_round
        ),
        LatencyRule::PaperWarpRatio => format!(
            "memory latency scaled by max warps / active warps = {} / {} = {:.3} (SPEC.md section 4 read literally)",
            device.limits.max_warps_per_sm, r.warps_in_round, r.memory_latency_scale
        ),
    });
    p.notes.push(format!(
        "latencies of {} from data/latencies.toml (shared/data/latencies/arch_defaults.csv){}",
        lat.architecture,
        if device.latencies.is_some() {
            ", with the device file's [latencies] overrides"
        } else {
            ""
        }
    ));
    p.notes
        .extend(crate::device::latencies::override_notes(device, lat));
    p.notes.extend(em.notes.iter().cloned());
    Ok((p, r))
}

/// Adds the best case of data the emulation could not know to a worst-case prediction `p` of
/// `em`: `best_case_us` and `worst_case_us` in the breakdown, and a note saying which one the
/// headline time is.
///
/// The headline is the worst case (wang2019's conservative rule). It is also what unknown data
/// usually do on a GPU: a warp runs a branch when any one of its 32 lanes takes it, and 32
/// lanes gathering through random indices touch about 32 sectors; the best case needs every
/// lane of a warp to agree (uniform data, sorted indices).
pub fn attach_best_case(p: &mut Prediction, em: &Emulation, best: &Prediction) {
    let d = &em.data_dependence;
    p.breakdown
        .insert("worst_case_us".into(), serde_json::Value::from(p.time_us));
    p.breakdown
        .insert("best_case_us".into(), serde_json::Value::from(best.time_us));
    p.breakdown
        .insert("headline_case".into(), serde_json::Value::from("worst"));
    p.notes.push(format!(
        "the emulation depended on data it could not know ({} branch executions, {} address lanes, {} guard lanes): the time is the worst case (both sides of such branches run, unknown addresses scattered); the best case (conditional code skipped, unknown addresses coalesced) is {:.3} us; describe the buffers with data hints (`data`: NAME=SPEC) to make them exact",
        d.branches, d.unknown_address_lanes, d.unknown_guard_lanes, best.time_us
    ));
}

/// What the trace model needs about one launch: its emulation (the representative block's warps
/// at least), the launch it stands for, the kernel's resources and the device's latency table.
#[derive(Clone)]
pub struct TraceInputs {
    pub launch: crate::emulate::LaunchDims,
    /// The emulation (shared by every row or point of one launch).
    pub emulation: Arc<Emulation>,
    pub resources: KernelResources,
    pub latencies: Arc<LatencyTable>,
    /// The uncalibrated prediction when the caller has already simulated this launch (the PTX
    /// path simulates once for every model's inputs); used as it is.
    pub simulated: Option<Box<Prediction>>,
}

impl PartialEq for TraceInputs {
    fn eq(&self, other: &Self) -> bool {
        self.launch == other.launch
            && Arc::ptr_eq(&self.emulation, &other.emulation)
            && self.resources == other.resources
            && self.latencies == other.latencies
    }
}

impl std::fmt::Debug for TraceInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceInputs")
            .field("launch", &self.launch)
            .field("entry", &self.emulation.entry)
            .field("resources", &self.resources)
            .finish()
    }
}

/// The trace model's free parameters, ratios to the device's own values: DRAM and L2 hit latency
/// scales on the device's latency table, a scale on the device's launch overhead
/// (`analytical::launch_overhead_us`) added to the simulated time, and a scale on the simulated
/// time without that overhead (the throughput the simulation misses or overstates, as a ratio;
/// 1 in files written before it existed). The time with parameters `q` is
/// `q[3] * (T(q[0], q[1]) - L) + q[2] * L` for the simulated time `T` (overhead included, raised
/// to the launch's bound) and the architecture's overhead `L`.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "dram_latency_scale",
        lower: 0.2,
        upper: 5.0,
        start: 1.0,
        absent: None,
    },
    ParamSpec {
        name: "l2_latency_scale",
        lower: 0.2,
        upper: 5.0,
        start: 1.0,
        absent: None,
    },
    ParamSpec {
        name: "launch_overhead_scale",
        lower: 0.0,
        upper: 30.0,
        start: 1.0,
        absent: None,
    },
    ParamSpec {
        name: "time_scale",
        lower: 0.2,
        upper: 5.0,
        start: 1.0,
        absent: Some(1.0),
    },
];

/// Whether parameters leave the latency table as it is (a simulation already made serves).
fn same_latencies(q: &[f64]) -> bool {
    q[0] == 1.0 && q[1] == 1.0
}

/// A simulated time `time_us` (the architecture's `overhead_us` included) with the calibrated
/// launch overhead and time scale of `q` (a vector of three, from before the time scale, has
/// scale 1).
fn calibrated_time(time_us: f64, overhead_us: f64, q: &[f64]) -> f64 {
    let scale = q.get(3).copied().unwrap_or(1.0);
    scale * (time_us - overhead_us) + q[2] * overhead_us
}

/// Refuses to simulate a launch whose inputs kept only its simulation
/// (`Emulation::without_traces`).
fn can_simulate(t: &TraceInputs) -> Result<()> {
    if t.emulation.warps.is_empty() {
        return Err(Error::invalid(
            "calibration",
            format!(
                "`{}` kept only its simulation: latency scales other than 1 need the launch emulated again",
                t.emulation.entry
            ),
        ));
    }
    Ok(())
}

/// The latency table with calibrated DRAM and L2 scales applied.
fn calibrated_latencies(lat: &LatencyTable, q: &[f64]) -> LatencyTable {
    let mut lat = lat.clone();
    lat.values.dram *= q[0];
    lat.values.l2_hit *= q[1];
    lat
}

/// wang2019's trace model in the registry.
pub struct Trace;

impl Trace {
    fn of<'a>(&self, inputs: &'a Inputs) -> Result<&'a TraceInputs> {
        match inputs {
            Inputs::Trace(t) => Ok(t),
            other => Err(self.wrong_inputs(other)),
        }
    }
}

impl Model for Trace {
    fn id(&self) -> ModelId {
        ModelId::Trace
    }
    fn summary(&self) -> &'static str {
        "Wang et al. 2019: per-warp execution traces, cache analysis and warp-pipeline simulation"
    }
    fn takes(&self) -> &'static str {
        "a PTX launch (module, entry, grid, block, arguments)"
    }
    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }
    fn inputs(
        &self,
        source: &Source<'_>,
        _device: Option<&Device>,
    ) -> Result<(Inputs, Vec<String>)> {
        match source {
            Source::Ptx(f) => Ok((
                Inputs::Trace(Box::new(TraceInputs {
                    launch: f.emulation.launch,
                    emulation: f.emulation.clone(),
                    resources: f.resources,
                    latencies: Arc::new(f.latencies.clone()),
                    simulated: Some(Box::new(f.trace.clone())),
                })),
                Vec::new(),
            )),
            _ => Err(self.cannot_read(source)),
        }
    }
    fn predict(
        &self,
        device: Option<&Device>,
        inputs: &Inputs,
        params: Option<&[f64]>,
    ) -> Result<Prediction> {
        let device = crate::model::analytical::need_device(device, "trace")?;
        let t = self.of(inputs)?;
        match params {
            None => match &t.simulated {
                Some(p) => Ok((**p).clone()),
                None => Ok(predict(device, &t.emulation, t.resources, &t.latencies)?.0),
            },
            Some(q) => {
                let (mut p, overhead) = match (&t.simulated, same_latencies(q)) {
                    (Some(p), true) => ((**p).clone(), t.latencies.values.launch_overhead_us),
                    _ => {
                        can_simulate(t)?;
                        let lat = calibrated_latencies(&t.latencies, q);
                        let (p, r) = predict(device, &t.emulation, t.resources, &lat)?;
                        (p, r.launch_overhead_us)
                    }
                };
                let launch_us = q[2] * overhead;
                p.time_us = calibrated_time(p.time_us, overhead, q);
                p.notes.push(format!(
                    "calibrated launch overhead {launch_us:.3} us ({} x the architecture's {overhead:.3} us)",
                    q[2]
                ));
                if let Some(scale) = q.get(3).filter(|s| **s != 1.0) {
                    p.notes.push(format!(
                        "calibrated time scale {scale} on the simulated time without the overhead"
                    ));
                }
                Ok(p)
            }
        }
    }
    fn time_us(
        &self,
        device: Option<&Device>,
        inputs: &Inputs,
        params: Option<&[f64]>,
    ) -> Result<f64> {
        let device = crate::model::analytical::need_device(device, "trace")?;
        let t = self.of(inputs)?;
        match params {
            None => match &t.simulated {
                Some(p) => Ok(p.time_us),
                None => {
                    Ok(run_on(device, t.launch, &t.emulation, t.resources, &t.latencies)?.time_us)
                }
            },
            Some(q) => match (&t.simulated, same_latencies(q)) {
                (Some(p), true) => Ok(calibrated_time(
                    p.time_us,
                    t.latencies.values.launch_overhead_us,
                    q,
                )),
                _ => {
                    can_simulate(t)?;
                    let lat = calibrated_latencies(&t.latencies, q);
                    let r = run_on(device, t.launch, &t.emulation, t.resources, &lat)?;
                    Ok(calibrated_time(r.time_us, r.launch_overhead_us, q))
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emulate::{emulate, LaunchDims, Options};
    use crate::workload::trace::MemAccess;

    /// A warp of one 32-lane, 4-byte load in `space`, compressed with `device`'s latency table
    /// and no L2 or DRAM bandwidth limit; `hit_l2` says where its sectors are found.
    fn one_load(device: &str, access: MemAccess, hit_l2: bool) -> Vec<SimOp> {
        use crate::workload::trace::TraceOp;
        let d = crate::device::catalogue::find(device).unwrap();
        let lat = crate::device::latencies::for_device(d).unwrap();
        let latency = match access.space {
            MemSpace::Shared => LatencyClass::SharedLoad,
            _ => LatencyClass::GlobalLoad,
        };
        let w = WarpTrace {
            threads: 32,
            ops: vec![TraceOp {
                instr: 0,
                latency,
                access: 0,
            }],
            accesses: vec![access],
            ..Default::default()
        };
        let l2 = if hit_l2 { 1.0 } else { 0.0 };
        let hits = [cache::AccessHits {
            l1: 0.0,
            l2,
            dram: 0.0,
        }];
        compress(&w, &[], &hits, &lat.values, &Costs::new(4, 0.0, 1.0))
    }

    /// A 32-lane, 4-byte load in `space` of `sectors` sectors, `lines` lines and `ways` bank
    /// conflict ways.
    fn load_access(space: MemSpace, sectors: u32, lines: u32, ways: u32) -> MemAccess {
        MemAccess {
            instr: 0,
            space,
            store: false,
            lanes: 32,
            bytes_per_lane: 4,
            addresses_known: true,
            sectors,
            lines,
            bank_ways: ways,
            sector_start: 0,
            sector_end: 0,
            atomic: Atomic::No,
            cache: Default::default(),
            same_address_lanes: 0,
            distinct_addresses: 0,
        }
    }

    /// One warp load of `sectors` sectors in `lines` 128-byte lines, every sector an L2 hit:
    /// the cycles it holds the load/store path.
    fn load_occupancy(device: &str, lines: u32, sectors: u32) -> f64 {
        let access = load_access(MemSpace::Global, sectors, lines, 0);
        match one_load(device, access, true)[..] {
            [SimOp::Global { occupy, .. }] => occupy,
            ref ops => panic!("{ops:?}"),
        }
    }

    #[test]
    fn an_uncoalesced_request_holds_the_path_once_per_line() {
        // Kepler replays a request once per 128-byte line, a line every other clock
        // (l1_lines_per_clk_sm 0.5): 32 lines hold the path 64 cycles, where the L1 stage alone
        // would take 32 sectors x 32 B / 128 B per clock = 8.
        assert_eq!(load_occupancy("Tesla K20c", 32, 32), 64.0);
        // A coalesced request (4 sectors in 1 line): max(1 line / 0.5, 4 x 32 / 128) = 2.
        assert_eq!(load_occupancy("Tesla K20c", 1, 4), 2.0);
        // Volta's tag stage takes 4 lines per clock: 32 lines = 8 cycles, the same as the L1
        // stage's 8, so nothing changes there.
        assert_eq!(load_occupancy("Tesla V100 PCIe", 32, 32), 8.0);
    }

    /// The shared-memory path cycles and the latency from issue to result of one shared load
    /// of `ways` conflict ways, the first instruction of its warp, whose result an fp32 add
    /// reads right after it: the load holds the warp only for its path cycles, the add waits
    /// for the rest.
    fn shared_load_cost(device: &str, ways: u32) -> (f64, f64) {
        shared_access_cost(device, load_access(MemSpace::Shared, ways, 0, ways))
    }

    /// [`shared_load_cost`] of any shared load `access`.
    fn shared_access_cost(device: &str, access: MemAccess) -> (f64, f64) {
        use crate::workload::trace::TraceOp;
        let d = crate::device::catalogue::find(device).unwrap();
        let lat = crate::device::latencies::for_device(d).unwrap().values;
        let w = WarpTrace {
            threads: 32,
            ops: vec![
                TraceOp {
                    instr: 0,
                    latency: LatencyClass::SharedLoad,
                    access: 0,
                },
                TraceOp {
                    instr: 1,
                    latency: LatencyClass::Fp32,
                    access: TraceOp::NO_ACCESS,
                },
            ],
            accesses: vec![access],
            ..Default::default()
        };
        let reg = |dst: u16, src: u16| InstrRegs {
            dst: [dst, NO_REG, NO_REG, NO_REG],
            src: [src, NO_REG, NO_REG, NO_REG, NO_REG, NO_REG],
        };
        let regs = [reg(0, NO_REG), reg(1, 0)];
        let hits = [cache::AccessHits::default()];
        // The load (holding the warp for its path cycles, then the reader's wait for its
        // result, its scheduler free), then the reader. The load is on the load/store path
        // where shared memory and the L1 are one SRAM (`shared_on_l1_path`), else on its own.
        match compress(&w, &regs, &hits, &lat, &Costs::new(4, 0.0, 1.0))[..] {
            [SimOp::Shared { occupy, latency }, SimOp::Comp { latency: add, .. }]
                if !lat.shared_on_l1_path =>
            {
                (occupy, latency + add - lat.fp32)
            }
            [SimOp::Global { occupy, latency }, SimOp::Comp { latency: add, .. }]
                if lat.shared_on_l1_path =>
            {
                (occupy, latency + add - lat.fp32)
            }
            ref ops => panic!("{ops:?}"),
        }
    }

    #[test]
    fn shared_memory_shares_the_load_store_path_where_it_is_one_sram_with_the_l1() {
        // The whitepapers: Fermi and Kepler configure one 64 KB SRAM as shared memory and L1,
        // Volta and later combine them again; Maxwell and Pascal have a dedicated shared
        // memory beside the L1/texture cache.
        let on_l1 = |device: &str| {
            let d = crate::device::catalogue::find(device).unwrap();
            crate::device::latencies::for_device(d)
                .unwrap()
                .values
                .shared_on_l1_path
        };
        for d in [
            "Tesla K20c",
            "GTX 680",
            "Tesla V100 PCIe",
            "RTX 2080 Ti",
            "RTX 3090",
        ] {
            assert!(on_l1(d), "{d}");
        }
        for d in ["GTX 970", "GTX Titan X", "TITAN Xp", "Tesla P100 PCIe 16GB"] {
            assert!(!on_l1(d), "{d}");
        }
        // So a shared access and a global request of one warp queue on one path on Kepler:
        // the same round of one shared load then one global load takes both holds there, and
        // overlaps them on Maxwell (shared_access_cost asserts which path each one takes).
        assert_eq!(shared_load_cost("Tesla K20c", 1).0, 1.0);
        assert_eq!(shared_load_cost("GTX 970", 1).0, 1.0);
    }

    #[test]
    fn a_shared_wavefront_takes_the_banks_per_architecture_bandwidth() {
        // Volta: 32 banks x 4 bytes a clock = 128 B/clk, one 128-byte wavefront per clock;
        // the data latency is the table's shared load (23 cycles) plus the extra wavefronts.
        assert_eq!(shared_load_cost("Tesla V100 PCIe", 1), (1.0, 23.0));
        assert_eq!(shared_load_cost("Tesla V100 PCIe", 2), (2.0, 24.0));
        // Turing: 64 B/clk per SM, two clocks a wavefront; a 2-way conflict takes 4.
        assert_eq!(shared_load_cost("RTX 2080 Ti", 1), (2.0, 24.0));
        assert_eq!(shared_load_cost("RTX 2080 Ti", 2), (4.0, 26.0));
        // Fermi (programming guide 2.x: 32 bits per bank per two clocks) is Turing's rate.
        assert_eq!(shared_load_cost("GTX 480", 1).0, 2.0);
        // Kepler and Maxwell: one wavefront a clock.
        assert_eq!(shared_load_cost("Tesla K20c", 3).0, 3.0);
        assert_eq!(shared_load_cost("GTX 970", 1).0, 1.0);
    }

    #[test]
    fn a_vector_shared_load_moves_its_bytes_at_the_shared_bandwidth() {
        // A warp's LDS.128 returns four registers a lane, 32 x 16 = 512 bytes, at the SM's
        // shared bytes per clock even when every lane reads the same 16 bytes (one bank way):
        // 4 clocks at 128 B/clk (Maxwell, Volta), 8 at Turing's 64; an LDS.64 half that.
        let vector = |bytes: u16| {
            let mut a = load_access(MemSpace::Shared, 1, 0, 1);
            a.bytes_per_lane = bytes;
            a
        };
        assert_eq!(shared_access_cost("GTX 970", vector(16)), (4.0, 24.0 + 3.0));
        assert_eq!(shared_access_cost("Tesla V100 PCIe", vector(16)).0, 4.0);
        assert_eq!(shared_access_cost("Tesla V100 PCIe", vector(8)).0, 2.0);
        assert_eq!(shared_access_cost("RTX 2080 Ti", vector(16)).0, 8.0);
        // Kepler's banks are 4 bytes wide unless a program asks for 8 (the driver's default
        // bank size): 128 B/clk, 4 clocks.
        assert_eq!(shared_access_cost("Tesla K20c", vector(16)).0, 4.0);
        // Eight lanes of 16 bytes are one clock's 128 bytes: the banks' one wavefront.
        let mut eight = vector(16);
        eight.lanes = 8;
        assert_eq!(shared_access_cost("GTX 970", eight).0, 1.0);
    }

    #[test]
    fn sixteen_load_store_units_take_a_warp_in_two_clocks() {
        // GA10x: 128 B/clk of banks but 16 LD/ST units per SM (4 per partition): a
        // conflict-free warp request of 32 lanes takes 32 / 16 = 2 cycles, not the banks' 1; a
        // 2-way conflict (2 wavefronts, 2 cycles) costs nothing more, a 4-way one 4 cycles.
        assert_eq!(shared_load_cost("RTX 3090", 1), (2.0, 24.0));
        assert_eq!(shared_load_cost("RTX 3090", 2), (2.0, 24.0));
        assert_eq!(shared_load_cost("RTX 3090", 4), (4.0, 26.0));
        // Eight active lanes take one clock of the units and one wavefront of the banks.
        let mut eight = load_access(MemSpace::Shared, 1, 0, 1);
        eight.lanes = 8;
        // (GA10x's shared memory is on the load/store path, one SRAM with the L1.)
        match one_load("RTX 3090", eight, false)[..] {
            [SimOp::Global { occupy, .. }] => assert_eq!(occupy, 1.0),
            ref ops => panic!("{ops:?}"),
        }
        // GP100 has 16 LD/ST units per SM (two blocks of 8) and 128 B/clk banks; GP102 has 32.
        assert_eq!(shared_load_cost("Tesla P100 PCIe 16GB", 1).0, 2.0);
        assert_eq!(shared_load_cost("TITAN Xp", 1).0, 1.0);
    }

    /// A launch of a fixture kernel: (PTX file, entry, grid, block, arguments).
    type Case<'a> = (&'a str, &'a str, [u32; 3], [u32; 3], &'a [&'a str]);

    /// Emulates a fixture launch.
    fn emulate_case((file, entry, grid, block, args): Case<'_>) -> (LaunchDims, Emulation) {
        let fix = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/ptx");
        let text = std::fs::read_to_string(format!("{fix}/{file}")).unwrap();
        let (m, _) = kerneltime_ptx::parse(&text);
        let args = crate::emulate::KernelArg::parse_all(args).unwrap();
        let launch = LaunchDims { grid, block };
        let em = emulate(&m, entry, launch, &args, Options::default()).unwrap();
        (launch, em)
    }

    #[test]
    fn round_equals_the_heap_round_on_fixture_kernels() {
        use crate::device::catalogue;
        use crate::device::latencies::for_device;
        let dev = catalogue::find("V100").unwrap().clone();
        let lat = for_device(&dev).unwrap();
        let cases: [Case<'_>; 4] = [
            (
                "dwt.nvcc-sm75.ptx",
                "dwt_matrix",
                [160, 1, 1],
                [256, 1, 1],
                &["3=40960", "4=40"],
            ),
            (
                "dwt.nvcc-sm75.ptx",
                "dwt_matrix",
                [80, 1, 1],
                [96, 1, 1],
                &["3=7680", "4=9"],
            ),
            (
                "fdtd.nvcc-sm75.ptx",
                "fdtd_o2",
                [40, 25, 1],
                [32, 4, 1],
                &["5=1280", "6=100", "7=16"],
            ),
            (
                "fdtd.nvcc-sm75.ptx",
                "fdtd_o2",
                [10, 10, 1],
                [64, 2, 1],
                &["5=640", "6=20", "7=4"],
            ),
        ];
        let mut checked = 0;
        for case in cases {
            let (file, entry) = (case.0, case.1);
            let (_, em) = emulate_case(case);
            let costs = Costs::new(4, 0.9, 2.0);
            let rep = em.warps.iter().map(|w| w.block_linear).max().unwrap();
            let warps: Vec<&WarpTrace> =
                em.warps.iter().filter(|w| w.block_linear == rep).collect();
            let cache = cache::simulate(&warps, 2048, 8192);
            let progs: Vec<Vec<SimOp>> = warps
                .iter()
                .zip(&cache.hits)
                .map(|(w, h)| compress(w, &em.regs, h, &lat.values, &costs))
                .collect();
            for blocks in [1, 3, 8] {
                let fast = simulate_round(&progs, blocks, 4);
                let reference = round::tests::reference_round(&progs, blocks, 4);
                assert_eq!(
                    fast.to_bits(),
                    reference.to_bits(),
                    "{file} {entry} x{blocks}"
                );
                let streamed = round::tests::streamed_round(&progs, blocks, 4, 100);
                assert_eq!(
                    streamed.to_bits(),
                    fast.to_bits(),
                    "{file} {entry} x{blocks}"
                );
                // Ticks of 1/1024 cycle against exact f64 cycles: measured at most 8.0e-3
                // (dwt_matrix x8, where rounding swaps reports that were within a tick and
                // the warps' loads then queue at the path in another order); the other
                // eleven within 4.1e-4.
                let exact = round::tests::reference_round_f64(&progs, blocks, 4);
                let off = (fast - exact).abs() / exact;
                assert!(off <= 1e-2, "{file} {entry} x{blocks}: {fast} vs {exact}");
                checked += 1;
            }
        }
        assert_eq!(checked, 12);
    }

    #[test]
    fn overlapping_the_caches_with_the_round_changes_nothing() {
        use crate::device::catalogue;
        use crate::device::latencies::for_device;
        let dev = catalogue::find("V100").unwrap().clone();
        let lat = for_device(&dev).unwrap();
        let res = KernelResources {
            registers_per_thread: 32,
            shared_bytes_per_block: 2048,
            ..Default::default()
        };
        let cases: [Case<'_>; 5] = [
            // 1,000 taps: 11,028 instructions per warp, 8 warps, above the Auto threshold.
            (
                "dwt.nvcc-sm75.ptx",
                "dwt_matrix",
                [1280, 1, 1],
                [256, 1, 1],
                &["3=327680", "4=1000"],
            ),
            (
                "fdtd.nvcc-sm75.ptx",
                "fdtd_o2",
                [40, 25, 1],
                [32, 4, 1],
                &["5=1280", "6=100", "7=16"],
            ),
            // Barriers and shared memory.
            (
                "basics.nvcc-sm75.ptx",
                "reduce_sum",
                [64, 1, 1],
                [256, 1, 1],
                &["2=16384"],
            ),
            // Several waves with continuous dispatch (which the overlapped path once skipped).
            (
                "basics.nvcc-sm75.ptx",
                "reduce_sum",
                [2048, 1, 1],
                [256, 1, 1],
                &["2=524288"],
            ),
            // A column walk: the DRAM rows, not the bandwidth, set the cost of a sector (the
            // costs the overlapped compression waits for).
            (
                "mtx_mul_vec.nvcc-sm75.ptx",
                "mtx_mul_vec",
                [768, 1, 1],
                [128, 1, 1],
                &["0=2048"],
            ),
        ];
        // The SM's share of the achievable bandwidth: cycles per sector.
        let bandwidth_cycles = 32.0
            / (dev.memory_bandwidth_gbs * lat.values.dram_efficiency * 1e3
                / dev.core_clock_mhz
                / f64::from(dev.sm_count));
        for case in cases {
            let entry = case.1;
            let (launch, em) = emulate_case(case);
            let go = |o| run_with(&dev, launch, &em, res, &lat, LatencyRule::default(), o).unwrap();
            let (off, on, auto) = (go(Overlap::Off), go(Overlap::On), go(Overlap::Auto));
            assert!(off.pipeline_cycles > 0.0, "{entry}");
            if case.2[0] == 2048 {
                assert!(
                    off.steady_wave_cycles.is_some(),
                    "{entry}: no continuous dispatch"
                );
            }
            let rows_limit = off.dram_cycles_per_sector > 2.0 * bandwidth_cycles;
            assert_eq!(rows_limit, entry == "mtx_mul_vec", "{entry}");
            for r in [&on, &auto] {
                assert_eq!(
                    r.dram_cycles_per_sector.to_bits(),
                    off.dram_cycles_per_sector.to_bits(),
                    "{entry}"
                );
                assert_eq!(
                    r.pipeline_cycles.to_bits(),
                    off.pipeline_cycles.to_bits(),
                    "{entry}"
                );
                assert_eq!(r.cache, off.cache, "{entry}");
                assert_eq!(r.sim_ops_per_warp, off.sim_ops_per_warp, "{entry}");
                // The waves and the time too: continuous dispatch is decided by the trace,
                // not by whether a second core took the caches.
                assert_eq!(r.steady_wave_cycles, off.steady_wave_cycles, "{entry}");
                assert_eq!(r.time_us.to_bits(), off.time_us.to_bits(), "{entry}");
            }
        }
    }

    /// A warp of `n` (fp32 instruction, global load) pairs: load `i` reads sector `base + i`
    /// before load `repeat_from` and sector `base` from there on.
    fn loads_warp(n: usize, base: u64, repeat_from: usize) -> WarpTrace {
        use crate::workload::trace::{Atomic, CacheOp};
        let mut w = WarpTrace::default();
        for i in 0..n {
            w.ops.push(TraceOp {
                instr: 0,
                latency: LatencyClass::Fp32,
                access: TraceOp::NO_ACCESS,
            });
            w.ops.push(TraceOp {
                instr: 1,
                latency: LatencyClass::GlobalLoad,
                access: i as u32,
            });
            w.accesses.push(MemAccess {
                instr: 1,
                space: MemSpace::Global,
                store: false,
                lanes: 32,
                bytes_per_lane: 1,
                addresses_known: true,
                sectors: 1,
                lines: 1,
                bank_ways: 0,
                sector_start: i as u32,
                sector_end: i as u32 + 1,
                atomic: Atomic::No,
                cache: CacheOp::Default,
                same_address_lanes: 0,
                distinct_addresses: 0,
            });
            w.sector_ids
                .push(base + if i < repeat_from { i as u64 } else { 0 });
        }
        w
    }

    #[test]
    fn warps_of_a_kind_share_their_compression_exactly() {
        use crate::device::catalogue;
        use crate::device::latencies::for_device;
        // Four warps with the same instructions, each on sectors of its own. A misses on every
        // load; B like A until load 1,000, then hits one sector over and over; C like A until
        // load 2,000, then like that; D like B. So B and D leave A at load 1,000 (D then has
        // B's hits throughout), and C leaves A at load 2,000.
        let n = 3000;
        let warps = [
            loads_warp(n, 0, n),
            loads_warp(n, 1 << 20, 1000),
            loads_warp(n, 2 << 20, 2000),
            loads_warp(n, 3 << 20, 1000),
        ];
        let refs: Vec<&WarpTrace> = warps.iter().collect();
        let twin = twins(&refs);
        assert_eq!(twin, [None, Some(0), Some(0), Some(0)]);
        let setup = CacheSetup {
            l1_of: vec![0; 4],
            l1_sectors: 64,
            l2_sectors: 1 << 16,
            policy: cache::L1Policy::ALL,
            warm_l2: Vec::new(),
        };
        let mut sim = setup.sim(&refs);
        while sim.run_rounds(usize::MAX) {}
        let cache = sim.finish();
        let h = &cache.hits;
        assert_eq!(h[1][..1000], h[0][..1000]);
        assert!(h[1][1001..].iter().zip(&h[0][1001..]).all(|(b, a)| b != a));
        assert_eq!(h[2][..2000], h[0][..2000]);
        assert_ne!(h[2][2001..], h[0][2001..]);
        assert_eq!(h[3], h[1]);
        // Each warp compressed on its own is the reference.
        let dev = catalogue::find("V100").unwrap().clone();
        let lat = for_device(&dev).unwrap().values;
        let costs = Costs::new(4, 3.0, 1.0);
        let own: Vec<Vec<SimOp>> = refs
            .iter()
            .zip(h)
            .map(|(w, h)| compress(w, &[], h, &lat, &costs))
            .collect();
        assert_ne!(own[0], own[1]);
        assert_ne!(own[0], own[2]);
        assert_eq!(compress_all(&refs, &twin, &[], h, &lat, &costs), own);
        let expected = round::simulate(&mut round::Programs::complete(&own), 2, 4);
        let ((cycles, programs), produced, _) =
            overlapped_round(&refs, &[], 4, &setup, &lat, || (0.0, costs), 2, 4);
        assert_eq!(cycles.to_bits(), expected.to_bits());
        assert_eq!(programs.ops(), own.iter().map(Vec::len).sum::<usize>());
        assert_eq!(produced.cache, cache);
    }

    #[test]
    fn latency_rules_scale_as_documented() {
        // Literal SPEC reading: 64 max warps / 2 active = 32; the queueing rule never scales.
        assert_eq!(LatencyRule::PaperWarpRatio.scale(64, 2), 32.0);
        assert_eq!(LatencyRule::PaperWarpRatio.scale(64, 64), 1.0);
        assert_eq!(LatencyRule::Queueing.scale(64, 2), 1.0);
        assert_eq!(LatencyRule::default(), LatencyRule::Queueing);
    }

    /// A warp whose accesses are `execs` executions of one global load, each of the sectors
    /// `sectors(k)` for its k-th execution.
    fn warp_of_loads(execs: u32, sectors: impl Fn(u32) -> Vec<u64>) -> WarpTrace {
        let mut w = WarpTrace::default();
        for k in 0..execs {
            let ids = sectors(k);
            let mut a = load_access(MemSpace::Global, ids.len() as u32, 1, 0);
            a.sector_start = w.sector_ids.len() as u32;
            w.sector_ids.extend(ids);
            a.sector_end = w.sector_ids.len() as u32;
            w.accesses.push(a);
        }
        w
    }

    #[test]
    fn rows_are_shared_by_requests_that_arrive_together_only() {
        // 2 KB rows hold 64 sectors. Eight warps each read 4 consecutive sectors once (a
        // coalesced stream): the 32 sectors of that execution fall in one row.
        let stream: Vec<WarpTrace> = (0..8u64)
            .map(|k| warp_of_loads(1, |_| (4 * k..4 * k + 4).collect()))
            .collect();
        let stream: Vec<&WarpTrace> = stream.iter().collect();
        let one_block = |warps: &[&WarpTrace]| activations_per_sector(warps, &[0; 16], 1, 1, 2048);
        assert_eq!(one_block(&stream), 1.0 / 32.0);
        // One warp walks 32 matrix rows of 16 KB each, a sector further per execution (a
        // column walk): every execution's 32 sectors lie in 32 rows. Over the whole trace
        // each row gets 8 of the sectors, but on different executions: still one row per
        // sector.
        let walk = warp_of_loads(8, |k| {
            (0..32u64).map(|lane| lane * 512 + u64::from(k)).collect()
        });
        assert_eq!(one_block(&[&walk]), 1.0);
        // Sectors read again are L2 hits and open nothing: a second warp re-reading the walk's
        // sectors, then 32 new sectors of one row, adds 1 row for 32 sectors.
        let again = warp_of_loads(9, |k| match k {
            0..=7 => (0..32u64).map(|lane| lane * 512 + u64::from(k)).collect(),
            _ => (100_000..100_032).collect(),
        });
        assert_eq!(
            one_block(&[&walk, &again]),
            (8.0 * 32.0 + 1.0) / (8.0 * 32.0 + 32.0)
        );
        // No global sectors, no activations.
        assert_eq!(one_block(&[]), 0.0);
    }

    #[test]
    fn the_simulated_blocks_are_scaled_to_the_blocks_running_at_once() {
        // 4 simulated blocks of 400 resident, one warp each. Each reads its own sector of one
        // row on every execution (matrix B of a naive matrix product: the blocks' columns of
        // row k): they share the row, so the 400 blocks are taken to share it too, and it is
        // full (64 sectors) long before: 1/64 row per sector.
        let b_like: Vec<WarpTrace> = (0..4u64)
            .map(|b| warp_of_loads(4, |k| vec![u64::from(k) * 64 + b]))
            .collect();
        let b_like: Vec<&WarpTrace> = b_like.iter().collect();
        assert_eq!(
            activations_per_sector(&b_like, &[0, 1, 2, 3], 4, 400, 2048),
            1.0 / 64.0
        );
        // Each reads its own row (a column walk per block): nothing shared, 1 row per sector
        // however many blocks run.
        let walks: Vec<WarpTrace> = (0..4u64)
            .map(|b| warp_of_loads(4, |k| vec![(b * 4 + u64::from(k)) * 64]))
            .collect();
        let walks: Vec<&WarpTrace> = walks.iter().collect();
        assert_eq!(
            activations_per_sector(&walks, &[0, 1, 2, 3], 4, 400, 2048),
            1.0
        );
        // Alternately, all 4 read the same sector of a new row (matrix A: a row of blocks
        // shares it; block 0 touches it first). Read by all 4 simulated blocks, it is taken to
        // be read by all 400 resident ones: 4 / 400 of a fetch in the simulation, at one row
        // per sector. The other executions are B's: 4 private sectors, 1/64 row each. Per
        // block, (2 x 4/400 x 1 + 2 x 4 x 1/64) / 4 activations, over the 2 + 2 sectors the
        // cache simulation charges block 0.
        let mixed: Vec<WarpTrace> = (0..4u64)
            .map(|b| {
                warp_of_loads(4, |k| match k % 2 {
                    0 => vec![(1000 + u64::from(k)) * 64],
                    _ => vec![u64::from(k) * 64 + b],
                })
            })
            .collect();
        let mixed: Vec<&WarpTrace> = mixed.iter().collect();
        let expected = (2.0 * 4.0 / 400.0 + 2.0 * 4.0 / 64.0) / 4.0 / 4.0;
        let got = activations_per_sector(&mixed, &[0, 1, 2, 3], 4, 400, 2048);
        assert!((got - expected).abs() < 1e-12, "{got} vs {expected}");
    }

    #[test]
    fn a_column_walk_is_limited_by_row_activations_on_gddr5() {
        use crate::device::catalogue;
        use crate::device::latencies::for_device;
        // mtx_mul_vec: lane `row` reads m[row * n + col], a column walk over 8 KB rows.
        // 768 blocks of 128 threads are full waves on the GTX Titan X's 24 SMs.
        let (launch, em) = emulate_case((
            "mtx_mul_vec.nvrtc-sm52.ptx",
            "mtx_mul_vec",
            [768, 1, 1],
            [128, 1, 1],
            &["0=2048"],
        ));
        let res = KernelResources {
            registers_per_thread: 16,
            shared_bytes_per_block: 0,
            ..Default::default()
        };
        let dev = catalogue::find("GTX Titan X").unwrap();
        let lat = for_device(dev).unwrap();
        let r = run_on(dev, launch, &em, res, &lat).unwrap();
        assert!(r.full_waves >= 1);
        assert!(
            r.dram_activations_per_sector > 0.8,
            "{}",
            r.dram_activations_per_sector
        );
        // 384-bit GDDR5: 12 channels, a row every 5.9 ns each; the SM's share of 24 at
        // 1075 MHz is one activation per 5.9 / 12 x 1.075 x 24 = 12.685 cycles, far above the
        // bandwidth's 32 B / (336.5 GB/s x 0.78 / 1075 MHz / 24) = 3.15 cycles per sector.
        let per_activation = 5.9 / 12.0 * 1.075 * 24.0;
        let expected = r.dram_activations_per_sector * per_activation;
        assert!(expected > 3.0 * 32.0 / (336.5 * 0.78 * 1e3 / 1075.0 / 24.0));
        assert!((r.dram_cycles_per_sector - expected).abs() < 1e-9 * expected);
        // The bound counts the same activations: the DRAM bytes' sectors x rows per sector x
        // 5.9 / 12 ns.
        let activations = r.bound.dram_bytes / 32.0 * r.dram_activations_per_sector;
        assert!(r.bound.dram_us >= activations * 5.9 / 12.0 * 1e-3 * (1.0 - 1e-9));
        // LPDDR4 has no timing source in data/dram.toml: no limit, the bandwidth's cost.
        let tx2 = catalogue::find("Jetson TX2").unwrap();
        let r = run_on(tx2, launch, &em, res, &for_device(tx2).unwrap()).unwrap();
        assert_eq!(r.dram_activations_per_sector, 0.0);
    }

    /// The run cache (a comp run timed once per distinct instruction sequence) gives the
    /// operations of the scoreboard run instruction by instruction, bit for bit: loops of
    /// fixture kernels and of IEEE sequences, on devices with exact costs and on ones without
    /// (the GTX 560 Ti: 48 fp32 results per clock on two schedulers, 4/3 cycles each; a
    /// latency of 4.3 cycles).
    #[test]
    fn cached_comp_runs_are_the_scoreboard_s_runs_bit_for_bit() {
        use crate::emulate::{emulate, KernelArg, LaunchDims, Options};
        let fix = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/ptx");
        let div = ".version 7.0\n.target sm_75\n.address_size 64\n\
            .visible .entry dv(.param .u64 p, .param .u32 n)\n{\n\
            .reg .pred %p<3>;\n.reg .b32 %r<8>;\n.reg .b64 %rd<6>;\n.reg .f32 %f<8>;\n\
            .reg .f64 %fd<4>;\nld.param.u64 %rd1, [p];\nld.param.u32 %r2, [n];\n\
            mov.u32 %r1, %tid.x;\nmul.wide.s32 %rd3, %r1, 4;\nadd.s64 %rd4, %rd1, %rd3;\n\
            ld.global.f32 %f1, [%rd4];\nmov.u32 %r3, 0;\nmov.f32 %f5, 0f3F800000;\n\
            LOOP:\ndiv.rn.f32 %f2, %f1, %f5;\nsqrt.rn.f32 %f3, %f2;\n\
            add.f32 %f5, %f5, %f3;\ncvt.f64.f32 %fd1, %f5;\ndiv.rn.f64 %fd2, %fd1, %fd1;\n\
            cvt.rn.f32.f64 %f6, %fd2;\nadd.f32 %f5, %f5, %f6;\nadd.s32 %r3, %r3, 1;\n\
            setp.lt.s32 %p1, %r3, %r2;\n@%p1 bra LOOP;\nst.global.f32 [%rd4], %f5;\n\
            ret;\n}\n"
            .to_string();
        let read = |f: &str| std::fs::read_to_string(format!("{fix}/{f}")).unwrap();
        let kernels: Vec<(String, &str, [u32; 3], Vec<&str>)> = vec![
            (
                read("dwt.nvcc-sm75.ptx"),
                "dwt_matrix",
                [128, 1, 1],
                vec!["3=512", "4=40"],
            ),
            (
                read("fdtd.nvcc-sm75.ptx"),
                "fdtd_o2",
                [32, 4, 1],
                vec!["5=64", "6=8", "7=6"],
            ),
            (
                read("basics.nvcc-sm75.ptx"),
                "reduce_sum",
                [256, 1, 1],
                vec!["2=4096"],
            ),
            (div, "dv", [64, 1, 1], vec!["1=20"]),
        ];
        let mut checked = 0;
        for (text, entry, block, args) in &kernels {
            let (m, _) = kerneltime_ptx::parse(text);
            let launch = LaunchDims {
                grid: [2, 1, 1],
                block: *block,
            };
            let args = KernelArg::parse_all(args).unwrap();
            let em = emulate(&m, entry, launch, &args, Options::default()).unwrap();
            for device in ["V100", "RTX 3090", "GTX 560 Ti"] {
                let d = crate::device::catalogue::find(device).unwrap();
                let mut lat = crate::device::latencies::for_device(d).unwrap().values;
                for int_latency in [lat.int, 4.3] {
                    lat.int = int_latency;
                    let costs = Costs::new(d.warp_schedulers_per_sm, 0.0, 1.0);
                    for w in &em.warps {
                        let hits = vec![cache::AccessHits::default(); w.accesses.len()];
                        let cached = compress(w, &em.regs, &hits, &lat, &costs);
                        let mut c = Compressor::new(w, &em.regs, &lat, &costs);
                        checked += usize::from(!c.runs.is_empty());
                        c.runs.clear();
                        c.advance(&hits, usize::MAX);
                        let plain = c.finish();
                        assert_eq!(
                            format!("{cached:?}"),
                            format!("{plain:?}"),
                            "{entry} {device}"
                        );
                    }
                }
            }
        }
        assert!(checked > 0);
    }

    /// The comp operations of one warp of `body` (PTX instructions between stores to
    /// `[%rd1]`; `%f1` and `%r1` are set before the first store) on `device`.
    fn comp_runs(
        device: &str,
        body: &str,
    ) -> (Vec<(f64, f64)>, crate::device::latencies::Latencies) {
        let text = format!(
            ".version 7.0\n.target sm_75\n.address_size 64\n\
             .visible .entry k(.param .u64 out)\n{{\n\
             .reg .pred %p<8>;\n.reg .f32 %f<32>;\n.reg .b32 %r<32>;\n.reg .f64 %fd<8>;\n.reg .b64 %rd<4>;\n\
             ld.param.u64 %rd1, [out];\nmov.f32 %f1, 0f3F800000;\nmov.u32 %r1, 3;\n\
             st.global.f32 [%rd1], %f1;\n{body}\nret;\n}}\n"
        );
        comp_runs_of(device, &text)
    }

    /// Kernel `k(.param .u64 out)` of the PTX module `text` emulated as one 32-thread block
    /// with `out` pointing at memory, and the latency table of `device`.
    fn one_warp_on(
        device: &str,
        text: &str,
    ) -> (
        crate::emulate::Emulation,
        crate::device::latencies::Latencies,
    ) {
        use crate::emulate::{emulate, LaunchDims, Options};
        let (m, _) = kerneltime_ptx::parse(text);
        let launch = LaunchDims {
            grid: [1, 1, 1],
            block: [32, 1, 1],
        };
        let args = vec![crate::emulate::KernelArg::new(
            "0",
            crate::emulate::ArgValue::Int(1 << 20),
        )];
        let em = emulate(&m, "k", launch, &args, Options::default()).unwrap();
        let d = crate::device::catalogue::find(device).unwrap();
        (em, crate::device::latencies::for_device(d).unwrap().values)
    }

    /// The comp runs (scheduler cycles, latency) of one warp of kernel `k(.param .u64 out)` of
    /// the PTX module `text`, launched as one 32-thread block with `out` pointing at memory.
    fn comp_runs_of(
        device: &str,
        text: &str,
    ) -> (Vec<(f64, f64)>, crate::device::latencies::Latencies) {
        let (em, lat) = one_warp_on(device, text);
        let w = &em.warps[0];
        let hits = vec![cache::AccessHits::default(); w.accesses.len()];
        let runs = compress(w, &em.regs, &hits, &lat, &Costs::new(4, 0.0, 1.0))
            .into_iter()
            .filter_map(|op| match op {
                SimOp::Comp { occupy, latency } => Some((occupy, latency)),
                _ => None,
            })
            .collect();
        (runs, lat)
    }

    /// The cycles one warp alone takes for `body` (between the setup of `%r4`, this lane's
    /// word of a 4 KB shared array, and a store of `%f40` to `%rd1`, the `out` parameter) on
    /// `device`: the sum of its operations' hold times, less that of an empty body, with
    /// every global access missing the caches; and the device's latencies.
    fn body_cycles(device: &str, body: &str) -> (f64, crate::device::latencies::Latencies) {
        let (with, l) = kernel_cycles(device, body);
        (with - kernel_cycles(device, "").0, l)
    }

    /// [`body_cycles`] with the device's shared-load latency.
    fn shared_body_cycles(device: &str, body: &str) -> (f64, f64) {
        let (cycles, l) = body_cycles(device, body);
        (cycles, l.shared_load)
    }

    fn kernel_cycles(device: &str, body: &str) -> (f64, crate::device::latencies::Latencies) {
        let text = format!(
            ".version 7.0\n.target sm_75\n.address_size 64\n\
             .visible .entry k(.param .u64 out)\n{{\n\
             .reg .pred %p<4>;\n.reg .f32 %f<64>;\n.reg .b32 %r<64>;\n.reg .b64 %rd<32>;\n\
             .shared .align 4 .b8 sh[4096];\n\
             ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\nshl.b32 %r2, %r1, 2;\n\
             mov.u32 %r3, sh;\nadd.s32 %r4, %r3, %r2;\nmov.f32 %f40, 0f00000000;\n\
             {body}\nst.global.f32 [%rd1], %f40;\nret;\n}}\n"
        );
        let (em, lat) = one_warp_on(device, &text);
        let w = &em.warps[0];
        let hits = vec![cache::AccessHits::default(); w.accesses.len()];
        let cycles = compress(w, &em.regs, &hits, &lat, &Costs::new(4, 0.0, 1.0))
            .iter()
            .map(|op| match *op {
                SimOp::Comp { occupy, latency }
                | SimOp::Global { occupy, latency }
                | SimOp::Shared { occupy, latency } => latency.max(occupy),
                SimOp::Barrier => 0.0,
            })
            .sum();
        (cycles, lat)
    }

    /// `n` independent loads from `space` at `base` + 128 k into `%f(k+1)`, each read by its
    /// own multiply into `%f(k+20)`, in nvcc's order (load, use, load, use).
    fn loads_and_uses(space: &str, base: &str, n: usize) -> String {
        (0..n)
            .map(|k| {
                format!(
                    "ld.{space}.f32 %f{}, [{base}+{}];\nmul.f32 %f{}, %f{}, %f{};\n",
                    k + 1,
                    128 * k,
                    k + 20,
                    k + 1,
                    k + 1
                )
            })
            .collect()
    }

    #[test]
    fn shared_loads_are_moved_up_as_ptxas_schedules_them_except_across_a_branch() {
        // Volta: a shared load's result 23 cycles after issue, one wavefront a clock.
        let device = "Tesla V100 PCIe";
        // Sixteen independent loads, each read by its own multiply, in one straight-line
        // block (an unrolled loop, as nvcc's PTX orders it: load, use, load, use): ptxas
        // issues the loads ahead of the multiplies, so only the first result's latency is
        // waited for. The warp takes at least one latency and at most that plus three cycles
        // a pair (load and multiply dispatches, a wavefront) and the last multiply's latency
        // (4); a load that held the warp until its result would take 16 x 23 = 368.
        let unrolled = loads_and_uses("shared", "%r4", 16);
        let (cycles, l) = shared_body_cycles(device, &format!("{unrolled}mov.f32 %f40, %f35;"));
        assert_eq!(l, 23.0);
        assert!(cycles >= l && cycles <= l + 16.0 * 3.0 + 4.0, "{cycles}");
        // The same sixteen loads, each address the previous load's value (a pointer chase
        // through shared memory, each lane's word set to zero first, so every address is
        // known and conflict-free): no load can move, each result is waited for.
        let chase: String =
            std::iter::once("mov.u32 %r9, 0;\nst.shared.u32 [%r4], %r9;\n".to_string())
                .chain((0..16).map(|k| {
                    format!(
                        "ld.shared.u32 %r{}, [%r{}];\nadd.s32 %r{}, %r4, %r{};\n",
                        k + 10,
                        if k == 0 { 4 } else { k + 29 },
                        k + 30,
                        k + 10
                    )
                }))
                .collect();
        let (cycles, _) = shared_body_cycles(device, &chase);
        assert!(cycles >= 16.0 * l, "{cycles}");
        // One load and its multiply in a loop of sixteen iterations: ptxas does not move a
        // load above the loop's branch, so every iteration waits for its load.
        let looped = "mov.u32 %r5, 0;\nLOOP:\nld.shared.f32 %f1, [%r4];\n\
                      mul.f32 %f40, %f1, %f1;\nadd.s32 %r5, %r5, 1;\n\
                      setp.lt.u32 %p1, %r5, 16;\n@%p1 bra LOOP;";
        let (cycles, _) = shared_body_cycles(device, looped);
        assert!(cycles >= 16.0 * l, "{cycles}");
    }

    #[test]
    fn global_loads_overlap_unless_each_address_is_the_last_loaded_value() {
        // Volta, every load missing the caches (a DRAM latency each).
        let device = "Tesla V100 PCIe";
        // Eight independent loads, each read by its own multiply (an unrolled loop): their
        // latencies overlap, so the warp waits about one DRAM latency, plus a few cycles a pair
        // (load and multiply dispatches, the path) and the last multiply's latency; it took
        // 8 DRAM latencies when each load held the warp until its result.
        let unrolled = loads_and_uses("global", "%rd1", 8);
        let (cycles, l) = body_cycles(device, &format!("{unrolled}mov.f32 %f40, %f27;"));
        assert!(l.dram > 100.0, "{}", l.dram);
        assert!(
            cycles >= l.dram && cycles <= l.dram + 8.0 * 4.0 + 4.0,
            "{cycles} vs {}",
            l.dram
        );
        // Eight loads, each from the address the one before it loaded (a pointer chase): no
        // load can move above the one that made its address, each latency is waited for.
        let chase: String = (0..8)
            .map(|k| format!("ld.global.u64 %rd{}, [%rd{}];\n", k + 2, k + 1))
            .collect();
        let (cycles, _) = body_cycles(device, &format!("{chase}cvt.rn.f32.u64 %f40, %rd9;"));
        // (The first may move up above the setup's few independent instructions.)
        assert!(cycles >= 8.0 * l.dram - 8.0, "{cycles} vs {}", l.dram);
        // Each loaded value stored before the next load: the store waits for its value, and
        // no load moves above a store (it may read what the store wrote): one latency each.
        let stored: String = (0..4)
            .map(|k| {
                format!(
                    "ld.global.f32 %f{}, [%rd1+{}];\nst.global.f32 [%rd1+{}], %f{};\n",
                    k + 1,
                    128 * k,
                    128 * k + 4,
                    k + 1
                )
            })
            .collect();
        let (cycles, _) = body_cycles(device, &stored);
        assert!(cycles >= 4.0 * l.dram, "{cycles} vs {}", l.dram);
    }

    #[test]
    fn independent_instructions_overlap_and_units_work_side_by_side() {
        // Turing: fp32 and int at 64 per clock per SM on 4 schedulers, so each unit takes a warp
        // instruction every 2 cycles, and the scheduler dispatches one per cycle.
        let body = "fma.rn.f32 %f2, %f1, %f1, %f1;\nfma.rn.f32 %f3, %f1, %f1, %f1;\n\
                    fma.rn.f32 %f4, %f1, %f1, %f1;\nfma.rn.f32 %f5, %f1, %f1, %f1;\n\
                    st.global.f32 [%rd1], %f2;\n\
                    fma.rn.f32 %f6, %f1, %f1, %f1;\nfma.rn.f32 %f7, %f6, %f1, %f1;\n\
                    fma.rn.f32 %f8, %f7, %f1, %f1;\nfma.rn.f32 %f9, %f8, %f1, %f1;\n\
                    st.global.f32 [%rd1], %f9;\n\
                    fma.rn.f32 %f10, %f1, %f1, %f1;\nadd.s32 %r2, %r1, 1;\n\
                    fma.rn.f32 %f11, %f1, %f1, %f1;\nadd.s32 %r3, %r1, 2;\n\
                    st.global.f32 [%rd1], %f10;";
        let (runs, lat) = comp_runs("GeForce RTX 2080 Ti", body);
        assert_eq!((lat.fp32_per_clk_sm, lat.int_per_clk_sm), (64.0, 64.0));
        let f = lat.fp32;
        // runs[0] is the parameter load and the moves; then the three runs of the body.
        // Four independent fmas: issued at 0, 2, 4, 6 (the fp32 unit), the last ready at 6 + f.
        assert_eq!(runs[1], (8.0, 6.0 + f));
        // Four dependent fmas: each waits for the one before, 4 f.
        assert_eq!(runs[2], (8.0, 4.0 * f));
        // fma, add, fma, add: dispatched at 0, 1, 2, 3 on two units; 4 scheduler cycles, not
        // the 8 of one shared unit.
        assert_eq!(runs[3], (4.0, (2.0 + f).max(3.0 + lat.int).max(5.0)));
    }

    #[test]
    fn ieee_division_is_its_instruction_sequence() {
        // div.rn.f32 on Turing: the reciprocal seed and the range check `FCHK`, both on the
        // SFU at 16 per clock per SM (8 cycles each on one of 4 schedulers), then 5 dependent
        // fmas (2 cycles each on the fp32 unit) and the branch around the slow path.
        let (runs, lat) = comp_runs(
            "GeForce RTX 2080 Ti",
            "div.rn.f32 %f2, %f1, %f1;\nst.global.f32 [%rd1], %f2;\n\
             div.approx.f32 %f3, %f1, %f1;\nst.global.f32 [%rd1], %f3;\n\
             div.rn.f64 %fd2, %fd1, %fd1;\nst.global.f64 [%rd1], %fd2;\n\
             sqrt.rn.f32 %f4, %f1;\nst.global.f32 [%rd1], %f4;",
        );
        assert_eq!(lat.sfu_per_clk_sm, 16.0);
        let (occupy, latency) = runs[1];
        assert_eq!(occupy, 16.0, "max(8 dispatches, SFU 2 x 8, fp32 5 x 2)");
        assert_eq!(latency, lat.special + 5.0 * lat.fp32);
        // The square root checks its range with an integer compare: one SFU instruction, so
        // the fp32 chain is the longer occupation.
        assert_eq!(runs[4], (10.0, lat.special + 5.0 * lat.fp32));
        // The approximate divide is one special-function instruction.
        assert_eq!(runs[2], (8.0, lat.special));
        // fp64: the seed, then 8 dependent fp64 fmas at the fp64 rate (2 per clock per SM on
        // Turing: 64 cycles each), so the fp64 unit is the longer wait.
        let fp64 = 32.0 / (lat.fp64_per_clk_sm / 4.0);
        assert_eq!(fp64, 64.0);
        let chain = (8.0 * lat.fp64).max(8.0 * fp64);
        assert_eq!(runs[3], (8.0 * fp64, lat.special + chain));
    }

    #[test]
    fn a_divide_by_zero_costs_ptxas_slow_path() {
        // %f1 is 1.0; %f2 is 0.0. 1/1 is the fast sequence; 1/0 fails the range check and runs
        // the slow-path subroutine's 24 instructions after it (20 on the integer unit, one
        // more special-function instruction). On the RTX 3060 Laptop GPU (Ampere GA10x): the
        // integer unit at 64 results per clock per SM on 4 schedulers takes 2 cycles a warp
        // instruction, the special-function unit at 16 takes 8, the fp32 unit at 128 takes 1.
        let (runs, lat) = comp_runs(
            "RTX 3060 Laptop",
            "mov.f32 %f2, 0f00000000;
st.global.f32 [%rd1], %f2;
             div.rn.f32 %f3, %f1, %f1;
st.global.f32 [%rd1], %f3;
             div.rn.f32 %f4, %f1, %f2;
st.global.f32 [%rd1], %f4;",
        );
        assert_eq!(
            (lat.int_per_clk_sm, lat.sfu_per_clk_sm, lat.fp32_per_clk_sm),
            (64.0, 16.0, 128.0)
        );
        let fast_latency = lat.special + 5.0 * lat.fp32;
        assert_eq!(
            runs[2],
            (16.0, fast_latency),
            "max(8 dispatches, SFU 2 x 8)"
        );
        // Slow: max(8 + 24 dispatches, SFU 3 x 8, integer 20 x 2) = 40; its chain follows the
        // fast one: 14 integer latencies and the NaN's special-function latency.
        let slow_latency = fast_latency + 14.0 * lat.int + lat.special;
        assert_eq!(runs[3], (40.0, slow_latency));
    }

    #[test]
    fn the_unit_bound_counts_two_special_function_instructions_per_ieee_divide() {
        // One warp: three fp32 divides (MUFU.RCP and FCHK each) and a square root (one MUFU):
        // 7 special-function instructions at 16 results per clock per SM on Turing, 2 SM
        // cycles each, 14 in all; nothing else in the kernel keeps a unit that long.
        let text = ".version 7.0\n.target sm_75\n.address_size 64\n\
            .visible .entry k(.param .u64 out)\n{\n.reg .f32 %f<8>;\n.reg .b64 %rd<2>;\n\
            ld.param.u64 %rd1, [out];\nld.global.f32 %f1, [%rd1];\n\
            div.rn.f32 %f2, %f1, %f1;\ndiv.rn.f32 %f3, %f2, %f1;\ndiv.rn.f32 %f4, %f3, %f1;\n\
            sqrt.rn.f32 %f5, %f4;\nst.global.f32 [%rd1], %f5;\nret;\n}\n";
        let (em, lat) = one_warp_on("GeForce RTX 2080 Ti", text);
        assert_eq!(lat.sfu_per_clk_sm, 16.0);
        let w = bounds::launch_work(&em, &lat);
        assert_eq!(w.unit_cycles_sm, 7.0 * 32.0 / 16.0);
    }

    #[test]
    fn integer_multiply_is_its_architectures_instructions() {
        // A 32-bit multiply-add, then a multiply by 4 (a shift in SASS), each alone in a run.
        let body = "mad.lo.s32 %r2, %r1, %r1, %r1;\nst.global.u32 [%rd1], %r2;\n\
                    mul.wide.s32 %rd2, %r1, 4;\nst.global.u64 [%rd1], %rd2;";
        // Maxwell (GTX 970): three XMADs at the integer rate of 128 per clock per SM on 4
        // schedulers (1 cycle each), 13 cycles of dependent latency; the shift is one integer
        // instruction.
        let (runs, lat) = comp_runs("GeForce GTX 970", body);
        assert_eq!((lat.int_mul_instructions, lat.int_per_clk_sm), (3.0, 128.0));
        assert_eq!(runs[1], (3.0, lat.int_mul));
        assert_eq!(runs[2], (1.0, lat.int));
        // Kepler (Tesla K20c): one IMAD, but 32 multiplies per clock per SM: 32 / (32 / 4) = 4
        // cycles of the integer unit against one dispatch.
        let (runs, lat) = comp_runs("Tesla K20c", body);
        assert_eq!(
            (lat.int_mul_instructions, lat.int_mul_per_clk_sm),
            (1.0, 32.0)
        );
        assert_eq!(runs[1], (4.0, lat.int_mul));
        assert_eq!(runs[2], (1.0, lat.int));
        // Turing (RTX 2080 Ti): one IMAD at 64 per clock per SM, 2 cycles like an add.
        let (runs, lat) = comp_runs("GeForce RTX 2080 Ti", body);
        assert_eq!(runs[1], (2.0, lat.int_mul));
        assert_eq!(runs[2], (2.0, lat.int));
    }

    #[test]
    fn shifts_and_compares_issue_at_their_own_rates() {
        // Four independent right shifts, then four independent compares, then four left
        // shifts by a constant (scaled-index arithmetic: ISCADD/LEA at the add rate), each
        // group alone in a run. A unit of `rate` results per clock per SM on 4 schedulers takes
        // a warp instruction every 32 / (rate / 4) cycles (at least one dispatch each).
        let body = "shr.u32 %r2, %r1, 1;\nshr.u32 %r3, %r1, 2;\n\
                    shr.u32 %r4, %r1, 3;\nshr.s32 %r5, %r1, 4;\n\
                    st.global.u32 [%rd1], %r2;\n\
                    setp.lt.s32 %p1, %r1, 5;\nsetp.gt.u32 %p2, %r1, 6;\n\
                    min.s32 %r6, %r1, 7;\nmax.u32 %r7, %r1, 8;\n\
                    st.global.u32 [%rd1], %r6;\n\
                    shl.b32 %r8, %r1, 1;\nshl.b32 %r9, %r1, 2;\n\
                    shl.b32 %r10, %r1, 3;\nshl.b32 %r11, %r1, 4;\n\
                    st.global.u32 [%rd1], %r8;";
        // (device, shifts per clock per SM, compares, adds), from the CUDA programming guide's
        // throughput table: 3.0 shifts at 32 against 160 adds, 3.5 at 64; 5.x shifts and
        // compares at 64 against 128 adds; 7.x all at 64.
        for (device, shift, compare, add) in [
            ("GeForce GTX 680", 32.0, 160.0, 160.0),
            ("Tesla K20c", 64.0, 160.0, 160.0),
            ("GeForce GTX 970", 64.0, 64.0, 128.0),
            ("Tesla V100 PCIe", 64.0, 64.0, 64.0),
        ] {
            let (runs, lat) = comp_runs(device, body);
            assert_eq!(
                (
                    lat.shift_per_clk_sm,
                    lat.compare_per_clk_sm,
                    lat.int_per_clk_sm
                ),
                (shift, compare, add),
                "{device}"
            );
            let cycles = |rate: f64| (32.0 / (rate / 4.0)).max(1.0);
            // runs[0]: before the first store.
            assert_eq!(runs[1].0, 4.0 * cycles(shift), "{device} shifts");
            assert_eq!(runs[2].0, 4.0 * cycles(compare), "{device} compares");
            assert_eq!(
                runs[3].0,
                4.0 * cycles(add),
                "{device} constant left shifts"
            );
        }
    }

    #[test]
    fn predicate_logic_folds_into_the_compare_that_feeds_it() {
        // ptxas makes `setp` + `xor.pred` of its result one compare with a boolean operator
        // (PTX's `setp.CmpOp.BoolOp`; SASS `FSETP.LT.XOR`), and a `not.pred` is a negated
        // predicate operand: neither is issued. Ampere (8.6): compares and integer selects at
        // 64 per clock per SM, 2 cycles each per scheduler. Run 1: two compares and a select
        // (6 cycles; 10 if the xor and the not were issued), the select waiting for the second
        // compare's result through the folded operations (2 + 2 x the integer latency). Run 2:
        // an `and.pred` of two predicates no compare of its own produced is an instruction
        // (PLOP3): 4 cycles with its select.
        let body = "setp.lt.f32 %p1, %f1, 0f40000000;\nsetp.gt.f32 %p2, %f1, 0f3F000000;\n\
                    xor.pred %p3, %p1, %p2;\nnot.pred %p4, %p3;\n\
                    selp.b32 %r2, 1, 0, %p4;\nst.global.u32 [%rd1], %r2;\n\
                    and.pred %p5, %p3, %p4;\nselp.b32 %r3, 1, 0, %p5;\n\
                    st.global.u32 [%rd1], %r3;";
        let (runs, lat) = comp_runs("GeForce RTX 3090", body);
        assert_eq!((lat.compare_per_clk_sm, lat.int_per_clk_sm), (64.0, 64.0));
        assert!(lat.int >= 2.0, "{}", lat.int);
        // runs[0]: before the first store.
        assert_eq!(runs[1], (6.0, 2.0 + 2.0 * lat.int));
        assert_eq!(runs[2].0, 4.0);
    }

    #[test]
    fn a_constant_at_a_fixed_address_is_an_operand_not_an_instruction() {
        // `ld.const` at a fixed address becomes a constant-bank operand of the fma that reads it
        // (`FFMA R4, R5, c[0x3][0x10], R4`): no dispatch and no latency of its own. Through a
        // register address it is an LDC instruction. Ampere (8.6): fp32 at 128 per clock per SM
        // on 4 schedulers, one dispatch per fma.
        let text = ".version 7.0\n.target sm_86\n.address_size 64\n\
                    .const .align 4 .b8 filt[64];\n\
                    .visible .entry k(.param .u64 out)\n{\n\
                    .reg .f32 %f<16>;\n.reg .b64 %rd<4>;\n\
                    ld.param.u64 %rd1, [out];\nmov.f32 %f1, 0f3F800000;\n\
                    mov.u64 %rd2, filt;\nst.global.f32 [%rd1], %f1;\n\
                    ld.const.f32 %f2, [filt];\nfma.rn.f32 %f3, %f1, %f2, %f1;\n\
                    ld.const.f32 %f4, [filt+4];\nfma.rn.f32 %f5, %f1, %f4, %f1;\n\
                    ld.const.f32 %f6, [filt+8];\nfma.rn.f32 %f7, %f1, %f6, %f1;\n\
                    ld.const.f32 %f8, [filt+12];\nfma.rn.f32 %f9, %f1, %f8, %f1;\n\
                    st.global.f32 [%rd1], %f3;\n\
                    ld.const.f32 %f10, [%rd2+16];\nfma.rn.f32 %f11, %f1, %f10, %f1;\n\
                    st.global.f32 [%rd1], %f11;\nret;\n}\n";
        let (runs, lat) = comp_runs_of("GeForce RTX 3090", text);
        assert_eq!(lat.fp32_per_clk_sm, 128.0);
        // Four independent fmas, one dispatch each; the last result after 3 dispatches and
        // the fp32 latency.
        assert_eq!(runs[1], (4.0, 3.0 + lat.fp32));
        // The LDC, then its fma after the LDC's latency (a load through the constant cache,
        // not the operand's 4 cycles).
        assert!(lat.const_ldc > lat.const_);
        assert_eq!(runs[2], (2.0, lat.const_ldc + lat.fp32));
    }

    #[test]
    fn a_barrier_holds_its_scheduler_for_the_architectures_barrier_rate() {
        // __syncthreads() per thread per clock per SM (CUDA programming guide): 128 on 3.x,
        // 64 on 5.x, 16 on 7.x. A warp's barrier is 32 of them; each of the 4 schedulers has a
        // quarter of the rate: 1, 2 and 8 cycles.
        use crate::emulate::{emulate, LaunchDims, Options};
        let text = ".version 7.0\n.target sm_75\n.address_size 64\n\
                    .visible .entry k()\n{\nbar.sync 0;\nret;\n}\n";
        let (m, _) = kerneltime_ptx::parse(text);
        let launch = LaunchDims {
            grid: [1, 1, 1],
            block: [64, 1, 1],
        };
        let em = emulate(&m, "k", launch, &[], Options::default()).unwrap();
        for (device, rate, cycles) in [
            ("Tesla K20c", 128.0, 1.0),
            ("GeForce GTX 970", 64.0, 2.0),
            ("Tesla V100 PCIe", 16.0, 8.0),
        ] {
            let d = crate::device::catalogue::find(device).unwrap();
            let lat = crate::device::latencies::for_device(d).unwrap().values;
            assert_eq!(lat.barrier_per_clk_sm, rate, "{device}");
            let w = &em.warps[0];
            let ops = compress(w, &em.regs, &[], &lat, &Costs::new(4, 0.0, 1.0));
            let at = ops
                .iter()
                .position(|op| matches!(op, SimOp::Barrier))
                .expect("a barrier");
            assert!(at >= 1, "{device}: {ops:?}");
            match ops[at - 1] {
                SimOp::Comp { occupy, latency } => {
                    assert_eq!((occupy, latency), (cycles, cycles), "{device}")
                }
                ref op => panic!("{device}: {op:?} before the barrier"),
            }
        }
    }

    #[test]
    fn few_warps_see_the_unloaded_latency_and_a_full_round_is_rule_independent() {
        use crate::device::catalogue;
        use crate::device::latencies::for_device;
        use crate::emulate::{emulate, LaunchDims, Options};
        let fix = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/ptx");
        let text = std::fs::read_to_string(format!("{fix}/basics.nvcc-sm75.ptx")).unwrap();
        let (m, _) = kerneltime_ptx::parse(&text);
        let dev = catalogue::find("V100").unwrap().clone();
        let lat = for_device(&dev).unwrap();
        let res = KernelResources {
            registers_per_thread: 16,
            shared_bytes_per_block: 0,
            ..Default::default()
        };
        let run = |grid: u32, block: u32, rule: LatencyRule| {
            let args = vec![crate::emulate::KernelArg::new(
                "3",
                crate::emulate::ArgValue::Int(i128::from(grid * block)),
            )];
            let launch = LaunchDims {
                grid: [grid, 1, 1],
                block: [block, 1, 1],
            };
            let em = emulate(&m, "vector_add", launch, &args, Options::default()).unwrap();
            predict_with_rule(&dev, &em, res, &lat, rule).unwrap().1
        };
        // One block of 64 threads per SM (80 blocks on 80 SMs): 2 active warps of 64.
        let q = run(80, 64, LatencyRule::Queueing);
        let p = run(80, 64, LatencyRule::PaperWarpRatio);
        assert_eq!(q.warps_in_round, 2);
        assert_eq!(q.memory_latency_scale, 1.0);
        assert_eq!(p.memory_latency_scale, 64.0 / 2.0);
        // The literal reading makes two lone warps far slower than the queueing reading.
        assert!(p.pipeline_cycles > 5.0 * q.pipeline_cycles, "{p:?} {q:?}");
        // The loads of 2 warps wait for nothing: the round is at least the DRAM latency and
        // far below 32 of them.
        assert!(q.pipeline_cycles >= lat.values.dram);
        assert!(q.pipeline_cycles < 4.0 * lat.values.dram);
        // A full round (8 blocks of 256 threads = 64 warps = the V100's maximum): scale 1 under
        // both readings, the same cycles.
        let q = run(640, 256, LatencyRule::Queueing);
        let p = run(640, 256, LatencyRule::PaperWarpRatio);
        assert_eq!(q.warps_in_round, 64);
        assert_eq!(q.pipeline_cycles.to_bits(), p.pipeline_cycles.to_bits());
        // Under queueing, 64 warps' requests wait on the load/store path: the round is longer
        // than the 2-warp one although each load's own latency is the same.
        let two = run(80, 64, LatencyRule::Queueing);
        assert!(q.pipeline_cycles > two.pipeline_cycles);
    }

    #[test]
    fn warps_with_long_compute_runs_share_their_scheduler_as_it_interleaves_them() {
        // Each thread adds 1.0 to itself 4,096 times in one dependent chain, then stores once:
        // no memory access for 4,096 instructions. On the RTX 3060 Laptop GPU (Ampere GA10x)
        // a warp's fp32 add dispatches in one cycle (128 lanes per SM on 4 schedulers) and its
        // result is ready `fp32` cycles later. One block per SM, so a scheduler holds N = 1024
        // or 256 threads / 32 / 4 = 8 or 2 warps: the scheduler issues one add per cycle from
        // whichever warp is ready, so the chains take max(N x 4,096, 4,096 x fp32) cycles, not
        // (N - 1) x 4,096 + 4,096 x fp32 as when one warp held the scheduler for its whole
        // chain before the next began.
        use crate::device::catalogue;
        use crate::device::latencies::for_device;
        use crate::emulate::{emulate, KernelArg, LaunchDims, Options};
        const M: usize = 4096;
        let text = format!(
            ".version 7.0\n.target sm_80\n.address_size 64\n\
             .visible .entry chain(.param .u64 out)\n{{\n\
             .reg .f32 %f<3>;\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n\
             ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\nmov.u32 %r2, %ctaid.x;\n\
             mov.u32 %r3, %ntid.x;\nmad.lo.s32 %r1, %r2, %r3, %r1;\n\
             mul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd3, %rd1, %rd2;\n\
             mov.f32 %f1, 0f3F800000;\nmov.f32 %f2, 0f3F800000;\n{}\
             st.global.f32 [%rd3], %f1;\nret;\n}}\n",
            "add.f32 %f1, %f1, %f2;\n".repeat(M)
        );
        let (m, _) = kerneltime_ptx::parse(&text);
        let dev = catalogue::find("RTX 3060 Laptop").unwrap().clone();
        let lat = for_device(&dev).unwrap();
        let (fp32, rate) = (lat.values.fp32, lat.values.fp32_per_clk_sm);
        assert_eq!(rate, 128.0);
        assert!(
            fp32 >= 4.0,
            "the chain must be latency-bound at 2 warps: {fp32}"
        );
        let res = KernelResources {
            registers_per_thread: 16,
            ..Default::default()
        };
        let round = |block: u32| {
            let launch = LaunchDims {
                grid: [dev.sm_count, 1, 1],
                block: [block, 1, 1],
            };
            let args = vec![KernelArg::new("0", crate::emulate::ArgValue::Int(1 << 20))];
            let em = emulate(&m, "chain", launch, &args, Options::default()).unwrap();
            let r = predict_with_rule(&dev, &em, res, &lat, LatencyRule::default())
                .unwrap()
                .1;
            assert_eq!(r.warps_in_round, block / 32);
            r.pipeline_cycles
        };
        let chain = M as f64;
        for (block, warps) in [(1024, 8.0), (256, 2.0)] {
            let expected = (warps * chain).max(chain * fp32);
            let got = round(block);
            let held = (warps - 1.0) * chain + chain * fp32;
            // The address arithmetic before the chain, the store after it and the last
            // results' latency: a few hundred cycles, a tenth of what holding costs.
            assert!(
                got >= expected && got - expected <= 0.1 * (held - expected),
                "{block} threads: {got} cycles, expected {expected}; one warp holding the \
                 scheduler for its whole chain would give {held}"
            );
        }
    }

    /// Each block of 32 threads sums 8 rows of a column strip: block (x, y) reads rows y..y+7
    /// at columns 32x..32x+31 (a vertical stencil), one 128-byte line per row.
    const ROW_STENCIL: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry rows(.param .u64 p_in, .param .u64 p_out, .param .u32 p_pitch)
{
    .reg .pred %p<2>;
    .reg .b32 %r<12>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [p_in];
    ld.param.u64 %rd2, [p_out];
    ld.param.u32 %r1, [p_pitch];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    mov.u32 %r6, %ctaid.y;
    mov.f32 %f1, 0f00000000;
    mov.u32 %r7, 0;
LOOP:
    add.s32 %r8, %r6, %r7;
    mad.lo.s32 %r9, %r8, %r1, %r5;
    mul.wide.s32 %rd3, %r9, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.f32 %f2, [%rd4];
    add.f32 %f1, %f1, %f2;
    add.s32 %r7, %r7, 1;
    setp.lt.s32 %p1, %r7, 8;
    @%p1 bra LOOP;
    mad.lo.s32 %r10, %r6, %r1, %r5;
    mul.wide.s32 %rd5, %r10, 4;
    add.s64 %rd6, %rd2, %rd5;
    st.global.f32 [%rd6], %f1;
    ret;
}
"#;

    /// [`ROW_STENCIL`] parsed, a V100 with its latencies, and 16 registers a thread.
    fn row_stencil_on_a_v100() -> (
        kerneltime_ptx::ast::Module,
        Device,
        LatencyTable,
        KernelResources,
    ) {
        let (m, _) = kerneltime_ptx::parse(ROW_STENCIL);
        let dev = crate::device::catalogue::find("V100").unwrap().clone();
        let lat = crate::device::latencies::for_device(&dev).unwrap();
        let res = KernelResources {
            registers_per_thread: 16,
            ..Default::default()
        };
        (m, dev, lat, res)
    }

    #[test]
    fn the_l2_is_shared_by_the_data_of_the_resident_blocks_not_their_count() {
        let (m, dev, lat, res) = row_stencil_on_a_v100();
        let share = |gx: u32| {
            let args = crate::emulate::KernelArg::parse_all(&[&format!("2={}", gx * 32)]).unwrap();
            let launch = LaunchDims {
                grid: [gx, 64, 1],
                block: [32, 1, 1],
            };
            let em = emulate(&m, "rows", launch, &args, Options::default()).unwrap();
            predict(&dev, &em, res, &lat).unwrap().1
        };
        // A block reads 8 rows of 4 sectors and writes 4: 36 sectors. The next block in x reads
        // other columns (nothing shared); the block above read 7 of its 8 rows. A V100 holds
        // 80 x 32 one-warp blocks at once, so with 64 blocks a row the block above runs at the
        // same time: each further block adds 8 of its 36 sectors.
        let r = share(64);
        assert_eq!(r.l2_share.block_sectors, 36);
        assert_eq!(r.l2_share.new_fraction, 8.0 / 36.0);
        // With 8192 blocks a row the block above ran long before: nothing is shared.
        assert_eq!(share(8192).l2_share.new_fraction, 1.0);
        // The fraction of the L2: the simulated blocks' distinct sectors over theirs plus what
        // the other resident blocks add.
        let s = L2Share {
            simulated_sectors: 4264,
            block_sectors: 1062,
            new_fraction: 0.119,
        };
        // 4264 / (4264 + (136 - 5) x 1062 x 0.119) = 4264 / 20819.5
        assert!((s.fraction(5, 136) - 0.204_808).abs() < 1e-6);
        // Without neighbours (no sectors counted), the count of blocks decides.
        assert_eq!(L2Share::default().fraction(2, 100), 0.02);
        // Blocks that all read the same data leave the whole L2 to the simulated ones.
        let all_shared = L2Share {
            new_fraction: 0.0,
            ..s
        };
        assert_eq!(all_shared.fraction(5, 136), 1.0);
    }

    #[test]
    fn the_compulsory_dram_traffic_counts_the_rows_neighbours_share_once() {
        let (m, _, lat, _) = row_stencil_on_a_v100();
        // 64 x 64 blocks of 32 threads: block (x, y) reads rows y..y+7 of its 32-float column
        // slab and writes row y. The launch touches rows 0..70 of the input and 0..63 of the
        // output, 4 sectors each per slab: (71 + 64) x 64 x 4 = 34,560 sectors, 1,105,920 bytes.
        let args = crate::emulate::KernelArg::parse_all(&["2=2048"]).unwrap();
        let launch = LaunchDims {
            grid: [64, 64, 1],
            block: [32, 1, 1],
        };
        let em = emulate(&m, "rows", launch, &args, Options::default()).unwrap();
        let sharing = em.sharing().unwrap();
        assert_eq!(sharing.new_along_x, Some(1.0));
        assert_eq!(sharing.new_along_y, Some(8.0 / 36.0));
        let exact = 1_105_920.0;
        let dram = bounds::launch_work(&em, &lat.values).dram_bytes;
        // Each block adds its new row and its output row (8 of its 36 sectors): 4,096 x 8
        // sectors, what the launch touches but the first block's 7 extra input rows per slab.
        assert!(dram <= exact && dram >= 0.9 * exact, "{dram}");
    }

    #[test]
    fn a_block_finds_in_the_l2_the_rows_the_block_above_read() {
        let (m, dev, lat, res) = row_stencil_on_a_v100();
        // The representative block's 8 loads: the fraction of each one's 4 sectors that went
        // to DRAM.
        let dram_per_load = |gx: u32| {
            let pitch = gx * 32;
            let args = crate::emulate::KernelArg::parse_all(&[&format!("2={pitch}")]).unwrap();
            let launch = LaunchDims {
                grid: [gx, 64, 1],
                block: [32, 1, 1],
            };
            let em = emulate(&m, "rows", launch, &args, Options::default()).unwrap();
            let (_, run) = predict(&dev, &em, res, &lat).unwrap();
            // The cache simulation's first warp is the representative block's only warp.
            let w = em.block_warps(run.representative_block).next().unwrap();
            let loads: Vec<f32> = w
                .accesses
                .iter()
                .zip(&run.cache.hits[0])
                .filter(|(a, _)| !a.store)
                .map(|(_, h)| h.dram)
                .collect();
            (em.above, run.representative_block, loads)
        };
        // 64 blocks a row: the block above ran 64 launches earlier, and 64 blocks' rows
        // (64 x 8 lines of 128 bytes = 64 KB) fit in the V100's 6 MB L2. Its rows y-1..y+6 are
        // the representative block's rows y..y+6: those 7 loads hit, the last row comes from
        // DRAM.
        let (above, rep, loads) = dram_per_load(64);
        assert_eq!(above, Some(rep - 64));
        assert_eq!(loads, [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]);
        // 8192 blocks a row: 8192 x 1 KB = 8 MB were read since, more than the L2 holds; every
        // row comes from DRAM.
        let (_, _, loads) = dram_per_load(8192);
        assert_eq!(loads, [1.0; 8]);
    }
}
