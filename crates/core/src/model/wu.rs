//! wu2019's analytical model (X. Wu et al., "A performance model for GPU architectures that
//! considers on-chip resources: application to medical image registration", IEEE TPDS 2019,
//! section 4, eq 1-23): Hong and Kim's model extended with the blocks that registers and shared
//! memory let run, the warp schedulers, bank conflicts, register spills, synchronization and the
//! host-device transfer; plus the optimal block size (a sweep over `Threads_per_block`) and the
//! speedup over a single-thread CPU time that the paper reports.
//!
//! Block limits are integer divisions (floor); a kernel using no registers or no shared memory gets
//! no limit from them (SPEC.md section 3). This is the paper's formula, not NVIDIA's exact occupancy
//! (`device::occupancy` has that). `predict` returns cycles of one SM and the transfer time; it does
//! not turn cycles into time (the caller does, with the device clock).

use crate::device::Device;
use crate::model::analytical;
use crate::model::from_trace;
use crate::model::registry::{Inputs, Model, ModelId, ParamSpec, Source};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::Prediction;
use crate::workload::analytical::WuInputs;

/// Which resource sets `Blocks_active` (eq 7): the first of the smallest limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockLimiter {
    /// `Max_B`, the blocks-per-SM limit.
    Blocks,
    /// `Max_B_W`, the warps-per-SM limit (eq 8).
    Warps,
    /// `Max_B_R`, registers (eq 9).
    Registers,
    /// `Max_B_S`, shared memory (eq 10).
    SharedMemory,
}

/// Every quantity of eq 1-21, cycles unless named otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WuResult {
    /// eq 1.
    pub mem_cycles_global: f64,
    /// eq 2.
    pub mem_cycles_shared: f64,
    /// eq 3.
    pub mem_cycles_local: f64,
    /// eq 16.
    pub mem_cycles: f64,
    /// eq 8 (floor).
    pub max_b_w: f64,
    /// eq 9 (floor; infinite without registers).
    #[serde(serialize_with = "finite_or_null")]
    pub max_b_r: f64,
    /// eq 11, bytes.
    pub smem_per_block_bytes: f64,
    /// eq 10 (floor; infinite without shared memory).
    #[serde(serialize_with = "finite_or_null")]
    pub max_b_s: f64,
    /// eq 7.
    pub blocks_active: f64,
    pub block_limiter: BlockLimiter,
    /// eq 6.
    pub warps_active: f64,
    /// eq 4.
    pub rwp_c: f64,
    /// eq 5.
    pub rwp_m: f64,
    /// Whether RWP_M is the latency bound `Mem_L_global / Departure_delay` ("latency") or the
    /// active warps ("active_warps").
    pub rwp_m_bound: &'static str,
    /// eq 13 (from eq 12).
    pub sync_cycles: f64,
    /// eq 14.
    pub cpw_c: f64,
    /// eq 15.
    pub cpw_m: f64,
    /// "compute" when CPW_C > CPW_M, else "memory" (the paper's reading of eq 17).
    pub dominant: &'static str,
    /// eq 17.
    pub exec_cycles_warp: f64,
    /// eq 19.
    pub n_blocks: f64,
    /// eq 18.
    pub n_warps: f64,
    /// eq 20: the predicted cycles.
    pub exec_cycles_sm: f64,
    /// eq 23, microseconds.
    pub transfer_us: f64,
}

fn finite_or_null<S: serde::Serializer>(v: &f64, s: S) -> std::result::Result<S::Ok, S::Error> {
    if v.is_finite() {
        s.serialize_f64(*v)
    } else {
        s.serialize_none()
    }
}

