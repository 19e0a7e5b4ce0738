//! The project's own measurement CSV: one row per measured kernel launch (or per summarized
//! series of launches).
//!
//! Schema (a header row, comma-separated, `#` starts a comment line; column order is free):
//!
//! | column | required | meaning |
//! |---|---|---|
//! | `kernel` | yes | the kernel's name |
//! | `time_us` (or `time_ms`, `time_s`) | yes, exactly one | measured kernel time |
//! | `device` | no | the GPU's name (a catalogue name or alias is best) |
//! | `blocks` or `grid` | no | blocks per launch: `N`, or `X;Y;Z` / `XxYxZ` for a 3-D grid |
//! | `threads_per_block` or `block` | no | threads per block: `N`, or `X;Y;Z` / `XxYxZ` |
//! | `launch_api_us` | no | host launch API time (`cudaLaunchKernel`), microseconds |
//! | `samples` | no | how many runs the time summarizes |
//! | `param:NAME` | no, any number | a kernel parameter `NAME` (number or text) |
//!
//! Empty optional cells mean "unknown". Any other column is an error, so that a misspelt
//! column never goes unnoticed. Example:
//!
//! ```text
//! kernel,device,blocks,threads_per_block,param:N,time_us
//! dwt_matrix,RTX 2080 Ti,4,256,1024,12.5
//! ```
//!
//! This reader does not convert device names against the catalogue.

use super::{
    check_time, find_line, line_error, number, optional_number, param_value, read_csv, whole, Dim3,
    Measurement, Parsed,
};
use crate::error::{Error, Result};

const KNOWN: &[&str] = &[
    "kernel",
    "device",
    "blocks",
    "grid",
    "threads_per_block",
    "block",
    "time_us",
    "time_ms",
    "time_s",
    "launch_api_us",
    "samples",
];

pub(crate) fn parse(text: &str, origin: &str) -> Result<Parsed> {
    let start = find_line(text, |l| !l.is_empty() && !l.starts_with('#')).unwrap_or(0);
    let table = read_csv(text, origin, start, false, true)?;
    let hl = table.header_line;
    for h in &table.header {
        if !KNOWN.contains(&h.as_str()) && !h.starts_with("param:") {
            return Err(line_error(
                origin,
                hl,
                format!(
                    "unknown column `{h}`; known: {}, param:NAME",
                    KNOWN.join(", ")
                ),
            ));
        }
    }
    let kernel = table.require(origin, "kernel")?;
    let times: Vec<(usize, &str, f64)> = [("time_us", 1.0), ("time_ms", 1e3), ("time_s", 1e6)]
        .iter()
        .filter_map(|(n, f)| table.column(n).map(|i| (i, *n, *f)))
        .collect();
    let (time_col, time_name, time_factor) = match times.as_slice() {
        [one] => *one,
        [] => {
            return Err(line_error(
                origin,
                hl,
                "the header needs a `time_us` (or `time_ms`, `time_s`) column",
            ))
        }
        _ => {
            return Err(line_error(
                origin,
                hl,
                "give exactly one of `time_us`, `time_ms`, `time_s`",
            ))
        }
    };
    let one_of = |a: &str, b: &str| -> Result<Option<usize>> {
        match (table.column(a), table.column(b)) {
            (Some(_), Some(_)) => Err(line_error(
                origin,
                hl,
                format!("give `{a}` or `{b}`, not both"),
            )),
            (x, y) => Ok(x.or(y)),
        }
    };
    let grid_col = one_of("blocks", "grid")?;
    let block_col = one_of("threads_per_block", "block")?;
    let device = table.column("device");
    let api = table.column("launch_api_us");
    let samples = table.column("samples");
    let params: Vec<(usize, &str)> = table
        .header
        .iter()
        .enumerate()
        .filter_map(|(i, h)| h.strip_prefix("param:").map(|n| (i, n)))
        .collect();
    for (_, name) in &params {
        if name.trim().is_empty() {
            return Err(line_error(origin, hl, "a `param:` column needs a name"));
        }
    }

    let mut out = Vec::with_capacity(table.rows.len());
    for (line, cells) in &table.rows {
        let line = *line;
        let name = cells[kernel].as_str();
        if name.is_empty() {
            return Err(line_error(origin, line, "`kernel` is empty"));
        }
        let t = number(&cells[time_col], time_name, origin, line, false)? * time_factor;
        let t = check_time(t, time_name, origin, line)?;
        let mut m = Measurement::new(name, t, origin, line);
        if let Some(i) = device {
            if !cells[i].is_empty() {
                m.device = Some(cells[i].clone());
            }
        }
        if let Some(i) = grid_col {
            m.grid = dims(&cells[i], &table.header[i], origin, line)?;
        }
        if let Some(i) = block_col {
            m.block = dims(&cells[i], &table.header[i], origin, line)?;
        }
        if let Some(i) = api {
            if let Some(v) = optional_number(&cells[i], "launch_api_us", origin, line, false)? {
                m.launch_api_us = Some(
                    crate::error::non_negative("launch_api_us", v)
                        .map_err(|e| line_error(origin, line, e))?,
                );
            }
        }
        if let Some(i) = samples {
            if let Some(v) = optional_number(&cells[i], "samples", origin, line, false)? {
                m.samples = Some(whole(v, "samples", origin, line)?);
            }
        }
        for (i, pname) in &params {
            if !cells[*i].is_empty() {
                m.params
                    .insert((*pname).to_string(), param_value(&cells[*i]));
            }
        }
        out.push(m);
    }
    Ok(Parsed::new(out))
}

