//! Hong and Kim's original MWP-CWP model (S. Hong, H. Kim, "An analytical model for a GPU
//! architecture with memory-level and thread-level parallelism awareness", ISCA 2009), as stated in
//! `shared/HONG_KIM.md` (equations E1-E19): memory warp parallelism limited by latency and by
//! `MWP_peak_BW`, computation warp parallelism, the three cases of `Exec_cycles_app`, and the
//! synchronization cost.
//!
//! The faithful variant: no clamping of MWP below 1, no rounding of MWP or CWP, the
//! `Comp_cycles > Mem_cycles` clause of case 2 kept (HONG_KIM.md section 4 items 3, 8, 9). The two
//! documented alternatives are switches of the inputs (`SyncFactor`, `RepRounding`). A kernel
//! with no memory instruction takes the fallback of item 7 (`Comp_cycles x N x #Rep`), which is
//! ours, not the paper's. This module does not compute occupancy: `active_blocks_per_sm` is an
//! input.

use crate::device::Device;
use crate::model::analytical;
use crate::model::from_trace;
use crate::model::registry::{Inputs, Model, ModelId, ParamSpec, Source};
use serde::Serialize;

use crate::error::Result;
use crate::model::Prediction;
use crate::workload::analytical::{HongKimInputs, RepRounding, SyncFactor};

/// Which formula of E17 gave `Exec_cycles_app`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HongKimCase {
    /// Case 1: MWP = CWP = N, not enough warps to hide anything.
    NotEnoughWarps,
    /// Case 2: CWP >= MWP (or Comp_cycles > Mem_cycles), memory bound.
    MemoryBound,
    /// Case 3: MWP > CWP, compute bound.
    ComputeBound,
    /// No memory instruction: Comp_cycles x N x #Rep (our fallback, HONG_KIM.md section 4 item 7).
    NoMemory,
}

/// Every quantity of E1-E19, in SM cycles unless named otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HongKimResult {
    /// E1.
    pub n: f64,
    /// E2.
    pub mem_l_uncoal: f64,
    /// E3.
    pub mem_l_coal: f64,
    /// E4.
    pub weight_uncoal: f64,
    pub weight_coal: f64,
    /// E5.
    pub mem_l: f64,
    /// E6.
    pub departure_delay: f64,
    /// E7.
    pub mwp_without_bw_full: f64,
    /// E8.
    pub mwp_without_bw: f64,
    /// E9, GB/s.
    pub bw_per_warp_gbs: f64,
    /// E10.
    pub mwp_peak_bw: f64,
    /// E11.
    pub mwp: f64,
    /// E12.
    pub comp_cycles: f64,
    /// E13.
    pub mem_cycles: f64,
    /// E14.
    pub cwp_full: f64,
    pub cwp: f64,
    /// E15.
    pub rep: f64,
    /// E16 (0 without memory instructions).
    pub comp_p: f64,
    pub case: HongKimCase,
    /// E17.
    pub exec_cycles_app: f64,
    /// Warps per block that run in parallel (E18's NpWB, or MWP with `SyncFactor::Mwp`).
    pub sync_parallel_warps: f64,
    /// E18.
    pub synch_cost: f64,
    /// E18's total, the prediction.
    pub exec_cycles_with_synch: f64,
    /// The paper's diagnostic CPI (E19).
    pub cpi: f64,
}

