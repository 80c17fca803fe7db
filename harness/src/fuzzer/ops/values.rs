//! Candidate steps that compute values: elementwise ops of every dtype with tensor, 0-dim and
//! scalar operands, selections and masks, reductions, joins and indexing, the matmul family,
//! in-place ops through views, creation, and named-tensor ops.

use super::super::generator::{Gen, NAMES};
use super::{basic_index, perm, r, step, step_list};
use serde_json::{Value, json};
use smelt_frontend::{BinaryOp, DType, UnaryOp};

pub(super) fn unary(g: &mut Gen) -> Option<Value> {
    let x = g.any()?;
    let s = r(&x);
    if g.rng.chance(0.05) {
        let d = g.rng.range(-1, 2);
        return Some(step(g, "round", json!({"self": s, "decimals": d})));
    }
    let op = g.rng.pick(UnaryOp::ALL);
    Some(step(g, op.name(), json!({"self": s})))
}

/// The binary ops by their conformance names, in `BinaryOp::ALL`'s order: every binary op
/// but `div_trunc` (reached through `div(rounding_mode=…)`), `div_floor` as `floor_divide`,
/// and `add` a second time (it is drawn twice as often).
static BINARY: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
    let named = BinaryOp::ALL
        .iter()
        .filter(|&&op| op != BinaryOp::DivTrunc)
        .map(|&op| {
            if op == BinaryOp::DivFloor {
                "floor_divide"
            } else {
                op.name()
            }
        });
    named.chain(["add"]).collect()
});

fn broadcastable(a: &[usize], b: &[usize]) -> bool {
    a.iter()
        .rev()
        .zip(b.iter().rev())
        .all(|(&x, &y)| x == y || x == 1 || y == 1)
}

/// A second operand for `x`: a bound tensor that broadcasts with it, a fresh input, a 0-dim
/// tensor or a Python scalar.
fn other(g: &mut Gen, x: &str, steps: &mut Vec<Value>, scalars: bool) -> Value {
    let t = g.t(x).clone();
    match g.rng.below(10) {
        0..=2 if scalars => g.scalar(t.dtype()),
        3 => {
            let d = if g.rng.chance(0.5) {
                t.dtype()
            } else {
                g.dtype()
            };
            let y = g.input(&[], d, steps);
            r(&y)
        }
        4 | 5 => {
            let d = if g.rng.chance(0.5) {
                t.dtype()
            } else {
                g.dtype()
            };
            let shape = g.operand_shape();
            let y = g.input(&shape, d, steps);
            r(&y)
        }
        _ => {
            let shape = t.shape().to_vec();
            match g.pick(|o, _| broadcastable(o.shape(), &shape)) {
                Some(y) => r(&y),
                None => r(x),
            }
        }
    }
}

pub(super) fn binary(g: &mut Gen, steps: &mut Vec<Value>) -> Option<Value> {
    let x = g.any()?;
    let op = g.rng.pick(&BINARY);
    let scalars = !matches!(op, "maximum" | "minimum" | "atan2");
    let o = other(g, &x, steps, scalars);
    let key = if op == "pow" { "exponent" } else { "other" };
    let mut args = json!({"self": r(&x), key: o});
    if matches!(op, "add" | "sub") && g.rng.chance(0.2) {
        let d = g.t(&x).dtype();
        args["alpha"] = g.scalar(d);
    }
    if op == "div" && g.rng.chance(0.3) {
        args["rounding_mode"] = json!(g.rng.pick(&["trunc", "floor"]));
    }
    Some(step(g, op, args))
}

/// A bool tensor that broadcasts with `x`: bound, or made by comparing something with 0.
fn mask(g: &mut Gen, x: &str, steps: &mut Vec<Value>) -> Option<String> {
    let shape = g.t(x).shape().to_vec();
    if g.rng.chance(0.5)
        && let Some(m) =
            g.pick(|t, n| t.dtype() == DType::Bool && n.exact && broadcastable(t.shape(), &shape))
    {
        return Some(m);
    }
    let mshape = if g.rng.chance(0.7) {
        shape
    } else {
        g.operand_shape()
    };
    let m = g.input(&mshape, DType::Bool, steps);
    Some(m)
}

