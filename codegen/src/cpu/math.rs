//! Inline f32 transcendentals for the cranelift backend: exp, expm1, log, tanh, sigmoid, erf,
//! sin, cos and pow emitted as CLIF, one routine per function serving scalar `f32` and `f32x4`
//! alike (constants are splatted, selects become lane masks). f16 and bf16 compute through
//! them in f32. f64 and `f64x2` have their own exp, expm1 and log (Taylor series on the
//! reduced argument, no fitting needed at this length), and tanh and sigmoid built on them;
//! f64 erf, sin, cos and pow keep calling the libm helpers.
//!
//! Each function reduces its argument to a small interval with exact or nearly exact steps
//! (Cody–Waite with a three-part π/2 or a two-part ln 2, each product exact inside an `fma`; the
//! power of two assembled in the exponent bits), then evaluates a polynomial whose coefficients
//! `scripts/fit_math.py` fitted (weighted minimax by Lawson's algorithm against mpmath, rounded
//! to f32). `fma` is one instruction where the host has FMA and an exact libcall otherwise, so
//! results are the same bits on every host, and a lane's result never depends on other lanes.
//!
//! Measured accuracy in f32 ulp against the reference interpreter's answer (f64 libm rounded
//! once to f32), by `runtime/src/math_tests.rs` with `SMELT_MATH_STEP=17` (every 17th f32 of
//! each range, about 130 million inputs per function; the default test samples 2^20 and
//! asserts these bounds), SIMD and scalar code giving identical bits:
//!
//! | function | range swept | max ulp | how |
//! |---|---|---:|---|
//! | exp      | [−110, 90]      | 1 | 2^n · e^r, n split in two so denormal results round once |
//! | expm1    | [−20, 90]       | 2 | 2^n (e^r − 1) − (1 − 2^n) below 1, exp(x) − 1 above |
//! | log      | (0, max]        | 1 | log1p(f) = f − (f²/2 − s(f²/2 + R(s²))), denormals scaled |
//! | tanh     | [−12, 12]       | 3 | expm1(2x)/(expm1(2x) + 2), exactly ±1 beyond ±9.5, −0 kept |
//! | sigmoid  | [−110, 110]     | 2 | 1/(1+e) or e/(1+e) with e = exp(−\|x\|) |
//! | erf      | [−5, 5]         | 1 | x·P(x²) below 0.92, 1 − exp(P(x)) to 3.93, ±1 beyond |
//! | sin, cos | [−4e6, 4e6]     | 2 | inline for \|x\| ≤ 2^20, libm for a lane beyond |
//! | pow      | pairs (tests)   | 1 | 2^(y·log2\|x\|) in f64 (two f64x2 halves per f32x4) |
//! | x^3 (constant exponent) | [−1e13, 1e13] | 1 | x·x·x in f32 |
//! | 1 ± tanh(u), and GELU's ½x·(1 ± tanh(u)) (idioms, `translate/idioms.rs`) | [−60, 60] | 6; 4 for \|u\| ≤ 10 | 2/(1 + e^(∓2u)), one-part reduction, degree-5 fit; 0 below the normal range |
//!
//! In f64, against the interpreter's f64 libm answer, in f64 ulp (2^25 inputs per function
//! evenly spaced in bit pattern; the default test run takes 2^20 and asserts these bounds):
//!
//! | function | range swept | max ulp | how |
//! |---|---|---:|---|
//! | exp      | [−750, 720]     | 1 | 2^n · (1 + (r + r²·P(r))), P Taylor to r^13, 2^n in two factors |
//! | expm1    | [−40, 720]      | 2 | 2^n (e^r − 1) − (1 − 2^n) below 1, exp(x) − 1 above |
//! | log      | (0, max]        | 1 | log1p(f) = f − (f²/2 − s(f²/2 + R)), R atanh's series to s^23 |
//! | tanh     | [−25, 25]       | 3 | expm1(2x)/(expm1(2x) + 2), exactly ±1 beyond ±19.5 |
//! | sigmoid  | [−750, 750]     | 3 | 1/(1 + exp(−x)), the interpreter's formula (0 below −709.78) |
//! | 1 ± tanh(u) | [−400, 400]  | 2 | 2/(1 + exp(∓2u)) (against the same formula in f64 libm); GELU's tail 3 |
//!
//! Special values come out exactly as the reference's (`ir::scalar_ops`; the tests check ±0,
//! ±inf, NaN and huge inputs bit for bit): NaN propagates, overflow gives ±inf, underflow
//! denormals then ±0, and pow follows C's `pow` for zeros, infinities and negative bases.

use cranelift_codegen::cursor::{Cursor, FuncCursor};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    Block, BlockArg, ConstantData, Endianness, FuncRef, InstBuilder, MemFlagsData, StackSlotData,
    StackSlotKind, Type, Value, types,
};
use cranelift_frontend::FunctionBuilder;
use smelt_ir::UnaryOp;

