//! nvprof's text trace (`nvprof --print-gpu-trace --print-api-trace`), as shown in
//! puchala2022 Listing 5: after `==PID== Profiling result:` a header `Start Duration ... Name`
//! and one line per activity, times with their units (`326.70ms  872.94us ...`).
//!
//! Kernel lines (a device name followed by the kernel's name) become measurements; the duration
//! of each `cudaLaunchKernel` line (puchala2022 takes `t_p` as their median) becomes the launch
//! API time of the next kernel line. Memory copies and other API calls are skipped. A line of
//! `...` (an elision, as in the paper's excerpt) is ignored; any other line that does not start
//! with a start time and a duration is an error naming its line.
//!
//! Columns are separated by runs of blanks and device names contain blanks, so the kernel name
//! is taken as the text from the first word shaped like `name(` (with a preceding `void`), or
//! the last word, and the device as the words before it up to a `-`, `...` or a size column.
//! This reader does not read nvprof's summary mode (`GPU activities:` percentages).

use std::collections::VecDeque;

use super::{check_time, is_launch_api, line_error, time_unit_us, Dim3, Measurement, Parsed};
use crate::error::Result;

pub(crate) fn parse(text: &str, origin: &str) -> Result<Parsed> {
    let lines: Vec<&str> = text.lines().collect();
    // Data start after the header line `Start  Duration ...`.
    let header = lines.iter().position(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        w.len() >= 2 && w[0] == "Start" && w[1] == "Duration"
    });
    let Some(header) = header else {
        return Err(crate::error::Error::file(
            origin,
            "no nvprof trace header (`Start  Duration ... Name`) found",
        ));
    };
    let mut out = Vec::new();
    let mut launches: VecDeque<f64> = VecDeque::new();
    for (idx, raw) in lines.iter().enumerate().skip(header + 1) {
        let line = idx + 1;
        let t = raw.trim();
        if t.is_empty() || t.starts_with("==") {
            continue;
        }
        let words: Vec<&str> = t.split_whitespace().collect();
        if words.iter().all(|w| *w == "...") {
            continue;
        }
        if words.len() < 3 {
            return Err(line_error(
                origin,
                line,
                "expected a start time, a duration and a name",
            ));
        }
        time_with_unit(words[0]).ok_or_else(|| {
            line_error(
                origin,
                line,
                format!(
                    "expected a start time such as 326.70ms, got \"{}\"",
                    words[0]
                ),
            )
        })?;
        let duration_us = time_with_unit(words[1]).ok_or_else(|| {
            line_error(
                origin,
                line,
                format!("expected a duration such as 872.94us, got \"{}\"", words[1]),
            )
        })?;
        let rest = &words[2..];
        if let Some(api) = rest.iter().find(|w| is_api_name(w)) {
            if is_launch_api(api) {
                launches.push_back(duration_us);
            }
            continue;
        }
        if t.contains("[CUDA ") {
            continue;
        }
        let (name_at, kernel) = kernel_name(rest);
        if kernel.is_empty() {
            return Err(line_error(origin, line, "no kernel name found"));
        }
        let time_us = check_time(duration_us, "Duration", origin, line)?;
        let mut m = Measurement::new(&kernel, time_us, origin, line);
        m.device = device_name(&rest[..name_at]);
        let (grid, block) = launch_dims(&rest[..name_at]);
        m.grid = grid;
        m.block = block;
        m.launch_api_us = launches.pop_front();
        out.push(m);
    }
    Ok(Parsed::new(out))
}

/// `326.70ms` -> microseconds.
fn time_with_unit(word: &str) -> Option<f64> {
    let split = word.find(|c: char| c.is_ascii_alphabetic() || c == 'µ')?;
    let (num, unit) = word.split_at(split);
    let v: f64 = num.parse().ok()?;
    let f = time_unit_us(unit)?;
    (v.is_finite() && v >= 0.0).then_some(v * f)
}

