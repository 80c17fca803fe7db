//! Scalar and f32x4 arithmetic: constants, casts, rounding to f16/bf16, unary and binary ops
//! (inline math for f32 transcendentals, helpers for the rest), selects.

use super::*;
use smelt_ir::{OnBool, OnInt};

impl<'a, 'f> Translator<'a, 'f> {
    pub(super) fn constant(&mut self, value: Scalar, dtype: DType) -> Value {
        let v = value.cast(dtype);
        let s = match dtype {
            DType::F16 | DType::BF16 | DType::F32 => {
                self.b.ins().f32const(round_float(v.as_f64(), dtype) as f32)
            }
            DType::F64 => self.b.ins().f64const(v.as_f64()),
            DType::Bool => self.b.ins().iconst(types::I8, v.as_bool() as i64),
            DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8 => {
                self.b.ins().iconst(ty(dtype), v.as_i64())
            }
            DType::C64 | DType::C128 => panic!("{REAL_KERNELS}"),
        };
        if !self.vector {
            s
        } else if dtype == DType::Bool {
            self.bool_const(v.as_bool())
        } else {
            let vty = self.vty(dtype);
            self.b.ins().splat(vty, s)
        }
    }

    pub(super) fn fconst(&mut self, t: Type, v: f64) -> Value {
        match t {
            types::F64 => self.b.ins().f64const(v),
            types::F32X4 => {
                let s = self.b.ins().f32const(v as f32);
                self.b.ins().splat(types::F32X4, s)
            }
            types::F64X2 => {
                let s = self.b.ins().f64const(v);
                self.b.ins().splat(types::F64X2, s)
            }
            _ => self.b.ins().f32const(v as f32),
        }
    }

    /// A float value of `dtype` widened to f64.
    pub(super) fn widen(&mut self, dtype: DType, x: Value) -> Value {
        if dtype == DType::F64 {
            x
        } else {
            self.b.ins().fpromote(types::F64, x)
        }
    }

    /// An f64 rounded to the float `dtype` (held as its register type): to f32, and from there
    /// to f16 or bf16, as PyTorch converts a double (`smelt_ir::scalar::to_f16`).
    pub(super) fn narrow_f64(&mut self, dtype: DType, x: Value) -> Value {
        match dtype {
            DType::F16 | DType::BF16 => {
                let f = self.b.ins().fdemote(types::F32, x);
                self.round(dtype, f)
            }
            DType::F32 => self.b.ins().fdemote(types::F32, x),
            DType::F64
            | DType::Bool
            | DType::U8
            | DType::I8
            | DType::I16
            | DType::I32
            | DType::I64 => x,
            DType::C64 | DType::C128 => panic!("{REAL_KERNELS}"),
        }
    }

    /// Rounds the result of an exactly rounded f32 op to f16/bf16 (f32 carries enough bits
    /// for that double rounding to be exact); identity for f32 and f64.
    pub(super) fn round(&mut self, dtype: DType, x: Value) -> Value {
        match dtype {
            DType::F16 => self.round_to_f16(x),
            DType::BF16 => self.round_to_bf16(x),
            DType::F32
            | DType::F64
            | DType::Bool
            | DType::U8
            | DType::I8
            | DType::I16
            | DType::I32
            | DType::I64 => x,
            DType::C64 | DType::C128 => panic!("{REAL_KERNELS}"),
        }
    }

    /// An integer (or bool) value widened to i64 by its signedness.
    pub(super) fn extend(&mut self, dtype: DType, x: Value) -> Value {
        if dtype == DType::I64 {
            x
        } else if is_signed(dtype) {
            self.b.ins().sextend(types::I64, x)
        } else {
            self.b.ins().uextend(types::I64, x)
        }
    }

    pub(super) fn narrow(&mut self, dtype: DType, x: Value) -> Value {
        if ty(dtype) == types::I64 {
            x
        } else {
            self.b.ins().ireduce(ty(dtype), x)
        }
    }

