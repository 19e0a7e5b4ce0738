//! Reads the console output of Accel-Sim's GPU micro-benchmark suite
//! (`util/tuner/GPU_Microbenchmark`, Khairy et al., ISCA 2020) into a [`DeviceDraft`].
//!
//! The output is a series of sections, each opened by `running ./NAME microbenchmark`, holding
//! `KEY = VALUE (unit)` result lines, deviceQuery-like blocks (`Device : "NAME"` then
//! `KEY : VALUE`) and echoed simulator options (`-gpgpu_... VALUE`). Mapping (section: line):
//!
//! | device-file field | taken from |
//! |---|---|
//! | name, compute capability, SMs, cores/SM, max clock, limits | the deviceQuery block of the GPU `system_config` names (else the first block): `CUDA version number` (the compute capability), `Multiprocessors Count`, `CUDA Cores per multiprocessor`, `GPU Max Clock rate`, threads/registers/shared memory per SM and per block |
//! | base clock | `system_config`: `GPU Base Clock rate` (the suite's `CLK_FREQUENCY`) |
//! | memory bandwidth | 2 x `Memory Clock rate` x `Memory Bus Width` / 8 |
//! | L2 size | `-gpgpu_cache:dl2` sets x line x ways x `L2 Banks number` (or `-gpgpu_n_mem` x `-gpgpu_n_sub_partition_per_mchannel`); else `L2 Cache Size` (whole MB) |
//! | warp schedulers, blocks per SM | `-gpgpu_num_sched_per_core`, `-gpgpu_shader_cta` |
//! | `latencies.l1_hit`, `shared_load`, `l2_hit`, `dram` | `l1_lat`: `L1 Latency`; `shared_lat`: `Shared Memory Latency`; `l2_lat`: `L2 Hit Latency`; `mem_lat`: `Mem latency` (cycles) |
//! | `latencies.fp32`, `fp64`, `int`, `special` | `lat_float`, `lat_double`, `lat_int32`, `sfu_lat_fsqrt` (dependent-issue cycles) |
//! | `latencies.fp32/fp64/int_per_clk_sm` | `MaxFlops_float/_double/_int32` flop/clk/SM / 2 (the suite counts an FMA or MAD as 2) |
//! | `latencies.sfu_per_clk_sm` | `sfu_bw_fsqrt`: `SFU fast sqrt bw` (one per operation) |
//! | `[microbenchmarks]` | the four memory latencies above (one-warp pointer chases) |
//! | `measured.launch_overhead_us` | `kernel_lat`: `Kernel Launch Latency` cycles / the base clock (the suite's own conversion; it reports a third of the event-timed launch) |
//! | `measured.achievable_dram_bandwidth_gbs` | `mem_bw`: `Mem BW` in GB/sec (event-timed) |
//! | `measured.l2_bandwidth_gbs` | the best `l2_bw_*` `L2 bandwidth` byte/clk x the base clock |
//! | `measured.atomic_same_address_per_clk` | `atomic_add_bw_conflict`: byte/clk / 4 bytes per int32 atomic |
//! | `measured.atomic_distinct_address_per_clk` | `atomic_add_bw`: its "byte/clk" / 32 (its numerator counts 4 x 8 per atomic); dropped with a note when below the same-address rate (an implausible run) |
//!
//! Values the output has but the device schema does not take (FP16 and tensor throughput, L1 and
//! shared bandwidth, atomic latency) are listed in one note. It does not run the suite.

use std::collections::BTreeMap;

use super::draft::{at_line, DeviceDraft, Sourced};
use super::{line_error, sourced_number};
use crate::device::ComputeCapability;
use crate::error::Result;

/// What the source strings call this input.
pub const TOOL: &str = "Accel-Sim micro-benchmark output";

/// `running ./l1_lat microbenchmark` -> `l1_lat`.
pub fn section_name(line: &str) -> Option<&str> {
    let rest = line.trim().strip_prefix("running ")?;
    let name = rest.strip_suffix("microbenchmark")?.trim();
    let name = name.strip_prefix("./").unwrap_or(name);
    (!name.is_empty()).then_some(name)
}

/// One `KEY = VALUE` (or `KEY : VALUE`) line.
#[derive(Debug, Clone)]
struct Entry {
    section: String,
    line: usize,
    key: String,
    rest: String,
    text: String,
}

