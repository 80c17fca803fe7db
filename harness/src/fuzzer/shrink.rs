//! Shrinking a failing program: greedy deletion of steps (each with the steps that use what
//! it bound), then simpler arguments (smaller and fewer inputs, plainer values and dtypes,
//! optional arguments dropped), kept only while the program still obeys the generator's rules
//! and still shows the same failure (same kind, same mode against the oracle), until nothing
//! more goes or the time is up.

// JSON values are matched partially on purpose; the no-wildcard rule is for smelt's IR enums.
#![allow(clippy::wildcard_enum_match_arm)]

use super::exec::{Failure, Mode, compare, run};
use super::generator::analyse;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// Runs `steps` in the oracle and in `failure`'s mode: the failure they show if it is the
/// same as `failure` (kind and mode), else `None`.
pub fn reproduce(steps: &[Value], failure: &Failure) -> Option<Failure> {
    let tols = analyse(steps).ok()?;
    let oracle = run(steps, failure.oracle);
    let got = if failure.mode == failure.oracle {
        oracle.clone()
    } else {
        run(steps, failure.mode)
    };
    let f = compare(&oracle, &got, &tols)?;
    (f.signature() == failure.signature()).then_some(f)
}

/// The names a step binds.
fn bound(step: &Value) -> Vec<String> {
    crate::conformance::let_names(step)
}

/// Does `v` mention `$name` for a name in `names`?
fn mentions(v: &Value, names: &HashSet<String>) -> bool {
    match v {
        Value::String(s) => s.strip_prefix('$').is_some_and(|n| names.contains(n)),
        Value::Array(items) => items.iter().any(|i| mentions(i, names)),
        Value::Object(o) => o.values().any(|i| mentions(i, names)),
        _ => false,
    }
}

/// `steps` without step `i` and every later step that uses what it (or they) bound.
fn without(steps: &[Value], i: usize) -> Vec<Value> {
    let mut gone: HashSet<String> = bound(&steps[i]).into_iter().collect();
    let mut out = steps[..i].to_vec();
    for step in &steps[i + 1..] {
        if mentions(step.get("args").unwrap_or(&Value::Null), &gone) {
            gone.extend(bound(step));
        } else {
            out.push(step.clone());
        }
    }
    out
}

/// Simpler versions of step `i`, simplest first.
fn simpler(steps: &[Value], i: usize) -> Vec<Vec<Value>> {
    let step = &steps[i];
    let mut out = vec![];
    let mut with = |new: Value| {
        if &new != step {
            let mut s = steps.to_vec();
            s[i] = new;
            out.push(s);
        }
    };
    let args = step.get("args").cloned().unwrap_or(json!({}));
    let op = step.get("op").and_then(Value::as_str).unwrap_or("");
    let optional = [
        "alpha",
        "beta",
        "keepdim",
        "memory_format",
        "correction",
        "descending",
        "copy",
        "offset",
        "decimals",
        "names",
        "storage_offset",
    ];
    for key in optional {
        if args.get(key).is_some() {
            let mut s = step.clone();
            s["args"].as_object_mut().map(|a| a.remove(key));
            with(s);
        }
    }
    if op == "tensor" {
        let dtype = args.get("dtype").and_then(Value::as_str).unwrap_or("");
        let shape: Vec<usize> = args
            .get("shape")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_u64())
                    .map(|v| v as usize)
                    .collect()
            })
            .unwrap_or_default();
        let data: Vec<Value> = args
            .get("data")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        // Smaller: one dim down to 1 (keeping its first slice), or the first dim dropped.
        for d in 0..shape.len() {
            if shape[d] > 1 {
                let mut s = step.clone();
                let (new_shape, new_data) = first_slice(&shape, &data, d);
                s["args"]["shape"] = json!(new_shape);
                s["args"]["data"] = json!(new_data);
                with(s);
            }
        }
        if ["float64", "float16", "bfloat16"].contains(&dtype) {
            let mut s = step.clone();
            s["args"]["dtype"] = json!("float32");
            with(s);
        }
        let plain = |v: &Value, zero: bool| match v {
            Value::Bool(_) => json!(!zero),
            Value::Number(n) if n.is_f64() => json!(if zero { 0.0 } else { 1.0 }),
            Value::Number(_) => json!(if zero { 0 } else { 1 }),
            _ => json!(if zero { 0.0 } else { 1.0 }),
        };
        for zero in [false, true] {
            let mut s = step.clone();
            s["args"]["data"] = json!(data.iter().map(|v| plain(v, zero)).collect::<Vec<_>>());
            with(s);
        }
        if data.len() <= 32 {
            for (j, v) in data.iter().enumerate() {
                for zero in [true, false] {
                    let p = plain(v, zero);
                    if &p != v {
                        let mut s = step.clone();
                        s["args"]["data"][j] = p;
                        with(s);
                    }
                }
            }
        }
    }
    out
}

