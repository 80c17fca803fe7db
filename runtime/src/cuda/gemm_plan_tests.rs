//! The view → cuBLAS mapping checked without a GPU: a host column-major gemm that reads the
//! plan's arguments exactly as cuBLAS documents them must reproduce `matmul_reference`.

use super::*;
use crate::buffer::HostBuffer;
use crate::library::matmul_reference;
use crate::memory::Memory;
use smelt_ir::{DType, LibraryCall, LibraryOp};
use std::sync::Arc;

/// `cublas<t>gemmStridedBatched` with alpha = 1, beta = 0 on host slices, one call per outer
/// point: `C[i + j·ldc] = Σ_l op(A)(i, l)·op(B)(l, j)` with `op(X)(i, l) = X[i + l·ld]` (N) or
/// `X[l + i·ld]` (T). Checks cuBLAS's argument rules first.
fn cublas_reference(p: &GemmPlan, a: &[f64], b: &[f64], c: &mut [f64]) {
    let int = i32::MAX as usize;
    assert!(
        [p.m, p.n, p.k, p.lda, p.ldb, p.ldc, p.batch]
            .iter()
            .all(|&x| x <= int)
    );
    assert!(
        p.lda >= if p.transa { p.k } else { p.m }.max(1),
        "lda {p:?}"
    );
    assert!(
        p.ldb >= if p.transb { p.n } else { p.k }.max(1),
        "ldb {p:?}"
    );
    assert!(p.ldc >= p.m.max(1), "ldc {p:?}");
    assert!(p.batch >= 1);
    let at = |x: &[f64], trans: bool, ld: usize, base: isize, i: usize, l: usize| {
        let idx = if trans { l + i * ld } else { i + l * ld };
        x[usize::try_from(base + idx as isize).expect("address inside the buffer")]
    };
    p.for_each_call(|oa, ob, oc| {
        for batch in 0..p.batch as isize {
            let (ba, bb, bc) = (
                oa as isize + batch * p.stride_a,
                ob as isize + batch * p.stride_b,
                oc as isize + batch * p.stride_c,
            );
            for j in 0..p.n {
                for i in 0..p.m {
                    let mut acc = 0.0;
                    for l in 0..p.k {
                        acc += at(a, p.transa, p.lda, ba, i, l) * at(b, p.transb, p.ldb, bb, l, j);
                    }
                    c[(bc + (i + j * p.ldc) as isize) as usize] = acc;
                }
            }
        }
    });
}

fn values(len: usize, seed: usize) -> Arc<HostBuffer> {
    let v: Vec<f64> = (0..len)
        .map(|i| ((i * 7 + seed * 3) % 11) as f64 - 5.0)
        .collect();
    Arc::new(HostBuffer::F64(Memory::from(v)))
}

fn f64s(b: &HostBuffer) -> &[f64] {
    match b {
        HostBuffer::F64(v) => v,
        HostBuffer::Bool(_)
        | HostBuffer::U8(_)
        | HostBuffer::I8(_)
        | HostBuffer::I16(_)
        | HostBuffer::I32(_)
        | HostBuffer::I64(_)
        | HostBuffer::F16(_)
        | HostBuffer::BF16(_)
        | HostBuffer::F32(_) => panic!("test buffers are f64"),
    }
}

/// The elements a view needs in its buffer.
fn len_of(v: &View) -> usize {
    v.address_range()
        .map_or(v.offset + 1, |(_, hi)| hi as usize + 1)
}

/// `v` of `buffer` copied into a fresh dense buffer laid out by [`staging`].
fn contiguous_copy(buffer: &HostBuffer, v: &View) -> Arc<HostBuffer> {
    let dense = staging(v);
    let mut out = HostBuffer::zeros(buffer.dtype(), v.numel());
    for_each_index(&v.shape, |p| {
        out.set(dense.address(p) as usize, buffer.get(v.address(p) as usize));
    });
    Arc::new(out)
}

/// [`check_with`] never copying operands to avoid a loop (these problems are tiny): the plan
/// as the views alone decide it.
fn check(av: &View, bv: &View, ov: &View) -> Option<GemmPlan> {
    check_with(av, bv, ov, 0).map(|p| p.plan)
}

