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
//! it is an error. The device name comes from `device__attribute_display_name` when collected,
//! registers from `launch__registers_per_thread`. `==PROF==` lines are skipped. This reader does
//! not interpret any other metric.

use std::collections::BTreeMap;

use super::{
    check_time, find_line, line_error, number, read_csv, time_unit_us, whole, Counters, Dim3,
    Measurement, Parsed,
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
    regs: Option<u32>,
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
                v.insert(Launch {
                    line,
                    kernel: cells[kernel].clone(),
                    grid: grid
                        .map(|i| super::generic::dims(&cells[i], "Grid Size", origin, line))
                        .transpose()?
                        .flatten(),
                    block: block
                        .map(|i| super::generic::dims(&cells[i], "Block Size", origin, line))
                        .transpose()?
                        .flatten(),
                    time: None,
                    device: None,
                    regs: None,
                })
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
        } else if metric == "device__attribute_display_name" {
            entry.device = Some(cells[mvalue].clone());
        } else if metric == "launch__registers_per_thread" {
            let v = number(&cells[mvalue], metric, origin, line, true)?;
            entry.regs = Some(whole(v, metric, origin, line)? as u32);
        }
    }
    finish(launches.into_values().collect(), origin)
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
    let display = table.column("device__attribute_display_name");
    let regs = table.column("launch__registers_per_thread");
    let mut launches = Vec::new();
    for (line, cells) in rows {
        let line = *line;
        if cells[kernel].is_empty() {
            return Err(line_error(origin, line, "`Kernel Name` is empty"));
        }
        let v = number(&cells[time], &table.header[time], origin, line, true)?;
        let regs = match regs {
            Some(i) if !cells[i].is_empty() => {
                let r = number(
                    &cells[i],
                    "launch__registers_per_thread",
                    origin,
                    line,
                    true,
                )?;
                Some(whole(r, "launch__registers_per_thread", origin, line)? as u32)
            }
            _ => None,
        };
        launches.push(Launch {
            line,
            kernel: cells[kernel].clone(),
            grid: grid
                .map(|i| super::generic::dims(&cells[i], "Grid Size", origin, line))
                .transpose()?
                .flatten(),
            block: block
                .map(|i| super::generic::dims(&cells[i], "Block Size", origin, line))
                .transpose()?
                .flatten(),
            time: Some((line, v * f, table.header[time].clone())),
            device: display.map(|i| cells[i].clone()).filter(|d| !d.is_empty()),
            regs,
        });
    }
    finish(launches, origin)
}

fn finish(launches: Vec<Launch>, origin: &str) -> Result<Parsed> {
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
        m.device = l.device;
        if let Some(r) = l.regs {
            m.counters = Some(Counters {
                regs_per_thread: Some(r),
                ..Counters::default()
            });
        }
        out.push(m);
    }
    Ok(Parsed::new(out))
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
}
