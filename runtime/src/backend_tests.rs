//! Every backend against the reference interpreter, written once (STYLE 12): hand-built kernels
//! for every dtype and instruction on random inputs (with NaN, ±inf, -0, zero divisors; finite
//! values only under reductions of more than a handful of elements, which specials would turn
//! into NaN on every backend), strided, broadcast and odd-length rows (SIMD tails), reductions
//! with several passes. Results must be identical, zeros down to their sign, except that the
//! f32/f16/bf16 transcendentals the cpu backend computes inline (`codegen/src/cpu/math.rs`,
//! accuracy in `math_tests.rs`) may be a few ulp off.

use crate::buffer::HostBuffer;
use crate::device::Target;
use half::{bf16, f16};
use smelt_ir::kernel::{Access, Arg, Index, Instr, Kernel};
use smelt_ir::{BinaryOp, DType, ReduceOp, Scalar, UnaryOp};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn scalar(&mut self, dtype: DType) -> Scalar {
        let r = self.next();
        if dtype.is_float() {
            let special = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.0, 1e30];
            if r.is_multiple_of(13) {
                return Scalar::Float(special[(r / 13 % 6) as usize]);
            }
            Scalar::Float(((r >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 8.0)
        } else if dtype == DType::Bool {
            Scalar::Bool(r.is_multiple_of(2))
        } else {
            Scalar::Int((r % 19) as i64 - 6 + if r.is_multiple_of(31) { 120 } else { 0 })
        }
    }

    /// [`Rng::scalar`] without the specials: a float in [−1, 1), so that a product of a few
    /// dozen of them (or of their distances to the row's maximum) stays finite in f16.
    fn finite_scalar(&mut self, dtype: DType) -> Scalar {
        if dtype.is_float() {
            Scalar::Float(((self.next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 2.0)
        } else {
            self.scalar(dtype)
        }
    }

    fn buffer(&mut self, dtype: DType, len: usize) -> Arc<HostBuffer> {
        let vals: Vec<Scalar> = (0..len).map(|_| self.scalar(dtype)).collect();
        Arc::new(HostBuffer::from_scalars(dtype, &vals))
    }

    /// [`Rng::buffer`] of finite values only.
    fn finite_buffer(&mut self, dtype: DType, len: usize) -> Arc<HostBuffer> {
        let vals: Vec<Scalar> = (0..len).map(|_| self.finite_scalar(dtype)).collect();
        Arc::new(HostBuffer::from_scalars(dtype, &vals))
    }

    /// Random inputs for `kernel`: with specials where its reductions cover a handful of
    /// elements at most ([`long_reduction`]), finite values where they cover more (about one
    /// value in 13 is special, so a longer reduction is NaN or infinite in nearly every row
    /// and NaN = NaN would compare nothing).
    fn inputs(&mut self, kernel: &Kernel) -> Vec<Arc<HostBuffer>> {
        let finite = long_reduction(kernel);
        kernel.args[..kernel.read_args()]
            .iter()
            .map(|a| {
                if finite {
                    self.finite_buffer(a.dtype, a.len)
                } else {
                    self.buffer(a.dtype, a.len)
                }
            })
            .collect()
    }
}

/// Elements a reduction may cover and still get inputs with specials (NaN, ±inf, 1e30): rows
/// of up to 12 keep about half their rows free of them.
const HANDFUL: usize = 12;

/// Whether `kernel` reduces over more than [`HANDFUL`] elements.
fn long_reduction(kernel: &Kernel) -> bool {
    let rank = kernel.shape.len();
    kernel.reduce_axes > 0
        && kernel.shape[rank - kernel.reduce_axes..]
            .iter()
            .product::<usize>()
            > HANDFUL
}

/// The ulp an inline transcendental may be off in `dtype`: the largest bound of `math.rs`
/// (3 ulp: tanh in f32, tanh and sigmoid in f64); f16/bf16 round that f32 once more, so at
/// most 1 ulp of their own.
fn inline_math_tolerance(dtype: DType) -> u64 {
    match dtype {
        DType::F32 | DType::F64 => 3,
        DType::F16 | DType::BF16 => 1,
        DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8 | DType::Bool => 0,
        DType::C64 | DType::C128 => panic!("{}", smelt_ir::REAL_KERNELS),
    }
}

/// Float bit patterns in order (−0 next to +0) for a sign bit at `sign`.
fn ordered(bits: u64, sign: u32) -> i128 {
    let magnitude = i128::from(bits & ((1u64 << sign) - 1));
    if bits >> sign & 1 == 1 {
        -magnitude - 1
    } else {
        magnitude
    }
}

/// How many ulp of `dtype` separate two values of a buffer of that dtype.
fn ulps_apart(x: Scalar, y: Scalar, dtype: DType) -> u128 {
    let (Scalar::Float(x), Scalar::Float(y)) = (x, y) else {
        return if x == y { 0 } else { u128::MAX };
    };
    if x.is_nan() || y.is_nan() {
        return if x.is_nan() && y.is_nan() {
            0
        } else {
            u128::MAX
        };
    }
    let (a, b) = match dtype {
        DType::F16 => (
            ordered(u64::from(f16::from_f64(x).to_bits()), 15),
            ordered(u64::from(f16::from_f64(y).to_bits()), 15),
        ),
        DType::BF16 => (
            ordered(u64::from(bf16::from_f64(x).to_bits()), 15),
            ordered(u64::from(bf16::from_f64(y).to_bits()), 15),
        ),
        DType::F32 => (
            ordered(u64::from((x as f32).to_bits()), 31),
            ordered(u64::from((y as f32).to_bits()), 31),
        ),
        DType::F64 | DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8 | DType::Bool => {
            (ordered(x.to_bits(), 63), ordered(y.to_bits(), 63))
        }
        DType::C64 | DType::C128 => panic!("{}", smelt_ir::REAL_KERNELS),
    };
    (a - b).unsigned_abs()
}

/// How zeros compare: by sign (a zero of the wrong sign is a wrong result, never rounding:
/// 1/x, atan2 and copysign tell them apart), or of either sign alike where the sign is
/// unspecified ([`zero_sign_unspecified`]).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Zeros {
    Signed,
    EitherSign,
}

/// Whether `kernel` picks between equal values, where the sign of a zero result is left to the
/// instruction: `max(−0, +0)` and a row max or min over both zeros. PyTorch does not define
/// it (its scalar loops return the first operand, its AVX2 `max_ps` the second), the
/// reference returns what Rust's `f64::max` does, the cpu backend's elementwise ops +0 for
/// max (IEEE 754-2019), its SIMD reductions whichever lane the vector instruction keeps.
fn zero_sign_unspecified(kernel: &Kernel) -> bool {
    kernel.body.iter().any(|i| {
        matches!(
            i,
            Instr::Binary {
                op: BinaryOp::Maximum | BinaryOp::Minimum,
                ..
            } | Instr::Reduce {
                op: ReduceOp::Max | ReduceOp::Min,
                ..
            }
        )
    })
}

/// The first element where `a` and `b` differ by more than `ulps` (exactly, for `ulps == 0`:
/// equal values or both NaN), a zero of the other sign differing too.
fn same(a: &HostBuffer, b: &HostBuffer, ulps: u64) -> Option<usize> {
    same_with(a, b, ulps, Zeros::Signed)
}

/// [`same`], with zeros compared as `zeros` says.
fn same_with(a: &HostBuffer, b: &HostBuffer, ulps: u64, zeros: Zeros) -> Option<usize> {
    if a.len() != b.len() || a.dtype() != b.dtype() {
        return Some(0);
    }
    (0..a.len()).find(|&i| {
        let (x, y) = (a.get(i), b.get(i));
        if let (Scalar::Float(x), Scalar::Float(y)) = (x, y)
            && x == 0.0
            && y == 0.0
        {
            return zeros == Zeros::Signed && x.is_sign_negative() != y.is_sign_negative();
        }
        match (x, y) {
            (Scalar::Float(x), Scalar::Float(y)) if ulps == 0 => {
                !(x == y || x.is_nan() && y.is_nan())
            }
            _ => ulps_apart(x, y, a.dtype()) > u128::from(ulps),
        }
    })
}

/// Runs `kernel` on every backend with the same random inputs and compares with the reference.
fn check(kernel: &Kernel, seed: u64) {
    check_within(kernel, seed, 0);
}

/// [`check`], allowing `slack` ulps beyond the inline-math tolerance (a float result whose
/// additions are grouped differently). `SMELT_FUZZ_SEEDS=n` runs each kernel on `n` seeds
/// derived from `seed` instead of one, for a longer soak.
fn check_within(kernel: &Kernel, seed: u64, slack: u64) {
    let extra: u64 = std::env::var("SMELT_FUZZ_SEEDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    for i in 0..extra.max(1) {
        check_seed(kernel, seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15), slack);
    }
}

/// [`check_within`] on one seed's inputs.
fn check_seed(kernel: &Kernel, seed: u64, slack: u64) {
    check_inputs(kernel, Rng(seed | 1).inputs(kernel), seed, slack);
}

/// [`check_within`] on the given inputs (`seed` only names them in a failure).
fn check_inputs(kernel: &Kernel, inputs: Vec<Arc<HostBuffer>>, seed: u64, slack: u64) {
    if let Err(why) = crate::cpu::compiled(kernel) {
        panic!("the cpu JIT refused a kernel: {why}\n{kernel}");
    }
    let want = Target::Reference.run_kernel(kernel, inputs.clone());
    if long_reduction(kernel) {
        assert_compares_something(kernel, &want);
    }
    let out = kernel.args.last().expect("kernels write an output").dtype;
    let ulps = if kernel.body.iter().any(smelt_codegen::cpu::is_inline_math) {
        inline_math_tolerance(out)
    } else {
        0
    } + slack;
    let zeros = if zero_sign_unspecified(kernel) {
        Zeros::EitherSign
    } else {
        Zeros::Signed
    };
    for backend in Target::available() {
        let got = backend.run_kernel(kernel, inputs.clone());
        assert_eq!(
            got.len(),
            want.len(),
            "{}: one buffer per output",
            backend.name()
        );
        for (o, (got, want)) in got.iter().zip(&want).enumerate() {
            if let Some(i) = same_with(got, want, ulps, zeros) {
                panic!(
                    "{} differs from reference in output {o} at {i} (seed {seed}): {} vs {}\n{kernel}",
                    backend.name(),
                    got.get(i),
                    want.get(i)
                );
            }
        }
    }
}

/// Panics unless every float output of `kernel` that the reference computed from finite inputs
/// holds a finite value: an output of NaNs and infinities only equals any other such output.
fn assert_compares_something(kernel: &Kernel, want: &[HostBuffer]) {
    for (o, b) in want.iter().enumerate() {
        let finite = (0..b.len()).any(|i| b.get(i).as_f64().is_finite());
        assert!(
            finite || b.len() == 0 || !b.dtype().is_float(),
            "output {o} of the reference holds no finite value: this comparison cannot fail\n{kernel}"
        );
    }
}

