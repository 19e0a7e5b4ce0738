//! Data hints: what a kernel's pointer arguments point to, as the user describes it, so that
//! loads from those buffers return values and the addresses and branches that depend on them
//! are exact instead of unknown. This module is the one reader of the hint text: `predict
//! --data`, `trace --data`, `tune --data` (and a FAIR spec's argument fills), the suite's
//! `data` tables and the Python binding all parse it here.
//!
//! A hint gives one value per element; the element type is the type of the load that reads it
//! (a `ld.global.f32` reads floats, a `ld.global.u8` bytes), element `i` being the one at byte
//! offset `i * size` from the buffer's base (the argument's address). The text form, one per
//! pointer parameter, is `NAME=SPEC` ([`DataArg`]) with NAME as for `--arg` (PTX name, name
//! without the kernel prefix, or position; `tune` also takes the source's parameter names) or
//! the name of a module variable of the constant or global space (a `__constant__` array the
//! host fills by name; unhinted, its contents are unknown) and SPEC ([`DataSpec`]) one of:
//!
//! - `const:V` — every element is V;
//! - `iota[:START[:STEP]]` — element `i` is `START + i * STEP` (defaults 0 and 1);
//! - `uniform:LO:HI[:SEED]` — element `i` is drawn uniformly from `[LO, HI)` (integer loads take
//!   the floor), independently per element by a hash of `(SEED, i)` (default seed 0), so the
//!   values do not depend on the order the emulator reads them;
//! - `file:PATH` — the buffer's bytes: a `.txt` or `.csv` file holds text numbers (element `i` is
//!   the `i`-th number, separated by whitespace or commas), any other file raw little-endian
//!   bytes read at the load's byte offset. Past the end of a file the values are unknown.
//!
//! A [`DataSpec`] is the hint as written; [`DataSpec::load`] turns it into the [`DataHint`] the
//! emulator reads, reading a file through the capped reader (`error::read_capped`, at most
//! [`MAX_FILE_ELEMENTS`] bytes). Nothing here runs a kernel or decides which parameter a name
//! means (that is `emulate_with`, or the caller's own parameter list).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::decode::Ty;
use crate::error::{Error, Result};

/// What a buffer holds, ready for the emulator.
#[derive(Debug, Clone, PartialEq)]
pub enum DataHint {
    Const(f64),
    Iota {
        start: f64,
        step: f64,
    },
    Uniform {
        lo: f64,
        hi: f64,
        seed: u64,
    },
    /// Text numbers, one per element.
    Values(Arc<Vec<f64>>),
    /// Raw little-endian bytes.
    Bytes(Arc<Vec<u8>>),
}

/// A SPEC as written: what a buffer holds, before a file it names is read.
#[derive(Debug, Clone, PartialEq)]
pub enum DataSpec {
    /// Every element is the value.
    Const(f64),
    /// Element `i` is `start + i * step`.
    Iota { start: f64, step: f64 },
    /// Independent uniform draws in `[lo, hi)`; seed 0 when none is given.
    Uniform { lo: f64, hi: f64, seed: Option<u64> },
    /// A file's contents (module doc).
    File(PathBuf),
}

/// `NAME=SPEC`: a spec for one kernel parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct DataArg {
    pub param: String,
    pub spec: DataSpec,
}

/// A hint for one kernel parameter (named as `--arg` names parameters).
#[derive(Debug, Clone, PartialEq)]
pub struct BufferHint {
    pub param: String,
    pub hint: DataHint,
}

/// Most text numbers or bytes a file hint may hold (256 Mi elements).
pub const MAX_FILE_ELEMENTS: usize = 1 << 28;

/// The forms a SPEC may take, for error messages.
const FORMS: &str = "const:V, iota[:START[:STEP]], uniform:LO:HI[:SEED] or file:PATH";

impl fmt::Display for DataSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataSpec::Const(v) => write!(f, "const:{v}"),
            DataSpec::Iota { start, step } => write!(f, "iota:{start}:{step}"),
            DataSpec::Uniform { lo, hi, seed } => match seed {
                Some(s) => write!(f, "uniform:{lo}:{hi}:{s}"),
                None => write!(f, "uniform:{lo}:{hi}"),
            },
            DataSpec::File(p) => write!(f, "file:{}", p.display()),
        }
    }
}

impl fmt::Display for DataArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.param, self.spec)
    }
}

