//! Every model from one kernel: the inputs of `mwp-cwp`, `hong-kim` and `wu`, and the `puchala`
//! kernel program, derived from the same warp traces, cache simulation and latency table the
//! `trace` model uses.
//!
//! Per-warp quantities are means over the sampled warps, each weighted by the number of blocks
//! its block stands for. ILP and MLP come from a dependency analysis of the traces in windows of
//! [`WINDOW`] issued instructions (instructions in a window divided by the longest dependency
//! chain in it; for MLP only global/local loads count along the chain). The departure delay is
//! derived from the device, `32 B / (DRAM bytes per clock per SM)` per sector, since no modern
//! measurement exists (shared/data/latencies/arch_latencies.md). Every such choice is a note.
//!
//! Pure: no I/O. It does not evaluate the models.

use std::collections::HashMap;

use std::sync::Arc;

use crate::device::latencies::{Latencies, Resolved as LatencyTable};
use crate::device::Device;
use crate::emulate::Emulation;
use crate::error::{Error, Result};
use crate::memory::cache::CacheResult;
use crate::model::puchala::{KernelSpec, PuchalaInputs};
use crate::model::trace_sim::{self, KernelResources, TraceRun};
use crate::model::Prediction;
use crate::workload::analytical::{
    AmatLatencies, HongKimInputs, MwpCwpInputs, RepRounding, SyncFactor, WuInputs,
};
use crate::workload::params::ParamValues;
use crate::workload::program::{Op, Program};
use crate::workload::trace::{LatencyClass, MemSpace, TraceOp, WarpTrace};

pub use crate::emulate::dependence::WINDOW;

/// Per-warp figures of a kernel launch, from its traces.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TraceMix {
    pub inst: f64,
    /// Instructions that are not memory accesses or barriers.
    pub comp_inst: f64,
    pub global_loads: f64,
    pub global_stores: f64,
    pub shared_accesses: f64,
    pub local_accesses: f64,
    pub barriers: f64,
    /// Sectors per global request (transactions per request).
    pub sectors_per_request: f64,
    /// Global requests whose sectors are the minimum their lanes need (per warp).
    pub coalesced_requests: f64,
    pub uncoalesced_requests: f64,
    /// Mean sectors of an uncoalesced request (1 when there are none).
    pub sectors_per_uncoalesced_request: f64,
    /// Mean conflict ways over shared accesses (1 = none).
    pub bank_conflict_ways_mean: f64,
    /// Mean bytes per lane over global accesses.
    pub bytes_per_lane: f64,
    /// Sum of dependent-issue latencies of the non-memory instructions, cycles per warp.
    pub comp_cycles: f64,
    pub ilp: f64,
    pub mlp: f64,
    pub l1_hit_ratio: f64,
    pub l2_hit_ratio: f64,
    /// Expected latency of a global load, cycles (L1/L2/DRAM by the hit ratios).
    pub global_load_latency: f64,
}

fn latency_of(l: &Latencies, c: LatencyClass) -> f64 {
    match c {
        LatencyClass::IntMul => l.int_mul,
        LatencyClass::IntDiv => l.int_div,
        LatencyClass::Fp32 => l.fp32,
        LatencyClass::Fp64 => l.fp64,
        LatencyClass::Special => l.special,
        LatencyClass::Fp32Sequence | LatencyClass::Fp32Divide => {
            trace_sim::sequence_latency(l, false)
        }
        LatencyClass::Fp32DivideSlow => {
            trace_sim::sequence_latency(l, false) + trace_sim::SlowDivide::latency(l)
        }
        LatencyClass::Fp64Sequence => trace_sim::sequence_latency(l, true),
        LatencyClass::Convert => l.convert,
        LatencyClass::Param => l.const_,
        LatencyClass::ConstLoad => l.const_ldc,
        _ => l.int,
    }
}

