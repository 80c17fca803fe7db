//! `Dims`: a list of sizes or strides that lives inline up to [`INLINE`] entries and on the
//! heap beyond. Every view, node and kernel carries a shape and strides; keeping the common
//! ranks out of the allocator makes recording an op cost a few copies instead of a handful of
//! `malloc`/`free` pairs (PyTorch's `TensorImpl` keeps its sizes the same way, inline up to 5).
//! Four entries inline keep a view at 96 bytes, and the tensors, nodes and edges that hold
//! views small enough to move without `memcpy` calls: `tiny_ops` records and realizes an op in
//! about 10% less time than with six. A longer list is shared, not copied, when cloned (one
//! reference count), and copied only when a shared one is changed.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::num::NonZeroUsize;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// Entries kept inline; a longer list moves to the heap.
pub const INLINE: usize = 4;

/// A list of `Copy` entries (sizes, strides) that dereferences to a slice.
#[derive(Clone)]
pub struct Dims<T: Copy + Default>(Repr<T>);

#[derive(Clone)]
enum Repr<T: Copy + Default> {
    Inline {
        len: Len,
        items: [T; INLINE],
    },
    /// More than [`INLINE`] entries (or fewer, after a shrink), shared by clones.
    Heap(Arc<[T]>),
}

/// The length of an inline list, stored as one more than it is: a word that is never 0, so that
/// `Repr` marks its heap variant with that 0 instead of a tag byte of its own, and a list is
/// five plain words. (With a tag byte and a `u8` length, moving a view copied the seven bytes
/// after the tag with two overlapping 4-byte stores, and the next move of that copy stalled on
/// the store buffer: a few percent of `tiny_ops` on an Intel Xeon.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Len(NonZeroUsize);

impl Len {
    /// `n` entries (at most [`INLINE`]: longer lists live on the heap).
    #[inline]
    fn new(n: usize) -> Len {
        debug_assert!(n <= INLINE, "an inline list holds at most {INLINE} entries");
        Len(NonZeroUsize::MIN.saturating_add(n))
    }

    #[inline]
    fn get(self) -> usize {
        self.0.get() - 1
    }
}

impl<T: Copy + Default> Dims<T> {
    /// The empty list.
    pub fn new() -> Dims<T> {
        Dims(Repr::Inline {
            len: Len::new(0),
            items: [T::default(); INLINE],
        })
    }

    /// A list of `n` copies of `value`.
    #[inline]
    pub fn filled(value: T, n: usize) -> Dims<T> {
        if n > INLINE {
            return Dims(Repr::Heap(vec![value; n].into()));
        }
        Dims(Repr::Inline {
            len: Len::new(n),
            items: [value; INLINE],
        })
    }

    pub fn push(&mut self, value: T) {
        match &mut self.0 {
            Repr::Inline { len, items } if len.get() < INLINE => {
                items[len.get()] = value;
                *len = Len::new(len.get() + 1);
            }
            Repr::Inline { .. } | Repr::Heap(_) => {
                let mut v = Vec::with_capacity(self.len() + 1);
                v.extend_from_slice(self);
                v.push(value);
                self.0 = Repr::Heap(v.into());
            }
        }
    }

    pub fn pop(&mut self) -> Option<T> {
        let last = self.last().copied()?;
        self.truncate(self.len() - 1);
        Some(last)
    }

    /// Inserts `value` at `index`, shifting the rest right (panics past the end, as `Vec` does).
    pub fn insert(&mut self, index: usize, value: T) {
        let n = self.len();
        assert!(index <= n, "insertion index {index} is past the end ({n})");
        self.push(value);
        self[index..].rotate_right(1);
    }

    /// Removes and returns the entry at `index`, shifting the rest left.
    pub fn remove(&mut self, index: usize) -> T {
        let n = self.len();
        assert!(index < n, "removal index {index} is past the end ({n})");
        self[index..].rotate_left(1);
        self.pop().expect("invariant: not empty")
    }

