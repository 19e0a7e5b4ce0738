//! Kernel parameters given on the command line (`--param n=1024`) and parameter spaces for
//! sweeps (`n=64,128`, `n=2^6..2^20`, `threads_per_block=32..1024:32` with a step).
//!
//! A `ParamSpace` is an ordered list of axes, each a parameter name with one or more values; its
//! points are the cartesian product (the first axis varies slowest). `ParamValues` is one point,
//! looked up by name: an exact match first, otherwise a case-insensitive one (`K` finds `k`).
//!
//! This module only parses and enumerates values. It does not know which parameters a kernel
//! needs; the consumer reports missing ones.

use crate::error::{Error, Result};

/// Most points a parameter space may expand to (a guard against typos like `n=2^1..2^60`).
pub const MAX_POINTS: usize = 10_000_000;

/// One axis of a parameter space: a name and its values, in the order written.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub name: String,
    pub values: Vec<f64>,
    /// Whether the axis was written as a list or a range (so output is an array even for
    /// one value).
    pub is_list: bool,
}

/// Every parameter given, as axes of a cartesian product.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParamSpace {
    pub axes: Vec<Axis>,
}

/// One point of a parameter space: values by name.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParamValues {
    values: Vec<(String, f64)>,
}

impl ParamValues {
    /// A point from (name, value) pairs.
    pub fn new<S: Into<String>>(pairs: impl IntoIterator<Item = (S, f64)>) -> Self {
        Self {
            values: pairs.into_iter().map(|(n, v)| (n.into(), v)).collect(),
        }
    }

    /// The value of `name`: an exact match, else the one case-insensitive match.
    pub fn get(&self, name: &str) -> Option<f64> {
        if let Some((_, v)) = self.values.iter().find(|(n, _)| n == name) {
            return Some(*v);
        }
        let mut found = self
            .values
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name));
        match (found.next(), found.next()) {
            (Some((_, v)), None) => Some(*v),
            _ => None,
        }
    }

    /// The value of `name` as a whole number, or an error naming `--param NAME`.
    pub fn get_integer(&self, name: &str) -> Result<Option<i64>> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => whole(v).map(Some).ok_or_else(|| {
                let message = if v.is_finite() && v.fract() == 0.0 {
                    format!(
                        "{v:e} is too large: whole numbers are exact up to 2^53 (9007199254740992)"
                    )
                } else {
                    format!("must be a whole number, got {v}")
                };
                Error::invalid(format!("param {name}"), message)
            }),
        }
    }

    /// Sets (or replaces) a value.
    pub fn set(&mut self, name: &str, value: f64) {
        match self.values.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => self.values.push((name.to_string(), value)),
        }
    }

    /// The (name, value) pairs in the order given.
    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.values.iter().map(|(n, v)| (n.as_str(), *v))
    }

    /// Names given, for error messages.
    pub fn names(&self) -> Vec<&str> {
        self.values.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// The point as a JSON object (whole numbers as integers).
    pub fn to_json(&self) -> serde_json::Map<String, serde_json::Value> {
        self.values
            .iter()
            .map(|(n, v)| (n.clone(), number_json(*v)))
            .collect()
    }
}

/// A number as JSON: an integer when it is whole, a float otherwise.
pub fn number_json(v: f64) -> serde_json::Value {
    match whole(v) {
        Some(i) => serde_json::Value::from(i),
        None => serde_json::Value::from(v),
    }
}

/// `v` as an integer when it is whole and fits.
pub fn whole(v: f64) -> Option<i64> {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e15 {
        Some(v as i64)
    } else {
        None
    }
}

impl ParamSpace {
    /// Parses every `--param` argument; `flag` names the flag in errors.
    pub fn parse_all<S: AsRef<str>>(args: &[S], flag: &str) -> Result<Self> {
        let mut space = ParamSpace::default();
        for a in args {
            let axis = parse_axis(a.as_ref(), flag)?;
            if space
                .axes
                .iter()
                .any(|x| x.name.eq_ignore_ascii_case(&axis.name))
            {
                return Err(Error::invalid(
                    format!("{flag} {}", axis.name),
                    "is given twice; give all its values in one flag (e.g. n=64,128)",
                ));
            }
            space.axes.push(axis);
        }
        let total = space.len();
        if total > MAX_POINTS {
            return Err(Error::invalid(
                flag,
                format!(
                    "the parameter space has {total} points, more than the limit of {MAX_POINTS}"
                ),
            ));
        }
        Ok(space)
    }

    /// Number of points (1 for an empty space: the one point with no parameters).
    pub fn len(&self) -> usize {
        self.axes
            .iter()
            .fold(1usize, |acc, a| acc.saturating_mul(a.values.len()))
    }

