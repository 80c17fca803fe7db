//! A program and what the oracle observed, written as a conformance case (FORMAT.md §2):
//! a differential case, whose expectations are smelt's reference mode's, not PyTorch's.

use super::exec::{Observed, Outcome, Stop, Tol};
use serde_json::{Map, Value, json};
use smelt_frontend::Scalar;
use std::collections::HashMap;

/// One value as the suite writes it (`"nan"`, `"inf"`, `"-inf"` for the specials).
fn value(s: Scalar) -> Value {
    match s {
        Scalar::Bool(b) => json!(b),
        Scalar::Int(i) => json!(i),
        Scalar::Float(x) if x.is_nan() => json!("nan"),
        Scalar::Float(x) if x == f64::INFINITY => json!("inf"),
        Scalar::Float(x) if x == f64::NEG_INFINITY => json!("-inf"),
        Scalar::Float(x) => json!(x),
    }
}

fn expectation(t: &Observed, tol: Tol) -> Value {
    let mut e = json!({
        "shape": t.shape,
        "stride": t.stride,
        "storage_offset": t.offset,
        "is_contiguous": t.contiguous,
        "dtype": t.dtype.name(),
        "shares_storage_with": t.shares,
        "names": t.names,
    });
    if let Ok(values) = &t.values {
        e["values"] = json!(values.iter().map(|&v| value(v)).collect::<Vec<_>>());
        if t.dtype.is_float() {
            let (rtol, atol) = match tol {
                Tol::Exact => (0.0, 0.0),
                Tol::Within(r, a) => (r, a),
            };
            e["rtol"] = json!(rtol);
            e["atol"] = json!(atol);
        }
    }
    e
}

/// The case `id` of `steps`, expecting what `oracle` observed; `note` says where it came from.
pub fn case(
    id: &str,
    steps: &[Value],
    oracle: &Outcome,
    tols: &HashMap<String, Tol>,
    note: &str,
) -> Value {
    let mut expect = Map::new();
    for t in &oracle.tensors {
        let tol = tols.get(&t.name).copied().unwrap_or(Tol::Exact);
        expect.insert(t.name.clone(), expectation(t, tol));
    }
    let error = match &oracle.stop {
        Some(Stop::Raised { step, kind, .. }) => json!({"step": step, "kind": kind}),
        _ => Value::Null,
    };
    json!({
        "id": id,
        "steps": steps,
        "expect": expect,
        "error": error,
        "note": note,
    })
}
