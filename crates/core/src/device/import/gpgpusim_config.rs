//! Reads a GPGPU-Sim / Accel-Sim `gpgpusim.config` (one `-option value` per line, `#` comments)
//! into a [`DeviceDraft`].
//!
//! Mapping (GPGPU-Sim option -> device-file field):
//!
//! | field | from |
//! |---|---|
//! | name | the name given on import; else a `# This config models the NAME` comment; else the config's folder name |
//! | compute capability | `-gpgpu_compute_capability_major` . `_minor` |
//! | `sm_count` | `-gpgpu_n_clusters` x `-gpgpu_n_cores_per_cluster` |
//! | `cores_per_sm`, `latencies.fp32_per_clk_sm` | `-gpgpu_num_sp_units` x warp size / the FP MAD initiation interval (`-ptx_opcode_initiation_fp`, 4th entry: ADD,MAX,MUL,MAD,DIV) |
//! | `latencies.fp64/int/sfu_per_clk_sm` | `-gpgpu_num_dp/int/sfu_units` x warp size / MAD (SFU: first) initiation interval |
//! | `warp_schedulers_per_sm` | `-gpgpu_num_sched_per_core` |
//! | base = boost clock | `-gpgpu_clock_domains` core clock (the clock the simulator runs at) |
//! | `memory_bandwidth_gbs` | `-gpgpu_n_mem` x `-gpgpu_n_mem_per_ctrlr` x `-gpgpu_dram_buswidth` (bytes) x DRAM clock x `-dram_data_command_freq_ratio` |
//! | `l2_cache_bytes` | `-gpgpu_cache:dl2` sets x line x ways per sub-partition x `-gpgpu_n_mem` x `-gpgpu_n_sub_partition_per_mchannel` |
//! | `l1_shared_per_sm_bytes` | `-gpgpu_unified_l1d_size` KB (else the programming guide's value) |
//! | limits | `-gpgpu_shader_registers`, `-gpgpu_registers_per_block`, `-gpgpu_shader_core_pipeline` (threads:warp size), `-gpgpu_shader_cta`, `-gpgpu_shmem_size`, `-gpgpu_shmem_per_block` |
//! | `latencies.l1_hit`, `shared_load` | `-gpgpu_l1_latency`, `-gpgpu_smem_latency` |
//! | `latencies.l2_hit` | `-gpgpu_l1_latency` + `-gpgpu_l2_rop_latency` (Accel-Sim's tuner sets the ROP latency to the measured L2 hit latency minus the L1 hit latency) |
//! | `latencies.dram` | L2 hit + `-dram_latency` (the tuner sets it to the measured DRAM latency minus the L2 hit latency) |
//! | `latencies.int`, `int_mul`, `int_div`, `fp32`, `fp64`, `special` | `-ptx_opcode_latency_int` ADD, MUL, DIV; `_fp` MAD; `_dp` MAD; `_sfu` |
//! | `[microbenchmarks]` | the four memory latencies above |
//! | `measured.launch_overhead_us` | `-gpgpu_kernel_launch_latency` core cycles / the core clock |
//!
//! A simulator configuration describes the simulated GPU, not a measurement: limits that differ
//! from the compute capability's table are written (they describe that GPU) and listed in the
//! notes. Interconnect, DRAM timing, scheduler policy and cache policies are not imported.

use std::collections::BTreeMap;
use std::path::Path;

use super::draft::{at_line, DeviceDraft, Sourced};
use super::{line_error, sourced_number};
use crate::device::ComputeCapability;
use crate::error::{Error, Result};

/// What the source strings call this input.
pub const TOOL: &str = "GPGPU-Sim config";

/// Sets, line size and associativity of one GPGPU-Sim cache (`S:32:128:24,...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheGeometry {
    pub sets: u64,
    pub line_bytes: u64,
    pub ways: u64,
}

impl CacheGeometry {
    pub fn bytes(&self) -> u64 {
        self.sets * self.line_bytes * self.ways
    }
}

