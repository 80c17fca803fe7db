//! Composite reductions built from primitives (STYLE rule 1): mean, var, std, logsumexp,
//! softmax and log_softmax are recorded as `Reduce` and elementwise nodes. float16/bfloat16
//! inputs of var/std/logsumexp/softmax compute in float32 and round once at the end, as
//! PyTorch's CPU kernels accumulate in float32.

use crate::default_dtype::get_default_dtype;
use crate::names::Dim;
use crate::promote::Operand;
use crate::reduce::IntoDims;
use crate::tensor::{Tensor, ok};
use smelt_ir::view::{contiguous_strides, fmt_list, wrap_dim};
use smelt_ir::{BinaryOp, DType, Error, MemoryFormat, ReduceOp, Result, Scalar, UnaryOp};

impl Tensor {
    /// `torch.mean(self, dim, keepdim, dtype=dtype)`: `sum / count` over `dim` (an empty list
    /// reduces every dim) in a floating dtype, `dtype` or else the input's; an empty reduction is
    /// NaN. Errors: a `dtype` error for bool or integer input without a floating `dtype`, an
    /// `index` error for a dim out of range, a `value` error for a repeated dim, a `names` error
    /// for an unknown dim name or names mixed with positions.
    #[track_caller]
    pub fn try_mean(
        &self,
        dim: impl IntoDims,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let dim = self.resolve_dims("mean", &dim.into_dims())?;
        let r = self.drop_names().mean_at(&dim, keepdim, dtype)?;
        Ok(r.with_dim_names(self.reduced_names(&dim, keepdim)))
    }

    #[track_caller]
    fn mean_at(&self, dim: &[i64], keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
        let out = dtype.unwrap_or(self.dtype());
        if !out.is_float() {
            let what = if dtype.is_some() {
                "Optional dtype"
            } else {
                "Input dtype"
            };
            return Err(Error::dtype(format!(
                "mean(): could not infer output dtype. {what} must be either a floating point or complex dtype. Got: {}",
                out.torch_name()
            )));
        }
        let plan = self.reduction_plan(dim, keepdim)?;
        let sum = self.reduce_with(&plan, ReduceOp::Sum, out)?;
        // PyTorch divides the sum in place, so the mean keeps the sum's row-major strides (an
        // elementwise op on an empty result would order its dims otherwise).
        Ok(sum
            .try_binary(Scalar::Float(plan.count as f64), BinaryOp::Div)?
            .row_major())
    }

    /// `torch.mean(self, dim, keepdim, dtype=dtype)`; panics where [`Tensor::try_mean`] returns an
    /// error. Short forms: [`Tensor::mean_all`], [`Tensor::mean_dim`], [`Tensor::mean_keepdim`].
    #[track_caller]
    pub fn mean(&self, dim: impl IntoDims, keepdim: bool, dtype: Option<DType>) -> Tensor {
        ok(self.try_mean(dim, keepdim, dtype))
    }

    /// `torch.var(self, dim, correction=correction, keepdim=keepdim)`: `Σ(x - mean)² / max(0, n -
    /// correction)` over `dim`, in two passes (the mean first, then the squared deviations);
    /// `correction = 1` is the sample variance. `n - correction <= 0` divides by zero (inf, or NaN
    /// when every deviation is 0). Errors: a `dtype` error for bool or integer input, an `index`
    /// error for a dim out of range, a `value` error for a repeated dim, a `names` error for an
    /// unknown dim name or names mixed with positions.
    #[track_caller]
    pub fn try_var(&self, dim: impl IntoDims, correction: f64, keepdim: bool) -> Result<Tensor> {
        let dim = self.resolve_dims("var", &dim.into_dims())?;
        let r = self.drop_names().var_at(&dim, correction, keepdim)?;
        Ok(r.with_dim_names(self.reduced_names(&dim, keepdim)))
    }

