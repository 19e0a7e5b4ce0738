//! The case-study kernels of puchala2022 as built-in kernel specifications (Listings 4, 7, 9
//! with the launches of eq 17 and 18), and the DWT complexity formulas (eq 4-11).
//!
//! A [`KernelSpec`] is what `predict --kernel NAME` and `predict --program FILE` both produce:
//! a kernel program plus how it is launched (total threads and number of launches, as
//! expressions in the kernel parameters). Built-ins use the parameter names `n` (transform or
//! vector size) and `k` (filter length); lookups ignore case. This module holds data and
//! formulas only; it does not simulate.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::workload::params::ParamValues;
use crate::workload::program::{LaunchSpec, Op, Program, ProgramFile, RepeatCount};

/// A kernel program with its launch description.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSpec {
    /// The built-in name or the program file's `name` (used in output and, for built-ins, as
    /// the key of the device's `puchala` parameters).
    pub name: String,
    pub program: Program,
    pub launch: LaunchSpec,
    /// The built-in this spec is, if any (then parameter checks apply).
    pub builtin: Option<Builtin>,
}

impl KernelSpec {
    /// A spec from a program file.
    pub fn from_file(file: ProgramFile, fallback_name: &str) -> Self {
        Self {
            name: file.name.unwrap_or_else(|| fallback_name.to_string()),
            program: file.program,
            launch: file.launch,
            builtin: None,
        }
    }
}

/// The built-in kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Builtin {
    /// Matrix-based DWT (Listing 7): one launch of `n` threads.
    DwtMatrix,
    /// Lattice-structure DWT (Listing 9): `k/2 + 1` launches of `n/2` threads.
    DwtLattice,
    /// Naive vector-by-matrix multiplication (Listing 4): one launch of `n` threads.
    MtxMulVec,
}

impl Builtin {
    pub const ALL: [Builtin; 3] = [Builtin::DwtMatrix, Builtin::DwtLattice, Builtin::MtxMulVec];

    /// The name used by `--kernel` and as the key of `device.puchala`.
    pub fn name(self) -> &'static str {
        match self {
            Builtin::DwtMatrix => "dwt-matrix",
            Builtin::DwtLattice => "dwt-lattice",
            Builtin::MtxMulVec => "mtx-mul-vec",
        }
    }

    /// Finds a built-in by name (case, `_` and `-` ignored).
    pub fn parse(name: &str) -> Result<Self> {
        let n = crate::device::normalize(name);
        Self::ALL
            .into_iter()
            .find(|b| crate::device::normalize(b.name()) == n)
            .ok_or_else(|| {
                Error::invalid(
                    "kernel",
                    format!(
                        "unknown kernel `{name}`; built-in kernels: {}",
                        Self::ALL.map(Builtin::name).join(", ")
                    ),
                )
            })
    }

    /// The kernel program and its launch.
    pub fn spec(self) -> KernelSpec {
        let rep = |count: &str, ops: Vec<Op>| Op::Repeat {
            count: RepeatCount::Param(count.into()),
            ops,
        };
        let (ops, threads, launches) = match self {
            Builtin::DwtMatrix => (
                vec![
                    Op::Calc(33.0),
                    rep("k", vec![Op::Load(120.0), Op::Load(160.0), Op::Calc(17.0)]),
                    Op::Store(100.0),
                ],
                "n",
                RepeatCount::Fixed(1),
            ),
            Builtin::DwtLattice => (
                vec![
                    Op::Calc(30.0),
                    Op::Load(10.0),
                    Op::Load(10.0),
                    Op::Load(120.0),
                    Op::Load(120.0),
                    Op::Calc(18.0),
                    Op::Store(100.0),
                    Op::Store(100.0),
                ],
                "n/2",
                RepeatCount::Param("k/2 + 1".into()),
            ),
            Builtin::MtxMulVec => (
                vec![
                    Op::Calc(27.0),
                    rep(
                        "n",
                        vec![
                            Op::Load(60.0),
                            Op::Load(60.0),
                            Op::Calc(10.0),
                            Op::Store(60.0),
                            Op::Calc(14.0),
                        ],
                    ),
                ],
                "n",
                RepeatCount::Fixed(1),
            ),
        };
        KernelSpec {
            name: self.name().to_string(),
            program: Program { ops },
            launch: LaunchSpec {
                threads: Some(RepeatCount::Param(threads.into())),
                launches,
            },
            builtin: Some(self),
        }
    }

    /// Checks the parameters the built-in needs: `n` (at least 1; even for the lattice) and,
    /// for the DWTs, an even filter length `k` of at least 2.
    pub fn check_params(self, params: &ParamValues) -> Result<()> {
        let n = params.get_integer("n")?.ok_or_else(|| {
            Error::missing(
                "param n",
                format!("{} needs the size n, e.g. `param` n=1024", self.name()),
            )
        })?;
        let min_n = if self == Builtin::DwtLattice { 2 } else { 1 };
        if n < min_n || (self == Builtin::DwtLattice && n % 2 != 0) {
            return Err(Error::invalid(
                "param n",
                format!(
                    "{} needs {}, got {n}",
                    self.name(),
                    if self == Builtin::DwtLattice {
                        "an even size of at least 2"
                    } else {
                        "a size of at least 1"
                    }
                ),
            ));
        }
        if self != Builtin::MtxMulVec {
            let k = params.get_integer("k")?.ok_or_else(|| {
                Error::missing(
                    "param k",
                    format!(
                        "{} needs the filter length k, e.g. `param` k=8",
                        self.name()
                    ),
                )
            })?;
            if k < 2 || k % 2 != 0 {
                return Err(Error::invalid(
                    "param k",
                    format!("the filter length must be even and at least 2, got {k}"),
                ));
            }
        }
        Ok(())
    }
}

