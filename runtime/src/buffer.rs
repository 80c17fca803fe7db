//! Buffers: [`HostBuffer`], one typed, pooled block of host memory per dtype ([`Memory`]),
//! read and written as [`Scalar`] by the interpreter; and [`Buffer`], a buffer on either side
//! (the host or a CUDA device), what lazy nodes keep and backends run on.

use crate::device::Device;
use crate::memory::Memory;
use half::{bf16, f16};
use smelt_ir::scalar::{to_bf16, to_f16};
use smelt_ir::{DType, Error, Result, Scalar};
use std::sync::Arc;

/// A flat host buffer of one dtype.
#[derive(Clone, Debug, PartialEq)]
pub enum HostBuffer {
    Bool(Memory<bool>),
    U8(Memory<u8>),
    I8(Memory<i8>),
    I16(Memory<i16>),
    I32(Memory<i32>),
    I64(Memory<i64>),
    F16(Memory<f16>),
    BF16(Memory<bf16>),
    F32(Memory<f32>),
    F64(Memory<f64>),
}

impl HostBuffer {
    /// A buffer of `len` zeros.
    pub fn zeros(dtype: DType, len: usize) -> HostBuffer {
        crate::stats::count_allocation(len * dtype.size());
        match dtype {
            DType::Bool => HostBuffer::Bool(Memory::zeroed(len)),
            DType::U8 => HostBuffer::U8(Memory::zeroed(len)),
            DType::I8 => HostBuffer::I8(Memory::zeroed(len)),
            DType::I16 => HostBuffer::I16(Memory::zeroed(len)),
            DType::I32 => HostBuffer::I32(Memory::zeroed(len)),
            DType::I64 => HostBuffer::I64(Memory::zeroed(len)),
            DType::F16 => HostBuffer::F16(Memory::zeroed(len)),
            DType::BF16 => HostBuffer::BF16(Memory::zeroed(len)),
            DType::F32 => HostBuffer::F32(Memory::zeroed(len)),
            DType::F64 => HostBuffer::F64(Memory::zeroed(len)),
        }
    }

    /// [`HostBuffer::zeros`], or a `memory` error naming the bytes when the system cannot
    /// allocate them (PyTorch's `DefaultCPUAllocator` message).
    pub fn try_zeros(dtype: DType, len: usize) -> Result<HostBuffer> {
        fn z<T: crate::memory::Element>(len: usize) -> Result<Memory<T>> {
            Memory::try_zeroed(len).map_err(|e| Error::memory(e.message()))
        }
        // Counted once made: a refused allocation allocated nothing.
        let buffer = match dtype {
            DType::Bool => HostBuffer::Bool(z(len)?),
            DType::U8 => HostBuffer::U8(z(len)?),
            DType::I8 => HostBuffer::I8(z(len)?),
            DType::I16 => HostBuffer::I16(z(len)?),
            DType::I32 => HostBuffer::I32(z(len)?),
            DType::I64 => HostBuffer::I64(z(len)?),
            DType::F16 => HostBuffer::F16(z(len)?),
            DType::BF16 => HostBuffer::BF16(z(len)?),
            DType::F32 => HostBuffer::F32(z(len)?),
            DType::F64 => HostBuffer::F64(z(len)?),
        };
        crate::stats::count_allocation(len * dtype.size());
        Ok(buffer)
    }

    /// [`HostBuffer::for_overwrite`], or a `memory` error when the system cannot allocate it.
    pub fn try_for_overwrite(dtype: DType, len: usize) -> Result<HostBuffer> {
        fn w<T: crate::memory::Element>(len: usize) -> Result<Memory<T>> {
            Memory::try_for_overwrite(len).map_err(|e| Error::memory(e.message()))
        }
        // Counted once made: a refused allocation allocated nothing.
        let buffer = match dtype {
            DType::Bool => HostBuffer::Bool(w(len)?),
            DType::U8 => HostBuffer::U8(w(len)?),
            DType::I8 => HostBuffer::I8(w(len)?),
            DType::I16 => HostBuffer::I16(w(len)?),
            DType::I32 => HostBuffer::I32(w(len)?),
            DType::I64 => HostBuffer::I64(w(len)?),
            DType::F16 => HostBuffer::F16(w(len)?),
            DType::BF16 => HostBuffer::BF16(w(len)?),
            DType::F32 => HostBuffer::F32(w(len)?),
            DType::F64 => HostBuffer::F64(w(len)?),
        };
        crate::stats::count_allocation(len * dtype.size());
        Ok(buffer)
    }

