//! Memory the pool did not allocate: an adopted `Vec<T>`, a shared slice, the bytes of a mapped
//! file. Held in place where Rust's rules allow it, copied when first read where they do not.
//!
//! Elements are held in place (zero-copy) when their address is aligned for `T` (a slice needs
//! it; compiled kernels need nothing more: their loads and stores assume no alignment, and
//! streaming stores check theirs at each launch), every bit pattern there is a valid `T` in the
//! host's byte order, and nothing changes them while their owner lives. Bytes that break a rule
//! (misaligned, little-endian bytes on a big-endian host, bool bytes that might be other than 0
//! or 1) are *deferred*: copied into a pool block the first time they are read, not when the
//! memory is made.
//!
//! Elements someone else owns are read-only: a `Memory` over them copies them into a pool
//! block before its first write (`DerefMut`), so an in-place op on a tensor read from a mapped
//! file writes to a copy, never to the file's pages. An adopted `Vec` is the `Memory`'s own
//! and is written in place. None of these blocks ever enters the pool.

use super::{Element, Memory};
use smelt_ir::DType;
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

/// Who owns a [`Memory`]'s elements when the pool does not.
pub(super) enum Owner<T: Element> {
    /// The allocation of a `Vec<T>` of this capacity: written in place, freed as that vector.
    Vec { capacity: usize },
    /// Elements that something else keeps alive (`None`: they are `'static`). Read-only.
    Shared(Option<Arc<dyn Send + Sync>>),
    /// Bytes copied into a pool block when first read. Read-only.
    Deferred(Arc<Deferred<T>>),
}

impl<T: Element> Owner<T> {
    /// Whether a write must copy the elements first.
    pub(super) fn is_read_only(&self) -> bool {
        match self {
            Owner::Vec { .. } => false,
            Owner::Shared(_) | Owner::Deferred(_) => true,
        }
    }

    /// A second owner of the same read-only elements (`None` for an adopted vector, which has
    /// one owner).
    pub(super) fn share(&self) -> Option<Owner<T>> {
        match self {
            Owner::Vec { .. } => None,
            Owner::Shared(keep) => Some(Owner::Shared(keep.clone())),
            Owner::Deferred(d) => Some(Owner::Deferred(d.clone())),
        }
    }

    /// Frees what this owner holds of the `len` elements at `ptr`.
    pub(super) fn release(self, ptr: NonNull<T>, len: usize) {
        match self {
            // SAFETY: `ptr`, `len` and `capacity` are those of the vector `Memory::adopt` took
            // apart, and nothing else owns its allocation.
            Owner::Vec { capacity } => {
                drop(unsafe { Vec::from_raw_parts(ptr.as_ptr(), len, capacity) })
            }
            Owner::Shared(_) | Owner::Deferred(_) => {}
        }
    }
}

/// Little-endian bytes that are not a valid `[T]` where they lie, copied (aligned, in the host's
/// byte order, bools made 0 or 1) into a pool block when first read.
pub(super) struct Deferred<T: Element> {
    /// Keeps the bytes at `at` alive and unchanged.
    _source: Arc<dyn Send + Sync>,
    at: NonNull<u8>,
    len: usize,
    copy: OnceLock<Memory<T>>,
}

// SAFETY: the bytes at `at` are only read, and `_source` (which is `Send + Sync`) keeps them
// alive; the copy is behind a `OnceLock`.
unsafe impl<T: Element> Send for Deferred<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: Element> Sync for Deferred<T> {}

impl<T: Element> Deferred<T> {
    /// The elements, copied now if this is the first read.
    pub(super) fn values(&self) -> &[T] {
        self.copy.get_or_init(|| self.decode())
    }

    fn decode(&self) -> Memory<T> {
        let size = size_of::<T>();
        crate::stats::count_allocation(self.len * size);
        let m = Memory::<T>::for_overwrite(self.len);
        let dst = m.ptr.as_ptr().cast::<u8>();
        // SAFETY: the source holds `len * size` readable bytes at `at` (`Memory::from_le_bytes`)
        // and `m` as many writable ones, in another allocation. The copy is fixed up as bytes
        // before anything reads it as `T`: in the host's byte order, and a bool 0 or 1.
        unsafe {
            std::ptr::copy_nonoverlapping(self.at.as_ptr(), dst, self.len * size);
            let bytes = std::slice::from_raw_parts_mut(dst, self.len * size);
            if cfg!(target_endian = "big") && size > 1 {
                bytes.chunks_exact_mut(size).for_each(<[u8]>::reverse);
            }
            if T::DTYPE == DType::Bool {
                bytes.iter_mut().for_each(|b| *b = u8::from(*b != 0));
            }
        }
        m
    }
}

