//! Resource reports of compiled kernels: `ptxas -v` output (also inside an NVRTC program log,
//! where continuation lines start with `ptxas .`) and `cuobjdump -res-usage` output.
//!
//! For each function it collects registers, shared / constant / local memory, stack frame,
//! spill stores and loads, and barriers, as far as the report gives them. It does not run the
//! tools and does not judge the values; fields the report leaves out stay `None`.

use serde::Serialize;

/// Resources of one function as reported by the tools.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct KernelResources {
    pub name: String,
    /// Whether ptxas called it an entry function (cuobjdump lists every function; None there).
    pub is_entry: Option<bool>,
    /// Target named by ptxas (`sm_80`).
    pub arch: Option<String>,
    pub registers: Option<u64>,
    pub barriers: Option<u64>,
    pub shared_bytes: Option<u64>,
    /// Constant bank 0 (`cmem[0]` / `CONSTANT[0]`), the kernel-parameter bank.
    pub constant_bytes: Option<u64>,
    pub local_bytes: Option<u64>,
    pub stack_frame_bytes: Option<u64>,
    pub cumulative_stack_bytes: Option<u64>,
    pub spill_store_bytes: Option<u64>,
    pub spill_load_bytes: Option<u64>,
}

/// Which tool wrote a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ReportKind {
    Ptxas,
    Cuobjdump,
}

/// Guesses the kind of report from its text.
pub fn detect(text: &str) -> Option<ReportKind> {
    if text.contains("Resource usage:") || text.contains("REG:") {
        Some(ReportKind::Cuobjdump)
    } else if text.contains("ptxas") {
        Some(ReportKind::Ptxas)
    } else {
        None
    }
}

/// Parses either kind of report (detected from the text). Unknown lines are ignored.
pub fn parse_report(text: &str) -> Vec<KernelResources> {
    match detect(text) {
        Some(ReportKind::Cuobjdump) => parse_cuobjdump(text),
        Some(ReportKind::Ptxas) => parse_ptxas(text),
        None => Vec::new(),
    }
}

fn entry<'a>(all: &'a mut Vec<KernelResources>, name: &str) -> &'a mut KernelResources {
    let pos = match all.iter().position(|k| k.name == name) {
        Some(p) => p,
        None => {
            all.push(KernelResources {
                name: name.to_string(),
                ..Default::default()
            });
            all.len() - 1
        }
    };
    &mut all[pos]
}

fn quoted(s: &str) -> Vec<&str> {
    s.split('\'').skip(1).step_by(2).collect()
}

fn leading_number(s: &str) -> Option<u64> {
    s.split_whitespace().next()?.parse().ok()
}

/// Parses `ptxas -v` output or an NVRTC log containing it.
pub fn parse_ptxas(text: &str) -> Vec<KernelResources> {
    let mut all: Vec<KernelResources> = Vec::new();
    let mut current: Option<String> = None;
    for raw in text.lines() {
        // Strip `ptxas info    :` / `ptxas         .` prefixes.
        let line = match raw.trim_start().strip_prefix("ptxas") {
            Some(rest) => rest
                .trim_start()
                .trim_start_matches("info")
                .trim_start()
                .trim_start_matches([':', '.'])
                .trim(),
            None => raw.trim(),
        };
        if let Some(rest) = line.strip_prefix("Compiling entry function") {
            let q = quoted(rest);
            if let Some(name) = q.first() {
                let k = entry(&mut all, name);
                k.is_entry = Some(true);
                k.arch = q.get(1).map(|s| s.to_string());
                current = Some(name.to_string());
            }
        } else if let Some(rest) = line.strip_prefix("Function properties for") {
            let name = rest.trim();
            let k = entry(&mut all, name);
            if k.is_entry.is_none() {
                k.is_entry = Some(false);
            }
            current = Some(name.to_string());
        } else if line.contains("bytes stack frame") {
            let Some(name) = current.clone() else {
                continue;
            };
            let k = entry(&mut all, &name);
            for part in line.split(',') {
                let part = part.trim();
                let v = leading_number(part);
                if part.ends_with("stack frame") {
                    k.stack_frame_bytes = v;
                } else if part.ends_with("spill stores") {
                    k.spill_store_bytes = v;
                } else if part.ends_with("spill loads") {
                    k.spill_load_bytes = v;
                }
            }
        } else if let Some(rest) = line.strip_prefix("Used") {
            let Some(name) = current.clone() else {
                continue;
            };
            let k = entry(&mut all, &name);
            for part in rest.split(',') {
                let part = part.trim().trim_start_matches("used").trim();
                let v = leading_number(part);
                if part.ends_with("registers") {
                    k.registers = v;
                } else if part.ends_with("barriers") {
                    k.barriers = v;
                } else if part.ends_with("bytes smem") {
                    k.shared_bytes = v;
                } else if part.ends_with("bytes cmem[0]") {
                    k.constant_bytes = v;
                } else if part.ends_with("bytes lmem") {
                    k.local_bytes = v;
                } else if part.ends_with("cumulative stack size") {
                    k.cumulative_stack_bytes = v;
                }
            }
        }
    }
    all
}

/// Parses `cuobjdump -res-usage` output.
pub fn parse_cuobjdump(text: &str) -> Vec<KernelResources> {
    let mut all: Vec<KernelResources> = Vec::new();
    let mut current: Option<String> = None;
    for raw in text.lines() {
        let line = raw.trim();
        if let Some(rest) = line.strip_prefix("Function ") {
            let name = rest.trim_end_matches(':').trim();
            entry(&mut all, name);
            current = Some(name.to_string());
        } else if line.starts_with("REG:") {
            let Some(name) = current.clone() else {
                continue;
            };
            let k = entry(&mut all, &name);
            for pair in line.split_whitespace() {
                let Some((key, val)) = pair.split_once(':') else {
                    continue;
                };
                let v = val.parse().ok();
                match key {
                    "REG" => k.registers = v,
                    "STACK" => k.stack_frame_bytes = v,
                    "SHARED" => k.shared_bytes = v,
                    "LOCAL" => k.local_bytes = v,
                    "CONSTANT[0]" => k.constant_bytes = v,
                    _ => {}
                }
            }
        }
    }
    all
}