    /// A buffer of `len` elements whose values are unspecified (stale, but valid for the
    /// dtype): for a producer that writes every element, such as a kernel whose store covers
    /// its whole output. Usually a recycled block, so no page is faulted in or cleared.
    pub fn for_overwrite(dtype: DType, len: usize) -> HostBuffer {
        crate::stats::count_allocation(len * dtype.size());
        match dtype {
            DType::Bool => HostBuffer::Bool(Memory::for_overwrite(len)),
            DType::U8 => HostBuffer::U8(Memory::for_overwrite(len)),
            DType::I8 => HostBuffer::I8(Memory::for_overwrite(len)),
            DType::I16 => HostBuffer::I16(Memory::for_overwrite(len)),
            DType::I32 => HostBuffer::I32(Memory::for_overwrite(len)),
            DType::I64 => HostBuffer::I64(Memory::for_overwrite(len)),
            DType::F16 => HostBuffer::F16(Memory::for_overwrite(len)),
            DType::BF16 => HostBuffer::BF16(Memory::for_overwrite(len)),
            DType::F32 => HostBuffer::F32(Memory::for_overwrite(len)),
            DType::F64 => HostBuffer::F64(Memory::for_overwrite(len)),
        }
    }

    /// A buffer of `dtype` holding `values`, each cast to `dtype`.
    pub fn from_scalars(dtype: DType, values: &[Scalar]) -> HostBuffer {
        let mut b = HostBuffer::for_overwrite(dtype, values.len());
        for (i, v) in values.iter().enumerate() {
            b.set(i, *v);
        }
        b
    }

    pub fn dtype(&self) -> DType {
        match self {
            HostBuffer::Bool(_) => DType::Bool,
            HostBuffer::U8(_) => DType::U8,
            HostBuffer::I8(_) => DType::I8,
            HostBuffer::I16(_) => DType::I16,
            HostBuffer::I32(_) => DType::I32,
            HostBuffer::I64(_) => DType::I64,
            HostBuffer::F16(_) => DType::F16,
            HostBuffer::BF16(_) => DType::BF16,
            HostBuffer::F32(_) => DType::F32,
            HostBuffer::F64(_) => DType::F64,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            HostBuffer::Bool(v) => v.len(),
            HostBuffer::U8(v) => v.len(),
            HostBuffer::I8(v) => v.len(),
            HostBuffer::I16(v) => v.len(),
            HostBuffer::I32(v) => v.len(),
            HostBuffer::I64(v) => v.len(),
            HostBuffer::F16(v) => v.len(),
            HostBuffer::BF16(v) => v.len(),
            HostBuffer::F32(v) => v.len(),
            HostBuffer::F64(v) => v.len(),
        }
    }

    /// The address of element 0, for compiled kernels (bool is one byte, 0 or 1).
    pub fn as_ptr(&self) -> *const u8 {
        match self {
            HostBuffer::Bool(v) => v.as_ptr().cast(),
            HostBuffer::U8(v) => v.as_ptr(),
            HostBuffer::I8(v) => v.as_ptr().cast(),
            HostBuffer::I16(v) => v.as_ptr().cast(),
            HostBuffer::I32(v) => v.as_ptr().cast(),
            HostBuffer::I64(v) => v.as_ptr().cast(),
            HostBuffer::F16(v) => v.as_ptr().cast(),
            HostBuffer::BF16(v) => v.as_ptr().cast(),
            HostBuffer::F32(v) => v.as_ptr().cast(),
            HostBuffer::F64(v) => v.as_ptr().cast(),
        }
    }

    /// The address of element 0, writable.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        match self {
            HostBuffer::Bool(v) => v.as_mut_ptr().cast(),
            HostBuffer::U8(v) => v.as_mut_ptr(),
            HostBuffer::I8(v) => v.as_mut_ptr().cast(),
            HostBuffer::I16(v) => v.as_mut_ptr().cast(),
            HostBuffer::I32(v) => v.as_mut_ptr().cast(),
            HostBuffer::I64(v) => v.as_mut_ptr().cast(),
            HostBuffer::F16(v) => v.as_mut_ptr().cast(),
            HostBuffer::BF16(v) => v.as_mut_ptr().cast(),
            HostBuffer::F32(v) => v.as_mut_ptr().cast(),
            HostBuffer::F64(v) => v.as_mut_ptr().cast(),
        }
    }

    /// Size in bytes.
    pub fn nbytes(&self) -> usize {
        self.len() * self.dtype().size()
    }

    /// The elements' bytes as a device stores them: bool as one byte (0 or 1), f16/bf16 as
    /// their bits, every other type in native byte order.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: every element type is plain old data of `dtype().size()` bytes (bool is one
        // byte holding 0 or 1), so the block's `nbytes` bytes are initialised and readable for
        // as long as `self` is borrowed.
        unsafe { std::slice::from_raw_parts(self.as_ptr(), self.nbytes()) }
    }

    /// A buffer of `dtype` holding `bytes` (as [`HostBuffer::as_bytes`] lays them out); a
    /// nonzero byte of a bool buffer reads as true.
    pub fn from_bytes(dtype: DType, bytes: &[u8]) -> HostBuffer {
        assert_eq!(
            bytes.len() % dtype.size(),
            0,
            "invariant: whole elements of {dtype}"
        );
        if let DType::Bool = dtype {
            return HostBuffer::Bool(bytes.iter().map(|&b| b != 0).collect());
        }
        let mut b = HostBuffer::for_overwrite(dtype, bytes.len() / dtype.size());
        // SAFETY: `b` holds exactly `bytes.len()` bytes of a type for which every bit pattern
        // is a valid value (bool was handled above), and the two blocks do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), b.as_mut_ptr(), bytes.len()) };
        b
    }

    /// Element `i` as a scalar of the buffer's kind (bool, int or float).
    pub fn get(&self, i: usize) -> Scalar {
        match self {
            HostBuffer::Bool(v) => Scalar::Bool(v[i]),
            HostBuffer::U8(v) => Scalar::Int(v[i] as i64),
            HostBuffer::I8(v) => Scalar::Int(v[i] as i64),
            HostBuffer::I16(v) => Scalar::Int(v[i] as i64),
            HostBuffer::I32(v) => Scalar::Int(v[i] as i64),
            HostBuffer::I64(v) => Scalar::Int(v[i]),
            HostBuffer::F16(v) => Scalar::Float(v[i].to_f64()),
            HostBuffer::BF16(v) => Scalar::Float(v[i].to_f64()),
            HostBuffer::F32(v) => Scalar::Float(v[i] as f64),
            HostBuffer::F64(v) => Scalar::Float(v[i]),
        }
    }

    /// Writes element `i`, converting `x` as a cast to the buffer's dtype does.
    pub fn set(&mut self, i: usize, x: Scalar) {
        let x = x.cast(self.dtype());
        match self {
            HostBuffer::Bool(v) => v[i] = x.as_bool(),
            HostBuffer::U8(v) => v[i] = x.as_i64() as u8,
            HostBuffer::I8(v) => v[i] = x.as_i64() as i8,
            HostBuffer::I16(v) => v[i] = x.as_i64() as i16,
            HostBuffer::I32(v) => v[i] = x.as_i64() as i32,
            HostBuffer::I64(v) => v[i] = x.as_i64(),
            HostBuffer::F16(v) => v[i] = to_f16(x.as_f64()),
            HostBuffer::BF16(v) => v[i] = to_bf16(x.as_f64()),
            HostBuffer::F32(v) => v[i] = x.as_f64() as f32,
            HostBuffer::F64(v) => v[i] = x.as_f64(),
        }
    }
}

