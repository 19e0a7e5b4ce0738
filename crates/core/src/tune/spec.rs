//! Search-space descriptions in the FAIR autotuning benchmark format (the JSON of the
//! autotuning community's shared benchmarks, "TuningSchema"): `ConfigurationSpace` with
//! `TuningParameters` (value lists written as Python expressions) and `Conditions` (Python
//! boolean expressions), and `KernelSpecification` (kernel file, name, language, compiler
//! options, `LocalSize`/`GlobalSize`, `GridDivX/Y/Z`, `ProblemSize`, `SharedMemory` and the
//! kernel `Arguments` with their fill types).
//!
//! Reading checks every expression against the names it may use, so a typo is reported with the
//! field, the column and what was expected before anything is compiled. Sections this tool does
//! not use (`General`, `Search`, `Budget`, unknown keys) are ignored.
//!
//! One extension of the format: an argument may say `"MappedHost": true` when the benchmark
//! passes host memory mapped into the device (zero-copy), so its traffic crosses the host link.
//!
//! What it does NOT do: enumerate the space (`space`), compute launches (`launch`), or compile.

use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use super::expr::{Expr, Value};
use crate::compile::is_identifier;
pub use crate::compile::Language;
use crate::emulate::{DataArg, DataSpec};
use crate::error::{Error, Result};

/// An expression with the text it came from (for error messages).
#[derive(Debug, Clone)]
pub struct Formula {
    pub text: String,
    pub expr: Expr,
}

/// One tunable parameter and its values, in the order the spec lists them.
#[derive(Debug, Clone)]
pub struct TuningParameter {
    pub name: String,
    /// `int`, `uint`, `float`, `bool` or `string` (the spec's `Type`).
    pub ty: String,
    pub values: Vec<Value>,
}

/// A restriction on the space: a configuration is valid when every condition is true.
#[derive(Debug, Clone)]
pub struct Condition {
    pub text: String,
    /// Compiled against the tuning-parameter names.
    pub expr: Expr,
}

/// Where an argument lives (`MemoryType`, with the benchmarks' `MemType: Constant` as a symbol).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum ArgumentMemory {
    /// A value passed by value.
    Scalar,
    /// A buffer passed by pointer.
    Vector,
    /// Local (shared) memory sized at launch.
    Local,
    /// A `__constant__` or global symbol, not a kernel parameter.
    Symbol,
}

/// One kernel argument of the spec.
#[derive(Debug, Clone)]
pub struct Argument {
    pub name: String,
    pub ty: String,
    pub memory: ArgumentMemory,
    /// `ReadOnly`, `WriteOnly` or `ReadWrite` when given.
    pub access: Option<String>,
    /// Elements, evaluated with `ProblemSize` and the tuning parameters bound to their value
    /// lists (as in `max(filter_width)`); `None` when the spec gives no size.
    pub size_elements: Option<i64>,
    /// The fill the benchmark uses, as a data hint, when it says what the buffer holds
    /// (`Constant` with a `FillValue`, `Random`, `BinaryRaw` with a `DataSource`).
    pub fill: Option<DataSpec>,
    /// Why a `FillType` the spec gives is not a hint (`Generator`, `Script`, ...).
    pub fill_unused: Option<String>,
    /// A scalar's value (`FillValue`).
    pub scalar: Option<f64>,
    pub mapped_host: bool,
}

/// The kernel part of a spec.
#[derive(Debug, Clone)]
pub struct KernelSpec {
    pub file: PathBuf,
    pub name: String,
    pub language: Language,
    pub compiler_options: Vec<String>,
    /// Block dimensions x, y, z (absent: Kernel Tuner's `block_size_x/y/z`, else 1).
    pub local_size: [Option<Formula>; 3],
    /// Grid dimensions; used only when there is neither `ProblemSize` nor a `GridDiv`.
    pub global_size: [Option<Formula>; 3],
    /// `CUDA` (the global size counts blocks) or `OpenCL` (it counts threads).
    pub global_size_counts_threads: bool,
    /// `GridDivX/Y/Z`: the divisors whose product divides the problem size.
    pub grid_div: [Option<Vec<Formula>>; 3],
    pub problem_size: Vec<i64>,
    /// Dynamic shared memory per block (`SharedMemory`), bytes.
    pub shared_memory_bytes: u64,
    pub arguments: Vec<Argument>,
}

