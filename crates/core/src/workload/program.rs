//! Kernel programs (puchala2022): an ordered list of calc/load/store operations with durations in
//! cycles, and repeat blocks for loops.
//!
//! This is plain data shared by the program-file reader, the PTX frontend (which derives programs
//! from compiled code) and the puchala model. Reading files and evaluating repeat counts live
//! beside it; simulation does not.

use serde::{Deserialize, Serialize};

/// How often a repeat block runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RepeatCount {
    /// A fixed trip count.
    Fixed(u64),
    /// A kernel parameter name (`K`) or an expression in parameter names (`(n - 1) / 2`),
    /// given a value with `--param`.
    Param(String),
}

/// One operation of a kernel program.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Computation that occupies the core package for this many cycles.
    Calc(f64),
    /// A global load that takes this many cycles from issue to completion.
    Load(f64),
    /// A global store that takes this many cycles from issue to completion.
    Store(f64),
    /// A loop body repeated `count` times.
    Repeat { count: RepeatCount, ops: Vec<Op> },
}

/// A kernel program: what one warp executes, in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Program {
    pub ops: Vec<Op>,
}

use std::path::Path;

use crate::error::{Error, Result};
use crate::workload::params::{whole, ParamValues};

/// Most operations a program may have once its repeat blocks are expanded.
pub const MAX_EXPANDED_OPS: usize = 1 << 23;

/// The kind of a single (expanded) operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    Calc,
    Load,
    Store,
}

impl OpKind {
    /// The kind's name in program files.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Calc => "calc",
            OpKind::Load => "load",
            OpKind::Store => "store",
        }
    }
}

/// One operation of an expanded program (no repeat blocks left).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Instr {
    pub kind: OpKind,
    pub cycles: f64,
}

impl RepeatCount {
    /// The count's value for these parameters: a fixed number, or the expression evaluated
    /// with whole-number arithmetic (`/` truncates as in C). `what` names the count in errors.
    pub fn evaluate(&self, params: &ParamValues, what: &str) -> Result<u64> {
        self.evaluate_lazy(params, &|| what.to_string())
    }

    /// As [`RepeatCount::evaluate`], building the name for errors only when one occurs.
    fn evaluate_lazy(&self, params: &ParamValues, what: &dyn Fn() -> String) -> Result<u64> {
        match self {
            RepeatCount::Fixed(n) => Ok(*n),
            RepeatCount::Param(text) => {
                let expr = Expr::parse(text).map_err(|m| Error::invalid(what(), m))?;
                let v = expr.eval(params, what)?;
                u64::try_from(v).map_err(|_| {
                    Error::invalid(
                        what(),
                        format!("`{text}` evaluates to {v}, a negative count"),
                    )
                })
            }
        }
    }

    /// Checks the syntax of an expression without evaluating it.
    pub fn check_syntax(&self) -> std::result::Result<(), String> {
        match self {
            RepeatCount::Fixed(_) => Ok(()),
            RepeatCount::Param(text) => Expr::parse(text).map(|_| ()),
        }
    }

    /// The parameter names the count refers to.
    pub fn parameter_names(&self) -> Vec<String> {
        match self {
            RepeatCount::Fixed(_) => Vec::new(),
            RepeatCount::Param(text) => Expr::parse(text)
                .map(|e| {
                    let mut names = Vec::new();
                    e.names(&mut names);
                    names
                })
                .unwrap_or_default(),
        }
    }
}

impl Program {
    /// Expands every repeat block with these parameter values, checking every duration.
    pub fn expand(&self, params: &ParamValues) -> Result<Vec<Instr>> {
        let mut out = Vec::new();
        expand_into(&self.ops, params, "ops", &mut out)?;
        Ok(out)
    }

