//! From a configuration to what the compiler and the emulator need: block and grid, the
//! preprocessor defines, and the kernel's scalar arguments.
//!
//! The launch follows Kernel Tuner's rule. The block is `LocalSize` (absent: the parameters
//! `block_size_x/y/z`, else 1). The grid is `ceil(problem_size[i] / product of GridDiv[i])` per
//! dimension, where a missing `GridDiv` defaults to `block_size_x/y/z` (1 when no such
//! parameter) and a missing problem dimension is 1; only a spec with neither `ProblemSize` nor
//! `GridDiv` takes its grid from `GlobalSize` (blocks for `GlobalSizeType` CUDA, threads for
//! OpenCL). The defines are Kernel Tuner's: `kernel_tuner=1`, `grid_size_x/y/z`,
//! `block_size_x/y/z`, then every tuning parameter (booleans as 1/0), then the caller's
//! `--define`s, later ones replacing earlier ones of the same name. Of Kernel Tuner's own
//! defines (not a tuning parameter, not the caller's), one that cannot change what the compiler
//! sees is left out (`inert_defines`): in a source without `#include`, a name the source never
//! mentions, or one whose first mention is a top-level `#ifndef NAME` / `#define NAME VALUE` /
//! `#endif` with the value Kernel Tuner would pass. The compilation is then byte-for-byte the
//! same, and its cache key the one of a compiler call with only the tuning parameters (the
//! accuracy harness's), so the two share compile-cache entries.
//!
//! Kernel arguments are found by name among the spec's `Arguments` that are kernel parameters,
//! else among the parameters of the kernel's signature in the source (read with comments
//! removed), or by position.
//!
//! What it does NOT do: check the launch against a device (that is `tune::rank`).

use super::expr::{Expr, Value};
use super::space::Configuration;
use super::spec::{ArgumentMemory, Formula, Language, TuneSpec};
use crate::emulate::DataArg;
use crate::error::{Error, Result};

/// What flags (or a caller) add to or change in a spec.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// Replaces `ProblemSize`.
    pub problem_size: Option<Vec<i64>>,
    /// Kernel arguments `NAME=EXPR` (NAME: a parameter name or position; EXPR may use the
    /// tuning parameters and `ProblemSize`).
    pub args: Vec<String>,
    /// Extra preprocessor defines `NAME=VALUE` (or `NAME`, defined as 1).
    pub defines: Vec<String>,
    /// Data hints; they replace a spec argument's fill of the same name.
    pub data: Vec<DataArg>,
    /// Kernel arguments (names or positions) that are mapped host memory.
    pub mapped_host: Vec<String>,
}

/// A kernel parameter known by name and position.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct KernelParam {
    pub position: usize,
    pub name: String,
}

/// One configuration's launch and build inputs.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchPlan {
    pub grid: [u64; 3],
    pub block: [u64; 3],
    /// `-D` defines in order.
    pub defines: Vec<(String, String)>,
    /// Emulator arguments `POSITION=VALUE`.
    pub args: Vec<String>,
}

const AXES: [&str; 3] = ["x", "y", "z"];

/// Either a spec formula or a fixed value.
#[derive(Debug, Clone)]
enum Dim {
    Formula(Formula, String),
    Param(usize),
    One,
}

/// The launch rule of one spec, ready to apply to configurations.
#[derive(Debug, Clone)]
pub struct Launcher {
    block: [Dim; 3],
    /// Per dimension: the divisors (an empty list divides by 1).
    grid_div: [Vec<Dim>; 3],
    problem_size: [i64; 3],
    /// Grid from `GlobalSize` when the rule cannot apply.
    global: Option<([Dim; 3], bool)>,
    args: Vec<(usize, Formula)>,
    user_defines: Vec<(String, String)>,
    names: Vec<String>,
    /// Kernel Tuner's own defines that change nothing in this source (`inert_defines`).
    inert: Vec<(String, Inert)>,
    /// The kernel's parameters by name (may be empty when nothing names them).
    pub params: Vec<KernelParam>,
    /// Kernel parameters that are mapped host memory.
    pub mapped_host: Vec<KernelParam>,
    /// What the caller should know about how the launch is derived.
    pub notes: Vec<String>,
}

