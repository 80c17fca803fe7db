//! The effect of each op of the vocabulary on what is known of the values ([`Num`]): which
//! ops need exact inputs (comparisons, rounding, indices, masks, divisors), how an op's
//! result is known (exact, on a grid, or within an error bound), and how an in-place write
//! reaches every tensor that shares the written storage. A step whose inputs break a rule is
//! refused ([`effect`] returns why).

// JSON values are matched partially on purpose; the no-wildcard rule is for smelt's IR enums.
#![allow(clippy::wildcard_enum_match_arm)]

use super::num::{Grid, Num, max_finite, precision, product, sum2, summed, transcendental, unit};
use crate::conformance::Env;
use crate::conformance::args::scalar_of;
use serde_json::{Map, Value};
use smelt_frontend::{DType, Scalar, Tensor, UnaryOp};
use std::collections::HashMap;

/// What a step does to the values the program knows of.
#[derive(Debug, Default)]
pub struct Effect {
    /// One entry per bound name, before rounding to the result's dtype.
    pub results: Vec<Num>,
    /// An in-place write: the tensor written and what it may hold afterwards (already in its
    /// dtype); every tensor sharing its storage may hold it too.
    pub write: Option<(String, Num)>,
}

/// The values known of each bound name.
#[derive(Clone, Debug, Default)]
pub struct Tracker {
    pub nums: HashMap<String, Num>,
}

/// A step's arguments, read for the tracker.
struct Step<'a> {
    op: &'a str,
    args: &'a Map<String, Value>,
    env: &'a Env,
    nums: &'a HashMap<String, Num>,
}

impl Step<'_> {
    fn name(&self, key: &str) -> Option<&str> {
        self.args.get(key)?.as_str()?.strip_prefix('$')
    }
    fn tensor(&self, key: &str) -> Result<(&Tensor, Num), String> {
        let name = self
            .name(key)
            .ok_or_else(|| format!("{}: no tensor `{key}`", self.op))?;
        let t = self.env.get(name).ok_or(format!("unbound {name}"))?;
        let n = *self.nums.get(name).ok_or(format!("untracked {name}"))?;
        Ok((t, n))
    }
    fn has(&self, key: &str) -> bool {
        self.args.get(key).is_some_and(|v| !v.is_null())
    }
    /// A tensor or scalar operand: its values and dtype (a scalar has none).
    fn operand(&self, key: &str) -> Result<(Num, Option<DType>), String> {
        let v = self
            .args
            .get(key)
            .ok_or(format!("{}: no `{key}`", self.op))?;
        if let Some(s) = scalar_of(v) {
            return Ok((Num::of_values(&[s]), None));
        }
        let (t, n) = self.tensor(key)?;
        Ok((n, Some(t.dtype())))
    }
    fn scalar(&self, key: &str) -> Option<Scalar> {
        scalar_of(self.args.get(key)?)
    }
    fn int(&self, key: &str) -> Option<i64> {
        self.args.get(key)?.as_i64()
    }
    fn dtype(&self) -> Option<DType> {
        DType::parse(self.args.get("dtype")?.as_str()?)
    }
    /// The tensors of a list argument (cat, stack).
    fn tensors(&self, key: &str) -> Result<Vec<(DType, Num)>, String> {
        let items = self
            .args
            .get(key)
            .and_then(Value::as_array)
            .ok_or("no list")?;
        items
            .iter()
            .map(|v| {
                let name = v.as_str().and_then(|s| s.strip_prefix('$')).ok_or("ref")?;
                let t = self.env.get(name).ok_or("unbound")?;
                Ok((t.dtype(), *self.nums.get(name).ok_or("untracked")?))
            })
            .collect()
    }
}

