//! Host scalars: the values of Python-style scalar arguments and of single elements.

use crate::DType;
use half::{bf16, f16};
use std::fmt;

/// A scalar as a user writes it: its kind (bool, int, float, complex) matters for type
/// promotion.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// A Python `bool`.
    Bool(bool),
    /// A Python `int`.
    Int(i64),
    /// A Python `float`.
    Float(f64),
    /// A Python `complex`: real and imaginary part.
    Complex(f64, f64),
}

impl Scalar {
    /// The value as a float (`true` is 1; a complex value's real part).
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as u8 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Float(x) | Scalar::Complex(x, _) => x,
        }
    }

    /// Integer value, truncating floats toward zero (saturating at the i64 range, NaN → 0; a
    /// complex value's real part).
    pub fn as_i64(self) -> i64 {
        match self {
            Scalar::Bool(b) => b as i64,
            Scalar::Int(i) => i,
            Scalar::Float(x) | Scalar::Complex(x, _) => x as i64,
        }
    }

    /// Is the value nonzero (a complex value: either part)?
    pub fn as_bool(self) -> bool {
        match self {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            Scalar::Float(x) => x != 0.0,
            Scalar::Complex(re, im) => re != 0.0 || im != 0.0,
        }
    }

    /// Real and imaginary part (a real value has imaginary part 0).
    pub fn as_complex(self) -> (f64, f64) {
        match self {
            Scalar::Complex(re, im) => (re, im),
            Scalar::Bool(_) | Scalar::Int(_) | Scalar::Float(_) => (self.as_f64(), 0.0),
        }
    }

    /// Is this a complex value?
    pub fn is_complex(self) -> bool {
        matches!(self, Scalar::Complex(..))
    }

    /// The dtype a Python scalar of this kind wraps to (float → the given default dtype,
    /// complex → its complex counterpart: PyTorch's default complex dtype).
    pub fn wrapped_dtype(self, default_float: DType) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => default_float,
            Scalar::Complex(..) => default_complex(default_float),
        }
    }

    /// Converts to the value representation of `dtype`, rounding and wrapping as a cast does
    /// (float → int truncates toward zero, ints wrap to the width, floats round to nearest even;
    /// complex → real keeps the real part, complex → bool tests both parts).
    pub fn cast(self, dtype: DType) -> Scalar {
        match dtype {
            DType::Bool => Scalar::Bool(self.as_bool()),
            DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
                let v = match self {
                    Scalar::Float(x) | Scalar::Complex(x, _) => float_to_i64(x),
                    Scalar::Bool(_) | Scalar::Int(_) => self.as_i64(),
                };
                Scalar::Int(wrap_int(v, dtype))
            }
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {
                Scalar::Float(round_float(self.as_f64(), dtype))
            }
            DType::C64 | DType::C128 => {
                let (re, im) = self.as_complex();
                let part = dtype.real();
                Scalar::Complex(round_float(re, part), round_float(im, part))
            }
        }
    }
}

/// PyTorch's default complex dtype for a default float dtype: `complex128` when it is
/// `float64`, else `complex64`.
pub fn default_complex(default_float: DType) -> DType {
    if default_float == DType::F64 {
        DType::C128
    } else {
        DType::C64
    }
}

/// Float → integer conversion as C++ on x86 behaves for in-range values (truncation);
/// out-of-range and NaN give i64::MIN like `cvttsd2si` does.
pub fn float_to_i64(x: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if x.is_nan() || !(-LIMIT..LIMIT).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// Wraps an integer to the width and signedness of `dtype` (two's complement).
pub fn wrap_int(v: i64, dtype: DType) -> i64 {
    match dtype {
        DType::Bool => (v != 0) as i64,
        DType::U8 => v as u8 as i64,
        DType::I8 => v as i8 as i64,
        DType::I16 => v as i16 as i64,
        DType::I32 => v as i32 as i64,
        DType::I64
        | DType::F16
        | DType::BF16
        | DType::F32
        | DType::F64
        | DType::C64
        | DType::C128 => v,
    }
}

/// An f64 as f16 the way PyTorch converts it (`c10::Half` is built from a `float`): rounded
/// to f32, then to f16, each to nearest even. (`half`'s own `from_f64` drops the low 32 bits of
/// the mantissa before rounding, which misrounds values just past a tie.)
pub fn to_f16(x: f64) -> f16 {
    f16::from_f32(x as f32)
}

/// An f64 as bf16 the way PyTorch converts it: rounded to f32, then to bf16 (see [`to_f16`]).
pub fn to_bf16(x: f64) -> bf16 {
    bf16::from_f32(x as f32)
}

/// Rounds an f64 to the nearest value representable in the float `dtype` (identity for f64);
/// f16 and bf16 through f32, as PyTorch does ([`to_f16`]).
pub fn round_float(x: f64, dtype: DType) -> f64 {
    match dtype {
        DType::F16 => to_f16(x).to_f64(),
        DType::BF16 => to_bf16(x).to_f64(),
        DType::F32 => x as f32 as f64,
        DType::F64
        | DType::Bool
        | DType::U8
        | DType::I8
        | DType::I16
        | DType::I32
        | DType::I64
        | DType::C64
        | DType::C128 => x,
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{}", if *b { "True" } else { "False" }),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x:?}"),
            // Like Python's repr, with both parts: `(1.0+2.0j)`, `(0.5-1.0j)`.
            Scalar::Complex(re, im) => {
                let sign = if im.is_sign_negative() { '-' } else { '+' };
                write!(f, "({re:?}{sign}{:?}j)", im.abs())
            }
        }
    }
}

impl From<bool> for Scalar {
    fn from(v: bool) -> Self {
        Scalar::Bool(v)
    }
}
impl From<i64> for Scalar {
    fn from(v: i64) -> Self {
        Scalar::Int(v)
    }
}
impl From<i32> for Scalar {
    fn from(v: i32) -> Self {
        Scalar::Int(v as i64)
    }
}
impl From<f64> for Scalar {
    fn from(v: f64) -> Self {
        Scalar::Float(v)
    }
}
impl From<f32> for Scalar {
    fn from(v: f32) -> Self {
        Scalar::Float(v as f64)
    }
}
impl From<num_complex::Complex<f32>> for Scalar {
    fn from(v: num_complex::Complex<f32>) -> Self {
        Scalar::Complex(v.re as f64, v.im as f64)
    }
}
impl From<num_complex::Complex<f64>> for Scalar {
    fn from(v: num_complex::Complex<f64>) -> Self {
        Scalar::Complex(v.re, v.im)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts_wrap_and_round() {
        assert_eq!(Scalar::Int(1000).cast(DType::U8), Scalar::Int(232));
        assert_eq!(Scalar::Float(-2.7).cast(DType::I32), Scalar::Int(-2));
        assert_eq!(
            Scalar::Float(0.1).cast(DType::F32),
            Scalar::Float(0.1f32 as f64)
        );
        assert_eq!(Scalar::Int(3).cast(DType::Bool), Scalar::Bool(true));
    }
}