/// `data` of `shape` cut to the first index along `dim`.
fn first_slice(shape: &[usize], data: &[Value], dim: usize) -> (Vec<usize>, Vec<Value>) {
    let inner: usize = shape[dim + 1..].iter().product();
    let outer: usize = shape[..dim].iter().product();
    let mut new_data = vec![];
    for o in 0..outer {
        let start = o * shape[dim] * inner;
        new_data.extend_from_slice(&data[start..start + inner]);
    }
    let mut new_shape = shape.to_vec();
    new_shape[dim] = 1;
    (new_shape, new_data)
}

/// How big a program is, to compare a candidate with: steps, then tensor elements, then
/// the length of its text, then how plain its input values and dtypes are (0 and `false` are
/// plainer than 1 and `true`, which are plainer than anything else; float32 is the plainest
/// float). A candidate is kept only when it is smaller, so shrinking cannot cycle.
fn cost(steps: &[Value]) -> (usize, usize, usize, usize) {
    let mut elements = 0;
    let mut plainness = 0;
    for step in steps {
        let args = step.get("args").unwrap_or(&Value::Null);
        if let Some(data) = args.get("data").and_then(Value::as_array) {
            elements += data.len();
            plainness += data
                .iter()
                .map(|v| match v {
                    Value::Bool(false) => 0,
                    Value::Bool(true) => 1,
                    Value::Number(n) if n.as_f64() == Some(0.0) => 0,
                    Value::Number(n) if n.as_f64() == Some(1.0) => 1,
                    _ => 2,
                })
                .sum::<usize>();
        }
        if let Some(d) = args.get("dtype").and_then(Value::as_str) {
            plainness += usize::from(d != "float32");
        }
    }
    let text: usize = steps.iter().map(|s| s.to_string().len()).sum();
    (steps.len(), elements, text, plainness)
}

/// What shrinking made of a failing program.
#[derive(Clone, Debug)]
pub struct Shrunk {
    pub steps: Vec<Value>,
    pub failure: Failure,
    /// Candidate programs run.
    pub tries: usize,
    pub complete: bool,
}

impl Shrunk {
    /// Runs `cand` when it costs less than the best so far and keeps it when it still fails
    /// the same way; whether it was kept.
    fn take_if_smaller(&mut self, cand: Vec<Value>) -> bool {
        if cost(&cand) >= cost(&self.steps) {
            return false;
        }
        self.tries += 1;
        match reproduce(&cand, &self.failure) {
            Some(f) => {
                self.steps = cand;
                self.failure = f;
                true
            }
            None => false,
        }
    }
}

/// Shrinks `steps` (which fail with `failure`) for at most `budget`.
pub fn shrink(steps: Vec<Value>, failure: Failure, budget: Duration) -> Shrunk {
    let start = Instant::now();
    let mut best = Shrunk {
        steps,
        failure,
        tries: 0,
        complete: false,
    };
    let mut progress = true;
    while progress {
        progress = false;
        // Deletions, from the end (later steps depend on earlier ones).
        let mut i = best.steps.len();
        while i > 0 {
            i -= 1;
            if start.elapsed() > budget {
                return best;
            }
            if best.take_if_smaller(without(&best.steps, i)) {
                progress = true;
                i = i.min(best.steps.len());
            }
        }
        // Simplifications, one step at a time, the first that still fails taken.
        let mut i = 0;
        while i < best.steps.len() {
            let mut changed = false;
            for cand in simpler(&best.steps, i) {
                if start.elapsed() > budget {
                    return best;
                }
                if best.take_if_smaller(cand) {
                    progress = true;
                    changed = true;
                    break;
                }
            }
            if !changed {
                i += 1;
            }
        }
    }
    best.complete = true;
    best
}

/// The modes a failure involves (for a report).
pub fn modes(failure: &Failure) -> Vec<Mode> {
    if failure.mode == failure.oracle {
        vec![failure.mode]
    } else {
        vec![failure.oracle, failure.mode]
    }
}
