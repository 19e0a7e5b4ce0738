//! Compiling kernel sources to PTX for the predictors, with the compiler's resource report.
//!
//! CUDA C++ goes through NVRTC loaded into this process (`nvrtc`), or, when no NVRTC library is
//! found, through `nvcc -ptx` and `ptxas -v` (`nvcc`). OpenCL C goes through `clang-14` to PTX and
//! `ptxas -v` (`clang`). [`Compiler::find`] picks the route and says which files it uses
//! ([`Compiler::location`]) and which architectures it targets ([`Compiler::target`] picks the
//! nearest one for a device it does not); [`cache`] keeps results on disk by a hash of
//! everything that decides them. A compiler that refuses a kernel gives [`Outcome::Failed`]
//! with its first error line; only a compiler that cannot run at all is an `Err`.
//! [`parse_define`] reads a user's `K=V` define.
//!
//! What it does NOT do: parse the PTX or the report (the caller does, with `ptx::parse_bytes`
//! and `ptx::resources::parse_report`), or run anything on a GPU.

pub mod cache;
pub mod clang;
pub mod locate;
pub mod nvcc;
pub mod nvrtc;
pub mod ptxas;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::device::ComputeCapability;
use crate::error::{Error, Result};

/// The language of a kernel source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Language {
    Cuda,
    OpenCl,
}

/// Everything that decides one compilation.
#[derive(Debug, Clone)]
pub struct CompileJob<'a> {
    pub source: &'a str,
    /// The file name shown in diagnostics.
    pub file_name: &'a str,
    /// The folder of the source, searched for `#include "..."`.
    pub include_dir: Option<&'a Path>,
    pub language: Language,
    pub defines: &'a [(String, String)],
    /// Options from the user or the spec, passed as given.
    pub options: &'a [String],
    pub arch: ComputeCapability,
}

/// What a compilation gave.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// PTX and the compiler's log (which holds the ptxas `-v` report).
    Compiled { ptx: String, log: String },
    /// The compiler refused the kernel: its first error line and whole log.
    Failed { reason: String, log: String },
}

/// Whether `name` is a C identifier (so it can be a `-D` define).
pub fn is_identifier(name: &str) -> bool {
    let mut c = name.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// A preprocessor define `K=V`, or `K` alone for `K=1`, as (name, value). The name must be a C
/// identifier; the error names `field`.
pub fn parse_define(field: &str, text: &str) -> Result<(String, String)> {
    let (name, value) = match text.split_once('=') {
        Some((n, v)) => (n.trim(), v.trim()),
        None => (text.trim(), "1"),
    };
    if !is_identifier(name) {
        return Err(Error::invalid(
            field,
            format!("`{name}` in `{text}` is not a C identifier"),
        ));
    }
    Ok((name.to_string(), value.to_string()))
}

/// The architecture of `archs` (ascending, not empty) to compile for `want` instead, or `None`
/// when `want` is one of them: the newest not above `want`, else the oldest.
fn nearest_target(archs: &[u32], want: u32) -> Option<u32> {
    if archs.contains(&want) {
        return None;
    }
    let below = archs.iter().rev().find(|&&a| a <= want);
    Some(*below.unwrap_or(&archs[0]))
}

/// Which compiler the caller wants for CUDA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Choice {
    /// NVRTC when found, else nvcc.
    #[default]
    Auto,
    Nvrtc,
    Nvcc,
}

impl Choice {
    /// Parses `auto`, `nvrtc` or `nvcc`.
    pub fn parse(text: &str) -> Result<Choice> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Choice::Auto),
            "nvrtc" => Ok(Choice::Nvrtc),
            "nvcc" => Ok(Choice::Nvcc),
            _ => Err(Error::invalid(
                "compiler",
                format!("expected auto, nvrtc or nvcc, got `{text}`"),
            )),
        }
    }
}

