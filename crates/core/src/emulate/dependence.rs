//! ILP and MLP of warp traces by windowed dependency chains: in each window of [`WINDOW`] issued
//! instructions, the instructions divided by the longest chain of register dependences among
//! them (ILP), and the global/local loads divided by the most such loads along one chain (MLP).
//! The figures of the analytical models (`model::from_trace`) are means of these per warp.
//!
//! What it does NOT do: weigh warps by the blocks they stand for, or know any latency.

use super::{Emulation, NO_REG};
use crate::workload::trace::{LatencyClass, WarpTrace};

/// Instructions per window of the ILP/MLP analysis.
pub const WINDOW: usize = 64;

/// Per warp of `em`, in `em.warps` order: (ILP, MLP), each at least 1.
pub(super) fn parallelism(em: &Emulation) -> Vec<(f64, f64)> {
    let mut writers = Writers::new(em);
    em.warps
        .iter()
        .map(|w| ilp_mlp(w, em, &mut writers))
        .collect()
}

/// The last writer of each register inside the current window, for [`ilp_mlp`]: (dependency
/// depth, memory depth, window stamp) per register number. An entry counts only when its stamp
/// is the current window's, so a new window needs no clearing.
struct Writers {
    table: Vec<(u32, u32, u32)>,
    window: u32,
}

impl Writers {
    /// A table for every register `em`'s instructions name.
    fn new(em: &Emulation) -> Self {
        Self {
            table: vec![(0, 0, 0); super::register_count(&em.regs)],
            window: 0,
        }
    }

    fn next_window(&mut self) {
        self.window += 1;
    }

    fn get(&self, reg: u16) -> Option<(u32, u32)> {
        let &(d, md, stamp) = self.table.get(usize::from(reg))?;
        (stamp == self.window).then_some((d, md))
    }

    fn set(&mut self, reg: u16, d: u32, md: u32) {
        self.table[usize::from(reg)] = (d, md, self.window);
    }
}

/// ILP and MLP of one trace by windowed dependency chains.
fn ilp_mlp(w: &WarpTrace, em: &Emulation, writer: &mut Writers) -> (f64, f64) {
    let (mut ilp_sum, mut ilp_n, mut mlp_sum, mut mlp_n) = (0.0, 0usize, 0.0, 0usize);
    for chunk in w.ops.chunks(WINDOW) {
        writer.next_window();
        let (mut max_depth, mut max_mdepth, mut loads) = (1u32, 0u32, 0u32);
        for op in chunk {
            let Some(r) = em.regs.get(op.instr as usize) else {
                continue;
            };
            let (mut d, mut md) = (0u32, 0u32);
            for &s in r.src.iter().filter(|&&s| s != NO_REG) {
                if let Some((pd, pmd)) = writer.get(s) {
                    d = d.max(pd);
                    md = md.max(pmd);
                }
            }
            let is_load = matches!(
                op.latency,
                LatencyClass::GlobalLoad | LatencyClass::LocalLoad
            );
            let d = d + 1;
            let md = md + u32::from(is_load);
            if is_load {
                loads += 1;
            }
            max_depth = max_depth.max(d);
            max_mdepth = max_mdepth.max(md);
            for &x in r.dst.iter().filter(|&&x| x != NO_REG) {
                writer.set(x, d, md);
            }
        }
        ilp_sum += chunk.len() as f64 / f64::from(max_depth);
        ilp_n += 1;
        if loads > 0 {
            mlp_sum += f64::from(loads) / f64::from(max_mdepth.max(1));
            mlp_n += 1;
        }
    }
    let ilp = if ilp_n == 0 {
        1.0
    } else {
        ilp_sum / ilp_n as f64
    };
    let mlp = if mlp_n == 0 {
        1.0
    } else {
        mlp_sum / mlp_n as f64
    };
    (ilp.max(1.0), mlp.max(1.0))
}
