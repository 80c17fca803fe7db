//! Building sparse tensors and leaving them: `torch.sparse_coo_tensor` (PyTorch's argument
//! checks and messages, size inference, index dtype conversion), `to_sparse` from a dense
//! tensor, and `to_dense`.

use super::coalesce::{linear_keys, segment, sort_keys};
use super::{take_rows, zeros_on};
use crate::tensor::{Tensor, ok};
use crate::views::TensorIndex;
use smelt_ir::view::fmt_list;
use smelt_ir::{DType, Error, Result};

/// Each index row's smallest and largest value (read now: a graph break).
fn index_extremes(indices: &Tensor) -> Result<(Vec<i64>, Vec<i64>)> {
    let lo = indices.try_amin(&[1], false)?;
    let hi = indices.try_amax(&[1], false)?;
    crate::tensor::realize(&[&lo, &hi])?;
    Ok((lo.to_vec::<i64>(), hi.to_vec::<i64>()))
}

/// PyTorch's refusal of a negative index (`found negative index -1 for dim 0`).
fn check_nonnegative(lo: &[i64]) -> Result<()> {
    match lo.iter().enumerate().find(|(_, v)| **v < 0) {
        Some((d, v)) => Err(Error::index(format!(
            "found negative index {v} for dim {d}"
        ))),
        None => Ok(()),
    }
}