/// Runs `a @ b` through the plan ([`prepare`] `loop_min_macs`) and the host cuBLAS model
/// and through `matmul_reference`; they must agree exactly (small integers, so every sum is
/// exact). Returns the plan.
fn check_with(av: &View, bv: &View, ov: &View, loop_min_macs: usize) -> Option<MatmulPlan> {
    let (a, b) = (values(len_of(av), 1), values(len_of(bv), 2));
    let len = len_of(ov);
    let call = LibraryCall {
        op: LibraryOp::Matmul,
        inputs: vec![(DType::F64, av.clone()), (DType::F64, bv.clone())],
        dtype: DType::F64,
        len,
        out: ov.clone(),
    };
    let mut expected = HostBuffer::zeros(DType::F64, len);
    matmul_reference(&call, &[a.clone(), b.clone()], &mut expected);
    let Some(prepared) = prepare(av, bv, ov, len, loop_min_macs) else {
        assert!(
            ov.numel() == 0 || av.shape[av.ndim() - 1] == 0,
            "unplanned non-empty matmul {av} {bv} {ov}"
        );
        return None;
    };
    // The copies the device makes with a copy kernel, made here on the host.
    let readable = |buffer: &Arc<HostBuffer>, copy: &Option<View>| match copy {
        Some(v) => contiguous_copy(buffer, v),
        None => buffer.clone(),
    };
    let (a, b) = (
        readable(&a, &prepared.copy_a),
        readable(&b, &prepared.copy_b),
    );
    let (a, b) = if prepared.plan.swapped {
        (b, a)
    } else {
        (a, b)
    };
    // Where the plan says the calls write all of `c`, it starts as NaN (the device leaves it
    // uninitialised): an element they missed would show.
    let fill = if prepared.covers_c { f64::NAN } else { 0.0 };
    let mut c = vec![fill; prepared.c_len];
    cublas_reference(&prepared.plan, f64s(&a), f64s(&b), &mut c);
    let c = HostBuffer::F64(Memory::from(c));
    let got = match &prepared.scatter {
        Some(real) => {
            let mut out = HostBuffer::zeros(DType::F64, len);
            let dense = View::contiguous(&real.shape);
            for_each_index(&real.shape, |p| {
                out.set(real.address(p) as usize, c.get(dense.address(p) as usize));
            });
            out
        }
        None => c,
    };
    assert_eq!(got, expected, "{av} @ {bv} -> {ov}: {:?}", prepared.plan);
    Some(prepared)
}

fn view(shape: &[usize], strides: &[isize], offset: usize) -> View {
    View::new(shape.to_vec(), strides.to_vec(), offset)
}

fn dense(shape: &[usize]) -> View {
    View::contiguous(shape)
}

#[test]
fn contiguous_uses_the_row_major_trick_without_transposes() {
    let p = check(&dense(&[3, 4]), &dense(&[4, 5]), &dense(&[3, 5])).unwrap();
    assert!(p.swapped && !p.transa && !p.transb);
    assert_eq!((p.m, p.n, p.k), (5, 3, 4));
    assert_eq!((p.lda, p.ldb, p.ldc), (5, 4, 5));
    assert_eq!((p.batch, p.outer.len()), (1, 0));
}

#[test]
fn transposed_operands_become_transposes() {
    // a = [4, 3]ᵀ, b = [5, 4]ᵀ.
    let at = dense(&[4, 3]).t().unwrap();
    let bt = dense(&[5, 4]).t().unwrap();
    let p = check(&at, &dense(&[4, 5]), &dense(&[3, 5])).unwrap();
    assert!(p.swapped && !p.transa && p.transb && p.ldb == 3);
    let p = check(&dense(&[3, 4]), &bt, &dense(&[3, 5])).unwrap();
    assert!(p.transa && !p.transb && p.lda == 4);
    let p = check(&at, &bt, &dense(&[3, 5])).unwrap();
    assert!(p.transa && p.transb);
}

#[test]
fn column_major_output_computes_c_directly() {
    let ov = dense(&[5, 3]).t().unwrap();
    let p = check(&dense(&[3, 4]), &dense(&[4, 5]), &ov).unwrap();
    assert!(!p.swapped && p.transa && p.transb);
    assert_eq!((p.m, p.n, p.k, p.ldc), (3, 5, 4, 3));
}

#[test]
fn sliced_rows_keep_their_leading_dimension_and_offset() {
    // Rows 1..4, cols 2..6 of a [6, 10] matrix; out is a slice of a wider buffer.
    let av = view(&[3, 4], &[10, 1], 12);
    let bv = view(&[4, 5], &[7, 1], 3);
    let ov = view(&[3, 5], &[8, 1], 2);
    let p = check(&av, &bv, &ov).unwrap();
    assert_eq!((p.lda, p.ldb, p.ldc), (7, 10, 8));
    assert_eq!((p.offset_a, p.offset_b, p.offset_c), (3, 12, 2));
}

