//! Algorithm 2 of puchala2022: the time one core package (32 cores) needs to run `n_w` warps of
//! a kernel program, visiting the warps in round robin.
//!
//! Rules (SPEC.md section 1): a `calc` occupies the package for its duration; a `load` or
//! `store` occupies it for `t_m` and completes `d` cycles after it was issued, in the
//! background. A visited warp first waits for its loads in flight, then runs until its program
//! ends or it has issued a load whose next instruction is not a load. At the end the package
//! waits for every memory operation of every warp.
//!
//! Two implementations: [`timeline`] follows the algorithm instruction by instruction and
//! records every segment (for drawing and as the reference); [`CoreProgram::cycles`] uses the
//! fact that all warps run the same program: every visit of every warp runs the same *segment*
//! (the instructions between two switch points), so a visit costs O(1) and a simulation is
//! O(segments x warps) with no allocation for up to 64 warps. A property test checks that both
//! agree. Nothing here knows about devices, blocks or microseconds.

use serde::Serialize;

use crate::error::{non_negative, Result};
use crate::workload::program::{Instr, OpKind};

/// The instructions one warp runs between two switches, reduced to three offsets from the
/// moment the warp starts them.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Segment {
    /// Cycles the core package is busy (calc durations plus `t_m` per memory instruction).
    busy_cycles: f64,
    /// When the segment's last load completes (minus infinity without loads).
    loads_done_cycles: f64,
    /// When the segment's last memory operation completes (minus infinity without any).
    memory_done_cycles: f64,
}

/// A kernel program prepared for fast simulation with one `t_m`.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreProgram {
    segments: Vec<Segment>,
}

/// Warps kept on the stack during a simulation; more use one heap buffer.
const STACK_WARPS: usize = 64;

impl CoreProgram {
    /// Splits an expanded program at its switch points (a load followed by a non-load).
    pub fn new(instrs: &[Instr], t_m_cycles: f64) -> Result<Self> {
        non_negative("t_m", t_m_cycles)?;
        let empty = Segment {
            busy_cycles: 0.0,
            loads_done_cycles: f64::NEG_INFINITY,
            memory_done_cycles: f64::NEG_INFINITY,
        };
        let mut segments = Vec::new();
        let mut cur = empty;
        let mut open = false;
        for (i, ins) in instrs.iter().enumerate() {
            if !(ins.cycles.is_finite() && ins.cycles >= 0.0) {
                non_negative(&format!("instruction {i} cycles"), ins.cycles)?;
            }
            open = true;
            match ins.kind {
                OpKind::Calc => cur.busy_cycles += ins.cycles,
                OpKind::Load | OpKind::Store => {
                    let done = cur.busy_cycles + ins.cycles;
                    cur.memory_done_cycles = cur.memory_done_cycles.max(done);
                    if ins.kind == OpKind::Load {
                        cur.loads_done_cycles = cur.loads_done_cycles.max(done);
                    }
                    cur.busy_cycles += t_m_cycles;
                    let switches = ins.kind == OpKind::Load
                        && instrs.get(i + 1).is_some_and(|n| n.kind != OpKind::Load);
                    if switches {
                        segments.push(cur);
                        cur = empty;
                        open = false;
                    }
                }
            }
        }
        if open {
            segments.push(cur);
        }
        Ok(Self { segments })
    }

    /// Number of switch-delimited segments (visits per warp).
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// `T_c(n_w)`: cycles for `warps` identical warps on one core package.
    pub fn cycles(&self, warps: u64) -> f64 {
        if warps == 0 || self.segments.is_empty() {
            return 0.0;
        }
        let n = usize::try_from(warps).unwrap_or(usize::MAX);
        let mut stack = [f64::NEG_INFINITY; STACK_WARPS];
        let mut heap = Vec::new();
        let loads_ready: &mut [f64] = if n <= STACK_WARPS {
            &mut stack[..n]
        } else {
            heap.resize(n, f64::NEG_INFINITY);
            &mut heap
        };
        let mut t = 0.0f64;
        let mut memory_done = f64::NEG_INFINITY;
        for seg in &self.segments {
            for ready in loads_ready.iter_mut() {
                // Wait for this warp's loads from its previous visit, then run the segment.
                let start = if *ready > t { *ready } else { t };
                *ready = start + seg.loads_done_cycles;
                let done = start + seg.memory_done_cycles;
                if done > memory_done {
                    memory_done = done;
                }
                t = start + seg.busy_cycles;
            }
        }
        t.max(memory_done)
    }
}

