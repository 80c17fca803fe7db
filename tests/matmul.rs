//! End-to-end tests of the matmul family (mm, bmm, matmul's 1-D and broadcasting rules, mv,
//! dot, outer, addmm) against hand-computed values, their errors, and a property test that the
//! gemm path agrees with the f64 reference loop on random strided operands.

use proptest::prelude::*;
use smelt::prelude::*;
use smelt_ir::{DType as IrDType, LibraryCall, LibraryOp, View};
use smelt_runtime::HostBuffer;
use smelt_runtime::library::{matmul_gemm, matmul_reference};
use std::sync::Arc;
mod common;
use common::cases;

fn t(data: &[f64], shape: &[usize], dtype: DType) -> Tensor {
    let values: Vec<Scalar> = data.iter().map(|&v| Scalar::Float(v)).collect();
    Tensor::from_scalars(&values, shape, dtype)
}

fn kind<T: std::fmt::Debug>(r: Result<T>) -> ErrorKind {
    r.expect_err("expected an error").kind
}

#[test]
fn mm_and_strided_operands() {
    let a = t(&[1., 2., 3., 4., 5., 6.], &[2, 3], DType::F32);
    let b = t(&[1., 0., 0., 1., 1., 1.], &[3, 2], DType::F32);
    let c = a.mm(&b);
    assert_eq!(c.shape(), &[2, 2]);
    assert_eq!(c.stride(), vec![2, 1]);
    assert_eq!(c.to_vec::<f32>(), vec![4., 5., 10., 11.]);
    // a @ a.T reads the transposed view directly: no copy node before the matmul.
    let g = a.mm(&a.t());
    let dump = g.graph().text();
    assert_eq!(dump.lines().count(), 2, "{dump}");
    assert!(dump.contains("matmul"), "{dump}");
    assert_eq!(g.to_vec::<f32>(), vec![14., 32., 32., 77.]);
    // Integer and half dtypes take the reference loop.
    let ai = a.to_dtype(DType::I32);
    assert_eq!(
        ai.mm(&b.to_dtype(DType::I32)).to_vec::<i32>(),
        vec![4, 5, 10, 11]
    );
    assert_eq!(
        a.to_dtype(DType::F16)
            .mm(&b.to_dtype(DType::F16))
            .to_vec::<f32>(),
        vec![4., 5., 10., 11.]
    );
}

#[test]
fn matmul_rules() {
    let v = t(&[1., 2.], &[2], DType::F64);
    let m = t(&[1., 2., 3., 4.], &[2, 2], DType::F64);
    let dot = v.matmul(&v);
    assert_eq!(dot.shape(), &[] as &[usize]);
    assert_eq!(dot.item().as_f64(), 5.0);
    assert_eq!(m.matmul(&v).to_vec::<f64>(), vec![5., 11.]);
    assert_eq!(v.matmul(&m).to_vec::<f64>(), vec![7., 10.]);
    // Batch dims broadcast: [3, 1, 2, 2] @ [2, 2] -> [3, 1, 2, 2].
    let batch = m.expand(&[3, 1, 2, 2]);
    let r = batch.matmul(&m);
    assert_eq!(r.shape(), &[3, 1, 2, 2]);
    assert_eq!(r.to_vec::<f64>()[..4], [7., 10., 15., 22.]);
    // [2] @ [4, 2, 3] -> [4, 3].
    let b3 = Tensor::ones(&[4, 2, 3], Some(DType::F64));
    assert_eq!(v.matmul(&b3).shape(), &[4, 3]);
    assert_eq!(
        kind(m.try_matmul(&t(&[1., 2., 3.], &[3], DType::F64))),
        ErrorKind::Shape
    );
    assert_eq!(
        kind(m.try_matmul(&m.to_dtype(DType::F32))),
        ErrorKind::DType
    );
    assert_eq!(
        kind(Tensor::ones(&[2, 2, 2], None).try_matmul(&Tensor::ones(&[3, 2, 2], None))),
        ErrorKind::Shape
    );
    assert_eq!(
        kind(m.to_dtype(DType::Bool).try_matmul(&m.to_dtype(DType::Bool))),
        ErrorKind::DType
    );
}

