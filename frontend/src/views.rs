//! View ops on tensors: each returns a new handle on the same storage with a new `View`
//! (never a graph node, never a copy) — except `reshape`/`flatten` when the strides forbid a
//! view, which copy, as in PyTorch.

use crate::names::{Dim, DimNames, drop_dims, refuse_named};
use crate::tensor::{Tensor, ok};
use smelt_ir::view::{view_strides, wrap_dim};
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

/// How a view op treats names: keeps them, or is refused on a named tensor (PyTorch 2.11
/// reports `aten::<op>`).
#[derive(Clone, Copy)]
enum NameRule {
    Keep,
    Refuse(&'static str),
}

macro_rules! view_ops {
    ($( $(#[$doc:meta])* fn $name:ident / $try_name:ident ( $($arg:ident : $ty:ty),* ) [$rule:expr] => |$v:ident| $body:expr; )*) => {
        impl Tensor {
            $(
                $(#[$doc])*
                pub fn $try_name(&self, $($arg: $ty),*) -> Result<Tensor> {
                    let rule: NameRule = $rule;
                    if let NameRule::Refuse(op) = rule {
                        refuse_named(op, [self])?;
                    }
                    let $v = &self.view;
                    Ok(self.with_view($body?).with_dim_names(self.dim_names()))
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
    /// `slice(dim, start, end, step)` with Python's clamping.
    fn slice / try_slice(dim: i64, start: Option<i64>, end: Option<i64>, step: i64) [NameRule::Keep] => |v| v.slice(dim, start, end, step);
    /// `narrow(dim, start, length)`.
    fn narrow / try_narrow(dim: i64, start: i64, length: i64) [NameRule::Keep] => |v| v.narrow(dim, start, length);
    /// `unsqueeze(dim)`.
    fn unsqueeze / try_unsqueeze(dim: i64) [NameRule::Refuse("unsqueeze")] => |v| v.unsqueeze(dim);
    /// `squeeze(dims)`: drops the listed dims that have size 1.
    fn squeeze_dims / try_squeeze_dims(dims: &[i64]) [NameRule::Refuse("squeeze.dims")] => |v| v.squeeze(Some(dims));
    /// `permute(dims)`.
    fn permute / try_permute(dims: &[i64]) [NameRule::Refuse("permute")] => |v| v.permute(dims);
    /// `movedim(source, destination)`.
    fn movedim / try_movedim(source: &[i64], destination: &[i64]) [NameRule::Refuse("movedim")] => |v| v.movedim(source, destination);
    /// `unfold(dimension, size, step)`.
    fn unfold / try_unfold(dim: i64, size: i64, step: i64) [NameRule::Refuse("unfold")] => |v| v.unfold(dim, size, step);
    /// `view(shape)`: fails with a `stride` error when the strides forbid it.
    fn view / try_view(shape: &[i64]) [NameRule::Refuse("view")] => |v| v.view(shape);
}

impl Tensor {
    /// `select(dim, index)`: drops `dim` (a position or a name) and its name.
    pub fn try_select(&self, dim: impl Into<Dim>, index: i64) -> Result<Tensor> {
        let dim = dim.into();
        let d = dim.position(self)?;
        let v = self.view.select(d as i64, index).map_err(|mut e| {
            // PyTorch names the dim in the message when it was given by name.
            if let Dim::Name(n) = &dim {
                e.message = e
                    .message
                    .replace(&format!("at dimension {d}"), &format!("at dimension '{n}'"));
            }
            e
        })?;
        Ok(self
            .with_view(v)
            .with_dim_names(drop_dims(self.dim_names(), &[d])))
    }
    #[track_caller]
    pub fn select(&self, dim: impl Into<Dim>, index: i64) -> Tensor {
        ok(self.try_select(dim, index))
    }

    /// `squeeze()`: drops every size-1 dim and its name.
    pub fn try_squeeze(&self) -> Result<Tensor> {
        let ones: Vec<usize> = (0..self.ndim())
            .filter(|&d| self.view.shape[d] == 1)
            .collect();
        let v = self.view.squeeze(None)?;
        Ok(self
            .with_view(v)
            .with_dim_names(drop_dims(self.dim_names(), &ones)))
    }
    #[track_caller]
    pub fn squeeze(&self) -> Tensor {
        ok(self.try_squeeze())
    }

    /// `squeeze(dim)`: drops `dim` when its size is 1. Otherwise an alias which, on a named
    /// tensor, is unnamed (PyTorch 2.11 quirk).
    pub fn try_squeeze_dim(&self, dim: impl Into<Dim>) -> Result<Tensor> {
        let d = dim.into().position(self)?;
        let v = self.view.squeeze(Some(&[d as i64]))?;
        let names = if self.ndim() > 0 && self.view.shape[d] == 1 {
            drop_dims(self.dim_names(), &[d])
        } else {
            None
        };
        Ok(self.with_view(v).with_dim_names(names))
    }
    #[track_caller]
    pub fn squeeze_dim(&self, dim: impl Into<Dim>) -> Tensor {
        ok(self.try_squeeze_dim(dim))
    }

    /// `transpose(dim0, dim1)` (also `swapaxes`, `swapdims`): names move with their dims.
    pub fn try_transpose(&self, dim0: impl Into<Dim>, dim1: impl Into<Dim>) -> Result<Tensor> {
        let a = dim0.into().resolve(self)?;
        let b = dim1.into().resolve(self)?;
        let v = self.view.transpose(a, b)?;
        let names = self.dim_names().map(|n| {
            let mut n = n.to_vec();
            if !n.is_empty() {
                let (a, b) = (
                    wrap_dim(a, n.len()).unwrap_or(0),
                    wrap_dim(b, n.len()).unwrap_or(0),
                );
                n.swap(a, b);
            }
            DimNames::from(n)
        });
        Ok(self.with_view(v).with_dim_names(names))
    }
    #[track_caller]
    pub fn transpose(&self, dim0: impl Into<Dim>, dim1: impl Into<Dim>) -> Tensor {
        ok(self.try_transpose(dim0, dim1))
    }
    /// `t()`.
    pub fn try_t(&self) -> Result<Tensor> {
        self.view.t()?;
        self.try_transpose(0, if self.ndim() < 2 { 0 } else { 1 })
    }
    #[track_caller]
    pub fn t(&self) -> Tensor {
        ok(self.try_t())
    }
    /// `mT`: the last two dims swapped.
    pub fn try_mt(&self) -> Result<Tensor> {
        self.view.mt()?;
        self.try_transpose(-2, -1)
    }
    #[track_caller]
    pub fn mt(&self) -> Tensor {
        ok(self.try_mt())
    }

    /// `expand(sizes)` (`-1` keeps a dim); new leading dims are unnamed.
    pub fn try_expand(&self, sizes: &[i64]) -> Result<Tensor> {
        let v = self.view.expand(sizes)?;
        let names = self.dim_names().map(|n| {
            let mut out = vec![None; v.ndim().saturating_sub(n.len())];
            out.extend(n.iter().cloned());
            DimNames::from(out)
        });
        Ok(self.with_view(v).with_dim_names(names))
    }
    #[track_caller]
    pub fn expand(&self, sizes: &[i64]) -> Tensor {
        ok(self.try_expand(sizes))
    }

    /// `diagonal(offset, dim1, dim2)`: drops both dims and appends an unnamed one.
    pub fn try_diagonal(
        &self,
        offset: i64,
        dim1: impl Into<Dim>,
        dim2: impl Into<Dim>,
    ) -> Result<Tensor> {
        self.diagonal_impl(offset, dim1.into(), dim2.into(), None)
    }
    #[track_caller]
    pub fn diagonal(&self, offset: i64, dim1: impl Into<Dim>, dim2: impl Into<Dim>) -> Tensor {
        ok(self.try_diagonal(offset, dim1, dim2))
    }
    /// `diagonal(outdim=…, dim1=…, dim2=…, offset=…)`: the new last dim is named `outdim`.
    pub fn try_diagonal_named(
        &self,
        offset: i64,
        dim1: impl Into<Dim>,
        dim2: impl Into<Dim>,
        outdim: &str,
    ) -> Result<Tensor> {
        self.diagonal_impl(offset, dim1.into(), dim2.into(), Some(outdim))
    }

    fn diagonal_impl(
        &self,
        offset: i64,
        dim1: Dim,
        dim2: Dim,
        outdim: Option<&str>,
    ) -> Result<Tensor> {
        let (a, b) = (dim1.resolve(self)?, dim2.resolve(self)?);
        let v = self.view.diagonal(offset, a, b)?;
        let out = crate::names::parse_name(outdim)?;
        if !self.has_names() && out.is_none() {
            return Ok(self.with_view(v));
        }
        let (a, b) = (wrap_dim(a, self.ndim())?, wrap_dim(b, self.ndim())?);
        let mut names: Vec<Option<String>> = self
            .names()
            .into_iter()
            .enumerate()
            .filter(|(i, _)| *i != a && *i != b)
            .map(|(_, n)| n)
            .collect();
        names.push(out);
        let stored = crate::names::normalise(names, v.ndim())?;
        Ok(self.with_view(v).with_dim_names(stored))
    }

    /// `unflatten(dim, sizes)`; a named tensor needs [`Tensor::try_unflatten_named`].
    pub fn try_unflatten(&self, dim: impl Into<Dim>, sizes: &[i64]) -> Result<Tensor> {
        let d = dim.into().resolve(self)?;
        if self.has_names() {
            return Err(Error::names(
                "unflatten: input is a named tensor but no names were given for unflattened sizes",
            ));
        }
        Ok(self.with_view(self.view.unflatten(d, sizes)?))
    }
    #[track_caller]
    pub fn unflatten(&self, dim: impl Into<Dim>, sizes: &[i64]) -> Tensor {
        ok(self.try_unflatten(dim, sizes))
    }
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

    /// `detach()`: shares storage, metadata and names.
    pub fn detach(&self) -> Tensor {
        self.alias()
    }

    /// `as_strided(size, stride, storage_offset)`; the offset defaults to self's. The result
    /// is unnamed (PyTorch 2.11 quirk).
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
        refuse_named("view", [self])?;
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

    /// Pieces of a split: each keeps self's names.
    fn views(&self, r: Result<Vec<View>>) -> Result<Vec<Tensor>> {
        let names = self.dim_names();
        Ok(r?
            .into_iter()
            .map(|v| self.with_view(v).with_dim_names(names.clone()))
            .collect())
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
    /// `unbind(dim)`: views without `dim` (a position or a name) and its name.
    pub fn try_unbind(&self, dim: impl Into<Dim>) -> Result<Vec<Tensor>> {
        let d = dim.into().resolve(self)?;
        let pieces = self.view.unbind(d)?;
        let names = match self.dim_names() {
            Some(_) => drop_dims(self.dim_names(), &[wrap_dim(d, self.ndim())?]),
            None => None,
        };
        Ok(pieces
            .into_iter()
            .map(|v| self.with_view(v).with_dim_names(names.clone()))
            .collect())
    }
    #[track_caller]
    pub fn unbind(&self, dim: impl Into<Dim>) -> Vec<Tensor> {
        ok(self.try_unbind(dim))
    }

    /// Python indexing `self[items]` with basic items (ints, slices, `None`, `...`): a view.
    /// Tensor items (advanced indexing) are handled by [`Tensor::try_index`].
    pub fn try_getitem(&self, items: &[TensorIndex]) -> Result<Tensor> {
        if items.iter().any(|i| matches!(i, TensorIndex::Tensor(_))) {
            refuse_named("index.Tensor", [self])?;
            return self.try_index(items);
        }
        let names = self.index_names(items)?;
        Ok(self
            .with_view(self.basic_index_view(items)?)
            .with_dim_names(names))
    }

    /// Names of `self[items]` for basic items: ints drop their dim's name, slices and `...`
    /// keep names; `None` (a new axis) is refused on a named tensor.
    pub(crate) fn index_names(&self, items: &[TensorIndex]) -> Result<Option<DimNames>> {
        let Some(names) = self.dim_names() else {
            return Ok(None);
        };
        if items.iter().any(|i| matches!(i, TensorIndex::NewAxis)) {
            return Err(crate::names::unsupported("unsqueeze"));
        }
        let consumed = items
            .iter()
            .filter(|i| matches!(i, TensorIndex::Int(_) | TensorIndex::Slice(..)))
            .count();
        let mut drop = vec![];
        let mut d = 0usize;
        for item in items {
            match item {
                TensorIndex::Int(_) => {
                    drop.push(d);
                    d += 1;
                }
                TensorIndex::Slice(..) => d += 1,
                TensorIndex::Ellipsis => d += names.len().saturating_sub(consumed),
                TensorIndex::NewAxis | TensorIndex::Tensor(_) => {}
            }
        }
        Ok(drop_dims(Some(names), &drop))
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
            if !basic_index_step(&mut v, &mut d, item, self.ndim() - consumed)? {
                return Err(Error::index("advanced index in a basic index"));
            }
        }
        Ok(v)
    }
}

/// `select` with Python indexing's bounds message (`x[5]`).
pub(crate) fn select_index(v: &View, d: usize, i: i64) -> Result<View> {
    let size = v.shape.get(d).copied().unwrap_or(0) as i64;
    if i < -size || i >= size {
        return Err(Error::index(format!(
            "index {i} is out of bounds for dimension {d} with size {size}"
        )));
    }
    v.select(d as i64, i)
}

/// Applies one basic index item (int, slice, `None`, `...`) at view dim `*d`, advancing `*d`;
/// `...` skips `ellipsis_dims` dims. Returns false for a tensor item, which it leaves alone.
pub(crate) fn basic_index_step(
    v: &mut View,
    d: &mut usize,
    item: &TensorIndex,
    ellipsis_dims: usize,
) -> Result<bool> {
    match item {
        TensorIndex::Int(i) => *v = select_index(v, *d, *i)?,
        TensorIndex::Slice(start, stop, step) => {
            let step = step.unwrap_or(1);
            if step == 0 {
                return Err(Error::value("slice step cannot be zero"));
            }
            if step < 0 {
                return Err(Error::value("step must be greater than zero"));
            }
            *v = v.slice(*d as i64, *start, *stop, step)?;
            *d += 1;
        }
        TensorIndex::NewAxis => {
            *v = v.unsqueeze(*d as i64)?;
            *d += 1;
        }
        TensorIndex::Ellipsis => *d += ellipsis_dims,
        TensorIndex::Tensor(_) => return Ok(false),
    }
    Ok(true)
}

pub(crate) fn shape_i64(shape: &[usize]) -> Vec<i64> {
    shape.iter().map(|&s| s as i64).collect()
}
