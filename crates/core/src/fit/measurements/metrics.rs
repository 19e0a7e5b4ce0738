//! Profiler metric names -> [`Counters`] fields: the one mapping the Nsight Compute, KTT, T4 and
//! counters-table readers share, so that a counter means the same thing whichever tool wrote it.
//!
//! Nsight Compute names (NVIDIA's "nvprof to Nsight Compute" metric comparison) and the nvprof
//! names they replace:
//!
//! | [`Counters`] field | Nsight Compute metric | nvprof name |
//! |---|---|---|
//! | `inst_executed` (warp instructions) | `smsp__inst_executed.sum`, `sm__inst_executed.sum` | `inst_executed` |
//! | `warps_launched` | `smsp__warps_launched.sum` | `warps_launched` |
//! | `achieved_occupancy` (fraction) | `sm__warps_active.avg.pct_of_peak_sustained_active` (percent / 100) | `achieved_occupancy` |
//! | `elapsed_cycles_sm` (summed over SMs) | `sm__cycles_elapsed.sum` | `elapsed_cycles_sm` |
//! | `active_cycles` (summed over SMs) | `sm__cycles_active.sum` | `active_cycles` |
//! | `elapsed_cycles` (kernel start to end) | `gpc__cycles_elapsed.max` | - |
//! | `gld_transactions` (32-byte sectors) | `l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum` | `gld_transactions` |
//! | `gst_transactions` | `l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum` | `gst_transactions` |
//! | `gld_requests` (warp requests) | `l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum` | `gld_request` |
//! | `gst_requests` | `l1tex__t_requests_pipe_lsu_mem_global_op_st.sum` | `gst_request` |
//! | `l2_read_transactions` | `lts__t_sectors_op_read.sum` | `l2_read_transactions` |
//! | `l2_write_transactions` | `lts__t_sectors_op_write.sum` | `l2_write_transactions` |
//! | `dram_read_transactions` | `dram__sectors_read.sum` (or `dram__bytes_read.sum` / 32) | `dram_read_transactions` |
//! | `dram_write_transactions` | `dram__sectors_write.sum` (or `dram__bytes_write.sum` / 32) | `dram_write_transactions` |
//! | `regs_per_thread` | `launch__registers_per_thread` | - |
//! | `static_smem_bytes`, `dynamic_smem_bytes` | `launch__shared_mem_per_block_static`, `_dynamic` | - |
//! | `core_clock_mhz` | `gpc__cycles_elapsed.avg.per_second`, `sm__cycles_elapsed.avg.per_second` | - |
//!
//! Units: counts may carry an SI prefix (`Ksector`, `Minst`), bytes `byte`/`Kbyte`/`Mbyte`/`Gbyte`
//! (powers of 1000, as Nsight Compute scales them) or `KiB`-style binary units, rates
//! `cycle/second`, `cycle/usecond`, `cycle/nsecond`, `hz`, `khz`, `mhz`, `ghz`; an empty unit is the
//! base unit (KTT and T4 store raw values). Other metrics are not mapped (they stay out of the
//! counters, and the readers count them in their notes).

use std::collections::BTreeSet;

use super::Counters;

/// How a metric's value becomes the field's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A count (instructions, sectors, requests, cycles, warps).
    Count,
    /// A count of bytes, stored as 32-byte sectors.
    BytesAsSectors,
    /// A percentage, stored as a fraction.
    PercentAsFraction,
    /// A count of bytes.
    Bytes,
    /// A clock rate, stored in MHz.
    ClockMhz,
    /// A fraction already (nvprof's achieved_occupancy).
    Fraction,
}

