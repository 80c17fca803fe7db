//! Reductions: sum, mean, prod, amax/amin, max/min (with indices), argmax/argmin, all/any,
//! count_nonzero. Each records one `Op::Reduce` (or an arg-reduce library call) whose input
//! edge view lists the kept dims first and the reduced dims last, in their original order.
//! Results are contiguous (SEMANTICS.md §4.2), with keepdim's size-1 dims as a view of the
//! same fresh storage.
//!
//! Accumulation order (determinism): for every output element the reduced elements are
//! folded one at a time in row-major order of the reduced dims (the reference interpreter's
//! inner loop), floats in f64 and ints in wrapping i64, rounded once to the result dtype.
//! Nothing depends on the thread count. Composite ops (mean, var/std, logsumexp, softmax …)
//! live in `reduce_composite.rs`; cumsum/cumprod/sort in `scan.rs`.
//!
//! Names (SEMANTICS.md §7.2): sum/mean/var/std/logsumexp take dim names or lists of them,
//! prod/max/min one name; reduced dims lose their names unless keepdim (which keeps all), and
//! max/min with a dim name values and indices alike. amax/amin/argmax/argmin/count_nonzero
//! and all/any with a dim refuse named input; all/any refuse a dim name outright.

use crate::names::{Dim, DimNames, drop_dims, refuse_named};
use crate::tensor::{Tensor, ok};
use smelt_ir::Dims;
use smelt_ir::graph::Op;
use smelt_ir::view::{contiguous_strides, fmt_list, wrap_dim, wrap_dims};
use smelt_ir::{BinaryOp, DType, Error, LibraryOp, ReduceOp, Result, Scalar, View};

/// The `dim` argument of the reductions that accept a list of dims (`sum`, `mean`, `var`,
/// `std`, `logsumexp`, `all`, `any`, `amax`, `amin`, `count_nonzero`): one position (`1`),
/// positions (`&[1, -1]`, `&[]` = every dim) or, where PyTorch has a Dimname overload, names
/// (`"C"`, `Dim::from("C")`, a `Vec` or slice of `Dim`s: `vec![Dim::from("N"), "C".into()]`).
/// Arrays are taken only of `i64`, so that `&[]` and `&[0, 1]` infer without annotations.
pub trait IntoDims {
    /// The dims as a list ([`Dim::Index`] or [`Dim::Name`] each).
    fn into_dims(self) -> Vec<Dim>;
}

impl IntoDims for &[i64] {
    fn into_dims(self) -> Vec<Dim> {
        self.iter().map(|&d| Dim::Index(d)).collect()
    }
}
impl<const N: usize> IntoDims for &[i64; N] {
    fn into_dims(self) -> Vec<Dim> {
        self.iter().map(|&d| Dim::Index(d)).collect()
    }
}
impl IntoDims for &Vec<i64> {
    fn into_dims(self) -> Vec<Dim> {
        self.as_slice().into_dims()
    }
}
impl IntoDims for Vec<i64> {
    fn into_dims(self) -> Vec<Dim> {
        self.as_slice().into_dims()
    }
}
impl IntoDims for &[Dim] {
    fn into_dims(self) -> Vec<Dim> {
        self.to_vec()
    }
}
impl IntoDims for &Vec<Dim> {
    fn into_dims(self) -> Vec<Dim> {
        self.clone()
    }
}
impl IntoDims for Vec<Dim> {
    fn into_dims(self) -> Vec<Dim> {
        self
    }
}
impl IntoDims for Dim {
    fn into_dims(self) -> Vec<Dim> {
        vec![self]
    }
}
impl IntoDims for i64 {
    fn into_dims(self) -> Vec<Dim> {
        vec![Dim::from(self)]
    }
}
impl IntoDims for i32 {
    fn into_dims(self) -> Vec<Dim> {
        vec![Dim::from(self)]
    }
}
impl IntoDims for usize {
    fn into_dims(self) -> Vec<Dim> {
        vec![Dim::from(self)]
    }
}
impl IntoDims for &str {
    fn into_dims(self) -> Vec<Dim> {
        vec![Dim::from(self)]
    }
}

