//! Reads the text printed by CUDA's `deviceQuery` sample into a [`DeviceDraft`].
//!
//! `deviceQuery` prints one section per GPU, starting with `Device N: "NAME"`. This module reads
//! the first section: compute capability, SM count and cores per SM, the maximum core clock,
//! memory clock and bus width (from which the bandwidth follows), L2 size, global memory, and
//! the shared-memory, register and thread limits it prints, each with the line it came from.
//! A line the import needs but cannot find is an error naming that line.
//!
//! It does NOT guess what `deviceQuery` does not print: the base clock (set equal to the maximum
//! clock, with a note) and the L1/shared capacity per SM (the CUDA programming guide's value for
//! the compute capability, with a source saying so; see `draft`). It does not run `deviceQuery`.

use std::collections::BTreeMap;

use super::draft::{at_line, DeviceDraft, Sourced};
use crate::device::ComputeCapability;
use crate::error::{Error, Result};

/// What the source strings call this input.
pub const TOOL: &str = "deviceQuery output";

/// The values read from one device section of `deviceQuery` output.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceQueryReport {
    /// The name in `Device N: "NAME"`, if the section header was present.
    pub name: Option<String>,
    pub compute_capability: ComputeCapability,
    pub sm_count: u32,
    pub cores_per_sm: u32,
    /// `GPU Max Clock rate` (older samples: `GPU Clock rate`).
    pub max_clock_mhz: f64,
    /// `Memory Clock rate` as printed (the double-data-rate base clock).
    pub memory_clock_mhz: f64,
    pub memory_bus_width_bits: u32,
    pub l2_cache_bytes: u64,
    pub global_memory_bytes: Option<u64>,
    pub shared_memory_per_block_bytes: Option<u32>,
    pub shared_memory_per_sm_bytes: Option<u32>,
    pub registers_per_block: Option<u32>,
    pub max_threads_per_sm: Option<u32>,
    pub max_threads_per_block: Option<u32>,
    /// For each field above: the 1-based line it was read from and that line's text.
    pub lines: BTreeMap<&'static str, (usize, String)>,
}

impl DeviceQueryReport {
    /// Peak DRAM bandwidth: two transfers per memory clock over the bus,
    /// `2 * clock_MHz * 1e6 * bus_bits / 8` bytes per second, in GB/s (1e9 bytes).
    pub fn memory_bandwidth_gbs(&self) -> f64 {
        2.0 * self.memory_clock_mhz * f64::from(self.memory_bus_width_bits) / 8.0 / 1000.0
    }
}

const CC_LINE: &str = "CUDA Capability Major/Minor version number:";
const SM_LINE: &str = "(N) Multiprocessors, (M) CUDA Cores/MP:";
const CLOCK_LINE: &str = "GPU Max Clock rate:";
const MEM_CLOCK_LINE: &str = "Memory Clock rate:";
const BUS_LINE: &str = "Memory Bus Width:";
const L2_LINE: &str = "L2 Cache Size:";

