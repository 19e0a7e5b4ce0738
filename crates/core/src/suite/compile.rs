//! Compiling suite kernels with the GPU-less NVIDIA toolchain (`scripts/install-gpu-toolchain.sh`)
//! into PTX plus a ptxas resource report, cached on disk by a hash of what went in.
//!
//! Routes: NVRTC 12.9 through a small Python ctypes driver (sm_50 ... sm_121; the report comes
//! from NVRTC's log with `--ptxas-options=-v`), nvcc 13.5 `-ptx` then ptxas 13.5 `-v`
//! (sm_75 ... sm_121; nvcc also takes whole programs with host code), and clang-14 for OpenCL
//! (`-target nvptx64-nvidia-nvcl`, libclc when installed) then ptxas 12.9 `-v` (sm_50 ...
//! sm_86). The cache key and layout are `compile::cache`'s (`source_key`: the compiler and its
//! file, the source's bytes and folder, the defines, options, include directories and the
//! target; folders with links resolved), which `tune` shares: its in-process NVRTC and this
//! route's driver call the same library with the same options, so the two reuse each other's
//! compilations. Headers are not hashed, so after editing one, delete the cache directory.
//!
//! This is the one place the harness runs external programs. It is deliberately small: the
//! in-process compile layer (`kerneltime::compile`) is meant to replace it behind
//! [`compile_source`] and [`ptxas_report`]. It does not parse PTX or reports.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::compile::cache::{key_file, read_entry, source_key, write_entry, KeyHasher, SourceKey};
use crate::compile::Outcome;

/// The NVRTC driver, the project's `scripts/nvrtc_compile.py` (run as `python3 -c DRIVER
/// LIBNVRTC SOURCE /dev/stdout ptx OPTIONS...`: the PTX on stdout, NVRTC's log on stderr, exit
/// status 1 when the compilation fails).
const NVRTC_DRIVER: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../scripts/nvrtc_compile.py"
));

/// Which compiler turns a source into PTX.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Compiler {
    Nvrtc,
    Nvcc,
    Clang,
}

impl Compiler {
    /// The name suite files use.
    pub fn name(self) -> &'static str {
        match self {
            Compiler::Nvrtc => "nvrtc",
            Compiler::Nvcc => "nvcc",
            Compiler::Clang => "clang",
        }
    }

    pub fn parse(text: &str) -> Option<Compiler> {
        [Compiler::Nvrtc, Compiler::Nvcc, Compiler::Clang]
            .into_iter()
            .find(|c| c.name() == text.trim().to_ascii_lowercase())
    }

    /// The compiler for a source file by its extension: clang for `.cl`, NVRTC otherwise.
    pub fn for_path(path: &Path) -> Compiler {
        match path.extension().and_then(|e| e.to_str()) {
            Some("cl") => Compiler::Clang,
            _ => Compiler::Nvrtc,
        }
    }

    /// The lowest and highest `sm_XX` this route compiles for (with its report).
    pub fn sm_range(self) -> (u32, u32) {
        match self {
            Compiler::Nvrtc => (50, 121),
            Compiler::Nvcc => (75, 121),
            Compiler::Clang => (50, 86),
        }
    }
}

/// A source file and how to compile it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceSpec {
    pub path: PathBuf,
    pub compiler: Compiler,
    /// `-DNAME=VALUE` (an empty value gives `-DNAME`), sorted by name.
    pub defines: Vec<(String, String)>,
    pub options: Vec<String>,
    pub include: Vec<PathBuf>,
    /// The `sm_XX` number asked for; else the device's, clamped to the compiler's range.
    pub arch: Option<u32>,
}

/// Where the toolchain's programs are; each is `None` when not installed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Toolchain {
    pub python: Option<PathBuf>,
    pub nvrtc: Option<PathBuf>,
    /// NVRTC's header directories (CUDA 12.9 runtime and CCCL).
    pub nvrtc_include: Vec<PathBuf>,
    pub ptxas12: Option<PathBuf>,
    pub nvcc: Option<PathBuf>,
    pub ptxas13: Option<PathBuf>,
    pub clang: Option<PathBuf>,
    pub libclc: Option<PathBuf>,
}

fn existing(p: PathBuf) -> Option<PathBuf> {
    p.is_file().then_some(p)
}

/// A program by name on `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