fn index(strides: &[isize]) -> Index {
    Index {
        strides: strides.to_vec(),
        offset: 0,
    }
}

fn arg(dtype: DType, len: usize, access: Access) -> Arg {
    Arg { dtype, len, access }
}

const ROWS: usize = 3;
const COLS: usize = 37;

/// `out[i,j] = op(a[i,j], b[j])` (b broadcast over rows), or unary `op(a[j,i] read transposed)`.
fn elementwise(dtype: DType, out: DType, body: Vec<Instr>) -> Kernel {
    elementwise_of([dtype, dtype], out, body)
}

/// [`elementwise`] with inputs `a` (`[ROWS, COLS]`) and `b` (`[COLS]`) of their own dtypes.
fn elementwise_of([a, b]: [DType; 2], out: DType, body: Vec<Instr>) -> Kernel {
    let n = ROWS * COLS;
    Kernel {
        name: "test".into(),
        shape: vec![ROWS, COLS],
        reduce_axes: 0,
        args: vec![
            arg(a, n, Access::Read),
            arg(b, COLS, Access::Read),
            arg(out, n, Access::Write),
        ],
        body,
    }
}

/// `out[i,j] = op(a[i,j])`, computed in `dtype`.
fn unary_kernel(dtype: DType, op: UnaryOp) -> Kernel {
    let full = index(&[COLS as isize, 1]);
    let body = vec![
        Instr::Load {
            arg: 0,
            index: full.clone(),
        },
        Instr::Unary {
            op,
            x: 0,
            compute: dtype,
        },
        Instr::Store {
            arg: 2,
            index: full,
            x: 1,
        },
    ];
    elementwise(dtype, op.result_dtype(dtype), body)
}

/// `out[i,j] = op(a[i,j], b[j])`, computed in `dtype`.
fn binary_kernel(dtype: DType, op: BinaryOp) -> Kernel {
    let full = index(&[COLS as isize, 1]);
    let operation = [
        Instr::Binary {
            op,
            a: 0,
            b: 1,
            compute: dtype,
        },
        Instr::Store {
            arg: 2,
            index: full,
            x: 2,
        },
    ];
    let body = [a_and_b().as_slice(), &operation].concat();
    elementwise(dtype, op.result_dtype(dtype), body)
}

#[test]
fn every_unary_op_matches_reference_for_every_dtype() {
    for dtype in DType::REAL {
        for &op in UnaryOp::ALL {
            check(&unary_kernel(dtype, op), 7 + op as u64);
        }
    }
}

#[test]
fn every_binary_op_matches_reference_for_every_dtype() {
    for dtype in DType::REAL {
        for &op in BinaryOp::ALL {
            if op == BinaryOp::Atan2 && !dtype.is_float() {
                continue; // the frontend promotes atan2 to a float first
            }
            check(&binary_kernel(dtype, op), 11 + op as u64);
        }
    }
}

/// The unary and binary kernels above of `dtype` whose results are `dtype`, or bool for the
/// compares, named by their op.
fn vector_dtype_kernels(dtype: DType) -> Vec<(String, Kernel)> {
    let unary = UnaryOp::ALL
        .iter()
        .copied()
        .filter(|op| op.result_dtype(dtype) == dtype)
        .map(|op| (format!("{op:?}"), unary_kernel(dtype, op)));
    let binary = BinaryOp::ALL
        .iter()
        .copied()
        .filter(|&op| dtype.is_float() || op != BinaryOp::Atan2)
        .map(|op| (format!("{op:?}"), binary_kernel(dtype, op)));
    unary.chain(binary).collect()
}

/// Loads of `a` (argument 0, per element) and `b` (argument 1, per column) at values 0 and 1.
fn a_and_b() -> [Instr; 2] {
    [
        Instr::Load {
            arg: 0,
            index: index(&[COLS as isize, 1]),
        },
        Instr::Load {
            arg: 1,
            index: index(&[0, 1]),
        },
    ]
}

/// `out = (a < b) as dtype` and `out2 = a as bool`.
fn bool_casts(dtype: DType) -> Kernel {
    let n = ROWS * COLS;
    let full = [COLS as isize, 1];
    Kernel {
        name: "test".into(),
        shape: vec![ROWS, COLS],
        reduce_axes: 0,
        args: vec![
            arg(dtype, n, Access::Read),
            arg(dtype, COLS, Access::Read),
            arg(dtype, n, Access::Write),
            arg(DType::Bool, n, Access::Write),
        ],
        body: [
            a_and_b().as_slice(),
            &[
                Instr::Binary {
                    op: BinaryOp::Lt,
                    a: 0,
                    b: 1,
                    compute: dtype,
                },
                Instr::Cast { x: 2, to: dtype },
                Instr::Store {
                    arg: 2,
                    index: index(&full),
                    x: 3,
                },
                Instr::Cast {
                    x: 0,
                    to: DType::Bool,
                },
                Instr::Store {
                    arg: 3,
                    index: index(&full),
                    x: 5,
                },
            ],
        ]
        .concat(),
    }
}

/// `out = where(m, a, b)` and `out2 = !m | (a < b)` for a bool input `m` read with
/// `m_strides` (one bool per element or one per column).
fn masked(dtype: DType, m_strides: [isize; 2]) -> Kernel {
    let n = ROWS * COLS;
    let m_len = if m_strides[0] == 0 { COLS } else { n };
    let full = [COLS as isize, 1];
    Kernel {
        name: "test".into(),
        shape: vec![ROWS, COLS],
        reduce_axes: 0,
        args: vec![
            arg(dtype, n, Access::Read),
            arg(dtype, COLS, Access::Read),
            arg(DType::Bool, m_len, Access::Read),
            arg(dtype, n, Access::Write),
            arg(DType::Bool, n, Access::Write),
        ],
        body: [
            a_and_b().as_slice(),
            &[
                Instr::Load {
                    arg: 2,
                    index: index(&m_strides),
                },
                Instr::Where {
                    cond: 2,
                    a: 0,
                    b: 1,
                },
                Instr::Store {
                    arg: 3,
                    index: index(&full),
                    x: 3,
                },
                Instr::Unary {
                    op: UnaryOp::LogicalNot,
                    x: 2,
                    compute: DType::Bool,
                },
                Instr::Binary {
                    op: BinaryOp::Lt,
                    a: 0,
                    b: 1,
                    compute: dtype,
                },
                Instr::Binary {
                    op: BinaryOp::LogicalOr,
                    a: 5,
                    b: 6,
                    compute: DType::Bool,
                },
                Instr::Store {
                    arg: 4,
                    index: index(&full),
                    x: 7,
                },
            ],
        ]
        .concat(),
    }
}

/// f32, f64, i32 and i64 elementwise kernels run their innermost loop in f32x4, f64x2,
/// i32x4 and i64x2 (f16 and bf16 in f32x4), but for i64 products (the tests above check their values with a tail of one to three
/// elements); compares, selects and logical ops run on lane masks, and bools are loaded
/// (per element or broadcast) and stored as bytes.
#[test]
fn elementwise_kernels_of_every_vector_dtype_compile_to_simd() {
    for dtype in [
        DType::F32,
        DType::F64,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
    ] {
        let mut kernels = vector_dtype_kernels(dtype);
        let body = [
            a_and_b().as_slice(),
            &[
                Instr::Binary {
                    op: BinaryOp::Lt,
                    a: 0,
                    b: 1,
                    compute: dtype,
                },
                Instr::Where {
                    cond: 2,
                    a: 1,
                    b: 0,
                },
                Instr::Store {
                    arg: 2,
                    index: index(&[COLS as isize, 1]),
                    x: 3,
                },
            ],
        ]
        .concat();
        kernels.push(("where(a < b, b, a)".into(), elementwise(dtype, dtype, body)));
        kernels.push(("casts to and from bool".into(), bool_casts(dtype)));
        for m_strides in [[COLS as isize, 1], [0, 1]] {
            kernels.push((
                format!("where and not over bools {m_strides:?}"),
                masked(dtype, m_strides),
            ));
        }
        for (name, k) in kernels {
            let compiled = crate::cpu::compiled(&k).expect("the cpu JIT compiles it");
            // i64 products stay scalar on purpose (slower as i64x2 on Intel cores).
            let scalar_product = dtype == DType::I64 && (name == "Mul" || name == "Square");
            assert_eq!(
                compiled.simd, !scalar_product,
                "{dtype:?} {name}: SIMD form expected: {}",
                !scalar_product
            );
            // Contiguous loads prefetch ahead in the SIMD loop (past the buffers' ends here:
            // a prefetch never faults), where the host's tuning prefetches at all (not on AMD
            // CPUs).
            if name == "where(a < b, b, a)" {
                let per_input = usize::from(smelt_codegen::cpu::host::tuning().prefetch_ahead > 0);
                assert_eq!(
                    compiled.prefetches,
                    2 * per_input,
                    "{dtype:?} {name}: one per input, or none"
                );
            }
            check(&k, 5);
        }
    }
}

/// The raw bits of every element of a float buffer (NaN payloads included).
pub(crate) fn float_bits(b: &HostBuffer) -> Vec<u64> {
    match b {
        HostBuffer::F16(m) => m.iter().map(|x| u64::from(x.to_bits())).collect(),
        HostBuffer::BF16(m) => m.iter().map(|x| u64::from(x.to_bits())).collect(),
        HostBuffer::F32(m) => m.iter().map(|x| u64::from(x.to_bits())).collect(),
        HostBuffer::F64(m) => m.iter().map(|x| x.to_bits()).collect(),
        HostBuffer::Bool(_)
        | HostBuffer::U8(_)
        | HostBuffer::I8(_)
        | HostBuffer::I16(_)
        | HostBuffer::I32(_)
        | HostBuffer::I64(_) => panic!("float_bits of a {:?} buffer", b.dtype()),
    }
}

/// f32 inputs that probe rounding to `to` (f16 or bf16): for every finite value of `to`, it,
/// the midpoint to the next one (a tie) and the f32 values either side of that midpoint, of
/// both signs; f32 subnormals, infinities, quiet and signalling NaNs with payloads, and values
/// past `to`'s largest finite one.
fn rounding_probes(to: DType) -> Vec<f32> {
    let next_up = |x: f32| f32::from_bits(x.to_bits() + 1);
    let mut out = vec![];
    for h in 0..0x7c00u16.max(if to == DType::BF16 { 0x7f80 } else { 0 }) {
        let (x, next) = if to == DType::F16 {
            (f16::from_bits(h).to_f32(), f16::from_bits(h + 1).to_f32())
        } else {
            (bf16::from_bits(h).to_f32(), bf16::from_bits(h + 1).to_f32())
        };
        let mid = x + (next - x) / 2.0;
        for v in [x, mid, next_up(mid), f32::from_bits(mid.to_bits() - 1)] {
            out.extend([v, -v]);
        }
    }
    let specials = [
        f32::INFINITY,
        f32::MAX,
        65504.0,
        65519.99,
        65520.0,
        65536.0,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::from_bits(0x007f_ffff),
        f32::from_bits(0x7fc0_0000),
        f32::from_bits(0x7f80_0001),
        f32::from_bits(0x7fa0_2001),
        f32::from_bits(0x7fff_ffff),
    ];
    out.extend(specials.iter().flat_map(|&v| [v, -v]));
    // The length is a multiple of 4 plus 3: the SIMD loops end in a tail.
    while out.len() % 4 != 3 {
        out.push(1.0);
    }
    out
}