    pub fn truncate(&mut self, n: usize) {
        match &mut self.0 {
            Repr::Inline { len, .. } => *len = Len::new(len.get().min(n)),
            Repr::Heap(v) if n < v.len() => *self = Dims::from(&v[..n]),
            Repr::Heap(_) => {}
        }
    }

    /// Grows with copies of `value` or shrinks to `n` entries.
    pub fn resize(&mut self, n: usize, value: T) {
        self.truncate(n);
        if self.len() < n {
            self.extend(std::iter::repeat_n(value, n - self.len()));
        }
    }

    pub fn clear(&mut self) {
        self.truncate(0);
    }

    /// Keeps the entries for which `keep` holds, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        let mut kept = 0;
        for i in 0..self.len() {
            let x = self[i];
            if keep(&x) {
                self[kept] = x;
                kept += 1;
            }
        }
        self.truncate(kept);
    }

    pub fn into_vec(self) -> Vec<T> {
        self.to_vec()
    }
}

impl<T: Copy + Default> Default for Dims<T> {
    fn default() -> Dims<T> {
        Dims::new()
    }
}

impl<T: Copy + Default> Deref for Dims<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &self.0 {
            Repr::Inline { len, items } => &items[..len.get()],
            Repr::Heap(v) => v,
        }
    }
}

impl<T: Copy + Default> DerefMut for Dims<T> {
    /// A list shared with a clone is copied first (copy on write).
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.0 {
            Repr::Inline { len, items } => &mut items[..len.get()],
            Repr::Heap(v) => {
                if Arc::get_mut(v).is_none() {
                    *v = Arc::from(&v[..]);
                }
                Arc::get_mut(v).expect("invariant: a fresh copy has one owner")
            }
        }
    }
}

impl<T: Copy + Default> From<&[T]> for Dims<T> {
    #[inline]
    fn from(xs: &[T]) -> Dims<T> {
        if xs.len() > INLINE {
            return Dims(Repr::Heap(xs.into()));
        }
        let mut items = [T::default(); INLINE];
        items[..xs.len()].copy_from_slice(xs);
        Dims(Repr::Inline {
            len: Len::new(xs.len()),
            items,
        })
    }
}

impl<T: Copy + Default> From<Vec<T>> for Dims<T> {
    fn from(v: Vec<T>) -> Dims<T> {
        if v.len() > INLINE {
            Dims(Repr::Heap(v.into()))
        } else {
            Dims::from(&v[..])
        }
    }
}

impl<T: Copy + Default, const N: usize> From<[T; N]> for Dims<T> {
    fn from(xs: [T; N]) -> Dims<T> {
        Dims::from(&xs[..])
    }
}

impl<T: Copy + Default> From<Dims<T>> for Vec<T> {
    fn from(d: Dims<T>) -> Vec<T> {
        d.into_vec()
    }
}

impl<T: Copy + Default> FromIterator<T> for Dims<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Dims<T> {
        let mut d = Dims::new();
        d.extend(iter);
        d
    }
}

impl<T: Copy + Default> Extend<T> for Dims<T> {
    /// Inline while the entries fit; a list that outgrows them is gathered in a `Vec` and
    /// moved to the heap once.
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        let mut iter = iter.into_iter();
        while let Repr::Inline { len, items } = &mut self.0
            && len.get() < INLINE
        {
            let Some(x) = iter.next() else { return };
            items[len.get()] = x;
            *len = Len::new(len.get() + 1);
        }
        let Some(x) = iter.next() else { return };
        let mut v = self.to_vec();
        v.push(x);
        v.extend(iter);
        *self = Dims::from(v);
    }
}

impl<'a, T: Copy + Default> IntoIterator for &'a Dims<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T: Copy + Default + PartialEq> PartialEq for Dims<T> {
    fn eq(&self, other: &Dims<T>) -> bool {
        self[..] == other[..]
    }
}