/// `N`, `X;Y;Z`, `XxYxZ` or `X,Y,Z` (quoted in CSV); empty is unknown.
pub(crate) fn dims(cell: &str, column: &str, origin: &str, line: usize) -> Result<Option<Dim3>> {
    let t = cell.trim();
    if t.is_empty() {
        return Ok(None);
    }
    let bad = || -> Error {
        line_error(
            origin,
            line,
            format!("`{column}` must be N or X;Y;Z with whole numbers above zero, got \"{cell}\""),
        )
    };
    let parts: Vec<&str> = t
        .trim_matches(|c| c == '(' || c == ')')
        .split([';', 'x', ',', ' '])
        .filter(|p| !p.is_empty())
        .collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(bad());
    }
    let mut v = [1u64; 3];
    for (k, p) in parts.iter().enumerate() {
        v[k] = p.parse::<u64>().map_err(|_| bad())?;
        if v[k] == 0 {
            return Err(bad());
        }
    }
    Ok(Some(Dim3::new(v[0], v[1], v[2])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::measurements::{parse_text, Format};

    const GOOD: &str = "\
# measured on the bench machine
kernel,device,blocks,threads_per_block,param:N,param:variant,time_ms,launch_api_us
dwt_matrix,RTX 2080 Ti,4,256,1024,fast,0.0125,3.5
dwt_lattice,,2;2;1,32x8,,,2,
";

    #[test]
    fn reads_every_column_and_converts_milliseconds() {
        let set = parse_text(GOOD, "g.csv", None).unwrap();
        assert_eq!(set.format, Format::Generic);
        let m = &set.measurements;
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].kernel, "dwt_matrix");
        assert_eq!(m[0].device.as_deref(), Some("RTX 2080 Ti"));
        // 0.0125 ms = 12.5 us
        assert!((m[0].time_us - 12.5).abs() < 1e-12);
        assert_eq!(m[0].launch_api_us, Some(3.5));
        assert_eq!(m[0].params["N"], serde_json::json!(1024));
        assert_eq!(m[0].params["variant"], serde_json::json!("fast"));
        let l = m[0].launch().unwrap();
        assert_eq!((l.blocks, l.threads_per_block), (4, 256));
        assert_eq!(m[0].source.line, 3);
        assert_eq!(m[1].device, None);
        assert_eq!(m[1].grid, Some(Dim3::new(2, 2, 1)));
        assert_eq!(m[1].block, Some(Dim3::new(32, 8, 1)));
        assert!(m[1].params.is_empty());
        assert_eq!(m[1].launch_api_us, None);
        assert_eq!(m[1].source.line, 4);
    }

    fn err(text: &str) -> String {
        parse_text(text, "bad.csv", Some(Format::Generic))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn malformed_rows_name_file_and_line() {
        let e = err("kernel,time_us\nk,1\nk,abc\n");
        assert!(
            e.contains("bad.csv") && e.contains("line 3") && e.contains("time_us"),
            "{e}"
        );
        let e = err("kernel,time_us\nk,1\nk,-2\n");
        assert!(e.contains("line 3") && e.contains("above zero"), "{e}");
        let e = err("kernel,time_us\nk,1,7\n");
        assert!(
            e.contains("line 2") && e.contains("expected 2 fields"),
            "{e}"
        );
        let e = err("kernel,time_us,blocks\nk,1,0\n");
        assert!(e.contains("line 2") && e.contains("blocks"), "{e}");
        let e = err("kernel,time_us\n,1\n");
        assert!(e.contains("line 2") && e.contains("kernel"), "{e}");
    }

    #[test]
    fn header_mistakes_are_errors() {
        assert!(err("kernel,tme_us\nk,1\n").contains("unknown column `tme_us`"));
        assert!(err("kernel,device\nk,x\n").contains("time_us"));
        assert!(err("kernel,time_us,time_ms\nk,1,1\n").contains("exactly one"));
        assert!(err("kernel,time_us,blocks,grid\nk,1,1,1\n").contains("not both"));
    }
}
