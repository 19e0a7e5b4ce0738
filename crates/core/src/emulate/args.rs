//! Kernel arguments: which parameter an argument names (PTX name, the name without the kernel
//! prefix, or the position), and its value as the parameter's bits. Pointer parameters without a
//! value get a synthetic allocation of their own. Nothing here runs the kernel.

use serde::Serialize;

use super::decode::{self, GLOBAL_STRIDE_SHIFT};
use crate::error::{Error, Result};
use kerneltime_ptx::ast::{Function, Module};
use kerneltime_ptx::diag::{Diagnostics, Severity};

/// The entry a kernel name means in a module: the entry of that name, else the one C++ entry
/// mangled from it (`cn_pnpoly` -> `_Z9cn_pnpolyPiP6float2i`: a source name as an autotuner or
/// a suite gives it). The error lists the kernels, or the overloads to choose from.
pub fn resolve_entry_name(m: &Module, name: &str) -> std::result::Result<String, String> {
    let entries: Vec<&str> = m.entries().map(|f| f.name.as_str()).collect();
    if entries.contains(&name) {
        return Ok(name.to_string());
    }
    let mangled = format!("_Z{}{name}", name.len());
    let found: Vec<&&str> = entries.iter().filter(|e| e.starts_with(&mangled)).collect();
    match found.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err(format!(
            "no kernel `{name}` in the PTX; its kernels: {}",
            if entries.is_empty() {
                "none".to_string()
            } else {
                entries.join(", ")
            }
        )),
        many => Err(format!(
            "kernel `{name}` is overloaded in the PTX ({}); name one",
            many.iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Finds the kernel `entry` in a module (an error lists the kernels).
pub fn find_entry<'m>(m: &'m Module, entry: &str) -> Result<&'m Function> {
    m.entries().find(|f| f.name == entry).ok_or_else(|| {
        let names: Vec<&str> = m.entries().map(|f| f.name.as_str()).collect();
        Error::invalid(
            "entry",
            format!(
                "no kernel `{entry}` in the PTX file; kernels: {}",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ),
        )
    })
}

/// The first parse error inside the kernel `entry` (from its line up to the next function), as
/// a sentence naming the line: the emulator cannot run a kernel it did not fully read, while
/// problems elsewhere in the module do not matter.
pub fn entry_diagnostic(m: &Module, diags: &Diagnostics, entry: &str) -> Option<String> {
    let lines = entry_lines(m, entry)?;
    diags
        .items
        .iter()
        .find(|d| d.severity == Severity::Error && lines.contains(&d.line))
        .map(|d| format!("kernel `{entry}` has PTX the emulator cannot read: {d}"))
}

/// The lines of the kernel `entry` with a body: from its first line up to the next function's.
pub fn entry_lines(m: &Module, entry: &str) -> Option<std::ops::Range<u32>> {
    let f = m.functions.iter().find(|f| f.name == entry && f.has_body)?;
    let next = m
        .functions
        .iter()
        .map(|g| g.line)
        .filter(|&l| l > f.line)
        .min()
        .unwrap_or(u32::MAX);
    Some(f.line..next)
}

/// A kernel parameter's value as used.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParamValue {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: String,
    /// `argument`, `pointer` (synthetic base) or `unknown`.
    pub kind: String,
    /// The value or base address, as text.
    pub value: String,
}

/// A kernel argument's value as given: a whole number (any sign, up to 64 bits) or a real number.
/// It becomes the parameter's bits by the parameter's PTX type when the launch is resolved.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(untagged)]
pub enum ArgValue {
    Int(i128),
    Float(f64),
}

impl ArgValue {
    /// What equality and hashing compare: the variant and the exact bits.
    fn key(&self) -> (bool, u128) {
        match *self {
            ArgValue::Int(i) => (false, i as u128),
            ArgValue::Float(v) => (true, u128::from(v.to_bits())),
        }
    }
}

impl PartialEq for ArgValue {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for ArgValue {}

impl std::hash::Hash for ArgValue {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

impl ArgValue {
    /// Reads `1048576`, `-3`, `0x7f` or `2.5`.
    pub fn parse(text: &str) -> Option<ArgValue> {
        let t = text.trim();
        let (neg, body) = match t.strip_prefix('-') {
            Some(b) => (true, b),
            None => (false, t),
        };
        let int = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            Some(h) => u64::from_str_radix(h, 16).ok(),
            None => body.parse::<u64>().ok(),
        };
        match int {
            Some(m) => Some(ArgValue::Int(if neg {
                -i128::from(m)
            } else {
                i128::from(m)
            })),
            None => t
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .map(ArgValue::Float),
        }
    }

