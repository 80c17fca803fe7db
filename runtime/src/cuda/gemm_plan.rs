//! The pure half of matmul on cuBLAS: how smelt's row-major strided views
//! `[*B, M, K] @ [*B, K, N] -> [*B, M, N]` map onto column-major `gemmStridedBatched` calls.
//!
//! cuBLAS reads an r×c matrix X column-major with a leading dimension: X(i, j) lives at
//! `i + j·ld`, `ld ≥ max(1, r)`, and `op(X)` is X (N) or Xᵀ (T). A smelt matrix view with
//! `rows × cols` and strides `(sr, sc)` is
//! - column-major when `sr = 1` and `sc ≥ rows`: the matrix itself, N, `ld = sc`;
//! - row-major when `sc = 1` and `sr ≥ cols`: the transpose of a column-major cols×rows
//!   matrix, T, `ld = sr`.
//!
//! A dim of size 1 never moves the address, so its stride is free. Anything else (both strides
//! ≠ 1, a broadcast stride 0 in a matrix dim, overlapping or negative strides) is not
//! expressible: [`prepare`] plans a copy of such an input into a contiguous buffer (a copy
//! kernel on the device), and an output that is not expressible is computed into a contiguous
//! buffer and copied into the real output view afterwards.
//!
//! The output decides the orientation. A row-major C (`stride(N) = 1`, the usual case) is
//! computed as `Cᵀ = Bᵀ·Aᵀ` (the row-major trick): cuBLAS's m, n are N, M, its A is smelt's B
//! and its B is smelt's A. A column-major C is computed as `C = A·B` directly.
//!
//! Batch dims (equal sizes in the three views; broadcasting already made them stride 0) drop
//! size-1 dims and merge neighbours whose strides nest in all three views. The innermost merged
//! dim becomes cuBLAS's batch when its strides are non-negative (stride 0 re-reads one operand
//! matrix for every batch, which cuBLAS allows); the other dims are looped over, one call per
//! outer point, unless each call would be small ([`LOOP_MIN_MACS`]): then the strided operands
//! are copied dense first and one call covers the batch. A batch over one shared operand whose
//! other matrices carry on column after column folds into a single larger product. Sizes and
//! leading dimensions must fit cuBLAS's `int`; a problem that does not is left to the host gemm
//! ([`plan`] returns `None`).

use crate::library::for_each_index;
use smelt_ir::View;

/// One outer batch dim looped over outside cuBLAS: its size and its strides in cuBLAS's
/// A, B and C.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OuterDim {
    pub size: usize,
    pub strides: [isize; 3],
}

/// The arguments of the `gemmStridedBatched` calls for one matmul, exactly as cuBLAS reads
/// them (element units). `alpha = 1`, `beta = 0`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GemmPlan {
    /// cuBLAS's A is smelt's `b` and its B is smelt's `a` (the row-major trick).
    pub swapped: bool,
    pub transa: bool,
    pub transb: bool,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub lda: usize,
    pub ldb: usize,
    pub ldc: usize,
    pub batch: usize,
    pub stride_a: isize,
    pub stride_b: isize,
    pub stride_c: isize,
    /// Where batch 0 of the first outer point starts in cuBLAS's A, B, C buffers.
    pub offset_a: usize,
    pub offset_b: usize,
    pub offset_c: usize,
    pub outer: Vec<OuterDim>,
}

impl GemmPlan {
    /// Calls `f` with the (A, B, C) element offsets of each cuBLAS call, one per outer point.
    pub fn for_each_call(&self, mut f: impl FnMut(usize, usize, usize)) {
        let sizes: Vec<usize> = self.outer.iter().map(|d| d.size).collect();
        for_each_index(&sizes, |point| {
            let mut offsets = [
                self.offset_a as isize,
                self.offset_b as isize,
                self.offset_c as isize,
            ];
            for (&i, d) in point.iter().zip(&self.outer) {
                for (o, s) in offsets.iter_mut().zip(d.strides) {
                    *o += i as isize * s;
                }
            }
            let [a, b, c] = offsets.map(|o| {
                usize::try_from(o).expect("invariant: an outer point starts inside its buffer")
            });
            f(a, b, c);
        });
    }
}

/// The largest size, leading dimension or batch count cuBLAS takes (`int`).
const CUBLAS_INT_MAX: usize = i32::MAX as usize;

/// The leading dimension of a `rows × cols` matrix with strides `(sr, sc)` read column-major
/// as it is (N), or `None`.
fn column_major_ld(rows: usize, cols: usize, sr: isize, sc: isize) -> Option<usize> {
    if rows > 1 && sr != 1 {
        return None;
    }
    let min_ld = rows.max(1);
    let ld = if cols <= 1 {
        min_ld
    } else {
        usize::try_from(sc).ok().filter(|&ld| ld >= min_ld)?
    };
    (ld <= CUBLAS_INT_MAX).then_some(ld)
}

