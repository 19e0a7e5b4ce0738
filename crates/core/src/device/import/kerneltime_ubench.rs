//! Reads the output of our own micro-benchmark program, `kernels/ubench/ubench.cu`, into a
//! [`DeviceDraft`].
//!
//! The format: a first non-blank line `# kerneltime-ubench 1`, then `key = value` lines (`#`
//! starts a comment), units in the key names. An unknown key or a second value for a key is an
//! error naming the line, so that a program of another version is never half-read.
//!
//! | key | device-file field |
//! |---|---|
//! | `name`, `compute_capability`, `sm_count`, `cores_per_sm`, `l2_cache_bytes`, `global_memory_bytes` | the product fields of the same meaning (`global_memory_bytes` -> `memory_size_bytes`) |
//! | `max_clock_mhz` | `boost_clock_mhz` and `base_clock_mhz` (the runtime reports one clock) |
//! | `memory_clock_mhz`, `memory_bus_width_bits` | `memory_bandwidth_gbs` = 2 x clock x bus / 8 |
//! | `shared_memory_per_block_bytes`, `shared_memory_per_block_optin_bytes`, `shared_memory_per_sm_bytes`, `registers_per_block`, `registers_per_sm`, `max_threads_per_block`, `max_threads_per_sm`, `max_blocks_per_sm` | `[limits]` (written where they differ from the compute capability's table) |
//! | `l1_hit_cycles`, `shared_load_cycles`, `l2_hit_cycles`, `dram_cycles` | `[latencies]` `l1_hit`, `shared_load`, `l2_hit`, `dram`, and `[microbenchmarks]` |
//! | `dram_bandwidth_gbs`, `l2_bandwidth_gbs`, `launch_overhead_us` | `[measured]` `achievable_dram_bandwidth_gbs`, `l2_bandwidth_gbs`, `launch_overhead_us` |
//! | `atomic_same_address_per_s`, `atomic_distinct_address_per_s` | `[measured]` `atomic_*_per_clk` = per second / (`max_clock_mhz` x 1e6) |
//! | `measured_sm_clock_mhz` | a note (the clock the SMs ran at during the run) |

use std::collections::BTreeMap;

use super::draft::{at_line, DeviceDraft, Sourced};
use super::{line_error, sourced_number};
use crate::device::{limits, ComputeCapability};
use crate::error::{Error, Result};

/// What the source strings call this input.
pub const TOOL: &str = "kerneltime-ubench output";

/// The first line of the program's output (followed by the format version).
pub const MARKER: &str = "# kerneltime-ubench";

const TEXT_KEYS: &[&str] = &["name", "compute_capability"];
const NUMBER_KEYS: &[&str] = &[
    "sm_count",
    "cores_per_sm",
    "max_clock_mhz",
    "memory_clock_mhz",
    "memory_bus_width_bits",
    "l2_cache_bytes",
    "global_memory_bytes",
    "shared_memory_per_block_bytes",
    "shared_memory_per_block_optin_bytes",
    "shared_memory_per_sm_bytes",
    "registers_per_block",
    "registers_per_sm",
    "max_threads_per_block",
    "max_threads_per_sm",
    "max_blocks_per_sm",
    "measured_sm_clock_mhz",
    "l1_hit_cycles",
    "shared_load_cycles",
    "l2_hit_cycles",
    "dram_cycles",
    "dram_bandwidth_gbs",
    "l2_bandwidth_gbs",
    "launch_overhead_us",
    "atomic_same_address_per_s",
    "atomic_distinct_address_per_s",
];

