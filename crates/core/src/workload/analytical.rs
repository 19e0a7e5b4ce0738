//! Analytical inputs files: one TOML field per paper parameter, for the `mwp-cwp` (parra2016
//! eq 4.1-4.26), `hong-kim` (Hong and Kim 2009, fields as in `shared/HONG_KIM.md` Table 1) and
//! `wu` (wu2019 eq 1-23) models.
//!
//! Reading a file: unknown keys are errors naming the key; with a device, the device's own values
//! fill the device fields the file leaves out (SM count, cores, clock, bandwidth, warp schedulers,
//! compute-capability limits, micro-benchmarked latencies) and each filled value is reported as a
//! note; a field missing from both is an error naming it. Each inputs struct has `validate`, which
//! the models call, so a struct built in code is checked the same way as one read from a file.
//!
//! This module does not compute any model quantity; that is `model::{mwp_cwp, hong_kim, wu}`.

use serde::Deserialize;

use crate::device::microbenchmarks as mb;
use crate::device::Device;
use crate::error::{non_negative, positive, Error, Result};

/// Inputs read from a file, with the notes of every value taken from the device.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved<T> {
    pub inputs: T,
    /// One line per field filled from the device (or defaulted), naming the value and its source.
    pub notes: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// mwp-cwp

/// Inputs of parra2016's adapted MWP-CWP model. Counts are per warp; latencies in core cycles.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MwpCwpInputs {
    /// `#inst`: instructions per warp.
    pub inst: f64,
    /// `#mem_inst`: memory instructions per warp.
    pub mem_inst: f64,
    /// `#total_warps`: warps in the whole kernel.
    pub total_warps: f64,
    /// `#active_SMs`.
    pub active_sms: f64,
    /// `avg_inst_lat`, cycles.
    pub avg_inst_lat: f64,
    /// `ILP`: instruction-level parallelism of one warp (eq 4.26).
    pub ilp: f64,
    /// `N`: concurrently running warps per SM.
    pub n: f64,
    pub warp_size: f64,
    /// `SIMD_width`: scalar processors per SM.
    pub simd_width: f64,
    /// `DRAM_lat`: baseline DRAM latency, cycles.
    pub dram_lat: f64,
    /// `avg_trans_warp`: memory transactions per warp memory request.
    pub avg_trans_warp: f64,
    /// `Δ`: departure delay between transactions, cycles.
    pub departure_delay: f64,
    pub miss_ratio_l2: f64,
    /// `hit_lat_l2`, cycles.
    pub hit_lat_l2: f64,
    pub miss_ratio_l1: f64,
    /// `hit_lat_l1`, cycles.
    pub hit_lat_l1: f64,
    /// `freq`, GHz (used for `BW_per_warp`).
    pub freq_ghz: f64,
    /// `Data_size`, bytes per thread access.
    pub data_size_bytes: f64,
    /// `mem_peak_bandwidth`, GB/s.
    pub mem_peak_bandwidth_gbs: f64,
    /// `MLP`: memory-level parallelism of one warp.
    pub mlp: f64,
    /// `W_serial` (eq 4.7), cycles; 0 for the thesis' stencil.
    pub w_serial: f64,
    /// What the three latencies `dram_lat`, `hit_lat_l2` and `hit_lat_l1` mean in eq 4.24.
    pub amat_latencies: AmatLatencies,
}