impl Tensor {
    /// `torch.sparse_coo_tensor(indices, values, size, dtype=dtype, check_invariants=...)`: a
    /// sparse COO tensor whose entry `j` puts `values[j]` at index tuple `indices[:, j]`
    /// (duplicates add up). `indices` is `[sparse_dim, nnz]` (converted to int64 when it is not:
    /// a copy), `values` is `[nnz, *dense dims]` (converted to `dtype` when given: a copy); the
    /// result holds both tensors themselves otherwise, so writes through them show in it.
    /// Without `size`, each sparse size is the largest index + 1 (0 without entries) and the
    /// dense sizes are the values' (a graph break: the indices' extremes are read). It is
    /// flagged coalesced only with at most one entry; indices are never sorted or summed here.
    ///
    /// Errors: `shape` errors for indices that are not 2-D, a `size` whose length is not
    /// `sparse_dim + dense_dim` or whose dense sizes differ from the values', indices and values
    /// with different nnz; `index` errors for a negative index when the size is inferred, and,
    /// with `check_invariants`, for any index outside `[0, size)` (PyTorch compares indices with
    /// a given size only then); a `value` error for a negative size; a `layout` error for a
    /// sparse argument.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let i = Tensor::new([[0i64, 1, 1], [2, 0, 2]]);
    /// let v = Tensor::new([3.0f32, 4.0, 5.0]);
    /// let s = Tensor::sparse_coo_tensor(&i, &v, Some(&[2, 3]));
    /// assert_eq!((s.layout(), s.nnz(), s.is_coalesced()), (Layout::SparseCoo, 3, false));
    /// assert_eq!(s.to_dense().to_vec::<f32>(), [0.0, 0.0, 3.0, 4.0, 0.0, 5.0]);
    /// ```
    #[track_caller]
    pub fn try_sparse_coo_tensor_full(
        indices: &Tensor,
        values: &Tensor,
        size: Option<&[i64]>,
        dtype: Option<DType>,
        check_invariants: bool,
    ) -> Result<Tensor> {
        if indices.is_sparse() {
            return Err(Error::layout(
                "expected indices to be a dense tensor, but got indices of layout torch.sparse_coo",
            ));
        }
        if values.is_sparse() {
            return Err(Error::layout(
                "expected values to be a dense tensor, but got values of layout torch.sparse_coo",
            ));
        }
        let mut values = match dtype {
            Some(d) if d != values.dtype() => values.try_to_dtype(d, false)?,
            Some(_) | None => values.clone(),
        };
        if values.ndim() == 0 {
            // PyTorch treats a 0-dim value as one entry (an expanded view).
            values = values.try_expand(&[1])?;
        }
        let indices = indices
            .try_to(values.device())?
            .try_to_dtype(DType::I64, false)?;
        if indices.ndim() != 2 {
            return Err(Error::shape(format!(
                "indices must be sparse_dim x nnz, but got: {}",
                fmt_list(indices.shape())
            )));
        }
        let (k, nnz) = (indices.shape()[0], indices.shape()[1]);
        let dense_dim = values.ndim() - 1;
        let shape: Vec<usize> = match size {
            Some(size) => {
                if let Some(s) = size.iter().find(|s| **s < 0) {
                    return Err(Error::value(format!(
                        "Trying to create tensor with negative dimension {s}: {}",
                        fmt_list(size)
                    )));
                }
                if check_invariants {
                    if size.len() != k + dense_dim {
                        return Err(Error::shape(format!(
                            "number of dimensions must be sparse_dim ({k}) + dense_dim \
                             ({dense_dim}), but got {}",
                            size.len()
                        )));
                    }
                    if indices.numel() > 0 {
                        let (lo, hi) = index_extremes(&indices)?;
                        check_nonnegative(&lo)?;
                        if let Some((d, v)) = hi.iter().enumerate().find(|(d, v)| **v >= size[*d]) {
                            return Err(Error::index(format!(
                                "size is inconsistent with indices: for dim {d}, size is {} but \
                                 found index {v}",
                                size[d]
                            )));
                        }
                    }
                }
                size.iter().map(|&s| s as usize).collect()
            }
            None => {
                let mut shape = vec![0usize; k];
                if indices.numel() > 0 {
                    let (lo, hi) = index_extremes(&indices)?;
                    check_nonnegative(&lo)?;
                    for (s, h) in shape.iter_mut().zip(hi) {
                        *s = h as usize + 1;
                    }
                }
                shape.extend_from_slice(&values.shape()[1..]);
                shape
            }
        };
        if shape.len() != k + dense_dim {
            return Err(Error::shape(format!(
                "'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {}, \
                 sparse_dim = {k}, dense_dim = {dense_dim}",
                shape.len()
            )));
        }
        if nnz != values.shape()[0] {
            return Err(Error::shape(format!(
                "indices and values must have same nnz, but got nnz from indices: {nnz}, nnz \
                 from values: {}",
                values.shape()[0]
            )));
        }
        if values.shape()[1..] != shape[k..] {
            let expected: Vec<usize> = std::iter::once(nnz)
                .chain(shape[k..].iter().copied())
                .collect();
            return Err(Error::shape(format!(
                "values has incorrect size, expected {}, got {}",
                fmt_list(&expected),
                fmt_list(values.shape())
            )));
        }
        Ok(Tensor::from_coo(&shape, indices, values, nnz <= 1))
    }

    /// [`Tensor::try_sparse_coo_tensor_full`] with the values' dtype and no invariant check:
    /// `torch.sparse_coo_tensor(indices, values, size)`.
    #[track_caller]
    pub fn try_sparse_coo_tensor(
        indices: &Tensor,
        values: &Tensor,
        size: Option<&[i64]>,
    ) -> Result<Tensor> {
        Tensor::try_sparse_coo_tensor_full(indices, values, size, None, false)
    }

    /// `torch.sparse_coo_tensor(indices, values, size)`; panics where
    /// [`Tensor::try_sparse_coo_tensor_full`] returns an error.
    #[track_caller]
    pub fn sparse_coo_tensor(indices: &Tensor, values: &Tensor, size: Option<&[i64]>) -> Tensor {
        ok(Tensor::try_sparse_coo_tensor(indices, values, size))
    }

