//! The `trace` model (wang2019, SPEC.md section 4): one round of active blocks simulated on the
//! warp pipeline of one SM, then scaled to the launch with eq 8.
//!
//! - Active blocks per SM: exact occupancy (`device::occupancy`), limited to the blocks each SM
//!   actually gets (`ceil(blocks / N_SM)`): `n_round = min(N_awg, ceil(blocks / N_SM))`.
//! - Traces: every block of the round replays the warps of the most representative sampled block
//!   (the interior class). Runs of non-memory instructions form one *comp* operation (Fig 2's
//!   "comp"): it holds the warp's scheduler for the sum of the issue intervals
//!   (`32 / (results per clock per SM / schedulers)` per instruction) and the warp for the sum of
//!   the dependent-issue latencies. A global or local access holds the SM's load/store path for
//!   its transfer time (sectors through L1, missing sectors at the DRAM rate per SM) and the warp
//!   for the expected latency of its sectors (L1 hit, L2 hit, DRAM by the cache simulation),
//!   see *Memory latency and active warps* below. A shared
//!   access holds the shared-memory path for one cycle per conflict way. A barrier waits for
//!   every unfinished warp of its block. Global loads issued back to back merge into one
//!   operation (their latencies overlap); a load whose address depends on the one before it is
//!   not told apart, so pointer chasing is timed optimistically.
//! - Fig 2's rule: before each operation a warp checks the resource; if busy it waits until it
//!   frees, then locks it and reports the operation's latency; the timer advances to the smallest
//!   pending report (an event queue ordered by time, ties by warp). Requests are served in the
//!   order they are made.
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
//! Pure: no I/O. It does not emulate (see `emulate`) and does not add launch overhead.

use crate::device::latencies::Resolved as LatencyTable;
use crate::device::occupancy::{occupancy, BlockResources};
use crate::device::Device;
use crate::emulate::Emulation;
use crate::error::{Error, Result};
use crate::memory::cache::{self, CacheResult};
use crate::model::Prediction;
use crate::workload::trace::{LatencyClass, MemSpace, TraceOp, WarpTrace};
use crate::workload::Launch;

/// The model's registry name.
pub const MODEL: &str = "trace";

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
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KernelResources {
    pub registers_per_thread: u32,
    pub shared_bytes_per_block: u32,
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
    /// Issue interval per latency class: (dependent latency, scheduler cycles).
    pub dram_cycles_per_sector: f64,
    pub memory_latency_scale: f64,
}

fn class_costs(
    l: &crate::device::latencies::Latencies,
    schedulers: f64,
    c: LatencyClass,
) -> (f64, f64) {
    let issue = |per_clk_sm: f64| (32.0 / (per_clk_sm / schedulers).max(1e-9)).max(1.0);
    match c {
        LatencyClass::Int | LatencyClass::Branch | LatencyClass::Other | LatencyClass::Warp => {
            (l.int, issue(l.int_per_clk_sm))
        }
        LatencyClass::IntMul => (l.int_mul, issue(l.int_per_clk_sm)),
        LatencyClass::IntDiv => (l.int_div, issue(l.int_per_clk_sm) * 8.0),
        LatencyClass::Fp32 => (l.fp32, issue(l.fp32_per_clk_sm)),
        LatencyClass::Fp64 => (l.fp64, issue(l.fp64_per_clk_sm)),
        LatencyClass::Special => (l.special, issue(l.sfu_per_clk_sm)),
        LatencyClass::Convert => (l.convert, issue(l.sfu_per_clk_sm)),
        LatencyClass::Param | LatencyClass::ConstLoad => (l.const_, 1.0),
        LatencyClass::Barrier => (0.0, 1.0),
        // Memory classes are timed by the memory path; this is their issue slot.
        _ => (l.int, 1.0),
    }
}

