//! Lane values and one lane's arithmetic: a register's 32 lanes with a known mask, the views of an
//! operand across the lanes, and the exact integer and floating-point operations of the decoded
//! instructions at each type's width. Control flow and memory are `warp`'s.

use super::decode::{Cmp, DInst, MulMode, OpK};
use super::WARP;

/// Values of one register across the lanes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Lanes {
    pub(super) v: [u64; WARP],
    pub(super) known: u32,
}

/// A source as the lanes see it, without copying a register.
#[derive(Debug, Clone, Copy)]
pub(super) enum View<'a> {
    Lanes(&'a Lanes),
    Uniform(u64),
    Unknown,
}

impl View<'_> {
    #[inline]
    pub(super) fn known(&self) -> u32 {
        match self {
            View::Lanes(l) => l.known,
            View::Uniform(_) => u32::MAX,
            View::Unknown => 0,
        }
    }
    #[inline]
    pub(super) fn get(&self, lane: usize) -> u64 {
        match self {
            View::Lanes(l) => l.v[lane],
            View::Uniform(v) => *v,
            View::Unknown => 0,
        }
    }
}

pub(super) const UNKNOWN: Lanes = Lanes {
    v: [0; WARP],
    known: 0,
};

pub(super) fn mask_bits(v: u64, bits: u8) -> u64 {
    if bits >= 64 {
        v
    } else {
        v & ((1u64 << bits) - 1)
    }
}

pub(super) fn sext(v: u64, bits: u8) -> i64 {
    if bits >= 64 || bits == 0 {
        v as i64
    } else {
        let s = 64 - u32::from(bits);
        ((v << s) as i64) >> s
    }
}

pub(super) fn fget(v: u64, bits: u8) -> Option<f64> {
    match bits {
        32 => Some(f64::from(f32::from_bits(v as u32))),
        64 => Some(f64::from_bits(v)),
        _ => None,
    }
}

pub(super) fn fput(x: f64, bits: u8) -> Option<u64> {
    match bits {
        32 => Some(u64::from((x as f32).to_bits())),
        64 => Some(x.to_bits()),
        _ => None,
    }
}

