//! The closed operation enums shared by the graph IR and the kernel IR.

use crate::DType;

/// Elementwise unary operations. `compute` dtypes are chosen by the frontend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Abs,
    Sign,
    Exp,
    Expm1,
    Log,
    Log2,
    Log1p,
    Sqrt,
    Rsqrt,
    Reciprocal,
    Square,
    Sin,
    Cos,
    Tan,
    Tanh,
    Sigmoid,
    Relu,
    Erf,
    Floor,
    Ceil,
    Round,
    Trunc,
    LogicalNot,
    BitwiseNot,
    IsNan,
    IsInf,
    IsFinite,
}

/// Elementwise binary operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    /// True division (floats).
    Div,
    /// Division rounding toward zero.
    DivTrunc,
    /// Division rounding toward negative infinity.
    DivFloor,
    /// Python `%`: the sign of the divisor.
    Remainder,
    /// C `fmod`: the sign of the dividend.
    Fmod,
    Pow,
    Maximum,
    Minimum,
    Atan2,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LogicalAnd,
    LogicalOr,
    LogicalXor,
    BitAnd,
    BitOr,
    BitXor,
}

/// Ops run by a library routine rather than generated code (DESIGN §7): each reads its
/// inputs through the edge views and writes its output through the node's `out` view.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LibraryOp {
    /// Batched matrix product: input 0 viewed as `[B, M, K]`, input 1 as `[B, K, N]`, output
    /// `[B, M, N]`; accumulates in f64 (floats) or wrapping i64 (ints), rounds once.
    Matmul,
    /// Index (int64) of the largest element over the input view's trailing `axes` dims, read
    /// in row-major order; output has the kept (leading) shape. First occurrence wins ties;
    /// NaN counts as larger than everything (the first NaN wins).
    ArgMax { axes: usize },
    /// As [`LibraryOp::ArgMax`] for the smallest element (NaN counts as smallest).
    ArgMin { axes: usize },
    /// Inclusive prefix sum along `dim` of the input view, written through the output view
    /// (same shape). Each element is cast to the output dtype first; accumulates in f64
    /// (floats) or wrapping i64 (ints) from index 0 upward and rounds every output once.
    CumSum { dim: usize },
    /// Inclusive prefix product along `dim`, accumulated as [`LibraryOp::CumSum`].
    CumProd { dim: usize },
    /// Stable sort along `dim` (NaN sorts as the largest value; ties keep their order in both
    /// directions). Writes the sorted values (`indices == false`, output dtype = input dtype)
    /// or the int64 positions they came from (`indices == true`).
    Sort {
        dim: usize,
        descending: bool,
        indices: bool,
    },
}

impl LibraryOp {
    pub fn name(&self) -> String {
        match self {
            LibraryOp::Matmul => "matmul".to_string(),
            LibraryOp::ArgMax { axes } => format!("argmax[{axes}]"),
            LibraryOp::ArgMin { axes } => format!("argmin[{axes}]"),
            LibraryOp::CumSum { dim } => format!("cumsum[{dim}]"),
            LibraryOp::CumProd { dim } => format!("cumprod[{dim}]"),
            LibraryOp::Sort {
                dim,
                descending,
                indices,
            } => format!(
                "sort_{}[{dim}{}]",
                if *indices { "indices" } else { "values" },
                if *descending { ",descending" } else { "" }
            ),
        }
    }

    /// Number of inputs the op reads.
    pub fn arity(&self) -> usize {
        match self {
            LibraryOp::Matmul => 2,
            LibraryOp::ArgMax { .. }
            | LibraryOp::ArgMin { .. }
            | LibraryOp::CumSum { .. }
            | LibraryOp::CumProd { .. }
            | LibraryOp::Sort { .. } => 1,
        }
    }
}

/// Reductions over one or more axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Prod,
    Max,
    Min,
    All,
    Any,
}

