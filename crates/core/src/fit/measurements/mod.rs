//! Measured kernel times from profilers and benchmark tools, read into one record type.
//!
//! Every reader turns one file format into a list of [`Measurement`]s: the kernel, the device,
//! the launch when known, the kernel's parameters, the measured time in microseconds, the
//! launch API time when the file has it (puchala2022 takes `t_p` from it) and, for profiler
//! counter tables, the counters. [`read_measurements`] detects the format from the content
//! (gzip-compressed files are decompressed transparently); [`read_measurements_as`] takes an
//! explicit [`Format`].
//!
//! Formats (one file each):
//! - `generic` ([`generic`]): the project's documented CSV; its schema is in that module's doc.
//! - `nvprof-csv` ([`nvprof_csv`]): `nvprof --print-gpu-trace [--print-api-trace] --csv`.
//! - `nvprof-log` ([`nvprof_log`]): nvprof's text trace as in puchala2022 Listing 5.
//! - `nsys-kern-sum`, `nsys-trace` ([`nsys`]): `nsys stats --format csv` reports
//!   `cuda_gpu_kern_sum` and `cuda_gpu_trace`.
//! - `ncu` ([`ncu`]): `ncu --csv` with the `gpu__time_duration` metric.
//! - `kernel-tuner` ([`kernel_tuner`]): Kernel Tuner cache JSON files.
//! - `ktt-json`, `ktt-csv` ([`ktt_json`], [`ktt_csv`]): Kernel Tuning Toolkit (KTT) results.
//! - `t4` ([`t4`]): the T4 autotuning results format ("FAIR sharing of data in autotuning
//!   research"), as Kernel Tuner and other tuners write it.
//! - `counters` ([`counters`]): per-launch profiler counter tables such as the amaris2018 data.
//!
//! Profiler counters, whatever tool recorded them (Nsight Compute, KTT's profiling, nvprof
//! names in a counters table), go through one name mapping, [`metrics`].
//!
//! A malformed row is an error naming the file and the line; a reader returns all rows or none.
//! This module does not fit, aggregate or evaluate anything, and it does not know any model.

pub mod counters;
pub mod generic;
pub mod kernel_tuner;
pub mod ktt_csv;
pub mod ktt_json;
pub mod metrics;
pub mod ncu;
pub mod nsys;
pub mod nvprof_csv;
pub mod nvprof_log;
pub mod t4;

use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};

pub use crate::workload::measurement::{Counters, Dim3, Measurement, SourceLine};

/// The file formats the readers understand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Generic,
    NvprofCsv,
    NvprofLog,
    NsysKernSum,
    NsysTrace,
    Ncu,
    KernelTuner,
    KttJson,
    KttCsv,
    T4,
    Counters,
}