#[test]
fn bmm_mv_dot_outer_addmm() {
    let a = Tensor::arange(0, 12, 1, Some(DType::F32)).reshape(&[2, 2, 3]);
    let b = Tensor::ones(&[2, 3, 1], Some(DType::F32));
    assert_eq!(a.bmm(&b).to_vec::<f32>(), vec![3., 12., 21., 30.]);
    assert_eq!(
        kind(a.try_bmm(&Tensor::ones(&[1, 3, 1], None))),
        ErrorKind::Shape
    );
    assert_eq!(
        kind(a.try_bmm(&Tensor::ones(&[3, 1], None))),
        ErrorKind::Shape
    );

    let m = t(&[1., 2., 3., 4.], &[2, 2], DType::F32);
    let v = t(&[1., -1.], &[2], DType::F32);
    assert_eq!(m.mv(&v).to_vec::<f32>(), vec![-1., -1.]);
    assert_eq!(kind(m.try_mv(&v.to_dtype(DType::F64))), ErrorKind::DType);
    assert_eq!(v.dot(&v).item().as_f64(), 2.0);
    assert_eq!(kind(v.try_dot(&m)), ErrorKind::Shape);
    assert_eq!(
        kind(v.try_dot(&t(&[1., 2., 3.], &[3], DType::F32))),
        ErrorKind::Shape
    );

    let o = v.outer(&Tensor::from_vec(vec![1i64, 2, 3], &[3]));
    assert_eq!(o.dtype(), DType::F32);
    assert_eq!(o.shape(), &[2, 3]);
    assert_eq!(o.to_vec::<f32>(), vec![1., 2., 3., -1., -2., -3.]);

    // beta * bias + alpha * (m @ m), with a row bias broadcast over the rows.
    let bias = t(&[10., 20.], &[2], DType::F32);
    let r = bias
        .try_addmm(&m, &m, Scalar::Float(0.5), Scalar::Int(2))
        .unwrap();
    assert_eq!(r.to_vec::<f32>(), vec![19., 30., 35., 54.]);
    // beta = 0 ignores the bias, NaNs included.
    let nan = t(&[f64::NAN], &[1], DType::F32);
    assert_eq!(
        nan.try_addmm(&m, &m, Scalar::Int(0), Scalar::Int(1))
            .unwrap()
            .to_vec::<f32>(),
        vec![7., 10., 15., 22.]
    );
    assert_eq!(
        kind(t(&[1., 2., 3.], &[3], DType::F32).try_addmm(&m, &m, Scalar::Int(1), Scalar::Int(1))),
        ErrorKind::Shape
    );
    assert_eq!(
        kind(
            bias.to_dtype(DType::F64)
                .try_addmm(&m, &m, Scalar::Int(1), Scalar::Int(1))
        ),
        ErrorKind::DType
    );
}

/// A random strided view of a `[*batch, rows, cols]` operand over a buffer: per dim a stride
/// that may be 0 (broadcast), transposed or padded.
fn strided_view(
    shape: &[usize],
    order_seed: u64,
    pad: usize,
    zero_dim: Option<usize>,
) -> (View, usize) {
    let n = shape.len();
    let mut order: Vec<usize> = (0..n).collect();
    if order_seed % 2 == 1 {
        order.swap(n - 1, n - 2);
    }
    let mut strides = vec![0isize; n];
    let mut acc = 1usize;
    for &d in order.iter().rev() {
        if Some(d) == zero_dim {
            continue;
        }
        strides[d] = acc as isize;
        acc *= shape[d].max(1) + pad;
    }
    let offset = pad;
    let view = View::new(shape.to_vec(), strides, offset);
    let len = view
        .address_range()
        .map(|(_, hi)| hi as usize + 1)
        .unwrap_or(0);
    (view, len)
}

