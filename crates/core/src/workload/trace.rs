//! Per-warp execution traces (wang2019's "execution trace", made from PTX by `emulate`): the
//! instructions one warp issues in order, each with its class and latency class, and one record
//! per memory access with its coalescing and bank-conflict figures.
//!
//! Plain data and counting only. Producing traces is `emulate`; turning lane addresses into
//! sectors, lines and bank conflicts is `memory`; timing them is `model::trace_sim`. Nothing here
//! knows a device.

use serde::Serialize;

use kerneltime_ptx::classify::{Class, Space};

/// What kind of latency an instruction pays: the key into a latency table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum LatencyClass {
    /// Integer add and logic, predicate logic, selects, moves.
    Int,
    /// Integer multiply and multiply-add.
    IntMul,
    /// fp32 add, multiply and fma (also fp16).
    Fp32,
    Fp64,
    /// Special-function unit: sin, cos, ex2, lg2, rcp, rsqrt, sqrt, floating-point divide.
    Special,
    /// Integer division and remainder (a multi-instruction sequence in SASS).
    IntDiv,
    Convert,
    /// Branches, returns.
    Branch,
    Barrier,
    /// Kernel-parameter reads (a constant-bank operand on the hardware).
    Param,
    GlobalLoad,
    GlobalStore,
    SharedLoad,
    SharedStore,
    /// Thread-private local memory (spills, stack arrays): goes through L1 like global memory.
    LocalLoad,
    LocalStore,
    ConstLoad,
    Atomic,
    /// Conversions from or to a 64-bit type (`cvt.f64.s32`, `cvt.rn.f32.f64`, ...): a slower
    /// unit than 32-bit conversions on most GPUs. Integer-to-integer `cvt` (width changes) is not
    /// a conversion in SASS (a move, shift or sign extension) and is `Int`.
    Convert64,
    /// Shuffles, votes and other warp collectives.
    Warp,
    /// Everything else (tensor ops, fences, unknown opcodes): charged like an integer op.
    Other,
    /// IEEE-rounded fp32 reciprocal and square root (`rcp.rn.f32`, `sqrt.rn.f32`): in SASS a
    /// special-function approximation refined by a chain of fma steps, with an integer range
    /// check that branches to a slow path for extreme operands (not counted). The `.approx` and
    /// `.full` forms stay `Special`.
    Fp32Sequence,
    /// IEEE-rounded fp32 divide (`div.rn.f32`): like [`LatencyClass::Fp32Sequence`], but its
    /// range check is `FCHK`, a second special-function-unit instruction beside the `MUFU.RCP`
    /// seed.
    Fp32Divide,
    /// fp64 divide, reciprocal and square root: a special-function seed refined by a chain of
    /// fp64 fma steps.
    Fp64Sequence,
    /// 32-bit integer shifts (`shl`, `shr`, `shf`): the programming guide's throughput table
    /// gives them their own rate, below the add rate on 2.x, 3.x, 5.x and 6.x.
    Shift,
    /// Compares, minimum and maximum (`setp`, `set`, integer `min`/`max`): their own rate in the
    /// throughput table, half the add rate on 5.x and 6.x.
    Compare,
    /// What is no instruction of its own in SASS: predicate logic (a negation, `not.pred`, as
    /// every SASS predicate operand can be negated; an `and`/`or`/`xor.pred` of a compare's
    /// result, which ptxas folds into that compare, `FSETP.LT.AND P0, PT, R4, R3, P1`: PTX's
    /// `setp.CmpOp.BoolOp` form) and a constant load at a fixed address (a constant-bank
    /// operand, `c[0x3][0x10]`). It costs nothing; its result is ready with its operands.
    Folded,
    /// An IEEE fp32 divide whose operands the emulator knows to fail `FCHK`'s range check for
    /// some lane (a zero, subnormal, infinite or NaN divisor, an infinite or NaN dividend, or a
    /// quotient out of the normal range): [`LatencyClass::Fp32Divide`]'s sequence, then the call
    /// to ptxas's slow-path subroutine that handles such operands with integer code.
    Fp32DivideSlow,
}

impl LatencyClass {
    /// Every class, in declaration order: `ALL[c as usize] == c`.
    pub const ALL: [LatencyClass; 28] = [
        LatencyClass::Int,
        LatencyClass::IntMul,
        LatencyClass::Fp32,
        LatencyClass::Fp64,
        LatencyClass::Special,
        LatencyClass::IntDiv,
        LatencyClass::Convert,
        LatencyClass::Branch,
        LatencyClass::Barrier,
        LatencyClass::Param,
        LatencyClass::GlobalLoad,
        LatencyClass::GlobalStore,
        LatencyClass::SharedLoad,
        LatencyClass::SharedStore,
        LatencyClass::LocalLoad,
        LatencyClass::LocalStore,
        LatencyClass::ConstLoad,
        LatencyClass::Atomic,
        LatencyClass::Convert64,
        LatencyClass::Warp,
        LatencyClass::Other,
        LatencyClass::Fp32Sequence,
        LatencyClass::Fp32Divide,
        LatencyClass::Fp64Sequence,
        LatencyClass::Shift,
        LatencyClass::Compare,
        LatencyClass::Folded,
        LatencyClass::Fp32DivideSlow,
    ];

