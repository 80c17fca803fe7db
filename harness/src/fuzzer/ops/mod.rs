//! Candidate steps of the generator, one family of ops per function: views, elementwise ops
//! of every dtype (with tensor, 0-dim and Python scalar operands), reductions, joins and
//! indexing, the matmul family, in-place ops through views, named-tensor ops, creation.
//! Each builds arguments that are mostly valid for the tensors at hand; the generator runs
//! them and drops what raises.

mod values;
mod views;

use super::generator::Gen;
use serde_json::{Value, json};
use values::{binary, creation, in_place, join, matmul, named, reduction, select_like, unary};
use views::view;

/// How often each family is drawn.
const FAMILIES: [u32; 12] = [
    22, // views and copies
    12, // unary
    18, // binary
    6,  // where, clamp, masked_fill
    12, // reductions
    8,  // joins and indexing
    4,  // matmul family
    14, // in place
    3,  // creation
    6,  // named
    1,  // set_default_dtype
    4,  // a fresh input
];

/// One candidate: the steps to add (helper inputs first, the op last).
pub fn candidate(g: &mut Gen) -> Option<Vec<Value>> {
    let mut steps = vec![];
    let op = match g.rng.weighted(&FAMILIES) {
        0 => view(g, &mut steps),
        1 => unary(g),
        2 => binary(g, &mut steps),
        3 => select_like(g, &mut steps),
        4 => reduction(g),
        5 => join(g, &mut steps),
        6 => matmul(g, &mut steps),
        7 => in_place(g, &mut steps),
        8 => creation(g),
        9 if g.is_named() => named(g),
        10 => {
            let d = g
                .rng
                .pick(&["float32", "float64", "float16", "bfloat16", "float32"]);
            Some(json!({"op": "set_default_dtype", "args": {"dtype": d}}))
        }
        _ => {
            let shape = g.operand_shape();
            let dtype = g.dtype();
            g.input(&shape, dtype, &mut steps);
            return Some(steps);
        }
    }?;
    steps.push(op);
    Some(steps)
}

pub(super) fn r(name: &str) -> Value {
    json!(format!("${name}"))
}

pub(super) fn step(g: &mut Gen, op: &str, args: Value) -> Value {
    let name = g.fresh();
    json!({"let": name, "op": op, "args": args})
}

pub(super) fn step_list(g: &mut Gen, op: &str, args: Value, n: usize) -> Value {
    let names: Vec<String> = (0..n).map(|_| g.fresh()).collect();
    json!({"let": names, "op": op, "args": args})
}

/// A random permutation of `0..n`.
pub(super) fn perm(g: &mut Gen, n: usize) -> Vec<i64> {
    let mut p: Vec<i64> = (0..n as i64).collect();
    for i in (1..n).rev() {
        let j = g.rng.below(i + 1);
        p.swap(i, j);
    }
    p
}

/// Another shape of the same number of elements: adjacent dims merged or a dim split.
pub(super) fn reshaped(g: &mut Gen, shape: &[usize]) -> Vec<i64> {
    let mut s: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    match g.rng.below(4) {
        0 if s.len() >= 2 => {
            let i = g.rng.below(s.len() - 1);
            let merged = s[i] * s[i + 1];
            s.splice(i..i + 2, [merged]);
        }
        1 if !s.is_empty() => {
            let i = g.rng.below(s.len());
            let d = s[i];
            if let Some(f) = (2..=d).find(|f| d % f == 0 && g.rng.chance(0.7)) {
                s.splice(i..=i, [f, d / f]);
            } else {
                s.insert(i, 1);
            }
        }
        2 => {
            let n: i64 = s.iter().product();
            s = vec![n];
        }
        _ => s.insert(g.rng.below(s.len() + 1), 1),
    }
    if !s.is_empty() && g.rng.chance(0.3) {
        let i = g.rng.below(s.len());
        s[i] = -1;
    }
    s
}

/// A basic index (ints, slices, None, Ellipsis) into a tensor of `shape`.
pub(super) fn basic_index(g: &mut Gen, shape: &[usize]) -> Vec<Value> {
    let mut items = vec![];
    let mut dim = 0;
    let take = g.rng.range(1, shape.len().max(1) as i64) as usize;
    let mut ellipsis = false;
    while items.len() < take {
        match g.rng.below(8) {
            0 | 1 if dim < shape.len() && shape[dim] > 0 => {
                let s = shape[dim] as i64;
                items.push(json!(g.rng.range(-s, s - 1)));
                dim += 1;
            }
            2 => items.push(json!("None")),
            3 if !ellipsis && g.rng.chance(0.5) => {
                items.push(json!("..."));
                ellipsis = true;
                dim = shape.len();
            }
            _ if dim < shape.len() => {
                let s = shape[dim] as i64;
                let (a, b) = (g.rng.range(-s - 1, s), g.rng.range(-s, s + 1));
                let start = g.rng.pick_cloned(&[Value::Null, json!(a)]);
                let stop = g.rng.pick_cloned(&[Value::Null, json!(b)]);
                let stp = g
                    .rng
                    .pick_cloned(&[Value::Null, json!(1), json!(2), json!(3)]);
                items.push(json!({"slice": [start, stop, stp]}));
                dim += 1;
            }
            _ => items.push(json!({"slice": [null, null, null]})),
        }
    }
    items
}
