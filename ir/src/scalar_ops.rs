//! Scalar semantics of every kernel IR operation, shared by the reference interpreter and by
//! constant folding: PyTorch's results for each dtype, computed in f64/i64 and rounded or
//! wrapped to the compute dtype once.

use crate::scalar::{round_float, wrap_int};
use crate::{BinaryOp, DType, OnBool, OnInt, ReduceOp, Scalar, UnaryOp};

fn fl(x: f64, dtype: DType) -> Scalar {
    Scalar::Float(round_float(x, dtype))
}

fn int(x: i64, dtype: DType) -> Scalar {
    if dtype == DType::Bool {
        Scalar::Bool(x != 0)
    } else {
        Scalar::Int(wrap_int(x, dtype))
    }
}

/// The error function (Abramowitz–Stegun 7.1.26 is too coarse; this uses the series/continued
/// fraction split with ~1e-15 relative accuracy).
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let ax = x.abs();
    if ax < 2.5 {
        // Maclaurin series: erf(x) = 2/sqrt(pi) * Σ (-1)^n x^(2n+1) / (n! (2n+1))
        let mut sum = 0.0;
        let mut term = ax;
        let x2 = ax * ax;
        let mut n = 0.0;
        loop {
            let t = term / (2.0 * n + 1.0);
            sum += t;
            if t.abs() <= 1e-17 * sum.abs() || n > 200.0 {
                break;
            }
            n += 1.0;
            term *= -x2 / n;
        }
        let r = sum * std::f64::consts::FRAC_2_SQRT_PI;
        return if x < 0.0 { -r } else { r };
    }
    if ax > 6.0 {
        return x.signum();
    }
    // Continued fraction for erfc (Lentz), good for x >= 2.5.
    let x2 = ax * ax;
    let mut f = ax;
    let mut c = ax;
    let mut d = 0.0;
    for k in 1..200 {
        let a = k as f64 * 0.5;
        d = ax + a * d;
        d = if d == 0.0 { 1e-300 } else { 1.0 / d };
        c = ax + a / c;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    let erfc = (-x2).exp() / f / std::f64::consts::PI.sqrt();
    let r = 1.0 - erfc;
    if x < 0.0 { -r } else { r }
}

/// `op(x)` computed in `compute`, a real dtype: kernel IR holds no complex values (the
/// lowering splits them, `complex.rs`), and constant folding leaves complex nodes alone.
pub fn unary(op: UnaryOp, x: Scalar, compute: DType) -> Scalar {
    assert!(
        !compute.is_complex(),
        "invariant: scalar semantics are those of real dtypes"
    );
    if compute.is_float() {
        let v = x.as_f64();
        let r = match op {
            UnaryOp::Neg => -v,
            UnaryOp::Abs => v.abs(),
            UnaryOp::Sign => {
                if v.is_nan() {
                    0.0
                } else {
                    ((v > 0.0) as i32 - (v < 0.0) as i32) as f64
                }
            }
            UnaryOp::Exp => v.exp(),
            UnaryOp::Expm1 => v.exp_m1(),
            UnaryOp::Exp2 => v.exp2(),
            UnaryOp::Log => v.ln(),
            UnaryOp::Log2 => v.log2(),
            UnaryOp::Log1p => v.ln_1p(),
            UnaryOp::Sqrt => v.sqrt(),
            UnaryOp::Rsqrt => 1.0 / v.sqrt(),
            UnaryOp::Reciprocal => 1.0 / v,
            UnaryOp::Square => v * v,
            UnaryOp::Sin => v.sin(),
            UnaryOp::Cos => v.cos(),
            UnaryOp::Tan => v.tan(),
            UnaryOp::Tanh => v.tanh(),
            UnaryOp::Sigmoid => 1.0 / (1.0 + (-v).exp()),
            UnaryOp::Relu => {
                if v.is_nan() || v > 0.0 {
                    v
                } else {
                    0.0
                }
            }
            UnaryOp::Erf => erf(v),
            UnaryOp::Floor => v.floor(),
            UnaryOp::Ceil => v.ceil(),
            UnaryOp::Round => v.round_ties_even(),
            UnaryOp::Trunc => v.trunc(),
            UnaryOp::LogicalNot => return Scalar::Bool(v == 0.0),
            UnaryOp::BitwiseNot => return Scalar::Float(v),
            UnaryOp::IsNan => return Scalar::Bool(v.is_nan()),
            UnaryOp::IsInf => return Scalar::Bool(v.is_infinite()),
            UnaryOp::IsFinite => return Scalar::Bool(v.is_finite()),
            UnaryOp::Angle => {
                if v.is_nan() {
                    v
                } else if v < 0.0 {
                    std::f64::consts::PI
                } else {
                    0.0
                }
            }
        };
        return fl(r, compute);
    }
    if compute == DType::Bool {
        let b = x.as_bool();
        return Scalar::Bool(match op.on_bool() {
            OnBool::Not => !b,
            OnBool::Const(c) => c,
            OnBool::Same => b,
        });
    }
    let v = x.as_i64();
    let r = match op.on_int() {
        OnInt::Neg => v.wrapping_neg(),
        OnInt::Abs => v.wrapping_abs(),
        OnInt::Sign => v.signum(),
        OnInt::Square => v.wrapping_mul(v),
        OnInt::Relu => v.max(0),
        OnInt::Same => v,
        OnInt::BitNot => !v,
        OnInt::IsZero => return Scalar::Bool(v == 0),
        OnInt::Const(c) => return Scalar::Bool(c),
        OnInt::ViaFloat => {
            return int(
                crate::scalar::float_to_i64(
                    unary(op, Scalar::Float(v as f64), DType::F64).as_f64(),
                ),
                compute,
            );
        }
    };
    int(r, compute)
}