#[test]
fn batches_merge_into_one_strided_call() {
    let p = check(
        &dense(&[2, 3, 3, 4]),
        &dense(&[2, 3, 4, 5]),
        &dense(&[2, 3, 3, 5]),
    )
    .unwrap();
    assert_eq!((p.batch, p.outer.len()), (6, 0));
    assert_eq!((p.stride_a, p.stride_b, p.stride_c), (20, 12, 15));
}

#[test]
fn broadcast_batch_is_stride_zero() {
    // b is one [4, 5] matrix expanded over the batch; a's matrices are padded apart (else
    // the batch folds into one product: `a_shared_weight_folds_the_batch_into_one_product`).
    let bv = view(&[2, 3, 4, 5], &[0, 0, 5, 1], 0);
    let av = view(&[2, 3, 3, 4], &[48, 16, 4, 1], 0);
    let p = check(&av, &bv, &dense(&[2, 3, 3, 5])).unwrap();
    assert_eq!((p.batch, p.stride_a, p.stride_b), (6, 0, 16));
}

#[test]
fn batch_dims_that_do_not_nest_are_looped() {
    // a's batch dims are permuted in memory: [3, 2] over storage [2, 3, M, K].
    let av = dense(&[2, 3, 3, 4]).permute(&[1, 0, 2, 3]).unwrap();
    let p = check(&av, &dense(&[3, 2, 4, 5]), &dense(&[3, 2, 3, 5])).unwrap();
    assert_eq!((p.batch, p.outer.len()), (2, 1));
    // A negative batch stride is looped, not passed to cuBLAS.
    let av = view(&[3, 2, 4], &[-8, 4, 1], 16);
    let p = check(&av, &dense(&[3, 4, 2]), &dense(&[3, 2, 2])).unwrap();
    assert_eq!((p.batch, p.outer.len()), (1, 1));
}

#[test]
fn small_looped_batches_read_dense_copies_in_one_call() {
    // Attention's heads: qkv [B, T, 3·H·D] viewed [B, T, H, D] and transposed to
    // [B, H, T, D]; q @ kᵀ and (q @ kᵀ) @ v over the (B, H) batch, whose strides do not nest.
    let (b, t, h, d) = (2, 5, 3, 4);
    let head = |at: usize| {
        view(
            &[b, h, t, d],
            &[
                (t * 3 * h * d) as isize,
                d as isize,
                (3 * h * d) as isize,
                1,
            ],
            at,
        )
    };
    let (q, k, v) = (head(0), head(h * d), head(2 * h * d));
    let kt = k.transpose(2, 3).unwrap();
    let scores = dense(&[b, h, t, t]);
    assert_eq!(check(&q, &kt, &scores).unwrap().outer.len(), 1);
    let one = check_with(&q, &kt, &scores, LOOP_MIN_MACS).unwrap();
    assert!(one.copy_a.is_some() && one.copy_b.is_some() && one.scatter.is_none());
    // kᵀ is copied as k and read transposed: the copy walks both memories in one order.
    assert!(staging(&kt).transpose(2, 3).unwrap().is_contiguous() && one.plan.transa);
    assert_eq!((one.plan.batch, one.plan.outer.len()), (b * h, 0));
    let one = check_with(&scores, &v, &dense(&[b, h, t, d]), LOOP_MIN_MACS).unwrap();
    assert!(one.copy_a.is_none() && one.copy_b.is_some());
    assert_eq!((one.plan.batch, one.plan.outer.len()), (b * h, 0));
    // Large enough per call, the loop stays and nothing is copied.
    let looped = check_with(&q, &kt, &scores, 1).unwrap();
    assert!(looped.copy_a.is_none() && looped.copy_b.is_none());
    assert_eq!(looped.plan.outer.len(), 1);
    // A broadcast operand is never materialised to remove a loop.
    let shared = view(&[b, h, d, t], &[0, 0, t as isize, 1], 0);
    let p = check_with(&q, &shared, &scores, LOOP_MIN_MACS).unwrap();
    assert!(p.copy_b.is_none());
}