impl DataArg {
    /// Reads `NAME=SPEC` (module doc); errors name `field` (the input or flag that gave it).
    pub fn parse(field: &str, text: &str) -> Result<DataArg> {
        let (name, spec) = text.split_once('=').ok_or_else(|| {
            Error::invalid(
                field,
                format!("expected NAME=SPEC (SPEC: {FORMS}), got `{text}`"),
            )
        })?;
        let name = name.trim();
        if name.is_empty() {
            return Err(Error::invalid(field, format!("`{text}` names no argument")));
        }
        Ok(DataArg {
            param: name.to_string(),
            spec: DataSpec::parse(field, spec.trim())?,
        })
    }

    /// The hint for the emulator, a relative file path taken from `base` (module doc).
    pub fn load(&self, base: Option<&Path>) -> Result<BufferHint> {
        Ok(BufferHint {
            param: self.param.clone(),
            hint: self.spec.load(base)?,
        })
    }
}

impl DataSpec {
    /// Reads a SPEC (module doc); errors name `field`.
    pub fn parse(field: &str, spec: &str) -> Result<DataSpec> {
        if let Some(path) = spec.strip_prefix("file:") {
            if path.trim().is_empty() {
                return Err(Error::invalid(field, "`file:` needs a path"));
            }
            return Ok(DataSpec::File(PathBuf::from(path)));
        }
        let parts: Vec<&str> = spec.split(':').collect();
        let num = |k: usize, what: &str| -> Result<f64> {
            let text = parts[k];
            finite(text).ok_or_else(|| {
                Error::invalid(
                    field,
                    format!("`{spec}`: {what} `{text}` is not a finite number"),
                )
            })
        };
        Ok(match parts[0] {
            "const" if parts.len() == 2 => DataSpec::Const(num(1, "the value")?),
            "iota" if parts.len() <= 3 => DataSpec::Iota {
                start: if parts.len() > 1 {
                    num(1, "START")?
                } else {
                    0.0
                },
                step: if parts.len() > 2 {
                    num(2, "STEP")?
                } else {
                    1.0
                },
            },
            "uniform" if parts.len() == 3 || parts.len() == 4 => {
                let (lo, hi) = (num(1, "LO")?, num(2, "HI")?);
                if hi <= lo {
                    return Err(Error::invalid(
                        field,
                        format!("`{spec}`: the range [LO, HI) is empty (the upper bound HI must exceed the lower bound LO)"),
                    ));
                }
                let seed = match parts.get(3) {
                    Some(s) => Some(s.trim().parse::<u64>().map_err(|_| {
                        Error::invalid(
                            field,
                            format!("`{spec}`: the seed `{s}` is not a whole number"),
                        )
                    })?),
                    None => None,
                };
                DataSpec::Uniform { lo, hi, seed }
            }
            _ => {
                return Err(Error::invalid(
                    field,
                    format!("`{spec}` is not a data hint; write {FORMS}"),
                ))
            }
        })
    }

    /// The hint for the emulator: values as given, a file read (relative to `base` when
    /// given) with the capped reader.
    pub fn load(&self, base: Option<&Path>) -> Result<DataHint> {
        Ok(match self {
            DataSpec::Const(v) => DataHint::Const(*v),
            DataSpec::Iota { start, step } => DataHint::Iota {
                start: *start,
                step: *step,
            },
            DataSpec::Uniform { lo, hi, seed } => DataHint::Uniform {
                lo: *lo,
                hi: *hi,
                seed: seed.unwrap_or(0),
            },
            DataSpec::File(path) => {
                let path = match base {
                    Some(b) if path.is_relative() => b.join(path),
                    _ => path.clone(),
                };
                let bytes =
                    crate::error::read_capped(&path, MAX_FILE_ELEMENTS as u64, "a data hint")?;
                DataHint::from_file(&path.display().to_string(), bytes)?
            }
        })
    }
}

