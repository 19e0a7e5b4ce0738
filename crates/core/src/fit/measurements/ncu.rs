//! Nsight Compute CSV (`ncu --csv ...`), in either of its two layouts:
//!
//! - the default "details" layout: one row per (launch, metric) with `"ID"`, `"Kernel Name"`,
//!   optionally `"Block Size"`/`"Grid Size"` as `(X, Y, Z)`, and `"Metric Name"`,
//!   `"Metric Unit"`, `"Metric Value"`;
//! - the raw page (`--page raw`): one row per launch with metric names as columns and a row of
//!   units after the header.
//!
//! The time is the `gpu__time_duration` metric (`.sum`, or any other roll-up when that is the one
//! collected) converted with its unit (`nsecond`, `usecond`, `msecond`, `second`). A launch without
//! it is an error. The device name comes from `device__attribute_display_name` when collected, the
//! compute capability from `device__attribute_compute_capability_major`/`_minor`, and the launch
//! from `Grid Size`/`Block Size` or, without them, the 1-D `launch__grid_size`/`launch__block_size`.
//! Every other metric with a counters mapping (`smsp__inst_executed.sum`, `dram__sectors_read.sum`,
//! `sm__warps_active.avg.pct_of_peak_sustained_active`, `l1tex__t_requests...`, `lts__t_sectors...`,
//! `launch__registers_per_thread`, ...; the table is in [`super::metrics`]) fills the same
//! [`Counters`] fields the amaris-style counter tables give, converted with its unit; the others are
//! counted in the notes. `==PROF==` lines are skipped.

use std::collections::{BTreeMap, BTreeSet};

use super::{
    check_time, find_line, line_error, metrics, number, read_csv, time_unit_us, whole, Counters,
    Dim3, Measurement, Parsed,
};
use crate::error::{Error, Result};

const TIME_METRIC: &str = "gpu__time_duration";

pub(crate) fn parse(text: &str, origin: &str) -> Result<Parsed> {
    let start = find_line(text, |l| {
        (l.contains("Metric Name") && l.contains("Metric Value")) || l.contains(TIME_METRIC)
    })
    .ok_or_else(|| Error::file(origin, "no Nsight Compute CSV header found"))?;
    let table = read_csv(text, origin, start, true, false)?;
    if table.column("Metric Name").is_some() {
        parse_details(&table, origin)
    } else {
        parse_raw(&table, origin)
    }
}

/// One launch being assembled from its metric rows.
struct Launch {
    line: usize,
    kernel: String,
    grid: Option<Dim3>,
    block: Option<Dim3>,
    time: Option<(usize, f64, String)>,
    device: Option<String>,
    counters: Counters,
    /// `device__attribute_compute_capability_major`/`_minor`.
    cc: (Option<u32>, Option<u32>),
    /// `launch__grid_size`, `launch__block_size` (1-D totals).
    sizes: (Option<u64>, Option<u64>),
}

impl Launch {
    fn new(line: usize, kernel: String, grid: Option<Dim3>, block: Option<Dim3>) -> Self {
        Self {
            line,
            kernel,
            grid,
            block,
            time: None,
            device: None,
            counters: Counters::default(),
            cc: (None, None),
            sizes: (None, None),
        }
    }

    /// Takes one metric other than the time; `unmapped` collects names with no counter.
    fn metric(
        &mut self,
        name: &str,
        unit: &str,
        value: &str,
        origin: &str,
        line: usize,
        unmapped: &mut BTreeSet<String>,
    ) -> Result<()> {
        let int = |v: &str| -> Result<u64> {
            whole(number(v, name, origin, line, true)?, name, origin, line)
        };
        match name {
            "device__attribute_display_name" => self.device = Some(value.to_string()),
            "device__attribute_compute_capability_major" => self.cc.0 = Some(int(value)? as u32),
            "device__attribute_compute_capability_minor" => self.cc.1 = Some(int(value)? as u32),
            "launch__grid_size" => self.sizes.0 = Some(int(value)?),
            "launch__block_size" => self.sizes.1 = Some(int(value)?),
            _ if metrics::is_mapped(name) => {
                if value.trim().is_empty() || value.trim() == "n/a" {
                    return Ok(());
                }
                let v = number(value, name, origin, line, true)?;
                metrics::apply(&mut self.counters, name, v, unit)
                    .map_err(|e| line_error(origin, line, e))?;
            }
            _ => {
                unmapped.insert(name.to_string());
            }
        }
        Ok(())
    }
}

