//! The counters path: one row of profiler counters (grid, block, registers, shared memory,
//! `inst_executed`, global load/store transactions, DRAM transactions, `warps_launched`; the
//! amaris2018 layout) becomes the inputs of the `roofline`, `mwp-cwp`, `hong-kim` and `wu`
//! models for a named device, so that a measured data set can be evaluated without the kernel's
//! source code.
//!
//! Per-architecture latencies come from the project's latency table (`data/latencies.toml`, the
//! one `device::latencies` embeds and resolves with a device file's `[latencies]` overrides; its
//! rows cite Arafa et al. 2019 via PPT-GPU's configuration, the GPUPerf Fermi parameter set,
//! Accel-Sim and gpu-benches), the departure delay from [`departure_delay`] (the table has no
//! such column); a device's own micro-benchmark profile (`[microbenchmarks]`) wins where it has
//! the value. Every default the
//! conversion takes is listed by [`defaults_notes`]; the models' predictions then carry them.
//!
//! The counts are whole-kernel totals (nvprof sums over the SMs: vectorAdd's `inst_executed /
//! warps_launched` is 18 to 21 warp instructions on every amaris2018 GPU, its
//! `gld_transactions / warps_launched` 2 on Kepler for its two loads), turned into per-warp form.
//! The latencies are load-to-use times, as a pointer chase measures them, so mwp-cwp reads
//! eq 4.24 with `AmatLatencies::LoadToUse` (a DRAM access costs the DRAM latency, not the DRAM,
//! L2 and L1 latencies added up).
//!
//! What the counters cannot tell, and what is assumed (all listed in the notes):
//! - global load/store transactions become warp memory requests at the architecture's count of
//!   transactions per coalesced request ([`transactions_per_request`]: the profiler counts
//!   128-byte segments on Kepler, 16-byte load units on Maxwell, 8-byte on Pascal, 32-byte
//!   sectors for stores after Kepler and for everything from Volta on), all of them coalesced
//!   (`avg_trans_warp = 1`, `uncoal_per_mw = 1`), unless the row also counts the requests
//!   (`gld_requests`, `gst_requests`: then [`memory_requests`] takes those and the transactions
//!   per request);
//! - the non-memory warp instructions are arithmetic with the architecture's dependent FP32/INT
//!   latency; ILP and MLP are 1, so a scheduler issues one instruction per cycle
//!   ([`issue_lanes_per_sm`]: 128 of a Kepler SMX's 192 cores); no synchronization,
//!   shared-memory or spill traffic is modelled (the table has no counters for them);
//! - the L2 miss ratio ([`l2_miss_ratio`]) is the DRAM sectors read over the L2 read sectors
//!   when counted, else over the sectors the loads asked for (4 per load request; on Kepler one
//!   per transaction, a 32- to 128-byte segment), clamped to 0..1, and every global access
//!   misses L1 (Kepler and Maxwell do not cache global loads in L1 by default);
//! - a warp request's DRAM bytes are the measured DRAM transactions per request
//!   ([`dram_bytes_per_request`]), for mwp-cwp's and hong-kim's bandwidth limit and for wu's
//!   departure delay ([`wu_departure_delay`]: wu2019 has no bandwidth term);
//! - the resident warps per SM are the measured `achieved_occupancy` when counted
//!   ([`resident_warps`]), else the exact occupancy;
//! - the roofline counts 2 operations per thread instruction (`flops = 64 * inst_executed`), so
//!   its compute bound is the issue time of the instructions at one per core per cycle.
//!
//! This module does not fit anything (that is `fit::calibrate`) and does not read files.

use serde::Serialize;

use crate::device::occupancy::{occupancy, BlockResources};
use crate::device::{latencies, microbenchmarks as mb, ComputeCapability, Device};
use crate::error::{Error, Result};
use crate::workload::analytical::RooflineInputs;
use crate::workload::analytical::{
    AmatLatencies, HongKimInputs, MwpCwpInputs, RepRounding, SyncFactor, WuInputs,
};
use crate::workload::measurement::Measurement;

/// The departure delay between two coalesced warp memory requests of one SM, cycles, by
/// architecture, with where it comes from. The latency table (`data/latencies.toml`) has no such
/// column; the values are those of `shared/data/latencies/arch_latencies.md` ("Departure delay"
/// paragraph) and parra2016 Table 4.3.
pub fn departure_delay(cc: ComputeCapability) -> (f64, &'static str) {
    match cc.major {
        0..=2 => (
            20.0,
            "arch_latencies.csv: GPUPerf implementation, Fermi delta = 20 per transaction",
        ),
        3 => (
            3.0,
            "parra2016 Table 4.3: Tesla K40 departure delay 3 cycles (1 and 32 warps)",
        ),
        5 | 6 => (
            4.0,
            "arch_latencies.csv: derived, Maxwell/Pascal 32-bit coalesced warp request 4 cycles (NVIDIA forum, pascal-l1-cache/49571/14)",
        ),
        _ => (
            1.0,
            "arch_latencies.csv: derived, Volta+ coalesced warp request 1 cycle (4 tags per clock)",
        ),
    }
}

/// The latencies used for one device: the device's micro-benchmarks where it has them, else the
/// architecture defaults.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceLatencies {
    pub dram_cycles: f64,
    pub l2_hit_cycles: f64,
    pub l1_hit_cycles: f64,
    pub shared_load_cycles: f64,
    pub fp32_dep_cycles: f64,
    pub departure_delay_cycles: f64,
    /// Achievable over peak DRAM bandwidth (`dram_efficiency` of the latency table).
    pub dram_efficiency: f64,
    /// One line per value: where it comes from.
    pub notes: Vec<String>,
}