/// One lane's arithmetic; None = unknown (division by zero, unsupported type).
pub(super) fn alu(d: &DInst, a: u64, b: u64, c: u64, e: u64) -> Option<u64> {
    let ty = d.ty;
    let bits = ty.bits;
    if ty.float
        && !matches!(
            d.op,
            OpK::Setp | OpK::Selp | OpK::Mov | OpK::Cvt | OpK::Cvta
        )
    {
        let (x, y, z) = (
            fget(a, bits)?,
            fget(b, bits).unwrap_or(0.0),
            fget(c, bits).unwrap_or(0.0),
        );
        let r = match d.op {
            OpK::Add => x + y,
            OpK::Sub => x - y,
            OpK::Mul => x * y,
            OpK::Mad | OpK::Fma => x.mul_add(y, z),
            OpK::Div => x / y,
            OpK::Neg => -x,
            OpK::Abs => x.abs(),
            OpK::Min => x.min(y),
            OpK::Max => x.max(y),
            _ => return None,
        };
        return fput(r, bits);
    }
    let m = |v: u64| mask_bits(v, bits);
    let s = |v: u64| sext(v, bits);
    let wide_bits = (bits.saturating_mul(2)).min(64);
    let mul = |a: u64, b: u64| -> u64 {
        match d.mul {
            MulMode::Lo => m(a.wrapping_mul(b)),
            MulMode::Wide => {
                if ty.signed {
                    mask_bits((s(a) as i128 * s(b) as i128) as u64, wide_bits)
                } else {
                    mask_bits((m(a) as u128 * m(b) as u128) as u64, wide_bits)
                }
            }
            MulMode::Hi => {
                if ty.signed {
                    m(((s(a) as i128 * s(b) as i128) >> bits) as u64)
                } else {
                    m(((m(a) as u128 * m(b) as u128) >> bits) as u64)
                }
            }
        }
    };
    Some(match d.op {
        OpK::Add => m(a.wrapping_add(b)),
        OpK::Sub => m(a.wrapping_sub(b)),
        OpK::Mul => mul(a, b),
        OpK::Mad => {
            let p = mul(a, b);
            if d.mul == MulMode::Wide {
                mask_bits(p.wrapping_add(c), wide_bits)
            } else {
                m(p.wrapping_add(c))
            }
        }
        OpK::Div => {
            if m(b) == 0 {
                return None;
            }
            if ty.signed {
                m(s(a).wrapping_div(s(b)) as u64)
            } else {
                m(a) / m(b)
            }
        }
        OpK::Rem => {
            if m(b) == 0 {
                return None;
            }
            if ty.signed {
                m(s(a).wrapping_rem(s(b)) as u64)
            } else {
                m(a) % m(b)
            }
        }
        OpK::And => m(a & b),
        OpK::Or => m(a | b),
        OpK::Xor => m(a ^ b),
        OpK::Not => m(!a),
        OpK::Cnot => u64::from(m(a) == 0),
        OpK::Shl => {
            let n = b as u32;
            if n >= u32::from(bits) {
                0
            } else {
                m(a << n)
            }
        }
        OpK::Shr => {
            let n = (b as u32).min(u32::from(bits));
            if ty.signed {
                m((s(a) >> n.min(63)) as u64)
            } else if n >= u32::from(bits) {
                0
            } else {
                m(a) >> n
            }
        }
        OpK::Neg => m(a.wrapping_neg()),
        OpK::Abs => m(s(a).unsigned_abs()),
        OpK::Min => {
            if ty.signed {
                m(s(a).min(s(b)) as u64)
            } else {
                m(a).min(m(b))
            }
        }
        OpK::Max => {
            if ty.signed {
                m(s(a).max(s(b)) as u64)
            } else {
                m(a).max(m(b))
            }
        }
        OpK::Popc => u64::from(m(a).count_ones()),
        OpK::Clz => u64::from(m(a).leading_zeros() - (64 - u32::from(bits))),
        OpK::Bfe => {
            let pos = (b & 0xff) as u32;
            let len = (c & 0xff) as u32;
            if len == 0 {
                return Some(0);
            }
            let raw = if pos >= 64 { 0 } else { m(a) >> pos };
            let field = if len >= 64 {
                raw
            } else {
                raw & ((1u64 << len) - 1)
            };
            if ty.signed && len < u32::from(bits) {
                m(sext(field, len as u8) as u64)
            } else {
                m(field)
            }
        }
        OpK::Bfi => {
            let pos = (c & 0xff) as u32;
            let len = (e & 0xff) as u32;
            if len == 0 || pos >= u32::from(bits) {
                return Some(m(b));
            }
            let fm = if len >= 64 {
                u64::MAX
            } else {
                (1u64 << len) - 1
            };
            let fm = fm << pos;
            m((b & !fm) | ((a << pos) & fm))
        }
        OpK::Selp => {
            if c != 0 {
                a
            } else {
                b
            }
        }
        OpK::Mov => a,
        OpK::Cvta => m(a.wrapping_add(d.cvta_shift as u64)),
        OpK::Cvt => {
            let st = d.ty_src;
            match (st.float, ty.float) {
                (false, false) => {
                    let v = if st.signed {
                        sext(a, st.bits) as u64
                    } else {
                        mask_bits(a, st.bits)
                    };
                    m(v)
                }
                (true, false) => {
                    let x = fget(a, st.bits)?;
                    if !x.is_finite() {
                        return None;
                    }
                    let x = if d.round_nearest {
                        x.round()
                    } else {
                        x.trunc()
                    };
                    if ty.signed {
                        m(x as i64 as u64)
                    } else {
                        m(x as u64)
                    }
                }
                (false, true) => {
                    let x = if st.signed {
                        sext(a, st.bits) as f64
                    } else {
                        mask_bits(a, st.bits) as f64
                    };
                    fput(x, bits)?
                }
                (true, true) => fput(fget(a, st.bits)?, bits)?,
            }
        }
        OpK::Setp => {
            let r = if ty.float {
                let (x, y) = (fget(a, bits)?, fget(b, bits)?);
                match d.cmp {
                    Cmp::Eq => x == y,
                    Cmp::Ne => x != y,
                    Cmp::Lt => x < y,
                    Cmp::Le => x <= y,
                    Cmp::Gt => x > y,
                    Cmp::Ge => x >= y,
                    Cmp::Num => !x.is_nan() && !y.is_nan(),
                    Cmp::Nan => x.is_nan() || y.is_nan(),
                }
            } else if d.unsigned_cmp {
                let (x, y) = (m(a), m(b));
                match d.cmp {
                    Cmp::Eq => x == y,
                    Cmp::Ne => x != y,
                    Cmp::Lt => x < y,
                    Cmp::Le => x <= y,
                    Cmp::Gt => x > y,
                    Cmp::Ge => x >= y,
                    _ => return None,
                }
            } else {
                let (x, y) = (s(a), s(b));
                match d.cmp {
                    Cmp::Eq => x == y,
                    Cmp::Ne => x != y,
                    Cmp::Lt => x < y,
                    Cmp::Le => x <= y,
                    Cmp::Gt => x > y,
                    Cmp::Ge => x >= y,
                    _ => return None,
                }
            };
            let c = c != 0;
            u64::from(match d.combine {
                1 => r && c,
                2 => r || c,
                3 => r ^ c,
                _ => r,
            })
        }
        _ => return None,
    })
}