/// Reads the first device section of `deviceQuery` output; `origin` names the text in errors.
pub fn parse(text: &str, origin: &str) -> Result<DeviceQueryReport> {
    let mut name = None;
    let mut cc = None;
    let mut sms = None;
    let mut clock = None;
    let mut mem_clock = None;
    let mut bus = None;
    let mut l2 = None;
    let mut r = Optional::default();
    let mut lines = BTreeMap::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if let Some(header) = device_header(line) {
            if name.is_some() || cc.is_some() {
                break; // the next device's section
            }
            name = Some(header);
            lines.insert("name", (index + 1, line.to_string()));
            continue;
        }
        let bad = |what: &str| {
            Error::file(
                origin,
                format!(
                    "line {}: cannot read the number in `{line}` ({what})",
                    index + 1
                ),
            )
        };
        let key: &'static str = if let Some(v) = line.strip_prefix(CC_LINE) {
            cc = Some(ComputeCapability::parse(v).map_err(|_| bad("MAJOR.MINOR"))?);
            "compute_capability"
        } else if line.contains("Multiprocessors") && line.contains("CUDA Cores/MP") {
            let n = numbers(line);
            match (n.first(), n.get(1)) {
                (Some(&s), Some(&c)) => sms = Some((to_u32(s), to_u32(c))),
                _ => return Err(bad("SM count and cores per SM")),
            }
            "sm_count"
        } else if let Some(v) = line
            .strip_prefix(CLOCK_LINE)
            .or_else(|| line.strip_prefix("GPU Clock rate:"))
        {
            clock = Some(clock_mhz(v).ok_or_else(|| bad("MHz or GHz"))?);
            "max_clock_mhz"
        } else if let Some(v) = line.strip_prefix(MEM_CLOCK_LINE) {
            mem_clock = Some(clock_mhz(v).ok_or_else(|| bad("MHz"))?);
            "memory_clock_mhz"
        } else if let Some(v) = line.strip_prefix(BUS_LINE) {
            bus = Some(first_u64(v).ok_or_else(|| bad("bits"))? as u32);
            "memory_bus_width_bits"
        } else if let Some(v) = line.strip_prefix(L2_LINE) {
            l2 = Some(bytes(v).ok_or_else(|| bad("bytes"))?);
            "l2_cache_bytes"
        } else if let Some(v) = line.strip_prefix("Total amount of global memory:") {
            // "15110 MBytes (15843721216 bytes)": the exact count is in parentheses.
            r.global = v
                .split_once('(')
                .and_then(|(_, b)| first_u64(b))
                .or_else(|| first_u64(v).map(|mb| mb * 1024 * 1024));
            "global_memory_bytes"
        } else if let Some(v) = line.strip_prefix("Total amount of shared memory per block:") {
            r.smem_block = Some(bytes(v).ok_or_else(|| bad("bytes"))? as u32);
            "shared_memory_per_block_bytes"
        } else if let Some(v) = line.strip_prefix("Total shared memory per multiprocessor:") {
            r.smem_sm = Some(bytes(v).ok_or_else(|| bad("bytes"))? as u32);
            "shared_memory_per_sm_bytes"
        } else if let Some(v) = line.strip_prefix("Total number of registers available per block:")
        {
            r.regs_block = Some(first_u64(v).ok_or_else(|| bad("registers"))? as u32);
            "registers_per_block"
        } else if let Some(v) = line.strip_prefix("Maximum number of threads per multiprocessor:") {
            r.threads_sm = Some(first_u64(v).ok_or_else(|| bad("threads"))? as u32);
            "max_threads_per_sm"
        } else if let Some(v) = line.strip_prefix("Maximum number of threads per block:") {
            r.threads_block = Some(first_u64(v).ok_or_else(|| bad("threads"))? as u32);
            "max_threads_per_block"
        } else if let Some(v) = line.strip_prefix("Warp size:") {
            if first_u64(v) != Some(32) {
                return Err(Error::file(
                    origin,
                    format!(
                        "line {}: `{line}`: only a warp size of 32 is supported",
                        index + 1
                    ),
                ));
            }
            continue;
        } else {
            continue;
        };
        lines.insert(key, (index + 1, line.to_string()));
    }
    let need = |line: &str| {
        Error::file(
            origin,
            format!("no `{line}` line found; is this the output of CUDA's deviceQuery sample?"),
        )
    };
    let compute_capability = cc.ok_or_else(|| need(CC_LINE))?;
    let (sm_count, cores_per_sm) = sms.ok_or_else(|| need(SM_LINE))?;
    let report = DeviceQueryReport {
        name,
        compute_capability,
        sm_count,
        cores_per_sm,
        max_clock_mhz: clock.ok_or_else(|| need(CLOCK_LINE))?,
        memory_clock_mhz: mem_clock.ok_or_else(|| need(MEM_CLOCK_LINE))?,
        memory_bus_width_bits: bus.ok_or_else(|| need(BUS_LINE))?,
        l2_cache_bytes: l2.ok_or_else(|| need(L2_LINE))?,
        global_memory_bytes: r.global,
        shared_memory_per_block_bytes: r.smem_block,
        shared_memory_per_sm_bytes: r.smem_sm,
        registers_per_block: r.regs_block,
        max_threads_per_sm: r.threads_sm,
        max_threads_per_block: r.threads_block,
        lines,
    };
    Ok(report)
}