/// One deviceQuery-like block.
#[derive(Debug, Clone, Default)]
struct Block {
    name: String,
    line: usize,
    text: String,
    fields: BTreeMap<String, (usize, String, String)>,
}

/// The output, split into result lines, deviceQuery blocks and echoed options.
struct Output {
    entries: Vec<Entry>,
    blocks: Vec<Block>,
    /// `-flag` -> (line, value, text); the first occurrence of each flag.
    options: BTreeMap<String, (usize, String, String)>,
}

fn read(text: &str) -> Output {
    let mut section = String::new();
    let mut entries = Vec::new();
    let mut blocks: Vec<Block> = Vec::new();
    let mut in_block = false;
    let mut options = BTreeMap::new();
    for (index, raw) in text.lines().enumerate() {
        let n = index + 1;
        let t = raw.trim();
        if let Some(name) = section_name(t) {
            section = name.to_string();
            in_block = false;
            continue;
        }
        if t.starts_with("//") {
            in_block = false;
            continue;
        }
        if let Some(opt) = t.strip_prefix('-') {
            if let Some((flag, value)) = opt.split_once(char::is_whitespace) {
                options.entry(format!("-{flag}")).or_insert((
                    n,
                    value.trim().trim_start_matches('=').trim().to_string(),
                    t.to_string(),
                ));
            }
            continue;
        }
        if let Some(name) = t
            .strip_prefix("Device :")
            .map(|r| r.trim().trim_matches('"').trim().to_string())
        {
            blocks.push(Block {
                name,
                line: n,
                text: t.to_string(),
                fields: BTreeMap::new(),
            });
            in_block = true;
            continue;
        }
        if in_block {
            if let (Some((k, v)), Some(b)) = (t.split_once(':'), blocks.last_mut()) {
                b.fields.entry(k.trim().to_string()).or_insert((
                    n,
                    v.trim().to_string(),
                    t.to_string(),
                ));
            }
            continue;
        }
        let split = t.split_once('=').or_else(|| t.split_once(" : "));
        if let Some((k, v)) = split {
            entries.push(Entry {
                section: section.clone(),
                line: n,
                key: k.trim().to_string(),
                rest: v.to_string(),
                text: t.to_string(),
            });
        }
    }
    Output {
        entries,
        blocks,
        options,
    }
}

impl Output {
    /// The first entry `key` whose value satisfies `accept`, preferring the sections in order,
    /// then any section.
    fn find(&self, sections: &[&str], key: &str, accept: impl Fn(&str) -> bool) -> Option<&Entry> {
        let matches = |e: &&Entry| e.key == key && accept(&e.rest);
        sections
            .iter()
            .find_map(|s| {
                self.entries
                    .iter()
                    .filter(|e| e.section == *s)
                    .find(matches)
            })
            .or_else(|| self.entries.iter().find(matches))
    }
}

/// A number read from an entry, with its source; an unreadable number is an error naming the line.
fn number(origin: &str, e: &Entry) -> Result<Sourced<f64>> {
    sourced_number(TOOL, origin, e.line, &e.rest, &e.text)
}