/// Evaluates eq 1-20 and 23. Errors when the inputs fail `WuInputs::validate`, and with
/// `Error::Infeasible` when no block fits on an SM (a block limit of zero).
pub fn predict(i: &WuInputs) -> Result<WuResult> {
    i.validate()?;
    let mem_cycles_global = i.mem_l_global * i.mem_insts_global;
    let mem_cycles_shared = i.mem_insts_shared * i.n_conf * i.mem_l_shared;
    let mem_cycles_local = i.mem_l_shared * i.warp_size * i.mem_insts_local;
    let mem_cycles = mem_cycles_global + mem_cycles_shared + mem_cycles_local;

    let warps_per_block = i.threads_per_block / i.warp_size;
    let max_b_w = (i.max_w * i.warp_size / i.threads_per_block).floor();
    let max_b_r = if i.reg_per_thread > 0.0 {
        (i.max_r / (i.threads_per_block * i.reg_per_thread)).floor()
    } else {
        f64::INFINITY
    };
    let (smem_per_block_bytes, max_b_s) = if i.smem_used_bytes > 0.0 {
        let per_block = (i.smem_used_bytes / i.smem_unit_bytes).ceil() * i.smem_unit_bytes;
        (per_block, (i.max_smem_bytes / per_block).floor())
    } else {
        (0.0, f64::INFINITY)
    };
    let mut blocks_active = i.max_b;
    let mut block_limiter = BlockLimiter::Blocks;
    for (limit, which) in [
        (max_b_w, BlockLimiter::Warps),
        (max_b_r, BlockLimiter::Registers),
        (max_b_s, BlockLimiter::SharedMemory),
    ] {
        if limit < blocks_active {
            blocks_active = limit;
            block_limiter = which;
        }
    }
    if blocks_active < 1.0 {
        let why = match block_limiter {
            BlockLimiter::Blocks => "max_b is 0".to_string(),
            BlockLimiter::Warps => format!(
                "{} threads exceed max_w = {} warps of {}",
                i.threads_per_block, i.max_w, i.warp_size
            ),
            BlockLimiter::Registers => format!(
                "{} threads x {} registers exceed max_r = {}",
                i.threads_per_block, i.reg_per_thread, i.max_r
            ),
            BlockLimiter::SharedMemory => format!(
                "{smem_per_block_bytes} bytes of shared memory per block exceed max_smem_bytes = {}",
                i.max_smem_bytes
            ),
        };
        return Err(Error::Infeasible(format!(
            "a block of {} threads cannot run on an SM (zero active blocks): {why}",
            i.threads_per_block
        )));
    }

    let warps_active = blocks_active * warps_per_block;
    let rwp_c = warps_per_block.min(i.n_ws);
    let latency_bound = i.mem_l_global / i.departure_delay;
    let (rwp_m, rwp_m_bound) = if latency_bound <= warps_active {
        (latency_bound, "latency")
    } else {
        (warps_active, "active_warps")
    };
    let sync_block = i.departure_delay * (rwp_m - 1.0) * i.sync_insts;
    let sync_cycles = sync_block * i.warp_size / i.threads_per_block;
    let cpw_c = i.comp_cycles / rwp_c;
    let cpw_m = mem_cycles / rwp_m;
    let dominant = if cpw_c > cpw_m { "compute" } else { "memory" };
    let exec_cycles_warp = cpw_c.max(cpw_m) + sync_cycles;
    let n_blocks = (i.n_b / i.n_sm).ceil();
    let n_warps = n_blocks * warps_per_block;
    let exec_cycles_sm = n_warps * exec_cycles_warp;
    // Bytes / (GB/s) is nanoseconds; / 1000 gives microseconds.
    let transfer_us = match i.comu_bw_gbs {
        Some(bw) if i.comu_bytes > 0.0 => i.comu_bytes / bw / 1000.0,
        _ => 0.0,
    };

    Ok(WuResult {
        mem_cycles_global,
        mem_cycles_shared,
        mem_cycles_local,
        mem_cycles,
        max_b_w,
        max_b_r,
        smem_per_block_bytes,
        max_b_s,
        blocks_active,
        block_limiter,
        warps_active,
        rwp_c,
        rwp_m,
        rwp_m_bound,
        sync_cycles,
        cpw_c,
        cpw_m,
        dominant,
        exec_cycles_warp,
        n_blocks,
        n_warps,
        exec_cycles_sm,
        transfer_us,
    })
}