/// The per-warp mix of a launch, weighted by the blocks each sampled block stands for.
pub fn mix(em: &Emulation, cache: &CacheResult, lat: &Latencies) -> TraceMix {
    let weight_of: HashMap<u64, f64> = em
        .sampled_blocks
        .iter()
        .map(|b| (b.linear, b.represents as f64))
        .collect();
    let mut m = TraceMix {
        inst: 0.0,
        comp_inst: 0.0,
        global_loads: 0.0,
        global_stores: 0.0,
        shared_accesses: 0.0,
        local_accesses: 0.0,
        barriers: 0.0,
        sectors_per_request: 1.0,
        coalesced_requests: 0.0,
        uncoalesced_requests: 0.0,
        sectors_per_uncoalesced_request: 1.0,
        bank_conflict_ways_mean: 1.0,
        bytes_per_lane: 4.0,
        comp_cycles: 0.0,
        ilp: 1.0,
        mlp: 1.0,
        l1_hit_ratio: cache.l1_hit_ratio,
        l2_hit_ratio: cache.l2_hit_ratio,
        global_load_latency: 0.0,
    };
    let (mut wsum, mut sectors, mut requests, mut unc_sectors, mut unc_n) =
        (0.0, 0.0, 0.0, 0.0, 0.0);
    let (mut ways, mut shared_n, mut bytes) = (0.0, 0.0, 0.0);
    let (mut ilp, mut mlp) = (0.0, 0.0);
    for (w, &(i, l)) in em.warps.iter().zip(em.parallelism()) {
        let wt = weight_of.get(&w.block_linear).copied().unwrap_or(1.0);
        wsum += wt;
        m.inst += wt * w.ops.len() as f64;
        for op in &w.ops {
            if op.access == TraceOp::NO_ACCESS
                && !op.latency.is_memory()
                && op.latency != LatencyClass::Barrier
            {
                m.comp_inst += wt;
                m.comp_cycles += wt * latency_of(lat, op.latency);
            }
            if op.latency == LatencyClass::Barrier {
                m.barriers += wt;
            }
        }
        for a in &w.accesses {
            match a.space {
                MemSpace::Global => {
                    if a.store {
                        m.global_stores += wt;
                    } else {
                        m.global_loads += wt;
                    }
                    let need = (u64::from(a.lanes) * u64::from(a.bytes_per_lane)).div_ceil(32) + 1;
                    sectors += wt * f64::from(a.sectors);
                    requests += wt;
                    bytes += wt * f64::from(a.bytes_per_lane);
                    if u64::from(a.sectors) <= need {
                        m.coalesced_requests += wt;
                    } else {
                        m.uncoalesced_requests += wt;
                        unc_sectors += wt * f64::from(a.sectors);
                        unc_n += wt;
                    }
                }
                MemSpace::Shared => {
                    m.shared_accesses += wt;
                    ways += wt * f64::from(a.bank_ways.max(1));
                    shared_n += wt;
                }
                MemSpace::Local => m.local_accesses += wt,
                MemSpace::Const => {}
            }
        }
        ilp += wt * i;
        mlp += wt * l;
    }
    let wsum = if wsum > 0.0 { wsum } else { 1.0 };
    for v in [
        &mut m.inst,
        &mut m.comp_inst,
        &mut m.global_loads,
        &mut m.global_stores,
        &mut m.shared_accesses,
        &mut m.local_accesses,
        &mut m.barriers,
        &mut m.coalesced_requests,
        &mut m.uncoalesced_requests,
        &mut m.comp_cycles,
    ] {
        *v /= wsum;
    }
    if requests > 0.0 {
        m.sectors_per_request = (sectors / requests).max(1.0);
        m.bytes_per_lane = bytes / requests;
    }
    if unc_n > 0.0 {
        m.sectors_per_uncoalesced_request = unc_sectors / unc_n;
    }
    if shared_n > 0.0 {
        m.bank_conflict_ways_mean = ways / shared_n;
    }
    m.ilp = ilp / wsum;
    m.mlp = mlp / wsum;
    let (h1, h2) = (cache.l1_hit_ratio, cache.l2_hit_ratio);
    m.global_load_latency =
        h1 * lat.l1_hit + (1.0 - h1) * (h2 * lat.l2_hit + (1.0 - h2) * lat.dram);
    m
}

/// Launch-level figures the analytical inputs share.
#[derive(Debug, Clone, Copy)]
pub struct LaunchFigures {
    pub blocks: f64,
    pub threads_per_block: f64,
    pub warps_per_block: f64,
    /// Active blocks per SM (occupancy, limited by the blocks each SM gets).
    pub active_blocks_per_sm: f64,
    pub registers_per_thread: f64,
    pub shared_bytes_per_block: f64,
}

/// Per-sector departure delay, cycles: 32 bytes at the device's DRAM bytes per clock per SM.
pub fn departure_delay_cycles(d: &Device) -> f64 {
    let bytes_per_clk_sm =
        d.memory_bandwidth_gbs * 1e3 / d.core_clock_mhz / f64::from(d.sm_count.max(1));
    32.0 / bytes_per_clk_sm.max(1e-9)
}

