//! Per-architecture memory-system and throughput constants the models need beyond the latency
//! table: launch overhead, achievable DRAM bandwidth, L2 bandwidth, global and shared atomic
//! throughputs, conversion throughputs and the L1 policy of global loads, read through one
//! accessor ([`for_device`]).
//!
//! PROVISIONAL: these values belong in `data/latencies.toml` (with their sources; that change is
//! under way in another branch). Until it lands, [`for_device`] takes them from the table below,
//! transcribed from that branch's rows with the same field names and the sources it cites
//! (`docs/sources/arch-constants.md` there). Once the fields are in `Latencies`, the accessor reads
//! them from the resolved table (with the device file's overrides) and this table goes.
//!
//! Lookup only; the models decide how to use the numbers.

use serde::Serialize;

use super::latencies::Resolved;
use super::Device;

/// The constants of one compute capability (units in the names; `_per_clk` is per core clock).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ArchConstants {
    /// What one launch adds to a kernel's time on the GPU, µs.
    pub launch_overhead_us: f64,
    /// Achievable over peak DRAM bandwidth of a streaming kernel.
    pub dram_efficiency: f64,
    /// L2 hit bandwidth of the GPU divided by its SMs, bytes per clock per SM.
    pub l2_bytes_per_clk_sm: f64,
    /// Same-address global atomics, results per clock for the whole GPU.
    pub global_atomic_same_address_per_clk: f64,
    /// Global atomics to distinct addresses, results per clock per SM.
    pub global_atomic_distinct_per_clk_sm: f64,
    /// Shared-memory atomics without conflicts, results per clock per SM.
    pub shared_atomic_per_clk_sm: f64,
    /// Cycles each further same-address lane of a shared atomic adds.
    pub shared_atomic_conflict_cycles: f64,
    /// 32-bit type conversions, results per clock per SM.
    pub convert_per_clk_sm: f64,
    /// Conversions from or to 64-bit types, results per clock per SM.
    pub convert64_per_clk_sm: f64,
    /// Whether an ordinary `ld.global` is cached in L1.
    pub global_loads_cached_in_l1: bool,
    /// Whether `ld.global.ca` (or `-dlcm=ca`) can cache global loads in L1.
    pub global_l1_opt_in: bool,
}

/// Where the constants come from, for the notes.
pub const SOURCE: &str = "per-architecture constants (launch overhead, DRAM efficiency, L2 bandwidth, atomics, conversions, L1 policy) transcribed from the pending data/latencies.toml rows and their sources (docs/sources/arch-constants.md of that change)";

/// (architecture row, values) as in the pending table; per-compute-capability exceptions in
/// [`for_device`].
#[rustfmt::skip]
const ROWS: &[(&str, ArchConstants)] = &[
    ("Fermi", c(3.0, 0.80, 11.4, 0.11, 0.35, 8.0, 44.0, 16.0, 16.0, true, true)),
    ("Kepler", c(3.0, 0.80, 48.8, 1.0, 1.5, 16.0, 35.0, 32.0, 32.0, false, true)),
    ("Maxwell", c(3.0, 0.78, 28.5, 1.0, 0.89, 16.0, 2.0, 32.0, 4.0, false, true)),
    ("Pascal GP100", c(3.0, 0.79, 24.4, 1.0, 0.76, 16.0, 2.0, 16.0, 16.0, true, true)),
    ("Pascal", c(3.0, 0.79, 24.4, 1.0, 0.76, 16.0, 2.0, 32.0, 4.0, false, true)),
    ("Volta", c(2.6, 0.91, 22.1, 0.116, 0.69, 16.0, 2.0, 16.0, 16.0, true, true)),
    ("Turing", c(2.0, 0.88, 21.8, 0.116, 0.68, 16.0, 2.0, 16.0, 2.0, true, true)),
    ("Ampere GA100", c(2.6, 0.90, 36.9, 0.116, 1.15, 16.0, 2.0, 16.0, 16.0, true, true)),
    ("Ampere GA10x", c(2.05, 0.93, 25.6, 0.116, 0.8, 16.0, 2.0, 16.0, 2.0, true, true)),
    ("Ada", c(1.6, 0.91, 14.8, 0.116, 0.46, 16.0, 2.0, 16.0, 2.0, true, true)),
    ("Hopper", c(2.4, 0.83, 34.9, 0.116, 1.09, 16.0, 2.0, 16.0, 16.0, true, true)),
    ("Blackwell datacenter", c(2.4, 0.83, 34.9, 0.116, 1.09, 16.0, 2.0, 16.0, 16.0, true, true)),
    ("Blackwell consumer", c(1.6, 0.91, 14.8, 0.116, 0.46, 16.0, 2.0, 16.0, 2.0, true, true)),
];