/// Elements a reduction of `t` over the `dim` argument combines (all of them without one).
fn reduced(t: &Tensor, args: &Map<String, Value>, key: &str) -> usize {
    let names = t.names();
    let size = |d: &Value| -> Option<usize> {
        let i = match d {
            Value::String(s) => names.iter().position(|n| n.as_deref() == Some(s))? as i64,
            _ => d.as_i64()?,
        };
        let r = t.ndim().max(1) as i64;
        let i = if i < 0 { i + r } else { i };
        Some(t.shape().get(i as usize).copied().unwrap_or(1))
    };
    match args.get(key) {
        None | Some(Value::Null) => t.numel(),
        Some(Value::Array(ds)) if ds.is_empty() => t.numel(),
        Some(Value::Array(ds)) => ds.iter().filter_map(size).product(),
        Some(d) => size(d).unwrap_or(1),
    }
}

fn require(ok: bool, why: &str) -> Result<(), String> {
    if ok { Ok(()) } else { Err(why.to_string()) }
}

/// `a` as input of a discrete op (a comparison, rounding, an index, a mask…).
fn discrete(a: Num) -> Result<(), String> {
    require(a.exact, "a discrete op on approximate values")
}

/// The dtype a float-only op computes in for an input of `dtype`.
fn float_compute(dtype: DType) -> DType {
    if dtype.is_float() {
        dtype
    } else {
        smelt_frontend::get_default_dtype()
    }
}

/// An elementwise unary op.
fn unary(op: UnaryOp, a: Num, dtype: DType) -> Result<Num, String> {
    let fd = float_compute(dtype);
    let m = a.mag;
    let small = |g: Option<Grid>| g.map_or(f64::INFINITY, |g| 2f64.powi(g.k));
    Ok(match op {
        UnaryOp::Neg => Num { nonneg: false, ..a },
        UnaryOp::Abs => Num { nonneg: true, ..a },
        UnaryOp::Relu => Num {
            nonneg: true,
            zsign: false,
            nonzero: false,
            ..a
        },
        UnaryOp::Sign => {
            discrete(a)?;
            Num {
                specials: false,
                grid: Some(Grid { k: 0, mag: 1.0 }),
                mag: 1.0,
                ..a
            }
        }
        UnaryOp::Square => product(a, a),
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Trunc => {
            discrete(a)?;
            Num {
                grid: Some(Grid {
                    k: 0,
                    mag: m.ceil(),
                }),
                mag: m.ceil(),
                nonzero: false,
                zsign: true,
                ..a
            }
        }
        UnaryOp::LogicalNot | UnaryOp::BitwiseNot => {
            discrete(a)?;
            Num::on_grid(0, max_finite(dtype).max(1.0))
        }
        UnaryOp::IsNan | UnaryOp::IsInf | UnaryOp::IsFinite => {
            require(
                a.mag.is_finite() || a.exact,
                "isnan of values that may overflow",
            )?;
            Num::on_grid(0, 1.0)
        }
        UnaryOp::Sqrt => {
            if a.exact {
                Num {
                    grid: None,
                    mag: m.sqrt(),
                    specials: a.specials || !a.nonneg,
                    nonneg: true,
                    ..a
                }
            } else {
                require(a.nonneg && a.rel.is_finite(), "sqrt of approximate values")?;
                Num {
                    nonneg: true,
                    ..Num::approx(m.sqrt(), a.rel * m.sqrt(), a.rel / 2.0)
                }
            }
        }
        UnaryOp::Reciprocal | UnaryOp::Rsqrt => {
            require(
                a.exact && a.zsign,
                "1/x of approximate values or unsigned zeros",
            )?;
            let mag = small(a.grid);
            let mag = if op == UnaryOp::Rsqrt {
                mag.sqrt()
            } else {
                mag
            };
            if op == UnaryOp::Reciprocal {
                Num {
                    grid: None,
                    mag,
                    specials: a.specials || !a.nonzero,
                    nonzero: true,
                    ..a
                }
            } else {
                Num {
                    specials: true,
                    nonneg: true,
                    ..Num::approx(mag, 8.0 * unit(fd) * mag, 8.0 * unit(fd))
                }
            }
        }
        UnaryOp::Exp | UnaryOp::Exp2 | UnaryOp::Expm1 => {
            let base: f64 = if op == UnaryOp::Exp2 {
                2.0
            } else {
                std::f64::consts::E
            };
            let mag = base.powf(m);
            let mut n = transcendental(a, mag, mag, 1.0, fd);
            n.nonneg = op != UnaryOp::Expm1;
            if mag > max_finite(fd) / 4.0 && !(a.exact && mag.is_finite()) {
                n.err = f64::INFINITY;
                n.rel = f64::INFINITY;
            } else if mag > max_finite(fd) / 4.0 {
                // Exact inputs: overflow happens for the same values everywhere, but values
                // near the edge round either way.
                n.err = f64::INFINITY;
                n.rel = f64::INFINITY;
            }
            n
        }
        UnaryOp::Log | UnaryOp::Log2 | UnaryOp::Log1p => {
            require(a.exact && a.zsign, "log of approximate values")?;
            let smallest = 1.0 / small(a.grid);
            let mag = (1.0 + m).ln().max(-smallest.ln()).max(1.0) * 1.5;
            Num {
                specials: true,
                ..Num::approx(mag, 8.0 * unit(fd) * mag, f64::INFINITY)
            }
        }
        UnaryOp::Sin | UnaryOp::Cos => {
            transcendental(a, 1.0, 1.0, f64::INFINITY, fd).with_err_floor(unit(fd) * 8.0 * m)
        }
        UnaryOp::Tan => {
            require(
                a.exact && a.grid.is_some_and(|g| g.k <= 3 && g.mag <= 5.0) && fd != DType::BF16,
                "tan near a pole",
            )?;
            let rel = 800.0 * unit(fd);
            Num {
                specials: a.specials,
                ..Num::approx(200.0, rel * 200.0, rel)
            }
        }
        UnaryOp::Tanh => transcendental(a, 1.0, 1.0, 1.0, fd),
        UnaryOp::Sigmoid => {
            let mut n = transcendental(a, 1.0, 0.25, 1.0, fd);
            n.nonneg = true;
            n
        }
        UnaryOp::Erf => transcendental(a, 1.0, 1.2, f64::INFINITY, fd),
    })
}

