//! Where the compilers are. In order of preference:
//!
//! - NVRTC: the file named by `KERNELTIME_NVRTC`; an installed CUDA (`CUDA_HOME`, `CUDA_PATH`,
//!   `/usr/local/cuda`: `lib64/` or `lib/`); the `nvidia-cuda-nvrtc` Python wheel in a virtual
//!   environment, conda, the user's or the system's site-packages (`nvidia/cu13/lib/libnvrtc.so.13`,
//!   `nvidia/cuda_nvrtc/lib/libnvrtc.so.12`); the project's GPU-less toolchain (`GPU_TC`, or a
//!   `.gpu-toolchain/` in the working directory or above the executable); finally the system
//!   loader's search path.
//! - Programs (`nvcc`, `ptxas`, `clang-14`): `PATH`, then the same CUDA and toolchain folders.
//!
//! Only looks at the file system and the environment; loading is `nvrtc`, running `nvcc`/`clang`.

use std::path::{Path, PathBuf};

/// Folders that may hold the project's GPU-less toolchain: `$GPU_TC`, `.gpu-toolchain` in the
/// working directory, and `.gpu-toolchain` in one of the six folders above the executable (a
/// checkout's `target/release/kerneltime` finds the checkout's toolchain from anywhere).
pub(crate) fn toolchain_roots() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(tc) = std::env::var_os("GPU_TC") {
        out.push(PathBuf::from(tc));
    }
    if let Ok(cwd) = std::env::current_dir() {
        out.push(cwd.join(".gpu-toolchain"));
    }
    if let Ok(exe) = std::env::current_exe() {
        for dir in exe.ancestors().skip(1).take(6) {
            out.push(dir.join(".gpu-toolchain"));
        }
    }
    out.retain(|p| p.is_dir());
    out.dedup();
    out
}

/// Installed CUDA toolkits.
fn cuda_homes() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(std::env::var_os)
        .map(PathBuf::from)
        .collect();
    out.push(PathBuf::from("/usr/local/cuda"));
    out.retain(|p| p.is_dir());
    out
}

/// Python site-packages folders where pip puts wheels.
fn site_packages() -> Vec<PathBuf> {
    let mut lib_dirs: Vec<PathBuf> = ["VIRTUAL_ENV", "CONDA_PREFIX"]
        .iter()
        .filter_map(std::env::var_os)
        .map(|p| PathBuf::from(p).join("lib"))
        .collect();
    if let Some(home) = std::env::var_os("HOME") {
        lib_dirs.push(PathBuf::from(home).join(".local/lib"));
    }
    lib_dirs.push(PathBuf::from("/usr/local/lib"));
    lib_dirs.push(PathBuf::from("/usr/lib"));
    let mut out = Vec::new();
    for lib in lib_dirs {
        let Ok(rd) = std::fs::read_dir(&lib) else {
            continue;
        };
        let mut pythons: Vec<PathBuf> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("python3"))
            })
            .collect();
        pythons.sort();
        for py in pythons.into_iter().rev() {
            for sub in ["site-packages", "dist-packages"] {
                let d = py.join(sub);
                if d.is_dir() {
                    out.push(d);
                }
            }
        }
    }
    out
}

/// NVRTC libraries that exist, most preferred first.
pub fn nvrtc_candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(p) = std::env::var_os("KERNELTIME_NVRTC") {
        out.push(PathBuf::from(p));
    }
    let names = [
        "libnvrtc.so",
        "libnvrtc.so.13",
        "libnvrtc.so.12",
        "libnvrtc.so.11.2",
    ];
    for home in cuda_homes() {
        for lib in ["lib64", "lib"] {
            for n in names {
                out.push(home.join(lib).join(n));
            }
        }
    }
    let wheel = [
        "nvidia/cu13/lib/libnvrtc.so.13",
        "nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
    ];
    for sp in site_packages() {
        for w in wheel {
            out.push(sp.join(w));
        }
    }
    for root in toolchain_roots() {
        out.push(root.join("cu13").join(wheel[0]));
        out.push(root.join("cu12").join(wheel[1]));
    }
    out.retain(|p| p.is_file());
    out.dedup();
    out
}

/// Names the system loader may resolve on its own (`LD_LIBRARY_PATH`, `ldconfig`).
pub const NVRTC_SONAMES: &[&str] = &["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"];

/// The CUDA header folders that belong with an NVRTC library (for `#include <cuda_fp16.h>`
/// and the like), when they are installed beside it: a toolkit's `include/`, or the wheels'
/// `cuda_runtime/include` and `cuda_cccl/include` (the folders the accuracy harness passes).
pub fn cuda_includes_for(nvrtc: &Path) -> Vec<PathBuf> {
    let Some(up) = nvrtc.parent().and_then(Path::parent) else {
        return Vec::new();
    };
    let toolkit = up.join("include");
    if toolkit.join("cuda_runtime.h").is_file() || toolkit.join("cuda_fp16.h").is_file() {
        return vec![toolkit];
    }
    let Some(wheels) = up.parent() else {
        return Vec::new();
    };
    let runtime = wheels.join("cuda_runtime").join("include");
    if !(runtime.join("cuda_runtime.h").is_file() || runtime.join("cuda_fp16.h").is_file()) {
        return Vec::new();
    }
    let cccl = wheels.join("cuda_cccl").join("include");
    let mut out = vec![runtime];
    if cccl.is_dir() {
        out.push(cccl);
    }
    out
}

/// A program on `PATH` or in the CUDA and toolchain folders.
pub fn find_program(names: &[&str]) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for home in cuda_homes() {
        dirs.push(home.join("bin"));
    }
    for root in toolchain_roots() {
        dirs.push(root.join("cu13/nvidia/cu13/bin"));
        dirs.push(root.join("cu12/nvidia/cuda_nvcc/bin"));
    }
    for n in names {
        for d in &dirs {
            let p = d.join(n);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}
