//! Element types and PyTorch's type-promotion lattice (SEMANTICS.md §5.2).

use std::fmt;

/// An element type. The order of variants is the order of PyTorch's `ScalarType` for the
/// types smelt has; it is not used for promotion (see [`promote_types`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// `torch.bool`.
    Bool,
    /// `torch.uint8`.
    U8,
    /// `torch.int8`.
    I8,
    /// `torch.int16`.
    I16,
    /// `torch.int32`.
    I32,
    /// `torch.int64`.
    I64,
    /// `torch.float16`.
    F16,
    /// `torch.bfloat16`.
    BF16,
    /// `torch.float32`.
    F32,
    /// `torch.float64`.
    F64,
    /// `torch.complex64`: two float32 parts, real then imaginary.
    C64,
    /// `torch.complex128`: two float64 parts, real then imaginary.
    C128,
}

/// The categories that decide promotion between buckets: bool < integer < floating < complex.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    /// `bool`.
    Bool,
    /// The signed and unsigned integer dtypes.
    Integer,
    /// The floating dtypes.
    Floating,
    /// The complex dtypes.
    Complex,
}

impl DType {
    /// Every dtype, in variant order.
    pub const ALL: [DType; 12] = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::C64,
        DType::C128,
    ];

    /// Every real (not complex) dtype, in variant order: the element types of buffers and of
    /// kernel IR values. A complex storage is a buffer of its real counterpart, twice as long
    /// ([`DType::storage`]); the lowering splits complex values into their two parts.
    pub const REAL: [DType; 10] = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }

    /// Bool, integer or floating: what decides promotion between a tensor and a scalar.
    pub fn category(self) -> Category {
        match self {
            DType::Bool => Category::Bool,
            DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => Category::Integer,
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => Category::Floating,
            DType::C64 | DType::C128 => Category::Complex,
        }
    }

    /// Is this a complex dtype (`tensor.is_complex()`)?
    pub fn is_complex(self) -> bool {
        self.category() == Category::Complex
    }

    /// The real counterpart of a complex dtype (`complex64` → `float32`, `complex128` →
    /// `float64`: the type of each part); every real dtype is its own.
    pub fn real(self) -> DType {
        match self {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            DType::Bool
            | DType::U8
            | DType::I8
            | DType::I16
            | DType::I32
            | DType::I64
            | DType::F16
            | DType::BF16
            | DType::F32
            | DType::F64 => self,
        }
    }

    /// The complex dtype whose parts are `self` (`float32` → `complex64`, `float64` →
    /// `complex128`; a complex dtype is its own); `None` where PyTorch has no such type smelt
    /// supports (`float16` would give `complex32`, `bfloat16` has none) or for bool and integers.
    pub fn complex(self) -> Option<DType> {
        match self {
            DType::F32 | DType::C64 => Some(DType::C64),
            DType::F64 | DType::C128 => Some(DType::C128),
            DType::Bool
            | DType::U8
            | DType::I8
            | DType::I16
            | DType::I32
            | DType::I64
            | DType::F16
            | DType::BF16 => None,
        }
    }

    /// The element type of the buffer holding a storage of this dtype: the real counterpart
    /// ([`DType::real`]); a complex storage of `n` elements is a buffer of `2n` parts.
    pub fn storage(self) -> DType {
        self.real()
    }

    /// Buffer elements per element: 2 for complex dtypes (real, imaginary), else 1.
    pub fn parts(self) -> usize {
        if self.is_complex() { 2 } else { 1 }
    }

    /// Is this a floating dtype (`torch.is_floating_point`)?
    pub fn is_float(self) -> bool {
        self.category() == Category::Floating
    }

    /// Is this an integer dtype (bool is not)?
    pub fn is_int(self) -> bool {
        self.category() == Category::Integer
    }

    /// Is this `bool`?
    pub fn is_bool(self) -> bool {
        self == DType::Bool
    }

    /// The dtype values of this dtype are computed in: f16 and bf16 in f32 (loaded, widened,
    /// computed, rounded back when stored), as PyTorch's CPU kernels and every smelt backend
    /// do; every other dtype in itself.
    pub fn compute_dtype(self) -> DType {
        match self {
            DType::F16 | DType::BF16 => DType::F32,
            DType::Bool
            | DType::U8
            | DType::I8
            | DType::I16
            | DType::I32
            | DType::I64
            | DType::F32
            | DType::F64
            | DType::C64
            | DType::C128 => self,
        }
    }

    /// The dtype a sum or product of values of this dtype accumulates in on the reference
    /// backend (and in the cpu backend's partial sums): every float in f64, every integer in
    /// wrapping i64, bools as bools.
    pub fn accumulator(self) -> DType {
        match self.category() {
            Category::Complex => DType::C128,
            Category::Floating => DType::F64,
            Category::Integer => DType::I64,
            Category::Bool => DType::Bool,
        }
    }

    /// PyTorch's name without the `torch.` prefix (`float32`, `int64`, `bool` …).
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::C64 => "complex64",
            DType::C128 => "complex128",
        }
    }

    /// PyTorch's C++ type name as it appears in error messages (`Float`, `Long` …).
    pub fn torch_name(self) -> &'static str {
        match self {
            DType::Bool => "Bool",
            DType::U8 => "Byte",
            DType::I8 => "Char",
            DType::I16 => "Short",
            DType::I32 => "Int",
            DType::I64 => "Long",
            DType::F16 => "Half",
            DType::BF16 => "BFloat16",
            DType::F32 => "Float",
            DType::F64 => "Double",
            DType::C64 => "ComplexFloat",
            DType::C128 => "ComplexDouble",
        }
    }

    /// Parses the names of [`DType::name`] (also accepts `float`, `double`, `long`, `int`, `half`).
    pub fn parse(s: &str) -> Option<DType> {
        Some(match s {
            "bool" => DType::Bool,
            "uint8" => DType::U8,
            "int8" => DType::I8,
            "int16" | "short" => DType::I16,
            "int32" | "int" => DType::I32,
            "int64" | "long" => DType::I64,
            "float16" | "half" => DType::F16,
            "bfloat16" => DType::BF16,
            "float32" | "float" => DType::F32,
            "float64" | "double" => DType::F64,
            "complex64" | "cfloat" => DType::C64,
            "complex128" | "cdouble" => DType::C128,
            _ => return None,
        })
    }

    /// May a value of `self` be written into a tensor of `to` by an in-place op
    /// (c10 `canCast`: no complex → non-complex, no floating → integral, no non-bool → bool)?
    pub fn can_cast_to(self, to: DType) -> bool {
        let complex_to_real = self.is_complex() && !to.is_complex();
        let float_to_int = self.is_float() && !to.is_float() && !to.is_complex();
        let to_bool = !self.is_bool() && to.is_bool();
        !(complex_to_real || float_to_int || to_bool)
    }
}

