//! Kernel Tuning Toolkit (KTT) results as CSV: KTT 1.x's `printResult(..., PrintFormat::CSV)` and
//! the CSV that KTT 2.x's `Scripts/ConvertXmlToCsv.py` makes of its XML output.
//!
//! Layout: a header `Kernel name,Computation duration (UNIT),Global size,Local size,` then the
//! tuning parameters, then the profiling counters (if any), then `Maximum work-group size,Local
//! memory size,Private memory size,Constant memory size,Registers count` (and `Power,Energy` when
//! measured). Composite kernels have `Global size 0,Local size 0,...` and suffixed compilation
//! columns. One row per valid configuration; a blank line ends the table (KTT may print a second
//! table of failed configurations after it, which is not read).
//!
//! Each row becomes one measurement: the duration converted from the header's unit (`ns`, `us`,
//! `ms`, `s`), the parameters, registers (`Registers count`) and static shared memory (`Local
//! memory size`, OpenCL's name). KTT prints total sizes, so a single kernel's grid and block are
//! 1-D: block = `Local size` threads, grid = `Global size` / `Local size` blocks (rounded up); a
//! composite row has no launch. Columns between the sizes and `Maximum work-group size` are
//! counters when they look like profiler metrics ([`super::metrics`]) and parameters otherwise.
//! The file does not name the device.

use std::collections::BTreeSet;

use super::{
    check_time, find_line, header_unit, line_error, metrics, number, param_value, read_csv,
    time_unit_us, whole, Counters, Dim3, Measurement, Parsed,
};
use crate::error::{Error, Result};

const FIRST_COMPILATION_COLUMN: &str = "Maximum work-group size";

