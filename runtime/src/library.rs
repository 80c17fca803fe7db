//! Library routines of the reference backend: host loops over strided views, one per
//! [`LibraryOp`]. Each reads its inputs through the call's views and writes a fresh buffer.

mod argreduce;
mod matmul;
mod scan;
mod sort;

use crate::buffer::Buffer;
use smelt_ir::{LibraryCall, LibraryOp};
use std::sync::Arc;

/// Runs `call` on `inputs` (one buffer per input, in order).
pub fn run_library(call: &LibraryCall, inputs: &[Arc<Buffer>]) -> Buffer {
    assert_eq!(
        inputs.len(),
        call.inputs.len(),
        "invariant: one buffer per library input"
    );
    for ((_, v), b) in call.inputs.iter().zip(inputs) {
        assert!(
            v.fits_in(b.len()),
            "invariant: library input view {v} inside its buffer of {}",
            b.len()
        );
    }
    assert!(
        call.out.fits_in(call.len),
        "invariant: library output view inside its buffer"
    );
    let mut out = Buffer::zeros(call.dtype, call.len);
    match &call.op {
        LibraryOp::Matmul => matmul::matmul(call, inputs, &mut out),
        LibraryOp::ArgMax { axes } => argreduce::argreduce(call, *axes, true, inputs, &mut out),
        LibraryOp::ArgMin { axes } => argreduce::argreduce(call, *axes, false, inputs, &mut out),
        LibraryOp::CumSum { dim } => scan::scan(call, *dim, false, inputs, &mut out),
        LibraryOp::CumProd { dim } => scan::scan(call, *dim, true, inputs, &mut out),
        LibraryOp::Sort {
            dim,
            descending,
            indices,
        } => sort::sort(call, *dim, *descending, *indices, inputs, &mut out),
    }
    out
}
