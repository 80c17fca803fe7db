//! Host memory for buffers: 64-byte aligned blocks, recycled through one process-wide pool.
//!
//! Fresh memory is the biggest hidden cost of a memory-bound kernel: the first touch of every
//! 4 KiB page of a new output faults into the kernel, which zeroes it, and for a 64 MiB output
//! that costs more than the kernel itself. So a dropped buffer's block goes back to a pool keyed
//! by (dtype, capacity) and the next buffer of that size takes it, already mapped. Blocks of
//! [`HUGE_BLOCK`] bytes or more are mapped directly, aligned to 2 MiB and advised as
//! transparent huge pages, so even a fresh one faults 512× less often.
//!
//! Why this is sound: a block only ever holds values of the one dtype it was first made for
//! (the dtype is part of the pool key), and it starts zeroed, which is a valid value of every
//! element type (`false`, `0`, `+0.0`). So [`Memory::for_overwrite`] may hand out a recycled
//! block with stale but valid contents, and only [`Memory::zeroed`] pays for clearing it.
//!
//! A `Memory` may also hold elements the pool did not allocate (`foreign.rs`): an adopted
//! `Vec<T>`, a shared slice or a mapped file. Those never enter the pool.

use half::{bf16, f16};
use hashbrown::HashMap;
use smelt_ir::DType;
use std::alloc::Layout;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::{Mutex, OnceLock};

mod foreign;
use foreign::Owner;

/// Alignment of every block: one cache line, and a full 512-bit vector.
pub const ALIGN: usize = 64;
/// Blocks at least this big are mapped directly and backed by huge pages.
pub const HUGE_BLOCK: usize = 4 << 20;
const HUGE_PAGE: usize = 2 << 20;

/// An element type a buffer can hold. Every bit pattern produced by zeroing or by storing a
/// value of the type is valid for it.
pub trait Element: Copy + Send + Sync + PartialEq + fmt::Debug + 'static {
    const DTYPE: DType;
    /// A value no correct kernel leaves behind by accident (NaN, all ones, `true`): debug
    /// builds fill recycled blocks handed out for overwriting with it, so a kernel that skips
    /// an element of its output fails its tests instead of reading back stale right answers.
    const POISON: Self;
}

macro_rules! elements {
    ($($t:ty => $d:ident, $p:expr),* $(,)?) => {
        $(impl Element for $t { const DTYPE: DType = DType::$d; const POISON: Self = $p; })*
    };
}
elements!(bool => Bool, true, u8 => U8, u8::MAX, i8 => I8, -1, i16 => I16, -1, i32 => I32, -1,
    i64 => I64, -1, f16 => F16, f16::NAN, bf16 => BF16, bf16::NAN, f32 => F32, f32::NAN,
    f64 => F64, f64::NAN);

/// An allocation the system refused: its size in bytes, or `None` when the size itself
/// overflows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocError {
    /// The bytes asked for.
    pub bytes: Option<usize>,
}

impl AllocError {
    /// PyTorch's message for a failed host allocation.
    pub fn message(&self) -> String {
        match self.bytes {
            Some(b) => format!(
                "DefaultCPUAllocator: can't allocate memory: you tried to allocate {b} bytes."
            ),
            None => "DefaultCPUAllocator: the buffer's size in bytes overflows".to_string(),
        }
    }

    /// Ends the process as Rust does when memory runs out, for the callers that cannot fail.
    fn abort(self) -> ! {
        let layout = Layout::from_size_align(
            self.bytes
                .unwrap_or(usize::MAX / 2)
                .min(isize::MAX as usize),
            1,
        )
        .unwrap_or(Layout::new::<u8>());
        std::alloc::handle_alloc_error(layout)
    }
}

/// One allocation, owned by a [`Memory`] or waiting in the pool.
struct Block {
    ptr: NonNull<u8>,
    bytes: usize,
}

// SAFETY: a block is plain memory with a single owner (a `Memory` or the pool's free list).
unsafe impl Send for Block {}

/// Capacity in bytes of the block that serves a request of `bytes`.
fn capacity(bytes: usize) -> usize {
    if bytes >= HUGE_BLOCK {
        bytes.next_multiple_of(HUGE_PAGE)
    } else {
        bytes.next_multiple_of(ALIGN)
    }
}