impl DataHint {
    /// A file hint from the file's bytes: text numbers for `.txt`/`.csv`, else raw bytes.
    /// `origin` names the file in errors.
    pub fn from_file(origin: &str, bytes: Vec<u8>) -> Result<DataHint> {
        let lower = origin.to_ascii_lowercase();
        if !(lower.ends_with(".txt") || lower.ends_with(".csv")) {
            if bytes.len() > MAX_FILE_ELEMENTS {
                return Err(Error::file(origin, "is too large for a data hint"));
            }
            return Ok(DataHint::Bytes(Arc::new(bytes)));
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| Error::file(origin, "is not text (a .txt/.csv hint holds numbers)"))?;
        let mut values = Vec::new();
        for (n, line) in text.lines().enumerate() {
            for word in line
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|w| !w.is_empty())
            {
                let v = finite(word).ok_or_else(|| {
                    Error::file(
                        origin,
                        format!("line {}: `{word}` is not a finite number", n + 1),
                    )
                })?;
                values.push(v);
                if values.len() > MAX_FILE_ELEMENTS {
                    return Err(Error::file(
                        origin,
                        "holds too many numbers for a data hint",
                    ));
                }
            }
        }
        Ok(DataHint::Values(Arc::new(values)))
    }

    /// The bytes the hint describes from the base, when bounded (files).
    pub fn extent_bytes(&self, elem_bytes: u64) -> Option<u64> {
        match self {
            DataHint::Values(v) => Some(v.len() as u64 * elem_bytes),
            DataHint::Bytes(b) => Some(b.len() as u64),
            _ => None,
        }
    }

    /// The value of a load of type `ty` (element size `elem_bytes`) at byte `offset` from the
    /// buffer's base, as the register's bits; `None` when unknown (past a file's end, a type
    /// the hint cannot give).
    pub fn value_at(&self, offset: u64, ty: Ty, elem_bytes: u64) -> Option<u64> {
        let elem_bytes = elem_bytes.max(1);
        if let DataHint::Bytes(b) = self {
            let start = usize::try_from(offset).ok()?;
            let end = start.checked_add(elem_bytes as usize)?;
            let bytes = b.get(start..end)?;
            let mut v = 0u64;
            for (k, &x) in bytes.iter().enumerate().take(8) {
                v |= u64::from(x) << (8 * k);
            }
            return Some(v);
        }
        let i = offset / elem_bytes;
        let x = match self {
            DataHint::Const(v) => *v,
            DataHint::Iota { start, step } => start + i as f64 * step,
            DataHint::Uniform { lo, hi, seed } => lo + unit(*seed, i) * (hi - lo),
            DataHint::Values(v) => *v.get(usize::try_from(i).ok()?)?,
            DataHint::Bytes(_) => return None,
        };
        bits_of(x, ty)
    }

    /// A short text for notes.
    pub fn describe(&self) -> String {
        match self {
            DataHint::Const(v) => format!("const:{v}"),
            DataHint::Iota { start, step } => format!("iota:{start}:{step}"),
            DataHint::Uniform { lo, hi, seed } => format!("uniform:{lo}:{hi}:{seed}"),
            DataHint::Values(v) => format!("{} text numbers from a file", v.len()),
            DataHint::Bytes(b) => format!("{} raw bytes from a file", b.len()),
        }
    }
}

