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
    /// Batched matrix product: input 0 viewed as `[*batch, M, K]`, input 1 as `[*batch, K, N]`,
    /// output `[*batch, M, N]` (the same batch dims, any number of them, stride 0 where
    /// broadcast). f32/f64 run through the `gemm` crate with the views' strides; other dtypes
    /// accumulate in f64 (floats) or wrapping i64 (ints) and round once.
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
    /// `out[p] = self[p with dim replaced by index[p]]`: input 0 `self`, input 1 the index
    /// (same rank as self), output the index's shape.
    Gather { dim: usize },
    /// `out[.., i, ..] = self[.., index[i], ..]` along `dim`: input 0 `self`, input 1 the 1-D
    /// index; output self's shape with `dim` resized to the index length.
    IndexSelect { dim: usize },
    /// `out[p] = flat(self)[index[p]]` (row-major flattening; negative indices count from the
    /// end): input 0 `self`, input 1 the index; output the index's shape.
    Take,
    /// Advanced indexing read: input 0 is the source viewed `[I_1..I_k, *rest]`, inputs 1..=k the
    /// index tensors viewed with their broadcast shape `B`; output `[*B, *rest]` with
    /// `out[b, r] = src[idx_1[b], .., idx_k[b], r]` (negative indices count from the end).
    Index { indices: usize },
    /// Advanced indexing write (`index_put`): input 0 the old storage version (whole),
    /// input 1 the values viewed `[*B, *rest]`, inputs 2..2+k the index tensors viewed `B`;
    /// the output is the next version, a copy of the old one with
    /// `out[target(idx_1[b], .., idx_k[b], r)] = values[b, r]` where the node's `out` view is the
    /// target `[I_1..I_k, *rest]`.
    IndexPut { indices: usize },
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
            LibraryOp::Gather { dim } => format!("gather[{dim}]"),
            LibraryOp::IndexSelect { dim } => format!("index_select[{dim}]"),
            LibraryOp::Take => "take".to_string(),
            LibraryOp::Index { indices } => format!("index[{indices}]"),
            LibraryOp::IndexPut { indices } => format!("index_put[{indices}]"),
        }
    }

    /// Number of inputs the op reads.
    pub fn arity(&self) -> usize {
        match self {
            LibraryOp::Matmul
            | LibraryOp::Gather { .. }
            | LibraryOp::IndexSelect { .. }
            | LibraryOp::Take => 2,
            LibraryOp::Index { indices } => 1 + indices,
            LibraryOp::IndexPut { indices } => 2 + indices,
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