/// A zeroed block of exactly `bytes` (a value of [`capacity`], > 0); `None` when the system
/// refuses (or the size exceeds `isize::MAX`).
fn try_allocate(bytes: usize) -> Option<Block> {
    #[cfg(unix)]
    if bytes >= HUGE_BLOCK {
        return map_huge(bytes);
    }
    let layout = Layout::from_size_align(bytes, ALIGN).ok()?;
    // SAFETY: `layout` has a non-zero size.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    Some(Block {
        ptr: NonNull::new(ptr)?,
        bytes,
    })
}

/// Maps `bytes` of fresh (zero) anonymous memory at a 2 MiB boundary and advises huge pages;
/// `None` when the system refuses.
#[cfg(unix)]
fn map_huge(bytes: usize) -> Option<Block> {
    let span = bytes.checked_add(HUGE_PAGE)?;
    if span > isize::MAX as usize {
        return None;
    }
    // SAFETY: an anonymous private mapping with no address hint touches no existing memory.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    let start = p as usize;
    let aligned = start.next_multiple_of(HUGE_PAGE);
    let (head, tail) = (aligned - start, span - (aligned - start) - bytes);
    // SAFETY: both ranges lie inside the mapping just made and outside the block kept; unmapping
    // them only returns address space.
    unsafe {
        if head > 0 {
            libc::munmap(p, head);
        }
        if tail > 0 {
            libc::munmap((aligned + bytes) as *mut libc::c_void, tail);
        }
    }
    #[cfg(target_os = "linux")]
    // SAFETY: advice on a range this function owns; a refusal only means 4 KiB pages.
    unsafe {
        libc::madvise(aligned as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE);
    }
    Some(Block {
        ptr: NonNull::new(aligned as *mut u8).expect("invariant: mmap never maps address 0"),
        bytes,
    })
}

/// Returns a block's memory to the system.
fn release(block: Block) {
    #[cfg(unix)]
    if block.bytes >= HUGE_BLOCK {
        // SAFETY: the block is exactly a range that `map_huge` mapped and nobody references.
        unsafe { libc::munmap(block.ptr.as_ptr().cast(), block.bytes) };
        return;
    }
    let layout = Layout::from_size_align(block.bytes, ALIGN).expect("invariant: as allocated");
    // SAFETY: the block came from `alloc_zeroed` with this layout and has no other owner.
    unsafe { std::alloc::dealloc(block.ptr.as_ptr(), layout) };
}

/// Free blocks by (dtype, capacity), up to `limit` bytes in all.
struct Pool {
    free: HashMap<(DType, usize), Vec<Block>>,
    bytes: usize,
    limit: usize,
}

fn pool() -> &'static Mutex<Pool> {
    static POOL: OnceLock<Mutex<Pool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let limit = std::env::var("SMELT_POOL_BYTES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(4 << 30);
        Mutex::new(Pool {
            free: HashMap::new(),
            bytes: 0,
            limit,
        })
    })
}

fn lock() -> std::sync::MutexGuard<'static, Pool> {
    pool().lock().unwrap_or_else(|p| p.into_inner())
}

/// A recycled block of `dtype` and capacity `bytes`, if the pool holds one.
fn reuse(dtype: DType, bytes: usize) -> Option<Block> {
    let mut pool = lock();
    let block = pool.free.get_mut(&(dtype, bytes))?.pop()?;
    pool.bytes -= block.bytes;
    Some(block)
}

/// Keeps `block` for reuse, or frees it when the pool is full.
fn recycle(dtype: DType, block: Block) {
    let mut pool = lock();
    if pool.bytes + block.bytes > pool.limit {
        drop(pool);
        release(block);
        return;
    }
    pool.bytes += block.bytes;
    pool.free
        .entry((dtype, block.bytes))
        .or_default()
        .push(block);
}

/// Bytes held by the pool, waiting for reuse.
pub fn pooled_bytes() -> usize {
    lock().bytes
}