/// MWP-CWP (parra2016) inputs.
pub fn mwp_cwp(
    d: &Device,
    m: &TraceMix,
    lf: &LaunchFigures,
    lat: &Latencies,
) -> (MwpCwpInputs, Vec<String>) {
    let active_sms = f64::from(d.sm_count).min(lf.blocks).max(1.0);
    let h1 = m.l1_hit_ratio;
    let h2 = m.l2_hit_ratio;
    let i = MwpCwpInputs {
        inst: m.inst.max(1.0),
        mem_inst: m.global_loads + m.global_stores + m.local_accesses,
        total_warps: lf.blocks * lf.warps_per_block,
        active_sms,
        avg_inst_lat: if m.comp_inst > 0.0 {
            m.comp_cycles / m.comp_inst
        } else {
            lat.int
        },
        ilp: m.ilp,
        n: (lf.active_blocks_per_sm * lf.warps_per_block).max(1.0),
        warp_size: 32.0,
        simd_width: f64::from(d.cores_per_sm),
        dram_lat: lat.dram,
        avg_trans_warp: m.sectors_per_request.max(1.0),
        departure_delay: departure_delay_cycles(d),
        miss_ratio_l2: (1.0 - h1) * (1.0 - h2),
        hit_lat_l2: lat.l2_hit,
        miss_ratio_l1: 1.0 - h1,
        hit_lat_l1: lat.l1_hit,
        freq_ghz: d.core_clock_mhz / 1000.0,
        data_size_bytes: m.bytes_per_lane.max(1.0),
        mem_peak_bandwidth_gbs: d.memory_bandwidth_gbs,
        mlp: m.mlp,
        w_serial: 0.0,
        amat_latencies: AmatLatencies::Penalties,
    };
    let notes = vec![
        format!("mwp-cwp inputs from the traces: inst {:.1}, mem_inst {:.1}, ILP {:.2}, MLP {:.2}, avg_trans_warp {:.2} sectors per request", i.inst, i.mem_inst, i.ilp, i.mlp, i.avg_trans_warp),
        format!("miss_ratio_l1 {:.3}, miss_ratio_l2 (of all accesses) {:.3} from the LRU cache simulation; departure delay {:.2} cycles per sector from the DRAM bandwidth", i.miss_ratio_l1, i.miss_ratio_l2, i.departure_delay),
    ];
    (i, notes)
}

/// Hong and Kim 2009 inputs.
pub fn hong_kim(
    d: &Device,
    m: &TraceMix,
    lf: &LaunchFigures,
    lat: &Latencies,
) -> (HongKimInputs, Vec<String>) {
    let delay = departure_delay_cycles(d);
    let abps = lf.active_blocks_per_sm.max(1.0);
    let i = HongKimInputs {
        warp_size: 32.0,
        issue_cycles: 32.0
            / (f64::from(d.cores_per_sm) / f64::from(d.warp_schedulers_per_sm.max(1))),
        freq_ghz: d.core_clock_mhz / 1000.0,
        mem_bandwidth_gbs: d.memory_bandwidth_gbs,
        mem_ld: lat.dram,
        departure_del_uncoal: delay,
        departure_del_coal: 4.0 * delay,
        threads_per_block: lf.threads_per_block,
        blocks: lf.blocks,
        active_sms: f64::from(d.sm_count).min(lf.blocks / abps).max(1.0),
        active_blocks_per_sm: abps,
        comp_insts: m.comp_inst + m.shared_accesses,
        uncoal_mem_insts: m.uncoalesced_requests,
        coal_mem_insts: m.coalesced_requests + m.local_accesses,
        synch_insts: m.barriers,
        uncoal_per_mw: m.sectors_per_uncoalesced_request.max(1.0),
        load_bytes_per_warp: 32.0 * m.bytes_per_lane.max(1.0),
        sync_factor: SyncFactor::Npwb,
        rep_rounding: RepRounding::None,
    };
    let notes = vec![
        format!("hong-kim inputs from the traces: comp {:.1} (shared accesses counted as computation), coalesced {:.1}, uncoalesced {:.1} ({:.2} sectors each), synch {:.1}", i.comp_insts, i.coal_mem_insts, i.uncoal_mem_insts, i.uncoal_per_mw, i.synch_insts),
        format!("departure delays {:.2} (uncoalesced, per sector) and {:.2} (coalesced, 4 sectors) cycles from the DRAM bandwidth; Mem_LD = DRAM latency {} cycles", i.departure_del_uncoal, i.departure_del_coal, lat.dram),
    ];
    (i, notes)
}

