//! View ops on tensors: each returns a new handle on the same storage with a new `View`
//! (never a graph node, never a copy) — except `reshape`/`flatten` when the strides forbid a
//! view, which copy, as in PyTorch.

use crate::names::{
    Dim, DimNames, drop_dims, mixes_names_and_positions, no_overload, refuse_named,
};
use crate::tensor::{Tensor, ok};
use smelt_ir::view::{view_strides, wrap_dim};
use smelt_ir::{Error, MemoryFormat, Result, View};

/// One item of a Python-style index `x[a, b, …]` ([`Tensor::getitem`], [`Tensor::setitem`]).
///
/// ```
/// # use smelt_frontend as smelt;
/// use smelt::prelude::*;
/// use TensorIndex::{Ellipsis, Int, Slice};
/// let x = Tensor::arange(0, 6, 1, None).view(&[2, 3]);
/// // x[1, ::2]
/// assert_eq!(x.getitem(&[Int(1), Slice(None, None, Some(2))]).to_vec::<i64>(), [3, 5]);
/// // x[..., 0]
/// assert_eq!(x.getitem(&[Ellipsis, Int(0)]).to_vec::<i64>(), [0, 3]);
/// ```
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

/// Generates a view op and its `try_` form. The doc lines given document the plain form; the
/// string after the body says when the `try_` form returns an error.
macro_rules! view_ops {
    ($(
        $(#[doc = $doc:expr])*
        fn $name:ident / $try_name:ident ( $($arg:ident : $ty:ty),* ) [$rule:expr]
            => |$v:ident| $body:expr, $errors:expr;
    )*) => {
        impl Tensor {
            $(
                #[doc = concat!(
                    "[`Tensor::", stringify!($name), "`] returning a `Result`: ", $errors, "."
                )]
                pub fn $try_name(&self, $($arg: $ty),*) -> Result<Tensor> {
                    let rule: NameRule = $rule;
                    if let NameRule::Refuse(op) = rule {
                        refuse_named(op, [self])?;
                    }
                    let $v = &self.view;
                    Ok(self.with_view($body?).with_dim_names(self.dim_names()))
                }

                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = concat!(
                    "A view: shares `self`'s storage, copies nothing. Panics where [`Tensor::",
                    stringify!($try_name), "`] returns an error."
                )]
                #[track_caller]
                pub fn $name(&self, $($arg: $ty),*) -> Tensor {
                    ok(self.$try_name($($arg),*))
                }
            )*
        }
    };
}

view_ops! {
    /// `tensor[..., start:end:step]` along `dim` (PyTorch's `slice`): bounds are clamped as
    /// in Python, `None` meaning the start or end of the dim; dim names are kept.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::arange(0, 6, 1, None);
    /// assert_eq!(x.slice(0, Some(1), None, 2).to_vec::<i64>(), [1, 3, 5]);
    /// ```
    fn slice / try_slice(dim: i64, start: Option<i64>, end: Option<i64>, step: i64)
        [NameRule::Keep] => |v| v.slice(dim, start, end, step),
        "an `index` error for a dim out of range or a 0-dim tensor, a `value` error for a step \
        below 1";
    /// `torch.narrow(self, dim, start, length)`: elements `start .. start + length` of `dim`.
    fn narrow / try_narrow(dim: i64, start: i64, length: i64) [NameRule::Keep]
        => |v| v.narrow(dim, start, length),
        "an `index` error for a dim or start out of range or a length running past the end, a \
        `value` error for a negative length";
    /// `torch.unsqueeze(self, dim)`: a new size-1 dim inserted at `dim`.
    fn unsqueeze / try_unsqueeze(dim: i64) [NameRule::Refuse("unsqueeze")]
        => |v| v.unsqueeze(dim),
        "an `index` error for a dim out of range, a `names` error for a named tensor";
    /// `torch.squeeze(self, dims)`: drops the listed dims that have size 1 (others stay).
    fn squeeze_dims / try_squeeze_dims(dims: &[i64]) [NameRule::Refuse("squeeze.dims")]
        => |v| v.squeeze(Some(dims)),
        "an `index` error for a dim out of range, a `names` error for a named tensor";
    /// `torch.permute(self, dims)`: the dims reordered, `dims[i]` becoming dim `i`.
    fn permute / try_permute(dims: &[i64]) [NameRule::Refuse("permute")]
        => |v| v.permute(dims),
        "a `shape` error when `dims` does not list every dim, a `value` error for a repeated \
        dim, an `index` error for a dim out of range, a `names` error for a named tensor";
    /// `torch.movedim(self, source, destination)`: the dims in `source` moved to the
    /// positions in `destination`, the others keeping their order.
    fn movedim / try_movedim(source: &[i64], destination: &[i64]) [NameRule::Refuse("permute")]
        => |v| v.movedim(source, destination),
        "a `value` error for lists of different lengths or a repeated dim, an `index` error \
        for a dim out of range, a `names` error for a named tensor";
    /// `tensor.unfold(dimension, size, step)`: every window of `size` elements along `dim`,
    /// `step` apart, as a new last dim.
    fn unfold / try_unfold(dim: i64, size: i64, step: i64) [NameRule::Refuse("unfold")]
        => |v| v.unfold(dim, size, step),
        "a `shape` error for a window larger than the dim, a `value` error for a negative size \
        or a step below 1, an `index` error for a dim out of range, a `names` error for a named tensor";
    /// `tensor.view(shape)`: the same elements with another shape (one size may be `-1`),
    /// without a copy.
    fn view / try_view(shape: &[i64]) [NameRule::Refuse("view")] => |v| v.view(shape),
        "a `stride` error when the strides forbid a view (use `reshape`), a `shape` error when \
        the sizes do not multiply to the element count, a `value` error for more than one \
        `-1`, a `names` error for a named tensor";
}