/// Reads `S:32:128:24,L:B:...` (or the `S:32,128,24,...` form Accel-Sim's tuner prints).
pub fn cache_geometry(value: &str) -> Option<CacheGeometry> {
    let v = value.trim().trim_matches('"');
    let body = match v.split_once(':') {
        Some((kind, rest)) if kind.len() == 1 && kind.chars().all(|c| c.is_ascii_alphabetic()) => {
            rest
        }
        _ => v,
    };
    let mut nums = body.split([':', ',']).map(|t| t.trim().parse::<u64>().ok());
    let (sets, line_bytes, ways) = (nums.next()??, nums.next()??, nums.next()??);
    (sets > 0 && line_bytes > 0 && ways > 0).then_some(CacheGeometry {
        sets,
        line_bytes,
        ways,
    })
}

/// One option line.
#[derive(Debug, Clone)]
struct Opt {
    line: usize,
    value: String,
    text: String,
}

/// Reads a `gpgpusim.config`.
pub fn draft(text: &str, origin: &str) -> Result<DeviceDraft> {
    let mut options: BTreeMap<String, Opt> = BTreeMap::new();
    let mut modeled_name: Option<(usize, String, String)> = None;
    for (index, raw) in text.lines().enumerate() {
        let t = raw.trim();
        if let Some(c) = t.strip_prefix('#') {
            if let Some((_, name)) = c.split_once("This config models the ") {
                modeled_name.get_or_insert((index + 1, name.trim().to_string(), t.to_string()));
            }
            continue;
        }
        let Some(opt) = t.strip_prefix('-') else {
            continue;
        };
        let (flag, value) = opt.split_once(char::is_whitespace).unwrap_or((opt, ""));
        let value = value.split('#').next().unwrap_or("").trim().to_string();
        // Later lines override earlier ones, as in GPGPU-Sim.
        options.insert(
            flag.to_string(),
            Opt {
                line: index + 1,
                value,
                text: t.to_string(),
            },
        );
    }
    let mut d = DeviceDraft::new(TOOL, origin);
    for (field, hint) in [
        ("compute_capability", "-gpgpu_compute_capability_major and _minor"),
        ("sm_count", "-gpgpu_n_clusters and -gpgpu_n_cores_per_cluster"),
        ("cores_per_sm", "-gpgpu_num_sp_units and -ptx_opcode_initiation_fp"),
        ("boost_clock_mhz", "-gpgpu_clock_domains"),
        ("memory_bandwidth_gbs", "-gpgpu_n_mem, -gpgpu_dram_buswidth, -gpgpu_clock_domains and -dram_data_command_freq_ratio"),
        ("l2_cache_bytes", "-gpgpu_cache:dl2, -gpgpu_n_mem and -gpgpu_n_sub_partition_per_mchannel"),
    ] {
        d.hints.insert(field, hint);
    }
    let c = Config {
        options,
        origin: origin.to_string(),
    };
    d.name = match modeled_name {
        Some((n, name, text)) => Some(Sourced::new(name, at_line(TOOL, origin, n, &text))),
        None => Path::new(origin)
            .parent()
            .and_then(Path::file_name)
            .map(|f| f.to_string_lossy().into_owned())
            .filter(|f| !f.is_empty())
            .map(|f| Sourced::new(f, format!("the folder name of {origin}"))),
    };
    if let (Some(major), Some(minor)) = (
        c.number("gpgpu_compute_capability_major")?,
        c.number("gpgpu_compute_capability_minor")?,
    ) {
        d.compute_capability = Some(Sourced::new(
            ComputeCapability::new(major.value as u32, minor.value as u32),
            format!("{}; {}", major.source, minor.source),
        ));
    }
    if let (Some(clusters), Some(per)) = (
        c.number("gpgpu_n_clusters")?,
        c.number("gpgpu_n_cores_per_cluster")?,
    ) {
        d.sm_count = Some(Sourced::new(
            (clusters.value * per.value) as u32,
            format!("{} x {}", clusters.source, per.source),
        ));
    }
    let warp = match c.list("gpgpu_shader_core_pipeline")? {
        Some((v, src)) if v.len() == 2 && v[1] > 0.0 => {
            d.limits
                .insert("max_threads_per_sm", Sourced::new(v[0] as u32, src.clone()));
            d.limits
                .insert("max_warps_per_sm", Sourced::new((v[0] / v[1]) as u32, src));
            v[1]
        }
        _ => 32.0,
    };
    // Per-SM throughput of a unit kind: units x warp size / initiation interval.
    let throughput =
        |units: &str, initiation: &str, index: usize| -> Result<Option<Sourced<f64>>> {
            let (Some(n), Some((ii, ii_src))) = (c.number(units)?, c.list(initiation)?) else {
                return Ok(None);
            };
            match ii.get(index) {
                Some(&interval) if interval > 0.0 && n.value > 0.0 => Ok(Some(Sourced::new(
                    n.value * warp / interval,
                    format!(
                        "{} x warp size {warp} / initiation interval {interval} ({ii_src})",
                        n.source
                    ),
                ))),
                _ => Ok(None),
            }
        };
    if let Some(fp32) = throughput("gpgpu_num_sp_units", "ptx_opcode_initiation_fp", 3)? {
        d.cores_per_sm = Some(Sourced::new(fp32.value.round() as u32, fp32.source.clone()));
        d.latencies.insert("fp32_per_clk_sm", fp32);
    }
    for (field, units, initiation, index) in [
        (
            "fp64_per_clk_sm",
            "gpgpu_num_dp_units",
            "ptx_opcode_initiation_dp",
            3,
        ),
        (
            "int_per_clk_sm",
            "gpgpu_num_int_units",
            "ptx_opcode_initiation_int",
            3,
        ),
        (
            "sfu_per_clk_sm",
            "gpgpu_num_sfu_units",
            "ptx_opcode_initiation_sfu",
            0,
        ),
    ] {
        if let Some(v) = throughput(units, initiation, index)? {
            d.latencies.insert(field, v);
        }
    }
    if let Some(v) = c.number("gpgpu_num_sched_per_core")? {
        d.warp_schedulers_per_sm = Some(Sourced::new(v.value as u32, v.source));
    }
    let clocks = c.list("gpgpu_clock_domains")?;
    let core_clock = clocks.as_ref().and_then(|(v, src)| {
        v.first()
            .map(|&core| Sourced::new(core, format!("{src} (core clock)")))
    });
    d.boost_clock_mhz = core_clock.clone();
    let dram_clock = clocks.as_ref().and_then(|(v, src)| {
        v.get(3)
            .map(|&dram| Sourced::new(dram, format!("{src} (DRAM clock)")))
    });
    let n_mem = c.number("gpgpu_n_mem")?;
    if let (Some(n_mem), Some(width), Some(dram), Some(ratio)) = (
        &n_mem,
        c.number("gpgpu_dram_buswidth")?,
        &dram_clock,
        c.number("dram_data_command_freq_ratio")?,
    ) {
        let per_ctrl = c.number("gpgpu_n_mem_per_ctrlr")?;
        let chips = per_ctrl.as_ref().map_or(1.0, |p| p.value);
        d.memory_bandwidth_gbs = Some(Sourced::new(
            n_mem.value * chips * width.value * dram.value * ratio.value / 1000.0,
            format!(
                "{} channels x {chips} chips x {} bytes x {} MHz x {} transfers per clock / 1000 ({}; {}; {}; {})",
                n_mem.value, width.value, dram.value, ratio.value,
                n_mem.source, width.source, dram.source, ratio.source
            ),
        ));
    }
    if let (Some(opt), Some(n_mem), Some(sub)) = (
        c.get("gpgpu_cache:dl2"),
        &n_mem,
        c.number("gpgpu_n_sub_partition_per_mchannel")?,
    ) {
        let g = cache_geometry(&opt.value).ok_or_else(|| {
            line_error(
                origin,
                opt.line,
                format!("cannot read sets, line size and ways in `{}`", opt.text),
            )
        })?;
        let banks = (n_mem.value * sub.value) as u64;
        d.l2_cache_bytes = Some(Sourced::new(
            g.bytes() * banks,
            format!(
                "{}: {} sets x {} B x {} ways x {banks} sub-partitions ({}; {})",
                at_line(TOOL, origin, opt.line, &opt.text),
                g.sets,
                g.line_bytes,
                g.ways,
                n_mem.source,
                sub.source
            ),
        ));
    }
    if let Some(kb) = c.number("gpgpu_unified_l1d_size")? {
        d.l1_shared_per_sm_bytes = Some(Sourced::new(
            (kb.value * 1024.0) as u64,
            format!("{} KB", kb.source),
        ));
    }
    for (flag, field) in [
        ("gpgpu_shader_registers", "registers_per_sm"),
        ("gpgpu_registers_per_block", "registers_per_block"),
        ("gpgpu_shader_cta", "max_blocks_per_sm"),
        ("gpgpu_shmem_size", "shared_memory_per_sm_bytes"),
        ("gpgpu_shmem_per_block", "shared_memory_per_block_bytes"),
    ] {
        if let Some(v) = c.number(flag)? {
            d.limits
                .insert(field, Sourced::new(v.value as u32, v.source));
        }
    }
    read_latencies(&mut d, &c)?;
    if let (Some(cycles), Some(clock)) = (c.number("gpgpu_kernel_launch_latency")?, &core_clock) {
        d.measured.insert(
            "launch_overhead_us",
            Sourced::new(
                cycles.value / clock.value,
                format!(
                    "{} cycles / {} MHz ({})",
                    cycles.source, clock.value, clock.source
                ),
            ),
        );
    }
    Ok(d)
}