    /// Whether the instruction is one of SASS's own (not [`LatencyClass::Folded`] into another).
    pub fn is_issued(self) -> bool {
        self != LatencyClass::Folded
    }

    /// Whether the class is a memory access that the memory model times.
    pub fn is_memory(self) -> bool {
        matches!(
            self,
            LatencyClass::GlobalLoad
                | LatencyClass::GlobalStore
                | LatencyClass::SharedLoad
                | LatencyClass::SharedStore
                | LatencyClass::LocalLoad
                | LatencyClass::LocalStore
                | LatencyClass::ConstLoad
                | LatencyClass::Atomic
        )
    }

    /// The latency class of an instruction class (memory by the space actually accessed is
    /// decided by the emulator for generic addresses).
    pub fn of(class: Class, opcode: &str, float: bool) -> LatencyClass {
        match class {
            Class::IntArith => match opcode {
                "mul" | "mad" | "mul24" | "mad24" | "sad" => LatencyClass::IntMul,
                "div" | "rem" => LatencyClass::IntDiv,
                "shl" | "shr" | "shf" => LatencyClass::Shift,
                "min" | "max" => LatencyClass::Compare,
                _ => LatencyClass::Int,
            },
            Class::Fp16Arith | Class::Fp32Arith | Class::Fma16 | Class::Fma32 => LatencyClass::Fp32,
            Class::Fp64Arith | Class::Fma64 => LatencyClass::Fp64,
            Class::Special => LatencyClass::Special,
            Class::Convert => LatencyClass::Convert,
            Class::Compare if matches!(opcode, "setp" | "set") => LatencyClass::Compare,
            Class::Move | Class::Compare => LatencyClass::Int,
            Class::Branch => LatencyClass::Branch,
            Class::Barrier => LatencyClass::Barrier,
            Class::Atomic => LatencyClass::Atomic,
            Class::Warp => LatencyClass::Warp,
            Class::Load(s) => match s {
                Space::Param => LatencyClass::Param,
                Space::Shared => LatencyClass::SharedLoad,
                Space::Local => LatencyClass::LocalLoad,
                Space::Const => LatencyClass::ConstLoad,
                _ => LatencyClass::GlobalLoad,
            },
            Class::Store(s) => match s {
                Space::Shared => LatencyClass::SharedStore,
                Space::Local => LatencyClass::LocalStore,
                _ => LatencyClass::GlobalStore,
            },
            _ => {
                if float {
                    LatencyClass::Fp32
                } else {
                    LatencyClass::Other
                }
            }
        }
    }
}

/// The memory a warp access touched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MemSpace {
    Global,
    Shared,
    Local,
    Const,
}

/// Whether an access is an atomic read-modify-write: `atom` returns the old value (the warp
/// waits for it), `red` does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Atomic {
    #[default]
    No,
    Atom,
    Red,
}

/// The cache operator of a global load (PTX ISA "Cache Operators"), which decides whether the
/// load may be cached in L1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheOp {
    /// No operator (`.ca` is the PTX default, but whether plain loads are cached in L1 is the
    /// architecture's default policy).
    #[default]
    Default,
    /// `ld.global.nc` or `ldu`: the read-only (texture/L1) data path.
    ReadOnly,
    /// `.ca` written out: cache at all levels where the architecture allows it.
    CacheAll,
    /// `.cg` or `.cv`: cached in L2 only (or not at all).
    BypassL1,
}

/// One warp-wide memory instruction (a *request*).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MemAccess {
    /// Index of the instruction in the function.
    pub instr: u32,
    pub space: MemSpace,
    pub store: bool,
    /// Lanes that took part.
    pub lanes: u8,
    /// Bytes each lane reads or writes.
    pub bytes_per_lane: u16,
    /// False when some lane's address was unknown (each such lane is counted as its own sector).
    pub addresses_known: bool,
    /// Distinct 32-byte sectors touched.
    pub sectors: u32,
    /// Distinct 128-byte lines touched.
    pub lines: u32,
    /// Shared memory: the largest number of distinct 4-byte words in one bank (1 = no conflict).
    pub bank_ways: u32,
    /// The sector addresses (global and local only) in `WarpTrace::sector_ids[start..end]`.
    pub sector_start: u32,
    pub sector_end: u32,
    #[serde(skip_serializing_if = "is_default")]
    pub atomic: Atomic,
    #[serde(skip_serializing_if = "is_default")]
    pub cache: CacheOp,
    /// Atomics: the most lanes that update one address (they serialise); 0 for other accesses.
    pub same_address_lanes: u8,
    /// Atomics: the distinct addresses the lanes update (unknown lanes count one each).
    pub distinct_addresses: u8,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// One issued instruction of a warp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceOp {
    /// Index of the instruction in the function.
    pub instr: u32,
    pub latency: LatencyClass,
    /// Index into `WarpTrace::accesses`, or `u32::MAX` when the op is not a memory access.
    pub access: u32,
}