/// What the latencies of eq 4.24 (`AMAT = avg_DRAM_lat * miss_ratio_l2 + hit_lat_l2 *
/// miss_ratio_l1 + hit_lat_l1`) are. The equation adds them, so as printed each is what a miss at
/// the level above adds (GPUPerf's `AMAT = avg_DRAM_lat * miss_ratio + hit_lat`, Sim et al.
/// 2012 eq 12, reads the same way). A micro-benchmark (a pointer chase: Mei and Chu,
/// arXiv:1509.02308; Arafa et al. 2019, whose values fill the project's latency table) measures
/// instead the whole load-to-use time of an access served at a level, the L2 and L1 time
/// included; adding those double-counts the L2 and L1 on every DRAM access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AmatLatencies {
    /// Eq 4.24 as printed: `dram_lat` is the L2 miss penalty, `hit_lat_l2` the L1 miss penalty
    /// (the default, and the reading of the thesis' worked example).
    Penalties,
    /// Each latency is the load-to-use time of an access served at its level, and
    /// `miss_ratio_l2` is the fraction of all accesses served by DRAM (at most `miss_ratio_l1`):
    /// eq 4.24 with the penalties `avg_DRAM_lat - hit_lat_l2` and `hit_lat_l2 - hit_lat_l1`,
    /// `AMAT = avg_DRAM_lat * m2 + hit_lat_l2 * (m1 - m2) + hit_lat_l1 * (1 - m1)`. `avg_DRAM_lat`
    /// stays the whole round trip of a request in `MWP` and `BW_per_warp` (eq 4.17, 4.19).
    LoadToUse,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MwpCwpFile {
    inst: Option<f64>,
    mem_inst: Option<f64>,
    total_warps: Option<f64>,
    active_sms: Option<f64>,
    avg_inst_lat: Option<f64>,
    ilp: Option<f64>,
    n: Option<f64>,
    warp_size: Option<f64>,
    simd_width: Option<f64>,
    dram_lat: Option<f64>,
    avg_trans_warp: Option<f64>,
    departure_delay: Option<f64>,
    miss_ratio_l2: Option<f64>,
    hit_lat_l2: Option<f64>,
    miss_ratio_l1: Option<f64>,
    hit_lat_l1: Option<f64>,
    freq_ghz: Option<f64>,
    data_size_bytes: Option<f64>,
    mem_peak_bandwidth_gbs: Option<f64>,
    mlp: Option<f64>,
    w_serial: Option<f64>,
    amat_latencies: Option<AmatLatencies>,
}

impl MwpCwpInputs {
    /// Reads an inputs file's text; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str, device: Option<&Device>) -> Result<Resolved<Self>> {
        let f: MwpCwpFile = parse(text, origin)?;
        let mut r = Filler::new(device);
        let inputs = MwpCwpInputs {
            inst: r.kernel("inst", f.inst)?,
            mem_inst: r.kernel("mem_inst", f.mem_inst)?,
            total_warps: r.kernel("total_warps", f.total_warps)?,
            active_sms: r.device("active_sms", f.active_sms, sm_count)?,
            avg_inst_lat: r.kernel("avg_inst_lat", f.avg_inst_lat)?,
            ilp: r.kernel("ilp", f.ilp)?,
            n: r.kernel("n", f.n)?,
            warp_size: r.device("warp_size", f.warp_size, warp_size)?,
            simd_width: r.device("simd_width", f.simd_width, |d| {
                Some((f64::from(d.cores_per_sm), "cores_per_sm".into()))
            })?,
            dram_lat: r.device("dram_lat", f.dram_lat, |d| micro(d, mb::GLOBAL_MEMORY_READ))?,
            avg_trans_warp: r.kernel("avg_trans_warp", f.avg_trans_warp)?,
            departure_delay: r.device("departure_delay", f.departure_delay, |d| {
                micro(d, mb::DEPARTURE_DELAY)
            })?,
            miss_ratio_l2: r.kernel("miss_ratio_l2", f.miss_ratio_l2)?,
            hit_lat_l2: r.device("hit_lat_l2", f.hit_lat_l2, |d| micro(d, mb::L2_CACHE))?,
            miss_ratio_l1: r.kernel("miss_ratio_l1", f.miss_ratio_l1)?,
            hit_lat_l1: r.device("hit_lat_l1", f.hit_lat_l1, |d| micro(d, mb::L1_CACHE))?,
            freq_ghz: r.device("freq_ghz", f.freq_ghz, |d| {
                Some((d.core_clock_mhz / 1000.0, "core_clock_mhz / 1000".into()))
            })?,
            data_size_bytes: r.kernel("data_size_bytes", f.data_size_bytes)?,
            mem_peak_bandwidth_gbs: r.device(
                "mem_peak_bandwidth_gbs",
                f.mem_peak_bandwidth_gbs,
                bandwidth,
            )?,
            mlp: r.kernel("mlp", f.mlp)?,
            w_serial: r.default("w_serial", f.w_serial, 0.0, "no serial overhead (eq 4.23)"),
            amat_latencies: f.amat_latencies.unwrap_or(AmatLatencies::Penalties),
        };
        inputs.validate()?;
        Ok(Resolved {
            inputs,
            notes: r.notes,
        })
    }

    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<()> {
        positive("inst", self.inst)?;
        non_negative("mem_inst", self.mem_inst)?;
        positive("total_warps", self.total_warps)?;
        positive("active_sms", self.active_sms)?;
        positive("avg_inst_lat", self.avg_inst_lat)?;
        positive("ilp", self.ilp)?;
        positive("n", self.n)?;
        positive("warp_size", self.warp_size)?;
        positive("simd_width", self.simd_width)?;
        positive("dram_lat", self.dram_lat)?;
        at_least("avg_trans_warp", self.avg_trans_warp, 1.0)?;
        positive("departure_delay", self.departure_delay)?;
        ratio("miss_ratio_l2", self.miss_ratio_l2)?;
        non_negative("hit_lat_l2", self.hit_lat_l2)?;
        ratio("miss_ratio_l1", self.miss_ratio_l1)?;
        non_negative("hit_lat_l1", self.hit_lat_l1)?;
        positive("freq_ghz", self.freq_ghz)?;
        positive("data_size_bytes", self.data_size_bytes)?;
        positive("mem_peak_bandwidth_gbs", self.mem_peak_bandwidth_gbs)?;
        positive("mlp", self.mlp)?;
        non_negative("w_serial", self.w_serial)?;
        if self.amat_latencies == AmatLatencies::LoadToUse
            && self.miss_ratio_l2 > self.miss_ratio_l1
        {
            return Err(Error::invalid(
                "miss_ratio_l2",
                format!(
                    "{} exceeds miss_ratio_l1 ({}): with load-to-use latencies it is the fraction of all accesses served by DRAM, which miss L1 first",
                    self.miss_ratio_l2, self.miss_ratio_l1
                ),
            ));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// hong-kim

/// How the synchronization cost counts parallel warps (HONG_KIM.md section 4 item 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncFactor {
    /// `NpWB = min(MWP, warps per block)` (recommended reading, the default).
    Npwb,
    /// `MWP` itself (some implementations).
    Mwp,
}

/// How `#Rep` is rounded (HONG_KIM.md section 4 item 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RepRounding {
    /// The plain ratio, as published (the default).
    None,
    /// Whole waves: `ceil` of the ratio.
    Ceil,
}

