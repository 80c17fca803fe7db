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