enum Backend {
    Nvrtc {
        lib: Arc<nvrtc::Nvrtc>,
        include: Vec<PathBuf>,
    },
    Nvcc(nvcc::Nvcc),
    Clang(clang::Clang),
}

/// A compiler ready to use.
pub struct Compiler {
    backend: Backend,
    location: String,
    identity: String,
}

impl Compiler {
    /// Finds a compiler for `language`; the error is one sentence saying what to install.
    pub fn find(language: Language, choice: Choice) -> Result<Compiler> {
        match language {
            Language::OpenCl => {
                let c = clang::Clang::find()?;
                Ok(Compiler {
                    location: c.location(),
                    identity: c.identity(),
                    backend: Backend::Clang(c),
                })
            }
            Language::Cuda => {
                let mut nvrtc_error = None;
                if choice != Choice::Nvcc {
                    match find_nvrtc() {
                        Ok(lib) => {
                            let include = locate::cuda_includes_for(&lib.path);
                            return Ok(Compiler {
                                location: format!(
                                    "NVRTC {}.{} ({})",
                                    lib.version.0,
                                    lib.version.1,
                                    lib.path.display()
                                ),
                                identity: format!(
                                    "nvrtc {}.{} {}",
                                    lib.version.0,
                                    lib.version.1,
                                    lib.path.display()
                                ),
                                backend: Backend::Nvrtc { lib, include },
                            });
                        }
                        Err(e) if choice == Choice::Nvrtc => return Err(e),
                        Err(Error::MissingInput { message, .. }) => nvrtc_error = Some(message),
                        Err(e) => nvrtc_error = Some(e.to_string()),
                    }
                }
                match nvcc::Nvcc::find() {
                    Some(n) => Ok(Compiler {
                        location: n.location(),
                        identity: n.identity(),
                        backend: Backend::Nvcc(n),
                    }),
                    None => Err(Error::missing(
                        "compiler",
                        format!(
                            "no CUDA compiler found: install NVRTC (pip install nvidia-cuda-nvrtc, or a CUDA toolkit with CUDA_HOME set) or put nvcc on PATH{}",
                            nvrtc_error.map_or(String::new(), |e| format!(" ({e})"))
                        ),
                    )),
                }
            }
        }
    }

    /// The `sm_XX` numbers this compiler targets, ascending, when it says (NVRTC's supported
    /// architectures, `nvcc --list-gpu-code`; the clang route does not say).
    pub fn supported_archs(&self) -> Option<&[u32]> {
        match &self.backend {
            Backend::Nvrtc { lib, .. } => lib.supported_archs.as_deref(),
            Backend::Nvcc(n) => n.supported_archs.as_deref(),
            Backend::Clang(_) => None,
        }
    }

    /// The architecture to compile a device of compute capability `cc` for: `cc` when this
    /// compiler targets it (or does not say what it targets), else the nearest one it does —
    /// the oldest for a device older than all of them, the newest not above `cc` otherwise —
    /// with a note saying so.
    pub fn target(&self, cc: ComputeCapability) -> (ComputeCapability, Option<String>) {
        let want = cc.as_number();
        let Some(archs) = self.supported_archs().filter(|a| !a.is_empty()) else {
            return (cc, None);
        };
        let Some(sm) = nearest_target(archs, want) else {
            return (cc, None);
        };
        let chosen = ComputeCapability::new(sm / 10, sm % 10);
        let note = format!(
            "compiled for sm_{sm}, not the device's sm_{want}, which this compiler does not target (it targets sm_{} to sm_{}): the PTX and the resource report are sm_{sm}'s",
            archs[0],
            archs[archs.len() - 1]
        );
        (chosen, Some(note))
    }

    /// Which program or library compiles, for the notes.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// A text that changes whenever the compiler does (part of the cache key).
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// What the compile cache keys the compiler by: the route and its file. NVRTC is
    /// `nvrtc` and the library (the accuracy harness calls the same library with the same
    /// options, so the two share entries); the nvcc and clang routes of this module run other
    /// programs than the harness's and are keyed by their whole identity.
    pub fn key_route(&self) -> (String, Option<&Path>) {
        match &self.backend {
            Backend::Nvrtc { lib, .. } => ("nvrtc".to_string(), Some(lib.path.as_path())),
            Backend::Nvcc(_) | Backend::Clang(_) => (format!("compile {}", self.identity), None),
        }
    }