/// (metric name, field, kind, whether it only fills a field no other metric set)
const MAPPING: &[(&str, &str, Kind, bool)] = &[
    (
        "smsp__inst_executed.sum",
        "inst_executed",
        Kind::Count,
        false,
    ),
    ("sm__inst_executed.sum", "inst_executed", Kind::Count, false),
    ("inst_executed", "inst_executed", Kind::Count, false),
    (
        "smsp__warps_launched.sum",
        "warps_launched",
        Kind::Count,
        false,
    ),
    ("warps_launched", "warps_launched", Kind::Count, false),
    (
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "achieved_occupancy",
        Kind::PercentAsFraction,
        false,
    ),
    (
        "achieved_occupancy",
        "achieved_occupancy",
        Kind::Fraction,
        false,
    ),
    (
        "sm__cycles_elapsed.sum",
        "elapsed_cycles_sm",
        Kind::Count,
        false,
    ),
    ("elapsed_cycles_sm", "elapsed_cycles_sm", Kind::Count, false),
    ("sm__cycles_active.sum", "active_cycles", Kind::Count, false),
    ("active_cycles", "active_cycles", Kind::Count, false),
    (
        "gpc__cycles_elapsed.max",
        "elapsed_cycles",
        Kind::Count,
        false,
    ),
    (
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
        "gld_transactions",
        Kind::Count,
        false,
    ),
    ("gld_transactions", "gld_transactions", Kind::Count, false),
    (
        "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
        "gst_transactions",
        Kind::Count,
        false,
    ),
    ("gst_transactions", "gst_transactions", Kind::Count, false),
    (
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
        "gld_requests",
        Kind::Count,
        false,
    ),
    ("gld_request", "gld_requests", Kind::Count, false),
    (
        "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
        "gst_requests",
        Kind::Count,
        false,
    ),
    ("gst_request", "gst_requests", Kind::Count, false),
    (
        "lts__t_sectors_op_read.sum",
        "l2_read_transactions",
        Kind::Count,
        false,
    ),
    (
        "l2_read_transactions",
        "l2_read_transactions",
        Kind::Count,
        false,
    ),
    (
        "lts__t_sectors_op_write.sum",
        "l2_write_transactions",
        Kind::Count,
        false,
    ),
    (
        "l2_write_transactions",
        "l2_write_transactions",
        Kind::Count,
        false,
    ),
    (
        "dram__sectors_read.sum",
        "dram_read_transactions",
        Kind::Count,
        false,
    ),
    (
        "dram_read_transactions",
        "dram_read_transactions",
        Kind::Count,
        false,
    ),
    (
        "dram__bytes_read.sum",
        "dram_read_transactions",
        Kind::BytesAsSectors,
        true,
    ),
    (
        "dram__sectors_write.sum",
        "dram_write_transactions",
        Kind::Count,
        false,
    ),
    (
        "dram_write_transactions",
        "dram_write_transactions",
        Kind::Count,
        false,
    ),
    (
        "dram__bytes_write.sum",
        "dram_write_transactions",
        Kind::BytesAsSectors,
        true,
    ),
    (
        "launch__registers_per_thread",
        "regs_per_thread",
        Kind::Count,
        false,
    ),
    (
        "launch__shared_mem_per_block_static",
        "static_smem_bytes",
        Kind::Bytes,
        false,
    ),
    (
        "launch__shared_mem_per_block_dynamic",
        "dynamic_smem_bytes",
        Kind::Bytes,
        false,
    ),
    (
        "gpc__cycles_elapsed.avg.per_second",
        "core_clock_mhz",
        Kind::ClockMhz,
        false,
    ),
    (
        "sm__cycles_elapsed.avg.per_second",
        "core_clock_mhz",
        Kind::ClockMhz,
        true,
    ),
];

/// Whether `name` is a metric this module maps.
pub(crate) fn is_mapped(name: &str) -> bool {
    MAPPING.iter().any(|(m, ..)| *m == name)
}

/// Whether a column or counter name looks like a profiler metric rather than a tuning parameter:
/// a mapped name, or an Nsight Compute name (`unit__counter...`).
pub(crate) fn looks_like_metric(name: &str) -> bool {
    is_mapped(name) || name.contains("__")
}

/// The reader note listing the metrics a file has but no mapping takes (`None` when none).
pub(crate) fn unmapped_note(names: &BTreeSet<String>) -> Option<String> {
    if names.is_empty() {
        return None;
    }
    let list: Vec<&str> = names.iter().map(String::as_str).collect();
    Some(format!(
        "{} metric(s) have no kerneltime counter and were not read: {}",
        list.len(),
        list.join(", ")
    ))
}