#[allow(clippy::too_many_arguments)]
const fn c(
    launch_overhead_us: f64,
    dram_efficiency: f64,
    l2_bytes_per_clk_sm: f64,
    global_atomic_same_address_per_clk: f64,
    global_atomic_distinct_per_clk_sm: f64,
    shared_atomic_per_clk_sm: f64,
    shared_atomic_conflict_cycles: f64,
    convert_per_clk_sm: f64,
    convert64_per_clk_sm: f64,
    global_loads_cached_in_l1: bool,
    global_l1_opt_in: bool,
) -> ArchConstants {
    ArchConstants {
        launch_overhead_us,
        dram_efficiency,
        l2_bytes_per_clk_sm,
        global_atomic_same_address_per_clk,
        global_atomic_distinct_per_clk_sm,
        shared_atomic_per_clk_sm,
        shared_atomic_conflict_cycles,
        convert_per_clk_sm,
        convert64_per_clk_sm,
        global_loads_cached_in_l1,
        global_l1_opt_in,
    }
}

/// The constants for a device (its resolved latency table names the architecture row).
pub fn for_device(device: &Device, lat: &Resolved) -> ArchConstants {
    let mut a = ROWS
        .iter()
        .find(|(name, _)| *name == lat.architecture)
        .map_or(ROWS[ROWS.len() - 2].1, |(_, v)| *v);
    // Per-compute-capability exceptions of the rows.
    match device.compute_capability.as_number() {
        21 => a.convert64_per_clk_sm = 4.0,
        30 | 32 => {
            a.convert64_per_clk_sm = 8.0;
            a.global_l1_opt_in = false;
        }
        50 => a.global_l1_opt_in = false,
        103 | 110 => a.convert64_per_clk_sm = 2.0,
        _ => {}
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::catalogue;
    use crate::device::latencies::for_device as latencies;

    #[test]
    fn every_catalogue_device_has_constants_and_the_l1_policy_follows_the_guide() {
        for d in catalogue::all() {
            let lat = latencies(d).unwrap();
            assert!(
                ROWS.iter().any(|(n, _)| *n == lat.architecture),
                "{}: {}",
                d.name,
                lat.architecture
            );
            let a = for_device(d, &lat);
            assert!(a.dram_efficiency > 0.5 && a.dram_efficiency <= 1.0);
            assert!(a.launch_overhead_us > 0.0);
        }
        // CUDA C++ Programming Guide: 3.x and 5.x cache global loads in L2 only by default;
        // from 7.x the L1 and texture cache are unified and cache them.
        let k = catalogue::find("Tesla K20c").unwrap();
        assert!(!for_device(k, &latencies(k).unwrap()).global_loads_cached_in_l1);
        let m = catalogue::find("GTX Titan X").unwrap();
        assert!(!for_device(m, &latencies(m).unwrap()).global_loads_cached_in_l1);
        let v = catalogue::find("V100").unwrap();
        assert!(for_device(v, &latencies(v).unwrap()).global_loads_cached_in_l1);
    }
}
