//! Physical lower bounds on a launch's time: no kernel moves its DRAM bytes faster than the
//! achievable DRAM bandwidth (peak x `dram_efficiency`), its L2 bytes faster than the L2
//! bandwidth, issues its warp instructions faster than one per scheduler per clock (or its
//! conversions, special functions, fp64 and integer operations faster than their units), updates
//! one address atomically faster than the L2 serialises same-address atomics, or finishes
//! before the launch overhead has passed.
//!
//! [`lower_bound`] computes them from an emulation alone ([`launch_work`] is its totals) (compulsory traffic: every distinct
//! sector the sampled blocks touch, once); [`LowerBound::of`] from figures a model already has
//! (the trace model's own DRAM and L2 traffic). A model whose time falls below the bound says
//! so in its notes.
//!
//! Pure: no I/O. It does not time anything beyond these bounds.

use std::collections::HashMap;

use serde::Serialize;

use crate::device::latencies::Latencies;
use crate::device::Device;
use crate::emulate::Emulation;
use crate::workload::trace::{LatencyClass, MemSpace};

/// The bounds of one launch, microseconds (the launch overhead included in none but `launch_us`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LowerBound {
    pub dram_bytes: f64,
    /// DRAM bytes at the achievable bandwidth, or its row activations at the activation rate
    /// when slower.
    pub dram_us: f64,
    pub l2_bytes: f64,
    pub l2_us: f64,
    /// Warp instructions at one per scheduler per clock, or each class at its unit's rate.
    pub issue_us: f64,
    /// Same-address global atomics serialised at the L2.
    pub atomic_us: f64,
    pub launch_us: f64,
    /// The largest of them.
    pub bound_us: f64,
    /// Which one it is: `dram`, `l2`, `issue`, `atomic` or `launch`.
    pub binding: &'static str,
}

/// What a launch does in total, for [`LowerBound::of`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Work {
    pub dram_bytes: f64,
    /// DRAM row activations (0: not counted); bound by the device's activation rate.
    pub dram_activations: f64,
    pub l2_bytes: f64,
    /// Warp instructions of the whole launch.
    pub warp_instructions: f64,
    /// Cycles the busiest unit needs for the whole launch, summed over the SMs (instructions x
    /// 32 lanes / results per clock per SM, per class).
    pub unit_cycles_sm: f64,
    /// The most lanes of the launch that update one global address atomically.
    pub hot_atomic_lanes: f64,
    /// fp32 lane operations of the whole launch (32 per fp32 warp instruction), what the
    /// roofline's compute side counts from an emulation.
    pub fp32_lane_ops: f64,
}

impl LowerBound {
    /// The bounds of `w` on `device` with its architecture's constants.
    pub fn of(device: &Device, lat: &Latencies, w: &Work) -> LowerBound {
        let sms = f64::from(device.sm_count.max(1));
        let clock_hz = device.core_clock_mhz * 1e6;
        let cycles_us = |c: f64| c / clock_hz * 1e6;
        let dram_bps = device.memory_bandwidth_gbs * 1e9 * lat.dram_efficiency;
        let dram_us = (w.dram_bytes / dram_bps * 1e6).max(
            device
                .dram_activation()
                .map_or(0.0, |a| w.dram_activations * a.ns_per_activation() * 1e-3),
        );
        let l2_us = cycles_us(w.l2_bytes / (lat.l2_bytes_per_clk_sm * sms));
        let schedulers = f64::from(device.warp_schedulers_per_sm.max(1));
        let issue_us =
            cycles_us((w.warp_instructions / (schedulers * sms)).max(w.unit_cycles_sm / sms));
        let atomic_us = cycles_us(w.hot_atomic_lanes / lat.global_atomic_same_address_per_clk);
        let launch_us = lat.launch_overhead_us;
        let all = [
            ("dram", dram_us),
            ("l2", l2_us),
            ("issue", issue_us),
            ("atomic", atomic_us),
            ("launch", launch_us),
        ];
        let (binding, bound_us) =
            all.iter()
                .copied()
                .fold(("launch", 0.0), |b, x| if x.1 > b.1 { x } else { b });
        LowerBound {
            dram_bytes: w.dram_bytes,
            dram_us,
            l2_bytes: w.l2_bytes,
            l2_us,
            issue_us,
            atomic_us,
            launch_us,
            bound_us,
            binding,
        }
    }