/// 1.5 · 2^23: adding it rounds an f32 of magnitude below 2^22 to an integer, which then sits
/// in the low mantissa bits (`bits(x + MAGIC) = bits(MAGIC) + round(x)`).
const MAGIC: f64 = 12_582_912.0;
const MAGIC_BITS: i64 = 0x4B40_0000;
const SIGN: i64 = i32::MIN as i64;
const LOG2E: f64 = 1.442_695_021_629_333_5;
/// ln 2 = LN2_HI + LN2_LO; LN2_HI is the f32 just below so that LN2_LO is positive, which keeps
/// the sign of a zero through the reduction.
const LN2_HI: f64 = 0.693_147_122_859_954_8;
const LN2_LO: f64 = 5.769_998_878_690_785e-8;
/// exp(r) = 1 + r + r² · EXP_P(r) on |r| ≤ ln2/2.
const EXP_P: [f64; 5] = [
    0.499_999_940_395_355_2,
    0.166_665_151_715_278_63,
    0.041_668_456_047_773_36,
    0.008_369_418_792_426_586,
    0.001_381_314_476_020_634_2,
];
/// e^(−2h) = 1 + h · TANH_Q(h) on |h| ≤ ln2/4 (`one_plus_tanh`'s reduced argument): relative
/// error 1.0e−7 with these f32 coefficients (`scripts/fit_math.py`).
const TANH_Q: [f64; 5] = [
    -1.999_999_403_953_552_2,
    1.999_964_594_841_003_4,
    -1.333_414_077_758_789,
    0.670_440_912_246_704_1,
    -0.265_262_663_364_410_4,
];
/// ln 2 / 2 rounded to f32 (9.5e−10 above it).
const LN2_HALF: f64 = 0.346_573_591_232_299_8;
/// log1p(f) = f − (f²/2 − s (f²/2 + z · LOG_R(z))), s = f/(2+f), z = s².
const LOG_R: [f64; 3] = [
    0.666_667_759_418_487_5,
    0.399_775_415_658_950_8,
    0.298_717_290_163_040_16,
];
const FRAC_2_PI: f64 = 0.636_619_746_685_028_1;
/// π/2 = PIO2[0] + PIO2[1] + PIO2[2] (+ 1.1e-23).
const PIO2: [f64; 3] = [
    1.570_796_370_506_286_6,
    -4.371_138_828_673_793e-8,
    -1.715_124_510_005_881_9e-15,
];
/// sin r = r + r³ · SIN_S(r²) and cos r = 1 − r²/2 + r⁴ · COS_C(r²) on |r| ≤ π/4.
const SIN_S: [f64; 3] = [
    -0.166_666_537_523_269_65,
    0.008_332_112_804_055_214,
    -0.000_195_087_413_885_630_67,
];
const COS_C: [f64; 3] = [
    0.041_666_645_556_688_31,
    -0.001_388_725_126_162_171_4,
    2.442_568_074_911_832_8e-5,
];
/// Beyond this |x| the three-part π/2 is not accurate enough and sin/cos call libm.
const TRIG_LIMIT: f64 = 1_048_576.0;
/// erf x = x · (ERF_HI + ERF_LO + x² · ERF_S(x²)) for |x| < ERF_SPLIT.
const ERF_HI: f64 = 1.128_379_225_730_896;
const ERF_LO: f64 = -5.863_538_277_139_923_6e-8;
const ERF_S: [f64; 6] = [
    -0.376_126_348_972_320_56,
    0.112_837_105_989_456_18,
    -0.026_860_006_153_583_527,
    0.005_202_223_081_141_71,
    -0.000_815_388_862_974_941_7,
    8.410_492_591_792_718e-5,
];
const ERF_SPLIT: f64 = 0.921_875;
/// erf x = 1 − exp(ERF_L(x)) for ERF_SPLIT ≤ x ≤ ERF_ONE; erf rounds to 1 beyond ERF_ONE.
const ERF_L: [f64; 9] = [
    0.000_161_328_018_293_716,
    -1.129_438_996_315_002_4,
    -0.633_532_345_294_952_4,
    -0.108_026_124_536_991_12,
    0.024_906_253_442_168_236,
    -0.004_058_842_081_576_586,
    0.000_398_301_956_010_982_4,
    -1.457_745_020_161_382_9e-5,
    -5.028_866_780_776_298e-7,
];
const ERF_ONE: f64 = 3.93;

/// pow's f64 core: log2 through log1p(f) = 2s + s·z·R(z), R(z) = Σ 2z^k/(2k+3) (Taylor,
/// |s| ≤ 0.1716, error below 2^-45), and 2^f = Σ (f ln2)^k/k! on |f| ≤ 1/2 (error below 2^-38).
const SQRT_HALF_BITS_64: i64 = 0x3FE6_A09E_667F_3BCD;
const INV_LN2_64: f64 = std::f64::consts::LOG2_E;
const MAGIC_64: f64 = 6_755_399_441_055_744.0;
const EXP2_64: [f64; 11] = [
    1.0,
    std::f64::consts::LN_2,
    0.240_226_506_959_100_72,
    0.055_504_108_664_821_58,
    0.009_618_129_107_628_477,
    0.001_333_355_814_642_844_3,
    0.000_154_035_303_933_816_1,
    1.525_273_380_405_984_1e-5,
    1.321_548_679_014_431e-6,
    1.017_808_600_923_97e-7,
    7.054_911_620_801_123e-9,
];

/// ln 2 = LN2_HI_64 + LN2_LO_64 for f64 reductions: LN2_HI_64 is ln 2 cut to 32 significant
/// bits (so `n · LN2_HI_64` is exact for |n| < 2^21), LN2_LO_64 the rest rounded to f64.
const LN2_HI_64: f64 = f64::from_bits(std::f64::consts::LN_2.to_bits() & !((1 << 21) - 1));
const LN2_LO_64: f64 = 1.908_214_929_270_587_7e-10;
/// e^r − 1 − r = r² · Σ r^k / (k+2)!, k = 0..11: Taylor to r^13, whose remainder on
/// |r| ≤ ln2/2 is below 2^-57 of the result.
const EXP_TAYLOR_64: [f64; 12] = [
    1.0 / 2.0,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5_040.0,
    1.0 / 40_320.0,
    1.0 / 362_880.0,
    1.0 / 3_628_800.0,
    1.0 / 39_916_800.0,
    1.0 / 479_001_600.0,
    1.0 / 6_227_020_800.0,
];
/// log1p(f) = 2s + s · R, R = z · Σ 2 z^k / (2k + 3), k = 0..10, z = s², s = f/(2+f):
/// atanh's Taylor series, whose remainder for |s| ≤ 0.1716 is below 2^-60 of the result.
const LOG_TAYLOR_64: [f64; 11] = smelt_ir::random::LOG_SERIES;

/// The libm helper a routine calls for lanes it does not cover inline (`fn(code, x: f64) -> f64`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fallback {
    pub func: FuncRef,
    pub code: i64,
}

/// The unary transcendentals this module computes inline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Inline {
    Exp,
    Expm1,
    Log,
    Tanh,
    Sigmoid,
    Erf,
    Sin,
    Cos,
}

impl Inline {
    /// The inline routine of `op`, if it has one (every other op is exact arithmetic, or a
    /// call of the interpreter's libm through a helper).
    pub(crate) fn of(op: UnaryOp) -> Option<Inline> {
        Some(match op {
            UnaryOp::Exp => Inline::Exp,
            UnaryOp::Expm1 => Inline::Expm1,
            UnaryOp::Log => Inline::Log,
            UnaryOp::Tanh => Inline::Tanh,
            UnaryOp::Sigmoid => Inline::Sigmoid,
            UnaryOp::Erf => Inline::Erf,
            UnaryOp::Sin => Inline::Sin,
            UnaryOp::Cos => Inline::Cos,
            UnaryOp::Neg
            | UnaryOp::Abs
            | UnaryOp::Sign
            | UnaryOp::Exp2
            | UnaryOp::Log2
            | UnaryOp::Log1p
            | UnaryOp::Sqrt
            | UnaryOp::Rsqrt
            | UnaryOp::Reciprocal
            | UnaryOp::Square
            | UnaryOp::Tan
            | UnaryOp::Relu
            | UnaryOp::Floor
            | UnaryOp::Ceil
            | UnaryOp::Round
            | UnaryOp::Trunc
            | UnaryOp::LogicalNot
            | UnaryOp::BitwiseNot
            | UnaryOp::IsNan
            | UnaryOp::IsInf
            | UnaryOp::IsFinite => return None,
        })
    }

