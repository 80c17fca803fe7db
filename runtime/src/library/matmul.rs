//! Batched matmul `out[*b, m, n] = Σ_k a[*b, m, k]·b[*b, k, n]` over any number of batch dims.
//! f32, f64, complex64 and complex128 call the `gemm` crate with the views' row and column
//! strides (0, transposed and sliced strides included, so strided operands need no copy; a
//! complex buffer's parts are read as `num_complex` values, whose layout they have): once for
//! the whole product when `b` is one matrix for every batch point and the batch dims of `a`
//! fold into its rows (`x[B, T, C] @ w[C, D]`), else once per batch point, many small ones
//! spread over the threads (attention's heads). bf16 runs on the AVX-512 BF16 GEMM
//! ([`bf16_gemm`]) where the host has it; f16, and bf16 elsewhere, widen their operands to f32
//! and run the f32 gemm; either way the sums are f32 and each output rounds once (PyTorch's
//! CPU kernels also accumulate half-precision products in f32);
//! integers, and the tests' oracle, use [`matmul_reference`], which accumulates in f64
//! (floats), two f64 parts (complex) or wrapping i64 (ints) and rounds once.

use super::{bf16_gemm, for_each_index};
use crate::buffer::HostBuffer;
use crate::memory::Memory;
use num_complex::Complex;
use smelt_ir::view::matmul_rows;
use smelt_ir::{BinaryOp, DType, LibraryCall, LibraryOp, Scalar, View};
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