    /// `tensor.to_dense()`: a fresh contiguous strided tensor with every entry's value at its
    /// index, duplicates summed (bools: or), zeros elsewhere. Lazy: the entries are sorted by
    /// linear index (unless coalesced) and each run of equal indices is summed into place by the
    /// `Segment` library op. A strided tensor is returned itself.
    #[track_caller]
    pub fn try_to_dense(&self) -> Result<Tensor> {
        let Some(coo) = self.coo() else {
            return Ok(self.clone());
        };
        let k = coo.sparse_dim();
        let (shape, dtype, device) = (self.shape(), self.dtype(), self.device());
        if coo.nnz() == 0 || self.numel() == 0 {
            return Ok(zeros_on(shape, dtype, device));
        }
        let keys = linear_keys(coo, &shape[..k])?;
        let positions: usize = shape[..k].iter().product();
        let (keys, src) = if coo.coalesced {
            (keys, coo.values.clone())
        } else {
            let (sorted, order) = sort_keys(&keys)?;
            (sorted, take_rows(&coo.values, &order)?)
        };
        segment(&src, &keys, &keys, positions, false, Some(shape))
    }

    /// `tensor.to_dense()`; panics where [`Tensor::try_to_dense`] returns an error.
    #[track_caller]
    pub fn to_dense(&self) -> Tensor {
        ok(self.try_to_dense())
    }

    /// `tensor.to_sparse(sparse_dim)`: a coalesced sparse COO tensor of this dense tensor whose
    /// leading `sparse_dim` dims (default: all) are sparse and the rest dense; an index tuple is
    /// stored when its dense slice has a nonzero element (NaN counts, -0.0 does not). A graph
    /// break: the nonzero positions are read. A sparse tensor is returned itself. Errors: a
    /// `value` error for `sparse_dim` 0 on a tensor with dims or above `ndim`, and for a sparse
    /// tensor asked for another `sparse_dim`.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let s = Tensor::new([[0.0f32, 2.0], [0.0, 0.0], [1.0, 0.0]]).to_sparse(Some(1));
    /// assert_eq!((s.sparse_dim(), s.dense_dim(), s.nnz()), (1, 1, 2));
    /// assert_eq!(s.indices().to_vec::<i64>(), [0, 2]);
    /// ```
    #[track_caller]
    pub fn try_to_sparse(&self, sparse_dim: Option<usize>) -> Result<Tensor> {
        if let Some(coo) = self.coo() {
            return match sparse_dim {
                Some(d) if d != coo.sparse_dim() => Err(Error::value(
                    "to_sparse: conversion from Sparse to Sparse with sparse_dim argument \
                     !=self.sparse_dim() is not supported",
                )),
                Some(_) | None => Ok(self.clone()),
            };
        }
        crate::names::refuse_named("to_sparse", [self])?;
        let n = self.ndim();
        let k = sparse_dim.unwrap_or(n);
        if k == 0 && n > 0 {
            return Err(Error::value(
                "dense_to_sparse: sparse_dim argument must be in >0 when self.dim()>0",
            ));
        }
        if k > n {
            return Err(Error::value(format!(
                "dense_to_sparse: sparse_dim argument must be in [0,{n}] range, but {k} is given"
            )));
        }
        if n == 0 {
            let index = zeros_on(&[0, 1], DType::I64, self.device());
            return Ok(Tensor::from_coo(
                &[],
                index,
                self.try_reshape(&[1])?.try_contiguous_copy()?,
                true,
            ));
        }
        let nonzero = self.try_ne(0)?;
        let keep = if k < n {
            let dense: Vec<i64> = (k as i64..n as i64).collect();
            nonzero.try_any(&dense, false)?
        } else {
            nonzero
        };
        // nonzero is `[nnz, k]` laid out column-major: its transpose is a contiguous `[k, nnz]`.
        let indices = keep.try_nonzero()?.try_t()?;
        let items: Vec<TensorIndex> = (0..k as i64)
            .map(|d| indices.try_select(0, d).map(TensorIndex::Tensor))
            .collect::<Result<_>>()?;
        let values = self.try_index(&items)?;
        Ok(Tensor::from_coo(self.shape(), indices, values, true))
    }

    /// `tensor.to_sparse(sparse_dim)`; panics where [`Tensor::try_to_sparse`] returns an error.
    #[track_caller]
    pub fn to_sparse(&self, sparse_dim: Option<usize>) -> Tensor {
        ok(self.try_to_sparse(sparse_dim))
    }
}
