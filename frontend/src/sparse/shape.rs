//! Shape ops on sparse tensors: `transpose`/`t` (two sparse dims swapped in copies of the
//! indices and values) and `narrow_copy` (the entries inside a range of a sparse dim, or the
//! values narrowed along a dense dim).

use super::{SparseCoo, host_i64, take, take_rows};
use crate::tensor::{Tensor, ok};
use smelt_ir::view::wrap_dim;
use smelt_ir::{Error, Result};

impl Tensor {
    /// `transpose(dim0, dim1)` of a sparse tensor: copies of the indices (the two rows swapped)
    /// and values; the flag is kept for a dim with itself and cleared otherwise. Errors: an
    /// `index` error for a dim out of range, a `layout` error for a dense dim.
    #[track_caller]
    pub(crate) fn sparse_transpose(&self, coo: &SparseCoo, dim0: i64, dim1: i64) -> Result<Tensor> {
        let n = self.ndim();
        let (d0, d1) = (wrap_dim(dim0, n)?, wrap_dim(dim1, n)?);
        if d0 == d1 {
            return self.sparse_clone(coo);
        }
        let k = coo.sparse_dim();
        if d0 >= k || d1 >= k {
            return Err(Error::layout(format!(
                "sparse transpose: transposed dimensions must be sparse Got sparse_dim: {k}, \
                 d0: {d0}, d1: {d1}"
            )));
        }
        let mut order: Vec<i64> = (0..k as i64).collect();
        order.swap(d0, d1);
        let order = host_i64(order, &[k], self.device(), "sparse transpose: row order")?;
        let mut shape = self.shape().to_vec();
        shape.swap(d0, d1);
        Ok(Tensor::from_coo(
            &shape,
            take_rows(&coo.indices, &order)?,
            coo.values.try_contiguous_copy()?,
            false,
        ))
    }

    /// `t()` of a sparse tensor: `transpose(0, 1)` (a 0-D or 1-D tensor: a copy). Errors: a
    /// `shape` error for more than 2 sparse or any dense dims.
    #[track_caller]
    pub(crate) fn sparse_t(&self, coo: &SparseCoo) -> Result<Tensor> {
        let (k, dense) = (coo.sparse_dim(), self.dense_dim());
        if k > 2 || dense != 0 {
            return Err(Error::shape(format!(
                "t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got {k} sparse \
                 and {dense} dense dimensions"
            )));
        }
        self.sparse_transpose(coo, 0, if self.ndim() < 2 { 0 } else { 1 })
    }

    /// `torch.narrow_copy(self, dim, start, length)`: a fresh copy of `narrow`. Of a sparse
    /// tensor: along a sparse dim, the entries whose index lies in `[start, start + length)`, in
    /// order, their index shifted by `-start` (a graph break: the indices are read); along a
    /// dense dim, the values narrowed, the indices shared with `self`. The flag is kept. Unlike
    /// `narrow`, a sparse `narrow_copy` takes neither a negative `dim` nor a negative `start`.
    /// Errors: an `index` error for a dim or range out of bounds; those of [`Tensor::try_narrow`]
    /// for a strided tensor.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let i = Tensor::new([[0i64, 2, 3, 1]]);
    /// let s = Tensor::sparse_coo_tensor(&i, &Tensor::new([1.0f32, 2.0, 3.0, 4.0]), None);
    /// let n = s.narrow_copy(0, 1, 2);
    /// assert_eq!(n.stored_indices().to_vec::<i64>(), [1, 0]);
    /// assert_eq!(n.to_dense().to_vec::<f32>(), [4.0, 2.0]);
    /// ```
    #[track_caller]
    pub fn try_narrow_copy(&self, dim: i64, start: i64, length: i64) -> Result<Tensor> {
        let Some(coo) = self.coo() else {
            return self.try_narrow(dim, start, length)?.try_contiguous_copy();
        };
        let n = self.ndim() as i64;
        if start < 0 {
            return Err(Error::index("start out of range"));
        }
        if length < 0 {
            return Err(Error::index("length out of range"));
        }
        if dim < 0 || dim >= n {
            return Err(Error::index(format!(
                "Dimension {dim} out of range. Expecting 0 <= dim < {n}."
            )));
        }
        let d = dim as usize;
        let size = self.shape()[d] as i64;
        let end = start + length;
        if end > size {
            return Err(Error::index(format!(
                "Invalid range to narrow. range(start, start+length) must be a subset of \
                 range(0, {size})."
            )));
        }
        let mut shape = self.shape().to_vec();
        shape[d] = length as usize;
        let k = coo.sparse_dim();
        if d >= k {
            let values = coo
                .values
                .try_narrow((d - k + 1) as i64, start, length)?
                .try_contiguous_copy()?;
            return Ok(Tensor::from_coo(
                &shape,
                coo.indices.clone(),
                values,
                coo.coalesced,
            ));
        }
        let row = coo.indices.try_select(0, dim)?;
        let inside = row.try_ge(start)?.try_logical_and(&row.try_lt(end)?)?;
        let picked = inside.try_nonzero()?.try_select(1, 0)?;
        let kept = take(&coo.indices, 1, &picked)?;
        let rows = (0..k as i64)
            .map(|r| {
                let row = kept.try_select(0, r)?;
                if r == dim {
                    row.try_sub(start)
                } else {
                    Ok(row)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Tensor::from_coo(
            &shape,
            Tensor::try_stack(&rows, 0)?,
            take_rows(&coo.values, &picked)?,
            coo.coalesced,
        ))
    }

    /// `torch.narrow_copy(self, dim, start, length)`; panics where [`Tensor::try_narrow_copy`]
    /// returns an error.
    #[track_caller]
    pub fn narrow_copy(&self, dim: i64, start: i64, length: i64) -> Tensor {
        ok(self.try_narrow_copy(dim, start, length))
    }
}
