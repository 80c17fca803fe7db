//! Affine index maps between iteration spaces, and the composition of a consumer's view of a
//! buffer with the producer's output view (the heart of fusing through views).

use crate::View;
use crate::kernel::Index;
use crate::reading::Source;

/// `y = coeffs · x + offset`: one row per output dim, one coefficient per input dim.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AffineMap {
    pub coeffs: Vec<Vec<isize>>,
    pub offset: Vec<isize>,
    pub inputs: usize,
}

impl AffineMap {
    /// The identity on `rank` dims.
    pub fn identity(rank: usize) -> AffineMap {
        let coeffs = (0..rank)
            .map(|i| (0..rank).map(|j| (i == j) as isize).collect())
            .collect();
        AffineMap {
            coeffs,
            offset: vec![0; rank],
            inputs: rank,
        }
    }

    /// Projects an `inputs`-dim point onto its first `outputs` dims.
    pub fn projection(inputs: usize, outputs: usize) -> AffineMap {
        let coeffs = (0..outputs)
            .map(|i| (0..inputs).map(|j| (i == j) as isize).collect())
            .collect();
        AffineMap {
            coeffs,
            offset: vec![0; outputs],
            inputs,
        }
    }

    pub fn outputs(&self) -> usize {
        self.offset.len()
    }

    /// `self ∘ inner`: first `inner`, then `self`.
    pub fn compose(&self, inner: &AffineMap) -> AffineMap {
        assert_eq!(
            self.inputs,
            inner.outputs(),
            "invariant: composed maps agree on the middle rank"
        );
        let coeffs = self
            .coeffs
            .iter()
            .map(|row| {
                (0..inner.inputs)
                    .map(|j| row.iter().zip(&inner.coeffs).map(|(a, r)| a * r[j]).sum())
                    .collect()
            })
            .collect();
        let offset = self
            .coeffs
            .iter()
            .zip(&self.offset)
            .map(|(row, o)| {
                o + row
                    .iter()
                    .zip(&inner.offset)
                    .map(|(a, b)| a * b)
                    .sum::<isize>()
            })
            .collect();
        AffineMap {
            coeffs,
            offset,
            inputs: inner.inputs,
        }
    }

    /// Appends `extra` input dims that no output depends on.
    pub fn widen(&self, extra: usize) -> AffineMap {
        let coeffs = self
            .coeffs
            .iter()
            .map(|r| {
                r.iter()
                    .copied()
                    .chain(std::iter::repeat_n(0, extra))
                    .collect()
            })
            .collect();
        AffineMap {
            coeffs,
            offset: self.offset.clone(),
            inputs: self.inputs + extra,
        }
    }

    /// The address index of reading `view` at the point this map produces.
    pub fn index_through(&self, view: &View) -> Index {
        assert_eq!(
            view.ndim(),
            self.outputs(),
            "invariant: a view is read at a point of its own rank"
        );
        let strides = (0..self.inputs)
            .map(|j| {
                view.strides
                    .iter()
                    .zip(&self.coeffs)
                    .map(|(s, r)| s * r[j])
                    .sum()
            })
            .collect();
        let offset = view.offset as isize
            + view
                .strides
                .iter()
                .zip(&self.offset)
                .map(|(s, o)| s * o)
                .sum::<isize>();
        Index { strides, offset }
    }

    /// Does this map ignore every input dim from `from` on?
    pub fn ignores_dims_from(&self, from: usize) -> bool {
        self.coeffs
            .iter()
            .all(|r| r[from..].iter().all(|&c| c == 0))
    }
}

