//! Complex arithmetic in kernel IR: the lowering represents a complex value as its two real
//! parts ([`Val::Complex`]) and expands every complex operation into real instructions, so
//! kernel IR, the interpreter and every backend only ever see real dtypes.
//!
//! The formulas are C++'s `std::complex`/`c10::complex` ones PyTorch's CPU kernels use:
//! products `(ac − bd) + (ad + bc)i`; Smith's division (c10's, which numpy's also is), with
//! its zero-divisor case; `exp`, `log`, `sqrt` on the principal branch (libstdc++'s
//! formulas); `abs` as an overflow-safe `hypot`; `angle` as `atan2(im, re)`; `sgn` as `z/|z|`
//! and 0 at 0. Every step is an instruction whose real semantics each backend already
//! implements, which is what keeps fused, unfused and reference results equal.

use crate::kernel::{Index, Instr, ValueId};
use crate::lower::Builder;
use crate::reading::Reading;
use crate::{BinaryOp, DType, ReduceOp, Scalar, UnaryOp};

/// A lowered value: one real SSA value, or the real and imaginary parts of a complex one
/// (two SSA values of the complex dtype's real counterpart).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Val {
    Real(ValueId),
    Complex(ValueId, ValueId),
}

impl Val {
    /// The real value; a complex one here is a bug in the lowering.
    pub fn real(self) -> ValueId {
        match self {
            Val::Real(v) => v,
            Val::Complex(..) => panic!("invariant: a real value was expected, got a complex one"),
        }
    }

    /// The two parts; a real value here is a bug in the lowering.
    pub fn parts(self) -> (ValueId, ValueId) {
        match self {
            Val::Complex(re, im) => (re, im),
            Val::Real(_) => panic!("invariant: a complex value was expected, got a real one"),
        }
    }
}

/// The physical index of part `k` (0 real, 1 imaginary) of the complex element at `index`
/// (in complex elements): every stride doubled, the offset doubled plus `k`.
pub fn part_index(index: &Index, k: isize) -> Index {
    Index {
        strides: index.strides.iter().map(|s| 2 * s).collect(),
        offset: 2 * index.offset + k,
    }
}

