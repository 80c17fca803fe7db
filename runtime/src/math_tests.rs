//! Accuracy of the cpu backend's inline f32 transcendentals (`codegen/src/cpu/math.rs`)
//! against the reference interpreter's answer (f64 libm rounded once to f32), and of its
//! inline f64 exp, expm1, log, tanh and sigmoid against the interpreter's f64 answer. Each function is
//! swept over its useful range — inputs evenly spaced in the f32 bit patterns, so every binade
//! down to the denormals gets its share — and run as a SIMD kernel and as a scalar one: the
//! largest error in ulp must stay within the bound documented in math.rs (and docs/math.md),
//! both forms must agree bit for bit, and special inputs (±0, ±inf, NaN, huge) must give the
//! reference's answer exactly. `SMELT_MATH_STEP=n` sweeps every n-th f32 of each unary
//! function's range instead (1 is exhaustive; slow); `--nocapture` prints the measured errors.

use crate::buffer::HostBuffer;
use crate::device::Target;
use smelt_ir::kernel::{Access, Arg, Index, Instr, Kernel};
use smelt_ir::scalar_ops::{binary, unary};
use smelt_ir::{BinaryOp, DType, ReduceOp, Scalar, UnaryOp};
use std::sync::Arc;

/// Inputs per function (and x values per exponent for pow) when `SMELT_MATH_STEP` is unset.
const SWEEP: i64 = 1 << 20;
/// Inputs per f64 function.
const SWEEP_64: i64 = 1 << 20;

/// Each inline f64 function, its documented max ulp (f64 ulp), and the range swept.
const UNARY_64: [(UnaryOp, u64, f64, f64); 5] = [
    (UnaryOp::Exp, 1, -750.0, 720.0),
    (UnaryOp::Expm1, 2, -40.0, 720.0),
    (UnaryOp::Log, 1, 0.0, f64::MAX),
    (UnaryOp::Tanh, 3, -25.0, 25.0),
    (UnaryOp::Sigmoid, 3, -750.0, 750.0),
];

/// Each inline function, its documented max ulp, and the range swept.
const UNARY: [(UnaryOp, u64, f32, f32); 8] = [
    (UnaryOp::Exp, 1, -110.0, 90.0),
    (UnaryOp::Expm1, 2, -20.0, 90.0),
    (UnaryOp::Log, 1, 0.0, f32::MAX),
    (UnaryOp::Tanh, 3, -12.0, 12.0),
    (UnaryOp::Sigmoid, 2, -110.0, 110.0),
    (UnaryOp::Erf, 1, -5.0, 5.0),
    (UnaryOp::Sin, 2, -4.0e6, 4.0e6),
    (UnaryOp::Cos, 2, -4.0e6, 4.0e6),
];
const POW_ULP: u64 = 1;
/// `1 ± tanh(u)` and GELU's tail as idioms: in f32 ulp over the whole sweep and for |u| ≤ 10;
/// in f64 ulp (GELU's tail 3, the sum alone 2).
const ONE_PLUS_TANH_ULP: u64 = 6;
const ONE_PLUS_TANH_NEAR_ULP: u64 = 4;
const ONE_PLUS_TANH_ULP_64: u64 = 3;
const CUBE_ULP: u64 = 1;

const SPECIALS: [f32; 9] = [
    0.0,
    -0.0,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    f32::MAX,
    -f32::MAX,
    1e30,
    -1e30,
];

/// Float bit patterns (`bits`, sign bit at `sign`) in order: −0 just below +0, each step
/// one ulp.
fn ordered_bits(bits: u64, sign: u32) -> i128 {
    let magnitude = i128::from(bits & ((1 << sign) - 1));
    if bits >> sign == 1 {
        -magnitude - 1
    } else {
        magnitude
    }
}

/// The bits whose [`ordered_bits`] place is `o`.
fn from_ordered_bits(o: i128, sign: u32) -> u64 {
    if o < 0 {
        (-(o + 1)) as u64 | 1 << sign
    } else {
        o as u64
    }
}

