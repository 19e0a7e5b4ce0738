//! The PTX frontend: reads PTX text as nvcc, NVRTC and clang (CUDA and OpenCL) emit it, and
//! derives what the models need from it.
//!
//! Passes, one file each, in pipeline order: `lexer` -> `parser` (-> `ast::Module` plus
//! `diag::Diagnostics`) -> `cfg` (blocks, dominators) -> `loops` (natural loops, trip counts)
//! -> `classify` (instruction classes from one table); `resources` reads ptxas / NVRTC /
//! cuobjdump reports.
//!
//! What it does NOT do: execute PTX, check types, or read SASS, and it knows nothing of the
//! performance models: the puchala2022 kernel programs and the per-kernel summary built from
//! these passes live in the core crate (`kerneltime::ptx::{program, analysis}`). This crate
//! depends on nothing of kerneltime's. Nothing here panics on input.

pub mod ast;
pub mod cfg;
pub mod classify;
pub mod diag;
pub mod lexer;
pub mod loops;
pub mod parser;
pub mod resources;

pub use parser::{parse, parse_bytes, parse_each, text_of};