impl<T: Element> Memory<T> {
    /// The elements of `v` in `v`'s own allocation, without a copy. Written in place; freed as
    /// `v` would have been (it never enters the pool).
    pub fn adopt(v: Vec<T>) -> Memory<T> {
        let mut v = std::mem::ManuallyDrop::new(v);
        Memory {
            ptr: NonNull::new(v.as_mut_ptr()).expect("invariant: a vector's pointer is never null"),
            len: v.len(),
            bytes: 0,
            owner: Some(Owner::Vec {
                capacity: v.capacity(),
            }),
        }
    }

    /// The adopted vector back, without a copy; `Err(self)` for memory that is not one.
    pub fn into_vec(mut self) -> Result<Vec<T>, Memory<T>> {
        let Some(Owner::Vec { capacity }) = self.owner else {
            return Err(self);
        };
        let (ptr, len) = (self.ptr.as_ptr(), self.len);
        self.owner = None;
        // `self` now owns nothing (no owner, `bytes` 0): dropping it frees nothing.
        drop(self);
        // SAFETY: the parts of the vector `adopt` took apart, which nothing else owns now.
        Ok(unsafe { Vec::from_raw_parts(ptr, len, capacity) })
    }

    /// `values`, which live as long as the program, without a copy. Read-only: the first write
    /// copies them.
    pub fn from_static(values: &'static [T]) -> Memory<T> {
        Memory {
            ptr: NonNull::from(values).cast(),
            len: values.len(),
            bytes: 0,
            owner: Some(Owner::Shared(None)),
        }
    }

    /// The elements of `values` without a copy, sharing them. Read-only: the first write
    /// copies them.
    pub fn from_arc(values: Arc<[T]>) -> Memory<T> {
        Memory {
            ptr: NonNull::from(&*values).cast(),
            len: values.len(),
            bytes: 0,
            // (An `Arc<[T]>` is unsized: it cannot be an `Arc<dyn _>` itself.)
            owner: Some(Owner::Shared(Some(Arc::new(values)))),
        }
    }

    /// The `len` elements whose little-endian bytes start at `at`, which `owner` keeps alive.
    /// Read in place where they are a valid `[T]` as they lie (aligned for `T`, a little-endian
    /// host, not bool); otherwise copied into a pool block when first read. Read-only either
    /// way: the first write copies them.
    ///
    /// # Safety
    ///
    /// `at` points to `len * size_of::<T>()` readable bytes that stay alive and unchanged for
    /// as long as `owner` lives.
    pub unsafe fn from_le_bytes(
        owner: Arc<dyn Send + Sync>,
        at: NonNull<u8>,
        len: usize,
    ) -> Memory<T> {
        let in_place = cfg!(target_endian = "little")
            && T::DTYPE != DType::Bool
            && at.as_ptr().align_offset(align_of::<T>()) == 0;
        if in_place {
            return Memory {
                ptr: at.cast(),
                len,
                bytes: 0,
                owner: Some(Owner::Shared(Some(owner))),
            };
        }
        Memory {
            ptr: NonNull::dangling(),
            len,
            bytes: 0,
            owner: Some(Owner::Deferred(Arc::new(Deferred {
                _source: owner,
                at,
                len,
                copy: OnceLock::new(),
            }))),
        }
    }

    /// Whether the elements are someone else's, read in place or not copied yet (a write or,
    /// for deferred bytes, a read copies them).
    pub fn is_foreign(&self) -> bool {
        self.owner.as_ref().is_some_and(Owner::is_read_only)
    }