impl MemAccess {
    /// Whether it only reads (not a store, not an atomic): a load of any space.
    pub fn is_load(&self) -> bool {
        !self.store && self.atomic == Atomic::No
    }
}

impl TraceOp {
    pub const NO_ACCESS: u32 = u32::MAX;
}

/// The trace of one emulated warp.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WarpTrace {
    /// Block index (x, y, z).
    pub block: [u32; 3],
    /// Linear block index in launch order (x fastest).
    pub block_linear: u64,
    /// Warp index inside the block.
    pub warp: u32,
    /// Threads of the block in this warp (32 except for a partial last warp).
    pub threads: u32,
    pub ops: Vec<TraceOp>,
    pub accesses: Vec<MemAccess>,
    pub sector_ids: Vec<u64>,
    /// What the emulator could not know for this warp (data-dependent branches, ...).
    pub notes: Vec<String>,
    /// Global atomics: every address updated, with the lanes that updated it (sorted by
    /// address), for the serialisation of same-address atomics across warps.
    pub atomic_targets: Vec<(u64, u32)>,
    /// Branch executions whose predicate depended on unknown data for some lane.
    pub data_dependent_branches: u64,
    /// Lanes of memory accesses whose address depended on unknown data.
    pub unknown_address_lanes: u64,
    /// Lanes of predicated instructions whose guard depended on unknown data.
    pub unknown_guard_lanes: u64,
}

/// Counters of one warp trace, as `kerneltime trace` prints them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct WarpSummary {
    pub block: [u32; 3],
    pub warp: u32,
    pub threads: u32,
    pub dynamic_instructions: u64,
    pub global_load_requests: u64,
    pub global_load_sectors: u64,
    pub global_store_requests: u64,
    pub global_store_sectors: u64,
    pub global_load_lines: u64,
    pub global_store_lines: u64,
    pub shared_requests: u64,
    pub shared_bank_conflict_ways: u32,
    /// Extra shared-memory passes caused by conflicts: sum over accesses of (ways - 1).
    pub shared_conflict_replays: u64,
    pub local_requests: u64,
    pub barriers: u64,
    /// `atom`/`red` requests (global and shared).
    pub atomic_requests: u64,
    /// The most lanes of one atomic request that updated the same address.
    pub atomic_same_address_lanes_max: u32,
    pub notes: Vec<String>,
}

impl WarpTrace {
    /// The counters of the trace.
    pub fn summary(&self) -> WarpSummary {
        let mut s = WarpSummary {
            block: self.block,
            warp: self.warp,
            threads: self.threads,
            dynamic_instructions: self.ops.len() as u64,
            notes: self.notes.clone(),
            ..Default::default()
        };
        for op in &self.ops {
            if op.latency == LatencyClass::Barrier {
                s.barriers += 1;
            }
        }
        for a in &self.accesses {
            if a.atomic != Atomic::No {
                s.atomic_requests += 1;
                s.atomic_same_address_lanes_max = s
                    .atomic_same_address_lanes_max
                    .max(u32::from(a.same_address_lanes));
                if a.space == MemSpace::Global {
                    continue;
                }
            }
            match (a.space, a.store) {
                (MemSpace::Global, false) => {
                    s.global_load_requests += 1;
                    s.global_load_sectors += u64::from(a.sectors);
                    s.global_load_lines += u64::from(a.lines);
                }
                (MemSpace::Global, true) => {
                    s.global_store_requests += 1;
                    s.global_store_sectors += u64::from(a.sectors);
                    s.global_store_lines += u64::from(a.lines);
                }
                (MemSpace::Shared, _) => {
                    s.shared_requests += 1;
                    s.shared_bank_conflict_ways = s.shared_bank_conflict_ways.max(a.bank_ways);
                    s.shared_conflict_replays += u64::from(a.bank_ways.saturating_sub(1));
                }
                (MemSpace::Local, _) => s.local_requests += 1,
                (MemSpace::Const, _) => {}
            }
        }
        s
    }

    /// Instructions per latency class.
    pub fn class_counts(&self) -> std::collections::BTreeMap<LatencyClass, u64> {
        let mut m = std::collections::BTreeMap::new();
        for op in &self.ops {
            *m.entry(op.latency).or_insert(0) += 1;
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::LatencyClass;

    #[test]
    fn all_classes_are_listed_at_their_discriminants() {
        for (i, c) in LatencyClass::ALL.iter().enumerate() {
            assert_eq!(*c as usize, i, "{c:?}");
        }
        // The last declared class closes the list: no class lies past it.
        assert_eq!(
            LatencyClass::Fp32DivideSlow as usize + 1,
            LatencyClass::ALL.len()
        );
    }
}
