//! Host buffers: one typed, pooled block of memory per dtype ([`Memory`]), read and written as
//! [`Scalar`] by the interpreter.

use crate::memory::Memory;
use half::{bf16, f16};
use smelt_ir::scalar::{to_bf16, to_f16};
use smelt_ir::{DType, Scalar};

/// A flat host buffer of one dtype.
#[derive(Clone, Debug, PartialEq)]
pub enum Buffer {
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

impl Buffer {
    /// A buffer of `len` zeros.
    pub fn zeros(dtype: DType, len: usize) -> Buffer {
        crate::stats::count_allocation(len * dtype.size());
        match dtype {
            DType::Bool => Buffer::Bool(Memory::zeroed(len)),
            DType::U8 => Buffer::U8(Memory::zeroed(len)),
            DType::I8 => Buffer::I8(Memory::zeroed(len)),
            DType::I16 => Buffer::I16(Memory::zeroed(len)),
            DType::I32 => Buffer::I32(Memory::zeroed(len)),
            DType::I64 => Buffer::I64(Memory::zeroed(len)),
            DType::F16 => Buffer::F16(Memory::zeroed(len)),
            DType::BF16 => Buffer::BF16(Memory::zeroed(len)),
            DType::F32 => Buffer::F32(Memory::zeroed(len)),
            DType::F64 => Buffer::F64(Memory::zeroed(len)),
        }
    }

    /// A buffer of `len` elements whose values are unspecified (stale, but valid for the
    /// dtype): for a producer that writes every element, such as a kernel whose store covers
    /// its whole output. Usually a recycled block, so no page is faulted in or cleared.
    pub fn for_overwrite(dtype: DType, len: usize) -> Buffer {
        crate::stats::count_allocation(len * dtype.size());
        match dtype {
            DType::Bool => Buffer::Bool(Memory::for_overwrite(len)),
            DType::U8 => Buffer::U8(Memory::for_overwrite(len)),
            DType::I8 => Buffer::I8(Memory::for_overwrite(len)),
            DType::I16 => Buffer::I16(Memory::for_overwrite(len)),
            DType::I32 => Buffer::I32(Memory::for_overwrite(len)),
            DType::I64 => Buffer::I64(Memory::for_overwrite(len)),
            DType::F16 => Buffer::F16(Memory::for_overwrite(len)),
            DType::BF16 => Buffer::BF16(Memory::for_overwrite(len)),
            DType::F32 => Buffer::F32(Memory::for_overwrite(len)),
            DType::F64 => Buffer::F64(Memory::for_overwrite(len)),
        }
    }

    /// A buffer of `dtype` holding `values`, each cast to `dtype`.
    pub fn from_scalars(dtype: DType, values: &[Scalar]) -> Buffer {
        let mut b = Buffer::for_overwrite(dtype, values.len());
        for (i, v) in values.iter().enumerate() {
            b.set(i, *v);
        }
        b
    }

    pub fn dtype(&self) -> DType {
        match self {
            Buffer::Bool(_) => DType::Bool,
            Buffer::U8(_) => DType::U8,
            Buffer::I8(_) => DType::I8,
            Buffer::I16(_) => DType::I16,
            Buffer::I32(_) => DType::I32,
            Buffer::I64(_) => DType::I64,
            Buffer::F16(_) => DType::F16,
            Buffer::BF16(_) => DType::BF16,
            Buffer::F32(_) => DType::F32,
            Buffer::F64(_) => DType::F64,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Buffer::Bool(v) => v.len(),
            Buffer::U8(v) => v.len(),
            Buffer::I8(v) => v.len(),
            Buffer::I16(v) => v.len(),
            Buffer::I32(v) => v.len(),
            Buffer::I64(v) => v.len(),
            Buffer::F16(v) => v.len(),
            Buffer::BF16(v) => v.len(),
            Buffer::F32(v) => v.len(),
            Buffer::F64(v) => v.len(),
        }
    }

    /// The address of element 0, for compiled kernels (bool is one byte, 0 or 1).
    pub fn as_ptr(&self) -> *const u8 {
        match self {
            Buffer::Bool(v) => v.as_ptr().cast(),
            Buffer::U8(v) => v.as_ptr(),
            Buffer::I8(v) => v.as_ptr().cast(),
            Buffer::I16(v) => v.as_ptr().cast(),
            Buffer::I32(v) => v.as_ptr().cast(),
            Buffer::I64(v) => v.as_ptr().cast(),
            Buffer::F16(v) => v.as_ptr().cast(),
            Buffer::BF16(v) => v.as_ptr().cast(),
            Buffer::F32(v) => v.as_ptr().cast(),
            Buffer::F64(v) => v.as_ptr().cast(),
        }
    }

    /// The address of element 0, writable.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        match self {
            Buffer::Bool(v) => v.as_mut_ptr().cast(),
            Buffer::U8(v) => v.as_mut_ptr(),
            Buffer::I8(v) => v.as_mut_ptr().cast(),
            Buffer::I16(v) => v.as_mut_ptr().cast(),
            Buffer::I32(v) => v.as_mut_ptr().cast(),
            Buffer::I64(v) => v.as_mut_ptr().cast(),
            Buffer::F16(v) => v.as_mut_ptr().cast(),
            Buffer::BF16(v) => v.as_mut_ptr().cast(),
            Buffer::F32(v) => v.as_mut_ptr().cast(),
            Buffer::F64(v) => v.as_mut_ptr().cast(),
        }
    }

    /// Size in bytes.
    pub fn nbytes(&self) -> usize {
        self.len() * self.dtype().size()
    }

    /// Element `i` as a scalar of the buffer's kind (bool, int or float).
    pub fn get(&self, i: usize) -> Scalar {
        match self {
            Buffer::Bool(v) => Scalar::Bool(v[i]),
            Buffer::U8(v) => Scalar::Int(v[i] as i64),
            Buffer::I8(v) => Scalar::Int(v[i] as i64),
            Buffer::I16(v) => Scalar::Int(v[i] as i64),
            Buffer::I32(v) => Scalar::Int(v[i] as i64),
            Buffer::I64(v) => Scalar::Int(v[i]),
            Buffer::F16(v) => Scalar::Float(v[i].to_f64()),
            Buffer::BF16(v) => Scalar::Float(v[i].to_f64()),
            Buffer::F32(v) => Scalar::Float(v[i] as f64),
            Buffer::F64(v) => Scalar::Float(v[i]),
        }
    }

    /// Writes element `i`, converting `x` as a cast to the buffer's dtype does.
    pub fn set(&mut self, i: usize, x: Scalar) {
        let x = x.cast(self.dtype());
        match self {
            Buffer::Bool(v) => v[i] = x.as_bool(),
            Buffer::U8(v) => v[i] = x.as_i64() as u8,
            Buffer::I8(v) => v[i] = x.as_i64() as i8,
            Buffer::I16(v) => v[i] = x.as_i64() as i16,
            Buffer::I32(v) => v[i] = x.as_i64() as i32,
            Buffer::I64(v) => v[i] = x.as_i64(),
            Buffer::F16(v) => v[i] = to_f16(x.as_f64()),
            Buffer::BF16(v) => v[i] = to_bf16(x.as_f64()),
            Buffer::F32(v) => v[i] = x.as_f64() as f32,
            Buffer::F64(v) => v[i] = x.as_f64(),
        }
    }
}