    #[track_caller]
    fn var_at(&self, dim: &[i64], correction: f64, keepdim: bool) -> Result<Tensor> {
        let dtype = self.dtype();
        if !dtype.is_float() {
            return Err(Error::dtype(format!(
                "std and var only support floating point and complex dtypes (var of {})",
                dtype.torch_name()
            )));
        }
        let x = self.try_to_dtype(dtype.compute_dtype(), false)?;
        let keep = x.reduction_plan(dim, true)?;
        let n = keep.count as f64;
        let mean = x
            .reduce_with(&keep, ReduceOp::Sum, x.dtype())?
            .try_binary(Scalar::Float(n), BinaryOp::Div)?;
        let dev = x.try_binary(&mean, BinaryOp::Sub)?;
        let sq = dev.try_binary(&dev, BinaryOp::Mul)?;
        let plan = sq.reduction_plan(dim, keepdim)?;
        let ss = sq.reduce_with(&plan, ReduceOp::Sum, sq.dtype())?;
        let divisor = (n - correction).max(0.0);
        Ok(ss
            .try_binary(Scalar::Float(divisor), BinaryOp::Div)?
            .try_to_dtype(dtype, false)?
            .row_major())
    }

    /// `torch.var(self, dim, correction=correction, keepdim=keepdim)`; panics where
    /// [`Tensor::try_var`] returns an error. Short forms: [`Tensor::var_all`], [`Tensor::var_dim`],
    /// [`Tensor::var_keepdim`].
    #[track_caller]
    pub fn var(&self, dim: impl IntoDims, correction: f64, keepdim: bool) -> Tensor {
        ok(self.try_var(dim, correction, keepdim))
    }

    /// `torch.std(self, dim, correction=correction, keepdim=keepdim)`: `sqrt(var)`, as
    /// [`Tensor::try_var`] (its errors too).
    #[track_caller]
    pub fn try_std(&self, dim: impl IntoDims, correction: f64, keepdim: bool) -> Result<Tensor> {
        let dim = self.resolve_dims("std", &dim.into_dims())?;
        let r = self.drop_names().std_at(&dim, correction, keepdim)?;
        Ok(r.with_dim_names(self.reduced_names(&dim, keepdim)))
    }

    #[track_caller]
    fn std_at(&self, dim: &[i64], correction: f64, keepdim: bool) -> Result<Tensor> {
        let dtype = self.dtype();
        if !dtype.is_float() {
            return Err(Error::dtype(format!(
                "std and var only support floating point and complex dtypes (std of {})",
                dtype.torch_name()
            )));
        }
        let x = self.try_to_dtype(dtype.compute_dtype(), false)?;
        Ok(x.var_at(dim, correction, keepdim)?
            .try_unary(UnaryOp::Sqrt)?
            .try_to_dtype(dtype, false)?
            .row_major())
    }

    /// `torch.std(self, dim, correction=correction, keepdim=keepdim)`; panics where
    /// [`Tensor::try_std`] returns an error. Short forms: [`Tensor::std_all`], [`Tensor::std_dim`],
    /// [`Tensor::std_keepdim`].
    #[track_caller]
    pub fn std(&self, dim: impl IntoDims, correction: f64, keepdim: bool) -> Tensor {
        ok(self.try_std(dim, correction, keepdim))
    }

    /// `torch.logsumexp(self, dim, keepdim)`: `log(Σ exp(x - m)) + m` over `dim`, with `m =
    /// amax(x)` replaced by 0 where it is infinite (so all -inf gives -inf and +inf gives +inf, not
    /// NaN). Integer input computes in the default float dtype; an empty reduction gives -inf.
    /// Errors: an `index` error for a dim out of range, a `value` error for a repeated dim, a
    /// `names` error for an unknown dim name or names mixed with positions.
    #[track_caller]
    pub fn try_logsumexp(&self, dim: impl IntoDims, keepdim: bool) -> Result<Tensor> {
        let dim = self.resolve_dims("logsumexp", &dim.into_dims())?;
        let r = self.drop_names().logsumexp_at(&dim, keepdim)?;
        Ok(r.with_dim_names(self.reduced_names(&dim, keepdim)))
    }