/// Reads the suite's output.
pub fn draft(text: &str, origin: &str) -> Result<DeviceDraft> {
    let out = read(text);
    let mut d = DeviceDraft::new(TOOL, origin);
    for (field, hint) in [
        (
            "compute_capability",
            "`CUDA version number` in a `Device :` block",
        ),
        ("sm_count", "`Multiprocessors Count`"),
        ("cores_per_sm", "`CUDA Cores per multiprocessor`"),
        ("boost_clock_mhz", "`GPU Max Clock rate`"),
        (
            "memory_bandwidth_gbs",
            "`Memory Clock rate` and `Memory Bus Width`",
        ),
        ("l2_cache_bytes", "`-gpgpu_cache:dl2` or `L2 Cache Size`"),
    ] {
        d.hints.insert(field, hint);
    }
    let any = |_: &str| true;
    let src = |e: &Entry| at_line(TOOL, origin, e.line, &e.text);

    // The GPU the suite ran on: system_config's `Device Name`, else the first block.
    let ran_on = out.find(&["system_config"], "Device Name", any);
    let block = match ran_on {
        Some(e) => out
            .blocks
            .iter()
            .find(|b| b.name == e.rest.trim())
            .or(out.blocks.first()),
        None => out.blocks.first(),
    };
    if out.blocks.len() > 1 {
        if let Some(b) = block {
            let names: Vec<&str> = out.blocks.iter().map(|b| b.name.as_str()).collect();
            d.notes.push(format!(
                "the output lists {} GPUs ({}); the device values are those of {} (line {}), the GPU system_config names",
                names.len(),
                names.join(", "),
                b.name,
                b.line
            ));
        }
    }
    if let Some(b) = block {
        read_block(&mut d, b, origin)?;
    } else if let Some(e) = ran_on {
        d.name = Some(Sourced::new(e.rest.trim().to_string(), src(e)));
    }
    if let Some(e) = out.find(&["system_config"], "GPU Base Clock rate", any) {
        let v = number(origin, e)?;
        d.base_clock_mhz = Some(Sourced::new(
            v.value,
            format!("{} (the suite's CLK_FREQUENCY)", v.source),
        ));
    }
    if d.boost_clock_mhz.is_none() {
        if let Some(e) = out.find(&["system_config"], "GPU Max Clock rate", any) {
            d.boost_clock_mhz = Some(number(origin, e)?);
        }
    }
    read_options(&mut d, &out, origin)?;
    read_latencies(&mut d, &out, origin)?;
    read_measured(&mut d, &out, origin)?;

    let unmapped: Vec<String> = [
        ("MaxFlops_half", "half FLOP per SM"),
        ("lat_half", "fpu16 latency"),
        ("tensor_bw_half", "FMA tensor bandwidth"),
        ("l1_bw_128", "L1 bandwidth"),
        ("shared_bw", "Shared Memory Bandwidth"),
        ("atomic_add_lat", "Atomic int32 latency"),
    ]
    .iter()
    .filter_map(|(s, k)| out.find(&[s], k, any))
    .map(|e| format!("`{}` (line {})", e.key, e.line))
    .collect();
    if !unmapped.is_empty() {
        d.notes.push(format!(
            "not imported, the device schema has no field for them: {}",
            unmapped.join(", ")
        ));
    }
    Ok(d)
}

/// Product values and limits from a deviceQuery-like block.
fn read_block(d: &mut DeviceDraft, b: &Block, origin: &str) -> Result<()> {
    d.name = Some(Sourced::new(
        b.name.clone(),
        at_line(TOOL, origin, b.line, &b.text),
    ));
    let get = |key: &str| -> Result<Option<Sourced<f64>>> {
        b.fields
            .get(key)
            .map(|(n, value, text)| sourced_number(TOOL, origin, *n, value, text))
            .transpose()
    };
    let whole = |v: Sourced<f64>| Sourced::new(v.value.max(0.0).round() as u32, v.source);
    if let Some((n, value, text)) = b.fields.get("CUDA version number") {
        let cc = ComputeCapability::parse(value)
            .map_err(|_| line_error(origin, *n, format!("cannot read MAJOR.MINOR in `{text}`")))?;
        d.compute_capability = Some(Sourced::new(cc, at_line(TOOL, origin, *n, text)));
    }
    d.sm_count = get("Multiprocessors Count")?.map(whole);
    d.cores_per_sm = get("CUDA Cores per multiprocessor")?.map(whole);
    d.boost_clock_mhz = get("GPU Max Clock rate")?;
    if let (Some(clock), Some(bus)) = (get("Memory Clock rate")?, get("Memory Bus Width")?) {
        d.memory_bandwidth_gbs = Some(Sourced::new(
            2.0 * clock.value * bus.value / 8.0 / 1000.0,
            format!(
                "{}; {}: 2 x {} MHz memory clock x {}-bit bus / 8",
                clock.source, bus.source, clock.value, bus.value
            ),
        ));
    }
    if let Some(g) = get("Global memory size")? {
        d.memory_size_bytes = Some(Sourced::new(
            (g.value * (1u64 << 30) as f64) as u64,
            format!("{} (whole GiB as the suite prints it)", g.source),
        ));
    }
    if let Some(l2) = get("L2 Cache Size")? {
        d.l2_cache_bytes = Some(Sourced::new(
            (l2.value * (1u64 << 20) as f64) as u64,
            format!("{} (whole MiB as the suite prints it)", l2.source),
        ));
    }
    for (key, field) in [
        (
            "Maximum number of threads per multiprocessor",
            "max_threads_per_sm",
        ),
        ("Registers per multiprocessor", "registers_per_sm"),
        (
            "Shared memory per multiprocessor",
            "shared_memory_per_sm_bytes",
        ),
        (
            "Maximum number of threads per block",
            "max_threads_per_block",
        ),
        ("Shared memory per block", "shared_memory_per_block_bytes"),
        ("Registers per block", "registers_per_block"),
    ] {
        if let Some(v) = get(key)? {
            if field == "max_threads_per_sm" {
                let warps = Sourced::new(v.value / 32.0, v.source.clone());
                d.limits.insert("max_warps_per_sm", whole(warps));
            }
            d.limits.insert(field, whole(v));
        }
    }
    Ok(())
}