pub(crate) fn parse(text: &str, origin: &str) -> Result<Parsed> {
    let start = find_line(text, |l| {
        let cells = super::split_header(l);
        cells.len() > 2 && cells[0] == "Kernel name" && cells[1].starts_with("Computation duration")
    })
    .ok_or_else(|| {
        Error::file(
            origin,
            "no KTT CSV header (Kernel name,Computation duration (us),...) found",
        )
    })?;
    let table = read_csv(text, origin, start, true, false)?;
    let hl = table.header_line;
    let h = &table.header;
    if h.len() < 2 {
        return Err(line_error(
            origin,
            hl,
            "the KTT CSV header needs `Kernel name` and `Computation duration` columns",
        ));
    }
    let to_us = header_unit(&h[1]).and_then(time_unit_us).ok_or_else(|| {
        line_error(
            origin,
            hl,
            format!("cannot tell the time unit of `{}` (ns, us, ms or s)", h[1]),
        )
    })?;
    let single = h.get(2).map(String::as_str) == Some("Global size")
        && h.get(3).map(String::as_str) == Some("Local size");
    let sizes_end = if single {
        4
    } else {
        // `Global size 0,Local size 0,Global size 1,...`
        2 + h[2..]
            .iter()
            .take_while(|c| c.starts_with("Global size") || c.starts_with("Local size"))
            .count()
    };
    let compilation = table
        .column(FIRST_COMPILATION_COLUMN)
        .or_else(|| {
            h.iter()
                .position(|c| c.starts_with(FIRST_COMPILATION_COLUMN))
        })
        .unwrap_or(h.len());
    let registers = table.column("Registers count");
    let local_memory = table.column("Local memory size");
    let middle: Vec<usize> = (sizes_end..compilation).collect();

    let mut out = Vec::with_capacity(table.rows.len());
    let mut unmapped = BTreeSet::new();
    for (line, cells) in &table.rows {
        let line = *line;
        if cells[0].is_empty() {
            return Err(line_error(origin, line, "`Kernel name` is empty"));
        }
        let t = number(&cells[1], &h[1], origin, line, false)? * to_us;
        let t = check_time(t, &h[1], origin, line)?;
        let mut m = Measurement::new(&cells[0], t, origin, line);
        if single {
            let global = whole(
                number(&cells[2], "Global size", origin, line, false)?,
                "Global size",
                origin,
                line,
            )?;
            let local = whole(
                number(&cells[3], "Local size", origin, line, false)?,
                "Local size",
                origin,
                line,
            )?;
            if local == 0 || global == 0 {
                return Err(line_error(
                    origin,
                    line,
                    "`Global size` and `Local size` must be at least 1",
                ));
            }
            m.block = Some(Dim3::new(local, 1, 1));
            m.grid = Some(Dim3::new(global.div_ceil(local), 1, 1));
        }
        let mut c = Counters::default();
        for &i in &middle {
            let name = h[i].as_str();
            if metrics::looks_like_metric(name) {
                if cells[i].is_empty() {
                    continue;
                }
                let v = number(&cells[i], name, origin, line, false)?;
                if !metrics::apply(&mut c, name, v, "").map_err(|e| line_error(origin, line, e))? {
                    unmapped.insert(name.to_string());
                }
            } else {
                m.params.insert(name.to_string(), param_value(&cells[i]));
            }
        }
        if let Some(i) = registers.filter(|&i| !cells[i].is_empty()) {
            let v = number(&cells[i], "Registers count", origin, line, false)?;
            c.regs_per_thread = Some(whole(v, "Registers count", origin, line)? as u32);
        }
        if let Some(i) = local_memory.filter(|&i| !cells[i].is_empty()) {
            let v = number(&cells[i], "Local memory size", origin, line, false)?;
            c.static_smem_bytes = Some(whole(v, "Local memory size", origin, line)?);
        }
        if !c.is_empty() {
            m.counters = Some(c);
        }
        out.push(m);
    }
    let mut parsed = Parsed::new(out);
    parsed.notes.push(if single {
        "KTT CSV gives total sizes: block = Local size threads, grid = Global size / Local size blocks (1-D)".to_string()
    } else {
        "composite KTT kernels: the duration covers all kernels of a configuration; no launch is given".to_string()
    });
    parsed
        .notes
        .push("KTT CSV does not name the device".to_string());
    parsed.notes.extend(metrics::unmapped_note(&unmapped));
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use crate::fit::measurements::{parse_text, Dim3, Format};

    /// Written for this test in the layout of KTT's CSV results (values invented).
    const CSV: &str = include_str!("../../../../../tests/fixtures/measurements/ktt-results.csv");

    #[test]
    fn rows_become_measurements_with_parameters_and_counters() {
        let set = parse_text(CSV, "ktt.csv", None).unwrap();
        assert_eq!(set.format, Format::KttCsv);
        let m = &set.measurements;
        // The failed-configuration table after the blank line is not read.
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].kernel, "gemm_fast");
        assert_eq!(m[0].time_us, 812.5);
        // 1048576 threads in blocks of 256: 4096 blocks.
        assert_eq!(m[0].grid, Some(Dim3::new(4096, 1, 1)));
        assert_eq!(m[0].block, Some(Dim3::new(256, 1, 1)));
        assert_eq!(m[0].params["MWG"], serde_json::json!(64));
        assert_eq!(m[0].params["VWM"], serde_json::json!(4));
        assert!(!m[0].params.contains_key("dram__sectors_read.sum"));
        let c = m[0].counters.as_ref().unwrap();
        assert_eq!(c.dram_read_transactions, Some(65536.0));
        assert_eq!(c.inst_executed, Some(1200000.0));
        assert_eq!(c.regs_per_thread, Some(72));
        assert_eq!(c.static_smem_bytes, Some(8192));
        assert_eq!(m[0].source.line, 2);
        assert_eq!(m[1].source.line, 3);
        assert!(set.notes.iter().any(|n| n.contains("sm__throughput")));
    }

    #[test]
    fn malformed_rows_name_file_and_line() {
        let bad = CSV.replace("812.5", "fast");
        let e = parse_text(&bad, "ktt.csv", None).unwrap_err().to_string();
        assert!(
            e.contains("ktt.csv") && e.contains("line 2") && e.contains("Computation duration"),
            "{e}"
        );
        let bad = CSV.replace(",1048576,256,", ",1048576,0,");
        let e = parse_text(&bad, "ktt.csv", None).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("Local size"), "{e}");
        let bad = CSV.replace("(us)", "(weeks)");
        let e = parse_text(&bad, "ktt.csv", None).unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("time unit"), "{e}");
    }
}