/// `out = cast(cast(x, via), out)` over `x`, read and written contiguously (SIMD) or, with
/// `transposed`, both as the transpose of a [rows, 3] layout (scalar code).
fn cast_kernel(from: DType, via: DType, to: DType, len: usize, transposed: bool) -> Kernel {
    let (shape, strides) = if transposed {
        (vec![3, len / 3], vec![1, 3])
    } else {
        (vec![1, len], vec![len as isize, 1])
    };
    Kernel {
        name: "casts".into(),
        shape,
        reduce_axes: 0,
        args: vec![arg(from, len, Access::Read), arg(to, len, Access::Write)],
        body: vec![
            Instr::Load {
                arg: 0,
                index: index(&strides),
            },
            Instr::Cast { x: 0, to: via },
            Instr::Cast { x: 1, to },
            Instr::Store {
                arg: 1,
                index: index(&strides),
                x: 2,
            },
        ],
    }
}

/// f16 and bf16 go to and from f32 by bit operations in compiled code (scalar and SIMD);
/// every result must have the reference's bits (`half`'s conversions), NaN payloads included:
/// every f16 and bf16 widened, f32 values around every rounding boundary narrowed, and the
/// rounding an f16/bf16 op applies to its f32 result (a cast there and back to f32).
#[test]
fn f16_and_bf16_conversions_match_the_reference_bit_for_bit() {
    // Every pattern but 0xffff (a NaN): 65535 values, a multiple of 3 with a SIMD tail.
    let all_bits = |half: DType| {
        use crate::memory::Memory;
        if half == DType::F16 {
            HostBuffer::F16(Memory::from_slice(
                &(0..u16::MAX).map(f16::from_bits).collect::<Vec<_>>(),
            ))
        } else {
            HostBuffer::BF16(Memory::from_slice(
                &(0..u16::MAX).map(bf16::from_bits).collect::<Vec<_>>(),
            ))
        }
    };
    let mut cases = vec![];
    for half in [DType::F16, DType::BF16] {
        cases.push((all_bits(half), DType::F32, DType::F32));
        cases.push((all_bits(half), half, half));
        let mut probes = rounding_probes(half);
        while !probes.len().is_multiple_of(3) {
            probes.push(2.0);
        }
        let probes = HostBuffer::F32(crate::memory::Memory::from_slice(&probes));
        cases.push((probes.clone(), half, half));
        cases.push((probes, half, DType::F32));
    }
    for (input, via, out) in cases {
        let from = input.dtype();
        for transposed in [false, true] {
            let k = cast_kernel(from, via, out, input.len(), transposed);
            let simd = crate::cpu::compiled(&k)
                .expect("the cpu JIT compiles it")
                .simd;
            assert_eq!(
                simd, !transposed,
                "{from:?} -> {via:?} -> {out:?}: SIMD form"
            );
            let inputs = vec![Arc::new(input.clone())];
            let want = float_bits(&Target::Reference.run_kernel(&k, inputs.clone())[0]);
            let got = float_bits(&Target::Cpu.run_kernel(&k, inputs)[0]);
            if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
                panic!(
                    "{from:?} -> {via:?} -> {out:?} (transposed: {transposed}) at {i}: input {}, bits {:#x} vs reference {:#x}",
                    input.get(i),
                    got[i],
                    want[i]
                );
            }
        }
    }
}

/// bf16 arithmetic straight on loaded values, whose loads widen without quieting a NaN (the
/// arithmetic quiets it: `quieted_by_use` in the cpu codegen): every bf16 pattern as `a`
/// against normals, infinities and zeros as `b`, and signaling and quiet NaNs of both signs
/// where `a` is not a NaN, in both operand orders, `+`, `-`, `*` and `/`, bit for bit with the
/// reference. (Which payload wins when both operands are NaNs is the compiler's choice of
/// operand order, in the reference too: not compared.)
#[test]
fn bf16_arithmetic_on_loads_quiets_nans_as_the_reference() {
    use crate::memory::Memory;
    let n = u16::MAX as usize;
    let a = HostBuffer::BF16(Memory::from_slice(
        &(0..u16::MAX).map(bf16::from_bits).collect::<Vec<_>>(),
    ));
    let numbers = [0x3f80u16, 0xc2f7, 0x7f80, 0xff80, 0x0000, 0x8001, 0x7f7f];
    let nans = [0x7f81u16, 0x7fc1, 0xffa0, 0xff85];
    let b = HostBuffer::BF16(Memory::from_slice(
        &(0..n)
            .map(|i| {
                let a_is_nan = i & 0x7fff > 0x7f80;
                bf16::from_bits(match (i % 3, a_is_nan) {
                    (0, false) => nans[i / 3 % nans.len()],
                    _ => numbers[i % numbers.len()],
                })
            })
            .collect::<Vec<_>>(),
    ));
    let inputs = vec![Arc::new(a), Arc::new(b)];
    for op in [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div] {
        for (first, second) in [(0, 1), (1, 0)] {
            let k = Kernel {
                name: "test".into(),
                shape: vec![n],
                reduce_axes: 0,
                args: vec![
                    arg(DType::BF16, n, Access::Read),
                    arg(DType::BF16, n, Access::Read),
                    arg(DType::BF16, n, Access::Write),
                ],
                body: vec![
                    Instr::Load {
                        arg: 0,
                        index: index(&[1]),
                    },
                    Instr::Load {
                        arg: 1,
                        index: index(&[1]),
                    },
                    Instr::Binary {
                        op,
                        a: first,
                        b: second,
                        compute: DType::BF16,
                    },
                    Instr::Store {
                        arg: 2,
                        index: index(&[1]),
                        x: 2,
                    },
                ],
            };
            let want = float_bits(&Target::Reference.run_kernel(&k, inputs.clone())[0]);
            let got = float_bits(&Target::Cpu.run_kernel(&k, inputs.clone())[0]);
            if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
                panic!(
                    "{op:?} ({first}, {second}) at {i}: {:#x} vs reference {:#x}",
                    got[i], want[i]
                );
            }
        }
    }
}

/// bf16 loads read only through a widening to f32 that a row sum and a subtraction read
/// (layernorm's `x.float()`, its mean and its centring), which also widen without quieting
/// (`quieted_by_use`): rows of normals with one signaling or quiet NaN of either sign, or none,
/// in every position class of a SIMD trip; the sums (stored f32) and the centred values
/// (rounded back to bf16) bit for bit with the reference; and with the widened values stored
/// too, which keeps the load's quieting.
#[test]
fn bf16_widened_for_sums_quiets_nans_as_the_reference() {
    use crate::memory::Memory;
    let (rows, cols) = (40usize, 37usize);
    let nans = [0x7f81u16, 0x7fc1, 0xffa0, 0xff85, 0x3f80];
    let values: Vec<bf16> = (0..rows * cols)
        .map(|i| {
            let (r, c) = (i / cols, i % cols);
            bf16::from_bits(if c == r % cols {
                nans[r % nans.len()]
            } else {
                0x3f80 + (i % 7) as u16
            })
        })
        .collect();
    let inputs = vec![Arc::new(HostBuffer::BF16(Memory::from_slice(&values)))];
    let full = index(&[cols as isize, 1]);
    let k = Kernel {
        name: "test".into(),
        shape: vec![rows, cols],
        reduce_axes: 1,
        args: vec![
            arg(DType::BF16, rows * cols, Access::Read),
            arg(DType::F32, rows, Access::Write),
            arg(DType::BF16, rows * cols, Access::Write),
        ],
        body: vec![
            Instr::Load {
                arg: 0,
                index: full.clone(),
            },
            Instr::Cast {
                x: 0,
                to: DType::F32,
            },
            Instr::Reduce {
                op: ReduceOp::Sum,
                x: 1,
            },
            Instr::Store {
                arg: 1,
                index: index(&[1, 0]),
                x: 2,
            },
            Instr::Binary {
                op: BinaryOp::Sub,
                a: 1,
                b: 2,
                compute: DType::F32,
            },
            Instr::Cast {
                x: 4,
                to: DType::BF16,
            },
            Instr::Store {
                arg: 2,
                index: full,
                x: 5,
            },
        ],
    };
    // The same, the widened value also stored: that load keeps its quieting select.
    let mut stored = k.clone();
    stored
        .args
        .push(arg(DType::F32, rows * cols, Access::Write));
    stored.body.push(Instr::Store {
        arg: 3,
        index: index(&[cols as isize, 1]),
        x: 1,
    });
    for k in [k, stored] {
        check_bits(&k, &inputs);
    }
}

/// Runs `k` on the cpu backend and the reference; panics at the first output element whose bits
/// differ.
fn check_bits(k: &Kernel, inputs: &[Arc<HostBuffer>]) {
    let want = Target::Reference.run_kernel(k, inputs.to_vec());
    let got = Target::Cpu.run_kernel(k, inputs.to_vec());
    for (out, (g, w)) in got.iter().zip(&want).enumerate() {
        let (g, w) = (float_bits(g), float_bits(w));
        if let Some(i) = (0..g.len()).find(|&i| g[i] != w[i]) {
            panic!("output {out} at {i}: {:#x} vs reference {:#x}", g[i], w[i]);
        }
    }
}

/// `out = where(a != 0, cast(a, to) + b, b)` with `a` of `from` read contiguously and `b` of
/// `to` broadcast along the rows: a kernel of two register dtypes, and a mask of `from`'s lane
/// width selecting `to` values.
fn mixed_kernel(from: DType, to: DType) -> Kernel {
    let full = index(&[COLS as isize, 1]);
    let mut body = vec![
        Instr::Load {
            arg: 0,
            index: full.clone(),
        },
        Instr::Load {
            arg: 1,
            index: index(&[0, 1]),
        },
        Instr::Cast { x: 0, to },
        Instr::Binary {
            op: BinaryOp::Add,
            a: 2,
            b: 1,
            compute: to,
        },
        Instr::Const {
            value: Scalar::Int(0),
            dtype: from,
        },
        Instr::Binary {
            op: BinaryOp::Ne,
            a: 0,
            b: 4,
            compute: from,
        },
    ];
    body.push(if to == DType::Bool {
        // Bool values are selected as masks only within one kernel dtype: combine instead.
        Instr::Binary {
            op: BinaryOp::LogicalAnd,
            a: 5,
            b: 3,
            compute: DType::Bool,
        }
    } else {
        Instr::Where {
            cond: 5,
            a: 3,
            b: 1,
        }
    });
    body.push(Instr::Store {
        arg: 2,
        index: full,
        x: 6,
    });
    elementwise_of([from, to], to, body)
}