impl Format {
    /// Every format, in the order `--format` lists them.
    pub const ALL: &'static [Format] = &[
        Format::Generic,
        Format::NvprofCsv,
        Format::NvprofLog,
        Format::NsysKernSum,
        Format::NsysTrace,
        Format::Ncu,
        Format::KernelTuner,
        Format::KttJson,
        Format::KttCsv,
        Format::T4,
        Format::Counters,
    ];

    /// The name `--format` takes.
    pub fn name(&self) -> &'static str {
        match self {
            Format::Generic => "generic",
            Format::NvprofCsv => "nvprof-csv",
            Format::NvprofLog => "nvprof-log",
            Format::NsysKernSum => "nsys-kern-sum",
            Format::NsysTrace => "nsys-trace",
            Format::Ncu => "ncu",
            Format::KernelTuner => "kernel-tuner",
            Format::KttJson => "ktt-json",
            Format::KttCsv => "ktt-csv",
            Format::T4 => "t4",
            Format::Counters => "counters",
        }
    }

    /// Parses a `--format` value.
    pub fn parse(text: &str) -> Result<Self> {
        let t = text.trim().to_ascii_lowercase().replace('_', "-");
        Format::ALL
            .iter()
            .copied()
            .find(|f| f.name() == t)
            .ok_or_else(|| {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
                Error::invalid(
                    "format",
                    format!("unknown format `{text}`; known: {}", names.join(", ")),
                )
            })
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The rows of one file, with the format they were read as and any notes about the reading.
#[derive(Debug, Clone, Serialize)]
pub struct MeasurementSet {
    pub file: String,
    pub format: Format,
    pub measurements: Vec<Measurement>,
    /// What the reader skipped or converted (e.g. failed Kernel Tuner configurations).
    pub notes: Vec<String>,
}

/// What a reader returns before the set is assembled.
pub(crate) struct Parsed {
    pub measurements: Vec<Measurement>,
    pub notes: Vec<String>,
}

impl Parsed {
    pub fn new(measurements: Vec<Measurement>) -> Self {
        Self {
            measurements,
            notes: Vec::new(),
        }
    }
}

/// Reads a measurement file of any supported format (plain or gzip-compressed).
pub fn read_measurements(path: &Path) -> Result<MeasurementSet> {
    read_measurements_as(path, None)
}

/// Reads a measurement file; `format` overrides the detection.
pub fn read_measurements_as(path: &Path, format: Option<Format>) -> Result<MeasurementSet> {
    let bytes = crate::error::read_capped(
        path,
        crate::error::MAX_TEXT_FILE_BYTES,
        "a measurement file",
    )?;
    let text = decode(bytes).map_err(|m| Error::file(path, m))?;
    parse_text(&text, &path.display().to_string(), format)
}

/// Parses a file's text; `origin` names it in errors and in each row's source.
pub fn parse_text(text: &str, origin: &str, format: Option<Format>) -> Result<MeasurementSet> {
    let format = match format {
        Some(f) => f,
        None => detect(text).ok_or_else(|| {
            let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
            Error::file(
                origin,
                format!(
                    "cannot tell the measurement format from the content; give `format` (one of {})",
                    names.join(", ")
                ),
            )
        })?,
    };
    let parsed = match format {
        Format::Generic => generic::parse(text, origin)?,
        Format::NvprofCsv => nvprof_csv::parse(text, origin)?,
        Format::NvprofLog => nvprof_log::parse(text, origin)?,
        Format::NsysKernSum => nsys::parse_kern_sum(text, origin)?,
        Format::NsysTrace => nsys::parse_trace(text, origin)?,
        Format::Ncu => ncu::parse(text, origin)?,
        Format::KernelTuner => kernel_tuner::parse(text, origin)?,
        Format::KttJson => ktt_json::parse(text, origin)?,
        Format::KttCsv => ktt_csv::parse(text, origin)?,
        Format::T4 => t4::parse(text, origin)?,
        Format::Counters => counters::parse(text, origin)?,
    };
    if parsed.measurements.is_empty() {
        return Err(Error::file(
            origin,
            format!("no kernel measurements found (read as {format})"),
        ));
    }
    // Kernel and GPU names reach terminals and reports: control characters are escaped here.
    let mut measurements = parsed.measurements;
    for m in &mut measurements {
        if m.kernel.contains(|c: char| c.is_control()) {
            m.kernel = crate::error::escape_control(&m.kernel);
        }
        if let Some(d) = m
            .device
            .as_mut()
            .filter(|d| d.contains(|c: char| c.is_control()))
        {
            *d = crate::error::escape_control(d);
        }
    }
    Ok(MeasurementSet {
        file: origin.to_string(),
        format,
        measurements,
        notes: parsed.notes,
    })
}

/// Gunzips when the bytes start with the gzip magic number; the result must be UTF-8.
///
/// Decompression stops at [`crate::error::MAX_TEXT_FILE_BYTES`], the cap of a plain file, so a
/// small compressed file cannot expand into unbounded memory.
pub(crate) fn decode(bytes: Vec<u8>) -> std::result::Result<String, String> {
    decode_capped(bytes, crate::error::MAX_TEXT_FILE_BYTES)
}

/// [`decode`] with an explicit cap on the decompressed size.
pub(crate) fn decode_capped(bytes: Vec<u8>, max_bytes: u64) -> std::result::Result<String, String> {
    let data = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .take(max_bytes.saturating_add(1))
            .read_to_end(&mut out)
            .map_err(|e| format!("cannot decompress gzip data: {e}"))?;
        if out.len() as u64 > max_bytes {
            return Err(format!(
                "decompresses to more than the {max_bytes} bytes accepted for a measurement file"
            ));
        }
        out
    } else {
        bytes
    };
    let mut text =
        String::from_utf8(data).map_err(|e| format!("not UTF-8 text: {}", e.utf8_error()))?;
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    Ok(text)
}