impl UnaryOp {
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Abs => "abs",
            UnaryOp::Sign => "sign",
            UnaryOp::Exp => "exp",
            UnaryOp::Expm1 => "expm1",
            UnaryOp::Log => "log",
            UnaryOp::Log2 => "log2",
            UnaryOp::Log1p => "log1p",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Reciprocal => "reciprocal",
            UnaryOp::Square => "square",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Tan => "tan",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Relu => "relu",
            UnaryOp::Erf => "erf",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Round => "round",
            UnaryOp::Trunc => "trunc",
            UnaryOp::LogicalNot => "logical_not",
            UnaryOp::BitwiseNot => "bitwise_not",
            UnaryOp::IsNan => "isnan",
            UnaryOp::IsInf => "isinf",
            UnaryOp::IsFinite => "isfinite",
        }
    }

    /// The dtype of the result when computing in `compute`.
    pub fn result_dtype(self, compute: DType) -> DType {
        match self {
            UnaryOp::LogicalNot | UnaryOp::IsNan | UnaryOp::IsInf | UnaryOp::IsFinite => {
                DType::Bool
            }
            UnaryOp::Neg
            | UnaryOp::Abs
            | UnaryOp::Sign
            | UnaryOp::Exp
            | UnaryOp::Expm1
            | UnaryOp::Log
            | UnaryOp::Log2
            | UnaryOp::Log1p
            | UnaryOp::Sqrt
            | UnaryOp::Rsqrt
            | UnaryOp::Reciprocal
            | UnaryOp::Square
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Tan
            | UnaryOp::Tanh
            | UnaryOp::Sigmoid
            | UnaryOp::Relu
            | UnaryOp::Erf
            | UnaryOp::Floor
            | UnaryOp::Ceil
            | UnaryOp::Round
            | UnaryOp::Trunc
            | UnaryOp::BitwiseNot => compute,
        }
    }
}

impl BinaryOp {
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::DivTrunc => "div_trunc",
            BinaryOp::DivFloor => "div_floor",
            BinaryOp::Remainder => "remainder",
            BinaryOp::Fmod => "fmod",
            BinaryOp::Pow => "pow",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Minimum => "minimum",
            BinaryOp::Atan2 => "atan2",
            BinaryOp::Eq => "eq",
            BinaryOp::Ne => "ne",
            BinaryOp::Lt => "lt",
            BinaryOp::Le => "le",
            BinaryOp::Gt => "gt",
            BinaryOp::Ge => "ge",
            BinaryOp::LogicalAnd => "logical_and",
            BinaryOp::LogicalOr => "logical_or",
            BinaryOp::LogicalXor => "logical_xor",
            BinaryOp::BitAnd => "bitwise_and",
            BinaryOp::BitOr => "bitwise_or",
            BinaryOp::BitXor => "bitwise_xor",
        }
    }

    /// Does the op produce bool whatever it computes in?
    pub fn is_predicate(self) -> bool {
        match self {
            BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Lt
            | BinaryOp::Le
            | BinaryOp::Gt
            | BinaryOp::Ge
            | BinaryOp::LogicalAnd
            | BinaryOp::LogicalOr
            | BinaryOp::LogicalXor => true,
            BinaryOp::Add
            | BinaryOp::Sub
            | BinaryOp::Mul
            | BinaryOp::Div
            | BinaryOp::DivTrunc
            | BinaryOp::DivFloor
            | BinaryOp::Remainder
            | BinaryOp::Fmod
            | BinaryOp::Pow
            | BinaryOp::Maximum
            | BinaryOp::Minimum
            | BinaryOp::Atan2
            | BinaryOp::BitAnd
            | BinaryOp::BitOr
            | BinaryOp::BitXor => false,
        }
    }

    pub fn result_dtype(self, compute: DType) -> DType {
        if self.is_predicate() {
            DType::Bool
        } else {
            compute
        }
    }
}

impl ReduceOp {
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::All => "all",
            ReduceOp::Any => "any",
        }
    }
}