/// The error of an op without a Dimname overload called with a dim name.
pub(crate) fn dimname_unsupported(op: &str) -> Error {
    Error::names(format!(
        "{op}: You passed a dimname (string) to this op in place of a dimension index but it does not yet support this behavior. Please pass a dimension index to work around this."
    ))
}

/// Refuses a dim name where PyTorch has no Dimname overload (`index_select`, `gather`,
/// `all`, `any`); positions pass through.
pub(crate) fn index_only(op: &str, dims: &[Dim]) -> Result<Vec<i64>> {
    dims.iter()
        .map(|d| match d {
            Dim::Index(i) => Ok(*i),
            Dim::Name(_) => Err(dimname_unsupported(op)),
        })
        .collect()
}

/// The geometry of one reduction of a tensor.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// Reduced input dims, ascending.
    pub reduced: Vec<usize>,
    /// Shape of the reduction's node: the kept dims.
    pub kept_shape: Vec<usize>,
    /// Shape the user sees: kept dims, or size 1 in place of reduced dims under keepdim.
    pub out_shape: Vec<usize>,
    /// The input read with kept dims first and reduced dims last (at least one trailing axis).
    pub edge: View,
    /// Number of trailing reduced axes of `edge`.
    pub axes: usize,
    /// Number of elements folded into each output element.
    pub count: usize,
}

impl Tensor {
    /// Positions of `dims` in self (names looked up, indices unwrapped).
    pub(crate) fn resolve_dims(&self, op: &str, dims: &[Dim]) -> Result<Vec<i64>> {
        if crate::names::mixes_names_and_positions(dims) {
            return Err(crate::names::no_overload(
                op,
                "dims must be all names or all positions",
            ));
        }
        dims.iter().map(|d| d.resolve(self)).collect()
    }

    /// Names of a reduction's result over (resolved) `dims`: the reduced dims lose their
    /// names unless `keepdim` (a full reduction gives none). Computed after the op succeeded,
    /// so the plan cannot fail here.
    pub(crate) fn reduced_names(&self, dims: &[i64], keepdim: bool) -> Option<DimNames> {
        let names = self.dim_names()?;
        if keepdim {
            return Some(names);
        }
        let plan = self.reduction_plan(dims, keepdim).ok()?;
        drop_dims(Some(names), &plan.reduced)
    }

    /// Plans a reduction over `dims` (wrapped; empty = every dim; duplicates are an error).
    pub(crate) fn reduction_plan(&self, dims: &[i64], keepdim: bool) -> Result<Plan> {
        let n = self.ndim();
        let mut reduced = if dims.is_empty() {
            (0..n).collect()
        } else {
            wrap_dims(dims, n)?
        };
        if n == 0 {
            reduced.clear();
        }
        reduced.sort_unstable();
        let shape = self.shape();
        let kept: Vec<usize> = (0..n).filter(|d| !reduced.contains(d)).collect();
        let kept_shape: Vec<usize> = kept.iter().map(|&d| shape[d]).collect();
        let out_shape: Vec<usize> = if keepdim {
            (0..n)
                .map(|d| if reduced.contains(&d) { 1 } else { shape[d] })
                .collect()
        } else {
            kept_shape.clone()
        };
        let perm: Vec<usize> = kept.iter().chain(&reduced).copied().collect();
        let v = &self.view;
        let mut edge = View::new(
            perm.iter().map(|&d| v.shape[d]).collect::<Dims<_>>(),
            perm.iter().map(|&d| v.strides[d]).collect::<Dims<_>>(),
            v.offset,
        );
        let mut axes = reduced.len();
        if axes == 0 {
            // A 0-dim input: reduce over one size-1 axis.
            edge.shape.push(1);
            edge.strides.push(0);
            axes = 1;
        }
        let count = reduced.iter().map(|&d| shape[d]).product();
        Ok(Plan {
            reduced,
            kept_shape,
            out_shape,
            edge,
            axes,
            count,
        })
    }