/// Elementwise kernels mixing f16, bf16, f32, f64, i32, i64 and bool run in SIMD (four
/// elements a step when every dtype is 32 bits wide, else two, f32 and i32 in the low half of
/// their vectors) with the reference's bits: every cast between those dtypes but float to
/// integer (which stays scalar), masks of one width selecting values of another, contiguous
/// loads and stores of 8 bytes (or 4 for f16 and bf16) per step, and a tail of one element.
#[test]
fn mixed_dtype_elementwise_kernels_run_in_simd() {
    let dtypes = [
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::I32,
        DType::I64,
        DType::Bool,
    ];
    for from in dtypes {
        for to in dtypes {
            if from == to {
                continue;
            }
            let k = mixed_kernel(from, to);
            let simd = crate::cpu::compiled(&k)
                .expect("the cpu JIT compiles it")
                .simd;
            let float_to_int = from.is_float() && !to.is_float() && to != DType::Bool;
            assert_eq!(simd, !float_to_int, "{from:?} -> {to:?}: SIMD form");
            for seed in 0..4 {
                check(&k, 11 + seed);
            }
        }
    }
}

#[test]
fn every_cast_and_where_matches_reference() {
    for from in DType::REAL {
        for to in DType::REAL {
            let k = elementwise(
                from,
                to,
                vec![
                    Instr::Load {
                        arg: 0,
                        // Transposed-ish strided read: column-major over a [COLS, ROWS] buffer.
                        index: index(&[1, ROWS as isize]),
                    },
                    Instr::Cast { x: 0, to },
                    Instr::Load {
                        arg: 1,
                        index: index(&[0, 1]),
                    },
                    Instr::Cast {
                        x: 2,
                        to: DType::Bool,
                    },
                    Instr::Const {
                        value: Scalar::Float(2.5),
                        dtype: to,
                    },
                    Instr::Where {
                        cond: 3,
                        a: 1,
                        b: 4,
                    },
                    Instr::Store {
                        arg: 2,
                        index: index(&[COLS as isize, 1]),
                        x: 5,
                    },
                ],
            );
            check(&k, 3);
        }
    }
}

#[test]
fn float_pow_with_constant_exponents_matches_reference() {
    for dtype in [DType::F32, DType::F64, DType::F16] {
        for e in [1.0, 2.0, 3.0, 0.5] {
            let k = elementwise(
                dtype,
                dtype,
                vec![
                    Instr::Load {
                        arg: 0,
                        index: index(&[COLS as isize, 1]),
                    },
                    Instr::Const {
                        value: Scalar::Float(e),
                        dtype,
                    },
                    Instr::Binary {
                        op: BinaryOp::Pow,
                        a: 0,
                        b: 1,
                        compute: dtype,
                    },
                    Instr::Store {
                        arg: 2,
                        index: index(&[COLS as isize, 1]),
                        x: 2,
                    },
                ],
            );
            // Several seeds: an f64 square near a rounding midpoint, where libm's pow and
            // `x * x` differ, turns up in about one element of a thousand.
            for seed in 5..12 {
                check(&k, seed);
            }
        }
    }
}

#[test]
fn pow_by_two_is_the_square_on_every_backend() {
    // x² lies 0.4993 ulp from the f64 below it: `x * x` (PyTorch's pow by 2) rounds down,
    // glibc's pow rounds up.
    let x = f64::from_bits(0x4009_31c4_56eb_5b66);
    let k = Kernel {
        name: "test".into(),
        shape: vec![1],
        reduce_axes: 0,
        args: vec![
            arg(DType::F64, 1, Access::Read),
            arg(DType::F64, 1, Access::Write),
        ],
        body: vec![
            Instr::Load {
                arg: 0,
                index: index(&[1]),
            },
            Instr::Const {
                value: Scalar::Float(2.0),
                dtype: DType::F64,
            },
            Instr::Binary {
                op: BinaryOp::Pow,
                a: 0,
                b: 1,
                compute: DType::F64,
            },
            Instr::Store {
                arg: 1,
                index: index(&[1]),
                x: 2,
            },
        ],
    };
    let input = vec![Arc::new(HostBuffer::from_scalars(
        DType::F64,
        &[Scalar::Float(x)],
    ))];
    for backend in Target::available() {
        let got = backend.run_kernel(&k, input.clone())[0].get(0).as_f64();
        assert_eq!(got.to_bits(), (x * x).to_bits(), "{}", backend.name());
    }
}

/// A softmax-shaped kernel: reduce, use the row value element-wise, reduce again, store rows.
fn multi_pass(dtype: DType, first: ReduceOp, second: ReduceOp, cols: usize) -> Kernel {
    let n = ROWS * cols;
    Kernel {
        name: "test".into(),
        shape: vec![ROWS, cols],
        reduce_axes: 1,
        args: vec![arg(dtype, n, Access::Read), arg(dtype, n, Access::Write)],
        body: vec![
            Instr::Load {
                arg: 0,
                index: index(&[cols as isize, 1]),
            },
            Instr::Reduce { op: first, x: 0 },
            Instr::Binary {
                op: BinaryOp::Sub,
                a: 0,
                b: 1,
                compute: dtype,
            },
            Instr::Reduce { op: second, x: 2 },
            Instr::Binary {
                op: BinaryOp::Add,
                a: 2,
                b: 3,
                compute: dtype,
            },
            Instr::Store {
                arg: 1,
                index: index(&[cols as isize, 1]),
                x: 4,
            },
        ],
    }
}

#[test]
fn reductions_match_reference_for_every_dtype_and_op() {
    let ops = [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::All,
        ReduceOp::Any,
    ];
    for dtype in DType::REAL {
        for first in ops {
            // Empty, scalar-only, one vector, two-vector trips plus one vector, and a tail.
            for cols in [0, 1, 4, 12, 33] {
                check(&multi_pass(dtype, first, ReduceOp::Sum, cols), 17);
                check(&multi_pass(dtype, ReduceOp::Max, first, cols), 19);
            }
            // Sums, maxima and minima of f32, f16 and bf16 rows run their passes in f32x4.
            let f32_lanes = matches!(dtype, DType::F32 | DType::F16 | DType::BF16);
            if f32_lanes && matches!(first, ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min) {
                let k = multi_pass(dtype, first, ReduceOp::Sum, 33);
                let compiled = crate::cpu::compiled(&k).expect("the cpu JIT compiles it");
                assert!(
                    compiled.simd,
                    "{dtype:?} {first:?} then Sum: SIMD passes expected"
                );
                // Each of the three passes prefetches ahead of its load (where the host's
                // tuning prefetches ahead: not on AMD CPUs); the two after the first also
                // fetch the next row.
                let ahead = usize::from(smelt_codegen::cpu::host::tuning().prefetch_ahead > 0);
                assert_eq!(
                    compiled.prefetches,
                    3 * ahead + 2,
                    "{dtype:?} {first:?} then Sum: prefetches"
                );
            }
        }
    }
}

/// `out[i] = Σ_j where(m[i,j], a[i,j], 0)` and `out2[i,j] = a[i,j] · (m[i,j] as f32)`: a bool
/// input read as lane masks in a row reduction's SIMD passes and in its final pass.
fn masked_row_sum(cols: usize) -> Kernel {
    let n = ROWS * cols;
    let full = [cols as isize, 1];
    Kernel {
        name: "test".into(),
        shape: vec![ROWS, cols],
        reduce_axes: 1,
        args: vec![
            arg(DType::F32, n, Access::Read),
            arg(DType::Bool, n, Access::Read),
            arg(DType::F32, ROWS, Access::Write),
            arg(DType::F32, n, Access::Write),
        ],
        body: vec![
            Instr::Load {
                arg: 0,
                index: index(&full),
            },
            Instr::Load {
                arg: 1,
                index: index(&full),
            },
            Instr::Const {
                value: Scalar::Float(0.0),
                dtype: DType::F32,
            },
            Instr::Where {
                cond: 1,
                a: 0,
                b: 2,
            },
            Instr::Reduce {
                op: ReduceOp::Sum,
                x: 3,
            },
            Instr::Store {
                arg: 2,
                index: index(&[1, 0]),
                x: 4,
            },
            Instr::Cast {
                x: 1,
                to: DType::F32,
            },
            Instr::Binary {
                op: BinaryOp::Mul,
                a: 0,
                b: 6,
                compute: DType::F32,
            },
            Instr::Store {
                arg: 3,
                index: index(&full),
                x: 7,
            },
        ],
    }
}

#[test]
fn row_reductions_read_bool_inputs_as_lane_masks() {
    for cols in [0, 1, 4, 12, 33, 37] {
        let k = masked_row_sum(cols);
        let compiled = crate::cpu::compiled(&k).expect("the cpu JIT compiles it");
        // A row of one element is a row-level value: nothing to vectorise.
        assert!(
            compiled.simd || cols == 1,
            "{cols} columns: the row passes run in SIMD"
        );
        check(&k, 23);
    }
}

/// [`multi_pass`] over the other dim: `batch` blocks of `kept` rows reduced over `red`, the
/// input walking the rows contiguously and the reduced dim with a stride (`x.sum(0)`, a
/// softmax over dim 0), the output stored like the input or, with `row_out`, one value per
/// row (the second reduction only).
fn column_pass(
    first: ReduceOp,
    second: ReduceOp,
    (batch, kept, red): (usize, usize, usize),
    row_out: bool,
) -> Kernel {
    let n = batch * kept * red;
    let (kr, k) = ((kept * red) as isize, kept as isize);
    let mut body = vec![
        Instr::Load {
            arg: 0,
            index: index(&[kr, 1, k]),
        },
        Instr::Reduce { op: first, x: 0 },
        Instr::Binary {
            op: BinaryOp::Sub,
            a: 0,
            b: 1,
            compute: DType::F32,
        },
        Instr::Reduce { op: second, x: 2 },
    ];
    let out = if row_out {
        body.push(Instr::Store {
            arg: 1,
            index: index(&[k, 1, 0]),
            x: 3,
        });
        batch * kept
    } else {
        body.push(Instr::Binary {
            op: BinaryOp::Add,
            a: 2,
            b: 3,
            compute: DType::F32,
        });
        body.push(Instr::Store {
            arg: 1,
            index: index(&[kr, 1, k]),
            x: 4,
        });
        n
    };
    Kernel {
        name: "test".into(),
        shape: vec![batch, kept, red],
        reduce_axes: 1,
        args: vec![
            arg(DType::F32, n, Access::Read),
            arg(DType::F32, out, Access::Write),
        ],
        body,
    }
}