    /// Every parameter name used by a repeat count, without duplicates, in order of use.
    pub fn parameter_names(&self) -> Vec<String> {
        fn walk(ops: &[Op], out: &mut Vec<String>) {
            for op in ops {
                if let Op::Repeat { count, ops } = op {
                    for n in count.parameter_names() {
                        if !out.contains(&n) {
                            out.push(n);
                        }
                    }
                    walk(ops, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.ops, &mut out);
        out
    }
}

fn expand_into(ops: &[Op], params: &ParamValues, path: &str, out: &mut Vec<Instr>) -> Result<()> {
    for (i, op) in ops.iter().enumerate() {
        let (kind, cycles) = match op {
            Op::Calc(c) => (OpKind::Calc, *c),
            Op::Load(c) => (OpKind::Load, *c),
            Op::Store(c) => (OpKind::Store, *c),
            Op::Repeat { count, ops: body } => {
                let here = || format!("{path}[{i}]");
                let n = count.evaluate_lazy(params, &|| format!("{}.repeat", here()))?;
                let start = out.len();
                if n > 0 {
                    expand_into(body, params, &format!("{}.ops", here()), out)?;
                }
                let body_len = out.len() - start;
                let total = (n as u128) * (body_len as u128) + start as u128;
                if total > MAX_EXPANDED_OPS as u128 {
                    return Err(Error::invalid(
                        format!("{}.repeat", here()),
                        format!(
                            "repeating {body_len} operations {n} times exceeds the limit of {MAX_EXPANDED_OPS} operations"
                        ),
                    ));
                }
                for _ in 1..n {
                    out.extend_from_within(start..start + body_len);
                }
                continue;
            }
        };
        if !(cycles.is_finite() && cycles >= 0.0) {
            crate::error::non_negative(&format!("{path}[{i}] ({} cycles)", kind.name()), cycles)?;
        }
        if out.len() >= MAX_EXPANDED_OPS {
            return Err(Error::invalid(
                path,
                format!("more than {MAX_EXPANDED_OPS} operations"),
            ));
        }
        out.push(Instr { kind, cycles });
    }
    Ok(())
}

/// How a program file says to launch its kernel (optional `[launch]` table).
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchSpec {
    /// Total threads per launch (an integer or an expression such as `"n/2"`).
    pub threads: Option<RepeatCount>,
    /// Number of launches (default 1).
    pub launches: RepeatCount,
}

impl Default for LaunchSpec {
    fn default() -> Self {
        Self {
            threads: None,
            launches: RepeatCount::Fixed(1),
        }
    }
}

/// A program file: the program, an optional name and an optional launch description.
///
/// ```toml
/// name = "dwt-matrix"
/// ops = [["calc", 33], { repeat = "K", ops = [["load", 120], ["load", 160], ["calc", 17]] }, ["store", 100]]
/// [launch]
/// threads = "N"
/// launches = 1
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProgramFile {
    pub name: Option<String>,
    pub program: Program,
    pub launch: LaunchSpec,
}

impl ProgramFile {
    /// Reads a program file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = crate::error::read_text_file(path, "a program file")?;
        Self::from_toml(&text, &path.display().to_string())
    }

    /// Parses a program file's text; `origin` names it in errors, with the line and the
    /// position of the offending operation (`ops[1].ops[0]`).
    pub fn from_toml(text: &str, origin: &str) -> Result<Self> {
        let table: toml::Spanned<toml::Table> = toml::from_str(text).map_err(|e| {
            Error::file(
                origin,
                e.message().to_string() + &crate::device::toml_position(text, e.span()),
            )
        })?;
        let fail = |path: &str, message: String| Error::file(origin, format!("{path}: {message}"));
        let mut file = ProgramFile::default();
        let table = table.into_inner();
        for key in table.keys() {
            if !matches!(key.as_str(), "name" | "ops" | "launch") {
                return Err(fail(
                    key,
                    "unknown key; a program file has `ops`, and optionally `name` and `[launch]`"
                        .into(),
                ));
            }
        }
        if let Some(v) = table.get("name") {
            file.name = Some(
                v.as_str()
                    .ok_or_else(|| fail("name", "must be a string".into()))?
                    .to_string(),
            );
        }
        // Line numbers of the top-level operations, found by re-reading `ops` with spans.
        let lines = op_lines(text);
        let ops = table.get("ops").ok_or_else(|| {
            fail(
                "ops",
                "missing; list the operations, e.g. ops = [[\"calc\", 10]]".into(),
            )
        })?;
        file.program.ops =
            read_ops(ops, "ops", &|i| lines.get(i).copied()).map_err(|(path, m)| fail(&path, m))?;
        if let Some(launch) = table.get("launch") {
            let t = launch.as_table().ok_or_else(|| {
                fail(
                    "launch",
                    "must be a table with `threads` and `launches`".into(),
                )
            })?;
            for (k, v) in t {
                let count = read_count(v, &format!("launch.{k}")).map_err(|(p, m)| fail(&p, m))?;
                match k.as_str() {
                    "threads" => file.launch.threads = Some(count),
                    "launches" => file.launch.launches = count,
                    _ => {
                        return Err(fail(
                            &format!("launch.{k}"),
                            "unknown key; [launch] has `threads` (total per launch) and `launches`"
                                .into(),
                        ))
                    }
                }
            }
        }
        Ok(file)
    }
}

/// 1-based line of each top-level entry of `ops`, when the text can be re-read with spans.
fn op_lines(text: &str) -> Vec<usize> {
    #[derive(serde::Deserialize)]
    struct Outer {
        #[serde(default)]
        ops: Vec<toml::Spanned<toml::Value>>,
    }
    match toml::from_str::<Outer>(text) {
        Ok(o) => o
            .ops
            .iter()
            .map(|s| text[..s.span().start.min(text.len())].matches('\n').count() + 1)
            .collect(),
        Err(_) => Vec::new(),
    }
}

type ReadError = (String, String);

fn read_ops(
    value: &toml::Value,
    path: &str,
    line_of: &dyn Fn(usize) -> Option<usize>,
) -> std::result::Result<Vec<Op>, ReadError> {
    let items = value.as_array().ok_or_else(|| {
        (
            path.to_string(),
            "must be an array of operations".to_string(),
        )
    })?;
    let mut ops = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let here = match line_of(i) {
            Some(line) => format!("line {line}, {path}[{i}]"),
            None => format!("{path}[{i}]"),
        };
        ops.push(read_op(item, &here)?);
    }
    Ok(ops)
}

fn read_op(item: &toml::Value, here: &str) -> std::result::Result<Op, ReadError> {
    let err = |m: String| (here.to_string(), m);
    match item {
        toml::Value::Array(pair) => {
            let [kind, cycles] = pair.as_slice() else {
                return Err(err(format!(
                    "an operation is [KIND, CYCLES] such as [\"load\", 120], got {} elements",
                    pair.len()
                )));
            };
            let kind = kind
                .as_str()
                .ok_or_else(|| err("the kind must be a string: calc, load or store".into()))?;
            let cycles = match cycles {
                toml::Value::Integer(i) => *i as f64,
                toml::Value::Float(f) => *f,
                other => {
                    return Err(err(format!(
                        "the cycles must be a number, got {}",
                        other.type_str()
                    )))
                }
            };
            if !cycles.is_finite() {
                return Err(err(format!("cycles must be a finite number, got {cycles}")));
            }
            if cycles < 0.0 {
                return Err(err(format!("cycles must not be negative, got {cycles}")));
            }
            match kind.to_ascii_lowercase().as_str() {
                "calc" => Ok(Op::Calc(cycles)),
                "load" => Ok(Op::Load(cycles)),
                "store" => Ok(Op::Store(cycles)),
                _ => Err(err(format!(
                    "unknown operation kind `{kind}`; expected calc, load or store"
                ))),
            }
        }
        toml::Value::Table(t) => {
            for k in t.keys() {
                if k != "repeat" && k != "ops" {
                    return Err(err(format!(
                        "unknown key `{k}`; a repeat block is {{ repeat = COUNT, ops = [...] }}"
                    )));
                }
            }
            let count = t.get("repeat").ok_or_else(|| {
                err("a repeat block needs `repeat = COUNT` (a number or a parameter name)".into())
            })?;
            let count = read_count(count, &format!("{here}.repeat"))?;
            let body = t
                .get("ops")
                .ok_or_else(|| err("a repeat block needs `ops = [...]`".into()))?;
            let ops = read_ops(body, &format!("{here}.ops"), &|_| None)?;
            Ok(Op::Repeat { count, ops })
        }
        other => Err(err(format!(
            "an operation is [KIND, CYCLES] or {{ repeat = COUNT, ops = [...] }}, got {}",
            other.type_str()
        ))),
    }
}

fn read_count(v: &toml::Value, here: &str) -> std::result::Result<RepeatCount, ReadError> {
    let err = |m: String| (here.to_string(), m);
    let count = match v {
        toml::Value::Integer(i) => RepeatCount::Fixed(
            u64::try_from(*i).map_err(|_| err(format!("must not be negative, got {i}")))?,
        ),
        toml::Value::String(s) => RepeatCount::Param(s.clone()),
        other => {
            return Err(err(format!(
                "must be a whole number or a parameter expression such as \"K\" or \"n/2\", got {}",
                other.type_str()
            )))
        }
    };
    count.check_syntax().map_err(err)?;
    Ok(count)
}

/// An integer expression over parameter names: `+ - * / %`, parentheses, unary minus.
#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Num(i64),
    Name(String),
    Neg(Box<Expr>),
    Bin(char, Box<Expr>, Box<Expr>),
}