fn block_param(spec: &TuneSpec, d: usize) -> Dim {
    let want = format!("block_size_{}", AXES[d]);
    match spec.params.iter().position(|p| p.name == want) {
        Some(k) => Dim::Param(k),
        None => Dim::One,
    }
}

fn formula_dim(f: &Formula, field: String) -> Dim {
    Dim::Formula(f.clone(), field)
}

impl Launcher {
    /// Prepares the rule for `spec` with `overrides`; `source` is the kernel source, read for
    /// parameter names when the spec lists no arguments.
    pub fn new(spec: &TuneSpec, overrides: &Overrides, source: &str) -> Result<Launcher> {
        let k = &spec.kernel;
        let names: Vec<String> = spec.params.iter().map(|p| p.name.clone()).collect();
        let mut notes = Vec::new();
        let block: [Dim; 3] = std::array::from_fn(|d| match &k.local_size[d] {
            Some(f) => formula_dim(
                f,
                format!("KernelSpecification.LocalSize.{}", AXES[d].to_uppercase()),
            ),
            None => block_param(spec, d),
        });
        let problem: Vec<i64> = match &overrides.problem_size {
            Some(p) => {
                if p.is_empty() || p.len() > 3 || p.iter().any(|&x| x < 1) {
                    return Err(Error::invalid(
                        "problem_size",
                        "give one to three sizes of at least 1",
                    ));
                }
                p.clone()
            }
            None => k.problem_size.clone(),
        };
        let has_div = k.grid_div.iter().any(Option::is_some);
        let grid_div: [Vec<Dim>; 3] = std::array::from_fn(|d| match &k.grid_div[d] {
            Some(list) => list
                .iter()
                .enumerate()
                .map(|(j, f)| {
                    formula_dim(
                        f,
                        format!("KernelSpecification.GridDiv{}[{j}]", AXES[d].to_uppercase()),
                    )
                })
                .collect(),
            None => vec![block_param(spec, d)],
        });
        let global = if problem.is_empty() && !has_div {
            if k.global_size.iter().all(Option::is_none) {
                return Err(Error::file(
                    spec.origin.as_str(),
                    "KernelSpecification: neither ProblemSize, GridDivX/Y/Z nor GlobalSize says how large the grid is; give a problem size",
                ));
            }
            notes.push(
                "grid from KernelSpecification.GlobalSize (no ProblemSize or GridDiv)".into(),
            );
            Some((
                std::array::from_fn(|d| match &k.global_size[d] {
                    Some(f) => formula_dim(
                        f,
                        format!("KernelSpecification.GlobalSize.{}", AXES[d].to_uppercase()),
                    ),
                    None => Dim::One,
                }),
                k.global_size_counts_threads,
            ))
        } else {
            if k.global_size.iter().any(Option::is_some) {
                notes.push("grid by Kernel Tuner's rule, ceil(ProblemSize / product of GridDiv) per dimension; KernelSpecification.GlobalSize is not used".into());
            }
            None
        };
        let mut problem_size = [1i64; 3];
        for (d, p) in problem.iter().enumerate() {
            problem_size[d] = *p;
        }
        let params = kernel_params(spec, source);
        let mut arg_names: Vec<&str> = names.iter().map(String::as_str).collect();
        arg_names.push("ProblemSize");
        let mut args: Vec<(usize, Formula)> = Vec::new();
        let mut position_in_params = 0usize;
        for a in &k.arguments {
            if a.memory == ArgumentMemory::Symbol {
                continue;
            }
            if let Some(v) = a.scalar {
                let text = Value::Float(v).to_string();
                let text = if v == v.trunc() && v.abs() < 9e15 {
                    format!("{}", v as i64)
                } else {
                    text
                };
                let expr = Expr::compile(&text, &arg_names).map_err(|e| {
                    Error::file(spec.origin.as_str(), format!("argument `{}`: {e}", a.name))
                })?;
                args.push((position_in_params, Formula { text, expr }));
            }
            position_in_params += 1;
        }
        for text in &overrides.args {
            let (name, value) = text.split_once('=').ok_or_else(|| {
                Error::invalid("arg", format!("expected NAME=VALUE, got `{text}`"))
            })?;
            let p = find_param(&params, name.trim(), "arg", &k.name)?;
            let expr = Expr::compile(value.trim(), &arg_names)
                .map_err(|e| Error::invalid("arg", format!("in `{text}`, {e}")))?;
            args.retain(|(q, _)| *q != p.position);
            args.push((
                p.position,
                Formula {
                    text: value.trim().to_string(),
                    expr,
                },
            ));
        }
        args.sort_by_key(|(p, _)| *p);
        let mut user_defines = Vec::new();
        for d in &overrides.defines {
            user_defines.push(crate::compile::parse_define("define", d)?);
        }
        let mut mapped_host: Vec<KernelParam> = Vec::new();
        let spec_mapped = k
            .arguments
            .iter()
            .filter(|a| a.mapped_host)
            .map(|a| a.name.clone());
        for name in spec_mapped.chain(overrides.mapped_host.iter().cloned()) {
            let p = find_param(&params, name.trim(), "mapped_host", &k.name)?;
            if !mapped_host.contains(&p) {
                mapped_host.push(p);
            }
        }
        let implicit: Vec<String> = implicit_define_names()
            .into_iter()
            .filter(|n| !names.contains(n) && !user_defines.iter().any(|(u, _)| u == n))
            .collect();
        let inert = inert_defines(source, &implicit);
        if !inert.is_empty() {
            let list: Vec<String> = inert
                .iter()
                .map(|(n, how)| match how {
                    Inert::Unused => n.clone(),
                    Inert::Default(v) => format!("{n} (when {v}, the source's own default)"),
                })
                .collect();
            notes.push(format!(
                "Kernel Tuner's defines not passed, as the compiler would see the same code: {}",
                list.join(", ")
            ));
        }
        Ok(Launcher {
            block,
            grid_div,
            problem_size,
            global,
            args,
            user_defines,
            names,
            inert,
            params,
            mapped_host,
            notes,
        })
    }

