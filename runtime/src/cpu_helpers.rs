//! The Rust functions compiled kernels call (codegen's `HELPERS`): the reference interpreter's
//! scalar semantics behind a C ABI, so a JIT kernel's transcendental or integer division
//! answers exactly as the interpreter does.

use crate::scalar_ops::{binary, unary};
use smelt_ir::random::{self, RandomDist};
use smelt_ir::{BinaryOp, DType, Scalar, UnaryOp};

fn unary_op(code: i64) -> UnaryOp {
    UnaryOp::ALL[code as usize]
}

fn binary_op(code: i64) -> BinaryOp {
    BinaryOp::ALL[code as usize]
}

extern "C" fn smelt_unary_f64(code: i64, x: f64) -> f64 {
    unary(unary_op(code), Scalar::Float(x), DType::F64).as_f64()
}

extern "C" fn smelt_binary_f64(code: i64, a: f64, b: f64) -> f64 {
    binary(
        binary_op(code),
        Scalar::Float(a),
        Scalar::Float(b),
        DType::F64,
    )
    .as_f64()
}

extern "C" fn smelt_unary_i64(code: i64, x: i64) -> i64 {
    unary(unary_op(code), Scalar::Int(x), DType::I64).as_i64()
}

extern "C" fn smelt_binary_i64(code: i64, a: i64, b: i64) -> i64 {
    binary(binary_op(code), Scalar::Int(a), Scalar::Int(b), DType::I64).as_i64()
}

extern "C" fn smelt_random(code: i64, seed: i64, offset: i64, position: i64) -> i64 {
    let (dist, dtype) = RandomDist::unpack(code).expect("kernels pass RandomDist::pack codes");
    random::draw(dist, dtype, seed, offset, position) as i64
}

/// Every helper's symbol and address, for `CpuJit::new`.
pub(crate) fn symbols() -> Vec<(&'static str, *const u8)> {
    vec![
        ("smelt_unary_f64", smelt_unary_f64 as *const u8),
        ("smelt_binary_f64", smelt_binary_f64 as *const u8),
        ("smelt_unary_i64", smelt_unary_i64 as *const u8),
        ("smelt_binary_i64", smelt_binary_i64 as *const u8),
        ("smelt_random", smelt_random as *const u8),
    ]
}
