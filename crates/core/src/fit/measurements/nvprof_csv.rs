//! nvprof's CSV trace: `nvprof --print-gpu-trace --csv` (optionally with `--print-api-trace`).
//!
//! nvprof prints `==PID==` lines, then a header row (`"Start","Duration","Grid X",...,
//! "Device","Context","Stream","Name","Correlation_ID"`), then a row of units (`ms,us,,,...`),
//! then one row per GPU activity. Kernel rows become measurements with their grid, block,
//! registers and shared memory; `[CUDA memcpy ...]`/`[CUDA memset]` rows are skipped. When the
//! API trace is in the same table (rows without a device whose name is a CUDA API call), the
//! duration of each `cudaLaunchKernel` becomes the launch API time of the kernel with the same
//! correlation ID (or, without IDs, of the next kernel in order).
//!
//! This reader does not read nvprof's summary mode or metric/event tables.

use std::collections::{HashMap, VecDeque};

use super::{
    check_time, find_line, is_launch_api, line_error, number, optional_number, read_csv,
    size_unit_bytes, strip_device_index, time_unit_us, whole, Counters, Dim3, Measurement, Parsed,
};
use crate::error::Result;

pub(crate) fn parse(text: &str, origin: &str) -> Result<Parsed> {
    let start = find_line(text, |l| {
        let cells = super::split_header(l);
        cells.len() > 2 && cells[0] == "Start" && cells[1] == "Duration"
    })
    .ok_or_else(|| {
        crate::error::Error::file(
            origin,
            "no nvprof CSV header (\"Start\",\"Duration\",...) found",
        )
    })?;
    let table = read_csv(text, origin, start, true, false)?;
    table.require(origin, "Start")?;
    let dur = table.require(origin, "Duration")?;
    let name = table.require(origin, "Name")?;
    let device = table.column("Device");
    let corr = table.column("Correlation_ID");
    let col = |n: &str| table.column(n);
    let (gx, gy, gz) = (col("Grid X"), col("Grid Y"), col("Grid Z"));
    let (bx, by, bz) = (col("Block X"), col("Block Y"), col("Block Z"));
    let regs = col("Registers Per Thread");
    let ssmem = col("Static SMem");
    let dsmem = col("Dynamic SMem");

    // The first row after the header holds the units.
    let mut rows = table.rows.iter();
    let (units_line, units) = match rows.next() {
        Some((l, cells)) => (*l, cells.clone()),
        None => return Ok(Parsed::new(Vec::new())),
    };
    let dur_us = time_unit_us(&units[dur]).ok_or_else(|| {
        line_error(
            origin,
            units_line,
            format!(
                "expected the units row (e.g. ms,us,,...), got \"{}\" for Duration",
                units[dur]
            ),
        )
    })?;
    let size_factor = |i: Option<usize>| -> Result<f64> {
        match i {
            Some(i) => size_unit_bytes(&units[i]).ok_or_else(|| {
                line_error(
                    origin,
                    units_line,
                    format!("unknown size unit \"{}\" for {}", units[i], table.header[i]),
                )
            }),
            None => Ok(1.0),
        }
    };
    let (ss_factor, ds_factor) = (size_factor(ssmem)?, size_factor(dsmem)?);

    let mut out = Vec::new();
    let mut kernel_corr: Vec<Option<String>> = Vec::new();
    let mut launch_by_corr: HashMap<String, f64> = HashMap::new();
    let mut launch_queue: VecDeque<f64> = VecDeque::new();
    for (line, cells) in rows {
        let line = *line;
        let n = cells[name].as_str();
        if n.starts_with("[CUDA ") {
            continue;
        }
        let d = number(&cells[dur], "Duration", origin, line, false)? * dur_us;
        let dev = device.map(|i| cells[i].as_str()).unwrap_or("");
        let is_api = dev.is_empty() && n.starts_with("cu");
        if is_api {
            if is_launch_api(n) {
                match corr.map(|i| cells[i].clone()).filter(|c| !c.is_empty()) {
                    Some(c) => {
                        launch_by_corr.insert(c, d);
                    }
                    None => launch_queue.push_back(d),
                }
            }
            continue;
        }
        if n.is_empty() {
            return Err(line_error(origin, line, "`Name` is empty"));
        }
        let t = check_time(d, "Duration", origin, line)?;
        let mut m = Measurement::new(n, t, origin, line);
        if !dev.is_empty() {
            m.device = Some(strip_device_index(dev));
        }
        m.grid = dim3(cells, [gx, gy, gz], &table.header, origin, line)?;
        m.block = dim3(cells, [bx, by, bz], &table.header, origin, line)?;
        let mut c = Counters::default();
        if let Some(i) = regs {
            if let Some(v) =
                optional_number(&cells[i], "Registers Per Thread", origin, line, false)?
            {
                c.regs_per_thread = Some(whole(v, "Registers Per Thread", origin, line)? as u32);
            }
        }
        for (idx, factor, slot) in [
            (ssmem, ss_factor, &mut c.static_smem_bytes),
            (dsmem, ds_factor, &mut c.dynamic_smem_bytes),
        ] {
            if let Some(i) = idx {
                if let Some(v) = optional_number(&cells[i], &table.header[i], origin, line, false)?
                {
                    *slot = Some((v * factor).round() as u64);
                }
            }
        }
        if !c.is_empty() {
            m.counters = Some(c);
        }
        kernel_corr.push(corr.map(|i| cells[i].clone()).filter(|c| !c.is_empty()));
        out.push(m);
    }
    for (m, c) in out.iter_mut().zip(&kernel_corr) {
        m.launch_api_us = match c {
            Some(c) if !launch_by_corr.is_empty() => launch_by_corr.get(c).copied(),
            _ => launch_queue.pop_front(),
        };
    }
    Ok(Parsed::new(out))
}

