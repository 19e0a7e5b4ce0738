//! The crate's error type: one enum whose messages are single sentences naming what to fix.
//!
//! Every error that reaches a user goes through here. The CLI prints the whole chain and exits
//! with code 2 for bad input (`Error::is_usage`) and 1 for anything else. Nothing here decides
//! how to recover; callers do.

use std::path::PathBuf;

/// Everything that can go wrong in the library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A value given by the user (a flag, a field of an input file) is out of range or malformed.
    #[error("{name}: {message}")]
    InvalidInput { name: String, message: String },

    /// A model needs an input that the workload or device does not provide.
    #[error("missing input `{name}`: {message}")]
    MissingInput { name: String, message: String },

    /// A device name that is not in the catalogue.
    #[error("unknown device `{name}`; closest names: {closest}")]
    UnknownDevice { name: String, closest: String },

    /// A file could not be read or parsed.
    #[error("{}: {message}", path.display())]
    File { path: PathBuf, message: String },

    /// A launch or a block that the hardware cannot run (e.g. zero active blocks).
    #[error("{0}")]
    Infeasible(String),

    /// An I/O failure with context (the cause follows as the error's source).
    #[error("{context}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// Shorthand for [`Error::InvalidInput`].
    pub fn invalid(name: impl Into<String>, message: impl Into<String>) -> Self {
        Error::InvalidInput {
            name: name.into(),
            message: message.into(),
        }
    }

    /// Shorthand for [`Error::MissingInput`].
    pub fn missing(name: impl Into<String>, message: impl Into<String>) -> Self {
        Error::MissingInput {
            name: name.into(),
            message: message.into(),
        }
    }

    /// Shorthand for [`Error::File`].
    pub fn file(path: impl Into<PathBuf>, message: impl std::fmt::Display) -> Self {
        Error::File {
            path: path.into(),
            message: message.to_string(),
        }
    }

    /// Shorthand for [`Error::Io`].
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// Whether the error is the user's to fix (exit code 2) rather than an environment failure.
    pub fn is_usage(&self) -> bool {
        !matches!(self, Error::Io { .. })
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Largest magnitude any numeric input may have: beyond it no count, size or time is physical,
/// and products of such values overflow to infinity.
pub const MAX_INPUT_MAGNITUDE: f64 = 1e18;

/// Checks that a number is finite and not negative; the error names the field.
pub fn non_negative(name: &str, value: f64) -> Result<f64> {
    if value > MAX_INPUT_MAGNITUDE {
        return Err(too_large(name, value));
    }
    if !value.is_finite() {
        return Err(Error::invalid(
            name,
            format!("must be a finite number, got {value}"),
        ));
    }
    if value < 0.0 {
        return Err(Error::invalid(
            name,
            format!("must not be negative, got {value}"),
        ));
    }
    Ok(value)
}

fn too_large(name: &str, value: f64) -> Error {
    Error::invalid(
        name,
        format!("{value:e} is out of range (at most {MAX_INPUT_MAGNITUDE:e})"),
    )
}

/// Checks that a number lies in `lo..=hi` (a physical range); the error names the field, the
/// range and the unit.
pub fn within(name: &str, value: f64, lo: f64, hi: f64, unit: &str) -> Result<f64> {
    if value.is_finite() && value >= lo && value <= hi {
        return Ok(value);
    }
    Err(Error::invalid(
        name,
        format!("must be between {lo} and {hi} {unit}, got {value:e}"),
    ))
}

/// Checks that a number is finite and strictly positive; the error names the field.
pub fn positive(name: &str, value: f64) -> Result<f64> {
    if value > MAX_INPUT_MAGNITUDE && value.is_finite() {
        return Err(too_large(name, value));
    }
    if !value.is_finite() || value <= 0.0 {
        return Err(Error::invalid(
            name,
            format!("must be a finite number above zero, got {value}"),
        ));
    }
    Ok(value)
}

/// Writes a file atomically: the bytes go to a temporary file beside it, then a rename.
/// A failure leaves no partial file behind.
pub fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| std::path::Path::new("."));
    output_dir_exists(path)?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp = dir.join(format!(".{file_name}.tmp{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(format!("cannot write {}", path.display()), e));
    }
    Ok(())
}

/// A user-supplied string made safe for a terminal: control characters (escape sequences, line
/// breaks, carriage returns) are written as Rust escapes (`\u{1b}`, `\n`), the rest unchanged.
pub fn escape_control(s: &str) -> String {
    if !s.contains(|c: char| c.is_control()) {
        return s.to_string();
    }
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Checks that the directory an output file goes into exists: kerneltime never creates
/// directories it was not asked for, so a typo in a path is an error (exit 2), not a new tree.
pub fn output_dir_exists(path: &std::path::Path) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| std::path::Path::new("."));
    if dir.is_dir() {
        return Ok(());
    }
    Err(Error::file(
        path,
        format!(
            "cannot be written: the directory {} does not exist (create it first)",
            dir.display()
        ),
    ))
}

/// Creates an output directory that was asked for by name (`--out DIR`, `--report DIR`), but
/// not its parents: a missing parent is an error, as for an output file.
pub fn create_output_dir(dir: &std::path::Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    output_dir_exists(dir)?;
    std::fs::create_dir(dir)
        .map_err(|e| Error::io(format!("cannot create directory {}", dir.display()), e))
}

/// Reads at most `max_bytes` of a file; a longer file (or an endless one such as a device or a
/// pipe) is an error naming it, so that no input can make memory grow without bound.
pub fn read_capped(path: &std::path::Path, max_bytes: u64, what: &str) -> Result<Vec<u8>> {
    use std::io::Read;
    let file =
        std::fs::File::open(path).map_err(|e| Error::file(path, format!("cannot read: {e}")))?;
    let mut bytes = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Error::file(path, format!("cannot read: {e}")))?;
    if bytes.len() as u64 > max_bytes {
        return Err(Error::file(
            path,
            format!("is larger than the {max_bytes} bytes accepted for {what}"),
        ));
    }
    Ok(bytes)
}

/// Largest text input file (TOML, CSV, logs) read whole: 1 GiB.
pub const MAX_TEXT_FILE_BYTES: u64 = 1 << 30;

/// Reads a whole UTF-8 text file of at most [`MAX_TEXT_FILE_BYTES`]; errors name the file.
pub fn read_text_file(path: &std::path::Path, what: &str) -> Result<String> {
    let bytes = read_capped(path, MAX_TEXT_FILE_BYTES, what)?;
    String::from_utf8(bytes).map_err(|_| Error::file(path, format!("is not UTF-8 text ({what})")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(super::escape_control("GTX 980"), "GTX 980");
        assert_eq!(
            super::escape_control("Evil\u{1b}[31mRED\nline2\r"),
            "Evil\\u{1b}[31mRED\\nline2\\r"
        );
    }
}