    /// Whether it has an f64 (and `f64x2`) routine: exp, expm1, log, tanh and sigmoid; the
    /// others are f32 (`f32x4`) only.
    pub(crate) fn has_f64(self) -> bool {
        match self {
            Inline::Exp | Inline::Expm1 | Inline::Log | Inline::Tanh | Inline::Sigmoid => true,
            Inline::Erf | Inline::Sin | Inline::Cos => false,
        }
    }
}

/// `f(x)` for `x` of type `f32` or `f32x4` (or `f64`, `f64x2` where [`Inline::has_f64`]).
pub(crate) fn unary(
    b: &mut FunctionBuilder,
    consts: &mut Consts,
    f: Inline,
    x: Value,
    slow: Fallback,
) -> Value {
    let mut e = Emit::at(b, consts, x);
    match f {
        Inline::Exp => e.exp(x),
        Inline::Expm1 => e.expm1(x),
        Inline::Log => e.log(x),
        Inline::Tanh => e.tanh(x),
        Inline::Sigmoid => e.sigmoid(x),
        Inline::Erf => e.erf(x),
        Inline::Sin => e.sin_cos(x, false, slow),
        Inline::Cos => e.sin_cos(x, true, slow),
    }
}

/// `1 + tanh(u)`, or `1 − tanh(u)` when `minus`, for `u` of type `f32`, `f32x4`, `f64` or
/// `f64x2`: the translator's idiom for an `add`/`sub` of the constant 1 and a tanh read nowhere
/// else (GELU's tanh form). As 2 / (1 + e^(∓2u)) it costs one exponential and a division
/// instead of tanh's expm1, and it keeps its relative accuracy where the sum op by op loses it
/// (1 + tanh(−5) = 9.1e−5 comes from a tanh rounded to 6e−8 in f32).
///
/// With `half_of`, `x`, it is `(x · ½) · (1 ± tanh(u))` instead, as x / (1 + e^(∓2u)): the
/// translator's idiom for GELU's whole tail.
pub(crate) fn one_plus_tanh(
    b: &mut FunctionBuilder,
    consts: &mut Consts,
    u: Value,
    minus: bool,
    half_of: Option<Value>,
) -> Value {
    let mut e = Emit::at(b, consts, u);
    let u = if minus { e.b.ins().fneg(u) } else { u };
    let num = half_of.unwrap_or_else(|| e.f(2.0));
    e.one_plus_tanh(u, num)
}

/// `e^x` for `x` of type `f32` or `f32x4` known to be at most 0 or NaN (softmax's
/// `x − max(x)`): `exp` without its upper clamp, which is the identity there, and with its
/// scaling by 2^n in one step, which n ≤ 0 allows ([`Emit::exp_at_most_zero`]); the same bits.
pub(crate) fn exp_at_most_zero(b: &mut FunctionBuilder, consts: &mut Consts, x: Value) -> Value {
    let mut e = Emit::at(b, consts, x);
    e.exp_at_most_zero(x)
}

/// `x^y` (PyTorch's pow, C's `powf` specials) for `f32` or `f32x4` operands.
pub(crate) fn pow(b: &mut FunctionBuilder, consts: &mut Consts, x: Value, y: Value) -> Value {
    let mut e = Emit::at(b, consts, x);
    e.pow(x, y)
}

/// The vector constants of the math routines, each made once before the loop nest that uses it.
///
/// Left to itself, cranelift reads a vector constant from the constant pool at every use inside
/// a loop (it hoists a `vconst` out of one loop level only, and lowers each use as a load of its
/// own), and under an unrolled loop's register pressure it spilled some of those loads too: a
/// transcendental's dozen constants cost a dozen loads a vector, which made gelu's loop 46
/// instructions a vector against the hand-written C's 33. Made in the block that enters the
/// loop nest ([`Consts::home`]) and pinned there (stored to a stack slot and loaded back, so
/// the optimiser cannot move it next to its uses again), a constant is one value live across
/// those loops: the register allocator keeps what fits in registers and reloads the rest from
/// the stack. Each SIMD loop nest (an elementwise row, one pass of a row reduction, a column or
/// tile walk) makes its own: constants made once for the whole function were live across every
/// pass, and a row's max pass then spilled its accumulators (softmax 3.00 → 3.14 cycles an
/// element).
pub(crate) struct Consts {
    home: Block,
    made: Vec<(Type, Vec<u8>, Value)>,
}

impl Consts {
    /// No constants yet; until [`Consts::home`] says otherwise they are made in `entry`.
    pub(crate) fn new(entry: Block) -> Consts {
        Consts {
            home: entry,
            made: vec![],
        }
    }

    /// From now on, constants are made in `block`, which must dominate every use to come
    /// (the block that enters a SIMD loop nest); those made elsewhere are forgotten.
    pub(crate) fn home(&mut self, block: Block) {
        self.home = block;
        self.made.clear();
    }

    /// The vector constant of type `ty` with little-endian bytes `bytes`.
    fn get(&mut self, b: &mut FunctionBuilder, ty: Type, bytes: Vec<u8>) -> Value {
        if let Some((.., v)) = self.made.iter().find(|(t, c, _)| *t == ty && *c == bytes) {
            return *v;
        }
        let c = b
            .func
            .dfg
            .constants
            .insert(ConstantData::from(bytes.clone()));
        let slot =
            b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 16, 4));
        // Before the home block's branch into the loops, or at its end while it has none.
        let mut at = FuncCursor::new(b.func);
        match at.layout().last_inst(self.home) {
            Some(last) if at.func.dfg.insts[last].opcode().is_terminator() => at.goto_inst(last),
            Some(_) | None => at.goto_bottom(self.home),
        }
        let k = at.ins().vconst(ty, c);
        at.ins().stack_store(types::I64, k, slot, 0);
        let v = at.ins().stack_load(types::I64, ty, slot, 0);
        self.made.push((ty, bytes, v));
        v
    }
}

/// Emits into `b` at type `ty` (`f32`, `f32x4`, `f64`, `f64x2`): constants are splatted, the
/// integer view of a float has the same lanes, conditions are `fcmp`/`icmp` results.
struct Emit<'a, 'f> {
    b: &'a mut FunctionBuilder<'f>,
    ty: Type,
    consts: &'a mut Consts,
}

impl<'a, 'f> Emit<'a, 'f> {
    /// Emits at the type of `x`.
    fn at(b: &'a mut FunctionBuilder<'f>, consts: &'a mut Consts, x: Value) -> Self {
        let ty = b.func.dfg.value_type(x);
        Emit { b, ty, consts }
    }
}

impl Emit<'_, '_> {
    fn is_vector(&self) -> bool {
        self.ty.is_vector()
    }