/// Sets the field `name` maps to from `value` in `unit`. Returns `Ok(false)` for a metric this
/// module does not map, and an error message (without file or line) for a value that cannot be
/// converted.
pub(crate) fn apply(c: &mut Counters, name: &str, value: f64, unit: &str) -> Result<bool, String> {
    let Some(&(_, field, kind, fallback)) = MAPPING.iter().find(|(m, ..)| *m == name) else {
        return Ok(false);
    };
    if !value.is_finite() || value < 0.0 {
        return Err(format!(
            "`{name}` must be a non-negative number, got {value}"
        ));
    }
    let unit = unit.trim();
    let bad_unit = || format!("unknown unit \"{unit}\" for `{name}`");
    let v = match kind {
        Kind::Count => value * count_scale(unit).ok_or_else(bad_unit)?,
        Kind::Bytes => value * byte_scale(unit).ok_or_else(bad_unit)?,
        Kind::BytesAsSectors => value * byte_scale(unit).ok_or_else(bad_unit)? / 32.0,
        Kind::PercentAsFraction => {
            if !(unit.is_empty() || unit == "%") {
                return Err(bad_unit());
            }
            value / 100.0
        }
        Kind::Fraction => value,
        Kind::ClockMhz => value * clock_scale_mhz(unit).ok_or_else(bad_unit)?,
    };
    match field {
        "regs_per_thread" => c.regs_per_thread = Some(v.round() as u32),
        "static_smem_bytes" | "dynamic_smem_bytes" => {
            let slot = if field == "static_smem_bytes" {
                &mut c.static_smem_bytes
            } else {
                &mut c.dynamic_smem_bytes
            };
            *slot = Some(v.round() as u64);
        }
        _ => {
            let slot = float_slot(c, field).expect("every mapped field has a slot");
            if !(fallback && slot.is_some()) {
                *slot = Some(v);
            }
        }
    }
    Ok(true)
}

fn float_slot<'a>(c: &'a mut Counters, field: &str) -> Option<&'a mut Option<f64>> {
    Some(match field {
        "inst_executed" => &mut c.inst_executed,
        "warps_launched" => &mut c.warps_launched,
        "achieved_occupancy" => &mut c.achieved_occupancy,
        "elapsed_cycles_sm" => &mut c.elapsed_cycles_sm,
        "active_cycles" => &mut c.active_cycles,
        "elapsed_cycles" => &mut c.elapsed_cycles,
        "gld_transactions" => &mut c.gld_transactions,
        "gst_transactions" => &mut c.gst_transactions,
        "gld_requests" => &mut c.gld_requests,
        "gst_requests" => &mut c.gst_requests,
        "l2_read_transactions" => &mut c.l2_read_transactions,
        "l2_write_transactions" => &mut c.l2_write_transactions,
        "dram_read_transactions" => &mut c.dram_read_transactions,
        "dram_write_transactions" => &mut c.dram_write_transactions,
        "core_clock_mhz" => &mut c.core_clock_mhz,
        _ => return None,
    })
}

/// The SI prefix of a unit (`K`, `M`, `G`, `T`) and the rest.
fn si_prefix(unit: &str) -> (f64, &str) {
    let mut chars = unit.chars();
    let factor = match chars.next() {
        Some('K' | 'k') => 1e3,
        Some('M') => 1e6,
        Some('G') => 1e9,
        Some('T') => 1e12,
        _ => return (1.0, unit),
    };
    (factor, chars.as_str())
}

/// Multiplier of a count unit: empty, a base word, or an SI-prefixed base word.
fn count_scale(unit: &str) -> Option<f64> {
    const BASES: &[&str] = &[
        "",
        "inst",
        "warp",
        "sector",
        "request",
        "cycle",
        "register/thread",
        "thread",
        "block",
    ];
    if BASES.contains(&unit) {
        return Some(1.0);
    }
    let (factor, base) = si_prefix(unit);
    (factor != 1.0 && !base.is_empty() && BASES.contains(&base)).then_some(factor)
}

/// Multiplier to bytes: `byte` with SI prefixes (1000) or binary `KiB`/`Kibyte` (1024).
fn byte_scale(unit: &str) -> Option<f64> {
    let binary = |p: &str| match p {
        "Ki" => Some(1024.0),
        "Mi" => Some(1024.0 * 1024.0),
        "Gi" => Some(1024.0 * 1024.0 * 1024.0),
        _ => None,
    };
    match unit {
        "" | "byte" | "B" => Some(1.0),
        _ => {
            if let Some(p) = unit.strip_suffix("byte").or_else(|| unit.strip_suffix('B')) {
                if let Some(f) = binary(p) {
                    return Some(f);
                }
                let (factor, rest) = si_prefix(p);
                (factor != 1.0 && rest.is_empty()).then_some(factor)
            } else {
                None
            }
        }
    }
}