#[derive(Default)]
struct Optional {
    global: Option<u64>,
    smem_block: Option<u32>,
    smem_sm: Option<u32>,
    regs_block: Option<u32>,
    threads_sm: Option<u32>,
    threads_block: Option<u32>,
}

/// The device values of a report, each with the line it came from; `origin` is the input
/// file's name.
pub fn draft(report: &DeviceQueryReport, origin: &str) -> DeviceDraft {
    let mut d = DeviceDraft::new(TOOL, origin);
    let src = |field: &str| match report.lines.get(field) {
        Some((n, text)) => at_line(TOOL, origin, *n, text),
        None => format!("{TOOL} {origin}"),
    };
    d.name = report.name.clone().map(|n| Sourced::new(n, src("name")));
    d.compute_capability = Some(Sourced::new(
        report.compute_capability,
        src("compute_capability"),
    ));
    d.sm_count = Some(Sourced::new(report.sm_count, src("sm_count")));
    d.cores_per_sm = Some(Sourced::new(report.cores_per_sm, src("sm_count")));
    // deviceQuery prints only the maximum clock: the draft sets the base clock to it (noted).
    d.boost_clock_mhz = Some(Sourced::new(report.max_clock_mhz, src("max_clock_mhz")));
    d.memory_bandwidth_gbs = Some(Sourced::new(
        report.memory_bandwidth_gbs(),
        format!(
            "{}; {}: 2 x {} MHz memory clock x {}-bit bus / 8",
            src("memory_clock_mhz"),
            src("memory_bus_width_bits"),
            report.memory_clock_mhz,
            report.memory_bus_width_bits
        ),
    ));
    d.l2_cache_bytes = Some(Sourced::new(report.l2_cache_bytes, src("l2_cache_bytes")));
    d.memory_size_bytes = report
        .global_memory_bytes
        .map(|b| Sourced::new(b, src("global_memory_bytes")));
    let mut limit = |field: &'static str, v: Option<u32>, line_of: &'static str| {
        if let Some(v) = v {
            d.limits.insert(field, Sourced::new(v, src(line_of)));
        }
    };
    limit(
        "shared_memory_per_block_bytes",
        report.shared_memory_per_block_bytes,
        "shared_memory_per_block_bytes",
    );
    limit(
        "shared_memory_per_sm_bytes",
        report.shared_memory_per_sm_bytes,
        "shared_memory_per_sm_bytes",
    );
    limit(
        "registers_per_block",
        report.registers_per_block,
        "registers_per_block",
    );
    limit(
        "max_threads_per_sm",
        report.max_threads_per_sm,
        "max_threads_per_sm",
    );
    limit(
        "max_warps_per_sm",
        report.max_threads_per_sm.map(|t| t / 32),
        "max_threads_per_sm",
    );
    limit(
        "max_threads_per_block",
        report.max_threads_per_block,
        "max_threads_per_block",
    );
    d
}

/// The architecture name and the unified L1/shared capacity per SM (bytes) of a compute
/// capability, as the CUDA programming guide lists them (dedicated shared memory on Maxwell and
/// GP10x-class Pascal, whose L1 sits with the texture cache).
pub fn architecture_of(cc: ComputeCapability) -> Option<(&'static str, u64)> {
    const KB: u64 = 1024;
    Some(match (cc.major, cc.minor) {
        (2, _) => ("Fermi", 64 * KB),
        (3, 7) => ("Kepler", 128 * KB),
        (3, _) => ("Kepler", 64 * KB),
        (5, 2) => ("Maxwell", 96 * KB),
        (5, _) => ("Maxwell", 64 * KB),
        (6, 1) => ("Pascal", 96 * KB),
        (6, _) => ("Pascal", 64 * KB),
        (7, 5) => ("Turing", 96 * KB),
        (7, _) => ("Volta", 128 * KB),
        (8, 0) | (8, 7) => ("Ampere", 192 * KB),
        (8, 9) => ("Ada", 128 * KB),
        (8, _) => ("Ampere", 128 * KB),
        (9, _) => ("Hopper", 256 * KB),
        (10, _) | (11, _) => ("Blackwell", 256 * KB),
        (12, _) => ("Blackwell", 128 * KB),
        _ => return None,
    })
}