    fn is_f64(&self) -> bool {
        self.ty.lane_type() == types::F64
    }

    /// The integer type with the float type's lanes.
    fn int_ty(&self) -> Type {
        self.ty.as_int()
    }

    /// A vector constant with every lane `bits` (little-endian lanes of the type's width).
    fn vconst(&mut self, ty: Type, bits: u64) -> Value {
        let lane = ty.lane_bits() as usize / 8;
        let bytes: Vec<u8> = (0..ty.lane_count())
            .flat_map(|_| bits.to_le_bytes()[..lane].to_vec())
            .collect();
        self.consts.get(self.b, ty, bytes)
    }

    /// The float constant `v` (rounded to the lane type).
    fn f(&mut self, v: f64) -> Value {
        match (self.is_vector(), self.is_f64()) {
            (false, false) => self.b.ins().f32const(v as f32),
            (false, true) => self.b.ins().f64const(v),
            (true, false) => self.vconst(self.ty, u64::from((v as f32).to_bits())),
            (true, true) => self.vconst(self.ty, v.to_bits()),
        }
    }

    /// The integer constant `v` (wrapped to the lane width) in the integer view.
    fn i(&mut self, v: i64) -> Value {
        let t = self.int_ty();
        if self.is_vector() {
            self.vconst(t, v as u64)
        } else {
            self.b.ins().iconst(t, v)
        }
    }

    fn bits_of(&mut self, x: Value) -> Value {
        let t = self.int_ty();
        self.b.ins().bitcast(t, MemFlagsData::new(), x)
    }

    fn float_of(&mut self, x: Value) -> Value {
        self.b.ins().bitcast(self.ty, MemFlagsData::new(), x)
    }

    fn add(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fadd(a, b)
    }

    fn sub(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fsub(a, b)
    }

    fn mul(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fmul(a, b)
    }

    fn mulc(&mut self, a: Value, c: f64) -> Value {
        let c = self.f(c);
        self.mul(a, c)
    }

    fn addc(&mut self, a: Value, c: f64) -> Value {
        let c = self.f(c);
        self.add(a, c)
    }

    /// `a · b + c` rounded once.
    fn fma(&mut self, a: Value, b: Value, c: Value) -> Value {
        self.b.ins().fma(a, b, c)
    }

    /// `a · c + d` for constants `c`, `d`.
    fn fmacc(&mut self, a: Value, c: f64, d: f64) -> Value {
        let (c, d) = (self.f(c), self.f(d));
        self.fma(a, c, d)
    }

    /// `a · c + d` for a constant `c`.
    fn fmac(&mut self, a: Value, c: f64, d: Value) -> Value {
        let c = self.f(c);
        self.fma(a, c, d)
    }

    /// `Σ cs[k] x^k` by Horner's rule with `fma`.
    fn poly(&mut self, x: Value, cs: &[f64]) -> Value {
        let (last, rest) = cs.split_last().expect("a polynomial has coefficients");
        let mut r = self.f(*last);
        for c in rest.iter().rev() {
            let c = self.f(*c);
            r = self.fma(r, x, c);
        }
        r
    }

    fn cmp(&mut self, cc: FloatCC, a: Value, b: Value) -> Value {
        self.b.ins().fcmp(cc, a, b)
    }

    fn cmpc(&mut self, cc: FloatCC, a: Value, c: f64) -> Value {
        let c = self.f(c);
        self.cmp(cc, a, c)
    }

    /// `cond ? a : b` for float values.
    fn select(&mut self, cond: Value, a: Value, b: Value) -> Value {
        if self.is_vector() {
            let mask = self.b.ins().bitcast(self.ty, MemFlagsData::new(), cond);
            self.b.ins().bitselect(mask, a, b)
        } else {
            self.b.ins().select(cond, a, b)
        }
    }

    /// `cond ? v : 0` for integer-view values.
    fn mask_int(&mut self, cond: Value, v: Value) -> Value {
        if self.is_vector() {
            self.b.ins().band(cond, v)
        } else {
            let zero = self.i(0);
            self.b.ins().select(cond, v, zero)
        }
    }

    fn and(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().band(a, b)
    }

    fn or(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().bor(a, b)
    }

    /// `min(x, hi)` keeping NaN (one `minps` on vectors).
    fn at_most(&mut self, x: Value, hi: f64) -> Value {
        let h = self.f(hi);
        let above = self.cmp(FloatCC::LessThan, h, x);
        self.select(above, h, x)
    }

    /// `max(x, lo)` keeping NaN (one `maxps` on vectors).
    fn at_least(&mut self, x: Value, lo: f64) -> Value {
        let l = self.f(lo);
        let below = self.cmp(FloatCC::LessThan, x, l);
        self.select(below, l, x)
    }

    /// `x` with the sign bit of `s` or-ed in.
    fn or_sign(&mut self, x: Value, s: Value) -> Value {
        let (xb, sb) = (self.bits_of(x), self.bits_of(s));
        let m = self.i(SIGN);
        let sign = self.and(sb, m);
        let r = self.or(xb, sign);
        self.float_of(r)
    }

    /// `round(x)` for |x| < 2^22 as (the f32 `x + MAGIC`, the integer as a float).
    fn round_magic(&mut self, t: Value) -> (Value, Value) {
        let m = self.f(MAGIC);
        (t, self.sub(t, m))
    }

    /// `x − n ln2` for an integer-valued `n`, with the sign of a zero `x` kept.
    fn reduce_ln2(&mut self, x: Value, n: Value) -> Value {
        let r = self.fmac(n, -LN2_HI, x);
        self.fmac(n, -LN2_LO, r)
    }

    /// `2^n` from `bits(t)` of `t = n + MAGIC`, for −126 ≤ n ≤ 127; 0 at n = −127 and inf at
    /// n = 128 (the biased exponent wraps to 0, or reaches 255).
    fn pow2_from_magic(&mut self, tb: Value) -> Value {
        // MAGIC's own bits vanish in the shift (its lowest set bit is bit 22).
        let shifted = self.b.ins().ishl_imm_s(tb, 23);
        let one = self.i(0x3F80_0000);
        let s = self.b.ins().iadd(shifted, one);
        self.float_of(s)
    }

    fn exp(&mut self, x: Value) -> Value {
        if self.is_f64() {
            return self.exp_64(x);
        }
        // Beyond these exp is inf or rounds to 0; clamping keeps n in range.
        let x = self.at_most(x, 89.0);
        self.exp_below_89(x)
    }

