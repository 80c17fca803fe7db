//! The Rust functions compiled kernels call (registered with the JIT by the runtime, which
//! implements them with the reference interpreter's scalar semantics), and the op codes they
//! take (an op's position in its enum's `ALL`).

use smelt_ir::{BinaryOp, UnaryOp};

/// The code a compiled kernel passes to the unary helpers for `op`: its position in
/// [`UnaryOp::ALL`].
pub(crate) fn unary_code(op: UnaryOp) -> i64 {
    op.code() as i64
}

/// The code of a binary op: its position in [`BinaryOp::ALL`].
pub(crate) fn binary_code(op: BinaryOp) -> i64 {
    op.code() as i64
}

/// A helper's signature, in cranelift value kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HelperSig {
    /// `fn(code: i64, x: f64) -> f64`
    UnaryF64,
    /// `fn(code: i64, a: f64, b: f64) -> f64`
    BinaryF64,
    /// `fn(code: i64, x: i64) -> i64`
    UnaryI64,
    /// `fn(code: i64, a: i64, b: i64) -> i64`
    BinaryI64,
    /// `fn(code: i64, seed: i64, offset: i64, position: i64) -> i64`: a random draw's bits
    /// (`smelt_ir::random::draw`; `code` is `RandomDist::pack`).
    Random,
}

/// Every helper a kernel may call: its symbol and signature. The runtime must register all.
pub const HELPERS: [(&str, HelperSig); 5] = [
    ("smelt_unary_f64", HelperSig::UnaryF64),
    ("smelt_binary_f64", HelperSig::BinaryF64),
    ("smelt_unary_i64", HelperSig::UnaryI64),
    ("smelt_binary_i64", HelperSig::BinaryI64),
    ("smelt_random", HelperSig::Random),
];
