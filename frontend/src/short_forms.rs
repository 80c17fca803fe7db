//! Short forms: the common calls of ops whose full form spells out PyTorch's keyword
//! arguments, with those arguments at PyTorch's defaults and no `Option` to write.
//!
//! The full form keeps PyTorch's name and takes its arguments in PyTorch's order, keyword
//! arguments included (`sum(dim, keepdim, dtype)`, `zeros(shape, dtype)`); a keyword whose
//! PyTorch default is `None` is an `Option`. A short form is the full form's name with a suffix
//! saying what it fixes, every other keyword at its default:
//!
//! | suffix | meaning | PyTorch | smelt |
//! |---|---|---|---|
//! | `_all()` | over every dim | `x.sum()` | `x.sum_all()` |
//! | `_dim(dim)` | over `dim`, `keepdim=False` | `x.sum(1)`, `x.softmax(-1)` | `x.sum_dim(1)`, `x.softmax_dim(-1)` |
//! | `_keepdim(dim)` | over `dim`, `keepdim=True` | `x.mean(-1, keepdim=True)` | `x.mean_keepdim(-1)` |
//! | `_dtype(…, dtype)` | a factory's dtype, given | `torch.zeros(2, 3, dtype=torch.int64)` | `Tensor::zeros_dtype(&[2, 3], DType::I64)` |
//!
//! Reductions with short forms: `sum`, `mean`, `var`, `std` (`_all`, `_dim`, `_keepdim`;
//! var/std with `correction=1`), `amax`, `amin` (`_dim`, `_keepdim`), `max`, `min`
//! (`_keepdim`, values and indices; `max_dim(dim, keepdim)` is the full form), `softmax`,
//! `log_softmax` (`_dim`). Factories: `zeros`, `ones`, `full`, `arange` (`_dtype`). Each has
//! a `try_` form returning the full form's error.

use crate::reduce::{IntoDims, index_only};
use crate::tensor::{Tensor, ok};
use smelt_ir::{DType, Result, Scalar};

/// Generates a short form and its `try_` form from the `try_` full form it calls: the doc
/// lines given document the short form, whose `try_` form points back to it.
macro_rules! short_forms {
    ($(
        $(#[doc = $doc:expr])*
        $name:ident, $try_name:ident($($arg:ident: $ty:ty),*) -> $out:ty
            = $full:ident($($call:expr),*);
    )*) => {
        impl Tensor {
            $(
                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = concat!(
                    "Panics with the message of [`Tensor::", stringify!($try_name), "`]'s error."
                )]
                #[track_caller]
                pub fn $name(&self, $($arg: $ty),*) -> $out {
                    ok(self.$try_name($($arg),*))
                }

                #[doc = concat!(
                    "[`Tensor::", stringify!($name), "`], returning the error of [`Tensor::",
                    stringify!($full), "`] (an `index` error for a dim out of range, a `dtype` ",
                    "error for a dtype the op refuses …) instead of panicking."
                )]
                #[track_caller]
                pub fn $try_name(&self, $($arg: $ty),*) -> Result<$out> {
                    self.$full($($call),*)
                }
            )*
        }
    };
}

