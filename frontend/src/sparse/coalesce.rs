//! Entries by linear index: each entry's index tuple as one int64 key (row-major over the
//! sparse sizes), a stable sort of the keys, runs of equal keys, and `coalesce`, which keeps
//! one entry per run with the run's values summed.
//!
//! All of it is lazy work on the indices and values — an elementwise key kernel, the `Sort`
//! and `IndexSelect` library ops, a cumsum — except one number: how many distinct keys there
//! are, which `coalesce` reads (a graph break: the result's size depends on it). The sums
//! themselves are the `Segment` library op, which folds each run in its stored order.

use super::{SparseCoo, take_rows, zeros_on};
use crate::tensor::{Tensor, ok};
use smelt_ir::view::fmt_list;
use smelt_ir::{DType, Error, LibraryOp, Result, View};

/// Row-major strides over the sparse sizes (`max(size, 1)` per dim, so keys stay distinct for
/// valid indices even past a zero size). Errors: a `value` error when the product of the
/// sizes does not fit an int64 key.
pub(crate) fn key_strides(sizes: &[usize]) -> Result<Vec<i64>> {
    let mut strides = vec![1i64; sizes.len()];
    let mut acc: i64 = 1;
    for d in (0..sizes.len()).rev() {
        strides[d] = acc;
        acc = i64::try_from(sizes[d].max(1))
            .ok()
            .and_then(|s| acc.checked_mul(s))
            .ok_or_else(|| {
                Error::value(format!(
                    "sparse indices over sizes {} do not fit one int64 linear index",
                    fmt_list(sizes)
                ))
            })?;
    }
    Ok(strides)
}

/// Each entry's linear index: `Σ_d indices[d, j]·stride_d`, int64 `[nnz]` (one fused kernel).
#[track_caller]
pub(crate) fn linear_keys(coo: &SparseCoo, sizes: &[usize]) -> Result<Tensor> {
    let strides = key_strides(sizes)?;
    let k = sizes.len();
    if k == 0 {
        return Ok(zeros_on(&[coo.nnz()], DType::I64, coo.indices.device()));
    }
    let mut keys = coo.indices.try_select(0, k as i64 - 1)?;
    for d in (0..k - 1).rev() {
        let row = coo.indices.try_select(0, d as i64)?;
        keys = row.try_mul(strides[d])?.try_add(&keys)?;
    }
    Ok(keys)
}

/// The keys sorted (stably) and the permutation that sorts them: `sorted[i] = keys[order[i]]`.
#[track_caller]
pub(crate) fn sort_keys(keys: &Tensor) -> Result<(Tensor, Tensor)> {
    let (_, order) = keys.try_sort(0, false)?;
    Ok((take_rows(keys, &order)?, order))
}

/// For sorted keys `[n]` (n ≥ 1), the index of each position's run of equal keys, int64 `[n]`
/// (0 for the first run).
#[track_caller]
pub(crate) fn run_ids(sorted: &Tensor) -> Result<Tensor> {
    let n = sorted.shape()[0] as i64;
    let first = zeros_on(&[1], DType::I64, sorted.device());
    if n == 1 {
        return Ok(first);
    }
    let starts = sorted
        .try_narrow(0, 1, n - 1)?
        .try_ne(&sorted.try_narrow(0, 0, n - 1)?)?;
    Tensor::try_cat(&[first, starts.try_cumsum(0, Some(DType::I64))?], 0)
}

/// The number of runs given the run ids: one more than the last id (read now).
pub(crate) fn run_count(ids: &Tensor) -> Result<usize> {
    let n = ids.shape()[0] as i64;
    let last = ids.try_narrow(0, n - 1, 1)?.try_to_scalars()?[0].as_i64();
    Ok(last as usize + 1)
}