/// `x.op(0) * 2` over `[red, kept]` stored row-major: the kernel's kept dim walks memory
/// contiguously, its reduced dim with a stride.
fn column_reduce(op: ReduceOp, kept: usize, red: usize) -> Kernel {
    Kernel {
        name: "test".into(),
        shape: vec![kept, red],
        reduce_axes: 1,
        args: vec![
            arg(DType::F32, kept * red, Access::Read),
            arg(DType::F32, kept, Access::Write),
        ],
        body: vec![
            Instr::Load {
                arg: 0,
                index: index(&[1, kept as isize]),
            },
            Instr::Reduce { op, x: 0 },
            Instr::Const {
                value: Scalar::Float(2.0),
                dtype: DType::F32,
            },
            Instr::Binary {
                op: BinaryOp::Mul,
                a: 1,
                b: 2,
                compute: DType::F32,
            },
            Instr::Store {
                arg: 1,
                index: index(&[1, 0]),
                x: 3,
            },
        ],
    }
}

/// `y = x - x.first(0)` stored, and `y.second(0)` beside it, over `[red, kept]` row-major.
fn column_two_outputs(first: ReduceOp, second: ReduceOp, kept: usize, red: usize) -> Kernel {
    let n = kept * red;
    let along = index(&[1, kept as isize]);
    Kernel {
        name: "test".into(),
        shape: vec![kept, red],
        reduce_axes: 1,
        args: vec![
            arg(DType::F32, n, Access::Read),
            arg(DType::F32, n, Access::Write),
            arg(DType::F32, kept, Access::Write),
        ],
        body: vec![
            Instr::Load {
                arg: 0,
                index: along.clone(),
            },
            Instr::Reduce { op: first, x: 0 },
            Instr::Binary {
                op: BinaryOp::Sub,
                a: 0,
                b: 1,
                compute: DType::F32,
            },
            Instr::Reduce { op: second, x: 2 },
            Instr::Store {
                arg: 1,
                index: along,
                x: 2,
            },
            Instr::Store {
                arg: 2,
                index: index(&[1, 0]),
                x: 3,
            },
        ],
    }
}

#[test]
fn column_reductions_match_reference() {
    // Lanes across rows: groups of 16 rows, single vectors, scalar rows; reduced dims of
    // every length; several blocks; NaN, infinities and signed zeros among the inputs of
    // reduced dims up to 12 long.
    let ops = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min];
    for (batch, kept, red) in [
        (1, 4, 1),
        (1, 37, 5),
        (2, 17, 33),
        (3, 70, 9),
        (1, 5, 0),
        (1, 300, 5),
        (2, 529, 3),
    ] {
        for first in ops {
            for second in ops {
                for row_out in [false, true] {
                    let k = column_pass(first, second, (batch, kept, red), row_out);
                    // A reduced dim of one element makes every load row-level: no columns.
                    assert_eq!(smelt_codegen::cpu::runs_in_columns(&k), red != 1, "{k}");
                    check(&k, 47);
                }
            }
        }
    }
    // One reduction and a row-level tail: blocks of 256 rows with their accumulators in
    // memory, then groups, vectors and single rows for what is left; a kernel of one walk
    // takes blocks of 1024 rows first (1030, 1300: then one of 256; 2100 rows split into
    // tasks of whole blocks). The blocks walk the reduced dim 8 steps a visit, then single
    // steps (8, 19 and 33 take both).
    for (kept, red) in [
        (1300, 9),
        (2100, 33),
        (256, 3),
        (300, 7),
        (513, 2),
        (1030, 5),
        (256, 8),
        (300, 19),
        (513, 33),
    ] {
        for op in ops {
            let k = column_reduce(op, kept, red);
            assert!(smelt_codegen::cpu::runs_in_columns(&k), "{k}");
            check(&k, 67);
        }
    }
    // Two reduced dims that do not merge (r2's stride is `kept`, r1's twice r2's extent):
    // each step of the outer one walks the inner one in groups of 8, then single steps.
    for (kept, r1, r2) in [(256, 3, 11), (300, 2, 8), (260, 2, 5)] {
        for op in ops {
            let mut k = column_reduce(op, kept, r1 * r2);
            k.shape = vec![kept, r1, r2];
            k.reduce_axes = 2;
            k.args[0].len = 2 * kept * r2 * r1;
            if let Instr::Load { index, .. } = &mut k.body[0] {
                index.strides = vec![1, (2 * kept * r2) as isize, kept as isize];
            }
            if let Instr::Store { index, .. } = &mut k.body[4] {
                index.strides = vec![1, 0, 0];
            }
            assert!(smelt_codegen::cpu::runs_in_columns(&k), "{k}");
            check(&k, 73);
        }
    }
    // An element-level output needing only the first reduction (softmax over dim 0 storing
    // `exp(x - max)`) is stored by the last reduction's walk.
    for (kept, red) in [(256, 3), (300, 7), (41, 6), (256, 17), (300, 9)] {
        for first in ops {
            for second in ops {
                let k = column_two_outputs(first, second, kept, red);
                assert!(smelt_codegen::cpu::runs_in_columns(&k), "{k}");
                check(&k, 71);
            }
        }
    }
    // A load that walks the reduced dim contiguously keeps the row passes.
    let mut rows = column_pass(ReduceOp::Sum, ReduceOp::Sum, (1, 8, 8), true);
    if let Instr::Load { index, .. } = &mut rows.body[0] {
        index.strides = vec![64, 8, 1];
    }
    assert!(!smelt_codegen::cpu::runs_in_columns(&rows));
    assert_ne!(
        smelt_codegen::cpu::structure_key(&rows),
        smelt_codegen::cpu::structure_key(&column_pass(
            ReduceOp::Sum,
            ReduceOp::Sum,
            (1, 8, 8),
            true
        ))
    );
    check(&rows, 53);
}

/// `op` over all of `[n0, 5]` (`x.op() * 2`), big enough to run as blocks
/// (`Kernel::split_full_reduction`).
fn full_reduction(dtype: DType, op: ReduceOp, n0: usize) -> Kernel {
    let n = n0 * 5;
    Kernel {
        name: "test".into(),
        shape: vec![n0, 5],
        reduce_axes: 2,
        args: vec![arg(dtype, n, Access::Read), arg(dtype, 1, Access::Write)],
        body: vec![
            Instr::Load {
                arg: 0,
                index: index(&[5, 1]),
            },
            Instr::Reduce { op, x: 0 },
            Instr::Const {
                value: Scalar::Int(2),
                dtype,
            },
            Instr::Binary {
                op: BinaryOp::Mul,
                a: 1,
                b: 2,
                compute: dtype,
            },
            Instr::Store {
                arg: 1,
                index: index(&[0, 0]),
                x: 3,
            },
        ],
    }
}

#[test]
fn split_full_reductions_match_reference() {
    // 64 blocks of 1040 rows of finite values (`long_reduction`); f32/f16 sums through f64
    // partials and integer sums through i64 ones give the reference's bits.
    let n0 = 64 * 1040;
    for (dtype, op) in [
        (DType::F32, ReduceOp::Sum),
        (DType::F32, ReduceOp::Max),
        (DType::F32, ReduceOp::Min),
        (DType::F16, ReduceOp::Sum),
        (DType::I32, ReduceOp::Sum),
        (DType::I64, ReduceOp::Max),
        (DType::U8, ReduceOp::Sum),
    ] {
        let k = full_reduction(dtype, op, n0);
        assert!(k.split_full_reduction().is_some(), "{k}");
        check(&k, 59);
    }
    // An f64 sum is grouped otherwise in blocks than by the reference; on multiples of 2^-20
    // in [−0.5, 0.5) every grouping is exact (a sum under 2^16 in steps of 2^-20 needs 36
    // bits), so the bits must agree: a lost or repeated block cannot hide in a tolerance.
    let k = full_reduction(DType::F64, ReduceOp::Sum, n0);
    let mut rng = Rng(61);
    let dyadic: Vec<Scalar> = (0..k.args[0].len)
        .map(|_| {
            Scalar::Float(((rng.next() >> 44) as f64 - f64::from(1 << 19)) / f64::from(1 << 20))
        })
        .collect();
    let input = Arc::new(HostBuffer::from_scalars(DType::F64, &dyadic));
    check_inputs(&k, vec![input], 61, 0);
}

#[test]
fn full_reduction_to_a_scalar_matches_reference() {
    for dtype in [DType::F32, DType::I32, DType::Bool] {
        let k = Kernel {
            name: "test".into(),
            shape: vec![4, 9],
            reduce_axes: 2,
            args: vec![arg(dtype, 36, Access::Read), arg(dtype, 1, Access::Write)],
            body: vec![
                Instr::Load {
                    arg: 0,
                    index: index(&[9, 1]),
                },
                Instr::Reduce {
                    op: ReduceOp::Sum,
                    x: 0,
                },
                Instr::Store {
                    arg: 1,
                    index: index(&[0, 0]),
                    x: 1,
                },
            ],
        };
        check(&k, 23);
    }
}

#[test]
fn large_kernels_split_across_threads_match_reference() {
    // Enough rows to cross the parallel grain, an odd row length for the SIMD tail.
    let (rows, cols) = (700, 101);
    let n = rows * cols;
    let k = Kernel {
        name: "test".into(),
        shape: vec![rows, cols],
        reduce_axes: 0,
        args: vec![
            arg(DType::F32, n, Access::Read),
            arg(DType::F32, n, Access::Write),
        ],
        body: vec![
            Instr::Load {
                arg: 0,
                index: index(&[cols as isize, 1]),
            },
            Instr::Unary {
                op: UnaryOp::Relu,
                x: 0,
                compute: DType::F32,
            },
            Instr::Store {
                arg: 1,
                index: index(&[cols as isize, 1]),
                x: 1,
            },
        ],
    };
    check(&k, 29);
}

/// `out = a.t() + b` over `[rows, cols]`, in a given stored layout of `out`, optionally with
/// the loop order chosen by `Kernel::order_loops`.
fn transpose_add(rows: usize, cols: usize, out_t: bool, reorder: bool) -> Kernel {
    let n = rows * cols;
    let out = if out_t {
        [1, rows as isize]
    } else {
        [cols as isize, 1]
    };
    let mut k = Kernel {
        name: "test".into(),
        shape: vec![rows, cols],
        reduce_axes: 0,
        args: vec![
            arg(DType::F32, n, Access::Read),
            arg(DType::F32, n, Access::Read),
            arg(DType::F32, n, Access::Write),
        ],
        body: vec![
            Instr::Load {
                arg: 0,
                index: index(&[1, rows as isize]),
            },
            Instr::Load {
                arg: 1,
                index: index(&[cols as isize, 1]),
            },
            Instr::Binary {
                op: BinaryOp::Add,
                a: 0,
                b: 1,
                compute: DType::F32,
            },
            Instr::Store {
                arg: 2,
                index: index(&out),
                x: 2,
            },
        ],
    };
    if reorder {
        k.order_loops();
    }
    k
}