/// Reads the program's output.
pub fn draft(text: &str, origin: &str) -> Result<DeviceDraft> {
    let mut values: BTreeMap<&'static str, (usize, String, String)> = BTreeMap::new();
    let mut saw_marker = false;
    for (index, raw) in text.lines().enumerate() {
        let n = index + 1;
        let t = raw.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(version) = t.strip_prefix(MARKER) {
            if version.trim() != "1" {
                return Err(line_error(
                    origin,
                    n,
                    format!(
                        "format version `{}` is not supported (this kerneltime reads version 1)",
                        version.trim()
                    ),
                ));
            }
            saw_marker = true;
            continue;
        }
        if t.starts_with('#') {
            continue;
        }
        if !saw_marker {
            return Err(Error::file(
                origin,
                format!("the first line must be `{MARKER} 1`; is this the output of kernels/ubench/ubench.cu?"),
            ));
        }
        let (key, value) = t
            .split_once('=')
            .ok_or_else(|| line_error(origin, n, format!("expected `key = value`, got `{t}`")))?;
        let key = key.trim();
        let known = TEXT_KEYS
            .iter()
            .chain(NUMBER_KEYS)
            .find(|k| **k == key)
            .ok_or_else(|| line_error(origin, n, format!("unknown key `{key}`")))?;
        if values
            .insert(known, (n, value.trim().to_string(), t.to_string()))
            .is_some()
        {
            return Err(line_error(origin, n, format!("`{key}` is given twice")));
        }
    }
    if !saw_marker {
        return Err(Error::file(
            origin,
            format!("no `{MARKER} 1` line found; is this the output of kernels/ubench/ubench.cu?"),
        ));
    }

    let src = |n: usize, text: &str| at_line(TOOL, origin, n, text);
    let mut num: BTreeMap<&'static str, Sourced<f64>> = BTreeMap::new();
    for key in NUMBER_KEYS {
        if let Some((n, value, text)) = values.get(key) {
            num.insert(key, sourced_number(TOOL, origin, *n, value, text)?);
        }
    }
    let mut d = DeviceDraft::new(TOOL, origin);
    for field in [
        "compute_capability",
        "sm_count",
        "cores_per_sm",
        "boost_clock_mhz",
        "memory_bandwidth_gbs",
        "l2_cache_bytes",
    ] {
        d.hints.insert(field, "its key in the program's output");
    }
    if let Some((n, value, text)) = values.get("name") {
        d.name = Some(Sourced::new(value.clone(), src(*n, text)));
    }
    if let Some((n, value, text)) = values.get("compute_capability") {
        let cc = ComputeCapability::parse(value).map_err(|_| {
            line_error(
                origin,
                *n,
                format!("`compute_capability` must be MAJOR.MINOR, got `{value}`"),
            )
        })?;
        d.compute_capability = Some(Sourced::new(cc, src(*n, text)));
    }
    let whole = |v: &Sourced<f64>| Sourced::new(v.value.round() as u32, v.source.clone());
    d.sm_count = num.get("sm_count").map(whole);
    d.cores_per_sm = num.get("cores_per_sm").map(whole);
    d.boost_clock_mhz = num.get("max_clock_mhz").cloned();
    d.l2_cache_bytes = num
        .get("l2_cache_bytes")
        .map(|v| Sourced::new(v.value as u64, v.source.clone()));
    d.memory_size_bytes = num
        .get("global_memory_bytes")
        .map(|v| Sourced::new(v.value as u64, v.source.clone()));
    if let (Some(clock), Some(bus)) = (
        num.get("memory_clock_mhz"),
        num.get("memory_bus_width_bits"),
    ) {
        d.memory_bandwidth_gbs = Some(Sourced::new(
            2.0 * clock.value * bus.value / 8.0 / 1000.0,
            format!(
                "{}; {}: 2 x {} MHz memory clock x {}-bit bus / 8",
                clock.source, bus.source, clock.value, bus.value
            ),
        ));
    }
    // The keys named like limits are limits.
    for field in NUMBER_KEYS
        .iter()
        .filter(|k| limits::LIMIT_FIELDS.contains(k))
    {
        if let Some(v) = num.get(field) {
            d.limits.insert(field, whole(v));
        }
    }
    if let Some(t) = num.get("max_threads_per_sm") {
        d.limits.insert(
            "max_warps_per_sm",
            Sourced::new((t.value / 32.0) as u32, format!("{} / 32", t.source)),
        );
    }
    for (key, field) in [
        ("l1_hit_cycles", "l1_hit"),
        ("shared_load_cycles", "shared_load"),
        ("l2_hit_cycles", "l2_hit"),
        ("dram_cycles", "dram"),
    ] {
        if let Some(v) = num.get(key) {
            d.latencies.insert(field, v.clone());
        }
    }
    d.microbenchmarks_from_latencies();
    for (key, field) in [
        ("dram_bandwidth_gbs", "achievable_dram_bandwidth_gbs"),
        ("l2_bandwidth_gbs", "l2_bandwidth_gbs"),
        ("launch_overhead_us", "launch_overhead_us"),
    ] {
        if let Some(v) = num.get(key) {
            d.measured.insert(field, v.clone());
        }
    }
    for (key, field) in [
        ("atomic_same_address_per_s", "atomic_same_address_per_clk"),
        (
            "atomic_distinct_address_per_s",
            "atomic_distinct_address_per_clk",
        ),
    ] {
        if let (Some(v), Some(clock)) = (num.get(key), num.get("max_clock_mhz")) {
            d.measured.insert(
                field,
                Sourced::new(
                    v.value / (clock.value * 1e6),
                    format!(
                        "{} / ({} MHz x 1e6; {})",
                        v.source, clock.value, clock.source
                    ),
                ),
            );
        }
    }
    if let Some(v) = num.get("measured_sm_clock_mhz") {
        d.notes.push(format!(
            "the SMs ran at {} MHz during the micro-benchmarks ({}); latencies are in those cycles",
            v.value, v.source
        ));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Device;

    /// A hand-written sample of the program's output (values made up, Turing-like).
    const SAMPLE: &str =
        include_str!("../../../../../tests/fixtures/device-tools/kerneltime-ubench-sample.txt");

    #[test]
    fn the_sample_round_trips_into_a_device() {
        let d = draft(SAMPLE, "out.txt").unwrap();
        let dev = Device::from_toml(&d.to_toml(None).unwrap(), "out.toml").unwrap();
        assert_eq!(dev.name, "Sample RTX");
        assert_eq!(dev.architecture, "Turing");
        // 2 x 7000 MHz x 192 bits / 8 = 336 GB/s.
        assert!((dev.memory_bandwidth_gbs - 336.0).abs() < 1e-9);
        let lat = &dev.latencies.as_ref().unwrap().values;
        assert_eq!(
            (
                lat["l1_hit"],
                lat["l2_hit"],
                lat["dram"],
                lat["shared_load"]
            ),
            (32.0, 190.0, 420.0, 24.0)
        );
        assert_eq!(
            dev.measured_value("achievable_dram_bandwidth_gbs")
                .unwrap()
                .value,
            300.0
        );
        // 1.5e9 per second at 1500 MHz = 1 atomic per clock; 6e10 / 1.5e9 = 40.
        assert_eq!(
            dev.measured_value("atomic_same_address_per_clk")
                .unwrap()
                .value,
            1.0
        );
        assert_eq!(
            dev.measured_value("atomic_distinct_address_per_clk")
                .unwrap()
                .value,
            40.0
        );
        assert!(
            dev.sources["latencies.dram"].starts_with("kerneltime-ubench output out.txt line 23")
        );
        // Every limit equals the 7.5 table: nothing is overridden.
        assert!(
            dev.notes.iter().all(|n| !n.starts_with("limits.")),
            "{:?}",
            dev.notes
        );
        assert!(dev.notes.iter().any(|n| n.contains("1450 MHz")));
    }

    #[test]
    fn bad_lines_are_named() {
        let e = draft(
            &SAMPLE.replace("sm_count = 30", "sm_count = thirty"),
            "o.txt",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("o.txt") && e.contains("line 5") && e.contains("sm_count"),
            "{e}"
        );
        let e = draft(&SAMPLE.replace("sm_count = 30", "sm_cont = 30"), "o.txt")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 5") && e.contains("unknown key `sm_cont`"),
            "{e}"
        );
        let e = draft(
            &SAMPLE.replace("# kerneltime-ubench 1", "# kerneltime-ubench 2"),
            "o.txt",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("line 1") && e.contains("version"), "{e}");
        let e = draft("name = x\n", "o.txt").unwrap_err().to_string();
        assert!(e.contains("kerneltime-ubench 1"), "{e}");
        let twice = format!("{SAMPLE}sm_count = 31\n");
        let e = draft(&twice, "o.txt").unwrap_err().to_string();
        assert!(e.contains("twice"), "{e}");
    }
}