    #[track_caller]
    fn logsumexp_at(&self, dim: &[i64], keepdim: bool) -> Result<Tensor> {
        let dtype = if self.dtype().is_float() {
            self.dtype()
        } else {
            get_default_dtype()
        };
        let x = self.try_to_dtype(dtype.compute_dtype(), false)?;
        let plan = x.reduction_plan(dim, keepdim)?;
        if plan.count == 0 {
            let e = x.try_unary(UnaryOp::Exp)?;
            let s = e.reduce_with(&e.reduction_plan(dim, keepdim)?, ReduceOp::Sum, e.dtype())?;
            return s.try_unary(UnaryOp::Log)?.try_to_dtype(dtype, false);
        }
        if dim.is_empty() && !keepdim && self.ndim() > 0 {
            // PyTorch 2.15's `logsumexp(dim=())` reduces every dim, then adds the kept-dim
            // maxima ([1, ..., 1]) in place into the 0-dim result, which refuses to broadcast.
            return Err(Error::shape(format!(
                "logsumexp: output with shape [] doesn't match the broadcast shape {}",
                fmt_list(&vec![1; self.ndim()])
            )));
        }
        let keep = x.reduction_plan(dim, true)?;
        let m = x.reduce_with(&keep, ReduceOp::Max, x.dtype())?;
        let m = Tensor::try_where(&m.try_unary(UnaryOp::IsInf)?, Scalar::Float(0.0), &m)?;
        let e = x.try_binary(&m, BinaryOp::Sub)?.try_unary(UnaryOp::Exp)?;
        let s = e.reduce_with(&e.reduction_plan(dim, keepdim)?, ReduceOp::Sum, e.dtype())?;
        let out_shape: Vec<i64> = plan.out_shape.iter().map(|&d| d as i64).collect();
        let m = m.try_reshape(&out_shape)?;
        s.try_unary(UnaryOp::Log)?
            .try_binary(&m, BinaryOp::Add)?
            .try_to_dtype(dtype, false)
    }

    /// `torch.logsumexp(self, dim, keepdim)`; panics where [`Tensor::try_logsumexp`] returns an
    /// error.
    #[track_caller]
    pub fn logsumexp(&self, dim: impl IntoDims, keepdim: bool) -> Tensor {
        ok(self.try_logsumexp(dim, keepdim))
    }

    /// The shared front of softmax/log_softmax: dtype checks, and `x - amax(x, dim)` in the
    /// compute dtype. `None` for an empty input (nothing to compute).
    #[track_caller]
    fn softmax_shift(
        &self,
        name: &str,
        dim: i64,
        dtype: Option<DType>,
    ) -> Result<(DType, Option<(Tensor, i64)>)> {
        let d = wrap_dim(dim, self.ndim())? as i64;
        let out = dtype.unwrap_or(self.dtype());
        // PyTorch returns an empty input's (empty) result before its kernel checks the dtype:
        // softmax of an empty int tensor is an empty int tensor.
        if self.numel() == 0 {
            return Ok((out, None));
        }
        if !out.is_float() {
            return Err(Error::dtype(format!(
                "{name}: expected a floating point input or dtype, got {} (\"{name}_lastdim_kernel_impl\" not implemented for '{}')",
                out.torch_name(),
                out.torch_name()
            )));
        }
        let x = self
            .try_to_dtype(out, false)?
            .try_to_dtype(out.compute_dtype(), false)?;
        let keep = x.reduction_plan(&[d], true)?;
        let m = x.reduce_with(&keep, ReduceOp::Max, x.dtype())?;
        Ok((out, Some((x.try_binary(&m, BinaryOp::Sub)?, d))))
    }

    /// A freshly computed reduction result laid out row-major, as PyTorch's reduction kernels
    /// allocate it (the composite's last elementwise step may have ordered an empty result's
    /// dims otherwise).
    fn row_major(self) -> Tensor {
        let shape = self.shape().to_vec();
        self.relayout(&shape, contiguous_strides(&shape))
    }

