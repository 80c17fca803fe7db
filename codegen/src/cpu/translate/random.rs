//! Random draws (`Instr::Random`, `smelt_ir::random`). Scalar code calls the runtime's helper,
//! which is `smelt_ir::random::draw` itself. A uniform draw of f32, f16 or bf16 in SIMD code
//! runs Philox4x32-10 inline on four counters at once (one per lane): each 32 × 32 → 64-bit
//! product is two widening multiplies (`pmuludq`) whose halves are shuffled apart, the rest
//! xors and adds; the same words, so the same bits, as the helper.

use super::{Result, Translator, little, unsupported};
use cranelift_codegen::ir::{ConstantData, InstBuilder, MemFlagsData, Value, types};
use smelt_ir::kernel::Instr;
use smelt_ir::random::{MULTIPLIERS, RandomDist, WEYL};
use smelt_ir::{DType, REAL_KERNELS};

impl<'a, 'f> Translator<'a, 'f> {
    /// Whether the draw `instr` has a SIMD form in f32 lanes: a uniform f32, f16 or bf16
    /// (values held in f32 lanes).
    pub(super) fn random_has_vector_form(instr: &Instr) -> bool {
        matches!(
            instr,
            Instr::Random {
                dist: RandomDist::Uniform,
                dtype: DType::F32 | DType::F16 | DType::BF16,
                ..
            }
        )
    }

    /// The element position of instruction `i`'s index at `point` (a random draw's counter
    /// relative to its offset): `offset + Σ point[d]·stride[d]`, in elements.
    fn position(&mut self, i: usize, point: &[Value]) -> Value {
        let (strides, offset) = self.index[i]
            .clone()
            .expect("invariant: random draws have an index");
        let mut e = offset;
        for (p, s) in point.iter().zip(strides) {
            if *p != self.zero {
                let t = self.b.ins().imul(*p, s);
                e = self.b.ins().iadd(e, t);
            }
        }
        e
    }

    /// A random draw at `point`: in scalar code the helper's bits as the value dtype's register
    /// (f64 bits, an f32's bits, or the int64 itself); in SIMD code ([`Self::
    /// random_has_vector_form`]) four lanes drawn inline.
    pub(super) fn random(
        &mut self,
        i: usize,
        dist: RandomDist,
        dtype: DType,
        seed: Value,
        offset: Value,
        point: &[Value],
    ) -> Result<Value> {
        if self.vector {
            if !Self::random_has_vector_form(&self.k.body[i]) || self.lanes() != 4 {
                return unsupported("a random draw without a SIMD form in SIMD code");
            }
            return Ok(self.uniform_x4(i, dtype, seed, offset, point));
        }
        let position = self.position(i, point);
        let code = self.b.ins().iconst(types::I64, dist.pack(dtype));
        let call = self
            .b
            .ins()
            .call(self.h.random, &[code, seed, offset, position]);
        let bits = self.b.inst_results(call)[0];
        let flags = MemFlagsData::new();
        Ok(match dist.value_dtype(dtype) {
            DType::F64 => self.b.ins().bitcast(types::F64, flags, bits),
            DType::F32 | DType::F16 | DType::BF16 => {
                let low = self.b.ins().ireduce(types::I32, bits);
                self.b.ins().bitcast(types::F32, flags, low)
            }
            DType::I64 => bits,
            d @ (DType::Bool
            | DType::U8
            | DType::I8
            | DType::I16
            | DType::I32
            | DType::C64
            | DType::C128) => {
                return unsupported(format!("a random draw of {d}"));
            }
        })
    }