    fn value(&self, dim: &Dim, config: &Configuration) -> Result<f64> {
        match dim {
            Dim::One => Ok(1.0),
            Dim::Param(k) => config.values[*k].as_f64().ok_or_else(|| {
                Error::invalid(
                    self.names[*k].as_str(),
                    format!(
                        "{} is not a number and cannot size a launch",
                        config.values[*k]
                    ),
                )
            }),
            Dim::Formula(f, field) => {
                let v = f.expr.eval(&config.values).map_err(|e| {
                    Error::invalid(
                        field.as_str(),
                        format!("in `{}` at {}: {e}", f.text, self.describe(config)),
                    )
                })?;
                v.as_f64().ok_or_else(|| {
                    Error::invalid(
                        field.as_str(),
                        format!(
                            "`{}` gives {v}, not a number, at {}",
                            f.text,
                            self.describe(config)
                        ),
                    )
                })
            }
        }
    }

    /// `name=value, ...` of a configuration, for messages.
    pub fn describe(&self, config: &Configuration) -> String {
        self.names
            .iter()
            .zip(&config.values)
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The launch, defines and arguments of a configuration. A dimension below 1 or a
    /// non-number is an error naming the spec field and the configuration.
    pub fn plan(&self, config: &Configuration) -> Result<LaunchPlan> {
        let whole = |v: f64, what: &str| -> Result<u64> {
            if !(v.is_finite() && v >= 1.0) || v > 1e15 {
                return Err(Error::invalid(
                    what,
                    format!(
                        "is {v} at {}; a launch dimension must be at least 1",
                        self.describe(config)
                    ),
                ));
            }
            Ok(v.ceil() as u64)
        };
        let mut block = [1u64; 3];
        for d in 0..3 {
            block[d] = whole(
                self.value(&self.block[d], config)?,
                &format!("block {}", AXES[d]),
            )?;
        }
        let mut grid = [1u64; 3];
        match &self.global {
            Some((dims, counts_threads)) => {
                for d in 0..3 {
                    let g = self.value(&dims[d], config)?;
                    let g = if *counts_threads {
                        g / block[d] as f64
                    } else {
                        g
                    };
                    grid[d] = whole(g.ceil(), &format!("grid {}", AXES[d]))?;
                }
            }
            None => {
                for d in 0..3 {
                    let mut div = 1.0;
                    for dim in &self.grid_div[d] {
                        div *= self.value(dim, config)?;
                    }
                    if !(div.is_finite() && div > 0.0) {
                        return Err(Error::invalid(
                            format!("GridDiv{}", AXES[d].to_uppercase()),
                            format!(
                                "the product of the divisors is {div} at {}",
                                self.describe(config)
                            ),
                        ));
                    }
                    let g = (self.problem_size[d] as f64 / div).ceil();
                    grid[d] = whole(g.max(1.0), &format!("grid {}", AXES[d]))?;
                }
            }
        }
        let mut defines: Vec<(String, String)> = vec![("kernel_tuner".into(), "1".into())];
        for d in 0..3 {
            defines.push((format!("grid_size_{}", AXES[d]), grid[d].to_string()));
        }
        for d in 0..3 {
            defines.push((format!("block_size_{}", AXES[d]), block[d].to_string()));
        }
        for (n, v) in self.names.iter().zip(&config.values) {
            defines.push((n.clone(), define_text(v)));
        }
        defines.extend(self.user_defines.iter().cloned());
        // Later definitions of a name replace earlier ones (keep the last, in first position).
        let mut merged: Vec<(String, String)> = Vec::with_capacity(defines.len());
        for (n, v) in defines {
            match merged.iter_mut().find(|(m, _)| *m == n) {
                Some(slot) => slot.1 = v,
                None => merged.push((n, v)),
            }
        }
        merged.retain(|(n, v)| {
            !self.inert.iter().any(|(i, how)| {
                i == n
                    && match how {
                        Inert::Unused => true,
                        Inert::Default(d) => d == v,
                    }
            })
        });
        let mut env = config.values.clone();
        env.push(Value::List(
            self.problem_size.iter().map(|&n| Value::Int(n)).collect(),
        ));
        let mut args = Vec::with_capacity(self.args.len());
        for (pos, f) in &self.args {
            let v = f.expr.eval(&env).map_err(|e| {
                Error::invalid(
                    "arg",
                    format!("in `{}` at {}: {e}", f.text, self.describe(config)),
                )
            })?;
            let text = match v {
                Value::Int(_) | Value::Bool(_) => v.as_i64().unwrap_or(0).to_string(),
                Value::Float(x) => format!("{x}"),
                other => {
                    return Err(Error::invalid(
                        "arg",
                        format!("`{}` gives {other}, not a number", f.text),
                    ))
                }
            };
            args.push(format!("{pos}={text}"));
        }
        Ok(LaunchPlan {
            grid,
            block,
            defines: merged,
            args,
        })
    }
}

/// The defines Kernel Tuner adds besides the tuning parameters.
fn implicit_define_names() -> Vec<String> {
    let mut out = vec!["kernel_tuner".to_string()];
    for prefix in ["grid_size", "block_size"] {
        out.extend(AXES.iter().map(|a| format!("{prefix}_{a}")));
    }
    out
}

/// Why a define changes nothing.
#[derive(Debug, Clone, PartialEq)]
enum Inert {
    /// The source never mentions the name.
    Unused,
    /// The source defines the name to this value when it is not given.
    Default(String),
}

/// The identifiers of a line (comments and strings included: a mention there only keeps a
/// define that could have been left out).
fn identifiers(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.chars().next().is_some_and(|c| !c.is_ascii_digit()))
}

