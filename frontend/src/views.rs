//! View ops on tensors: each returns a new handle on the same storage with a new `View`
//! (never a graph node, never a copy) — except `reshape`/`flatten` when the strides forbid a
//! view, which copy, as in PyTorch.

use crate::tensor::{Tensor, ok};
use smelt_ir::view::view_strides;
use smelt_ir::{Error, MemoryFormat, Result, View};

/// One item of a Python-style index `x[a, b, …]`.
#[derive(Clone, Debug)]
pub enum TensorIndex {
    /// Select (negative counts from the end).
    Int(i64),
    /// `start:stop:step`, each optional.
    Slice(Option<i64>, Option<i64>, Option<i64>),
    /// `None`: a new axis of size 1.
    NewAxis,
    /// `...`.
    Ellipsis,
    /// Advanced indexing with an int64 or bool tensor (a copy).
    Tensor(Tensor),
}

macro_rules! view_ops {
    ($( $(#[$doc:meta])* fn $name:ident / $try_name:ident ( $($arg:ident : $ty:ty),* ) => |$v:ident| $body:expr; )*) => {
        impl Tensor {
            $(
                $(#[$doc])*
                pub fn $try_name(&self, $($arg: $ty),*) -> Result<Tensor> {
                    let $v = &self.view;
                    Ok(self.with_view($body?))
                }
                $(#[$doc])*
                #[track_caller]
                pub fn $name(&self, $($arg: $ty),*) -> Tensor {
                    ok(self.$try_name($($arg),*))
                }
            )*
        }
    };
}

view_ops! {
    /// `select(dim, index)`: drops `dim`.
    fn select / try_select(dim: i64, index: i64) => |v| v.select(dim, index);
    /// `slice(dim, start, end, step)` with Python's clamping.
    fn slice / try_slice(dim: i64, start: Option<i64>, end: Option<i64>, step: i64) => |v| v.slice(dim, start, end, step);
    /// `narrow(dim, start, length)`.
    fn narrow / try_narrow(dim: i64, start: i64, length: i64) => |v| v.narrow(dim, start, length);
    /// `unsqueeze(dim)`.
    fn unsqueeze / try_unsqueeze(dim: i64) => |v| v.unsqueeze(dim);
    /// `squeeze()`: drops every size-1 dim.
    fn squeeze / try_squeeze() => |v| v.squeeze(None);
    /// `squeeze(dims)`: drops the listed dims that have size 1.
    fn squeeze_dims / try_squeeze_dims(dims: &[i64]) => |v| v.squeeze(Some(dims));
    /// `permute(dims)`.
    fn permute / try_permute(dims: &[i64]) => |v| v.permute(dims);
    /// `transpose(dim0, dim1)` (also `swapaxes`, `swapdims`).
    fn transpose / try_transpose(dim0: i64, dim1: i64) => |v| v.transpose(dim0, dim1);
    /// `t()`.
    fn t / try_t() => |v| v.t();
    /// `mT`.
    fn mt / try_mt() => |v| v.mt();
    /// `movedim(source, destination)`.
    fn movedim / try_movedim(source: &[i64], destination: &[i64]) => |v| v.movedim(source, destination);
    /// `expand(sizes)` (`-1` keeps a dim).
    fn expand / try_expand(sizes: &[i64]) => |v| v.expand(sizes);
    /// `diagonal(offset, dim1, dim2)`.
    fn diagonal / try_diagonal(offset: i64, dim1: i64, dim2: i64) => |v| v.diagonal(offset, dim1, dim2);
    /// `unfold(dimension, size, step)`.
    fn unfold / try_unfold(dim: i64, size: i64, step: i64) => |v| v.unfold(dim, size, step);
    /// `view(shape)`: fails with a `stride` error when the strides forbid it.
    fn view / try_view(shape: &[i64]) => |v| v.view(shape);
    /// `unflatten(dim, sizes)`.
    fn unflatten / try_unflatten(dim: i64, sizes: &[i64]) => |v| v.unflatten(dim, sizes);
}

impl Tensor {
    /// `swapaxes` = `transpose`.
    #[track_caller]
    pub fn swapaxes(&self, a: i64, b: i64) -> Tensor {
        self.transpose(a, b)
    }
    /// `swapdims` = `transpose`.
    #[track_caller]
    pub fn swapdims(&self, a: i64, b: i64) -> Tensor {
        self.transpose(a, b)
    }
    /// `adjoint()` = `mT` for real dtypes.
    #[track_caller]
    pub fn adjoint(&self) -> Tensor {
        self.mt()
    }

    /// `T`: all dims reversed.
    pub fn try_big_t(&self) -> Result<Tensor> {
        let dims: Vec<i64> = (0..self.ndim() as i64).rev().collect();
        self.try_permute(&dims)
    }
    #[track_caller]
    pub fn big_t(&self) -> Tensor {
        ok(self.try_big_t())
    }

    pub fn try_expand_as(&self, other: &Tensor) -> Result<Tensor> {
        self.try_expand(&shape_i64(other.shape()))
    }
    #[track_caller]
    pub fn expand_as(&self, other: &Tensor) -> Tensor {
        ok(self.try_expand_as(other))
    }
    pub fn try_broadcast_to(&self, shape: &[i64]) -> Result<Tensor> {
        self.try_expand(shape)
    }
    #[track_caller]
    pub fn broadcast_to(&self, shape: &[i64]) -> Tensor {
        ok(self.try_broadcast_to(shape))
    }
    pub fn try_view_as(&self, other: &Tensor) -> Result<Tensor> {
        self.try_view(&shape_i64(other.shape()))
    }
    #[track_caller]
    pub fn view_as(&self, other: &Tensor) -> Tensor {
        ok(self.try_view_as(other))
    }

    /// `detach()`: shares storage and metadata.
    pub fn detach(&self) -> Tensor {
        self.with_view(self.view.clone())
    }

    /// `as_strided(size, stride, storage_offset)`; the offset defaults to self's.
    pub fn try_as_strided(
        &self,
        size: &[i64],
        stride: &[i64],
        offset: Option<i64>,
    ) -> Result<Tensor> {
        let offset = offset.unwrap_or(self.view.offset as i64);
        let v = View::as_strided(size, stride, offset, self.storage.len, self.dtype().size())?;
        Ok(self.with_view(v))
    }
    #[track_caller]
    pub fn as_strided(&self, size: &[i64], stride: &[i64], offset: Option<i64>) -> Tensor {
        ok(self.try_as_strided(size, stride, offset))
    }

    /// `reshape(shape)`: a view when possible, else a contiguous copy.
    #[track_caller]
    pub fn try_reshape(&self, shape: &[i64]) -> Result<Tensor> {
        let new_shape = smelt_ir::view::infer_size(shape, self.numel())?;
        match view_strides(&self.view.shape, &self.view.strides, &new_shape) {
            Some(strides) => Ok(self.with_view(View::new(new_shape, strides, self.view.offset))),
            None => {
                let copy = self.try_clone_format(MemoryFormat::Contiguous)?;
                Ok(copy.with_view(View::contiguous(&new_shape)))
            }
        }
    }
    #[track_caller]
    pub fn reshape(&self, shape: &[i64]) -> Tensor {
        ok(self.try_reshape(shape))
    }
    #[track_caller]
    pub fn try_reshape_as(&self, other: &Tensor) -> Result<Tensor> {
        self.try_reshape(&shape_i64(other.shape()))
    }
    #[track_caller]
    pub fn reshape_as(&self, other: &Tensor) -> Tensor {
        ok(self.try_reshape_as(other))
    }

    /// `flatten(start_dim, end_dim)`: self when `start == end`, `[1]` for a 0-dim tensor.
    #[track_caller]
    pub fn try_flatten(&self, start_dim: i64, end_dim: i64) -> Result<Tensor> {
        if self.ndim() == 0 {
            return self.try_reshape(&[1]);
        }
        let s = smelt_ir::view::wrap_dim(start_dim, self.ndim())?;
        let e = smelt_ir::view::wrap_dim(end_dim, self.ndim())?;
        if s > e {
            return Err(Error::value(
                "flatten() has invalid args: start_dim cannot come after end_dim",
            ));
        }
        if s == e {
            return Ok(self.clone());
        }
        let mut shape = shape_i64(&self.view.shape[..s]);
        shape.push(self.view.shape[s..=e].iter().product::<usize>() as i64);
        shape.extend(shape_i64(&self.view.shape[e + 1..]));
        self.try_reshape(&shape)
    }
    #[track_caller]
    pub fn flatten(&self, start_dim: i64, end_dim: i64) -> Tensor {
        ok(self.try_flatten(start_dim, end_dim))
    }
    #[track_caller]
    pub fn ravel(&self) -> Tensor {
        self.reshape(&[-1])
    }

    fn views(&self, r: Result<Vec<View>>) -> Result<Vec<Tensor>> {
        Ok(r?.into_iter().map(|v| self.with_view(v)).collect())
    }

    pub fn try_split(&self, split_size: i64, dim: i64) -> Result<Vec<Tensor>> {
        self.views(self.view.split(split_size, dim))
    }
    #[track_caller]
    pub fn split(&self, split_size: i64, dim: i64) -> Vec<Tensor> {
        ok(self.try_split(split_size, dim))
    }
    pub fn try_split_with_sizes(&self, sizes: &[i64], dim: i64) -> Result<Vec<Tensor>> {
        self.views(self.view.split_with_sizes(sizes, dim))
    }
    #[track_caller]
    pub fn split_with_sizes(&self, sizes: &[i64], dim: i64) -> Vec<Tensor> {
        ok(self.try_split_with_sizes(sizes, dim))
    }
    pub fn try_chunk(&self, chunks: i64, dim: i64) -> Result<Vec<Tensor>> {
        self.views(self.view.chunk(chunks, dim))
    }
    #[track_caller]
    pub fn chunk(&self, chunks: i64, dim: i64) -> Vec<Tensor> {
        ok(self.try_chunk(chunks, dim))
    }
    pub fn try_tensor_split(&self, sections: i64, dim: i64) -> Result<Vec<Tensor>> {
        self.views(self.view.tensor_split_sections(sections, dim))
    }
    #[track_caller]
    pub fn tensor_split(&self, sections: i64, dim: i64) -> Vec<Tensor> {
        ok(self.try_tensor_split(sections, dim))
    }
    pub fn try_tensor_split_indices(&self, indices: &[i64], dim: i64) -> Result<Vec<Tensor>> {
        self.views(self.view.tensor_split_indices(indices, dim))
    }
    #[track_caller]
    pub fn tensor_split_indices(&self, indices: &[i64], dim: i64) -> Vec<Tensor> {
        ok(self.try_tensor_split_indices(indices, dim))
    }
    /// `hsplit(sections)`: dim 1 (dim 0 for 1-D); sections must divide the dim.
    pub fn try_hsplit(&self, sections: i64) -> Result<Vec<Tensor>> {
        if self.ndim() == 0 {
            return Err(Error::value(
                "torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with 0 dimensions!",
            ));
        }
        let dim = if self.ndim() == 1 { 0 } else { 1 };
        self.split_divisible(sections, dim, "hsplit")
    }
    /// `vsplit(sections)`: dim 0 of a ≥ 2-D tensor.
    pub fn try_vsplit(&self, sections: i64) -> Result<Vec<Tensor>> {
        if self.ndim() < 2 {
            return Err(Error::value(format!(
                "torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with {} dimensions!",
                self.ndim()
            )));
        }
        self.split_divisible(sections, 0, "vsplit")
    }
    fn split_divisible(&self, sections: i64, dim: usize, op: &str) -> Result<Vec<Tensor>> {
        let size = self.view.shape[dim] as i64;
        if sections == 0 || size % sections != 0 {
            return Err(Error::value(format!(
                "torch.{op} attempted to split along dimension {dim}, but the size of the dimension {size} is not divisible by the split_size {sections}!"
            )));
        }
        self.try_tensor_split(sections, dim as i64)
    }
    pub fn try_unbind(&self, dim: i64) -> Result<Vec<Tensor>> {
        self.views(self.view.unbind(dim))
    }
    #[track_caller]
    pub fn unbind(&self, dim: i64) -> Vec<Tensor> {
        ok(self.try_unbind(dim))
    }

    /// Python indexing `self[items]` with basic items (ints, slices, `None`, `...`): a view.
    /// Tensor items (advanced indexing) are handled by [`Tensor::try_index`].
    pub fn try_getitem(&self, items: &[TensorIndex]) -> Result<Tensor> {
        if items.iter().any(|i| matches!(i, TensorIndex::Tensor(_))) {
            return self.try_index(items);
        }
        Ok(self.with_view(self.basic_index_view(items)?))
    }
    #[track_caller]
    pub fn getitem(&self, items: &[TensorIndex]) -> Tensor {
        ok(self.try_getitem(items))
    }

    /// The view selected by basic index items.
    pub(crate) fn basic_index_view(&self, items: &[TensorIndex]) -> Result<View> {
        let consumed = items
            .iter()
            .filter(|i| {
                matches!(
                    i,
                    TensorIndex::Int(_) | TensorIndex::Slice(..) | TensorIndex::Tensor(_)
                )
            })
            .count();
        let ellipses = items
            .iter()
            .filter(|i| matches!(i, TensorIndex::Ellipsis))
            .count();
        if ellipses > 1 {
            return Err(Error::index(
                "an index can only have a single ellipsis ('...')",
            ));
        }
        if consumed > self.ndim() {
            return Err(Error::index(format!(
                "too many indices for tensor of dimension {}",
                self.ndim()
            )));
        }
        let mut v = self.view.clone();
        let mut d = 0usize;
        for item in items {
            match item {
                TensorIndex::Int(i) => {
                    let size = v.shape[d] as i64;
                    if *i < -size || *i >= size {
                        return Err(Error::index(format!(
                            "index {i} is out of bounds for dimension {d} with size {size}"
                        )));
                    }
                    v = v.select(d as i64, *i)?;
                }
                TensorIndex::Slice(start, stop, step) => {
                    let step = step.unwrap_or(1);
                    if step == 0 {
                        return Err(Error::value("slice step cannot be zero"));
                    }
                    if step < 0 {
                        return Err(Error::value("step must be greater than zero"));
                    }
                    v = v.slice(d as i64, *start, *stop, step)?;
                    d += 1;
                }
                TensorIndex::NewAxis => {
                    v = v.unsqueeze(d as i64)?;
                    d += 1;
                }
                TensorIndex::Ellipsis => d += self.ndim() - consumed,
                TensorIndex::Tensor(_) => {
                    return Err(Error::index("advanced index in a basic index"));
                }
            }
        }
        Ok(v)
    }
}

pub(crate) fn shape_i64(shape: &[usize]) -> Vec<i64> {
    shape.iter().map(|&s| s as i64).collect()
}
