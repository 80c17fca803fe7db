//! Batched matmul `out[*b, m, n] = Σ_k a[*b, m, k]·b[*b, k, n]` over any number of batch dims.
//! f32, f64, complex64 and complex128 call the `gemm` crate once per batch point with the
//! views' row and column strides (0, transposed and sliced strides included, so strided
//! operands need no copy; a complex buffer's parts are read as `num_complex` values, whose
//! layout they have); f16 and bf16 widen their operands to f32, run the f32 gemm and round
//! each output once (PyTorch's CPU kernels also accumulate half-precision products in f32);
//! integers, and the tests' oracle, use [`matmul_reference`], which accumulates in f64
//! (floats), two f64 parts (complex) or wrapping i64 (ints) and rounds once.

use super::for_each_index;
use crate::buffer::HostBuffer;
use num_complex::Complex;
use smelt_ir::{LibraryCall, Scalar, View};
use std::sync::Arc;

/// Problems at least this big (m·n·k) let gemm use rayon's threads.
const PARALLEL_WORK: usize = 1 << 18;

pub(crate) fn check_views(call: &LibraryCall) -> (&View, &View, &View) {
    let (av, bv, ov) = (&call.inputs[0].1, &call.inputs[1].1, &call.out);
    let r = ov.ndim();
    assert!(
        r >= 2
            && av.ndim() == r
            && bv.ndim() == r
            && av.shape[..r - 2] == ov.shape[..r - 2]
            && bv.shape[..r - 2] == ov.shape[..r - 2]
            && av.shape[r - 2] == ov.shape[r - 2]
            && bv.shape[r - 1] == ov.shape[r - 1]
            && av.shape[r - 1] == bv.shape[r - 2],
        "invariant: matmul views are [*B, M, K], [*B, K, N], [*B, M, N]: {av} {bv} {ov}"
    );
    (av, bv, ov)
}

/// Whether [`matmul_gemm`] writes every element of the call's output buffer (f32/f64, a
/// non-empty sum, the buffer exactly the output's elements), so it need not be zeroed first.
pub(crate) fn covers_output(call: &LibraryCall) -> bool {
    let r = call.out.ndim();
    call.op == smelt_ir::LibraryOp::Matmul
        && matches!(call.dtype, smelt_ir::DType::F32 | smelt_ir::DType::F64)
        && call.inputs.len() == 2
        && call.inputs.iter().all(|(d, _)| *d == call.dtype)
        && r >= 2
        && call.inputs[0].1.ndim() == r
        && call.inputs[0].1.shape[r - 1] > 0
        && call.out.numel() == call.len
        && call.out.internal_overlap() == Some(false)
}

/// Runs the call: gemm for floats, the reference loop otherwise.
pub fn matmul(call: &LibraryCall, inputs: &[Arc<HostBuffer>], out: &mut HostBuffer) {
    if !matmul_gemm(call, inputs, out) {
        matmul_reference(call, inputs, out);
    }
}

/// The gemm path; returns false (and writes nothing) when the dtypes are not floats.
pub fn matmul_gemm(call: &LibraryCall, inputs: &[Arc<HostBuffer>], out: &mut HostBuffer) -> bool {
    let (av, bv, ov) = check_views(call);
    let complex = call.dtype.is_complex();
    match (&mut *out, &*inputs[0], &*inputs[1]) {
        (HostBuffer::F32(o), HostBuffer::F32(a), HostBuffer::F32(b)) if complex => {
            let zero = Complex::new(0.0f32, 0.0);
            let one = Complex::new(1.0f32, 0.0);
            gemm_batched(
                as_complex_mut(o),
                as_complex(a),
                as_complex(b),
                av,
                bv,
                ov,
                zero,
                one,
            )
        }
        (HostBuffer::F64(o), HostBuffer::F64(a), HostBuffer::F64(b)) if complex => {
            let zero = Complex::new(0.0f64, 0.0);
            let one = Complex::new(1.0f64, 0.0);
            gemm_batched(
                as_complex_mut(o),
                as_complex(a),
                as_complex(b),
                av,
                bv,
                ov,
                zero,
                one,
            )
        }
        (HostBuffer::F32(o), HostBuffer::F32(a), HostBuffer::F32(b)) => {
            gemm_batched(o, a, b, av, bv, ov, 0.0f32, 1.0f32)
        }
        (HostBuffer::F64(o), HostBuffer::F64(a), HostBuffer::F64(b)) => {
            gemm_batched(o, a, b, av, bv, ov, 0.0f64, 1.0f64)
        }
        (HostBuffer::F16(o), HostBuffer::F16(a), HostBuffer::F16(b)) => {
            gemm_widened(o, a, b, av, bv, ov, |x| x.to_f32(), half::f16::from_f32)
        }
        (HostBuffer::BF16(o), HostBuffer::BF16(a), HostBuffer::BF16(b)) => {
            gemm_widened(o, a, b, av, bv, ov, |x| x.to_f32(), half::bf16::from_f32)
        }
        _ => return false,
    }
    true
}