impl Expr {
    fn parse(text: &str) -> std::result::Result<Expr, String> {
        let tokens = tokenize(text)?;
        let mut p = ExprParser { tokens, pos: 0 };
        let e = p.sum()?;
        if p.pos != p.tokens.len() {
            return Err(format!("unexpected `{}` in `{text}`", p.tokens[p.pos]));
        }
        Ok(e)
    }

    fn names(&self, out: &mut Vec<String>) {
        match self {
            Expr::Num(_) => {}
            Expr::Name(n) => {
                if !out.contains(n) {
                    out.push(n.clone());
                }
            }
            Expr::Neg(e) => e.names(out),
            Expr::Bin(_, a, b) => {
                a.names(out);
                b.names(out);
            }
        }
    }

    fn eval(&self, params: &ParamValues, what: &dyn Fn() -> String) -> Result<i64> {
        let overflow = || Error::invalid(what(), "the count overflows");
        Ok(match self {
            Expr::Num(n) => *n,
            Expr::Name(name) => {
                let v = params.get(name).ok_or_else(|| {
                    Error::missing(
                        format!("param {name}"),
                        format!(
                            "{} uses parameter `{name}`; give it with `param` {name}=VALUE",
                            what()
                        ),
                    )
                })?;
                whole(v).ok_or_else(|| {
                    Error::invalid(
                        format!("param {name}"),
                        format!("must be a whole number for {}, got {v}", what()),
                    )
                })?
            }
            Expr::Neg(e) => e.eval(params, what)?.checked_neg().ok_or_else(overflow)?,
            Expr::Bin(op, a, b) => {
                let (a, b) = (a.eval(params, what)?, b.eval(params, what)?);
                let r = match op {
                    '+' => a.checked_add(b),
                    '-' => a.checked_sub(b),
                    '*' => a.checked_mul(b),
                    '/' | '%' if b == 0 => {
                        return Err(Error::invalid(what(), "divides by zero"));
                    }
                    '/' => a.checked_div(b),
                    _ => a.checked_rem(b),
                };
                r.ok_or_else(overflow)?
            }
        })
    }
}