/// Resolves the latencies of a device.
pub fn device_latencies(device: &Device) -> Result<DeviceLatencies> {
    let table = latencies::for_device(device)?;
    let micro = |name: &str| {
        device
            .microbenchmarks
            .as_ref()
            .and_then(|m| m.representative_cycles(name))
    };
    let mut notes = Vec::new();
    let mut pick = |what: &str, bench: Option<&str>, default: f64, src: &str| -> f64 {
        if let Some(v) = bench.and_then(micro) {
            notes.push(format!(
                "{what} = {v} cycles from the device's micro-benchmarks"
            ));
            v
        } else {
            notes.push(format!("{what} = {default} cycles ({src})"));
            default
        }
    };
    let v = &table.values;
    let src = |field: &str| {
        format!(
            "data/latencies.toml, {} `{field}`: {}",
            table.architecture,
            table.sources.get(field).map_or("", String::as_str)
        )
    };
    let (delay, delay_source) = departure_delay(device.compute_capability);
    let dram_efficiency_note = format!(
        "achievable DRAM bandwidth = {} x peak ({})",
        v.dram_efficiency,
        src("dram_efficiency")
    );
    let mut out = DeviceLatencies {
        dram_efficiency: v.dram_efficiency,
        dram_cycles: pick(
            "DRAM latency",
            Some(mb::GLOBAL_MEMORY_READ),
            v.dram,
            &src("dram"),
        ),
        l2_hit_cycles: pick(
            "L2 hit latency",
            Some(mb::L2_CACHE),
            v.l2_hit,
            &src("l2_hit"),
        ),
        l1_hit_cycles: pick(
            "L1 hit latency",
            Some(mb::L1_CACHE),
            v.l1_hit,
            &src("l1_hit"),
        ),
        shared_load_cycles: pick(
            "shared load latency",
            Some(mb::SHARED_MEMORY_READ),
            v.shared_load,
            &src("shared_load"),
        ),
        fp32_dep_cycles: pick("dependent FP32/INT latency", None, v.fp32, &src("fp32")),
        departure_delay_cycles: pick(
            "departure delay",
            Some(mb::DEPARTURE_DELAY),
            delay,
            delay_source,
        ),
        notes,
    };
    out.notes.push(dram_efficiency_note);
    Ok(out)
}

/// The counters of one launch that the models need, in per-warp form.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct KernelCounters {
    pub blocks: f64,
    pub threads_per_block: f64,
    pub regs_per_thread: f64,
    pub smem_per_block_bytes: f64,
    /// Warps launched in the whole grid.
    pub warps: f64,
    /// Warp instructions per warp.
    pub inst_per_warp: f64,
    /// Global load and store transactions per warp.
    pub gld_per_warp: f64,
    pub gst_per_warp: f64,
    /// Thread instructions of the whole kernel (`32 * inst_executed`).
    pub thread_instructions: f64,
    /// DRAM bytes read plus written (32-byte transactions).
    pub dram_bytes: f64,
    /// DRAM read transactions (32-byte) per warp.
    pub dram_read_per_warp: f64,
    /// Warp-level global load and store requests per warp, when the profiler counted them
    /// (nvprof `gld_request`/`gst_request`, Nsight Compute `l1tex__t_requests_*`).
    pub gld_requests_per_warp: Option<f64>,
    pub gst_requests_per_warp: Option<f64>,
    /// L2 read sectors (32-byte) per warp, when counted (`l2_read_transactions`).
    pub l2_read_per_warp: Option<f64>,
    /// nvprof's `achieved_occupancy` (average active warps per active cycle over the SM's
    /// maximum), when counted and in 0..=1.
    pub achieved_occupancy: Option<f64>,
}

/// How many global load and store transactions the profiler counts for one fully coalesced warp
/// request of 4-byte words (128 bytes), by architecture, with where that comes from: nvprof's
/// `gld_transactions`/`gst_transactions` are not bus transactions of one size on every GPU, so
/// the counters are turned into warp requests with the count of the architecture they were
/// measured on.
pub fn transactions_per_request(cc: ComputeCapability) -> (f64, f64, &'static str) {
    match cc.major {
        0..=3 => (
            1.0,
            1.0,
            "Kepler and older: one transaction per 128-byte segment of a request (amaris2018 rows: a coalesced float load or store of a warp is 1 transaction on the GTX 680, Tesla K20 and GTX Titan)",
        ),
        5 => (
            8.0,
            4.0,
            "Maxwell: loads counted in 16-byte units of the L1/TEX path, stores in 32-byte sectors (amaris2018 rows: vectorAdd's two coalesced float loads are 16 transactions per warp on the GTX 970 and GTX Titan X, its store 4)",
        ),
        6 => (
            16.0,
            4.0,
            "Pascal: loads counted in 8-byte units (a public nvprof report: gld_transactions_per_request = 16 for a coalesced float copy on TITAN Xp and GTX 1080 Ti), stores in 32-byte sectors",
        ),
        _ => (
            4.0,
            4.0,
            "Volta and later: 32-byte sectors (Nsight Compute's l1tex sector counts)",
        ),
    }
}

impl KernelCounters {
    /// Reads the counters of a measurement; a missing one is an error naming it and the row.
    pub fn from_measurement(m: &Measurement) -> Result<Self> {
        let row = || format!("{} line {}", m.source.file, m.source.line);
        let launch = m.launch().ok_or_else(|| {
            Error::missing(
                "grid",
                format!("the counters path needs grid and block sizes ({})", row()),
            )
        })?;
        let c = m.counters.as_ref().ok_or_else(|| {
            Error::missing(
                "counters",
                format!(
                    "the counters path needs profiler counters, such as the amaris2018 columns ({})",
                    row()
                ),
            )
        })?;
        let need = |v: Option<f64>, name: &str| {
            v.ok_or_else(|| {
                Error::missing(
                    name,
                    format!("the counters path needs `{name}` ({})", row()),
                )
            })
        };
        let blocks = launch.blocks as f64;
        let tpb = f64::from(launch.threads_per_block);
        let warps_from_launch = blocks * f64::from(launch.warps_per_block());
        let warps = match c.warps_launched {
            Some(w) if w > 0.0 => w,
            _ => warps_from_launch,
        };
        let inst = need(c.inst_executed, "inst_executed")?;
        let gld = need(c.gld_transactions, "gld_transactions")?;
        let gst = need(c.gst_transactions, "gst_transactions")?;
        let dram_r = need(c.dram_read_transactions, "dram_read_transactions")?;
        // Rodinia rows of amaris2018 lack DRAM writes: every store transaction is taken to
        // reach DRAM (listed in `defaults_notes`).
        let dram_w = match c.dram_write_transactions {
            Some(v) => v,
            None => gst,
        };
        for (name, v) in [
            ("inst_executed", inst),
            ("gld_transactions", gld),
            ("gst_transactions", gst),
            ("dram_read_transactions", dram_r),
            ("dram_write_transactions", dram_w),
        ] {
            crate::error::non_negative(name, v)?;
        }
        if inst <= 0.0 {
            return Err(Error::invalid(
                "inst_executed",
                format!("must be above 0 ({})", row()),
            ));
        }
        let smem = c.static_smem_bytes.unwrap_or(0) + c.dynamic_smem_bytes.unwrap_or(0);
        // An optional count is used only when it is a finite non-negative number.
        let per_warp = |v: Option<f64>| v.filter(|x| x.is_finite() && *x >= 0.0).map(|x| x / warps);
        Ok(Self {
            blocks,
            threads_per_block: tpb,
            regs_per_thread: f64::from(c.regs_per_thread.unwrap_or(0)),
            smem_per_block_bytes: smem as f64,
            warps,
            inst_per_warp: inst / warps,
            gld_per_warp: gld / warps,
            gst_per_warp: gst / warps,
            thread_instructions: inst * 32.0,
            dram_bytes: (dram_r + dram_w) * 32.0,
            dram_read_per_warp: dram_r / warps,
            gld_requests_per_warp: per_warp(c.gld_requests),
            gst_requests_per_warp: per_warp(c.gst_requests),
            l2_read_per_warp: per_warp(c.l2_read_transactions),
            achieved_occupancy: c
                .achieved_occupancy
                .filter(|x| x.is_finite() && *x > 0.0 && *x <= 1.0),
        })
    }
}