/// Distance in ulp between two ordered places (a sign error on zero counts one); NaN is only
/// near NaN.
fn ulp_apart(got: i128, want: i128, nans: (bool, bool)) -> u64 {
    match nans {
        (true, true) => 0,
        (false, false) => u64::try_from((got - want).unsigned_abs()).unwrap_or(u64::MAX),
        (true, false) | (false, true) => u64::MAX,
    }
}

fn ordered(x: f32) -> i64 {
    ordered_bits(u64::from(x.to_bits()), 31) as i64
}

fn from_ordered(o: i64) -> f32 {
    f32::from_bits(from_ordered_bits(i128::from(o), 31) as u32)
}

fn ulp(got: f32, want: f32) -> u64 {
    let (g, w) = (ordered(got), ordered(want));
    ulp_apart(g.into(), w.into(), (got.is_nan(), want.is_nan()))
}

/// About `n` f32 values evenly spaced in bit pattern from `lo` to `hi` (both included).
fn sweep(lo: f32, hi: f32, n: i64) -> Vec<f32> {
    let step = ((ordered(hi) - ordered(lo)) / n).max(1);
    every(lo, hi, step)
}

/// Every `step`-th f32 from `lo` to `hi`.
fn every(lo: f32, hi: f32, step: i64) -> Vec<f32> {
    (ordered(lo)..=ordered(hi))
        .step_by(step as usize)
        .map(from_ordered)
        .collect()
}

fn index(strides: &[isize]) -> Index {
    Index {
        strides: strides.to_vec(),
        offset: 0,
    }
}

/// `out = f(loads…)` over `n` f32 elements: one SIMD row (`[n]`, a scalar tail of `n % 4`) or
/// `n` rows of one element (`[n, 1]`, scalar code only).
fn kernel(n: usize, simd: bool, inputs: usize, op: Instr) -> Kernel {
    typed_kernel(DType::F32, n, simd, inputs, op)
}

/// [`kernel`] over elements of `dtype`.
fn typed_kernel(dtype: DType, n: usize, simd: bool, inputs: usize, op: Instr) -> Kernel {
    let (shape, strides) = if simd {
        (vec![n], vec![1])
    } else {
        (vec![n, 1], vec![1, 1])
    };
    let mut body: Vec<Instr> = (0..inputs)
        .map(|arg| Instr::Load {
            arg,
            index: index(&strides),
        })
        .collect();
    body.push(op);
    body.push(Instr::Store {
        arg: inputs,
        index: index(&strides),
        x: body.len() - 1,
    });
    let arg = |access| Arg {
        dtype,
        len: n,
        access,
    };
    let mut args: Vec<Arg> = (0..inputs).map(|_| arg(Access::Read)).collect();
    args.push(arg(Access::Write));
    Kernel {
        name: "math".into(),
        shape,
        reduce_axes: 0,
        args,
        body,
    }
}

/// Runs `op` over `inputs` compiled both ways; asserts they agree bit for bit.
fn run(inputs: &[Vec<f32>], op: Instr) -> Vec<f32> {
    let n = inputs[0].len();
    let bufs: Vec<Arc<HostBuffer>> = inputs
        .iter()
        .map(|v| Arc::new(HostBuffer::F32(v.clone().into())))
        .collect();
    let mut outs = vec![];
    for simd in [true, false] {
        let k = kernel(n, simd, inputs.len(), op.clone());
        if let Err(why) = crate::cpu::compiled(&k) {
            panic!("the cpu JIT refused {op:?}: {why}");
        }
        let Some(HostBuffer::F32(out)) = Target::Cpu.run_kernel(&k, bufs.clone()).pop() else {
            panic!("an f32 kernel returned another dtype")
        };
        outs.push(out);
    }
    let (vector, scalar) = (&outs[0], &outs[1]);
    if let Some(i) = (0..n).find(|&i| ulp(vector[i], scalar[i]) != 0) {
        panic!(
            "{op:?}: SIMD and scalar code disagree at {:?}: {} vs {}",
            inputs.iter().map(|v| v[i]).collect::<Vec<_>>(),
            vector[i],
            scalar[i]
        );
    }
    outs.swap_remove(0).to_vec()
}

/// The largest error over all inputs (with its position); special inputs must be exact.
fn worst(got: &[f32], want: &[f32], special: impl Fn(usize) -> bool) -> (u64, usize) {
    largest(
        got.len(),
        |i| ulp(got[i], want[i]),
        special,
        |i| format!("#{i}: got {:e}, the reference gives {:e}", got[i], want[i]),
    )
}