pub(super) fn select_like(g: &mut Gen, steps: &mut Vec<Value>) -> Option<Value> {
    let x = g.any()?;
    let d = g.t(&x).dtype();
    Some(match g.rng.below(3) {
        0 => {
            let c = mask(g, &x, steps)?;
            let o = other(g, &x, steps, true);
            let (a, b) = if g.rng.chance(0.2) {
                (g.scalar(d), o)
            } else {
                (r(&x), o)
            };
            step(
                g,
                "where",
                json!({"condition": r(&c), "self": a, "other": b}),
            )
        }
        1 => {
            let mut args = json!({"self": r(&x)});
            if g.rng.chance(0.7) {
                args["min"] = if g.rng.chance(0.7) {
                    g.scalar(d)
                } else {
                    other(g, &x, steps, false)
                };
            }
            if g.rng.chance(0.7) {
                args["max"] = g.scalar(d);
            }
            step(g, "clamp", args)
        }
        _ => {
            let m = mask(g, &x, steps)?;
            let v = if g.rng.chance(0.8) {
                g.scalar(d)
            } else {
                let y = g.input(&[], d, steps);
                r(&y)
            };
            step(
                g,
                "masked_fill",
                json!({"self": r(&x), "mask": r(&m), "value": v}),
            )
        }
    })
}

const REDUCTIONS: [&str; 19] = [
    "sum",
    "mean",
    "prod",
    "amax",
    "amin",
    "max",
    "min",
    "argmax",
    "argmin",
    "all",
    "any",
    "count_nonzero",
    "var",
    "std",
    "logsumexp",
    "softmax",
    "log_softmax",
    "cumsum",
    "sort",
];

pub(super) fn reduction(g: &mut Gen) -> Option<Value> {
    let x = g.any()?;
    let t = g.t(&x).clone();
    let nd = t.ndim();
    let op = if g.rng.chance(0.08) {
        "cumprod"
    } else {
        g.rng.pick(&REDUCTIONS)
    };
    let mut args = json!({"self": r(&x)});
    let keepdim = g.rng.chance(0.3);
    let float_dtype = || json!("float64");
    match op {
        "sum" | "mean" | "var" | "std" | "logsumexp" | "all" | "any" | "amax" | "amin"
        | "count_nonzero" => {
            let dims = match g.rng.below(4) {
                0 if op != "logsumexp" => Value::Null,
                1 if nd >= 2 => {
                    let a = g.dim(nd);
                    let b = (a + 1).rem_euclid(nd as i64);
                    json!([a, b])
                }
                _ if matches!(op, "amax" | "amin" | "count_nonzero" | "all" | "any") => {
                    json!(g.dim(nd))
                }
                _ => g.dim_of(&x),
            };
            if !dims.is_null() {
                args["dim"] = dims;
            }
            if !matches!(op, "count_nonzero") && keepdim {
                args["keepdim"] = json!(true);
            }
            if matches!(op, "var" | "std") && g.rng.chance(0.3) {
                args["correction"] = json!(g.rng.range(0, 2));
            }
            if matches!(op, "sum" | "mean") && g.rng.chance(0.15) {
                args["dtype"] = if op == "mean" || g.rng.chance(0.5) {
                    float_dtype()
                } else {
                    json!("int64")
                };
            }
        }
        "prod" | "max" | "min" | "argmax" | "argmin" => {
            if g.rng.chance(0.6) {
                args["dim"] = if matches!(op, "argmax" | "argmin") {
                    json!(g.dim(nd))
                } else {
                    g.dim_of(&x)
                };
                if keepdim {
                    args["keepdim"] = json!(true);
                }
            }
            if op == "prod" && g.rng.chance(0.1) {
                args["dtype"] = float_dtype();
            }
            if matches!(op, "max" | "min") && args.get("dim").is_some() {
                return Some(step_list(g, op, args, 2));
            }
        }
        "softmax" | "log_softmax" | "cumsum" | "cumprod" => {
            args["dim"] = g.dim_of(&x);
            if g.rng.chance(0.15) {
                args["dtype"] = float_dtype();
            }
        }
        _ => {
            // sort
            if g.rng.chance(0.7) {
                args["dim"] = json!(g.dim(nd));
            }
            if g.rng.chance(0.4) {
                args["descending"] = json!(true);
            }
            return Some(step_list(g, "sort", args, 2));
        }
    }
    Some(step(g, op, args))
}