/// Operation counts and parallel steps of the two DWT methods (paper eq 4-11), for a
/// transform of size `n` (1D) or an `n x n` image (2D) with filters of length `k`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DwtComplexity {
    /// Additions and multiplications, 1D (eq 4 matrix, eq 5 lattice).
    pub operations_1d: f64,
    /// Sequential steps with unlimited processors, 1D (eq 6, eq 7).
    pub steps_1d: f64,
    /// Operations for the 2D row-column transform (eq 8, eq 9).
    pub operations_2d: f64,
    /// Steps for the 2D transform (eq 10, eq 11).
    pub steps_2d: f64,
}

/// Matrix-based DWT: `n (2k - 1)` operations, `2k - 1` steps; 2D: each row (padded by `k - 2`
/// cyclic repeats) and column pass is a 1D transform of `n (n + k - 2)` values, twice.
pub fn dwt_matrix_complexity(n: f64, k: f64) -> DwtComplexity {
    let ops_1d = |n: f64| n * (2.0 * k - 1.0);
    let steps = 2.0 * k - 1.0;
    DwtComplexity {
        operations_1d: ops_1d(n),
        steps_1d: steps,
        operations_2d: 2.0 * ops_1d(n * (n + k - 2.0)),
        steps_2d: 2.0 * steps,
    }
}

/// Lattice DWT: `n (k + 1)` operations (each butterfly: 2 multiplications, 2 additions),
/// `2k + 2` steps; 2D as for the matrix method.
pub fn dwt_lattice_complexity(n: f64, k: f64) -> DwtComplexity {
    let ops_1d = |n: f64| n * (k + 1.0);
    let steps = 2.0 * k + 2.0;
    DwtComplexity {
        operations_1d: ops_1d(n),
        steps_1d: steps,
        operations_2d: 2.0 * ops_1d(n * (n + k - 2.0)),
        steps_2d: 2.0 * steps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complexities_by_hand() {
        // n = 1024, k = 8: matrix 1024 * 15 = 15360 operations, 15 steps; lattice 1024 * 9 =
        // 9216, 18 steps. 2D: 2 * (1024 * 1030) * 15 = 31641600; 2 * 1024 * 1030 * 9 = 18984960.
        let m = dwt_matrix_complexity(1024.0, 8.0);
        assert_eq!((m.operations_1d, m.steps_1d), (15360.0, 15.0));
        assert_eq!((m.operations_2d, m.steps_2d), (31_641_600.0, 30.0));
        let l = dwt_lattice_complexity(1024.0, 8.0);
        assert_eq!((l.operations_1d, l.steps_1d), (9216.0, 18.0));
        assert_eq!((l.operations_2d, l.steps_2d), (18_984_960.0, 36.0));
    }

    #[test]
    fn builtins_expand_as_the_listings() {
        let p = ParamValues::new([("N", 64.0), ("K", 4.0)]);
        // Listing 7 with K = 4: 1 + 4 * 3 + 1 operations.
        assert_eq!(
            Builtin::DwtMatrix.spec().program.expand(&p).unwrap().len(),
            14
        );
        assert_eq!(
            Builtin::DwtLattice.spec().program.expand(&p).unwrap().len(),
            8
        );
        // Listing 4 with N = 64: 1 + 64 * 5.
        assert_eq!(
            Builtin::MtxMulVec.spec().program.expand(&p).unwrap().len(),
            321
        );
        let l = Builtin::DwtLattice.spec().launch;
        assert_eq!(l.threads.unwrap().evaluate(&p, "t").unwrap(), 32);
        assert_eq!(l.launches.evaluate(&p, "l").unwrap(), 3);
    }

    #[test]
    fn parameter_checks() {
        assert!(Builtin::parse("DWT_Lattice").is_ok());
        assert!(Builtin::parse("fft").is_err());
        let ok = ParamValues::new([("n", 64.0), ("k", 8.0)]);
        assert!(Builtin::DwtLattice.check_params(&ok).is_ok());
        for bad in [
            [("n", 63.0), ("k", 8.0)],
            [("n", 64.0), ("k", 7.0)],
            [("n", 0.0), ("k", 8.0)],
        ] {
            assert!(Builtin::DwtLattice
                .check_params(&ParamValues::new(bad))
                .is_err());
        }
        let e = Builtin::DwtMatrix
            .check_params(&ParamValues::new([("n", 64.0)]))
            .unwrap_err();
        assert!(e.to_string().contains("param k"), "{e}");
        assert!(Builtin::MtxMulVec
            .check_params(&ParamValues::new([("n", 7.0)]))
            .is_ok());
    }
}