/// A buffer on the host or on a CUDA device: what a realised lazy node keeps and what a
/// backend's kernels read and write. Cloning shares the memory (it is reference counted); a
/// backend may take a buffer's memory for an in-place update when it holds the only handle.
#[derive(Clone, Debug)]
pub enum Buffer {
    /// Host memory.
    Host(Arc<HostBuffer>),
    /// Memory of a CUDA device.
    Cuda(Arc<crate::cuda::CudaBuffer>),
}

impl From<HostBuffer> for Buffer {
    fn from(b: HostBuffer) -> Buffer {
        Buffer::Host(Arc::new(b))
    }
}

impl Buffer {
    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            Buffer::Host(b) => b.dtype(),
            Buffer::Cuda(b) => b.dtype(),
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Buffer::Host(b) => b.len(),
            Buffer::Cuda(b) => b.len(),
        }
    }

    /// Where the memory is.
    pub fn device(&self) -> Device {
        match self {
            Buffer::Host(_) => Device::Cpu,
            Buffer::Cuda(b) => b.device(),
        }
    }

    /// The host buffer, when the memory is on the host.
    pub fn as_host(&self) -> Option<&Arc<HostBuffer>> {
        match self {
            Buffer::Host(b) => Some(b),
            Buffer::Cuda(_) => None,
        }
    }

    /// The host buffer of a buffer a host backend received: every buffer of a realisation
    /// lives where its target runs.
    pub(crate) fn into_host(self) -> Arc<HostBuffer> {
        match self {
            Buffer::Host(b) => b,
            Buffer::Cuda(b) => panic!(
                "invariant: a host backend reads host buffers only, got one on {}",
                b.device()
            ),
        }
    }

    /// The values on the host: the same memory for a host buffer, a copy from the device
    /// (waiting for the work queued before it) for a device buffer.
    pub fn to_host(&self) -> Result<Arc<HostBuffer>> {
        match self {
            Buffer::Host(b) => Ok(b.clone()),
            Buffer::Cuda(b) => crate::cuda::download(b).map(Arc::new),
        }
    }

    /// Elements `lo..lo + len` on the host, as a host buffer and the element of this buffer
    /// its element 0 is: the whole memory (base 0) for a host buffer, only that window copied
    /// from a device (reading one element of a large device tensor copies one element).
    pub fn to_host_window(&self, lo: usize, len: usize) -> Result<(Arc<HostBuffer>, usize)> {
        match self {
            Buffer::Host(b) => Ok((b.clone(), 0)),
            Buffer::Cuda(b) => crate::cuda::download_range(b, lo, len).map(|h| (Arc::new(h), lo)),
        }
    }

    /// The values on `device`: this buffer when they are there already, else a copy.
    pub fn to_device(&self, device: Device) -> Result<Buffer> {
        if self.device() == device {
            return Ok(self.clone());
        }
        match device {
            Device::Cpu => self.to_host().map(Buffer::Host),
            Device::Cuda(n) => crate::cuda::upload_to(n, self),
        }
    }
}