short_forms! {
    /// `x.sum()`: the sum of every element as a 0-dim tensor; bool and integer inputs sum to
    /// int64. [`Tensor::sum`] over every dim, `keepdim=False`, `dtype=None`.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::new([[1, 2], [3, 4]]);
    /// assert_eq!(x.sum_all().to_vec::<i64>(), [10]);
    /// assert_eq!(x.sum_dim(1).to_vec::<i64>(), [3, 7]);
    /// assert_eq!(x.sum_keepdim(1).shape(), &[2, 1]);
    /// ```
    sum_all, try_sum_all() -> Tensor = try_sum(&[], false, None);
    /// `x.sum(dim)`: [`Tensor::sum`] over `dim` (a position, a name, or a list of either),
    /// `keepdim=False`, `dtype=None`.
    sum_dim, try_sum_dim(dim: impl IntoDims) -> Tensor = try_sum(dim, false, None);
    /// `x.sum(dim, keepdim=True)`: [`Tensor::sum`] over `dim`, the reduced dims kept with
    /// size 1, `dtype=None`.
    sum_keepdim, try_sum_keepdim(dim: impl IntoDims) -> Tensor = try_sum(dim, true, None);

    /// `x.mean()`: the mean of every element as a 0-dim tensor (floating inputs only).
    /// [`Tensor::mean`] over every dim, `keepdim=False`, `dtype=None`.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::new([[1.0f32, 2.0], [3.0, 5.0]]);
    /// assert_eq!(x.mean_all().to_vec::<f32>(), [2.75]);
    /// assert_eq!(x.mean_dim(1).to_vec::<f32>(), [1.5, 4.0]);
    /// assert_eq!(x.mean_keepdim(0).to_vec::<f32>(), [2.0, 3.5]);
    /// assert_eq!(x.mean_keepdim(0).shape(), &[1, 2]);
    /// ```
    mean_all, try_mean_all() -> Tensor = try_mean(&[], false, None);
    /// `x.mean(dim)`: [`Tensor::mean`] over `dim`, `keepdim=False`, `dtype=None`.
    mean_dim, try_mean_dim(dim: impl IntoDims) -> Tensor = try_mean(dim, false, None);
    /// `x.mean(dim, keepdim=True)`: [`Tensor::mean`] over `dim`, reduced dims kept with size 1.
    mean_keepdim, try_mean_keepdim(dim: impl IntoDims) -> Tensor = try_mean(dim, true, None);

    /// `x.var()`: the sample variance of every element (`correction=1`), a 0-dim tensor
    /// (floating inputs only). [`Tensor::var`] over every dim.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::new([[1.0f32, 3.0], [2.0, 6.0]]);
    /// assert_eq!(x.var_dim(1).to_vec::<f32>(), [2.0, 8.0]);
    /// assert_eq!(x.std_keepdim(1).to_vec::<f32>(), [2f32.sqrt(), 8f32.sqrt()]);
    /// assert_eq!(x.var_all().to_vec::<f32>(), [14.0 / 3.0]);
    /// ```
    var_all, try_var_all() -> Tensor = try_var(&[], 1.0, false);
    /// `x.var(dim)`: [`Tensor::var`] over `dim`, `correction=1`, `keepdim=False`.
    var_dim, try_var_dim(dim: impl IntoDims) -> Tensor = try_var(dim, 1.0, false);
    /// `x.var(dim, keepdim=True)`: [`Tensor::var`] over `dim`, `correction=1`, reduced dims
    /// kept with size 1.
    var_keepdim, try_var_keepdim(dim: impl IntoDims) -> Tensor = try_var(dim, 1.0, true);
    /// `x.std()`: the sample standard deviation of every element (`correction=1`), a 0-dim
    /// tensor. [`Tensor::std`] over every dim.
    std_all, try_std_all() -> Tensor = try_std(&[], 1.0, false);
    /// `x.std(dim)`: [`Tensor::std`] over `dim`, `correction=1`, `keepdim=False`.
    std_dim, try_std_dim(dim: impl IntoDims) -> Tensor = try_std(dim, 1.0, false);
    /// `x.std(dim, keepdim=True)`: [`Tensor::std`] over `dim`, `correction=1`, reduced dims
    /// kept with size 1.
    std_keepdim, try_std_keepdim(dim: impl IntoDims) -> Tensor = try_std(dim, 1.0, true);

    /// `x.amax(dim)`: the largest value over `dim` (positions only), `keepdim=False`;
    /// [`Tensor::amax`].
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::new([[1, 5], [7, 2]]);
    /// assert_eq!(x.amax_dim(1).to_vec::<i64>(), [5, 7]);
    /// assert_eq!(x.amin_keepdim(0).to_vec::<i64>(), [1, 2]);
    /// assert_eq!(x.amin_keepdim(0).shape(), &[1, 2]);
    /// ```
    amax_dim, try_amax_dim(dim: impl IntoDims) -> Tensor
        = try_amax(&index_only("amax", &dim.into_dims())?, false);
    /// `x.amax(dim, keepdim=True)`: [`Tensor::amax`] over `dim` (positions only), reduced dims
    /// kept with size 1.
    amax_keepdim, try_amax_keepdim(dim: impl IntoDims) -> Tensor
        = try_amax(&index_only("amax", &dim.into_dims())?, true);
    /// `x.amin(dim)`: the smallest value over `dim` (positions only), `keepdim=False`;
    /// [`Tensor::amin`].
    amin_dim, try_amin_dim(dim: impl IntoDims) -> Tensor
        = try_amin(&index_only("amin", &dim.into_dims())?, false);
    /// `x.amin(dim, keepdim=True)`: [`Tensor::amin`] over `dim` (positions only), reduced dims
    /// kept with size 1.
    amin_keepdim, try_amin_keepdim(dim: impl IntoDims) -> Tensor
        = try_amin(&index_only("amin", &dim.into_dims())?, true);

    /// `x.max(dim, keepdim=True)`: `(values, indices)` along one dim, kept with size 1;
    /// [`Tensor::max_dim`].
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::new([[1.0f32, 5.0], [7.0, 2.0]]);
    /// let (values, indices) = x.max_keepdim(1);
    /// assert_eq!(values.to_vec::<f32>(), [5.0, 7.0]);
    /// assert_eq!(indices.to_vec::<i64>(), [1, 0]);
    /// assert_eq!(indices.shape(), &[2, 1]);
    /// ```
    max_keepdim, try_max_keepdim(dim: impl Into<crate::Dim>) -> (Tensor, Tensor)
        = try_max_dim(dim, true);
    /// `x.min(dim, keepdim=True)`: `(values, indices)` along one dim, kept with size 1;
    /// [`Tensor::min_dim`].
    min_keepdim, try_min_keepdim(dim: impl Into<crate::Dim>) -> (Tensor, Tensor)
        = try_min_dim(dim, true);

    /// `x.softmax(dim)`: [`Tensor::softmax`] along `dim` in the input's dtype (`dtype=None`).
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::new([[0.0f32, 0.0], [1.0, 1.0]]);
    /// assert_eq!(x.softmax_dim(-1).to_vec::<f32>(), [0.5; 4]);
    /// let log = x.log_softmax_dim(-1).to_vec::<f32>();
    /// assert!(log.iter().all(|v| (v + 2f32.ln()).abs() < 1e-6));
    /// ```
    softmax_dim, try_softmax_dim(dim: impl Into<crate::Dim>) -> Tensor = try_softmax(dim, None);
    /// `x.log_softmax(dim)`: [`Tensor::log_softmax`] along `dim` in the input's dtype.
    log_softmax_dim, try_log_softmax_dim(dim: impl Into<crate::Dim>) -> Tensor
        = try_log_softmax(dim, None);
}