/// A whole search-space description.
#[derive(Debug, Clone)]
pub struct TuneSpec {
    /// Where it was read from (errors name it).
    pub origin: String,
    pub name: String,
    pub params: Vec<TuningParameter>,
    pub conditions: Vec<Condition>,
    pub kernel: KernelSpec,
}

impl TuneSpec {
    /// The tuning-parameter names in spec order.
    pub fn names(&self) -> Vec<&str> {
        self.params.iter().map(|p| p.name.as_str()).collect()
    }

    /// Reads a spec file; the kernel file is relative to the spec's folder.
    pub fn load(path: &Path) -> Result<TuneSpec> {
        let text = crate::error::read_text_file(path, "a search-space description (JSON)")?;
        let mut spec = TuneSpec::parse(&text, &path.display().to_string())?;
        if spec.kernel.file.is_relative() {
            let dir = path.parent().unwrap_or_else(|| Path::new("."));
            spec.kernel.file = dir.join(&spec.kernel.file);
        }
        Ok(spec)
    }

    /// Parses a spec's text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<TuneSpec> {
        let root: Json = serde_json::from_str(text).map_err(|e| {
            Error::file(
                origin,
                format!(
                    "line {}: invalid JSON at column {}: {e}",
                    e.line(),
                    e.column()
                ),
            )
        })?;
        let r = Reader { origin };
        let space = r.object(&root, "ConfigurationSpace", "")?;
        let params = r.params(space)?;
        let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
        let conditions = r.conditions(space, &names)?;
        let kernel = r.kernel(&root, &params)?;
        let name = root
            .pointer("/General/BenchmarkName")
            .or_else(|| root.pointer("/KernelSpecification/BenchmarkName"))
            .and_then(Json::as_str)
            .unwrap_or(&kernel.name)
            .to_string();
        Ok(TuneSpec {
            origin: origin.to_string(),
            name,
            params,
            conditions,
            kernel,
        })
    }
}

/// Field access with errors naming the file and the field path.
struct Reader<'a> {
    origin: &'a str,
}

