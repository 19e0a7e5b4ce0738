//! Control-flow graph of one PTX function: basic blocks, edges, dominators, post-dominators.
//!
//! Blocks start at labels and after branches/returns; edges follow `bra` targets and fall-through.
//! Dominators use the iterative algorithm of Cooper, Harvey and Kennedy ("A Simple, Fast
//! Dominance Algorithm", 2001) on reverse post-order; post-dominators run the same algorithm on
//! the reversed graph with a virtual exit. This module does not find loops (see `loops`) and does
//! not follow calls into other functions; `brx.idx` jump tables get no edges (a diagnostic says so).

use std::collections::HashMap;

use serde::Serialize;

use super::ast::{Function, Instruction, Operand, Statement};
use super::diag::{Diagnostics, Severity};
use super::parser::BuildFx;

/// One basic block: a range of the function's instructions (see [`Cfg::instrs`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Block {
    /// The labels that name the block's start.
    pub labels: Vec<String>,
    /// Index of the first instruction and one past the last.
    pub start: usize,
    pub end: usize,
    pub succs: Vec<usize>,
    pub preds: Vec<usize>,
    /// PTX line of the first label or instruction.
    pub line: u32,
}

/// A function's control-flow graph. Block 0 is the entry.
#[derive(Debug, Clone)]
pub struct Cfg<'f> {
    /// The function's instructions in order.
    pub instrs: Vec<&'f Instruction>,
    pub blocks: Vec<Block>,
    /// Immediate dominator of each block (the entry's is itself; unreachable blocks: None).
    pub idom: Vec<Option<usize>>,
    /// Immediate post-dominator (None for the virtual exit or blocks that never reach an exit).
    /// `Some(blocks.len())` means the virtual exit.
    pub ipdom: Vec<Option<usize>>,
    /// Block of each instruction.
    pub block_of: Vec<usize>,
    /// Pre- and post-order numbers in the dominator tree (O(1) dominance queries).
    dom_pre: Vec<u32>,
    dom_post: Vec<u32>,
    /// The instructions that write each register, in order.
    pub defs: HashMap<&'f str, Vec<usize>, BuildFx>,
    /// The block each label starts.
    pub labels: HashMap<&'f str, usize, BuildFx>,
}

/// The register an instruction writes, if any.
pub fn dest(i: &Instruction) -> Option<&str> {
    use super::classify::{classify, Class};
    let writes_nothing = match classify(i) {
        Class::Store(_) | Class::Branch | Class::Fence => true,
        Class::Barrier => i.opcode != "mbarrier",
        Class::Atomic => i.opcode != "atom",
        Class::Other => matches!(i.opcode.as_str(), "prefetch" | "prefetchu"),
        _ => false,
    };
    if writes_nothing {
        return None;
    }
    match i.operands.first()? {
        Operand::Name(n) => Some(n.as_str()),
        Operand::Pair(a, _) => a.name(),
        _ => None,
    }
}

/// Pre/post numbering of the dominator tree by an explicit-stack DFS.
fn dom_numbering(idom: &[Option<usize>]) -> (Vec<u32>, Vec<u32>) {
    let n = idom.len();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut roots = Vec::new();
    for (b, d) in idom.iter().enumerate() {
        match d {
            Some(p) if *p != b => children[*p].push(b),
            Some(_) => roots.push(b),
            None => {}
        }
    }
    let mut pre = vec![u32::MAX; n];
    let mut post = vec![0u32; n];
    let mut clock = 0u32;
    for r in roots {
        let mut stack: Vec<(usize, usize)> = vec![(r, 0)];
        pre[r] = clock;
        clock += 1;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if let Some(&c) = children[node].get(*next) {
                *next += 1;
                pre[c] = clock;
                clock += 1;
                stack.push((c, 0));
            } else {
                post[node] = clock;
                clock += 1;
                stack.pop();
            }
        }
    }
    (pre, post)
}

fn is_terminator(i: &Instruction) -> bool {
    matches!(i.opcode.as_str(), "bra" | "brx" | "ret" | "exit" | "trap")
}

/// The label a `bra` jumps to.
pub fn branch_target(i: &Instruction) -> Option<&str> {
    if i.opcode != "bra" {
        return None;
    }
    i.operands.last().and_then(Operand::name)
}