fn tokenize(text: &str) -> std::result::Result<Vec<String>, String> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if "+-*/%()".contains(c) {
            out.push(c.to_string());
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else {
            return Err(format!("unexpected character `{c}` in `{text}`"));
        }
    }
    if out.is_empty() {
        return Err("an empty count; give a number or a parameter name".into());
    }
    Ok(out)
}

struct ExprParser {
    tokens: Vec<String>,
    pos: usize,
}

impl ExprParser {
    fn peek(&self) -> Option<&str> {
        self.tokens.get(self.pos).map(String::as_str)
    }

    fn sum(&mut self) -> std::result::Result<Expr, String> {
        let mut e = self.product()?;
        while let Some(op @ ("+" | "-")) = self.peek() {
            let op = op.chars().next().unwrap_or('+');
            self.pos += 1;
            e = Expr::Bin(op, Box::new(e), Box::new(self.product()?));
        }
        Ok(e)
    }

    fn product(&mut self) -> std::result::Result<Expr, String> {
        let mut e = self.unary()?;
        while let Some(op @ ("*" | "/" | "%")) = self.peek() {
            let op = op.chars().next().unwrap_or('*');
            self.pos += 1;
            e = Expr::Bin(op, Box::new(e), Box::new(self.unary()?));
        }
        Ok(e)
    }