impl Reader<'_> {
    fn err(&self, field: &str, message: impl std::fmt::Display) -> Error {
        Error::file(self.origin, format!("{field}: {message}"))
    }

    fn object<'j>(&self, parent: &'j Json, key: &str, path: &str) -> Result<&'j Json> {
        let field = join(path, key);
        match parent.get(key) {
            Some(v @ Json::Object(_)) => Ok(v),
            Some(_) => Err(self.err(&field, "must be an object")),
            None => Err(self.err(&field, "is missing")),
        }
    }

    fn string(&self, parent: &Json, key: &str, path: &str) -> Result<String> {
        let field = join(path, key);
        match parent.get(key) {
            Some(Json::String(s)) => Ok(s.clone()),
            Some(Json::Number(n)) => Ok(n.to_string()),
            Some(_) => Err(self.err(&field, "must be a string")),
            None => Err(self.err(&field, "is missing")),
        }
    }

    fn formula(&self, text: &str, names: &[&str], field: &str) -> Result<Formula> {
        let expr =
            Expr::compile(text, names).map_err(|e| self.err(field, format!("in `{text}`, {e}")))?;
        Ok(Formula {
            text: text.to_string(),
            expr,
        })
    }

    fn params(&self, space: &Json) -> Result<Vec<TuningParameter>> {
        let path = "ConfigurationSpace.TuningParameters";
        let list = space
            .get("TuningParameters")
            .and_then(Json::as_array)
            .ok_or_else(|| self.err(path, "must be a list of parameters"))?;
        if list.is_empty() {
            return Err(self.err(path, "lists no parameter"));
        }
        let mut out: Vec<TuningParameter> = Vec::new();
        for (k, p) in list.iter().enumerate() {
            let at = format!("{path}[{k}]");
            let name = self.string(p, "Name", &at)?;
            if !is_identifier(&name) {
                return Err(self.err(
                    &format!("{at}.Name"),
                    format!("`{name}` is not a name a kernel define or an expression can use"),
                ));
            }
            if out.iter().any(|q| q.name == name) {
                return Err(self.err(&format!("{at}.Name"), format!("`{name}` appears twice")));
            }
            let ty = match p.get("Type") {
                Some(Json::String(t)) => t.clone(),
                None => "int".into(),
                Some(_) => return Err(self.err(&format!("{at}.Type"), "must be a string")),
            };
            let field = format!("{at}.Values");
            let values = match p.get("Values") {
                Some(Json::String(text)) => match Expr::eval_constant(text) {
                    Ok(Value::List(v)) => v,
                    Ok(other) => {
                        return Err(self.err(
                            &field,
                            format!("`{text}` is a {}, not a list of values", other.type_name()),
                        ))
                    }
                    Err(e) => return Err(self.err(&field, format!("in `{text}`, {e}"))),
                },
                Some(Json::Array(a)) => a
                    .iter()
                    .map(|v| {
                        json_value(v).ok_or_else(|| {
                            self.err(
                                &field,
                                "holds a value that is not a number, string or boolean",
                            )
                        })
                    })
                    .collect::<Result<_>>()?,
                Some(_) => return Err(self.err(&field, "must be a Python list expression")),
                None => return Err(self.err(&field, "is missing")),
            };
            if values.is_empty() {
                return Err(self.err(&field, "gives no value"));
            }
            for v in &values {
                check_type(&ty, v).map_err(|m| self.err(&field, m))?;
            }
            out.push(TuningParameter { name, ty, values });
        }
        Ok(out)
    }

    fn conditions(&self, space: &Json, names: &[&str]) -> Result<Vec<Condition>> {
        let path = "ConfigurationSpace.Conditions";
        let list = match space.get("Conditions") {
            None | Some(Json::Null) => return Ok(Vec::new()),
            Some(Json::Array(a)) => a,
            Some(_) => return Err(self.err(path, "must be a list")),
        };
        let mut out = Vec::new();
        for (k, c) in list.iter().enumerate() {
            let at = format!("{path}[{k}]");
            let text = match c {
                Json::String(s) => s.clone(),
                _ => self.string(c, "Expression", &at)?,
            };
            let f = self.formula(&text, names, &format!("{at}.Expression"))?;
            out.push(Condition { text, expr: f.expr });
        }
        Ok(out)
    }

    fn dims(&self, ks: &Json, key: &str, names: &[&str]) -> Result<[Option<Formula>; 3]> {
        let path = format!("KernelSpecification.{key}");
        let mut out: [Option<Formula>; 3] = [None, None, None];
        let Some(obj) = ks.get(key).filter(|v| !v.is_null()) else {
            return Ok(out);
        };
        if !obj.is_object() {
            return Err(self.err(&path, "must be an object with X, Y and Z"));
        }
        for (d, axis) in ["X", "Y", "Z"].iter().enumerate() {
            if obj.get(axis).is_some() {
                let text = self.string(obj, axis, &path)?;
                out[d] = Some(self.formula(&text, names, &format!("{path}.{axis}"))?);
            }
        }
        Ok(out)
    }

    fn kernel(&self, root: &Json, params: &[TuningParameter]) -> Result<KernelSpec> {
        let path = "KernelSpecification";
        let ks = self.object(root, "KernelSpecification", "")?;
        let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
        let language = match self
            .string(ks, "Language", path)?
            .to_ascii_lowercase()
            .as_str()
        {
            "cuda" => Language::Cuda,
            "opencl" => Language::OpenCl,
            other => {
                return Err(self.err(
                    "KernelSpecification.Language",
                    format!("`{other}` is not supported; CUDA and OpenCL are"),
                ))
            }
        };
        let compiler_options = match ks.get("CompilerOptions") {
            None | Some(Json::Null) => Vec::new(),
            Some(Json::Array(a)) => a
                .iter()
                .map(|o| {
                    o.as_str().map(str::to_string).ok_or_else(|| {
                        self.err(
                            "KernelSpecification.CompilerOptions",
                            "must be a list of strings",
                        )
                    })
                })
                .collect::<Result<_>>()?,
            Some(_) => {
                return Err(self.err(
                    "KernelSpecification.CompilerOptions",
                    "must be a list of strings",
                ))
            }
        };
        let mut grid_div: [Option<Vec<Formula>>; 3] = [None, None, None];
        for (d, key) in ["GridDivX", "GridDivY", "GridDivZ"].iter().enumerate() {
            let field = format!("{path}.{key}");
            grid_div[d] = match ks.get(*key) {
                None | Some(Json::Null) => None,
                Some(Json::Array(a)) => Some(
                    a.iter()
                        .enumerate()
                        .map(|(k, v)| {
                            let text = match v {
                                Json::String(s) => s.clone(),
                                Json::Number(n) => n.to_string(),
                                _ => return Err(self.err(&field, "must list names or expressions")),
                            };
                            self.formula(&text, &names, &format!("{field}[{k}]"))
                        })
                        .collect::<Result<_>>()?,
                ),
                Some(Json::String(s)) => Some(vec![self.formula(s, &names, &field)?]),
                Some(_) => return Err(self.err(&field, "must be a list of names or expressions")),
            };
        }
        let problem_size = match ks.get("ProblemSize") {
            None | Some(Json::Null) => Vec::new(),
            Some(v) => self.problem_size(v, "KernelSpecification.ProblemSize")?,
        };
        let shared_memory_bytes = match ks.get("SharedMemory") {
            None | Some(Json::Null) => 0,
            Some(v) => v.as_u64().ok_or_else(|| {
                self.err(
                    "KernelSpecification.SharedMemory",
                    "must be a whole number of bytes",
                )
            })?,
        };
        let global_size_counts_threads = matches!(
            ks.get("GlobalSizeType").and_then(Json::as_str),
            Some(t) if t.eq_ignore_ascii_case("opencl")
        );
        let arguments = self.arguments(ks, params, &problem_size)?;
        Ok(KernelSpec {
            file: PathBuf::from(self.string(ks, "KernelFile", path)?),
            name: self.string(ks, "KernelName", path)?,
            language,
            compiler_options,
            local_size: self.dims(ks, "LocalSize", &names)?,
            global_size: self.dims(ks, "GlobalSize", &names)?,
            global_size_counts_threads,
            grid_div,
            problem_size,
            shared_memory_bytes,
            arguments,
        })
    }

    fn problem_size(&self, v: &Json, field: &str) -> Result<Vec<i64>> {
        let one = |x: &Json| -> Result<i64> {
            let n = match x {
                Json::Number(n) => n.as_i64(),
                Json::String(s) => match Expr::eval_constant(s) {
                    Ok(v) => v.as_i64(),
                    Err(e) => return Err(self.err(field, format!("in `{s}`, {e}"))),
                },
                _ => None,
            };
            n.filter(|&n| n >= 1)
                .ok_or_else(|| self.err(field, "must hold whole numbers of at least 1"))
        };
        let out: Vec<i64> = match v {
            Json::Array(a) => a.iter().map(one).collect::<Result<_>>()?,
            other => vec![one(other)?],
        };
        if out.is_empty() || out.len() > 3 {
            return Err(self.err(field, "must hold one to three sizes"));
        }
        Ok(out)
    }

    fn arguments(
        &self,
        ks: &Json,
        params: &[TuningParameter],
        problem_size: &[i64],
    ) -> Result<Vec<Argument>> {
        let path = "KernelSpecification.Arguments";
        let list = match ks.get("Arguments") {
            None | Some(Json::Null) => return Ok(Vec::new()),
            Some(Json::Array(a)) => a,
            Some(_) => return Err(self.err(path, "must be a list")),
        };
        // Sizes see ProblemSize and each tuning parameter as the list of its values.
        let mut names: Vec<&str> = vec!["ProblemSize"];
        names.extend(params.iter().map(|p| p.name.as_str()));
        let mut env = vec![Value::List(
            problem_size.iter().map(|&n| Value::Int(n)).collect(),
        )];
        env.extend(params.iter().map(|p| Value::List(p.values.clone())));
        let mut out = Vec::new();
        for (k, a) in list.iter().enumerate() {
            let at = format!("{path}[{k}]");
            let name = match a.get("Name").and_then(Json::as_str) {
                Some(n) => n.to_string(),
                None => format!("arg{k}"),
            };
            let ty = a
                .get("Type")
                .and_then(Json::as_str)
                .unwrap_or("custom")
                .to_string();
            let mem_type = a.get("MemType").and_then(Json::as_str);
            let memory = match (a.get("MemoryType").and_then(Json::as_str), mem_type) {
                (_, Some(m)) if m.eq_ignore_ascii_case("constant") => ArgumentMemory::Symbol,
                (Some("Scalar"), _) => ArgumentMemory::Scalar,
                (Some("Vector") | None, _) => ArgumentMemory::Vector,
                (Some("Local"), _) => ArgumentMemory::Local,
                (Some("Symbol"), _) => ArgumentMemory::Symbol,
                (Some(other), _) => {
                    return Err(self.err(
                        &format!("{at}.MemoryType"),
                        format!("`{other}` is not one of Scalar, Vector, Local, Symbol"),
                    ))
                }
            };
            let size_elements = match a.get("Size") {
                None | Some(Json::Null) => None,
                Some(Json::Number(n)) => n.as_i64(),
                Some(Json::String(text)) => {
                    let field = format!("{at}.Size");
                    let f = self.formula(text, &names, &field)?;
                    let v = f
                        .expr
                        .eval(&env)
                        .map_err(|e| self.err(&field, format!("in `{text}`, {e}")))?;
                    Some(v.as_i64().ok_or_else(|| {
                        self.err(&field, format!("`{text}` is not a whole number"))
                    })?)
                }
                Some(_) => {
                    return Err(self.err(&format!("{at}.Size"), "must be a number or an expression"))
                }
            };
            let fill_value = a.get("FillValue").and_then(Json::as_f64);
            let seed = a.get("RandomSeed").and_then(Json::as_u64);
            let fill_type = a.get("FillType").and_then(Json::as_str);
            let fill = match fill_type {
                // `Constant` with `FillValue` 0 is a zero-filled buffer: const:0.
                Some("Constant") => fill_value.map(DataSpec::Const),
                // The benchmarks' "Random" draws uniformly below FillValue (1 when absent).
                Some("Random") => Some(DataSpec::Uniform {
                    lo: 0.0,
                    hi: fill_value.unwrap_or(1.0),
                    seed,
                }),
                Some("BinaryRaw") => a
                    .get("DataSource")
                    .and_then(Json::as_str)
                    .map(|p| DataSpec::File(PathBuf::from(p))),
                _ => None,
            };
            let fill_unused = match (fill_type, &fill) {
                // Local memory is no buffer the host fills: its fill describes nothing the
                // kernel reads. A `__constant__` symbol's fill is what the host copies to it,
                // a hint on the module variable of that name.
                (Some(t), _) if memory == ArgumentMemory::Local => Some(format!(
                    "FillType {t} of local memory (not a buffer the host fills)"
                )),
                (Some(t), None) if memory != ArgumentMemory::Scalar => Some(match t {
                    "Constant" => "FillType Constant without a FillValue".to_string(),
                    "BinaryRaw" => "FillType BinaryRaw without a DataSource".to_string(),
                    other => format!("FillType {other} (its values are not known before it runs)"),
                }),
                _ => None,
            };
            let mapped_host = match a.get("MappedHost") {
                None | Some(Json::Null) => false,
                Some(Json::Bool(b)) => *b,
                Some(_) => {
                    return Err(self.err(&format!("{at}.MappedHost"), "must be true or false"))
                }
            };
            out.push(Argument {
                name,
                ty,
                memory,
                access: a
                    .get("AccessType")
                    .and_then(Json::as_str)
                    .map(str::to_string),
                size_elements,
                fill,
                fill_unused,
                scalar: if memory == ArgumentMemory::Scalar {
                    fill_value
                } else {
                    None
                },
                mapped_host,
            });
        }
        Ok(out)
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn json_value(v: &Json) -> Option<Value> {
    match v {
        Json::Bool(b) => Some(Value::Bool(*b)),
        Json::Number(n) => n
            .as_i64()
            .map(Value::Int)
            .or_else(|| n.as_f64().map(Value::Float)),
        Json::String(s) => Some(Value::Str(s.clone())),
        _ => None,
    }
}

fn check_type(ty: &str, v: &Value) -> std::result::Result<(), String> {
    let ok = match ty {
        "int" => matches!(v, Value::Int(_) | Value::Bool(_)),
        "uint" => v.as_i64().is_some_and(|i| i >= 0),
        "float" => matches!(v, Value::Int(_) | Value::Float(_)),
        "bool" => matches!(v, Value::Bool(_)) || matches!(v, Value::Int(0 | 1)),
        "string" => matches!(v, Value::Str(_)),
        other => {
            return Err(format!(
                "type `{other}` is not one of int, uint, float, bool, string"
            ))
        }
    };
    if ok {
        Ok(())
    } else {
        Err(format!("the value {v} is not of type {ty}"))
    }
}

/// The data hints the fills of the spec's buffer (`Vector`) and `__constant__` symbol
/// arguments give (an argument without a fill gives none; a symbol's hint names the module
/// variable). A `file:` path is as the spec wrote it, relative to the spec's folder.
pub fn spec_data_hints(spec: &TuneSpec) -> Vec<DataArg> {
    spec.kernel
        .arguments
        .iter()
        .filter(|a| matches!(a.memory, ArgumentMemory::Vector | ArgumentMemory::Symbol))
        .filter_map(|a| {
            a.fill.clone().map(|fill| DataArg {
                param: a.name.clone(),
                spec: fill,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // A spec written for this test in the FAIR layout: a vector addition with a tile factor.
    const SPEC: &str = r#"{
      "General": {"BenchmarkName": "vadd"},
      "ConfigurationSpace": {
        "TuningParameters": [
          {"Name": "block_size_x", "Type": "int", "Values": "[32 * i for i in range(1, 5)]"},
          {"Name": "tile", "Type": "int", "Values": "[1, 2, 4]"}
        ],
        "Conditions": [{"Expression": "block_size_x * tile <= 256", "Parameters": ["block_size_x", "tile"]}]
      },
      "KernelSpecification": {
        "Language": "CUDA", "KernelName": "vadd", "KernelFile": "vadd.cu",
        "CompilerOptions": ["-std=c++11"],
        "LocalSize": {"X": "block_size_x", "Y": "1", "Z": "1"},
        "GlobalSize": {"X": "1", "Y": "1", "Z": "1"},
        "GridDivX": ["block_size_x", "tile"],
        "ProblemSize": [1000],
        "Arguments": [
          {"Name": "c", "Type": "float", "MemoryType": "Vector", "FillType": "Constant", "FillValue": 0.0, "Size": "ProblemSize[0]"},
          {"Name": "a", "Type": "float", "MemoryType": "Vector", "FillType": "Random", "FillValue": 2.0, "Size": "ProblemSize[0] * max(tile)", "MappedHost": true},
          {"Name": "n", "Type": "int32", "MemoryType": "Scalar", "FillValue": 1000}
        ]
      }
    }"#;

    #[test]
    fn a_spec_is_read_with_its_expressions_evaluated() {
        let s = TuneSpec::parse(SPEC, "vadd.json").unwrap();
        assert_eq!(s.name, "vadd");
        assert_eq!(s.names(), vec!["block_size_x", "tile"]);
        assert_eq!(
            s.params[0].values,
            vec![
                Value::Int(32),
                Value::Int(64),
                Value::Int(96),
                Value::Int(128)
            ]
        );
        assert_eq!(s.conditions.len(), 1);
        let k = &s.kernel;
        assert_eq!(k.language, Language::Cuda);
        assert_eq!(k.problem_size, vec![1000]);
        assert_eq!(k.grid_div[0].as_ref().map(Vec::len), Some(2));
        assert!(k.grid_div[1].is_none());
        assert_eq!(k.arguments[0].size_elements, Some(1000));
        // max(tile) binds `tile` to its value list: 1000 * 4.
        assert_eq!(k.arguments[1].size_elements, Some(4000));
        assert!(k.arguments[1].mapped_host);
        assert_eq!(k.arguments[2].memory, ArgumentMemory::Scalar);
        assert_eq!(k.arguments[2].scalar, Some(1000.0));
        let hints = spec_data_hints(&s);
        assert_eq!(hints.len(), 2);
        assert_eq!(hints[0].spec, DataSpec::Const(0.0));
        assert_eq!(
            hints[1].spec,
            DataSpec::Uniform {
                lo: 0.0,
                hi: 2.0,
                seed: None
            }
        );
    }

    #[test]
    fn fills_that_say_nothing_certain_give_no_hint_and_say_why() {
        let text = SPEC.replace(
            r#""FillType": "Constant", "FillValue": 0.0"#,
            r#""FillType": "Generator""#,
        );
        assert_ne!(text, SPEC);
        let s = TuneSpec::parse(&text, "vadd.json").unwrap();
        let c = &s.kernel.arguments[0];
        assert_eq!(c.fill, None);
        assert!(
            c.fill_unused
                .as_deref()
                .is_some_and(|w| w.contains("Generator")),
            "{:?}",
            c.fill_unused
        );
        // Only the Random fill of `a` is left.
        let hints = spec_data_hints(&s);
        assert_eq!(hints.len(), 1);
        assert_eq!(hints[0].to_string(), "a=uniform:0:2");
        // A `__constant__` symbol's fill is what the host copies to it: a hint on the module
        // variable of that name.
        let text = text.replace(
            r#""Name": "a", "Type": "float", "MemoryType": "Vector","#,
            r#""Name": "a", "Type": "float", "MemoryType": "Vector", "MemType": "Constant","#,
        );
        let s = TuneSpec::parse(&text, "vadd.json").unwrap();
        let hints = spec_data_hints(&s);
        assert_eq!(hints.len(), 1);
        assert_eq!(hints[0].to_string(), "a=uniform:0:2");
        assert_eq!(s.kernel.arguments[1].memory, ArgumentMemory::Symbol);
        assert!(s.kernel.arguments[1].fill_unused.is_none());
    }

    #[test]
    fn errors_name_the_field_and_the_column() {
        let bad = SPEC.replace("range(1, 5)", "rnge(1, 5)");
        let e = TuneSpec::parse(&bad, "vadd.json").unwrap_err().to_string();
        assert!(
            e.contains("vadd.json")
                && e.contains("ConfigurationSpace.TuningParameters[0].Values")
                && e.contains("column 18")
                && e.contains("unknown function `rnge`"),
            "{e}"
        );
        let bad = SPEC.replace("block_size_x * tile <= 256", "block_size_x * tiles <= 256");
        let e = TuneSpec::parse(&bad, "vadd.json").unwrap_err().to_string();
        assert!(
            e.contains("Conditions[0].Expression") && e.contains("unknown name `tiles`"),
            "{e}"
        );
        let bad = SPEC.replace(
            "\"GridDivX\": [\"block_size_x\", \"tile\"]",
            "\"GridDivX\": [\"block_size_x\", \"tle\"]",
        );
        let e = TuneSpec::parse(&bad, "vadd.json").unwrap_err().to_string();
        assert!(e.contains("KernelSpecification.GridDivX[1]"), "{e}");
        let bad = SPEC.replace("\"[1, 2, 4]\"", "\"[1, 2.5]\"");
        let e = TuneSpec::parse(&bad, "vadd.json").unwrap_err().to_string();
        assert!(
            e.contains("TuningParameters[1].Values") && e.contains("2.5"),
            "{e}"
        );
        let bad = SPEC.replace("\"Language\": \"CUDA\"", "\"Language\": \"Vulkan\"");
        let e = TuneSpec::parse(&bad, "vadd.json").unwrap_err().to_string();
        assert!(e.contains("Language") && e.contains("vulkan"), "{e}");
        let e = TuneSpec::parse("{", "x.json").unwrap_err().to_string();
        assert!(e.contains("x.json") && e.contains("invalid JSON"), "{e}");
        let e = TuneSpec::parse("{}", "x.json").unwrap_err().to_string();
        assert!(e.contains("ConfigurationSpace: is missing"), "{e}");
    }
}