impl Builder<'_> {
    fn constant(&mut self, x: f64, dtype: DType) -> ValueId {
        let c = Instr::Const {
            value: Scalar::Float(x),
            dtype,
        };
        // Constants are shared within a kernel (they are row-level and pure).
        match self.body.iter().position(|i| *i == c) {
            Some(i) => i,
            None => self.push(c),
        }
    }

    fn un(&mut self, op: UnaryOp, x: ValueId, r: DType) -> ValueId {
        self.push(Instr::Unary { op, x, compute: r })
    }

    fn bin(&mut self, op: BinaryOp, a: ValueId, b: ValueId, r: DType) -> ValueId {
        self.push(Instr::Binary {
            op,
            a,
            b,
            compute: r,
        })
    }

    fn select(&mut self, cond: ValueId, a: ValueId, b: ValueId) -> ValueId {
        self.push(Instr::Where { cond, a, b })
    }

    /// Applies a reading's value transform to `v` (of dtype `dtype`): conjugation negates the
    /// imaginary part, negation both parts. Both are involutions, so a write through a view
    /// stores the transform of what it writes.
    pub(crate) fn transform(&mut self, v: Val, dtype: DType, read: Reading) -> Val {
        let r = dtype.real();
        match v {
            Val::Real(x) if read.neg => Val::Real(self.un(UnaryOp::Neg, x, r)),
            Val::Real(_) => v,
            Val::Complex(re, im) => {
                let (mut re, mut im) = (re, im);
                if read.conj != read.neg {
                    im = self.un(UnaryOp::Neg, im, r);
                }
                if read.neg {
                    re = self.un(UnaryOp::Neg, re, r);
                }
                Val::Complex(re, im)
            }
        }
    }

    /// Converts `v` from dtype `from` to `to` as a cast does: a real value becomes the real
    /// part (imaginary part 0), a complex value keeps its real part (bool: either part nonzero).
    pub(crate) fn cast_val(&mut self, v: Val, from: DType, to: DType) -> Val {
        match (v, to.is_complex()) {
            (Val::Real(x), false) => Val::Real(self.cast(x, from, to)),
            (Val::Real(x), true) => {
                let r = to.real();
                let re = self.cast(x, from, r);
                Val::Complex(re, self.constant(0.0, r))
            }
            (Val::Complex(re, im), true) => {
                let (fr, tr) = (from.real(), to.real());
                Val::Complex(self.cast(re, fr, tr), self.cast(im, fr, tr))
            }
            (Val::Complex(re, im), false) => {
                let fr = from.real();
                if to == DType::Bool {
                    let zero = self.constant(0.0, fr);
                    let a = self.bin(BinaryOp::Ne, re, zero, fr);
                    let b = self.bin(BinaryOp::Ne, im, zero, fr);
                    Val::Real(self.bin(BinaryOp::LogicalOr, a, b, DType::Bool))
                } else {
                    Val::Real(self.cast(re, fr, to))
                }
            }
        }
    }

    /// `cond ? a : b` part by part.
    pub(crate) fn where_val(&mut self, cond: ValueId, a: Val, b: Val) -> Val {
        match (a, b) {
            (Val::Real(a), Val::Real(b)) => Val::Real(self.select(cond, a, b)),
            (Val::Complex(ar, ai), Val::Complex(br, bi)) => {
                Val::Complex(self.select(cond, ar, br), self.select(cond, ai, bi))
            }
            (Val::Real(_), Val::Complex(..)) | (Val::Complex(..), Val::Real(_)) => {
                panic!("invariant: where's branches share a dtype")
            }
        }
    }

    /// A reduction of `v` over the kernel's reduced dims: a complex sum sums each part.
    pub(crate) fn reduce_val(&mut self, op: ReduceOp, v: Val) -> Val {
        let mut reduce = |x: ValueId| {
            let instr = Instr::Reduce { op, x };
            // Two reductions of one value are one pass over the row.
            match self.body.iter().position(|i| *i == instr) {
                Some(r) => r,
                None => self.push(instr),
            }
        };
        match v {
            Val::Real(x) => Val::Real(reduce(x)),
            Val::Complex(re, im) => {
                assert_eq!(
                    op,
                    ReduceOp::Sum,
                    "invariant: only sums reduce complex values in a kernel"
                );
                Val::Complex(reduce(re), reduce(im))
            }
        }
    }

    /// `op(x)` computed in `compute` (`x` already of that dtype).
    pub(crate) fn unary_val(&mut self, op: UnaryOp, x: Val, compute: DType) -> Val {
        let Val::Complex(a, b) = x else {
            return Val::Real(self.un(op, x.real(), compute));
        };
        let r = compute.real();
        match op {
            UnaryOp::Neg => Val::Complex(self.un(op, a, r), self.un(op, b, r)),
            UnaryOp::Abs => Val::Real(self.hypot(a, b, r)),
            UnaryOp::Angle => Val::Real(self.bin(BinaryOp::Atan2, b, a, r)),
            UnaryOp::Sign => {
                // sgn: z / |z|, and 0 where |z| is 0.
                let h = self.hypot(a, b, r);
                let zero = self.constant(0.0, r);
                let is_zero = self.bin(BinaryOp::Eq, h, zero, r);
                let re = self.bin(BinaryOp::Div, a, h, r);
                let im = self.bin(BinaryOp::Div, b, h, r);
                Val::Complex(
                    self.select(is_zero, zero, re),
                    self.select(is_zero, zero, im),
                )
            }
            UnaryOp::Square => self.mul(a, b, a, b, r),
            UnaryOp::Reciprocal => {
                let (one, zero) = (self.constant(1.0, r), self.constant(0.0, r));
                self.div(one, zero, a, b, r)
            }
            UnaryOp::Exp => {
                let e = self.un(UnaryOp::Exp, a, r);
                let c = self.un(UnaryOp::Cos, b, r);
                let s = self.un(UnaryOp::Sin, b, r);
                Val::Complex(
                    self.bin(BinaryOp::Mul, e, c, r),
                    self.bin(BinaryOp::Mul, e, s, r),
                )
            }
            UnaryOp::Log => {
                let h = self.hypot(a, b, r);
                Val::Complex(
                    self.un(UnaryOp::Log, h, r),
                    self.bin(BinaryOp::Atan2, b, a, r),
                )
            }
            UnaryOp::Sqrt => self.sqrt(a, b, r),
            UnaryOp::Rsqrt => {
                let (sr, si) = self.sqrt(a, b, r).parts();
                let (one, zero) = (self.constant(1.0, r), self.constant(0.0, r));
                self.div(one, zero, sr, si, r)
            }
            UnaryOp::IsNan | UnaryOp::IsInf => {
                let x = self.un(op, a, r);
                let y = self.un(op, b, r);
                Val::Real(self.bin(BinaryOp::LogicalOr, x, y, DType::Bool))
            }
            UnaryOp::IsFinite => {
                let x = self.un(op, a, r);
                let y = self.un(op, b, r);
                Val::Real(self.bin(BinaryOp::LogicalAnd, x, y, DType::Bool))
            }
            UnaryOp::LogicalNot => {
                let x = self.un(op, a, r);
                let y = self.un(op, b, r);
                Val::Real(self.bin(BinaryOp::LogicalAnd, x, y, DType::Bool))
            }
            UnaryOp::Expm1
            | UnaryOp::Exp2
            | UnaryOp::Log2
            | UnaryOp::Log1p
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Tan
            | UnaryOp::Tanh
            | UnaryOp::Sigmoid
            | UnaryOp::Relu
            | UnaryOp::Erf
            | UnaryOp::Floor
            | UnaryOp::Ceil
            | UnaryOp::Round
            | UnaryOp::Trunc
            | UnaryOp::BitwiseNot => panic!(
                "invariant: the frontend refuses {} of a complex value",
                op.name()
            ),
        }
    }

    /// `op(x, y)` computed in `compute` (both already of that dtype).
    pub(crate) fn binary_val(&mut self, op: BinaryOp, x: Val, y: Val, compute: DType) -> Val {
        let (Val::Complex(a, b), Val::Complex(c, d)) = (x, y) else {
            return Val::Real(self.bin(op, x.real(), y.real(), compute));
        };
        let r = compute.real();
        match op {
            BinaryOp::Add | BinaryOp::Sub => {
                Val::Complex(self.bin(op, a, c, r), self.bin(op, b, d, r))
            }
            BinaryOp::Mul => self.mul(a, b, c, d, r),
            BinaryOp::Div => self.div(a, b, c, d, r),
            BinaryOp::Eq => {
                let re = self.bin(BinaryOp::Eq, a, c, r);
                let im = self.bin(BinaryOp::Eq, b, d, r);
                Val::Real(self.bin(BinaryOp::LogicalAnd, re, im, DType::Bool))
            }
            BinaryOp::Ne => {
                let re = self.bin(BinaryOp::Ne, a, c, r);
                let im = self.bin(BinaryOp::Ne, b, d, r);
                Val::Real(self.bin(BinaryOp::LogicalOr, re, im, DType::Bool))
            }
            BinaryOp::LogicalAnd | BinaryOp::LogicalOr | BinaryOp::LogicalXor => {
                let p = self.nonzero(a, b, r);
                let q = self.nonzero(c, d, r);
                Val::Real(self.bin(op, p, q, DType::Bool))
            }
            BinaryOp::DivTrunc
            | BinaryOp::DivFloor
            | BinaryOp::Remainder
            | BinaryOp::Fmod
            | BinaryOp::Pow
            | BinaryOp::Maximum
            | BinaryOp::Minimum
            | BinaryOp::Atan2
            | BinaryOp::Lt
            | BinaryOp::Le
            | BinaryOp::Gt
            | BinaryOp::Ge
            | BinaryOp::BitAnd
            | BinaryOp::BitOr
            | BinaryOp::BitXor => panic!(
                "invariant: the frontend refuses {} of complex values",
                op.name()
            ),
        }
    }

    /// Either part nonzero.
    fn nonzero(&mut self, a: ValueId, b: ValueId, r: DType) -> ValueId {
        let zero = self.constant(0.0, r);
        let p = self.bin(BinaryOp::Ne, a, zero, r);
        let q = self.bin(BinaryOp::Ne, b, zero, r);
        self.bin(BinaryOp::LogicalOr, p, q, DType::Bool)
    }

    /// `(a + bi)(c + di) = (ac − bd) + (ad + bc)i`.
    fn mul(&mut self, a: ValueId, b: ValueId, c: ValueId, d: ValueId, r: DType) -> Val {
        let ac = self.bin(BinaryOp::Mul, a, c, r);
        let bd = self.bin(BinaryOp::Mul, b, d, r);
        let ad = self.bin(BinaryOp::Mul, a, d, r);
        let bc = self.bin(BinaryOp::Mul, b, c, r);
        Val::Complex(
            self.bin(BinaryOp::Sub, ac, bd, r),
            self.bin(BinaryOp::Add, ad, bc, r),
        )
    }

    /// `(a + bi) / (c + di)` by Smith's algorithm as c10::complex divides: scaled by the
    /// larger of `|c|`, `|d|`; a zero divisor gives `a/|c| + (b/|d|)i` (infinities or NaN).
    fn div(&mut self, a: ValueId, b: ValueId, c: ValueId, d: ValueId, r: DType) -> Val {
        use BinaryOp::{Add, Div, Eq, Ge, LogicalAnd, Mul, Sub};
        let abs_c = self.un(UnaryOp::Abs, c, r);
        let abs_d = self.un(UnaryOp::Abs, d, r);
        let zero = self.constant(0.0, r);
        let one = self.constant(1.0, r);
        let c_wins = self.bin(Ge, abs_c, abs_d, r);
        let c0 = self.bin(Eq, abs_c, zero, r);
        let d0 = self.bin(Eq, abs_d, zero, r);
        let both_zero = self.bin(LogicalAnd, c0, d0, DType::Bool);
        // |c| >= |d|: rat = d/c, scl = 1/(c + d·rat).
        let rat = self.bin(Div, d, c, r);
        let t = self.bin(Mul, d, rat, r);
        let t = self.bin(Add, c, t, r);
        let scl = self.bin(Div, one, t, r);
        let br = self.bin(Mul, b, rat, r);
        let re1 = self.bin(Add, a, br, r);
        let re1 = self.bin(Mul, re1, scl, r);
        let ar = self.bin(Mul, a, rat, r);
        let im1 = self.bin(Sub, b, ar, r);
        let im1 = self.bin(Mul, im1, scl, r);
        // |c| < |d|: rat = c/d, scl = 1/(d + c·rat).
        let rat = self.bin(Div, c, d, r);
        let t = self.bin(Mul, c, rat, r);
        let t = self.bin(Add, d, t, r);
        let scl = self.bin(Div, one, t, r);
        let ar = self.bin(Mul, a, rat, r);
        let re2 = self.bin(Add, ar, b, r);
        let re2 = self.bin(Mul, re2, scl, r);
        let br = self.bin(Mul, b, rat, r);
        let im2 = self.bin(Sub, br, a, r);
        let im2 = self.bin(Mul, im2, scl, r);
        // Both zero: a/|c|, b/|d|.
        let re0 = self.bin(Div, a, abs_c, r);
        let im0 = self.bin(Div, b, abs_d, r);
        let re = self.select(both_zero, re0, re1);
        let im = self.select(both_zero, im0, im1);
        Val::Complex(self.select(c_wins, re, re2), self.select(c_wins, im, im2))
    }

    /// `hypot(a, b)` without overflow or underflow: `m·sqrt(1 + (n/m)²)` for the larger `m`
    /// and smaller `n` of `|a|`, `|b|`; `m` when `n` is 0 (so 0 for 0); +inf when either is
    /// infinite, even beside a NaN; NaN otherwise when either is NaN.
    fn hypot(&mut self, a: ValueId, b: ValueId, r: DType) -> ValueId {
        use BinaryOp::{Add, Div, Eq, LogicalOr, Maximum, Minimum, Mul};
        let x = self.un(UnaryOp::Abs, a, r);
        let y = self.un(UnaryOp::Abs, b, r);
        let m = self.bin(Maximum, x, y, r);
        let n = self.bin(Minimum, x, y, r);
        let q = self.bin(Div, n, m, r);
        let q2 = self.bin(Mul, q, q, r);
        let one = self.constant(1.0, r);
        let s = self.bin(Add, one, q2, r);
        let s = self.un(UnaryOp::Sqrt, s, r);
        let h = self.bin(Mul, m, s, r);
        let zero = self.constant(0.0, r);
        let n0 = self.bin(Eq, n, zero, r);
        let h = self.select(n0, m, h);
        let xi = self.un(UnaryOp::IsInf, x, r);
        let yi = self.un(UnaryOp::IsInf, y, r);
        let inf = self.bin(LogicalOr, xi, yi, DType::Bool);
        let infinity = self.constant(f64::INFINITY, r);
        self.select(inf, infinity, h)
    }

    /// The principal square root (libstdc++'s formula): for `a = 0`, `t = sqrt(|b|/2)` and
    /// `t ± ti`; else `t = sqrt(2(|z| + |a|))`, and `t/2 + (b/t)i` for `a > 0`,
    /// `|b|/t ± (t/2)i` otherwise, the sign of the imaginary part that of `b` (−0 included).
    fn sqrt(&mut self, a: ValueId, b: ValueId, r: DType) -> Val {
        use BinaryOp::{Add, Div, Eq, Gt, LogicalOr, Lt, Mul};
        let zero = self.constant(0.0, r);
        let one = self.constant(1.0, r);
        let two = self.constant(2.0, r);
        let abs_a = self.un(UnaryOp::Abs, a, r);
        let abs_b = self.un(UnaryOp::Abs, b, r);
        // The sign bit of b: b < 0, or b = −0 (1/b = −inf).
        let inv = self.bin(Div, one, b, r);
        let b_neg = self.bin(Lt, b, zero, r);
        let inv_neg = self.bin(Lt, inv, zero, r);
        let b_neg = self.bin(LogicalOr, b_neg, inv_neg, DType::Bool);
        // a = 0.
        let half_b = self.bin(Div, abs_b, two, r);
        let t0 = self.un(UnaryOp::Sqrt, half_b, r);
        let t0_neg = self.un(UnaryOp::Neg, t0, r);
        let im0 = self.select(b_neg, t0_neg, t0);
        // a ≠ 0.
        let h = self.hypot(a, b, r);
        let s = self.bin(Add, h, abs_a, r);
        let s = self.bin(Mul, two, s, r);
        let t = self.un(UnaryOp::Sqrt, s, r);
        let u = self.bin(Div, t, two, r);
        let b_t = self.bin(Div, b, t, r);
        let abs_b_t = self.bin(Div, abs_b, t, r);
        let u_neg = self.un(UnaryOp::Neg, u, r);
        let signed_u = self.select(b_neg, u_neg, u);
        let a_pos = self.bin(Gt, a, zero, r);
        let re1 = self.select(a_pos, u, abs_b_t);
        let im1 = self.select(a_pos, b_t, signed_u);
        let a0 = self.bin(Eq, a, zero, r);
        Val::Complex(self.select(a0, t0, re1), self.select(a0, im0, im1))
    }
}