/// An int64 index tensor of `shape` with values in `[-n, n)` (non-negative when `plain`).
fn index_tensor(
    g: &mut Gen,
    shape: &[usize],
    n: usize,
    plain: bool,
    steps: &mut Vec<Value>,
) -> Option<String> {
    if n == 0 && shape.iter().product::<usize>() > 0 {
        return None;
    }
    let count: usize = shape.iter().product();
    let n = n as i64;
    let data: Vec<Value> = (0..count)
        .map(|_| {
            let lo = if plain { 0 } else { -n };
            json!(g.rng.range(lo, n - 1))
        })
        .collect();
    let name = g.fresh();
    steps.push(json!({"let": name, "op": "tensor", "args": {"data": data, "shape": shape, "dtype": "int64"}}));
    Some(name)
}

pub(super) fn join(g: &mut Gen, steps: &mut Vec<Value>) -> Option<Value> {
    let x = g.any()?;
    let t = g.t(&x).clone();
    let nd = t.ndim();
    let shape = t.shape().to_vec();
    Some(match g.rng.below(9) {
        0 | 1 => {
            // cat/stack with tensors of the same shape (any dtype: they promote).
            let same: Vec<String> = g
                .order
                .iter()
                .filter(|n| g.env[*n].shape() == shape.as_slice())
                .cloned()
                .collect();
            let k = g.rng.range(1, 3) as usize;
            let parts: Vec<Value> = (0..k).map(|_| r(&same[g.rng.below(same.len())])).collect();
            let op = g.rng.pick(&["cat", "stack"]);
            let d = if op == "stack" {
                g.dim(nd + 1)
            } else {
                g.dim(nd)
            };
            step(g, op, json!({"tensors": parts, "dim": d}))
        }
        2 if nd > 0 => {
            let d = g.dim(nd);
            let du = d.rem_euclid(nd as i64) as usize;
            let ishape: Vec<usize> = shape
                .iter()
                .enumerate()
                .map(|(i, &s)| {
                    if i == du {
                        g.rng.range(1, 4) as usize
                    } else {
                        g.rng.range(s.min(1) as i64, s as i64) as usize
                    }
                })
                .collect();
            let i = index_tensor(g, &ishape, shape[du], true, steps)?;
            step(
                g,
                "gather",
                json!({"self": r(&x), "dim": d, "index": r(&i)}),
            )
        }
        3 if nd > 0 => {
            let d = g.dim(nd);
            let du = d.rem_euclid(nd as i64) as usize;
            let len = g.rng.range(0, 4) as usize;
            let i = index_tensor(g, &[len], shape[du], true, steps)?;
            step(
                g,
                "index_select",
                json!({"self": r(&x), "dim": d, "index": r(&i)}),
            )
        }
        4 => {
            let ishape = [g.rng.range(0, 4) as usize];
            let i = index_tensor(g, &ishape, t.numel(), false, steps)?;
            step(g, "take", json!({"self": r(&x), "index": r(&i)}))
        }
        5 => {
            let m = mask(g, &x, steps)?;
            step(g, "masked_select", json!({"self": r(&x), "mask": r(&m)}))
        }
        6 => step(g, "nonzero", json!({"self": r(&x)})),
        _ if nd > 0 => {
            // Advanced getitem: an index tensor on one dim (maybe after a slice) or a mask.
            if g.rng.chance(0.3) {
                let m = g.input(&shape, DType::Bool, steps);
                step(g, "getitem", json!({"self": r(&x), "index": [r(&m)]}))
            } else {
                let d = g.rng.below(nd);
                let len = g.rng.range(1, 3) as usize;
                let i = index_tensor(g, &[len], shape[d], false, steps)?;
                let mut index: Vec<Value> = (0..d)
                    .map(|_| json!({"slice": [null, null, null]}))
                    .collect();
                index.push(r(&i));
                step(g, "getitem", json!({"self": r(&x), "index": index}))
            }
        }
        _ => return None,
    })
}

