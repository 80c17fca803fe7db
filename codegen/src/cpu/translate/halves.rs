//! f16 and bf16 in registers: values are held as f32 (every f16 and bf16 value is one), so
//! what is left is converting to and from their bits and rounding an f32 result to them, all in
//! integer and float bit operations that run alike on a scalar (`i32`/`f32`) and on four lanes
//! (`i32x4`/`f32x4`). Each rounds to nearest, ties to even, exactly as `half`'s conversions from
//! and to f32 do (the reference interpreter's, `smelt_ir::scalar::to_f16`), NaN payloads and
//! all: `runtime`'s backend tests compare them bit for bit over every f16 and bf16 and f32
//! values around every rounding boundary.

use super::*;

/// `2^112`: scales an f16's exponent, moved into f32's field, from f16's bias (15) to f32's
/// (127). Subnormal f16 values become subnormal f32 values that the product makes normal.
const F16_REBIAS: f64 = 5192296858534827628530496329220096.0;

impl<'a, 'f> Translator<'a, 'f> {
    /// An `i32` constant of the integer type `t` (splat over its lanes when it is a vector).
    pub(super) fn int_of(&mut self, t: Type, v: i64) -> Value {
        let s = self.b.ins().iconst(t.lane_type(), v);
        if t.is_vector() {
            self.b.ins().splat(t, s)
        } else {
            s
        }
    }

    /// `c ? a : b` for a compare result `c` of integers of `a`'s type.
    fn pick(&mut self, c: Value, a: Value, b: Value) -> Value {
        if self.b.func.dfg.value_type(a).is_vector() {
            self.b.ins().bitselect(c, a, b)
        } else {
            self.b.ins().select(c, a, b)
        }
    }

    /// `x op k` for an integer constant `k`.
    fn int_op(&mut self, x: Value, k: i64, op: fn(&mut Self, Value, Value) -> Value) -> Value {
        let t = self.b.func.dfg.value_type(x);
        let k = self.int_of(t, k);
        op(self, x, k)
    }

    fn and(&mut self, x: Value, k: i64) -> Value {
        self.int_op(x, k, |s, x, k| s.b.ins().band(x, k))
    }

    fn or(&mut self, x: Value, k: i64) -> Value {
        self.int_op(x, k, |s, x, k| s.b.ins().bor(x, k))
    }

    fn add(&mut self, x: Value, k: i64) -> Value {
        self.int_op(x, k, |s, x, k| s.b.ins().iadd(x, k))
    }

    /// `x > k` (signed) as a lane mask or a scalar bool.
    fn above(&mut self, x: Value, k: i64) -> Value {
        self.int_op(x, k, |s, x, k| {
            s.b.ins().icmp(IntCC::SignedGreaterThan, x, k)
        })
    }

    /// `x < k` (signed).
    fn below(&mut self, x: Value, k: i64) -> Value {
        self.int_op(x, k, |s, x, k| s.b.ins().icmp(IntCC::SignedLessThan, x, k))
    }

    /// The integer type of the same shape as the f32 (or f32x4) value `x`, and back.
    fn int_type(&self, x: Value) -> Type {
        self.b.func.dfg.value_type(x).as_int()
    }

    fn float_type(&self, x: Value) -> Type {
        let t = self.b.func.dfg.value_type(x);
        if t.is_vector() {
            types::F32X4
        } else {
            types::F32
        }
    }

    fn as_int_bits(&mut self, x: Value) -> Value {
        let t = self.int_type(x);
        self.b.ins().bitcast(t, MemFlagsData::new(), x)
    }

    fn as_float_bits(&mut self, x: Value) -> Value {
        let t = self.float_type(x);
        self.b.ins().bitcast(t, MemFlagsData::new(), x)
    }

    /// f16 bits (zero-extended in `i32` lanes) as f32, exactly; a NaN comes back quiet.
    pub(super) fn f16_bits_to_f32(&mut self, h: Value) -> Value {
        let sign = self.and(h, 0x8000);
        let sign = self.b.ins().ishl_imm_s(sign, 16);
        let em = self.and(h, 0x7fff);
        let em = self.b.ins().ishl_imm_s(em, 13);
        let scaled = self.as_float_bits(em);
        let k = self.fconst(self.float_type(scaled), F16_REBIAS);
        let scaled = self.b.ins().fmul(scaled, k);
        let finite = self.as_int_bits(scaled);
        // All-ones exponent: infinity keeps its zero mantissa, a NaN gets the quiet bit.
        let inf = self.or(em, 0x7f80_0000);
        let quiet = self.or(em, 0x7fc0_0000);
        let nan = self.above(em, 0x0f80_0000);
        let special = self.pick(nan, quiet, inf);
        let is_special = self.above(em, 0x0f7f_ffff);
        let r = self.pick(is_special, special, finite);
        let r = self.b.ins().bor(r, sign);
        self.as_float_bits(r)
    }