impl Toolchain {
    /// The toolchain installed under `root` by `scripts/install-gpu-toolchain.sh`, plus clang-14,
    /// libclc and python3 from the system.
    pub fn at(root: &Path) -> Toolchain {
        let cu12 = root.join("cu12/nvidia");
        let cu13 = root.join("cu13/nvidia/cu13/bin");
        Toolchain {
            python: on_path("python3"),
            nvrtc: existing(cu12.join("cuda_nvrtc/lib/libnvrtc.so.12")),
            nvrtc_include: ["cuda_runtime/include", "cuda_cccl/include"]
                .iter()
                .map(|d| cu12.join(d))
                .filter(|d| d.is_dir())
                .collect(),
            ptxas12: existing(cu12.join("cuda_nvcc/bin/ptxas")),
            nvcc: existing(cu13.join("nvcc")),
            ptxas13: existing(cu13.join("ptxas")),
            clang: on_path("clang-14"),
            libclc: existing(PathBuf::from("/usr/lib/clc/nvptx64--nvidiacl.bc")),
        }
    }

    /// Finds the toolchain: `$GPU_TC`, else a `.gpu-toolchain` directory in one of `dirs` or
    /// their ancestors. Without one, only the system programs are set.
    pub fn discover(dirs: &[&Path]) -> Toolchain {
        if let Some(root) = std::env::var_os("GPU_TC").map(PathBuf::from) {
            if root.is_dir() {
                return Toolchain::at(&root);
            }
        }
        for d in dirs {
            let abs = std::path::absolute(d).unwrap_or_else(|_| d.to_path_buf());
            for a in abs.ancestors() {
                let root = a.join(".gpu-toolchain");
                if root.is_dir() {
                    return Toolchain::at(&root);
                }
            }
        }
        Toolchain::at(Path::new("/nonexistent"))
    }

    /// Why a route cannot run here, if it cannot.
    pub fn missing_for(&self, c: Compiler) -> Option<String> {
        let need: Vec<(&str, bool)> = match c {
            Compiler::Nvrtc => vec![
                ("python3", self.python.is_some()),
                ("NVRTC 12.9", self.nvrtc.is_some()),
            ],
            Compiler::Nvcc => vec![
                ("nvcc 13.5", self.nvcc.is_some()),
                ("ptxas 13.5", self.ptxas13.is_some()),
            ],
            Compiler::Clang => vec![
                ("clang-14", self.clang.is_some()),
                ("ptxas 12.9", self.ptxas12.is_some()),
            ],
        };
        let absent: Vec<&str> = need.iter().filter(|(_, ok)| !ok).map(|(n, _)| *n).collect();
        (!absent.is_empty()).then(|| {
            format!(
                "{} not found (install with scripts/install-gpu-toolchain.sh)",
                absent.join(" and ")
            )
        })
    }
}

/// The target a source is compiled for: the case's `arch`, else the device's compute
/// capability clamped into the compiler's range (with a note when clamped).
pub fn target_sm(
    spec: &SourceSpec,
    device_sm: u32,
) -> std::result::Result<(u32, Option<String>), String> {
    let (lo, hi) = spec.compiler.sm_range();
    if let Some(a) = spec.arch {
        if a < lo || a > hi {
            return Err(format!(
                "arch sm_{a} is outside what {} compiles for (sm_{lo} ... sm_{hi})",
                spec.compiler.name()
            ));
        }
        return Ok((a, None));
    }
    let sm = device_sm.clamp(lo, hi);
    let note = (sm != device_sm).then(|| {
        format!(
            "compiled for sm_{sm} ({} does not target the device's sm_{device_sm}); the resource report is sm_{sm}'s",
            spec.compiler.name()
        )
    });
    Ok((sm, note))
}

/// A compiled kernel source.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub ptx: String,
    /// The ptxas `-v` report (NVRTC's log for the NVRTC route).
    pub report: String,
    /// Whether it came from the cache.
    pub cached: bool,
    /// The cache key.
    pub key: String,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A temporary path in `dir` no other call of this process uses.
fn temp_path(dir: &Path, ext: &str) -> PathBuf {
    let k = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".tmp-{}-{k}.{ext}", std::process::id()))
}