    /// Finishes a softmax-like result: cast to `dtype` and lay out contiguously (PyTorch's
    /// softmax output is row-major whatever the input's strides).
    #[track_caller]
    fn softmax_finish(&self, r: Tensor, dtype: DType) -> Result<Tensor> {
        let r = r.try_to_dtype(dtype, false)?;
        let shape = self.shape().to_vec();
        Ok(r.relayout(&shape, contiguous_strides(&shape)))
    }

    /// `torch.softmax(self, dim, dtype=dtype)`: `exp(x - max) · (1 / Σ exp(x - max))` along `dim`
    /// (a position or a name); the input is cast to `dtype` first. The result is contiguous.
    /// Errors: a `dtype` error for bool or integer input without a floating `dtype`, an `index`
    /// error for a dim out of range, a `names` error for an unknown dim name.
    #[track_caller]
    pub fn try_softmax(&self, dim: impl Into<Dim>, dtype: Option<DType>) -> Result<Tensor> {
        let dim = dim.into().resolve(self)?;
        let r = self.drop_names().softmax_at(dim, dtype)?;
        Ok(r.with_dim_names(self.dim_names()))
    }

    #[track_caller]
    fn softmax_at(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        let (out, shifted) = self.softmax_shift("softmax", dim, dtype)?;
        let Some((z, d)) = shifted else {
            return self.try_empty_like(Some(out), Some(MemoryFormat::Contiguous));
        };
        let e = z.try_unary(UnaryOp::Exp)?;
        let s = e.reduce_with(&e.reduction_plan(&[d], true)?, ReduceOp::Sum, e.dtype())?;
        // PyTorch's CPU kernel scales by the sum's reciprocal (`tmp_sum = 1 / tmp_sum`, then
        // a multiply per element in `_vec_softmax_lastdim`), not by a division per element.
        let inv = s.try_unary(UnaryOp::Reciprocal)?;
        self.softmax_finish(e.try_binary(&inv, BinaryOp::Mul)?, out)
    }

    /// `torch.softmax(self, dim, dtype=dtype)`; panics where [`Tensor::try_softmax`] returns an
    /// error. Short form: [`Tensor::softmax_dim`].
    #[track_caller]
    pub fn softmax(&self, dim: impl Into<Dim>, dtype: Option<DType>) -> Tensor {
        ok(self.try_softmax(dim, dtype))
    }

    /// `torch.log_softmax(self, dim, dtype=dtype)`: `(x - max) - log Σ exp(x - max)` along `dim`,
    /// as [`Tensor::try_softmax`] (its errors too).
    #[track_caller]
    pub fn try_log_softmax(&self, dim: impl Into<Dim>, dtype: Option<DType>) -> Result<Tensor> {
        let dim = dim.into().resolve(self)?;
        let r = self.drop_names().log_softmax_at(dim, dtype)?;
        Ok(r.with_dim_names(self.dim_names()))
    }

    #[track_caller]
    fn log_softmax_at(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        let (out, shifted) = self.softmax_shift("log_softmax", dim, dtype)?;
        let Some((z, d)) = shifted else {
            return self.try_empty_like(Some(out), Some(MemoryFormat::Contiguous));
        };
        let e = z.try_unary(UnaryOp::Exp)?;
        let s = e.reduce_with(&e.reduction_plan(&[d], true)?, ReduceOp::Sum, e.dtype())?;
        let r = z.try_binary(Operand::from(s.try_unary(UnaryOp::Log)?), BinaryOp::Sub)?;
        self.softmax_finish(r, out)
    }

    /// `torch.log_softmax(self, dim, dtype=dtype)`; panics where [`Tensor::try_log_softmax`]
    /// returns an error. Short form: [`Tensor::log_softmax_dim`].
    #[track_caller]
    pub fn log_softmax(&self, dim: impl Into<Dim>, dtype: Option<DType>) -> Tensor {
        ok(self.try_log_softmax(dim, dtype))
    }
}
