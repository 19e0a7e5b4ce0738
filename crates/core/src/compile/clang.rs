//! OpenCL C to PTX with clang-14's `nvptx64-nvidia-nvcl` target, as
//! `scripts/regenerate-fixtures.sh` does it: OpenCL 1.2, `-O3`, and the project's small header
//! of work-item and barrier builtins (`scripts/ocl_shim.h`, embedded here) instead of libclc.
//! The resource report comes from `ptxas -v` on that PTX.
//!
//! What it does NOT do: OpenCL math builtins beyond what clang lowers itself, or CUDA sources.

use std::path::PathBuf;

use super::{failed, ptxas_report, run, CompileJob, Outcome, TempDir};
use crate::error::{Error, Result};

/// The work-item and barrier builtins for clang's OpenCL-on-PTX target.
const OCL_SHIM: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../scripts/ocl_shim.h"
));

/// clang for OpenCL and a ptxas for the report.
pub struct Clang {
    pub clang: PathBuf,
    pub ptxas: PathBuf,
}

impl Clang {
    pub fn find() -> Result<Clang> {
        let clang = super::locate::find_program(&["clang-14"]).ok_or_else(|| {
            Error::missing(
                "compiler",
                "OpenCL kernels compile with clang-14, which is not on PATH (apt-get install clang-14)",
            )
        })?;
        let ptxas = std::env::var_os("CUDA12_PTXAS")
            .map(PathBuf::from)
            .filter(|p| p.is_file())
            .or_else(|| super::locate::find_program(&["ptxas"]))
            .ok_or_else(|| {
                Error::missing(
                    "compiler",
                    "registers and shared memory of OpenCL kernels come from ptxas, which is not on PATH (install a CUDA toolkit or the nvidia-cuda-nvcc wheel)",
                )
            })?;
        Ok(Clang { clang, ptxas })
    }

    pub fn location(&self) -> String {
        format!("{} and {}", self.clang.display(), self.ptxas.display())
    }

    pub fn identity(&self) -> String {
        format!("clang {} {}", self.clang.display(), self.ptxas.display())
    }

    pub fn compile(&self, job: &CompileJob<'_>) -> Result<Outcome> {
        let tmp = TempDir::new()?;
        let write = |name: &str, text: &str| {
            let p = tmp.0.join(name);
            std::fs::write(&p, text)
                .map_err(|e| Error::io(format!("cannot write {}", p.display()), e))
                .map(|_| p)
        };
        let src = write(job.file_name, job.source)?;
        let shim = write("kerneltime_ocl_shim.h", OCL_SHIM)?;
        let ptx_path = tmp.0.join("kernel.ptx");
        let sm = format!("sm_{}", job.arch.as_number());
        let mut args: Vec<String> = [
            "-target",
            "nvptx64-nvidia-nvcl",
            "-x",
            "cl",
            "-cl-std=CL1.2",
            "-O3",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(format!("-march={sm}"));
        args.push("-include".into());
        args.push(shim.display().to_string());
        if let Some(d) = job.include_dir {
            args.push(format!("-I{}", d.display()));
        }
        args.extend(job.defines.iter().map(|(n, v)| format!("-D{n}={v}")));
        args.extend(job.options.iter().cloned());
        args.extend(["-S".into(), src.display().to_string(), "-o".into()]);
        args.push(ptx_path.display().to_string());
        let (ok, log) = run(&self.clang, &args)?;
        if !ok {
            return Ok(failed(log, "clang"));
        }
        ptxas_report(&self.ptxas, &sm, &tmp, &ptx_path, log)
    }
}
