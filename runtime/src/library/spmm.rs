//! Sparse × dense products ([`LibraryOp::SpMM`]): `out[m, n] = Σ values[e]·dense[cols[e], n]`
//! over the entries `e` of row `m`. The entries arrive sorted by row (the frontend sorts an
//! uncoalesced operand first), so row `m`'s entries are the stretch a binary search finds,
//! and every output row is independent: rows run in parallel on rayon's threads, each folding
//! its entries in order into a row of accumulators (whole rows of the dense operand, which the
//! compiler vectorises when they are contiguous; for AVX2 too, chosen at run time, without
//! FMA so that the bits stay the same). The CUDA kernel folds the same products in
//! the same order, one thread per output element, so both agree bit for bit.
//!
//! Accumulators: the value dtype for f32 and f64 (as a GEMM does), f32 for f16/bf16, wrapping
//! i64 for integers; one rounding at the end. An entry whose row or column is out of range
//! adds nothing.
//!
//! [`LibraryOp::SpMM`]: smelt_ir::LibraryOp::SpMM

use crate::buffer::HostBuffer;
use rayon::prelude::*;
use smelt_ir::{LibraryCall, Scalar, View};
use std::ops::{Add, Mul};
use std::sync::Arc;

/// Output rows below this many products per thread run on one thread.
const PARALLEL_WORK: usize = 1 << 16;

/// The views of a product: rows, cols, values `[nnz]`, dense `[K, N]`, out `[M, N]`.
struct Views<'a> {
    rows: &'a View,
    cols: &'a View,
    values: &'a View,
    dense: &'a View,
    out: &'a View,
}

fn views(call: &LibraryCall) -> Views<'_> {
    let v = Views {
        rows: &call.inputs[0].1,
        cols: &call.inputs[1].1,
        values: &call.inputs[2].1,
        dense: &call.inputs[3].1,
        out: &call.out,
    };
    let nnz = v.rows.shape.first().copied().unwrap_or(0);
    assert!(
        [v.rows, v.cols, v.values]
            .iter()
            .all(|x| x.ndim() == 1 && x.shape[0] == nnz)
            && v.dense.ndim() == 2
            && v.out.ndim() == 2
            && v.out.shape[1] == v.dense.shape[1],
        "invariant: spmm views are [nnz] x3, [K, N] -> [M, N]: {} {} {} {} {}",
        v.rows,
        v.cols,
        v.values,
        v.dense,
        v.out
    );
    v
}