/// Compresses one warp's trace into simulation operations.
pub fn compress(
    w: &WarpTrace,
    hits: &[cache::AccessHits],
    lat: &crate::device::latencies::Latencies,
    costs: &Costs,
) -> Vec<SimOp> {
    let s = f64::from(costs.schedulers.max(1));
    // Costs by the class's discriminant (`LatencyClass` is `repr(u8)` with fewer than 32 values).
    let mut table = [(0.0f64, 0.0f64); 32];
    for c in CLASSES {
        table[*c as usize] = class_costs(lat, s, *c);
    }
    let mut out = Vec::with_capacity(w.ops.len() / 2 + 4);
    let (mut occ, mut latn) = (0.0f64, 0.0f64);
    let mut last_was_load = false;
    let flush = |out: &mut Vec<SimOp>, occ: &mut f64, latn: &mut f64| {
        if *occ > 0.0 || *latn > 0.0 {
            out.push(SimOp::Comp {
                occupy: *occ,
                latency: *latn,
            });
            *occ = 0.0;
            *latn = 0.0;
        }
    };
    for op in &w.ops {
        let acc = (op.access != TraceOp::NO_ACCESS).then(|| &w.accesses[op.access as usize]);
        let is_global = acc.is_some_and(|a| matches!(a.space, MemSpace::Global | MemSpace::Local));
        if !is_global {
            last_was_load = false;
        }
        match (op.latency, acc) {
            (LatencyClass::Barrier, _) => {
                flush(&mut out, &mut occ, &mut latn);
                out.push(SimOp::Barrier);
            }
            (_, Some(a)) if matches!(a.space, MemSpace::Global | MemSpace::Local) => {
                flush(&mut out, &mut occ, &mut latn);
                let h = hits.get(op.access as usize).copied().unwrap_or_default();
                let (h1, h2) = (f64::from(h.l1), f64::from(h.l2));
                let sectors = f64::from(a.sectors.max(1));
                let to_dram = sectors * (1.0 - h1) * (1.0 - h2);
                let occupy = (sectors * SECTOR / L1_BYTES_PER_CLK
                    + to_dram * costs.dram_cycles_per_sector)
                    .max(1.0);
                let latency = if a.store {
                    lat.l1_hit
                } else {
                    (h1 * lat.l1_hit + (1.0 - h1) * (h2 * lat.l2_hit + (1.0 - h2) * lat.dram))
                        * costs.memory_latency_scale
                };
                // Loads issued back to back overlap (memory-level parallelism): they merge into
                // one operation whose latency is the longest plus one issue cycle per extra load.
                match out.last_mut() {
                    Some(SimOp::Global {
                        occupy: o,
                        latency: l,
                    }) if last_was_load && !a.store => {
                        *o += occupy;
                        *l = l.max(latency) + 1.0;
                    }
                    _ => out.push(SimOp::Global { occupy, latency }),
                }
                last_was_load = !a.store;
                continue;
            }
            (_, Some(a)) if a.space == MemSpace::Shared => {
                flush(&mut out, &mut occ, &mut latn);
                let ways = f64::from(a.bank_ways.max(1));
                out.push(SimOp::Shared {
                    occupy: ways,
                    latency: lat.shared_load + ways - 1.0,
                });
            }
            (c, _) => {
                let (l, i) = table[c as usize & 31];
                occ += i;
                latn += l;
            }
        }
    }
    flush(&mut out, &mut occ, &mut latn);
    out
}

const CLASSES: &[LatencyClass] = &[
    LatencyClass::Int,
    LatencyClass::IntMul,
    LatencyClass::Fp32,
    LatencyClass::Fp64,
    LatencyClass::Special,
    LatencyClass::IntDiv,
    LatencyClass::Convert,
    LatencyClass::Branch,
    LatencyClass::Barrier,
    LatencyClass::Param,
    LatencyClass::GlobalLoad,
    LatencyClass::GlobalStore,
    LatencyClass::SharedLoad,
    LatencyClass::SharedStore,
    LatencyClass::LocalLoad,
    LatencyClass::LocalStore,
    LatencyClass::ConstLoad,
    LatencyClass::Atomic,
    LatencyClass::Warp,
    LatencyClass::Other,
];