/// wu2019 inputs.
pub fn wu(
    d: &Device,
    m: &TraceMix,
    lf: &LaunchFigures,
    lat: &Latencies,
    spills: Option<(u64, u64)>,
) -> (WuInputs, Vec<String>) {
    let l = &d.limits;
    let mut notes = vec![format!(
        "wu inputs from the traces: Comp_cycles {:.1}, global {:.1}, shared {:.1} (N_conf {:.2}), local {:.1}, sync {:.1}; Mem_L_global {:.1} cycles from the cache simulation",
        m.comp_cycles,
        m.global_loads + m.global_stores,
        m.shared_accesses,
        m.bank_conflict_ways_mean,
        m.local_accesses,
        m.barriers,
        m.global_load_latency
    )];
    if let Some((st, ld)) = spills {
        if st + ld > 0 {
            notes.push(format!(
                "the resource report lists {st} bytes of spill stores and {ld} bytes of spill loads; the traced local accesses ({:.1} per thread) include them",
                m.local_accesses
            ));
        }
    }
    let i = WuInputs {
        comp_cycles: m.comp_cycles.max(1.0),
        mem_insts_global: m.global_loads + m.global_stores,
        mem_insts_shared: m.shared_accesses,
        mem_insts_local: m.local_accesses,
        n_conf: m.bank_conflict_ways_mean.max(1.0),
        sync_insts: m.barriers,
        mem_l_global: m.global_load_latency,
        mem_l_shared: lat.shared_load,
        departure_delay: departure_delay_cycles(d),
        threads_per_block: lf.threads_per_block,
        warp_size: 32.0,
        n_ws: f64::from(d.warp_schedulers_per_sm),
        max_b: f64::from(l.max_blocks_per_sm),
        max_w: f64::from(l.max_warps_per_sm),
        max_r: f64::from(l.registers_per_sm),
        reg_per_thread: lf.registers_per_thread,
        max_smem_bytes: f64::from(l.shared_memory_per_sm_bytes),
        smem_used_bytes: lf.shared_bytes_per_block,
        smem_unit_bytes: f64::from(l.shared_memory_allocation_unit_bytes.max(1)),
        n_b: lf.blocks,
        n_sm: f64::from(d.sm_count),
        freq_mhz: d.core_clock_mhz,
        comu_bytes: 0.0,
        comu_bw_gbs: None,
        max_threads_per_block: Some(f64::from(l.max_threads_per_block)),
    };
    (i, notes)
}

/// The puchala2022 kernel program of one warp's trace: runs of instructions without a global
/// access become `calc` periods of `n - 1 + 10` cycles (the paper's rule), each global load a
/// `load` of the expected load latency, each global store a `store` of the L1 latency (stores do
/// not wait for DRAM). The trace is dynamic, so loops appear unrolled with their real trip counts.
pub fn puchala_program(w: &WarpTrace, load_cycles: f64, store_cycles: f64) -> Program {
    let mut ops = Vec::new();
    let mut calc = 0u64;
    let flush = |ops: &mut Vec<Op>, calc: &mut u64| {
        if *calc > 0 {
            ops.push(Op::Calc(crate::ptx::program::calc_period_cycles(*calc)));
            *calc = 0;
        }
    };
    for op in &w.ops {
        match op.latency {
            LatencyClass::GlobalLoad => {
                flush(&mut ops, &mut calc);
                ops.push(Op::Load(load_cycles));
            }
            LatencyClass::GlobalStore => {
                flush(&mut ops, &mut calc);
                ops.push(Op::Store(store_cycles));
            }
            _ => calc += 1,
        }
    }
    flush(&mut ops, &mut calc);
    Program { ops }
}

/// Free parameters and resources of a PTX launch for the models.
#[derive(Debug, Clone, Default)]
pub struct PtxRequest {
    /// The compiler's resource report for the kernel (registers, shared memory, spills).
    pub resources: Option<kerneltime_ptx::resources::KernelResources>,
    /// puchala2022's `t_p` and `t_m`, when given (else the device profile's).
    pub t_p_us: Option<f64>,
    pub t_m_cycles: Option<f64>,
    /// Dynamic shared memory per block (`.extern .shared`), bytes, added to the static amount
    /// for occupancy.
    pub dynamic_shared_bytes: u32,
    /// Where `resources` came from, said in the notes.
    pub resources_origin: Option<String>,
    /// The same launch emulated with [`crate::emulate::UnknownData::Best`], when it depends
    /// on unknown data: the trace model gives its time as the best case of a band.
    pub best_case: Option<Arc<Emulation>>,
}