/// Whether [`matmul_gemm`] writes every element of the call's output buffer (a real float
/// dtype, a non-empty sum, the buffer exactly the output's elements), so it need not be zeroed
/// first: gemm writes f32 and f64 outputs whole, and every half-precision path rounds each
/// element of the output view once (a `MatmulAdd` of those dtypes adds to what its product
/// wrote).
pub(crate) fn covers_output(call: &LibraryCall) -> bool {
    let r = call.out.ndim();
    let product_inputs = if call.op == smelt_ir::LibraryOp::Matmul {
        2
    } else if matches!(call.op, smelt_ir::LibraryOp::MatmulAdd { .. }) {
        3
    } else {
        return false;
    };
    matches!(
        call.dtype,
        smelt_ir::DType::F32 | smelt_ir::DType::F64 | smelt_ir::DType::F16 | smelt_ir::DType::BF16
    ) && call.inputs.len() == product_inputs
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

/// Runs a `MatmulAdd` call: the product as [`matmul`] computes it, rounded to the dtype, then
/// `+ c` rounded again (then, for `matmul_add_relu`, the relu). A bias row (`c` the same for
/// every row and batch point) is added where each block of the product is still in cache: an
/// f32 product's row blocks ([`f32_biased`], which applies the relu too), an f16 or bf16
/// product's rounding (the bf16 kernel's epilogue, or the widened path's rounding pass);
/// anything else adds (and clamps) in a pass of its own.
pub fn matmul_add(call: &LibraryCall, inputs: &[Arc<HostBuffer>], out: &mut HostBuffer) {
    let relu = matches!(call.op, LibraryOp::MatmulAdd { relu: true });
    let product_call = LibraryCall {
        op: LibraryOp::Matmul,
        inputs: call.inputs[..2].to_vec(),
        ..call.clone()
    };
    let (cd, cv) = &call.inputs[2];
    if *cd == call.dtype
        && let Some(row) = bias_row(&inputs[2], *cd, cv)
    {
        if f32_biased(&product_call, &inputs[..2], out, &row, relu) {
            return;
        }
        if product(&product_call, &inputs[..2], out, Some(&row)) {
            if relu {
                relu_in_place(call.dtype, &call.out, out);
            }
            return;
        }
    }
    matmul(&product_call, &inputs[..2], out);
    add_in_place(call.dtype, &call.out, out, (*cd, cv, &inputs[2]));
    if relu {
        relu_in_place(call.dtype, &call.out, out);
    }
}

/// `c`'s values as one f32 per column, when view `cv` reads the same row at every row and batch
/// point (stride 0 along all but its last dim) and `c` is f32, f16 or bf16 (`cd`).
fn bias_row(c: &HostBuffer, cd: DType, cv: &View) -> Option<Vec<f32>> {
    let (outer, last) = cv.strides.split_last().map(|(l, o)| (o, *l))?;
    if !matches!(cd, DType::F32 | DType::F16 | DType::BF16) || outer.iter().any(|&s| s != 0) {
        return None;
    }
    let at = |j: usize| (cv.offset as isize + j as isize * last) as usize;
    // An f32 value, and a half-precision one, is exact in f64 and back in f32.
    Some(
        (0..cv.shape[outer.len()])
            .map(|j| c.get_as(cd, at(j)).as_f64() as f32)
            .collect(),
    )
}

/// Rows of an f32 product below which its threads split the columns (inside gemm) rather than
/// the rows: a thread's rows are one gemm call of their own, which packs all of `b`.
const ROWS_PER_THREAD: usize = 64;

/// An f32 `a·b + bias` (`bias` one value per column), then the relu where `relu`, with the
/// epilogue applied to each thread's block of rows as soon as its product is written, while
/// the block is still in that core's cache (a pass of its own read and wrote the whole product
/// back from further away: 0.3 of 7.2 ms at 1024³ on 2 threads). Each thread runs one gemm
/// call on its rows (the crate's threads split a product more finely, but gemm has no
/// epilogue); a product too small to split, or with too few rows, is one call followed by the
/// epilogue. Returns false, writing nothing, unless the call is a single f32 product (2-D, or
/// batch dims that fold into the rows) into an output whose rows are contiguous and apart.
fn f32_biased(
    call: &LibraryCall,
    inputs: &[Arc<HostBuffer>],
    out: &mut HostBuffer,
    bias: &[f32],
    relu: bool,
) -> bool {
    let (av, bv, ov) = check_views(call);
    let r = ov.ndim();
    let (n, k) = (ov.shape[r - 1], av.shape[r - 1]);
    let (HostBuffer::F32(o), HostBuffer::F32(a), HostBuffer::F32(b)) =
        (&mut *out, &*inputs[0], &*inputs[1])
    else {
        return false;
    };
    let Some((rows, a_rs, o_rs)) = matmul_rows(av, bv, ov) else {
        return false;
    };
    if call.dtype != DType::F32
        || ov.strides[r - 1] != 1
        || (rows > 1 && o_rs < n as isize)
        || k == 0
        || bias.len() != n
    {
        return false;
    }
    if rows == 0 || n == 0 {
        return true;
    }
    let threads = rayon::current_num_threads();
    let work = rows * n * k;
    let split = work >= PARALLEL_WORK && threads > 1 && rows >= threads * ROWS_PER_THREAD;
    let blocks = if split { threads } else { 1 };
    let (o, a, b) = (
        Shared(o.as_mut_ptr().wrapping_add(ov.offset)),
        Shared(a.as_ptr().wrapping_add(av.offset).cast_mut()),
        Shared(b.as_ptr().wrapping_add(bv.offset).cast_mut()),
    );
    let block = |t: usize| {
        let (i0, i1) = (rows * t / blocks, rows * (t + 1) / blocks);
        let (a_cs, b_rs, b_cs) = (av.strides[r - 1], bv.strides[r - 2], bv.strides[r - 1]);
        let at =
            |p: Shared<f32>, i: usize, stride: isize| p.get().wrapping_offset(i as isize * stride);
        // SAFETY: `run_library` asserted that every view fits in its buffer, and rows i0..i1
        // of the folded views are addresses of those views (as in `gemm_batched`), so every
        // address gemm forms is inside its buffer. Blocks are disjoint row ranges of an output
        // whose rows lie `o_rs ≥ n` apart (checked above), so no two threads write one
        // element, and the output buffer (borrowed mutably) aliases no input.
        unsafe {
            gemm_one::<f32>(
                (i1 - i0, n, k),
                (at(o, i0, o_rs), o_rs, 1),
                (at(a, i0, a_rs), a_rs, a_cs),
                (b.get(), b_rs, b_cs),
                if split {
                    gemm::Parallelism::None
                } else {
                    parallelism(work)
                },
                None,
            );
        }
        for i in i0..i1 {
            // SAFETY: row i's n elements are inside the output (as above) and this block's
            // alone; gemm has returned, so nothing else borrows them.
            let row = unsafe { std::slice::from_raw_parts_mut(at(o, i, o_rs), n) };
            bias_relu(row, bias, relu);
        }
    };
    if split {
        use rayon::prelude::*;
        (0..blocks).into_par_iter().for_each(block);
    } else {
        block(0);
    }
    true
}

/// `x = x + bias[j]` along a row, then the graph's relu where `relu` (a NaN stays, anything not
/// above zero becomes +0), each rounded as the f32 ops are.
fn bias_relu(row: &mut [f32], bias: &[f32], relu: bool) {
    if relu {
        for (x, &c) in row.iter_mut().zip(bias) {
            let v = *x + c;
            *x = if v > 0.0 || v.is_nan() { v } else { 0.0 };
        }
    } else {
        for (x, &c) in row.iter_mut().zip(bias) {
            *x += c;
        }
    }
}

/// The graph's relu at every index of `ov`, in place.
fn relu_in_place(dtype: DType, ov: &View, out: &mut HostBuffer) {
    let compute = dtype.compute_dtype();
    for_each_index(&ov.shape, |p| {
        let at = ov.address(p) as usize;
        let x = out.get_as(dtype, at);
        let y = smelt_ir::scalar_ops::unary(smelt_ir::UnaryOp::Relu, x, compute);
        out.set_as(dtype, at, y);
    });
}

/// `out = out + c` at every index of `ov` (`c` read through its view at the same index), with
/// the graph's `add` semantics for `dtype`: scalar, for the calls no product's rounding takes.
fn add_in_place(
    dtype: DType,
    ov: &View,
    out: &mut HostBuffer,
    (cd, cv, c): (DType, &View, &HostBuffer),
) {
    for_each_index(&ov.shape, |p| {
        let (at, from) = (ov.address(p) as usize, cv.address(p) as usize);
        if dtype.is_complex() {
            // Part by part in f64, rounded once to the part's dtype.
            let (x, y) = (out.get_as(dtype, at), c.get_as(cd, from).cast(dtype));
            let (Scalar::Complex(xr, xi), Scalar::Complex(yr, yi)) = (x, y) else {
                unreachable!("complex dtypes read as complex scalars")
            };
            out.set(2 * at, Scalar::Float(xr + yr));
            out.set(2 * at + 1, Scalar::Float(xi + yi));
        } else {
            let x = out.get_as(dtype, at);
            let y = c.get_as(cd, from).cast(dtype);
            out.set(at, smelt_ir::scalar_ops::binary(BinaryOp::Add, x, y, dtype));
        }
    });
}

/// The gemm path; returns false (and writes nothing) when the dtypes are not floats.
pub fn matmul_gemm(call: &LibraryCall, inputs: &[Arc<HostBuffer>], out: &mut HostBuffer) -> bool {
    product(call, inputs, out, None)
}

/// [`matmul_gemm`], with a half-precision product's `bias` row (f32, one per column) added to
/// each rounded element and rounded again where given; returns false (and writes nothing)
/// when the dtypes are not floats, or a bias comes with a dtype other than f16 and bf16.
fn product(
    call: &LibraryCall,
    inputs: &[Arc<HostBuffer>],
    out: &mut HostBuffer,
    bias: Option<&[f32]>,
) -> bool {
    let (av, bv, ov) = check_views(call);
    if bias.is_some() && !matches!(call.dtype, DType::F16 | DType::BF16) {
        return false;
    }
    let complex = call.dtype.is_complex();
    match (&mut *out, &*inputs[0], &*inputs[1]) {
        (HostBuffer::F32(o), HostBuffer::F32(a), HostBuffer::F32(b)) if complex => {
            gemm_complex(o, a, b, av, bv, ov)
        }
        (HostBuffer::F64(o), HostBuffer::F64(a), HostBuffer::F64(b)) if complex => {
            gemm_complex(o, a, b, av, bv, ov)
        }
        (HostBuffer::F32(o), HostBuffer::F32(a), HostBuffer::F32(b)) => {
            gemm_batched(o, a, b, (av, bv, ov), gemm_one::<f32>, None)
        }
        (HostBuffer::F64(o), HostBuffer::F64(a), HostBuffer::F64(b)) => {
            gemm_batched(o, a, b, (av, bv, ov), gemm_one::<f64>, None)
        }
        (HostBuffer::F16(o), HostBuffer::F16(a), HostBuffer::F16(b)) => {
            let views = (av, bv, ov);
            gemm_widened(o, a, b, views, |x| x.to_f32(), half::f16::from_f32, bias)
        }
        (HostBuffer::BF16(o), HostBuffer::BF16(a), HostBuffer::BF16(b))
            if bf16_gemm::available() =>
        {
            gemm_bf16(o, a, b, (av, bv, ov), bias)
        }
        (HostBuffer::BF16(o), HostBuffer::BF16(a), HostBuffer::BF16(b)) => {
            let views = (av, bv, ov);
            gemm_widened(o, a, b, views, |x| x.to_f32(), half::bf16::from_f32, bias)
        }
        _ => return false,
    }
    true
}

/// A half-precision matmul through the f32 gemm: both operands widened whole (so the views'
/// offsets and strides address them unchanged), the product computed into an f32 buffer shaped
/// like `o`, and each element the output view covers rounded once (then, with a `bias` row,
/// widened, added to its column's bias and rounded again).
fn gemm_widened<H: Copy + Send + Sync>(
    o: &mut [H],
    a: &[H],
    b: &[H],
    (av, bv, ov): (&View, &View, &View),
    widen: impl Fn(H) -> f32 + Sync,
    narrow: impl Fn(f32) -> H + Sync,
    bias: Option<&[f32]>,
) {
    use rayon::prelude::*;
    // Pooled blocks (`crate::memory`): a forward pass widens the same sizes every time, and
    // fresh pages would cost the kernel's zeroing of each.
    let wide = |v: &[H]| {
        let mut w = Memory::<f32>::for_overwrite(v.len());
        w.par_iter_mut().zip(v).for_each(|(w, &x)| *w = widen(x));
        w
    };
    let (a, b) = (wide(a), wide(b));
    let mut acc = sums(o.len(), av);
    gemm_batched(&mut acc, &a, &b, (av, bv, ov), gemm_one::<f32>, None);
    match bias {
        None => narrow_into(o, &acc, ov, |x, _| narrow(x)),
        Some(bias) => narrow_into(o, &acc, ov, |x, j| narrow(widen(narrow(x)) + bias[j])),
    }
}

/// The f32 sums of a half-precision product whose output buffer holds `len` elements and
/// whose left operand is `av`: a pooled block (fresh pages would cost their zeroing), zeroed
/// only for an empty sum, since gemm writes every element of the output view otherwise.
fn sums(len: usize, av: &View) -> Memory<f32> {
    if av.shape[av.ndim() - 1] == 0 {
        Memory::zeroed(len)
    } else {
        Memory::for_overwrite(len)
    }
}

/// Rounds each element of `acc` that view `ov` covers into `o`: `narrow(x, j)` for the sum `x`
/// of column `j`.
fn narrow_into<H: Send>(
    o: &mut [H],
    acc: &[f32],
    ov: &View,
    narrow: impl Fn(f32, usize) -> H + Sync,
) {
    use rayon::prelude::*;
    let n = ov.shape[ov.ndim() - 1];
    if ov.offset == 0 && ov.numel() == o.len() && ov.is_contiguous() {
        // The usual output (a fresh row-major buffer): every element, on every thread.
        o.par_iter_mut()
            .zip(acc)
            .enumerate()
            .for_each(|(i, (o, &x))| *o = narrow(x, i % n));
        return;
    }
    for_each_index(&ov.shape, |p| {
        let at = ov.address(p) as usize;
        o[at] = narrow(acc[at], p[p.len() - 1]);
    });
}

/// A bfloat16 matmul on the host's bf16 dot-product instructions ([`bf16_gemm`]): the operands
/// read as they are, the sums kept in f32, each output element rounded once (and with a `bias`
/// row, added to its column's bias and rounded again, in the same epilogue).
fn gemm_bf16(
    o: &mut [half::bf16],
    a: &[half::bf16],
    b: &[half::bf16],
    views: (&View, &View, &View),
    bias: Option<&[f32]>,
) {
    gemm_batched(o, a, b, views, bf16_gemm::gemm, bias);
}

/// A complex product over buffers of parts (real, imaginary, in turn), as `num_complex` values.
fn gemm_complex<T: Unit + Send + Sync>(
    o: &mut [T],
    a: &[T],
    b: &[T],
    av: &View,
    bv: &View,
    ov: &View,
) {
    gemm_batched(
        as_complex_mut(o),
        as_complex(a),
        as_complex(b),
        (av, bv, ov),
        gemm_one::<Complex<T>>,
        None,
    )
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

/// The product of views `av` and `bv` of `a` and `b` into view `ov` of `o`, as one or more
/// calls of `run` (see [`gemm_one`] for its contract).
fn gemm_batched<O: Send + Sync, I: Send + Sync>(
    o: &mut [O],
    a: &[I],
    b: &[I],
    (av, bv, ov): (&View, &View, &View),
    run: Gemm<O, I>,
    bias: Option<&[f32]>,
) {
    let r = ov.ndim();
    let (m, n, k) = (ov.shape[r - 2], ov.shape[r - 1], av.shape[r - 1]);
    if m == 0 || n == 0 || (k == 0 && bias.is_none()) {
        // Empty products: the zeroed output is already the answer (an empty sum with a bias
        // row still needs the bias: `run` writes it).
        return;
    }
    assert!(
        ov.internal_overlap() == Some(false) || ov.numel() <= 1,
        "invariant: a matmul output view does not overlap itself: {ov}"
    );
    let (o, a, b) = (o.as_mut_ptr(), a.as_ptr(), b.as_ptr());
    if let Some((rows, a_rs, o_rs)) = matmul_rows(av, bv, ov) {
        // SAFETY: `run_library` asserted that every view fits in its buffer; the folded rows
        // `offset + i·row_stride` for i < rows are exactly the addresses of the batch and row
        // dims they replace, so each address gemm forms lies inside its buffer. The output
        // view does not overlap itself (asserted above) and the output buffer is not aliased
        // by the inputs (it is a fresh allocation, borrowed mutably here).
        unsafe {
            run(
                (rows, n, k),
                (o.add(ov.offset), o_rs, ov.strides[r - 1]),
                (a.add(av.offset), a_rs, av.strides[r - 1]),
                (b.add(bv.offset), bv.strides[r - 2], bv.strides[r - 1]),
                parallelism(rows * n * k),
                bias,
            );
        }
        return;
    }
    let mut points = vec![];
    for_each_index(&ov.shape[..r - 2], |p| {
        points.push((
            batch_offset(av, p),
            batch_offset(bv, p),
            batch_offset(ov, p),
        ))
    });
    // Many small products (attention's heads) run a product per thread; a few big ones run
    // each on every thread.
    let per_point = m * n * k;
    let across = points.len() >= 2 * rayon::current_num_threads() && per_point < 1 << 24;
    let (o, a, b) = (Shared(o), Shared(a.cast_mut()), Shared(b.cast_mut()));
    let one_point = |&(ao, bo, oo): &(isize, isize, isize), threads| {
        // SAFETY: as for the folded call: every view fits in its buffer, so each address
        // `offset + i·row_stride + j·col_stride` gemm forms lies inside it; batch points write
        // disjoint parts of the output (the view does not overlap itself), so products on
        // different threads never write the same element, and no input aliases the output.
        unsafe {
            run(
                (m, n, k),
                (o.get().offset(oo), ov.strides[r - 2], ov.strides[r - 1]),
                (a.get().offset(ao), av.strides[r - 2], av.strides[r - 1]),
                (b.get().offset(bo), bv.strides[r - 2], bv.strides[r - 1]),
                threads,
                bias,
            );
        }
    };
    if across {
        use rayon::prelude::*;
        points
            .par_iter()
            .for_each(|p| one_point(p, gemm::Parallelism::None));
    } else {
        for p in &points {
            one_point(p, parallelism(per_point));
        }
    }
}

/// A buffer's base pointer, shared by the threads that write disjoint parts of it.
pub(super) struct Shared<T>(pub(super) *mut T);

// By hand: derived impls would ask `T: Copy`, and a pointer copies whatever it points to.
impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Shared<T> {}

impl<T> Shared<T> {
    /// The pointer (a method, so closures capture the `Send` wrapper and not its field).
    pub(super) fn get(self) -> *mut T {
        self.0
    }
}

// SAFETY: the pointer is only dereferenced (by gemm) at addresses each thread owns alone
// (outputs) or that no thread writes (inputs); see `gemm_batched`.
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as for `Send`.
unsafe impl<T> Sync for Shared<T> {}

/// rayon's threads inside gemm for products of at least [`PARALLEL_WORK`] multiply-adds.
fn parallelism(work: usize) -> gemm::Parallelism {
    if work >= PARALLEL_WORK {
        gemm::Parallelism::Rayon(0)
    } else {
        gemm::Parallelism::None
    }
}

/// A routine computing one product as [`gemm_one`] does: `gemm_one` itself for the `gemm`
/// crate's types, [`bf16_gemm::gemm`] for bfloat16 operands and output, which also takes a
/// bias row (one f32 per output column, added to the rounded product and rounded again).
pub(crate) type Gemm<O, I> = unsafe fn(
    (usize, usize, usize),
    (*mut O, isize, isize),
    (*const I, isize, isize),
    (*const I, isize, isize),
    gemm::Parallelism,
    Option<&[f32]>,
);

/// The zero and one of an element type the `gemm` crate multiplies (its `alpha` and `beta`).
trait Unit: Copy + 'static {
    const ZERO: Self;
    const ONE: Self;
}

impl Unit for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
}