    /// Compiles one job.
    pub fn compile(&self, job: &CompileJob<'_>) -> Result<Outcome> {
        match &self.backend {
            Backend::Nvrtc { lib, include } => {
                let mut options = vec![
                    format!("--gpu-architecture=sm_{}", job.arch.as_number()),
                    "--ptxas-options=-v".to_string(),
                ];
                if let Some(d) = job.include_dir {
                    options.push(format!("--include-path={}", d.display()));
                }
                for d in include {
                    options.push(format!("--include-path={}", d.display()));
                }
                options.extend(job.defines.iter().map(|(n, v)| format!("-D{n}={v}")));
                options.extend(job.options.iter().cloned());
                let out = lib.compile(job.source, job.file_name, &options)?;
                Ok(match (out.ptx, out.status) {
                    (Some(ptx), None) => Outcome::Compiled { ptx, log: out.log },
                    (_, status) => Outcome::Failed {
                        reason: failure_reason(&out.log, status.as_deref(), "NVRTC"),
                        log: out.log,
                    },
                })
            }
            Backend::Nvcc(n) => n.compile(job),
            Backend::Clang(c) => c.compile(job),
        }
    }
}

fn find_nvrtc() -> Result<Arc<nvrtc::Nvrtc>> {
    static LOADED: std::sync::OnceLock<std::result::Result<Arc<nvrtc::Nvrtc>, String>> =
        std::sync::OnceLock::new();
    LOADED
        .get_or_init(|| {
            let mut errors = Vec::new();
            let mut tried: Vec<PathBuf> = locate::nvrtc_candidates();
            tried.extend(locate::NVRTC_SONAMES.iter().map(PathBuf::from));
            for path in tried {
                match nvrtc::Nvrtc::load(&path) {
                    Ok(lib) => return Ok(Arc::new(lib)),
                    Err(e) if path.is_absolute() => errors.push(e.to_string()),
                    Err(_) => {}
                }
            }
            Err(if errors.is_empty() {
                "no NVRTC library found".to_string()
            } else {
                errors.join("; ")
            })
        })
        .clone()
        .map_err(|m| Error::missing("compiler", m))
}

/// The first line of a compiler log that reports an error, trimmed.
pub fn first_error_line(log: &str) -> Option<String> {
    log.lines()
        .map(str::trim)
        .find(|l| {
            let lower = l.to_ascii_lowercase();
            lower.contains("error") || lower.contains("fatal")
        })
        .map(str::to_string)
}

/// Static shared memory a kernel may declare, bytes: 48 KB on every architecture (more only
/// as dynamic shared memory with an opt-in), the limit ptxas enforces.
pub const STATIC_SHARED_LIMIT_BYTES: u64 = 48 * 1024;

/// Why a compiler failed when its log names no error: NVRTC's status, and what the ptxas
/// report in the log shows (a kernel over the static shared-memory limit), else the log's
/// last line.
pub fn failure_reason(log: &str, status: Option<&str>, tool: &str) -> String {
    if let Some(line) = first_error_line(log) {
        return line;
    }
    let over: Vec<String> = kerneltime_ptx::resources::parse_report(log)
        .into_iter()
        .filter_map(|r| {
            let smem = r.shared_bytes?;
            (smem > STATIC_SHARED_LIMIT_BYTES).then(|| {
                format!(
                    "kernel `{}` declares {smem} bytes of static shared memory, over the {STATIC_SHARED_LIMIT_BYTES}-byte limit",
                    r.name
                )
            })
        })
        .collect();
    let what = status.map_or_else(|| format!("{tool} failed"), str::to_string);
    if !over.is_empty() {
        return format!("{what}: {}", over.join("; "));
    }
    match log.lines().map(str::trim).rfind(|l| !l.is_empty()) {
        Some(last) => format!("{what}: {last}"),
        None => what,
    }
}