    /// Records the reduction `op` of `plan` producing `dtype` (inputs are cast to `dtype`
    /// element by element before they are folded).
    #[track_caller]
    pub(crate) fn reduce_with(&self, plan: &Plan, op: ReduceOp, dtype: DType) -> Result<Tensor> {
        let node = self.storage.current();
        let t = Tensor::computed(
            Op::Reduce {
                op,
                axes: plan.axes,
            },
            dtype,
            &plan.kept_shape,
            contiguous_strides(&plan.kept_shape),
            vec![(node, plan.edge.clone())],
        )?;
        Ok(t.with_view(View::new(
            plan.out_shape.clone(),
            contiguous_strides(&plan.out_shape),
            0,
        )))
    }

    /// Records an argmax/argmin library call of `plan` (int64 result).
    #[track_caller]
    fn arg_reduce_with(&self, plan: &Plan, max: bool) -> Result<Tensor> {
        let node = self.storage.current();
        let axes = plan.axes;
        let op = if max {
            LibraryOp::ArgMax { axes }
        } else {
            LibraryOp::ArgMin { axes }
        };
        let t = Tensor::computed(
            Op::Library(op),
            DType::I64,
            &plan.kept_shape,
            contiguous_strides(&plan.kept_shape),
            vec![(node, plan.edge.clone())],
        )?;
        Ok(t.with_view(View::new(
            plan.out_shape.clone(),
            contiguous_strides(&plan.out_shape),
            0,
        )))
    }

    /// Rejects a max-like reduction with nothing to reduce (no identity exists).
    fn check_nonempty(&self, plan: &Plan, name: &str, dim_given: bool) -> Result<()> {
        if plan.count > 0 {
            return Ok(());
        }
        if !dim_given {
            return Err(Error::shape(format!(
                "{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument (input shape {}).",
                fmt_list(self.shape())
            )));
        }
        let d = plan
            .reduced
            .iter()
            .find(|&&d| self.shape()[d] == 0)
            .copied()
            .unwrap_or(0);
        Err(Error::shape(format!(
            "{name}(): Expected reduction dim {d} to have non-zero size (input shape {}).",
            fmt_list(self.shape())
        )))
    }

    // ---- sum, prod ---------------------------------------------------------------------------

    /// `torch.sum(self, dim, keepdim, dtype=dtype)`: the sum over `dim` (an empty list reduces
    /// every dim). Bool and integer inputs sum to int64 unless `dtype` is given (the input is cast
    /// to `dtype` first); an empty reduction is 0. Reduced dims lose their names unless `keepdim`.
    /// Errors: an `index` error for a dim out of range, a `value` error for a repeated dim, a
    /// `names` error for an unknown dim name or names mixed with positions.
    #[track_caller]
    pub fn try_sum(
        &self,
        dim: impl IntoDims,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let dim = self.resolve_dims("sum", &dim.into_dims())?;
        let plan = self.reduction_plan(&dim, keepdim)?;
        let dtype = dtype.unwrap_or_else(|| widened_int(self.dtype()));
        let names = self.reduced_names(&dim, keepdim);
        Ok(self
            .reduce_with(&plan, ReduceOp::Sum, dtype)?
            .with_dim_names(names))
    }

    /// `torch.sum(self, dim, keepdim, dtype=dtype)`; panics where [`Tensor::try_sum`] returns an
    /// error. Short forms: [`Tensor::sum_all`], [`Tensor::sum_dim`], [`Tensor::sum_keepdim`].
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::new([[1, 2], [3, 4]]);
    /// assert_eq!(x.sum(&[0], false, None).to_vec::<i64>(), [4, 6]);
    /// assert_eq!(x.sum(&[], false, Some(DType::F32)).to_vec::<f32>(), [10.0]);
    /// ```
    #[track_caller]
    pub fn sum(&self, dim: impl IntoDims, keepdim: bool, dtype: Option<DType>) -> Tensor {
        ok(self.try_sum(dim, keepdim, dtype))
    }