/// Guesses the format from the first lines of the text.
pub fn detect(text: &str) -> Option<Format> {
    if text.trim_start().starts_with('{') {
        return Some(detect_json(text));
    }
    let mut saw_profiling_result = false;
    for line in text.lines().take(200) {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if t.starts_with("==") {
            if t.contains("Profiling result") {
                saw_profiling_result = true;
            }
            continue;
        }
        let cells = split_header(t);
        let has = |name: &str| cells.iter().any(|c| c == name);
        let starts = |prefix: &str| cells.iter().any(|c| c.starts_with(prefix));
        if has("Metric Name") && has("Metric Value") || starts("gpu__time_duration") {
            return Some(Format::Ncu);
        }
        if has("Instances") && starts("Total Time") {
            return Some(Format::NsysKernSum);
        }
        if has("GrdX") && starts("Duration") {
            return Some(Format::NsysTrace);
        }
        if cells.len() > 2
            && cells[0] == "Kernel name"
            && cells[1].starts_with("Computation duration")
        {
            return Some(Format::KttCsv);
        }
        if cells.len() > 2 && cells[0] == "Start" && cells[1] == "Duration" {
            return Some(Format::NvprofCsv);
        }
        if has("duration_s") && has("gpu") && has("grid_x") {
            return Some(Format::Counters);
        }
        if has("kernel") && (has("time_us") || has("time_ms") || has("time_s")) {
            return Some(Format::Generic);
        }
        let words: Vec<&str> = t.split_whitespace().collect();
        if words.len() >= 2 && words[0] == "Start" && words[1] == "Duration" {
            return Some(Format::NvprofLog);
        }
    }
    if saw_profiling_result {
        return Some(Format::NvprofLog);
    }
    None
}

/// Which JSON format an object is, from the keys near its start: KTT's output has `Metadata`
/// with `KttVersion` and `Results`; a T4 results file has `results` whose entries carry
/// `invalidity`; anything else is read as a Kernel Tuner cache (whose reader names the fields it
/// misses).
fn detect_json(text: &str) -> Format {
    let mut end = text.len().min(64 * 1024);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    let has = |key: &str| head.contains(&format!("\"{key}\""));
    if has("KttVersion") || (has("Metadata") && has("Results")) {
        Format::KttJson
    } else if has("cache") {
        Format::KernelTuner
    } else if has("invalidity") || (has("results") && has("schema_version")) {
        Format::T4
    } else {
        Format::KernelTuner
    }
}

/// The 1-based line of the `n`-th (0-based) occurrence of `"key"` in a JSON text, for naming the
/// line of the n-th record of a JSON array whose records each hold the key once.
pub(crate) fn line_of_key(text: &str, key: &str, n: usize) -> usize {
    let needle = format!("\"{key}\"");
    let at = text.match_indices(&needle).nth(n).map_or(0, |(i, _)| i);
    text[..at].matches('\n').count() + 1
}

/// Parses a JSON document; an error names the file and line.
pub(crate) fn parse_json(text: &str, origin: &str) -> Result<serde_json::Value> {
    serde_json::from_str(text).map_err(|e| {
        line_error(
            origin,
            e.line(),
            format!("invalid JSON at column {}: {e}", e.column()),
        )
    })
}