/// A preprocessor line's directive and the rest (`#  define X 1` -> ("define", "X 1")).
fn directive(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim().strip_prefix('#')?.trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(rest.len());
    Some((&rest[..end], rest[end..].trim()))
}

/// Which of `names` cannot change what the compiler sees of `source` (see the module notes):
/// none when the source includes anything (a header may use any name).
fn inert_defines(source: &str, names: &[String]) -> Vec<(String, Inert)> {
    let lines: Vec<&str> = source.lines().collect();
    if lines
        .iter()
        .any(|l| directive(l).is_some_and(|(d, _)| d == "include"))
    {
        return Vec::new();
    }
    let mut out = Vec::new();
    for name in names {
        let Some(first) = lines.iter().position(|l| identifiers(l).any(|w| w == name)) else {
            out.push((name.clone(), Inert::Unused));
            continue;
        };
        // The first mention must be a top-level `#ifndef NAME` ...
        let depth: i64 = lines[..first]
            .iter()
            .filter_map(|l| directive(l))
            .map(|(d, _)| match d {
                "if" | "ifdef" | "ifndef" => 1,
                "endif" => -1,
                _ => 0,
            })
            .sum();
        let continued = first > 0 && lines[first - 1].trim_end().ends_with('\\');
        if depth != 0 || continued || directive(lines[first]) != Some(("ifndef", name.as_str())) {
            continue;
        }
        // ... followed by `#define NAME VALUE` and `#endif`.
        let mut next = lines[first + 1..].iter().filter(|l| !l.trim().is_empty());
        let (Some(def), Some(end)) = (next.next(), next.next()) else {
            continue;
        };
        let value = match directive(def) {
            Some(("define", rest)) => rest
                .strip_prefix(name.as_str())
                .filter(|v| v.starts_with(char::is_whitespace))
                .map(str::trim),
            _ => None,
        };
        let closed = directive(end).is_some_and(|(d, _)| d == "endif");
        match value {
            Some(v) if closed && !v.is_empty() && !v.ends_with('\\') && !v.contains("/*") => {
                out.push((name.clone(), Inert::Default(v.to_string())))
            }
            _ => {}
        }
    }
    out
}

