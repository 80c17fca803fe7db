//! The default floating dtype (`torch.set_default_dtype`). It is per thread, so tests running
//! in parallel cannot disturb each other; [`with_default_dtype`] scopes a change.

use smelt_ir::{DType, Error, Result};
use std::cell::Cell;

thread_local! {
    static DEFAULT_DTYPE: Cell<DType> = const { Cell::new(DType::F32) };
}

/// The current thread's default floating dtype (float32 unless changed).
pub fn get_default_dtype() -> DType {
    DEFAULT_DTYPE.with(|d| d.get())
}

/// The current thread's default complex dtype, which follows the default dtype: complex128
/// when it is float64, else complex64 (what complex scalars and complex data make).
pub fn get_default_complex_dtype() -> DType {
    smelt_ir::scalar::default_complex(get_default_dtype())
}

/// Sets the current thread's default floating dtype: what float scalars, integer inputs of
/// float ops (`exp`, `div` …) and factories without a dtype use. Errors: a `dtype` error for a
/// dtype that is not floating.
pub fn try_set_default_dtype(dtype: DType) -> Result<()> {
    if !dtype.is_float() {
        return Err(Error::dtype(format!(
            "only floating-point types are supported as the default type, got {dtype}"
        )));
    }
    DEFAULT_DTYPE.with(|d| d.set(dtype));
    Ok(())
}

/// `torch.set_default_dtype(dtype)` for the current thread; panics where
/// [`try_set_default_dtype`] returns an error (a dtype that is not floating).
#[track_caller]
pub fn set_default_dtype(dtype: DType) {
    crate::tensor::ok(try_set_default_dtype(dtype))
}

/// Runs `f` with `dtype` as the current thread's default dtype, restoring the previous one
/// afterwards (also when `f` panics). Panics for a dtype that is not floating.
///
/// ```
/// # use smelt_frontend as smelt;
/// use smelt::prelude::*;
/// let x = with_default_dtype(DType::F64, || Tensor::new([1, 2]).exp());
/// assert_eq!(x.dtype(), DType::F64);
/// assert_eq!(get_default_dtype(), DType::F32);
/// ```
pub fn with_default_dtype<R>(dtype: DType, f: impl FnOnce() -> R) -> R {
    struct Restore(DType);
    impl Drop for Restore {
        fn drop(&mut self) {
            DEFAULT_DTYPE.with(|d| d.set(self.0));
        }
    }
    let _restore = Restore(get_default_dtype());
    crate::tensor::ok(try_set_default_dtype(dtype));
    f()
}

/// `torch.set_default_tensor_type(t)` (deprecated in PyTorch for `set_default_dtype` and
/// `set_default_device`): `"torch.FloatTensor"`, `"torch.DoubleTensor"`, `"torch.HalfTensor"`
/// or `"torch.BFloat16Tensor"` set this thread's default dtype; a `"torch.cuda."` type sets the
/// default device to `cuda:0` as well. Errors: a `dtype` error for an integer or bool tensor
/// type (PyTorch's "only floating-point types are supported as the default type"), a `value`
/// error for a name that is not a tensor type.
pub fn try_set_default_tensor_type(t: &str) -> Result<()> {
    let (cuda, name) = match t.strip_prefix("torch.cuda.") {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix("torch.").unwrap_or(t)),
    };
    let dtype = match name {
        "FloatTensor" => DType::F32,
        "DoubleTensor" => DType::F64,
        "HalfTensor" => DType::F16,
        "BFloat16Tensor" => DType::BF16,
        "ByteTensor" | "CharTensor" | "ShortTensor" | "IntTensor" | "LongTensor" | "BoolTensor" => {
            return Err(Error::dtype(format!(
                "set_default_tensor_type: only floating-point types are supported as the \
                 default type, got {t}"
            )));
        }
        _ => {
            return Err(Error::value(format!(
                "set_default_tensor_type: invalid type: '{t}'"
            )));
        }
    };
    try_set_default_dtype(dtype)?;
    if cuda {
        crate::device::set_default_device(smelt_runtime::Device::Cuda(0));
    }
    Ok(())
}

/// [`try_set_default_tensor_type`]; panics where it returns an error.
#[track_caller]
pub fn set_default_tensor_type(t: &str) {
    crate::tensor::ok(try_set_default_tensor_type(t))
}
