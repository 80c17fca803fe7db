//! How a view reads its storage's elements (DESIGN §2): as stored, or reinterpreted between a
//! complex dtype and its real counterpart, and whether the values read are conjugated or
//! negated. The [`Reading`] is part of every [`View`]; a consumer applies it where it loads,
//! a write through the view applies its inverse where it stores (both bits are involutions).
//!
//! A complex storage of `n` elements is a buffer of `2n` parts (real, imaginary, in turn), so
//! physically there are only two kinds of element access: a real one at an address in parts,
//! and a complex one of the two parts at `2·address` and `2·address + 1`. Which of the two a
//! view makes depends only on the dtype it reads ([`Reading::dtype`]); [`Parts`] records how
//! that dtype relates to the storage's, which is what the view algebra and fusion need.

use crate::{DType, View};

/// Which elements of its storage a view addresses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Parts {
    /// The storage's own elements.
    #[default]
    Whole,
    /// A complex storage read as its real counterpart: element `2k` is the real part of
    /// complex element `k`, element `2k + 1` its imaginary part (`real`, `imag`,
    /// `view_as_real`, `view(float32)` of a complex64 tensor).
    Split,
    /// A real (float32 or float64) storage read as complex: elements `2k` and `2k + 1` are the
    /// parts of complex element `k` (`view_as_complex`, `view(complex64)` of a float32 tensor).
    Paired,
}

/// How a view reads its storage: which elements ([`Parts`]), and whether the values read are
/// conjugated (`conj`, a complex view: PyTorch's conjugate bit) or negated (`neg`: PyTorch's
/// negative bit, which `imag` of a conjugate view sets).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Reading {
    pub parts: Parts,
    pub conj: bool,
    pub neg: bool,
}

impl Reading {
    /// The storage's elements as they are.
    pub const PLAIN: Reading = Reading {
        parts: Parts::Whole,
        conj: false,
        neg: false,
    };

    /// Reads the storage's elements as they are?
    pub fn is_plain(self) -> bool {
        self == Reading::PLAIN
    }

    /// The dtype of the elements read from a storage of dtype `storage`.
    pub fn dtype(self, storage: DType) -> DType {
        match self.parts {
            Parts::Whole => storage,
            Parts::Split => storage.real(),
            Parts::Paired => storage.complex().unwrap_or(storage),
        }
    }

    /// The number of elements of the read dtype in a storage of `len` elements.
    pub fn len(self, len: usize) -> usize {
        match self.parts {
            Parts::Whole => len,
            Parts::Split => 2 * len,
            Parts::Paired => len / 2,
        }
    }

    /// Whether the values read are changed (conjugated or negated) on the way.
    pub fn transforms(self) -> bool {
        self.conj || self.neg
    }

    /// Reading through `self` what was read through `inner` (same elements): the bits combine.
    /// Both must address their storage's elements whole.
    pub fn then(self, inner: Reading) -> Reading {
        assert!(
            self.parts == Parts::Whole && inner.parts == Parts::Whole,
            "invariant: only whole readings compose"
        );
        Reading {
            parts: Parts::Whole,
            conj: self.conj != inner.conj,
            neg: self.neg != inner.neg,
        }
    }
}

/// One of a complex value's parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    Re,
    Im,
}

/// Where the values a read through a view come from, in terms of the producer's logical
/// elements (the geometry of each returned view is in the producer's elements and plain):
/// what fusion composes with the producer's output view.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// Each element read is the producer's element at the view.
    Same(View),
    /// A [`Parts::Split`] read whose every element is the same part of the complex producer's
    /// element at the view.
    Part(View, Part),
    /// A [`Parts::Paired`] read: the real and imaginary parts of each element read are the real
    /// producer's elements at the two views.
    Pair(View, View),
}

impl Source {
    /// The geometries the read covers, each a plain view of the producer.
    pub fn views(&self) -> Vec<&View> {
        match self {
            Source::Same(v) | Source::Part(v, _) => vec![v],
            Source::Pair(re, im) => vec![re, im],
        }
    }
}

/// The [`Source`] of a read through `view` (conjugation and negation aside), or `None` for a
/// split read whose part varies from element to element (an odd stride along a dim that moves,
/// as `view_as_real` has along its last dim): no map to the producer's elements expresses it.
pub fn source(view: &View) -> Option<Source> {
    let plain = |strides: &[isize], offset: usize| View {
        shape: view.shape.clone(),
        strides: strides.into(),
        offset,
        read: Reading::PLAIN,
    };
    match view.read.parts {
        Parts::Whole => Some(Source::Same(plain(&view.strides, view.offset))),
        Parts::Split => {
            if view
                .shape
                .iter()
                .zip(&view.strides)
                .any(|(&n, &s)| n > 1 && s % 2 != 0)
            {
                return None;
            }
            // Size-1 and stride-0 dims never move: any stride addresses the same element.
            let halved: Vec<isize> = view
                .shape
                .iter()
                .zip(&view.strides)
                .map(|(&n, &s)| if n > 1 { s / 2 } else { 0 })
                .collect();
            let part = if view.offset.is_multiple_of(2) {
                Part::Re
            } else {
                Part::Im
            };
            Some(Source::Part(plain(&halved, view.offset / 2), part))
        }
        Parts::Paired => {
            let doubled: Vec<isize> = view.strides.iter().map(|&s| 2 * s).collect();
            Some(Source::Pair(
                plain(&doubled, 2 * view.offset),
                plain(&doubled, 2 * view.offset + 1),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_dtypes_and_lengths() {
        let split = Reading {
            parts: Parts::Split,
            ..Reading::PLAIN
        };
        let paired = Reading {
            parts: Parts::Paired,
            ..Reading::PLAIN
        };
        assert_eq!(split.dtype(DType::C64), DType::F32);
        assert_eq!(paired.dtype(DType::F64), DType::C128);
        assert_eq!((split.len(3), paired.len(7)), (6, 3));
        let conj = Reading {
            conj: true,
            ..Reading::PLAIN
        };
        assert!(conj.then(conj).is_plain());
    }

    #[test]
    fn split_reads_of_even_strides_are_one_part() {
        // `x.imag` of a contiguous complex [2, 3]: strides doubled, offset 1.
        let imag = View {
            read: Reading {
                parts: Parts::Split,
                ..Reading::PLAIN
            },
            ..View::new(vec![2, 3], vec![6, 2], 1)
        };
        assert_eq!(
            source(&imag),
            Some(Source::Part(View::new(vec![2, 3], vec![3, 1], 0), Part::Im))
        );
        // `view_as_real`: the last dim walks the parts.
        let as_real = View {
            read: imag.read,
            ..View::new(vec![3, 2], vec![2, 1], 0)
        };
        assert_eq!(source(&as_real), None);
        let as_complex = View {
            read: Reading {
                parts: Parts::Paired,
                ..Reading::PLAIN
            },
            ..View::new(vec![3], vec![1], 2)
        };
        assert_eq!(
            source(&as_complex),
            Some(Source::Pair(
                View::new(vec![3], vec![2], 4),
                View::new(vec![3], vec![2], 5)
            ))
        );
    }
}