    /// `exp` for f32 `x` at most 89 (or NaN), which needs no upper clamp.
    fn exp_below_89(&mut self, x: Value) -> Value {
        let (t, p) = self.exp_parts(x);
        // 2^n as 2^n1 · 2^n2 (n from −150 to 128): p · 2^n1 is exact, the second product
        // rounds once, into the denormals or to inf where the result lies there. Both biased
        // exponents come from e = n + 2·127 (bits(t) − MAGIC_BITS = n): n1 + 127 = ⌊e/2⌋ and
        // n2 + 127 = e − ⌊e/2⌋, both in [52, 191].
        let tb = self.bits_of(t);
        let bias = self.i(254 - MAGIC_BITS);
        let e = self.b.ins().iadd(tb, bias);
        let e1 = self.b.ins().sshr_imm_s(e, 1);
        let e2 = self.b.ins().isub(e, e1);
        let s1 = self.exponent_field(e1);
        let s2 = self.exponent_field(e2);
        let p = self.mul(p, s1);
        self.mul(p, s2)
    }

    /// `exp` for f32 `x` at most 0 (or NaN): n ≤ 0, so 2^n = 2^(n+64) · 2^−64 with both
    /// factors normal (n ≥ −150). p · 2^(n+64) is exact and the product by the constant 2^−64
    /// rounds once, as [`Self::exp_below_89`]'s second product does: the same bits, from one
    /// exponent field instead of two (three integer operations fewer).
    fn exp_at_most_zero(&mut self, x: Value) -> Value {
        let (t, p) = self.exp_parts(x);
        let tb = self.bits_of(t);
        let bias = self.i(127 + 64 - MAGIC_BITS);
        let e = self.b.ins().iadd(tb, bias);
        let s = self.exponent_field(e);
        let p = self.mul(p, s);
        self.mulc(p, 2f64.powi(-64))
    }

    /// The reduced exp of f32 `x` at most 89 (or NaN), clamped below at −104: `t` (n + MAGIC,
    /// n = round(x·log2 e) from −150 to 128) and `p` = e^r for r = x − n·ln2.
    fn exp_parts(&mut self, x: Value) -> (Value, Value) {
        let x = self.at_least(x, -104.0);
        let t = self.fmacc(x, LOG2E, MAGIC);
        let (t, n) = self.round_magic(t);
        let r = self.reduce_ln2(x, n);
        // e^r = 1 + r·(1 + r·P(r)), Horner's rule down to the constant term: one operation
        // fewer than 1 + (r + r²·P(r)), and no less accurate (docs/math.md).
        let q = self.poly(r, &EXP_P);
        let one = self.f(1.0);
        let q = self.fma(q, r, one);
        (t, self.fma(q, r, one))
    }

    /// The float whose biased exponent is `e` (1 ≤ e ≤ 254) and whose mantissa is 0: 2^(e−127).
    fn exponent_field(&mut self, e: Value) -> Value {
        let e = self.b.ins().ishl_imm_s(e, 23);
        self.float_of(e)
    }

    /// `e^y − 1` for |y| ≤ 19: 2^n · (e^r − 1) − (1 − 2^n), rounded once at the end, with
    /// the sign of a zero `y` kept (r · (1 + r·P(r)) and the `− (+0)` keep it).
    fn expm1_core(&mut self, y: Value) -> Value {
        if self.is_f64() {
            return self.expm1_core_64(y);
        }
        let t = self.fmacc(y, LOG2E, MAGIC);
        let (t, n) = self.round_magic(t);
        let r = self.reduce_ln2(y, n);
        let p = self.poly(r, &EXP_P);
        let one = self.f(1.0);
        let rp1 = self.fma(r, p, one);
        let q = self.mul(r, rp1);
        let tb = self.bits_of(t);
        let s = self.pow2_from_magic(tb);
        let one_minus_s = self.sub(one, s);
        let minus = self.b.ins().fneg(one_minus_s);
        self.fma(s, q, minus)
    }

    fn expm1(&mut self, x: Value) -> Value {
        // Below −17.4 (f64: −37.5) expm1 rounds to −1; above 1 exp(x) − 1 loses nothing and
        // covers overflow (the core's answer there is discarded).
        let floor = if self.is_f64() { -38.0 } else { -18.0 };
        let xc = self.at_least(x, floor);
        let xc = self.at_most(xc, 2.0);
        let core = self.expm1_core(xc);
        let big = self.exp(x);
        let big = self.addc(big, -1.0);
        let large = self.cmpc(FloatCC::GreaterThan, x, 1.0);
        self.select(large, big, core)
    }

    fn log(&mut self, x: Value) -> Value {
        if self.is_f64() {
            return self.log_64(x);
        }
        // Denormals are scaled by 2^23 first (k corrected below).
        let den = self.cmpc(FloatCC::LessThan, x, f64::from(f32::MIN_POSITIVE));
        let scaled = self.mulc(x, 8_388_608.0);
        let xs = self.select(den, scaled, x);
        let (minus23, zero) = (self.f(-23.0), self.f(0.0));
        let kadj = self.select(den, minus23, zero);
        // x = 2^k · m with m in [√½, √2): k from the exponent of x / √½.
        let xb = self.bits_of(xs);
        let sqrt_half = self.i(0x3F35_04F3);
        let ix = self.b.ins().isub(xb, sqrt_half);
        let k = self.b.ins().sshr_imm_s(ix, 23);
        let frac = self.i(0x007F_FFFF);
        let mb = self.and(ix, frac);
        let mb = self.b.ins().iadd(mb, sqrt_half);
        let m = self.float_of(mb);
        let f = self.addc(m, -1.0);
        let kf = self.b.ins().fcvt_from_sint(self.ty, k);
        let kf = self.add(kf, kadj);
        // log1p(f) = f − (f²/2 − s (f²/2 + R)), s = f/(2+f): the large terms exact or nearly.
        let two_f = self.addc(f, 2.0);
        let s = self.b.ins().fdiv(f, two_f);
        let z = self.mul(s, s);
        let rp = self.poly(z, &LOG_R);
        let rr = self.mul(z, rp);
        let half_f = self.mulc(f, -0.5);
        let nhfsq = self.mul(half_f, f);
        let a = self.sub(rr, nhfsq);
        let c = self.fma(s, a, nhfsq);
        let l1p = self.add(f, c);
        let lo = self.fmac(kf, LN2_LO, l1p);
        let r = self.fmac(kf, LN2_HI, lo);
        self.log_specials(x, r)
    }

    /// `r`, the log of a positive finite `x`, with the special cases put in: log(+inf) = inf,
    /// log(±0) = −inf, log(x < 0) = log(NaN) = NaN.
    fn log_specials(&mut self, x: Value, r: Value) -> Value {
        let is_inf = self.cmpc(FloatCC::Equal, x, f64::INFINITY);
        let r = self.select(is_inf, x, r);
        let is_zero = self.cmpc(FloatCC::Equal, x, 0.0);
        let minus_inf = self.f(f64::NEG_INFINITY);
        let r = self.select(is_zero, minus_inf, r);
        let ok = self.cmpc(FloatCC::GreaterThanOrEqual, x, 0.0);
        let nan = self.f(f64::NAN);
        self.select(ok, r, nan)
    }