#[test]
fn a_shared_weight_folds_the_batch_into_one_product() {
    // x [B, T, C] @ w [C, D]: one (B·T)×C by C×D product, not B of T×C.
    let w = view(&[2, 4, 6], &[0, 6, 1], 0);
    let p = check(&dense(&[2, 3, 4]), &w, &dense(&[2, 3, 6])).unwrap();
    assert!(p.swapped);
    assert_eq!((p.m, p.n, p.k, p.batch), (6, 6, 4, 1));
    // Rows that do not carry on (a padded x) stay a batch.
    let x = view(&[2, 3, 4], &[16, 4, 1], 0);
    let p = check(&x, &w, &dense(&[2, 3, 6])).unwrap();
    assert_eq!((p.n, p.batch), (3, 2));
}

#[test]
fn inexpressible_views_are_copied() {
    // Both strides of a ≠ 1 (every other column), a broadcast row of b, an output with
    // both strides ≠ 1.
    let av = view(&[3, 4], &[8, 2], 0);
    let bv = view(&[4, 5], &[0, 1], 0);
    let ov = view(&[3, 5], &[10, 2], 1);
    assert!(!is_expressible(&av) && !is_expressible(&bv) && !is_expressible(&ov));
    check(&av, &bv, &ov).unwrap();
}

#[test]
fn vectors_and_unit_dims_take_any_stride() {
    // M = 1 with a weird row stride, N = 1, K = 1.
    check(
        &view(&[1, 4], &[99, 1], 0),
        &dense(&[4, 5]),
        &dense(&[1, 5]),
    )
    .unwrap();
    check(
        &dense(&[3, 4]),
        &view(&[4, 1], &[1, 0], 0),
        &view(&[3, 1], &[1, 7], 0),
    )
    .unwrap();
    check(
        &view(&[3, 1], &[1, 0], 0),
        &view(&[1, 5], &[0, 1], 0),
        &dense(&[3, 5]),
    )
    .unwrap();
}

#[test]
fn empty_problems_are_not_planned() {
    assert!(check(&dense(&[0, 4]), &dense(&[4, 5]), &dense(&[0, 5])).is_none());
    assert!(check(&dense(&[3, 0]), &dense(&[0, 5]), &dense(&[3, 5])).is_none());
    assert!(check(&dense(&[0, 3, 4]), &dense(&[0, 4, 5]), &dense(&[0, 3, 5])).is_none());
}

/// A tiny deterministic generator for the random views below.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// A view of logical `shape` laid out in a random dim order with random padding, steps,
/// broadcast dims (inputs only) and negated strides.
fn random_view(rng: &mut Lcg, shape: &[usize], input: bool) -> View {
    let r = shape.len();
    let mut order: Vec<usize> = (0..r).collect();
    for i in (1..r).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let mut strides = vec![0isize; r];
    let mut running = 1isize;
    for &d in order.iter().rev() {
        let step = if rng.below(4) == 0 { 2 } else { 1 };
        strides[d] = running * step;
        running *= (shape[d] as isize * step) + rng.below(3) as isize;
    }
    let mut offset = rng.below(3);
    for d in 0..r {
        if input && rng.below(6) == 0 {
            strides[d] = 0;
        } else if rng.below(8) == 0 {
            offset += (shape[d].max(1) - 1) * strides[d] as usize;
            strides[d] = -strides[d];
        }
    }
    View::new(shape.to_vec(), strides, offset)
}

#[test]
fn random_views_match_the_reference() {
    let mut rng = Lcg(7);
    let (mut direct, mut copied, mut looped, mut densified) = (0, 0, 0, 0);
    for _ in 0..600 {
        let batch: Vec<usize> = (0..rng.below(3)).map(|_| rng.below(3) + 1).collect();
        let (m, n, k) = (rng.below(4) + 1, rng.below(4) + 1, rng.below(4) + 1);
        let shape = |x, y| [batch.clone(), vec![x, y]].concat();
        let av = random_view(&mut rng, &shape(m, k), true);
        let bv = random_view(&mut rng, &shape(k, n), true);
        let ov = random_view(&mut rng, &shape(m, n), false);
        if [&av, &bv, &ov].iter().all(|v| is_expressible(v)) {
            direct += 1;
        } else {
            copied += 1;
        }
        let p = check(&av, &bv, &ov).expect("non-empty problems are planned");
        looped += usize::from(!p.outer.is_empty());
        // Tiny problems: dense copies remove the loop wherever no broadcast operand keeps it.
        let dense = check_with(&av, &bv, &ov, LOOP_MIN_MACS).expect("and with dense batches");
        densified += usize::from(!p.outer.is_empty() && dense.plan.outer.is_empty());
    }
    // The generator reaches every path.
    assert!(
        direct > 50 && copied > 50 && looped > 20 && densified > 20,
        "{direct} {copied} {looped} {densified}"
    );
}
