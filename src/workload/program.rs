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