/// An emulated PTX launch simulated once by the trace model, with everything every other model
/// derives its inputs from (`registry::Source::Ptx`).
#[derive(Debug, Clone)]
pub struct PtxFigures {
    pub emulation: Arc<Emulation>,
    pub latencies: LatencyTable,
    /// Registers and shared memory per block used for occupancy.
    pub resources: KernelResources,
    /// The compiler's report, when given (spills).
    pub report: Option<kerneltime_ptx::resources::KernelResources>,
    /// The trace model's uncalibrated prediction.
    pub trace: Prediction,
    pub run: TraceRun,
    pub mix: TraceMix,
    pub launch: LaunchFigures,
    pub t_p_us: Option<f64>,
    pub t_m_cycles: Option<f64>,
    /// Assumptions of the launch (defaulted registers) and the emulation's notes.
    pub notes: Vec<String>,
}

/// Simulates an emulated launch once and derives the per-warp mix and launch figures.
pub fn figures(device: &Device, em: Arc<Emulation>, req: &PtxRequest) -> Result<PtxFigures> {
    let lat = crate::device::latencies::for_device(device)?;
    let mut notes = Vec::new();
    // A device timed at another clock than its boost clock says which and why (a laptop part
    // whose clock depends on the laptop, a paper's measured clock).
    if let Some(why) = device.sources.get("core_clock_mhz") {
        if (device.core_clock_mhz - device.boost_clock_mhz).abs() > 1e-9 {
            notes.push(format!(
                "cycles become time at {} MHz, not the {} MHz boost clock: {why}",
                device.core_clock_mhz, device.boost_clock_mhz
            ));
        }
    }
    let registers = match req.resources.as_ref().and_then(|r| r.registers) {
        Some(r) => {
            if let Some(o) = &req.resources_origin {
                notes.push(format!("{r} registers per thread: {o}"));
            }
            r as u32
        }
        None => {
            notes.push(
                "no resource report (`resources`) and no ptxas to make one: 32 registers per thread assumed for occupancy (a guess)"
                    .into(),
            );
            32
        }
    };
    let from_report = req.resources.as_ref().and_then(|r| r.shared_bytes);
    let static_shared = from_report.map_or(em.shared_bytes_static, |b| b);
    let total_shared = static_shared.saturating_add(u64::from(req.dynamic_shared_bytes));
    let max_shared = crate::device::occupancy::max_shared_memory_per_block_bytes(
        device.compute_capability,
        &device.limits,
    );
    if total_shared > max_shared {
        let source = match (&req.resources_origin, from_report) {
            (Some(_), Some(_)) => "static, from the resource report".to_string(),
            _ => "static, from the PTX's .shared declarations".to_string(),
        };
        return Err(Error::Infeasible(format!(
            "the kernel needs {total_shared} bytes of shared memory per block ({static_shared} {source}, {} dynamic); {} allows at most {max_shared}: the block cannot launch",
            req.dynamic_shared_bytes, device.name
        )));
    }
    let static_shared = u32::try_from(static_shared).unwrap_or(u32::MAX);
    let shared = static_shared.saturating_add(req.dynamic_shared_bytes);
    if req.dynamic_shared_bytes > 0 {
        notes.push(format!(
            "shared memory per block for occupancy: {static_shared} static + {} dynamic = {shared} bytes",
            req.dynamic_shared_bytes
        ));
    }
    let spill = |b: Option<u64>| b.map_or(0, |b| u32::try_from(b).unwrap_or(u32::MAX));
    let res = KernelResources {
        registers_per_thread: registers,
        shared_bytes_per_block: shared,
        spill_store_bytes: spill(req.resources.as_ref().and_then(|r| r.spill_store_bytes)),
        spill_load_bytes: spill(req.resources.as_ref().and_then(|r| r.spill_load_bytes)),
    };
    let (mut trace, run) = trace_sim::predict(device, &em, res, &lat)?;
    if let Some(best) = &req.best_case {
        let (b, _) = trace_sim::predict(device, best, res, &lat)?;
        trace_sim::attach_best_case(&mut trace, &em, &b);
    }
    let mix = mix(&em, &run.cache, &lat.values);
    let launch = LaunchFigures {
        blocks: em.launch.blocks() as f64,
        threads_per_block: f64::from(em.launch.threads_per_block()),
        warps_per_block: f64::from(em.launch.warps_per_block()),
        active_blocks_per_sm: f64::from(run.blocks_in_round),
        registers_per_thread: f64::from(registers),
        shared_bytes_per_block: f64::from(shared),
    };
    notes.extend(em.notes.iter().cloned());
    Ok(PtxFigures {
        emulation: em,
        latencies: lat,
        resources: res,
        report: req.resources.clone(),
        trace,
        run,
        mix,
        launch,
        t_p_us: req.t_p_us,
        t_m_cycles: req.t_m_cycles,
        notes,
    })
}