/// Memory latencies (turned back into end-to-end hit latencies) and opcode latencies.
fn read_latencies(d: &mut DeviceDraft, c: &Config) -> Result<()> {
    let l1 = c.number("gpgpu_l1_latency")?;
    if let Some(v) = &l1 {
        d.latencies.insert("l1_hit", v.clone());
    }
    if let Some(v) = c.number("gpgpu_smem_latency")? {
        d.latencies.insert("shared_load", v);
    }
    let l2 = match (&l1, c.number("gpgpu_l2_rop_latency")?) {
        (Some(l1), Some(rop)) => Some(Sourced::new(
            l1.value + rop.value,
            format!(
                "L1 {} + ROP {} ({}; {})",
                l1.value, rop.value, l1.source, rop.source
            ),
        )),
        _ => None,
    };
    if let (Some(l2), Some(dram)) = (&l2, c.number("dram_latency")?) {
        d.latencies.insert(
            "dram",
            Sourced::new(
                l2.value + dram.value,
                format!(
                    "L2 hit {} + DRAM {} ({}; {})",
                    l2.value, dram.value, l2.source, dram.source
                ),
            ),
        );
    }
    if let Some(l2) = l2 {
        d.latencies.insert("l2_hit", l2);
    }
    for (field, flag, index, what) in [
        ("int", "ptx_opcode_latency_int", 0, "ADD"),
        ("int_mul", "ptx_opcode_latency_int", 2, "MUL"),
        ("int_div", "ptx_opcode_latency_int", 4, "DIV"),
        ("fp32", "ptx_opcode_latency_fp", 3, "MAD"),
        ("fp64", "ptx_opcode_latency_dp", 3, "MAD"),
        ("special", "ptx_opcode_latency_sfu", 0, "SFU"),
    ] {
        if let Some((v, src)) = c.list(flag)? {
            if let Some(&x) = v.get(index).filter(|x| **x > 0.0) {
                d.latencies
                    .insert(field, Sourced::new(x, format!("{src} ({what})")));
            }
        }
    }
    d.microbenchmarks_from_latencies();
    Ok(())
}