/// Evaluates the model. Errors only when the inputs fail `HongKimInputs::validate`.
pub fn predict(i: &HongKimInputs) -> Result<HongKimResult> {
    i.validate()?;
    let warps_per_block = i.threads_per_block / i.warp_size;
    let n = i.active_blocks_per_sm * warps_per_block;

    let mem_insts = i.uncoal_mem_insts + i.coal_mem_insts;
    let mem_l_uncoal = i.mem_ld + (i.uncoal_per_mw - 1.0) * i.departure_del_uncoal;
    let mem_l_coal = i.mem_ld;
    let (weight_uncoal, weight_coal) = if mem_insts > 0.0 {
        (i.uncoal_mem_insts / mem_insts, i.coal_mem_insts / mem_insts)
    } else {
        // No memory access: weigh as coalesced so the MWP terms stay defined (unused by E17).
        (0.0, 1.0)
    };
    let mem_l = mem_l_uncoal * weight_uncoal + mem_l_coal * weight_coal;
    let departure_delay = i.departure_del_uncoal * i.uncoal_per_mw * weight_uncoal
        + i.departure_del_coal * weight_coal;

    let mwp_without_bw_full = mem_l / departure_delay;
    let mwp_without_bw = mwp_without_bw_full.min(n);
    let bw_per_warp_gbs = i.freq_ghz * i.load_bytes_per_warp / mem_l;
    let mwp_peak_bw = i.mem_bandwidth_gbs / (bw_per_warp_gbs * i.active_sms);
    let mwp = mwp_without_bw.min(mwp_peak_bw).min(n);

    let total_insts = i.comp_insts + mem_insts;
    let comp_cycles = i.issue_cycles * total_insts;
    let mem_cycles = mem_l_uncoal * i.uncoal_mem_insts + mem_l_coal * i.coal_mem_insts;
    let cwp_full = (mem_cycles + comp_cycles) / comp_cycles;
    let cwp = cwp_full.min(n);

    let rep_ratio = i.blocks / (i.active_blocks_per_sm * i.active_sms);
    let rep = match i.rep_rounding {
        RepRounding::None => rep_ratio,
        RepRounding::Ceil => rep_ratio.ceil(),
    };
    let comp_p = if mem_insts > 0.0 {
        comp_cycles / mem_insts
    } else {
        0.0
    };

    // E17, the cases tested in the paper's order; MWP == N is exact because min() returns N.
    let (case, exec_cycles_app) = if mem_insts == 0.0 {
        (HongKimCase::NoMemory, comp_cycles * n * rep)
    } else if mwp == n && cwp == n {
        (
            HongKimCase::NotEnoughWarps,
            (mem_cycles + comp_cycles + comp_p * (mwp - 1.0)) * rep,
        )
    } else if cwp >= mwp || comp_cycles > mem_cycles {
        (
            HongKimCase::MemoryBound,
            (mem_cycles * n / mwp + comp_p * (mwp - 1.0)) * rep,
        )
    } else {
        (HongKimCase::ComputeBound, (mem_l + comp_cycles * n) * rep)
    };

    let sync_parallel_warps = match i.sync_factor {
        SyncFactor::Npwb => mwp.min(warps_per_block),
        SyncFactor::Mwp => mwp,
    };
    let synch_cost = departure_delay
        * (sync_parallel_warps - 1.0)
        * i.synch_insts
        * i.active_blocks_per_sm
        * rep;
    let exec_cycles_with_synch = exec_cycles_app + synch_cost;
    let cpi = exec_cycles_app / (total_insts * warps_per_block * (i.blocks / i.active_sms));

    Ok(HongKimResult {
        n,
        mem_l_uncoal,
        mem_l_coal,
        weight_uncoal,
        weight_coal,
        mem_l,
        departure_delay,
        mwp_without_bw_full,
        mwp_without_bw,
        bw_per_warp_gbs,
        mwp_peak_bw,
        mwp,
        comp_cycles,
        mem_cycles,
        cwp_full,
        cwp,
        rep,
        comp_p,
        case,
        exec_cycles_app,
        sync_parallel_warps,
        synch_cost,
        exec_cycles_with_synch,
        cpi,
    })
}