    /// A float helper call `f(code, args…)` in f64, per lane in a SIMD loop.
    pub(super) fn call_f64(
        &mut self,
        f: FuncRef,
        code: i64,
        args: &[Value],
        compute: DType,
    ) -> Value {
        if self.vector {
            let vty = self.vty(compute);
            let mut out = self.fconst(vty, 0.0);
            let f32_lanes = vty.lane_type() == types::F32;
            for lane in 0..self.lanes() as u8 {
                let mut call_args = vec![self.b.ins().iconst(types::I64, code)];
                for a in args {
                    let s = self.b.ins().extractlane(*a, lane);
                    call_args.push(if f32_lanes {
                        self.b.ins().fpromote(types::F64, s)
                    } else {
                        s
                    });
                }
                let call = self.b.ins().call(f, &call_args);
                let mut r = self.b.inst_results(call)[0];
                if f32_lanes {
                    r = self.narrow_f64(compute, r);
                }
                out = self.b.ins().insertlane(out, r, lane);
            }
            return out;
        }
        let mut call_args = vec![self.b.ins().iconst(types::I64, code)];
        for a in args {
            call_args.push(self.widen(compute, *a));
        }
        let call = self.b.ins().call(f, &call_args);
        let r = self.b.inst_results(call)[0];
        self.narrow_f64(compute, r)
    }

    pub(super) fn bool_const(&mut self, v: bool) -> Value {
        if self.vector {
            let mask = self.mask_ty();
            let s = self.b.ins().iconst(mask.lane_type(), -(v as i64));
            self.b.ins().splat(mask, s)
        } else {
            self.b.ins().iconst(types::I8, v as i64)
        }
    }

    pub(super) fn unary(&mut self, op: UnaryOp, x: Value, compute: DType) -> Result<Value> {
        if compute.is_float() {
            return Ok(self.unary_float(op, x, compute));
        }
        if compute == DType::Bool {
            return Ok(match op.on_bool() {
                // Lane masks are all ones or zeros.
                OnBool::Not if self.vector => self.b.ins().bnot(x),
                OnBool::Not => self.b.ins().bxor_imm_s(x, 1),
                OnBool::Const(c) => self.bool_const(c),
                OnBool::Same => x,
            });
        }
        let t = ty(compute);
        let signed = is_signed(compute);
        Ok(match op.on_int() {
            OnInt::Neg => self.b.ins().ineg(x),
            OnInt::Abs => {
                if signed {
                    self.b.ins().iabs(x)
                } else {
                    x
                }
            }
            // In SIMD (signed lanes) the masks are −1 where true: sign = (x < 0) − (x > 0).
            OnInt::Sign if self.vector => {
                let zero = self.int_zero(t);
                let pos = self.b.ins().icmp(IntCC::SignedGreaterThan, x, zero);
                let neg = self.b.ins().icmp(IntCC::SignedLessThan, x, zero);
                self.b.ins().isub(neg, pos)
            }
            OnInt::Sign => {
                let zero = self.int_zero(t);
                let one = self.b.ins().iconst(t, 1);
                if signed {
                    let minus = self.b.ins().iconst(t, -1);
                    let pos = self.b.ins().icmp(IntCC::SignedGreaterThan, x, zero);
                    let neg = self.b.ins().icmp(IntCC::SignedLessThan, x, zero);
                    let m = self.b.ins().select(neg, minus, zero);
                    self.b.ins().select(pos, one, m)
                } else {
                    let nz = self.b.ins().icmp(IntCC::NotEqual, x, zero);
                    self.b.ins().select(nz, one, zero)
                }
            }
            OnInt::Square => self.b.ins().imul(x, x),
            OnInt::Relu => {
                if signed {
                    let zero = self.int_zero(t);
                    self.b.ins().smax(x, zero)
                } else {
                    x
                }
            }
            OnInt::Same => x,
            OnInt::BitNot => self.b.ins().bnot(x),
            OnInt::IsZero => {
                let zero = self.int_zero(t);
                self.b.ins().icmp(IntCC::Equal, x, zero)
            }
            OnInt::Const(c) => self.bool_const(c),
            OnInt::ViaFloat => {
                let code = self.b.ins().iconst(types::I64, unary_code(op));
                let mut call = |t: &mut Self, w: Value| {
                    let call = t.b.ins().call(t.h.unary_i64, &[code, w]);
                    t.b.inst_results(call)[0]
                };
                if self.vector {
                    self.int_lanes(x, &mut call)
                } else {
                    let w = self.extend(compute, x);
                    let r = call(self, w);
                    self.narrow(compute, r)
                }
            }
        })
    }