    /// Whether the space has no points (never: an empty space has one point).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether any axis was written as a list or range: the output is then an array.
    pub fn is_sweep(&self) -> bool {
        self.axes.iter().any(|a| a.is_list || a.values.len() > 1)
    }

    /// Every point, the first axis varying slowest.
    pub fn points(&self) -> Vec<ParamValues> {
        self.iter_points().collect()
    }

    /// Every point, the first axis varying slowest, one at a time: memory stays constant however
    /// large the space.
    pub fn iter_points(&self) -> Points<'_> {
        Points {
            space: self,
            index: vec![0; self.axes.len()],
            done: self.axes.iter().any(|a| a.values.is_empty()),
        }
    }
}

/// The points of a [`ParamSpace`], enumerated like an odometer from the last axis.
#[derive(Debug, Clone)]
pub struct Points<'a> {
    space: &'a ParamSpace,
    index: Vec<usize>,
    done: bool,
}

impl Iterator for Points<'_> {
    type Item = ParamValues;

    fn next(&mut self) -> Option<ParamValues> {
        if self.done {
            return None;
        }
        let axes = &self.space.axes;
        let point = ParamValues::new(
            axes.iter()
                .zip(&self.index)
                .map(|(a, &i)| (a.name.clone(), a.values[i])),
        );
        // Advance the odometer from the last axis; wrapping the first axis ends the walk.
        let mut k = axes.len();
        loop {
            if k == 0 {
                self.done = true;
                break;
            }
            k -= 1;
            self.index[k] += 1;
            if self.index[k] < axes[k].values.len() {
                break;
            }
            self.index[k] = 0;
        }
        Some(point)
    }
}

/// Parses `NAME=VALUE`, `NAME=V1,V2,...` or `NAME=2^A..2^B` (also `A..B` for integer steps and
/// `A..B:S` for steps of `S`).
pub fn parse_axis(text: &str, flag: &str) -> Result<Axis> {
    let (name, rhs) = text.split_once('=').ok_or_else(|| {
        Error::invalid(
            flag,
            format!("expected NAME=VALUE (or NAME=V1,V2 or NAME=2^A..2^B), got `{text}`"),
        )
    })?;
    let name = name.trim();
    let valid_name = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid_name {
        return Err(Error::invalid(
            flag,
            format!(
                "`{name}` is not a parameter name (letters, digits and _, starting with a letter)"
            ),
        ));
    }
    let field = format!("{flag} {name}");
    let items: Vec<&str> = rhs.split(',').map(str::trim).collect();
    let mut values = Vec::new();
    let mut is_list = items.len() > 1;
    for item in items {
        if item.is_empty() {
            return Err(Error::invalid(&field, format!("empty value in `{rhs}`")));
        }
        if let Some((lo, hi)) = item.split_once("..") {
            is_list = true;
            expand_range(lo.trim(), hi.trim(), &field, &mut values)?;
        } else {
            values.push(parse_number(item, &field)?);
        }
        if values.len() > MAX_POINTS {
            return Err(Error::invalid(
                &field,
                format!("more than {MAX_POINTS} values"),
            ));
        }
    }
    Ok(Axis {
        name: name.to_string(),
        values,
        is_list,
    })
}

/// `2^A..2^B` gives the powers of two from A to B; `A..B` (whole numbers) gives A, A+1, ..., B;
/// `A..B:S` gives A, A+S, ... up to B (whole numbers, S at least 1).
fn expand_range(lo: &str, hi: &str, field: &str, out: &mut Vec<f64>) -> Result<()> {
    let (hi, step) = match hi.split_once(':') {
        Some((h, s)) => {
            let step = parse_number(s.trim(), field)?;
            match whole(step) {
                Some(st) if st >= 1 => (h.trim(), st),
                _ => {
                    return Err(Error::invalid(
                        field,
                        format!(
                            "the step of range {lo}..{hi} must be a whole number of at least 1"
                        ),
                    ))
                }
            }
        }
        None => (hi, 1),
    };
    if step != 1 && (lo.starts_with("2^") || hi.starts_with("2^")) {
        return Err(Error::invalid(
            field,
            format!(
                "a range of powers of two takes no step: write 2^A..2^B, not {lo}..{hi}:{step}"
            ),
        ));
    }
    let pow = |s: &str| -> Option<String> { s.strip_prefix("2^").map(|e| e.trim().to_string()) };
    match (pow(lo), pow(hi)) {
        (Some(a), Some(b)) => {
            let a: u32 = a.parse().map_err(|_| bad_exponent(&a, field))?;
            let b: u32 = b.parse().map_err(|_| bad_exponent(&b, field))?;
            if a > b || b > 62 {
                return Err(Error::invalid(
                    field,
                    format!("range 2^{a}..2^{b} must have A <= B <= 62"),
                ));
            }
            out.extend((a..=b).map(|e| (1u64 << e) as f64));
            Ok(())
        }
        (None, None) => {
            let a = parse_number(lo, field)?;
            let b = parse_number(hi, field)?;
            match (whole(a), whole(b)) {
                (Some(a), Some(b)) if a <= b && (((b - a) / step) as u128) < MAX_POINTS as u128 => {
                    out.extend((a..=b).step_by(step as usize).map(|v| v as f64));
                    Ok(())
                }
                _ => Err(Error::invalid(
                    field,
                    format!(
                        "range {lo}..{hi} needs whole numbers A <= B, at most {MAX_POINTS} apart"
                    ),
                )),
            }
        }
        _ => Err(Error::invalid(
            field,
            format!(
                "range {lo}..{hi} mixes a power of two with a plain number; write 2^A..2^B or A..B"
            ),
        )),
    }
}

