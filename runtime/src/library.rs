//! Library routines of the reference backend: host loops over strided views, one per
//! [`LibraryOp`]. Each reads its inputs through the call's views and writes a fresh buffer.
//!
//! Index-reading routines (gather, take, advanced indexing) never trust their indices: the
//! frontend rejects out-of-range indices eagerly with an `index` error, and here an index that
//! is still out of range leaves the output element zero (reads) or writes nothing (index_put)
//! instead of reading or writing outside a buffer.

mod argreduce;
mod bf16_gemm;
mod gather;
mod index;
mod matmul;
mod scan;
mod segment;
mod sort;
mod spmm;

#[cfg(feature = "cuda")]
pub(crate) use matmul::check_views as check_matmul_views;
pub use matmul::{matmul_gemm, matmul_reference};

use crate::buffer::HostBuffer;
use smelt_ir::{LibraryCall, LibraryOp, Result};
use std::sync::Arc;

/// Runs `call` on `inputs` (one buffer per input, in order).
///
/// Panics when the output cannot be allocated ([`try_run_library`] returns the error).
pub fn run_library(call: &LibraryCall, inputs: &[Arc<HostBuffer>]) -> HostBuffer {
    try_run_library(call, inputs).unwrap_or_else(|e| panic!("{e}"))
}

/// [`run_library`], or a `memory` error when the output cannot be allocated.
pub fn try_run_library(call: &LibraryCall, inputs: &[Arc<HostBuffer>]) -> Result<HostBuffer> {
    check_call(call, inputs);
    let mut out = if call.op.updates_input_0() {
        // The next version of a storage starts as the old one.
        assert_eq!(
            inputs[0].len(),
            call.len,
            "invariant: an update reads the whole old version"
        );
        (*inputs[0]).clone()
    } else if matmul::covers_output(call) {
        // gemm writes every element without reading it first: no zeroing pass.
        HostBuffer::try_for_overwrite(call.dtype, call.len)?
    } else {
        HostBuffer::try_zeros(call.dtype, call.len)?
    };
    match &call.op {
        LibraryOp::Matmul => matmul::matmul(call, inputs, &mut out),
        LibraryOp::MatmulAdd { .. } => matmul::matmul_add(call, inputs, &mut out),
        LibraryOp::Gather { dim } => gather::gather(call, inputs, &mut out, *dim),
        LibraryOp::IndexSelect { dim } => gather::index_select(call, inputs, &mut out, *dim),
        LibraryOp::Take => gather::take(call, inputs, &mut out),
        LibraryOp::Index { indices } => index::index(call, inputs, &mut out, *indices),
        LibraryOp::IndexPut { indices } => index::index_put(call, inputs, &mut out, *indices),
        LibraryOp::ArgMax { axes } => argreduce::argreduce(call, *axes, true, inputs, &mut out),
        LibraryOp::ArgMin { axes } => argreduce::argreduce(call, *axes, false, inputs, &mut out),
        LibraryOp::CumSum { dim } => scan::scan(call, *dim, false, inputs, &mut out),
        LibraryOp::CumProd { dim } => scan::scan(call, *dim, true, inputs, &mut out),
        LibraryOp::Sort {
            dim,
            descending,
            indices,
        } => sort::sort(call, *dim, *descending, *indices, inputs, &mut out),
        LibraryOp::Segment { first } => segment::segment(call, inputs, &mut out, *first),
        LibraryOp::SpMM => spmm::spmm(call, inputs, &mut out),
    }
    Ok(out)
}

/// Asserts the invariants every library call relies on: one buffer per input, every view
/// inside its buffer.
pub(crate) fn check_call(call: &LibraryCall, inputs: &[Arc<HostBuffer>]) {
    assert_eq!(
        inputs.len(),
        call.inputs.len(),
        "invariant: one buffer per library input"
    );
    // Buffers hold real parts: a complex view counts two per element.
    for ((d, v), b) in call.inputs.iter().zip(inputs) {
        assert!(
            v.fits_in(b.len() / d.parts()),
            "invariant: library input view {v} inside its buffer of {}",
            b.len()
        );
    }
    assert!(
        call.out.fits_in(call.out.read.len(call.len)),
        "invariant: library output view inside its buffer"
    );
}

/// Calls `f` with every multi-index of `shape` in row-major order (once for `[]`, never when
/// a size is 0).
pub(crate) fn for_each_index(shape: &[usize], mut f: impl FnMut(&[usize])) {
    if shape.contains(&0) {
        return;
    }
    let mut point = vec![0usize; shape.len()];
    loop {
        f(&point);
        let mut d = shape.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            point[d] += 1;
            if point[d] < shape[d] {
                break;
            }
            point[d] = 0;
        }
    }
}

/// An index value checked against a dim of `size`: `None` when out of range. Negative values
/// count from the end when `wrap` is set.
pub(crate) fn checked_index(value: i64, size: usize, wrap: bool) -> Option<usize> {
    let size = size as i64;
    let v = if wrap && value < 0 {
        value + size
    } else {
        value
    };
    (0..size).contains(&v).then_some(v as usize)
}

/// Which of the `gemm` crate's kernels f32 and f64 matmuls run on this host: AVX-512 where the
/// host has it (the crate's `x86-v4` kernels, 16 f32 lanes), else AVX2 + FMA, else scalar.
pub fn gemm_kernels() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return "avx512f (512-bit)";
        }
        if std::arch::is_x86_feature_detected!("fma") {
            return "fma (256-bit)";
        }
        "scalar"
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        "the crate's best for this architecture"
    }
}