/// Multiples of 1/8 in [−5, 5] (exact in every float dtype): every product is a multiple of
/// 1/64 below 25 in magnitude, so a dot product of up to 10,000 of them is exact in f32
/// (25 · 64 · 10,000 < 2^24) in any order, and gemm must equal the reference loop exactly.
fn random_buffer(dtype: IrDType, len: usize, seed: u64) -> HostBuffer {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let values: Vec<Scalar> = (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            Scalar::Float(((state >> 33) % 81) as f64 / 8.0 - 5.0)
        })
        .collect();
    HostBuffer::from_scalars(dtype, &values)
}

proptest! {
    #![proptest_config(cases(64))]
    #[test]
    fn gemm_matches_reference(
        batch in proptest::collection::vec(1usize..3, 0..3),
        m in 1usize..9, k in 0usize..9, n in 1usize..9,
        a_order in 0u64..2, b_order in 0u64..2, pad in 0usize..3,
        a_zero in proptest::option::of(0usize..5), b_zero in proptest::option::of(0usize..5),
        dtype_index in 0usize..4, seed in any::<u64>(),
    ) {
        // Half precision goes through the f32 gemm and rounds the exact sum once, as the
        // reference does.
        let dtype = [IrDType::F32, IrDType::F64, IrDType::F16, IrDType::BF16][dtype_index];
        let with = |tail: [usize; 2]| -> Vec<usize> { batch.iter().copied().chain(tail).collect() };
        let r = batch.len() + 2;
        let (av, alen) = strided_view(&with([m, k]), a_order, pad, a_zero.filter(|&d| d < r));
        let (bv, blen) = strided_view(&with([k, n]), b_order, pad, b_zero.filter(|&d| d < r));
        let out = View::contiguous(&with([m, n]));
        let call = LibraryCall {
            op: LibraryOp::Matmul,
            inputs: vec![(dtype, av), (dtype, bv)],
            dtype,
            len: out.numel(),
            out,
        };
        let inputs = vec![Arc::new(random_buffer(dtype, alen, seed)), Arc::new(random_buffer(dtype, blen, seed ^ 0x5555))];
        let mut fast = HostBuffer::zeros(dtype, call.len);
        prop_assert!(matmul_gemm(&call, &inputs, &mut fast));
        let mut slow = HostBuffer::zeros(dtype, call.len);
        matmul_reference(&call, &inputs, &mut slow);
        // Exact: see `random_buffer`.
        for i in 0..call.len {
            let (x, y) = (fast.get(i).as_f64(), slow.get(i).as_f64());
            prop_assert!(x == y, "element {}: gemm {} vs reference {}", i, x, y);
        }
    }
}

#[test]
fn large_transposed_product_uses_threads_and_matches_reference() {
    let (m, k, n) = (70, 65, 66);
    let (av, alen) = strided_view(&[m, k], 1, 1, None);
    let (bv, blen) = strided_view(&[k, n], 0, 2, None);
    let out = View::contiguous(&[m, n]);
    let call = LibraryCall {
        op: LibraryOp::Matmul,
        inputs: vec![(IrDType::F64, av), (IrDType::F64, bv)],
        dtype: IrDType::F64,
        len: m * n,
        out,
    };
    let inputs = vec![
        Arc::new(random_buffer(IrDType::F64, alen, 1)),
        Arc::new(random_buffer(IrDType::F64, blen, 2)),
    ];
    let (mut fast, mut slow) = (
        HostBuffer::zeros(IrDType::F64, m * n),
        HostBuffer::zeros(IrDType::F64, m * n),
    );
    assert!(matmul_gemm(&call, &inputs, &mut fast));
    matmul_reference(&call, &inputs, &mut slow);
    for i in 0..m * n {
        let (x, y) = (fast.get(i).as_f64(), slow.get(i).as_f64());
        assert!(x == y, "element {i}: gemm {x} vs reference {y}");
    }
}
