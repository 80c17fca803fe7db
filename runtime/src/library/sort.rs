//! Reference sort along one dim: a stable sort of each line's positions by value (Rust's
//! `sort_by`, a stable merge sort), NaN ordered above every number. Descending order reverses
//! the comparison, not the result, so equal values keep their original order either way.
//! Writes either the sorted values or the int64 source positions.

use super::argreduce::{compare_nan_largest, next_index};
use crate::buffer::HostBuffer;
use smelt_ir::{LibraryCall, Scalar};
use std::sync::Arc;

pub fn sort(
    call: &LibraryCall,
    dim: usize,
    descending: bool,
    indices: bool,
    inputs: &[Arc<HostBuffer>],
    out: &mut HostBuffer,
) {
    let (x, xv) = (&inputs[0], &call.inputs[0].1);
    let ov = &call.out;
    assert!(
        ov.shape == xv.shape && dim < xv.ndim(),
        "invariant: sort input and output have one shape"
    );
    if xv.numel() == 0 {
        return;
    }
    let mut outer_shape = xv.shape.clone();
    outer_shape[dim] = 1;
    let mut point = vec![0usize; xv.ndim()];
    let n = xv.shape[dim];
    loop {
        let line: Vec<Scalar> = (0..n)
            .map(|i| {
                point[dim] = i;
                x.get(xv.address(&point) as usize)
            })
            .collect();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| {
            let o = compare_nan_largest(line[a], line[b]);
            if descending { o.reverse() } else { o }
        });
        for (i, &src) in order.iter().enumerate() {
            point[dim] = i;
            let v = if indices {
                Scalar::Int(src as i64)
            } else {
                line[src]
            };
            out.set(ov.address(&point) as usize, v);
        }
        point[dim] = 0;
        if !next_index(&mut point, &outer_shape) {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smelt_ir::{DType, LibraryOp, View};

    fn run(values: &[f64], descending: bool, indices: bool) -> Vec<f64> {
        let x = HostBuffer::from_scalars(
            DType::F64,
            &values.iter().map(|&v| Scalar::Float(v)).collect::<Vec<_>>(),
        );
        let n = values.len();
        let dtype = if indices { DType::I64 } else { DType::F64 };
        let call = LibraryCall {
            op: LibraryOp::Sort {
                dim: 0,
                descending,
                indices,
            },
            inputs: vec![(DType::F64, View::contiguous(&[n]))],
            dtype,
            len: n,
            out: View::contiguous(&[n]),
        };
        let mut out = HostBuffer::zeros(dtype, n);
        sort(&call, 0, descending, indices, &[Arc::new(x)], &mut out);
        (0..n).map(|i| out.get(i).as_f64()).collect()
    }

    #[test]
    fn stable_with_nan_largest() {
        let v = [2.0, f64::NAN, -0.0, 1.0, 0.0, 2.0];
        assert_eq!(run(&v, false, true), vec![2.0, 4.0, 3.0, 0.0, 5.0, 1.0]);
        assert_eq!(run(&v, true, true), vec![1.0, 0.0, 5.0, 3.0, 2.0, 4.0]);
        let sorted = run(&v, false, false);
        assert!(sorted[5].is_nan() && sorted[..5] == [-0.0, 0.0, 1.0, 2.0, 2.0]);
    }
}