/// Returns every pooled block to the system.
pub fn trim() {
    let blocks: Vec<Block> = {
        let mut pool = lock();
        pool.bytes = 0;
        pool.free.drain().flat_map(|(_, v)| v).collect()
    };
    blocks.into_iter().for_each(release);
}

/// `len` elements of `T` in one pooled, 64-byte aligned block; derefs to a slice. Or, made by
/// the constructors of `foreign.rs` ([`Memory::adopt`], [`Memory::from_arc`],
/// [`Memory::from_le_bytes`] …), elements someone else allocated: aligned for `T` only, which
/// is all compiled kernels need (their loads and stores assume no alignment; streaming stores
/// check theirs at launch).
pub struct Memory<T: Element> {
    ptr: NonNull<T>,
    len: usize,
    /// Capacity of the pool block in bytes; 0 when nothing is allocated (`len * size == 0`)
    /// or the elements are not the pool's (`owner` is set).
    bytes: usize,
    /// Who owns the elements when the pool does not.
    owner: Option<Owner<T>>,
}

// SAFETY: `Memory` owns its block exclusively, like a `Vec<T>`, or shares elements nobody
// writes with an owner that is `Send + Sync` (`foreign.rs`).
unsafe impl<T: Element> Send for Memory<T> {}
// SAFETY: shared access only hands out `&[T]`, and `T: Sync`.
unsafe impl<T: Element> Sync for Memory<T> {}

impl<T: Element> Memory<T> {
    /// `len` elements with unspecified (but valid) values, for a caller that writes them all:
    /// a recycled block when the pool has one of this size. Aborts when the system cannot
    /// allocate them ([`Memory::try_for_overwrite`] returns the failure instead).
    pub fn for_overwrite(len: usize) -> Memory<T> {
        Memory::try_for_overwrite(len).unwrap_or_else(|e| e.abort())
    }

    /// [`Memory::for_overwrite`], or the allocation that failed.
    pub fn try_for_overwrite(len: usize) -> Result<Memory<T>, AllocError> {
        let (mut m, recycled) = Memory::take(len)?;
        if cfg!(debug_assertions) && recycled {
            m.fill(T::POISON);
        }
        Ok(m)
    }

    /// `len` zeros. Only a recycled block is cleared: a fresh one is zero already, and leaving
    /// its pages untouched lets the kernel that writes it fault them in, on its own threads.
    /// Aborts when the system cannot allocate them ([`Memory::try_zeroed`] returns the failure).
    pub fn zeroed(len: usize) -> Memory<T> {
        Memory::try_zeroed(len).unwrap_or_else(|e| e.abort())
    }

    /// [`Memory::zeroed`], or the allocation that failed.
    pub fn try_zeroed(len: usize) -> Result<Memory<T>, AllocError> {
        let (m, recycled) = Memory::take(len)?;
        if recycled {
            // SAFETY: the block holds at least `len` elements; all-zero bytes are a valid `T`.
            unsafe { std::ptr::write_bytes(m.ptr.as_ptr(), 0, m.len) };
        }
        Ok(m)
    }

    /// A block for `len` elements, and whether it was recycled (else it is fresh and zeroed).
    fn take(len: usize) -> Result<(Memory<T>, bool), AllocError> {
        let Some(want) = len.checked_mul(size_of::<T>()) else {
            return Err(AllocError { bytes: None });
        };
        if want == 0 {
            let empty = Memory {
                ptr: NonNull::dangling(),
                len,
                bytes: 0,
                owner: None,
            };
            return Ok((empty, false));
        }
        let bytes = capacity(want);
        let (block, recycled) = match reuse(T::DTYPE, bytes) {
            Some(block) => (block, true),
            None => match try_allocate(bytes) {
                Some(block) => (block, false),
                None => {
                    // Pooled blocks may be what stands in the way: return them, then retry.
                    trim();
                    let block = try_allocate(bytes).ok_or(AllocError { bytes: Some(want) })?;
                    (block, false)
                }
            },
        };
        debug_assert_eq!(block.ptr.as_ptr() as usize % ALIGN, 0);
        let memory = Memory {
            ptr: block.ptr.cast(),
            len,
            bytes,
            owner: None,
        };
        Ok((memory, recycled))
    }