pub(super) fn matmul(g: &mut Gen, steps: &mut Vec<Value>) -> Option<Value> {
    let x = g.pick(|t, _| (1..=3).contains(&t.ndim()) && t.dtype() != DType::Bool)?;
    let t = g.t(&x).clone();
    let shape = t.shape().to_vec();
    let d = t.dtype();
    let k = *shape.last()?;
    let n = g.rng.range(1, 4) as usize;
    Some(match (t.ndim(), g.rng.below(3)) {
        (1, 0) => {
            let y = g.input(&[k], d, steps);
            step(g, "dot", json!({"self": r(&x), "tensor": r(&y)}))
        }
        (1, 1) => {
            let y = g.input(&[n], d, steps);
            step(g, "outer", json!({"self": r(&x), "vec2": r(&y)}))
        }
        (1, _) => {
            let y = g.input(&[k, n], d, steps);
            step(g, "matmul", json!({"self": r(&x), "other": r(&y)}))
        }
        (2, 0) => {
            let y = g.input(&[k, n], d, steps);
            step(g, "mm", json!({"self": r(&x), "mat2": r(&y)}))
        }
        (2, 1) => {
            let y = g.input(&[k], d, steps);
            step(g, "mv", json!({"self": r(&x), "vec": r(&y)}))
        }
        (2, _) => {
            let y = g.input(&[k, n], d, steps);
            let bias_shape = if g.rng.chance(0.5) {
                vec![shape[0], n]
            } else {
                vec![n]
            };
            let b = g.input(&bias_shape, d, steps);
            let mut args = json!({"self": r(&b), "mat1": r(&x), "mat2": r(&y)});
            if g.rng.chance(0.3) {
                args["beta"] = g.scalar(d);
                args["alpha"] = g.scalar(d);
            }
            step(g, "addmm", args)
        }
        (_, 0) => {
            let y = g.input(&[shape[0], k, n], d, steps);
            step(g, "bmm", json!({"self": r(&x), "mat2": r(&y)}))
        }
        _ => {
            let y = if g.rng.chance(0.5) {
                g.input(&[k, n], d, steps)
            } else {
                g.input(&[1, k, n], d, steps)
            };
            step(g, "matmul", json!({"self": r(&x), "other": r(&y)}))
        }
    })
}

const IN_PLACE: [&str; 13] = [
    "add_",
    "sub_",
    "mul_",
    "div_",
    "neg_",
    "abs_",
    "exp_",
    "clamp_",
    "copy_",
    "fill_",
    "zero_",
    "masked_fill_",
    "setitem",
];

pub(super) fn in_place(g: &mut Gen, steps: &mut Vec<Value>) -> Option<Value> {
    // Through a view of another bound tensor most of the time.
    let x = if g.rng.chance(0.6) {
        let order = g.order.clone();
        let env = g.env.clone();
        g.pick(|t, _| {
            order
                .iter()
                .any(|o| !env[o].is_same(t) && env[o].shares_storage(t))
        })
        .or_else(|| g.any())?
    } else {
        g.any()?
    };
    let d = g.t(&x).dtype();
    let op = g.rng.pick(&IN_PLACE);
    let s = r(&x);
    let args = match op {
        "add_" | "sub_" | "mul_" | "div_" => {
            let o = other(g, &x, steps, true);
            let mut a = json!({"self": s, "other": o});
            if op == "div_" && g.rng.chance(0.3) {
                a["rounding_mode"] = json!(g.rng.pick(&["trunc", "floor"]));
            }
            if matches!(op, "add_" | "sub_") && g.rng.chance(0.2) {
                a["alpha"] = g.scalar(d);
            }
            a
        }
        "neg_" | "abs_" | "exp_" | "zero_" => json!({"self": s}),
        "clamp_" => json!({"self": s, "min": g.scalar(d), "max": g.scalar(d)}),
        "copy_" => {
            let o = other(g, &x, steps, false);
            json!({"self": s, "src": o})
        }
        "fill_" => json!({"self": s, "value": g.scalar(d)}),
        "masked_fill_" => {
            let m = mask(g, &x, steps)?;
            json!({"self": s, "mask": r(&m), "value": g.scalar(d)})
        }
        _ => {
            let shape = g.t(&x).shape().to_vec();
            let index = basic_index(g, &shape);
            let v = if g.rng.chance(0.6) {
                g.scalar(d)
            } else {
                let y = g.input(&[], d, steps);
                r(&y)
            };
            json!({"self": s, "index": index, "value": v})
        }
    };
    // In-place ops bind nothing (their result is `self`), except now and then.
    if op != "setitem" && g.rng.chance(0.15) {
        Some(step(g, op, args))
    } else {
        Some(json!({"op": op, "args": args}))
    }
}