    /// Makes read-only foreign elements this memory's own: a copy in a pool block.
    pub(super) fn make_owned(&mut self) {
        let copy = match self.owner.take() {
            None => return,
            Some(Owner::Vec { capacity }) => {
                self.owner = Some(Owner::Vec { capacity });
                return;
            }
            Some(Owner::Shared(keep)) => {
                // SAFETY: `keep` still holds the `len` elements at `ptr`.
                let values = unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) };
                crate::stats::count_allocation(self.len * size_of::<T>());
                let copy = Memory::from_slice(values);
                drop(keep);
                copy
            }
            Some(Owner::Deferred(d)) => match Arc::try_unwrap(d) {
                Ok(mut d) => d.copy.take().unwrap_or_else(|| d.decode()),
                Err(d) => {
                    crate::stats::count_allocation(self.len * size_of::<T>());
                    Memory::from_slice(d.values())
                }
            },
        };
        // The old value owns nothing now (no owner, `bytes` 0): replacing it frees nothing.
        *self = copy;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::bytes_allocated;

    #[test]
    fn an_adopted_vector_keeps_its_allocation_and_comes_back() {
        let v = vec![1.5f32, -2.0, 3.25];
        let at = v.as_ptr();
        let mut m = Memory::adopt(v);
        assert_eq!(m.as_ptr(), at);
        m[1] = 7.0;
        assert_eq!(m.as_ptr(), at, "an adopted vector is written in place");
        assert!(!m.is_foreign());
        let back = m.into_vec().expect("adopted memory gives its vector back");
        assert_eq!((back.as_ptr(), back), (at, vec![1.5, 7.0, 3.25]));
        assert!(Memory::<f32>::zeroed(4).into_vec().is_err());
    }

    #[test]
    fn shared_elements_are_copied_before_a_write() {
        static VALUES: [i32; 3] = [4, 5, 6];
        let mut m = Memory::from_static(&VALUES);
        assert_eq!(m.as_ptr(), VALUES.as_ptr());
        let c = m.clone();
        assert_eq!(
            c.as_ptr(),
            VALUES.as_ptr(),
            "a clone shares read-only elements"
        );
        let before = bytes_allocated();
        m[0] = 9;
        assert_eq!(
            bytes_allocated() - before,
            12,
            "the write copied the 3 elements"
        );
        assert_ne!(m.as_ptr(), VALUES.as_ptr());
        assert_eq!(
            (&*m, &*c, VALUES),
            (&[9, 5, 6][..], &[4, 5, 6][..], [4, 5, 6])
        );
        let arc: Arc<[u8]> = Arc::from(vec![1u8, 2]);
        let m = Memory::from_arc(arc.clone());
        assert_eq!((m.as_ptr(), Arc::strong_count(&arc)), (arc.as_ptr(), 2));
        drop(m);
        assert_eq!(Arc::strong_count(&arc), 1);
    }

    #[test]
    fn misaligned_and_bool_bytes_are_copied_when_first_read() {
        let bytes: Arc<Vec<u8>> = Arc::new(vec![0, 1, 0, 0, 0, 2, 0, 0, 0, 9]);
        let at = |i: usize| NonNull::new(bytes.as_ptr().wrapping_add(i).cast_mut()).unwrap();
        // Either the start or one past it is misaligned for i32.
        let odd = if bytes.as_ptr().align_offset(4) == 1 {
            0
        } else {
            1
        };
        let before = bytes_allocated();
        // SAFETY: `bytes` keeps the 10 bytes alive and nothing changes them.
        let ints = unsafe { Memory::<i32>::from_le_bytes(bytes.clone(), at(odd), 2) };
        // SAFETY: as above.
        let flags = unsafe { Memory::<bool>::from_le_bytes(bytes.clone(), at(0), 10) };
        assert_eq!((ints.len(), flags.len()), (2, 10));
        assert_eq!(bytes_allocated(), before, "nothing is copied before a read");
        let le = |i: usize| i32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
        assert_eq!(&*ints, &[le(odd), le(odd + 4)]);
        assert_eq!(
            flags.iter().filter(|&&b| b).count(),
            3,
            "nonzero bytes read as true"
        );
        assert_eq!(bytes_allocated() - before, 18);
        let mut aligned_at = 0;
        while bytes.as_ptr().wrapping_add(aligned_at).align_offset(2) != 0 {
            aligned_at += 1;
        }
        // SAFETY: as above.
        let halves = unsafe { Memory::<i16>::from_le_bytes(bytes.clone(), at(aligned_at), 2) };
        assert_eq!(
            halves.as_ptr().cast(),
            bytes.as_ptr().wrapping_add(aligned_at)
        );
        assert!(halves.is_foreign());
    }
}
