//! Data hints: what a kernel's buffers hold, as far as it matters for its control flow and
//! addresses (a data-dependent branch or index). A hint names a kernel argument and a fill:
//! `const:V`, `iota[:START[:STEP]]`, `uniform:LO:HI[:SEED]` or `file:PATH`.
//!
//! This module only parses and prints hints; the tuning request carries them to the emulator.
//! It does not read the files or generate values.

use std::fmt;
use std::path::PathBuf;

use crate::error::{Error, Result};

/// What a buffer holds.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fill {
    /// Every element is `V`.
    Const(f64),
    /// Element `i` is `start + i * step`.
    Iota { start: f64, step: f64 },
    /// Independent uniform draws in `[lo, hi)`, from `seed` when given.
    Uniform { lo: f64, hi: f64, seed: Option<u64> },
    /// The raw bytes of a file.
    File(PathBuf),
}

/// A fill for one named kernel argument.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DataHint {
    pub name: String,
    pub fill: Fill,
}

impl fmt::Display for Fill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fill::Const(v) => write!(f, "const:{v}"),
            Fill::Iota { start, step } => write!(f, "iota:{start}:{step}"),
            Fill::Uniform { lo, hi, seed } => match seed {
                Some(s) => write!(f, "uniform:{lo}:{hi}:{s}"),
                None => write!(f, "uniform:{lo}:{hi}"),
            },
            Fill::File(p) => write!(f, "file:{}", p.display()),
        }
    }
}

impl fmt::Display for DataHint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.name, self.fill)
    }
}

impl DataHint {
    /// Parses `NAME=SPEC`; errors name `field` (the flag or input that gave it).
    pub fn parse(field: &str, text: &str) -> Result<DataHint> {
        let (name, spec) = text
            .split_once('=')
            .ok_or_else(|| Error::invalid(field, format!("expected NAME=SPEC, got `{text}`")))?;
        let name = name.trim();
        if name.is_empty() {
            return Err(Error::invalid(field, format!("`{text}` names no argument")));
        }
        Ok(DataHint {
            name: name.to_string(),
            fill: Fill::parse(field, spec.trim())?,
        })
    }
}

impl Fill {
    /// Parses `const:V`, `iota[:START[:STEP]]`, `uniform:LO:HI[:SEED]` or `file:PATH`.
    pub fn parse(field: &str, spec: &str) -> Result<Fill> {
        let usage = "one of const:V, iota[:START[:STEP]], uniform:LO:HI[:SEED], file:PATH";
        let (kind, rest) = match spec.split_once(':') {
            Some((k, r)) => (k, Some(r)),
            None => (spec, None),
        };
        let number = |t: &str| -> Result<f64> {
            t.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| {
                    Error::invalid(field, format!("`{t}` in `{spec}` is not a finite number"))
                })
        };
        let parts: Vec<&str> = rest.map(|r| r.split(':').collect()).unwrap_or_default();
        match (kind, parts.as_slice()) {
            ("const", [v]) => Ok(Fill::Const(number(v)?)),
            ("iota", []) => Ok(Fill::Iota {
                start: 0.0,
                step: 1.0,
            }),
            ("iota", [s]) => Ok(Fill::Iota {
                start: number(s)?,
                step: 1.0,
            }),
            ("iota", [s, d]) => Ok(Fill::Iota {
                start: number(s)?,
                step: number(d)?,
            }),
            ("uniform", [lo, hi, seed @ ..]) if seed.len() <= 1 => {
                let (lo, hi) = (number(lo)?, number(hi)?);
                if hi <= lo {
                    return Err(Error::invalid(
                        field,
                        format!("`{spec}`: the upper bound must be above the lower bound"),
                    ));
                }
                let seed = match seed.first() {
                    Some(s) => Some(s.trim().parse::<u64>().map_err(|_| {
                        Error::invalid(
                            field,
                            format!("`{s}` in `{spec}` is not a whole-number seed"),
                        )
                    })?),
                    None => None,
                };
                Ok(Fill::Uniform { lo, hi, seed })
            }
            ("file", _) => {
                let path = rest.unwrap_or("");
                if path.is_empty() {
                    return Err(Error::invalid(field, "file: needs a path"));
                }
                Ok(Fill::File(PathBuf::from(path)))
            }
            _ => Err(Error::invalid(
                field,
                format!("`{spec}` is not a data hint; expected {usage}"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_parses() {
        let p = |t: &str| DataHint::parse("--data", t).unwrap();
        assert_eq!(p("a=const:2.5").fill, Fill::Const(2.5));
        assert_eq!(
            p("a=iota").fill,
            Fill::Iota {
                start: 0.0,
                step: 1.0
            }
        );
        assert_eq!(
            p("a=iota:5").fill,
            Fill::Iota {
                start: 5.0,
                step: 1.0
            }
        );
        assert_eq!(
            p("a=iota:5:-2").fill,
            Fill::Iota {
                start: 5.0,
                step: -2.0
            }
        );
        assert_eq!(
            p("points=uniform:-1:1:7").fill,
            Fill::Uniform {
                lo: -1.0,
                hi: 1.0,
                seed: Some(7)
            }
        );
        assert_eq!(
            p("b=file:/tmp/x:y.bin").fill,
            Fill::File(PathBuf::from("/tmp/x:y.bin"))
        );
        assert_eq!(
            p("points=uniform:-1:1:7").to_string(),
            "points=uniform:-1:1:7"
        );
    }

    #[test]
    fn mistakes_are_explained() {
        let e = |t: &str| DataHint::parse("--data", t).unwrap_err().to_string();
        assert!(e("a").contains("expected NAME=SPEC"));
        assert!(e("a=const").contains("not a data hint"));
        assert!(e("a=const:x").contains("`x`"));
        assert!(e("a=uniform:1:0").contains("upper bound"));
        assert!(e("a=uniform:0:1:z").contains("seed"));
        assert!(e("a=gauss:0:1").contains("not a data hint"));
        assert!(e("a=file:").contains("needs a path"));
        assert!(e("=const:1").contains("names no argument"));
    }
}