/// The device profile key of a kernel: `dwt_matrix` -> `dwt-matrix`; a key that prefixes the
/// name also matches (`dwt_lattice_stage` -> `dwt-lattice`).
fn profile_key<'d>(device: &'d Device, entry: &str) -> Option<&'d str> {
    let name = entry.replace('_', "-").to_lowercase();
    device
        .puchala
        .keys()
        .find(|k| **k == name)
        .or_else(|| device.puchala.keys().find(|k| name.starts_with(k.as_str())))
        .map(String::as_str)
}

/// puchala2022's `t_m` when nothing gives it: 32 lanes at 8 load/store units per 32-core
/// partition (the SM partitions of the Maxwell, Volta, Turing and Ampere whitepapers).
pub const DEFAULT_T_M_CYCLES: f64 = 4.0;

/// puchala2022's inputs from a launch: the kernel program of the representative block's longest
/// warp (loads at the expected load latency, stores at the L1 latency), the launch as emulated,
/// `t_p`/`t_m` as given or from the device profile of the kernel's name.
pub fn puchala_inputs(device: &Device, f: &PtxFigures) -> Result<(PuchalaInputs, Vec<String>)> {
    let em = &f.emulation;
    let rep = em
        .warps
        .iter()
        .filter(|w| w.block_linear == f.run.representative_block)
        .max_by_key(|w| w.ops.len())
        .ok_or_else(|| Error::missing("trace", "no warp of the representative block"))?;
    let lat = &f.latencies.values;
    let program = puchala_program(rep, f.mix.global_load_latency, lat.l1_hit);
    let profile = profile_key(device, &em.entry).map(str::to_string);
    let mut notes = Vec::new();
    // Without values given or a puchala2022 profile entry for this kernel, defaults from the
    // architecture: `t_p` is the launch overhead of the latency table, `t_m` the cycles a
    // 32-lane memory instruction occupies a 32-core package at 8 load/store lanes per clock.
    let has_profile = profile
        .as_deref()
        .is_some_and(|k| device.puchala.contains_key(k));
    let t_p_us = match f.t_p_us {
        Some(v) => Some(v),
        None if has_profile => None,
        None => {
            notes.push(format!(
                "t_p = {:.1} us: the architecture's launch overhead (data/latencies.toml), no puchala2022 profile for `{}`",
                lat.launch_overhead_us, em.entry
            ));
            Some(lat.launch_overhead_us)
        }
    };
    let t_m_cycles = match f.t_m_cycles {
        Some(v) => Some(v),
        None if has_profile => None,
        None => {
            notes.push(format!(
                "t_m = {DEFAULT_T_M_CYCLES} cycles: a warp's memory instruction at 8 load/store lanes per clock per 32-core package (NVIDIA Maxwell to Ampere SM partitions), no puchala2022 profile for `{}`",
                em.entry
            ));
            Some(DEFAULT_T_M_CYCLES)
        }
    };
    notes.push(format!(
        "kernel program from the longest warp of block {} ({} ops, loops unrolled by the emulation); loads {:.1} cycles (expected L1/L2/DRAM latency), stores {} cycles",
        f.run.representative_block,
        program.ops.len(),
        f.mix.global_load_latency,
        lat.l1_hit
    ));
    let kernel = KernelSpec {
        name: em.entry.clone(),
        program,
        launch: crate::workload::program::LaunchSpec::default(),
        builtin: None,
    };
    Ok((
        PuchalaInputs {
            kernel,
            params: ParamValues::default(),
            launch: Some((em.launch.blocks(), em.launch.threads_per_block())),
            t_p_us,
            t_m_cycles,
            profile,
            trace_costs: Some((f.mix.global_load_latency, lat.l1_hit)),
        },
        notes,
    ))
}