    /// A copy of `values`.
    pub fn from_slice(values: &[T]) -> Memory<T> {
        let mut m = Memory::for_overwrite(values.len());
        m.copy_from_slice(values);
        m
    }

    /// Number of elements (without reading them: a deferred copy stays unmade).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<T: Element> Drop for Memory<T> {
    fn drop(&mut self) {
        if let Some(owner) = self.owner.take() {
            owner.release(self.ptr, self.len);
        } else if self.bytes > 0 {
            recycle(
                T::DTYPE,
                Block {
                    ptr: self.ptr.cast(),
                    bytes: self.bytes,
                },
            );
        }
    }
}

impl<T: Element> Deref for Memory<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        if let Some(Owner::Deferred(d)) = &self.owner {
            return d.values();
        }
        // SAFETY: `ptr` is aligned, points at `len` initialised elements (or dangles for an
        // empty slice), and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Element> DerefMut for Memory<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // Elements someone else owns are read-only: a write copies them first.
        if self.owner.as_ref().is_some_and(Owner::is_read_only) {
            self.make_owned();
        }
        // SAFETY: as for `deref`, and `&mut self` makes the access exclusive; the elements
        // are the pool's or an adopted vector's, both writable.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Element> Clone for Memory<T> {
    /// A copy; read-only elements someone else owns are shared instead (a write copies them).
    fn clone(&self) -> Memory<T> {
        match self.owner.as_ref().and_then(Owner::share) {
            Some(owner) => Memory {
                ptr: self.ptr,
                len: self.len,
                bytes: 0,
                owner: Some(owner),
            },
            None => Memory::from_slice(self),
        }
    }
}

impl<T: Element> PartialEq for Memory<T> {
    fn eq(&self, other: &Memory<T>) -> bool {
        **self == **other
    }
}

impl<T: Element> fmt::Debug for Memory<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: Element> From<Vec<T>> for Memory<T> {
    fn from(v: Vec<T>) -> Memory<T> {
        Memory::from_slice(&v)
    }
}

impl<'a, T: Element> IntoIterator for &'a Memory<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T: Element> FromIterator<T> for Memory<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Memory<T> {
        Memory::from(iter.into_iter().collect::<Vec<T>>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_aligned_and_zeroed() {
        for len in [1, 3, 1000, HUGE_BLOCK / 4 + 5] {
            let m = Memory::<f32>::zeroed(len);
            assert_eq!(m.as_ptr() as usize % ALIGN, 0);
            assert_eq!(m.len(), len);
            assert!(m.iter().all(|&x| x == 0.0));
        }
        let big = Memory::<u8>::zeroed(HUGE_BLOCK);
        assert_eq!(big.as_ptr() as usize % HUGE_PAGE, 0);
    }

    #[test]
    fn a_dropped_block_is_reused_for_the_same_dtype_and_size_only() {
        // A size no other test uses, so concurrent tests cannot take the block.
        let len = 12_345;
        let mut a = Memory::<i32>::zeroed(len);
        a[7] = 42;
        let addr = a.as_ptr() as usize;
        drop(a);
        let other = Memory::<f32>::for_overwrite(len);
        assert_ne!(other.as_ptr() as usize, addr, "a block never changes dtype");
        let b = Memory::<i32>::for_overwrite(len);
        assert_eq!(b.as_ptr() as usize, addr);
        let stale = if cfg!(debug_assertions) { -1 } else { 42 };
        assert_eq!(
            b[7], stale,
            "for_overwrite keeps stale values (poisoned in debug builds)"
        );
        drop(b);
        let c = Memory::<i32>::zeroed(len);
        assert_eq!(c.as_ptr() as usize, addr);
        assert!(c.iter().all(|&x| x == 0), "zeroed clears a recycled block");
    }

    #[test]
    fn empty_memory_allocates_nothing() {
        let m = Memory::<f64>::zeroed(0);
        assert!(m.is_empty());
        let c = m.clone();
        assert_eq!(c, m);
        let v: Memory<bool> = [true, false].into_iter().collect();
        assert_eq!(&*v, &[true, false]);
    }
}
