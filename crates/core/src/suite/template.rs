//! Case templates of suite groups: the columns of one measurement row, and `{NAME}` / `{EXPR}`
//! substitution into the strings of a TOML template.
//!
//! Expressions are those of kernel programs (`workload::program::RepeatCount`): whole numbers,
//! column names, `+ - * / %` and parentheses. This module does not read files or build cases.

use std::collections::BTreeMap;

use crate::fit::measurements::Measurement;
use crate::workload::params::{whole, ParamValues};
use crate::workload::program::RepeatCount;

/// One cell of a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Num(f64),
    Text(String),
}

impl Cell {
    /// The cell as text: whole numbers without a fraction, other numbers in their shortest
    /// exact form.
    pub fn text(&self) -> String {
        match self {
            Cell::Text(t) => t.clone(),
            Cell::Num(v) => match whole(*v) {
                Some(i) => i.to_string(),
                None => format!("{v}"),
            },
        }
    }

    /// Whether two cells hold the same value (numbers compared as numbers when both parse).
    pub fn matches(&self, other: &toml::Value) -> bool {
        let other_num = match other {
            toml::Value::Integer(i) => Some(*i as f64),
            toml::Value::Float(f) => Some(*f),
            toml::Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        let own_num = match self {
            Cell::Num(v) => Some(*v),
            Cell::Text(t) => t.trim().parse::<f64>().ok(),
        };
        if let (Some(a), Some(b)) = (own_num, other_num) {
            return a == b;
        }
        match other {
            toml::Value::String(s) => self.text() == *s,
            _ => false,
        }
    }
}

/// The columns of one measurement row.
pub type Row = BTreeMap<String, Cell>;

/// A row's columns: the measurement's parameters, then its own fields (which win).
pub fn row_of(m: &Measurement) -> Row {
    let mut row = Row::new();
    for (k, v) in &m.params {
        let cell = match v {
            serde_json::Value::Number(n) => n.as_f64().map(Cell::Num),
            serde_json::Value::String(s) => Some(Cell::Text(s.clone())),
            serde_json::Value::Bool(b) => Some(Cell::Num(f64::from(u8::from(*b)))),
            _ => None,
        };
        if let Some(c) = cell {
            row.insert(k.clone(), c);
        }
    }
    row.insert("kernel".into(), Cell::Text(m.kernel.clone()));
    if let Some(d) = &m.device {
        row.insert("device".into(), Cell::Text(d.clone()));
    }
    row.insert("time_us".into(), Cell::Num(m.time_us));
    row.insert("line".into(), Cell::Num(m.source.line as f64));
    for (dims, name) in [(m.grid, "grid"), (m.block, "block")] {
        if let Some(d) = dims {
            for (axis, v) in [("x", d.x), ("y", d.y), ("z", d.z)] {
                row.insert(format!("{name}_{axis}"), Cell::Num(v as f64));
            }
        }
    }
    if let Some(s) = m.samples {
        row.insert("samples".into(), Cell::Num(s as f64));
    }
    if let Some(t) = m.launch_api_us {
        row.insert("launch_api_us".into(), Cell::Num(t));
    }
    if let Some(c) = &m.counters {
        if let Ok(serde_json::Value::Object(map)) = serde_json::to_value(c) {
            for (k, v) in map {
                match v {
                    serde_json::Value::Number(n) => {
                        if let Some(x) = n.as_f64() {
                            row.insert(k, Cell::Num(x));
                        }
                    }
                    serde_json::Value::String(s) => {
                        row.insert(k, Cell::Text(s));
                    }
                    _ => {}
                }
            }
        }
    }
    row
}

/// The `{...}` pieces of a template string, or an error for an unclosed brace.
fn pieces(text: &str) -> std::result::Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    let mut literal = String::new();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("{{") {
            literal.push('{');
            rest = r;
        } else if let Some(r) = rest.strip_prefix("}}") {
            literal.push('}');
            rest = r;
        } else if let Some(r) = rest.strip_prefix('{') {
            let end = r
                .find('}')
                .ok_or_else(|| format!("`{text}` has a `{{` without its `}}`"))?;
            if !literal.is_empty() {
                out.push(Piece::Literal(std::mem::take(&mut literal)));
            }
            out.push(Piece::Expr(r[..end].trim()));
            rest = &r[end + 1..];
        } else if rest.starts_with('}') {
            return Err(format!(
                "`{text}` has a `}}` without its `{{` (write `}}}}`)"
            ));
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            literal.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    if !literal.is_empty() {
        out.push(Piece::Literal(literal));
    }
    Ok(out)
}

enum Piece<'a> {
    Literal(String),
    Expr(&'a str),
}

/// Checks a template string's syntax without a row.
pub fn check(text: &str) -> std::result::Result<(), String> {
    for p in pieces(text)? {
        if let Piece::Expr(e) = p {
            if e.is_empty() {
                return Err(format!("`{text}` has an empty `{{}}`"));
            }
            RepeatCount::Param(e.to_string())
                .check_syntax()
                .map_err(|m| format!("`{{{e}}}`: {m}"))?;
        }
    }
    Ok(())
}

/// Substitutes a row's columns into a template string.
pub fn substitute(text: &str, row: &Row) -> std::result::Result<String, String> {
    let mut out = String::new();
    for p in pieces(text)? {
        match p {
            Piece::Literal(l) => out.push_str(&l),
            Piece::Expr(e) => out.push_str(&evaluate(e, row)?),
        }
    }
    Ok(out)
}

fn evaluate(expr: &str, row: &Row) -> std::result::Result<String, String> {
    if let Some(cell) = row.get(expr) {
        return Ok(cell.text());
    }
    let count = RepeatCount::Param(expr.to_string());
    count
        .check_syntax()
        .map_err(|m| format!("`{{{expr}}}`: {m}"))?;
    let names = count.parameter_names();
    if names.len() == 1 && names[0] == expr {
        return Err(format!("`{{{expr}}}`: the row has no column `{expr}`"));
    }
    let mut values = Vec::new();
    for n in &names {
        match row.get(n) {
            Some(Cell::Num(v)) if whole(*v).is_some() => values.push((n.clone(), *v)),
            Some(c) => {
                return Err(format!(
                    "`{{{expr}}}`: column `{n}` is `{}`, not a whole number",
                    c.text()
                ))
            }
            None => return Err(format!("`{{{expr}}}`: the row has no column `{n}`")),
        }
    }
    count
        .evaluate(&ParamValues::new(values), expr)
        .map(|v| v.to_string())
        .map_err(|e| format!("`{{{expr}}}`: {e}"))
}

/// Substitutes a row into every string of a TOML value (keys are left alone).
pub fn substitute_value(v: &toml::Value, row: &Row) -> std::result::Result<toml::Value, String> {
    Ok(match v {
        toml::Value::String(s) => toml::Value::String(substitute(s, row)?),
        toml::Value::Array(a) => toml::Value::Array(
            a.iter()
                .map(|x| substitute_value(x, row))
                .collect::<std::result::Result<_, _>>()?,
        ),
        toml::Value::Table(t) => {
            let mut out = toml::Table::new();
            for (k, x) in t {
                out.insert(k.clone(), substitute_value(x, row)?);
            }
            toml::Value::Table(out)
        }
        other => other.clone(),
    })
}

/// Checks the syntax of every string of a TOML value; the error names the first bad one.
pub fn check_value(v: &toml::Value) -> std::result::Result<(), String> {
    match v {
        toml::Value::String(s) => check(s),
        toml::Value::Array(a) => a.iter().try_for_each(check_value),
        toml::Value::Table(t) => t.values().try_for_each(check_value),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> Row {
        let mut r = Row::new();
        r.insert("app".into(), Cell::Text("matMul_gpu".into()));
        r.insert("n".into(), Cell::Num(1000.0));
        r.insert("b".into(), Cell::Num(256.0));
        r.insert("t".into(), Cell::Num(12.25));
        r
    }

    #[test]
    fn names_and_whole_number_expressions() {
        let r = row();
        assert_eq!(
            substitute("kernels/{app}.cu", &r).unwrap(),
            "kernels/matMul_gpu.cu"
        );
        // ceil(1000 / 256) = 4, written as a truncating division.
        assert_eq!(substitute("{(n + b - 1) / b}", &r).unwrap(), "4");
        assert_eq!(substitute("{ n % 7 },{b*2}", &r).unwrap(), "6,512");
        assert_eq!(substitute("{t}", &r).unwrap(), "12.25");
        assert_eq!(substitute("{{literal}}", &r).unwrap(), "{literal}");
    }

    #[test]
    fn errors_name_the_column() {
        let r = row();
        let e = substitute("{missing}", &r).unwrap_err();
        assert!(e.contains("no column `missing`"), "{e}");
        let e = substitute("{t * 2}", &r).unwrap_err();
        assert!(
            e.contains("column `t` is `12.25`, not a whole number"),
            "{e}"
        );
        let e = substitute("{app + 1}", &r).unwrap_err();
        assert!(e.contains("column `app`"), "{e}");
        assert!(check("{n +}").is_err());
        assert!(check("open {n").is_err());
        assert!(check("close }").is_err());
        assert!(check("{}").is_err());
        assert!(check("{n + 1} and {{x}}").is_ok());
    }

    #[test]
    fn cells_match_numbers_and_text() {
        assert!(Cell::Num(256.0).matches(&toml::Value::Integer(256)));
        assert!(Cell::Num(256.0).matches(&toml::Value::String("256".into())));
        assert!(Cell::Text("GTX-680".into()).matches(&toml::Value::String("GTX-680".into())));
        assert!(!Cell::Text("GTX-680".into()).matches(&toml::Value::String("GTX 680".into())));
        assert!(Cell::Text("3.0".into()).matches(&toml::Value::Float(3.0)));
    }
}
