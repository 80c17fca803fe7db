//! Random draws (`Instr::Random`, `smelt_ir::random`). Scalar code calls the runtime's helper,
//! which is `smelt_ir::random::draw` itself. SIMD code draws inline: Philox4x32-10 runs on four
//! counters at once (one per lane; each 32 × 32 → 64-bit product is two widening multiplies,
//! `pmuludq`, whose halves are shuffled apart, the rest xors and adds), so the words, and the
//! bits, are the helper's. A uniform f32, f16 or bf16 scales one word; a uniform f64 and the
//! normal and exponential draws build their 53-bit uniforms in f64 lanes, two at a time, and
//! evaluate `draw`'s logarithm and cosine series there with the same basic operations in the
//! same order (no fused multiply-add), then round as `draw` does: to f32, and from there to f16
//! or bf16.

use super::{Result, Translator, little, unsupported};
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{
    ConstantData, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, Value, types,
};
use smelt_ir::kernel::Instr;
use smelt_ir::random::{
    COS_SERIES, LN2_HI, LN2_LO, LOG_SERIES, MULTIPLIERS, RandomDist, SIN_SERIES, SQRT2,
    TWO_POW_M53, WEYL,
};
use smelt_ir::{DType, REAL_KERNELS};

/// 2^52 as f64 bits: or-ed onto an integer below 2^52, the f64 2^52 + that integer.
const TWO_POW_52_BITS: i64 = 0x4330_0000_0000_0000;