fn float_div_floor(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        return a / b;
    }
    let m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        div -= 1.0;
    }
    if div != 0.0 {
        let mut f = div.floor();
        if div - f > 0.5 {
            f += 1.0;
        }
        f
    } else {
        (0.0f64).copysign(a / b)
    }
}

fn int_pow(mut base: i64, mut exp: i64) -> i64 {
    if exp < 0 {
        return match base {
            1 => 1,
            -1 => {
                if exp % 2 == 0 {
                    1
                } else {
                    -1
                }
            }
            _ => 0,
        };
    }
    let mut acc: i64 = 1;
    while exp > 0 {
        if exp & 1 == 1 {
            acc = acc.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        exp >>= 1;
    }
    acc
}

/// `op(a, b)` computed in `compute`, a real dtype. Integer division by zero gives 0 (PyTorch
/// raises eagerly; a lazy kernel cannot, so the result is defined instead of trapping).
pub fn binary(op: BinaryOp, a: Scalar, b: Scalar, compute: DType) -> Scalar {
    assert!(
        !compute.is_complex(),
        "invariant: scalar semantics are those of real dtypes"
    );
    if compute.is_float() {
        let (x, y) = (a.as_f64(), b.as_f64());
        let r = match op {
            BinaryOp::Add => x + y,
            BinaryOp::Sub => x - y,
            BinaryOp::Mul => x * y,
            BinaryOp::Div => x / y,
            BinaryOp::DivTrunc => (x / y).trunc(),
            BinaryOp::DivFloor => float_div_floor(x, y),
            BinaryOp::Remainder => {
                let mut m = x % y;
                if m != 0.0 && ((y < 0.0) != (m < 0.0)) {
                    m += y;
                }
                m
            }
            BinaryOp::Fmod => x % y,
            // PyTorch's pow by the scalar 2 is `base * base` (PowKernel.cpp); libm's pow can
            // be half an ulp off on an f64 square that lies near a rounding midpoint.
            BinaryOp::Pow if y == 2.0 => x * x,
            BinaryOp::Pow => x.powf(y),
            BinaryOp::Maximum => {
                if x.is_nan() || y.is_nan() {
                    f64::NAN
                } else {
                    x.max(y)
                }
            }
            BinaryOp::Minimum => {
                if x.is_nan() || y.is_nan() {
                    f64::NAN
                } else {
                    x.min(y)
                }
            }
            BinaryOp::Atan2 => x.atan2(y),
            BinaryOp::Eq => return Scalar::Bool(x == y),
            BinaryOp::Ne => return Scalar::Bool(x != y),
            BinaryOp::Lt => return Scalar::Bool(x < y),
            BinaryOp::Le => return Scalar::Bool(x <= y),
            BinaryOp::Gt => return Scalar::Bool(x > y),
            BinaryOp::Ge => return Scalar::Bool(x >= y),
            BinaryOp::LogicalAnd => return Scalar::Bool(x != 0.0 && y != 0.0),
            BinaryOp::LogicalOr => return Scalar::Bool(x != 0.0 || y != 0.0),
            BinaryOp::LogicalXor => return Scalar::Bool((x != 0.0) != (y != 0.0)),
            // Bitwise ops on floats are refused by the frontend.
            BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor => f64::NAN,
        };
        return fl(r, compute);
    }
    let (x, y) = (a.as_i64(), b.as_i64());
    let r = match op {
        BinaryOp::Add => x.wrapping_add(y),
        BinaryOp::Sub => x.wrapping_sub(y),
        BinaryOp::Mul => x.wrapping_mul(y),
        BinaryOp::Div | BinaryOp::DivTrunc => x.checked_div(y).unwrap_or(0),
        BinaryOp::DivFloor => {
            if y == 0 {
                0
            } else {
                let q = x.wrapping_div(y);
                if (x % y != 0) && ((x < 0) != (y < 0)) {
                    q - 1
                } else {
                    q
                }
            }
        }
        BinaryOp::Remainder => {
            if y == 0 {
                0
            } else {
                let m = x.wrapping_rem(y);
                if m != 0 && ((m < 0) != (y < 0)) {
                    m + y
                } else {
                    m
                }
            }
        }
        BinaryOp::Fmod => x.checked_rem(y).unwrap_or(0),
        BinaryOp::Pow => int_pow(x, y),
        BinaryOp::Maximum => x.max(y),
        BinaryOp::Minimum => x.min(y),
        BinaryOp::Atan2 => return fl((x as f64).atan2(y as f64), DType::F32),
        BinaryOp::Eq => return Scalar::Bool(x == y),
        BinaryOp::Ne => return Scalar::Bool(x != y),
        BinaryOp::Lt => return Scalar::Bool(x < y),
        BinaryOp::Le => return Scalar::Bool(x <= y),
        BinaryOp::Gt => return Scalar::Bool(x > y),
        BinaryOp::Ge => return Scalar::Bool(x >= y),
        BinaryOp::LogicalAnd => return Scalar::Bool(x != 0 && y != 0),
        BinaryOp::LogicalOr => return Scalar::Bool(x != 0 || y != 0),
        BinaryOp::LogicalXor => return Scalar::Bool((x != 0) != (y != 0)),
        BinaryOp::BitAnd => x & y,
        BinaryOp::BitOr => x | y,
        BinaryOp::BitXor => x ^ y,
    };
    int(r, compute)
}

/// The identity element of a reduction in `dtype`.
pub fn reduce_identity(op: ReduceOp, dtype: DType) -> Scalar {
    match op {
        ReduceOp::Sum => Scalar::Int(0).cast(dtype),
        ReduceOp::Prod => Scalar::Int(1).cast(dtype),
        ReduceOp::Max => {
            if dtype.is_float() {
                Scalar::Float(f64::NEG_INFINITY)
            } else if dtype == DType::Bool {
                Scalar::Bool(false)
            } else {
                Scalar::Int(i64::MIN)
            }
        }
        ReduceOp::Min => {
            if dtype.is_float() {
                Scalar::Float(f64::INFINITY)
            } else if dtype == DType::Bool {
                Scalar::Bool(true)
            } else {
                Scalar::Int(i64::MAX)
            }
        }
        ReduceOp::All => Scalar::Bool(true),
        ReduceOp::Any => Scalar::Bool(false),
    }
}

/// Folds `x` into the accumulator `acc` (accumulation in f64/i64; NaN propagates through max/min).
pub fn reduce_step(op: ReduceOp, acc: Scalar, x: Scalar, dtype: DType) -> Scalar {
    match op {
        ReduceOp::Sum => {
            if dtype.is_float() {
                Scalar::Float(acc.as_f64() + x.as_f64())
            } else {
                int(acc.as_i64().wrapping_add(x.as_i64()), dtype)
            }
        }
        ReduceOp::Prod => {
            if dtype.is_float() {
                Scalar::Float(acc.as_f64() * x.as_f64())
            } else {
                int(acc.as_i64().wrapping_mul(x.as_i64()), dtype)
            }
        }
        ReduceOp::Max | ReduceOp::Min => {
            if dtype.is_float() {
                let (a, v) = (acc.as_f64(), x.as_f64());
                if a.is_nan() || v.is_nan() {
                    Scalar::Float(f64::NAN)
                } else if (op == ReduceOp::Max) == (v > a) {
                    Scalar::Float(v)
                } else {
                    Scalar::Float(a)
                }
            } else if dtype == DType::Bool {
                let (a, v) = (acc.as_bool(), x.as_bool());
                Scalar::Bool(if op == ReduceOp::Max { a || v } else { a && v })
            } else {
                let (a, v) = (acc.as_i64(), x.as_i64());
                Scalar::Int(if op == ReduceOp::Max {
                    a.max(v)
                } else {
                    a.min(v)
                })
            }
        }
        ReduceOp::All => Scalar::Bool(acc.as_bool() && x.as_bool()),
        ReduceOp::Any => Scalar::Bool(acc.as_bool() || x.as_bool()),
    }
}

/// Rounds a finished accumulator to `dtype`.
pub fn reduce_finish(acc: Scalar, dtype: DType) -> Scalar {
    acc.cast(dtype)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (x, e) in [
            (0.0, 0.0),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (3.0, 0.999_977_909_503_001_4),
        ] {
            assert!((erf(x) - e).abs() < 1e-14, "erf({x}) = {} want {e}", erf(x));
            assert!((erf(-x) + e).abs() < 1e-14);
        }
    }

    #[test]
    fn integer_division_rounds_like_python() {
        let f = |op, a, b| binary(op, Scalar::Int(a), Scalar::Int(b), DType::I64).as_i64();
        assert_eq!(f(BinaryOp::DivFloor, -7, 2), -4);
        assert_eq!(f(BinaryOp::DivTrunc, -7, 2), -3);
        assert_eq!(f(BinaryOp::Remainder, -7, 2), 1);
        assert_eq!(f(BinaryOp::Fmod, -7, 2), -1);
        assert_eq!(f(BinaryOp::DivFloor, 7, 0), 0);
    }

    #[test]
    fn narrow_ints_wrap() {
        assert_eq!(
            binary(BinaryOp::Add, Scalar::Int(120), Scalar::Int(10), DType::I8),
            Scalar::Int(-126)
        );
    }
}