impl<T: Copy + Default + Eq> Eq for Dims<T> {}

impl<T: Copy + Default + PartialEq> PartialEq<[T]> for Dims<T> {
    fn eq(&self, other: &[T]) -> bool {
        self[..] == *other
    }
}

impl<T: Copy + Default + PartialEq> PartialEq<&[T]> for Dims<T> {
    fn eq(&self, other: &&[T]) -> bool {
        self[..] == **other
    }
}

impl<T: Copy + Default + PartialEq> PartialEq<Vec<T>> for Dims<T> {
    fn eq(&self, other: &Vec<T>) -> bool {
        self[..] == other[..]
    }
}

impl<T: Copy + Default + PartialEq, const N: usize> PartialEq<[T; N]> for Dims<T> {
    fn eq(&self, other: &[T; N]) -> bool {
        self[..] == other[..]
    }
}

impl<T: Copy + Default + PartialEq> PartialEq<Dims<T>> for Vec<T> {
    fn eq(&self, other: &Dims<T>) -> bool {
        self[..] == other[..]
    }
}

impl<T: Copy + Default + Hash> Hash for Dims<T> {
    /// Hashes as the slice does, so equal lists hash alike whichever way they are stored.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self[..].hash(state)
    }
}

impl<T: Copy + Default + fmt::Debug> fmt::Debug for Dims<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_is_five_words_with_no_tag_byte() {
        // Four entries and one word for the length, whose 0 marks a list on the heap: a view
        // of two lists stays at 96 bytes.
        assert_eq!(std::mem::size_of::<Dims<usize>>(), 40);
        assert_eq!(std::mem::size_of::<crate::View>(), 96);
        assert!((0..=INLINE).all(|n| Len::new(n).get() == n));
    }

    #[test]
    fn acts_like_a_vec_inline_and_on_the_heap() {
        for n in [0usize, 3, INLINE, INLINE + 1, 3 * INLINE] {
            let mut d: Dims<usize> = (0..n).collect();
            let mut v: Vec<usize> = (0..n).collect();
            assert_eq!(d, v);
            d.push(99);
            v.push(99);
            d.insert(1, 7);
            v.insert(1, 7);
            assert_eq!(d.remove(0), v.remove(0));
            d.retain(|x| x % 2 == 1);
            v.retain(|x| x % 2 == 1);
            assert_eq!(d, v);
            d.truncate(2);
            v.truncate(2);
            assert_eq!(d, v);
            assert_eq!(d.pop(), v.pop());
            assert_eq!(d.clone().into_vec(), v);
            assert_eq!(format!("{d:?}"), format!("{v:?}"));
        }
    }

    #[test]
    fn a_changed_clone_of_a_long_list_leaves_the_original_alone() {
        let long: Dims<isize> = (0..2 * INLINE as isize).collect();
        let mut copy = long.clone();
        copy[0] = -1;
        copy.push(7);
        let mut shrunk = long.clone();
        shrunk.truncate(INLINE + 1);
        shrunk[INLINE] = -2;
        assert_eq!(long, (0..2 * INLINE as isize).collect::<Vec<_>>());
        assert_eq!(copy[0], -1);
        assert_eq!(copy.len(), 2 * INLINE + 1);
        assert_eq!(shrunk.len(), INLINE + 1);
        assert_eq!(shrunk[INLINE], -2);
    }

    #[test]
    fn equal_lists_are_equal_and_hash_alike_however_stored() {
        use std::collections::hash_map::DefaultHasher;
        let hash = |d: &Dims<isize>| {
            let mut h = DefaultHasher::new();
            d.hash(&mut h);
            h.finish()
        };
        let long: Vec<isize> = (0..10).collect();
        let mut shrunk = Dims::from(long.clone());
        shrunk.truncate(3);
        let short = Dims::from([0isize, 1, 2]);
        assert_eq!(shrunk, short);
        assert_eq!(hash(&shrunk), hash(&short));
    }
}
