//! Affine index maps between iteration spaces, and the composition of a consumer's view of a
//! buffer with the producer's output view (the heart of fusing through views).

use crate::View;
use crate::kernel::Index;

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
    // Producer dims that matter, outermost (largest stride) first.
    let mut dims: Vec<usize> = (0..rank_out).filter(|&j| out.shape[j] > 1).collect();
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