/// A launch's global memory requests per warp, as the analytical models count them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MemoryRequests {
    /// Warp load and store requests per warp.
    pub loads: f64,
    pub stores: f64,
    /// Coalesced-request equivalents (128 bytes of 4-byte words) per request, at least 1:
    /// `avg_trans_warp` of mwp-cwp, `#Uncoal_per_mw` of hong-kim.
    pub transactions_per_request: f64,
}

/// The warp requests of a launch. The transactions, divided by the architecture's count per
/// coalesced request ([`transactions_per_request`]), are the requests' worth in coalesced
/// 128-byte requests; where the profiler also counted the requests (`gld_requests`,
/// `gst_requests`) those are the requests and the quotient is the transactions per request, so
/// that a request touching several 128-byte lines (a Kepler load of 4 rows of 8 floats: 4
/// transactions) is one request of 4 transactions, not 4 requests. Without request counts every
/// transaction is taken as its own coalesced request (listed in the notes).
pub fn memory_requests(cc: ComputeCapability, k: &KernelCounters) -> MemoryRequests {
    let (ld_unit, st_unit, _) = transactions_per_request(cc);
    let ld_equiv = k.gld_per_warp / ld_unit;
    let st_equiv = k.gst_per_warp / st_unit;
    let counted = |r: Option<f64>, equiv: f64| match r {
        Some(r) if r > 0.0 => r,
        _ => equiv,
    };
    let loads = counted(k.gld_requests_per_warp, ld_equiv);
    let stores = counted(k.gst_requests_per_warp, st_equiv);
    let transactions_per_request = if loads + stores > 0.0 {
        ((ld_equiv + st_equiv) / (loads + stores)).max(1.0)
    } else {
        1.0
    };
    MemoryRequests {
        loads,
        stores,
        transactions_per_request,
    }
}

/// The fraction of global loads served by DRAM: the DRAM sectors read over the L2 read sectors
/// when the profiler counted those (`l2_read_transactions`), else over the sectors the loads
/// asked for: after Kepler the counters have a fixed unit, so 4 sectors per (coalesced) load
/// request; Kepler counts 32- to 128-byte segments, at least one sector each, so one sector per
/// transaction. Clamped to 0..1; 1 for a kernel without loads.
pub fn l2_miss_ratio(cc: ComputeCapability, k: &KernelCounters, load_requests: f64) -> f64 {
    let sectors_asked = match k.l2_read_per_warp {
        Some(s) if s > 0.0 => s,
        _ if cc.major <= 3 => k.gld_per_warp,
        _ => 4.0 * load_requests,
    };
    if sectors_asked > 0.0 {
        (k.dram_read_per_warp / sectors_asked).clamp(0.0, 1.0)
    } else {
        1.0
    }
}

/// Lanes of an SM that one instruction per warp scheduler per cycle keeps busy:
/// `min(cores_per_sm, 32 x warp schedulers)`. The counters path has ILP = 1, and a Kepler SMX's
/// 192 cores are kept busy only by dual issue: each of its 4 schedulers issues two independent
/// instructions of one warp per cycle (CUDA C Programming Guide, "Compute Capability 3.x" and
/// "Multiprocessor Level": 8L instructions hide a latency of L cycles only with enough ILP for
/// the schedulers to issue pairs). Without a second independent instruction a scheduler issues
/// one, 4 x 32 = 128 lanes. Maxwell and later have 32 lanes per scheduler, so there it is the
/// core count.
pub fn issue_lanes_per_sm(device: &Device) -> f64 {
    let schedulers = f64::from(device.warp_schedulers_per_sm.max(1));
    f64::from(device.cores_per_sm).min(32.0 * schedulers)
}

/// What one arithmetic warp instruction adds to a warp's time in wu2019's `Comp_cycles`, whose
/// `CPW_C = Comp_cycles / RWP_C` lets at most one warp per scheduler compute at a time: a
/// scheduler with `w` resident warps, each instruction depending on the one before with latency
/// `L`, finishes `w` instructions every `max(w x issue, L)` cycles (it interleaves the warps, one
/// instruction per cycle), so each warp's instruction costs `max(issue, L / w)`: the latency
/// when the scheduler has one warp, one issue cycle (32 / 32 lanes, [`issue_lanes_per_sm`]) once
/// it has `L` warps or more. The dependent latency alone charged every instruction as if its
/// scheduler had a single warp.
pub fn wu_cycles_per_instruction(device: &Device, lat: &DeviceLatencies, active_warps: f64) -> f64 {
    let schedulers = f64::from(device.warp_schedulers_per_sm.max(1));
    let issue = 32.0 / (issue_lanes_per_sm(device) / schedulers);
    let warps_per_scheduler = (active_warps / schedulers).max(1.0);
    issue.max(lat.fp32_dep_cycles / warps_per_scheduler)
}