/// A half-precision matmul through the f32 gemm: both operands widened whole (so the views'
/// offsets and strides address them unchanged), the product computed into an f32 buffer shaped
/// like `o`, and each element the output view covers rounded once.
#[allow(clippy::too_many_arguments)]
fn gemm_widened<H: Copy + Send + Sync>(
    o: &mut [H],
    a: &[H],
    b: &[H],
    av: &View,
    bv: &View,
    ov: &View,
    widen: impl Fn(H) -> f32 + Sync,
    narrow: impl Fn(f32) -> H,
) {
    use rayon::prelude::*;
    let wide = |v: &[H]| v.par_iter().map(|&x| widen(x)).collect::<Vec<f32>>();
    let (a, b) = (wide(a), wide(b));
    let mut acc = vec![0.0f32; o.len()];
    gemm_batched(&mut acc, &a, &b, av, bv, ov, 0.0f32, 1.0f32);
    for_each_index(&ov.shape, |p| {
        let at = ov.address(p) as usize;
        o[at] = narrow(acc[at]);
    });
}

/// The parts of a complex buffer (real, imaginary, in turn) as complex values.
fn as_complex<T>(parts: &[T]) -> &[Complex<T>] {
    assert!(
        parts.len().is_multiple_of(2),
        "invariant: a complex buffer holds whole elements"
    );
    // SAFETY: `Complex<T>` is `repr(C)` with fields `re` then `im`, both `T`: the same size,
    // alignment and layout as two consecutive `T`s, which is how a complex buffer stores each
    // element; the slice covers exactly `parts.len() / 2` of them and borrows `parts`.
    unsafe { std::slice::from_raw_parts(parts.as_ptr().cast(), parts.len() / 2) }
}

/// [`as_complex`], writable.
fn as_complex_mut<T>(parts: &mut [T]) -> &mut [Complex<T>] {
    assert!(
        parts.len().is_multiple_of(2),
        "invariant: a complex buffer holds whole elements"
    );
    // SAFETY: as in `as_complex`; the mutable borrow of `parts` is moved into the result.
    unsafe { std::slice::from_raw_parts_mut(parts.as_mut_ptr().cast(), parts.len() / 2) }
}

fn batch_offset(v: &View, point: &[usize]) -> isize {
    v.offset as isize
        + point
            .iter()
            .zip(&v.strides)
            .map(|(&i, &s)| i as isize * s)
            .sum::<isize>()
}

fn gemm_batched<T: Copy + 'static>(
    o: &mut [T],
    a: &[T],
    b: &[T],
    av: &View,
    bv: &View,
    ov: &View,
    zero: T,
    one: T,
) {
    let r = ov.ndim();
    let (m, n, k) = (ov.shape[r - 2], ov.shape[r - 1], av.shape[r - 1]);
    if m == 0 || n == 0 || k == 0 {
        // Empty products: the zeroed output is already the answer.
        return;
    }
    assert!(
        ov.internal_overlap() == Some(false) || ov.numel() <= 1,
        "invariant: a matmul output view does not overlap itself: {ov}"
    );
    let parallelism = if m * n * k >= PARALLEL_WORK {
        gemm::Parallelism::Rayon(0)
    } else {
        gemm::Parallelism::None
    };
    for_each_index(&ov.shape[..r - 2], |point| {
        let (ao, bo, oo) = (
            batch_offset(av, point),
            batch_offset(bv, point),
            batch_offset(ov, point),
        );
        // SAFETY: `run_library` asserted that every view fits in its buffer, so each address
        // `offset + i·row_stride + j·col_stride` gemm forms for i < rows, j < cols lies inside
        // the slice it is derived from; the output view does not overlap itself (asserted
        // above) and the output buffer is not aliased by the inputs (it is a fresh allocation).
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                o.as_mut_ptr().offset(oo),
                ov.strides[r - 1],
                ov.strides[r - 2],
                false,
                a.as_ptr().offset(ao),
                av.strides[r - 1],
                av.strides[r - 2],
                b.as_ptr().offset(bo),
                bv.strides[r - 1],
                bv.strides[r - 2],
                zero,
                one,
                false,
                false,
                false,
                parallelism,
            );
        }
    });
}