pub(super) fn creation(g: &mut Gen) -> Option<Value> {
    let shape = g.operand_shape();
    let dtype = g.dtype();
    Some(match g.rng.below(8) {
        0 => step(g, "zeros", json!({"size": shape, "dtype": dtype.name()})),
        1 => step(g, "ones", json!({"size": shape})),
        2 => {
            let v = g.scalar(dtype);
            step(g, "full", json!({"size": shape, "fill_value": v}))
        }
        3 => {
            let start = g.rng.range(-4, 4);
            let end = start + g.rng.range(0, 8);
            if g.rng.chance(0.5) {
                step(
                    g,
                    "arange",
                    json!({"start": start as f64 / 2.0, "end": end as f64, "step": 0.5}),
                )
            } else {
                step(g, "arange", json!({"start": start, "end": end}))
            }
        }
        4 => {
            let steps = g.rng.range(0, 7);
            step(
                g,
                "linspace",
                json!({"start": -1.5, "end": 2.0, "steps": steps, "dtype": dtype.name()}),
            )
        }
        5 => {
            let (n, m) = (g.rng.range(0, 4), g.rng.range(0, 4));
            step(g, "eye", json!({"n": n, "m": m}))
        }
        _ => {
            let x = g.any()?;
            let op = g.rng.pick(&["zeros_like", "ones_like", "full_like"]);
            let mut args = json!({"self": r(&x)});
            if op == "full_like" {
                let d = g.t(&x).dtype();
                args["fill_value"] = g.scalar(d);
            }
            if g.rng.chance(0.3) {
                args["dtype"] = json!(dtype.name());
            }
            if g.rng.chance(0.2) {
                args["memory_format"] = json!("contiguous_format");
            }
            step(g, op, args)
        }
    })
}

/// Named-tensor ops (named programs only).
pub(super) fn named(g: &mut Gen) -> Option<Value> {
    let x = g.any()?;
    let t = g.t(&x).clone();
    let names = t.names();
    let nd = t.ndim();
    let fresh = |g: &mut Gen| -> Value {
        if g.rng.chance(0.2) {
            Value::Null
        } else {
            json!(g.rng.pick(&["A", "B", "C", "D", "E", "F"]))
        }
    };
    let own: Vec<Value> = names
        .iter()
        .map(|n| n.as_ref().map_or(Value::Null, |n| json!(n)))
        .collect();
    Some(match g.rng.below(7) {
        0 => {
            // Name the unnamed dims (refine), keep the named ones.
            let mut refined = own.clone();
            for (i, v) in refined.iter_mut().enumerate() {
                if v.is_null() && g.rng.chance(0.7) {
                    *v = json!(["E", "F", "G", "H"][i % 4]);
                }
            }
            step(g, "refine_names", json!({"self": r(&x), "names": refined}))
        }
        1 => {
            let new: Vec<Value> = (0..nd).map(|_| fresh(g)).collect();
            step(g, "rename", json!({"self": r(&x), "names": new}))
        }
        2 => step(g, "rename", json!({"self": r(&x), "names": [null]})),
        3 => {
            let named: Vec<&String> = names.iter().flatten().collect();
            let from = (*named.first()?).clone();
            let to = fresh(g);
            step(g, "rename", json!({"self": r(&x), "mapping": {from: to}}))
        }
        4 => {
            // align_to: a permutation of the names, maybe with new ones, or "...".
            let mut order: Vec<Value> = names.iter().flatten().map(|n| json!(n)).collect();
            let p = perm(g, order.len());
            order = p.iter().map(|&i| order[i as usize].clone()).collect();
            if g.rng.chance(0.3) {
                order.insert(g.rng.below(order.len() + 1), json!("..."));
            }
            if g.rng.chance(0.3) {
                let unused = NAMES
                    .iter()
                    .find(|n| !names.iter().any(|m| m.as_deref() == Some(**n)));
                if let Some(u) = unused {
                    order.insert(0, json!(u));
                }
            }
            step(g, "align_to", json!({"self": r(&x), "names": order}))
        }
        5 => {
            let y = g.pick(|o, _| o.has_names())?;
            step(g, "align_as", json!({"self": r(&x), "other": r(&y)}))
        }
        _ => {
            // Named flatten of two adjacent dims, or named unflatten of one.
            if nd >= 2 && g.rng.chance(0.5) {
                let a = g.rng.below(nd - 1);
                let (Some(p), Some(q)) = (&names[a], &names[a + 1]) else {
                    return None;
                };
                step(
                    g,
                    "flatten",
                    json!({"self": r(&x), "dims": [p, q], "out_dim": "M"}),
                )
            } else {
                let d = g.rng.below(nd.max(1));
                let Some(Some(dn)) = names.get(d) else {
                    return None;
                };
                let n = t.shape()[d] as i64;
                step(
                    g,
                    "unflatten",
                    json!({"self": r(&x), "dim": dn, "sizes": [1, n], "names": ["P", "Q"]}),
                )
            }
        }
    })
}
