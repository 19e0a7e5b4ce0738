//! Device files from the output of tools GPU programmers already run: CUDA's `deviceQuery`,
//! Accel-Sim's GPU micro-benchmark suite, a GPGPU-Sim/Accel-Sim `gpgpusim.config`, and our own
//! micro-benchmark program (`kernels/ubench/ubench.cu`).
//!
//! Each format has a reader (one module each) that fills a [`DeviceDraft`]: every value with the
//! file and line it came from. [`import`] picks the reader ([`detect`] looks at the content when no
//! format is given, and falls back to `deviceQuery`, the historical default), and
//! [`DeviceDraft::to_toml`] writes the catalogue's device-file schema, checked by loading it back.
//!
//! This module does not run any tool and does not change how models use the values; it only maps
//! what the tools print onto the device-file fields (`[latencies]` for the trace model,
//! `[microbenchmarks]` for the analytical models, `[measured]` for device-level measurements).

pub mod accelsim_ubench;
pub mod device_query;
pub mod draft;
pub mod gpgpusim_config;
pub mod kerneltime_ubench;

use std::fmt;

pub use device_query::{architecture_of, parse, DeviceQueryReport};
pub use draft::{DeviceDraft, Sourced};

use crate::error::{Error, Result};

/// The inputs `kerneltime device import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImportFormat {
    /// CUDA's `deviceQuery` sample output.
    DeviceQuery,
    /// The console output of Accel-Sim's `GPU_Microbenchmark` suite.
    AccelsimUbench,
    /// A GPGPU-Sim / Accel-Sim `gpgpusim.config`.
    GpgpusimConfig,
    /// The output of our own micro-benchmark program, `kernels/ubench/ubench.cu`.
    KerneltimeUbench,
}

impl ImportFormat {
    pub const ALL: &'static [ImportFormat] = &[
        ImportFormat::DeviceQuery,
        ImportFormat::AccelsimUbench,
        ImportFormat::GpgpusimConfig,
        ImportFormat::KerneltimeUbench,
    ];

    /// The name the command line takes.
    pub fn name(&self) -> &'static str {
        match self {
            ImportFormat::DeviceQuery => "devicequery",
            ImportFormat::AccelsimUbench => "accelsim-ubench",
            ImportFormat::GpgpusimConfig => "gpgpusim-config",
            ImportFormat::KerneltimeUbench => "kerneltime-ubench",
        }
    }

    /// Parses a format name; the error names the input field `format`.
    pub fn parse(text: &str) -> Result<Self> {
        let t = text.trim().to_ascii_lowercase().replace('_', "-");
        Self::ALL
            .iter()
            .copied()
            .find(|f| f.name() == t)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|f| f.name()).collect();
                Error::invalid(
                    "format",
                    format!("unknown format `{text}`; known: {}", names.join(", ")),
                )
            })
    }
}

impl fmt::Display for ImportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The format the content shows unambiguously, or `None` (then `deviceQuery` is assumed).
///
/// - `# kerneltime-ubench` on a line of its own: our program's output;
/// - `running ./NAME microbenchmark` or `//Accel_Sim config:`: Accel-Sim's suite;
/// - at least three lines starting with `-gpgpu_` and none of the above: a `gpgpusim.config`.
pub fn detect(text: &str) -> Option<ImportFormat> {
    let mut gpgpu_lines = 0usize;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with(kerneltime_ubench::MARKER) {
            return Some(ImportFormat::KerneltimeUbench);
        }
        if accelsim_ubench::section_name(t).is_some() || t.starts_with("//Accel_Sim config") {
            return Some(ImportFormat::AccelsimUbench);
        }
        if t.starts_with("-gpgpu_") {
            gpgpu_lines += 1;
        }
    }
    (gpgpu_lines >= 3).then_some(ImportFormat::GpgpusimConfig)
}

/// Reads `text` (from the file `origin`) as `format`, or as the detected format.
pub fn import(text: &str, origin: &str, format: Option<ImportFormat>) -> Result<DeviceDraft> {
    let format = format
        .or_else(|| detect(text))
        .unwrap_or(ImportFormat::DeviceQuery);
    match format {
        ImportFormat::DeviceQuery => Ok(device_query::draft(&parse(text, origin)?, origin)),
        ImportFormat::AccelsimUbench => accelsim_ubench::draft(text, origin),
        ImportFormat::GpgpusimConfig => gpgpusim_config::draft(text, origin),
        ImportFormat::KerneltimeUbench => kerneltime_ubench::draft(text, origin),
    }
}