impl Tensor {
    /// `torch.zeros(size, dtype=dtype)`: [`Tensor::zeros`] with the dtype given.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let z = Tensor::zeros_dtype(&[2, 3], DType::I64);
    /// assert_eq!((z.dtype(), z.to_vec::<i64>()), (DType::I64, vec![0; 6]));
    /// let o = Tensor::ones_dtype(&[2], DType::Bool);
    /// assert_eq!(o.to_vec::<bool>(), [true, true]);
    /// let f = Tensor::full_dtype(&[2], 7, DType::F32);
    /// assert_eq!((f.dtype(), f.to_vec::<f32>()), (DType::F32, vec![7.0, 7.0]));
    /// let r = Tensor::arange_dtype(0, 6, 2, DType::F32);
    /// assert_eq!(r.to_vec::<f32>(), [0.0, 2.0, 4.0]);
    /// ```
    ///
    /// Panics with the message of [`Tensor::try_zeros_dtype`]'s error.
    #[track_caller]
    pub fn zeros_dtype(shape: &[i64], dtype: DType) -> Tensor {
        ok(Tensor::try_zeros_dtype(shape, dtype))
    }

    /// [`Tensor::zeros_dtype`], returning the error of [`Tensor::try_zeros`] (a `value` error
    /// for a negative size) instead of panicking.
    #[track_caller]
    pub fn try_zeros_dtype(shape: &[i64], dtype: DType) -> Result<Tensor> {
        Tensor::try_zeros(shape, Some(dtype))
    }

