//! The MWP-CWP model as adapted by parra2016 (thesis chapter 4, eq 4.1-4.26): Hong and Kim's
//! memory/computation warp parallelism (ISCA 2009) in the GPUPerf form of Sim, Dasgupta, Kim and
//! Vuduc (PPoPP 2012), with a two-level cache AMAT (eq 4.24).
//!
//! `predict` is a pure function of validated `MwpCwpInputs` returning every intermediate. Eq 4.24
//! reads its latencies as printed (penalties) or as load-to-use times (`AmatLatencies`). It does
//! not derive its inputs (ILP from a CFG, Δ from micro-benchmarks: see `model::microbench`) and it
//! does not convert cycles to time; the caller does that with the device clock. The serial term
//! `W_serial` (eq 4.7) is an input, 0 for the thesis' stencil.

use crate::device::Device;
use crate::model::analytical;
use crate::model::from_trace;
use crate::model::registry::{Inputs, Model, ModelId, ParamSpec, Source};
use serde::Serialize;

use crate::error::Result;
use crate::model::Prediction;
use crate::workload::analytical::{AmatLatencies, MwpCwpInputs};

/// Every quantity of eq 4.1-4.22, in core cycles unless named otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MwpCwpResult {
    /// eq 4.6.
    pub itilp_max: f64,
    /// eq 4.4.
    pub itilp: f64,
    /// eq 4.3.
    pub w_parallel: f64,
    pub w_serial: f64,
    /// eq 4.2.
    pub t_comp: f64,
    /// eq 4.10.
    pub avg_dram_lat: f64,
    /// eq 4.24.
    pub amat: f64,
    /// eq 4.20, bytes.
    pub transaction_size_bytes: f64,
    /// eq 4.19, GB/s.
    pub bw_per_warp_gbs: f64,
    /// eq 4.18.
    pub mwp_peak_bw: f64,
    /// `avg_DRAM_lat / Δ`, the latency bound inside eq 4.17.
    pub mwp_without_bw: f64,
    /// eq 4.17.
    pub mwp: f64,
    /// eq 4.15.
    pub comp_cycles: f64,
    /// eq 4.16.
    pub mem_cycles: f64,
    /// eq 4.14.
    pub cwp_full: f64,
    /// eq 4.13.
    pub cwp: f64,
    /// eq 4.12.
    pub mwp_cp: f64,
    /// eq 4.11.
    pub itmlp: f64,
    /// eq 4.8.
    pub t_mem: f64,
    /// ζ of eq 4.22.
    pub zeta: f64,
    /// eq 4.22.
    pub f_overlap: f64,
    /// eq 4.21.
    pub t_overlap: f64,
    /// eq 4.1.
    pub t_exec: f64,
}

/// Evaluates the model. Errors only when the inputs fail `MwpCwpInputs::validate`.
pub fn predict(i: &MwpCwpInputs) -> Result<MwpCwpResult> {
    i.validate()?;
    let itilp_max = i.avg_inst_lat / (i.warp_size / i.simd_width);
    let itilp = (i.ilp * i.n).min(itilp_max);
    let w_parallel = (i.inst * i.total_warps / i.active_sms) * (i.avg_inst_lat / itilp);
    let t_comp = w_parallel + i.w_serial;

    let avg_dram_lat = i.dram_lat + (i.avg_trans_warp - 1.0) * i.departure_delay;
    let amat = match i.amat_latencies {
        AmatLatencies::Penalties => {
            avg_dram_lat * i.miss_ratio_l2 + i.hit_lat_l2 * i.miss_ratio_l1 + i.hit_lat_l1
        }
        // Eq 4.24 with the penalties avg_DRAM_lat - hit_lat_l2 and hit_lat_l2 - hit_lat_l1,
        // rearranged: each level's load-to-use latency times the fraction it serves.
        AmatLatencies::LoadToUse => {
            avg_dram_lat * i.miss_ratio_l2
                + i.hit_lat_l2 * (i.miss_ratio_l1 - i.miss_ratio_l2)
                + i.hit_lat_l1 * (1.0 - i.miss_ratio_l1)
        }
    };

    let transaction_size_bytes = i.data_size_bytes * i.warp_size;
    let bw_per_warp_gbs = i.freq_ghz * transaction_size_bytes / avg_dram_lat;
    let mwp_peak_bw = i.mem_peak_bandwidth_gbs / (bw_per_warp_gbs * i.active_sms);
    let mwp_without_bw = avg_dram_lat / i.departure_delay;
    let mwp = mwp_without_bw.min(mwp_peak_bw).min(i.n);

    let comp_cycles = i.inst * i.avg_inst_lat / itilp;
    let mem_cycles = i.mem_inst * amat / i.mlp;
    let cwp_full = (mem_cycles + comp_cycles) / comp_cycles;
    let cwp = cwp_full.min(i.n);
    let mwp_cp = (cwp - 1.0).max(1.0).min(mwp);
    let itmlp = (i.mlp * mwp_cp).min(mwp_peak_bw);
    let t_mem = (i.mem_inst * i.total_warps) / (i.active_sms * itmlp) * amat;

    let zeta = if cwp <= mwp { 1.0 } else { 0.0 };
    let f_overlap = (i.n - zeta) / i.n;
    let t_overlap = (t_comp * f_overlap).min(t_mem);
    let t_exec = t_comp + t_mem - t_overlap;

    Ok(MwpCwpResult {
        itilp_max,
        itilp,
        w_parallel,
        w_serial: i.w_serial,
        t_comp,
        avg_dram_lat,
        amat,
        transaction_size_bytes,
        bw_per_warp_gbs,
        mwp_peak_bw,
        mwp_without_bw,
        mwp,
        comp_cycles,
        mem_cycles,
        cwp_full,
        cwp,
        mwp_cp,
        itmlp,
        t_mem,
        zeta,
        f_overlap,
        t_overlap,
        t_exec,
    })
}