/// Splits a header line on commas, removing quotes and surrounding blanks.
fn split_header(line: &str) -> Vec<String> {
    line.split(',')
        .map(|c| c.trim().trim_matches('"').trim().to_string())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Helpers shared by the readers.

/// An error about one line of a file.
pub(crate) fn line_error(origin: &str, line: usize, message: impl fmt::Display) -> Error {
    Error::file(origin, format!("line {line}: {message}"))
}

/// A CSV table: the header cells and the data rows with their 1-based line numbers.
pub(crate) struct CsvTable {
    pub header: Vec<String>,
    pub header_line: usize,
    pub rows: Vec<(usize, Vec<String>)>,
}

impl CsvTable {
    /// The index of a column, by exact name.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    /// The index of a required column, or an error naming it.
    pub fn require(&self, origin: &str, name: &str) -> Result<usize> {
        self.column(name).ok_or_else(|| {
            line_error(
                origin,
                self.header_line,
                format!("the header has no `{name}` column"),
            )
        })
    }
}

/// Reads CSV from the 0-based line index `header_index` (the header) to the end of the text,
/// or up to the first blank line when `stop_at_blank`. Every row must have as many fields as
/// the header. `#` comment lines are skipped when `comments`.
pub(crate) fn read_csv(
    text: &str,
    origin: &str,
    header_index: usize,
    stop_at_blank: bool,
    comments: bool,
) -> Result<CsvTable> {
    let offset: usize = text
        .split_inclusive('\n')
        .take(header_index)
        .map(str::len)
        .sum();
    let mut body = &text[offset.min(text.len())..];
    if stop_at_blank {
        let mut end = 0;
        for l in body.split_inclusive('\n') {
            if l.trim().is_empty() && end > 0 {
                break;
            }
            end += l.len();
        }
        body = &body[..end];
    }
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .comment(if comments { Some(b'#') } else { None })
        .from_reader(body.as_bytes());
    let mut header: Option<(usize, Vec<String>)> = None;
    let mut rows = Vec::new();
    // Lines are counted from byte offsets, as editors count them (the csv crate's own line
    // numbers are one low after CRLF line ends); counting moves forward only.
    let bytes = body.as_bytes();
    let (mut seen_byte, mut seen_line) = (0usize, 1usize);
    let mut line_at = |byte: u64| -> usize {
        let mut byte = usize::try_from(byte).unwrap_or(usize::MAX).min(bytes.len());
        // After a CR the csv crate starts the next record at the LF that ends the line.
        while byte < bytes.len() && (bytes[byte] == b'\n' || bytes[byte] == b'\r') {
            byte += 1;
        }
        if byte >= seen_byte {
            seen_line += bytes[seen_byte..byte]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            seen_byte = byte;
        }
        seen_line + header_index
    };
    for record in reader.records() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map_or(header_index, |p| line_at(p.byte()));
                return Err(line_error(origin, line, format!("malformed CSV: {e}")));
            }
        };
        let line = record
            .position()
            .map_or(header_index, |p| line_at(p.byte()));
        let cells: Vec<String> = record.iter().map(|c| c.trim().to_string()).collect();
        if cells.iter().all(String::is_empty) {
            continue;
        }
        match &header {
            None => header = Some((line, cells)),
            Some((_, h)) => {
                if cells.len() != h.len() {
                    return Err(line_error(
                        origin,
                        line,
                        format!(
                            "expected {} fields as in the header, found {}",
                            h.len(),
                            cells.len()
                        ),
                    ));
                }
                rows.push((line, cells));
            }
        }
    }
    let (header_line, header) = header.ok_or_else(|| Error::file(origin, "no CSV header found"))?;
    Ok(CsvTable {
        header,
        header_line,
        rows,
    })
}

/// The 0-based index of the first line for which `is_header` holds.
pub(crate) fn find_line(text: &str, is_header: impl Fn(&str) -> bool) -> Option<usize> {
    text.lines().position(|l| is_header(l.trim()))
}

/// Parses a finite number; `thousands` removes `,` grouping first (nsys and ncu print them).
pub(crate) fn number(
    cell: &str,
    column: &str,
    origin: &str,
    line: usize,
    thousands: bool,
) -> Result<f64> {
    let t = cell.trim();
    let cleaned;
    let t = if thousands && t.contains(',') {
        cleaned = t.replace(',', "");
        cleaned.as_str()
    } else {
        t
    };
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(line_error(
            origin,
            line,
            format!("`{column}` must be a number, got \"{cell}\""),
        )),
    }
}

/// Like [`number`], but an empty cell (or `-`, `n/a`) is `None`.
pub(crate) fn optional_number(
    cell: &str,
    column: &str,
    origin: &str,
    line: usize,
    thousands: bool,
) -> Result<Option<f64>> {
    let t = cell.trim();
    if t.is_empty() || t == "-" || t.eq_ignore_ascii_case("n/a") {
        return Ok(None);
    }
    number(t, column, origin, line, thousands).map(Some)
}

/// A whole, non-negative number (counts, dimensions); `1024.0` is accepted.
pub(crate) fn whole(value: f64, column: &str, origin: &str, line: usize) -> Result<u64> {
    if value < 0.0 || value.fract() != 0.0 || value > 1.8e19 {
        return Err(line_error(
            origin,
            line,
            format!("`{column}` must be a whole non-negative number, got {value}"),
        ));
    }
    Ok(value as u64)
}

/// A measured time must be finite and above zero.
pub(crate) fn check_time(time_us: f64, column: &str, origin: &str, line: usize) -> Result<f64> {
    if time_us.is_finite() && time_us > 0.0 {
        Ok(time_us)
    } else {
        Err(line_error(
            origin,
            line,
            format!("`{column}` must be a time above zero, got {time_us}"),
        ))
    }
}