/// A finite number written as text (surrounding blanks allowed).
fn finite(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// A number as the bits of a register of type `ty`: floats rounded to the type, integers the
/// floor of the number wrapped to the type's width (as a C cast of an integral value).
pub(super) fn bits_of(x: f64, ty: Ty) -> Option<u64> {
    if ty.float {
        return match ty.bits {
            32 => Some(u64::from((x as f32).to_bits())),
            64 => Some(x.to_bits()),
            _ => None,
        };
    }
    let v = x.floor() as i64 as u64;
    Some(if ty.bits >= 64 {
        v
    } else {
        v & ((1u64 << ty.bits) - 1)
    })
}

/// A number in [0, 1) from a seed and an element index (SplitMix64's finaliser on their mix):
/// the same element always gets the same value.
fn unit(seed: u64, i: u64) -> f64 {
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(i.wrapping_add(1).wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    const F32: Ty = Ty {
        bits: 32,
        signed: true,
        float: true,
    };
    const S32: Ty = Ty {
        bits: 32,
        signed: true,
        float: false,
    };

    #[test]
    fn specs_parse_and_print_back() {
        let p = |t: &str| DataArg::parse("data", t).unwrap();
        assert_eq!(
            p("x=const:0"),
            DataArg {
                param: "x".into(),
                spec: DataSpec::Const(0.0)
            }
        );
        assert_eq!(
            p("a=iota").spec,
            DataSpec::Iota {
                start: 0.0,
                step: 1.0
            }
        );
        assert_eq!(
            p("a=iota:5").spec,
            DataSpec::Iota {
                start: 5.0,
                step: 1.0
            }
        );
        assert_eq!(
            p("a=iota:5:-2").spec,
            DataSpec::Iota {
                start: 5.0,
                step: -2.0
            }
        );
        assert_eq!(
            p("points = uniform:-1:1:7").spec,
            DataSpec::Uniform {
                lo: -1.0,
                hi: 1.0,
                seed: Some(7)
            }
        );
        // A path keeps its colons.
        assert_eq!(
            p("b=file:/tmp/x:y.bin").spec,
            DataSpec::File(PathBuf::from("/tmp/x:y.bin"))
        );
        // What is printed reads back as the same spec; a missing seed stays missing.
        for text in [
            "points=uniform:-1:1:7",
            "u=uniform:0:8",
            "c=const:2.5",
            "i=iota:5:-2",
            "f=file:a.bin",
        ] {
            assert_eq!(p(text).to_string(), text);
            assert_eq!(p(&p(text).to_string()), p(text));
        }
        // Without a seed the emulator draws with seed 0.
        assert_eq!(
            p("u=uniform:0:8").spec.load(None).unwrap(),
            DataHint::Uniform {
                lo: 0.0,
                hi: 8.0,
                seed: 0
            }
        );
    }

    #[test]
    fn mistakes_are_explained_and_name_the_field() {
        let e = |t: &str| DataArg::parse("--data", t).unwrap_err().to_string();
        for (bad, says) in [
            ("a", "expected NAME=SPEC"),
            ("=const:1", "names no argument"),
            ("a=const", "not a data hint"),
            ("a=zeros", "`zeros` is not a data hint"),
            ("a=const:x", "`x`"),
            ("a=iota:1:2:3", "not a data hint"),
            ("a=uniform:1:0", "upper bound"),
            ("a=uniform:3:3", "upper bound"),
            ("a=uniform:0", "not a data hint"),
            ("a=uniform:0:1:z", "seed"),
            ("a=gauss:0:1", "not a data hint"),
            ("a=file:", "needs a path"),
        ] {
            let m = e(bad);
            assert!(m.contains(says) && m.contains("--data"), "{bad}: {m}");
        }
        // A file is read when loaded, relative to the base given.
        let err = DataSpec::File(PathBuf::from("no/such.bin"))
            .load(Some(Path::new("/nonexistent-base")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("/nonexistent-base/no/such.bin"), "{err}");
    }

    #[test]
    fn values_follow_the_element_index_and_type() {
        // iota:10:0.5 as floats: element 3 (byte offset 12) is 10 + 3 * 0.5 = 11.5.
        let h = DataHint::Iota {
            start: 10.0,
            step: 0.5,
        };
        assert_eq!(h.value_at(12, F32, 4), Some(u64::from(11.5f32.to_bits())));
        // As integers the same element is floor(11.5) = 11.
        assert_eq!(h.value_at(12, S32, 4), Some(11));
        // -1 as s32 wraps to 0xffff_ffff.
        assert_eq!(DataHint::Const(-1.0).value_at(0, S32, 4), Some(0xffff_ffff));
        // Raw bytes: little-endian, at the byte offset.
        let b = DataHint::Bytes(Arc::new(vec![1, 2, 3, 4, 5]));
        assert_eq!(b.value_at(1, S32, 4), Some(0x0504_0302));
        assert_eq!(b.value_at(2, S32, 4), None);
        // Text numbers: by element.
        let t = DataHint::from_file("v.txt", b"1, 2\n3 4.5\n".to_vec()).unwrap();
        assert_eq!(t.value_at(12, F32, 4), Some(u64::from(4.5f32.to_bits())));
        assert_eq!(t.value_at(16, F32, 4), None);
        assert!(DataHint::from_file("v.csv", b"1,x".to_vec())
            .unwrap_err()
            .to_string()
            .contains("line 1"));
    }

    #[test]
    fn uniform_values_stay_in_range_and_spread() {
        // 8 bins, 10,000 elements: every bin gets 1,250 +- 5 sigma (sigma = sqrt(10000 * 1/8 *
        // 7/8) = 33).
        let h = DataHint::Uniform {
            lo: 0.0,
            hi: 8.0,
            seed: 42,
        };
        let mut bins = [0u32; 8];
        for i in 0..10_000u64 {
            let v = h.value_at(4 * i, S32, 4).unwrap();
            assert!(v < 8, "{v}");
            bins[v as usize] += 1;
        }
        assert!(bins.iter().all(|&b| (1085..=1415).contains(&b)), "{bins:?}");
        // The same element twice gives the same value; another seed another sequence.
        assert_eq!(h.value_at(40, S32, 4), h.value_at(40, S32, 4));
        let other = DataHint::Uniform {
            lo: 0.0,
            hi: 8.0,
            seed: 43,
        };
        let same = (0..64u64)
            .filter(|&i| h.value_at(4 * i, S32, 4) == other.value_at(4 * i, S32, 4))
            .count();
        assert!(same < 32, "{same}");
    }
}