/// How cuBLAS reads a `rows × cols` matrix with strides `(sr, sc)`: (transposed, ld).
fn operand(rows: usize, cols: usize, sr: isize, sc: isize) -> Option<(bool, usize)> {
    column_major_ld(rows, cols, sr, sc)
        .map(|ld| (false, ld))
        .or_else(|| column_major_ld(cols, rows, sc, sr).map(|ld| (true, ld)))
}

/// Whether cuBLAS can read the matrices of `v` (its last two dims) in place.
pub fn is_expressible(v: &View) -> bool {
    let r = v.ndim();
    operand(
        v.shape[r - 2],
        v.shape[r - 1],
        v.strides[r - 2],
        v.strides[r - 1],
    )
    .is_some()
}

/// The cuBLAS calls for `a @ b -> out` with views `[*B, M, K]`, `[*B, K, N]`, `[*B, M, N]`
/// (checked by the caller), or `None` when a matrix is not expressible or a size exceeds
/// cuBLAS's `int`. The problem is not empty (M, N, K and the batch are nonzero).
pub fn plan(av: &View, bv: &View, ov: &View) -> Option<GemmPlan> {
    let r = ov.ndim();
    let (m, n, k) = (ov.shape[r - 2], ov.shape[r - 1], av.shape[r - 1]);
    if [m, n, k].iter().any(|&d| d == 0 || d > CUBLAS_INT_MAX) {
        return None;
    }
    let (sa, sb, so) = (&av.strides, &bv.strides, &ov.strides);
    // cuBLAS's (m, n, ldc) and which operand it reads first.
    let (swapped, cm, cn, ldc) = if let Some(ld) = column_major_ld(n, m, so[r - 1], so[r - 2]) {
        (true, n, m, ld)
    } else {
        let ld = column_major_ld(m, n, so[r - 2], so[r - 1])?;
        (false, m, n, ld)
    };
    let ((transa, lda), (transb, ldb)) = if swapped {
        // A' = Bᵀ (N × K), B' = Aᵀ (K × M).
        (
            operand(n, k, sb[r - 1], sb[r - 2])?,
            operand(k, m, sa[r - 1], sa[r - 2])?,
        )
    } else {
        (
            operand(m, k, sa[r - 2], sa[r - 1])?,
            operand(k, n, sb[r - 2], sb[r - 1])?,
        )
    };
    let (first, second) = if swapped { (bv, av) } else { (av, bv) };
    // Batch dims as (size, [stride in A', B', C']), size-1 dims dropped, nesting dims merged.
    let mut dims: Vec<(usize, [isize; 3])> = Vec::new();
    let batch_dims = ov.shape[..r - 2]
        .iter()
        .zip(&first.strides)
        .zip(&second.strides)
        .zip(so);
    for (((&size, &s1), &s2), &s3) in batch_dims {
        if size == 0 {
            return None;
        }
        if size == 1 {
            continue;
        }
        let strides = [s1, s2, s3];
        match dims.last_mut() {
            Some((outer_size, outer)) if (0..3).all(|i| outer[i] == strides[i] * size as isize) => {
                *outer_size *= size;
                *outer = strides;
            }
            Some(_) | None => dims.push((size, strides)),
        }
    }
    let (mut batch, [stride_a, stride_b, stride_c]) = match dims.last() {
        Some(&(size, strides)) if strides.iter().all(|&s| s >= 0) && size <= CUBLAS_INT_MAX => {
            dims.pop();
            (size, strides)
        }
        Some(_) | None => (1, [0, 0, 0]),
    };
    // One A' for every batch point whose B' and C' columns carry on from one batch point to
    // the next (`x[B, T, C] @ w[C, D]`, read as Cᵀ = wᵀ·xᵀ): a single product with B·n columns,
    // one larger GEMM rather than B small ones (PyTorch's `matmul` folds the same way).
    let mut cn = cn;
    let folds = batch > 1
        && stride_a == 0
        && !transb
        && stride_b == (cn * ldb) as isize
        && stride_c == (cn * ldc) as isize
        && batch * cn <= CUBLAS_INT_MAX;
    if folds {
        cn *= batch;
        batch = 1;
    }
    Some(GemmPlan {
        swapped,
        transa,
        transb,
        m: cm,
        n: cn,
        k,
        lda,
        ldb,
        ldc,
        batch,
        stride_a,
        stride_b,
        stride_c,
        offset_a: first.offset,
        offset_b: second.offset,
        offset_c: ov.offset,
        outer: dims
            .into_iter()
            .map(|(size, strides)| OuterDim { size, strides })
            .collect(),
    })
}