/// `Device 0: "Tesla T4"` -> `Tesla T4`.
fn device_header(line: &str) -> Option<String> {
    let rest = line.strip_prefix("Device ")?;
    let (index, name) = rest.split_once(':')?;
    if index.trim().parse::<u32>().is_err() {
        return None;
    }
    let name = name.trim().trim_matches('"').trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// Every unsigned number in a line, in order ("(40) Multiprocessors, ( 64) ..." -> 40, 64, ...).
pub(super) fn numbers(s: &str) -> Vec<f64> {
    s.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|t| t.trim_matches('.').parse::<f64>().ok())
        .collect()
}

pub(super) fn first_u64(s: &str) -> Option<u64> {
    numbers(s)
        .first()
        .filter(|v| v.fract() == 0.0 && **v >= 0.0)
        .map(|v| *v as u64)
}

pub(super) fn to_u32(v: f64) -> u32 {
    v.max(0.0).min(f64::from(u32::MAX)) as u32
}

/// "4194304 bytes" -> 4194304; "4 MBytes" -> 4 MiB.
fn bytes(s: &str) -> Option<u64> {
    let n = first_u64(s)?;
    let lower = s.to_ascii_lowercase();
    Some(if lower.contains("mbyte") {
        n * 1024 * 1024
    } else if lower.contains("kbyte") {
        n * 1024
    } else {
        n
    })
}

