//! What the fuzzer knows about the values of each tensor a program binds, without computing
//! them: whether every correct implementation computes them bit for bit (so the backends must
//! agree exactly, and a comparison, a cast to an integer or a sort may look at them), or only
//! within a rounding error (transcendentals, reductions whose order of summation matters), and
//! then how large that error can grow. A step whose result would be compared beyond its
//! tolerance, or that applies a discrete op (comparison, rounding, argmax, a mask…) to values
//! that are not exact, is refused: it would make a difference between correct backends.
//!
//! The rules follow IEEE 754: `+ − × ÷ sqrt` and casts are correctly rounded, so on exact
//! inputs their results are exact (f16/bf16 compute in f32 and round once per op, which gives
//! the same bits); sums and products of values on a grid (multiples of 2^−k up to a bound)
//! are exact in any order while the grid fits the dtype's significand; everything else is an
//! approximation with an absolute (`err`) and a relative (`rel`) error bound.

// JSON values are matched partially on purpose; the no-wildcard rule is for smelt's IR enums.
#![allow(clippy::wildcard_enum_match_arm)]

use smelt_frontend::{DType, Scalar};

/// Values are multiples of `2^-k` of magnitude at most `mag` (NaN and ±inf aside).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grid {
    pub k: i32,
    pub mag: f64,
}

/// What is known about a tensor's values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Num {
    /// Every correct implementation computes the same values (zeros up to their sign).
    pub exact: bool,
    /// The signs of zeros are the same everywhere too (a max or min of −0 and +0 is not).
    pub zsign: bool,
    /// The values lie on this grid (so sums of them are exact while it fits).
    pub grid: Option<Grid>,
    /// It may hold NaN or ±inf.
    pub specials: bool,
    /// No value is negative (on any backend).
    pub nonneg: bool,
    /// No value is zero (on any backend).
    pub nonzero: bool,
    /// A bound on the magnitude of the finite values (`inf`: unknown).
    pub mag: f64,
    /// A bound on the absolute difference between two backends' values (0 when exact).
    pub err: f64,
    /// A bound on the relative difference (0 when exact, `inf`: none).
    pub rel: f64,
}

/// The unit roundoff of a float dtype (half an ulp at 1).
pub fn unit(dtype: DType) -> f64 {
    match dtype {
        DType::F64 => f64::EPSILON / 2.0,
        DType::F16 => 2f64.powi(-11),
        DType::BF16 => 2f64.powi(-8),
        _ => 2f64.powi(-24),
    }
}

/// Significand bits (with the implicit one) of a float dtype; value bits of an integer one.
pub(super) fn precision(dtype: DType) -> i32 {
    match dtype {
        DType::F64 => 53,
        DType::F32 => 24,
        DType::F16 => 11,
        DType::BF16 => 8,
        DType::I64 => 63,
        DType::I32 => 31,
        DType::I16 => 15,
        DType::I8 => 7,
        DType::U8 => 8,
        DType::Bool => 1,
    }
}

/// The largest finite value of a dtype.
pub fn max_finite(dtype: DType) -> f64 {
    match dtype {
        DType::F64 => f64::MAX,
        DType::F32 | DType::BF16 => f32::MAX as f64,
        DType::F16 => 65504.0,
        DType::I64 => i64::MAX as f64,
        DType::I32 => i32::MAX as f64,
        DType::I16 => i16::MAX as f64,
        DType::I8 => i8::MAX as f64,
        DType::U8 => u8::MAX as f64,
        DType::Bool => 1.0,
    }
}

/// The tolerance (rtol, atol) approximate values of `dtype` are compared with: the numbers of
/// `programs.jsonl` (FORMAT.md §5), the suite's chains of ops.
pub fn tolerance(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::F64 => (1e-7, 1e-6),
        DType::F16 => (1e-2, 1e-2),
        DType::BF16 => (5e-2, 1e-1),
        _ => (2e-4, 2e-4),
    }
}

/// The smallest `k` with `x * 2^k` an integer (`None` past 2^-40).
fn grid_bits(x: f64) -> Option<i32> {
    (0..=40).find(|&k| (x * 2f64.powi(k)).fract() == 0.0)
}

impl Num {
    /// Exact values on `grid`.
    pub fn on_grid(k: i32, mag: f64) -> Num {
        Num {
            exact: true,
            zsign: true,
            grid: Some(Grid { k, mag }),
            specials: false,
            nonneg: false,
            nonzero: false,
            mag,
            err: 0.0,
            rel: 0.0,
        }
    }