fn parse_details(table: &super::CsvTable, origin: &str) -> Result<Parsed> {
    let id = table.require(origin, "ID")?;
    let kernel = table.require(origin, "Kernel Name")?;
    let mname = table.require(origin, "Metric Name")?;
    let munit = table.require(origin, "Metric Unit")?;
    let mvalue = table.require(origin, "Metric Value")?;
    let grid = table.column("Grid Size");
    let block = table.column("Block Size");
    let mut launches: BTreeMap<u64, Launch> = BTreeMap::new();
    let mut last_id: Option<u64> = None;
    let mut unmapped = BTreeSet::new();
    for (line, cells) in &table.rows {
        let line = *line;
        // Some ncu versions leave ID and kernel empty on the rows after a launch's first one.
        let this_id = if cells[id].is_empty() {
            last_id.ok_or_else(|| line_error(origin, line, "`ID` is empty"))?
        } else {
            whole(
                number(&cells[id], "ID", origin, line, true)?,
                "ID",
                origin,
                line,
            )?
        };
        last_id = Some(this_id);
        let entry = match launches.entry(this_id) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                if cells[kernel].is_empty() {
                    return Err(line_error(origin, line, "`Kernel Name` is empty"));
                }
                v.insert(Launch::new(
                    line,
                    cells[kernel].clone(),
                    grid.map(|i| super::generic::dims(&cells[i], "Grid Size", origin, line))
                        .transpose()?
                        .flatten(),
                    block
                        .map(|i| super::generic::dims(&cells[i], "Block Size", origin, line))
                        .transpose()?
                        .flatten(),
                ))
            }
        };
        let metric = cells[mname].as_str();
        if metric.starts_with(TIME_METRIC) {
            let v = number(&cells[mvalue], metric, origin, line, true)?;
            let f = time_unit_us(&cells[munit]).ok_or_else(|| {
                line_error(
                    origin,
                    line,
                    format!("unknown time unit \"{}\" for {metric}", cells[munit]),
                )
            })?;
            // Prefer the `.sum` roll-up when several are present.
            if entry.time.is_none() || metric.ends_with(".sum") {
                entry.time = Some((line, v * f, metric.to_string()));
            }
        } else {
            entry.metric(
                metric,
                &cells[munit],
                &cells[mvalue],
                origin,
                line,
                &mut unmapped,
            )?;
        }
    }
    finish(launches.into_values().collect(), origin, unmapped)
}

fn parse_raw(table: &super::CsvTable, origin: &str) -> Result<Parsed> {
    let hl = table.header_line;
    let kernel = table.require(origin, "Kernel Name")?;
    let time = table
        .header
        .iter()
        .position(|h| h == "gpu__time_duration.sum")
        .or_else(|| table.header.iter().position(|h| h.starts_with(TIME_METRIC)))
        .ok_or_else(|| line_error(origin, hl, "no gpu__time_duration column"))?;
    let mut rows = table.rows.iter();
    let (units_line, units) = rows
        .next()
        .ok_or_else(|| line_error(origin, hl, "the units row after the header is missing"))?;
    let f = time_unit_us(&units[time]).ok_or_else(|| {
        line_error(
            origin,
            *units_line,
            format!(
                "unknown time unit \"{}\" for {}",
                units[time], table.header[time]
            ),
        )
    })?;
    let grid = table.column("Grid Size");
    let block = table.column("Block Size");
    // Every metric column other than the time (metric names contain `__`).
    let metric_columns: Vec<usize> = (0..table.header.len())
        .filter(|&i| i != time && table.header[i].contains("__"))
        .collect();
    let mut unmapped = BTreeSet::new();
    let mut launches = Vec::new();
    for (line, cells) in rows {
        let line = *line;
        if cells[kernel].is_empty() {
            return Err(line_error(origin, line, "`Kernel Name` is empty"));
        }
        let v = number(&cells[time], &table.header[time], origin, line, true)?;
        let mut launch = Launch::new(
            line,
            cells[kernel].clone(),
            grid.map(|i| super::generic::dims(&cells[i], "Grid Size", origin, line))
                .transpose()?
                .flatten(),
            block
                .map(|i| super::generic::dims(&cells[i], "Block Size", origin, line))
                .transpose()?
                .flatten(),
        );
        launch.time = Some((line, v * f, table.header[time].clone()));
        for &i in &metric_columns {
            if cells[i].is_empty() {
                continue;
            }
            launch.metric(
                &table.header[i],
                &units[i],
                &cells[i],
                origin,
                line,
                &mut unmapped,
            )?;
        }
        launches.push(launch);
    }
    finish(launches, origin, unmapped)
}

