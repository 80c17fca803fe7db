//! Candidate view and copy steps: permutations, reshapes, slices, expansions, windows of the
//! storage, splits, casts and strided fresh inputs.

use super::super::generator::Gen;
use super::{basic_index, perm, r, reshaped, step, step_list};
use serde_json::{Value, json};

pub(super) fn view(g: &mut Gen, steps: &mut Vec<Value>) -> Option<Value> {
    let x = g.any()?;
    let t = g.t(&x).clone();
    let nd = t.ndim();
    let shape = t.shape().to_vec();
    let s = r(&x);
    Some(match g.rng.below(30) {
        0 => {
            let p = perm(g, nd);
            step(g, "permute", json!({"self": s, "dims": p}))
        }
        1 | 2 => {
            let (a, b) = (g.dim_of(&x), g.dim_of(&x));
            step(g, "transpose", json!({"self": s, "dim0": a, "dim1": b}))
        }
        3 => step(g, "t", json!({"self": s})),
        4 => {
            let size = reshaped(g, &shape);
            step(g, "view", json!({"self": s, "size": size}))
        }
        5 => {
            let size = reshaped(g, &shape);
            step(g, "reshape", json!({"self": s, "shape": size}))
        }
        6 => {
            let (a, b) = (g.dim(nd), g.dim(nd));
            step(
                g,
                "flatten",
                json!({"self": s, "start_dim": a.min(b), "end_dim": a.max(b)}),
            )
        }
        7 if nd > 0 => {
            let d = g.rng.below(nd);
            let n = shape[d] as i64;
            let f = (1..=n.max(1))
                .rev()
                .find(|f| n % f == 0 && g.rng.chance(0.5));
            let sizes = match f {
                Some(f) if g.rng.chance(0.5) => json!([-1, f]),
                Some(f) => json!([n / f, f]),
                None => json!([n, 1]),
            };
            step(g, "unflatten", json!({"self": s, "dim": d, "sizes": sizes}))
        }
        8 => step(g, "ravel", json!({"self": s})),
        9 if nd > 0 => {
            let d = g.dim(nd);
            let size = g.rng.range(0, 3);
            let stp = g.rng.range(1, 3);
            step(
                g,
                "unfold",
                json!({"self": s, "dimension": d, "size": size, "step": stp}),
            )
        }
        10 if nd >= 2 => {
            let (a, b) = (g.dim_of(&x), g.dim_of(&x));
            let offset = g.rng.range(-2, 2);
            step(
                g,
                "diagonal",
                json!({"self": s, "offset": offset, "dim1": a, "dim2": b}),
            )
        }
        11 => {
            let (a, b) = (g.dim(nd), g.dim(nd));
            step(
                g,
                "movedim",
                json!({"self": s, "source": a, "destination": b}),
            )
        }
        12 => {
            let args = match g.rng.below(3) {
                0 => json!({"self": s}),
                1 => json!({"self": s, "dim": g.dim_of(&x)}),
                _ => json!({"self": s, "dim": [g.dim(nd), g.dim(nd)]}),
            };
            step(g, "squeeze", args)
        }
        13 => {
            let d = g.dim(nd + 1);
            step(g, "unsqueeze", json!({"self": s, "dim": d}))
        }
        14 | 15 => {
            // Expand size-1 dims (and maybe add a leading one): stride-0 views.
            let mut size: Vec<i64> = shape
                .iter()
                .map(|&d| {
                    if d == 1 && g.rng.chance(0.7) {
                        g.rng.range(2, 4)
                    } else if g.rng.chance(0.3) {
                        -1
                    } else {
                        d as i64
                    }
                })
                .collect();
            if g.rng.chance(0.3) {
                size.insert(0, g.rng.range(1, 3));
            }
            let op = g.rng.pick(&["expand", "broadcast_to"]);
            if op == "broadcast_to" {
                // No -1 in broadcast_to's sizes: the dim's own size.
                let extra = size.len() - shape.len();
                for (i, v) in size.iter_mut().enumerate().skip(extra) {
                    if *v == -1 {
                        *v = shape[i - extra] as i64;
                    }
                }
            }
            step(g, op, json!({"self": s, "size": size}))
        }
        16 if nd > 0 => {
            let d = g.dim(nd);
            let n = shape[d.rem_euclid(nd as i64) as usize] as i64;
            let start = g.rng.range(-n, n);
            let len = g.rng.range(0, (n - start.rem_euclid(n.max(1))).max(0));
            step(
                g,
                "narrow",
                json!({"self": s, "dim": d, "start": start, "length": len}),
            )
        }
        17 if nd > 0 => {
            let d = g.dim_of(&x);
            let i = g.rng.range(-2, 2);
            step(g, "select", json!({"self": s, "dim": d, "index": i}))
        }
        18 => {
            // A window of the storage: sizes and strides that stay inside it.
            let len = t.storage_len() as i64;
            if len == 0 {
                return None;
            }
            let rank = g.rng.range(0, 3) as usize;
            let size: Vec<i64> = (0..rank).map(|_| g.rng.range(1, 3)).collect();
            let stride: Vec<i64> = (0..rank).map(|_| g.rng.range(0, 3)).collect();
            let reach: i64 = size.iter().zip(&stride).map(|(a, b)| (a - 1) * b).sum();
            if reach >= len {
                return None;
            }
            let off = g.rng.range(0, len - 1 - reach);
            step(
                g,
                "as_strided",
                json!({"self": s, "size": size, "stride": stride, "storage_offset": off}),
            )
        }
        19..=21 => {
            let index = basic_index(g, &shape);
            step(g, "getitem", json!({"self": s, "index": index}))
        }
        22 => {
            let mf = if nd == 4 && g.rng.chance(0.5) {
                json!("channels_last")
            } else {
                Value::Null
            };
            let op = g.rng.pick(&["contiguous", "clone", "detach"]);
            let mut args = json!({"self": s});
            if !mf.is_null() && op != "detach" {
                args["memory_format"] = mf;
            }
            step(g, op, args)
        }
        23 => {
            let d = g.dtype();
            let copy = g.rng.chance(0.2);
            step(g, "to", json!({"self": s, "dtype": d.name(), "copy": copy}))
        }
        24 => {
            let dims: Vec<i64> = (0..nd)
                .filter(|_| g.rng.chance(0.5))
                .map(|d| d as i64)
                .collect();
            step(g, "flip", json!({"self": s, "dims": dims}))
        }
        25 if nd > 0 => {
            let d = g.dim(nd);
            let sh = g.rng.range(-3, 3);
            step(g, "roll", json!({"self": s, "shifts": [sh], "dims": [d]}))
        }
        26 => {
            let extra = g.rng.below(2);
            let reps: Vec<i64> = (0..nd + extra).map(|_| g.rng.range(1, 2)).collect();
            step(g, "repeat", json!({"self": s, "repeats": reps}))
        }
        27 if nd > 0 => {
            let d = g.dim(nd);
            let n = shape[d.rem_euclid(nd as i64) as usize];
            match g.rng.below(4) {
                0 => {
                    let size = g.rng.range(1, 3);
                    let pieces = n.div_ceil(size as usize).max(1);
                    step_list(
                        g,
                        "split",
                        json!({"self": s, "split_size_or_sections": size, "dim": d}),
                        pieces,
                    )
                }
                1 => {
                    let chunks = g.rng.range(1, 3) as usize;
                    let size = n.div_ceil(chunks).max(1);
                    let pieces = if n == 0 { chunks } else { n.div_ceil(size) };
                    step_list(
                        g,
                        "chunk",
                        json!({"self": s, "chunks": chunks, "dim": d}),
                        pieces,
                    )
                }
                2 => {
                    let sections = g.rng.range(1, 3);
                    step_list(
                        g,
                        "tensor_split",
                        json!({"self": s, "indices_or_sections": sections, "dim": d}),
                        sections as usize,
                    )
                }
                _ => step_list(g, "unbind", json!({"self": s, "dim": d}), n),
            }
        }
        28 if nd >= 2 && g.rng.chance(0.3) => {
            let op = g.rng.pick(&["tril", "triu"]);
            let d = g.rng.range(-2, 2);
            step(g, op, json!({"self": s, "diagonal": d}))
        }
        28 => {
            // view_as / reshape_as / expand_as another tensor.
            let y = g.any()?;
            let op = g.rng.pick(&["view_as", "reshape_as", "expand_as"]);
            step(g, op, json!({"self": s, "other": r(&y)}))
        }
        _ => {
            // A strided input: a transposed or sliced fresh tensor.
            let dtype = g.t(&x).dtype();
            let mut wide = g.base.clone();
            if wide.is_empty() {
                return None;
            }
            let last = wide.len() - 1;
            wide[last] *= 2;
            let y = g.input(&wide, dtype, steps);
            let index = vec![json!("..."), json!({"slice": [null, null, 2]})];
            step(g, "getitem", json!({"self": r(&y), "index": index}))
        }
    })
}