    fn tanh(&mut self, x: Value) -> Value {
        // tanh = (e^2x − 1)/(e^2x + 1); beyond ±9.5 (f64: ±19.5) the quotient is exactly ±1.
        let limit = if self.is_f64() { 19.5 } else { 9.5 };
        let xc = self.at_most(x, limit);
        let xc = self.at_least(xc, -limit);
        let y = self.add(xc, xc);
        let em = self.expm1_core(y);
        let d = self.addc(em, 2.0);
        self.b.ins().fdiv(em, d)
    }

    /// `1 + tanh(u)` = 2 / (1 + e^(−2u)). In f32: u is clamped to [−44.5, 44], where
    /// e^(−2u) = 2^n · e^r with n from −127 (2^n = 0: the answer is 2, as 1 + tanh(44) rounds
    /// to) to 128 (2^n = inf: the answer is 0, below 1e−38); h = r/−2 = u + n·(ln2/2) in one
    /// `fma` with ln2/2 rounded to f32, e^r = e^(−2h) by [`TANH_Q`]'s degree-5 fit, and
    /// 1 + 2^n·e^r is one `fma`. f64 divides by 1 + its exp. (`num` / that, for `num` 2.)
    ///
    /// The one-part reduction and the degree-5 polynomial are each one `fma` short of `exp`'s
    /// (two-part, degree 6), which made GELU's loop about a fifth faster; they cost accuracy
    /// only where the answer is tiny. ln2/2 in f32 is 9.5e−10 off, which moves h by n times
    /// that: under half an ulp of e^r for |n| ≤ 30 (|u| ≤ 10), up to two at |n| = 128, where
    /// 1 + tanh(u) is below 2^−100 and the op-by-op sum is 0.
    fn one_plus_tanh(&mut self, u: Value, num: Value) -> Value {
        if self.is_f64() {
            let y = self.mulc(u, -2.0);
            let e = self.exp_64(y);
            let d = self.addc(e, 1.0);
            return self.b.ins().fdiv(num, d);
        }
        let uc = self.at_most(u, 44.0);
        let uc = self.at_least(uc, -44.5);
        let t = self.fmacc(uc, -2.0 * LOG2E, MAGIC);
        let (t, n) = self.round_magic(t);
        let h = self.fmac(n, LN2_HALF, uc);
        let mut cs = [1.0; 6];
        cs[1..].copy_from_slice(&TANH_Q);
        let p = self.poly(h, &cs);
        // 2^n: 0 at n = −127, inf at 128.
        let tb = self.bits_of(t);
        let s = self.pow2_from_magic(tb);
        let one = self.f(1.0);
        let d = self.fma(p, s, one);
        self.b.ins().fdiv(num, d)
    }

    fn sigmoid(&mut self, x: Value) -> Value {
        if self.is_f64() {
            // The interpreter's own formula: below −709.78 e^−x overflows and the answer is 0.
            let nx = self.b.ins().fneg(x);
            let e = self.exp_64(nx);
            let one = self.f(1.0);
            let den = self.add(e, one);
            return self.b.ins().fdiv(one, den);
        }
        // e = exp(−|x|) never overflows: 1/(1+e) for x ≥ 0, e/(1+e) below.
        let ax = self.b.ins().fabs(x);
        let nax = self.b.ins().fneg(ax);
        let e = self.exp(nax);
        let one = self.f(1.0);
        let pos = self.cmpc(FloatCC::GreaterThanOrEqual, x, 0.0);
        let num = self.select(pos, one, e);
        let den = self.add(e, one);
        self.b.ins().fdiv(num, den)
    }

    fn erf(&mut self, x: Value) -> Value {
        let ax = self.b.ins().fabs(x);
        let u = self.mul(x, x);
        let p = self.poly(u, &ERF_S);
        let lo = self.f(ERF_LO);
        let tail = self.fma(u, p, lo);
        let xt = self.mul(x, tail);
        let small = self.fmac(x, ERF_HI, xt);
        let axc = self.at_most(ax, ERF_ONE);
        let l = self.poly(axc, &ERF_L);
        let el = self.exp(l);
        let one = self.f(1.0);
        let large = self.sub(one, el);
        let large = self.or_sign(large, x);
        let is_small = self.cmpc(FloatCC::LessThan, ax, ERF_SPLIT);
        self.select(is_small, small, large)
    }

    fn sin_cos(&mut self, x: Value, cos: bool, slow: Fallback) -> Value {
        let ax = self.b.ins().fabs(x);
        // j = round(|x| · 2/π), r = |x| − j π/2 in three exact-product steps.
        let t = self.fmacc(ax, FRAC_2_PI, MAGIC);
        let (t, j) = self.round_magic(t);
        let r = self.fmac(j, -PIO2[0], ax);
        let r = self.fmac(j, -PIO2[1], r);
        let r = self.fmac(j, -PIO2[2], r);
        let r2 = self.mul(r, r);
        let r3 = self.mul(r, r2);
        let sp = self.poly(r2, &SIN_S);
        let s = self.fma(r3, sp, r);
        let r4 = self.mul(r2, r2);
        let cp = self.poly(r2, &COS_C);
        let c0 = self.fmacc(r2, -0.5, 1.0);
        let c = self.fma(r4, cp, c0);
        // The quadrant j mod 4 (cos is sin a quadrant on) picks ±sin r or ±cos r.
        let mut q = self.bits_of(t);
        if cos {
            let one = self.i(1);
            q = self.b.ins().iadd(q, one);
        }
        let odd = self.b.ins().ishl_imm_s(q, 31);
        let odd = self.b.ins().sshr_imm_s(odd, 31);
        let odd = if self.is_vector() {
            odd
        } else {
            self.b.ins().icmp_imm_s(IntCC::NotEqual, odd, 0)
        };
        let v = self.select(odd, c, s);
        let two = self.i(2);
        let half_turn = self.and(q, two);
        let mut sign = self.b.ins().ishl_imm_s(half_turn, 30);
        if !cos {
            // sin is odd: the sign of x joins the quadrant's.
            let xb = self.bits_of(x);
            let m = self.i(SIGN);
            let xs = self.and(xb, m);
            sign = self.b.ins().bxor(sign, xs);
        }
        let vb = self.bits_of(v);
        let rb = self.b.ins().bxor(vb, sign);
        let fast = self.float_of(rb);
        // |x| > 2^20 (and ±inf) goes to libm; NaN stays inline and stays NaN.
        let large = self.cmpc(FloatCC::GreaterThan, ax, TRIG_LIMIT);
        self.with_fallback(x, fast, large, slow)
    }