/// The common integer operations with the operation chosen once for all lanes (the general
/// path decides per lane). Returns false when the operation is not one of them; when it is, every
/// lane of `known` gets its value (these operations cannot fail).
pub(super) fn fast_lanes(d: &DInst, s: &[View; 4], known: u32, out: &mut [u64; WARP]) -> bool {
    let ty = d.ty;
    if ty.float || ty.bits < 8 {
        return false;
    }
    let bits = ty.bits;
    let wide = (bits * 2).min(64);
    macro_rules! each {
        ($f:expr) => {{
            let f = $f;
            let mut m = known;
            while m != 0 {
                let l = m.trailing_zeros() as usize;
                m &= m - 1;
                out[l] = f(s[0].get(l), s[1].get(l), s[2].get(l));
            }
            true
        }};
    }
    match (d.op, d.mul) {
        (OpK::Add, _) => each!(|a: u64, b: u64, _| mask_bits(a.wrapping_add(b), bits)),
        (OpK::Sub, _) => each!(|a: u64, b: u64, _| mask_bits(a.wrapping_sub(b), bits)),
        (OpK::And, _) => each!(|a: u64, b: u64, _| mask_bits(a & b, bits)),
        (OpK::Or, _) => each!(|a: u64, b: u64, _| mask_bits(a | b, bits)),
        (OpK::Xor, _) => each!(|a: u64, b: u64, _| mask_bits(a ^ b, bits)),
        (OpK::Mov, _) => each!(|a: u64, _, _| a),
        (OpK::Cvta, _) => {
            each!(|a: u64, _, _| mask_bits(a.wrapping_add(d.cvta_shift as u64), bits))
        }
        (OpK::Mul, MulMode::Lo) => each!(|a: u64, b: u64, _| mask_bits(a.wrapping_mul(b), bits)),
        (OpK::Mad, MulMode::Lo) => {
            each!(|a: u64, b: u64, c: u64| mask_bits(a.wrapping_mul(b).wrapping_add(c), bits))
        }
        (OpK::Mul, MulMode::Wide) if bits <= 32 => {
            if ty.signed {
                each!(|a: u64, b: u64, _| mask_bits(
                    sext(a, bits).wrapping_mul(sext(b, bits)) as u64,
                    wide
                ))
            } else {
                each!(|a: u64, b: u64, _| mask_bits(
                    mask_bits(a, bits).wrapping_mul(mask_bits(b, bits)),
                    wide
                ))
            }
        }
        (OpK::Shl, _) => each!(|a: u64, b: u64, _| if (b as u32) >= u32::from(bits) {
            0
        } else {
            mask_bits(a << (b as u32), bits)
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emulate::decode::{Cmp, DInst, MulMode, OpK, Src, Ty};
    use crate::workload::trace::LatencyClass;
    use kerneltime_ptx::classify::Class;

    fn inst(op: OpK, mul: MulMode, bits: u8, signed: bool) -> DInst {
        DInst {
            op,
            ty: Ty {
                bits,
                signed,
                float: false,
            },
            ty_src: Ty {
                bits,
                signed,
                float: false,
            },
            mul,
            cmp: Cmp::Eq,
            combine: 0,
            unsigned_cmp: !signed,
            round_nearest: false,
            dst: [None; 4],
            srcs: [Src::Unknown; 4],
            nsrc: 3,
            guard: None,
            mem: None,
            target: None,
            class: Class::IntArith,
            latency: LatencyClass::Int,
            line: 0,
            cvta_shift: 0,
            opcode: "add",
        }
    }

    #[test]
    fn fast_path_agrees_with_the_general_path() {
        // Deterministic pseudo-random lane values (64-bit LCG), including sign bits.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x
        };
        let mut s = [UNKNOWN; 4];
        for l in s.iter_mut() {
            for v in l.v.iter_mut() {
                *v = next() >> (next() % 64);
            }
            l.known = u32::MAX;
        }
        let cases = [
            (OpK::Add, MulMode::Lo),
            (OpK::Sub, MulMode::Lo),
            (OpK::And, MulMode::Lo),
            (OpK::Or, MulMode::Lo),
            (OpK::Xor, MulMode::Lo),
            (OpK::Mul, MulMode::Lo),
            (OpK::Mad, MulMode::Lo),
            (OpK::Mul, MulMode::Wide),
            (OpK::Shl, MulMode::Lo),
        ];
        for (op, mul) in cases {
            for bits in [16u8, 32, 64] {
                for signed in [false, true] {
                    let d = inst(op, mul, bits, signed);
                    let mut out = [0u64; WARP];
                    let views = [
                        View::Lanes(&s[0]),
                        View::Lanes(&s[1]),
                        View::Lanes(&s[2]),
                        View::Lanes(&s[3]),
                    ];
                    if !fast_lanes(&d, &views, u32::MAX, &mut out) {
                        assert!(op == OpK::Mul && mul == MulMode::Wide && bits == 64);
                        continue;
                    }
                    for l in 0..WARP {
                        let want = alu(&d, s[0].v[l], s[1].v[l] % 70, s[2].v[l], 0);
                        let got = {
                            let mut t = s;
                            t[1].v[l] %= 70;
                            let mut o = [0u64; WARP];
                            let tv = [
                                View::Lanes(&t[0]),
                                View::Lanes(&t[1]),
                                View::Lanes(&t[2]),
                                View::Lanes(&t[3]),
                            ];
                            fast_lanes(&d, &tv, 1 << l, &mut o);
                            o[l]
                        };
                        // Operands that the fast path reads unmasked are masked by PTX typing
                        // in real code; compare on the result width.
                        let w = if mul == MulMode::Wide {
                            (bits * 2).min(64)
                        } else {
                            bits
                        };
                        assert_eq!(
                            want.map(|v| mask_bits(v, w)),
                            Some(mask_bits(got, w)),
                            "{op:?} {mul:?} {bits} signed={signed} lane {l}"
                        );
                    }
                    let _ = out;
                }
            }
        }
    }
}