/// Microseconds per unit of a time unit as the profilers print it.
pub(crate) fn time_unit_us(unit: &str) -> Option<f64> {
    match unit.trim() {
        "ns" | "nsecond" | "nsec" => Some(1e-3),
        "us" | "µs" | "usecond" | "usec" => Some(1.0),
        "ms" | "msecond" | "msec" => Some(1e3),
        "s" | "second" | "sec" => Some(1e6),
        _ => None,
    }
}

/// Bytes per unit of a size unit as nvprof and nsys print it (binary multiples).
pub(crate) fn size_unit_bytes(unit: &str) -> Option<f64> {
    match unit.trim() {
        "B" | "" => Some(1.0),
        "KB" | "KiB" => Some(1024.0),
        "MB" | "MiB" => Some(1024.0 * 1024.0),
        "GB" | "GiB" => Some(1024.0 * 1024.0 * 1024.0),
        _ => None,
    }
}

/// The unit in a header such as `Duration (ns)`, if any.
pub(crate) fn header_unit(header: &str) -> Option<&str> {
    let open = header.rfind('(')?;
    let close = header[open..].find(')')? + open;
    Some(header[open + 1..close].trim())
}

/// Removes the ` (N)` device index nvprof and nsys append to a device's name.
pub(crate) fn strip_device_index(name: &str) -> String {
    let t = name.trim();
    if let Some(open) = t.rfind(" (") {
        let inner = &t[open + 2..];
        if let Some(num) = inner.strip_suffix(')') {
            if !num.is_empty() && num.chars().all(|c| c.is_ascii_digit()) {
                return t[..open].trim().to_string();
            }
        }
    }
    t.to_string()
}

/// Whether an API name launches a kernel (its duration is the launch API time).
pub(crate) fn is_launch_api(name: &str) -> bool {
    matches!(
        name,
        "cudaLaunchKernel"
            | "cuLaunchKernel"
            | "cudaLaunch"
            | "cuLaunchKernelEx"
            | "cudaLaunchKernelExC"
    )
}

/// A JSON value for a parameter cell: a number when it parses as one, else the text.
pub(crate) fn param_value(cell: &str) -> serde_json::Value {
    let t = cell.trim();
    if let Ok(i) = t.parse::<i64>() {
        return serde_json::Value::from(i);
    }
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() => serde_json::Value::from(v),
        _ => serde_json::Value::from(t),
    }
}

// ---------------------------------------------------------------------------------------------
// Summary of a set (what `kerneltime measurements` prints).

/// Counts and ranges over a measurement set.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub file: String,
    pub format: Format,
    pub rows: usize,
    /// Rows per kernel name.
    pub kernels: BTreeMap<String, usize>,
    /// Rows per device name (`(unknown)` when the file does not say).
    pub devices: BTreeMap<String, usize>,
    pub time_min_us: f64,
    pub time_median_us: f64,
    pub time_max_us: f64,
    pub rows_with_launch: usize,
    pub rows_with_launch_api_time: usize,
    pub rows_with_counters: usize,
    pub notes: Vec<String>,
}