/// The echoed simulator options: L2 geometry, schedulers, blocks per SM.
fn read_options(d: &mut DeviceDraft, out: &Output, origin: &str) -> Result<()> {
    let opt = |flag: &str| out.options.get(flag);
    let opt_number = |flag: &str| -> Result<Option<Sourced<f64>>> {
        opt(flag)
            .map(|(n, value, text)| sourced_number(TOOL, origin, *n, value, text))
            .transpose()
    };
    let banks = match out.find(&["l2_config"], "L2 Banks number", |_| true) {
        Some(e) => Some(number(origin, e)?),
        None => match (
            opt_number("-gpgpu_n_mem")?,
            opt_number("-gpgpu_n_sub_partition_per_mchannel")?,
        ) {
            (Some(m), Some(s)) => Some(Sourced::new(
                m.value * s.value,
                format!("{} x {}", m.source, s.source),
            )),
            _ => None,
        },
    };
    if let (Some((n, value, text)), Some(banks)) = (opt("-gpgpu_cache:dl2"), banks) {
        let geometry = super::gpgpusim_config::cache_geometry(value).ok_or_else(|| {
            line_error(
                origin,
                *n,
                format!("cannot read sets, line size and ways in `{text}`"),
            )
        })?;
        d.l2_cache_bytes = Some(Sourced::new(
            geometry.bytes() * banks.value as u64,
            format!(
                "{}: {} sets x {} B x {} ways per bank x {} banks ({})",
                at_line(TOOL, origin, *n, text),
                geometry.sets,
                geometry.line_bytes,
                geometry.ways,
                banks.value,
                banks.source
            ),
        ));
    }
    if let Some(v) = opt_number("-gpgpu_num_sched_per_core")? {
        d.warp_schedulers_per_sm = Some(Sourced::new(v.value as u32, v.source));
    }
    if let Some(v) = opt_number("-gpgpu_shader_cta")? {
        d.limits
            .insert("max_blocks_per_sm", Sourced::new(v.value as u32, v.source));
    }
    Ok(())
}

/// Latencies (cycles) and per-SM throughputs for `[latencies]` and `[microbenchmarks]`.
fn read_latencies(d: &mut DeviceDraft, out: &Output, origin: &str) -> Result<()> {
    let any = |_: &str| true;
    for (field, sections, key) in [
        ("l1_hit", &["l1_lat", "l2_lat"][..], "L1 Latency"),
        ("shared_load", &["shared_lat"][..], "Shared Memory Latency"),
        ("l2_hit", &["l2_lat", "mem_lat"][..], "L2 Hit Latency"),
        ("dram", &["mem_lat"][..], "Mem latency"),
        (
            "fp32",
            &["lat_float", "config_fpu"][..],
            "float-precision FPU latency",
        ),
        (
            "fp64",
            &["lat_double", "config_dpu"][..],
            "double-precision DPU latency",
        ),
        ("int", &["lat_int32", "config_int"][..], "int32 latency"),
        (
            "special",
            &["sfu_lat_fsqrt", "config_sfu"][..],
            "SFU fast sqrt latency",
        ),
        (
            "sfu_per_clk_sm",
            &["sfu_bw_fsqrt", "config_sfu"][..],
            "SFU fast sqrt bw",
        ),
    ] {
        if let Some(e) = out.find(sections, key, any) {
            d.latencies.insert(field, number(origin, e)?);
        }
    }
    for (field, sections, key) in [
        (
            "fp32_per_clk_sm",
            &["MaxFlops_float", "config_fpu"][..],
            "FLOP per SM",
        ),
        (
            "fp64_per_clk_sm",
            &["MaxFlops_double", "config_dpu"][..],
            "DPU FLOP per SM",
        ),
        (
            "int_per_clk_sm",
            &["MaxFlops_int32", "config_int"][..],
            "int32 FLOP per SM",
        ),
    ] {
        if let Some(e) = out.find(sections, key, any) {
            let v = number(origin, e)?;
            d.latencies.insert(
                field,
                Sourced::new(
                    v.value / 2.0,
                    format!("{} / 2 flops per FMA or MAD", v.source),
                ),
            );
        }
    }
    d.microbenchmarks_from_latencies();
    Ok(())
}