/// A binary elementwise op by its conformance name.
fn binary(op: &str, a: Num, b: Num, compute: DType, is_int_div: bool) -> Result<Num, String> {
    let fd = float_compute(compute);
    Ok(match op {
        "add" | "add_" => sum2(a, b, false),
        "sub" | "sub_" => sum2(a, b, true),
        "mul" | "mul_" => product(a, b),
        "div" | "div_" => {
            if is_int_div {
                discrete(a)?;
                discrete(b)?;
                return Ok(Num {
                    grid: a.grid.map(|g| Grid {
                        k: 0,
                        mag: g.mag.ceil(),
                    }),
                    nonzero: false,
                    zsign: true,
                    ..a.union(b)
                });
            }
            require(b.exact && b.zsign, "dividing by approximate values")?;
            let small = b.grid.map_or(f64::INFINITY, |g| 2f64.powi(g.k));
            if a.exact {
                Num {
                    grid: None,
                    mag: a.mag * small,
                    specials: a.specials || b.specials || !b.nonzero,
                    nonneg: a.nonneg && b.nonneg,
                    nonzero: a.nonzero,
                    ..a.union(b)
                }
            } else {
                require(b.nonzero, "approximate values divided by a zero")?;
                let mag = a.mag * small;
                Num {
                    specials: a.specials || b.specials,
                    nonneg: a.nonneg && b.nonneg,
                    ..Num::approx(mag, a.err * small, a.rel + unit(fd))
                }
            }
        }
        "floor_divide" | "remainder" | "fmod" => {
            discrete(a)?;
            discrete(b)?;
            let mag = if op == "floor_divide" {
                a.mag * b.grid.map_or(f64::INFINITY, |g| 2f64.powi(g.k))
            } else {
                b.mag
            };
            Num {
                grid: None,
                mag,
                specials: a.specials || b.specials || !b.nonzero,
                nonneg: false,
                nonzero: false,
                zsign: op == "floor_divide" && a.zsign && b.zsign,
                ..a.union(b)
            }
        }
        "pow" => {
            if !compute.is_float() {
                Num {
                    grid: None,
                    mag: f64::INFINITY,
                    ..a.union(b)
                }
            } else {
                discrete(a)?;
                discrete(b)?;
                let small = a.grid.map_or(f64::INFINITY, |g| 2f64.powi(g.k));
                let mag = a.mag.max(small).max(1.0).powf(b.mag);
                let rel = 16.0 * unit(fd) * (1.0 + b.mag);
                let mut n = Num {
                    specials: true,
                    ..Num::approx(mag, rel * mag, rel)
                };
                if mag > max_finite(fd) / 4.0 {
                    n.err = f64::INFINITY;
                    n.rel = f64::INFINITY;
                }
                n
            }
        }
        "maximum" | "minimum" | "clamp" | "clamp_" => {
            let mut n = a.union(b);
            n.zsign = false;
            n.nonneg = if op == "maximum" {
                a.nonneg || b.nonneg
            } else {
                a.nonneg && b.nonneg
            };
            n
        }
        "atan2" => {
            require(
                a.exact && b.exact && a.zsign && b.zsign,
                "atan2 of approximate values",
            )?;
            Num {
                specials: a.specials || b.specials,
                ..Num::approx(4.0, 32.0 * unit(fd), f64::INFINITY)
            }
        }
        "eq" | "ne" | "lt" | "le" | "gt" | "ge" | "logical_and" | "logical_or" | "logical_xor" => {
            discrete(a)?;
            discrete(b)?;
            Num::on_grid(0, 1.0)
        }
        "bitwise_and" | "bitwise_or" | "bitwise_xor" => Num::exact_unknown(),
        _ => return Err(format!("no rule for binary {op}")),
    })
}

