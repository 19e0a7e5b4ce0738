//! The PTX frontend: reads PTX text as nvcc, NVRTC and clang (CUDA and OpenCL) emit it, and
//! derives what the models need from it.
//!
//! Passes, one file each, in pipeline order: `lexer` -> `parser` (-> `ast::Module` plus
//! `diag::Diagnostics`) -> `cfg` (blocks, dominators) -> `loops` (natural loops, trip counts)
//! -> `classify` (instruction classes from one table) -> `program` (puchala2022 kernel programs);
//! `resources` reads ptxas / NVRTC / cuobjdump reports; `analysis` combines them per kernel.
//!
//! What it does NOT do: execute PTX, check types, or read SASS. Apart from `program` and
//! `analysis` (which produce `workload::program` values) nothing here imports the rest of the
//! crate, so the module can become its own crate in one step. Nothing here panics on input.

pub mod analysis;
pub mod ast;
pub mod cfg;
pub mod classify;
pub mod diag;
pub mod lexer;
pub mod loops;
pub mod parser;
pub mod program;
pub mod resources;

pub use parser::{parse, parse_bytes};