impl WuResult {
    /// The common prediction form. `gpu_us` is `exec_cycles_sm` converted by the caller's clock
    /// (eq 21); the transfer time is added (eq 22).
    pub fn to_prediction(&self, device: &str, gpu_us: f64) -> Prediction {
        let mut p = Prediction::new(ModelId::Wu, device, gpu_us + self.transfer_us);
        p.cycles = Some(self.exec_cycles_sm);
        if let Ok(serde_json::Value::Object(map)) = serde_json::to_value(self) {
            p.breakdown = map;
        }
        p.with("gpu_us", gpu_us)
    }
}

/// The estimated speedup of a predicted time over a single-thread CPU time (wu2019 section 5).
pub fn speedup(cpu_time_us: f64, predicted_us: f64) -> Result<f64> {
    crate::error::positive("cpu_time_us", cpu_time_us)?;
    if !(predicted_us.is_finite() && predicted_us > 0.0) {
        return Err(Error::invalid(
            "cpu_time_us",
            format!("the predicted time is {predicted_us} us, so no speedup can be computed"),
        ));
    }
    Ok(cpu_time_us / predicted_us)
}

/// One point of the block-size curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockPoint {
    pub threads_per_block: u32,
    /// The model's result, or why this block size cannot run.
    pub result: std::result::Result<WuResult, String>,
}

/// Evaluates the model for every multiple of the warp size up to `max_threads_per_block`
/// (SPEC.md section 3); infeasible sizes stay in the curve with their reason.
pub fn sweep_block_sizes(i: &WuInputs, max_threads_per_block: u32) -> Result<Vec<BlockPoint>> {
    i.validate()?;
    let step = i.warp_size as u32;
    if max_threads_per_block < step {
        return Err(Error::invalid(
            "max_threads_per_block",
            format!("must be at least the warp size {step}, got {max_threads_per_block}"),
        ));
    }
    let mut points = Vec::new();
    let mut t = step;
    while t <= max_threads_per_block {
        let inputs = WuInputs {
            threads_per_block: f64::from(t),
            ..*i
        };
        let result = match predict(&inputs) {
            Ok(r) => Ok(r),
            Err(Error::Infeasible(why)) => Err(why),
            Err(e) => return Err(e),
        };
        points.push(BlockPoint {
            threads_per_block: t,
            result,
        });
        t += step;
    }
    Ok(points)
}

/// The feasible point with the fewest cycles (the smallest block on ties).
pub fn best_block(points: &[BlockPoint]) -> Option<(u32, WuResult)> {
    points
        .iter()
        .filter_map(|p| p.result.as_ref().ok().map(|r| (p.threads_per_block, *r)))
        .fold(None, |best: Option<(u32, WuResult)>, (t, r)| match best {
            Some((_, b)) if b.exec_cycles_sm <= r.exec_cycles_sm => best,
            _ => Some((t, r)),
        })
}

/// Applies calibrated parameters (`analytical::PARAMS`) to wu2019's inputs; the scaled launch
/// overhead is added to the time.
pub fn apply_params(i: &mut WuInputs, q: &[f64]) {
    i.mem_l_global *= q[0];
    i.departure_delay *= q[1];
    i.comp_cycles *= q[2];
}

/// wu2019's model in the registry. Its time is the SM's cycles at the clock plus the CPU-GPU
/// transfer (eq 21, 22).
pub struct Wu;

impl Wu {
    fn run(&self, inputs: &Inputs, params: Option<&[f64]>) -> Result<(WuInputs, WuResult)> {
        let Inputs::Wu(i) = inputs else {
            return Err(self.wrong_inputs(inputs));
        };
        let mut i = *i;
        if let Some(q) = params {
            apply_params(&mut i, q);
        }
        let r = predict(&i)?;
        Ok((i, r))
    }
}