impl MwpCwpResult {
    /// The common prediction form; `time_us` comes from the caller's clock conversion.
    pub fn to_prediction(&self, device: &str, time_us: f64) -> Prediction {
        let mut p = Prediction::new(ModelId::MwpCwp, device, time_us);
        p.cycles = Some(self.t_exec);
        if let Ok(serde_json::Value::Object(map)) = serde_json::to_value(self) {
            p.breakdown = map;
        }
        let bound = if self.t_mem > self.t_comp {
            "memory"
        } else {
            "compute"
        };
        p.with("bound", bound)
    }
}

/// Applies calibrated parameters (DRAM latency, departure delay and arithmetic latency scales;
/// `analytical::PARAMS`) to the inputs; the scaled launch overhead is added to the time.
pub fn apply_params(i: &mut MwpCwpInputs, q: &[f64]) {
    i.dram_lat *= q[0];
    i.departure_delay *= q[1];
    i.avg_inst_lat *= q[2];
}

/// MWP-CWP in the model registry.
pub struct MwpCwp;

impl Model for MwpCwp {
    fn id(&self) -> ModelId {
        ModelId::MwpCwp
    }
    fn summary(&self) -> &'static str {
        "Hong and Kim 2009 / Sim et al. 2012 as adapted by Parra Prada 2016: memory and computation warp parallelism"
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
                let r = MwpCwpInputs::from_toml(text, origin, device)?;
                let mut notes = r.notes;
                notes.extend(analytical::clock_note(
                    device,
                    r.inputs.freq_ghz * 1000.0,
                    "freq_ghz",
                ));
                Ok((Inputs::MwpCwp(r.inputs), notes))
            }
            Source::Counters(c) => Ok((Inputs::MwpCwp(c.mwp_cwp), Vec::new())),
            Source::Ptx(f) => {
                let d = analytical::need_device(device, "mwp-cwp from PTX")?;
                let (i, notes) = from_trace::mwp_cwp(d, &f.mix, &f.launch, &f.latencies.values);
                Ok((Inputs::MwpCwp(i), notes))
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
        let Inputs::MwpCwp(i) = inputs else {
            return Err(self.wrong_inputs(inputs));
        };
        let mut i = *i;
        if let Some(q) = params {
            apply_params(&mut i, q);
        }
        let r = predict(&i)?;
        let us = analytical::cycles_to_us(r.t_exec, device, i.freq_ghz * 1000.0)
            + analytical::launch_us(params, device);
        Ok(r.to_prediction(analytical::device_name(device), us))
    }
    fn time_us(
        &self,
        device: Option<&Device>,
        inputs: &Inputs,
        params: Option<&[f64]>,
    ) -> Result<f64> {
        let Inputs::MwpCwp(i) = inputs else {
            return Err(self.wrong_inputs(inputs));
        };
        let mut i = *i;
        if let Some(q) = params {
            apply_params(&mut i, q);
        }
        let r = predict(&i)?;
        Ok(
            analytical::cycles_to_us(r.t_exec, device, i.freq_ghz * 1000.0)
                + analytical::launch_us(params, device),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// parra2016 eq 4.32-4.51 (second-order stencil, 8 warps per SM, Tesla K40).
    pub(crate) fn worked_example() -> MwpCwpInputs {
        MwpCwpInputs {
            inst: 75.0,
            mem_inst: 11.0,
            total_warps: 4096.0,
            active_sms: 15.0,
            avg_inst_lat: 201.0,
            ilp: 5.0,
            n: 8.0,
            warp_size: 32.0,
            simd_width: 192.0,
            dram_lat: 399.0,
            avg_trans_warp: 21.0,
            departure_delay: 3.0,
            miss_ratio_l2: 1.0,
            hit_lat_l2: 214.0,
            miss_ratio_l1: 0.05,
            hit_lat_l1: 29.0,
            freq_ghz: 1.11,
            data_size_bytes: 4.0,
            mem_peak_bandwidth_gbs: 288.384,
            mlp: 17.0,
            w_serial: 0.0,
            amat_latencies: AmatLatencies::Penalties,
        }
    }

    #[test]
    fn inputs_file_says_which_latencies_it_gives() {
        // The thesis' example file (penalties, the default) and the same file with load-to-use
        // latencies and an L1 that every access misses: AMAT = 459 * 1 + 214 * 0 + 29 * 0 = 459.
        let text = include_str!("../../../../data/analytical/parra2016-stencil-order2-8warps.toml");
        let r = MwpCwpInputs::from_toml(text, "t.toml", None).unwrap();
        assert_eq!(r.inputs.amat_latencies, AmatLatencies::Penalties);
        let text = text.replace("miss_ratio_l1 = 0.05", "miss_ratio_l1 = 1.0")
            + "\namat_latencies = \"load-to-use\"\n";
        let r = MwpCwpInputs::from_toml(&text, "t.toml", None).unwrap();
        assert_eq!(r.inputs.amat_latencies, AmatLatencies::LoadToUse);
        assert_eq!(predict(&r.inputs).unwrap().amat, 459.0);
    }

    #[test]
    fn load_to_use_latencies_count_each_level_once() {
        // Load-to-use latencies of the counters path on Kepler (DRAM 331, L2 188, L1 32 cycles),
        // L1 bypassed (m1 = 1), one coalesced transaction per request (avg_DRAM_lat = 331).
        // m2 = 1: every access is served by DRAM, AMAT = 331 (as printed the sum would be
        // 331 + 188 + 32 = 551). m2 = 0.25: 331 * 0.25 + 188 * 0.75 + 32 * 0 = 82.75 + 141
        // = 223.75.
        let mut i = worked_example();
        i.amat_latencies = AmatLatencies::LoadToUse;
        i.avg_trans_warp = 1.0;
        i.dram_lat = 331.0;
        i.hit_lat_l2 = 188.0;
        i.hit_lat_l1 = 32.0;
        i.miss_ratio_l1 = 1.0;
        i.miss_ratio_l2 = 1.0;
        let r = predict(&i).unwrap();
        assert_eq!(r.amat, 331.0);
        // MWP and BW_per_warp keep the whole round trip: 331 / 3 and 1.11 * 128 / 331.
        assert_eq!(r.mwp_without_bw, 331.0 / 3.0);
        assert_eq!(r.bw_per_warp_gbs, 1.11 * 128.0 / 331.0);
        i.miss_ratio_l2 = 0.25;
        assert!((predict(&i).unwrap().amat - 223.75).abs() < 1e-9);
        // The thesis' example has m2 = 1 and m1 = 0.05: read as fractions of all accesses, DRAM
        // would serve more accesses than miss L1, so that reading is refused, naming the field.
        let mut i = worked_example();
        i.amat_latencies = AmatLatencies::LoadToUse;
        let e = predict(&i).unwrap_err().to_string();
        assert!(e.contains("miss_ratio_l2"), "{e}");
    }

    #[test]
    fn thesis_worked_example() {
        let r = predict(&worked_example()).unwrap();
        // eq 4.32 (corrected as SPEC.md says): 201 / (32 / 192) = 1206.
        assert!((r.itilp_max - 1206.0).abs() < 1e-9);
        // eq 4.34: min(5 * 8, 1206) = 40.
        assert_eq!(r.itilp, 40.0);
        // eq 4.35: 75 * 4096 / 15 * 201 / 40 = 102912.
        assert!((r.t_comp - 102_912.0).abs() < 1e-6);
        // eq 4.36: 399 + 20 * 3 = 459; eq 4.37: 459 * 1 + 214 * 0.05 + 29 = 498.7.
        assert_eq!(r.avg_dram_lat, 459.0);
        assert!((r.amat - 498.7).abs() < 0.01);
        // BW_per_warp = 1.11 * 128 / 459 = 0.30954 GB/s (SPEC.md's correction of eq 4.39).
        assert!((r.bw_per_warp_gbs - 1.11 * 128.0 / 459.0).abs() < 1e-12);
        assert!((r.bw_per_warp_gbs - 0.3095).abs() < 1e-4);
        // eq 4.41: min(459 / 3, 288.384 / (0.30954 * 15) = 62.11, 8) = 8.
        assert_eq!(r.mwp, 8.0);
        // eq 4.42, 4.43: 75 * 201 / 40 = 376.875; 11 * 498.7 / 17 = 322.688.
        assert!((r.comp_cycles - 376.875).abs() < 1e-9);
        assert!((r.mem_cycles - 11.0 * 498.7 / 17.0).abs() < 1e-6);
        // CWP_full = (322.688 + 376.875) / 376.875 = 1.856 (SPEC.md's correction of eq 4.44).
        assert!((r.cwp_full - 1.856).abs() < 1e-3);
        // eq 4.46, 4.47: MWP_cp = min(max(1, 0.856), 8) = 1; ITMLP = min(17 * 1, 62.1) = 17.
        assert_eq!(r.mwp_cp, 1.0);
        assert_eq!(r.itmlp, 17.0);
        // eq 4.48: 11 * 4096 / (15 * 17) * 498.7 = 88115.40.
        assert!((r.t_mem - 88_115.40).abs() < 0.01);
        // eq 4.49, 4.50: zeta = 1, F = 7/8, T_overlap = min(90048, 88115.40) = 88115.40.
        assert_eq!(r.f_overlap, 0.875);
        assert!((r.t_overlap - 88_115.40).abs() < 0.01);
        // eq 4.51.
        assert!((r.t_exec - 102_912.0).abs() < 0.01);
    }

    #[test]
    fn serial_work_and_memory_bound_case() {
        // Worked example with W_serial = 1000 and mem_inst = 110 (ten times the memory):
        // mem_cycles = 110 * 498.7 / 17 = 3226.88; CWP_full = (3226.88 + 376.875) / 376.875
        // = 9.562 -> CWP = min(9.562, 8) = 8 <= MWP 8, so zeta = 1; MWP_cp = min(7, 8) = 7;
        // ITMLP = min(17 * 7, 62.11) = 62.11 (bandwidth-limited);
        // T_mem = 110 * 4096 / (15 * 62.11) * 498.7; T_comp = 102912 + 1000 = 103912;
        // T_overlap = min(103912 * 0.875 = 90923, T_mem) and T_exec = T_comp + T_mem - T_overlap.
        let mut i = worked_example();
        i.w_serial = 1000.0;
        i.mem_inst = 110.0;
        let r = predict(&i).unwrap();
        let bw = 1.11 * 128.0 / 459.0;
        let peak = 288.384 / (bw * 15.0);
        assert_eq!(r.cwp, 8.0);
        assert_eq!(r.mwp_cp, 7.0);
        assert!((r.itmlp - peak).abs() < 1e-9);
        let t_mem = 110.0 * 4096.0 / (15.0 * peak) * 498.7;
        assert!((r.t_mem - t_mem).abs() < 1e-6);
        assert_eq!(r.t_comp, 103_912.0);
        let overlap = (103_912.0 * 0.875_f64).min(t_mem);
        assert!((r.t_exec - (103_912.0 + t_mem - overlap)).abs() < 1e-6);
        assert!(r.t_exec > 103_912.0);
    }

    #[test]
    fn degenerate_inputs_name_the_field() {
        let mut i = worked_example();
        i.total_warps = 0.0;
        assert!(predict(&i).unwrap_err().to_string().contains("total_warps"));
        let mut i = worked_example();
        i.avg_inst_lat = 0.0;
        assert!(predict(&i)
            .unwrap_err()
            .to_string()
            .contains("avg_inst_lat"));
        let mut i = worked_example();
        i.mem_inst = -1.0;
        assert!(predict(&i).unwrap_err().to_string().contains("mem_inst"));
        let mut i = worked_example();
        i.dram_lat = f64::NAN;
        assert!(predict(&i).unwrap_err().to_string().contains("dram_lat"));
        let mut i = worked_example();
        i.miss_ratio_l1 = 1.5;
        assert!(predict(&i)
            .unwrap_err()
            .to_string()
            .contains("miss_ratio_l1"));
    }
}