    /// The parameter's bits for a PTX type (`u32`, `s64`, `f32`, ...): integers wrap to the
    /// type's width as C does; a real number only fits a floating-point parameter.
    pub(crate) fn bits_for(self, ty: &str) -> Option<u64> {
        if ty.starts_with('f') {
            let v = match self {
                ArgValue::Int(i) => i as f64,
                ArgValue::Float(v) => v,
            };
            return Some(if ty == "f32" {
                u64::from((v as f32).to_bits())
            } else {
                v.to_bits()
            });
        }
        let ArgValue::Int(i) = self else {
            return None;
        };
        if i > i128::from(u64::MAX) || i < i128::from(i64::MIN) {
            return None;
        }
        let v = i as u64;
        let bits = decode::Ty::parse(ty).map_or(64, |t| t.bits);
        Some(if bits >= 64 {
            v
        } else {
            v & ((1u64 << bits) - 1)
        })
    }
}

impl std::fmt::Display for ArgValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArgValue::Int(i) => write!(f, "{i}"),
            ArgValue::Float(v) => write!(f, "{v}"),
        }
    }
}

/// One kernel argument: the parameter it is for (its PTX name, the name without the kernel prefix
/// such as `param_3`, or its position), and its value; or, for a by-value aggregate parameter
/// (`.param .align 8 .b8 p[16]`, a struct passed by value), the value of the field at byte
/// `offset`, read at the type of the instruction that loads it (`ld.param.u32 %r, [p+4]`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct KernelArg {
    pub param: String,
    pub value: ArgValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
}

impl KernelArg {
    pub fn new(param: impl Into<String>, value: ArgValue) -> Self {
        Self {
            param: param.into(),
            value,
            offset: None,
        }
    }

    /// A field of a by-value aggregate parameter: `value` at byte `offset`.
    pub fn field(param: impl Into<String>, offset: u64, value: ArgValue) -> Self {
        Self {
            param: param.into(),
            value,
            offset: Some(offset),
        }
    }

    /// Reads `NAME=VALUE`, or `NAME+OFFSET=VALUE` for the field at byte OFFSET of a by-value
    /// aggregate parameter (the text form of the command line and of kernel files).
    pub fn parse(text: &str) -> Result<KernelArg> {
        let (name, value) = text
            .split_once('=')
            .ok_or_else(|| Error::invalid("args", format!("expected NAME=VALUE, got `{text}`")))?;
        let v = ArgValue::parse(value).ok_or_else(|| {
            Error::invalid(
                "args",
                format!("`{text}`: `{}` is not a number", value.trim()),
            )
        })?;
        match name.rsplit_once('+') {
            Some((param, off)) => {
                let off = off.trim();
                let offset = match off.strip_prefix("0x").or_else(|| off.strip_prefix("0X")) {
                    Some(h) => u64::from_str_radix(h, 16).ok(),
                    None => off.parse::<u64>().ok(),
                }
                .ok_or_else(|| {
                    Error::invalid(
                        "args",
                        format!("`{text}`: `{off}` is not a byte offset (NAME+OFFSET=VALUE)"),
                    )
                })?;
                Ok(KernelArg::field(param.trim(), offset, v))
            }
            None => Ok(KernelArg::new(name.trim(), v)),
        }
    }

    /// Reads every `NAME=VALUE` of a list.
    pub fn parse_all<S: AsRef<str>>(texts: &[S]) -> Result<Vec<KernelArg>> {
        texts.iter().map(|t| KernelArg::parse(t.as_ref())).collect()
    }
}

/// The position of the parameter `name` names (the PTX name, the name without the kernel prefix,
/// or the position); the error names `input`.
pub fn param_index(f: &Function, name: &str, input: &str) -> Result<usize> {
    let name = name.trim();
    let prefix = format!("{}_", f.name);
    f.params
        .iter()
        .position(|p| p.name == name || p.name.strip_prefix(&prefix) == Some(name))
        .or_else(|| name.parse::<usize>().ok().filter(|&k| k < f.params.len()))
        .ok_or_else(|| {
            let names: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).collect();
            Error::invalid(
                input,
                format!(
                    "`{name}` names no parameter of kernel `{}`; parameters (by name or position 0..{}): {}",
                    f.name,
                    f.params.len(),
                    names.join(", ")
                ),
            )
        })
}