/// A fresh folder for one compilation's files, removed when dropped.
pub(crate) struct TempDir(pub PathBuf);

impl TempDir {
    pub(crate) fn new() -> Result<TempDir> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("kerneltime-compile-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The outcome of a step that failed: the first error line of its log.
pub(crate) fn failed(log: String, tool: &str) -> Outcome {
    Outcome::Failed {
        reason: failure_reason(&log, None, tool),
        log,
    }
}

/// Runs `ptxas -v` for `sm` on the PTX a first step wrote (whose log is `log`): the outcome
/// carries the PTX and both logs, or ptxas's first error.
pub(crate) fn ptxas_report(
    ptxas: &Path,
    sm: &str,
    tmp: &TempDir,
    ptx_path: &Path,
    log: String,
) -> Result<Outcome> {
    let ptx = std::fs::read_to_string(ptx_path)
        .map_err(|e| Error::io(format!("cannot read {}", ptx_path.display()), e))?;
    let (ok, report) = run(
        ptxas,
        &[
            "-v".into(),
            format!("-arch={sm}"),
            ptx_path.display().to_string(),
            "-o".into(),
            tmp.0.join("kernel.cubin").display().to_string(),
        ],
    )?;
    if !ok {
        return Ok(failed(format!("{log}{report}"), "ptxas"));
    }
    Ok(Outcome::Compiled {
        ptx,
        log: format!("{log}{report}"),
    })
}

/// Runs a program and returns (success, stdout + stderr).
pub(crate) fn run(program: &Path, args: &[String]) -> Result<(bool, String)> {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .map_err(|e| Error::io(format!("cannot run {}", program.display()), e))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok((out.status.success(), text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_the_compiler_does_not_target_gets_the_nearest_architecture() {
        // NVRTC 12.9's list and nvcc 13.5's (`--list-gpu-code`).
        let nvrtc12 = [
            50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 120, 121,
        ];
        let nvcc13 = [75, 80, 86, 87, 88, 89, 90, 100, 103, 107, 110, 120, 121];
        assert_eq!(nearest_target(&nvrtc12, 86), None);
        // Kepler is older than every target: the oldest.
        assert_eq!(nearest_target(&nvrtc12, 35), Some(50));
        assert_eq!(nearest_target(&nvcc13, 61), Some(75));
        // Between two targets, or newer than all: the newest not above the device.
        assert_eq!(nearest_target(&nvrtc12, 88), Some(87));
        assert_eq!(nearest_target(&[50, 60, 70, 80, 90], 120), Some(90));
    }

    #[test]
    fn the_first_error_line_is_the_reason() {
        let log = "ptxas info    : 0 bytes gmem\nptxas error   : Entry function 'k' uses too much shared data (0x1d010 bytes, 0xc000 max)\nmore";
        assert_eq!(
            first_error_line(log).unwrap(),
            "ptxas error   : Entry function 'k' uses too much shared data (0x1d010 bytes, 0xc000 max)"
        );
        assert_eq!(first_error_line("\n  no problem here\n"), None);
        // NVRTC 12.9 fails a kernel over 48 KB of static shared memory without an error line.
        let log = "ptxas info    : Compiling entry function 'conv' for 'sm_75'\nptxas info    : Used 255 registers, used 1 barriers, 94640 bytes smem, 376 bytes cmem[0]\n";
        assert_eq!(
            failure_reason(log, Some("NVRTC_ERROR_COMPILATION"), "NVRTC"),
            "NVRTC_ERROR_COMPILATION: kernel `conv` declares 94640 bytes of static shared memory, over the 49152-byte limit"
        );
        assert_eq!(failure_reason("", None, "nvcc"), "nvcc failed");
    }
}