/// A CUDA runtime or driver API name such as `cudaLaunchKernel` or `cuCtxCreate`.
fn is_api_name(word: &str) -> bool {
    let rest = word
        .strip_prefix("cuda")
        .or_else(|| word.strip_prefix("cu"));
    match rest {
        Some(r) => {
            r.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                && r.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// The index where the kernel name starts and the name (without a trailing `[123]`).
fn kernel_name(words: &[&str]) -> (usize, String) {
    let mut end = words.len();
    if end > 0 {
        let last = words[end - 1];
        if last.starts_with('[')
            && last.ends_with(']')
            && last[1..last.len() - 1].chars().all(|c| c.is_ascii_digit())
        {
            end -= 1;
        }
    }
    let words = &words[..end];
    let shaped = words.iter().position(|w| {
        let first = w.chars().next().unwrap_or(' ');
        (first.is_ascii_alphabetic() || first == '_') && (w.contains('(') || w.contains('<'))
    });
    let at = match shaped {
        Some(i) if i > 0 && words[i - 1] == "void" => i - 1,
        Some(i) => i,
        None => words.len().saturating_sub(1),
    };
    (at, words[at..].join(" "))
}

/// Words shaped like a column value rather than part of a device name.
fn is_separator(word: &str) -> bool {
    if word == "-" || word == "..." || word.ends_with(')') || word.starts_with('(') {
        return true;
    }
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == '/');
    let unit = &word[digits.len()..];
    !digits.is_empty()
        && digits.parse::<f64>().is_ok()
        && matches!(
            unit,
            "B" | "KB" | "MB" | "GB" | "B/s" | "KB/s" | "MB/s" | "GB/s"
        )
}

/// The device: the words before the kernel name (and before a `(N)` device index with its
/// context and stream numbers), back to the first separator.
fn device_name(words: &[&str]) -> Option<String> {
    let mut end = words.len();
    if let Some(i) = words.iter().rposition(|w| {
        w.len() > 2
            && w.starts_with('(')
            && w.ends_with(')')
            && w[1..w.len() - 1].chars().all(|c| c.is_ascii_digit())
    }) {
        end = i;
    }
    let mut start = end;
    while start > 0 && !is_separator(words[start - 1]) {
        start -= 1;
    }
    let name = words[start..end].join(" ");
    (!name.is_empty()).then_some(name)
}

/// `(4 1 1)  (256 1 1)` before the device: grid then block.
fn launch_dims(words: &[&str]) -> (Option<Dim3>, Option<Dim3>) {
    let joined = words.join(" ");
    let mut triples = Vec::new();
    let mut rest = joined.as_str();
    while let Some(open) = rest.find('(') {
        let Some(close) = rest[open..].find(')') else {
            break;
        };
        let inner = &rest[open + 1..open + close];
        let nums: Vec<u64> = inner
            .split_whitespace()
            .filter_map(|n| n.parse().ok())
            .collect();
        if nums.len() == 3 && inner.split_whitespace().count() == 3 {
            triples.push(Dim3::new(nums[0], nums[1], nums[2]));
        }
        rest = &rest[open + close + 1..];
    }
    (triples.first().copied(), triples.get(1).copied())
}

#[cfg(test)]
mod tests {
    use crate::fit::measurements::{parse_text, Dim3, Format};

    // Written for this test in the layout of puchala2022 Listing 5 (no listing line numbers).
    const LOG: &str = "\
==5120== NVPROF is profiling process 5120, command: mtx_mul_vec 30 96 10
==5120== Profiling application: mtx_mul_vec 30 96 10
==5120== Profiling result:
   Start  Duration            Device  Name
   ...       ...               ...     ...
211.40ms  6.2000us                 -  cudaSetDevice
211.42ms  1.5010ms                 -  cudaMalloc
213.00ms  7.1000ms                 -  cudaMemcpy
213.10ms  7.0020ms  GeForce RTX 2060  [CUDA memcpy HtoD]
220.31ms  28.700us                 -  cudaLaunchKernel (mtx_mul_vec(...))
220.34ms  901.10us                 -  cudaDeviceSynchronize
220.36ms  850.25us  GeForce RTX 2060  mtx_mul_vec(...)
221.30ms  31.300us                 -  cudaLaunchKernel (mtx_mul_vec(...))
221.33ms  861.75us  GeForce RTX 2060  mtx_mul_vec(...)
222.40ms  50.100us                 -  cudaMemcpy
222.45ms  1.7000us  GeForce RTX 2060  [CUDA memcpy DtoH]
";

    #[test]
    fn listing5_layout_gives_kernel_times_and_launch_api_times() {
        let set = parse_text(LOG, "run.log", None).unwrap();
        assert_eq!(set.format, Format::NvprofLog);
        let m = &set.measurements;
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].kernel, "mtx_mul_vec(...)");
        assert_eq!(m[0].device.as_deref(), Some("GeForce RTX 2060"));
        assert!((m[0].time_us - 850.25).abs() < 1e-9);
        assert!((m[0].launch_api_us.unwrap() - 28.7).abs() < 1e-9);
        assert_eq!(m[0].source.line, 12);
        assert!((m[1].time_us - 861.75).abs() < 1e-9);
        assert!((m[1].launch_api_us.unwrap() - 31.3).abs() < 1e-9);
    }

    // nvprof's full column layout with a device index, context, stream and correlation ID.
    const FULL: &str = "\
==77== Profiling result:
   Start  Duration            Grid Size      Block Size     Regs*    SSMem*    DSMem*      Size  Throughput  SrcMemType  DstMemType           Device   Context    Stream  Name  Correlation_ID
1.0000ms  2.5000ms              (64 2 1)       (128 1 1)        40  2.0000KB        0B         -           -           -           -  Tesla K40c (0)         1         7  void stencil<float>(float*, int) [112]
";

    #[test]
    fn full_layout_gives_device_grid_block_and_templated_name() {
        let set = parse_text(FULL, "full.log", None).unwrap();
        let m = &set.measurements[0];
        assert_eq!(m.kernel, "void stencil<float>(float*, int)");
        assert_eq!(m.device.as_deref(), Some("Tesla K40c"));
        assert_eq!(m.grid, Some(Dim3::new(64, 2, 1)));
        assert_eq!(m.block, Some(Dim3::new(128, 1, 1)));
        assert_eq!(m.time_us, 2500.0);
        assert_eq!(m.launch_api_us, None);
    }

    #[test]
    fn malformed_lines_name_file_and_line() {
        let bad = LOG.replace("220.36ms  850.25us", "220.36ms  850.25parsecs");
        let e = parse_text(&bad, "run.log", None).unwrap_err().to_string();
        assert!(
            e.contains("run.log") && e.contains("line 12") && e.contains("duration"),
            "{e}"
        );
        let bad = LOG.replace("221.30ms  31.300us", "garbage here");
        let e = parse_text(&bad, "run.log", None).unwrap_err().to_string();
        assert!(e.contains("line 13") && e.contains("start time"), "{e}");
    }
}