/// The pipeline time of one round: `blocks` blocks of the given warp programs on one SM.
/// Warp `k` of block `b` runs `warps[k]`; warps are spread over the schedulers round-robin.
///
/// The pending reports sit in a winner tree (a complete binary tree whose every inner node holds
/// the smaller key of its two children) with one leaf per warp: taking the next report and
/// re-keying its warp costs one walk from a leaf to the root, with no data-dependent branches.
/// Keys are `(time in 1/16 cycle, warp)` and unique, so the order of events is the same as with
/// any other priority queue.
pub fn simulate_round(warps: &[Vec<SimOp>], blocks: usize, schedulers: u32) -> f64 {
    let per_block = warps.len();
    let n = per_block * blocks;
    if n == 0 {
        return 0.0;
    }
    let schedulers = schedulers.max(1) as usize;
    let mut sched_free = vec![0.0f64; schedulers];
    let (mut lsu_free, mut smem_free) = (0.0f64, 0.0f64);
    // Everything the step reads about a warp, in one place.
    let mut ws: Vec<WarpState<'_>> = (0..n)
        .map(|w| WarpState {
            prog: &warps[w % per_block],
            op: warps[w % per_block].first().copied(),
            pos: 0,
            at: 0.0,
            sched: w % schedulers,
            block: w / per_block,
            waiting: false,
        })
        .collect();
    let mut arrived = vec![0usize; blocks];
    let mut live = vec![per_block; blocks];
    let mut tree = WinnerTree::new(n);
    for w in 0..n {
        tree.set(w, event_key(0.0, w));
    }
    let mut end = 0.0f64;
    loop {
        let kw = tree.min();
        if kw == IDLE {
            break;
        }
        let w = (kw & WARP_MASK) as usize;
        let st = &mut ws[w];
        let t = st.at;
        let b = st.block;
        let Some(op) = st.op else {
            tree.set(w, IDLE);
            end = end.max(t);
            live[b] -= 1;
            if live[b] > 0 && arrived[b] == live[b] {
                arrived[b] = 0;
                release_block(b, per_block, t, &mut ws, &mut tree);
            }
            continue;
        };
        let next = match op {
            SimOp::Barrier => {
                tree.set(w, IDLE);
                st.waiting = true;
                arrived[b] += 1;
                if arrived[b] == live[b] {
                    arrived[b] = 0;
                    release_block(b, per_block, t, &mut ws, &mut tree);
                }
                continue;
            }
            SimOp::Comp { occupy, latency } => {
                let s = &mut sched_free[st.sched];
                let start = t.max(*s);
                *s = start + occupy;
                start + latency.max(occupy)
            }
            SimOp::Global { occupy, latency } => {
                let s = &mut sched_free[st.sched];
                let issue = t.max(*s);
                *s = issue + 1.0;
                let start = issue.max(lsu_free);
                lsu_free = start + occupy;
                start + latency.max(occupy)
            }
            SimOp::Shared { occupy, latency } => {
                let s = &mut sched_free[st.sched];
                let issue = t.max(*s);
                *s = issue + 1.0;
                let start = issue.max(smem_free);
                smem_free = start + occupy;
                start + latency.max(occupy)
            }
        };
        st.pos += 1;
        // Fetched now, used when the warp comes up again: the load overlaps other events.
        st.op = st.prog.get(st.pos).copied();
        st.at = next;
        tree.set(w, event_key(next, w));
    }
    end
}

/// One warp of the round: its program, where it is, and when its pending report is due.
struct WarpState<'a> {
    prog: &'a [SimOp],
    /// `prog[pos]`, when there is one.
    op: Option<SimOp>,
    pos: usize,
    at: f64,
    sched: usize,
    block: usize,
    waiting: bool,
}

/// Low bits of an event key: the warp (at most 4096 warps per round).
const WARP_BITS: u32 = 12;
const WARP_MASK: u64 = (1 << WARP_BITS) - 1;
/// The key of a warp with no pending report.
const IDLE: u64 = u64::MAX;

/// Events are ordered by time (in 1/16 cycle) and then by warp; the exact time is kept apart.
#[inline]
fn event_key(t: f64, w: usize) -> u64 {
    // Times are never negative, so the signed conversion (cheaper than the unsigned one on
    // x86-64) gives the same value.
    ((t * 16.0) as i64 as u64) << WARP_BITS | w as u64
}

