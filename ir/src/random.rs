//! Counter-based random numbers (Philox4x32-10, as PyTorch's CUDA generator and JAX use): a
//! random value is a pure function of a key (the generator's seed), a counter (the draw's
//! offset plus the element's position) and the distribution, so a random tensor is a lazy
//! node like any other: it fuses into its consumers, and every backend, for any thread count
//! and any fusion, produces the same bits.
//!
//! This module is the definition every backend follows bit for bit: the reference interpreter
//! and the cpu backend's helpers call it, the CUDA prelude is the same computation in C. Only
//! integer operations and IEEE-754 basic operations (+, −, ×, ÷, √, each correctly rounded on
//! every backend, none fused) appear in it: the logarithm and cosine of the normal and
//! exponential distributions are evaluated from their series here rather than by a libm,
//! whose last bits differ between platforms.

use crate::DType;

/// What a random instruction draws, before any scaling the frontend does with ordinary ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RandomDist {
    /// Uniform on [0, 1) with the dtype's mantissa: 24 random bits for f32, 11 for f16, 8 for
    /// bf16, 53 for f64; never 1.
    Uniform,
    /// Standard normal (Box–Muller: two 53-bit uniforms, one value per element).
    Normal,
    /// Exponential with rate 1 (−ln u, u uniform on (0, 1]).
    Exponential,
    /// 63 uniformly random bits, as a non-negative int64 (`randint`, `random_`, `randperm`'s
    /// keys).
    Bits,
}

impl RandomDist {
    /// Every distribution, in code order.
    pub const ALL: [RandomDist; 4] = [
        RandomDist::Uniform,
        RandomDist::Normal,
        RandomDist::Exponential,
        RandomDist::Bits,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RandomDist::Uniform => "uniform",
            RandomDist::Normal => "normal",
            RandomDist::Exponential => "exponential",
            RandomDist::Bits => "bits",
        }
    }

    /// The code compiled kernels pass to the random helper: its position in [`Self::ALL`].
    pub fn code(self) -> usize {
        self as usize
    }

    /// Whether a tensor of `dtype` can hold this draw: a float for the float distributions,
    /// int64 for bits.
    pub fn draws(self, dtype: DType) -> bool {
        match self {
            RandomDist::Uniform | RandomDist::Normal | RandomDist::Exponential => dtype.is_float(),
            RandomDist::Bits => dtype == DType::I64,
        }
    }

    /// `(self, dtype)` as one integer, for a compiled kernel's call of the random helper.
    pub fn pack(self, dtype: DType) -> i64 {
        let d = DType::ALL
            .iter()
            .position(|x| *x == dtype)
            .expect("ALL lists every dtype");
        (self.code() * DType::ALL.len() + d) as i64
    }

    /// The inverse of [`Self::pack`]; `None` for a code no pair packs to.
    pub fn unpack(code: i64) -> Option<(RandomDist, DType)> {
        let code = usize::try_from(code).ok()?;
        let n = DType::ALL.len();
        Some((*Self::ALL.get(code / n)?, DType::ALL[code % n]))
    }

    /// The dtype of the value drawn for a tensor of `dtype`: the float itself for the float
    /// distributions, int64 for bits.
    pub fn value_dtype(self, dtype: DType) -> DType {
        match self {
            RandomDist::Uniform | RandomDist::Normal | RandomDist::Exponential => dtype,
            RandomDist::Bits => DType::I64,
        }
    }
}

/// Philox4x32's round multipliers.
pub const MULTIPLIERS: [u32; 2] = [0xD251_1F53, 0xCD9E_8D57];
/// Philox4x32's key increments per round (the golden ratio and √3 − 1 in 32 bits).
pub const WEYL: [u32; 2] = [0x9E37_79B9, 0xBB67_AE85];
const M0: u32 = MULTIPLIERS[0];
const M1: u32 = MULTIPLIERS[1];
const W0: u32 = WEYL[0];
const W1: u32 = WEYL[1];

/// Philox4x32 with 10 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
/// SC 2011): four 32-bit words of `counter` scrambled under a 64-bit `key`.
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let (mut c, mut k) = (counter, key);
    for _ in 0..10 {
        let p0 = u64::from(M0) * u64::from(c[0]);
        let p1 = u64::from(M1) * u64::from(c[2]);
        let (hi0, lo0) = ((p0 >> 32) as u32, p0 as u32);
        let (hi1, lo1) = ((p1 >> 32) as u32, p1 as u32);
        c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0];
        k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
    }
    c
}

/// The four words drawn for element `position` of a draw at `offset` under `seed`: Philox of
/// the counter `offset + position` (64 bits, low word first, upper half zero) and the key
/// `seed`.
pub fn words(seed: i64, offset: i64, position: i64) -> [u32; 4] {
    let counter = (offset as u64).wrapping_add(position as u64);
    let seed = seed as u64;
    philox4x32_10(
        [counter as u32, (counter >> 32) as u32, 0, 0],
        [seed as u32, (seed >> 32) as u32],
    )
}