    pub(super) fn unary_float(&mut self, op: UnaryOp, x: Value, compute: DType) -> Value {
        let t = if self.vector {
            self.vty(compute)
        } else {
            ty(compute)
        };
        // Inline transcendentals (`math::Inline`): f32 (f16/bf16 compute in f32) for all of
        // them, f64 for those with an f64 routine.
        if let Some(f) = math::Inline::of(op).filter(|_| inline_math(op, compute)) {
            let slow = Fallback {
                func: self.h.unary_f64,
                code: unary_code(op),
            };
            let r = math::unary(&mut self.b, &mut self.consts, f, x, slow);
            return self.round(compute, r);
        }
        match op {
            UnaryOp::Neg => self.b.ins().fneg(x),
            UnaryOp::Abs => self.b.ins().fabs(x),
            UnaryOp::Square => {
                let r = self.b.ins().fmul(x, x);
                self.round(compute, r)
            }
            UnaryOp::Sqrt => {
                let r = self.b.ins().sqrt(x);
                self.round(compute, r)
            }
            UnaryOp::Reciprocal => {
                let one = self.fconst(t, 1.0);
                let r = self.b.ins().fdiv(one, x);
                self.round(compute, r)
            }
            UnaryOp::Floor => self.b.ins().floor(x),
            UnaryOp::Ceil => self.b.ins().ceil(x),
            UnaryOp::Trunc => self.b.ins().trunc(x),
            UnaryOp::Round => self.b.ins().nearest(x),
            // fmax propagates NaN and orders -0 below +0: exactly `x > 0 || isnan ? x : 0`.
            UnaryOp::Relu => {
                let zero = self.fconst(t, 0.0);
                self.b.ins().fmax(x, zero)
            }
            UnaryOp::Sign => {
                let zero = self.fconst(t, 0.0);
                let one = self.fconst(t, 1.0);
                let minus = self.fconst(t, -1.0);
                let pos = self.b.ins().fcmp(FloatCC::GreaterThan, x, zero);
                let neg = self.b.ins().fcmp(FloatCC::LessThan, x, zero);
                let m = self.select(neg, minus, zero);
                self.select(pos, one, m)
            }
            UnaryOp::BitwiseNot => x,
            UnaryOp::LogicalNot => {
                let zero = self.fconst(t, 0.0);
                self.b.ins().fcmp(FloatCC::Equal, x, zero)
            }
            UnaryOp::IsNan => self.b.ins().fcmp(FloatCC::Unordered, x, x),
            // π below 0, NaN for NaN, else 0 (`-0` included).
            UnaryOp::Angle => {
                let zero = self.fconst(t, 0.0);
                let pi = self.fconst(t, std::f64::consts::PI);
                let below = self.b.ins().fcmp(FloatCC::LessThan, x, zero);
                let nan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
                let r = self.select(below, pi, zero);
                let r = self.select(nan, x, r);
                self.round(compute, r)
            }
            UnaryOp::IsInf | UnaryOp::IsFinite => {
                let a = self.b.ins().fabs(x);
                let inf = self.fconst(t, f64::INFINITY);
                let cc = if op == UnaryOp::IsInf {
                    FloatCC::Equal
                } else {
                    FloatCC::LessThan
                };
                self.b.ins().fcmp(cc, a, inf)
            }
            // Transcendentals without an inline routine (`inline_math`, above) call libm.
            UnaryOp::Rsqrt
            | UnaryOp::Exp
            | UnaryOp::Expm1
            | UnaryOp::Exp2
            | UnaryOp::Log
            | UnaryOp::Log2
            | UnaryOp::Log1p
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Tan
            | UnaryOp::Tanh
            | UnaryOp::Sigmoid
            | UnaryOp::Erf => self.call_f64(self.h.unary_f64, unary_code(op), &[x], compute),
        }
    }