/// Runs a program: (success, stdout, stderr).
fn run(cmd: &mut Command) -> std::result::Result<(bool, String, String), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {}: {e}", cmd.get_program().to_string_lossy()))?;
    Ok((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// The first error lines of a compiler log, as one line.
fn first_errors(log: &str) -> String {
    let lines: Vec<&str> = log
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("error") || l.contains("fatal"))
        .take(2)
        .collect();
    let text = if lines.is_empty() {
        log.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("no message")
            .to_string()
    } else {
        lines.join("; ")
    };
    text.chars().take(300).collect()
}

/// Compiles a source for `sm` into PTX and a resource report, or takes both from `cache`.
/// The error is one line: the compiler's first error, or what is missing.
pub fn compile_source(
    spec: &SourceSpec,
    sm: u32,
    tc: &Toolchain,
    cache: &Path,
) -> std::result::Result<Compiled, String> {
    if let Some(why) = tc.missing_for(spec.compiler) {
        return Err(why);
    }
    let source = std::fs::read(&spec.path)
        .map_err(|e| format!("cannot read {}: {e}", spec.path.display()))?;
    let tool = match spec.compiler {
        Compiler::Nvrtc => &tc.nvrtc,
        Compiler::Nvcc => &tc.nvcc,
        Compiler::Clang => &tc.clang,
    };
    let key = source_key(&SourceKey {
        route: spec.compiler.name(),
        tool: tool.as_deref(),
        source: &source,
        source_dir: spec.path.parent().unwrap_or(Path::new("")),
        sm,
        defines: &spec.defines,
        options: &spec.options,
        include: &spec.include,
    });
    // A refusal `tune` kept is compiled again: the harness words its own reasons.
    if let Some(Outcome::Compiled { ptx, log }) = read_entry(cache, &key) {
        return Ok(Compiled {
            ptx,
            report: log,
            cached: true,
            key,
        });
    }
    std::fs::create_dir_all(cache)
        .map_err(|e| format!("cannot create the cache directory {}: {e}", cache.display()))?;
    let mut flags: Vec<String> = spec
        .defines
        .iter()
        .map(|(k, v)| {
            if v.is_empty() {
                format!("-D{k}")
            } else {
                format!("-D{k}={v}")
            }
        })
        .collect();
    flags.extend(spec.include.iter().map(|i| format!("-I{}", i.display())));
    let (ptx, report) = match spec.compiler {
        Compiler::Nvrtc => {
            let mut cmd = Command::new(tc.python.as_deref().unwrap_or(Path::new("python3")));
            cmd.arg("-c")
                .arg(NVRTC_DRIVER)
                .arg(tc.nvrtc.as_deref().unwrap_or(Path::new("")))
                .arg(&spec.path)
                .args(["/dev/stdout", "ptx"])
                .arg(format!("--gpu-architecture=sm_{sm}"))
                .arg("--ptxas-options=-v")
                .args(
                    spec.path
                        .parent()
                        .filter(|d| !d.as_os_str().is_empty())
                        .map(|d| format!("-I{}", d.display())),
                )
                .args(&flags)
                .args(
                    tc.nvrtc_include
                        .iter()
                        .map(|i| format!("-I{}", i.display())),
                )
                .args(&spec.options);
            let (ok, ptx, log) = run(&mut cmd)?;
            if !ok || ptx.trim().is_empty() {
                return Err(format!("NVRTC: {}", first_errors(&log)));
            }
            (ptx, log)
        }
        Compiler::Nvcc | Compiler::Clang => {
            let tmp = temp_path(cache, "ptx");
            let mut cmd;
            if spec.compiler == Compiler::Nvcc {
                cmd = Command::new(tc.nvcc.as_deref().unwrap_or(Path::new("nvcc")));
                cmd.arg("-ptx").arg(format!("-arch=sm_{sm}"));
            } else {
                cmd = Command::new(tc.clang.as_deref().unwrap_or(Path::new("clang-14")));
                cmd.args([
                    "-target",
                    "nvptx64-nvidia-nvcl",
                    "-x",
                    "cl",
                    "-cl-std=CL1.2",
                    "-O3",
                ])
                .arg(format!("-march=sm_{sm}"))
                .arg("-S");
                if let Some(clc) = &tc.libclc {
                    cmd.args([
                        "-Wno-linker-warnings",
                        "-Xclang",
                        "-mlink-builtin-bitcode",
                        "-Xclang",
                    ])
                    .arg(clc);
                }
            }
            cmd.args(&flags)
                .args(&spec.options)
                .arg(&spec.path)
                .arg("-o")
                .arg(&tmp);
            let result = run(&mut cmd);
            let ptx = std::fs::read_to_string(&tmp);
            let _ = std::fs::remove_file(&tmp);
            let (ok, _, log) = result?;
            let ptx = match ptx {
                Ok(p) if ok => p,
                _ => return Err(format!("{}: {}", spec.compiler.name(), first_errors(&log))),
            };
            let ptxas = if spec.compiler == Compiler::Nvcc {
                &tc.ptxas13
            } else {
                &tc.ptxas12
            };
            let report = run_ptxas(ptxas.as_deref(), &ptx, sm, cache)?;
            (ptx, report)
        }
    };
    let outcome = Outcome::Compiled {
        ptx: ptx.clone(),
        log: report.clone(),
    };
    write_entry(cache, &key, &outcome).map_err(|e| e.to_string())?;
    Ok(Compiled {
        ptx,
        report,
        cached: false,
        key,
    })
}

/// `ptxas -v` on PTX text: the report (ptxas writes it on stderr).
fn run_ptxas(
    ptxas: Option<&Path>,
    ptx: &str,
    sm: u32,
    dir: &Path,
) -> std::result::Result<String, String> {
    let ptxas = ptxas.ok_or("ptxas not found (install with scripts/install-gpu-toolchain.sh)")?;
    let tmp = temp_path(dir, "ptx");
    std::fs::write(&tmp, ptx).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    let result = run(Command::new(ptxas)
        .arg("-v")
        .arg(format!("-arch=sm_{sm}"))
        .arg(&tmp)
        .arg("-o")
        .arg("/dev/null"));
    let _ = std::fs::remove_file(&tmp);
    let (ok, _, log) = result?;
    if !ok {
        return Err(format!("ptxas: {}", first_errors(&log)));
    }
    Ok(log)
}

/// The PTX ISA major version a file declares (`.version 9.5` -> 9).
fn ptx_isa_major(ptx: &str) -> Option<u32> {
    ptx.lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix(".version"))
        .and_then(|v| v.trim().split('.').next()?.parse().ok())
}