/// The largest `err(i)` over `0..n`, with its position; where `special(i)`, `err(i)` must be
/// 0 (`show(i)` describes the failure).
fn largest(
    n: usize,
    err: impl Fn(usize) -> u64,
    special: impl Fn(usize) -> bool,
    show: impl Fn(usize) -> String,
) -> (u64, usize) {
    let mut w = (0, 0);
    for i in 0..n {
        let e = err(i);
        assert!(!special(i) || e == 0, "special input {}", show(i));
        if e > w.0 {
            w = (e, i);
        }
    }
    w
}

#[test]
fn inline_unary_functions_stay_within_their_ulp_bounds() {
    for (op, bound, lo, hi) in UNARY {
        let step = std::env::var("SMELT_MATH_STEP")
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .filter(|s| *s > 0);
        let mut xs = match step {
            Some(step) => every(lo, hi, step),
            None => sweep(lo, hi, SWEEP),
        };
        let swept = xs.len();
        xs.extend(SPECIALS);
        let want: Vec<f32> = xs
            .iter()
            .map(|x| unary(op, Scalar::Float(f64::from(*x)), DType::F32).as_f64() as f32)
            .collect();
        let got = run(
            &[xs.clone()],
            Instr::Unary {
                op,
                x: 0,
                compute: DType::F32,
            },
        );
        let worst = worst(&got, &want, |i| i >= swept);
        within(
            &format!("{op:?}"),
            worst,
            bound,
            (lo, hi),
            (&xs, &got, &want),
        );
    }
}

/// Prints the largest error `(e, i)` of a sweep over `range` and asserts it is within `bound`.
fn within<T: std::fmt::LowerExp>(
    what: &str,
    (e, i): (u64, usize),
    bound: u64,
    (lo, hi): (T, T),
    (xs, got, want): (&[T], &[T], &[T]),
) {
    let swept = xs.len();
    eprintln!(
        "{what}: max {e} ulp over {swept} inputs in [{lo:e}, {hi:e}] (at {:e}: {:e} vs {:e})",
        xs[i], got[i], want[i]
    );
    assert!(
        e <= bound,
        "{what}({:e}) = {:e}, the reference gives {:e}: {e} ulp > {bound}",
        xs[i],
        got[i],
        want[i]
    );
}

#[test]
fn inline_pow_stays_within_its_ulp_bound() {
    // Exponents: small integers (odd and even), halves, thirds, large, tiny, specials.
    let mut ys: Vec<f32> = (-40..=40).map(|k| k as f32).collect();
    ys.extend((-20..20).map(|k| k as f32 + 0.5));
    ys.extend([
        1.0 / 3.0,
        -1.0 / 3.0,
        0.1,
        -0.1,
        1e-7,
        -1e-7,
        2.5e3,
        -2.5e3,
        1e6,
    ]);
    ys.extend([16_777_215.0, 16_777_216.0, -16_777_215.0, 1e30, -1e30]);
    ys.extend(SPECIALS);
    let per_y = (SWEEP / ys.len() as i64).max(64);
    let mut xs = sweep(-f32::MAX, f32::MAX, per_y);
    // Bases near 1 meet the largest exponents: the log must carry its low bits.
    xs.extend((1..200).map(|k| 1.0 + k as f32 * f32::EPSILON));
    xs.extend((1..200).map(|k| 1.0 - k as f32 * f32::EPSILON / 2.0));
    xs.extend(SPECIALS);
    let (mut a, mut b) = (vec![], vec![]);
    for y in &ys {
        a.extend(&xs);
        b.extend(std::iter::repeat_n(*y, xs.len()));
    }
    let want: Vec<f32> = a
        .iter()
        .zip(&b)
        .map(|(x, y)| {
            let (x, y) = (Scalar::Float(f64::from(*x)), Scalar::Float(f64::from(*y)));
            binary(BinaryOp::Pow, x, y, DType::F32).as_f64() as f32
        })
        .collect();
    let got = run(
        &[a.clone(), b.clone()],
        Instr::Binary {
            op: BinaryOp::Pow,
            a: 0,
            b: 1,
            compute: DType::F32,
        },
    );
    let is_special = |v: f32| SPECIALS.iter().any(|s| s.to_bits() == v.to_bits());
    let (e, i) = worst(&got, &want, |i| is_special(a[i]) && is_special(b[i]));
    eprintln!(
        "Pow: max {e} ulp over {} pairs (at pow({:e}, {:e}) = {:e} vs {:e})",
        a.len(),
        a[i],
        b[i],
        got[i],
        want[i]
    );
    assert!(e <= POW_ULP, "pow: {e} ulp > {POW_ULP}");
}