impl<'a, 'f> Translator<'a, 'f> {
    /// Whether the draw `instr` has a SIMD form in a loop whose values are held in `lanes`:
    /// a float draw of f32, f16 or bf16 in f32 lanes (four a step), of f64 in f64 lanes (two).
    /// Integer bits call their helper from scalar code.
    pub(super) fn random_has_vector_form(instr: &Instr, lanes: DType) -> bool {
        let Instr::Random { dist, dtype, .. } = instr else {
            return false;
        };
        let float = matches!(
            dist,
            RandomDist::Uniform | RandomDist::Normal | RandomDist::Exponential
        );
        let in_f32 = lanes == DType::F32 && matches!(dtype, DType::F32 | DType::F16 | DType::BF16);
        float && (in_f32 || (lanes == DType::F64 && *dtype == DType::F64))
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
    /// random_has_vector_form`]) a step's lanes drawn inline.
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
            let lanes = match self.v.ty {
                types::F32X4 => DType::F32,
                types::F64X2 => DType::F64,
                _ => DType::Bool,
            };
            if self.mixed.is_some() || !Self::random_has_vector_form(&self.k.body[i], lanes) {
                return unsupported("a random draw without a SIMD form in SIMD code");
            }
            return Ok(self.draw_lanes(i, dist, dtype, seed, offset, point));
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

    /// The float draws of a SIMD step at `point` (four f32 lanes, or two f64 lanes for an f64
    /// draw): counters `offset + position`, the lanes' positions a stride apart along the lane
    /// dim.
    fn draw_lanes(
        &mut self,
        i: usize,
        dist: RandomDist,
        dtype: DType,
        seed: Value,
        offset: Value,
        point: &[Value],
    ) -> Value {
        let (strides, _) = self.index[i]
            .clone()
            .expect("invariant: random draws have an index");
        let step = strides[self.lane_dim];
        let n = self.lanes() as u8;
        let first = self.position(i, point);
        let mut counter = self.b.ins().iadd(offset, first);
        let zero = self.b.ins().iconst(types::I32, 0);
        let mut lo = self.b.ins().splat(types::I32X4, zero);
        let mut hi = lo;
        for lane in 0..n {
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
        let words = self.philox_x4([lo, hi], [k0, k1]);
        if dtype == DType::F64 {
            return self.draw_f64x2(dist, words, &[false])[0];
        }
        if dist == RandomDist::Uniform {
            return self.uniform_f32x4(dtype, words[0]);
        }
        // Lanes 0 and 1 in f64 beside lanes 2 and 3, each pair rounded to f32, then side by
        // side.
        let [low, high] = self.draw_f64x2(dist, words, &[false, true])[..] else {
            unreachable!("invariant: two halves asked for, two drawn")
        };
        let low = self.b.ins().fvdemote(low);
        let high = self.b.ins().fvdemote(high);
        let low = self.b.ins().bitcast(types::I8X16, little(), low);
        let high = self.b.ins().bitcast(types::I8X16, little(), high);
        let mask: Vec<u8> = (0..8).chain(16..24).collect();
        let mask = self.b.func.dfg.immediates.push(ConstantData::from(mask));
        let both = self.b.ins().shuffle(low, high, mask);
        let x = self.b.ins().bitcast(types::F32X4, little(), both);
        // From f32 on to f16 or bf16, as `draw` narrows.
        self.round(dtype, x)
    }

    /// Four uniform f32, f16 or bf16 draws from their first words `r0`: the word's top bits
    /// (the dtype's mantissa) times a power of two.
    fn uniform_f32x4(&mut self, dtype: DType, r0: Value) -> Value {
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

    /// `dist` drawn in f64 (`smelt_ir::random::draw` before its rounding) for lanes 0 and 1 of
    /// the Philox `words` (`false` in `halves`) and lanes 2 and 3 (`true`): one f64x2 a half.
    fn draw_f64x2(&mut self, dist: RandomDist, words: [Value; 4], halves: &[bool]) -> Vec<Value> {
        let [r0, r1, r2, r3] = words;
        let unit = |t: &mut Self, hi, lo, plus_one| -> Vec<Value> {
            halves
                .iter()
                .map(|&high| t.unit53(hi, lo, high, plus_one))
                .collect()
        };
        match dist {
            RandomDist::Normal => {
                let u1 = unit(self, r0, r1, true);
                let u2 = unit(self, r2, r3, false);
                let ln: Vec<Ln> = u1.iter().map(|&u| self.ln_start(u)).collect();
                let cos: Vec<Cos> = u2.iter().map(|&u| self.cos_start(u)).collect();
                let mut chains: Vec<(Value, &[f64])> =
                    ln.iter().map(|l| (l.z, &LOG_SERIES[..])).collect();
                for c in &cos {
                    chains.push((c.z, &COS_SERIES[..]));
                    chains.push((c.z, &SIN_SERIES[..]));
                }
                let sums = self.horner_lockstep(&chains);
                let (ln_sums, trig_sums) = sums.split_at(ln.len());
                let minus_two = self.fconst(types::F64X2, -2.0);
                ln.iter()
                    .zip(ln_sums)
                    .zip(cos.iter().zip(trig_sums.chunks(2)))
                    .map(|((l, &r), (c, trig))| {
                        let ln = self.ln_finish(l, r);
                        let radius = self.b.ins().fmul(minus_two, ln);
                        let radius = self.b.ins().sqrt(radius);
                        let cos = self.cos_finish(c, trig[0], trig[1]);
                        self.b.ins().fmul(radius, cos)
                    })
                    .collect()
            }
            RandomDist::Exponential => {
                let u = unit(self, r0, r1, true);
                let ln: Vec<Ln> = u.iter().map(|&u| self.ln_start(u)).collect();
                let chains: Vec<(Value, &[f64])> =
                    ln.iter().map(|l| (l.z, &LOG_SERIES[..])).collect();
                let sums = self.horner_lockstep(&chains);
                // 0 − ln u: +0 rather than −0 for u = 1.
                let zero = self.fconst(types::F64X2, 0.0);
                ln.iter()
                    .zip(sums)
                    .map(|(l, r)| {
                        let ln = self.ln_finish(l, r);
                        self.b.ins().fsub(zero, ln)
                    })
                    .collect()
            }
            RandomDist::Uniform | RandomDist::Bits => unit(self, r0, r1, false),
        }
    }

    /// The unsigned 32-bit lanes 0 and 1 of the i32x4 `w` (2 and 3 when `high`) as f64, exactly:
    /// 2^52 + w from its bits, less 2^52.
    fn u32_lanes_f64(&mut self, w: Value, high: bool) -> Value {
        let wide = if high {
            self.b.ins().uwiden_high(w)
        } else {
            self.b.ins().uwiden_low(w)
        };
        self.small_u64_f64(wide)
    }

    /// The i64x2 lanes `x`, each below 2^52, as f64, exactly.
    fn small_u64_f64(&mut self, x: Value) -> Value {
        let magic = self.int_of(types::I64X2, TWO_POW_52_BITS);
        let biased = self.b.ins().bor(x, magic);
        let biased = self
            .b
            .ins()
            .bitcast(types::F64X2, MemFlagsData::new(), biased);
        let two_52 = self.fconst(types::F64X2, 4_503_599_627_370_496.0);
        self.b.ins().fsub(biased, two_52)
    }

    /// `draw`'s 53-bit uniform of the words `(hi, lo)` (lanes 0 and 1, or 2 and 3 when `high`):
    /// `(hi · 2^21 + lo / 2^11 (+ 1 when plus_one)) · 2^-53`, as `hi · 2^-32 + (lo / 2^11
    /// (+ 1)) · 2^-53` — each term exact, and so their sum, a multiple of 2^-53 at most 1.
    fn unit53(&mut self, hi: Value, lo: Value, high: bool, plus_one: bool) -> Value {
        let h = self.u32_lanes_f64(hi, high);
        let lo = self.b.ins().ushr_imm_u(lo, 11);
        let mut l = self.u32_lanes_f64(lo, high);
        if plus_one {
            let one = self.fconst(types::F64X2, 1.0);
            l = self.b.ins().fadd(l, one);
        }
        let two_m32 = self.fconst(types::F64X2, 1.0 / 4_294_967_296.0);
        let two_m53 = self.fconst(types::F64X2, TWO_POW_M53);
        let h = self.b.ins().fmul(h, two_m32);
        let l = self.b.ins().fmul(l, two_m53);
        self.b.ins().fadd(h, l)
    }

    /// Horner's rule on every chain `(z, series)` (highest coefficient last), a step of each
    /// in turn: `r = r·z + c`, rounded twice (no fused multiply-add); the chains' sums.
    /// Cranelift places pure values right before their first use, a chain's whole tree at
    /// once, and a run of dependent operations that long fills the core's scheduler before
    /// the next chain is reached; so every second step each chain's value is stored to a
    /// stack slot, which keeps the steps in the order emitted, the chains interleaved for the
    /// core to overlap.
    fn horner_lockstep(&mut self, chains: &[(Value, &[f64])]) -> Vec<Value> {
        let slot =
            self.b
                .create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 16, 4));
        let mut r: Vec<Value> = chains
            .iter()
            .map(|(_, series)| self.fconst(types::F64X2, series[series.len() - 1]))
            .collect();
        let steps = chains.iter().map(|(_, s)| s.len()).max().unwrap_or(0);
        for step in 1..steps {
            for ((z, series), r) in chains.iter().zip(r.iter_mut()) {
                if step < series.len() {
                    let p = self.b.ins().fmul(*r, *z);
                    let k = self.fconst(types::F64X2, series[series.len() - 1 - step]);
                    *r = self.b.ins().fadd(p, k);
                }
            }
            if step % 2 == 0 {
                for r in &r {
                    self.b.ins().stack_store(types::I64, *r, slot, 0);
                }
            }
        }
        r
    }

    /// `smelt_ir::random::det_ln`'s first part in f64x2 lanes, for positive normal `x`: the
    /// exponent, the mantissa in [√½, √2) and the series' argument.
    fn ln_start(&mut self, x: Value) -> Ln {
        let bits = self.b.ins().bitcast(types::I64X2, MemFlagsData::new(), x);
        // The sign bit is clear: the exponent field is the top bits.
        let field = self.b.ins().ushr_imm_u(bits, 52);
        let field = self.small_u64_f64(field);
        let bias = self.fconst(types::F64X2, 1023.0);
        let e = self.b.ins().fsub(field, bias);
        let mantissa = self.int_of(types::I64X2, (1 << 52) - 1);
        let m = self.b.ins().band(bits, mantissa);
        let one_bits = self.int_of(types::I64X2, 1023 << 52);
        let m = self.b.ins().bor(m, one_bits);
        let m = self.b.ins().bitcast(types::F64X2, MemFlagsData::new(), m);
        let sqrt2 = self.fconst(types::F64X2, SQRT2);
        let big = self.b.ins().fcmp(FloatCC::GreaterThan, m, sqrt2);
        let half = self.fconst(types::F64X2, 0.5);
        let halved = self.b.ins().fmul(m, half);
        let m = self.select(big, halved, m);
        let one = self.fconst(types::F64X2, 1.0);
        let e1 = self.b.ins().fadd(e, one);
        let e = self.select(big, e1, e);
        let f = self.b.ins().fsub(m, one);
        let two = self.fconst(types::F64X2, 2.0);
        let d = self.b.ins().fadd(two, f);
        let s = self.b.ins().fdiv(f, d);
        let z = self.b.ins().fmul(s, s);
        Ln { e, s, z }
    }

    /// `det_ln`'s end: the series' sum `r` (`LOG_SERIES` by Horner) into ln m, then e·ln 2
    /// added in two parts.
    fn ln_finish(&mut self, l: &Ln, r: Value) -> Value {
        let two = self.fconst(types::F64X2, 2.0);
        let two_s = self.b.ins().fmul(two, l.s);
        let zr = self.b.ins().fmul(l.z, r);
        let szr = self.b.ins().fmul(l.s, zr);
        let log_m = self.b.ins().fadd(two_s, szr);
        let ln2_hi = self.fconst(types::F64X2, LN2_HI);
        let ln2_lo = self.fconst(types::F64X2, LN2_LO);
        let hi = self.b.ins().fmul(l.e, ln2_hi);
        let lo = self.b.ins().fmul(l.e, ln2_lo);
        let lo = self.b.ins().fadd(lo, log_m);
        self.b.ins().fadd(hi, lo)
    }

    /// `smelt_ir::random::det_cos_2pi`'s first part in f64x2 lanes, for `t` in [0, 1): the
    /// quadrant, whether to start from its far end, the angle into it and its square.
    fn cos_start(&mut self, t: Value) -> Cos {
        let four = self.fconst(types::F64X2, 4.0);
        let a = self.b.ins().fmul(t, four);
        let k = self.b.ins().floor(a);
        let f = self.b.ins().fsub(a, k);
        let half = self.fconst(types::F64X2, 0.5);
        let swap = self.b.ins().fcmp(FloatCC::GreaterThan, f, half);
        let one = self.fconst(types::F64X2, 1.0);
        let rest = self.b.ins().fsub(one, f);
        let g = self.select(swap, rest, f);
        let quarter_turn = self.fconst(types::F64X2, std::f64::consts::FRAC_PI_2);
        let phi = self.b.ins().fmul(g, quarter_turn);
        let z = self.b.ins().fmul(phi, phi);
        Cos { k, swap, phi, z }
    }

    /// `det_cos_2pi`'s end from the Horner sums of `COS_SERIES` and `SIN_SERIES` (each still to
    /// be multiplied by z): cos and sin of the angle, swapped from the far end, signed by the
    /// quadrant.
    fn cos_finish(&mut self, c: &Cos, cos_sum: Value, sin_sum: Value) -> Value {
        let one = self.fconst(types::F64X2, 1.0);
        let cos = self.b.ins().fmul(cos_sum, c.z);
        let cos = self.b.ins().fadd(one, cos);
        let sin = self.b.ins().fmul(sin_sum, c.z);
        let sin = self.b.ins().fmul(c.phi, sin);
        let sin = self.b.ins().fadd(c.phi, sin);
        let cos_f = self.select(c.swap, sin, cos);
        let sin_f = self.select(c.swap, cos, sin);
        // Quadrant k: cos_f, −sin_f, −cos_f, sin_f.
        let mut quadrant = |q: f64| {
            let q = self.fconst(types::F64X2, q);
            self.b.ins().fcmp(FloatCC::Equal, c.k, q)
        };
        let (k1, k2, k3) = (quadrant(1.0), quadrant(2.0), quadrant(3.0));
        let odd = self.b.ins().bor(k1, k3);
        let negative = self.b.ins().bor(k1, k2);
        let v = self.select(odd, sin_f, cos_f);
        let minus = self.b.ins().fneg(v);
        self.select(negative, minus, v)
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

/// `det_ln`'s values before its series: the exponent (as f64), s = (m − 1)/(m + 1), z = s².
struct Ln {
    e: Value,
    s: Value,
    z: Value,
}

/// `det_cos_2pi`'s values before its series: the quadrant k (as f64), the far-end mask, the
/// angle φ into the quadrant and φ².
struct Cos {
    k: Value,
    swap: Value,
    phi: Value,
    z: Value,
}