impl HongKimResult {
    /// The common prediction form; `time_us` comes from the caller's clock conversion.
    pub fn to_prediction(&self, device: &str, time_us: f64) -> Prediction {
        let mut p = Prediction::new(ModelId::HongKim, device, time_us);
        p.cycles = Some(self.exec_cycles_with_synch);
        if let Ok(serde_json::Value::Object(map)) = serde_json::to_value(self) {
            p.breakdown = map;
        }
        if self.mwp < 1.0 {
            p.notes.push(format!(
                "MWP = {:.3} is below 1 (bandwidth-limited); the paper does not clamp it, so (MWP - 1) is negative",
                self.mwp
            ));
        }
        if self.case == HongKimCase::NoMemory {
            p.notes.push(
                "no memory instruction: Exec_cycles_app = Comp_cycles x N x #Rep (our fallback; the paper leaves this case undefined)"
                    .into(),
            );
        }
        p
    }
}

/// Applies calibrated parameters (`analytical::PARAMS`; `q[1]` scales both departure delays);
/// the scaled launch overhead is added to the time.
pub fn apply_params(i: &mut HongKimInputs, q: &[f64]) {
    i.mem_ld *= q[0];
    i.departure_del_coal *= q[1];
    i.departure_del_uncoal *= q[1];
    i.issue_cycles *= q[2];
}

/// Hong and Kim's model in the registry.
pub struct HongKim;