/// Resident warps per SM for the models: the measured average when the row counts
/// `achieved_occupancy` (its fraction of the SM's maximum warps), else the exact occupancy of
/// the block (`theoretical_warps`: active blocks x warps per block). The measured value is capped
/// by the theoretical one (the SM cannot hold more) and is at least one warp. nvprof defines
/// achieved occupancy as the ratio of the average active warps per active cycle to the maximum
/// warps an SM supports (CUDA Profiler User's Guide, metric `achieved_occupancy`; Nsight's
/// "Achieved Occupancy" page: it falls below the theoretical one when warps finish unevenly,
/// blocks are few per SM or the last wave is partial), so it is the `N` the latency-hiding
/// terms of the models mean.
pub fn resident_warps(device: &Device, k: &KernelCounters, theoretical_warps: f64) -> f64 {
    match k.achieved_occupancy {
        Some(a) => (a * f64::from(device.limits.max_warps_per_sm))
            .min(theoretical_warps)
            .max(1.0),
        None => theoretical_warps,
    }
}

/// DRAM bytes (read plus write) per warp memory request, as measured: the bytes each request
/// moves across the DRAM interface. mwp-cwp's and hong-kim's bandwidth limit
/// (`MWP_peak_BW = peak BW / (BW_per_warp x active SMs)`, `BW_per_warp = f x bytes / Mem_L`)
/// charges each warp request its DRAM bytes; taking 128 bytes for every request charged a
/// request that hits in L2 as if it came from DRAM. At least 1 byte (a kernel whose requests
/// all hit in L2 is then never bandwidth-bound), 128 when there are no requests.
pub fn dram_bytes_per_request(k: &KernelCounters, requests_per_warp: f64) -> f64 {
    if requests_per_warp > 0.0 && k.warps > 0.0 {
        (k.dram_bytes / k.warps / requests_per_warp).max(1.0)
    } else {
        128.0
    }
}

/// wu2019's departure delay for the counters path, cycles: the architecture's spacing of two
/// requests of an SM, or the time the SM's share of the achievable DRAM bandwidth needs to move
/// one request's DRAM bytes, whichever is longer. wu2019 has no bandwidth term (its memory
/// throughput is `RWP_M = Mem_L / departure delay` requests in flight per SM), so without this a
/// streaming kernel moved 128 bytes every 3 cycles per SMX on Kepler, above the peak bandwidth.
/// The achievable bandwidth is peak x `dram_efficiency` (data/latencies.toml), shared by the
/// SMs that have blocks.
pub fn wu_departure_delay(
    device: &Device,
    lat: &DeviceLatencies,
    dram_bytes_per_request: f64,
    active_sms: f64,
) -> f64 {
    // GB/s / MHz = kB per microsecond / cycles per microsecond = 1000 bytes per cycle.
    let bytes_per_clk_sm = device.memory_bandwidth_gbs * lat.dram_efficiency * 1000.0
        / device.core_clock_mhz
        / active_sms.max(1.0);
    lat.departure_delay_cycles
        .max(dram_bytes_per_request / bytes_per_clk_sm.max(1e-9))
}

/// The inputs of the four counter-driven models for one launch on one device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CounterInputs {
    pub roofline: RooflineInputs,
    pub mwp_cwp: MwpCwpInputs,
    pub hong_kim: HongKimInputs,
    pub wu: WuInputs,
    /// Active blocks per SM: the exact occupancy, capped by the blocks each SM receives.
    pub active_blocks_per_sm: f64,
}

/// The assumptions of [`inputs`] for a device, one line each (the same for every row).
pub fn defaults_notes(device: &Device) -> Result<Vec<String>> {
    let lat = device_latencies(device)?;
    let mut notes = lat.notes;
    let (ld, st, why) = transactions_per_request(device.compute_capability);
    notes.push(format!(
        "counters path: {ld} load and {st} store transactions per coalesced warp request on {}: {why}",
        device.name
    ));
    notes.extend(
        [
            "counters path: global load/store transactions become coalesced warp memory requests at the architecture's transactions per request (avg_trans_warp = 1, uncoal_per_mw = 1), unless the row counts the requests (gld_requests, gst_requests): then those, with transactions per request = transactions / requests",
            "counters path: non-memory warp instructions are arithmetic at the dependent FP32/INT latency; ILP = MLP = 1, so each warp scheduler issues one instruction per cycle: mwp-cwp SIMD_width and hong-kim Issue_cycles use min(cores per SM, 32 x schedulers) lanes",
            "counters path: the latencies are load-to-use times (pointer-chase micro-benchmarks), so mwp-cwp's AMAT (eq 4.24) counts each level once: DRAM latency x L2 miss ratio + L2 latency x (1 - L2 miss ratio)",
            "counters path: wu Comp_cycles = arithmetic warp instructions x max(1 issue cycle, dependent latency / active warps per scheduler) (a scheduler interleaves its warps)",
            "counters path: no synchronization, shared-memory, bank-conflict or spill cost (no counters for them)",
            "counters path: L2 miss ratio = DRAM read sectors / L2 read sectors when counted, else / sectors the loads asked for (4 per load request; on Kepler 1 per transaction, a segment of 1 to 4 sectors), clamped to 0..1; L1 miss ratio 1 (global loads bypass L1)",
            "counters path: when dram_write_transactions is absent, DRAM writes = gst_transactions (every store transaction reaches DRAM)",
            "counters path: the DRAM bytes of a warp memory request are measured: (dram_read + dram_write) x 32 / (warps x requests per warp), at least 1 (mwp-cwp data_size_bytes x 32, hong-kim load_bytes_per_warp), so a request served by L2 does not count against the DRAM bandwidth",
            "counters path: wu departure delay = max(architecture departure delay, DRAM bytes per request / (peak bandwidth x dram_efficiency / active SMs / core clock)): wu2019 has no bandwidth term of its own",
            "counters path: resident warps per SM (mwp-cwp N, wu's warps per scheduler) = achieved_occupancy x max warps per SM when counted, capped by the exact occupancy; else the exact occupancy (hong-kim keeps the exact occupancy: its repetitions count whole blocks)",
            "counters path: roofline flops = 64 x inst_executed (2 per thread instruction, so compute time is the issue time at one instruction per core per cycle); dram_bytes = 32 x DRAM transactions",
            "counters path: exact occupancy = active blocks per SM (registers, shared memory, limits), capped by ceil(blocks / SMs)",
        ]
        .map(String::from),
    );
    Ok(notes)
}