/// How a value is written in a `-D` define.
fn define_text(v: &Value) -> String {
    match v {
        Value::Bool(b) => u8::from(*b).to_string(),
        other => other.to_string(),
    }
}

impl Launcher {
    /// The kernel parameter `name` means (a name the launch knows, or a position); errors
    /// name `field` and list the parameters.
    pub fn find_param(&self, name: &str, field: &str, kernel: &str) -> Result<KernelParam> {
        find_param(&self.params, name.trim(), field, kernel)
    }
}

fn find_param(
    params: &[KernelParam],
    name: &str,
    field: &str,
    kernel: &str,
) -> Result<KernelParam> {
    if let Some(p) = params.iter().find(|p| p.name == name) {
        return Ok(p.clone());
    }
    if let Ok(position) = name.parse::<usize>() {
        let name = params
            .iter()
            .find(|p| p.position == position)
            .map_or_else(|| format!("#{position}"), |p| p.name.clone());
        return Ok(KernelParam { position, name });
    }
    let known: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
    Err(Error::invalid(
        field,
        format!(
            "`{name}` names no parameter of kernel `{kernel}`; {}",
            if known.is_empty() {
                "its parameters are not known by name, give a position (0, 1, ...)".to_string()
            } else {
                format!("parameters: {}", known.join(", "))
            }
        ),
    ))
}

/// The kernel's parameters: the spec's arguments that are parameters, or the signature's.
pub fn kernel_params(spec: &TuneSpec, source: &str) -> Vec<KernelParam> {
    let from_spec: Vec<KernelParam> = spec
        .kernel
        .arguments
        .iter()
        .filter(|a| a.memory != ArgumentMemory::Symbol)
        .enumerate()
        .map(|(position, a)| KernelParam {
            position,
            name: a.name.clone(),
        })
        .collect();
    if !from_spec.is_empty() {
        return from_spec;
    }
    signature_params(source, &spec.kernel.name, spec.kernel.language)
        .into_iter()
        .enumerate()
        .map(|(position, name)| KernelParam { position, name })
        .collect()
}