/// Inputs of Hong and Kim's 2009 model (HONG_KIM.md Table 1). Counts are dynamic, per thread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HongKimInputs {
    /// `#Threads_per_warp`.
    pub warp_size: f64,
    /// `Issue_cycles`: cycles to issue one warp instruction.
    pub issue_cycles: f64,
    /// `Freq`, GHz.
    pub freq_ghz: f64,
    /// `Mem_Bandwidth`, GB/s.
    pub mem_bandwidth_gbs: f64,
    /// `Mem_LD`: baseline DRAM latency, cycles.
    pub mem_ld: f64,
    /// `Departure_del_uncoal`, cycles.
    pub departure_del_uncoal: f64,
    /// `Departure_del_coal`, cycles.
    pub departure_del_coal: f64,
    pub threads_per_block: f64,
    /// `#Blocks` in the grid.
    pub blocks: f64,
    /// `#Active_SMs`.
    pub active_sms: f64,
    /// `#Active_blocks_per_SM`.
    pub active_blocks_per_sm: f64,
    /// `#Comp_insts`.
    pub comp_insts: f64,
    /// `#Uncoal_Mem_insts`.
    pub uncoal_mem_insts: f64,
    /// `#Coal_Mem_insts`.
    pub coal_mem_insts: f64,
    /// `#Synch_insts`.
    pub synch_insts: f64,
    /// `#Uncoal_per_mw`: transactions per uncoalesced warp access.
    pub uncoal_per_mw: f64,
    /// `Load_bytes_per_warp`, bytes.
    pub load_bytes_per_warp: f64,
    pub sync_factor: SyncFactor,
    pub rep_rounding: RepRounding,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HongKimFile {
    warp_size: Option<f64>,
    issue_cycles: Option<f64>,
    freq_ghz: Option<f64>,
    mem_bandwidth_gbs: Option<f64>,
    mem_ld: Option<f64>,
    departure_del_uncoal: Option<f64>,
    departure_del_coal: Option<f64>,
    threads_per_block: Option<f64>,
    blocks: Option<f64>,
    active_sms: Option<f64>,
    n_sm: Option<f64>,
    active_blocks_per_sm: Option<f64>,
    comp_insts: Option<f64>,
    uncoal_mem_insts: Option<f64>,
    coal_mem_insts: Option<f64>,
    synch_insts: Option<f64>,
    uncoal_per_mw: Option<f64>,
    load_bytes_per_warp: Option<f64>,
    sync_factor: Option<SyncFactor>,
    rep_rounding: Option<RepRounding>,
}

