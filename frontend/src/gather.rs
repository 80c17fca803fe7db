//! Gather-like reads with one index tensor: `gather`, `index_select` and `take`. Each is one
//! `LibraryOp` node reading `self` through its view; the result is contiguous.
//!
//! Index checking is eager: the op realizes its index tensor (usually small, often already
//! realized) and raises an `index` error for an out-of-range value at the op's line, as PyTorch
//! does. The runtime checks again and leaves the element zero rather than read out of bounds.

use crate::device::common_device;
use crate::names::{Dim, refuse_named};
use crate::reduce::index_only;
use crate::tensor::{Tensor, ok};
use smelt_ir::view::{fmt_list, wrap_dim};
use smelt_ir::{DType, Error, LibraryOp, Result, View};

/// The values of an integer index tensor (realizing it).
pub(crate) fn index_values(index: &Tensor) -> Result<Vec<i64>> {
    Ok(index
        .try_to_scalars()?
        .into_iter()
        .map(|s| s.as_i64())
        .collect())
}

/// `view` with a 0-dim view read as shape `[1]` (gather treats scalars as 1-element vectors).
fn at_least_1d(view: &View) -> View {
    if view.ndim() == 0 {
        View::new(vec![1], vec![1], view.offset)
    } else {
        view.clone()
    }
}

impl Tensor {
    /// `torch.gather(self, dim, index)`: `out[p] = self[p with p[dim] = index[p]]`; `index` is
    /// int64, of `self`'s rank and no larger than `self` outside `dim`; the result has `index`'s
    /// shape. The index values are read now (a realization). Errors: a `dtype` error for an index
    /// that is not int64, a `shape` error for an index of another rank or larger than `self`
    /// outside `dim`, an `index` error for an index value or dim out of range, a `names` error for
    /// a dim name or a named tensor, a `device` error for tensors on different devices.
    #[track_caller]
    pub fn try_gather(&self, dim: impl Into<Dim>, index: &Tensor) -> Result<Tensor> {
        let dim = index_only("gather", &[dim.into()])?[0];
        refuse_named("gather", [self, index])?;
        common_device("gather", &[self, index], false)?;
        let n = self.ndim().max(1);
        let d = wrap_dim(dim, n)?;
        if index.dtype() != DType::I64 {
            return Err(Error::dtype(format!(
                "gather(): Expected dtype int64 for index, but got {}",
                index.dtype().torch_name()
            )));
        }
        if index.ndim().max(1) != n {
            return Err(Error::shape(format!(
                "gather(): Index tensor must have the same number of dimensions as input tensor ({} and {})",
                index.ndim(),
                self.ndim()
            )));
        }
        let (sv, iv) = (at_least_1d(&self.view), at_least_1d(&index.view));
        for k in 0..n {
            if k != d && iv.shape[k] > sv.shape[k] {
                return Err(Error::shape(format!(
                    "gather(): Size does not match at dimension {k} expected index {} to be no larger than self {} apart from dimension {d}",
                    fmt_list(index.shape()),
                    fmt_list(self.shape())
                )));
            }
        }
        let size = sv.shape[d];
        if let Some(v) = index_values(index)?
            .into_iter()
            .find(|&v| v < 0 || v >= size as i64)
        {
            return Err(Error::index(format!(
                "gather(): index {v} is out of bounds for dimension {d} with size {size}"
            )));
        }
        let out = View::contiguous(&iv.shape);
        let inputs = vec![(self.storage.current(), sv), (index.storage.current(), iv)];
        Tensor::library(
            LibraryOp::Gather { dim: d },
            self.dtype(),
            index.shape(),
            out,
            inputs,
        )
    }
    /// `torch.gather(self, dim, index)`; panics where [`Tensor::try_gather`] returns an error.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::new([[1, 2], [3, 4]]);
    /// let i = Tensor::new([[1i64, 0], [0, 0]]);
    /// assert_eq!(x.gather(1, &i).to_vec::<i64>(), [2, 1, 3, 3]);
    /// ```
    #[track_caller]
    pub fn gather(&self, dim: impl Into<Dim>, index: &Tensor) -> Tensor {
        ok(self.try_gather(dim, index))
    }

