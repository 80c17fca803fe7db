//! Conversion between tensors and `ndarray` arrays (the `ndarray` feature), without a copy
//! where the layout allows: `from_ndarray` adopts an owned array's vector with its strides and
//! offset, `as_ndarray` views a realized host buffer with the tensor's strides, and
//! `into_ndarray` gives an adopted vector back when the tensor holds the only handle on it.
//! Negative strides (which PyTorch and smelt tensors never have) are copied into row-major order.

use crate::lazy::NodeState;
use crate::tensor::{Tensor, ok};
use ::ndarray::{Array, ArrayD, ArrayView, ArrayViewD, Dimension, IxDyn, ShapeBuilder};
use smelt_ir::{Error, Result, View};
use smelt_runtime::memory::Memory;
use smelt_runtime::{HostBuffer, HostElement};
use std::marker::PhantomData;
use std::sync::Arc;

/// A realized host tensor's elements, borrowed by [`NdArrayView::view`] as an `ndarray` view
/// with the tensor's shape and strides. Holding it keeps the buffer alive and unchanged (an
/// in-place op on the tensor meanwhile writes to a new buffer).
pub struct NdArrayView<T: HostElement> {
    buffer: Arc<HostBuffer>,
    view: View,
    _element: PhantomData<T>,
}

impl<T: HostElement> std::fmt::Debug for NdArrayView<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NdArrayView({} {})", T::DTYPE, self.view)
    }
}

impl<T: HostElement> NdArrayView<T> {
    /// The elements as an `ndarray` view: no copy.
    pub fn view(&self) -> ArrayViewD<'_, T> {
        let values = T::values(&self.buffer).expect("invariant: the dtype was checked");
        let shape = IxDyn(&self.view.shape);
        if self.view.numel() == 0 {
            return ArrayView::from_shape(shape, &[]).expect("invariant: an empty array fits");
        }
        let strides: Vec<usize> = self.view.strides.iter().map(|&s| s as usize).collect();
        // SAFETY: `as_ndarray` made this only for strides ≥ 0 whose addresses all lie in the
        // buffer (`View::fits_in`); the pointer is that of an element of the buffer, aligned
        // for `T`; the buffer is shared (an `Arc`) and never written while shared, and lives as
        // long as `self`, which the view borrows.
        unsafe {
            ArrayView::from_shape_ptr(
                shape.strides(IxDyn(&strides)),
                values.as_ptr().add(self.view.offset),
            )
        }
    }
}

impl Tensor {
    /// A tensor over an owned `ndarray` array, adopting its vector with its shape, strides and
    /// offset (no copy); an array with a negative stride is copied into row-major order.
    #[track_caller]
    pub fn from_ndarray<T: HostElement, D: Dimension>(array: Array<T, D>) -> Tensor {
        ok(Tensor::try_from_ndarray(array))
    }

    /// [`Tensor::from_ndarray`]; a `device` error when the default device is unusable.
    #[track_caller]
    pub fn try_from_ndarray<T: HostElement, D: Dimension>(array: Array<T, D>) -> Result<Tensor> {
        let shape = array.shape().to_vec();
        let strides = array.strides().to_vec();
        if strides.iter().any(|&s| s < 0) {
            return Tensor::try_from_ndarray_view(array.view());
        }
        let (values, offset) = array.into_raw_vec_and_offset();
        let view = View::new(shape.as_slice(), strides, offset.unwrap_or(0));
        if !view.fits_in(values.len()) {
            return Err(Error::shape(format!(
                "from_ndarray: an array of shape {} cannot view {} elements",
                smelt_ir::view::fmt_list(&shape),
                values.len()
            )));
        }
        Tensor::try_from_buffer(T::wrap(Memory::adopt(values)), view)
    }

    /// A contiguous tensor holding a copy of `array`'s elements (a borrowed array cannot be
    /// adopted).
    #[track_caller]
    pub fn from_ndarray_view<T: HostElement, D: Dimension>(array: ArrayView<'_, T, D>) -> Tensor {
        ok(Tensor::try_from_ndarray_view(array))
    }

    /// [`Tensor::from_ndarray_view`]; a `device` error when the default device is unusable.
    #[track_caller]
    pub fn try_from_ndarray_view<T: HostElement, D: Dimension>(
        array: ArrayView<'_, T, D>,
    ) -> Result<Tensor> {
        let shape = array.shape().to_vec();
        let values: Vec<T> = array.iter().copied().collect();
        Tensor::try_from_buffer(T::wrap(Memory::adopt(values)), View::contiguous(&shape))
    }

    /// The elements as an `ndarray` view with the tensor's shape and strides, without a copy
    /// (realizing the tensor first; a device tensor's storage is copied to the host).
    #[track_caller]
    pub fn as_ndarray<T: HostElement>(&self) -> NdArrayView<T> {
        ok(self.try_as_ndarray())
    }