    /// `torch.ones(size, dtype=dtype)`: [`Tensor::ones`] with the dtype given.
    ///
    /// Panics with the message of [`Tensor::try_ones_dtype`]'s error.
    #[track_caller]
    pub fn ones_dtype(shape: &[i64], dtype: DType) -> Tensor {
        ok(Tensor::try_ones_dtype(shape, dtype))
    }

    /// [`Tensor::ones_dtype`], returning the error of [`Tensor::try_ones`] (a `value` error
    /// for a negative size) instead of panicking.
    #[track_caller]
    pub fn try_ones_dtype(shape: &[i64], dtype: DType) -> Result<Tensor> {
        Tensor::try_ones(shape, Some(dtype))
    }

    /// `torch.full(size, fill_value, dtype=dtype)`: [`Tensor::full`] with the dtype given
    /// (the value is cast to it).
    ///
    /// Panics with the message of [`Tensor::try_full_dtype`]'s error.
    #[track_caller]
    pub fn full_dtype(shape: &[i64], value: impl Into<Scalar>, dtype: DType) -> Tensor {
        ok(Tensor::try_full_dtype(shape, value, dtype))
    }

    /// [`Tensor::full_dtype`], returning the error of [`Tensor::try_full`] (a `value` error
    /// for a negative size) instead of panicking.
    #[track_caller]
    pub fn try_full_dtype(shape: &[i64], value: impl Into<Scalar>, dtype: DType) -> Result<Tensor> {
        Tensor::try_full(shape, value, Some(dtype))
    }

    /// `torch.arange(start, end, step, dtype=dtype)`: [`Tensor::arange`] with the dtype given.
    ///
    /// Panics with the message of [`Tensor::try_arange_dtype`]'s error.
    #[track_caller]
    pub fn arange_dtype(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        step: impl Into<Scalar>,
        dtype: DType,
    ) -> Tensor {
        ok(Tensor::try_arange_dtype(start, end, step, dtype))
    }

    /// [`Tensor::arange_dtype`], returning the error of [`Tensor::try_arange`] (a `value`
    /// error for a zero step, a non-finite bound, or a step whose sign points away from
    /// `end`) instead of panicking.
    #[track_caller]
    pub fn try_arange_dtype(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        step: impl Into<Scalar>,
        dtype: DType,
    ) -> Result<Tensor> {
        Tensor::try_arange(start, end, step, Some(dtype))
    }
}

#[cfg(test)]
mod tests {
    use crate::{DType, Dim, ErrorKind, Tensor};

    fn values(t: &Tensor) -> (Vec<usize>, Vec<f64>) {
        (t.shape().to_vec(), t.to_vec::<f64>())
    }