    /// `torch.prod(self, dim, keepdim, dtype=dtype)`: the product over one dim, or every element
    /// for `dim = None`. Bool and integer inputs multiply in int64 unless `dtype` is given; an
    /// empty reduction is 1. Errors: an `index` error for a dim out of range, a `names` error for
    /// an unknown dim name.
    #[track_caller]
    pub fn try_prod(
        &self,
        dim: Option<impl Into<Dim>>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let dims: Vec<i64> = match dim {
            Some(d) => vec![d.into().resolve(self)?],
            None => vec![],
        };
        let plan = self.reduction_plan(&dims, keepdim)?;
        let dtype = dtype.unwrap_or_else(|| widened_int(self.dtype()));
        let names = self.reduced_names(&dims, keepdim);
        Ok(self
            .reduce_with(&plan, ReduceOp::Prod, dtype)?
            .with_dim_names(names))
    }

    /// `torch.prod(self, dim, keepdim, dtype=dtype)`; panics where [`Tensor::try_prod`] returns an
    /// error. (Without a dim, name the dim type: `prod(None::<i64>, false, None)`.)
    #[track_caller]
    pub fn prod(&self, dim: Option<impl Into<Dim>>, keepdim: bool, dtype: Option<DType>) -> Tensor {
        ok(self.try_prod(dim, keepdim, dtype))
    }

    // ---- amax, amin, max, min ----------------------------------------------------------------

    #[track_caller]
    fn extreme(&self, name: &str, op: ReduceOp, dim: &[i64], keepdim: bool) -> Result<Tensor> {
        refuse_named(name, [self])?;
        if self.numel() == 0 && self.ndim() > 0 {
            // PyTorch walks an empty input's dims in the order given, each wrapped (`index`) and
            // then checked for size 0 (`shape`), before it looks for a repeated dim.
            for &d in dim {
                if self.shape()[wrap_dim(d, self.ndim())?] == 0 {
                    return Err(Error::shape(format!(
                        "{name}(): Expected reduction dim {d} to have non-zero size (input shape {}).",
                        fmt_list(self.shape())
                    )));
                }
            }
        }
        let plan = self.reduction_plan(dim, keepdim)?;
        self.check_nonempty(&plan, name, true)?;
        self.reduce_with(&plan, op, self.dtype())
    }

    /// `torch.amax(self, dim, keepdim)`: the largest value over `dim` (an empty list reduces every
    /// dim), in the input's dtype; NaN propagates. Errors: a `shape` error for an empty reduced dim
    /// (there is no identity), an `index` error for a dim out of range, a `value` error for a
    /// repeated dim, a `names` error for a named tensor.
    #[track_caller]
    pub fn try_amax(&self, dim: &[i64], keepdim: bool) -> Result<Tensor> {
        self.extreme("amax", ReduceOp::Max, dim, keepdim)
    }

    /// `torch.amax(self, dim, keepdim)`; panics where [`Tensor::try_amax`] returns an error. Short
    /// forms: [`Tensor::amax_dim`], [`Tensor::amax_keepdim`].
    #[track_caller]
    pub fn amax(&self, dim: &[i64], keepdim: bool) -> Tensor {
        ok(self.try_amax(dim, keepdim))
    }

    /// `torch.amin(self, dim, keepdim)`: the smallest value over `dim`, as [`Tensor::try_amax`]
    /// (its errors too).
    #[track_caller]
    pub fn try_amin(&self, dim: &[i64], keepdim: bool) -> Result<Tensor> {
        self.extreme("amin", ReduceOp::Min, dim, keepdim)
    }