    /// `x` (f32) rounded to the nearest f16, as its bits in `i32` lanes.
    pub(super) fn f32_to_f16_bits(&mut self, x: Value) -> Value {
        let bits = self.as_int_bits(x);
        let sign = self.b.ins().ushr_imm_s(bits, 16);
        let sign = self.and(sign, 0x8000);
        let a = self.and(bits, 0x7fff_ffff);
        // Normal f16 range: drop 13 mantissa bits, rounding half to even, and rebias the
        // exponent; past 65504 the result saturates to infinity (0x7c00).
        let n = self.round_low_bits(a, 13);
        let n = self.b.ins().ushr_imm_s(n, 13);
        let n = self.add(n, -(112 << 10));
        let inf = self.int_of(self.int_type(x), 0x7c00);
        let n = self.b.ins().smin(n, inf);
        // Below 2^-14, f16's step is 2^-24, the f32 step at 0.5: adding 0.5 rounds |x| to it,
        // and the sum's low mantissa bits are the f16 subnormal's.
        let abs = self.as_float_bits(a);
        let half = self.fconst(self.float_type(abs), 0.5);
        let s = self.b.ins().fadd(abs, half);
        let s = self.as_int_bits(s);
        let s = self.add(s, -0x3f00_0000);
        let small = self.below(a, 0x3880_0000);
        let r = self.pick(small, s, n);
        // NaN: quiet, the top ten payload bits kept.
        let payload = self.b.ins().ushr_imm_s(a, 13);
        let payload = self.and(payload, 0x3ff);
        let nan = self.or(payload, 0x7e00);
        let is_nan = self.above(a, 0x7f80_0000);
        let r = self.pick(is_nan, nan, r);
        self.b.ins().bor(r, sign)
    }

    /// The bits `x` with its low `low` bits rounded away, to nearest with ties to even: those
    /// bits are left as garbage, the carry of a round-up goes into the bits above (an
    /// exponent, when the mantissa overflows).
    fn round_low_bits(&mut self, x: Value, low: i64) -> Value {
        let lsb = self.b.ins().ushr_imm_s(x, low);
        let lsb = self.and(lsb, 1);
        let r = self.add(x, (1 << (low - 1)) - 1);
        self.b.ins().iadd(r, lsb)
    }

    /// bf16 bits (zero-extended in `i32` lanes) as f32: bf16 is f32's top half (a NaN comes
    /// back quiet).
    pub(super) fn bf16_bits_to_f32(&mut self, h: Value) -> Value {
        let magnitude = self.and(h, 0x7fff);
        let is_nan = self.above(magnitude, 0x7f80);
        let quiet = self.or(h, 0x40);
        let h = self.pick(is_nan, quiet, h);
        self.bf16_by_shift(h)
    }

    /// bf16 bits as f32 by a shift alone: bits from [`Self::f32_to_bf16_bits`] (a NaN there
    /// is quiet already), or loaded ones whose readers quiet a NaN (`quieted_by_use`).
    pub(super) fn bf16_by_shift(&mut self, h: Value) -> Value {
        let bits = self.b.ins().ishl_imm_s(h, 16);
        let x = self.as_float_bits(bits);
        self.bf16_bits.insert(x, h);
        x
    }

    /// The bits of `x`, an f32 that holds a bf16 value exactly (a NaN quiet), in `i32` lanes:
    /// the bits `x` was shifted from when it was (a rounded result about to be stored), else
    /// its top half.
    pub(super) fn bf16_top_half(&mut self, x: Value) -> Value {
        if let Some(&h) = self.bf16_bits.get(&x) {
            return h;
        }
        let bits = self.as_int_bits(x);
        self.b.ins().ushr_imm_s(bits, 16)
    }

    /// `x` (f32) rounded to the nearest bf16, as its bits in `i32` lanes (a NaN quiet).
    pub(super) fn f32_to_bf16_bits(&mut self, x: Value) -> Value {
        let bits = self.as_int_bits(x);
        let r = self.round_low_bits(bits, 16);
        let r = self.b.ins().ushr_imm_s(r, 16);
        let top = self.b.ins().ushr_imm_s(bits, 16);
        let nan = self.or(top, 0x40);
        let is_nan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
        let is_nan = if self.b.func.dfg.value_type(x).is_vector() {
            self.as_int_bits(is_nan)
        } else {
            is_nan
        };
        self.pick(is_nan, nan, r)
    }

    /// The f32 `x` rounded to the nearest f16 value, held as f32 (a NaN quiet, its payload
    /// cut to f16's ten bits): what converting to f16 and back gives, in fewer operations.
    pub(super) fn round_to_f16(&mut self, x: Value) -> Value {
        let bits = self.as_int_bits(x);
        let sign = self.and(bits, i64::from(0x8000_0000u32 as i32));
        let a = self.and(bits, 0x7fff_ffff);
        let n = self.round_low_bits(a, 13);
        let n = self.and(n, i64::from(0xffff_e000u32 as i32));
        let over = self.above(n, 0x477f_e000);
        let inf = self.int_of(self.int_type(x), 0x7f80_0000);
        let n = self.pick(over, inf, n);
        let abs = self.as_float_bits(a);
        let half = self.fconst(self.float_type(abs), 0.5);
        let s = self.b.ins().fadd(abs, half);
        let s = self.b.ins().fsub(s, half);
        let s = self.as_int_bits(s);
        let small = self.below(a, 0x3880_0000);
        let r = self.pick(small, s, n);
        let r = self.b.ins().bor(r, sign);
        let nan = self.and(bits, i64::from(0xffff_e000u32 as i32));
        let nan = self.or(nan, 0x0040_0000);
        let is_nan = self.above(a, 0x7f80_0000);
        let r = self.pick(is_nan, nan, r);
        self.as_float_bits(r)
    }

    /// The f32 `x` rounded to the nearest bf16 value, held as f32.
    pub(super) fn round_to_bf16(&mut self, x: Value) -> Value {
        // f32_to_bf16_bits already quiets a NaN.
        let h = self.f32_to_bf16_bits(x);
        self.bf16_by_shift(h)
    }
}