    /// [`Tensor::as_ndarray`]; a `dtype` error when `T` is not the tensor's element type.
    pub fn try_as_ndarray<T: HostElement>(&self) -> Result<NdArrayView<T>> {
        check_dtype::<T>(self, "as_ndarray")?;
        let buffer = self.realized_buffer()?.to_host()?;
        let view = self.view.clone();
        if view.strides.iter().any(|&s| s < 0) {
            // Not for `ndarray` views: a contiguous copy instead.
            let c = self.try_contiguous_format(smelt_ir::MemoryFormat::Contiguous)?;
            return c.try_as_ndarray();
        }
        debug_assert!(
            view.fits_in(buffer.len()),
            "invariant: a view fits its storage"
        );
        Ok(NdArrayView {
            buffer,
            view,
            _element: PhantomData,
        })
    }

    /// A copy of the elements as an owned, row-major `ndarray` array.
    #[track_caller]
    pub fn to_ndarray<T: HostElement>(&self) -> ArrayD<T> {
        ok(self.try_to_ndarray())
    }

    /// [`Tensor::to_ndarray`]; a `dtype` error when `T` is not the tensor's element type.
    pub fn try_to_ndarray<T: HostElement>(&self) -> Result<ArrayD<T>> {
        Ok(self
            .try_as_ndarray::<T>()?
            .view()
            .as_standard_layout()
            .into_owned())
    }

    /// The elements as an owned `ndarray` array with the tensor's shape and strides: the
    /// adopted vector itself (no copy) when this handle is the only one on a realized host
    /// storage made from a vector (`from_vec`, `from_ndarray`, `load_npy` …) and its strides
    /// are an array's; else a copy, as [`Tensor::to_ndarray`].
    #[track_caller]
    pub fn into_ndarray<T: HostElement>(self) -> ArrayD<T> {
        ok(self.try_into_ndarray())
    }

    /// [`Tensor::into_ndarray`]; a `dtype` error when `T` is not the tensor's element type.
    pub fn try_into_ndarray<T: HostElement>(self) -> Result<ArrayD<T>> {
        check_dtype::<T>(&self, "into_ndarray")?;
        self.try_realize()?;
        let view = self.view.clone();
        let node = self.storage.current();
        drop(self);
        // Nothing but `node` reaches the storage's buffer now when this was its only handle
        // and no pending op reads it: take the buffer out.
        let buffer = if Arc::strong_count(&node) == 1 {
            match node.set_state(&mut crate::lazy::walks(), NodeState::Lost) {
                NodeState::Realized(b) => Some(b),
                NodeState::Pending(_) | NodeState::Lost => None,
            }
        } else {
            node.buffer()
        };
        let buffer =
            buffer.ok_or_else(|| Error::device("into_ndarray: the tensor has no buffer"))?;
        let host = buffer.to_host()?;
        drop(buffer);
        let owned = Arc::try_unwrap(host)
            .and_then(|b| T::unwrap(b).map_err(Arc::new))
            .and_then(|m| m.into_vec().map_err(|m| Arc::new(T::wrap(m))));
        let copy = |buffer: Arc<HostBuffer>| {
            let view = view.clone();
            NdArrayView::<T> {
                buffer,
                view,
                _element: PhantomData,
            }
            .view()
            .as_standard_layout()
            .into_owned()
        };
        match owned {
            Ok(values) if ndarray_can_own(&view) => {
                let strides: Vec<usize> = view.strides.iter().map(|&s| s as usize).collect();
                let shape = IxDyn(&view.shape).strides(IxDyn(&strides));
                Array::from_shape_vec(shape, values).map_err(|e| {
                    Error::shape(format!(
                        "into_ndarray: invariant: {view} is an array's ({e})"
                    ))
                })
            }
            Ok(values) => Ok(copy(Arc::new(T::wrap(Memory::adopt(values))))),
            Err(shared) => Ok(copy(shared)),
        }
    }
}

/// Whether an owned `ndarray` array can have `view`'s layout over a vector: offset 0, strides
/// ≥ 0, and no two indices at one address (`ndarray` refuses an owned array that repeats an
/// element, such as an expanded view's stride-0 dim).
fn ndarray_can_own(view: &View) -> bool {
    if view.offset != 0 || view.strides.iter().any(|&s| s < 0) {
        return false;
    }
    if view.numel() == 0 {
        return true;
    }
    let mut dims: Vec<(usize, usize)> = (view.shape.iter().copied())
        .zip(view.strides.iter().map(|&s| s as usize))
        .filter(|&(n, _)| n > 1)
        .collect();
    dims.sort_unstable_by_key(|&(_, s)| s);
    let mut reach = 0;
    for (n, s) in dims {
        if s <= reach {
            return false;
        }
        reach += (n - 1) * s;
    }
    true
}

/// A `dtype` error unless the tensor's elements are `T`.
fn check_dtype<T: HostElement>(t: &Tensor, op: &str) -> Result<()> {
    if t.dtype() != T::DTYPE {
        return Err(Error::dtype(format!(
            "{op}: the tensor is {}, not {}; convert it first with to_dtype",
            t.dtype(),
            T::DTYPE
        )));
    }
    Ok(())
}
