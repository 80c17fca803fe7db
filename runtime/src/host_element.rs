//! [`HostElement`]: the element types of [`HostBuffer`]'s variants, so that typed memory (an
//! adopted vector, shared elements, a mapped file's bytes) becomes a buffer and back without a
//! copy; and [`HostBuffer::from_le_bytes`], a buffer over bytes someone else owns.

use crate::buffer::HostBuffer;
use crate::memory::{Element, Memory};
use half::{bf16, f16};
use smelt_ir::DType;
use std::ptr::NonNull;
use std::sync::Arc;

/// An element type with its own [`HostBuffer`] variant (`bool`, `u8`, `i8`, `i16`, `i32`,
/// `i64`, `f16`, `bf16`, `f32`, `f64`).
pub trait HostElement: Element {
    /// The buffer holding `memory`.
    fn wrap(memory: Memory<Self>) -> HostBuffer;
    /// The memory of a buffer of this type; the buffer back when it holds another type.
    fn unwrap(buffer: HostBuffer) -> Result<Memory<Self>, HostBuffer>;
    /// The elements of a buffer of this type.
    fn values(buffer: &HostBuffer) -> Option<&[Self]>;
}

macro_rules! host_elements {
    ($($t:ty => $variant:ident),* $(,)?) => {$(
        impl HostElement for $t {
            fn wrap(memory: Memory<$t>) -> HostBuffer {
                HostBuffer::$variant(memory)
            }
            fn unwrap(buffer: HostBuffer) -> Result<Memory<$t>, HostBuffer> {
                if let HostBuffer::$variant(m) = buffer { Ok(m) } else { Err(buffer) }
            }
            fn values(buffer: &HostBuffer) -> Option<&[$t]> {
                if let HostBuffer::$variant(m) = buffer { Some(m) } else { None }
            }
        }
    )*};
}
host_elements!(bool => Bool, u8 => U8, i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    f16 => F16, bf16 => BF16, f32 => F32, f64 => F64);

impl HostBuffer {
    /// A buffer of `len` elements of `dtype` whose little-endian bytes start at `at`, which
    /// `owner` keeps alive: read in place where the bytes are valid elements as they lie,
    /// otherwise copied when first read, and copied before any write
    /// ([`Memory::from_le_bytes`]). Nothing is read or counted as allocated here.
    ///
    /// # Safety
    ///
    /// `at` points to `len * dtype.size()` readable bytes that stay alive and unchanged for as
    /// long as `owner` lives.
    pub unsafe fn from_le_bytes(
        dtype: DType,
        owner: Arc<dyn Send + Sync>,
        at: NonNull<u8>,
        len: usize,
    ) -> HostBuffer {
        // SAFETY: the caller's contract is `Memory::from_le_bytes`'s.
        unsafe {
            match dtype {
                DType::Bool => HostBuffer::Bool(Memory::from_le_bytes(owner, at, len)),
                DType::U8 => HostBuffer::U8(Memory::from_le_bytes(owner, at, len)),
                DType::I8 => HostBuffer::I8(Memory::from_le_bytes(owner, at, len)),
                DType::I16 => HostBuffer::I16(Memory::from_le_bytes(owner, at, len)),
                DType::I32 => HostBuffer::I32(Memory::from_le_bytes(owner, at, len)),
                DType::I64 => HostBuffer::I64(Memory::from_le_bytes(owner, at, len)),
                DType::F16 => HostBuffer::F16(Memory::from_le_bytes(owner, at, len)),
                DType::BF16 => HostBuffer::BF16(Memory::from_le_bytes(owner, at, len)),
                DType::F32 => HostBuffer::F32(Memory::from_le_bytes(owner, at, len)),
                DType::F64 => HostBuffer::F64(Memory::from_le_bytes(owner, at, len)),
            }
        }
    }

    /// Whether the elements are someone else's (shared, mapped or not copied yet): the first
    /// write copies them.
    pub fn is_foreign(&self) -> bool {
        match self {
            HostBuffer::Bool(m) => m.is_foreign(),
            HostBuffer::U8(m) => m.is_foreign(),
            HostBuffer::I8(m) => m.is_foreign(),
            HostBuffer::I16(m) => m.is_foreign(),
            HostBuffer::I32(m) => m.is_foreign(),
            HostBuffer::I64(m) => m.is_foreign(),
            HostBuffer::F16(m) => m.is_foreign(),
            HostBuffer::BF16(m) => m.is_foreign(),
            HostBuffer::F32(m) => m.is_foreign(),
            HostBuffer::F64(m) => m.is_foreign(),
        }
    }
}
