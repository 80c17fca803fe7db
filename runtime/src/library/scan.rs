//! Reference cumsum/cumprod: for every line along `dim`, an inclusive prefix sum or product
//! from index 0 upward. Each element is cast to the output dtype first; floats accumulate in
//! f64, ints in wrapping i64, complex values in two f64 parts (products as `(ac − bd) +
//! (ad + bc)i`), and every output element is rounded once to the output dtype.

use super::argreduce::next_index;
use crate::buffer::HostBuffer;
use smelt_ir::{LibraryCall, Scalar};
use std::sync::Arc;

pub fn scan(
    call: &LibraryCall,
    dim: usize,
    product: bool,
    inputs: &[Arc<HostBuffer>],
    out: &mut HostBuffer,
) {
    let (x, xv) = (&inputs[0], &call.inputs[0].1);
    let ov = &call.out;
    assert!(
        ov.shape == xv.shape && dim < xv.ndim(),
        "invariant: scan input and output have one shape"
    );
    if xv.numel() == 0 {
        return;
    }
    if call.dtype.is_complex() {
        complex_scan(call, dim, product, inputs, out);
        return;
    }
    let float = call.dtype.is_float();
    let mut outer_shape = xv.shape.clone();
    outer_shape[dim] = 1;
    let mut point = vec![0usize; xv.ndim()];
    loop {
        let (mut facc, mut iacc) = if product {
            (1.0f64, 1i64)
        } else {
            (0.0f64, 0i64)
        };
        for i in 0..xv.shape[dim] {
            point[dim] = i;
            let v = x
                .get_as(call.inputs[0].0, xv.address(&point) as usize)
                .cast(call.dtype);
            let r = if float {
                facc = if product {
                    facc * v.as_f64()
                } else {
                    facc + v.as_f64()
                };
                Scalar::Float(facc)
            } else {
                iacc = if product {
                    iacc.wrapping_mul(v.as_i64())
                } else {
                    iacc.wrapping_add(v.as_i64())
                };
                Scalar::Int(iacc)
            };
            out.set(ov.address(&point) as usize, r);
        }
        point[dim] = 0;
        if !next_index(&mut point, &outer_shape) {
            break;
        }
    }
}

/// [`scan`] of a complex dtype: the running sum or product in f64 parts.
fn complex_scan(
    call: &LibraryCall,
    dim: usize,
    product: bool,
    inputs: &[Arc<HostBuffer>],
    out: &mut HostBuffer,
) {
    let (x, (xd, xv)) = (&inputs[0], (call.inputs[0].0, &call.inputs[0].1));
    let ov = &call.out;
    let mut outer_shape = xv.shape.clone();
    outer_shape[dim] = 1;
    let mut point = vec![0usize; xv.ndim()];
    loop {
        let (mut re, mut im) = if product {
            (1.0f64, 0.0f64)
        } else {
            (0.0, 0.0)
        };
        for i in 0..xv.shape[dim] {
            point[dim] = i;
            let (a, b) = x
                .get_as(xd, xv.address(&point) as usize)
                .cast(call.dtype)
                .as_complex();
            (re, im) = if product {
                (re * a - im * b, re * b + im * a)
            } else {
                (re + a, im + b)
            };
            out.set_as(
                call.dtype,
                ov.address(&point) as usize,
                Scalar::Complex(re, im),
            );
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

    #[test]
    fn scans_along_a_strided_dim() {
        // A [2, 3] int8 tensor read transposed: scan the columns of the [3, 2] view.
        let x = HostBuffer::from_scalars(DType::I8, &[1, 2, 3, 100, 100, 100].map(Scalar::Int));
        let view = View::new(vec![3, 2], vec![1, 3], 0);
        for (product, want) in [
            (false, vec![1, 100, 3, 200, 6, 300]),
            (true, vec![1, 100, 2, 10000, 6, 1000000]),
        ] {
            let op = if product {
                LibraryOp::CumProd { dim: 0 }
            } else {
                LibraryOp::CumSum { dim: 0 }
            };
            let call = LibraryCall {
                op,
                inputs: vec![(DType::I8, view.clone())],
                dtype: DType::I64,
                len: 6,
                out: View::contiguous(&[3, 2]),
            };
            let mut out = HostBuffer::zeros(DType::I64, 6);
            scan(&call, 0, product, &[Arc::new(x.clone())], &mut out);
            assert_eq!(
                (0..6).map(|i| out.get(i).as_i64()).collect::<Vec<_>>(),
                want
            );
        }
    }
}