    /// `torch.amin(self, dim, keepdim)`; panics where [`Tensor::try_amin`] returns an error. Short
    /// forms: [`Tensor::amin_dim`], [`Tensor::amin_keepdim`].
    #[track_caller]
    pub fn amin(&self, dim: &[i64], keepdim: bool) -> Tensor {
        ok(self.try_amin(dim, keepdim))
    }

    #[track_caller]
    fn extreme_all(&self, name: &str, op: ReduceOp) -> Result<Tensor> {
        let plan = self.reduction_plan(&[], false)?;
        self.check_nonempty(&plan, name, false)?;
        self.reduce_with(&plan, op, self.dtype())
    }

    /// `torch.max(self)`: the largest element as a 0-dim tensor (NaN if any). Errors: a `shape`
    /// error for an empty tensor.
    #[track_caller]
    pub fn try_max(&self) -> Result<Tensor> {
        self.extreme_all("max", ReduceOp::Max)
    }

    /// `torch.max(self)`; panics where [`Tensor::try_max`] returns an error.
    #[track_caller]
    pub fn max(&self) -> Tensor {
        ok(self.try_max())
    }

    /// `torch.min(self)`: the smallest element as a 0-dim tensor (NaN if any). Errors: a `shape`
    /// error for an empty tensor.
    #[track_caller]
    pub fn try_min(&self) -> Result<Tensor> {
        self.extreme_all("min", ReduceOp::Min)
    }

    /// `torch.min(self)`; panics where [`Tensor::try_min`] returns an error.
    #[track_caller]
    pub fn min(&self) -> Tensor {
        ok(self.try_min())
    }

    /// Values and indices along one dim: two nodes reading the same input, a `Reduce` for
    /// the values and an arg-reduce library call for the int64 indices. Both treat NaN as the
    /// extreme, so the index is that of the first NaN whenever the value is NaN.
    #[track_caller]
    fn extreme_dim(
        &self,
        name: &str,
        max: bool,
        dim: Dim,
        keepdim: bool,
    ) -> Result<(Tensor, Tensor)> {
        let dim = dim.resolve(self)?;
        let plan = self.reduction_plan(&[dim], keepdim)?;
        self.check_nonempty(&plan, name, true)?;
        let op = if max { ReduceOp::Max } else { ReduceOp::Min };
        let names = self.reduced_names(&[dim], keepdim);
        Ok((
            self.reduce_with(&plan, op, self.dtype())?
                .with_dim_names(names.clone()),
            self.arg_reduce_with(&plan, max)?.with_dim_names(names),
        ))
    }

    /// `torch.max(self, dim, keepdim)`: `(values, indices)` along one dim (a position or a name);
    /// the index of the first occurrence on ties, of the first NaN when there is one. Errors: a
    /// `shape` error for an empty dim, an `index` error for a dim out of range, a `names` error for
    /// an unknown dim name.
    #[track_caller]
    pub fn try_max_dim(&self, dim: impl Into<Dim>, keepdim: bool) -> Result<(Tensor, Tensor)> {
        self.extreme_dim("max", true, dim.into(), keepdim)
    }

    /// `torch.max(self, dim, keepdim)`; panics where [`Tensor::try_max_dim`] returns an error.
    /// Short form: [`Tensor::max_keepdim`].
    #[track_caller]
    pub fn max_dim(&self, dim: impl Into<Dim>, keepdim: bool) -> (Tensor, Tensor) {
        ok(self.try_max_dim(dim, keepdim))
    }

    /// `torch.min(self, dim, keepdim)`: `(values, indices)` along one dim, as
    /// [`Tensor::try_max_dim`] (its errors too).
    #[track_caller]
    pub fn try_min_dim(&self, dim: impl Into<Dim>, keepdim: bool) -> Result<(Tensor, Tensor)> {
        self.extreme_dim("min", false, dim.into(), keepdim)
    }