#[test]
fn constant_cube_stays_within_its_ulp_bound() {
    // `x.pow(3.0)` (gelu) is two f32 products rather than exp/log.
    let mut xs = sweep(-1e13, 1e13, SWEEP);
    xs.extend(SPECIALS);
    let want: Vec<f32> = xs.iter().map(|x| (f64::from(*x).powi(3)) as f32).collect();
    let n = xs.len();
    let k = |simd| {
        let mut k = kernel(
            n,
            simd,
            1,
            Instr::Const {
                value: Scalar::Float(3.0),
                dtype: DType::F32,
            },
        );
        k.body.insert(
            2,
            Instr::Binary {
                op: BinaryOp::Pow,
                a: 0,
                b: 1,
                compute: DType::F32,
            },
        );
        if let Instr::Store { x, .. } = &mut k.body[3] {
            *x = 2;
        }
        k
    };
    let input = Arc::new(HostBuffer::F32(xs.clone().into()));
    for simd in [true, false] {
        let Some(HostBuffer::F32(got)) =
            Target::Cpu.run_kernel(&k(simd), vec![input.clone()]).pop()
        else {
            panic!("an f32 kernel returned another dtype")
        };
        let (e, i) = worst(&got, &want, |i| i >= n - SPECIALS.len());
        eprintln!("x^3: max {e} ulp (at {:e})", xs[i]);
        assert!(e <= CUBE_ULP, "x^3 at {:e}: {e} ulp > {CUBE_ULP}", xs[i]);
    }
}

fn ordered_64(x: f64) -> i128 {
    ordered_bits(x.to_bits(), 63)
}

fn from_ordered_64(o: i128) -> f64 {
    f64::from_bits(from_ordered_bits(o, 63))
}

fn ulp_64(got: f64, want: f64) -> u64 {
    let (g, w) = (ordered_64(got), ordered_64(want));
    ulp_apart(g, w, (got.is_nan(), want.is_nan()))
}

#[test]
fn inline_f64_functions_stay_within_their_ulp_bounds() {
    let specials = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::MAX,
        -f64::MAX,
        1e300,
        -1e300,
    ];
    for (op, bound, lo, hi) in UNARY_64 {
        let (a, b) = (ordered_64(lo), ordered_64(hi));
        let step = ((b - a) / i128::from(SWEEP_64)).max(1);
        let mut xs: Vec<f64> = (0..=SWEEP_64)
            .map(|k| from_ordered_64((a + i128::from(k) * step).min(b)))
            .collect();
        xs.extend([1.0, -1.0, 0.5, f64::MIN_POSITIVE, 5e-324, 1e-300, -1e-300]);
        let swept = xs.len();
        xs.extend(specials);
        let n = xs.len();
        let want: Vec<f64> = xs
            .iter()
            .map(|x| unary(op, Scalar::Float(*x), DType::F64).as_f64())
            .collect();
        let op_instr = Instr::Unary {
            op,
            x: 0,
            compute: DType::F64,
        };
        assert!(
            smelt_codegen::cpu::is_inline_math(&op_instr),
            "{op:?} in f64 is inline"
        );
        let input = Arc::new(HostBuffer::F64(xs.clone().into()));
        let mut outs = vec![];
        for simd in [true, false] {
            let k = typed_kernel(DType::F64, n, simd, 1, op_instr.clone());
            let compiled = crate::cpu::compiled(&k)
                .unwrap_or_else(|why| panic!("the cpu JIT refused {op:?}: {why}"));
            assert!(compiled.simd || !simd, "{op:?}: an f64x2 loop expected");
            assert!(
                !compiled.clif.contains(" call "),
                "{op:?} in f64 calls no helper:\n{}",
                compiled.clif
            );
            let Some(HostBuffer::F64(out)) = Target::Cpu.run_kernel(&k, vec![input.clone()]).pop()
            else {
                panic!("an f64 kernel returned another dtype")
            };
            outs.push(out.to_vec());
        }
        let (got, scalar) = (&outs[0], &outs[1]);
        if let Some(i) = (0..n).find(|&i| ulp_64(got[i], scalar[i]) != 0) {
            panic!(
                "{op:?}: SIMD and scalar code disagree at {:e}: {:e} vs {:e}",
                xs[i], got[i], scalar[i]
            );
        }
        let w = largest(
            n,
            |i| ulp_64(got[i], want[i]),
            |i| i >= swept,
            |i| {
                format!(
                    "{op:?}({:e}) = {:e}, the reference gives {:e}",
                    xs[i], got[i], want[i]
                )
            },
        );
        within(
            &format!("{op:?} f64"),
            w,
            bound,
            (lo, hi),
            (&xs, got, &want),
        );
    }
}