    /// `large` lanes of `fast` replaced by libm's answer, computed only when a lane needs it.
    fn with_fallback(&mut self, x: Value, fast: Value, large: Value, slow: Fallback) -> Value {
        let any = if self.is_vector() {
            self.b.ins().vany_true(large)
        } else {
            large
        };
        let call = self.b.create_block();
        let join = self.b.create_block();
        self.b.append_block_param(join, self.ty);
        self.b
            .ins()
            .brif(any, call, &[], join, &[BlockArg::Value(fast)]);
        self.b.switch_to_block(call);
        let lanes = call_lanes(self.b, slow, x);
        let v = self.select(large, lanes, fast);
        self.b.ins().jump(join, &[BlockArg::Value(v)]);
        self.b.switch_to_block(join);
        self.b.block_params(join)[0]
    }

    fn pow(&mut self, x: Value, y: Value) -> Value {
        let ax = self.b.ins().fabs(x);
        // |x|^y = 2^(y · log2|x|) in f64, rounded once to f32.
        let mag = if self.is_vector() {
            let widen = |e: &mut Self, v: Value| {
                let lo = e.b.ins().fvpromote_low(v);
                let hi = e.halves(v, v, 8, 8);
                let hi = e.b.ins().fvpromote_low(hi);
                (lo, hi)
            };
            let (axl, axh) = widen(self, ax);
            let (yl, yh) = widen(self, y);
            let mut d = Emit {
                b: &mut *self.b,
                ty: types::F64X2,
                consts: &mut *self.consts,
            };
            let rl = d.pow_abs_64(axl, yl);
            let rh = d.pow_abs_64(axh, yh);
            let rl = self.b.ins().fvdemote(rl);
            let rh = self.b.ins().fvdemote(rh);
            self.halves(rl, rh, 0, 16)
        } else {
            let axd = self.b.ins().fpromote(types::F64, ax);
            let yd = self.b.ins().fpromote(types::F64, y);
            let mut d = Emit {
                b: &mut *self.b,
                ty: types::F64,
                consts: &mut *self.consts,
            };
            let r = d.pow_abs_64(axd, yd);
            self.b.ins().fdemote(types::F32, r)
        };
        // A negative base with an odd integer exponent (−0 and −inf included) flips the sign.
        let yt = self.b.ins().trunc(y);
        let y_int = self.cmp(FloatCC::Equal, yt, y);
        let y_frac = self.cmp(FloatCC::NotEqual, yt, y);
        let hy = self.mulc(y, 0.5);
        let thy = self.b.ins().trunc(hy);
        let half_frac = self.cmp(FloatCC::NotEqual, thy, hy);
        let y_odd = self.and(y_int, half_frac);
        let xb = self.bits_of(x);
        let m = self.i(SIGN);
        let xs = self.and(xb, m);
        let flip = self.mask_int(y_odd, xs);
        let rb = self.bits_of(mag);
        let rb = self.b.ins().bxor(rb, flip);
        let r = self.float_of(rb);
        // A finite negative base with a non-integer exponent has no real power.
        let neg = self.cmpc(FloatCC::LessThan, x, 0.0);
        let finite = self.cmpc(FloatCC::GreaterThan, x, f64::NEG_INFINITY);
        let bad = self.and(neg, finite);
        let bad = self.and(bad, y_frac);
        let nan = self.f(f64::NAN);
        let r = self.select(bad, nan, r);
        // pow(1, y) = pow(x, ±0) = 1 even for NaN, and pow(−1, ±inf) = 1.
        let x_one = self.cmpc(FloatCC::Equal, x, 1.0);
        let y_zero = self.cmpc(FloatCC::Equal, y, 0.0);
        let ax_one = self.cmpc(FloatCC::Equal, ax, 1.0);
        let ay = self.b.ins().fabs(y);
        let y_inf = self.cmpc(FloatCC::Equal, ay, f64::INFINITY);
        let one_inf = self.and(ax_one, y_inf);
        let is_one = self.or(x_one, y_zero);
        let is_one = self.or(is_one, one_inf);
        let one = self.f(1.0);
        self.select(is_one, one, r)
    }

    /// An f32x4 of two 8-byte halves: bytes `first..first + 8` then `second..second + 8` of
    /// the 32 bytes `a ++ b` (`halves(v, v, 8, 8)` moves the high lanes down;
    /// `halves(a, b, 0, 16)` joins the low lanes of both).
    fn halves(&mut self, a: Value, b: Value, first: u8, second: u8) -> Value {
        let le = MemFlagsData::new().with_endianness(Endianness::Little);
        let ab = self.b.ins().bitcast(types::I8X16, le, a);
        let bb = self.b.ins().bitcast(types::I8X16, le, b);
        let mask: Vec<u8> = (first..first + 8).chain(second..second + 8).collect();
        let imm = self.b.func.dfg.immediates.push(ConstantData::from(mask));
        let r = self.b.ins().shuffle(ab, bb, imm);
        self.b.ins().bitcast(types::F32X4, le, r)
    }

    /// `|x|^y` in f64 for `ax = |x|` (an f32 value, so never a denormal f64): 2^(y · log2 ax)
    /// with log2 0 = −inf and log2 inf = inf; NaN propagates. Exact cases are `pow`'s.
    fn pow_abs_64(&mut self, ax: Value, y: Value) -> Value {
        let l = self.log2_64(ax);
        let is_zero = self.cmpc(FloatCC::Equal, ax, 0.0);
        let minus_inf = self.f(f64::NEG_INFINITY);
        let l = self.select(is_zero, minus_inf, l);
        let finite = self.cmpc(FloatCC::LessThan, ax, f64::INFINITY);
        let l = self.select(finite, l, ax);
        let t = self.mul(y, l);
        self.exp2_64(t)
    }

    /// log2 of a positive normal f64.
    fn log2_64(&mut self, ax: Value) -> Value {
        let (k, m) = self.split_64(ax);
        let f = self.addc(m, -1.0);
        let two_f = self.addc(f, 2.0);
        let s = self.b.ins().fdiv(f, two_f);
        let z = self.mul(s, s);
        let rz = self.poly(z, &LOG_TAYLOR_64[..8]);
        let sz = self.mul(s, z);
        let s2 = self.add(s, s);
        let l = self.fma(sz, rz, s2);
        self.fmac(l, INV_LN2_64, k)
    }