    /// `torch.min(self, dim, keepdim)`; panics where [`Tensor::try_min_dim`] returns an error.
    /// Short form: [`Tensor::min_keepdim`].
    #[track_caller]
    pub fn min_dim(&self, dim: impl Into<Dim>, keepdim: bool) -> (Tensor, Tensor) {
        ok(self.try_min_dim(dim, keepdim))
    }

    // ---- argmax, argmin ----------------------------------------------------------------------

    #[track_caller]
    fn arg_extreme(
        &self,
        name: &str,
        max: bool,
        dim: Option<i64>,
        keepdim: bool,
    ) -> Result<Tensor> {
        refuse_named(name, [self])?;
        if self.dtype().is_bool() {
            return Err(Error::dtype(format!(
                "{name}(): does not support bool input (\"{name}_cpu\" not implemented for 'Bool')"
            )));
        }
        let dims: Vec<i64> = dim.into_iter().collect();
        let plan = self.reduction_plan(&dims, keepdim)?;
        self.check_nonempty(&plan, name, dim.is_some())?;
        self.arg_reduce_with(&plan, max)
    }

    /// `torch.argmax(self, dim, keepdim)`: int64 indices of the largest value along `dim`; without
    /// `dim`, the index into the row-major flattening. First occurrence on ties; NaN counts as the
    /// largest value. Errors: a `dtype` error for bool input, a `shape` error for an empty
    /// reduction, an `index` error for a dim out of range, a `names` error for a named tensor.
    #[track_caller]
    pub fn try_argmax(&self, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
        self.arg_extreme("argmax", true, dim, keepdim)
    }

    /// `torch.argmax(self, dim, keepdim)`; panics where [`Tensor::try_argmax`] returns an error.
    #[track_caller]
    pub fn argmax(&self, dim: Option<i64>, keepdim: bool) -> Tensor {
        ok(self.try_argmax(dim, keepdim))
    }

    /// `torch.argmin(self, dim, keepdim)`: as [`Tensor::try_argmax`], for the smallest value (NaN
    /// still wins), with its errors.
    #[track_caller]
    pub fn try_argmin(&self, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
        self.arg_extreme("argmin", false, dim, keepdim)
    }

    /// `torch.argmin(self, dim, keepdim)`; panics where [`Tensor::try_argmin`] returns an error.
    #[track_caller]
    pub fn argmin(&self, dim: Option<i64>, keepdim: bool) -> Tensor {
        ok(self.try_argmin(dim, keepdim))
    }

    // ---- all, any, count_nonzero -------------------------------------------------------------

    /// all/any: a dim name is refused (no Dimname overload); with dims, a named self is
    /// refused; without, the result is 0-dim (unnamed).
    #[track_caller]
    fn logical_reduce(
        &self,
        name: &str,
        op: ReduceOp,
        dim: &[Dim],
        keepdim: bool,
    ) -> Result<Tensor> {
        let dim = index_only(name, dim)?;
        if !dim.is_empty() {
            refuse_named(&format!("{name}.dim"), [self])?;
        }
        let plan = self.reduction_plan(&dim, keepdim)?;
        let dtype = if self.dtype() == DType::U8 {
            DType::U8
        } else {
            DType::Bool
        };
        self.reduce_with(&plan, op, dtype)
    }

    /// `torch.all(self, dim, keepdim)`: true where every element over `dim` is nonzero (an empty
    /// list reduces every dim); bool (uint8 for uint8 input); an empty reduction is true. Errors: a
    /// `names` error for a dim name (no Dimname overload) or a named tensor with dims, an `index`
    /// error for a dim out of range, a `value` error for a repeated dim.
    #[track_caller]
    pub fn try_all(&self, dim: impl IntoDims, keepdim: bool) -> Result<Tensor> {
        self.logical_reduce("all", ReduceOp::All, &dim.into_dims(), keepdim)
    }

    /// `torch.all(self, dim, keepdim)`; panics where [`Tensor::try_all`] returns an error.
    #[track_caller]
    pub fn all(&self, dim: impl IntoDims, keepdim: bool) -> Tensor {
        ok(self.try_all(dim, keepdim))
    }