impl Tensor {
    /// `torch.select(self, dim, index)` (`x[..., index]` along `dim`): drops `dim` (a position or a
    /// name) and its name. Errors: an `index` error for a dim out of range or an index out of
    /// range, a `names` error for an unknown name.
    #[track_caller]
    pub fn try_select(&self, dim: impl Into<Dim>, index: i64) -> Result<Tensor> {
        let dim = dim.into();
        let d = dim.position(self)?;
        let v = self.view.select(d as i64, index).map_err(|mut e| {
            // PyTorch names the dim in the message when it has a name, however it was given.
            if let Some(Some(n)) = self.dim_names().as_deref().and_then(|ns| ns.get(d)) {
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
    /// `torch.select(self, dim, index)`: a view without `dim`; panics where [`Tensor::try_select`]
    /// returns an error.
    #[track_caller]
    pub fn select(&self, dim: impl Into<Dim>, index: i64) -> Tensor {
        ok(self.try_select(dim, index))
    }

    /// `torch.squeeze(self)`: drops every size-1 dim and its name. Never an error today.
    #[track_caller]
    pub fn try_squeeze(&self) -> Result<Tensor> {
        let ones: Vec<usize> = (0..self.ndim())
            .filter(|&d| self.view.shape[d] == 1)
            .collect();
        let v = self.view.squeeze(None)?;
        Ok(self
            .with_view(v)
            .with_dim_names(drop_dims(self.dim_names(), &ones)))
    }
    /// `torch.squeeze(self)`: a view without size-1 dims.
    #[track_caller]
    pub fn squeeze(&self) -> Tensor {
        ok(self.try_squeeze())
    }

    /// `torch.squeeze(self, dim)`: drops `dim` when its size is 1; otherwise an alias which, on a
    /// named tensor, is unnamed (PyTorch 2.11 quirk). Errors: an `index` error for a dim out of
    /// range, a `names` error for an unknown name.
    #[track_caller]
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
    /// `torch.squeeze(self, dim)`; panics where [`Tensor::try_squeeze_dim`] returns an error.
    #[track_caller]
    pub fn squeeze_dim(&self, dim: impl Into<Dim>) -> Tensor {
        ok(self.try_squeeze_dim(dim))
    }

    /// `torch.transpose(self, dim0, dim1)` (also `swapaxes`, `swapdims`): a view with the two dims
    /// swapped; names move with their dims. Errors: an `index` error for a dim out of range, a
    /// `names` error for an unknown name or a name mixed with a position.
    #[track_caller]
    pub fn try_transpose(&self, dim0: impl Into<Dim>, dim1: impl Into<Dim>) -> Result<Tensor> {
        let (dim0, dim1) = (dim0.into(), dim1.into());
        if mixes_names_and_positions(&[dim0.clone(), dim1.clone()]) {
            return Err(no_overload(
                "transpose",
                "dim0 and dim1 must both be names or both be positions",
            ));
        }
        // PyTorch 2.11 looks the second name up first (C++ evaluates the arguments right to
        // left), so with both missing it reports the second.
        let b = dim1.resolve(self)?;
        let a = dim0.resolve(self)?;
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
    /// `torch.transpose(self, dim0, dim1)`; panics where [`Tensor::try_transpose`] returns an
    /// error.
    #[track_caller]
    pub fn transpose(&self, dim0: impl Into<Dim>, dim1: impl Into<Dim>) -> Tensor {
        ok(self.try_transpose(dim0, dim1))
    }
    /// `tensor.t()`: a 2-D tensor transposed (0-D and 1-D returned as they are). Errors: a `shape`
    /// error for more than 2 dims.
    #[track_caller]
    pub fn try_t(&self) -> Result<Tensor> {
        self.view.t()?;
        self.try_transpose(0, if self.ndim() < 2 { 0 } else { 1 })
    }
    /// `tensor.t()`; panics where [`Tensor::try_t`] returns an error.
    #[track_caller]
    pub fn t(&self) -> Tensor {
        ok(self.try_t())
    }
    /// `tensor.mT`: the last two dims swapped. Errors: a `shape` error for fewer than 2 dims.
    #[track_caller]
    pub fn try_mt(&self) -> Result<Tensor> {
        self.view.mt()?;
        self.try_transpose(-2, -1)
    }
    /// `tensor.mT`; panics where [`Tensor::try_mt`] returns an error.
    #[track_caller]
    pub fn mt(&self) -> Tensor {
        ok(self.try_mt())
    }

    /// `tensor.expand(sizes)`: size-1 dims repeated to `sizes` (`-1` keeps a dim; new leading dims
    /// are unnamed) by stride 0, without a copy. Errors: a `shape` error for fewer sizes than dims
    /// or a size that does not match a non-1 dim, a `value` error for `-1` in a new leading dim.
    #[track_caller]
    pub fn try_expand(&self, sizes: &[i64]) -> Result<Tensor> {
        let v = self.view.expand(sizes)?;
        let names = self.dim_names().map(|n| {
            let mut out = vec![None; v.ndim().saturating_sub(n.len())];
            out.extend(n.iter().cloned());
            DimNames::from(out)
        });
        Ok(self.with_view(v).with_dim_names(names))
    }
    /// `tensor.expand(sizes)`; panics where [`Tensor::try_expand`] returns an error.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::new([[1], [2]]).expand(&[2, 3]);
    /// assert_eq!(x.to_vec::<i64>(), [1, 1, 1, 2, 2, 2]);
    /// assert_eq!(x.stride(), [1, 0]);
    /// ```
    #[track_caller]
    pub fn expand(&self, sizes: &[i64]) -> Tensor {
        ok(self.try_expand(sizes))
    }

    /// `torch.diagonal(self, offset, dim1, dim2)`: the diagonal of the `dim1`×`dim2` planes as a
    /// new last dim (above the main one for `offset > 0`); both dims and their names go, the new
    /// one is unnamed. Errors: a `value` error for `dim1 == dim2`, an `index` error for a dim out
    /// of range, a `names` error for a dim given by name (PyTorch takes names only with an
    /// `outdim`: [`Tensor::try_diagonal_named`]).
    #[track_caller]
    pub fn try_diagonal(
        &self,
        offset: i64,
        dim1: impl Into<Dim>,
        dim2: impl Into<Dim>,
    ) -> Result<Tensor> {
        self.diagonal_impl(offset, dim1.into(), dim2.into(), None)
    }
    /// `torch.diagonal(self, offset, dim1, dim2)`; panics where [`Tensor::try_diagonal`] returns an
    /// error.
    #[track_caller]
    pub fn diagonal(&self, offset: i64, dim1: impl Into<Dim>, dim2: impl Into<Dim>) -> Tensor {
        ok(self.try_diagonal(offset, dim1, dim2))
    }
    /// `torch.diagonal(self, outdim=outdim, dim1=dim1, dim2=dim2, offset=offset)`: as
    /// [`Tensor::try_diagonal`] with `dim1` and `dim2` given by name, the new last dim named
    /// `outdim`. Errors: those of `try_diagonal`, and a `names` error for a dim given by position
    /// (PyTorch's Dimname overload takes names only), an unknown name, or an invalid or duplicate
    /// name.
    #[track_caller]
    pub fn try_diagonal_named(
        &self,
        offset: i64,
        dim1: impl Into<Dim>,
        dim2: impl Into<Dim>,
        outdim: &str,
    ) -> Result<Tensor> {
        self.diagonal_impl(offset, dim1.into(), dim2.into(), Some(outdim))
    }

    #[track_caller]
    fn diagonal_impl(
        &self,
        offset: i64,
        dim1: Dim,
        dim2: Dim,
        outdim: Option<&str>,
    ) -> Result<Tensor> {
        // PyTorch 2.11: `diagonal(offset, dim1, dim2)` takes positions, the Dimname overload
        // `diagonal(outdim=, dim1=, dim2=, offset=)` names, all three.
        let names = [&dim1, &dim2].map(|d| matches!(d, Dim::Name(_)));
        match outdim {
            None if names.contains(&true) => {
                return Err(no_overload(
                    "diagonal",
                    "dim1 and dim2 must be positions (names need an outdim: diagonal_named)",
                ));
            }
            Some(_) if names.contains(&false) => {
                return Err(no_overload(
                    "diagonal",
                    "with an outdim, dim1 and dim2 must be names",
                ));
            }
            None | Some(_) => {}
        }
        // The second name is looked up first, as PyTorch does.
        let b = dim2.resolve(self)?;
        let a = dim1.resolve(self)?;
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

    /// `torch.unflatten(self, dim, sizes)`: `dim` split into dims of `sizes` (one may be `-1`).
    /// Errors: a `shape` error when the sizes do not multiply to the dim's size, a `value` error
    /// for empty `sizes`, an `index` error for a dim out of range, a `names` error for a named
    /// tensor or a dim given by name (use [`Tensor::try_unflatten_named`]).
    #[track_caller]
    pub fn try_unflatten(&self, dim: impl Into<Dim>, sizes: &[i64]) -> Result<Tensor> {
        let Dim::Index(d) = dim.into() else {
            return Err(no_overload(
                "unflatten",
                "without names for the new dims, dim must be a position",
            ));
        };
        if self.has_names() {
            return Err(Error::names(
                "unflatten: input is a named tensor but no names were given for unflattened sizes",
            ));
        }
        Ok(self.with_view(self.view.unflatten(d, sizes)?))
    }
    /// `torch.unflatten(self, dim, sizes)`; panics where [`Tensor::try_unflatten`] returns an
    /// error.
    #[track_caller]
    pub fn unflatten(&self, dim: impl Into<Dim>, sizes: &[i64]) -> Tensor {
        ok(self.try_unflatten(dim, sizes))
    }
}

impl Tensor {
    /// `torch.swapaxes`: [`Tensor::transpose`].
    #[track_caller]
    pub fn swapaxes(&self, a: i64, b: i64) -> Tensor {
        self.transpose(a, b)
    }
    /// `torch.swapdims`: [`Tensor::transpose`].
    #[track_caller]
    pub fn swapdims(&self, a: i64, b: i64) -> Tensor {
        self.transpose(a, b)
    }
    /// `tensor.adjoint()`: [`Tensor::mt`] (every dtype is real).
    #[track_caller]
    pub fn adjoint(&self) -> Tensor {
        self.mt()
    }

    /// `tensor.T`: all dims reversed. Errors: a `names` error for a named tensor.
    #[track_caller]
    pub fn try_big_t(&self) -> Result<Tensor> {
        let dims: Vec<i64> = (0..self.ndim() as i64).rev().collect();
        self.try_permute(&dims)
    }
    /// `tensor.T`; panics where [`Tensor::try_big_t`] returns an error.
    #[track_caller]
    pub fn big_t(&self) -> Tensor {
        ok(self.try_big_t())
    }

    /// `tensor.expand_as(other)`: [`Tensor::try_expand`] to `other`'s shape.
    #[track_caller]
    pub fn try_expand_as(&self, other: &Tensor) -> Result<Tensor> {
        self.try_expand(&shape_i64(other.shape()))
    }
    /// `tensor.expand_as(other)`; panics where [`Tensor::try_expand_as`] returns an error.
    #[track_caller]
    pub fn expand_as(&self, other: &Tensor) -> Tensor {
        ok(self.try_expand_as(other))
    }
    /// `torch.broadcast_to(self, shape)`: [`Tensor::try_expand`].
    #[track_caller]
    pub fn try_broadcast_to(&self, shape: &[i64]) -> Result<Tensor> {
        self.try_expand(shape)
    }
    /// `torch.broadcast_to(self, shape)`; panics where [`Tensor::try_broadcast_to`] returns an
    /// error.
    #[track_caller]
    pub fn broadcast_to(&self, shape: &[i64]) -> Tensor {
        ok(self.try_broadcast_to(shape))
    }
    /// `tensor.view_as(other)`: [`Tensor::try_view`] to `other`'s shape.
    #[track_caller]
    pub fn try_view_as(&self, other: &Tensor) -> Result<Tensor> {
        self.try_view(&shape_i64(other.shape()))
    }
    /// `tensor.view_as(other)`; panics where [`Tensor::try_view_as`] returns an error.
    #[track_caller]
    pub fn view_as(&self, other: &Tensor) -> Tensor {
        ok(self.try_view_as(other))
    }

    /// `tensor.detach()`: a new handle sharing storage, metadata and names (smelt has no autograd,
    /// so this is an alias).
    #[track_caller]
    pub fn detach(&self) -> Tensor {
        self.alias()
    }

    /// `torch.as_strided(self, size, stride, storage_offset)`: a view of `self`'s storage with
    /// exactly this geometry; the offset defaults to `self`'s. The result is unnamed (PyTorch 2.11
    /// quirk). Errors: a `shape` error when `size` and `stride` differ in length, a `value` error
    /// for a negative stride or offset, an `index` error when the view reaches past the storage.
    #[track_caller]
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
    /// `torch.as_strided(self, size, stride, storage_offset)`; panics where
    /// [`Tensor::try_as_strided`] returns an error.
    #[track_caller]
    pub fn as_strided(&self, size: &[i64], stride: &[i64], offset: Option<i64>) -> Tensor {
        ok(self.try_as_strided(size, stride, offset))
    }

    /// `torch.reshape(self, shape)`: a view when the strides allow, else a contiguous copy (one
    /// size may be `-1`). Errors: a `shape` error when the sizes do not multiply to the element
    /// count, a `value` error for more than one `-1`, a `names` error for a named tensor.
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
    /// `torch.reshape(self, shape)`; panics where [`Tensor::try_reshape`] returns an error.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::arange(0, 6, 1, None).reshape(&[2, -1]);
    /// assert_eq!(x.shape(), &[2, 3]);
    /// assert!(x.t().reshape(&[6]).is_contiguous()); // a copy: no view of a transpose is flat
    /// ```
    #[track_caller]
    pub fn reshape(&self, shape: &[i64]) -> Tensor {
        ok(self.try_reshape(shape))
    }
    /// `tensor.reshape_as(other)`: [`Tensor::try_reshape`] to `other`'s shape.
    #[track_caller]
    pub fn try_reshape_as(&self, other: &Tensor) -> Result<Tensor> {
        self.try_reshape(&shape_i64(other.shape()))
    }
    /// `tensor.reshape_as(other)`; panics where [`Tensor::try_reshape_as`] returns an error.
    #[track_caller]
    pub fn reshape_as(&self, other: &Tensor) -> Tensor {
        ok(self.try_reshape_as(other))
    }

    /// `torch.flatten(self, start_dim, end_dim)`: dims `start_dim..=end_dim` merged into one (a
    /// view when possible, as [`Tensor::try_reshape`]); `self` when they are equal, `[1]` for a
    /// 0-dim tensor. Errors: an `index` error for a dim out of range, a `value` error for
    /// `start_dim` after `end_dim`, a `names` error for a named tensor (use
    /// [`Tensor::try_flatten_named`]).
    #[track_caller]
    pub fn try_flatten(&self, start_dim: i64, end_dim: i64) -> Result<Tensor> {
        // The dims are wrapped first, a 0-dim tensor's against [-1, 0] as PyTorch does.
        let s = smelt_ir::view::wrap_dim(start_dim, self.ndim())?;
        let e = smelt_ir::view::wrap_dim(end_dim, self.ndim())?;
        if self.ndim() == 0 {
            return self.try_reshape(&[1]);
        }
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
    /// `torch.flatten(self, start_dim, end_dim)`; panics where [`Tensor::try_flatten`] returns an
    /// error.
    #[track_caller]
    pub fn flatten(&self, start_dim: i64, end_dim: i64) -> Tensor {
        ok(self.try_flatten(start_dim, end_dim))
    }
    /// `torch.ravel(self)`: the elements as one contiguous dim — `self.contiguous().view(-1)`, so
    /// a copy whenever self is not contiguous, even a 1-D self (expanded or stepped), and a view
    /// otherwise. Errors: a `names` error for a named tensor (as `view`).
    #[track_caller]
    pub fn try_ravel(&self) -> Result<Tensor> {
        refuse_named("view", [self])?;
        // `view(-1)` of the contiguous tensor: an empty tensor is contiguous as it is, and
        // viewing it keeps a 1-D empty tensor's stride (PyTorch's `computeStride`).
        self.try_contiguous_format(MemoryFormat::Contiguous)?
            .try_view(&[-1])
    }

    /// `torch.ravel(self)`; panics where [`Tensor::try_ravel`] returns an error.
    #[track_caller]
    pub fn ravel(&self) -> Tensor {
        ok(self.try_ravel())
    }

    /// Pieces of a split: each keeps self's names.
    #[track_caller]
    fn views(&self, r: Result<Vec<View>>) -> Result<Vec<Tensor>> {
        let names = self.dim_names();
        let r = r?;
        let mut out = smelt_ir::view::piece_list("split", r.len() as i64)?;
        out.extend(
            r.into_iter()
                .map(|v| self.with_view(v).with_dim_names(names.clone())),
        );
        Ok(out)
    }

    /// `torch.split(self, split_size, dim)`: views of `split_size` elements along `dim` (the last
    /// may be shorter), each keeping `self`'s names. Errors: a `value` error for a 0-dim tensor or
    /// a negative `split_size` (or 0 on a non-empty dim), an `index` error for a dim out of range.
    #[track_caller]
    pub fn try_split(&self, split_size: i64, dim: i64) -> Result<Vec<Tensor>> {
        self.views(self.view.split(split_size, dim))
    }
    /// `torch.split(self, split_size, dim)`; panics where [`Tensor::try_split`] returns an error.
    #[track_caller]
    pub fn split(&self, split_size: i64, dim: i64) -> Vec<Tensor> {
        ok(self.try_split(split_size, dim))
    }
    /// `torch.split(self, sizes, dim)` with a list: views of the given sizes along `dim`. Errors: a
    /// `value` error when the sizes do not add up to the dim's size, an `index` error for a dim out
    /// of range.
    #[track_caller]
    pub fn try_split_with_sizes(&self, sizes: &[i64], dim: i64) -> Result<Vec<Tensor>> {
        self.views(self.view.split_with_sizes(sizes, dim))
    }
    /// `torch.split(self, sizes, dim)` with a list; panics where [`Tensor::try_split_with_sizes`]
    /// returns an error.
    #[track_caller]
    pub fn split_with_sizes(&self, sizes: &[i64], dim: i64) -> Vec<Tensor> {
        ok(self.try_split_with_sizes(sizes, dim))
    }
    /// `torch.chunk(self, chunks, dim)`: at most `chunks` views of equal size along `dim` (the last
    /// may be shorter). Errors: a `value` error for a 0-dim tensor or `chunks < 1`,
    /// an `index` error for a dim out of range.
    #[track_caller]
    pub fn try_chunk(&self, chunks: i64, dim: i64) -> Result<Vec<Tensor>> {
        self.views(self.view.chunk(chunks, dim))
    }
    /// `torch.chunk(self, chunks, dim)`; panics where [`Tensor::try_chunk`] returns an error.
    #[track_caller]
    pub fn chunk(&self, chunks: i64, dim: i64) -> Vec<Tensor> {
        ok(self.try_chunk(chunks, dim))
    }
    /// `torch.tensor_split(self, sections, dim)`: exactly `sections` views along `dim`, the first
    /// `size % sections` one element longer. Errors: a `value` error for a 0-dim tensor or
    /// `sections < 1`, an `index` error for a dim out of range.
    #[track_caller]
    pub fn try_tensor_split(&self, sections: i64, dim: i64) -> Result<Vec<Tensor>> {
        self.views(self.view.tensor_split_sections(sections, dim))
    }
    /// `torch.tensor_split(self, sections, dim)`; panics where [`Tensor::try_tensor_split`]
    /// returns an error.
    #[track_caller]
    pub fn tensor_split(&self, sections: i64, dim: i64) -> Vec<Tensor> {
        ok(self.try_tensor_split(sections, dim))
    }
    /// `torch.tensor_split(self, indices, dim)` with a list: views split before each index along
    /// `dim`. Errors: a `value` error for a 0-dim tensor, an `index` error for a dim out of range.
    #[track_caller]
    pub fn try_tensor_split_indices(&self, indices: &[i64], dim: i64) -> Result<Vec<Tensor>> {
        self.views(self.view.tensor_split_indices(indices, dim))
    }
    /// `torch.tensor_split(self, indices, dim)` with a list; panics where
    /// [`Tensor::try_tensor_split_indices`] returns an error.
    #[track_caller]
    pub fn tensor_split_indices(&self, indices: &[i64], dim: i64) -> Vec<Tensor> {
        ok(self.try_tensor_split_indices(indices, dim))
    }
    /// `torch.hsplit(self, sections)`: [`Tensor::try_tensor_split`] along dim 1 (dim 0 for 1-D).
    /// Errors: a `value` error for a 0-dim tensor or a dim `sections` does not divide.
    #[track_caller]
    pub fn try_hsplit(&self, sections: i64) -> Result<Vec<Tensor>> {
        if self.ndim() == 0 {
            return Err(Error::value(
                "torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with 0 dimensions!",
            ));
        }
        let dim = if self.ndim() == 1 { 0 } else { 1 };
        self.split_divisible(sections, dim, "hsplit")
    }
    /// `torch.vsplit(self, sections)`: [`Tensor::try_tensor_split`] along dim 0 of a tensor with at
    /// least 2 dims. Errors: a `value` error for fewer dims or a dim `sections` does not divide.
    #[track_caller]
    pub fn try_vsplit(&self, sections: i64) -> Result<Vec<Tensor>> {
        if self.ndim() < 2 {
            return Err(Error::value(format!(
                "torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with {} dimensions!",
                self.ndim()
            )));
        }
        self.split_divisible(sections, 0, "vsplit")
    }
    #[track_caller]
    fn split_divisible(&self, sections: i64, dim: usize, op: &str) -> Result<Vec<Tensor>> {
        let size = self.view.shape[dim] as i64;
        if sections == 0 || size % sections != 0 {
            return Err(Error::value(format!(
                "torch.{op} attempted to split along dimension {dim}, but the size of the dimension {size} is not divisible by the split_size {sections}!"
            )));
        }
        self.try_tensor_split(sections, dim as i64)
    }
    /// `torch.unbind(self, dim)`: one view per index of `dim` (a position or a name), each without
    /// `dim` and its name. Errors: an `index` error for a dim out of range or a 0-dim tensor, a
    /// `names` error for an unknown name.
    #[track_caller]
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
    /// `torch.unbind(self, dim)`; panics where [`Tensor::try_unbind`] returns an error.
    #[track_caller]
    pub fn unbind(&self, dim: impl Into<Dim>) -> Vec<Tensor> {
        ok(self.try_unbind(dim))
    }

    /// Python indexing `self[items]`: basic items (ints, slices, `None`, `...`) give a view; tensor
    /// items (advanced indexing) a copy, through [`Tensor::try_index`]. Errors: an `index` error
    /// for an index out of range, too many indices or two ellipses, a `value` error for a slice
    /// step below 1, a `names` error for a new axis on a named tensor (or a tensor item on one).
    #[track_caller]
    pub fn try_getitem(&self, items: &[TensorIndex]) -> Result<Tensor> {
        if items.iter().any(|i| matches!(i, TensorIndex::Tensor(_))) {
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
    /// Python indexing `self[items]` ([`TensorIndex`]); panics where [`Tensor::try_getitem`]
    /// returns an error.
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