#[test]
fn tiled_transposing_kernels_match_reference() {
    // Sizes around the block shape, odd ones for partial blocks and SIMD tails; enough
    // elements in the last to split across threads.
    for (rows, cols) in [
        (1, 5),
        (3, 70),
        (4, 4),
        (17, 9),
        (33, 65),
        (67, 513),
        (300, 257),
        (515, 259),
    ] {
        for out_t in [false, true] {
            for reorder in [false, true] {
                check(&transpose_add(rows, cols, out_t, reorder), 37);
            }
        }
    }
    let k = transpose_add(8, 8, true, true);
    assert_eq!(
        k.body
            .iter()
            .filter_map(|i| i.index().map(|index| index.strides[1]))
            .collect::<Vec<_>>(),
        vec![1, 8, 1],
        "order_loops moves the dim that two of three accesses walk contiguously inside"
    );
}

/// `out[i, j] = a[j, i]·c[j, i] + bias[i] + col[j]` over `[rows, cols]`: two transposing loads
/// (`c` at an offset), a load broadcast along the rows and one along the columns. The cpu
/// backend walks it in 16 × 16 line blocks where they fit, then in 4×4 blocks and rows.
fn two_transposes(rows: usize, cols: usize) -> Kernel {
    let n = rows * cols;
    let load = |arg, strides: &[isize], offset| Instr::Load {
        arg,
        index: Index {
            strides: strides.to_vec(),
            offset,
        },
    };
    let binary = |op, a, b| Instr::Binary {
        op,
        a,
        b,
        compute: DType::F32,
    };
    Kernel {
        name: "test".into(),
        shape: vec![rows, cols],
        reduce_axes: 0,
        args: vec![
            arg(DType::F32, n, Access::Read),
            arg(DType::F32, n + 3, Access::Read),
            arg(DType::F32, rows, Access::Read),
            arg(DType::F32, cols, Access::Read),
            arg(DType::F32, n, Access::Write),
        ],
        body: vec![
            load(0, &[1, rows as isize], 0),
            load(1, &[1, rows as isize], 3),
            binary(BinaryOp::Mul, 0, 1),
            load(2, &[1, 0], 0),
            binary(BinaryOp::Add, 2, 3),
            load(3, &[0, 1], 0),
            binary(BinaryOp::Add, 4, 5),
            Instr::Store {
                arg: 4,
                index: index(&[cols as isize, 1]),
                x: 6,
            },
        ],
    }
}

#[test]
fn line_blocks_match_reference() {
    // Whole blocks only; blocks with rows, columns or both left over; tiles of blocks with
    // partial tiles; enough rows to split across threads.
    for (rows, cols) in [(16, 16), (32, 48), (47, 83), (130, 70), (200, 333)] {
        check(&two_transposes(rows, cols), 43);
    }
}

/// `x.permute(0, 2, 1) * 2 + 1` over `[batch, rows, cols]`: the load walks the rows
/// contiguously and the columns with a stride, the store the other way round: the cpu backend
/// reads it in 4×4 blocks transposed in registers.
fn permute_scale(batch: usize, rows: usize, cols: usize) -> Kernel {
    let n = batch * rows * cols;
    Kernel {
        name: "test".into(),
        shape: vec![batch, rows, cols],
        reduce_axes: 0,
        args: vec![
            arg(DType::F32, n, Access::Read),
            arg(DType::F32, n, Access::Write),
        ],
        body: vec![
            Instr::Load {
                arg: 0,
                index: index(&[(rows * cols) as isize, 1, rows as isize]),
            },
            Instr::Const {
                value: Scalar::Float(2.0),
                dtype: DType::F32,
            },
            Instr::Binary {
                op: BinaryOp::Mul,
                a: 0,
                b: 1,
                compute: DType::F32,
            },
            Instr::Const {
                value: Scalar::Float(1.0),
                dtype: DType::F32,
            },
            Instr::Binary {
                op: BinaryOp::Add,
                a: 2,
                b: 3,
                compute: DType::F32,
            },
            Instr::Store {
                arg: 1,
                index: index(&[(rows * cols) as isize, cols as isize, 1]),
                x: 4,
            },
        ],
    }
}

#[test]
fn transposed_blocks_match_reference() {
    // Whole and partial 4×4 blocks, blocks of a tile and tiles of a batch; the structure key
    // tells a load that walks the rows contiguously from one that does not.
    for (batch, rows, cols) in [
        (1, 4, 4),
        (2, 5, 7),
        (3, 37, 70),
        (2, 64, 300),
        (1, 130, 9),
        (1, 150, 131),
    ] {
        let k = permute_scale(batch, rows, cols);
        assert!(
            k.body.iter().any(smelt_codegen::cpu::is_transposing_load),
            "the load is read in transposed blocks"
        );
        // A line block fetches the 16 lines of the next row block ahead (`tiles.rs`,
        // `next_block_ahead`), in the plain code and the streaming variant alike: a patch
        // that failed would have dropped them silently.
        let plain = crate::cpu::compiled(&k).expect("the cpu JIT compiles it");
        let streaming = crate::cpu::compiled_streaming(&k).expect("it has a streaming variant");
        for code in [plain, streaming] {
            assert!(
                code.prefetches >= 16,
                "{batch}×{rows}×{cols}: {}",
                code.prefetches
            );
        }
        check(&k, 41);
    }
    let mut gathered = permute_scale(2, 8, 8);
    if let Instr::Load { index, .. } = &mut gathered.body[0] {
        index.strides = vec![128, 2, 16];
    }
    assert!(
        !gathered
            .body
            .iter()
            .any(smelt_codegen::cpu::is_transposing_load)
    );
    assert_ne!(
        smelt_codegen::cpu::structure_key(&gathered),
        smelt_codegen::cpu::structure_key(&permute_scale(2, 8, 8))
    );
    gathered.args[0].len = 2 * 128;
    check(&gathered, 43);
}

#[test]
fn strided_rows_reduce_like_the_reference() {
    // A column sum: the reduced dim walks memory with a stride, so SIMD passes gather.
    let (rows, cols) = (6, 37);
    let k = Kernel {
        name: "test".into(),
        shape: vec![rows, cols],
        reduce_axes: 1,
        args: vec![
            arg(DType::F32, rows * cols, Access::Read),
            arg(DType::F32, rows, Access::Write),
        ],
        body: vec![
            Instr::Load {
                arg: 0,
                index: index(&[1, rows as isize]),
            },
            Instr::Reduce {
                op: ReduceOp::Max,
                x: 0,
            },
            Instr::Binary {
                op: BinaryOp::Sub,
                a: 0,
                b: 1,
                compute: DType::F32,
            },
            Instr::Reduce {
                op: ReduceOp::Sum,
                x: 2,
            },
            Instr::Store {
                arg: 1,
                index: index(&[1, 0]),
                x: 3,
            },
        ],
    };
    check(&k, 41);
}

/// Several outputs of one elementwise space: a fresh one, an update of the input it also
/// reads (so the update must start from a copy), and one of another dtype.
fn multi_output_elementwise(dtype: DType, rows: usize, cols: usize) -> Kernel {
    let n = rows * cols;
    let at = index(&[cols as isize, 1]);
    Kernel {
        name: "test".into(),
        shape: vec![rows, cols],
        reduce_axes: 0,
        args: vec![
            arg(dtype, n, Access::Read),
            arg(dtype, n, Access::Read),
            arg(dtype, n, Access::Write),
            arg(dtype, n, Access::Update { from: 0 }),
            arg(DType::Bool, n, Access::Write),
        ],
        body: vec![
            Instr::Load {
                arg: 0,
                index: at.clone(),
            },
            Instr::Load {
                arg: 1,
                index: at.clone(),
            },
            Instr::Binary {
                op: BinaryOp::Mul,
                a: 0,
                b: 1,
                compute: dtype,
            },
            Instr::Binary {
                op: BinaryOp::Add,
                a: 2,
                b: 0,
                compute: dtype,
            },
            Instr::Binary {
                op: BinaryOp::Lt,
                a: 0,
                b: 1,
                compute: dtype,
            },
            Instr::Store {
                arg: 2,
                index: at.clone(),
                x: 2,
            },
            Instr::Store {
                arg: 3,
                index: at.clone(),
                x: 3,
            },
            Instr::Store {
                arg: 4,
                index: at,
                x: 4,
            },
        ],
    }
}

/// Two reductions of one row stored row by row, and an element-level output beside them.
fn multi_output_rows(dtype: DType, cols: usize) -> Kernel {
    let n = ROWS * cols;
    Kernel {
        name: "test".into(),
        shape: vec![ROWS, cols],
        reduce_axes: 1,
        args: vec![
            arg(dtype, n, Access::Read),
            arg(dtype, ROWS, Access::Write),
            arg(dtype, ROWS, Access::Write),
            arg(dtype, n, Access::Write),
        ],
        body: vec![
            Instr::Load {
                arg: 0,
                index: index(&[cols as isize, 1]),
            },
            Instr::Binary {
                op: BinaryOp::Mul,
                a: 0,
                b: 0,
                compute: dtype,
            },
            Instr::Reduce {
                op: ReduceOp::Sum,
                x: 0,
            },
            Instr::Reduce {
                op: ReduceOp::Max,
                x: 1,
            },
            Instr::Binary {
                op: BinaryOp::Sub,
                a: 0,
                b: 2,
                compute: dtype,
            },
            Instr::Store {
                arg: 1,
                index: index(&[1, 0]),
                x: 2,
            },
            Instr::Store {
                arg: 2,
                index: index(&[1, 0]),
                x: 3,
            },
            Instr::Store {
                arg: 3,
                index: index(&[cols as isize, 1]),
                x: 4,
            },
        ],
    }
}

#[test]
fn multi_output_kernels_match_reference() {
    for dtype in [DType::F32, DType::F64, DType::I32, DType::F16] {
        check(&multi_output_elementwise(dtype, ROWS, COLS), 37);
        for cols in [0, 1, 33] {
            check(&multi_output_rows(dtype, cols), 41);
        }
    }
    // Past the parallel grain (rows split across threads) with a SIMD tail.
    check(&multi_output_elementwise(DType::F32, 700, 101), 43);
}