/// The invariant every backend's match on the dtype of a kernel argument or value relies on
/// for its complex arms: kernel IR is real ([`crate::Kernel::verify`]; the lowering splits a
/// complex value into its parts and a complex buffer into twice as many real elements).
pub const REAL_KERNELS: &str =
    "invariant: kernel IR holds real dtypes only (the lowering splits complex values in two)";

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `torch.promote_types(a, b)`: the pairwise promotion table of SEMANTICS.md §5.2, with
/// complex above floating: a complex dtype and a float take the complex dtype wide enough for
/// both (`complex64` with `float64` is `complex128`), and integers or bool take the complex
/// dtype. (`float16`/`bfloat16` stay below `complex64`; PyTorch's `complex32` is left out.)
pub fn promote_types(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    match (a.category(), b.category()) {
        (Category::Complex, Category::Complex) => {
            if a == C128 || b == C128 {
                C128
            } else {
                C64
            }
        }
        (Category::Complex, Category::Floating) => {
            if b == F64 {
                C128
            } else {
                a
            }
        }
        (Category::Floating, Category::Complex) => {
            if a == F64 {
                C128
            } else {
                b
            }
        }
        (Category::Complex, _) => a,
        (_, Category::Complex) => b,
        (Category::Bool, _) => b,
        (_, Category::Bool) => a,
        (Category::Integer, Category::Floating) => b,
        (Category::Floating, Category::Integer) => a,
        (Category::Integer, Category::Integer) => match (a, b) {
            (U8, I8) | (I8, U8) => I16,
            (U8, x) | (x, U8) => x,
            _ => {
                if a.size() >= b.size() {
                    a
                } else {
                    b
                }
            }
        },
        (Category::Floating, Category::Floating) => match (a, b) {
            (F16, BF16) | (BF16, F16) => F32,
            _ => {
                if a.size() >= b.size() {
                    a
                } else {
                    b
                }
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promotion_table_rows() {
        use DType::*;
        assert_eq!(promote_types(U8, I8), I16);
        assert_eq!(promote_types(I64, F16), F16);
        assert_eq!(promote_types(F16, BF16), F32);
        assert_eq!(promote_types(Bool, U8), U8);
        assert_eq!(promote_types(I16, U8), I16);
        assert_eq!(promote_types(BF16, F64), F64);
        for a in DType::ALL {
            for b in DType::ALL {
                assert_eq!(promote_types(a, b), promote_types(b, a));
            }
        }
    }

    #[test]
    fn can_cast_rules() {
        assert!(!DType::F32.can_cast_to(DType::I32));
        assert!(!DType::I64.can_cast_to(DType::Bool));
        assert!(DType::I64.can_cast_to(DType::I8));
        assert!(DType::F64.can_cast_to(DType::F16));
        assert!(DType::Bool.can_cast_to(DType::Bool));
    }
}