/// Three optional dimension columns; all empty means unknown.
fn dim3(
    cells: &[String],
    cols: [Option<usize>; 3],
    header: &[String],
    origin: &str,
    line: usize,
) -> Result<Option<Dim3>> {
    let mut v = [1u64; 3];
    let mut any = false;
    for (k, c) in cols.iter().enumerate() {
        if let Some(i) = c {
            if let Some(x) = optional_number(&cells[*i], &header[*i], origin, line, false)? {
                v[k] = whole(x, &header[*i], origin, line)?;
                any = true;
            }
        }
    }
    Ok(any.then(|| Dim3::new(v[0], v[1], v[2])))
}

#[cfg(test)]
mod tests {
    use crate::fit::measurements::{parse_text, Dim3, Format};

    // Written for this test in nvprof's layout: a memset, an API row, two kernels.
    const TRACE: &str = r#"==4242== NVPROF is profiling process 4242, command: ./dwt 1024
==4242== Profiling application: ./dwt 1024
==4242== Profiling result:
"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z","Registers Per Thread","Static SMem","Dynamic SMem","Size","Throughput","SrcMemType","DstMemType","Device","Context","Stream","Name","Correlation_ID"
ms,us,,,,,,,,KB,B,KB,GB/s,,,,,,,
0.100000,1.500000,,,,,,,,,,4.000000,2.5,"Device",,"GeForce RTX 2080 Ti (0)","1","7","[CUDA memset]",110
0.200000,12.250000,,,,,,,,,,,,,,,,,"cudaLaunchKernel",118
0.210000,40.000000,4,1,1,256,1,1,32,1.000000,512,,,,,"GeForce RTX 2080 Ti (0)","1","7","dwt_matrix(float*, float const *, int)",118
0.300000,2.000000,8,2,1,32,8,1,16,0.000000,0,,,,,"GeForce RTX 2080 Ti (0)","1","7","dwt_lattice(float*, int)",131
"#;

    #[test]
    fn kernels_get_launch_and_api_time_by_correlation_id() {
        let set = parse_text(TRACE, "trace.csv", None).unwrap();
        assert_eq!(set.format, Format::NvprofCsv);
        let m = &set.measurements;
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].kernel, "dwt_matrix(float*, float const *, int)");
        assert_eq!(m[0].device.as_deref(), Some("GeForce RTX 2080 Ti"));
        assert_eq!(m[0].time_us, 40.0);
        assert_eq!(m[0].grid, Some(Dim3::new(4, 1, 1)));
        assert_eq!(m[0].block, Some(Dim3::new(256, 1, 1)));
        assert_eq!(m[0].launch_api_us, Some(12.25));
        let c = m[0].counters.as_ref().unwrap();
        assert_eq!(c.regs_per_thread, Some(32));
        // Static SMem 1 KB = 1024 B, dynamic 512 B.
        assert_eq!(c.static_smem_bytes, Some(1024));
        assert_eq!(c.dynamic_smem_bytes, Some(512));
        assert_eq!(m[0].source.line, 8);
        // No launch API row with correlation 131.
        assert_eq!(m[1].launch_api_us, None);
        assert_eq!(m[1].grid, Some(Dim3::new(8, 2, 1)));
    }

    #[test]
    fn malformed_rows_name_file_and_line() {
        let bad = TRACE.replace("0.300000,2.000000,8", "0.300000,two,8");
        let e = parse_text(&bad, "trace.csv", None).unwrap_err().to_string();
        assert!(
            e.contains("trace.csv") && e.contains("line 9") && e.contains("Duration"),
            "{e}"
        );
        let bad = TRACE.replace(",131\n", ",131,extra\n");
        let e = parse_text(&bad, "trace.csv", None).unwrap_err().to_string();
        assert!(e.contains("line 9") && e.contains("fields"), "{e}");
        let bad = TRACE.replace("ms,us,", "ms,furlongs,");
        let e = parse_text(&bad, "trace.csv", None).unwrap_err().to_string();
        assert!(e.contains("line 5") && e.contains("units"), "{e}");
    }
}