/// The entry index of each row boundary: row `m`'s entries are `starts[m]..starts[m + 1]`
/// (rows sorted; entries with a negative row come before row 0, those past the last row after).
fn row_starts(rows: &HostBuffer, rv: &View, m_rows: usize) -> Vec<usize> {
    let nnz = rv.shape[0];
    let row = |e: usize| rows.get(rv.address(&[e]) as usize).as_i64();
    (0..=m_rows)
        .map(|m| {
            // The first entry whose row is at least `m` (partition point of a sorted list).
            let (mut lo, mut hi) = (0usize, nnz);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if row(mid) < m as i64 {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo
        })
        .collect()
}

/// Runs the product: typed and parallel for f32/f64 into a row-major output, scalar loops
/// otherwise (the same arithmetic, one element at a time).
pub fn spmm(call: &LibraryCall, inputs: &[Arc<HostBuffer>], out: &mut HostBuffer) {
    let v = views(call);
    let (m_rows, n_cols) = (v.out.shape[0], v.out.shape[1]);
    if m_rows == 0 || n_cols == 0 {
        return;
    }
    let starts = row_starts(&inputs[0], v.rows, m_rows);
    let row_major = v.out.offset == 0 && v.out.strides[..] == [n_cols as isize, 1];
    let done = row_major
        && match (&mut *out, &*inputs[2], &*inputs[3]) {
            (HostBuffer::F32(o), HostBuffer::F32(a), HostBuffer::F32(b)) => {
                rows_typed(o, a, b, &inputs[1], &v, &starts, 0.0f32);
                true
            }
            (HostBuffer::F64(o), HostBuffer::F64(a), HostBuffer::F64(b)) => {
                rows_typed(o, a, b, &inputs[1], &v, &starts, 0.0f64);
                true
            }
            _ => false,
        };
    if !done {
        elements_scalar(call, inputs, out, &v, &starts);
    }
}

/// f32/f64: each output row accumulates `value · dense[col, :]` over its entries, in order.
/// With a contiguous dense row, four entries go through the accumulator row per pass (each
/// element still adds its four products one after another, in entry order): a quarter of the
/// loads and stores of the accumulators, and a loop over the columns the compiler vectorises.
fn rows_typed<T>(
    out: &mut [T],
    values: &[T],
    dense: &[T],
    cols: &HostBuffer,
    v: &Views,
    starts: &[usize],
    zero: T,
) where
    T: Copy + Send + Sync + Add<Output = T> + Mul<Output = T>,
{
    let (k_rows, n_cols) = (v.dense.shape[0], v.out.shape[1]);
    let (ds0, ds1) = (v.dense.strides[0], v.dense.strides[1]);
    let cols_i64: Option<&[i64]> = if let HostBuffer::I64(c) = cols {
        Some(c)
    } else {
        None
    };
    let col_of = |e: usize| {
        let at = v.cols.address(&[e]) as usize;
        cols_i64.map_or_else(|| cols.get(at).as_i64(), |c| c[at])
    };
    // The value and the first dense address of each entry whose column is in range.
    let entry = |e: usize| {
        let col = col_of(e);
        (0..k_rows as i64).contains(&col).then(|| {
            let value = values[v.values.address(&[e]) as usize];
            (
                value,
                (v.dense.offset as isize + col as isize * ds0) as usize,
            )
        })
    };
    #[cfg(target_arch = "x86_64")]
    let avx2 = std::arch::is_x86_feature_detected!("avx2");
    let work = |m: usize, row: &mut [T]| {
        row.fill(zero);
        let entries = (starts[m]..starts[m + 1]).filter_map(entry);
        if ds1 != 1 {
            for (value, base) in entries {
                for (n, acc) in row.iter_mut().enumerate() {
                    *acc = *acc + value * dense[(base as isize + n as isize * ds1) as usize];
                }
            }
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if avx2 {
            // SAFETY: the CPU has AVX2, detected at run time above.
            unsafe { fold_contiguous_avx2(row, entries, dense) };
            return;
        }
        fold_contiguous(row, entries, dense);
    };
    let nnz = v.rows.shape[0];
    let out = &mut out[..(starts.len() - 1) * n_cols];
    if nnz * n_cols >= PARALLEL_WORK {
        out.par_chunks_mut(n_cols)
            .enumerate()
            .for_each(|(m, row)| work(m, row));
    } else {
        out.chunks_mut(n_cols)
            .enumerate()
            .for_each(|(m, row)| work(m, row));
    }
}

/// [`fold_contiguous`] compiled for AVX2: the same operations (separate multiplies and adds,
/// no FMA, so the same bits) on eight f32 or four f64 lanes.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn fold_contiguous_avx2<T, I>(row: &mut [T], entries: I, dense: &[T])
where
    T: Copy + Add<Output = T> + Mul<Output = T>,
    I: Iterator<Item = (T, usize)>,
{
    fold_contiguous(row, entries, dense);
}

/// Adds `value · dense[base..base + row.len()]` into `row` for each `(value, base)` of
/// `entries`, four entries per pass: each element adds its four products one after another,
/// in entry order.
#[inline(always)]
fn fold_contiguous<T, I>(row: &mut [T], mut entries: I, dense: &[T])
where
    T: Copy + Add<Output = T> + Mul<Output = T>,
    I: Iterator<Item = (T, usize)>,
{
    let n_cols = row.len();
    let line = |base: usize| &dense[base..base + n_cols];
    loop {
        let group = [
            entries.next(),
            entries.next(),
            entries.next(),
            entries.next(),
        ];
        match group {
            [
                Some((v0, b0)),
                Some((v1, b1)),
                Some((v2, b2)),
                Some((v3, b3)),
            ] => {
                let lines = line(b0).iter().zip(line(b1)).zip(line(b2)).zip(line(b3));
                for (acc, (((&x0, &x1), &x2), &x3)) in row.iter_mut().zip(lines) {
                    *acc = *acc + v0 * x0 + v1 * x1 + v2 * x2 + v3 * x3;
                }
            }
            rest => {
                for (value, base) in rest.into_iter().flatten() {
                    for (acc, &x) in row.iter_mut().zip(line(base)) {
                        *acc = *acc + value * x;
                    }
                }
                return;
            }
        }
    }
}

/// Any dtype, one output element at a time: f32 accumulators for f16/bf16, wrapping i64 for
/// integers, the value dtype for f32/f64.
fn elements_scalar(
    call: &LibraryCall,
    inputs: &[Arc<HostBuffer>],
    out: &mut HostBuffer,
    v: &Views,
    starts: &[usize],
) {
    let (m_rows, n_cols) = (v.out.shape[0], v.out.shape[1]);
    let k_rows = v.dense.shape[0];
    let (cols, values, dense) = (&inputs[1], &inputs[2], &inputs[3]);
    let dtype = call.dtype;
    for m in 0..m_rows {
        for n in 0..n_cols {
            let terms = (starts[m]..starts[m + 1]).filter_map(|e| {
                let col = cols.get(v.cols.address(&[e]) as usize).as_i64();
                (0..k_rows as i64).contains(&col).then(|| {
                    (
                        values.get(v.values.address(&[e]) as usize),
                        dense.get(v.dense.address(&[col as usize, n]) as usize),
                    )
                })
            });
            let acc = if dtype == smelt_ir::DType::F64 {
                Scalar::Float(terms.fold(0.0f64, |acc, (a, b)| acc + a.as_f64() * b.as_f64()))
            } else if dtype.is_float() {
                Scalar::Float(f64::from(terms.fold(0.0f32, |acc, (a, b)| {
                    acc + a.as_f64() as f32 * b.as_f64() as f32
                })))
            } else {
                Scalar::Int(terms.fold(0i64, |acc, (a, b)| {
                    acc.wrapping_add(a.as_i64().wrapping_mul(b.as_i64()))
                }))
            };
            out.set(v.out.address(&[m, n]) as usize, acc);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smelt_ir::{DType, LibraryOp};

    fn buf(dtype: DType, values: &[f64]) -> Arc<HostBuffer> {
        let s: Vec<Scalar> = values.iter().map(|&v| Scalar::Float(v)).collect();
        Arc::new(HostBuffer::from_scalars(dtype, &s))
    }

    /// `[[0, 2], [0, 0], [3, -1]] @ dense` for a 2×2 dense of `dtype`, through views `dense`.
    fn product(dtype: DType, dense: &[f64], dense_view: View) -> Vec<f64> {
        let (rows, cols, vals) = (
            [0.0, 2.0, 2.0, 2.0],
            [1.0, 0.0, 1.0, 7.0],
            [2.0, 3.0, -1.0, 9.0],
        );
        let call = LibraryCall {
            op: LibraryOp::SpMM,
            inputs: vec![
                (DType::I64, View::contiguous(&[4])),
                (DType::I64, View::contiguous(&[4])),
                (dtype, View::contiguous(&[4])),
                (dtype, dense_view),
            ],
            dtype,
            len: 6,
            out: View::contiguous(&[3, 2]),
        };
        let inputs = [
            buf(DType::I64, &rows),
            buf(DType::I64, &cols),
            buf(dtype, &vals),
            buf(dtype, dense),
        ];
        let mut out = HostBuffer::zeros(dtype, 6);
        spmm(&call, &inputs, &mut out);
        (0..6).map(|i| out.get(i).as_f64()).collect()
    }

    /// Rows of 0 to 11 entries (groups of four and a remainder; some columns out of range)
    /// over a wide dense operand, contiguous and transposed: each output element is its
    /// entries' products added one after another, in entry order, exactly (f32 bits).
    #[test]
    fn grouped_rows_fold_in_entry_order() {
        let (m_rows, k_rows, n_cols) = (12usize, 5usize, 37usize);
        let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
        for m in 0..m_rows {
            for j in 0..m {
                rows.push(m as f64);
                cols.push(((m * 7 + j * 3) % (k_rows + 1)) as f64 - (j % 5 == 4) as u8 as f64);
                vals.push(0.1 + 0.37 * (m * 13 + j) as f64);
            }
        }
        let nnz = rows.len();
        let dense: Vec<f64> = (0..k_rows * n_cols)
            .map(|i| ((i * 29) % 17) as f64 * 0.3 - 2.1)
            .collect();
        let dense_t: Vec<f64> = (0..k_rows * n_cols)
            .map(|i| dense[(i % k_rows) * n_cols + i / k_rows])
            .collect();
        let mut want = vec![0.0f32; m_rows * n_cols];
        for e in 0..nnz {
            let (m, c) = (rows[e] as usize, cols[e] as i64);
            if !(0..k_rows as i64).contains(&c) {
                continue;
            }
            for n in 0..n_cols {
                let b = dense[c as usize * n_cols + n] as f32;
                want[m * n_cols + n] += vals[e] as f32 * b;
            }
        }
        for (data, view) in [
            (&dense, View::contiguous(&[k_rows, n_cols])),
            (
                &dense_t,
                View::new(vec![k_rows, n_cols], vec![1, k_rows as isize], 0),
            ),
        ] {
            let call = LibraryCall {
                op: LibraryOp::SpMM,
                inputs: vec![
                    (DType::I64, View::contiguous(&[nnz])),
                    (DType::I64, View::contiguous(&[nnz])),
                    (DType::F32, View::contiguous(&[nnz])),
                    (DType::F32, view),
                ],
                dtype: DType::F32,
                len: m_rows * n_cols,
                out: View::contiguous(&[m_rows, n_cols]),
            };
            let inputs = [
                buf(DType::I64, &rows),
                buf(DType::I64, &cols),
                buf(DType::F32, &vals),
                buf(DType::F32, data),
            ];
            let mut out = HostBuffer::zeros(DType::F32, m_rows * n_cols);
            spmm(&call, &inputs, &mut out);
            let got: Vec<u32> = (0..m_rows * n_cols)
                .map(|i| (out.get(i).as_f64() as f32).to_bits())
                .collect();
            let want: Vec<u32> = want.iter().map(|x| x.to_bits()).collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn rows_sum_their_entries_and_skip_out_of_range_columns() {
        // dense = [[1, 2], [10, 20]]; the entry in column 7 is out of range.
        let want = [20.0, 40.0, 0.0, 0.0, -7.0, -14.0];
        for dtype in [DType::F32, DType::F64, DType::F16, DType::I64, DType::I32] {
            let got = product(dtype, &[1.0, 2.0, 10.0, 20.0], View::contiguous(&[2, 2]));
            assert_eq!(got, want, "{dtype}");
            // The transposed storage read through a transposed view: the same product.
            let t = product(
                dtype,
                &[1.0, 10.0, 2.0, 20.0],
                View::new(vec![2, 2], vec![1, 2], 0),
            );
            assert_eq!(t, want, "{dtype} transposed");
        }
    }
}