/// Multiplier of a clock rate unit to MHz (empty: cycles per second, KTT's raw value).
fn clock_scale_mhz(unit: &str) -> Option<f64> {
    match unit.to_ascii_lowercase().as_str() {
        "" | "cycle/second" | "hz" => Some(1e-6),
        "cycle/msecond" | "khz" => Some(1e-3),
        "cycle/usecond" | "mhz" => Some(1.0),
        "cycle/nsecond" | "ghz" => Some(1e3),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nsight_and_nvprof_names_fill_the_same_fields() {
        let mut a = Counters::default();
        let mut b = Counters::default();
        for (ncu, nvprof, v) in [
            ("smsp__inst_executed.sum", "inst_executed", 4096.0),
            ("dram__sectors_read.sum", "dram_read_transactions", 512.0),
            (
                "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
                "gld_transactions",
                256.0,
            ),
            ("lts__t_sectors_op_write.sum", "l2_write_transactions", 64.0),
        ] {
            assert!(apply(&mut a, ncu, v, "").unwrap());
            assert!(apply(&mut b, nvprof, v, "").unwrap());
        }
        assert_eq!(a, b);
        assert_eq!(a.inst_executed, Some(4096.0));
        assert_eq!(a.l2_write_transactions, Some(64.0));
    }

    #[test]
    fn units_convert() {
        let mut c = Counters::default();
        // 84.5 % active warps = 0.845 achieved occupancy.
        apply(
            &mut c,
            "sm__warps_active.avg.pct_of_peak_sustained_active",
            84.5,
            "%",
        )
        .unwrap();
        assert!((c.achieved_occupancy.unwrap() - 0.845).abs() < 1e-12);
        // 2.5 Ksector = 2500 sectors.
        apply(&mut c, "dram__sectors_write.sum", 2.5, "Ksector").unwrap();
        assert_eq!(c.dram_write_transactions, Some(2500.0));
        // 64 Kbyte = 64000 bytes = 2000 sectors (only when the sector count is absent).
        apply(&mut c, "dram__bytes_read.sum", 64.0, "Kbyte").unwrap();
        assert_eq!(c.dram_read_transactions, Some(2000.0));
        apply(&mut c, "dram__sectors_read.sum", 1999.0, "sector").unwrap();
        apply(&mut c, "dram__bytes_read.sum", 64.0, "Kbyte").unwrap();
        assert_eq!(c.dram_read_transactions, Some(1999.0));
        // 1.41 cycle/nsecond = 1410 MHz; KTT's raw value is cycles per second.
        apply(
            &mut c,
            "gpc__cycles_elapsed.avg.per_second",
            1.41,
            "cycle/nsecond",
        )
        .unwrap();
        assert!((c.core_clock_mhz.unwrap() - 1410.0).abs() < 1e-9);
        apply(&mut c, "gpc__cycles_elapsed.avg.per_second", 1.5e9, "").unwrap();
        assert!((c.core_clock_mhz.unwrap() - 1500.0).abs() < 1e-9);
        apply(&mut c, "launch__shared_mem_per_block_static", 1.0, "Kibyte").unwrap();
        assert_eq!(c.static_smem_bytes, Some(1024));
        assert!(apply(&mut c, "gpc__cycles_elapsed.max", 1.0, "msecond").is_err());
        assert!(apply(&mut c, "smsp__inst_executed.sum", -1.0, "").is_err());
        assert!(!apply(
            &mut c,
            "smsp__issue_active.avg.pct_of_peak_sustained_active",
            3.0,
            "%"
        )
        .unwrap());
    }

    #[test]
    fn every_mapped_metric_has_a_field() {
        for (name, ..) in MAPPING {
            let mut c = Counters::default();
            assert!(apply(&mut c, name, 1.0, "").unwrap(), "{name}");
            assert!(!c.is_empty(), "{name}");
        }
    }

    #[test]
    fn metric_names_are_told_from_parameter_names() {
        assert!(looks_like_metric("dram__sectors_read.sum"));
        assert!(looks_like_metric(
            "smsp__sass_thread_inst_executed_op_fp32_pred_on.sum"
        ));
        assert!(looks_like_metric("inst_executed"));
        assert!(!looks_like_metric("WORK_GROUP_SIZE_X"));
        assert!(!looks_like_metric("block_size_x"));
    }
}