    fn unary(&mut self) -> std::result::Result<Expr, String> {
        match self.peek() {
            Some("-") => {
                self.pos += 1;
                Ok(Expr::Neg(Box::new(self.unary()?)))
            }
            Some("+") => {
                self.pos += 1;
                self.unary()
            }
            Some("(") => {
                self.pos += 1;
                let e = self.sum()?;
                if self.peek() != Some(")") {
                    return Err("missing `)`".into());
                }
                self.pos += 1;
                Ok(e)
            }
            Some(t) => {
                let t = t.to_string();
                self.pos += 1;
                if t.chars().all(|c| c.is_ascii_digit()) {
                    t.parse()
                        .map(Expr::Num)
                        .map_err(|_| format!("number `{t}` is too large"))
                } else if t.chars().next().is_some_and(|c| c.is_ascii_digit()) {
                    Err(format!("`{t}` is neither a number nor a parameter name"))
                } else if "+-*/%)".contains(t.as_str()) {
                    Err(format!("unexpected `{t}`"))
                } else {
                    Ok(Expr::Name(t))
                }
            }
            None => Err("the expression ends too early".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pairs: &[(&str, f64)]) -> ParamValues {
        ParamValues::new(pairs.iter().map(|(n, v)| (*n, *v)))
    }

    #[test]
    fn reads_the_issue_example_and_expands_it() {
        let f = ProgramFile::from_toml(
            r#"ops = [["calc", 33], { repeat = "K", ops = [["load", 120], ["load", 160], ["calc", 17]] }, ["store", 100]]"#,
            "x.toml",
        )
        .unwrap();
        let flat = f.program.expand(&p(&[("k", 2.0)])).unwrap();
        // 1 + 2 * 3 + 1 operations.
        assert_eq!(flat.len(), 8);
        assert_eq!(
            flat[1],
            Instr {
                kind: OpKind::Load,
                cycles: 120.0
            }
        );
        assert_eq!(
            flat[6],
            Instr {
                kind: OpKind::Calc,
                cycles: 17.0
            }
        );
        assert_eq!(
            flat[7],
            Instr {
                kind: OpKind::Store,
                cycles: 100.0
            }
        );
        assert_eq!(f.program.parameter_names(), vec!["K".to_string()]);
    }

    #[test]
    fn expressions_use_integer_arithmetic() {
        let c = RepeatCount::Param("(n - 1) / 2 + K % 3 * -1 + 2".into());
        // (9 - 1) / 2 = 4; 8 % 3 = 2; 4 - 2 + 2 = 4.
        assert_eq!(c.evaluate(&p(&[("n", 9.0), ("K", 8.0)]), "x").unwrap(), 4);
        let half = RepeatCount::Param("n/2".into());
        assert_eq!(half.evaluate(&p(&[("n", 7.0)]), "x").unwrap(), 3);
        assert!(RepeatCount::Param("n - 10".into())
            .evaluate(&p(&[("n", 1.0)]), "x")
            .is_err());
        assert!(RepeatCount::Param("n / 0".into())
            .evaluate(&p(&[("n", 1.0)]), "x")
            .is_err());
        for bad in ["", "n +", "(n", "n ) ", "2x", "n $ 2"] {
            assert!(
                RepeatCount::Param(bad.into()).check_syntax().is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn missing_parameter_is_named() {
        let f =
            ProgramFile::from_toml(r#"ops = [{ repeat = "m", ops = [["calc", 1]] }]"#, "x.toml")
                .unwrap();
        let e = f.program.expand(&p(&[("n", 3.0)])).unwrap_err();
        assert!(matches!(e, Error::MissingInput { .. }));
        assert!(e.to_string().contains("param m"), "{e}");
    }

    #[test]
    fn errors_name_file_line_and_position() {
        let cases = [
            (
                "ops = [\n  [\"calc\", 1],\n  [\"lod\", 5],\n]",
                "line 3, ops[1]",
                "unknown operation kind `lod`",
            ),
            ("ops = [[\"calc\", -1]]", "ops[0]", "negative"),
            ("ops = [[\"calc\", nan]]", "ops[0]", "finite"),
            ("ops = [[\"load\", inf]]", "ops[0]", "finite"),
            (
                "ops = [{ repeat = -2, ops = [] }]",
                "ops[0].repeat",
                "negative",
            ),
            (
                "ops = [{ repeat = 2, ops = [[\"jump\", 1]] }]",
                "ops[0].ops[0]",
                "unknown operation kind",
            ),
            ("ops = [[\"calc\"]]", "ops[0]", "[KIND, CYCLES]"),
            (
                "ops = [{ repeat = \"n +\", ops = [] }]",
                "ops[0].repeat",
                "ends too early",
            ),
            ("opz = []", "opz", "unknown key"),
            ("name = 'x'", "ops", "missing"),
            ("ops = [", "x.toml", "line 1"),
        ];
        for (text, at, what) in cases {
            let e = ProgramFile::from_toml(text, "x.toml")
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("x.toml: "), "{e}");
            assert!(e.contains(at), "{text}: {e}");
            assert!(e.contains(what), "{text}: {e}");
        }
    }

    #[test]
    fn launch_table_is_read() {
        let f = ProgramFile::from_toml(
            "name = \"l\"\nops = [[\"calc\", 1]]\n[launch]\nthreads = \"N/2\"\nlaunches = \"K/2 + 1\"\n",
            "x.toml",
        )
        .unwrap();
        let v = p(&[("n", 64.0), ("k", 8.0)]);
        assert_eq!(
            f.launch
                .threads
                .as_ref()
                .unwrap()
                .evaluate(&v, "t")
                .unwrap(),
            32
        );
        assert_eq!(f.launch.launches.evaluate(&v, "l").unwrap(), 5);
        assert_eq!(f.name.as_deref(), Some("l"));
    }

    #[test]
    fn expansion_is_bounded() {
        let f = ProgramFile::from_toml(
            r#"ops = [{ repeat = 100000, ops = [{ repeat = 100000, ops = [["calc", 1]] }] }]"#,
            "x.toml",
        )
        .unwrap();
        assert!(f.program.expand(&ParamValues::default()).is_err());
    }
}
