//! Runs of equal keys reduced to one row each ([`LibraryOp::Segment`]): the step of sparse
//! COO coalescing that sums duplicate entries (and keeps one copy of each index), and of
//! densifying, which writes each index's sum at its linear position.
//!
//! The keys are sorted, so a run is a contiguous stretch `[i, j)`; its output row is the slot
//! read at the run's first position. Sums fold the run in order, floats in f64, integers in
//! wrapping i64, bools as or, and round once: the CUDA kernel (one thread per run start and
//! trailing element) folds the same values in the same order.
//!
//! [`LibraryOp::Segment`]: smelt_ir::LibraryOp::Segment

use super::{checked_index, for_each_index};
use crate::buffer::HostBuffer;
use smelt_ir::{DType, LibraryCall, Scalar};
use std::sync::Arc;

/// `out[slot[i], r] = Σ src[k, r]` (or `src[i, r]` when `first`) over each run `i..j` of equal
/// keys.
pub fn segment(call: &LibraryCall, inputs: &[Arc<HostBuffer>], out: &mut HostBuffer, first: bool) {
    let (src, sv) = (&inputs[0], &call.inputs[0].1);
    let (keys, kv) = (&inputs[1], &call.inputs[1].1);
    let (slots, lv) = (&inputs[2], &call.inputs[2].1);
    let ov = &call.out;
    assert!(
        sv.ndim() >= 1
            && kv.ndim() == 1
            && lv.ndim() == 1
            && kv.shape[0] == sv.shape[0]
            && lv.shape[0] == sv.shape[0]
            && ov.ndim() == sv.ndim()
            && ov.shape[1..] == sv.shape[1..],
        "invariant: segment views are [n, *rest], [n], [n] -> [m, *rest]: {sv} {kv} {lv} {ov}"
    );
    let (n, m) = (sv.shape[0], ov.shape[0]);
    let rest = &sv.shape[1..];
    let key = |i: usize| keys.get(kv.address(&[i]) as usize).as_i64();
    let dtype = call.dtype;
    let (mut sp, mut op) = (vec![0usize; sv.ndim()], vec![0usize; ov.ndim()]);
    let mut i = 0;
    while i < n {
        let k = key(i);
        let j = (i + 1..n).find(|&j| key(j) != k).unwrap_or(n);
        let slot = slots.get(lv.address(&[i]) as usize).as_i64();
        if let Some(row) = checked_index(slot, m, false) {
            for_each_index(rest, |r| {
                sp[1..].copy_from_slice(r);
                op[0] = row;
                op[1..].copy_from_slice(r);
                let at = |k: usize, sp: &mut Vec<usize>| {
                    sp[0] = k;
                    src.get(sv.address(sp) as usize)
                };
                let v = if first {
                    at(i, &mut sp)
                } else {
                    fold(dtype, (i..j).map(|k| at(k, &mut sp)))
                };
                out.set(ov.address(&op) as usize, v);
            });
        }
        i = j;
    }
}

/// The sum of `values` as written into a `dtype` output: f64 for floats, wrapping i64 for
/// integers, or for bools.
pub(crate) fn fold(dtype: DType, values: impl Iterator<Item = Scalar>) -> Scalar {
    if dtype.is_float() {
        Scalar::Float(values.map(Scalar::as_f64).fold(0.0, |a, v| a + v))
    } else if dtype.is_bool() {
        Scalar::Bool(values.fold(false, |a, v| a | v.as_bool()))
    } else {
        Scalar::Int(values.fold(0i64, |a, v| a.wrapping_add(v.as_i64())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smelt_ir::{LibraryOp, View};

    fn buf(dtype: DType, values: &[f64]) -> Arc<HostBuffer> {
        let s: Vec<Scalar> = values.iter().map(|&v| Scalar::Float(v)).collect();
        Arc::new(HostBuffer::from_scalars(dtype, &s))
    }

    fn run(
        first: bool,
        dtype: DType,
        src: &[f64],
        rest: usize,
        keys: &[f64],
        slots: &[f64],
        m: usize,
    ) -> Vec<f64> {
        let n = keys.len();
        let call = LibraryCall {
            op: LibraryOp::Segment { first },
            inputs: vec![
                (dtype, View::contiguous(&[n, rest])),
                (DType::I64, View::contiguous(&[n])),
                (DType::I64, View::contiguous(&[n])),
            ],
            dtype,
            len: m * rest,
            out: View::contiguous(&[m, rest]),
        };
        let inputs = [
            buf(dtype, src),
            buf(DType::I64, keys),
            buf(DType::I64, slots),
        ];
        let mut out = HostBuffer::zeros(dtype, m * rest);
        segment(&call, &inputs, &mut out, first);
        (0..m * rest).map(|i| out.get(i).as_f64()).collect()
    }

    #[test]
    fn runs_of_equal_keys_sum_in_order_into_their_slot() {
        // Keys 2 2 5 7 7 7: three runs, written at slots 0, 1, 2 (coalescing).
        let keys = [2.0, 2.0, 5.0, 7.0, 7.0, 7.0];
        let src = [
            1.0, 10.0, 2.0, 20.0, 3.0, 30.0, 4.0, 40.0, 5.0, 50.0, 6.0, 60.0,
        ];
        let slots = [0.0, 0.0, 1.0, 2.0, 2.0, 2.0];
        assert_eq!(
            run(false, DType::F32, &src, 2, &keys, &slots, 3),
            [3.0, 30.0, 3.0, 30.0, 15.0, 150.0]
        );
        assert_eq!(
            run(true, DType::F32, &src, 2, &keys, &slots, 3),
            [1.0, 10.0, 3.0, 30.0, 4.0, 40.0]
        );
        // Slots = keys (densifying): the sums land at the keys; 8 is out of range, skipped.
        let dense = run(
            false,
            DType::I64,
            &[1.0, 2.0, 3.0],
            1,
            &[1.0, 1.0, 8.0],
            &[1.0, 1.0, 8.0],
            4,
        );
        assert_eq!(dense, [0.0, 3.0, 0.0, 0.0]);
        // Bools or; f32 sums accumulate in f64 and round once.
        assert_eq!(
            run(
                false,
                DType::Bool,
                &[0.0, 1.0, 1.0],
                1,
                &[0.0, 0.0, 0.0],
                &[0.0, 0.0, 0.0],
                1
            ),
            [1.0]
        );
        let big = run(
            false,
            DType::F32,
            &[16777216.0, 1.0, 1.0],
            1,
            &[0.0; 3],
            &[0.0; 3],
            1,
        );
        assert_eq!(big, [16777218.0]);
    }
}