/// A matmul ready for cuBLAS, worked out from the views alone: which operands must first be
/// copied contiguous (those cuBLAS cannot read in place), the calls, and where the result goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatmulPlan {
    /// The views of smelt's `a` and `b` to copy into dense buffers of their shapes, laid out
    /// by [`staging`], before the calls (`None`: read in place).
    pub copy_a: Option<View>,
    pub copy_b: Option<View>,
    pub plan: GemmPlan,
    /// Elements of the buffer cuBLAS writes.
    pub c_len: usize,
    /// Whether the calls write every element of that buffer (then it need not be zeroed
    /// first): its view covers it, and K > 0 (an empty problem is never planned).
    pub covers_c: bool,
    /// When the output view was not expressible, cuBLAS writes a contiguous `[*B, M, N]`
    /// buffer and this is the real output view to copy it into.
    pub scatter: Option<View>,
}

/// Below this many multiply-adds per cuBLAS call, a loop of calls over batch dims that do not
/// nest costs more (a launch each, and too few thread blocks to fill the SMs) than copying
/// the operands whose batch dims break the nesting into dense buffers for one call over the
/// whole batch: attention's `q @ kᵀ` on heads split by `view`/`transpose` ran as 8 calls of
/// 12 heads of 256×256×64, 0.14 ms in f32 on an H200, and as two copies and one call of 96
/// heads 0.09–0.11 ms (`SMELT_DUMP=timing`).
pub const LOOP_MIN_MACS: usize = 1 << 28;

/// Where a copy of operand `v` goes: a dense buffer of its shape, the matrices kept in the
/// order `v` walks them (a transposed view, `kᵀ`, is copied as the untransposed matrices and
/// read transposed), so that the copy walks `v`'s memory and its own the same way.
pub fn staging(v: &View) -> View {
    let r = v.ndim();
    let row_major = r < 2
        || v.shape[r - 2] <= 1
        || v.shape[r - 1] <= 1
        || v.strides[r - 1].unsigned_abs() <= v.strides[r - 2].unsigned_abs();
    if row_major {
        return View::contiguous(&v.shape);
    }
    let mut swapped = v.shape.clone();
    swapped.swap(r - 2, r - 1);
    let mut strides = View::contiguous(&swapped).strides;
    strides.swap(r - 2, r - 1);
    View::new(v.shape.clone(), strides, 0)
}

/// Plans `a @ b -> out` (views `av`, `bv`, `ov`, output buffer of `len` elements), looping
/// over batch dims that do not nest only when each call does at least `loop_min_macs`
/// multiply-adds ([`LOOP_MIN_MACS`] by default); a smaller problem reads its strided operands
/// (any but a broadcast one) from dense copies and runs as one call when that removes the
/// loop. `None` when the problem is empty or too large for cuBLAS.
pub fn prepare(
    av: &View,
    bv: &View,
    ov: &View,
    len: usize,
    loop_min_macs: usize,
) -> Option<MatmulPlan> {
    if ov.numel() == 0 || av.shape[av.ndim() - 1] == 0 {
        return None;
    }
    let direct = plan_copies(av, bv, ov, len, false)?;
    let p = &direct.plan;
    let macs = [p.m, p.n, p.k]
        .iter()
        .fold(p.batch, |a, &d| a.saturating_mul(d));
    if p.outer.is_empty() || macs >= loop_min_macs {
        return Some(direct);
    }
    match plan_copies(av, bv, ov, len, true) {
        Some(dense) if dense.plan.outer.is_empty() => Some(dense),
        Some(_) | None => Some(direct),
    }
}

/// The plan that copies what cuBLAS cannot read in place, and with `dense_batches` also every
/// strided operand and output that is not a broadcast (so that their batch dims nest).
fn plan_copies(
    av: &View,
    bv: &View,
    ov: &View,
    len: usize,
    dense_batches: bool,
) -> Option<MatmulPlan> {
    let broadcast = |v: &View| {
        v.shape
            .iter()
            .zip(&v.strides)
            .any(|(&d, &s)| d > 1 && s == 0)
    };
    let restage =
        |v: &View| !is_expressible(v) || dense_batches && !v.is_contiguous() && !broadcast(v);
    let readable = |v: &View| {
        if restage(v) {
            (Some(v.clone()), staging(v))
        } else {
            (None, v.clone())
        }
    };
    let (copy_a, av) = readable(av);
    let (copy_b, bv) = readable(bv);
    let (ov_used, c_len, scatter) = if restage(ov) {
        (View::contiguous(&ov.shape), ov.numel(), Some(ov.clone()))
    } else {
        (ov.clone(), len, None)
    };
    Some(MatmulPlan {
        copy_a,
        copy_b,
        plan: plan(&av, &bv, &ov_used)?,
        c_len,
        covers_c: ov_used.numel() == c_len && ov_used.internal_overlap() == Some(false),
        scatter,
    })
}

#[cfg(test)]
#[path = "gemm_plan_tests.rs"]
mod tests;