/// Launch overhead, achievable DRAM and L2 bandwidth, atomic throughput for `[measured]`.
fn read_measured(d: &mut DeviceDraft, out: &Output, origin: &str) -> Result<()> {
    let any = |_: &str| true;
    let base = d.base_clock_mhz.clone();
    if let (Some(e), Some(clock)) = (
        out.find(&["kernel_lat"], "Kernel Launch Latency", any),
        &base,
    ) {
        let cycles = number(origin, e)?;
        d.measured.insert(
            "launch_overhead_us",
            Sourced::new(
                cycles.value / clock.value,
                format!(
                    "{} / {} MHz ({}); the suite reports a third of the event-timed launch",
                    cycles.source, clock.value, clock.source
                ),
            ),
        );
    }
    if let Some(e) = out.find(&["mem_bw"], "Mem BW", |r| r.contains("GB/s")) {
        d.measured
            .insert("achievable_dram_bandwidth_gbs", number(origin, e)?);
    }
    if let Some(clock) = &base {
        let mut best: Option<Sourced<f64>> = None;
        for e in out
            .entries
            .iter()
            .filter(|e| e.section.starts_with("l2_bw") && e.key == "L2 bandwidth")
        {
            let v = number(origin, e)?;
            if best.as_ref().is_none_or(|b| v.value > b.value) {
                best = Some(v);
            }
        }
        if let Some(b) = best {
            d.measured.insert(
                "l2_bandwidth_gbs",
                Sourced::new(
                    b.value * clock.value / 1000.0,
                    format!(
                        "{} (the best l2_bw run) x {} MHz ({}) / 1000",
                        b.source, clock.value, clock.source
                    ),
                ),
            );
        }
    }
    let same = match out.find(&["atomic_add_bw_conflict"], "Atomic int32 bandwidth", any) {
        Some(e) if e.section == "atomic_add_bw_conflict" => {
            let v = number(origin, e)?;
            let s = Sourced::new(
                v.value / 4.0,
                format!("{} / 4 bytes per int32 atomic", v.source),
            );
            d.measured.insert("atomic_same_address_per_clk", s.clone());
            Some(s)
        }
        _ => None,
    };
    let distinct = out
        .entries
        .iter()
        .find(|e| e.section == "atomic_add_bw" && e.key == "Atomic int32 bandwidth");
    if let Some(e) = distinct {
        let v = number(origin, e)?;
        let per_clk = v.value / 32.0;
        match &same {
            Some(s) if per_clk < s.value => d.notes.push(format!(
                "atomic_distinct_address_per_clk not imported: line {} gives {per_clk} per clock, below the same-address rate {} (an implausible run)",
                e.line, s.value
            )),
            _ => {
                d.measured.insert(
                    "atomic_distinct_address_per_clk",
                    Sourced::new(
                        per_clk,
                        format!("{} / 32 (the program counts 4 bytes x 8 per atomic)", v.source),
                    ),
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Device;

    /// A hand-written excerpt in the layout of the suite's console output (values made up for
    /// this test, close to a Volta GPU; not copied from any real run).
    const SAMPLE: &str =
        include_str!("../../../../../tests/fixtures/device-tools/accelsim-ubench-excerpt.txt");

    #[test]
    fn the_sample_maps_onto_every_table_with_line_sources() {
        let d = draft(SAMPLE, "run.txt").unwrap();
        let text = d.to_toml(None).unwrap();
        let dev = Device::from_toml(&text, "run.toml").unwrap();
        assert_eq!(dev.name, "Lab GPU");
        assert_eq!(dev.compute_capability, ComputeCapability::new(7, 0));
        assert_eq!((dev.sm_count, dev.cores_per_sm), (10, 64));
        assert_eq!((dev.base_clock_mhz, dev.boost_clock_mhz), (1200.0, 1500.0));
        // 2 x 1000 MHz x 1024 bits / 8 = 256 GB/s.
        assert_eq!(dev.memory_bandwidth_gbs, 256.0);
        // 32 sets x 128 B x 36 ways = 147456 B per bank, x 8 banks = 1179648 B (1.125 MiB).
        assert_eq!(dev.l2_cache_bytes, 1_179_648);
        assert!(
            dev.sources["l2_cache_bytes"].contains("line 55"),
            "{}",
            dev.sources["l2_cache_bytes"]
        );
        assert_eq!(dev.warp_schedulers_per_sm, 4);
        assert_eq!(dev.limits.max_blocks_per_sm, 32);
        let lat = dev.latencies.as_ref().unwrap();
        assert_eq!(lat.values["l1_hit"], 30.5);
        assert_eq!(lat.values["l2_hit"], 200.0);
        assert_eq!(lat.values["dram"], 350.0);
        assert_eq!(lat.values["shared_load"], 25.0);
        // 120 flop/clk/SM = 60 FMA per clock per SM; 60 DP flops = 30.
        assert_eq!(lat.values["fp32_per_clk_sm"], 60.0);
        assert_eq!(lat.values["fp64_per_clk_sm"], 30.0);
        assert!(dev.sources["latencies.l1_hit"]
            .starts_with("Accel-Sim micro-benchmark output run.txt line 39 (`L1 Latency"));
        let mb = dev.microbenchmarks.as_ref().unwrap();
        assert_eq!(mb.warps, vec![1]);
        assert_eq!(mb.representative_cycles("global_memory_read"), Some(350.0));
        // 6000 cycles / 1200 MHz = 5 us.
        let launch = dev.measured_value("launch_overhead_us").unwrap();
        assert_eq!(launch.value, 5.0);
        assert!(launch.source.contains("line 36") && launch.source.contains("1200 MHz"));
        assert_eq!(
            dev.measured_value("achievable_dram_bandwidth_gbs")
                .unwrap()
                .value,
            200.0
        );
        // The better L2 run: 400 byte/clk x 1200 MHz = 480 GB/s.
        assert_eq!(dev.measured_value("l2_bandwidth_gbs").unwrap().value, 480.0);
        // 0.5 byte/clk / 4 bytes = 0.125 atomics per clock.
        assert_eq!(
            dev.measured_value("atomic_same_address_per_clk")
                .unwrap()
                .value,
            0.125
        );
        // 0.00001 / 32 is below the same-address rate: dropped with a note.
        assert!(dev
            .measured_value("atomic_distinct_address_per_clk")
            .is_none());
        assert!(dev
            .notes
            .iter()
            .any(|n| n.contains("atomic_distinct_address_per_clk not imported")));
        assert!(dev
            .notes
            .iter()
            .any(|n| n.contains("2 GPUs") && n.contains("Lab GPU")));
    }

    #[test]
    fn an_unreadable_number_names_the_line() {
        let bad = SAMPLE.replace("Mem latency =     350.0000", "Mem latency = lots");
        let e = draft(&bad, "run.txt").unwrap_err().to_string();
        assert!(
            e.contains("run.txt") && e.contains("line 65") && e.contains("Mem latency"),
            "{e}"
        );
    }

    #[test]
    fn without_a_device_block_the_missing_value_is_named() {
        let only_latencies = "running ./l1_lat microbenchmark\nL1 Latency = 30 cycles\n";
        let d = draft(only_latencies, "lat.txt").unwrap();
        let e = d.to_toml(Some("x")).unwrap_err().to_string();
        assert!(
            e.contains("lat.txt")
                && e.contains("compute_capability")
                && e.contains("CUDA version number"),
            "{e}"
        );
    }
}