impl Unit for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
}

impl<T: Unit> Unit for Complex<T> {
    const ZERO: Complex<T> = Complex {
        re: T::ZERO,
        im: T::ZERO,
    };
    const ONE: Complex<T> = Complex {
        re: T::ONE,
        im: T::ZERO,
    };
}

/// One `m×k` by `k×n` gemm call, `out = a·b`; each operand is its first element's address,
/// its row stride and its column stride.
///
/// # Safety
/// Every address `first + i·row_stride + j·col_stride` (i below the operand's rows, j below
/// its columns) is inside the operand's allocation, the output's addresses are distinct, and
/// no other thread reads or writes them during the call.
unsafe fn gemm_one<T: Unit>(
    (m, n, k): (usize, usize, usize),
    (o, o_rs, o_cs): (*mut T, isize, isize),
    (a, a_rs, a_cs): (*const T, isize, isize),
    (b, b_rs, b_cs): (*const T, isize, isize),
    parallelism: gemm::Parallelism,
    bias: Option<&[f32]>,
) {
    assert!(
        bias.is_none(),
        "invariant: only the bf16 kernel takes a bias row"
    );
    let (zero, one) = (T::ZERO, T::ONE);
    // SAFETY: the caller's contract.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            o,
            o_cs,
            o_rs,
            false,
            a,
            a_cs,
            a_rs,
            b,
            b_cs,
            b_rs,
            zero,
            one,
            false,
            false,
            false,
            parallelism,
        );
    }
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

    /// A call of `av`·`bv` (buffers of `a_len` and `b_len` values of `dtype`) into output view
    /// `ov` (of a buffer of its elements), against the reference loop: `close(fast,
    /// reference)` per element.
    fn check_batched(
        dtype: DType,
        (av, a_len): (View, usize),
        (bv, b_len): (View, usize),
        ov: View,
        close: fn(f64, f64) -> bool,
    ) {
        let fill = |n: usize, salt: usize| {
            let v: Vec<Scalar> = (0..n)
                .map(|i| Scalar::Float(((i * 7 + salt) % 17) as f64 / 16.0 - 0.5))
                .collect();
            Arc::new(HostBuffer::from_scalars(dtype, &v))
        };
        let (a, b) = (fill(a_len, 3), fill(b_len, 11));
        let out = ov.shape.clone();
        let call = LibraryCall {
            op: LibraryOp::Matmul,
            inputs: vec![(dtype, av), (dtype, bv)],
            dtype,
            len: ov.numel(),
            out: ov,
        };
        let mut fast = HostBuffer::zeros(dtype, call.len);
        assert!(matmul_gemm(&call, &[a.clone(), b.clone()], &mut fast));
        let mut slow = HostBuffer::zeros(dtype, call.len);
        matmul_reference(&call, &[a, b], &mut slow);
        for i in 0..call.len {
            let (x, y) = (
                fast.get_as(dtype, i).as_f64(),
                slow.get_as(dtype, i).as_f64(),
            );
            assert!(close(x, y), "{out:?} element {i}: {x} vs {y}");
        }
    }

    /// [`check_batched`] in f32.
    fn check_f32_batched(av: View, bv: View, out: &[usize], a_len: usize, b_len: usize) {
        check_batched(
            DType::F32,
            (av, a_len),
            (bv, b_len),
            View::contiguous(out),
            |x, y| (x - y).abs() <= 1e-4 + 1e-5 * y.abs(),
        );
    }

    /// `x[2, 3, 5, 4] @ w[4, 6]` folds into one 30×4 by 4×6 product; a batch-transposed `x`
    /// does not fold and runs per batch point; sixteen small products run one per thread.
    #[test]
    fn batched_products_fold_or_split_and_match_the_reference_loop() {
        let (m, k, n) = (5usize, 4usize, 6usize);
        let a = View::contiguous(&[2, 3, m, k]);
        let w = View::new(vec![2, 3, k, n], vec![0, 0, n as isize, 1], 0);
        let out = [2, 3, m, n];
        assert_eq!(
            matmul_rows(&a, &w, &View::contiguous(&out)),
            Some((30, k as isize, n as isize))
        );
        check_f32_batched(a, w.clone(), &out, 2 * 3 * m * k, k * n);

        // The batch dims swapped: [3, 2] storage read as [2, 3] does not merge with the rows.
        let a_t = View::new(
            vec![2, 3, m, k],
            vec![(m * k) as isize, (2 * m * k) as isize, k as isize, 1],
            0,
        );
        assert_eq!(matmul_rows(&a_t, &w, &View::contiguous(&out)), None);
        check_f32_batched(a_t, w, &out, 2 * 3 * m * k, k * n);

        // Sixteen heads, each its own b: no fold, a product per thread.
        let heads = View::contiguous(&[16, m, k]);
        let b = View::contiguous(&[16, k, n]);
        assert_eq!(
            matmul_rows(&heads, &b, &View::contiguous(&[16, m, n])),
            None
        );
        check_f32_batched(heads, b, &[16, m, n], 16 * m * k, 16 * k * n);

        // A broadcast `a` (stride-0 batch) with its own b per batch point.
        let a_b = View::new(vec![4, m, k], vec![0, k as isize, 1], 0);
        check_f32_batched(
            a_b,
            View::contiguous(&[4, k, n]),
            &[4, m, n],
            m * k,
            4 * k * n,
        );
    }

    /// `MatmulAdd` with a bias row, added where the product rounds (the bf16 kernel's epilogue
    /// where the host has it, the widened path's rounding pass for f16, and for bf16 called
    /// directly) or in each thread's f32 row block, with and without the relu, bit for bit
    /// against the same product followed by the add (and the relu) on its own: across K
    /// blocks, past the tile's edges, rows split over two threads, an empty sum, into a
    /// column-major output, with a strided bias.
    #[test]
    fn bias_rows_add_where_the_product_rounds() {
        // Two threads, whatever the host has: 300 rows split in two blocks of 150.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build();
        pool.expect("a pool of two threads")
            .install(check_bias_rows);
    }

    /// The body of [`bias_rows_add_where_the_product_rounds`].
    fn check_bias_rows() {
        let fill = |dtype: DType, n: usize, salt: usize| {
            let v: Vec<Scalar> = (0..n)
                .map(|i| Scalar::Float(((i * 7 + salt) % 23) as f64 / 8.0 - 1.3))
                .collect();
            Arc::new(HostBuffer::from_scalars(dtype, &v))
        };
        let shapes = [
            (13, 36, 45),
            (150, 1100, 70),
            (5, 6200, 40),
            (9, 2, 33),
            (4, 0, 5),
            (300, 64, 80),
        ];
        let cases = [DType::BF16, DType::F16, DType::F32]
            .into_iter()
            .flat_map(|d| shapes.map(|s| (d, s)));
        for (dtype, (m, k, n)) in cases {
            for relu in [false, true] {
                for column_major in [false, true] {
                    let ov = if column_major {
                        View::new(vec![m, n], vec![1, m as isize], 0)
                    } else {
                        View::contiguous(&[m, n])
                    };
                    // Every other value of a [2n] buffer, broadcast over the rows.
                    let cv = View::new(vec![m, n], vec![0, 2], 1);
                    let (a, b, c) = (
                        fill(dtype, m * k, 3),
                        fill(dtype, k * n, 11),
                        fill(dtype, 2 * n, 5),
                    );
                    let call = LibraryCall {
                        op: LibraryOp::MatmulAdd { relu },
                        inputs: vec![
                            (dtype, View::contiguous(&[m, k])),
                            (dtype, View::contiguous(&[k, n])),
                            (dtype, cv.clone()),
                        ],
                        dtype,
                        len: m * n,
                        out: ov.clone(),
                    };
                    let inputs = [a.clone(), b.clone(), c.clone()];
                    let mut fused = HostBuffer::zeros(dtype, m * n);
                    matmul_add(&call, &inputs, &mut fused);
                    let product_call = LibraryCall {
                        op: LibraryOp::Matmul,
                        inputs: call.inputs[..2].to_vec(),
                        ..call.clone()
                    };
                    let mut apart = HostBuffer::zeros(dtype, m * n);
                    matmul(&product_call, &inputs[..2], &mut apart);
                    add_in_place(dtype, &ov, &mut apart, (dtype, &cv, &c));
                    if relu {
                        relu_in_place(dtype, &ov, &mut apart);
                    }
                    let what =
                        format!("{dtype:?} {m}x{k}x{n} relu {relu} column-major {column_major}");
                    same_bits(&fused, &apart, &what);
                    if dtype == DType::BF16 && !relu {
                        // The widened path, which hosts without the bf16 instructions take.
                        let (HostBuffer::BF16(a), HostBuffer::BF16(b)) = (&*a, &*b) else {
                            unreachable!("bf16 buffers")
                        };
                        let row = bias_row(&c, dtype, &cv).expect("a bias row");
                        let mut widened = vec![half::bf16::ZERO; m * n];
                        let views = (&call.inputs[0].1, &call.inputs[1].1, &ov);
                        gemm_widened(
                            &mut widened,
                            a,
                            b,
                            views,
                            |x| x.to_f32(),
                            half::bf16::from_f32,
                            Some(&row),
                        );
                        let mut apart = vec![half::bf16::ZERO; m * n];
                        gemm_widened(
                            &mut apart,
                            a,
                            b,
                            views,
                            |x| x.to_f32(),
                            half::bf16::from_f32,
                            None,
                        );
                        let mut apart = HostBuffer::BF16(Memory::from_slice(&apart));
                        add_in_place(dtype, &ov, &mut apart, (dtype, &cv, &c));
                        let widened = HostBuffer::BF16(Memory::from_slice(&widened));
                        same_bits(&widened, &apart, &format!("widened {what}"));
                    }
                }
            }
        }
    }

    /// The f32 epilogue's add and relu, bit for bit against the graph's scalar ops: a NaN
    /// stays NaN, -0 and negative sums become +0, infinities add as f32 does.
    #[test]
    fn the_f32_epilogue_is_the_graph_add_then_relu() {
        let specials = [
            f32::NAN,
            -0.0,
            0.0,
            -1.5,
            1.5,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ];
        let pairs: Vec<(f32, f32)> = specials
            .iter()
            .flat_map(|&x| specials.map(|c| (x, c)))
            .collect();
        let bias: Vec<f32> = pairs.iter().map(|p| p.1).collect();
        for relu in [false, true] {
            let mut row: Vec<f32> = pairs.iter().map(|p| p.0).collect();
            bias_relu(&mut row, &bias, relu);
            for (&got, &(x, c)) in row.iter().zip(&pairs) {
                let (x, c) = (Scalar::Float(x.into()), Scalar::Float(c.into()));
                let mut want = smelt_ir::scalar_ops::binary(BinaryOp::Add, x, c, DType::F32);
                if relu {
                    want = smelt_ir::scalar_ops::unary(smelt_ir::UnaryOp::Relu, want, DType::F32);
                }
                let want = want.as_f64() as f32;
                assert_eq!(got.to_bits(), want.to_bits(), "{x:?} + {c:?}, relu {relu}");
            }
        }
    }

    /// Panics at the first element whose bits differ between two buffers.
    fn same_bits(got: &HostBuffer, want: &HostBuffer, what: &str) {
        let (got, want) = (
            crate::backend_tests::float_bits(got),
            crate::backend_tests::float_bits(want),
        );
        if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
            panic!("{what}: element {i}: {:#06x} vs {:#06x}", got[i], want[i]);
        }
    }

    /// bfloat16 products (on the bf16 dot-product kernel where the host has it, else widened)
    /// against the reference loop: edges of every block (rows past a multiple of the tile and
    /// of a thread's block, an odd K across two K blocks, an even one across three: `a` read in
    /// place; [`bf16_gemm`]'s K block is 3072), a transposed `a`, a strided and a transposed
    /// `b`, a column-major output, and a batch with a broadcast `b`.
    #[test]
    fn bf16_products_match_the_reference_loop() {
        let run_into = |av: View, bv: View, ov: View, a_len: usize, b_len: usize| {
            // Sums in f32 (fast) and f64 (reference) round to bf16 within an ulp.
            check_batched(DType::BF16, (av, a_len), (bv, b_len), ov, |x, y| {
                (x - y).abs() <= y.abs() / 128.0 + 1e-6
            });
        };
        let run = |av: View, bv: View, out: &[usize], a_len: usize, b_len: usize| {
            run_into(av, bv, View::contiguous(out), a_len, b_len)
        };
        for (m, k, n) in [
            (1, 1, 1),
            (13, 37, 45),
            (150, 1101, 70),
            (9, 2, 33),
            (17, 3101, 40),
            (5, 6200, 40),
        ] {
            let (mi, ni) = (m as isize, n as isize);
            run(
                View::contiguous(&[m, k]),
                View::contiguous(&[k, n]),
                &[m, n],
                m * k,
                k * n,
            );
            // a read transposed ([k, m] storage), b every other column of a [k, 2n] buffer.
            run(
                View::new(vec![m, k], vec![1, mi], 0),
                View::new(vec![k, n], vec![2 * ni, 2], 1),
                &[m, n],
                m * k,
                2 * k * n,
            );
            // b read transposed ([n, k] storage, attention's `kᵀ`): pairs down its columns.
            run(
                View::contiguous(&[m, k]),
                View::new(vec![k, n], vec![1, k as isize], 0),
                &[m, n],
                m * k,
                k * n,
            );
        }
        // A column-major output (its rows strided): sums kept in f32, rounded at the end.
        for (m, k, n) in [(13, 36, 45), (20, 1030, 33)] {
            run_into(
                View::contiguous(&[m, k]),
                View::contiguous(&[k, n]),
                View::new(vec![m, n], vec![1, m as isize], 0),
                m * k,
                k * n,
            );
        }
        // Three batch points sharing b: one folded product.
        run(
            View::contiguous(&[3, 20, 40]),
            View::new(vec![3, 40, 50], vec![0, 50, 1], 0),
            &[3, 20, 50],
            3 * 20 * 40,
            40 * 50,
        );
    }
}