/// 53 random bits from two words, as an integer below 2^53.
fn bits53(hi: u32, lo: u32) -> u64 {
    (u64::from(hi) << 21) | u64::from(lo >> 11)
}

/// 2^-53.
pub const TWO_POW_M53: f64 = 1.0 / 9_007_199_254_740_992.0;

/// ln 2 split so that `e · LN2_HI` is exact for |e| < 2^21.
pub const LN2_HI: f64 = f64::from_bits(std::f64::consts::LN_2.to_bits() & !((1 << 21) - 1));
pub const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
/// √2, the top of the mantissa range the logarithm works on.
pub const SQRT2: f64 = std::f64::consts::SQRT_2;
/// 2/(2k + 3) for k = 0..10: atanh's series, ln m = 2s + s·z·Σ c_k z^k with s = (m−1)/(m+1),
/// z = s²; for m in [√½, √2) its remainder is below 2^-60 of the result. (The cpu backend's
/// inline f64 logarithm sums the same series.)
pub const LOG_SERIES: [f64; 11] = [
    2.0 / 3.0,
    2.0 / 5.0,
    2.0 / 7.0,
    2.0 / 9.0,
    2.0 / 11.0,
    2.0 / 13.0,
    2.0 / 15.0,
    2.0 / 17.0,
    2.0 / 19.0,
    2.0 / 21.0,
    2.0 / 23.0,
];

/// ln x for a normal positive `x`, from basic operations only (within a few ulp).
pub fn det_ln(x: f64) -> f64 {
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    // The mantissa as a value in [1, 2), exactly.
    let mut m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
    if m > SQRT2 {
        m *= 0.5;
        e += 1;
    }
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let mut r = LOG_SERIES[10];
    for c in LOG_SERIES[..10].iter().rev() {
        r = r * z + c;
    }
    let log_m = 2.0 * s + s * (z * r);
    let e = e as f64;
    e * LN2_HI + (e * LN2_LO + log_m)
}

/// (−1)^k / (2k)! for k = 1..9 and (−1)^k / (2k+1)! for k = 1..9: cosine and sine series,
/// whose remainders on [0, π/4] are below 2^-60.
pub const COS_SERIES: [f64; 9] = [
    -1.0 / 2.0,
    1.0 / 24.0,
    -1.0 / 720.0,
    1.0 / 40_320.0,
    -1.0 / 3_628_800.0,
    1.0 / 479_001_600.0,
    -1.0 / 87_178_291_200.0,
    1.0 / 20_922_789_888_000.0,
    -1.0 / 6_402_373_705_728_000.0,
];
pub const SIN_SERIES: [f64; 9] = [
    -1.0 / 6.0,
    1.0 / 120.0,
    -1.0 / 5_040.0,
    1.0 / 362_880.0,
    -1.0 / 39_916_800.0,
    1.0 / 6_227_020_800.0,
    -1.0 / 1_307_674_368_000.0,
    1.0 / 355_687_428_096_000.0,
    -1.0 / 121_645_100_408_832_000.0,
];

/// Σ series[k] z^(k+1), by Horner.
fn series(z: f64, series: &[f64; 9]) -> f64 {
    let mut r = series[8];
    for c in series[..8].iter().rev() {
        r = r * z + c;
    }
    r * z
}

/// cos(2πt) for t in [0, 1), from basic operations only: the quadrant and the distance into
/// it are exact (t·4 and its fraction), and the rest is a series on [0, π/4].
pub fn det_cos_2pi(t: f64) -> f64 {
    let a = t * 4.0;
    let k = a.floor();
    let f = a - k;
    // cos or sin of (π/2)·f, from the nearer end of the quadrant.
    let (g, swap) = if f > 0.5 { (1.0 - f, true) } else { (f, false) };
    let phi = g * std::f64::consts::FRAC_PI_2;
    let z = phi * phi;
    let cos = 1.0 + series(z, &COS_SERIES);
    let sin = phi + phi * series(z, &SIN_SERIES);
    let (cos_f, sin_f) = if swap { (sin, cos) } else { (cos, sin) };
    match k as i64 {
        0 => cos_f,
        1 => -sin_f,
        2 => -cos_f,
        _ => sin_f,
    }
}