    /// `cond ? a : b`; in a SIMD loop `cond` is a lane mask (of `a`'s lane width, or made so).
    pub(super) fn select(&mut self, cond: Value, a: Value, b: Value) -> Value {
        if self.vector {
            let vty = self.b.func.dfg.value_type(a);
            let cond = self.mask_as(cond, vty.as_int());
            let mask = if vty.is_int() {
                cond
            } else {
                self.b.ins().bitcast(vty, MemFlagsData::new(), cond)
            };
            self.b.ins().bitselect(mask, a, b)
        } else {
            self.b.ins().select(cond, a, b)
        }
    }

    pub(super) fn binary(
        &mut self,
        op: BinaryOp,
        a: Value,
        b: Value,
        compute: DType,
        exponent: Option<f64>,
    ) -> Result<Value> {
        if compute.is_float() {
            return Ok(self.binary_float(op, a, b, compute, exponent));
        }
        if compute == DType::Bool {
            // A mixed kernel's masks may come in two widths: both as the loads' width.
            let (a, b) = if self.vector {
                let m = self.mask_ty();
                (self.mask_as(a, m), self.mask_as(b, m))
            } else {
                (a, b)
            };
            return Ok(match op {
                BinaryOp::Eq => self.b.ins().icmp(IntCC::Equal, a, b),
                BinaryOp::Ne | BinaryOp::LogicalXor | BinaryOp::BitXor | BinaryOp::Sub => {
                    self.b.ins().bxor(a, b)
                }
                BinaryOp::Lt => self.b.ins().icmp(IntCC::UnsignedLessThan, a, b),
                BinaryOp::Le => self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, a, b),
                BinaryOp::Gt => self.b.ins().icmp(IntCC::UnsignedGreaterThan, a, b),
                BinaryOp::Ge => self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, a, b),
                BinaryOp::LogicalAnd | BinaryOp::BitAnd | BinaryOp::Mul | BinaryOp::Minimum => {
                    self.b.ins().band(a, b)
                }
                BinaryOp::LogicalOr | BinaryOp::BitOr | BinaryOp::Add | BinaryOp::Maximum => {
                    self.b.ins().bor(a, b)
                }
                BinaryOp::Div
                | BinaryOp::DivTrunc
                | BinaryOp::DivFloor
                | BinaryOp::Remainder
                | BinaryOp::Fmod
                | BinaryOp::Pow => {
                    let (x, y) = (self.extend(DType::Bool, a), self.extend(DType::Bool, b));
                    let r = self.int_helper(op, x, y);
                    self.b.ins().icmp_imm_s(IntCC::NotEqual, r, 0)
                }
                BinaryOp::Atan2 => return unsupported("atan2 over bools"),
            });
        }
        let signed = is_signed(compute);
        let cc = |s: IntCC, u: IntCC| if signed { s } else { u };
        Ok(match op {
            BinaryOp::Add => self.b.ins().iadd(a, b),
            BinaryOp::Sub => self.b.ins().isub(a, b),
            BinaryOp::Mul => self.b.ins().imul(a, b),
            BinaryOp::Div
            | BinaryOp::DivTrunc
            | BinaryOp::DivFloor
            | BinaryOp::Remainder
            | BinaryOp::Fmod
            | BinaryOp::Pow => {
                if self.vector {
                    self.int_lanes2(a, b, &mut |t, x, y| t.int_helper(op, x, y))
                } else {
                    let (x, y) = (self.extend(compute, a), self.extend(compute, b));
                    let r = self.int_helper(op, x, y);
                    self.narrow(compute, r)
                }
            }
            BinaryOp::Maximum => {
                if signed {
                    self.b.ins().smax(a, b)
                } else {
                    self.b.ins().umax(a, b)
                }
            }
            BinaryOp::Minimum => {
                if signed {
                    self.b.ins().smin(a, b)
                } else {
                    self.b.ins().umin(a, b)
                }
            }
            BinaryOp::Atan2 => return unsupported("atan2 over integers"),
            BinaryOp::Eq => self.b.ins().icmp(IntCC::Equal, a, b),
            BinaryOp::Ne => self.b.ins().icmp(IntCC::NotEqual, a, b),
            BinaryOp::Lt => {
                let c = cc(IntCC::SignedLessThan, IntCC::UnsignedLessThan);
                self.b.ins().icmp(c, a, b)
            }
            BinaryOp::Le => {
                let c = cc(IntCC::SignedLessThanOrEqual, IntCC::UnsignedLessThanOrEqual);
                self.b.ins().icmp(c, a, b)
            }
            BinaryOp::Gt => {
                let c = cc(IntCC::SignedGreaterThan, IntCC::UnsignedGreaterThan);
                self.b.ins().icmp(c, a, b)
            }
            BinaryOp::Ge => {
                let c = cc(
                    IntCC::SignedGreaterThanOrEqual,
                    IntCC::UnsignedGreaterThanOrEqual,
                );
                self.b.ins().icmp(c, a, b)
            }
            BinaryOp::LogicalAnd | BinaryOp::LogicalOr | BinaryOp::LogicalXor => {
                let zero = self.int_zero(ty(compute));
                let x = self.b.ins().icmp(IntCC::NotEqual, a, zero);
                let y = self.b.ins().icmp(IntCC::NotEqual, b, zero);
                self.logical(op, x, y)
            }
            BinaryOp::BitAnd => self.b.ins().band(a, b),
            BinaryOp::BitOr => self.b.ins().bor(a, b),
            BinaryOp::BitXor => self.b.ins().bxor(a, b),
        })
    }

    /// and/or/xor of two truth values (`LogicalAnd`/`LogicalOr`, anything else is xor).
    pub(super) fn logical(&mut self, op: BinaryOp, x: Value, y: Value) -> Value {
        if op == BinaryOp::LogicalAnd {
            self.b.ins().band(x, y)
        } else if op == BinaryOp::LogicalOr {
            self.b.ins().bor(x, y)
        } else {
            self.b.ins().bxor(x, y)
        }
    }

    /// Integer zero: of the scalar type `t`, or in a SIMD loop a 128-bit vector of `t` lanes.
    fn int_zero(&mut self, t: Type) -> Value {
        if self.vector {
            let z = self.b.ins().iconst(t, 0);
            let vty = t
                .by(128 / t.bits())
                .expect("lanes of 8 to 64 bits fill 128");
            self.b.ins().splat(vty, z)
        } else {
            self.b.ins().iconst(t, 0)
        }
    }

    /// `f` on each lane of `x`, a vector of the kernel's (signed) integer lanes, widened to
    /// i64; its i64 result is narrowed back into the lane.
    fn int_lanes(&mut self, x: Value, f: &mut dyn FnMut(&mut Self, Value) -> Value) -> Value {
        self.int_lanes2(x, x, &mut |t, x, _| f(t, x))
    }

    /// [`Self::int_lanes`] over the lanes of two vectors.
    fn int_lanes2(
        &mut self,
        a: Value,
        b: Value,
        f: &mut dyn FnMut(&mut Self, Value, Value) -> Value,
    ) -> Value {
        let lane_ty = self.b.func.dfg.value_type(a).lane_type();
        let mut out = self.int_zero(lane_ty);
        for lane in 0..self.lanes() as u8 {
            let mut xy = [a, b].map(|v| self.b.ins().extractlane(v, lane));
            if lane_ty != types::I64 {
                xy = xy.map(|v| self.b.ins().sextend(types::I64, v));
            }
            let mut r = f(self, xy[0], xy[1]);
            if lane_ty != types::I64 {
                r = self.b.ins().ireduce(lane_ty, r);
            }
            out = self.b.ins().insertlane(out, r, lane);
        }
        out
    }

    pub(super) fn int_helper(&mut self, op: BinaryOp, x: Value, y: Value) -> Value {
        let code = self.b.ins().iconst(types::I64, binary_code(op));
        let call = self.b.ins().call(self.h.binary_i64, &[code, x, y]);
        self.b.inst_results(call)[0]
    }

    pub(super) fn binary_float(
        &mut self,
        op: BinaryOp,
        a: Value,
        b: Value,
        compute: DType,
        exponent: Option<f64>,
    ) -> Value {
        let t = if self.vector {
            self.vty(compute)
        } else {
            ty(compute)
        };
        let cmp = |s: &mut Self, cc: FloatCC| s.b.ins().fcmp(cc, a, b);
        match op {
            BinaryOp::Add => {
                let r = self.b.ins().fadd(a, b);
                self.round(compute, r)
            }
            BinaryOp::Sub => {
                let r = self.b.ins().fsub(a, b);
                self.round(compute, r)
            }
            BinaryOp::Mul => {
                let r = self.b.ins().fmul(a, b);
                self.round(compute, r)
            }
            BinaryOp::Div => {
                let r = self.b.ins().fdiv(a, b);
                self.round(compute, r)
            }
            // x² is exact in f64, so squaring in the compute type rounds once like powf does.
            BinaryOp::Pow if exponent == Some(2.0) => {
                let r = self.b.ins().fmul(a, a);
                self.round(compute, r)
            }
            BinaryOp::Pow if exponent == Some(1.0) => a,
            // x³ as two f32 products (gelu's cube): within 1 ulp of powf, no log/exp.
            BinaryOp::Pow if exponent == Some(3.0) && compute != DType::F64 => {
                let r = self.b.ins().fmul(a, a);
                let r = self.b.ins().fmul(r, a);
                self.round(compute, r)
            }
            BinaryOp::Pow if compute != DType::F64 => {
                let r = math::pow(&mut self.b, &mut self.consts, a, b);
                self.round(compute, r)
            }
            BinaryOp::Maximum => self.b.ins().fmax(a, b),
            BinaryOp::Minimum => self.b.ins().fmin(a, b),
            BinaryOp::Eq => cmp(self, FloatCC::Equal),
            BinaryOp::Ne => cmp(self, FloatCC::NotEqual),
            BinaryOp::Lt => cmp(self, FloatCC::LessThan),
            BinaryOp::Le => cmp(self, FloatCC::LessThanOrEqual),
            BinaryOp::Gt => cmp(self, FloatCC::GreaterThan),
            BinaryOp::Ge => cmp(self, FloatCC::GreaterThanOrEqual),
            BinaryOp::LogicalAnd | BinaryOp::LogicalOr | BinaryOp::LogicalXor => {
                let zero = self.fconst(t, 0.0);
                let x = self.b.ins().fcmp(FloatCC::NotEqual, a, zero);
                let y = self.b.ins().fcmp(FloatCC::NotEqual, b, zero);
                self.logical(op, x, y)
            }
            // Refused by the frontend; the interpreter's answer is NaN.
            BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor => self.fconst(t, f64::NAN),
            BinaryOp::DivTrunc
            | BinaryOp::DivFloor
            | BinaryOp::Remainder
            | BinaryOp::Fmod
            | BinaryOp::Pow
            | BinaryOp::Atan2 => {
                if op == BinaryOp::DivTrunc && !self.vector {
                    let (x, y) = (self.widen(compute, a), self.widen(compute, b));
                    let q = self.b.ins().fdiv(x, y);
                    let q = self.b.ins().trunc(q);
                    return self.narrow_f64(compute, q);
                }
                self.call_f64(self.h.binary_f64, binary_code(op), &[a, b], compute)
            }
        }
    }

    /// In a SIMD loop, a cast between a value dtype and bool (lane masks): nonzero (NaN
    /// included) is true, true is 1.
    fn cast_mask(&mut self, x: Value, from: DType, to: DType) -> Value {
        if to == DType::Bool {
            let vty = self.vty(from);
            if from.is_float() {
                let zero = self.fconst(vty, 0.0);
                self.b.ins().fcmp(FloatCC::NotEqual, x, zero)
            } else {
                let zero = self.int_zero(vty.lane_type());
                self.b.ins().icmp(IntCC::NotEqual, x, zero)
            }
        } else {
            let vty = self.vty(to);
            let m = self.mask_as(x, vty.as_int());
            if to.is_float() {
                let one = self.fconst(vty, 1.0);
                let m = self.b.ins().bitcast(vty, MemFlagsData::new(), m);
                self.b.ins().band(m, one)
            } else {
                self.b.ins().ineg(m)
            }
        }
    }

    /// A cast between lane dtypes of a mixed kernel ([`Translator::mixed_instr`] admits these),
    /// with the scalar code's results: through f64 as the scalar code goes, where that
    /// rounds the same as the direct conversion (an i32 is exact in f64; an f64 rounds to f32
    /// once, then to f16 or bf16 as the scalar `narrow_f64` does).
    fn mixed_cast(&mut self, x: Value, from: DType, to: DType) -> Result<Value> {
        let (rf, rt) = (register_dtype(from), register_dtype(to));
        Ok(match (rf, rt) {
            // Between f16, bf16 and f32 in f32 lanes: exact widening, or one rounding.
            (DType::F32, DType::F32) => self.round(to, x),
            (DType::F32, DType::F64) => self.b.ins().fvpromote_low(x),
            (DType::F64, DType::F32) => {
                let f = self.b.ins().fvdemote(x);
                self.round(to, f)
            }
            (DType::I32, DType::F32) => {
                let f = self.b.ins().fcvt_from_sint(types::F32X4, x);
                self.round(to, f)
            }
            // x64 lowers this pair to one `cvtdq2pd`.
            (DType::I32, DType::F64) => {
                let w = self.b.ins().swiden_low(x);
                self.b.ins().fcvt_from_sint(types::F64X2, w)
            }
            (DType::I32, DType::I64) => self.b.ins().swiden_low(x),
            (DType::I64, DType::I32) => self.low_words(x),
            // No SSE conversion from i64: lane by lane, as the scalar code converts.
            (DType::I64, DType::F32 | DType::F64) => {
                let vty = self.vty(to);
                let mut out = self.fconst(vty, 0.0);
                for lane in 0..self.lanes() as u8 {
                    let v = self.b.ins().extractlane(x, lane);
                    let f = self.b.ins().fcvt_from_sint(types::F64, v);
                    let f = self.narrow_f64(to, f);
                    out = self.b.ins().insertlane(out, f, lane);
                }
                out
            }
            _ => return unsupported(format!("a SIMD cast from {from:?} to {to:?}")),
        })
    }

    pub(super) fn cast(&mut self, x: Value, from: DType, to: DType) -> Result<Value> {
        if from == to {
            return Ok(x);
        }
        if self.vector {
            return Ok(match (from, to) {
                (DType::Bool, _) | (_, DType::Bool) => self.cast_mask(x, from, to),
                _ if self.mixed.is_some() => self.mixed_cast(x, from, to)?,
                // Between f16, bf16 and f32 in f32 lanes: exact widening, or one rounding.
                (_, DType::F32) => x,
                _ => self.round(to, x),
            });
        }
        let ins_float = |d: DType| d.is_float();
        Ok(if ins_float(from) {
            if to == DType::Bool {
                let zero = self.fconst(ty(from), 0.0);
                self.b.ins().fcmp(FloatCC::NotEqual, x, zero)
            } else if to.is_float() {
                match (from, to) {
                    // f16/bf16 values are exact f32 values already.
                    (DType::F16 | DType::BF16, DType::F32) => x,
                    // One rounding of an exact f32 value.
                    (DType::F32 | DType::F16 | DType::BF16, DType::F16 | DType::BF16) => {
                        self.round(to, x)
                    }
                    (_, DType::F64) => self.b.ins().fpromote(types::F64, x),
                    _ => {
                        let w = self.widen(from, x);
                        self.narrow_f64(to, w)
                    }
                }
            } else {
                // float_to_i64: truncation in range, i64::MIN for NaN and out of range.
                let w = self.widen(from, x);
                let lo = self.b.ins().f64const(-9_223_372_036_854_775_808.0);
                let hi = self.b.ins().f64const(9_223_372_036_854_775_808.0);
                let ge = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, w, lo);
                let lt = self.b.ins().fcmp(FloatCC::LessThan, w, hi);
                let ok = self.b.ins().band(ge, lt);
                let v = self.b.ins().fcvt_to_sint_sat(types::I64, w);
                let min = self.b.ins().iconst(types::I64, i64::MIN);
                let r = self.b.ins().select(ok, v, min);
                self.narrow(to, r)
            }
        } else {
            let w = self.extend(from, x);
            if to == DType::Bool {
                self.b.ins().icmp_imm_s(IntCC::NotEqual, w, 0)
            } else if to.is_float() {
                let f = self.b.ins().fcvt_from_sint(types::F64, w);
                self.narrow_f64(to, f)
            } else {
                self.narrow(to, w)
            }
        })
    }
}