    /// Four uniform draws (f32 lanes) at the lanes of `point`: counters `offset + position`,
    /// the lanes' positions a stride apart along the lane dim.
    fn uniform_x4(
        &mut self,
        i: usize,
        dtype: DType,
        seed: Value,
        offset: Value,
        point: &[Value],
    ) -> Value {
        let (strides, _) = self.index[i]
            .clone()
            .expect("invariant: random draws have an index");
        let step = strides[self.lane_dim];
        let first = self.position(i, point);
        let mut counter = self.b.ins().iadd(offset, first);
        let zero = self.b.ins().iconst(types::I32, 0);
        let mut lo = self.b.ins().splat(types::I32X4, zero);
        let mut hi = lo;
        for lane in 0..4u8 {
            if lane > 0 {
                counter = self.b.ins().iadd(counter, step);
            }
            let l = self.b.ins().ireduce(types::I32, counter);
            let h = self.b.ins().ushr_imm_u(counter, 32);
            let h = self.b.ins().ireduce(types::I32, h);
            lo = self.b.ins().insertlane(lo, l, lane);
            hi = self.b.ins().insertlane(hi, h, lane);
        }
        let k0 = self.b.ins().ireduce(types::I32, seed);
        let k1 = self.b.ins().ushr_imm_u(seed, 32);
        let k1 = self.b.ins().ireduce(types::I32, k1);
        let [r0, ..] = self.philox_x4([lo, hi], [k0, k1]);
        let (shift, scale) = match dtype {
            DType::F16 => (21, 1.0 / 2048.0),
            DType::BF16 => (24, 1.0 / 256.0),
            DType::F32
            | DType::F64
            | DType::Bool
            | DType::U8
            | DType::I8
            | DType::I16
            | DType::I32
            | DType::I64 => (8, 1.0 / 16_777_216.0),
            DType::C64 | DType::C128 => panic!("{REAL_KERNELS}"),
        };
        // Below 2^24: the signed conversion is exact, and so is the power-of-two scale.
        let bits = self.b.ins().ushr_imm_u(r0, shift);
        let u = self.b.ins().fcvt_from_sint(types::F32X4, bits);
        let scale = self.b.ins().f32const(scale);
        let scale = self.b.ins().splat(types::F32X4, scale);
        self.b.ins().fmul(u, scale)
    }

    /// Philox4x32-10 of four counters (`[low words, high words]`, the upper two words zero)
    /// under the key `[k0, k1]`: the four words per lane.
    fn philox_x4(&mut self, counter: [Value; 2], key: [Value; 2]) -> [Value; 4] {
        let zero = self.b.ins().iconst(types::I32, 0);
        let zeros = self.b.ins().splat(types::I32X4, zero);
        let mut c = [counter[0], counter[1], zeros, zeros];
        let [mut k0, mut k1] = key;
        let m0 = self.b.ins().iconst(types::I32, i64::from(MULTIPLIERS[0]));
        let m0 = self.b.ins().splat(types::I32X4, m0);
        let m1 = self.b.ins().iconst(types::I32, i64::from(MULTIPLIERS[1]));
        let m1 = self.b.ins().splat(types::I32X4, m1);
        for round in 0..10 {
            if round > 0 {
                k0 = self.b.ins().iadd_imm_s(k0, i64::from(WEYL[0] as i32));
                k1 = self.b.ins().iadd_imm_s(k1, i64::from(WEYL[1] as i32));
            }
            let (hi0, lo0) = self.mul_hi_lo(m0, c[0]);
            let (hi1, lo1) = self.mul_hi_lo(m1, c[2]);
            let k0v = self.b.ins().splat(types::I32X4, k0);
            let k1v = self.b.ins().splat(types::I32X4, k1);
            let n0 = self.b.ins().bxor(hi1, c[1]);
            let n0 = self.b.ins().bxor(n0, k0v);
            let n2 = self.b.ins().bxor(hi0, c[3]);
            let n2 = self.b.ins().bxor(n2, k1v);
            c = [n0, lo1, n2, lo0];
        }
        c
    }

    /// The high and low words of the four 32 × 32-bit products `m · c` (i32x4 each).
    fn mul_hi_lo(&mut self, m: Value, c: Value) -> (Value, Value) {
        let m_lo = self.b.ins().uwiden_low(m);
        let c_lo = self.b.ins().uwiden_low(c);
        let m_hi = self.b.ins().uwiden_high(m);
        let c_hi = self.b.ins().uwiden_high(c);
        let p01 = self.b.ins().imul(m_lo, c_lo);
        let p23 = self.b.ins().imul(m_hi, c_hi);
        // As i32 lanes: [lo(p0), hi(p0), lo(p1), hi(p1)] and the same for p2, p3.
        let a = self.b.ins().bitcast(types::I8X16, little(), p01);
        let b = self.b.ins().bitcast(types::I8X16, little(), p23);
        let mut pick = |words: [u8; 4]| {
            let mask: Vec<u8> = words
                .iter()
                .flat_map(|&w| (0..4).map(move |k| 4 * w + k))
                .collect();
            let mask = self.b.func.dfg.immediates.push(ConstantData::from(mask));
            let v = self.b.ins().shuffle(a, b, mask);
            self.b.ins().bitcast(types::I32X4, little(), v)
        };
        let hi = pick([1, 3, 5, 7]);
        let lo = pick([0, 2, 4, 6]);
        (hi, lo)
    }
}