impl Model for Wu {
    fn id(&self) -> ModelId {
        ModelId::Wu
    }
    fn summary(&self) -> &'static str {
        "Wu et al. 2019: MWP-CWP with registers, shared memory, warp schedulers and CPU-GPU transfers"
    }
    fn takes(&self) -> &'static str {
        "an analytical inputs file, profiler counters or a PTX launch"
    }
    fn params(&self) -> &'static [ParamSpec] {
        analytical::PARAMS
    }
    fn inputs(
        &self,
        source: &Source<'_>,
        device: Option<&Device>,
    ) -> Result<(Inputs, Vec<String>)> {
        match source {
            Source::File { text, origin } => {
                let r = WuInputs::from_toml(text, origin, device)?;
                let mut notes = r.notes;
                notes.extend(analytical::clock_note(
                    device,
                    r.inputs.freq_mhz,
                    "freq_mhz",
                ));
                Ok((Inputs::Wu(r.inputs), notes))
            }
            Source::Counters(c) => Ok((Inputs::Wu(c.wu), Vec::new())),
            Source::Ptx(f) => {
                let d = analytical::need_device(device, "wu from PTX")?;
                let spills = f.report.as_ref().map(|r| {
                    (
                        r.spill_store_bytes.unwrap_or(0),
                        r.spill_load_bytes.unwrap_or(0),
                    )
                });
                let (i, notes) = from_trace::wu(d, &f.mix, &f.launch, &f.latencies.values, spills);
                Ok((Inputs::Wu(i), notes))
            }
            _ => Err(self.cannot_read(source)),
        }
    }
    fn predict(
        &self,
        device: Option<&Device>,
        inputs: &Inputs,
        params: Option<&[f64]>,
    ) -> Result<Prediction> {
        let (i, r) = self.run(inputs, params)?;
        let gpu_us = analytical::cycles_to_us(r.exec_cycles_sm, device, i.freq_mhz)
            + analytical::launch_us(params, device);
        Ok(r.to_prediction(analytical::device_name(device), gpu_us))
    }
    fn time_us(
        &self,
        device: Option<&Device>,
        inputs: &Inputs,
        params: Option<&[f64]>,
    ) -> Result<f64> {
        let (i, r) = self.run(inputs, params)?;
        Ok(
            analytical::cycles_to_us(r.exec_cycles_sm, device, i.freq_mhz)
                + r.transfer_us
                + analytical::launch_us(params, device),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Kepler-like SM: 4 schedulers, 16 blocks, 64 warps, 64K registers, 48 KiB shared memory
    /// in 256-byte units; 13 SMs at 706 MHz (K20c of Table 2). A memory-light kernel.
    fn base() -> WuInputs {
        WuInputs {
            comp_cycles: 2000.0,
            mem_insts_global: 2.0,
            mem_insts_shared: 0.0,
            mem_insts_local: 0.0,
            n_conf: 1.0,
            sync_insts: 0.0,
            mem_l_global: 400.0,
            mem_l_shared: 40.0,
            departure_delay: 20.0,
            threads_per_block: 256.0,
            warp_size: 32.0,
            n_ws: 4.0,
            max_b: 16.0,
            max_w: 64.0,
            max_r: 65536.0,
            reg_per_thread: 32.0,
            max_smem_bytes: 49152.0,
            smem_used_bytes: 0.0,
            smem_unit_bytes: 256.0,
            n_b: 130.0,
            n_sm: 13.0,
            freq_mhz: 706.0,
            comu_bytes: 0.0,
            comu_bw_gbs: None,
            max_threads_per_block: None,
        }
    }

    #[test]
    fn compute_bound_no_shared_memory() {
        // Mem = 400 * 2 = 800. Warps/block = 256 / 32 = 8.
        // Max_B_W = 64 * 32 / 256 = 8; Max_B_R = 65536 / (256 * 32) = 8; SMem_used = 0: no limit.
        // Blocks_active = min(16, 8, 8, inf) = 8 (warps first), Warps_active = 64.
        // RWP_C = min(8, 4) = 4; RWP_M = min(400 / 20 = 20, 64) = 20.
        // CPW_C = 2000 / 4 = 500 > CPW_M = 800 / 20 = 40 -> compute; Sync = 0.
        // N_blocks = ceil(130 / 13) = 10, N_warps = 80, cycles = 80 * 500 = 40000.
        let r = predict(&base()).unwrap();
        assert_eq!(r.mem_cycles, 800.0);
        assert_eq!(r.max_b_w, 8.0);
        assert_eq!(r.max_b_r, 8.0);
        assert!(r.max_b_s.is_infinite());
        assert_eq!(r.smem_per_block_bytes, 0.0);
        assert_eq!(r.blocks_active, 8.0);
        assert_eq!(r.block_limiter, BlockLimiter::Warps);
        assert_eq!(r.warps_active, 64.0);
        assert_eq!(r.rwp_c, 4.0);
        assert_eq!(r.rwp_m, 20.0);
        assert_eq!(r.rwp_m_bound, "latency");
        assert_eq!(r.cpw_c, 500.0);
        assert_eq!(r.cpw_m, 40.0);
        assert_eq!(r.dominant, "compute");
        assert_eq!(r.n_warps, 80.0);
        assert_eq!(r.exec_cycles_sm, 40_000.0);
        // 40000 cycles / 706 MHz = 56.657 us.
        let p = r.to_prediction("test", r.exec_cycles_sm / 706.0);
        assert!((p.time_us - 40_000.0 / 706.0).abs() < 1e-9);
    }

    #[test]
    fn memory_bound_limited_by_registers() {
        // 64 registers/thread: Max_B_R = 65536 / (256 * 64) = 4 < Max_B_W = 8 -> registers.
        // Warps_active = 4 * 8 = 32; Mem = 400 * 40 = 16000 with 40 global accesses;
        // RWP_M = min(20, 32) = 20; CPW_M = 16000 / 20 = 800 > CPW_C = 500 -> memory.
        // cycles = 80 * 800 = 64000.
        let i = WuInputs {
            reg_per_thread: 64.0,
            mem_insts_global: 40.0,
            ..base()
        };
        let r = predict(&i).unwrap();
        assert_eq!(r.blocks_active, 4.0);
        assert_eq!(r.block_limiter, BlockLimiter::Registers);
        assert_eq!(r.warps_active, 32.0);
        assert_eq!(r.cpw_m, 800.0);
        assert_eq!(r.dominant, "memory");
        assert_eq!(r.exec_cycles_sm, 64_000.0);
    }

    #[test]
    fn limited_by_shared_memory_with_units() {
        // SMem_used = 10000 B -> ceil(10000 / 256) = 40 units = 10240 B per block;
        // Max_B_S = floor(49152 / 10240) = 4 -> shared memory limits (Max_B_W = Max_B_R = 8).
        // Warps_active = 32; with Mem_L_global / Delta = 400 / 10 = 40 > 32 RWP_M = 32.
        // Mem = 400 * 40 = 16000; CPW_M = 16000 / 32 = 500 = CPW_C 500 -> "memory" (not >).
        // cycles = 80 * 500 = 40000.
        let i = WuInputs {
            smem_used_bytes: 10_000.0,
            departure_delay: 10.0,
            mem_insts_global: 40.0,
            ..base()
        };
        let r = predict(&i).unwrap();
        assert_eq!(r.smem_per_block_bytes, 10_240.0);
        assert_eq!(r.max_b_s, 4.0);
        assert_eq!(r.block_limiter, BlockLimiter::SharedMemory);
        assert_eq!(r.rwp_m, 32.0);
        assert_eq!(r.rwp_m_bound, "active_warps");
        assert_eq!(r.dominant, "memory");
        assert_eq!(r.exec_cycles_sm, 40_000.0);
    }

    #[test]
    fn bank_conflicts_spills_and_sync() {
        // Shared: 10 accesses x 4-way conflict x 40 = 1600; local (spills): 40 x 32 x 3 = 3840;
        // global: 800. Mem = 6240; CPW_M = 6240 / 20 = 312; CPW_C = 500 (compute dominates).
        // Sync: Sync_block = 20 x (20 - 1) x 5 = 1900; per warp 1900 x 32 / 256 = 237.5.
        // Exec_cycles_warp = 500 + 237.5 = 737.5; cycles = 80 x 737.5 = 59000.
        // Transfer: 1 MB at 10 GB/s = 1e6 / 10 / 1000 = 100 us.
        let i = WuInputs {
            mem_insts_shared: 10.0,
            n_conf: 4.0,
            mem_insts_local: 3.0,
            sync_insts: 5.0,
            comu_bytes: 1.0e6,
            comu_bw_gbs: Some(10.0),
            ..base()
        };
        let r = predict(&i).unwrap();
        assert_eq!(r.mem_cycles_shared, 1600.0);
        assert_eq!(r.mem_cycles_local, 3840.0);
        assert_eq!(r.mem_cycles, 6240.0);
        assert_eq!(r.sync_cycles, 237.5);
        assert_eq!(r.exec_cycles_warp, 737.5);
        assert_eq!(r.exec_cycles_sm, 59_000.0);
        assert!((r.transfer_us - 100.0).abs() < 1e-9);
        let p = r.to_prediction("test", 59_000.0 / 706.0);
        assert!((p.time_us - (59_000.0 / 706.0 + 100.0)).abs() < 1e-9);
    }

    #[test]
    fn small_block_limits_schedulers_and_blocks() {
        // 64 threads: 2 warps/block -> RWP_C = min(2, 4) = 2; Max_B_W = 32, Max_B_R = 32,
        // Max_B = 16 limits -> Warps_active = 32. CPW_C = 2000 / 2 = 1000.
        // N_blocks = ceil(130 / 13) = 10 -> N_warps = 20; cycles = 20 x 1000 = 20000.
        let i = WuInputs {
            threads_per_block: 64.0,
            ..base()
        };
        let r = predict(&i).unwrap();
        assert_eq!(r.rwp_c, 2.0);
        assert_eq!(r.block_limiter, BlockLimiter::Blocks);
        assert_eq!(r.blocks_active, 16.0);
        assert_eq!(r.exec_cycles_sm, 20_000.0);
    }

    #[test]
    fn zero_blocks_is_infeasible() {
        // 256 threads x 300 registers = 76800 > 65536 -> Max_B_R = 0.
        let i = WuInputs {
            reg_per_thread: 300.0,
            ..base()
        };
        let e = predict(&i).unwrap_err();
        assert!(matches!(e, Error::Infeasible(_)));
        assert!(e.to_string().contains("registers"));
    }

    #[test]
    fn sweep_finds_the_minimum() {
        // Compute bound with N_b fixed at 130 blocks: cycles = ceil(130/13) x (T/32) x 2000 /
        // min(T/32, 4). For T = 32: 10 x 1 x 2000 = 20000; T = 64: 10 x 2 x 1000 = 20000;
        // T = 128: 10 x 4 x 500 = 20000; T = 160: 10 x 5 x 500 = 25000. Ties keep the smallest.
        let pts = sweep_block_sizes(&base(), 1024).unwrap();
        assert_eq!(pts.len(), 32);
        let (t, r) = best_block(&pts).unwrap();
        assert_eq!(t, 32);
        assert_eq!(r.exec_cycles_sm, 20_000.0);
        let at160 = pts[4].result.as_ref().unwrap();
        assert_eq!(at160.exec_cycles_sm, 25_000.0);
        // With 64 registers per thread, 1024 threads need 65536 registers: Max_B_R = 1, still
        // feasible; with 65 registers it is 0 and the point is kept as infeasible.
        let heavy = WuInputs {
            reg_per_thread: 65.0,
            ..base()
        };
        let pts = sweep_block_sizes(&heavy, 1024).unwrap();
        assert!(pts.last().unwrap().result.is_err());
    }

    #[test]
    fn speedup_over_cpu() {
        // 1000 us on the CPU, 40 us predicted -> 25x.
        assert_eq!(speedup(1000.0, 40.0).unwrap(), 25.0);
        assert!(speedup(-1.0, 40.0).is_err());
        assert!(speedup(1000.0, 0.0).is_err());
    }

    #[test]
    fn degenerate_inputs_name_the_field() {
        for (field, f) in [
            ("n_b", (|i: &mut WuInputs| i.n_b = 0.0) as fn(&mut WuInputs)),
            ("mem_l_global", |i| i.mem_l_global = 0.0),
            ("mem_insts_global", |i| i.mem_insts_global = -1.0),
            ("comp_cycles", |i| i.comp_cycles = f64::NAN),
            ("threads_per_block", |i| i.threads_per_block = 100.5),
            ("n_conf", |i| i.n_conf = 0.0),
        ] {
            let mut i = base();
            f(&mut i);
            let e = predict(&i).unwrap_err().to_string();
            assert!(e.contains(field), "{field}: {e}");
        }
    }
}