/// The options of one file.
struct Config {
    options: BTreeMap<String, Opt>,
    origin: String,
}

impl Config {
    fn get(&self, flag: &str) -> Option<&Opt> {
        self.options.get(flag)
    }

    fn source(&self, o: &Opt) -> String {
        at_line(TOOL, &self.origin, o.line, &o.text)
    }

    fn bad(&self, o: &Opt, what: &str) -> Error {
        line_error(
            &self.origin,
            o.line,
            format!("cannot read {what} in `{}`", o.text),
        )
    }

    /// A one-number option.
    fn number(&self, flag: &str) -> Result<Option<Sourced<f64>>> {
        self.get(flag)
            .map(|o| sourced_number(TOOL, &self.origin, o.line, &o.value, &o.text))
            .transpose()
    }

    /// A list of numbers separated by `,` or `:` (`4,13,4,5,145`, `1200.0:1200.0:1200.0:850.0`).
    fn list(&self, flag: &str) -> Result<Option<(Vec<f64>, String)>> {
        let Some(o) = self.get(flag) else {
            return Ok(None);
        };
        let v: Option<Vec<f64>> = o
            .value
            .split([',', ':'])
            .map(|t| {
                t.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x >= 0.0)
            })
            .collect();
        let v = v
            .filter(|v| !v.is_empty())
            .ok_or_else(|| self.bad(o, "a list of numbers"))?;
        Ok(Some((v, self.source(o))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Device;

    /// A hand-written configuration in GPGPU-Sim's option syntax, describing a made-up Volta-class
    /// GPU (numbers chosen for easy checking, not taken from any shipped config).
    const CONFIG: &str =
        include_str!("../../../../../tests/fixtures/device-tools/gpgpusim-excerpt.config");

    #[test]
    fn the_config_maps_onto_the_device_schema() {
        let d = draft(CONFIG, "configs/V10/gpgpusim.config").unwrap();
        let dev = Device::from_toml(&d.to_toml(None).unwrap(), "v10.toml").unwrap();
        assert_eq!(dev.name, "Made-up V10");
        assert_eq!(dev.compute_capability, ComputeCapability::new(7, 0));
        assert_eq!(dev.sm_count, 20);
        // 4 SP units x 32 lanes / MAD initiation interval 2 = 64 cores.
        assert_eq!(dev.cores_per_sm, 64);
        assert_eq!((dev.base_clock_mhz, dev.boost_clock_mhz), (1000.0, 1000.0));
        // 8 channels x 1 chip x 16 bytes x 800 MHz x 2 = 204.8 GB/s.
        assert!((dev.memory_bandwidth_gbs - 204.8).abs() < 1e-9);
        // 32 x 128 x 16 = 65536 B per sub-partition, x 16 sub-partitions = 1 MiB.
        assert_eq!(dev.l2_cache_bytes, 1 << 20);
        assert_eq!(dev.l1_shared_per_sm_bytes, 128 * 1024);
        assert_eq!(dev.limits.shared_memory_per_block_bytes, 65536);
        assert!(dev
            .notes
            .iter()
            .any(|n| n.starts_with("limits.shared_memory_per_block_bytes = 65536")));
        let lat = &dev.latencies.as_ref().unwrap().values;
        assert_eq!(
            (lat["l1_hit"], lat["l2_hit"], lat["dram"]),
            (30.0, 200.0, 300.0)
        );
        assert_eq!(
            (lat["fp32"], lat["fp64"], lat["int"], lat["int_mul"]),
            (5.0, 8.0, 4.0, 4.0)
        );
        assert_eq!((lat["special"], lat["int_div"]), (100.0, 145.0));
        // 4 units x 32 / 4 = 32 FP64 per clock; SFU 4 x 32 / 8 = 16.
        assert_eq!(
            (lat["fp64_per_clk_sm"], lat["sfu_per_clk_sm"]),
            (32.0, 16.0)
        );
        assert!(!lat.contains_key("int_per_clk_sm"));
        assert!(
            dev.sources["latencies.l2_hit"].contains("line 28")
                && dev.sources["latencies.l2_hit"].contains("line 33")
        );
        // 5000 cycles at 1000 MHz = 5 us.
        assert_eq!(dev.measured_value("launch_overhead_us").unwrap().value, 5.0);
        assert_eq!(
            dev.microbenchmarks
                .as_ref()
                .unwrap()
                .representative_cycles("l2_cache"),
            Some(200.0)
        );
    }

    #[test]
    fn the_name_falls_back_to_the_folder_and_bad_values_name_the_line() {
        let no_comment = CONFIG.replace("# This config models the Made-up V10\n", "");
        let d = draft(&no_comment, "configs/SM7_V10/gpgpusim.config").unwrap();
        assert_eq!(d.name.as_ref().unwrap().value, "SM7_V10");
        let bad = CONFIG.replace("-gpgpu_n_clusters 10", "-gpgpu_n_clusters ten");
        let e = draft(&bad, "g.config").unwrap_err().to_string();
        assert!(
            e.contains("g.config") && e.contains("line 4") && e.contains("gpgpu_n_clusters"),
            "{e}"
        );
    }

    #[test]
    fn cache_geometry_reads_both_spellings() {
        let g = cache_geometry("S:32:128:24,L:B:m:L:P,A:192:4,32:0,32").unwrap();
        assert_eq!(
            (g.sets, g.line_bytes, g.ways, g.bytes()),
            (32, 128, 24, 98304)
        );
        assert_eq!(cache_geometry("S:32,128,24,L:B:m:L:P").unwrap(), g);
        assert_eq!(cache_geometry("N:64:128:16,L:R").unwrap().bytes(), 131072);
        assert!(cache_geometry("S:x:128:24").is_none());
    }
}