#[test]
fn the_verifier_rejects_aliased_or_misplaced_outputs() {
    let mut k = multi_output_elementwise(DType::F32, ROWS, COLS);
    assert!(k.verify().is_empty(), "{:?}", k.verify());
    assert_eq!(k.read_args(), 2);
    assert_eq!(k.outputs(), 2..5);
    // Two outputs updating the same source would both take its memory.
    k.args[2].access = Access::Update { from: 0 };
    assert!(
        k.verify()
            .iter()
            .any(|e| e.contains("aliases another output")),
        "{:?}",
        k.verify()
    );
    // A read argument after an output, an output never stored.
    let mut k = multi_output_elementwise(DType::F32, ROWS, COLS);
    k.args.push(arg(DType::F32, 1, Access::Read));
    k.args.push(arg(DType::F32, 1, Access::Write));
    let errors = k.verify();
    assert!(
        errors.iter().any(|e| e.contains("reads come first")),
        "{errors:?}"
    );
    assert!(
        errors.iter().any(|e| e.contains("never stored")),
        "{errors:?}"
    );
}

/// A softmax row kernel: `exp(x - max)` feeds the row sum and the final store, so the cpu
/// backend stashes it in the output during the sum pass and reads it back.
fn softmax_rows(dtype: DType, cols: usize) -> Kernel {
    let n = ROWS * cols;
    let at = index(&[cols as isize, 1]);
    Kernel {
        name: "test".into(),
        shape: vec![ROWS, cols],
        reduce_axes: 1,
        args: vec![arg(dtype, n, Access::Read), arg(dtype, n, Access::Write)],
        body: vec![
            Instr::Load {
                arg: 0,
                index: at.clone(),
            },
            Instr::Reduce {
                op: ReduceOp::Max,
                x: 0,
            },
            Instr::Binary {
                op: BinaryOp::Sub,
                a: 0,
                b: 1,
                compute: dtype,
            },
            Instr::Unary {
                op: UnaryOp::Exp,
                x: 2,
                compute: dtype,
            },
            Instr::Reduce {
                op: ReduceOp::Sum,
                x: 3,
            },
            Instr::Binary {
                op: BinaryOp::Div,
                a: 3,
                b: 4,
                compute: dtype,
            },
            Instr::Store {
                arg: 1,
                index: at,
                x: 5,
            },
        ],
    }
}

#[test]
fn stashed_row_values_match_reference() {
    for dtype in [DType::F32, DType::F64] {
        for cols in [0, 1, 4, 12, 33] {
            let k = softmax_rows(dtype, cols);
            // A row of one element is row-level throughout: nothing to stash.
            assert_eq!(
                smelt_codegen::cpu::has_stash(&k),
                cols != 1,
                "softmax rows stash exp(x - max)"
            );
            check(&k, 43);
        }
    }
}

/// Softmax over rows of `half` (f16 or bf16) as the frontend builds it: the input widened to
/// f32, f32 throughout, one rounding at the store.
fn softmax_rows_half(half: DType, cols: usize) -> Kernel {
    let mut k = softmax_rows(DType::F32, cols);
    let n = ROWS * cols;
    k.args = vec![arg(half, n, Access::Read), arg(half, n, Access::Write)];
    // Load, cast up, then the f32 row program (its operands one later), cast down, store.
    let mut body = vec![
        k.body[0].clone(),
        Instr::Cast {
            x: 0,
            to: DType::F32,
        },
    ];
    for instr in &k.body[1..6] {
        let mut i = instr.clone();
        match &mut i {
            Instr::Reduce { x, .. } | Instr::Unary { x, .. } => *x += 1,
            Instr::Binary { a, b, .. } => (*a, *b) = (*a + 1, *b + 1),
            Instr::Load { .. }
            | Instr::Const { .. }
            | Instr::Where { .. }
            | Instr::Cast { .. }
            | Instr::Store { .. }
            | Instr::Random { .. } => {
                unreachable!("softmax_rows has no other instruction before its store")
            }
        }
        body.push(i);
    }
    body.push(Instr::Cast { x: 6, to: half });
    let Instr::Store { index, .. } = k.body[6].clone() else {
        unreachable!("softmax_rows ends with its store")
    };
    body.push(Instr::Store {
        arg: 1,
        index,
        x: 7,
    });
    k.body = body;
    k
}

#[test]
fn half_rows_stash_in_a_scratch_row() {
    for half in [DType::F16, DType::BF16] {
        for cols in [0, 1, 4, 12, 33, 70] {
            let k = softmax_rows_half(half, cols);
            // The f32 `exp(x - max)` cannot wait in a half output: a row of f32 of its own,
            // in the ordinary code too.
            assert_eq!(
                smelt_codegen::cpu::has_stash(&k),
                cols != 1,
                "{half} {cols}"
            );
            if cols > 1 {
                assert_eq!(smelt_codegen::cpu::scratch_row(&k), Some(4 * cols));
            }
            check(&k, 47);
        }
    }
}

/// A bfloat16 attention's softmax as the GPT block fuses it: the scores scaled in `half` (a
/// rounding), masked to −inf, widened, then softmax in f32 rounded once at the store. The max
/// pass writes the widened masked scores to a scratch row and the sum pass reads them back.
fn masked_scaled_softmax_half(half: DType, cols: usize) -> Kernel {
    let n = ROWS * cols;
    let at = index(&[cols as isize, 1]);
    let load = |arg| Instr::Load {
        arg,
        index: at.clone(),
    };
    let constant = |value: f64, dtype| Instr::Const {
        value: Scalar::Float(value),
        dtype,
    };
    let binary = |op, a, b, compute| Instr::Binary { op, a, b, compute };
    Kernel {
        name: "test".into(),
        shape: vec![ROWS, cols],
        reduce_axes: 1,
        args: vec![
            arg(DType::Bool, n, Access::Read),
            arg(half, n, Access::Read),
            arg(half, n, Access::Write),
        ],
        body: vec![
            load(0),
            constant(f64::NEG_INFINITY, half),
            load(1),
            constant(0.125, half),
            binary(BinaryOp::Mul, 2, 3, half),
            Instr::Where {
                cond: 0,
                a: 1,
                b: 4,
            },
            Instr::Cast {
                x: 5,
                to: DType::F32,
            },
            Instr::Reduce {
                op: ReduceOp::Max,
                x: 6,
            },
            binary(BinaryOp::Sub, 6, 7, DType::F32),
            Instr::Unary {
                op: UnaryOp::Exp,
                x: 8,
                compute: DType::F32,
            },
            Instr::Reduce {
                op: ReduceOp::Sum,
                x: 9,
            },
            Instr::Unary {
                op: UnaryOp::Reciprocal,
                x: 10,
                compute: DType::F32,
            },
            binary(BinaryOp::Mul, 9, 11, DType::F32),
            Instr::Cast { x: 12, to: half },
            Instr::Store {
                arg: 2,
                index: at.clone(),
                x: 13,
            },
        ],
    }
}

/// A residual layernorm in `half` as the GPT block fuses it: `h = a + b` rounded to `half`
/// (also stored: the residual stream), then normalised over the row in f32. Both the mean's
/// and the variance's pass need `h`, which the mean's pass writes to a scratch row.
fn residual_layernorm_half(half: DType, cols: usize) -> Kernel {
    let n = ROWS * cols;
    let at = index(&[cols as isize, 1]);
    let load = |arg| Instr::Load {
        arg,
        index: at.clone(),
    };
    let f32_op = |op, a, b| Instr::Binary {
        op,
        a,
        b,
        compute: DType::F32,
    };
    let sum = |x| Instr::Reduce {
        op: ReduceOp::Sum,
        x,
    };
    Kernel {
        name: "test".into(),
        shape: vec![ROWS, cols],
        reduce_axes: 1,
        args: vec![
            arg(half, n, Access::Read),
            arg(half, n, Access::Read),
            arg(half, n, Access::Write),
            arg(half, n, Access::Write),
        ],
        body: vec![
            load(0),
            load(1),
            Instr::Binary {
                op: BinaryOp::Add,
                a: 0,
                b: 1,
                compute: half,
            },
            Instr::Cast {
                x: 2,
                to: DType::F32,
            },
            sum(3),
            Instr::Const {
                value: Scalar::Float(cols as f64),
                dtype: DType::F32,
            },
            f32_op(BinaryOp::Div, 4, 5),
            f32_op(BinaryOp::Sub, 3, 6),
            f32_op(BinaryOp::Mul, 7, 7),
            sum(8),
            f32_op(BinaryOp::Div, 9, 5),
            Instr::Const {
                value: Scalar::Float(1e-5),
                dtype: DType::F32,
            },
            f32_op(BinaryOp::Add, 10, 11),
            Instr::Unary {
                op: UnaryOp::Rsqrt,
                x: 12,
                compute: DType::F32,
            },
            f32_op(BinaryOp::Mul, 7, 13),
            Instr::Cast { x: 14, to: half },
            Instr::Store {
                arg: 2,
                index: at.clone(),
                x: 15,
            },
            Instr::Store {
                arg: 3,
                index: at.clone(),
                x: 2,
            },
        ],
    }
}

#[test]
fn half_rounded_row_values_are_reread_from_a_scratch_row() {
    for half in [DType::F16, DType::BF16] {
        for cols in [0, 1, 4, 12, 33, 70] {
            for (k, seed) in [
                (masked_scaled_softmax_half(half, cols), 53),
                (residual_layernorm_half(half, cols), 59),
            ] {
                // A row of one element is row-level throughout: nothing to read back.
                assert_eq!(
                    smelt_codegen::cpu::has_reread(&k),
                    cols != 1,
                    "{half} {cols}\n{k}"
                );
                check(&k, seed);
            }
        }
        // Only loaded and widened (no rounding before the first reduction): loaded again.
        assert!(!smelt_codegen::cpu::has_reread(&softmax_rows_half(
            half, 12
        )));
    }
    assert!(!smelt_codegen::cpu::has_reread(&softmax_rows(
        DType::F32,
        12
    )));
    // The scratch holds the softmax's f32 stash row, then the reread row: a final pass that
    // reads both (the softmax plus the masked scores) finds each in its own row.
    let k = masked_scaled_softmax_half(DType::BF16, 12);
    assert_eq!(smelt_codegen::cpu::plain_scratch_row(&k), Some(2 * 4 * 12));
    for cols in [12, 33] {
        let mut k = masked_scaled_softmax_half(DType::BF16, cols);
        let store = k.body.pop().expect("the kernel ends with its store");
        k.body[13] = Instr::Binary {
            op: BinaryOp::Add,
            a: 12,
            b: 6,
            compute: DType::F32,
        };
        k.body.push(Instr::Cast {
            x: 13,
            to: DType::BF16,
        });
        let Instr::Store { arg, index, .. } = store else {
            unreachable!("a store")
        };
        k.body.push(Instr::Store { arg, index, x: 14 });
        assert!(smelt_codegen::cpu::has_stash(&k) && smelt_codegen::cpu::has_reread(&k));
        check(&k, 67);
    }
    // With an f32 output the ordinary code stashes in the output and rereads from the scratch
    // (its stash row reserved, unused); the streaming variant uses both rows: the same bits.
    for cols in [100, 103] {
        let mut k = masked_scaled_softmax_half(DType::BF16, cols);
        k.args[2].dtype = DType::F32;
        k.body[13] = Instr::Cast {
            x: 12,
            to: DType::F32,
        };
        assert!(smelt_codegen::cpu::streaming_candidate(&k));
        assert_eq!(
            smelt_codegen::cpu::plain_scratch_row(&k),
            Some(2 * 4 * cols)
        );
        check(&k, 61);
        let inputs = Rng(61).inputs(&k);
        let plain = crate::cpu::run_kernel(&k, inputs.clone());
        let before = crate::cpu::STREAMED.load(Ordering::Relaxed);
        let got = crate::cpu::run_kernel_streaming(&k, inputs);
        let streamed = crate::cpu::STREAMED.load(Ordering::Relaxed) > before;
        assert_eq!(cols % 4 == 0, streamed, "{cols}");
        assert_eq!(float_bits(&got[0]), float_bits(&plain[0]), "{cols}");
    }
}