fn finish(launches: Vec<Launch>, origin: &str, unmapped: BTreeSet<String>) -> Result<Parsed> {
    let mut out = Vec::with_capacity(launches.len());
    for l in launches {
        let (tline, t, metric) = l.time.ok_or_else(|| {
            line_error(
                origin,
                l.line,
                format!(
                    "launch of `{}` has no {TIME_METRIC} metric; profile with --metrics {TIME_METRIC}.sum",
                    l.kernel
                ),
            )
        })?;
        let t = check_time(t, &metric, origin, tline)?;
        let mut m = Measurement::new(&l.kernel, t, origin, l.line);
        m.grid = l.grid;
        m.block = l.block;
        if let (None, None, (Some(g), Some(b))) = (m.grid, m.block, l.sizes) {
            if g > 0 && b > 0 {
                m.grid = Some(Dim3::new(g, 1, 1));
                m.block = Some(Dim3::new(b, 1, 1));
            }
        }
        m.device = l.device;
        let mut c = l.counters;
        if let (Some(major), Some(minor)) = l.cc {
            c.compute_capability = Some(format!("{major}.{minor}"));
        }
        if !c.is_empty() {
            m.counters = Some(c);
        }
        out.push(m);
    }
    let mut parsed = Parsed::new(out);
    parsed.notes.extend(metrics::unmapped_note(&unmapped));
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use crate::fit::measurements::{parse_text, Dim3, Format};

    // Written for this test in the layout of `ncu --csv --metrics gpu__time_duration.sum,...`.
    const DETAILS: &str = r#"==PROF== Connected to process 9001 (/home/u/dwt)
==PROF== Profiling "dwt_matrix": 0%....50%....100% - 1 pass
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","9001","dwt","host","dwt_matrix(float*, int)","1","7","(256, 1, 1)","(4, 1, 1)","0","7.5","Command line profiler metrics","device__attribute_display_name","","NVIDIA GeForce RTX 2080 Ti"
"0","9001","dwt","host","dwt_matrix(float*, int)","1","7","(256, 1, 1)","(4, 1, 1)","0","7.5","Command line profiler metrics","gpu__time_duration.sum","usecond","12.80"
"0","9001","dwt","host","dwt_matrix(float*, int)","1","7","(256, 1, 1)","(4, 1, 1)","0","7.5","Command line profiler metrics","launch__registers_per_thread","register/thread","30"
"1","9001","dwt","host","dwt_matrix(float*, int)","1","7","(256, 1, 1)","(8, 1, 1)","0","7.5","Command line profiler metrics","gpu__time_duration.sum","msecond","1,250.5"
"#;

    #[test]
    fn details_layout_gives_one_measurement_per_launch() {
        let set = parse_text(DETAILS, "ncu.csv", None).unwrap();
        assert_eq!(set.format, Format::Ncu);
        let m = &set.measurements;
        assert_eq!(m.len(), 2);
        assert!((m[0].time_us - 12.8).abs() < 1e-9);
        assert_eq!(m[0].device.as_deref(), Some("NVIDIA GeForce RTX 2080 Ti"));
        assert_eq!(m[0].block, Some(Dim3::new(256, 1, 1)));
        assert_eq!(m[0].grid, Some(Dim3::new(4, 1, 1)));
        assert_eq!(m[0].counters.as_ref().unwrap().regs_per_thread, Some(30));
        assert_eq!(m[0].source.line, 4);
        // 1,250.5 ms = 1,250,500 us
        assert!((m[1].time_us - 1_250_500.0).abs() < 1e-6);
        assert_eq!(m[1].grid, Some(Dim3::new(8, 1, 1)));
    }

    const RAW: &str = r#""ID","Kernel Name","Block Size","Grid Size","gpu__time_duration.sum","launch__registers_per_thread"
"","","","","nsecond","register/thread"
"0","k1","(128, 1, 1)","(2, 2, 1)","4,096","40"
"#;

    #[test]
    fn raw_page_layout_uses_the_units_row() {
        let set = parse_text(RAW, "raw.csv", None).unwrap();
        let m = &set.measurements[0];
        assert!((m.time_us - 4.096).abs() < 1e-12);
        assert_eq!(m.grid, Some(Dim3::new(2, 2, 1)));
        assert_eq!(m.counters.as_ref().unwrap().regs_per_thread, Some(40));
    }

    #[test]
    fn malformed_rows_name_file_and_line() {
        let bad = DETAILS.replace("\"12.80\"", "\"twelve\"");
        let e = parse_text(&bad, "ncu.csv", None).unwrap_err().to_string();
        assert!(e.contains("ncu.csv") && e.contains("line 5"), "{e}");
        let bad = DETAILS.replace("\"msecond\"", "\"fortnight\"");
        let e = parse_text(&bad, "ncu.csv", None).unwrap_err().to_string();
        assert!(e.contains("line 7") && e.contains("unit"), "{e}");
        let bad = DETAILS.replace(
            "gpu__time_duration.sum\",\"msecond",
            "sm__cycles.sum\",\"cycle",
        );
        let e = parse_text(&bad, "ncu.csv", None).unwrap_err().to_string();
        assert!(
            e.contains("line 7") && e.contains("gpu__time_duration"),
            "{e}"
        );
    }

    /// `ncu --csv --page raw --metrics ...` with the counters of the mapping (values invented).
    const RAW_METRICS: &str =
        include_str!("../../../../../tests/fixtures/measurements/ncu-raw-metrics.csv");

    #[test]
    fn raw_page_metrics_fill_the_counters_in_their_units() {
        let set = parse_text(RAW_METRICS, "ncu-raw.csv", None).unwrap();
        assert_eq!(set.format, Format::Ncu);
        let m = &set.measurements[0];
        assert_eq!(m.time_us, 16.0);
        assert_eq!(m.device.as_deref(), Some("NVIDIA GeForce RTX 3070"));
        // No Grid Size/Block Size columns: the 1-D launch__grid_size x launch__block_size.
        assert_eq!(m.grid, Some(Dim3::new(4096, 1, 1)));
        assert_eq!(m.block, Some(Dim3::new(256, 1, 1)));
        let c = m.counters.as_ref().unwrap();
        assert_eq!(c.compute_capability.as_deref(), Some("8.6"));
        assert_eq!(c.inst_executed, Some(98304.0));
        assert_eq!(c.warps_launched, Some(32768.0));
        assert_eq!(c.gld_transactions, Some(131072.0));
        assert_eq!(c.gst_transactions, Some(65536.0));
        assert_eq!(c.gld_requests, Some(8192.0));
        assert_eq!(c.l2_read_transactions, Some(131200.0));
        // The sector count wins over dram__bytes_read.sum (4.19 Mbyte / 32 would be 130937.5).
        assert_eq!(c.dram_read_transactions, Some(131072.0));
        assert_eq!(c.dram_write_transactions, Some(65536.0));
        assert_eq!(c.elapsed_cycles, Some(27650.0));
        assert_eq!(c.regs_per_thread, Some(16));
        // 72.25 % -> 0.7225; 1.73 cycle/nsecond -> 1730 MHz.
        assert!((c.achieved_occupancy.unwrap() - 0.7225).abs() < 1e-12);
        assert!((c.core_clock_mhz.unwrap() - 1730.0).abs() < 1e-9);
        assert_eq!(
            set.measurements[1].counters.as_ref().unwrap().inst_executed,
            Some(196608.0)
        );
        assert!(set
            .notes
            .iter()
            .any(|n| n.contains("sm__throughput.avg.pct_of_peak_sustained_elapsed")));
        let bad = RAW_METRICS.replacen("\"98,304\"", "\"many\"", 1);
        let e = parse_text(&bad, "ncu-raw.csv", None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 5") && e.contains("smsp__inst_executed.sum"),
            "{e}"
        );
        let bad = RAW_METRICS.replacen(
            "\"sector\",\"sector\",\"cycle/nsecond\"",
            "\"sector\",\"parsec\",\"cycle/nsecond\"",
            1,
        );
        let e = parse_text(&bad, "ncu-raw.csv", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 5") && e.contains("parsec"), "{e}");
    }

    #[test]
    fn details_layout_metrics_use_the_metric_unit_column() {
        let more = format!(
            "{DETAILS}{}{}",
            "\"0\",\"9001\",\"dwt\",\"host\",\"dwt_matrix(float*, int)\",\"1\",\"7\",\"(256, 1, 1)\",\"(4, 1, 1)\",\"0\",\"7.5\",\"Command line profiler metrics\",\"dram__bytes_write.sum\",\"Kbyte\",\"3.20\"\n",
            "\"0\",\"9001\",\"dwt\",\"host\",\"dwt_matrix(float*, int)\",\"1\",\"7\",\"(256, 1, 1)\",\"(4, 1, 1)\",\"0\",\"7.5\",\"Command line profiler metrics\",\"smsp__inst_executed.sum\",\"Kinst\",\"1.50\"\n"
        );
        let set = parse_text(&more, "ncu.csv", None).unwrap();
        let c = set.measurements[0].counters.as_ref().unwrap();
        // 3.2 Kbyte = 3200 bytes = 100 sectors; 1.5 Kinst = 1500 warp instructions.
        assert_eq!(c.dram_write_transactions, Some(100.0));
        assert_eq!(c.inst_executed, Some(1500.0));
        assert_eq!(c.regs_per_thread, Some(30));
    }
}