impl HongKimInputs {
    /// Reads an inputs file's text; `origin` names it in errors.
    ///
    /// `active_sms` may be left out when `n_sm` (or the device's SM count) is known: it is then
    /// `min(n_sm, blocks / active_blocks_per_sm)` (the reading of HONG_KIM.md section 4 item 5).
    pub fn from_toml(text: &str, origin: &str, device: Option<&Device>) -> Result<Resolved<Self>> {
        let f: HongKimFile = parse(text, origin)?;
        let mut r = Filler::new(device);
        let warp_size_v = r.device("warp_size", f.warp_size, warp_size)?;
        let threads_per_block = r.kernel("threads_per_block", f.threads_per_block)?;
        let blocks = r.kernel("blocks", f.blocks)?;
        let active_blocks_per_sm = r.kernel("active_blocks_per_sm", f.active_blocks_per_sm)?;
        let active_sms = match f.active_sms {
            Some(v) => v,
            None => {
                let n_sm = r.device("n_sm", f.n_sm, sm_count).map_err(|_| {
                    Error::missing(
                        "active_sms",
                        "give active_sms, or n_sm (or a device) to derive it from",
                    )
                })?;
                positive("blocks", blocks)?;
                positive("active_blocks_per_sm", active_blocks_per_sm)?;
                let v = n_sm.min(blocks / active_blocks_per_sm);
                r.notes.push(format!(
                    "active_sms = min(n_sm {n_sm}, blocks / active_blocks_per_sm = {}) = {v}",
                    blocks / active_blocks_per_sm
                ));
                v
            }
        };
        let inputs = HongKimInputs {
            warp_size: warp_size_v,
            issue_cycles: r.device("issue_cycles", f.issue_cycles, |d| {
                let lanes = f64::from(d.cores_per_sm) / f64::from(d.warp_schedulers_per_sm.max(1));
                Some((
                    32.0 / lanes,
                    "warp size 32 / (cores_per_sm / warp_schedulers_per_sm)".into(),
                ))
            })?,
            freq_ghz: r.device("freq_ghz", f.freq_ghz, |d| {
                Some((d.core_clock_mhz / 1000.0, "core_clock_mhz / 1000".into()))
            })?,
            mem_bandwidth_gbs: r.device("mem_bandwidth_gbs", f.mem_bandwidth_gbs, bandwidth)?,
            mem_ld: r.device("mem_ld", f.mem_ld, |d| micro(d, mb::GLOBAL_MEMORY_READ))?,
            departure_del_uncoal: r.kernel("departure_del_uncoal", f.departure_del_uncoal)?,
            departure_del_coal: r.kernel("departure_del_coal", f.departure_del_coal)?,
            threads_per_block,
            blocks,
            active_sms,
            active_blocks_per_sm,
            comp_insts: r.kernel("comp_insts", f.comp_insts)?,
            uncoal_mem_insts: r.kernel("uncoal_mem_insts", f.uncoal_mem_insts)?,
            coal_mem_insts: r.kernel("coal_mem_insts", f.coal_mem_insts)?,
            synch_insts: r.kernel("synch_insts", f.synch_insts)?,
            uncoal_per_mw: r.kernel("uncoal_per_mw", f.uncoal_per_mw)?,
            load_bytes_per_warp: r.kernel("load_bytes_per_warp", f.load_bytes_per_warp)?,
            sync_factor: f.sync_factor.unwrap_or(SyncFactor::Npwb),
            rep_rounding: f.rep_rounding.unwrap_or(RepRounding::None),
        };
        inputs.validate()?;
        Ok(Resolved {
            inputs,
            notes: r.notes,
        })
    }

    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<()> {
        whole_positive("warp_size", self.warp_size)?;
        positive("issue_cycles", self.issue_cycles)?;
        positive("freq_ghz", self.freq_ghz)?;
        positive("mem_bandwidth_gbs", self.mem_bandwidth_gbs)?;
        positive("mem_ld", self.mem_ld)?;
        positive("departure_del_uncoal", self.departure_del_uncoal)?;
        positive("departure_del_coal", self.departure_del_coal)?;
        whole_positive("threads_per_block", self.threads_per_block)?;
        whole_positive("blocks", self.blocks)?;
        positive("active_sms", self.active_sms)?;
        whole_positive("active_blocks_per_sm", self.active_blocks_per_sm)?;
        non_negative("comp_insts", self.comp_insts)?;
        non_negative("uncoal_mem_insts", self.uncoal_mem_insts)?;
        non_negative("coal_mem_insts", self.coal_mem_insts)?;
        non_negative("synch_insts", self.synch_insts)?;
        at_least("uncoal_per_mw", self.uncoal_per_mw, 1.0)?;
        positive("load_bytes_per_warp", self.load_bytes_per_warp)?;
        if self.comp_insts + self.uncoal_mem_insts + self.coal_mem_insts <= 0.0 {
            return Err(Error::invalid(
                "comp_insts",
                "the kernel has no instructions at all (comp_insts + uncoal_mem_insts + coal_mem_insts is 0)",
            ));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// wu

/// Inputs of wu2019's model (Table 1 of the paper). Counts are per thread; latencies in cycles.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WuInputs {
    /// `Comp_cycles`: sum over arithmetic operations of count x latency, cycles per warp.
    pub comp_cycles: f64,
    pub mem_insts_global: f64,
    pub mem_insts_shared: f64,
    /// Local-memory (spill) accesses per thread.
    pub mem_insts_local: f64,
    /// `N_conf`: mean bank conflicts per shared access (1 = none).
    pub n_conf: f64,
    pub sync_insts: f64,
    /// `Mem_L_global`, cycles.
    pub mem_l_global: f64,
    /// `Mem_L_shared`, cycles.
    pub mem_l_shared: f64,
    /// `Departure_delay`, cycles.
    pub departure_delay: f64,
    pub threads_per_block: f64,
    pub warp_size: f64,
    /// `N_ws`: warp schedulers per SM.
    pub n_ws: f64,
    /// `Max_B`: resident blocks per SM.
    pub max_b: f64,
    /// `Max_W`: resident warps per SM.
    pub max_w: f64,
    /// `Max_R`: registers per SM.
    pub max_r: f64,
    /// Registers per thread (0: no register limit).
    pub reg_per_thread: f64,
    /// `Max_SMem`: shared memory per SM, bytes.
    pub max_smem_bytes: f64,
    /// `SMem_used` per block, bytes (0: no shared-memory limit).
    pub smem_used_bytes: f64,
    /// `SMem_unit`: shared-memory allocation unit, bytes.
    pub smem_unit_bytes: f64,
    /// `N_b`: blocks in the grid.
    pub n_b: f64,
    /// `N_sm`: SMs.
    pub n_sm: f64,
    /// `Freq`, MHz.
    pub freq_mhz: f64,
    /// Bytes moved between host and device.
    pub comu_bytes: f64,
    /// Host-device bandwidth, GB/s (needed when `comu_bytes` > 0).
    pub comu_bw_gbs: Option<f64>,
    /// Largest block `best-block` tries (not a paper parameter; the device's limit wins).
    pub max_threads_per_block: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WuFile {
    comp_cycles: Option<f64>,
    mem_insts_global: Option<f64>,
    mem_insts_shared: Option<f64>,
    mem_insts_local: Option<f64>,
    n_conf: Option<f64>,
    sync_insts: Option<f64>,
    mem_l_global: Option<f64>,
    mem_l_shared: Option<f64>,
    departure_delay: Option<f64>,
    threads_per_block: Option<f64>,
    warp_size: Option<f64>,
    n_ws: Option<f64>,
    max_b: Option<f64>,
    max_w: Option<f64>,
    max_r: Option<f64>,
    reg_per_thread: Option<f64>,
    max_smem_bytes: Option<f64>,
    smem_used_bytes: Option<f64>,
    smem_unit_bytes: Option<f64>,
    n_b: Option<f64>,
    n_sm: Option<f64>,
    freq_mhz: Option<f64>,
    comu_bytes: Option<f64>,
    comu_bw_gbs: Option<f64>,
    max_threads_per_block: Option<f64>,
}

impl WuInputs {
    /// Reads an inputs file's text; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str, device: Option<&Device>) -> Result<Resolved<Self>> {
        let f: WuFile = parse(text, origin)?;
        let mut r = Filler::new(device);
        let limit = |get: fn(&Device) -> u32, what: &'static str| {
            move |d: &Device| Some((f64::from(get(d)), format!("limits.{what}")))
        };
        let comu_bytes = r.default("comu_bytes", f.comu_bytes, 0.0, "no host-device transfer");
        let comu_bw_gbs = match (f.comu_bw_gbs, comu_bytes > 0.0) {
            (Some(v), _) => Some(v),
            (None, false) => None,
            (None, true) => {
                return Err(Error::missing(
                    "comu_bw_gbs",
                    "comu_bytes is above zero, so the host-device bandwidth is needed",
                ))
            }
        };
        let inputs = WuInputs {
            comp_cycles: r.kernel("comp_cycles", f.comp_cycles)?,
            mem_insts_global: r.kernel("mem_insts_global", f.mem_insts_global)?,
            mem_insts_shared: r.kernel("mem_insts_shared", f.mem_insts_shared)?,
            mem_insts_local: r.kernel("mem_insts_local", f.mem_insts_local)?,
            n_conf: r.kernel("n_conf", f.n_conf)?,
            sync_insts: r.kernel("sync_insts", f.sync_insts)?,
            mem_l_global: r.device("mem_l_global", f.mem_l_global, |d| {
                micro(d, mb::GLOBAL_MEMORY_READ)
            })?,
            mem_l_shared: r.device("mem_l_shared", f.mem_l_shared, |d| {
                micro(d, mb::SHARED_MEMORY_READ)
            })?,
            departure_delay: r.device("departure_delay", f.departure_delay, |d| {
                micro(d, mb::DEPARTURE_DELAY)
            })?,
            threads_per_block: r.kernel("threads_per_block", f.threads_per_block)?,
            warp_size: r.device("warp_size", f.warp_size, warp_size)?,
            n_ws: r.device("n_ws", f.n_ws, |d| {
                Some((
                    f64::from(d.warp_schedulers_per_sm),
                    "warp_schedulers_per_sm".into(),
                ))
            })?,
            max_b: r.device(
                "max_b",
                f.max_b,
                limit(|d| d.limits.max_blocks_per_sm, "max_blocks_per_sm"),
            )?,
            max_w: r.device(
                "max_w",
                f.max_w,
                limit(|d| d.limits.max_warps_per_sm, "max_warps_per_sm"),
            )?,
            max_r: r.device(
                "max_r",
                f.max_r,
                limit(|d| d.limits.registers_per_sm, "registers_per_sm"),
            )?,
            reg_per_thread: r.kernel("reg_per_thread", f.reg_per_thread)?,
            max_smem_bytes: r.device(
                "max_smem_bytes",
                f.max_smem_bytes,
                limit(
                    |d| d.limits.shared_memory_per_sm_bytes,
                    "shared_memory_per_sm_bytes",
                ),
            )?,
            smem_used_bytes: r.kernel("smem_used_bytes", f.smem_used_bytes)?,
            smem_unit_bytes: r.device(
                "smem_unit_bytes",
                f.smem_unit_bytes,
                limit(
                    |d| d.limits.shared_memory_allocation_unit_bytes,
                    "shared_memory_allocation_unit_bytes",
                ),
            )?,
            n_b: r.kernel("n_b", f.n_b)?,
            n_sm: r.device("n_sm", f.n_sm, sm_count)?,
            freq_mhz: r.device("freq_mhz", f.freq_mhz, |d| {
                Some((d.core_clock_mhz, "core_clock_mhz".into()))
            })?,
            comu_bytes,
            comu_bw_gbs,
            max_threads_per_block: f.max_threads_per_block,
        };
        inputs.validate()?;
        Ok(Resolved {
            inputs,
            notes: r.notes,
        })
    }

    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<()> {
        non_negative("comp_cycles", self.comp_cycles)?;
        non_negative("mem_insts_global", self.mem_insts_global)?;
        non_negative("mem_insts_shared", self.mem_insts_shared)?;
        non_negative("mem_insts_local", self.mem_insts_local)?;
        at_least("n_conf", self.n_conf, 1.0)?;
        non_negative("sync_insts", self.sync_insts)?;
        positive("mem_l_global", self.mem_l_global)?;
        positive("mem_l_shared", self.mem_l_shared)?;
        positive("departure_delay", self.departure_delay)?;
        whole_positive("threads_per_block", self.threads_per_block)?;
        whole_positive("warp_size", self.warp_size)?;
        positive("n_ws", self.n_ws)?;
        whole_positive("max_b", self.max_b)?;
        whole_positive("max_w", self.max_w)?;
        whole_positive("max_r", self.max_r)?;
        non_negative("reg_per_thread", self.reg_per_thread)?;
        non_negative("max_smem_bytes", self.max_smem_bytes)?;
        non_negative("smem_used_bytes", self.smem_used_bytes)?;
        positive("smem_unit_bytes", self.smem_unit_bytes)?;
        whole_positive("n_b", self.n_b)?;
        whole_positive("n_sm", self.n_sm)?;
        positive("freq_mhz", self.freq_mhz)?;
        non_negative("comu_bytes", self.comu_bytes)?;
        if let Some(bw) = self.comu_bw_gbs {
            positive("comu_bw_gbs", bw)?;
        } else if self.comu_bytes > 0.0 {
            return Err(Error::missing(
                "comu_bw_gbs",
                "comu_bytes is above zero, so the host-device bandwidth is needed",
            ));
        }
        if let Some(m) = self.max_threads_per_block {
            whole_positive("max_threads_per_block", m)?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// shared helpers

fn parse<T: serde::de::DeserializeOwned>(text: &str, origin: &str) -> Result<T> {
    toml::from_str(text).map_err(|e| {
        Error::file(
            origin,
            e.message().to_string() + &crate::device::toml_position(text, e.span()),
        )
    })
}

/// Takes each field from the file, else from the device, recording what the device supplied.
struct Filler<'a> {
    device: Option<&'a Device>,
    notes: Vec<String>,
}

impl<'a> Filler<'a> {
    fn new(device: Option<&'a Device>) -> Self {
        Self {
            device,
            notes: Vec::new(),
        }
    }

    /// A kernel parameter: only the file can give it.
    fn kernel(&mut self, name: &str, value: Option<f64>) -> Result<f64> {
        value.ok_or_else(|| {
            Error::missing(
                name,
                "the analytical inputs file must give this kernel parameter",
            )
        })
    }

    /// A device parameter: the file's value, else the device's (noted), else an error.
    fn device(
        &mut self,
        name: &str,
        value: Option<f64>,
        from: impl FnOnce(&Device) -> Option<(f64, String)>,
    ) -> Result<f64> {
        if let Some(v) = value {
            // The file's value wins; when a device was chosen too and disagrees, say so loudly:
            // the same file swept over several GPUs would otherwise give them all its value.
            // (The clock is the exception: the models convert cycles with the device's clock and
            // say so in a note of their own.)
            let clock = name.starts_with("freq_");
            if let Some((w, what)) = self
                .device
                .filter(|_| !clock)
                .and_then(|d| from(d).map(|x| (d, x)))
                .map(|(d, (w, what))| {
                    // The field the value comes from, without its (long) source.
                    let field = what.split([';', ',']).next().unwrap_or(&what);
                    (w, format!("{}'s {w} ({field})", d.name))
                })
            {
                if (v - w).abs() > 1e-9 * v.abs().max(w.abs()) {
                    self.notes.push(format!(
                        "warning: the inputs file's {name} = {v} overrides {what}; remove it from the file to use the device's value"
                    ));
                }
            }
            return Ok(v);
        }
        match self.device {
            None => Err(Error::missing(
                name,
                "give it in the analytical inputs file or pick a device with `device`",
            )),
            Some(d) => match from(d) {
                Some((v, what)) => {
                    self.notes
                        .push(format!("{name} = {v} from device {} ({what})", d.name));
                    Ok(v)
                }
                None => Err(Error::missing(
                    name,
                    format!(
                        "neither the analytical inputs file nor device {} provides it",
                        d.name
                    ),
                )),
            },
        }
    }

    /// An optional field with a documented default (noted when used).
    fn default(&mut self, name: &str, value: Option<f64>, default: f64, why: &str) -> f64 {
        value.unwrap_or_else(|| {
            self.notes.push(format!("{name} = {default} ({why})"));
            default
        })
    }
}

fn sm_count(d: &Device) -> Option<(f64, String)> {
    Some((f64::from(d.sm_count), "sm_count".into()))
}

fn warp_size(_: &Device) -> Option<(f64, String)> {
    Some((32.0, "the warp size of every NVIDIA GPU".into()))
}

fn bandwidth(d: &Device) -> Option<(f64, String)> {
    Some((d.memory_bandwidth_gbs, "memory_bandwidth_gbs".into()))
}

/// A micro-benchmarked latency (mean over the measured warp counts), when the device has one.
fn micro(d: &Device, bench: &str) -> Option<(f64, String)> {
    let m = d.microbenchmarks.as_ref()?;
    let v = m.representative_cycles(bench)?;
    // The per-benchmark source (an importer's file and line) when the device file gives one.
    let source = d
        .sources
        .get(&format!("microbenchmarks.{bench}"))
        .unwrap_or(&m.source);
    Some((
        v,
        format!(
            "micro-benchmark {bench}, mean over warps {:?}; {source}",
            m.warps
        ),
    ))
}

fn at_least(name: &str, value: f64, min: f64) -> Result<f64> {
    if !value.is_finite() || value < min {
        return Err(Error::invalid(
            name,
            format!("must be a finite number of at least {min}, got {value}"),
        ));
    }
    Ok(value)
}

fn ratio(name: &str, value: f64) -> Result<f64> {
    if !value.is_finite() || !(0.0..=1.0).contains(&value) {
        return Err(Error::invalid(
            name,
            format!("must be a ratio between 0 and 1, got {value}"),
        ));
    }
    Ok(value)
}

fn whole_positive(name: &str, value: f64) -> Result<f64> {
    if !value.is_finite() || value < 1.0 || value.fract() != 0.0 {
        return Err(Error::invalid(
            name,
            format!("must be a whole number of at least 1, got {value}"),
        ));
    }
    Ok(value)
}

/// What the roofline needs about a kernel.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct RooflineInputs {
    /// Floating-point operations of the whole kernel (an FMA counts 2).
    pub flops: f64,
    /// Bytes moved between DRAM and the chip (reads plus writes).
    pub dram_bytes: f64,
    /// Launch overhead, µs; the table default when absent.
    #[serde(default)]
    pub launch_overhead_us: Option<f64>,
}

impl RooflineInputs {
    /// Reads the roofline fields of an inputs TOML file's text (other fields are ignored, so one
    /// file can serve several models); `origin` names the file in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self> {
        #[derive(Deserialize)]
        struct Raw {
            flops: Option<f64>,
            dram_bytes: Option<f64>,
            launch_overhead_us: Option<f64>,
        }
        let raw: Raw = toml::from_str(text).map_err(|e| Error::file(origin, e.message()))?;
        let need = |v: Option<f64>, name: &str| {
            v.ok_or_else(|| {
                Error::missing(
                    name,
                    format!("the roofline model needs `{name}` in {origin}"),
                )
            })
        };
        Ok(Self {
            flops: need(raw.flops, "flops")?,
            dram_bytes: need(raw.dram_bytes, "dram_bytes")?,
            launch_overhead_us: raw.launch_overhead_us,
        })
    }
}