/// Lets the warps of block `b` waiting at its barrier go on at `t`.
fn release_block(
    b: usize,
    per_block: usize,
    t: f64,
    ws: &mut [WarpState<'_>],
    tree: &mut WinnerTree,
) {
    for (w, st) in ws
        .iter_mut()
        .enumerate()
        .skip(b * per_block)
        .take(per_block)
    {
        if st.waiting {
            st.waiting = false;
            st.pos += 1;
            st.op = st.prog.get(st.pos).copied();
            st.at = t;
            tree.set(w, event_key(t, w));
        }
    }
}

/// A winner tree over `n` keys: node `i` holds the smaller key of nodes `2i` and `2i + 1`;
/// leaf `w` is node `size + w`; node 1 is the smallest key.
struct WinnerTree {
    size: usize,
    nodes: Vec<u64>,
}

impl WinnerTree {
    fn new(n: usize) -> Self {
        let size = n.next_power_of_two().max(2);
        Self {
            size,
            nodes: vec![IDLE; 2 * size],
        }
    }

    #[inline]
    fn min(&self) -> u64 {
        self.nodes[1]
    }

    #[inline]
    fn set(&mut self, leaf: usize, key: u64) {
        // The subtree minimum travels up in a register: each level reads only the sibling.
        let mut i = self.size + leaf;
        let mut k = key;
        self.nodes[i] = k;
        while i > 1 {
            k = k.min(self.nodes[i ^ 1]);
            i >>= 1;
            self.nodes[i] = k;
        }
    }
}

/// Everything the model computed besides the time.
#[derive(Debug, Clone)]
pub struct TraceRun {
    pub active_blocks_per_sm: u32,
    pub occupancy_limited_by: Vec<crate::device::occupancy::Limiter>,
    pub blocks_per_sm: u64,
    pub blocks_in_round: u32,
    pub warps_in_round: u32,
    pub pipeline_cycles: f64,
    pub cycles: f64,
    pub time_us: f64,
    pub cache: CacheResult,
    pub memory_latency_scale: f64,
    pub dram_cycles_per_sector: f64,
    pub l1_bytes: u64,
    pub l2_bytes_per_sm: u64,
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
    if launch.block != em.launch.block {
        return Err(Error::invalid(
            "--block",
            "the launch's block shape differs from the emulated one",
        ));
    }
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
    let blocks_per_sm = blocks.div_ceil(u64::from(device.sm_count.max(1)));
    let n_round = u64::from(occ.active_blocks_per_sm)
        .min(blocks_per_sm)
        .max(1) as u32;
    let warps_per_block = launch.warps_per_block();
    let warps_in_round = n_round * warps_per_block;

    // L1 = the on-chip memory that shared memory does not take.
    let shared_used =
        u64::from(occ.active_blocks_per_sm) * occ.allocated_shared_memory_per_block_bytes;
    let l1_bytes = device.l1_shared_per_sm_bytes.saturating_sub(shared_used);
    let l2_bytes = device.l2_cache_bytes / u64::from(device.sm_count.max(1));
    let rep = crate::emulate::representative(&em.sampled_blocks)
        .ok_or_else(|| Error::missing("trace", "the emulation sampled no block"))?;
    let dram_bytes_per_clk_sm = device.memory_bandwidth_gbs * 1e3
        / device.core_clock_mhz
        / f64::from(device.sm_count.max(1));
    let memory_latency_scale = rule.scale(device.limits.max_warps_per_sm, warps_in_round);
    let costs = Costs {
        schedulers: device.warp_schedulers_per_sm,
        dram_cycles_per_sector: SECTOR / dram_bytes_per_clk_sm.max(1e-9),
        memory_latency_scale,
    };
    // Caches: the warps of the representative block, as they share one SM's L1.
    let rep_warps: Vec<&WarpTrace> = em
        .warps
        .iter()
        .filter(|w| w.block_linear == rep.linear)
        .collect();
    let cache = cache::simulate(
        &rep_warps,
        (l1_bytes / 32) as usize,
        (l2_bytes / 32) as usize,
    );
    let programs: Vec<Vec<SimOp>> = rep_warps
        .iter()
        .zip(&cache.hits)
        .map(|(w, h)| compress(w, h, &lat.values, &costs))
        .collect();
    let sim_ops: usize = programs.iter().map(Vec::len).sum();
    let pipeline_cycles =
        simulate_round(&programs, n_round as usize, device.warp_schedulers_per_sm);
    // eq 8 with N_awg limited to the blocks an SM gets.
    let cycles = pipeline_cycles * blocks_per_sm as f64 / f64::from(n_round);
    Ok(TraceRun {
        active_blocks_per_sm: occ.active_blocks_per_sm,
        occupancy_limited_by: occ.limited_by,
        blocks_per_sm,
        blocks_in_round: n_round,
        warps_in_round,
        pipeline_cycles,
        cycles,
        time_us: device.cycles_to_us(cycles),
        cache,
        memory_latency_scale,
        dram_cycles_per_sector: costs.dram_cycles_per_sector,
        l1_bytes,
        l2_bytes_per_sm: l2_bytes,
        sim_ops_per_warp: sim_ops as f64 / f64::from(warps_per_block.max(1)),
        representative_block: rep.linear,
        representative_warps: rep_warps.len(),
        latency_rule: rule,
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
    p.notes.push(format!(
        "eq 8: {pipeline_cycles:.0} cycles for a round of {n_round} blocks x {blocks_per_sm} blocks per SM / {n_round}"
    ));
    p.notes.push(format!(
        "every block of the round replays sampled block {} (the interior class); caches simulated over its {} warps",
        r.representative_block, r.representative_warps
    ));
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
    p.notes.extend(em.notes.iter().cloned());
    Ok((p, r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_warp_sums_latencies() {
        // comp (latency 10) then a global access (latency 100): one warp takes 110 cycles.
        let prog = vec![
            SimOp::Comp {
                occupy: 2.0,
                latency: 10.0,
            },
            SimOp::Global {
                occupy: 4.0,
                latency: 100.0,
            },
        ];
        assert_eq!(simulate_round(&[prog], 1, 4), 110.0);
    }

    #[test]
    fn contention_serialises_a_shared_scheduler() {
        // Two warps on one scheduler, each a comp holding it 8 cycles with latency 8: the second
        // waits 8 cycles: ends at 16. On two schedulers they overlap: 8.
        let prog = vec![SimOp::Comp {
            occupy: 8.0,
            latency: 8.0,
        }];
        assert_eq!(simulate_round(&[prog.clone(), prog.clone()], 1, 1), 16.0);
        assert_eq!(simulate_round(&[prog.clone(), prog], 1, 2), 8.0);
    }

    #[test]
    fn barrier_waits_for_the_block() {
        // warp 0: comp 100 then barrier then comp 1; warp 1: barrier then comp 1 (2 schedulers).
        // Both pass the barrier at 100 and end at 101.
        let w0 = vec![
            SimOp::Comp {
                occupy: 1.0,
                latency: 100.0,
            },
            SimOp::Barrier,
            SimOp::Comp {
                occupy: 1.0,
                latency: 1.0,
            },
        ];
        let w1 = vec![
            SimOp::Barrier,
            SimOp::Comp {
                occupy: 1.0,
                latency: 1.0,
            },
        ];
        assert_eq!(simulate_round(&[w0.clone(), w1.clone()], 1, 2), 101.0);
        // Two blocks: barriers are per block, so a second block changes nothing on 4 schedulers.
        assert_eq!(simulate_round(&[w0, w1], 2, 4), 101.0);
    }

    #[test]
    fn memory_path_is_shared_by_all_warps() {
        // 4 warps each move 10 cycles' worth of data with latency 10: the load/store path
        // serialises them: the last starts at 30 and ends at 40.
        let prog = vec![SimOp::Global {
            occupy: 10.0,
            latency: 10.0,
        }];
        assert_eq!(simulate_round(&[prog], 4, 4), 40.0);
    }

    /// The round simulation as it was before the winner tree (a binary heap of event keys), kept
    /// to check that the faster queue changes no result. A regression reference, not a golden
    /// value: both are the same algorithm with a different priority queue.
    fn reference_simulate_round(warps: &[Vec<SimOp>], blocks: usize, schedulers: u32) -> f64 {
        let per_block = warps.len();
        let n = per_block * blocks;
        if n == 0 {
            return 0.0;
        }
        let schedulers = schedulers.max(1) as usize;
        let mut sched_free = vec![0.0f64; schedulers];
        let (mut lsu_free, mut smem_free) = (0.0f64, 0.0f64);
        let mut pos = vec![0usize; n];
        let mut waiting = vec![false; n];
        let mut arrived = vec![0usize; blocks];
        let mut live = vec![per_block; blocks];
        // Events ordered by (time, warp); the exact time is kept in `at`.
        let key = |t: f64, w: usize| ((t * 16.0) as u64) << 12 | w as u64;
        let mut at = vec![0.0f64; n];
        // Integer divisions per event cost more than the rest of the step: precompute them.
        let block_of: Vec<u32> = (0..n).map(|w| (w / per_block) as u32).collect();
        let prog_of: Vec<u32> = (0..n).map(|w| (w % per_block) as u32).collect();
        let sched_of: Vec<u32> = (0..n).map(|w| (w % schedulers) as u32).collect();
        let mut heap: std::collections::BinaryHeap<std::cmp::Reverse<u64>> =
            (0..n).map(|w| std::cmp::Reverse(key(0.0, w))).collect();
        let mut end = 0.0f64;
        let release =
            |b: usize,
             t: f64,
             waiting: &mut [bool],
             pos: &mut [usize],
             at: &mut [f64],
             heap: &mut std::collections::BinaryHeap<std::cmp::Reverse<u64>>| {
                for k in 0..per_block {
                    let w = b * per_block + k;
                    if waiting[w] {
                        waiting[w] = false;
                        pos[w] += 1;
                        at[w] = t;
                        heap.push(std::cmp::Reverse(key(t, w)));
                    }
                }
            };
        while let Some(std::cmp::Reverse(kw)) = heap.pop() {
            let w = (kw & 0xfff) as usize;
            let t = at[w];
            let b = block_of[w] as usize;
            let prog = &warps[prog_of[w] as usize];
            let Some(op) = prog.get(pos[w]) else {
                end = end.max(t);
                live[b] -= 1;
                if live[b] > 0 && arrived[b] == live[b] {
                    arrived[b] = 0;
                    release(b, t, &mut waiting, &mut pos, &mut at, &mut heap);
                }
                continue;
            };
            let next = match *op {
                SimOp::Barrier => {
                    waiting[w] = true;
                    arrived[b] += 1;
                    if arrived[b] == live[b] {
                        arrived[b] = 0;
                        release(b, t, &mut waiting, &mut pos, &mut at, &mut heap);
                    }
                    continue;
                }
                SimOp::Comp { occupy, latency } => {
                    let s = &mut sched_free[sched_of[w] as usize];
                    let start = t.max(*s);
                    *s = start + occupy;
                    start + latency.max(occupy)
                }
                SimOp::Global { occupy, latency } => {
                    let s = &mut sched_free[sched_of[w] as usize];
                    let issue = t.max(*s);
                    *s = issue + 1.0;
                    let start = issue.max(lsu_free);
                    lsu_free = start + occupy;
                    start + latency.max(occupy)
                }
                SimOp::Shared { occupy, latency } => {
                    let s = &mut sched_free[sched_of[w] as usize];
                    let issue = t.max(*s);
                    *s = issue + 1.0;
                    let start = issue.max(smem_free);
                    smem_free = start + occupy;
                    start + latency.max(occupy)
                }
            };
            pos[w] += 1;
            at[w] = next;
            heap.push(std::cmp::Reverse(key(next, w)));
        }
        end
    }

    /// A pseudo-random program mix (comp, global, shared, barriers) from a seed (xorshift).
    fn random_programs(seed: u64, warps: usize, ops: usize) -> Vec<Vec<SimOp>> {
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Barriers must appear the same number of times in every warp of a block.
        let barrier_at: Vec<bool> = (0..ops).map(|_| next() % 17 == 0).collect();
        (0..warps)
            .map(|_| {
                (0..ops)
                    .map(|i| {
                        if barrier_at[i] {
                            return SimOp::Barrier;
                        }
                        let occupy = (next() % 64) as f64 / 4.0 + 0.25;
                        let latency = (next() % 4000) as f64 / 8.0;
                        match next() % 3 {
                            0 => SimOp::Comp { occupy, latency },
                            1 => SimOp::Global { occupy, latency },
                            _ => SimOp::Shared { occupy, latency },
                        }
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn winner_tree_round_equals_the_heap_round_on_random_programs() {
        for (seed, warps, ops, blocks, schedulers) in [
            (1u64, 1usize, 50usize, 1usize, 4u32),
            (7, 8, 200, 8, 4),
            (11, 3, 300, 5, 2),
            (13, 32, 100, 2, 4),
            (17, 6, 500, 10, 1),
            (19, 16, 80, 4, 3),
        ] {
            let progs = random_programs(seed, warps, ops);
            let fast = simulate_round(&progs, blocks, schedulers);
            let reference = reference_simulate_round(&progs, blocks, schedulers);
            assert_eq!(
                fast.to_bits(),
                reference.to_bits(),
                "seed {seed}: {fast} vs {reference}"
            );
        }
    }

    #[test]
    fn winner_tree_round_equals_the_heap_round_on_fixture_kernels() {
        use crate::device::catalogue;
        use crate::device::latencies::for_device;
        use crate::emulate::{emulate, LaunchDims, Options};
        let fix = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ptx");
        let dev = catalogue::find("V100").unwrap().clone();
        let lat = for_device(&dev).unwrap();
        type Case<'a> = (&'a str, &'a str, [u32; 3], [u32; 3], &'a [&'a str]);
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
        for (file, entry, grid, block, args) in cases {
            let text = std::fs::read_to_string(format!("{fix}/{file}")).unwrap();
            let (m, _) = crate::ptx::parse(&text);
            let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            let em = emulate(
                &m,
                entry,
                LaunchDims { grid, block },
                &args,
                Options::default(),
            )
            .unwrap();
            let costs = Costs {
                schedulers: 4,
                dram_cycles_per_sector: 0.9,
                memory_latency_scale: 2.0,
            };
            let rep = em.warps.iter().map(|w| w.block_linear).max().unwrap();
            let warps: Vec<&WarpTrace> =
                em.warps.iter().filter(|w| w.block_linear == rep).collect();
            let cache = cache::simulate(&warps, 2048, 8192);
            let progs: Vec<Vec<SimOp>> = warps
                .iter()
                .zip(&cache.hits)
                .map(|(w, h)| compress(w, h, &lat.values, &costs))
                .collect();
            for blocks in [1, 3, 8] {
                let fast = simulate_round(&progs, blocks, 4);
                let reference = reference_simulate_round(&progs, blocks, 4);
                assert_eq!(
                    fast.to_bits(),
                    reference.to_bits(),
                    "{file} {entry} x{blocks}"
                );
                checked += 1;
            }
        }
        assert_eq!(checked, 12);
    }

    #[test]
    fn latency_rules_scale_as_documented() {
        // Literal SPEC reading: 64 max warps / 2 active = 32; the queueing rule never scales.
        assert_eq!(LatencyRule::PaperWarpRatio.scale(64, 2), 32.0);
        assert_eq!(LatencyRule::PaperWarpRatio.scale(64, 64), 1.0);
        assert_eq!(LatencyRule::Queueing.scale(64, 2), 1.0);
        assert_eq!(LatencyRule::default(), LatencyRule::Queueing);
    }

    #[test]
    fn few_warps_see_the_unloaded_latency_and_a_full_round_is_rule_independent() {
        use crate::device::catalogue;
        use crate::device::latencies::for_device;
        use crate::emulate::{emulate, LaunchDims, Options};
        let fix = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ptx");
        let text = std::fs::read_to_string(format!("{fix}/basics.nvcc-sm75.ptx")).unwrap();
        let (m, _) = crate::ptx::parse(&text);
        let dev = catalogue::find("V100").unwrap().clone();
        let lat = for_device(&dev).unwrap();
        let res = KernelResources {
            registers_per_thread: 16,
            shared_bytes_per_block: 0,
        };
        let run = |grid: u32, block: u32, rule: LatencyRule| {
            let args = vec![format!("3={}", grid * block)];
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
}
