//! Tensors over host elements that are not copied: shared (`from_static`, `from_arc`, read-only
//! until a write copies them), and `data_ptr`, the address a tensor's first element has.

use crate::tensor::{Tensor, ok};
use smelt_ir::{Error, Result, View};
use smelt_runtime::memory::Memory;
use smelt_runtime::{Buffer, HostElement};
use std::sync::Arc;

/// Checks that `len` elements fill `shape` exactly.
fn check_numel(op: &str, len: usize, shape: &[usize]) -> Result<()> {
    let numel = shape.iter().try_fold(1usize, |n, &s| n.checked_mul(s));
    if numel != Some(len) {
        return Err(Error::shape(format!(
            "{op}: {len} elements cannot have shape {}",
            smelt_ir::view::fmt_list(shape)
        )));
    }
    Ok(())
}

impl Tensor {
    /// A tensor of `shape` over `values`, which live as long as the program, without a copy on
    /// the host (the borrowed form of [`Tensor::from_vec`]). The elements are read-only: an
    /// in-place op on the tensor first copies them.
    #[track_caller]
    pub fn from_static<T: HostElement>(values: &'static [T], shape: &[usize]) -> Tensor {
        ok(Tensor::try_from_static(values, shape))
    }

    /// [`Tensor::from_static`]; a `shape` error when the elements do not fill `shape`.
    #[track_caller]
    pub fn try_from_static<T: HostElement>(
        values: &'static [T],
        shape: &[usize],
    ) -> Result<Tensor> {
        check_numel("from_static", values.len(), shape)?;
        Tensor::try_from_buffer(
            T::wrap(Memory::from_static(values)),
            View::contiguous(shape),
        )
    }

    /// A tensor of `shape` sharing `values` without a copy on the host. The elements are
    /// read-only: an in-place op on the tensor first copies them.
    #[track_caller]
    pub fn from_arc<T: HostElement>(values: Arc<[T]>, shape: &[usize]) -> Tensor {
        ok(Tensor::try_from_arc(values, shape))
    }

    /// [`Tensor::from_arc`]; a `shape` error when the elements do not fill `shape`.
    #[track_caller]
    pub fn try_from_arc<T: HostElement>(values: Arc<[T]>, shape: &[usize]) -> Result<Tensor> {
        check_numel("from_arc", values.len(), shape)?;
        Tensor::try_from_buffer(T::wrap(Memory::from_arc(values)), View::contiguous(shape))
    }

    /// PyTorch's `data_ptr()`: the address of the tensor's first element (element
    /// `storage_offset()` of its storage), realizing the tensor first. Host tensors only.
    #[track_caller]
    pub fn data_ptr(&self) -> usize {
        ok(self.try_data_ptr())
    }

    /// [`Tensor::data_ptr`]; a `device` error for a tensor on a device.
    pub fn try_data_ptr(&self) -> Result<usize> {
        match self.realized_buffer()? {
            Buffer::Host(b) => {
                let offset = self.view.offset * self.dtype().size();
                Ok(b.as_ptr() as usize + offset)
            }
            Buffer::Cuda(_) => Err(Error::device(format!(
                "data_ptr: the tensor lives on {}; smelt gives the addresses of host tensors only",
                self.device()
            ))),
        }
    }
}