    /// Exact values known one by one (a `tensor`, a fill, a scalar operand).
    pub fn of_values(values: &[Scalar]) -> Num {
        let mut num = Num::on_grid(0, 0.0);
        num.nonneg = true;
        num.nonzero = true;
        let mut k = Some(0);
        for v in values {
            let x = v.as_f64();
            if !x.is_finite() {
                num.specials = true;
                num.nonneg &= x == f64::INFINITY;
                continue;
            }
            num.mag = num.mag.max(x.abs());
            num.nonneg &= x >= 0.0 && !(x == 0.0 && x.is_sign_negative());
            num.nonzero &= x != 0.0;
            k = k.zip(grid_bits(x)).map(|(a, b)| a.max(b));
        }
        num.grid = k.map(|k| Grid { k, mag: num.mag });
        num
    }

    /// Exact values nothing more is known of.
    pub(super) fn exact_unknown() -> Num {
        Num {
            grid: None,
            specials: true,
            mag: f64::INFINITY,
            ..Num::on_grid(0, 0.0)
        }
    }

    /// Values within `err` absolute or `rel` relative of the truth, at most `mag`.
    pub(super) fn approx(mag: f64, err: f64, rel: f64) -> Num {
        Num {
            exact: false,
            zsign: false,
            grid: None,
            specials: false,
            nonneg: false,
            nonzero: false,
            mag,
            err,
            rel,
        }
    }

    /// What any of `a`'s or `b`'s values may be (a write of `b` into part of `a`, a select).
    pub fn union(self, b: Num) -> Num {
        Num {
            exact: self.exact && b.exact,
            zsign: self.zsign && b.zsign,
            grid: match (self.grid, b.grid) {
                (Some(x), Some(y)) => Some(Grid {
                    k: x.k.max(y.k),
                    mag: x.mag.max(y.mag),
                }),
                _ => None,
            },
            specials: self.specials || b.specials,
            nonneg: self.nonneg && b.nonneg,
            nonzero: self.nonzero && b.nonzero,
            mag: self.mag.max(b.mag),
            err: self.err.max(b.err),
            rel: self.rel.max(b.rel),
        }
    }

    /// Are the values on a grid that `dtype` holds exactly (no op producing them rounds)?
    pub fn fits(&self, dtype: DType) -> bool {
        self.grid
            .is_some_and(|g| g.mag * 2f64.powi(g.k) <= 2f64.powi(precision(dtype)))
    }

    /// Can values of `dtype` be compared within its tolerance (or exactly)?
    pub fn is_comparable(&self, dtype: DType) -> bool {
        if self.exact || !dtype.is_float() {
            return true;
        }
        let (rtol, atol) = tolerance(dtype);
        self.mag.is_finite() && (self.err <= atol / 2.0 || self.rel <= rtol / 2.0)
    }

    /// These values stored in `dtype` (each op rounds its result once).
    pub fn rounded(mut self, dtype: DType) -> Num {
        if !dtype.is_float() {
            // Integers wrap; a bool is 0 or 1.
            let max = max_finite(dtype);
            self.grid = Some(Grid {
                k: 0,
                mag: self.mag.min(max),
            });
            self.mag = self.mag.min(max);
            self.specials = false;
            self.nonzero &= dtype != DType::Bool || self.exact;
            self.nonneg |= dtype == DType::Bool || dtype == DType::U8;
            return self;
        }
        let max = max_finite(dtype);
        if self.mag > max {
            // Overflow: deterministic on exact values, a coin toss near the edge otherwise.
            self.specials = true;
            self.grid = None;
            self.mag = max;
            if !self.exact {
                self.err = f64::INFINITY;
                self.rel = f64::INFINITY;
            }
            return self;
        }
        if self.exact {
            if let Some(g) = self.grid
                && g.mag * 2f64.powi(g.k) > 2f64.powi(precision(dtype))
            {
                self.grid = None;
            }
        } else {
            let u = unit(dtype);
            self.err += u * self.mag;
            self.rel += u;
        }
        self
    }

    /// These values converted to `dtype` by a cast (`to`, `copy_`, an in-place write):
    /// refused where the cast is discrete (to an integer or bool) and the values are not exact,
    /// or float to integer where C++ leaves the result undefined (NaN, ±inf, out of range,
    /// negative to uint8).
    pub fn cast(self, from: DType, to: DType) -> Result<Num, String> {
        if !to.is_float() && from.is_float() {
            if !self.exact {
                return Err(format!("{to} cast of approximate values"));
            }
            if to != DType::Bool {
                if self.specials || self.mag >= max_finite(to) {
                    return Err(format!("{to} cast of NaN, inf or out-of-range values"));
                }
                if to == DType::U8 && !self.nonneg {
                    return Err("uint8 cast of negative values".into());
                }
                let mut n = self;
                n.grid = Some(Grid {
                    k: 0,
                    mag: self.mag.floor(),
                });
                n.zsign = true;
                return Ok(n.rounded(to));
            }
        }
        if to == DType::Bool && !self.exact {
            return Err("bool cast of approximate values".into());
        }
        Ok(self.rounded(to))
    }
}

