//! The closed operation enums shared by the graph IR and the kernel IR.

use crate::DType;

/// Defines an op enum from one list of `Variant => "name"`, with its `ALL` list, `name()`,
/// `from_name()` and `code()`: adding a variant there is the only edit, and every exhaustive
/// match on the enum then asks for its arm.
macro_rules! op_enum {
    (
        $(#[$meta:meta])*
        $enum:ident {
            $($(#[$vmeta:meta])* $variant:ident => $text:literal,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $enum {
            $($(#[$vmeta])* $variant,)*
        }

        impl $enum {
            /// Every op, in declaration order (position = [`Self::code`]).
            pub const ALL: &'static [$enum] = &[$($enum::$variant,)*];

            /// The op's name, as PyTorch spells it where PyTorch has it.
            pub fn name(self) -> &'static str {
                match self {
                    $($enum::$variant => $text,)*
                }
            }

            /// The op named `name` ([`Self::name`]).
            pub fn from_name(name: &str) -> Option<$enum> {
                $enum::ALL.iter().copied().find(|op| op.name() == name)
            }

            /// Its position in [`Self::ALL`]: the code compiled kernels pass to helpers.
            pub fn code(self) -> usize {
                self as usize
            }
        }
    };
}

op_enum! {
    /// Elementwise unary operations. `compute` dtypes are chosen by the frontend.
    UnaryOp {
        Neg => "neg",
        Abs => "abs",
        Sign => "sign",
        Exp => "exp",
        Expm1 => "expm1",
        Exp2 => "exp2",
        Log => "log",
        Log2 => "log2",
        Log1p => "log1p",
        Sqrt => "sqrt",
        Rsqrt => "rsqrt",
        Reciprocal => "reciprocal",
        Square => "square",
        Sin => "sin",
        Cos => "cos",
        Tan => "tan",
        Tanh => "tanh",
        Sigmoid => "sigmoid",
        Relu => "relu",
        Erf => "erf",
        Floor => "floor",
        Ceil => "ceil",
        Round => "round",
        Trunc => "trunc",
        LogicalNot => "logical_not",
        BitwiseNot => "bitwise_not",
        IsNan => "isnan",
        IsInf => "isinf",
        IsFinite => "isfinite",
        /// The argument of a complex number (`atan2(im, re)`); of a real one: π below 0, 0
        /// elsewhere, NaN for NaN.
        Angle => "angle",
    }
}

op_enum! {
    /// Elementwise binary operations.
    BinaryOp {
        Add => "add",
        Sub => "sub",
        Mul => "mul",
        /// True division (floats).
        Div => "div",
        /// Division rounding toward zero.
        DivTrunc => "div_trunc",
        /// Division rounding toward negative infinity.
        DivFloor => "div_floor",
        /// Python `%`: the sign of the divisor.
        Remainder => "remainder",
        /// C `fmod`: the sign of the dividend.
        Fmod => "fmod",
        Pow => "pow",
        Maximum => "maximum",
        Minimum => "minimum",
        Atan2 => "atan2",
        Eq => "eq",
        Ne => "ne",
        Lt => "lt",
        Le => "le",
        Gt => "gt",
        Ge => "ge",
        LogicalAnd => "logical_and",
        LogicalOr => "logical_or",
        LogicalXor => "logical_xor",
        BitAnd => "bitwise_and",
        BitOr => "bitwise_or",
        BitXor => "bitwise_xor",
    }
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
    /// `Matmul` then `+ c` as the two ops PyTorch runs for `a @ b + c`: input 2 is `c` viewed
    /// `[*batch, M, N]` (a bias row broadcast over the rows, typically), the product is rounded
    /// to the dtype and the sum rounded again; with `relu`, then `relu` of the sum (a third op,
    /// exact). Made by the `fold_bias` pass, whose products add `c` (and clamp) where each
    /// block of the output is still in cache: the half-precision products' rounding pass or
    /// epilogue, an f32 product's row blocks.
    MatmulAdd { relu: bool },
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
    /// Reduces runs of equal keys (sparse COO coalescing and densifying): input 0 the source
    /// viewed `[n, *rest]`, input 1 the int64 keys `[n]` (non-decreasing, so equal keys are
    /// adjacent), input 2 the int64 slots `[n]`. For each run of equal keys starting at
    /// position `i`, output row `slot[i]` of `[m, *rest]` gets the run's sum of source rows
    /// (`first == false`: in order, floats accumulated in f64, integers in wrapping i64, bools
    /// as or, rounded once) or its first row (`first == true`). Rows no run writes stay zero;
    /// a slot outside `[0, m)` writes nothing.
    Segment { first: bool },
    /// Sparse × dense product (SpMM): input 0 the int64 row of each entry `[nnz]`
    /// (non-decreasing: a row's entries are adjacent), input 1 their int64 columns `[nnz]`,
    /// input 2 their values `[nnz]`, input 3 the dense `[K, N]`; output `[M, N]` with
    /// `out[m, n] = Σ values[e]·dense[cols[e], n]` over the entries of row `m` in entry order.
    /// Accumulates in the value dtype for f32/f64 (f32 for f16/bf16, wrapping i64 for
    /// integers) and rounds once; an entry whose row or column is out of range adds nothing.
    SpMM,
}

impl LibraryOp {
    pub fn name(&self) -> String {
        match self {
            LibraryOp::Matmul => "matmul".to_string(),
            LibraryOp::MatmulAdd { relu: false } => "matmul_add".to_string(),
            LibraryOp::MatmulAdd { relu: true } => "matmul_add_relu".to_string(),
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
            LibraryOp::Segment { first: false } => "segment_sum".to_string(),
            LibraryOp::Segment { first: true } => "segment_first".to_string(),
            LibraryOp::SpMM => "spmm".to_string(),
        }
    }

    /// Whether the op's output starts as its input 0 (the old version of a storage, read
    /// whole) and updates it (`index_put`), rather than starting as zeros.
    pub fn updates_input_0(&self) -> bool {
        match self {
            LibraryOp::IndexPut { .. } => true,
            LibraryOp::Matmul
            | LibraryOp::MatmulAdd { .. }
            | LibraryOp::ArgMax { .. }
            | LibraryOp::ArgMin { .. }
            | LibraryOp::CumSum { .. }
            | LibraryOp::CumProd { .. }
            | LibraryOp::Sort { .. }
            | LibraryOp::Gather { .. }
            | LibraryOp::IndexSelect { .. }
            | LibraryOp::Take
            | LibraryOp::Index { .. }
            | LibraryOp::Segment { .. }
            | LibraryOp::SpMM => false,
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
            LibraryOp::Segment { .. } | LibraryOp::MatmulAdd { .. } => 3,
            LibraryOp::SpMM => 4,
            LibraryOp::ArgMax { .. }
            | LibraryOp::ArgMin { .. }
            | LibraryOp::CumSum { .. }
            | LibraryOp::CumProd { .. }
            | LibraryOp::Sort { .. } => 1,
        }
    }
}

op_enum! {
    /// Reductions over one or more axes.
    ReduceOp {
        Sum => "sum",
        Prod => "prod",
        Max => "max",
        Min => "min",
        All => "all",
        Any => "any",
    }
}

/// What a unary op computes on bools (0 or 1): every backend's bool arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnBool {
    /// `!x` (`logical_not`, `bitwise_not`).
    Not,
    /// A constant (`isnan`, `isinf` are false, `isfinite` true).
    Const(bool),
    /// `x` itself (what the frontend lets through: `abs`, `floor` …).
    Same,
}

/// What a unary op computes in an integer dtype: every backend's integer arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnInt {
    /// Two's-complement wrapping negation.
    Neg,
    /// Wrapping absolute value (`abs(MIN) = MIN`).
    Abs,
    /// -1, 0 or 1.
    Sign,
    /// Wrapping `x * x`.
    Square,
    /// `max(x, 0)`.
    Relu,
    /// `x` itself (rounding an integer).
    Same,
    /// `!x`.
    BitNot,
    /// `x == 0`, a bool.
    IsZero,
    /// A bool constant.
    Const(bool),
    /// A float-only op: the value through f64, the result cast back (the frontend promotes
    /// such ops to a float dtype first; this keeps every backend total).
    ViaFloat,
}

impl UnaryOp {
    /// What the op computes on bools.
    pub fn on_bool(self) -> OnBool {
        match self {
            UnaryOp::LogicalNot | UnaryOp::BitwiseNot => OnBool::Not,
            UnaryOp::IsNan | UnaryOp::IsInf => OnBool::Const(false),
            UnaryOp::IsFinite => OnBool::Const(true),
            UnaryOp::Neg
            | UnaryOp::Abs
            | UnaryOp::Sign
            | UnaryOp::Exp
            | UnaryOp::Expm1
            | UnaryOp::Exp2
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
            | UnaryOp::Angle => OnBool::Same,
        }
    }

    /// What the op computes in an integer dtype.
    pub fn on_int(self) -> OnInt {
        match self {
            UnaryOp::Neg => OnInt::Neg,
            UnaryOp::Abs => OnInt::Abs,
            UnaryOp::Sign => OnInt::Sign,
            UnaryOp::Square => OnInt::Square,
            UnaryOp::Relu => OnInt::Relu,
            UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Trunc => OnInt::Same,
            UnaryOp::BitwiseNot => OnInt::BitNot,
            UnaryOp::LogicalNot => OnInt::IsZero,
            UnaryOp::IsNan | UnaryOp::IsInf => OnInt::Const(false),
            UnaryOp::IsFinite => OnInt::Const(true),
            UnaryOp::Exp
            | UnaryOp::Expm1
            | UnaryOp::Exp2
            | UnaryOp::Log
            | UnaryOp::Log2
            | UnaryOp::Log1p
            | UnaryOp::Sqrt
            | UnaryOp::Rsqrt
            | UnaryOp::Reciprocal
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Tan
            | UnaryOp::Tanh
            | UnaryOp::Sigmoid
            | UnaryOp::Erf
            | UnaryOp::Angle => OnInt::ViaFloat,
        }
    }

    /// Does the op only make sense on floats (an integer or bool input computes in the
    /// default float dtype, as in PyTorch)?
    pub fn is_float_only(self) -> bool {
        self.on_int() == OnInt::ViaFloat
    }

    /// Is the op a transcendental function (an approximation, not a correctly rounded
    /// arithmetic operation, on every backend)?
    pub fn is_transcendental(self) -> bool {
        match self {
            UnaryOp::Exp
            | UnaryOp::Expm1
            | UnaryOp::Exp2
            | UnaryOp::Log
            | UnaryOp::Log2
            | UnaryOp::Log1p
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Tan
            | UnaryOp::Tanh
            | UnaryOp::Sigmoid
            | UnaryOp::Erf => true,
            UnaryOp::Neg
            | UnaryOp::Abs
            | UnaryOp::Sign
            | UnaryOp::Sqrt
            | UnaryOp::Rsqrt
            | UnaryOp::Reciprocal
            | UnaryOp::Square
            | UnaryOp::Relu
            | UnaryOp::Floor
            | UnaryOp::Ceil
            | UnaryOp::Round
            | UnaryOp::Trunc
            | UnaryOp::LogicalNot
            | UnaryOp::BitwiseNot
            | UnaryOp::IsNan
            | UnaryOp::IsInf
            | UnaryOp::IsFinite
            | UnaryOp::Angle => false,
        }
    }

    /// The dtype of the result when computing in `compute` (`abs` and `angle` of a complex
    /// value are real).
    pub fn result_dtype(self, compute: DType) -> DType {
        match self {
            UnaryOp::LogicalNot | UnaryOp::IsNan | UnaryOp::IsInf | UnaryOp::IsFinite => {
                DType::Bool
            }
            UnaryOp::Abs | UnaryOp::Angle => compute.real(),
            UnaryOp::Neg
            | UnaryOp::Sign
            | UnaryOp::Exp
            | UnaryOp::Expm1
            | UnaryOp::Exp2
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_is_listed_once_with_its_code_and_name() {
        for (i, op) in UnaryOp::ALL.iter().enumerate() {
            assert_eq!(op.code(), i);
            assert_eq!(UnaryOp::from_name(op.name()), Some(*op));
        }
        for (i, op) in BinaryOp::ALL.iter().enumerate() {
            assert_eq!(op.code(), i);
            assert_eq!(BinaryOp::from_name(op.name()), Some(*op));
        }
        assert_eq!(ReduceOp::from_name("prod"), Some(ReduceOp::Prod));
        assert_eq!(UnaryOp::from_name("nope"), None);
        // Float-only ops are exactly those an integer computes through f64.
        assert!(UnaryOp::Exp.is_float_only() && !UnaryOp::Abs.is_float_only());
        assert!(
            UnaryOp::ALL
                .iter()
                .all(|op| !op.is_transcendental() || op.is_float_only())
        );
    }
}
