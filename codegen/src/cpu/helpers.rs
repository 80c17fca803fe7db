//! The Rust functions compiled kernels call (registered with the JIT by the runtime, which
//! implements them with the reference interpreter's scalar semantics), and the op codes they
//! take.

use smelt_ir::{BinaryOp, UnaryOp};

/// The unary op with code `i` is `UNARY_OPS[i]`.
pub const UNARY_OPS: [UnaryOp; 28] = [
    UnaryOp::Neg,
    UnaryOp::Abs,
    UnaryOp::Sign,
    UnaryOp::Exp,
    UnaryOp::Expm1,
    UnaryOp::Log,
    UnaryOp::Log2,
    UnaryOp::Log1p,
    UnaryOp::Sqrt,
    UnaryOp::Rsqrt,
    UnaryOp::Reciprocal,
    UnaryOp::Square,
    UnaryOp::Sin,
    UnaryOp::Cos,
    UnaryOp::Tan,
    UnaryOp::Tanh,
    UnaryOp::Sigmoid,
    UnaryOp::Relu,
    UnaryOp::Erf,
    UnaryOp::Floor,
    UnaryOp::Ceil,
    UnaryOp::Round,
    UnaryOp::Trunc,
    UnaryOp::LogicalNot,
    UnaryOp::BitwiseNot,
    UnaryOp::IsNan,
    UnaryOp::IsInf,
    UnaryOp::IsFinite,
];

/// The binary op with code `i` is `BINARY_OPS[i]`.
pub const BINARY_OPS: [BinaryOp; 24] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::DivTrunc,
    BinaryOp::DivFloor,
    BinaryOp::Remainder,
    BinaryOp::Fmod,
    BinaryOp::Pow,
    BinaryOp::Maximum,
    BinaryOp::Minimum,
    BinaryOp::Atan2,
    BinaryOp::Eq,
    BinaryOp::Ne,
    BinaryOp::Lt,
    BinaryOp::Le,
    BinaryOp::Gt,
    BinaryOp::Ge,
    BinaryOp::LogicalAnd,
    BinaryOp::LogicalOr,
    BinaryOp::LogicalXor,
    BinaryOp::BitAnd,
    BinaryOp::BitOr,
    BinaryOp::BitXor,
];

pub(crate) fn unary_code(op: UnaryOp) -> i64 {
    UNARY_OPS
        .iter()
        .position(|o| *o == op)
        .expect("invariant: UNARY_OPS lists every unary op") as i64
}

pub(crate) fn binary_code(op: BinaryOp) -> i64 {
    BINARY_OPS
        .iter()
        .position(|o| *o == op)
        .expect("invariant: BINARY_OPS lists every binary op") as i64
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
}

/// Every helper a kernel may call: its symbol and signature. The runtime must register all.
pub const HELPERS: [(&str, HelperSig); 4] = [
    ("smelt_unary_f64", HelperSig::UnaryF64),
    ("smelt_binary_f64", HelperSig::BinaryF64),
    ("smelt_unary_i64", HelperSig::UnaryI64),
    ("smelt_binary_i64", HelperSig::BinaryI64),
];