    /// `(k, m)` with `ax = 2^k · m` and m in [√½, √2), for a positive normal f64 `ax`; k is
    /// read without an arithmetic shift (none on i64x2).
    fn split_64(&mut self, ax: Value) -> (Value, Value) {
        let b = self.bits_of(ax);
        let sqrt_half = self.i(SQRT_HALF_BITS_64);
        let d = self.b.ins().isub(b, sqrt_half);
        let bias = self.i(1024 << 52);
        let kb = self.b.ins().iadd(d, bias);
        let kb = self.b.ins().ushr_imm_s(kb, 52);
        let exp52 = self.i(0x4330_0000_0000_0000);
        let kb = self.or(kb, exp52);
        let kf = self.float_of(kb);
        let k = self.addc(kf, -(4_503_599_627_370_496.0 + 1024.0));
        let frac = self.i(0x000F_FFFF_FFFF_FFFF);
        let mb = self.and(d, frac);
        let mb = self.b.ins().iadd(mb, sqrt_half);
        let m = self.float_of(mb);
        (k, m)
    }

    /// 2^t in f64 for any t (clamped to ±200: far beyond f32's range either way).
    fn exp2_64(&mut self, t: Value) -> Value {
        let t = self.at_most(t, 200.0);
        let t = self.at_least(t, -200.0);
        let magic = self.f(MAGIC_64);
        let tm = self.add(t, magic);
        let n = self.sub(tm, magic);
        let f = self.sub(t, n);
        let p = self.poly(f, &EXP2_64);
        let scale = self.pow2_from_magic_64(tm);
        self.mul(p, scale)
    }

    /// `2^n` from `t = n + MAGIC_64`, for −1022 ≤ n ≤ 1023.
    fn pow2_from_magic_64(&mut self, t: Value) -> Value {
        let tb = self.bits_of(t);
        let bias = self.i(1023_i64.wrapping_sub(MAGIC_64.to_bits() as i64));
        let e = self.b.ins().iadd(tb, bias);
        let e = self.b.ins().ishl_imm_s(e, 52);
        self.float_of(e)
    }

    /// `(n + MAGIC_64, n, r)` for f64 `y`: n = round(y · log2 e), r = y − n ln2 (the first
    /// product exact inside an `fma`, the subtraction exact by Sterbenz).
    fn reduce_64(&mut self, y: Value) -> (Value, Value, Value) {
        let t = self.fmacc(y, INV_LN2_64, MAGIC_64);
        let n = self.addc(t, -MAGIC_64);
        let r = self.fmac(n, -LN2_HI_64, y);
        let r = self.fmac(n, -LN2_LO_64, r);
        (t, n, r)
    }

    /// `e^r − 1` in f64 on |r| ≤ ln2/2: r + r² · P(r) rounded once.
    fn expm1_poly_64(&mut self, r: Value) -> Value {
        let p = self.poly(r, &EXP_TAYLOR_64);
        let r2 = self.mul(r, r);
        self.fma(r2, p, r)
    }

    /// e^x in f64: 2^n · e^r, e^r = 1 + (r + r² · P(r)) rounded once, 2^n applied as
    /// 2^n1 · 2^n2 (n1 = round(n/2)) so a denormal or overflowing result is rounded once.
    fn exp_64(&mut self, x: Value) -> Value {
        // Beyond these exp is inf or rounds to 0; clamping keeps n1 and n2 normal.
        let x = self.at_most(x, 710.0);
        let x = self.at_least(x, -746.0);
        let (_, n, r) = self.reduce_64(x);
        let q = self.expm1_poly_64(r);
        let e = self.addc(q, 1.0);
        let t1 = self.fmacc(n, 0.5, MAGIC_64);
        let n1 = self.addc(t1, -MAGIC_64);
        let n2 = self.sub(n, n1);
        let t2 = self.addc(n2, MAGIC_64);
        let s1 = self.pow2_from_magic_64(t1);
        let s2 = self.pow2_from_magic_64(t2);
        let e = self.mul(e, s1);
        self.mul(e, s2)
    }

    /// `e^y − 1` in f64 for −38 ≤ y ≤ 39: 2^n · (e^r − 1) − (1 − 2^n) rounded once, with
    /// e^r − 1 = r + r² · P(r) (r itself exact, the correction small); ±0 is returned as is.
    fn expm1_core_64(&mut self, y: Value) -> Value {
        let (t, _, r) = self.reduce_64(y);
        let q = self.expm1_poly_64(r);
        let s = self.pow2_from_magic_64(t);
        let one = self.f(1.0);
        let one_minus_s = self.sub(one, s);
        let minus = self.b.ins().fneg(one_minus_s);
        let e = self.fma(s, q, minus);
        let zero = self.cmpc(FloatCC::Equal, y, 0.0);
        self.select(zero, y, e)
    }

    /// log in f64: x = 2^k · m with m in [√½, √2) (denormals scaled by 2^54 first), f = m − 1,
    /// log1p(f) = f − (f²/2 − s · (f²/2 + R)), plus k ln2 in two parts.
    fn log_64(&mut self, x: Value) -> Value {
        let den = self.cmpc(FloatCC::LessThan, x, f64::MIN_POSITIVE);
        let scaled = self.mulc(x, 18_014_398_509_481_984.0);
        let xs = self.select(den, scaled, x);
        let (minus54, zero) = (self.f(-54.0), self.f(0.0));
        let kadj = self.select(den, minus54, zero);
        let (k, m) = self.split_64(xs);
        let k = self.add(k, kadj);
        let f = self.addc(m, -1.0);
        let two_f = self.addc(f, 2.0);
        let s = self.b.ins().fdiv(f, two_f);
        let z = self.mul(s, s);
        let rp = self.poly(z, &LOG_TAYLOR_64);
        let rr = self.mul(z, rp);
        let half_f = self.mulc(f, 0.5);
        let hfsq = self.mul(half_f, f);
        let a = self.add(hfsq, rr);
        let sa = self.mul(s, a);
        let t = self.fmac(k, LN2_LO_64, sa);
        let u = self.sub(hfsq, t);
        let u = self.sub(u, f);
        let nu = self.b.ins().fneg(u);
        let r = self.fmac(k, LN2_HI_64, nu);
        self.log_specials(x, r)
    }
}

/// `f(code, x)` per lane (or once for a scalar), in f64, rounded back to f32.
fn call_lanes(b: &mut FunctionBuilder, slow: Fallback, x: Value) -> Value {
    let ty = b.func.dfg.value_type(x);
    let one = |b: &mut FunctionBuilder, s: Value| {
        let code = b.ins().iconst(types::I64, slow.code);
        let w = b.ins().fpromote(types::F64, s);
        let call = b.ins().call(slow.func, &[code, w]);
        let r = b.inst_results(call)[0];
        b.ins().fdemote(types::F32, r)
    };
    if !ty.is_vector() {
        return one(b, x);
    }
    let mut out = x;
    for lane in 0..ty.lane_count() as u8 {
        let s = b.ins().extractlane(x, lane);
        let r = one(b, s);
        out = b.ins().insertlane(out, r, lane);
    }
    out
}