/// Is `divisor` an integer divisor the frontend checks for zeros (a realized tensor, a
/// scalar), or one that has none? A lazy integer divisor with a zero gives 0 where PyTorch
/// raises, so the fuzzer keeps away from it.
fn int_divisor_ok(s: &Step, key: &str, n: Num) -> bool {
    match s.args.get(key) {
        Some(v) if scalar_of(v).is_some() => true,
        _ => n.nonzero || s.tensor(key).is_ok_and(|(t, _)| t.is_realized()),
    }
}

/// The effect of `step` on the values, given the tensors bound before it: `Err` when the step
/// would make backends differ legitimately (the fuzzer then does not use it).
pub fn effect(step: &Value, env: &Env, nums: &HashMap<String, Num>) -> Result<Effect, String> {
    let op = step.get("op").and_then(Value::as_str).unwrap_or("");
    let empty = Map::new();
    let args = step
        .get("args")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let s = Step {
        op,
        args,
        env,
        nums,
    };
    let one = |n: Num| {
        Ok(Effect {
            results: vec![n],
            write: None,
        })
    };
    let same = |n: Num| {
        Ok(Effect {
            results: vec![n; crate::conformance::let_names(step).len().max(1)],
            write: None,
        })
    };
    let write = |name: &str, n: Num| {
        Ok(Effect {
            results: vec![n; crate::conformance::let_names(step).len()],
            write: Some((name.to_string(), n)),
        })
    };
    // The dtype of `self` (for in-place results and float-only ops).
    let self_dtype = s.tensor("self").map(|(t, _)| t.dtype()).ok();
    match op {
        "tensor" => {
            let data: Vec<Scalar> = args
                .get("data")
                .and_then(Value::as_array)
                .map(|d| d.iter().filter_map(scalar_of).collect())
                .unwrap_or_default();
            one(Num::of_values(&data))
        }
        "zeros" | "zeros_like" => one(Num::of_values(&[Scalar::Int(0)])),
        "ones" | "ones_like" => one(Num::of_values(&[Scalar::Int(1)])),
        "eye" => one(Num::of_values(&[Scalar::Int(0), Scalar::Int(1)])),
        "full" | "full_like" => {
            let v = s.scalar("fill_value").ok_or("fill_value")?;
            one(Num::of_values(&[v]))
        }
        "arange" => {
            let start = s.scalar("start").unwrap_or(Scalar::Int(0));
            let end = s.scalar("end").ok_or("end")?;
            let step = s.scalar("step").unwrap_or(Scalar::Int(1));
            let mut n = Num::of_values(&[start, end, step]);
            n.mag += step.as_f64().abs();
            if let Some(g) = &mut n.grid {
                g.mag = n.mag;
            }
            n.nonzero = false;
            n.nonneg = start.as_f64() >= 0.0 && step.as_f64() > 0.0;
            one(n)
        }
        "linspace" => {
            let a = s.scalar("start").ok_or("start")?.as_f64();
            let b = s.scalar("end").ok_or("end")?.as_f64();
            let mut n = Num::on_grid(0, a.abs().max(b.abs()));
            n.grid = None;
            one(n)
        }
        "set_default_dtype" => Ok(Effect::default()),
        "tril" | "triu" => {
            let (_, a) = s.tensor("self")?;
            one(a.union(Num::of_values(&[Scalar::Int(0)])))
        }

        // Views and copies: the values move, they do not change.
        "permute" | "transpose" | "t" | "view" | "reshape" | "flatten" | "unflatten" | "ravel"
        | "unfold" | "diagonal" | "movedim" | "squeeze" | "unsqueeze" | "expand" | "expand_as"
        | "broadcast_to" | "narrow" | "select" | "as_strided" | "getitem" | "contiguous"
        | "clone" | "detach" | "view_as" | "reshape_as" | "flip" | "roll" | "repeat" | "split"
        | "chunk" | "tensor_split" | "unbind" | "refine_names" | "rename" | "align_to"
        | "align_as" | "gather" | "index_select" | "take" | "masked_select" => {
            let (_, a) = s.tensor("self")?;
            if op == "masked_select" {
                discrete(s.tensor("mask")?.1)?;
            }
            same(a)
        }
        "to" => {
            let (t, a) = s.tensor("self")?;
            let to = s.dtype().ok_or("to: dtype")?;
            one(a.cast(t.dtype(), to)?)
        }
        "nonzero" => {
            discrete(s.tensor("self")?.1)?;
            same(Num::exact_unknown())
        }
        "cat" | "stack" => {
            let all = s.tensors("tensors")?;
            let mut n: Option<Num> = None;
            for (_, a) in all {
                n = Some(n.map_or(a, |n| n.union(a)));
            }
            one(n.ok_or("cat of nothing")?)
        }
        "where" => {
            discrete(s.tensor("condition")?.1)?;
            let (a, _) = s.operand("self")?;
            let (b, _) = s.operand("other")?;
            one(a.union(b))
        }
        "masked_fill" | "masked_fill_" => {
            let (t, a) = s.tensor("self")?;
            discrete(s.tensor("mask")?.1)?;
            let (v, vd) = s.operand("value")?;
            let v = v.cast(vd.unwrap_or(DType::F64), t.dtype())?;
            let n = a.union(v);
            if op == "masked_fill_" {
                let name = s.name("self").unwrap_or_default().to_string();
                write(&name, n.rounded(t.dtype()))
            } else {
                one(n)
            }
        }
        "round" => {
            let (_, a) = s.tensor("self")?;
            discrete(a)?;
            let decimals = s.int("decimals").unwrap_or(0);
            if decimals != 0 {
                require(
                    a.grid.is_some_and(|g| g.k <= 3),
                    "round with decimals off the 1/8 grid",
                )?;
                one(Num { grid: None, ..a })
            } else {
                one(unary(UnaryOp::Round, a, self_dtype.unwrap_or(DType::F32))?)
            }
        }
        "clamp" | "clamp_" => {
            let (t, mut n) = s.tensor("self")?;
            for key in ["min", "max"] {
                if s.has(key) {
                    let (b, _) = s.operand(key)?;
                    n = binary("clamp", n, b, t.dtype(), false)?;
                }
            }
            if op == "clamp_" {
                let name = s.name("self").unwrap_or_default().to_string();
                write(&name, n.rounded(t.dtype()))
            } else {
                one(n)
            }
        }
        "add" | "sub" | "mul" | "div" | "floor_divide" | "remainder" | "fmod" | "pow"
        | "maximum" | "minimum" | "atan2" | "eq" | "ne" | "lt" | "le" | "gt" | "ge"
        | "logical_and" | "logical_or" | "logical_xor" | "bitwise_and" | "bitwise_or"
        | "bitwise_xor" | "add_" | "sub_" | "mul_" | "div_" => {
            let (t, a) = s.tensor("self")?;
            let key = if op == "pow" { "exponent" } else { "other" };
            let (mut b, bd) = s.operand(key)?;
            let both_int = !t.dtype().is_float() && bd.is_none_or(|d| !d.is_float())
                // A float scalar makes the op float.
                && s.args.get(key).and_then(scalar_of).is_none_or(|v| !matches!(v, Scalar::Float(_)));
            let rounding = s.has("rounding_mode") || op == "floor_divide";
            let int_div = matches!(op, "div" | "div_") && rounding;
            if both_int && (int_div || matches!(op, "floor_divide" | "remainder" | "fmod")) {
                require(
                    int_divisor_ok(&s, key, b),
                    "a lazy integer divisor that may be 0",
                )?;
            }
            if op == "pow" && both_int {
                require(b.nonneg, "an integer power with a negative exponent")?;
            }
            let alpha = s.has("alpha");
            if alpha {
                let alpha = Num::of_values(&[s.scalar("alpha").ok_or("alpha")?]);
                b = product(b, alpha);
            }
            let compute = if both_int {
                t.dtype()
            } else {
                float_compute(t.dtype())
            };
            let name = op.trim_end_matches('_');
            let mut n = binary(name, a, b, compute, int_div || (op == "floor_divide"))?;
            if alpha && n.exact && compute.is_float() && !n.fits(compute) {
                // x + alpha·y rounds twice, or once with a fused multiply-add: both are
                // PyTorch (its kernels use either), so where it rounds it is not exact.
                n = Num::approx(n.mag, 4.0 * unit(compute) * n.mag, f64::INFINITY);
            }
            if op.ends_with('_') {
                let self_name = s.name("self").unwrap_or_default().to_string();
                write(&self_name, n.rounded(t.dtype()))
            } else {
                one(n)
            }
        }
        "neg_" | "abs_" | "exp_" => {
            let (t, a) = s.tensor("self")?;
            let u = UnaryOp::from_name(op.trim_end_matches('_')).ok_or("unary")?;
            let n = unary(u, a, t.dtype())?;
            let name = s.name("self").unwrap_or_default().to_string();
            write(&name, n.rounded(t.dtype()))
        }
        "copy_" | "fill_" | "zero_" | "setitem" => {
            let (t, a) = s.tensor("self")?;
            let v = match op {
                "copy_" => {
                    let (src_t, src) = s.tensor("src")?;
                    src.cast(src_t.dtype(), t.dtype())?
                }
                "zero_" => Num::of_values(&[Scalar::Int(0)]).rounded(t.dtype()),
                _ => {
                    let (v, vd) = s.operand("value")?;
                    v.cast(vd.unwrap_or(DType::F64), t.dtype())?
                }
            };
            // The written part takes `v`, the rest keeps `a`.
            let name = s.name("self").unwrap_or_default().to_string();
            write(&name, a.union(v))
        }

        // ---- matmul family ----
        "matmul" | "mm" | "bmm" | "mv" | "dot" | "outer" | "addmm" => {
            let (t, a) = s.tensor("self")?;
            let other_key = match op {
                "matmul" => "other",
                "mm" | "bmm" => "mat2",
                "mv" => "vec",
                "dot" => "tensor",
                "outer" => "vec2",
                _ => "mat1",
            };
            let (o, b) = s.tensor(other_key)?;
            if op == "addmm" {
                let (m2, c) = s.tensor("mat2")?;
                let k = o.shape().last().copied().unwrap_or(1);
                let mut p = summed(product(b, c), k, m2.dtype());
                for key in ["alpha"] {
                    if let Some(v) = s.scalar(key) {
                        p = product(p, Num::of_values(&[v]));
                    }
                }
                let mut bias = a;
                if let Some(v) = s.scalar("beta") {
                    bias = product(bias, Num::of_values(&[v]));
                }
                let n = sum2(bias, p, false);
                // Several roundings in an order the library picks.
                return one(if n.exact && n.grid.is_none() {
                    Num::approx(n.mag, 8.0 * unit(t.dtype()) * n.mag, f64::INFINITY)
                } else {
                    n
                });
            }
            let k = if op == "outer" {
                1
            } else {
                t.shape().last().copied().unwrap_or(1)
            };
            let _ = o;
            one(summed(product(a, b), k, t.dtype()))
        }

        // ---- reductions ----
        "sum" | "mean" | "cumsum" | "logsumexp" | "prod" | "cumprod" => {
            let (t, a) = s.tensor("self")?;
            let key = "dim";
            let n = reduced(t, args, key);
            let acc = s.dtype().unwrap_or(if t.dtype().is_float() {
                t.dtype()
            } else if op == "mean" || op == "logsumexp" {
                smelt_frontend::get_default_dtype()
            } else {
                DType::I64
            });
            let a = a.cast(t.dtype(), acc)?;
            if !acc.is_float() {
                return one(Num::exact_unknown().rounded(acc));
            }
            match op {
                "sum" | "cumsum" => one(summed(a, n, acc)),
                "mean" => {
                    let total = summed(a, n, acc);
                    if total.exact && n.is_power_of_two() {
                        let k = total.grid.map(|g| g.k + n.trailing_zeros() as i32);
                        one(Num {
                            grid: k.map(|k| Grid { k, mag: a.mag }),
                            mag: a.mag,
                            ..total
                        })
                    } else {
                        let u = unit(acc);
                        let rel = if a.nonneg {
                            total.rel + 2.0 * u
                        } else {
                            f64::INFINITY
                        };
                        one(Num {
                            specials: a.specials || n == 0,
                            nonneg: a.nonneg,
                            ..Num::approx(a.mag, total.err / n.max(1) as f64 + 2.0 * u * a.mag, rel)
                        })
                    }
                }
                "logsumexp" => {
                    let mag = a.mag + (n.max(1) as f64).ln();
                    let u = unit(acc);
                    one(Num {
                        specials: true,
                        ..Num::approx(
                            mag,
                            a.err + (n as f64 + 8.0) * u * (mag + 1.0),
                            f64::INFINITY,
                        )
                    })
                }
                _ => {
                    // prod, cumprod: exact while the grid fits, else relative errors add up.
                    let nf = n.max(1) as i32;
                    let mag = a.mag.max(1.0).powi(nf);
                    if a.exact
                        && let Some(g) = a.grid
                        && (g.k * nf) < 60
                        && mag * 2f64.powi(g.k * nf) <= 2f64.powi(precision(acc))
                    {
                        return one(Num {
                            grid: Some(Grid { k: g.k * nf, mag }),
                            mag,
                            zsign: false,
                            ..a
                        });
                    }
                    let rel = nf as f64 * (a.rel + 2.0 * unit(acc));
                    let mut r = Num {
                        specials: a.specials,
                        ..Num::approx(mag, rel * mag, rel)
                    };
                    if mag > max_finite(acc) / 4.0 {
                        r.err = f64::INFINITY;
                        r.rel = f64::INFINITY;
                    }
                    one(r)
                }
            }
        }
        "amax" | "amin" => {
            let (_, a) = s.tensor("self")?;
            one(Num { zsign: false, ..a })
        }
        "max" | "min" => {
            let (_, a) = s.tensor("self")?;
            if s.has("dim") {
                discrete(a)?;
                Ok(Effect {
                    results: vec![Num { zsign: false, ..a }, Num::exact_unknown()],
                    write: None,
                })
            } else {
                one(Num { zsign: false, ..a })
            }
        }
        "sort" => {
            let (_, a) = s.tensor("self")?;
            discrete(a)?;
            Ok(Effect {
                results: vec![a, Num::exact_unknown()],
                write: None,
            })
        }
        "argmax" | "argmin" | "all" | "any" | "count_nonzero" => {
            discrete(s.tensor("self")?.1)?;
            one(Num::exact_unknown())
        }
        "var" | "std" => {
            let (t, a) = s.tensor("self")?;
            let n = reduced(t, args, "dim").max(1) as f64;
            let u = unit(t.dtype());
            let m2 = a.mag * a.mag * 4.0;
            let err = 4.0 * a.mag * a.err + 4.0 * (n + 4.0) * u * m2;
            let rel = 8.0 * (n + 4.0) * u + 4.0 * a.rel;
            one(if op == "var" {
                Num {
                    specials: true,
                    nonneg: true,
                    ..Num::approx(m2 * n, err * n, rel)
                }
            } else {
                Num {
                    specials: true,
                    nonneg: true,
                    ..Num::approx(2.0 * a.mag * n.sqrt(), err.sqrt(), rel / 2.0)
                }
            })
        }
        "softmax" | "log_softmax" => {
            let (t, a) = s.tensor("self")?;
            let acc = s.dtype().unwrap_or(t.dtype());
            let a = a.cast(t.dtype(), acc)?;
            let n = reduced(t, args, "dim") as f64;
            let u = unit(acc);
            let rel = 2.0 * a.err + (n + 8.0) * 2.0 * u;
            one(if op == "softmax" {
                Num {
                    specials: a.specials,
                    nonneg: true,
                    ..Num::approx(1.0, rel, rel)
                }
            } else {
                let mag = 2.0 * a.mag + n.ln() + 1.0;
                Num {
                    specials: true,
                    ..Num::approx(mag, 2.0 * a.err + (n + 8.0) * u * mag, f64::INFINITY)
                }
            })
        }
        _ => match UnaryOp::from_name(op) {
            Some(u) => {
                let (t, a) = s.tensor("self")?;
                one(unary(u, a, t.dtype())?)
            }
            None => Err(format!("no rule for {op}")),
        },
    }
}