/// The source without `//` and `/* */` comments (string literals are not special-cased;
/// kernels rarely hold `//` inside strings).
fn strip_comments(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(i) = rest.find('/') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("//") {
            rest = tail.find('\n').map_or("", |j| &tail[j..]);
        } else if tail.starts_with("/*") {
            rest = tail.find("*/").map_or("", |j| &tail[j + 2..]);
            out.push(' ');
        } else {
            out.push('/');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// A kernel argument `NAME=...` (or `NAME+OFFSET=...`) whose NAME is the `k`-th of a source
/// declaration's `params` ([`signature_params`]) as `k=...`, the position PTX knows it by;
/// anything else as it is.
pub fn by_position(text: &str, params: &[String]) -> String {
    let name_end = text.find(['=', '+']).unwrap_or(text.len());
    let name = text[..name_end].trim();
    match params.iter().position(|p| p == name) {
        Some(k) => format!("{k}{}", &text[name_end..]),
        None => text.to_string(),
    }
}

/// Parameter names of the kernel `name` in a CUDA or OpenCL source: the declaration
/// `__global__ ... void name(...)` (OpenCL: `__kernel`/`kernel`), the last identifier of each
/// comma-separated parameter. Empty when no such declaration is found.
pub fn signature_params(source: &str, name: &str, language: Language) -> Vec<String> {
    let text = strip_comments(source);
    let marker: &[&str] = match language {
        Language::Cuda => &["__global__"],
        Language::OpenCl => &["__kernel", "kernel"],
    };
    let bytes = text.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut from = 0;
    while let Some(i) = text[from..].find(name) {
        let at = from + i;
        from = at + name.len();
        let before_ok = at == 0 || !is_ident(bytes[at - 1]);
        let after = text[from..].trim_start();
        if !before_ok || !after.starts_with('(') {
            continue;
        }
        // The declaration head: back to the end of the previous statement or block.
        let head_start = text[..at].rfind([';', '}', '{']).map_or(0, |j| j + 1);
        let head = &text[head_start..at];
        if !marker.iter().any(|m| {
            head.split(|c: char| !c.is_alphanumeric() && c != '_')
                .any(|w| w == *m)
        }) {
            continue;
        }
        let open = from + (text[from..].len() - after.len());
        let mut depth = 0usize;
        let mut close = None;
        for (j, c) in text[open..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(open + j);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(close) = close else {
            return Vec::new();
        };
        let inner = &text[open + 1..close];
        if inner.trim().is_empty() || inner.trim() == "void" {
            return Vec::new();
        }
        return inner
            .split(',')
            .map(|p| {
                let p = p.split('=').next().unwrap_or(p);
                let p = p
                    .trim()
                    .trim_end_matches(|c: char| c == ']' || c.is_ascii_digit() || c == '[');
                let ident: String = p
                    .chars()
                    .rev()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                ident
            })
            .collect();
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::space::configuration;

    const SPEC: &str = r#"{
      "ConfigurationSpace": {"TuningParameters": [
          {"Name": "block_size_x", "Values": "[32, 64]"},
          {"Name": "tile_size", "Values": "[1, 3]"},
          {"Name": "fast", "Type": "bool", "Values": "[True]"}]},
      "KernelSpecification": {"Language": "CUDA", "KernelName": "pip", "KernelFile": "pip.cu",
          "GridDivX": ["block_size_x", "tile_size"], "ProblemSize": [1000]}}"#;

    const SOURCE: &str = r#"
        // a comment naming pip(int a) that must not count
        __device__ int helper(int q);
        template <typename T> __global__ void other(T* x) {}
        __global__ void
        pip(int* bitmap, /* the points */ float2* points,
            const int n) { }
    "#;

    /// A configuration's defines as `NAME=VALUE`, in order.
    fn define_list(l: &Launcher, c: &Configuration) -> Vec<String> {
        let plan = l.plan(c).unwrap();
        plan.defines
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect()
    }

    #[test]
    fn kernel_tuner_launch_rule_and_defines() {
        let spec = TuneSpec::parse(SPEC, "pip.json").unwrap();
        let o = Overrides {
            args: vec!["n=ProblemSize[0] * tile_size".into()],
            defines: vec!["VERTICES=600".into(), "tile_size=9".into()],
            ..Default::default()
        };
        // A source that includes a header keeps every define (the header may use any).
        let with_header = format!("#include \"common.h\"\n{SOURCE}");
        let l = Launcher::new(&spec, &o, &with_header).unwrap();
        assert_eq!(
            l.params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
            vec!["bitmap", "points", "n"]
        );
        // index 3 = (block_size_x=64, tile_size=3, fast=True)
        let c = configuration(&spec, 3);
        let p = l.plan(&c).unwrap();
        // ceil(1000 / (64 * 3)) = ceil(5.208) = 6; y and z: ceil(1 / 1) = 1.
        assert_eq!(p.grid, [6, 1, 1]);
        assert_eq!(p.block, [64, 1, 1]);
        assert_eq!(p.args, vec!["2=3000".to_string()]);
        let d: Vec<String> = p.defines.iter().map(|(n, v)| format!("{n}={v}")).collect();
        assert_eq!(
            d,
            vec![
                "kernel_tuner=1",
                "grid_size_x=6",
                "grid_size_y=1",
                "grid_size_z=1",
                "block_size_x=64",
                "block_size_y=1",
                "block_size_z=1",
                "tile_size=9", // the user's define replaces the parameter's
                "fast=1",
                "VERTICES=600",
            ]
        );
        // Without the header, Kernel Tuner's defines the source never mentions are left out;
        // the parameters and the caller's defines stay.
        let l = Launcher::new(&spec, &o, SOURCE).unwrap();
        let d = define_list(&l, &c);
        assert_eq!(
            d,
            vec!["block_size_x=64", "tile_size=9", "fast=1", "VERTICES=600"]
        );
    }

    #[test]
    fn kernel_tuner_defines_the_source_sets_to_the_same_value_are_left_out() {
        let spec = TuneSpec::parse(SPEC, "pip.json").unwrap();
        // block_size_y: a top-level default of 1, the value passed (left out). block_size_z:
        // the same default inside `#if`, which could skip it (kept). grid_size_y: a default of
        // 2 where 1 is passed (kept). grid_size_x: used (kept). kernel_tuner and grid_size_z:
        // never mentioned (left out).
        let source = format!(
            "#ifndef block_size_y\n    #define block_size_y 1\n#endif\n\
             #if USE_Z\n#ifndef block_size_z\n#define block_size_z 1\n#endif\n#endif\n\
             #ifndef grid_size_y\n#define grid_size_y 2\n#endif\n\
             __constant__ int g = grid_size_x;\n{SOURCE}"
        );
        let l = Launcher::new(&spec, &Overrides::default(), &source).unwrap();
        let c = configuration(&spec, 3);
        let d = define_list(&l, &c);
        assert_eq!(
            d,
            vec![
                "grid_size_x=6",
                "grid_size_y=1",
                "block_size_x=64",
                "block_size_z=1",
                "tile_size=3",
                "fast=1",
            ]
        );
        assert!(
            l.notes.iter().any(|n| n.ends_with(
                "kernel_tuner, grid_size_y (when 2, the source's own default), grid_size_z, block_size_y (when 1, the source's own default)"
            )),
            "{:?}",
            l.notes
        );
        // A caller's define of such a name is always passed.
        let o = Overrides {
            defines: vec!["kernel_tuner=1".into()],
            ..Default::default()
        };
        let l = Launcher::new(&spec, &o, &source).unwrap();
        let p = l.plan(&c).unwrap();
        assert!(p
            .defines
            .contains(&("kernel_tuner".to_string(), "1".to_string())));
    }

    #[test]
    fn names_that_match_nothing_are_errors() {
        let spec = TuneSpec::parse(SPEC, "pip.json").unwrap();
        let o = Overrides {
            mapped_host: vec!["pts".into()],
            ..Default::default()
        };
        let e = Launcher::new(&spec, &o, SOURCE).unwrap_err().to_string();
        assert!(
            e.contains("`pts` names no parameter") && e.contains("bitmap, points, n"),
            "{e}"
        );
        let o = Overrides {
            mapped_host: vec!["1".into(), "bitmap".into()],
            ..Default::default()
        };
        let l = Launcher::new(&spec, &o, SOURCE).unwrap();
        assert_eq!(
            l.mapped_host,
            vec![
                KernelParam {
                    position: 1,
                    name: "points".into()
                },
                KernelParam {
                    position: 0,
                    name: "bitmap".into()
                }
            ]
        );
        let o = Overrides {
            problem_size: Some(vec![0]),
            ..Default::default()
        };
        assert!(Launcher::new(&spec, &o, SOURCE).is_err());
    }

    #[test]
    fn opencl_signatures_are_read_too() {
        let src = "__kernel void vadd(__global const float* a, __global float *b, int n[]) {}";
        assert_eq!(
            signature_params(src, "vadd", Language::OpenCl),
            vec!["a", "b", "n"]
        );
        assert!(signature_params(src, "vsub", Language::OpenCl).is_empty());
        let params: Vec<String> = ["n", "a", "x"].iter().map(|p| p.to_string()).collect();
        assert_eq!(by_position("a=2.0", &params), "1=2.0");
        assert_eq!(by_position("x+8=1", &params), "2+8=1");
        assert_eq!(by_position("param_1=2.0", &params), "param_1=2.0");
        assert_eq!(by_position("3=7", &params), "3=7");
    }
}
