//! Nsight Systems statistics reports as CSV (`nsys stats --report R --format csv`).
//!
//! - `cuda_gpu_kern_sum` (older name `gpukernsum`): one row per kernel name with
//!   `"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)",
//!   "StdDev (ns)","Name"` (older versions: `Average`, `Minimum`, ... without units, in ns).
//!   Each row becomes one measurement whose time is the median (the mean when there is no
//!   median column) and whose `samples` is `Instances`.
//! - `cuda_gpu_trace`: one row per GPU activity with `"Start (ns)","Duration (ns)","CorrId",
//!   "GrdX","GrdY","GrdZ","BlkX","BlkY","BlkZ","Reg/Trd","StcSMem (MB)","DymSMem (MB)",...,
//!   "Device","Ctx",...,"Strm","Name"`; rows without a grid (memory operations) are skipped.
//!
//! Time units come from the header (`--timeunit` changes them); numbers may carry `,` thousands
//! separators. Lines before the header (nsys progress messages) are skipped. The summary report
//! has no device column, so its measurements have no device. This reader does not read the
//! SQLite export or any other report.

use super::{
    check_time, find_line, header_unit, line_error, number, optional_number, read_csv,
    size_unit_bytes, strip_device_index, time_unit_us, whole, Counters, Dim3, Measurement, Parsed,
};
use crate::error::{Error, Result};

/// The unit factor of a time column from its header, ns when the header has none.
fn time_factor(header: &str, origin: &str, line: usize) -> Result<f64> {
    match header_unit(header) {
        None => Ok(1e-3),
        Some(u) => time_unit_us(u).ok_or_else(|| {
            line_error(
                origin,
                line,
                format!("unknown time unit in column `{header}`"),
            )
        }),
    }
}

pub(crate) fn parse_kern_sum(text: &str, origin: &str) -> Result<Parsed> {
    let start = find_line(text, |l| {
        l.contains("Instances") && l.contains("Total Time")
    })
    .ok_or_else(|| {
        Error::file(
            origin,
            "no cuda_gpu_kern_sum header (\"Total Time\", \"Instances\") found",
        )
    })?;
    let table = read_csv(text, origin, start, true, false)?;
    let hl = table.header_line;
    let find = |prefixes: &[&str]| {
        table
            .header
            .iter()
            .position(|h| prefixes.iter().any(|p| h.starts_with(p)))
    };
    let name = table.require(origin, "Name")?;
    let instances = table.require(origin, "Instances")?;
    let (time_col, what) = match (find(&["Med", "Median"]), find(&["Avg", "Average"])) {
        (Some(i), _) => (i, "median"),
        (None, Some(i)) => (i, "mean"),
        (None, None) => {
            return Err(line_error(
                origin,
                hl,
                "the header has neither a `Med` nor an `Avg` time column",
            ))
        }
    };
    let factor = time_factor(&table.header[time_col], origin, hl)?;
    let col_name = table.header[time_col].clone();
    let mut out = Vec::new();
    for (line, cells) in &table.rows {
        let line = *line;
        let n = cells[name].as_str();
        if n.is_empty() {
            return Err(line_error(origin, line, "`Name` is empty"));
        }
        let t = number(&cells[time_col], &col_name, origin, line, true)? * factor;
        let t = check_time(t, &col_name, origin, line)?;
        let count = number(&cells[instances], "Instances", origin, line, true)?;
        let mut m = Measurement::new(n, t, origin, line);
        m.samples = Some(whole(count, "Instances", origin, line)?);
        out.push(m);
    }
    let mut parsed = Parsed::new(out);
    parsed.notes.push(format!(
        "each time is the {what} over the kernel's instances (column `{col_name}`)"
    ));
    Ok(parsed)
}

pub(crate) fn parse_trace(text: &str, origin: &str) -> Result<Parsed> {
    let start =
        find_line(text, |l| l.contains("GrdX") && l.contains("Duration")).ok_or_else(|| {
            Error::file(
                origin,
                "no cuda_gpu_trace header (\"Duration\", \"GrdX\") found",
            )
        })?;
    let table = read_csv(text, origin, start, true, false)?;
    let hl = table.header_line;
    let by_prefix = |p: &str| table.header.iter().position(|h| h.starts_with(p));
    let dur = by_prefix("Duration")
        .ok_or_else(|| line_error(origin, hl, "the header has no `Duration` column"))?;
    let dur_factor = time_factor(&table.header[dur], origin, hl)?;
    let name = table.require(origin, "Name")?;
    let device = table.column("Device");
    let g = [
        table.column("GrdX"),
        table.column("GrdY"),
        table.column("GrdZ"),
    ];
    let b = [
        table.column("BlkX"),
        table.column("BlkY"),
        table.column("BlkZ"),
    ];
    let regs = table.column("Reg/Trd");
    let smem = |p: &str| -> Result<Option<(usize, f64)>> {
        match by_prefix(p) {
            None => Ok(None),
            Some(i) => {
                let unit = header_unit(&table.header[i]).unwrap_or("B");
                let f = size_unit_bytes(unit).ok_or_else(|| {
                    line_error(
                        origin,
                        hl,
                        format!("unknown size unit in `{}`", table.header[i]),
                    )
                })?;
                Ok(Some((i, f)))
            }
        }
    };
    let (ssmem, dsmem) = (smem("StcSMem")?, smem("DymSMem")?);
    let mut out = Vec::new();
    for (line, cells) in &table.rows {
        let line = *line;
        let gx = g[0].map(|i| cells[i].as_str()).unwrap_or("");
        if gx.is_empty() {
            continue; // a memory copy or set
        }
        let n = cells[name].as_str();
        if n.is_empty() {
            return Err(line_error(origin, line, "`Name` is empty"));
        }
        let col = &table.header[dur];
        let t = number(&cells[dur], col, origin, line, true)? * dur_factor;
        let t = check_time(t, col, origin, line)?;
        let mut m = Measurement::new(n, t, origin, line);
        if let Some(i) = device {
            if !cells[i].is_empty() {
                m.device = Some(strip_device_index(&cells[i]));
            }
        }
        m.grid = dims(cells, g, &table.header, origin, line)?;
        m.block = dims(cells, b, &table.header, origin, line)?;
        let mut c = Counters::default();
        if let Some(i) = regs {
            if let Some(v) = optional_number(&cells[i], "Reg/Trd", origin, line, true)? {
                c.regs_per_thread = Some(whole(v, "Reg/Trd", origin, line)? as u32);
            }
        }
        for (spec, slot) in [
            (ssmem, &mut c.static_smem_bytes),
            (dsmem, &mut c.dynamic_smem_bytes),
        ] {
            if let Some((i, f)) = spec {
                if let Some(v) = optional_number(&cells[i], &table.header[i], origin, line, true)? {
                    *slot = Some((v * f).round() as u64);
                }
            }
        }
        if !c.is_empty() {
            m.counters = Some(c);
        }
        out.push(m);
    }
    Ok(Parsed::new(out))
}

