//! Kernel programs (puchala2022, section 5.3) derived from a PTX kernel.
//!
//! Rules: a calculation period is a maximal run of instructions without `ld.global` /
//! `st.global` (other loads such as `ld.param` count as ordinary instructions); it lasts
//! `instructions - 1 + 10` cycles. Each global load or store becomes a memory operation whose
//! duration the caller supplies ([`MemoryDurations`]), since puchala2022 calibrates them against
//! measurements. Natural loops become repeat blocks with their trip count; a loop whose count is
//! not derivable gets a named count `trip_line_<L>` (L = the header's PTX line) for the user to
//! give. Blocks are taken in text order and every instruction counts once, whichever branch it
//! sits on (the paper's rule is static). This module does not calibrate anything.
//!
//! This is the one place in `ptx` that uses the rest of the crate: the program types of
//! `workload::program`, shared with the puchala model.

use crate::workload::program::{Op, Program, RepeatCount};

use super::cfg::Cfg;
use super::classify::{classify, Class, Space};
use super::loops::{Loop, TripCount};

/// Durations of global memory operations, in cycles from issue to completion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryDurations {
    pub load_cycles: f64,
    pub store_cycles: f64,
}

/// Cycles of a calculation period of `instructions` instructions (puchala2022: n - 1 + 10).
pub fn calc_period_cycles(instructions: u64) -> f64 {
    (instructions as f64) - 1.0 + 10.0
}

/// The repeat count of a loop for a kernel program.
pub fn repeat_count(lp: &Loop) -> RepeatCount {
    match &lp.trip_count {
        TripCount::Known(n) => RepeatCount::Fixed(*n),
        TripCount::Expr(e) => RepeatCount::Param(e.clone()),
        TripCount::Unknown => RepeatCount::Param(format!("trip_line_{}", lp.header_line)),
    }
}

/// Deepest loop nesting turned into nested repeat blocks; deeper loops are emitted as plain
/// code of their enclosing repeat (keeps recursion bounded on adversarial input).
pub const MAX_REPEAT_DEPTH: u32 = 32;

/// Derives the kernel program of a function from its graph and loops (outer loops first, as
/// returned by `loops::find_loops`).
pub fn derive(cfg: &Cfg, loops: &[Loop], durations: MemoryDurations) -> Program {
    let n = cfg.blocks.len();
    let mut header_loop = vec![None; n];
    let mut innermost = vec![None; n];
    for (i, l) in loops.iter().enumerate() {
        header_loop[l.header] = Some(i);
        for &b in &l.blocks {
            innermost[b] = Some(i);
        }
    }
    let ctx = Ctx {
        cfg,
        loops,
        header_loop,
        innermost,
        durations,
    };
    let all: Vec<usize> = (0..n).collect();
    Program {
        ops: emit(&ctx, &all, None),
    }
}

struct Ctx<'a, 'f> {
    cfg: &'a Cfg<'f>,
    loops: &'a [Loop],
    header_loop: Vec<Option<usize>>,
    /// Innermost loop of each block (loops are ordered outer first).
    innermost: Vec<Option<usize>>,
    durations: MemoryDurations,
}

fn flush(ops: &mut Vec<Op>, calc: &mut u64) {
    if *calc > 0 {
        ops.push(Op::Calc(calc_period_cycles(*calc)));
        *calc = 0;
    }
}

/// Whether loop `li` lies inside loop `outer` (or anywhere, for `outer` None), counting depth.
fn nested_in(loops: &[Loop], li: usize, outer: Option<usize>) -> bool {
    let mut x = Some(li);
    while let Some(i) = x {
        if Some(i) == outer {
            return true;
        }
        x = loops[i].parent;
    }
    outer.is_none()
}

fn emit(ctx: &Ctx, blocks: &[usize], current: Option<usize>) -> Vec<Op> {
    let (cfg, loops) = (ctx.cfg, ctx.loops);
    let depth = current.map_or(0, |c| loops[c].depth);
    let mut ops = Vec::new();
    let mut calc = 0u64;
    for &b in blocks {
        if depth < MAX_REPEAT_DEPTH {
            // A loop directly inside the current one (or outermost at top level) headed here.
            if let Some(li) = ctx.header_loop[b].filter(|&li| loops[li].parent == current) {
                flush(&mut ops, &mut calc);
                let inner = emit(ctx, &loops[li].blocks, Some(li));
                ops.push(Op::Repeat {
                    count: repeat_count(&loops[li]),
                    ops: inner,
                });
                continue;
            }
            // Blocks of nested loops are emitted with their loop's header.
            if let Some(inner) = ctx.innermost[b] {
                if Some(inner) != current && nested_in(loops, inner, current) {
                    continue;
                }
            }
        }
        let blk = &cfg.blocks[b];
        for i in &cfg.instrs[blk.start..blk.end] {
            match classify(i) {
                Class::Load(Space::Global) => {
                    flush(&mut ops, &mut calc);
                    ops.push(Op::Load(ctx.durations.load_cycles));
                }
                Class::Store(Space::Global) => {
                    flush(&mut ops, &mut calc);
                    ops.push(Op::Store(ctx.durations.store_cycles));
                }
                _ => calc += 1,
            }
        }
    }
    flush(&mut ops, &mut calc);
    ops
}