/// The map from a consumer's logical index (the shape of `read`, a view of a buffer) to the
/// producer's logical index (`out`, the dense view it wrote that buffer through), when one
/// affine map serves every element; `None` when the read merges or splits the producer's dims
/// in a way no affine map expresses (a copying reshape) or reads outside what was written.
pub fn compose_views(read: &View, out: &View) -> Option<AffineMap> {
    let rank_in = read.ndim();
    let rank_out = out.ndim();
    let mut coeffs = vec![vec![0isize; rank_in]; rank_out];
    let mut offset = vec![0isize; rank_out];
    // Producer dims that matter, outermost (largest stride) first. A dense view has a stride
    // of 0 on a dim longer than 1 only when it has no elements (any strides then), and then
    // nothing is read through the map: such dims do not matter.
    let mut dims: Vec<usize> = (0..rank_out)
        .filter(|&j| out.shape[j] > 1 && out.strides[j] != 0)
        .collect();
    dims.sort_by_key(|&j| std::cmp::Reverse(out.strides[j]));
    for (i, (&n, &s)) in read.shape.iter().zip(&read.strides).enumerate() {
        if n <= 1 || s == 0 {
            continue;
        }
        let j = dims.iter().copied().find(|&j| {
            out.strides[j] != 0
                && s % out.strides[j] == 0
                && s / out.strides[j] > 0
                && (s / out.strides[j]) * (n as isize - 1) < out.shape[j] as isize
        })?;
        coeffs[j][i] = s / out.strides[j];
    }
    let mut rem = read.offset as isize - out.offset as isize;
    for &j in &dims {
        let c = rem / out.strides[j];
        offset[j] = c;
        rem -= c * out.strides[j];
    }
    if rem != 0 {
        return None;
    }
    // Every produced index stays inside the producer's shape (then addresses agree exactly,
    // since a dense view writes each address once).
    for j in 0..rank_out {
        let hi: isize = offset[j]
            + coeffs[j]
                .iter()
                .zip(&read.shape)
                .map(|(c, &n)| c * (n as isize - 1).max(0))
                .sum::<isize>();
        if offset[j] < 0 || hi >= out.shape[j] as isize && read.numel() > 0 {
            return None;
        }
    }
    Some(AffineMap {
        coeffs,
        offset,
        inputs: rank_in,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(read: &View, out: &View) {
        let m = compose_views(read, out).expect("composable");
        let idx = m.index_through(out);
        let mut p = vec![0usize; read.ndim()];
        if read.numel() == 0 {
            return;
        }
        loop {
            let a = idx.offset
                + p.iter()
                    .zip(&idx.strides)
                    .map(|(&i, s)| i as isize * s)
                    .sum::<isize>();
            assert_eq!(a, read.address(&p), "read {read} out {out} at {p:?}");
            let mut d = p.len();
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                p[d] += 1;
                if p[d] < read.shape[d] {
                    break;
                }
                p[d] = 0;
            }
        }
    }

    #[test]
    fn transposes_broadcasts_and_slices_compose() {
        let out = View::contiguous(&[3, 4]);
        check(&out.t().unwrap(), &out);
        check(&out.unsqueeze(0).unwrap().expand(&[2, 3, 4]).unwrap(), &out);
        check(&out.slice(1, Some(1), None, 2).unwrap(), &out);
        check(&out.select(0, 2).unwrap(), &out);
        let permuted = View::new(vec![3, 4], vec![1, 3], 0);
        check(&permuted, &permuted);
        check(&permuted.t().unwrap(), &permuted);
    }

    #[test]
    fn merged_dims_do_not_compose() {
        let out = View::new(vec![3, 4], vec![1, 3], 0);
        // Reading the transposed-layout buffer as 12 contiguous elements merges dims.
        assert!(compose_views(&View::contiguous(&[12]), &out).is_none());
        // A flat view of a row-major [3, 4] buffer needs div/mod, not an affine map.
        assert!(compose_views(&View::contiguous(&[12]), &View::contiguous(&[3, 4])).is_none());
    }
}

/// The view a kernel reads at point `p` of `space` when a consumer reads `view` at its
/// logical index `map(p)`: the read expressed directly over the kernel's space.
pub fn view_at(view: &View, map: &AffineMap, space: &[usize]) -> Option<View> {
    let index = map.index_through(view);
    (index.offset >= 0).then(|| View::new(space, index.strides, index.offset as usize))
}

/// The map from a point of `space` to the producer's logical index (the producer wrote its
/// buffer through `out`) when a consumer at `map(p)` reads that buffer through `view`. A view
/// reading the producer's complex elements as parts maps to the element whose part it reads
/// (when that is one part throughout, [`crate::reading::source`]); a paired read (each element
/// from two of the producer's) has no one map.
pub fn read_map(view: &View, map: &AffineMap, space: &[usize], out: &View) -> Option<AffineMap> {
    match crate::reading::source(view)? {
        Source::Same(v) | Source::Part(v, _) => compose_views(&view_at(&v, map, space)?, out),
        Source::Pair(..) => None,
    }
}

/// The coarsest shape both `a` and `b` are row-major groupings of (equal element counts):
/// `[12]` and `[4, 3]` give `[4, 3]`; `None` when no such shape exists (`[3, 4]` vs `[2, 6]`).
/// Size-1 dims are dropped.
pub fn common_refinement(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let a: Vec<usize> = a.iter().copied().filter(|&n| n != 1).collect();
    let b: Vec<usize> = b.iter().copied().filter(|&n| n != 1).collect();
    if a.iter().product::<usize>() != b.iter().product::<usize>()
        || a.contains(&0)
        || b.contains(&0)
    {
        return None;
    }
    let (mut i, mut j) = (a.len(), b.len());
    let (mut ra, mut rb) = (0usize, 0usize);
    let mut out = vec![];
    loop {
        if ra == 0 {
            if i == 0 {
                break;
            }
            i -= 1;
            ra = a[i];
        }
        if rb == 0 {
            if j == 0 {
                return None;
            }
            j -= 1;
            rb = b[j];
        }
        if ra == rb {
            out.push(ra);
            (ra, rb) = (0, 0);
        } else if ra % rb == 0 {
            out.push(rb);
            ra /= rb;
            rb = 0;
        } else if rb % ra == 0 {
            out.push(ra);
            rb /= ra;
            ra = 0;
        } else {
            return None;
        }
    }
    (rb == 0 && j == 0).then(|| out.into_iter().rev().collect())
}

/// The affine map taking a point of `fine` (a refinement of `coarse`, see
/// [`common_refinement`]) to the corresponding point of `coarse` (each coarse dim is the
/// row-major linearisation of a run of fine dims; size-1 coarse dims stay 0).
pub fn merge_map(fine: &[usize], coarse: &[usize]) -> Option<AffineMap> {
    let mut coeffs = vec![vec![0isize; fine.len()]; coarse.len()];
    let mut k = fine.len();
    for (d, &n) in coarse.iter().enumerate().rev() {
        if n == 1 {
            continue;
        }
        let mut acc = 1usize;
        while acc < n {
            if k == 0 {
                return None;
            }
            k -= 1;
            coeffs[d][k] = acc as isize;
            acc *= fine[k];
        }
        if acc != n {
            return None;
        }
    }
    (k == 0).then(|| AffineMap {
        coeffs,
        offset: vec![0; coarse.len()],
        inputs: fine.len(),
    })
}

#[cfg(test)]
mod refinement_tests {
    use super::*;

    #[test]
    fn refinements_of_row_major_shapes() {
        assert_eq!(common_refinement(&[12], &[4, 3]), Some(vec![4, 3]));
        assert_eq!(common_refinement(&[6, 4], &[2, 12]), Some(vec![2, 3, 4]));
        assert_eq!(common_refinement(&[3, 4], &[2, 6]), None);
        assert_eq!(common_refinement(&[1, 12, 1], &[4, 3]), Some(vec![4, 3]));
        let m = merge_map(&[2, 3, 4], &[6, 4]).unwrap();
        assert_eq!(m.coeffs, vec![vec![3, 1, 0], vec![0, 0, 1]]);
        let m = merge_map(&[4, 3], &[1, 12]).unwrap();
        assert_eq!(m.coeffs, vec![vec![0, 0], vec![3, 1]]);
    }
}
