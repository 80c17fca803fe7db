//! The sparse COO part of the runner: the ops only sparse tensors have (FORMAT.md §9:
//! `sparse_coo_tensor`, `coalesce`, `indices`/`values`/`_indices`/`_values`, `to_dense`,
//! `to_sparse`, `sparse.sum`, `sparse.mm`, `narrow_copy`) and the expectations of a sparse
//! result (FORMAT.md §5: layout, sparse/dense dims, nnz, the coalesced flag, the stored
//! indices and values, the dense form). The ops sparse and strided tensors share (`add`, `mul`,
//! `sum`, `transpose`, `mm` …) go through the ordinary dispatch: the tensor decides.

use super::args::{Args, Env};
use super::dispatch::Produced;
use super::{check_shares, check_values, ints};
use serde_json::Value;
use smelt_frontend::{Layout, Result, Tensor};

fn one(t: Result<Tensor>) -> Result<Produced> {
    t.map(|t| vec![t])
}

/// Runs `name` when it is a sparse-only op; `None` for any other op.
pub fn run_op(name: &str, a: &Args) -> Option<Result<Produced>> {
    let s = || a.tensor("self");
    Some(match name {
        "sparse_coo_tensor" => (|| {
            let size = if a.has("size") {
                Some(a.ints("size")?)
            } else {
                None
            };
            one(Tensor::try_sparse_coo_tensor_full(
                &a.tensor("indices")?,
                &a.tensor("values")?,
                size.as_deref(),
                a.dtype("dtype")?,
                a.bool_or("check_invariants", false)?,
            ))
        })(),
        "coalesce" => s().and_then(|t| one(t.try_coalesce())),
        "indices" => s().and_then(|t| one(t.try_indices())),
        "values" => s().and_then(|t| one(t.try_values())),
        "_indices" => s().and_then(|t| one(t.try_stored_indices())),
        "_values" => s().and_then(|t| one(t.try_stored_values())),
        "to_dense" => s().and_then(|t| one(t.try_to_dense())),
        "to_sparse" => (|| {
            let dim = a.opt_int("sparse_dim")?.map(|d| d.max(0) as usize);
            one(s()?.try_to_sparse(dim))
        })(),
        "sparse.sum" => (|| {
            let dims = if a.has("dim") { a.ints("dim")? } else { vec![] };
            one(s()?.try_sparse_sum(&dims))
        })(),
        "sparse.mm" => (|| one(s()?.try_sparse_mm(&a.tensor("dense")?)))(),
        "narrow_copy" => {
            (|| one(s()?.try_narrow_copy(a.int("dim")?, a.int("start")?, a.int("length")?)))()
        }
        _ => return None,
    })
}

/// Checks a name bound to a sparse tensor, or an entry that expects one, against `exp`.
pub fn check_tensor(
    name: &str,
    t: &Tensor,
    exp: &Value,
    env: &Env,
    order: &[String],
) -> Result<(), String> {
    match (exp.get("layout").and_then(Value::as_str), t.layout()) {
        (Some("sparse_coo"), Layout::SparseCoo) => {}
        (want, got) => {
            return Err(format!(
                "{name}: layout {got}, expected {}",
                want.unwrap_or("strided")
            ));
        }
    }
    let shape: Vec<i64> = t.shape().iter().map(|&s| s as i64).collect();
    if let Some(e) = ints(exp.get("shape"))
        && e != shape
    {
        return Err(format!("{name}: shape {shape:?}, expected {e:?}"));
    }
    if let Some(e) = exp.get("dtype").and_then(Value::as_str)
        && e != t.dtype().name()
    {
        return Err(format!("{name}: dtype {}, expected {e}", t.dtype()));
    }
    let counts = [
        ("sparse_dim", t.sparse_dim()),
        ("dense_dim", t.dense_dim()),
        ("nnz", t.nnz()),
    ];
    for (field, got) in counts {
        if let Some(e) = exp.get(field).and_then(Value::as_u64)
            && e != got as u64
        {
            return Err(format!("{name}: {field} {got}, expected {e}"));
        }
    }
    if let Some(e) = exp.get("is_coalesced").and_then(Value::as_bool)
        && e != t.is_coalesced()
    {
        return Err(format!(
            "{name}: is_coalesced {}, expected {e}",
            t.is_coalesced()
        ));
    }
    check_shares(name, t, exp, env, order)?;
    if let Some(rows) = exp.get("indices").and_then(Value::as_array) {
        let indices = t.stored_indices();
        let got = indices
            .try_to_scalars()
            .map_err(|e| format!("{name}: indices: {e}"))?;
        let nnz = t.nnz();
        let want: Vec<Vec<i64>> = rows.iter().filter_map(|r| ints(Some(r))).collect();
        let got: Vec<Vec<i64>> = (0..t.sparse_dim())
            .map(|d| {
                got[d * nnz..(d + 1) * nnz]
                    .iter()
                    .map(|s| s.as_i64())
                    .collect()
            })
            .collect();
        if got != want {
            return Err(format!("{name}: indices {got:?}, expected {want:?}"));
        }
    }
    let rtol = exp.get("rtol").and_then(Value::as_f64).unwrap_or(0.0);
    let atol = exp.get("atol").and_then(Value::as_f64).unwrap_or(0.0);
    for (field, part) in [("values", t.stored_values()), ("dense", t.to_dense())] {
        let Some(want) = exp.get(field).and_then(Value::as_array) else {
            continue;
        };
        let got = part
            .try_to_scalars()
            .map_err(|e| format!("{name}: {field}: {e}"))?;
        check_values(name, (field, field), &got, want, t.dtype(), (rtol, atol))?;
    }
    Ok(())
}
