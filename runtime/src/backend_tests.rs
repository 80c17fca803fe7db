//! Every backend against the reference interpreter, written once (STYLE 12): hand-built kernels
//! for every dtype and instruction on random inputs (with NaN, ±inf, -0, zero divisors), strided,
//! broadcast and odd-length rows (SIMD tails), reductions with several passes; and the accuracy
//! of compiled transcendentals against f64 libm.

use crate::backend::Backend;
use crate::buffer::Buffer;
use smelt_codegen::cpu::{BINARY_OPS, UNARY_OPS};
use smelt_ir::kernel::{Access, Arg, Index, Instr, Kernel};
use smelt_ir::{BinaryOp, DType, ReduceOp, Scalar, UnaryOp};
use std::sync::Arc;

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

    fn buffer(&mut self, dtype: DType, len: usize) -> Arc<Buffer> {
        let vals: Vec<Scalar> = (0..len).map(|_| self.scalar(dtype)).collect();
        Arc::new(Buffer::from_scalars(dtype, &vals))
    }
}

fn same(a: &Buffer, b: &Buffer) -> Option<usize> {
    if a.len() != b.len() || a.dtype() != b.dtype() {
        return Some(0);
    }
    (0..a.len()).find(|&i| {
        let (x, y) = (a.get(i), b.get(i));
        match (x, y) {
            (Scalar::Float(x), Scalar::Float(y)) => !(x == y || x.is_nan() && y.is_nan()),
            _ => x != y,
        }
    })
}

/// Runs `kernel` on every backend with the same random inputs and compares with the reference.
fn check(kernel: &Kernel, seed: u64) {
    let mut rng = Rng(seed | 1);
    let inputs: Vec<Arc<Buffer>> = kernel.args[..kernel.read_args()]
        .iter()
        .map(|a| rng.buffer(a.dtype, a.len))
        .collect();
    if let Err(why) = crate::cpu::compiled(kernel) {
        panic!("the cpu JIT refused a kernel: {why}\n{kernel}");
    }
    let want = Backend::Reference.run_kernel(kernel, inputs.clone());
    for backend in Backend::ALL {
        let got = backend.run_kernel(kernel, inputs.clone());
        assert_eq!(
            got.len(),
            want.len(),
            "{}: one buffer per output",
            backend.name()
        );
        for (o, (got, want)) in got.iter().zip(&want).enumerate() {
            if let Some(i) = same(got, want) {
                panic!(
                    "{} differs from reference in output {o} at {i}: {} vs {}\n{kernel}",
                    backend.name(),
                    got.get(i),
                    want.get(i)
                );
            }
        }
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
    let n = ROWS * COLS;
    Kernel {
        name: "test".into(),
        shape: vec![ROWS, COLS],
        reduce_axes: 0,
        args: vec![
            arg(dtype, n, Access::Read),
            arg(dtype, COLS, Access::Read),
            arg(out, n, Access::Write),
        ],
        body,
    }
}

#[test]
fn every_unary_op_matches_reference_for_every_dtype() {
    for dtype in DType::ALL {
        for op in UNARY_OPS {
            let out = op.result_dtype(dtype);
            let k = elementwise(
                dtype,
                out,
                vec![
                    Instr::Load {
                        arg: 0,
                        index: index(&[COLS as isize, 1]),
                    },
                    Instr::Unary {
                        op,
                        x: 0,
                        compute: dtype,
                    },
                    Instr::Store {
                        arg: 2,
                        index: index(&[COLS as isize, 1]),
                        x: 1,
                    },
                ],
            );
            check(&k, 7 + op as u64);
        }
    }
}

#[test]
fn every_binary_op_matches_reference_for_every_dtype() {
    for dtype in DType::ALL {
        for op in BINARY_OPS {
            if op == BinaryOp::Atan2 && !dtype.is_float() {
                continue; // the frontend promotes atan2 to a float first
            }
            let out = op.result_dtype(dtype);
            let k = elementwise(
                dtype,
                out,
                vec![
                    Instr::Load {
                        arg: 0,
                        index: index(&[COLS as isize, 1]),
                    },
                    Instr::Load {
                        arg: 1,
                        index: index(&[0, 1]),
                    },
                    Instr::Binary {
                        op,
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
            check(&k, 11 + op as u64);
        }
    }
}

#[test]
fn every_cast_and_where_matches_reference() {
    for from in DType::ALL {
        for to in DType::ALL {
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
            check(&k, 5);
        }
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
    for dtype in DType::ALL {
        for first in ops {
            for cols in [0, 1, 33] {
                check(&multi_pass(dtype, first, ReduceOp::Sum, cols), 17);
                check(&multi_pass(dtype, ReduceOp::Max, first, cols), 19);
            }
        }
    }
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

/// Compiled f32 transcendentals against f64 libm rounded once: the largest error in units in
/// the last place over a sweep. They call the interpreter's f64 functions, so the error is 0
/// ulp against the rounded f64 result (at most 0.5 ulp plus libm's own error).
#[test]
fn transcendental_accuracy_against_f64_libm() {
    let n = 4001;
    let xs: Vec<f32> = (0..n)
        .map(|i| -20.0 + 40.0 * i as f32 / (n - 1) as f32)
        .collect();
    let ops: [(UnaryOp, fn(f64) -> f64); 6] = [
        (UnaryOp::Exp, f64::exp),
        (UnaryOp::Tanh, f64::tanh),
        (UnaryOp::Sin, f64::sin),
        (UnaryOp::Log1p, f64::ln_1p),
        (UnaryOp::Sigmoid, |x| 1.0 / (1.0 + (-x).exp())),
        (UnaryOp::Erf, crate::scalar_ops::erf),
    ];
    for (op, f) in ops {
        let k = Kernel {
            name: "ulp".into(),
            shape: vec![n],
            reduce_axes: 0,
            args: vec![
                arg(DType::F32, n, Access::Read),
                arg(DType::F32, n, Access::Write),
            ],
            body: vec![
                Instr::Load {
                    arg: 0,
                    index: index(&[1]),
                },
                Instr::Unary {
                    op,
                    x: 0,
                    compute: DType::F32,
                },
                Instr::Store {
                    arg: 1,
                    index: index(&[1]),
                    x: 1,
                },
            ],
        };
        let input = Arc::new(Buffer::F32(xs.clone()));
        let Some(Buffer::F32(got)) = Backend::Cpu.run_kernel(&k, vec![input]).pop() else {
            panic!("f32 kernel returned another dtype")
        };
        let max_ulp = xs
            .iter()
            .zip(&got)
            .filter(|(x, _)| f(**x as f64).is_finite())
            .map(|(x, g)| {
                let want = f(*x as f64) as f32;
                (want.to_bits() as i64 - g.to_bits() as i64).unsigned_abs()
            })
            .max()
            .unwrap_or(0);
        assert_eq!(max_ulp, 0, "{op:?}: {max_ulp} ulp from rounded f64 libm");
    }
}