fn bad_exponent(e: &str, field: &str) -> Error {
    Error::invalid(field, format!("`{e}` is not a whole exponent"))
}

/// A number: decimal (`1024`, `2.5`, `1e6`) or a power `B^E` (`2^10`).
fn parse_number(s: &str, field: &str) -> Result<f64> {
    let v = if let Some((b, e)) = s.split_once('^') {
        let b: f64 = b.trim().parse().map_err(|_| not_number(s, field))?;
        let e: i32 = e.trim().parse().map_err(|_| not_number(s, field))?;
        b.powi(e)
    } else {
        s.parse::<f64>().map_err(|_| not_number(s, field))?
    };
    if !v.is_finite() {
        return Err(Error::invalid(
            field,
            format!("`{s}` is not a finite number"),
        ));
    }
    Ok(v)
}

fn not_number(s: &str, field: &str) -> Error {
    Error::invalid(field, format!("`{s}` is not a number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_value_is_not_a_sweep() {
        let s = ParamSpace::parse_all(&["n=1024", "K=8"], "param").unwrap();
        assert!(!s.is_sweep());
        let p = s.points();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].get("n"), Some(1024.0));
        assert_eq!(p[0].get("k"), Some(8.0), "case-insensitive lookup");
    }

    #[test]
    fn list_and_power_range_make_a_product() {
        let s = ParamSpace::parse_all(&["n=2^6..2^8", "k=8,10"], "param").unwrap();
        assert!(s.is_sweep());
        let p = s.points();
        // 3 values of n (64, 128, 256) times 2 of k, n varying slowest.
        assert_eq!(p.len(), 6);
        let pairs: Vec<(f64, f64)> = p
            .iter()
            .map(|x| (x.get("n").unwrap(), x.get("k").unwrap()))
            .collect();
        assert_eq!(
            pairs,
            vec![
                (64., 8.),
                (64., 10.),
                (128., 8.),
                (128., 10.),
                (256., 8.),
                (256., 10.)
            ]
        );
    }

    #[test]
    fn integer_range_and_powers() {
        let a = parse_axis("x=3..5", "param").unwrap();
        assert_eq!(a.values, vec![3.0, 4.0, 5.0]);
        // Steps: 32, 64, ..., 1024 (32 values); the last value need not be reached exactly.
        let s = parse_axis("t=32..1024:32", "param").unwrap();
        assert_eq!(s.values.len(), 1024 / 32);
        assert_eq!(s.values[1], 64.0);
        assert_eq!(
            parse_axis("t=1..10:4", "param").unwrap().values,
            vec![1.0, 5.0, 9.0]
        );
        let b = parse_axis("x=2^10", "param").unwrap();
        assert_eq!(b.values, vec![1024.0]);
        assert!(!b.is_list);
    }

    #[test]
    fn bad_inputs_name_the_flag() {
        for bad in [
            "n",
            "n=",
            "n=abc",
            "n=2^9..2^3",
            "n=2^3..9",
            "=5",
            "n=inf",
            "n=1,,2",
            "n=10..1",
            "n=1..10:0",
            "n=1..10:x",
            "n=2^1..2^4:2",
        ] {
            let e = parse_axis(bad, "param").unwrap_err().to_string();
            assert!(e.starts_with("param"), "{bad}: {e}");
        }
        let e = ParamSpace::parse_all(&["n=1", "N=2"], "param").unwrap_err();
        assert!(e.to_string().contains("twice"));
    }

    #[test]
    fn integer_values() {
        let p = ParamValues::new([("n", 2.5)]);
        assert!(p.get_integer("n").is_err());
        assert_eq!(p.get_integer("m").unwrap(), None);
    }
}
