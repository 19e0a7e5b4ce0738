//! Registers and spills of a PTX kernel from `ptxas -v`, when NVIDIA's assembler is on this
//! machine: what occupancy needs when the user gave no resource report.
//!
//! Where ptxas is looked for, in order: `$KERNELTIME_PTXAS`; `ptxas` on `PATH`; the toolchain
//! of `scripts/install-gpu-toolchain.sh` (`$GPU_TC`, or a `.gpu-toolchain` directory in the
//! current directory, the PTX file's directory or one of their ancestors, or above the
//! executable, as `compile::locate` finds it: ptxas 13.5 for sm_75 and later, ptxas 12.9 for
//! sm_50 and later); `$CUDA12_PTXAS`. Each candidate assembles the PTX for the device's
//! `sm_XY`; when none can (a target too old for the installed ptxas, PTX too new for it), for
//! the PTX's own `.target`, and the report says which it is.
//!
//! This module runs a program; it is not a model and no model calls it (the command line does).
//! It does not compile CUDA or OpenCL sources.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::device::ComputeCapability;
use kerneltime_ptx::resources::{parse_report, KernelResources};

/// A resource report made by ptxas, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct PtxasReport {
    pub resources: KernelResources,
    pub ptxas: PathBuf,
    /// The `sm_XY` it assembled for.
    pub arch: String,
    /// Whether that is the device's own target.
    pub device_target: bool,
}

impl PtxasReport {
    /// A sentence for the notes.
    pub fn note(&self) -> String {
        format!(
            "registers{} from `{} -v -arch={}`{}",
            if self.resources.spill_store_bytes.unwrap_or(0)
                + self.resources.spill_load_bytes.unwrap_or(0)
                > 0
            {
                " and spills"
            } else {
                ""
            },
            self.ptxas.display(),
            self.arch,
            if self.device_target {
                " (the device's target)".to_string()
            } else {
                " (the PTX's own target: the installed ptxas cannot assemble it for the device's; register counts differ a little between targets)".to_string()
            }
        )
    }
}

fn file(p: PathBuf) -> Option<PathBuf> {
    p.is_file().then_some(p)
}

/// The ptxas programs to try, in order (module doc).
pub fn ptxas_candidates(ptx: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let env = |k: &str| std::env::var_os(k).map(PathBuf::from);
    out.extend(env("KERNELTIME_PTXAS").and_then(file));
    if let Some(paths) = std::env::var_os("PATH") {
        out.extend(
            std::env::split_paths(&paths)
                .map(|d| d.join("ptxas"))
                .find(|p| p.is_file()),
        );
    }
    let mut roots = super::locate::toolchain_roots();
    let starts = [
        std::env::current_dir().ok(),
        std::path::absolute(ptx)
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf)),
    ];
    for s in starts.into_iter().flatten() {
        if let Some(r) = s
            .ancestors()
            .map(|a| a.join(".gpu-toolchain"))
            .find(|r| r.is_dir())
        {
            roots.push(r);
        }
    }
    for r in roots {
        out.extend(file(r.join("cu13/nvidia/cu13/bin/ptxas")));
        out.extend(file(r.join("cu12/nvidia/cuda_nvcc/bin/ptxas")));
    }
    out.extend(env("CUDA12_PTXAS").and_then(file));
    let mut seen = std::collections::HashSet::new();
    out.retain(|p| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())));
    out
}

/// The `.target` of a PTX text (`sm_75`), if it has one.
fn ptx_target(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix(".target"))
        .and_then(|t| {
            t.split([',', ' '])
                .map(str::trim)
                .find(|w| w.starts_with("sm_"))
        })
        .map(str::to_string)
}

/// Runs one ptxas for one target; the entry's resources when it succeeds.
fn run(ptxas: &Path, arch: &str, ptx: &Path, entry: &str) -> Option<KernelResources> {
    let out_file = std::env::temp_dir().join(format!(
        "kerneltime-ptxas-{}-{arch}.cubin",
        std::process::id()
    ));
    let out = Command::new(ptxas)
        .arg("-v")
        .arg(format!("-arch={arch}"))
        .arg(ptx)
        .arg("-o")
        .arg(&out_file)
        .output()
        .ok();
    let _ = std::fs::remove_file(&out_file);
    let out = out?;
    if !out.status.success() {
        return None;
    }
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    parse_report(&text)
        .into_iter()
        .find(|r| r.name == entry && r.registers.is_some())
}

/// The resources of kernel `entry` of the PTX file `ptx` for a device of compute capability
/// `cc`, from the first ptxas that can make them; `None` when there is no ptxas or none can.
pub fn ptxas_resources(ptx: &Path, entry: &str, cc: ComputeCapability) -> Option<PtxasReport> {
    let candidates = ptxas_candidates(ptx);
    if candidates.is_empty() {
        return None;
    }
    let device_arch = format!("sm_{}", cc.as_number());
    let own = std::fs::read_to_string(ptx)
        .ok()
        .and_then(|t| ptx_target(&t));
    let mut archs = vec![(device_arch.clone(), true)];
    if let Some(t) = own.filter(|t| *t != device_arch) {
        archs.push((t, false));
    }
    for (arch, device_target) in archs {
        for p in &candidates {
            if let Some(resources) = run(p, &arch, ptx, entry) {
                return Some(PtxasReport {
                    resources,
                    ptxas: p.clone(),
                    arch,
                    device_target,
                });
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ptx_target_is_read() {
        assert_eq!(
            ptx_target(".version 7.0\n.target sm_75\n.address_size 64\n").as_deref(),
            Some("sm_75")
        );
        assert_eq!(
            ptx_target(".target sm_61, debug\n").as_deref(),
            Some("sm_61")
        );
        assert_eq!(ptx_target(".version 7.0\n"), None);
    }
}