    /// `torch.all(self, dim=dims, keepdim)` with the dims taken literally: a non-empty list as
    /// [`Tensor::try_all`], an empty one (`dim=()`) reduces no dim, giving `self != 0` (bool; uint8
    /// for uint8 input) laid out row-major. Errors: as [`Tensor::try_all`].
    #[track_caller]
    pub fn try_all_dims(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        if dims.is_empty() {
            return self.nonzero_mask();
        }
        self.try_all(dims, keepdim)
    }

    /// `torch.all(self, dim=dims, keepdim)` with the dims taken literally; panics where
    /// [`Tensor::try_all_dims`] returns an error.
    #[track_caller]
    pub fn all_dims(&self, dims: &[i64], keepdim: bool) -> Tensor {
        ok(self.try_all_dims(dims, keepdim))
    }

    /// `torch.any(self, dim=dims, keepdim)` with the dims taken literally; panics where
    /// [`Tensor::try_any_dims`] returns an error.
    #[track_caller]
    pub fn any_dims(&self, dims: &[i64], keepdim: bool) -> Tensor {
        ok(self.try_any_dims(dims, keepdim))
    }

    /// `torch.any(self, dim=dims, keepdim)` with the dims taken literally, as
    /// [`Tensor::try_all_dims`].
    #[track_caller]
    pub fn try_any_dims(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        if dims.is_empty() {
            return self.nonzero_mask();
        }
        self.try_any(dims, keepdim)
    }

    /// `all`/`any` over no dim: each element tested alone, in a fresh row-major tensor.
    #[track_caller]
    fn nonzero_mask(&self) -> Result<Tensor> {
        let mut m = self.try_binary(Scalar::Int(0), BinaryOp::Ne)?;
        if self.dtype() == DType::U8 {
            m = m.try_to_dtype(DType::U8, false)?;
        }
        let shape = self.shape().to_vec();
        Ok(m.relayout(&shape, contiguous_strides(&shape)))
    }

    /// `torch.any(self, dim, keepdim)`: true where some element over `dim` is nonzero; bool (uint8
    /// for uint8 input); an empty reduction is false. Errors: as [`Tensor::try_all`].
    #[track_caller]
    pub fn try_any(&self, dim: impl IntoDims, keepdim: bool) -> Result<Tensor> {
        self.logical_reduce("any", ReduceOp::Any, &dim.into_dims(), keepdim)
    }

    /// `torch.any(self, dim, keepdim)`; panics where [`Tensor::try_any`] returns an error.
    #[track_caller]
    pub fn any(&self, dim: impl IntoDims, keepdim: bool) -> Tensor {
        ok(self.try_any(dim, keepdim))
    }

    /// `torch.count_nonzero(self, dim)`: int64 count of the elements `!= 0` over `dim` (NaN counts;
    /// an empty list counts every element). Errors: an `index` error for a dim out of range, a
    /// `value` error for a repeated dim, a `names` error for a named tensor.
    #[track_caller]
    pub fn try_count_nonzero(&self, dim: &[i64]) -> Result<Tensor> {
        refuse_named("count_nonzero", [self])?;
        // Validate the dims against self before building the mask.
        self.reduction_plan(dim, false)?;
        let mask = self.try_binary(Scalar::Int(0), BinaryOp::Ne)?;
        mask.try_sum(dim, false, Some(DType::I64))
    }

    /// `torch.count_nonzero(self, dim)`; panics where [`Tensor::try_count_nonzero`] returns an
    /// error.
    #[track_caller]
    pub fn count_nonzero(&self, dim: &[i64]) -> Tensor {
        ok(self.try_count_nonzero(dim))
    }
}

/// The dtype sum/prod/cumsum/cumprod produce without an explicit `dtype`: bool and ints
/// widen to int64, floats stay.
pub(crate) fn widened_int(dtype: DType) -> DType {
    if dtype.is_float() { dtype } else { DType::I64 }
}