impl Tracker {
    /// Applies `effect` of `step` (which ran, binding its names in `env`): the results in
    /// their dtypes, and a write to every tensor sharing the written storage.
    pub fn record(&mut self, step: &Value, effect: Effect, env: &Env) {
        if let Some((name, n)) = &effect.write
            && let Some(t) = env.get(name)
        {
            let aliases: Vec<String> = self
                .nums
                .keys()
                .filter(|other| env.get(*other).is_some_and(|o| o.shares_storage(t)))
                .cloned()
                .collect();
            for other in aliases {
                let old = self.nums[&other];
                let dtype = env[&other].dtype();
                self.nums
                    .insert(other, old.union(n.rounded(dtype)).rounded(dtype));
            }
        }
        for (name, n) in crate::conformance::let_names(step)
            .into_iter()
            .zip(effect.results)
        {
            if let Some(t) = env.get(&name) {
                let rounded = n.rounded(t.dtype());
                self.nums.insert(name, rounded);
            }
        }
    }

    /// Is every tensor the step bound comparable within its tolerance?
    pub fn comparable(&self, step: &Value, env: &Env) -> bool {
        crate::conformance::let_names(step).iter().all(|name| {
            match (self.nums.get(name), env.get(name)) {
                (Some(n), Some(t)) => n.is_comparable(t.dtype()),
                _ => true,
            }
        })
    }
}