/// `1 + tanh(u)` as the translator's idiom (`idioms.rs`): `tanh(u) + 1`, `1 + tanh(u)` and
/// `1 − tanh(u)` in f32 and f64, SIMD and scalar, against 2 / (1 + e^(∓2u)) in f64 libm
/// (exact enough for f32; itself within about 1.5 ulp in f64), answers below the normal range
/// flushed to 0 allowed. The op-by-op sum cancels:
/// 1 + tanh(−10) is 0 in f32 where the idiom gives 4.1e−9. GELU's tail, `(u · ½) · (1 ± tanh u)`,
/// is the second idiom, u / (1 + e^(∓2u)), against that in f64 libm; it may be 0 where
/// 1 ± tanh(u) is below the normal range (where the op-by-op product is 0 already).
#[test]
fn one_plus_tanh_idiom_stays_within_its_ulp_bound() {
    // (op, a, b, 1 − tanh, then times u · ½) over the body [x, tanh x, 1, op a b, store],
    // or [x, tanh x, 1, op a b, ½, x · ½, (x · ½) · sum, store].
    let forms = [
        (BinaryOp::Add, 1, 2, false, false),
        (BinaryOp::Add, 2, 1, false, false),
        (BinaryOp::Sub, 2, 1, true, false),
        (BinaryOp::Add, 1, 2, false, true),
        (BinaryOp::Sub, 2, 1, true, true),
    ];
    for dtype in [DType::F32, DType::F64] {
        let single = dtype == DType::F32;
        let mut xs: Vec<f64> = if single {
            sweep(-60.0, 60.0, SWEEP)
                .into_iter()
                .map(f64::from)
                .collect()
        } else {
            let (a, b) = (ordered_64(-400.0), ordered_64(400.0));
            let step = (b - a) / i128::from(SWEEP_64);
            (0..=SWEEP_64)
                .map(|k| from_ordered_64(a + i128::from(k) * step))
                .collect()
        };
        let swept = xs.len();
        xs.extend([
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e30,
            -1e30,
        ]);
        let n = xs.len();
        let input = Arc::new(if single {
            HostBuffer::F32(xs.iter().map(|x| *x as f32).collect::<Vec<_>>().into())
        } else {
            HostBuffer::F64(xs.clone().into())
        });
        for (op, a, b, minus, half) in forms {
            let opt: Vec<f64> = xs
                .iter()
                .map(|u| {
                    let y = if minus { 2.0 * u } else { -2.0 * u };
                    2.0 / (1.0 + y.exp())
                })
                .collect();
            let want: Vec<f64> = if half {
                xs.iter().zip(&opt).map(|(u, o)| u * 0.5 * o).collect()
            } else {
                opt.clone()
            };
            let mut outs = vec![];
            for simd in [true, false] {
                let mut k = typed_kernel(
                    dtype,
                    n,
                    simd,
                    1,
                    Instr::Const {
                        value: Scalar::Float(1.0),
                        dtype,
                    },
                );
                let tanh = Instr::Unary {
                    op: UnaryOp::Tanh,
                    x: 0,
                    compute: dtype,
                };
                k.body.insert(1, tanh);
                let sum = Instr::Binary {
                    op,
                    a,
                    b,
                    compute: dtype,
                };
                k.body.insert(3, sum);
                let mut out = 3;
                if half {
                    let half = Instr::Const {
                        value: Scalar::Float(0.5),
                        dtype,
                    };
                    let halved = Instr::Binary {
                        op: BinaryOp::Mul,
                        a: 0,
                        b: 4,
                        compute: dtype,
                    };
                    let product = Instr::Binary {
                        op: BinaryOp::Mul,
                        a: 5,
                        b: 3,
                        compute: dtype,
                    };
                    k.body.splice(4..4, [half, halved, product]);
                    out = 6;
                }
                if let Instr::Store { x, .. } = k.body.last_mut().expect("a store ends the body") {
                    *x = out;
                }
                let compiled = crate::cpu::compiled(&k)
                    .unwrap_or_else(|why| panic!("the cpu JIT refused 1 ± tanh: {why}"));
                assert!(
                    compiled.simd || !simd,
                    "1 ± tanh in {dtype}: a SIMD loop expected"
                );
                let out = Target::Cpu.run_kernel(&k, vec![input.clone()]).pop();
                outs.push(match out {
                    Some(HostBuffer::F32(v)) => v.iter().map(|x| f64::from(*x)).collect::<Vec<_>>(),
                    Some(HostBuffer::F64(v)) => v.to_vec(),
                    _ => panic!("a {dtype} kernel returned another dtype"),
                });
            }
            let (got, scalar) = (&outs[0], &outs[1]);
            let apart = |g: f64, w: f64| {
                if single {
                    ulp(g as f32, w as f32)
                } else {
                    ulp_64(g, w)
                }
            };
            if let Some(i) = (0..n).find(|&i| apart(got[i], scalar[i]) != 0) {
                panic!("1 ± tanh: SIMD and scalar code disagree at {:e}", xs[i]);
            }
            // Answers below the normal range (u < −43.9 in f32, −354 in f64) may flush to 0.
            let tiny = if single {
                f64::from(f32::MIN_POSITIVE)
            } else {
                f64::MIN_POSITIVE
            };
            let err = |i: usize| {
                // Where 1 ± tanh is below the normal range, GELU's tail may be 0 too.
                let flushed = opt[i] < tiny && got[i] == 0.0;
                if want[i].is_nan() || (want[i].abs() >= tiny && !flushed) {
                    return apart(got[i], want[i]);
                }
                assert!(
                    got[i].abs() < tiny,
                    "1 ± tanh({:e}) = {:e}, want {:e}",
                    xs[i],
                    got[i],
                    want[i]
                );
                0
            };
            let show = |i: usize| {
                format!(
                    "{op:?} 1, tanh({:e}) = {:e}, want {:e}",
                    xs[i], got[i], want[i]
                )
            };
            let what = if half {
                format!("u/2 times {op:?} of 1 and tanh in {dtype}")
            } else {
                format!("{op:?} of 1 and tanh in {dtype}")
            };
            let w = largest(n, err, |i| i >= swept, show);
            let range = (xs[0], xs[swept - 1]);
            let bound = if single {
                ONE_PLUS_TANH_ULP
            } else {
                ONE_PLUS_TANH_ULP_64
            };
            within(&what, w, bound, range, (&xs, got, &want));
            if single {
                // |u| ≤ 10, where the f32 reduction's error stays under half an ulp.
                let near = |i: usize| if xs[i].abs() <= 10.0 { err(i) } else { 0 };
                let w = largest(n, near, |i| i >= swept, show);
                let what = format!("{what}, |u| <= 10");
                let range = (-10.0, 10.0);
                within(&what, w, ONE_PLUS_TANH_NEAR_ULP, range, (&xs, got, &want));
            }
            // The op-by-op sum is 0 here; the idiom keeps the small answer.
            let at = xs
                .iter()
                .position(|x| *x == if minus { 10.0 } else { -10.0 });
            if let Some(i) = at {
                assert!(got[i] != 0.0, "{what} at ∓10 is {:e}", got[i]);
            }
        }
    }
}