/// `Segment` over `src` `[n, *rest]` with sorted `keys` and `slots`: a fresh `[rows, *rest]`
/// (viewed as `shape` when given) whose row `slot` holds each run's sum, or its first row.
#[track_caller]
pub(crate) fn segment(
    src: &Tensor,
    keys: &Tensor,
    slots: &Tensor,
    rows: usize,
    first: bool,
    shape: Option<&[usize]>,
) -> Result<Tensor> {
    refuse_complex_values("coalesce", src)?;
    let mut out = src.shape().to_vec();
    out[0] = rows;
    let inputs = vec![src.source(), keys.source(), slots.source()];
    Tensor::library(
        LibraryOp::Segment { first },
        src.dtype(),
        shape.unwrap_or(&out),
        View::contiguous(&out),
        inputs,
    )
}

/// Complex values have no segment or SpMM kernel yet: an `unsupported` error naming `op`.
pub(crate) fn refuse_complex_values(op: &str, values: &Tensor) -> Result<()> {
    if values.dtype().is_complex() {
        return Err(smelt_ir::Error::unsupported(format!(
            "{op}: sparse COO tensors of dtype {} are not supported yet (complex values)",
            values.dtype().torch_name()
        )));
    }
    Ok(())
}

/// Linear keys back to index tuples: int64 `[k, n]`, contiguous.
#[track_caller]
pub(crate) fn unravel(keys: &Tensor, sizes: &[usize]) -> Result<Tensor> {
    let strides = key_strides(sizes)?;
    let n = keys.shape()[0];
    if sizes.is_empty() {
        return Ok(zeros_on(&[0, n], DType::I64, keys.device()));
    }
    let rows = sizes
        .iter()
        .zip(&strides)
        .enumerate()
        .map(|(d, (&size, &stride))| {
            let row = if stride == 1 {
                keys.clone()
            } else {
                keys.try_floor_divide(stride)?
            };
            if d == 0 {
                Ok(row)
            } else {
                row.try_remainder(size.max(1) as i64)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Tensor::try_stack(&rows, 0)
}

impl Tensor {
    /// `tensor.coalesce()`: the entries sorted by index tuple (row-major) with duplicates
    /// summed (bools: or), flagged coalesced. A coalesced tensor is returned itself; any other
    /// gets new indices and values, even when nothing had to change. A graph break: the number
    /// of distinct indices is read. Errors: a `layout` error for a strided tensor.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let i = Tensor::new([[2i64, 0, 2]]);
    /// let s = Tensor::sparse_coo_tensor(&i, &Tensor::new([1.0f32, 2.0, 3.0]), None).coalesce();
    /// assert!(s.is_coalesced());
    /// assert_eq!(s.indices().to_vec::<i64>(), [0, 2]);
    /// assert_eq!(s.values().to_vec::<f32>(), [2.0, 4.0]);
    /// ```
    #[track_caller]
    pub fn try_coalesce(&self) -> Result<Tensor> {
        let coo = self.coo_for("coalesce")?;
        if coo.coalesced {
            return Ok(self.clone());
        }
        let k = coo.sparse_dim();
        let sizes = &self.shape()[..k];
        let device = self.device();
        if coo.nnz() == 0 {
            let mut vshape = coo.values.shape().to_vec();
            vshape[0] = 0;
            return Ok(self.with_coo(
                zeros_on(&[k, 0], DType::I64, device),
                zeros_on(&vshape, self.dtype(), device),
                true,
            ));
        }
        let (sorted, order) = sort_keys(&linear_keys(coo, sizes)?)?;
        let ids = run_ids(&sorted)?;
        // The graph break: sort and run ids computed once, their buffers kept for what follows.
        crate::tensor::realize(&[&sorted, &order, &ids])?;
        let runs = run_count(&ids)?;
        let values = segment(
            &take_rows(&coo.values, &order)?,
            &sorted,
            &ids,
            runs,
            false,
            None,
        )?;
        // PyTorch fills `[k, nnz]` indices and narrows them to the distinct entries, so the
        // result's indices keep the input's row stride: the same here.
        let keys = segment(&sorted, &sorted, &ids, coo.nnz(), true, None)?;
        let indices = unravel(&keys, sizes)?.try_narrow(1, 0, runs as i64)?;
        Ok(self.with_coo(indices, values, true))
    }

    /// `tensor.coalesce()`; panics where [`Tensor::try_coalesce`] returns an error.
    #[track_caller]
    pub fn coalesce(&self) -> Tensor {
        ok(self.try_coalesce())
    }
}