/// What a stretch of a warp's row in the execution profile shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SegmentKind {
    /// The warp computes (the core package is busy with it).
    Calc,
    /// The core package issues the warp's memory instruction (`t_m`).
    Issue,
    /// The memory operation runs in the background after its issue.
    InFlight,
    /// The core package waits for this warp's memory operations.
    Idle,
}

/// One stretch of the execution profile.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TimelineSegment {
    /// Warp index, from 0.
    pub warp: u32,
    pub kind: SegmentKind,
    /// Index of the instruction in the expanded program (for idle: the one waited for).
    pub instruction: usize,
    pub start_cycles: f64,
    pub end_cycles: f64,
}

/// The result of [`timeline`]: total cycles and every segment in time order of issue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timeline {
    pub cycles: f64,
    pub warps: u32,
    pub segments: Vec<TimelineSegment>,
}

/// Algorithm 2 instruction by instruction, recording the per-warp execution profile.
pub fn timeline(instrs: &[Instr], warps: u32, t_m_cycles: f64) -> Result<Timeline> {
    timeline_capped(instrs, warps, t_m_cycles, usize::MAX)
}

/// [`timeline`] that stops with an error as soon as the profile would hold more than
/// `max_segments` segments, so memory stays bounded whatever the program and warp count.
pub fn timeline_capped(
    instrs: &[Instr],
    warps: u32,
    t_m_cycles: f64,
    max_segments: usize,
) -> Result<Timeline> {
    non_negative("t_m", t_m_cycles)?;
    for (i, ins) in instrs.iter().enumerate() {
        non_negative(&format!("instruction {i} cycles"), ins.cycles)?;
    }
    let n = warps as usize;
    let mut pc = vec![0usize; n];
    // Latest completion of the loads each warp has in flight: (cycle, instruction).
    let mut loads_ready: Vec<Option<(f64, usize)>> = vec![None; n];
    // Latest completion of any memory operation: (cycle, warp, instruction).
    let mut memory_done: Option<(f64, u32, usize)> = None;
    let mut segments = Vec::new();
    let mut t = 0.0f64;
    let full = std::cell::Cell::new(false);
    let too_many = || {
        crate::error::Error::invalid(
            "timeline",
            format!(
                "more than {max_segments} segments ({warps} warps x {} instructions); use fewer warps or a shorter program",
                instrs.len()
            ),
        )
    };
    let mut push = |warp: usize, kind, instruction, start: f64, end: f64| {
        if end > start && segments.len() >= max_segments {
            full.set(true);
        } else if end > start {
            segments.push(TimelineSegment {
                warp: warp as u32,
                kind,
                instruction,
                start_cycles: start,
                end_cycles: end,
            });
        }
    };
    loop {
        let mut ran = false;
        for w in 0..n {
            if pc[w] >= instrs.len() {
                continue;
            }
            if let Some((ready, ins)) = loads_ready[w].take() {
                if ready > t {
                    push(w, SegmentKind::Idle, ins, t, ready);
                    t = ready;
                }
            }
            while pc[w] < instrs.len() {
                ran = true;
                let i = pc[w];
                pc[w] += 1;
                let ins = instrs[i];
                match ins.kind {
                    OpKind::Calc => {
                        push(w, SegmentKind::Calc, i, t, t + ins.cycles);
                        t += ins.cycles;
                    }
                    OpKind::Load | OpKind::Store => {
                        let done = t + ins.cycles;
                        push(w, SegmentKind::Issue, i, t, t + t_m_cycles);
                        push(w, SegmentKind::InFlight, i, t + t_m_cycles, done);
                        if memory_done.is_none_or(|(d, _, _)| done >= d) {
                            memory_done = Some((done, w as u32, i));
                        }
                        t += t_m_cycles;
                        if ins.kind == OpKind::Load {
                            if loads_ready[w].is_none_or(|(d, _)| done >= d) {
                                loads_ready[w] = Some((done, i));
                            }
                            if instrs.get(i + 1).is_some_and(|x| x.kind != OpKind::Load) {
                                break;
                            }
                        }
                    }
                }
                if full.get() {
                    return Err(too_many());
                }
            }
        }
        if !ran {
            break;
        }
    }
    if let Some((done, w, i)) = memory_done {
        if done > t {
            push(w as usize, SegmentKind::Idle, i, t, done);
            t = done;
        }
    }
    if full.get() {
        return Err(too_many());
    }
    Ok(Timeline {
        cycles: t,
        warps,
        segments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn prog(ops: &[(OpKind, f64)]) -> Vec<Instr> {
        ops.iter()
            .map(|&(kind, cycles)| Instr { kind, cycles })
            .collect()
    }

    fn listing1(fourth: OpKind) -> Vec<Instr> {
        use OpKind::*;
        prog(&[
            (Load, 15.0),
            (Calc, 5.0),
            (Calc, 6.0),
            (fourth, 35.0),
            (Calc, 10.0),
            (Store, 15.0),
        ])
    }

    #[test]
    fn listing1_golden_values() {
        // Paper section 5.2, Figs 7 and 8: 3 warps, t_m = 2.
        let load = listing1(OpKind::Load);
        let store = listing1(OpKind::Store);
        assert_eq!(CoreProgram::new(&load, 2.0).unwrap().cycles(3), 112.0);
        assert_eq!(timeline(&load, 3, 2.0).unwrap().cycles, 112.0);
        assert_eq!(CoreProgram::new(&store, 2.0).unwrap().cycles(3), 111.0);
        assert_eq!(timeline(&store, 3, 2.0).unwrap().cycles, 111.0);
        // Listing 1 with 3 warps draws 3 x 11 calc/issue + in-flight + idle segments; a cap
        // of 10 stops it with an error, a generous cap changes nothing.
        let capped = timeline_capped(&load, 3, 2.0, 10).unwrap_err().to_string();
        assert!(capped.contains("more than 10 segments"), "{capped}");
        assert_eq!(
            timeline_capped(&load, 3, 2.0, 100_000).unwrap(),
            timeline(&load, 3, 2.0).unwrap()
        );
    }

    #[test]
    fn listing1_timeline_by_hand() {
        // Warp 0 of variant 1: load issued 0..2, in flight 2..15; warp 1 issues at 2, warp 2
        // at 4; warp 0 waits from 6 to 15 (idle), computes 15..20 and 20..26.
        let tl = timeline(&listing1(OpKind::Load), 3, 2.0).unwrap();
        let w0: Vec<_> = tl.segments.iter().filter(|s| s.warp == 0).take(5).collect();
        let kinds: Vec<_> = w0
            .iter()
            .map(|s| (s.kind, s.start_cycles, s.end_cycles))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (SegmentKind::Issue, 0.0, 2.0),
                (SegmentKind::InFlight, 2.0, 15.0),
                (SegmentKind::Idle, 6.0, 15.0),
                (SegmentKind::Calc, 15.0, 20.0),
                (SegmentKind::Calc, 20.0, 26.0),
            ]
        );
        // The last segment is warp 2's final wait for its store: 99..112.
        let last = tl.segments.last().unwrap();
        assert_eq!(
            (last.warp, last.kind, last.start_cycles, last.end_cycles),
            (2, SegmentKind::Idle, 99.0, 112.0)
        );
    }

    #[test]
    fn simple_programs_by_hand() {
        use OpKind::*;
        // Only computation: the warps take turns, 10 cycles each.
        assert_eq!(
            CoreProgram::new(&prog(&[(Calc, 10.0)]), 4.0)
                .unwrap()
                .cycles(7),
            70.0
        );
        // One load per warp: issues at 0, t_m, ..., (n-1) t_m; the last completes at
        // (n-1) t_m + d = 4 * 3 + 100.
        assert_eq!(
            CoreProgram::new(&prog(&[(Load, 100.0)]), 3.0)
                .unwrap()
                .cycles(5),
            112.0
        );
        assert_eq!(CoreProgram::new(&[], 3.0).unwrap().cycles(5), 0.0);
        assert_eq!(
            CoreProgram::new(&prog(&[(Calc, 1.0)]), 3.0)
                .unwrap()
                .cycles(0),
            0.0
        );
        assert!(CoreProgram::new(&prog(&[(Calc, 1.0)]), -1.0).is_err());
    }

    #[test]
    fn many_warps_use_the_heap_path() {
        // 100 warps of a single calc: 100 * 3 cycles.
        let p = CoreProgram::new(&prog(&[(OpKind::Calc, 3.0)]), 1.0).unwrap();
        assert_eq!(p.cycles(100), 300.0);
    }

    fn op_strategy() -> impl Strategy<Value = Instr> {
        (0u8..3, 0u32..200).prop_map(|(k, c)| Instr {
            kind: [OpKind::Calc, OpKind::Load, OpKind::Store][k as usize],
            cycles: f64::from(c) / 4.0,
        })
    }

    proptest! {
        #[test]
        fn fast_simulation_matches_the_reference(
            ops in proptest::collection::vec(op_strategy(), 0..24),
            warps in 0u32..80,
            t_m in 0u32..40,
        ) {
            let t_m = f64::from(t_m) / 2.0;
            let fast = CoreProgram::new(&ops, t_m).unwrap().cycles(u64::from(warps));
            let reference = timeline(&ops, warps, t_m).unwrap().cycles;
            prop_assert!((fast - reference).abs() <= 1e-9 * reference.max(1.0), "{fast} vs {reference}");
        }
    }
}