fn dims(
    cells: &[String],
    cols: [Option<usize>; 3],
    header: &[String],
    origin: &str,
    line: usize,
) -> Result<Option<Dim3>> {
    let mut v = [1u64; 3];
    for (k, c) in cols.iter().enumerate() {
        if let Some(i) = c {
            if let Some(x) = optional_number(&cells[*i], &header[*i], origin, line, true)? {
                v[k] = whole(x, &header[*i], origin, line)?;
            }
        }
    }
    Ok(Some(Dim3::new(v[0], v[1], v[2])))
}

#[cfg(test)]
mod tests {
    use crate::fit::measurements::{parse_text, Dim3, Format};

    // Written for this test in the layout of `nsys stats --report cuda_gpu_kern_sum --format csv`.
    const SUM: &str = r#"Generating SQLite file report1.sqlite from report1.nsys-rep
Processing [report1.sqlite] with [cuda_gpu_kern_sum.py]...

"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)","StdDev (ns)","Name"
"75.0","1,500,000","100","15,000.0","14,500.0","14,000","20,000","800.5","dwt_matrix(float*, int)"
25.0,500000,50,10000.0,9800.0,9000,12000,300.0,"dwt_lattice(float*, int)"
"#;

    #[test]
    fn kernel_summary_gives_median_per_kernel() {
        let set = parse_text(SUM, "sum.csv", None).unwrap();
        assert_eq!(set.format, Format::NsysKernSum);
        let m = &set.measurements;
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].kernel, "dwt_matrix(float*, int)");
        // 14,500 ns = 14.5 us
        assert!((m[0].time_us - 14.5).abs() < 1e-9);
        assert_eq!(m[0].samples, Some(100));
        assert_eq!(m[0].source.line, 5);
        assert!((m[1].time_us - 9.8).abs() < 1e-9);
        assert_eq!(m[1].device, None);
    }

    const TRACE: &str = r#"Processing [report1.sqlite] with [cuda_gpu_trace.py]...
"Start (ns)","Duration (ns)","CorrId","GrdX","GrdY","GrdZ","BlkX","BlkY","BlkZ","Reg/Trd","StcSMem (MB)","DymSMem (MB)","Bytes (MB)","Throughput (MB/s)","SrcMemKd","DstMemKd","Device","Ctx","GreenCtx","Strm","Name"
1000,"2,000",10,,,,,,,,,,"4.000","2000.0","Pageable","Device","NVIDIA GeForce RTX 3090 (0)",1,,7,"[CUDA memcpy Host-to-Device]"
5000,"12,500",12,64,1,1,256,1,1,32,"0.004","0.000",,,,,"NVIDIA GeForce RTX 3090 (0)",1,,7,"dwt_matrix(float*, int)"
"#;

    #[test]
    fn gpu_trace_gives_kernels_with_launch_and_resources() {
        let set = parse_text(TRACE, "trace.csv", None).unwrap();
        assert_eq!(set.format, Format::NsysTrace);
        let m = &set.measurements;
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].device.as_deref(), Some("NVIDIA GeForce RTX 3090"));
        assert!((m[0].time_us - 12.5).abs() < 1e-9);
        assert_eq!(m[0].grid, Some(Dim3::new(64, 1, 1)));
        assert_eq!(m[0].block, Some(Dim3::new(256, 1, 1)));
        let c = m[0].counters.as_ref().unwrap();
        assert_eq!(c.regs_per_thread, Some(32));
        // 0.004 MB = 0.004 * 1,048,576 B = 4194.304 -> 4194 B
        assert_eq!(c.static_smem_bytes, Some(4194));
        assert_eq!(m[0].source.line, 4);
    }

    #[test]
    fn malformed_rows_name_file_and_line() {
        let bad = SUM.replace("9800.0", "fast");
        let e = parse_text(&bad, "sum.csv", None).unwrap_err().to_string();
        assert!(
            e.contains("sum.csv") && e.contains("line 6") && e.contains("Med"),
            "{e}"
        );
        let bad = TRACE.replace("\"12,500\"", "\"-3\"");
        let e = parse_text(&bad, "trace.csv", None).unwrap_err().to_string();
        assert!(e.contains("line 4") && e.contains("above zero"), "{e}");
        let bad = TRACE.replace(",256,1,1,", ",256,1,1,7,");
        let e = parse_text(&bad, "trace.csv", None).unwrap_err().to_string();
        assert!(e.contains("line 4") && e.contains("fields"), "{e}");
    }
}
