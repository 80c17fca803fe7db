//! Data in and out: tensors over host memory that was not copied (`host.rs`: `from_static`,
//! `from_arc`, `data_ptr`; `Tensor::from_vec` adopts its vector), numpy's `.npy` and `.npz`
//! files (`npy.rs`, `npz.rs`), safetensors files read through a memory map
//! (`safetensors.rs`), and `ndarray` arrays behind the `ndarray` feature (`ndarray.rs`).
//!
//! What copies, and why (on the host; a default device other than the host gets a copy of
//! whatever is made here):
//!
//! | way in or out | copies |
//! |---|---|
//! | `from_vec`, `from_ndarray` (non-negative strides) | nothing: the tensor owns the vector's allocation and writes it in place |
//! | `from_static`, `from_arc` | nothing until a write: an in-place op copies the elements first (copy on write) |
//! | `load_safetensors` | nothing at load: the file is mapped and each tensor's pages are read when a kernel first reads them. A tensor whose bytes are not a valid `[T]` where they lie (bool, misaligned, a big-endian host) is copied when first read. An in-place op copies first: the file is never written |
//! | `load_npy`, `load_npz` | the file is read once, straight into the tensor's own vector (a Fortran-order array becomes a transposed view of it) |
//! | `save_*`, `to_npy_bytes` | a contiguous (or, for npy, Fortran-contiguous) tensor is written from its buffer; any other view is made contiguous first |
//! | `as_ndarray` | nothing: a view of the realized host buffer with the tensor's strides |
//! | `into_ndarray` | nothing when the tensor holds the only handle on an adopted vector, else one copy |
//!
//! Errors are `ErrorKind::Io` (a file that cannot be read or written, or breaks its format),
//! `DType` (a dtype the format or smelt lacks) or `Shape`, and name the op, the file (and the
//! member or key), the dtype and shape involved and the rule broken.

mod host;
#[cfg(feature = "ndarray")]
mod ndarray;
mod npy;
mod npz;
mod safetensors;

#[cfg(feature = "ndarray")]
pub use self::ndarray::NdArrayView;

use crate::tensor::Tensor;
use smelt_ir::{Error, ErrorKind, Result};
use smelt_runtime::HostBuffer;
use std::fmt::Display;
use std::sync::Arc;

/// An `Io` error saying `message`.
fn io_error(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Io, message)
}

/// An `Io` error for a failed read or write of the operating system: `{context}: {e}`.
fn os_error(context: impl Display, e: std::io::Error) -> Error {
    io_error(format!("{context}: {e}"))
}

/// The elements of a tensor as one dense run of bytes on the host.
struct DenseBytes {
    buffer: Arc<HostBuffer>,
    /// Byte range of the run in `buffer`.
    start: usize,
    len: usize,
    /// The run is in Fortran order (the tensor is a transposed contiguous view).
    fortran: bool,
}

impl DenseBytes {
    fn bytes(&self) -> &[u8] {
        &self.buffer.as_bytes()[self.start..self.start + self.len]
    }
}

/// `t`'s elements as one dense run on the host, in row-major order, or in Fortran order when
/// `fortran_ok` and `t` is Fortran-contiguous; any other view is made contiguous first (a
/// copy kernel). Realizes `t`; a device tensor's run is copied to the host.
fn dense_bytes(t: &Tensor, fortran_ok: bool) -> Result<DenseBytes> {
    let view = &t.view;
    let reversed = || {
        let shape: Vec<usize> = view.shape.iter().rev().copied().collect();
        let strides: Vec<isize> = view.strides.iter().rev().copied().collect();
        smelt_ir::View::new(shape, strides, view.offset).is_contiguous()
    };
    let (t, fortran) = if view.is_contiguous() {
        (t.clone(), false)
    } else if fortran_ok && reversed() {
        (t.clone(), true)
    } else {
        (
            t.try_contiguous_format(smelt_ir::MemoryFormat::Contiguous)?,
            false,
        )
    };
    let numel = t.numel();
    let size = t.dtype().size();
    let buffer = t.realized_buffer()?;
    let lo = t.view.offset;
    let (buffer, base) = if numel == 0 {
        (Arc::new(HostBuffer::zeros(t.dtype(), 0)), lo)
    } else {
        buffer.to_host_window(lo, numel)?
    };
    Ok(DenseBytes {
        buffer,
        start: (lo - base) * size,
        len: numel * size,
        fortran,
    })
}