    #[test]
    fn each_short_form_is_its_full_form_at_pytorchs_defaults() {
        let x = Tensor::new([[1.0f32, 4.0, 2.0], [8.0, 3.0, 5.0]]);
        let pairs = [
            (x.sum_all(), x.sum(&[], false, None)),
            (x.sum_dim(1), x.sum(&[1], false, None)),
            (x.sum_keepdim(-1), x.sum(&[-1], true, None)),
            (x.sum_dim(&[0, 1]), x.sum(&[0, 1], false, None)),
            (x.mean_all(), x.mean(&[], false, None)),
            (x.mean_dim(0), x.mean(&[0], false, None)),
            (x.mean_keepdim(1), x.mean(&[1], true, None)),
            (x.var_all(), x.var(&[], 1.0, false)),
            (x.var_dim(1), x.var(&[1], 1.0, false)),
            (x.var_keepdim(0), x.var(&[0], 1.0, true)),
            (x.std_all(), x.std(&[], 1.0, false)),
            (x.std_dim(1), x.std(&[1], 1.0, false)),
            (x.std_keepdim(0), x.std(&[0], 1.0, true)),
            (x.amax_dim(1), x.amax(&[1], false)),
            (x.amax_keepdim(0), x.amax(&[0], true)),
            (x.amin_dim(&[0, 1]), x.amin(&[0, 1], false)),
            (x.amin_keepdim(1), x.amin(&[1], true)),
            (x.max_keepdim(1).0, x.max_dim(1, true).0),
            (x.max_keepdim(1).1, x.max_dim(1, true).1),
            (x.min_keepdim(0).0, x.min_dim(0, true).0),
            (x.min_keepdim(0).1, x.min_dim(0, true).1),
            (x.softmax_dim(1), x.softmax(1, None)),
            (x.log_softmax_dim(0), x.log_softmax(0, None)),
        ];
        for (i, (short, full)) in pairs.iter().enumerate() {
            assert_eq!(short.dtype(), full.dtype(), "pair {i}");
            assert_eq!(values(short), values(full), "pair {i}");
        }
        assert_eq!(x.sum_dim(1).to_vec::<f32>(), [7.0, 16.0]);
        assert_eq!(x.mean_keepdim(1).shape(), &[2, 1]);
        assert_eq!(x.max_keepdim(1).1.to_vec::<i64>(), [1, 0]);
    }

    #[test]
    fn short_forms_take_names_where_the_full_form_does() {
        let x = Tensor::new([[1.0f32, 2.0], [3.0, 4.0]]).named(&[Some("N"), Some("C")]);
        assert_eq!(x.sum_dim("C").to_vec::<f32>(), [3.0, 7.0]);
        assert_eq!(x.sum_dim("C").names(), [Some("N".to_string())]);
        assert_eq!(x.mean_keepdim(Dim::from("N")).to_vec::<f32>(), [2.0, 3.0]);
        // amax has no Dimname overload: a name is a `names` error, as for `all`/`any`.
        let plain = Tensor::new([[1.0f32, 2.0]]);
        assert_eq!(
            plain.try_amax_dim("C").map(|_| ()).map_err(|e| e.kind),
            Err(ErrorKind::Names)
        );
    }

    #[test]
    fn short_forms_report_the_full_forms_errors() {
        let i = Tensor::new([1, 2, 3]);
        assert_eq!(
            i.try_mean_all().map(|_| ()).map_err(|e| e.kind),
            Err(ErrorKind::DType)
        );
        assert_eq!(
            i.try_sum_dim(3).map(|_| ()).map_err(|e| e.kind),
            Err(ErrorKind::Index)
        );
        assert_eq!(
            Tensor::try_zeros_dtype(&[-1], DType::F32)
                .map(|_| ())
                .map_err(|e| e.kind),
            Err(ErrorKind::Value)
        );
        assert_eq!(
            Tensor::try_arange_dtype(0, 3, 0, DType::I64)
                .map(|_| ())
                .map_err(|e| e.kind),
            Err(ErrorKind::Value)
        );
    }

    #[test]
    fn factories_with_a_dtype_match_the_full_forms() {
        for dtype in [DType::F32, DType::I64, DType::Bool, DType::F16] {
            let z = Tensor::zeros_dtype(&[2, 3], dtype);
            assert_eq!(z.dtype(), dtype);
            assert_eq!(values(&z), values(&Tensor::zeros(&[2, 3], Some(dtype))));
            let o = Tensor::ones_dtype(&[4], dtype);
            assert_eq!(values(&o), values(&Tensor::ones(&[4], Some(dtype))));
            let f = Tensor::full_dtype(&[3], 1, dtype);
            assert_eq!(values(&f), values(&Tensor::full(&[3], 1, Some(dtype))));
        }
        let r = Tensor::arange_dtype(1, 7, 2, DType::F64);
        assert_eq!(r.dtype(), DType::F64);
        assert_eq!(r.to_vec::<f64>(), [1.0, 3.0, 5.0]);
    }
}