impl<'f> Cfg<'f> {
    /// Builds the graph of a function; problems (unknown labels) go to `diags`.
    pub fn build(f: &'f Function, diags: &mut Diagnostics) -> Cfg<'f> {
        let mut instrs = Vec::with_capacity(f.body.len());
        let mut blocks: Vec<Block> = Vec::new();
        let mut label_block: HashMap<&'f str, usize, BuildFx> = HashMap::default();
        let mut cur = Block {
            labels: Vec::new(),
            start: 0,
            end: 0,
            succs: Vec::new(),
            preds: Vec::new(),
            line: f.line,
        };
        let mut cur_open = false; // whether `cur` has a label or instruction
        for s in &f.body {
            match s {
                Statement::Label { name, line } => {
                    if cur.end > cur.start {
                        let idx = instrs.len();
                        blocks.push(std::mem::replace(
                            &mut cur,
                            Block {
                                labels: Vec::new(),
                                start: idx,
                                end: idx,
                                succs: Vec::new(),
                                preds: Vec::new(),
                                line: *line,
                            },
                        ));
                    } else if !cur_open {
                        cur.line = *line;
                    }
                    cur.labels.push(name.clone());
                    label_block.insert(name.as_str(), blocks.len());
                    cur_open = true;
                }
                Statement::Instr(i) => {
                    if !cur_open {
                        cur.line = i.line;
                    }
                    cur_open = true;
                    instrs.push(i);
                    cur.end = instrs.len();
                    if is_terminator(i) {
                        let idx = instrs.len();
                        blocks.push(std::mem::replace(
                            &mut cur,
                            Block {
                                labels: Vec::new(),
                                start: idx,
                                end: idx,
                                succs: Vec::new(),
                                preds: Vec::new(),
                                line: i.line,
                            },
                        ));
                        cur_open = false;
                    }
                }
                Statement::Pragma { .. } => {}
            }
        }
        if cur_open || blocks.is_empty() {
            blocks.push(cur);
        }
        let n = blocks.len();
        let mut block_of = vec![0; instrs.len()];
        for (b, blk) in blocks.iter().enumerate() {
            for slot in &mut block_of[blk.start..blk.end] {
                *slot = b;
            }
        }
        // Edges.
        #[allow(clippy::needless_range_loop)] // `blocks[b]` is written at the end of the body
        for b in 0..n {
            let (start, end) = (blocks[b].start, blocks[b].end);
            let last = if end > start {
                Some(instrs[end - 1])
            } else {
                None
            };
            let mut succs = Vec::new();
            let mut falls = true;
            if let Some(i) = last {
                match i.opcode.as_str() {
                    "bra" => {
                        match branch_target(i).and_then(|l| label_block.get(l)) {
                            Some(&t) => succs.push(t),
                            None => diags.push(
                                Severity::Error,
                                i.line,
                                i.col,
                                format!("branch to an unknown label in `{}`", f.name),
                            ),
                        }
                        falls = i.guard.is_some();
                    }
                    "brx" => {
                        diags.push(
                            Severity::Warning,
                            i.line,
                            i.col,
                            "`brx.idx` jump-table targets are not followed",
                        );
                        falls = i.guard.is_some();
                    }
                    "ret" | "exit" | "trap" => falls = i.guard.is_some(),
                    _ => {}
                }
            }
            if falls && b + 1 < n && !succs.contains(&(b + 1)) {
                succs.push(b + 1);
            }
            blocks[b].succs = succs;
        }
        for b in 0..n {
            for s in blocks[b].succs.clone() {
                blocks[s].preds.push(b);
            }
        }
        let succ: Vec<Vec<usize>> = blocks.iter().map(|b| b.succs.clone()).collect();
        let pred: Vec<Vec<usize>> = blocks.iter().map(|b| b.preds.clone()).collect();
        let idom = dominators(&succ, &pred, 0);
        // Reverse graph with a virtual exit `n` that every exiting block flows into.
        let mut rsucc: Vec<Vec<usize>> = pred.clone();
        let mut rpred: Vec<Vec<usize>> = succ.clone();
        rsucc.push(Vec::new());
        rpred.push(Vec::new());
        for b in 0..n {
            if succ[b].is_empty() {
                rsucc[n].push(b);
                rpred[b].push(n);
            }
        }
        let mut ipdom = dominators(&rsucc, &rpred, n);
        ipdom.truncate(n);
        let (dom_pre, dom_post) = dom_numbering(&idom);
        let mut defs: HashMap<&'f str, Vec<usize>, BuildFx> =
            HashMap::with_capacity_and_hasher(f.registers.len().max(16), BuildFx::default());
        for (k, i) in instrs.iter().enumerate() {
            if let Some(d) = dest(i) {
                defs.entry(d).or_default().push(k);
            }
        }
        Cfg {
            instrs,
            blocks,
            idom,
            ipdom,
            block_of,
            dom_pre,
            dom_post,
            defs,
            labels: label_block,
        }
    }

    /// Number of edges.
    pub fn edge_count(&self) -> usize {
        self.blocks.iter().map(|b| b.succs.len()).sum()
    }

    /// Whether block `a` dominates block `b` (every block dominates itself; unreachable
    /// blocks dominate nothing and are dominated by nothing but themselves).
    pub fn dominates(&self, a: usize, b: usize) -> bool {
        if a == b {
            return true;
        }
        match (self.dom_pre.get(a), self.dom_pre.get(b)) {
            (Some(&pa), Some(&pb)) if pa != u32::MAX && pb != u32::MAX => {
                pa <= pb && self.dom_post[b] <= self.dom_post[a]
            }
            _ => false,
        }
    }

    /// The definitions of `reg` (instruction indices, in order).
    pub fn defs_of(&self, reg: &str) -> &[usize] {
        self.defs.get(reg).map_or(&[], Vec::as_slice)
    }

    /// Whether block `a` post-dominates block `b`.
    pub fn post_dominates(&self, a: usize, b: usize) -> bool {
        let mut x = b;
        loop {
            if x == a {
                return true;
            }
            match self.ipdom.get(x).copied().flatten() {
                Some(p) if p != x && p < self.blocks.len() => x = p,
                _ => return false,
            }
        }
    }
}

/// Immediate dominators of a graph given by successor and predecessor lists (Cooper, Harvey,
/// Kennedy). The entry's idom is itself; unreachable nodes get None.
pub fn dominators(succ: &[Vec<usize>], pred: &[Vec<usize>], entry: usize) -> Vec<Option<usize>> {
    let n = succ.len();
    // Reverse post-order by an explicit-stack DFS (no recursion).
    let mut order = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    let mut stack: Vec<(usize, usize)> = vec![(entry, 0)];
    seen[entry] = true;
    while let Some(&mut (node, ref mut next)) = stack.last_mut() {
        if let Some(&s) = succ[node].get(*next) {
            *next += 1;
            if !seen[s] {
                seen[s] = true;
                stack.push((s, 0));
            }
        } else {
            order.push(node);
            stack.pop();
        }
    }
    order.reverse();
    let mut rpo_index = vec![usize::MAX; n];
    for (i, &b) in order.iter().enumerate() {
        rpo_index[b] = i;
    }
    let mut idom: Vec<Option<usize>> = vec![None; n];
    idom[entry] = Some(entry);
    let mut changed = true;
    while changed {
        changed = false;
        for &b in order.iter().skip(1) {
            let mut new_idom: Option<usize> = None;
            for &p in &pred[b] {
                if idom[p].is_none() {
                    continue;
                }
                new_idom = Some(match new_idom {
                    None => p,
                    Some(q) => intersect(&idom, &rpo_index, p, q),
                });
            }
            if new_idom.is_some() && idom[b] != new_idom {
                idom[b] = new_idom;
                changed = true;
            }
        }
    }
    idom
}

fn intersect(idom: &[Option<usize>], rpo: &[usize], mut a: usize, mut b: usize) -> usize {
    while a != b {
        while rpo[a] > rpo[b] {
            match idom[a] {
                Some(x) if x != a => a = x,
                _ => return b,
            }
        }
        while rpo[b] > rpo[a] {
            match idom[b] {
                Some(x) if x != b => b = x,
                _ => return a,
            }
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::parse;

    // A diamond inside a loop:
    //   B0 -> B1(header) -> B2 | B3 -> B4(latch) -> B1 | B5(exit)
    const SRC: &str = "
.entry k(.param .u32 n)
{
	mov.u32 %r1, 0;
L1:
	@%p1 bra L3;
	add.s32 %r2, %r2, 1;
	bra.uni L4;
L3:
	add.s32 %r2, %r2, 2;
L4:
	add.s32 %r1, %r1, 1;
	setp.lt.s32 %p2, %r1, 10;
	@%p2 bra L1;
	ret;
}";

    #[test]
    fn blocks_edges_and_dominators() {
        let (m, d) = parse(SRC);
        assert!(!d.has_errors(), "{:?}", d);
        let mut diags = Diagnostics::default();
        let g = Cfg::build(&m.functions[0], &mut diags);
        // Blocks: [mov] [L1: @bra] [add; bra.uni] [L3: add] [L4: add setp @bra] [ret]
        assert_eq!(g.blocks.len(), 6);
        assert_eq!(g.blocks[0].succs, vec![1]);
        assert_eq!(g.blocks[1].succs, vec![3, 2]);
        assert_eq!(g.blocks[2].succs, vec![4]);
        assert_eq!(g.blocks[3].succs, vec![4]);
        assert_eq!(g.blocks[4].succs, vec![1, 5]);
        assert!(g.blocks[5].succs.is_empty());
        assert_eq!(g.edge_count(), 7);
        assert_eq!(
            g.idom,
            vec![Some(0), Some(0), Some(1), Some(1), Some(1), Some(4)]
        );
        // Post-dominators: 4 post-dominates 1, 2 and 3; 5 post-dominates everything.
        assert_eq!(g.ipdom[1], Some(4));
        assert_eq!(g.ipdom[2], Some(4));
        assert_eq!(g.ipdom[4], Some(5));
        assert_eq!(g.ipdom[5], Some(6)); // the virtual exit
        assert!(g.post_dominates(5, 0));
        assert!(g.dominates(1, 4) && !g.dominates(2, 4));
    }
}