/// Kernel arguments resolved against a kernel's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedArgs {
    /// Each scalar parameter's bits (None for an aggregate or an unknown value).
    pub values: Vec<Option<u64>>,
    /// Each by-value aggregate parameter's fields given: (byte offset, value), by offset.
    pub fields: Vec<Vec<(u64, ArgValue)>>,
    /// What each parameter was given, for reports.
    pub report: Vec<ParamValue>,
}

/// Resolves kernel arguments against a kernel's parameters. A name may be the PTX name
/// (`k_param_3`), the name without the kernel prefix (`param_3`), or the position (`3`); a
/// by-value aggregate takes fields by byte offset (`p+4=7`) and is unknown where none is given.
pub fn resolve_args(f: &Function, args: &[KernelArg], address_bits: u32) -> Result<ResolvedArgs> {
    let mut given: Vec<Option<ArgValue>> = vec![None; f.params.len()];
    let mut fields: Vec<Vec<(u64, ArgValue)>> = vec![Vec::new(); f.params.len()];
    for a in args {
        let name = a.param.trim();
        let k = param_index(f, name, "args")?;
        let p = &f.params[k];
        match (a.offset, p.array) {
            (Some(off), Some(n)) => {
                if n > 0 && off >= n {
                    return Err(Error::invalid(
                        "args",
                        format!(
                            "`{name}+{off}`: parameter `{}` is a {n}-byte aggregate; byte offset {off} is outside it",
                            p.name
                        ),
                    ));
                }
                fields[k].retain(|(o, _)| *o != off);
                fields[k].push((off, a.value));
            }
            (Some(off), None) => {
                return Err(Error::invalid(
                    "args",
                    format!(
                        "`{name}+{off}`: parameter `{}` is a .{} scalar; byte offsets (NAME+OFFSET=VALUE) are for by-value aggregate (.b8 array) parameters",
                        p.name, p.ty
                    ),
                ))
            }
            (None, _) => given[k] = Some(a.value),
        }
    }
    for v in fields.iter_mut() {
        v.sort_by_key(|(o, _)| *o);
    }
    let mut values = Vec::new();
    let mut report = Vec::new();
    for (k, p) in f.params.iter().enumerate() {
        let is_ptr_type = p.ptr_space.is_some()
            || (address_bits == 64 && matches!(p.ty.as_str(), "u64" | "b64" | "s64"))
            || (address_bits == 32 && p.ptr_space.is_some());
        let (v, kind, text) = match (given[k], p.array) {
            (Some(value), None) => {
                let v = value.bits_for(&p.ty).ok_or_else(|| {
                    Error::invalid(
                        "args",
                        format!(
                            "`{}={value}`: `{value}` is not a number for a .{} parameter",
                            p.name, p.ty
                        ),
                    )
                })?;
                (Some(v), "argument", value.to_string())
            }
            (Some(_), Some(_)) => {
                return Err(Error::invalid(
                    "args",
                    format!(
                        "parameter `{}` is a by-value aggregate (.b8 array); give its fields by byte offset, e.g. {}+0=VALUE",
                        p.name, p.name
                    ),
                ))
            }
            (None, Some(n)) if fields[k].is_empty() => {
                (None, "unknown", format!("{n}-byte aggregate, contents unknown"))
            }
            (None, Some(n)) => {
                let list: Vec<String> =
                    fields[k].iter().map(|(o, v)| format!("+{o}={v}")).collect();
                (
                    None,
                    "aggregate",
                    format!("{n}-byte aggregate, fields {} (the rest unknown)", list.join(", ")),
                )
            }
            (None, None) if is_ptr_type => {
                let base = (k as u64 + 1) << GLOBAL_STRIDE_SHIFT;
                (Some(base), "pointer", format!("{base:#x}"))
            }
            (None, None) => {
                return Err(Error::missing(
                    "args",
                    format!(
                        "kernel parameter `{}` (.{}, position {k}) has no value; give `args` {}=VALUE or `args` {k}=VALUE",
                        p.name, p.ty, p.name
                    ),
                ))
            }
        };
        values.push(v);
        report.push(ParamValue {
            name: p.name.clone(),
            ty: p.ty.clone(),
            kind: kind.into(),
            value: text,
        });
    }
    Ok(ResolvedArgs {
        values,
        fields,
        report,
    })
}