/// "1590 MHz (1.59 GHz)" -> 1590; "1.15 GHz" -> 1150; "5001 Mhz" -> 5001.
pub(super) fn clock_mhz(s: &str) -> Option<f64> {
    let v = *numbers(s).first()?;
    let lower = s.to_ascii_lowercase();
    let unit_ghz = match (lower.find("ghz"), lower.find("mhz")) {
        (Some(g), Some(m)) => g < m,
        (Some(_), None) => true,
        _ => false,
    };
    let mhz = if unit_ghz { v * 1000.0 } else { v };
    (mhz.is_finite() && mhz > 0.0).then_some(mhz)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// deviceQuery output for a Tesla T4, written for this test in the layout of the CUDA
    /// samples' deviceQuery (CUDA 11/12 era). T4 values: NVIDIA T4 datasheet and the Turing
    /// whitepaper (40 SMs x 64 cores, 1590 MHz boost, GDDR6 at 5001 MHz on 256 bits, 4 MB L2).
    const T4: &str = r#"./deviceQuery Starting...

 CUDA Device Query (Runtime API) version (CUDART static linking)

Detected 1 CUDA Capable device(s)

Device 0: "Tesla T4"
  CUDA Driver Version / Runtime Version          12.2 / 12.2
  CUDA Capability Major/Minor version number:    7.5
  Total amount of global memory:                 14931 MBytes (15655829504 bytes)
  (40) Multiprocessors, ( 64) CUDA Cores/MP:     2560 CUDA Cores
  GPU Max Clock rate:                            1590 MHz (1.59 GHz)
  Memory Clock rate:                             5001 Mhz
  Memory Bus Width:                              256-bit
  L2 Cache Size:                                 4194304 bytes
  Maximum Texture Dimension Size (x,y,z)         1D=(131072), 2D=(131072, 65536), 3D=(16384, 16384, 16384)
  Total amount of constant memory:               65536 bytes
  Total amount of shared memory per block:       49152 bytes
  Total shared memory per multiprocessor:        65536 bytes
  Total number of registers available per block: 65536
  Warp size:                                     32
  Maximum number of threads per multiprocessor:  1024
  Maximum number of threads per block:           1024
  Max dimension size of a thread block (x,y,z): (1024, 1024, 64)
  Max dimension size of a grid size    (x,y,z): (2147483647, 65535, 65535)
  Compute Mode:
     < Default (multiple host threads can use ::cudaSetDevice() with device simultaneously) >

deviceQuery, CUDA Driver = CUDART, CUDA Driver Version = 12.2, CUDA Runtime Version = 12.2, NumDevs = 1
Result = PASS
"#;

    #[test]
    fn reads_a_t4_report() {
        let r = parse(T4, "t4.txt").unwrap();
        assert_eq!(r.name.as_deref(), Some("Tesla T4"));
        assert_eq!(r.compute_capability, ComputeCapability::new(7, 5));
        assert_eq!((r.sm_count, r.cores_per_sm), (40, 64));
        assert_eq!(r.max_clock_mhz, 1590.0);
        assert_eq!(r.memory_clock_mhz, 5001.0);
        assert_eq!(r.memory_bus_width_bits, 256);
        assert_eq!(r.l2_cache_bytes, 4 * 1024 * 1024);
        assert_eq!(r.global_memory_bytes, Some(15_655_829_504));
        assert_eq!(r.shared_memory_per_sm_bytes, Some(65536));
        assert_eq!(r.max_threads_per_sm, Some(1024));
        // 2 transfers x 5001 MHz x 256 bits / 8 = 320064 MB/s = 320.064 GB/s (datasheet: 320 GB/s).
        assert!((r.memory_bandwidth_gbs() - 320.064).abs() < 1e-9);
    }

    use crate::device::Device;

    #[test]
    fn t4_device_file_matches_the_table_and_needs_no_overrides() {
        let r = parse(T4, "t4.txt").unwrap();
        let text = draft(&r, "t4.txt").to_toml(None).unwrap();
        let d = Device::from_toml(&text, "t4.txt").unwrap();
        assert_eq!(d.name, "Tesla T4");
        assert_eq!(d.architecture, "Turing");
        assert_eq!(d.sm_count * d.cores_per_sm, 2560);
        assert_eq!(d.core_clock_mhz, 1590.0);
        // Turing: 96 KB unified L1/shared per SM.
        assert_eq!(d.l1_shared_per_sm_bytes, 96 * 1024);
        assert!(!text.contains("[limits]"), "{text}");
        // Each value names the file and the line it was read from (line 11 of the sample).
        assert_eq!(
            d.sources["sm_count"],
            "deviceQuery output t4.txt line 11 (`(40) Multiprocessors, ( 64) CUDA Cores/MP:     2560 CUDA Cores`)"
        );
        assert!(
            d.sources["memory_bandwidth_gbs"].contains("line 13")
                && d.sources["memory_bandwidth_gbs"].contains("line 14")
        );
    }

    #[test]
    fn a_printed_limit_that_differs_becomes_an_override() {
        let text = T4.replace(
            "Maximum number of threads per multiprocessor:  1024",
            "Maximum number of threads per multiprocessor:  2048",
        );
        let r = parse(&text, "x.txt").unwrap();
        let toml = draft(&r, "x.txt").to_toml(Some("My T4")).unwrap();
        let d = Device::from_toml(&toml, "x.txt").unwrap();
        assert_eq!(d.name, "My T4");
        assert_eq!(d.limits.max_threads_per_sm, 2048);
        assert_eq!(d.limits.max_warps_per_sm, 64);
        assert!(d.sources["limits.max_threads_per_sm"].starts_with(
            "deviceQuery output x.txt line 22 (`Maximum number of threads per multiprocessor:"
        ));
    }

    #[test]
    fn a_missing_line_is_named() {
        let text = T4.replace(
            "  L2 Cache Size:                                 4194304 bytes\n",
            "",
        );
        let e = parse(&text, "t4.txt").unwrap_err().to_string();
        assert!(e.contains("L2 Cache Size:"), "{e}");
        let e = parse("hello\nworld\n", "x.txt").unwrap_err().to_string();
        assert!(e.contains(CC_LINE), "{e}");
    }

    #[test]
    fn only_the_first_device_is_read() {
        let two = format!(
            "{T4}\nDevice 1: \"Other\"\n  CUDA Capability Major/Minor version number:    8.0\n"
        );
        let r = parse(&two, "two.txt").unwrap();
        assert_eq!(r.compute_capability, ComputeCapability::new(7, 5));
    }

    #[test]
    fn clocks_in_ghz_and_mhz() {
        assert_eq!(clock_mhz(" 1.15 GHz"), Some(1150.0));
        assert_eq!(clock_mhz(" 1590 MHz (1.59 GHz)"), Some(1590.0));
        assert_eq!(clock_mhz(" fast"), None);
    }
}