/// The ptxas `-v` report of a PTX file's kernels for `sm` (clamped to what the ptxas that
/// reads this PTX version supports: 13.5 for ISA 9 and later, else 12.9), cached. Returns the
/// report, the target used and whether it came from the cache.
pub fn ptxas_report(
    ptx: &str,
    sm: u32,
    tc: &Toolchain,
    cache: &Path,
) -> std::result::Result<(String, u32, bool), String> {
    let new_isa = ptx_isa_major(ptx).is_some_and(|v| v >= 9);
    let (ptxas, lo) = if new_isa {
        (&tc.ptxas13, 75)
    } else {
        (&tc.ptxas12, 50)
    };
    let sm = sm.clamp(lo, 121);
    let mut h = KeyHasher::default();
    h.field(b"kerneltime-suite-ptxas-1")
        .field(
            ptxas
                .as_deref()
                .map(key_file)
                .unwrap_or_default()
                .as_os_str()
                .as_encoded_bytes(),
        )
        .field(ptx.as_bytes())
        .field(&sm.to_le_bytes());
    let key = h.hex();
    let path = cache.join(format!("{key}.log"));
    if let Ok(log) = std::fs::read_to_string(&path) {
        return Ok((log, sm, true));
    }
    std::fs::create_dir_all(cache)
        .map_err(|e| format!("cannot create the cache directory {}: {e}", cache.display()))?;
    let log = run_ptxas(ptxas.as_deref(), ptx, sm, cache)?;
    crate::error::write_atomic(&path, log.as_bytes()).map_err(|e| e.to_string())?;
    Ok((log, sm, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_hasher_separates_fields_and_is_stable() {
        let mut a = KeyHasher::default();
        a.field(b"ab").field(b"c");
        let mut b = KeyHasher::default();
        b.field(b"a").field(b"bc");
        assert_ne!(a.hex(), b.hex());
        assert_eq!(a.hex().len(), 32);
        let mut c = KeyHasher::default();
        c.field(b"ab").field(b"c");
        assert_eq!(a.hex(), c.hex());
    }

    #[test]
    fn target_follows_the_device_within_the_compilers_range() {
        let spec = |c, arch| SourceSpec {
            path: PathBuf::from("k.cu"),
            compiler: c,
            defines: vec![],
            options: vec![],
            include: vec![],
            arch,
        };
        assert_eq!(
            target_sm(&spec(Compiler::Nvrtc, None), 86).unwrap(),
            (86, None)
        );
        let (sm, note) = target_sm(&spec(Compiler::Nvcc, None), 30).unwrap();
        assert_eq!(sm, 75);
        assert!(note.unwrap().contains("sm_75"));
        assert_eq!(target_sm(&spec(Compiler::Nvrtc, None), 35).unwrap().0, 50);
        assert!(target_sm(&spec(Compiler::Nvcc, Some(61)), 86).is_err());
        assert_eq!(
            target_sm(&spec(Compiler::Clang, Some(61)), 86).unwrap(),
            (61, None)
        );
    }

    #[test]
    fn isa_version_and_error_lines() {
        assert_eq!(ptx_isa_major("//\n.version 9.5\n.target sm_75"), Some(9));
        assert_eq!(ptx_isa_major(".version 8.8\n"), Some(8));
        assert_eq!(
            first_errors("x.cu(3): error: identifier \"y\" is undefined\nmore"),
            "x.cu(3): error: identifier \"y\" is undefined"
        );
    }
}