/// The dtype a reduction of `dtype` accumulates in: f32 for the half types (PyTorch's
/// accumulate type), else the dtype itself.
pub(super) fn accumulator(dtype: DType) -> DType {
    if matches!(dtype, DType::F16 | DType::BF16) {
        DType::F32
    } else {
        dtype
    }
}

/// Sum of `n` values of `a` into `dtype` (sum, cumsum, a matmul's dot products): exact in any
/// order while the grid fits the accumulator, then rounded once (on the grid still if it fits
/// `dtype`); else the classic bound n·u·Σ|x|.
pub(super) fn summed(a: Num, n: usize, dtype: DType) -> Num {
    let nf = n.max(1) as f64;
    let mag = a.mag * nf;
    let acc = accumulator(dtype);
    if a.exact
        && let Some(g) = a.grid
        && mag * 2f64.powi(g.k) <= 2f64.powi(precision(acc))
    {
        let fits = mag * 2f64.powi(g.k) <= 2f64.powi(precision(dtype));
        return Num {
            grid: fits.then_some(Grid { k: g.k, mag }),
            mag,
            nonzero: false,
            zsign: false,
            ..a
        };
    }
    let err = nf * a.err + 2.0 * nf * unit(acc) * mag;
    let rel = if a.nonneg {
        a.rel + 2.0 * nf * unit(acc)
    } else {
        f64::INFINITY
    };
    Num {
        specials: a.specials,
        nonneg: a.nonneg,
        ..Num::approx(mag, err, rel)
    }
}

/// Product of `a` and `b` values (one multiplication).
pub(super) fn product(a: Num, b: Num) -> Num {
    let mag = a.mag * b.mag;
    if a.exact && b.exact {
        return Num {
            exact: true,
            zsign: a.zsign && b.zsign,
            grid: a.grid.zip(b.grid).map(|(x, y)| Grid { k: x.k + y.k, mag }),
            specials: a.specials || b.specials,
            nonneg: a.nonneg && b.nonneg,
            nonzero: a.nonzero && b.nonzero,
            mag,
            err: 0.0,
            rel: 0.0,
        };
    }
    Num {
        specials: a.specials || b.specials,
        nonneg: a.nonneg && b.nonneg,
        ..Num::approx(
            mag,
            a.err * b.mag + b.err * a.mag + a.err * b.err,
            a.rel + b.rel,
        )
    }
}

/// `a + b` (`sub`: `a − b`).
pub(super) fn sum2(a: Num, b: Num, sub: bool) -> Num {
    let mag = a.mag + b.mag;
    if a.exact && b.exact {
        return Num {
            exact: true,
            zsign: a.zsign && b.zsign,
            grid: a.grid.zip(b.grid).map(|(x, y)| Grid {
                k: x.k.max(y.k),
                mag,
            }),
            specials: a.specials || b.specials,
            nonneg: !sub && a.nonneg && b.nonneg,
            nonzero: false,
            mag,
            err: 0.0,
            rel: 0.0,
        };
    }
    let same_sign = !sub && a.nonneg && b.nonneg;
    Num {
        specials: a.specials || b.specials,
        nonneg: same_sign,
        ..Num::approx(
            mag,
            a.err + b.err,
            if same_sign {
                a.rel.max(b.rel)
            } else {
                f64::INFINITY
            },
        )
    }
}

/// A transcendental of `a`: `mag` bounds the result, `gain` how an input error grows (in
/// absolute terms), `rel_gain` how it grows relatively (`inf`: no relative bound); the
/// function itself is good to a few ulps of the compute dtype.
pub(super) fn transcendental(a: Num, mag: f64, gain: f64, rel_gain: f64, dtype: DType) -> Num {
    let u = 8.0 * unit(dtype);
    Num {
        specials: a.specials,
        ..Num::approx(mag, gain * a.err + u * mag.max(1.0), rel_gain * a.err + u)
    }
}

impl Num {
    pub(super) fn with_err_floor(mut self, err: f64) -> Num {
        self.err = self.err.max(err);
        self
    }
}