/// Long softmax rows of finite values whose `exp(x − max)` spans 90 binades (the finite inputs
/// of [`check`] for long rows span 3): the cpu backend's SIMD
/// passes, stash and idioms over many trips stay within the inline-math tolerance of the
/// reference, for f32, f16 and bf16 rows (trips, one vector, and a scalar tail).
#[test]
fn long_softmax_rows_match_reference() {
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        for cols in [16, 1024, 4099] {
            let k = softmax_rows(dtype, cols);
            let mut rng = Rng(0x5EED);
            let vals: Vec<Scalar> = (0..ROWS * cols)
                .map(|i| {
                    let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
                    // Mostly within 20 of the row's max, a few far below it.
                    Scalar::Float(if i % 7 == 0 {
                        -u * 60.0
                    } else {
                        5.0 - u * 15.0
                    })
                })
                .collect();
            let input = vec![Arc::new(HostBuffer::from_scalars(dtype, &vals))];
            let want = Target::Reference.run_kernel(&k, input.clone());
            let ulps = inline_math_tolerance(dtype);
            for backend in Target::available() {
                let got = backend.run_kernel(&k, input.clone());
                if let Some(i) = same(&got[0], &want[0], ulps) {
                    panic!(
                        "{} {dtype:?} softmax of {cols} columns differs at {i}: {} vs {}",
                        backend.name(),
                        got[0].get(i),
                        want[0].get(i)
                    );
                }
            }
        }
    }
}

#[test]
fn one_compiled_kernel_serves_every_size() {
    let mut code = vec![];
    for cols in [5, 6, 7] {
        let mut k = multi_pass(DType::F64, ReduceOp::Min, ReduceOp::Prod, cols);
        k.name = format!("size{cols}");
        check(&k, 31);
        code.push(crate::cpu::compiled(&k).expect("compiles"));
    }
    // The cache hands back the very same compiled function for every size.
    assert!(code.windows(2).all(|w| Arc::ptr_eq(&w[0], &w[1])));
}

/// `out[i, j] = x·2 + 1` over `[rows, cols]` with `x` read at `load` strides (contiguous, or
/// transposed from a `[cols, rows]` array) and `out` written at `store` strides and offset.
fn scale_kernel(rows: usize, cols: usize, load: [isize; 2], store: ([isize; 2], isize)) -> Kernel {
    let n = rows * cols;
    let konst = |v: f64| Instr::Const {
        value: Scalar::Float(v),
        dtype: DType::F32,
    };
    let binary = |op, a, b| Instr::Binary {
        op,
        a,
        b,
        compute: DType::F32,
    };
    let out_len = (store.1 as usize) + n.max(rows * store.0[0] as usize);
    Kernel {
        name: "scale".into(),
        shape: vec![rows, cols],
        reduce_axes: 0,
        args: vec![
            arg(DType::F32, n, Access::Read),
            arg(DType::F32, out_len, Access::Write),
        ],
        body: vec![
            Instr::Load {
                arg: 0,
                index: index(&load),
            },
            konst(2.0),
            binary(BinaryOp::Mul, 0, 1),
            konst(1.0),
            binary(BinaryOp::Add, 2, 3),
            Instr::Store {
                arg: 1,
                index: Index {
                    strides: store.0.to_vec(),
                    offset: store.1,
                },
                x: 4,
            },
        ],
    }
}

/// The streaming variant of a kernel (`codegen/src/cpu/stream.rs`: its f32x4 output stores
/// as `movntps`, a fence at the end) gives the reference's bits, where the runtime picks it:
/// elementwise rows, tiled transposes read in line and 4×4 blocks (blocks spanning the rows
/// or part of them) or, from f16, in 64 × 16 tiles, rows whose final pass stores (with trips, single vectors and several rows per
/// thread), softmax with its stash in a scratch row.
/// Misaligned stores (an odd offset or row stride) are never streamed.
#[test]
fn streaming_stores_match_reference() {
    let (rows, cols) = (70, 100);
    let kernels = [
        (
            "rows",
            scale_kernel(rows, cols, [cols as isize, 1], ([cols as isize, 1], 0)),
        ),
        (
            "transposed",
            scale_kernel(rows, cols, [1, rows as isize], ([cols as isize, 1], 0)),
        ),
        // Blocks that cover part of each row, rows and columns with partial blocks.
        (
            "wide transposed",
            scale_kernel(150, 300, [1, 150], ([300, 1], 0)),
        ),
        // An f16 transposing load: the tiled walk without 4×4 blocks (64 × 16 tiles).
        ("half transposed", {
            let mut k = scale_kernel(70, 100, [1, 70], ([100, 1], 0));
            k.args[0].dtype = DType::F16;
            k.body.insert(
                1,
                Instr::Cast {
                    x: 0,
                    to: DType::F32,
                },
            );
            for instr in &mut k.body[2..] {
                match instr {
                    Instr::Binary { a, b, .. } => {
                        *a += 1;
                        *b += 1;
                    }
                    Instr::Store { x, .. } => *x += 1,
                    Instr::Load { .. }
                    | Instr::Const { .. }
                    | Instr::Unary { .. }
                    | Instr::Where { .. }
                    | Instr::Cast { .. }
                    | Instr::Reduce { .. }
                    | Instr::Random { .. } => {}
                }
            }
            k
        }),
        (
            "row passes",
            multi_pass(DType::F32, ReduceOp::Sum, ReduceOp::Max, cols),
        ),
        (
            "offset 4",
            scale_kernel(rows, cols, [cols as isize, 1], ([cols as isize, 1], 4)),
        ),
    ];
    for (name, k) in &kernels {
        assert!(smelt_codegen::cpu::streaming_candidate(k), "{name}");
        let code = crate::cpu::compiled_streaming(k)
            .unwrap_or_else(|e| panic!("{name}: no streaming variant: {e}"));
        assert!(code.streams > 0, "{name}");
        assert!(smelt_codegen::cpu::streams_aligned(k, &[64, 128]), "{name}");
        let input = Rng(77).inputs(k).remove(0);
        let want = Target::Reference.run_kernel(k, vec![input.clone()]);
        let before = crate::cpu::STREAMED.load(Ordering::Relaxed);
        let got = crate::cpu::run_kernel_streaming(k, vec![input]);
        // Outputs come from the pool, 64-byte aligned: the streaming variant ran.
        assert!(
            crate::cpu::STREAMED.load(Ordering::Relaxed) > before,
            "{name}"
        );
        if let Some(i) = same(&got[0], &want[0], 0) {
            panic!("{name}: streamed {} vs {}", got[0].get(i), want[0].get(i));
        }
    }
    // Stores that some vector would write off a 16-byte boundary: not streamed, still right.
    let c = cols as isize;
    for (name, k, base) in [
        (
            "odd offset",
            scale_kernel(rows, cols, [c, 1], ([c, 1], 1)),
            64,
        ),
        (
            "odd rows",
            scale_kernel(rows, cols, [c, 1], ([c + 1, 1], 0)),
            64,
        ),
        ("base", scale_kernel(rows, cols, [c, 1], ([c, 1], 0)), 68),
    ] {
        assert!(
            !smelt_codegen::cpu::streams_aligned(&k, &[64, base]),
            "{name}"
        );
        if base == 64 {
            let input = Rng(78).inputs(&k).remove(0);
            let want = Target::Reference.run_kernel(&k, vec![input.clone()]);
            let got = crate::cpu::run_kernel_streaming(&k, vec![input]);
            assert!(same(&got[0], &want[0], 0).is_none(), "{name}");
        }
    }
    // A rank-1 kernel's SIMD loop starts where its thread's range does.
    let mut flat = Kernel {
        shape: vec![rows * cols],
        ..scale_kernel(1, rows * cols, [0, 1], ([0, 1], 0))
    };
    for instr in &mut flat.body {
        if let Instr::Load { index, .. } | Instr::Store { index, .. } = instr {
            index.strides.remove(0);
        }
    }
    assert!(!smelt_codegen::cpu::streaming_candidate(&flat));
    assert!(!smelt_codegen::cpu::streams_aligned(&flat, &[64, 64]));
    // softmax streams too, its stash moved to a scratch row of each call's own: the same bits
    // as the ordinary code (empty rows; rows of 3 and of 70 across tasks, trips, one vector,
    // and a tail).
    for (rows, cols) in [(3, 0), (3, 100), (3, 103), (70, 1000)] {
        let k = Kernel {
            shape: vec![rows, cols],
            args: vec![
                arg(DType::F32, rows * cols, Access::Read),
                arg(DType::F32, rows * cols, Access::Write),
            ],
            ..softmax_rows(DType::F32, cols)
        };
        assert!(smelt_codegen::cpu::streaming_candidate(&k));
        assert_eq!(smelt_codegen::cpu::scratch_row(&k), Some(4 * cols));
        let input = Arc::new(HostBuffer::from_scalars(
            DType::F32,
            &(0..rows * cols)
                .map(|i| Scalar::Float((i % 97) as f64 * 0.37 - 20.0))
                .collect::<Vec<_>>(),
        ));
        let plain = crate::cpu::run_kernel(&k, vec![input.clone()]);
        let before = crate::cpu::STREAMED.load(Ordering::Relaxed);
        let got = crate::cpu::run_kernel_streaming(&k, vec![input]);
        // (An empty output has no aligned address: it runs the ordinary code.)
        let streamed = crate::cpu::STREAMED.load(Ordering::Relaxed) > before;
        assert_eq!(cols > 0 && cols % 4 == 0, streamed, "{rows}×{cols}");
        assert_eq!(float_bits(&got[0]), float_bits(&plain[0]), "{rows}×{cols}");
    }
}