/// The first number in `s` ("= 33.7331 cycles" -> 33.7331, "1.2e-3x" -> 0.0012).
pub(crate) fn first_number(s: &str) -> Option<f64> {
    let bytes = s.as_bytes();
    let start = (0..bytes.len()).find(|&i| {
        bytes[i].is_ascii_digit()
            || ((bytes[i] == b'-' || bytes[i] == b'.')
                && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
    })?;
    let mut end = start + 1;
    while end < bytes.len() {
        let c = bytes[end];
        let exponent_sign = (c == b'-' || c == b'+') && matches!(bytes[end - 1], b'e' | b'E');
        let exponent = (c == b'e' || c == b'E')
            && bytes
                .get(end + 1)
                .is_some_and(|n| n.is_ascii_digit() || *n == b'-' || *n == b'+');
        if c.is_ascii_digit() || c == b'.' || exponent || exponent_sign {
            end += 1;
        } else {
            break;
        }
    }
    s[start..end].parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The first number of `value`, found on line `line` (whose text is `text`) of `origin`, with its
/// source; no number, or a negative one, is an error naming the line.
pub(crate) fn sourced_number(
    tool: &str,
    origin: &str,
    line: usize,
    value: &str,
    text: &str,
) -> Result<Sourced<f64>> {
    let v = first_number(value).filter(|v| *v >= 0.0).ok_or_else(|| {
        line_error(
            origin,
            line,
            format!("cannot read a non-negative number in `{}`", text.trim()),
        )
    })?;
    Ok(Sourced::new(v, draft::at_line(tool, origin, line, text)))
}

/// An error about one line of an input.
pub(crate) fn line_error(origin: &str, line: usize, message: impl fmt::Display) -> Error {
    Error::file(origin, format!("line {line}: {message}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_names_round_trip_and_unknown_names_the_field() {
        for f in ImportFormat::ALL {
            assert_eq!(ImportFormat::parse(f.name()).unwrap(), *f);
        }
        assert_eq!(
            ImportFormat::parse("Accelsim_Ubench").unwrap(),
            ImportFormat::AccelsimUbench
        );
        let e = ImportFormat::parse("nvidia-smi").unwrap_err().to_string();
        assert!(e.contains("format") && e.contains("gpgpusim-config"), "{e}");
    }

    #[test]
    fn detection_needs_a_clear_marker() {
        assert_eq!(
            detect("running ./l1_lat microbenchmark\nL1 Latency = 33 cycles\n"),
            Some(ImportFormat::AccelsimUbench)
        );
        assert_eq!(
            detect("# kerneltime-ubench 1\nname = X\n"),
            Some(ImportFormat::KerneltimeUbench)
        );
        assert_eq!(
            detect("-gpgpu_n_clusters 40\n-gpgpu_n_cores_per_cluster 2\n-gpgpu_n_mem 24\n"),
            Some(ImportFormat::GpgpusimConfig)
        );
        // Two config-like lines are not enough; deviceQuery text has no marker.
        assert_eq!(detect("-gpgpu_n_clusters 40\n-gpgpu_n_mem 24\n"), None);
        assert_eq!(detect("Device 0: \"Tesla T4\"\n"), None);
    }

    /// Lines the importers look for, to build inputs that reach deep into each reader.
    const PIECES: &[&str] = &[
        "running ./mem_lat microbenchmark\n",
        "Mem latency = ",
        "  Device : \"G\"\n",
        "CUDA version number : ",
        "Multiprocessors Count : ",
        "-gpgpu_cache:dl2 S:",
        "-gpgpu_n_clusters ",
        "-gpgpu_clock_domains ",
        "-ptx_opcode_initiation_fp ",
        "# kerneltime-ubench 1\n",
        "sm_count = ",
        "compute_capability = ",
        "Device 0: \"X\"\n",
        "  CUDA Capability Major/Minor version number:    ",
        "L2 Banks number = ",
        "7.0",
        "-3",
        "1e309",
        ":,",
        "\n",
        "é",
    ];

    proptest::proptest! {
        /// Whatever the text, every reader answers with a draft or an error, and a draft writes
        /// a device file or an error: nothing panics on user input.
        #[test]
        fn no_input_makes_an_importer_panic(
            picks in proptest::collection::vec((0..PIECES.len(), 0u32..100_000), 0..40)
        ) {
            let mut text = String::new();
            for (i, n) in picks {
                text.push_str(PIECES[i]);
                text.push_str(&n.to_string());
            }
            for format in ImportFormat::ALL {
                if let Ok(d) = import(&text, "fuzz.txt", Some(*format)) {
                    let _ = d.to_toml(Some("fuzz"));
                }
            }
        }
    }

    #[test]
    fn first_number_reads_what_the_tools_print() {
        assert_eq!(first_number("=      33.7331 cycles"), Some(33.7331));
        assert_eq!(
            first_number(" 1365.73(byte/clk), 1526.33(GB/s)"),
            Some(1365.73)
        );
        assert_eq!(first_number(" 2.5e-05 s"), Some(2.5e-5));
        assert_eq!(first_number(" -3 dB"), Some(-3.0));
        assert_eq!(first_number("sm_7.0"), Some(7.0));
        assert_eq!(first_number("none"), None);
    }
}