/// Summarizes a set.
pub fn summarize(set: &MeasurementSet) -> Summary {
    let mut kernels = BTreeMap::new();
    let mut devices = BTreeMap::new();
    let mut times: Vec<f64> = Vec::with_capacity(set.measurements.len());
    for m in &set.measurements {
        *kernels.entry(m.kernel.clone()).or_insert(0) += 1;
        let d = m.device.clone().unwrap_or_else(|| "(unknown)".to_string());
        *devices.entry(d).or_insert(0) += 1;
        times.push(m.time_us);
    }
    times.sort_by(f64::total_cmp);
    let median = if times.is_empty() {
        f64::NAN
    } else if times.len() % 2 == 1 {
        times[times.len() / 2]
    } else {
        (times[times.len() / 2 - 1] + times[times.len() / 2]) / 2.0
    };
    Summary {
        file: set.file.clone(),
        format: set.format,
        rows: set.measurements.len(),
        kernels,
        devices,
        time_min_us: times.first().copied().unwrap_or(f64::NAN),
        time_median_us: median,
        time_max_us: times.last().copied().unwrap_or(f64::NAN),
        rows_with_launch: set
            .measurements
            .iter()
            .filter(|m| m.launch().is_some())
            .count(),
        rows_with_launch_api_time: set
            .measurements
            .iter()
            .filter(|m| m.launch_api_us.is_some())
            .count(),
        rows_with_counters: set
            .measurements
            .iter()
            .filter(|m| m.counters.as_ref().is_some_and(|c| !c.is_empty()))
            .count(),
        notes: set.notes.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_convert_to_microseconds_and_bytes() {
        assert_eq!(time_unit_us("ns"), Some(1e-3));
        assert_eq!(time_unit_us("msecond"), Some(1e3));
        assert_eq!(time_unit_us("furlong"), None);
        assert_eq!(size_unit_bytes("KB"), Some(1024.0));
        assert_eq!(header_unit("Duration (ns)"), Some("ns"));
        assert_eq!(header_unit("Name"), None);
    }

    #[test]
    fn device_index_suffix_is_removed() {
        assert_eq!(
            strip_device_index("GeForce RTX 2080 Ti (0)"),
            "GeForce RTX 2080 Ti"
        );
        assert_eq!(strip_device_index("Tesla K40 (rev a)"), "Tesla K40 (rev a)");
    }

    #[test]
    fn format_names_round_trip_and_unknown_is_an_error() {
        for f in Format::ALL {
            assert_eq!(Format::parse(f.name()).unwrap(), *f);
        }
        let e = Format::parse("excel").unwrap_err().to_string();
        assert!(e.starts_with("format:") && e.contains("nvprof-csv"), "{e}");
    }

    #[test]
    fn gzip_is_decoded_transparently() {
        use std::io::Write;
        let text = "kernel,time_us\nk,1.5\n";
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(text.as_bytes()).unwrap();
        let gz = enc.finish().unwrap();
        assert_eq!(decode(gz.clone()).unwrap(), text);
        assert_eq!(decode(text.as_bytes().to_vec()).unwrap(), text);
        assert!(decode(vec![0x1f, 0x8b, 0, 1]).is_err());
        let zeros = {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(&[b'0'; 4096]).unwrap();
            e.finish().unwrap()
        };
        assert_eq!(decode_capped(zeros.clone(), 4096).unwrap().len(), 4096);
        let err = decode_capped(zeros, 4095).unwrap_err();
        assert!(err.contains("more than the 4095 bytes"), "{err}");
    }

    #[test]
    fn a_file_without_rows_is_an_error() {
        let e = parse_text("kernel,time_us\n", "empty.csv", None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("empty.csv") && e.contains("no kernel measurements"),
            "{e}"
        );
    }

    #[test]
    fn json_formats_are_told_apart_by_their_keys() {
        assert_eq!(
            detect("{\"Metadata\": {\"KttVersion\": \"2.1.0\"}, \"Results\": []}"),
            Some(Format::KttJson)
        );
        assert_eq!(
            detect("{\"results\": [{\"configuration\": {}, \"invalidity\": \"correct\"}], \"schema_version\": \"1.0.0\"}"),
            Some(Format::T4)
        );
        assert_eq!(
            detect("{\"kernel_name\": \"k\", \"tune_params_keys\": [], \"cache\": {}}"),
            Some(Format::KernelTuner)
        );
        assert_eq!(
            detect("Kernel name,Computation duration (us),Global size,Local size\n"),
            Some(Format::KttCsv)
        );
    }

    proptest::proptest! {
        /// The new readers answer any text with rows or an error naming the file; none panics.
        #[test]
        fn no_text_makes_a_reader_panic(text in "[{}\\[\\]\":,0-9a-zA-Z_. \n-]{0,300}") {
            for format in [Format::KttJson, Format::KttCsv, Format::T4, Format::Ncu, Format::Counters] {
                if let Err(e) = parse_text(&text, "fuzz.txt", Some(format)) {
                    proptest::prop_assert!(e.to_string().contains("fuzz.txt"));
                }
            }
        }
    }

    #[test]
    fn undetectable_content_asks_for_format() {
        let e = parse_text("hello world\n", "x.txt", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`format`"), "{e}");
    }

    #[test]
    fn summary_counts_kernels_devices_and_time_range() {
        let mut a = Measurement::new("a", 2.0, "f", 2);
        a.device = Some("GPU".into());
        let b = Measurement::new("b", 6.0, "f", 3);
        let c = Measurement::new("a", 4.0, "f", 4);
        let set = MeasurementSet {
            file: "f".into(),
            format: Format::Generic,
            measurements: vec![a, b, c],
            notes: vec![],
        };
        let s = summarize(&set);
        assert_eq!(s.rows, 3);
        assert_eq!(s.kernels["a"], 2);
        assert_eq!(s.devices["GPU"], 1);
        assert_eq!(s.devices["(unknown)"], 2);
        assert_eq!(
            (s.time_min_us, s.time_median_us, s.time_max_us),
            (2.0, 4.0, 6.0)
        );
    }
}
