//! Ops along one dim that kernel IR reductions cannot express, recorded as library calls:
//! cumsum/cumprod (one `CumSum`/`CumProd` node) and sort (two `Sort` nodes on the same input,
//! one writing the values, one the int64 indices — a library call has one output buffer).
//! cumsum/cumprod results are contiguous (SEMANTICS.md §4.2); sort's keep self's strides when
//! self is non-overlapping and dense (PyTorch sorts a clone of self).

use crate::names::{Dim, refuse_named};
use crate::reduce::widened_int;
use crate::tensor::{Tensor, ok};
use smelt_ir::Dims;
use smelt_ir::graph::Op;
use smelt_ir::view::{contiguous_strides, wrap_dim};
use smelt_ir::{DType, LibraryOp, Result, View};

impl Tensor {
    /// Records library op `op(dim)` over self along `dim` producing `dtype` with self's shape,
    /// laid out with `strides`. A 0-dim input is read as shape `[1]`.
    #[track_caller]
    fn along_dim(
        &self,
        dim: i64,
        dtype: DType,
        strides: Dims<isize>,
        op: impl FnOnce(usize) -> LibraryOp,
    ) -> Result<Tensor> {
        let d = wrap_dim(dim, self.ndim())?;
        let shape = self.shape().to_vec();
        let node = self.storage.current();
        if shape.is_empty() {
            let edge = View::new(vec![1], vec![0], self.view.offset);
            let t = Tensor::computed(
                Op::Library(op(d)),
                dtype,
                &[1],
                Dims::from([1]),
                vec![(node, edge)],
            )?;
            return Ok(t.with_view(View::contiguous(&[])));
        }
        Tensor::computed(
            Op::Library(op(d)),
            dtype,
            &shape,
            strides,
            vec![(node, self.view.clone())],
        )
    }

    /// `torch.cumsum(self, dim, dtype=dtype)`: inclusive prefix sums along `dim` (a position or a
    /// name). Bool and integer inputs sum in int64 unless `dtype` is given (the input is cast to
    /// `dtype` first); the result is contiguous. Errors: an `index` error for a dim out of range, a
    /// `names` error for an unknown dim name.
    #[track_caller]
    pub fn try_cumsum(&self, dim: impl Into<Dim>, dtype: Option<DType>) -> Result<Tensor> {
        let dim = dim.into().resolve(self)?;
        let dtype = dtype.unwrap_or_else(|| widened_int(self.dtype()));
        let r = self.along_dim(dim, dtype, contiguous_strides(self.shape()), |dim| {
            LibraryOp::CumSum { dim }
        })?;
        Ok(r.with_dim_names(self.dim_names()))
    }

    /// `torch.cumsum(self, dim, dtype=dtype)`; panics where [`Tensor::try_cumsum`] returns an
    /// error.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::new([1, 2, 3]);
    /// assert_eq!(x.cumsum(0, None).to_vec::<i64>(), [1, 3, 6]);
    /// ```
    #[track_caller]
    pub fn cumsum(&self, dim: impl Into<Dim>, dtype: Option<DType>) -> Tensor {
        ok(self.try_cumsum(dim, dtype))
    }

    /// `torch.cumprod(self, dim, dtype=dtype)`: inclusive prefix products along `dim`, dtypes and
    /// errors as [`Tensor::try_cumsum`].
    #[track_caller]
    pub fn try_cumprod(&self, dim: impl Into<Dim>, dtype: Option<DType>) -> Result<Tensor> {
        let dim = dim.into().resolve(self)?;
        let dtype = dtype.unwrap_or_else(|| widened_int(self.dtype()));
        let r = self.along_dim(dim, dtype, contiguous_strides(self.shape()), |dim| {
            LibraryOp::CumProd { dim }
        })?;
        Ok(r.with_dim_names(self.dim_names()))
    }

    /// `torch.cumprod(self, dim, dtype=dtype)`; panics where [`Tensor::try_cumprod`] returns an
    /// error.
    #[track_caller]
    pub fn cumprod(&self, dim: impl Into<Dim>, dtype: Option<DType>) -> Tensor {
        ok(self.try_cumprod(dim, dtype))
    }

    /// `torch.sort(self, dim, descending, stable=True)`: `(values, indices)` along `dim`; stable
    /// (equal values keep their order), NaN sorts as the largest value; indices are int64 positions
    /// along `dim`. Errors: an `index` error for a dim out of range, a `names` error for a named
    /// tensor.
    #[track_caller]
    pub fn try_sort(&self, dim: i64, descending: bool) -> Result<(Tensor, Tensor)> {
        refuse_named("sort", [self])?;
        // Like PyTorch (values start as a clone of self): preserve-format strides.
        let strides = self.view.preserve_format_strides();
        let values = self.along_dim(dim, self.dtype(), strides.clone(), |dim| LibraryOp::Sort {
            dim,
            descending,
            indices: false,
        })?;
        let indices = self.along_dim(dim, DType::I64, strides, |dim| LibraryOp::Sort {
            dim,
            descending,
            indices: true,
        })?;
        Ok((values, indices))
    }

    /// `torch.sort(self, dim, descending)`; panics where [`Tensor::try_sort`] returns an error.
    #[track_caller]
    pub fn sort(&self, dim: i64, descending: bool) -> (Tensor, Tensor) {
        ok(self.try_sort(dim, descending))
    }
}