/// Turns one launch's counters into the four models' inputs for `device`.
pub fn inputs(device: &Device, lat: &DeviceLatencies, k: &KernelCounters) -> Result<CounterInputs> {
    let tpb = k.threads_per_block;
    let resources = BlockResources {
        threads_per_block: tpb as u32,
        registers_per_thread: k.regs_per_thread as u32,
        shared_memory_per_block_bytes: k.smem_per_block_bytes.min(f64::from(u32::MAX)) as u32,
    };
    let occ = occupancy(device, &resources)?;
    if occ.active_blocks_per_sm == 0 {
        return Err(Error::invalid(
            "block",
            format!(
                "a block of {tpb} threads with {} registers per thread and {} bytes of shared memory does not fit on an SM of {}",
                k.regs_per_thread, k.smem_per_block_bytes, device.name
            ),
        ));
    }
    let sms = f64::from(device.sm_count);
    let blocks_per_sm = (k.blocks / sms).ceil();
    let active_blocks = f64::from(occ.active_blocks_per_sm)
        .min(blocks_per_sm)
        .max(1.0);
    let warps_per_block = (tpb / 32.0).ceil();
    let active_sms = sms.min(k.blocks);
    let req = memory_requests(device.compute_capability, k);
    let mem_per_warp = req.loads + req.stores;
    let l2_miss_ratio = l2_miss_ratio(device.compute_capability, k, req.loads);
    let warps = resident_warps(device, k, active_blocks * warps_per_block);
    let dram_per_request = dram_bytes_per_request(k, mem_per_warp);
    let comp_per_warp = (k.inst_per_warp - mem_per_warp).max(0.0);
    let freq_ghz = device.core_clock_mhz / 1000.0;

    let roofline = RooflineInputs {
        flops: 2.0 * k.thread_instructions,
        dram_bytes: k.dram_bytes,
        launch_overhead_us: None,
    };
    let mwp_cwp = MwpCwpInputs {
        inst: k.inst_per_warp,
        mem_inst: mem_per_warp,
        total_warps: k.warps,
        active_sms,
        avg_inst_lat: lat.fp32_dep_cycles,
        ilp: 1.0,
        n: warps,
        warp_size: 32.0,
        simd_width: issue_lanes_per_sm(device),
        dram_lat: lat.dram_cycles,
        avg_trans_warp: req.transactions_per_request,
        departure_delay: lat.departure_delay_cycles,
        miss_ratio_l2: l2_miss_ratio,
        hit_lat_l2: lat.l2_hit_cycles,
        miss_ratio_l1: 1.0,
        hit_lat_l1: lat.l1_hit_cycles,
        freq_ghz,
        data_size_bytes: dram_per_request / 32.0,
        mem_peak_bandwidth_gbs: device.memory_bandwidth_gbs,
        mlp: 1.0,
        w_serial: 0.0,
        amat_latencies: AmatLatencies::LoadToUse,
    };
    // Hong and Kim's `Issue_cycles` is the SM's time to issue one warp instruction (4 cycles on
    // their 8-lane, one-scheduler SM): 32 over the lanes the SM's schedulers issue to per cycle.
    let lanes = issue_lanes_per_sm(device);
    // A request of several transactions is Hong and Kim's uncoalesced request.
    let (coal, uncoal, uncoal_per_mw) = if req.transactions_per_request > 1.0 {
        (0.0, mem_per_warp, req.transactions_per_request)
    } else {
        (mem_per_warp, 0.0, 1.0)
    };
    let hong_kim = HongKimInputs {
        warp_size: 32.0,
        issue_cycles: 32.0 / lanes,
        freq_ghz,
        mem_bandwidth_gbs: device.memory_bandwidth_gbs,
        mem_ld: lat.dram_cycles,
        departure_del_uncoal: lat.departure_delay_cycles,
        departure_del_coal: lat.departure_delay_cycles,
        threads_per_block: warps_per_block * 32.0,
        blocks: k.blocks,
        active_sms,
        // Hong and Kim's active blocks form the repetitions (`#Rep = blocks / (active blocks x
        // active SMs)`), a whole number of blocks: the exact occupancy, not the measured average.
        active_blocks_per_sm: active_blocks,
        comp_insts: comp_per_warp,
        uncoal_mem_insts: uncoal,
        coal_mem_insts: coal,
        synch_insts: 0.0,
        uncoal_per_mw,
        load_bytes_per_warp: dram_per_request,
        sync_factor: SyncFactor::Npwb,
        rep_rounding: RepRounding::None,
    };
    let l = &device.limits;
    let wu = WuInputs {
        comp_cycles: comp_per_warp * wu_cycles_per_instruction(device, lat, warps),
        mem_insts_global: mem_per_warp,
        mem_insts_shared: 0.0,
        mem_insts_local: 0.0,
        n_conf: 1.0,
        sync_insts: 0.0,
        mem_l_global: lat.dram_cycles,
        mem_l_shared: lat.shared_load_cycles,
        departure_delay: wu_departure_delay(device, lat, dram_per_request, active_sms),
        threads_per_block: warps_per_block * 32.0,
        warp_size: 32.0,
        n_ws: f64::from(device.warp_schedulers_per_sm),
        max_b: f64::from(l.max_blocks_per_sm),
        max_w: f64::from(l.max_warps_per_sm),
        max_r: f64::from(l.registers_per_sm),
        reg_per_thread: k.regs_per_thread,
        max_smem_bytes: f64::from(l.shared_memory_per_sm_bytes),
        smem_used_bytes: k.smem_per_block_bytes,
        smem_unit_bytes: f64::from(l.shared_memory_allocation_unit_bytes.max(1)),
        n_b: k.blocks,
        n_sm: sms,
        freq_mhz: device.core_clock_mhz,
        comu_bytes: 0.0,
        comu_bw_gbs: None,
        max_threads_per_block: None,
    };
    Ok(CounterInputs {
        roofline,
        mwp_cwp,
        hong_kim,
        wu,
        active_blocks_per_sm: active_blocks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::catalogue;
    use crate::workload::measurement::{Counters, Dim3};

    fn row() -> Measurement {
        let mut m = Measurement::new("k", 100.0, "t.csv", 2);
        m.grid = Some(Dim3::new(64, 1, 1));
        m.block = Some(Dim3::new(256, 1, 1));
        m.counters = Some(Counters {
            regs_per_thread: Some(16),
            static_smem_bytes: Some(0),
            dynamic_smem_bytes: Some(0),
            warps_launched: Some(512.0),
            inst_executed: Some(51200.0),
            gld_transactions: Some(2048.0),
            gst_transactions: Some(1024.0),
            dram_read_transactions: Some(1024.0),
            dram_write_transactions: Some(1024.0),
            ..Counters::default()
        });
        m
    }

    #[test]
    fn per_warp_counts_and_bytes() {
        let k = KernelCounters::from_measurement(&row()).unwrap();
        // 51200 warp instructions over 512 warps = 100 per warp; 2048 / 512 = 4 loads per warp.
        assert_eq!(k.inst_per_warp, 100.0);
        assert_eq!(k.gld_per_warp, 4.0);
        assert_eq!(k.gst_per_warp, 2.0);
        // (1024 + 1024) transactions x 32 bytes.
        assert_eq!(k.dram_bytes, 65536.0);
        // 1024 DRAM reads over 512 warps.
        assert_eq!(k.dram_read_per_warp, 2.0);
    }

    #[test]
    fn one_coalesced_kernel_gives_the_same_requests_on_kepler_and_maxwell() {
        // vectorAdd's warp: two coalesced float loads and one store. nvprof counts them as 2 + 1
        // transactions on Kepler, 16 + 4 on Maxwell (16-byte load units, 32-byte store
        // sectors), 32 + 4 on Pascal; every warp reads 8 DRAM sectors (2 x 128 bytes).
        let mut requests = Vec::new();
        for (gpu, gld, gst) in [
            ("GTX-680", 2.0, 1.0),
            ("GTX-970", 16.0, 4.0),
            ("GTX 1080", 32.0, 4.0),
        ] {
            let mut m = row();
            let c = m.counters.as_mut().unwrap();
            c.gld_transactions = Some(gld * 512.0);
            c.gst_transactions = Some(gst * 512.0);
            c.dram_read_transactions = Some(8.0 * 512.0);
            let k = KernelCounters::from_measurement(&m).unwrap();
            let d = catalogue::find(gpu).unwrap();
            let i = inputs(d, &device_latencies(d).unwrap(), &k).unwrap();
            requests.push((
                i.mwp_cwp.mem_inst,
                i.hong_kim.coal_mem_insts,
                i.wu.mem_insts_global,
            ));
            // Every sector read comes from DRAM.
            assert_eq!(i.mwp_cwp.miss_ratio_l2, 1.0, "{gpu}");
        }
        assert_eq!(requests, vec![(3.0, 3.0, 3.0); 3]);
    }

    #[test]
    fn kepler_inputs_take_the_table_and_the_k40_microbenchmarks() {
        let d = catalogue::find("GTX-680").unwrap();
        let lat = device_latencies(d).unwrap();
        // data/latencies.toml, Kepler row: DRAM 331, L2 188, FP32 dependent 9.
        assert_eq!(lat.dram_cycles, 331.0);
        assert_eq!(lat.l2_hit_cycles, 188.0);
        assert_eq!(lat.fp32_dep_cycles, 9.0);
        let k = KernelCounters::from_measurement(&row()).unwrap();
        let i = inputs(d, &lat, &k).unwrap();
        // 64 blocks over 8 SMs = 8 blocks per SM; 8 blocks of 8 warps fit a Kepler SM (64 warps).
        assert_eq!(i.active_blocks_per_sm, 8.0);
        assert_eq!(i.mwp_cwp.n, 64.0);
        // 100 - (4 + 2) = 94 arithmetic warp instructions; 64 active warps over 4 schedulers
        // are 16 per scheduler, more than the 9-cycle latency, so one issue cycle each.
        assert_eq!(i.wu.comp_cycles, 94.0);
        assert_eq!(i.roofline.flops, 2.0 * 51200.0 * 32.0);
        // Every model runs on these inputs.
        crate::model::mwp_cwp::predict(&i.mwp_cwp).unwrap();
        crate::model::hong_kim::predict(&i.hong_kim).unwrap();
        crate::model::wu::predict(&i.wu).unwrap();
        let k40 = catalogue::find("Tesla K40").unwrap();
        let lat = device_latencies(k40).unwrap();
        // parra2016 Table 4.3 departure delay.
        assert_eq!(lat.departure_delay_cycles, 3.0);
    }

    #[test]
    fn latencies_are_the_project_table_s() {
        // One source: the counters path reads data/latencies.toml through device::latencies.
        // Every catalogue GPU without micro-benchmarks of its own gets the table's values.
        for d in catalogue::all() {
            let Ok(table) = latencies::for_device(d) else {
                continue;
            };
            let lat = device_latencies(d).unwrap();
            if d.microbenchmarks.is_none() {
                let t = &table.values;
                assert_eq!(
                    (
                        lat.dram_cycles,
                        lat.l2_hit_cycles,
                        lat.l1_hit_cycles,
                        lat.shared_load_cycles,
                        lat.fp32_dep_cycles
                    ),
                    (t.dram, t.l2_hit, t.l1_hit, t.shared_load, t.fp32),
                    "{}",
                    d.name
                );
            }
        }
        // The numbers the copy had: Kepler 331 / 188 / 32 / 26 / 9 and a departure delay of 3;
        // Maxwell 379 / 225 / 82 / 24 / 6 and 4 (arch_defaults.csv rows, arch_latencies.md).
        for (gpu, want) in [
            ("GTX-680", (331.0, 188.0, 32.0, 26.0, 9.0, 3.0)),
            ("GTX-970", (379.0, 225.0, 82.0, 24.0, 6.0, 4.0)),
        ] {
            let l = device_latencies(catalogue::find(gpu).unwrap()).unwrap();
            assert_eq!(
                (
                    l.dram_cycles,
                    l.l2_hit_cycles,
                    l.l1_hit_cycles,
                    l.shared_load_cycles,
                    l.fp32_dep_cycles,
                    l.departure_delay_cycles
                ),
                want,
                "{gpu}"
            );
            assert!(l.notes[0].contains("data/latencies.toml"), "{:?}", l.notes);
        }
    }

    #[test]
    fn counted_requests_make_several_transactions_one_request() {
        // matSum with 8 x 8 blocks on Kepler: a warp is 4 rows of 8 floats, so each of its two
        // loads and its store touches 4 128-byte lines: 8 load and 4 store transactions per
        // warp (as amaris2018's GTX 680 rows count them) for 2 load and 1 store requests.
        let mut m = row();
        let c = m.counters.as_mut().unwrap();
        c.gld_transactions = Some(8.0 * 512.0);
        c.gst_transactions = Some(4.0 * 512.0);
        let k = KernelCounters::from_measurement(&m).unwrap();
        let kepler = catalogue::find("GTX-680").unwrap().compute_capability;
        // Without request counts every transaction is a coalesced request: 8 + 4, 1 each.
        let r = memory_requests(kepler, &k);
        assert_eq!(
            (r.loads, r.stores, r.transactions_per_request),
            (8.0, 4.0, 1.0)
        );
        // With them: 2 + 1 requests of (8 + 4) / 3 = 4 transactions.
        let c = m.counters.as_mut().unwrap();
        c.gld_requests = Some(2.0 * 512.0);
        c.gst_requests = Some(512.0);
        let k = KernelCounters::from_measurement(&m).unwrap();
        let r = memory_requests(kepler, &k);
        assert_eq!(
            (r.loads, r.stores, r.transactions_per_request),
            (2.0, 1.0, 4.0)
        );
        // The models get the requests, and hong-kim an uncoalesced request of 4 transactions.
        let d = catalogue::find("GTX-680").unwrap();
        let i = inputs(d, &device_latencies(d).unwrap(), &k).unwrap();
        assert_eq!((i.mwp_cwp.mem_inst, i.mwp_cwp.avg_trans_warp), (3.0, 4.0));
        assert_eq!(i.hong_kim.uncoal_mem_insts, 3.0);
        assert_eq!(i.hong_kim.coal_mem_insts, 0.0);
        assert_eq!(i.hong_kim.uncoal_per_mw, 4.0);
        assert_eq!(i.wu.mem_insts_global, 3.0);
        // On Maxwell the units are 8 per coalesced load and 4 per store: 16 load and 4 store
        // units for 2 + 1 requests are (16 / 8 + 4 / 4) / 3 = 1 coalesced request each.
        let maxwell = catalogue::find("GTX-970").unwrap().compute_capability;
        let c = m.counters.as_mut().unwrap();
        c.gld_transactions = Some(16.0 * 512.0);
        c.gst_transactions = Some(4.0 * 512.0);
        let k = KernelCounters::from_measurement(&m).unwrap();
        let r = memory_requests(maxwell, &k);
        assert_eq!(
            (r.loads, r.stores, r.transactions_per_request),
            (2.0, 1.0, 1.0)
        );
    }

    #[test]
    fn l2_read_sectors_give_the_miss_ratio_when_counted() {
        // row(): 1024 DRAM read sectors over 512 warps = 2 per warp; 4 load transactions per
        // warp. On Maxwell without L2 counts: 4 / 8 = 0.5 load requests asking 2 sectors,
        // 2 / 2 = 1. With 8 L2 read sectors per warp counted: 2 / 8 = 0.25.
        let mut m = row();
        let maxwell = catalogue::find("GTX-970").unwrap().compute_capability;
        let k = KernelCounters::from_measurement(&m).unwrap();
        assert_eq!(l2_miss_ratio(maxwell, &k, 0.5), 1.0);
        m.counters.as_mut().unwrap().l2_read_transactions = Some(8.0 * 512.0);
        let k = KernelCounters::from_measurement(&m).unwrap();
        assert_eq!(l2_miss_ratio(maxwell, &k, 0.5), 0.25);
        // A negative or non-finite count is ignored, not used.
        m.counters.as_mut().unwrap().l2_read_transactions = Some(f64::NAN);
        let k = KernelCounters::from_measurement(&m).unwrap();
        assert_eq!(k.l2_read_per_warp, None);
    }

    #[test]
    fn one_instruction_per_scheduler_per_cycle_without_ilp() {
        // GTX 680: 192 cores, 4 schedulers; single issue fills 4 x 32 = 128 lanes. GTX 970: 128
        // cores, 4 schedulers: 128. hong-kim's Issue_cycles is 32 / 128 = 0.25 cycles per warp
        // instruction on either SM.
        for gpu in ["GTX-680", "GTX-970"] {
            let d = catalogue::find(gpu).unwrap();
            assert_eq!(issue_lanes_per_sm(d), 128.0, "{gpu}");
            let k = KernelCounters::from_measurement(&row()).unwrap();
            let i = inputs(d, &device_latencies(d).unwrap(), &k).unwrap();
            assert_eq!(i.mwp_cwp.simd_width, 128.0, "{gpu}");
            assert_eq!(i.hong_kim.issue_cycles, 0.25, "{gpu}");
        }
    }

    #[test]
    fn wu_arithmetic_cost_is_the_latency_shared_by_a_scheduler_s_warps() {
        // GTX 680: dependent latency 9 cycles, 4 schedulers, one issue cycle per instruction.
        // 2 active warps: under one per scheduler, so the whole latency, 9. 8 warps: 2 per
        // scheduler, 9 / 2 = 4.5. 64 warps: 16 per scheduler, max(1, 9 / 16) = 1.
        let d = catalogue::find("GTX-680").unwrap();
        let lat = device_latencies(d).unwrap();
        assert_eq!(wu_cycles_per_instruction(d, &lat, 2.0), 9.0);
        assert_eq!(wu_cycles_per_instruction(d, &lat, 8.0), 4.5);
        assert_eq!(wu_cycles_per_instruction(d, &lat, 64.0), 1.0);
        // GTX 970: latency 6; 12 warps are 3 per scheduler, 6 / 3 = 2.
        let d = catalogue::find("GTX-970").unwrap();
        let lat = device_latencies(d).unwrap();
        assert_eq!(wu_cycles_per_instruction(d, &lat, 12.0), 2.0);
    }

    #[test]
    fn mwp_cwp_counts_each_cache_level_once() {
        // row() on the GTX 680: 4 load transactions and 2 DRAM read sectors per warp, so the L2
        // miss ratio is 2 / 4 = 0.5 (Kepler: one sector per transaction). Load-to-use AMAT =
        // 331 * 0.5 + 188 * (1 - 0.5) = 165.5 + 94 = 259.5 cycles (added up as printed it would
        // be 331 * 0.5 + 188 + 32 = 385.5).
        let d = catalogue::find("GTX-680").unwrap();
        let k = KernelCounters::from_measurement(&row()).unwrap();
        let i = inputs(d, &device_latencies(d).unwrap(), &k).unwrap();
        assert_eq!(i.mwp_cwp.amat_latencies, AmatLatencies::LoadToUse);
        assert_eq!(i.mwp_cwp.miss_ratio_l2, 0.5);
        let r = crate::model::mwp_cwp::predict(&i.mwp_cwp).unwrap();
        assert!((r.amat - 259.5).abs() < 1e-9, "{}", r.amat);
    }

    #[test]
    fn dram_bytes_per_request_are_the_measured_ones() {
        // row(): (1024 + 1024) DRAM sectors x 32 B = 65536 B over 512 warps = 128 B per warp.
        // On the GTX 680 (Kepler: one transaction per request) 4 + 2 = 6 requests per warp:
        // 128 / 6 = 21.33 B each, not 128; mwp-cwp's data size is that over 32 lanes.
        let d = catalogue::find("GTX-680").unwrap();
        let k = KernelCounters::from_measurement(&row()).unwrap();
        assert!((dram_bytes_per_request(&k, 6.0) - 128.0 / 6.0).abs() < 1e-12);
        let i = inputs(d, &device_latencies(d).unwrap(), &k).unwrap();
        assert!((i.mwp_cwp.data_size_bytes - 128.0 / 6.0 / 32.0).abs() < 1e-12);
        assert!((i.hong_kim.load_bytes_per_warp - 128.0 / 6.0).abs() < 1e-12);
        // No DRAM traffic: 1 byte (never bandwidth-bound); no requests: 128.
        let mut m = row();
        let c = m.counters.as_mut().unwrap();
        c.dram_read_transactions = Some(0.0);
        c.dram_write_transactions = Some(0.0);
        let k0 = KernelCounters::from_measurement(&m).unwrap();
        assert_eq!(dram_bytes_per_request(&k0, 6.0), 1.0);
        assert_eq!(dram_bytes_per_request(&k, 0.0), 128.0);
    }

    #[test]
    fn wu_departure_delay_is_at_least_the_dram_time_of_a_request() {
        // GTX 680: 192.26 GB/s x 0.80 (Kepler dram_efficiency) = 153.808 GB/s; at 1058 MHz that
        // is 145.376 B per cycle, 18.172 per SMX over 8 SMX. A 128-byte request: 7.044 cycles,
        // above the 3-cycle departure delay; 21.33 bytes: 1.17 cycles, so the 3 cycles stay.
        let d = catalogue::find("GTX-680").unwrap();
        let lat = device_latencies(d).unwrap();
        assert_eq!(lat.dram_efficiency, 0.8);
        let per_sm: f64 = 192.26 * 0.8 * 1000.0 / 1058.0 / 8.0;
        assert!((per_sm - 18.172).abs() < 1e-3);
        let dd = wu_departure_delay(d, &lat, 128.0, 8.0);
        assert!((dd - 7.0438).abs() < 1e-4, "{dd}");
        assert_eq!(wu_departure_delay(d, &lat, 128.0 / 6.0, 8.0), 3.0);
        // Two SMX with blocks share the whole bandwidth: 72.688 B per cycle each, 1.76 cycles.
        assert_eq!(wu_departure_delay(d, &lat, 128.0, 2.0), 3.0);
        // A streaming row (vectorAdd-like: 2 loads + 1 store, 12 sectors per warp) gets it.
        let mut m = row();
        let c = m.counters.as_mut().unwrap();
        c.gld_transactions = Some(2.0 * 512.0);
        c.gst_transactions = Some(512.0);
        c.dram_read_transactions = Some(8.0 * 512.0);
        c.dram_write_transactions = Some(4.0 * 512.0);
        let k = KernelCounters::from_measurement(&m).unwrap();
        let i = inputs(d, &lat, &k).unwrap();
        assert!((i.wu.departure_delay - 7.0438).abs() < 1e-4);
        assert!((i.mwp_cwp.data_size_bytes - 4.0).abs() < 1e-12);
    }

    #[test]
    fn achieved_occupancy_gives_the_resident_warps() {
        // row() on the GTX 680: 8 blocks of 8 warps per SMX, 64 warps in theory. An achieved
        // occupancy of 0.5 is 0.5 x 64 = 32 warps: mwp-cwp N = 32 (hong-kim keeps its 8 whole
        // blocks: its repetitions count blocks),
        // wu 32 / 4 = 8 warps per scheduler sharing the 9-cycle latency: 9 / 8 = 1.125 cycles
        // per instruction, 94 x 1.125 = 105.75 (with the theoretical 64 warps it is 1 cycle).
        let d = catalogue::find("GTX-680").unwrap();
        let lat = device_latencies(d).unwrap();
        let mut m = row();
        m.counters.as_mut().unwrap().achieved_occupancy = Some(0.5);
        let k = KernelCounters::from_measurement(&m).unwrap();
        assert_eq!(resident_warps(d, &k, 64.0), 32.0);
        let i = inputs(d, &lat, &k).unwrap();
        assert_eq!(i.mwp_cwp.n, 32.0);
        assert_eq!(i.hong_kim.active_blocks_per_sm, 8.0);
        crate::model::hong_kim::predict(&i.hong_kim).unwrap();
        assert_eq!(i.wu.comp_cycles, 105.75);
        // 0.05 x 64 = 3.2 warps: under one per scheduler, the whole 9-cycle latency.
        m.counters.as_mut().unwrap().achieved_occupancy = Some(0.05);
        let k = KernelCounters::from_measurement(&m).unwrap();
        let i = inputs(d, &lat, &k).unwrap();
        assert!((i.mwp_cwp.n - 3.2).abs() < 1e-12);
        assert_eq!(i.wu.comp_cycles, 94.0 * 9.0);
        // Capped by the theoretical occupancy, at least one warp; absent or out of range: the
        // theoretical value.
        assert_eq!(resident_warps(d, &k, 2.0), 2.0);
        m.counters.as_mut().unwrap().achieved_occupancy = Some(0.001);
        let k = KernelCounters::from_measurement(&m).unwrap();
        assert_eq!(resident_warps(d, &k, 64.0), 1.0);
        m.counters.as_mut().unwrap().achieved_occupancy = Some(1.5);
        let k = KernelCounters::from_measurement(&m).unwrap();
        assert_eq!(k.achieved_occupancy, None);
        assert_eq!(resident_warps(d, &k, 64.0), 64.0);
    }

    #[test]
    fn missing_counter_is_named() {
        let mut m = row();
        m.counters.as_mut().unwrap().inst_executed = None;
        let e = KernelCounters::from_measurement(&m).unwrap_err();
        assert!(e.to_string().contains("inst_executed"), "{e}");
        // Without DRAM writes, the store transactions stand in: (1024 + 1024) x 32 bytes.
        let mut m = row();
        m.counters.as_mut().unwrap().dram_write_transactions = None;
        assert_eq!(
            KernelCounters::from_measurement(&m).unwrap().dram_bytes,
            65536.0
        );
        let mut m = row();
        m.counters = None;
        assert!(KernelCounters::from_measurement(&m).is_err());
    }
}