/// softmax's `exp(a − max(a))` (the translator's idiom: `exp` without its upper clamp, as its
/// argument is at most 0 or NaN) gives the same bits as `exp` of the same differences with the
/// row max passed in, where nothing is known of the argument: rows of large negative
/// differences, denormal results, ±inf and NaN, SIMD and scalar tails.
#[test]
fn exp_of_a_minus_its_max_matches_exp_bit_for_bit() {
    let n = 1003;
    let mut rows: Vec<Vec<f32>> = vec![
        sweep(-110.0, 0.0, n as i64 - 1),
        sweep(-3.0, 3.0, n as i64 - 1),
        sweep(50.0, 89.0, n as i64 - 1),
    ];
    let mut special = sweep(-120.0, 10.0, n as i64 - 1);
    special[7] = f32::NEG_INFINITY;
    rows.push(special.clone());
    special[500] = f32::INFINITY;
    rows.push(special.clone());
    special[900] = f32::NAN;
    rows.push(special);
    for row in &mut rows {
        row.truncate(n);
        row.resize(n, -1.0);
    }
    let r = rows.len();
    let a: Vec<f32> = rows.concat();
    // The interpreter's max: NaN wins, else the largest.
    let max: Vec<f32> = rows
        .iter()
        .map(|row| {
            row.iter().fold(f32::NEG_INFINITY, |m, &x| {
                if m.is_nan() || x.is_nan() {
                    f32::NAN
                } else {
                    m.max(x)
                }
            })
        })
        .collect();
    let arg = |len: usize, access| Arg {
        dtype: DType::F32,
        len,
        access,
    };
    let exp = |x: usize| Instr::Unary {
        op: UnaryOp::Exp,
        x,
        compute: DType::F32,
    };
    let sub = |a: usize, b: usize| Instr::Binary {
        op: BinaryOp::Sub,
        a,
        b,
        compute: DType::F32,
    };
    let row = index(&[n as isize, 1]);
    // One kernel reduces the max itself; the other reads it, one value per row.
    let reduced = Kernel {
        name: "exp_minus_max".into(),
        shape: vec![r, n],
        reduce_axes: 1,
        args: vec![arg(r * n, Access::Read), arg(r * n, Access::Write)],
        body: vec![
            Instr::Load {
                arg: 0,
                index: row.clone(),
            },
            Instr::Reduce {
                op: ReduceOp::Max,
                x: 0,
            },
            sub(0, 1),
            exp(2),
            Instr::Store {
                arg: 1,
                index: row.clone(),
                x: 3,
            },
        ],
    };
    let given = Kernel {
        name: "exp_minus_given".into(),
        shape: vec![r, n],
        reduce_axes: 0,
        args: vec![
            arg(r * n, Access::Read),
            arg(r, Access::Read),
            arg(r * n, Access::Write),
        ],
        body: vec![
            Instr::Load {
                arg: 0,
                index: row.clone(),
            },
            Instr::Load {
                arg: 1,
                index: index(&[1, 0]),
            },
            sub(0, 1),
            exp(2),
            Instr::Store {
                arg: 2,
                index: row,
                x: 3,
            },
        ],
    };
    for k in [&reduced, &given] {
        let compiled = crate::cpu::compiled(k)
            .unwrap_or_else(|why| panic!("the cpu JIT refused {}: {why}", k.name));
        assert!(compiled.simd, "{}: a SIMD loop expected", k.name);
    }
    let a = Arc::new(HostBuffer::F32(a.into()));
    let m = Arc::new(HostBuffer::F32(max.into()));
    let got = Target::Cpu.run_kernel(&reduced, vec![a.clone()]).pop();
    let want = Target::Cpu.run_kernel(&given, vec![a, m]).pop();
    let (Some(HostBuffer::F32(got)), Some(HostBuffer::F32(want))) = (got, want) else {
        panic!("f32 kernels returned another dtype");
    };
    for (i, (g, w)) in got.iter().zip(want.iter()).enumerate() {
        assert!(
            g.to_bits() == w.to_bits(),
            "row {} element {}: exp(a - max) = {g:e}, with the max given {w:e}",
            i / n,
            i % n
        );
    }
}