/// The reference loop: one f64 (floats) or wrapping i64 (ints) accumulator per output
/// element, rounded once to the output dtype.
pub fn matmul_reference(call: &LibraryCall, inputs: &[Arc<HostBuffer>], out: &mut HostBuffer) {
    let (av, bv, ov) = check_views(call);
    let (a, b) = (&inputs[0], &inputs[1]);
    let r = ov.ndim();
    let k = av.shape[r - 1];
    if call.dtype.is_complex() {
        complex_reference(call, inputs, out);
        return;
    }
    let float = call.dtype.is_float();
    let (mut ap, mut bp) = (vec![0usize; r], vec![0usize; r]);
    for_each_index(&ov.shape, |p| {
        ap.copy_from_slice(p);
        bp.copy_from_slice(p);
        let (mut facc, mut iacc) = (0.0f64, 0i64);
        for kk in 0..k {
            ap[r - 1] = kk;
            bp[r - 2] = kk;
            let x = a.get(av.address(&ap) as usize);
            let y = b.get(bv.address(&bp) as usize);
            if float {
                facc += x.as_f64() * y.as_f64();
            } else {
                iacc = iacc.wrapping_add(x.as_i64().wrapping_mul(y.as_i64()));
            }
        }
        let v = if float {
            Scalar::Float(facc)
        } else {
            Scalar::Int(iacc)
        };
        out.set(ov.address(p) as usize, v);
    });
}

/// [`matmul_reference`] of complex operands: one accumulator of two f64 parts per output
/// element, rounded once.
fn complex_reference(call: &LibraryCall, inputs: &[Arc<HostBuffer>], out: &mut HostBuffer) {
    let (av, bv, ov) = check_views(call);
    let ((ad, a), (bd, b)) = (
        (call.inputs[0].0, &inputs[0]),
        (call.inputs[1].0, &inputs[1]),
    );
    let r = ov.ndim();
    let k = av.shape[r - 1];
    let (mut ap, mut bp) = (vec![0usize; r], vec![0usize; r]);
    for_each_index(&ov.shape, |p| {
        ap.copy_from_slice(p);
        bp.copy_from_slice(p);
        let (mut re, mut im) = (0.0f64, 0.0f64);
        for kk in 0..k {
            ap[r - 1] = kk;
            bp[r - 2] = kk;
            let (x, y) = a.get_as(ad, av.address(&ap) as usize).as_complex();
            let (u, v) = b.get_as(bd, bv.address(&bp) as usize).as_complex();
            re += x * u - y * v;
            im += x * v + y * u;
        }
        out.set_as(call.dtype, ov.address(p) as usize, Scalar::Complex(re, im));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use smelt_ir::{DType, LibraryOp};

    /// gemm's complex path against the f64 reference loop, on transposed, strided operands.
    #[test]
    fn complex_gemm_matches_the_reference_loop() {
        for dtype in [DType::C64, DType::C128] {
            let (m, k, n) = (3usize, 4usize, 2usize);
            let value = |i: usize| Scalar::Complex(i as f64 * 0.25 - 1.0, 2.0 - i as f64 * 0.5);
            let a: Vec<Scalar> = (0..m * k).map(value).collect();
            let b: Vec<Scalar> = (0..k * n * 2).map(|i| value(i + 3)).collect();
            let a = Arc::new(HostBuffer::from_scalars(dtype, &a));
            let b = Arc::new(HostBuffer::from_scalars(dtype, &b));
            // a read transposed ([k, m] storage), b every other column.
            let av = View::new(vec![m, k], vec![1, m as isize], 0);
            let bv = View::new(vec![k, n], vec![2 * n as isize, 2], 1);
            let call = LibraryCall {
                op: LibraryOp::Matmul,
                inputs: vec![(dtype, av), (dtype, bv)],
                dtype,
                len: m * n,
                out: View::contiguous(&[m, n]),
            };
            let mut fast = HostBuffer::zeros(dtype, m * n);
            assert!(matmul_gemm(&call, &[a.clone(), b.clone()], &mut fast));
            let mut slow = HostBuffer::zeros(dtype, m * n);
            matmul_reference(&call, &[a, b], &mut slow);
            for i in 0..m * n {
                let (x, y) = (
                    fast.get_as(dtype, i).as_complex(),
                    slow.get_as(dtype, i).as_complex(),
                );
                assert!(
                    (x.0 - y.0).abs() < 1e-5 && (x.1 - y.1).abs() < 1e-5,
                    "{x:?} vs {y:?}"
                );
            }
        }
    }
}