/// The value drawn for one element, as the bits of its value dtype
/// ([`RandomDist::value_dtype`]): f64 bits for an f64, the f32's bits widened for f32, f16 and
/// bf16 (which f32 holds exactly), the int64 itself for bits.
pub fn draw(dist: RandomDist, dtype: DType, seed: i64, offset: i64, position: i64) -> u64 {
    let [r0, r1, r2, r3] = words(seed, offset, position);
    match dist {
        RandomDist::Uniform => match dtype {
            DType::F64 => (bits53(r0, r1) as f64 * TWO_POW_M53).to_bits(),
            DType::F16 => u64::from(((r0 >> 21) as f32 * (1.0 / 2048.0)).to_bits()),
            DType::BF16 => u64::from(((r0 >> 24) as f32 * (1.0 / 256.0)).to_bits()),
            DType::F32
            | DType::Bool
            | DType::U8
            | DType::I8
            | DType::I16
            | DType::I32
            | DType::I64
            | DType::C64
            | DType::C128 => u64::from(((r0 >> 8) as f32 * (1.0 / 16_777_216.0)).to_bits()),
        },
        RandomDist::Normal => {
            let u1 = (bits53(r0, r1) + 1) as f64 * TWO_POW_M53;
            let u2 = bits53(r2, r3) as f64 * TWO_POW_M53;
            let z = (-2.0 * det_ln(u1)).sqrt() * det_cos_2pi(u2);
            narrow(z, dtype)
        }
        RandomDist::Exponential => {
            let u = (bits53(r0, r1) + 1) as f64 * TWO_POW_M53;
            // 0 − ln u: +0 rather than −0 for u = 1.
            narrow(0.0 - det_ln(u), dtype)
        }
        RandomDist::Bits => (u64::from(r0) << 31) | u64::from(r1 >> 1),
    }
}

/// `x` as the bits of `dtype`'s value: f64 bits for f64, else the nearest f32's bits, rounded
/// again to an f16 or bf16 (as c10 converts a double, through float) for those dtypes, whose
/// values every backend holds in f32 registers already rounded.
fn narrow(x: f64, dtype: DType) -> u64 {
    let f = x as f32;
    let f = match dtype {
        DType::F64 => return x.to_bits(),
        DType::F16 => half::f16::from_f32(f).to_f32(),
        DType::BF16 => half::bf16::from_f32(f).to_f32(),
        DType::F32
        | DType::Bool
        | DType::U8
        | DType::I8
        | DType::I16
        | DType::I32
        | DType::I64
        | DType::C64
        | DType::C128 => f,
    };
    u64::from(f.to_bits())
}

/// [`draw`] as a value: a float of the value dtype widened to f64, or the bits as an integer.
pub fn draw_value(dist: RandomDist, dtype: DType, seed: i64, offset: i64, position: i64) -> f64 {
    let bits = draw(dist, dtype, seed, offset, position);
    match (dist, dtype) {
        (RandomDist::Bits, _) => bits as f64,
        (_, DType::F64) => f64::from_bits(bits),
        (_, _) => f64::from(f32::from_bits(bits as u32)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random123's known-answer vectors for Philox4x32-10.
    #[test]
    fn philox_matches_the_known_answers() {
        assert_eq!(
            philox4x32_10([0, 0, 0, 0], [0, 0]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        assert_eq!(
            philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        assert_eq!(
            philox4x32_10(
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0]
            ),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }

    #[test]
    fn the_series_match_libm_closely() {
        for i in 1..2000 {
            let x = i as f64 / 2000.0;
            let want = x.ln();
            assert!(
                (det_ln(x) - want).abs() <= 4.0 * f64::EPSILON * want.abs().max(1.0),
                "{x}"
            );
            let c = (2.0 * std::f64::consts::PI * x).cos();
            assert!(
                (det_cos_2pi(x) - c).abs() <= 1e-15,
                "{x}: {} vs {c}",
                det_cos_2pi(x)
            );
        }
        assert_eq!(det_ln(1.0), 0.0);
        assert_eq!(det_cos_2pi(0.0), 1.0);
        assert_eq!(det_cos_2pi(0.5), -1.0);
        // The smallest uniform a draw takes the logarithm of, and tiny normal numbers.
        for x in [
            TWO_POW_M53,
            f64::MIN_POSITIVE,
            f64::MIN_POSITIVE * 1e10,
            1.0 - 1e-16,
        ] {
            let want = x.ln();
            assert!((det_ln(x) - want).abs() <= 4.0 * f64::EPSILON * want.abs().max(1.0));
        }
    }

    #[test]
    fn draws_are_in_range_and_depend_on_every_input() {
        for p in 0..1000 {
            let u = draw_value(RandomDist::Uniform, DType::F32, 7, 0, p);
            assert!((0.0..1.0).contains(&u));
            let u = draw_value(RandomDist::Uniform, DType::F64, 7, 0, p);
            assert!((0.0..1.0).contains(&u));
            let b = draw(RandomDist::Bits, DType::I64, 7, 0, p);
            assert!(b < 1 << 63);
            assert!(draw_value(RandomDist::Exponential, DType::F32, 7, 0, p) >= 0.0);
        }
        let d = |seed, offset, p| draw(RandomDist::Bits, DType::I64, seed, offset, p);
        assert_ne!(d(1, 0, 0), d(2, 0, 0));
        assert_ne!(d(1, 0, 0), d(1, 1, 0));
        assert_eq!(d(1, 5, 0), d(1, 0, 5), "the counter is offset + position");
    }
}