    /// `torch.index_select(self, dim, index)`: the entries `index` (1-D or 0-dim, int64 or int32)
    /// along `dim`, in that order. The index values are read now (a realization). Errors: a `dtype`
    /// error for another index dtype, an `index` error for an index of more than one dim, an index
    /// value or a dim out of range, a `names` error for a dim name or a named tensor, a `device`
    /// error for tensors on different devices.
    #[track_caller]
    pub fn try_index_select(&self, dim: impl Into<Dim>, index: &Tensor) -> Result<Tensor> {
        let dim = index_only("index_select", &[dim.into()])?[0];
        refuse_named("index_select", [self, index])?;
        common_device("index_select", &[self, index], false)?;
        let d = wrap_dim(dim, self.ndim().max(1))?;
        if !matches!(index.dtype(), DType::I64 | DType::I32) {
            return Err(Error::dtype(format!(
                "index_select(): Expected dtype int32 or int64 for index, but got {}",
                index.dtype().torch_name()
            )));
        }
        if index.ndim() > 1 {
            return Err(Error::index(
                "index_select(): Index is supposed to be a vector",
            ));
        }
        let count = index.numel();
        if self.ndim() == 0 && count != 1 {
            return Err(Error::index(format!(
                "index_select(): Index to scalar can have only 1 value, got {count} value(s)"
            )));
        }
        let sv = at_least_1d(&self.view);
        let size = sv.shape[d];
        if let Some(v) = index_values(index)?
            .into_iter()
            .find(|&v| v < 0 || v >= size as i64)
        {
            return Err(Error::index(format!(
                "index_select(): index {v} out of range in self (dimension {d} has size {size})"
            )));
        }
        let mut shape = sv.shape.clone();
        shape[d] = count;
        let out = View::contiguous(&shape);
        if self.ndim() == 0 {
            shape.clear();
        }
        let iv = View::new(
            vec![count],
            vec![index.view.strides.first().copied().unwrap_or(1)],
            index.view.offset,
        );
        let inputs = vec![(self.storage.current(), sv), (index.storage.current(), iv)];
        Tensor::library(
            LibraryOp::IndexSelect { dim: d },
            self.dtype(),
            &shape,
            out,
            inputs,
        )
    }
    /// `torch.index_select(self, dim, index)`; panics where [`Tensor::try_index_select`] returns an
    /// error.
    #[track_caller]
    pub fn index_select(&self, dim: impl Into<Dim>, index: &Tensor) -> Tensor {
        ok(self.try_index_select(dim, index))
    }

    /// `torch.take(self, index)`: entries of `self`'s row-major flattening; the result has
    /// `index`'s shape. The index values are read now (a realization). Errors: a `dtype` error for
    /// an index that is not int64, an `index` error for an index value out of range, a `names`
    /// error for a named tensor, a `device` error for tensors on different devices.
    #[track_caller]
    pub fn try_take(&self, index: &Tensor) -> Result<Tensor> {
        refuse_named("take", [self, index])?;
        common_device("take", &[self, index], false)?;
        if index.dtype() != DType::I64 {
            return Err(Error::dtype(format!(
                "take(): Expected a long tensor for index, but got {}",
                index.dtype().torch_name()
            )));
        }
        let numel = self.numel() as i64;
        if let Some(v) = index_values(index)?
            .into_iter()
            .find(|&v| v < -numel || v >= numel)
        {
            return Err(Error::index(format!(
                "take(): out of range: tried to access index {v} on a tensor of {numel} elements."
            )));
        }
        let out = View::contiguous(index.shape());
        let inputs = vec![
            (self.storage.current(), self.view.clone()),
            (index.storage.current(), index.view.clone()),
        ];
        Tensor::library(LibraryOp::Take, self.dtype(), index.shape(), out, inputs)
    }
    /// `torch.take(self, index)`; panics where [`Tensor::try_take`] returns an error.
    #[track_caller]
    pub fn take(&self, index: &Tensor) -> Tensor {
        ok(self.try_take(index))
    }
}