    /// A sentence for a prediction whose time is `time_us`.
    pub fn note(&self, time_us: f64) -> String {
        format!(
            "lower bound {:.3} us ({}): DRAM {:.3} us ({:.0} bytes at the achievable bandwidth or their row activations at the activation rate), L2 {:.3} us, issue {:.3} us, same-address atomics {:.3} us, launch overhead {:.3} us; the prediction {:.3} us is {}",
            self.bound_us,
            self.binding,
            self.dram_us,
            self.dram_bytes,
            self.l2_us,
            self.issue_us,
            self.atomic_us,
            self.launch_us,
            time_us,
            if time_us + 1e-9 >= self.bound_us {
                "above it"
            } else {
                "BELOW it"
            }
        )
    }
}

/// Results per clock per SM of the unit that executes a latency class (None: the issue rate).
/// Shifts, compares and branches run on the integer unit at their own rates (`unit_of`).
pub fn unit_rate(lat: &Latencies, c: LatencyClass) -> Option<f64> {
    Some(match c {
        LatencyClass::Int | LatencyClass::Branch => lat.int_per_clk_sm,
        LatencyClass::Shift => lat.shift_per_clk_sm,
        LatencyClass::Compare => lat.compare_per_clk_sm,
        LatencyClass::Barrier => lat.barrier_per_clk_sm,
        LatencyClass::IntMul => lat.int_mul_per_clk_sm / lat.int_mul_instructions.max(1.0),
        LatencyClass::Fp32 => lat.fp32_per_clk_sm,
        LatencyClass::Fp64 => lat.fp64_per_clk_sm,
        LatencyClass::Special => lat.sfu_per_clk_sm,
        // An IEEE sequence's seed is one special-function instruction; the fp32 divide's range
        // check (`FCHK`) is a second (its fma chain is not counted: a bound may only be low).
        LatencyClass::Fp32Sequence | LatencyClass::Fp64Sequence => lat.sfu_per_clk_sm,
        LatencyClass::Fp32Divide | LatencyClass::Fp32DivideSlow => lat.sfu_per_clk_sm / 2.0,
        LatencyClass::Convert => lat.convert_per_clk_sm,
        LatencyClass::Convert64 => lat.convert64_per_clk_sm,
        _ => return None,
    })
}

/// The unit a latency class occupies: integer adds, shifts, compares and branches share the
/// integer unit, IEEE sequences the special-function unit; every other class of [`unit_rate`]
/// has its own.
fn unit_of(c: LatencyClass) -> LatencyClass {
    match c {
        LatencyClass::Branch | LatencyClass::Shift | LatencyClass::Compare => LatencyClass::Int,
        LatencyClass::Fp32Sequence
        | LatencyClass::Fp32Divide
        | LatencyClass::Fp32DivideSlow
        | LatencyClass::Fp64Sequence => LatencyClass::Special,
        c => c,
    }
}

/// The most lanes of the whole launch that update one global address atomically. An address
/// every emulated block updates is the launch's shared counter: its lanes per block, averaged
/// over the emulated blocks (the sampled ones and those emulated for the L2, so that one
/// block's luck does not stand for thousands), times the launch's blocks. An address only some
/// blocks update is theirs alone: counted as emulated.
pub fn hot_atomic_lanes(em: &Emulation) -> f64 {
    let blocks: std::collections::BTreeSet<u64> =
        em.sampled_blocks.iter().map(|b| b.linear).collect();
    if blocks.is_empty() {
        return 0.0;
    }
    // address -> (lanes, blocks updating it)
    let mut per: HashMap<u64, (f64, std::collections::BTreeSet<u64>)> = HashMap::new();
    for w in &em.warps {
        for &(a, n) in &w.atomic_targets {
            let e = per.entry(a).or_default();
            e.0 += f64::from(n);
            e.1.insert(w.block_linear);
        }
    }
    let scale = em.launch.blocks() as f64 / blocks.len() as f64;
    per.values()
        .map(|(lanes, by)| {
            if by.len() == blocks.len() {
                lanes * scale
            } else {
                *lanes
            }
        })
        .fold(0.0, f64::max)
}

