//! The fallback CUDA route when no NVRTC library is found: `nvcc -ptx` for the PTX, then the
//! `ptxas -v` that sits beside that nvcc for the resource report (a PTX made by one CUDA
//! version must go through that version's ptxas or a newer one). Two processes per
//! configuration, so several times slower than NVRTC.
//!
//! What it does NOT do: keep the CUBIN, or accept NVRTC-only options.

use std::path::PathBuf;

use super::{failed, ptxas_report, run, CompileJob, Outcome, TempDir};
use crate::error::Result;

/// An `nvcc` and its `ptxas`.
pub struct Nvcc {
    pub nvcc: PathBuf,
    pub ptxas: PathBuf,
    version: String,
    /// The `sm_XX` numbers it compiles for, ascending (`nvcc --list-gpu-code`; `None` when it
    /// does not say).
    pub supported_archs: Option<Vec<u32>>,
}

impl Nvcc {
    /// `nvcc` from `PATH` or a CUDA folder, with the `ptxas` of the same folder (else `PATH`'s).
    pub fn find() -> Option<Nvcc> {
        let nvcc = super::locate::find_program(&["nvcc"])?;
        let ptxas = nvcc
            .parent()
            .map(|d| d.join("ptxas"))
            .filter(|p| p.is_file())
            .or_else(|| super::locate::find_program(&["ptxas"]))?;
        let version = run(&nvcc, &["--version".to_string()])
            .ok()
            .and_then(|(_, text)| {
                text.lines()
                    .find(|l| l.contains("release"))
                    .map(|l| l.trim().to_string())
            })
            .unwrap_or_default();
        let supported_archs = run(&nvcc, &["--list-gpu-code".to_string()])
            .ok()
            .map(|(_, text)| {
                let mut archs: Vec<u32> = text
                    .split_whitespace()
                    .filter_map(|w| w.strip_prefix("sm_")?.parse().ok())
                    .collect();
                archs.sort_unstable();
                archs.dedup();
                archs
            })
            .filter(|a| !a.is_empty());
        Some(Nvcc {
            nvcc,
            ptxas,
            version,
            supported_archs,
        })
    }

    pub fn location(&self) -> String {
        format!(
            "nvcc {} ({}) and {}",
            self.version,
            self.nvcc.display(),
            self.ptxas.display()
        )
    }

    pub fn identity(&self) -> String {
        format!("nvcc {} {}", self.version, self.nvcc.display())
    }

    pub fn compile(&self, job: &CompileJob<'_>) -> Result<Outcome> {
        let tmp = TempDir::new()?;
        let src = tmp.0.join(job.file_name);
        std::fs::write(&src, job.source)
            .map_err(|e| crate::error::Error::io(format!("cannot write {}", src.display()), e))?;
        let ptx_path = tmp.0.join("kernel.ptx");
        let sm = format!("sm_{}", job.arch.as_number());
        let mut args = vec!["-ptx".to_string(), format!("-arch={sm}")];
        if let Some(d) = job.include_dir {
            args.push(format!("-I{}", d.display()));
        }
        args.extend(job.defines.iter().map(|(n, v)| format!("-D{n}={v}")));
        args.extend(job.options.iter().cloned());
        args.push(src.display().to_string());
        args.push("-o".into());
        args.push(ptx_path.display().to_string());
        let (ok, log) = run(&self.nvcc, &args)?;
        if !ok {
            return Ok(failed(log, "nvcc"));
        }
        ptxas_report(&self.ptxas, &sm, &tmp, &ptx_path, log)
    }
}