impl HongKim {
    fn run(
        &self,
        inputs: &Inputs,
        params: Option<&[f64]>,
    ) -> Result<(HongKimInputs, HongKimResult)> {
        let Inputs::HongKim(i) = inputs else {
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

impl Model for HongKim {
    fn id(&self) -> ModelId {
        ModelId::HongKim
    }
    fn summary(&self) -> &'static str {
        "Hong and Kim, ISCA 2009: MWP/CWP with its three cases and synchronization cost"
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
                let r = HongKimInputs::from_toml(text, origin, device)?;
                let mut notes = r.notes;
                notes.extend(analytical::clock_note(
                    device,
                    r.inputs.freq_ghz * 1000.0,
                    "freq_ghz",
                ));
                Ok((Inputs::HongKim(r.inputs), notes))
            }
            Source::Counters(c) => Ok((Inputs::HongKim(c.hong_kim), Vec::new())),
            Source::Ptx(f) => {
                let d = analytical::need_device(device, "hong-kim from PTX")?;
                let (i, notes) = from_trace::hong_kim(d, &f.mix, &f.launch, &f.latencies.values);
                Ok((Inputs::HongKim(i), notes))
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
        let us = analytical::cycles_to_us(r.exec_cycles_with_synch, device, i.freq_ghz * 1000.0)
            + analytical::launch_us(params, device);
        Ok(r.to_prediction(analytical::device_name(device), us))
    }
    fn time_us(
        &self,
        device: Option<&Device>,
        inputs: &Inputs,
        params: Option<&[f64]>,
    ) -> Result<f64> {
        let (i, r) = self.run(inputs, params)?;
        Ok(
            analytical::cycles_to_us(r.exec_cycles_with_synch, device, i.freq_ghz * 1000.0)
                + analytical::launch_us(params, device),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// HONG_KIM.md section 3.1: the paper's worked example (FX5600-like, 1 GHz, 80 GB/s).
    pub(crate) fn worked_example() -> HongKimInputs {
        HongKimInputs {
            warp_size: 32.0,
            issue_cycles: 4.0,
            freq_ghz: 1.0,
            mem_bandwidth_gbs: 80.0,
            mem_ld: 420.0,
            departure_del_uncoal: 10.0,
            departure_del_coal: 4.0,
            threads_per_block: 128.0,
            blocks: 80.0,
            active_sms: 16.0,
            active_blocks_per_sm: 5.0,
            comp_insts: 27.0,
            uncoal_mem_insts: 6.0,
            coal_mem_insts: 0.0,
            synch_insts: 6.0,
            uncoal_per_mw: 32.0,
            load_bytes_per_warp: 128.0,
            sync_factor: SyncFactor::Npwb,
            rep_rounding: RepRounding::None,
        }
    }

    /// HONG_KIM.md section 3.2's case-3 vector: FX5600 clock and bandwidth, one coalesced access.
    fn case3_inputs(comp_insts: f64) -> HongKimInputs {
        HongKimInputs {
            freq_ghz: 1.35,
            mem_bandwidth_gbs: 76.8,
            uncoal_mem_insts: 0.0,
            coal_mem_insts: 1.0,
            comp_insts,
            blocks: 160.0,
            synch_insts: 0.0,
            ..worked_example()
        }
    }

    #[test]
    fn paper_worked_example() {
        let r = predict(&worked_example()).unwrap();
        // N = 5 * 128 / 32 = 20; Mem_L = 420 + 31 * 10 = 730; Departure_delay = 10 * 32 = 320.
        assert_eq!(r.n, 20.0);
        assert_eq!(r.mem_l, 730.0);
        assert_eq!(r.departure_delay, 320.0);
        // MWP = min(730 / 320 = 2.28125, 80 / (128 / 730 * 16) = 28.52, 20) = 2.28125.
        assert_eq!(r.mwp, 2.28125);
        assert!((r.mwp_peak_bw - 80.0 / (128.0 / 730.0 * 16.0)).abs() < 1e-9);
        assert!((r.mwp_peak_bw - 28.52).abs() < 0.01);
        // Comp = 4 * 33 = 132; Mem = 730 * 6 = 4380; CWP_full = 4512 / 132 = 34.18 -> CWP = 20.
        assert_eq!(r.comp_cycles, 132.0);
        assert_eq!(r.mem_cycles, 4380.0);
        assert_eq!(r.cwp, 20.0);
        assert_eq!(r.rep, 1.0);
        // Case 2: 4380 * 20 / 2.28125 + 132 / 6 * 1.28125 = 38400 + 28.1875 = 38428.1875.
        assert_eq!(r.case, HongKimCase::MemoryBound);
        assert!((r.exec_cycles_app - 38_428.187_5).abs() < 1e-6);
        // Synch: 320 * (min(2.28125, 4) - 1) * 6 * 5 * 1 = 12300; total 50728.19.
        assert!((r.synch_cost - 12_300.0).abs() < 1e-6);
        assert!((r.exec_cycles_with_synch - 50_728.187_5).abs() < 1e-6);
        // The paper's own (MWP rounded to 2.28) total is about 50738: within 0.1 %.
        assert!((r.exec_cycles_with_synch - 50_738.0).abs() / 50_738.0 < 1e-3);
    }

    #[test]
    fn case1_not_enough_warps() {
        // One block of 32 threads, one active block, one active SM (min(16, 1 / 1)):
        // N = 1 -> MWP = CWP = 1 = N; Exec = (4380 + 132 + 22 * 0) * 1 = 4512.
        // Synch: NpWB = min(1, 1) = 1, so 320 * 0 * ... = 0.
        let i = HongKimInputs {
            threads_per_block: 32.0,
            blocks: 1.0,
            active_blocks_per_sm: 1.0,
            active_sms: 1.0,
            ..worked_example()
        };
        let r = predict(&i).unwrap();
        assert_eq!(r.case, HongKimCase::NotEnoughWarps);
        assert_eq!(r.exec_cycles_with_synch, 4512.0);
    }

    #[test]
    fn case3_compute_bound() {
        // N = 20; Mem_L = 420 (coalesced), Departure_delay = 4 -> latency bound 105;
        // BW_per_warp = 1.35 * 128 / 420 = 0.41143; MWP_peak_BW = 76.8 / (0.41143 * 16)
        // = 11.667 -> MWP = 11.667; Comp = 4 * 35 = 140, Mem = 420, CWP_full = 560 / 140 = 4;
        // #Rep = 160 / (5 * 16) = 2. CWP 4 < MWP and Comp 140 <= Mem 420 -> case 3:
        // (420 + 140 * 20) * 2 = 6440.
        let r = predict(&case3_inputs(34.0)).unwrap();
        assert!((r.mwp - 76.8 / (1.35 * 128.0 / 420.0 * 16.0)).abs() < 1e-12);
        assert!((r.mwp - 11.667).abs() < 1e-3);
        assert_eq!(r.cwp, 4.0);
        assert_eq!(r.rep, 2.0);
        assert_eq!(r.case, HongKimCase::ComputeBound);
        assert!((r.exec_cycles_with_synch - 6440.0).abs() < 1e-9);
    }

    #[test]
    fn compute_heavy_takes_case2_clause() {
        // Comp = 4 * 1001 = 4004 > Mem = 420 -> case 2 via the Comp > Mem clause:
        // (420 * 20 / 11.667 + 4004 / 1 * (11.667 - 1)) * 2 = (720 + 42709.33) * 2 = 86858.67.
        let r = predict(&case3_inputs(1000.0)).unwrap();
        assert_eq!(r.case, HongKimCase::MemoryBound);
        let mwp = 76.8 / (1.35 * 128.0 / 420.0 * 16.0);
        let expected = (420.0 * 20.0 / mwp + 4004.0 * (mwp - 1.0)) * 2.0;
        assert!((r.exec_cycles_with_synch - expected).abs() < 1e-6);
        assert!((r.exec_cycles_with_synch - 86_858.67).abs() < 0.01);
    }

    #[test]
    fn sync_factor_variants_differ_when_mwp_exceeds_block_warps() {
        // Case-3 settings with 2 syncs: MWP = 11.667 > 4 warps per block.
        // NpWB: 4 * (4 - 1) * 2 * 5 * 2 = 240 cycles; MWP form: 4 * 10.667 * 2 * 5 * 2 = 853.33.
        let mut i = case3_inputs(34.0);
        i.synch_insts = 2.0;
        let npwb = predict(&i).unwrap();
        assert!((npwb.synch_cost - 240.0).abs() < 1e-9);
        i.sync_factor = SyncFactor::Mwp;
        let mwp = predict(&i).unwrap();
        let m = 76.8 / (1.35 * 128.0 / 420.0 * 16.0);
        assert!((mwp.synch_cost - 4.0 * (m - 1.0) * 2.0 * 5.0 * 2.0).abs() < 1e-9);
    }

    #[test]
    fn rep_rounding_ceil() {
        // 90 blocks / (5 * 16) = 1.125 as published; 2 with whole waves.
        let mut i = worked_example();
        i.blocks = 90.0;
        assert_eq!(predict(&i).unwrap().rep, 1.125);
        i.rep_rounding = RepRounding::Ceil;
        assert_eq!(predict(&i).unwrap().rep, 2.0);
    }

    #[test]
    fn no_memory_fallback() {
        // 27 compute instructions only: Comp = 4 * 27 = 108; Exec = 108 * 20 * 1 = 2160.
        let mut i = worked_example();
        i.uncoal_mem_insts = 0.0;
        i.synch_insts = 0.0;
        let r = predict(&i).unwrap();
        assert_eq!(r.case, HongKimCase::NoMemory);
        assert_eq!(r.exec_cycles_with_synch, 2160.0);
    }

    #[test]
    fn degenerate_inputs_name_the_field() {
        let mut i = worked_example();
        i.blocks = 0.0;
        assert!(predict(&i).unwrap_err().to_string().contains("blocks"));
        let mut i = worked_example();
        i.mem_ld = 0.0;
        assert!(predict(&i).unwrap_err().to_string().contains("mem_ld"));
        let mut i = worked_example();
        i.comp_insts = -3.0;
        assert!(predict(&i).unwrap_err().to_string().contains("comp_insts"));
        let mut i = worked_example();
        i.freq_ghz = f64::NAN;
        assert!(predict(&i).unwrap_err().to_string().contains("freq_ghz"));
    }
}