/// The bounds of a launch from its emulation: compulsory DRAM traffic (each distinct sector the
/// sampled blocks read once and each distinct sector they write once: a sector only one sampled
/// block touches stands for the blocks that block represents, times the share of a block's
/// sectors its neighbours do not also read ([`Emulation::sharing`]); one several sampled blocks
/// touch is counted once), L2 traffic (the requests the L1 does not cache, plus each block's
/// distinct sectors of those it does), the instruction mix, atomics and the launch overhead.
pub fn lower_bound(device: &Device, em: &Emulation, lat: &Latencies) -> LowerBound {
    LowerBound::of(device, lat, &launch_work(em, lat))
}

/// What an emulated launch does in total (the sampled blocks weighted by the blocks each
/// represents): compulsory DRAM bytes, L2 bytes, warp instructions, the busiest unit's cycles,
/// same-address atomic lanes and fp32 lane operations.
pub fn launch_work(em: &Emulation, lat: &Latencies) -> Work {
    let weight: HashMap<u64, f64> = em
        .sampled_blocks
        .iter()
        .filter(|b| b.represents > 0)
        .map(|b| (b.linear, b.represents as f64))
        .collect();
    let mut w = Work::default();
    // Per unit (indexed by the class `unit_of` names), and per warp the cycles one op of each
    // class adds (an array lookup per op: this loop runs over every emulated instruction).
    let mut unit_cycles = [0.0f64; LatencyClass::ALL.len()];
    let policy = crate::memory::cache::L1Policy {
        global_loads: lat.global_loads_cached_in_l1,
        opt_in: lat.global_l1_opt_in,
    };
    for t in em
        .warps
        .iter()
        .filter(|t| weight.contains_key(&t.block_linear))
    {
        let r = weight[&t.block_linear];
        let op_cycles = LatencyClass::ALL.map(|c| {
            unit_rate(lat, c).map(|rate| (unit_of(c) as usize, r * 32.0 / rate.max(1e-9)))
        });
        for op in &t.ops {
            // What ptxas folds (predicate logic, constant operands) is no instruction of its own.
            if op.latency.is_issued() {
                w.warp_instructions += r;
            }
            if op.latency == LatencyClass::Fp32 {
                w.fp32_lane_ops += r * 32.0;
            }
            if let Some((unit, cycles)) = op_cycles[op.latency as usize] {
                unit_cycles[unit] += cycles;
            }
        }
        for a in &t.accesses {
            if !matches!(a.space, MemSpace::Global | MemSpace::Local) {
                continue;
            }
            // Stores, atomics and loads the L1 does not cache all reach the L2; cached loads
            // at least once per distinct sector (added with the DRAM footprint below).
            if !policy.caches(a) {
                w.l2_bytes += r * 32.0 * f64::from(a.sectors);
            }
        }
    }
    // Each block's distinct sectors reach the L2 from its own SM's L1. From DRAM, a sector the
    // neighbouring blocks also read (a stencil's halo rows) comes once: the blocks a sampled
    // block stands for add only the share of its sectors their neighbours did not read.
    let footprint = em.footprint();
    let (shared_sectors, own_sectors) = (footprint.shared_sectors, &footprint.own_sectors);
    let distinct = |new_fraction: f64| {
        32.0 * own_sectors
            .iter()
            .map(|(b, &n)| n as f64 * (weight[b] * new_fraction).max(1.0))
            .fold(shared_sectors as f64, |sum, x| sum + x)
    };
    w.l2_bytes += distinct(1.0);
    w.dram_bytes = distinct(em.sharing().map_or(1.0, |s| s.new_fraction(true)));
    w.unit_cycles_sm = unit_cycles.iter().copied().fold(0.0, f64::max);
    w.hot_atomic_lanes = hot_atomic_lanes(em);
    w
}
