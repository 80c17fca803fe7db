//! Complex tensors beyond the conformance cases: views and conjugation add no graph node, a
//! complex elementwise chain fuses into one kernel, and regressions the suite found (values
//! recorded from PyTorch 2.15).

use smelt::prelude::*;
use smelt::{BinaryOp, Mode, explain_mode};

fn c(re: f64, im: f64) -> Scalar {
    Scalar::Complex(re, im)
}

fn pairs(t: &Tensor) -> Vec<(f64, f64)> {
    t.to_scalars().into_iter().map(|s| s.as_complex()).collect()
}

fn nodes(t: &Tensor) -> usize {
    t.graph().graph().graph.node_count()
}

#[test]
fn real_imag_and_conj_add_no_node() {
    let x = Tensor::from_scalars(&[c(1.0, 2.0), c(-3.0, 0.5)], &[2], DType::C64);
    let y = &x * c(0.5, -1.0);
    let before = nodes(&y);
    assert_eq!(nodes(&y.real()), before);
    assert_eq!(nodes(&y.imag()), before);
    assert_eq!(nodes(&y.conj()), before);
    assert_eq!(nodes(&y.conj().real()), before);
    assert!(y.conj().is_conj() && y.conj().shares_storage(&y));
    assert!(x.real().shares_storage(&x) && x.imag().shares_storage(&x));
    assert_eq!(x.imag().storage_offset(), 1);
    assert_eq!(x.imag().stride(), [2]);
}

#[test]
fn a_complex_elementwise_chain_fuses_into_one_kernel() {
    let x = Tensor::from_scalars(&[c(1.0, 2.0), c(-3.0, 0.5), c(0.0, -1.0)], &[3], DType::C64);
    let y = Tensor::from_scalars(&[c(0.5, 0.5), c(2.0, 0.0), c(-1.0, 1.0)], &[3], DType::C64);
    // (x * conj(y) + 1) / (x - 2i), then exp: one kernel, conj folded into the loads.
    let z = ((&x * &y.conj() + 1.0) / (&x - c(0.0, 2.0))).exp();
    let plan = explain_mode(&z, Mode::Fused);
    assert_eq!(plan.kernels.len(), 1, "{plan}");
    // torch: ((x * y.conj() + 1) / (x - 2j)).exp()
    let want = [
        (10.691143989562988, 5.840599060058594),
        (1.9759961366653442, -2.6680736541748047),
        (0.7165312767028809, 0.0),
    ];
    for ((a, b), (p, q)) in pairs(&z).into_iter().zip(want) {
        assert!(
            (a - p).abs() < 1e-5 && (b - q).abs() < 1e-5,
            "{a}+{b}i vs {p}+{q}i"
        );
    }
}

#[test]
fn writes_through_real_and_imag_change_the_base() {
    let x = Tensor::from_scalars(&[c(1.0, 2.0), c(-3.0, 0.5)], &[2], DType::C128);
    x.real().add_(10.0);
    x.imag().mul_(-2.0);
    assert_eq!(pairs(&x), [(11.0, -4.0), (7.0, -1.0)]);
}

#[test]
fn in_place_sub_on_a_strided_conjugate_view() {
    // torch: t0[::2][:3].conj().sub_(-2-0.5j)
    let t0 = Tensor::from_scalars(
        &[
            c(2.75, 3.0),
            c(0.25, -3.0),
            c(2.5, 0.0),
            c(-3.25, -2.0),
            c(2.0, -1.5),
            c(-0.5, -1.25),
            c(0.75, -1.0),
        ],
        &[7],
        DType::C128,
    );
    let t3 = t0.slice(0, Some(0), None, 2).narrow(0, 0, 3).conj();
    t3.sub_(c(-2.0, -0.5));
    assert!(t3.is_conj());
    assert_eq!(pairs(&t3), [(4.75, -2.5), (4.5, 0.5), (4.0, 2.0)]);
    assert_eq!(
        pairs(&t0),
        [
            (4.75, 2.5),
            (0.25, -3.0),
            (4.5, -0.5),
            (-3.25, -2.0),
            (4.0, -2.0),
            (-0.5, -1.25),
            (0.75, -1.0)
        ]
    );
}

#[test]
fn prod_gives_a_fresh_tensor() {
    let t0 = Tensor::from_scalars(&[c(0.5, -0.25), c(-0.75, -0.25)], &[2], DType::C64);
    let p = t0.prod(Some(0), false, None);
    assert_eq!(p.storage_offset(), 0);
    assert_eq!(pairs(&p), [(-0.4375, 0.0625)]);
    let q = t0.conj().prod(None::<i64>, false, None);
    assert_eq!(q.storage_offset(), 0);
    assert!(!q.is_conj());
    assert_eq!(pairs(&q), [(-0.4375, -0.0625)]);
}

#[test]
fn sub_with_a_bool_operand_is_refused_for_complex_too() {
    let x = Tensor::from_scalars(&[c(1.0, 2.0)], &[1], DType::C128);
    let e = x.try_binary(true, BinaryOp::Sub).unwrap_err();
    assert_eq!(e.kind, ErrorKind::DType);
}

#[test]
fn half_floats_compare_with_complex() {
    // torch: tensor([4.0, 2.0], dtype=float16) == (4+0j) → [True, False] (in complex32)
    let h = Tensor::from_scalars(&[Scalar::Float(4.0), Scalar::Float(2.0)], &[2], DType::F16);
    let eq = h.try_binary(c(4.0, 0.0), BinaryOp::Eq).unwrap();
    assert_eq!(eq.to_vec::<bool>(), [true, false]);
    let b = h.to_dtype(DType::BF16);
    let ne = b.try_binary(c(2.0, 0.0), BinaryOp::Ne).unwrap();
    assert_eq!(ne.to_vec::<bool>(), [true, false]);
    // The complex operand rounds to half precision first, as in complex32: torch gives
    // eq(tensor([1.0], float16), 1.0001+0j) → [True], eq(bf16 [1.0], tensor(1.001+0j)) → [True].
    let one = Tensor::from_scalars(&[Scalar::Float(1.0)], &[1], DType::F16);
    let eq = one.try_binary(c(1.0001, 0.0), BinaryOp::Eq).unwrap();
    assert_eq!(eq.to_vec::<bool>(), [true]);
    let z = Tensor::from_scalars(&[c(1.001, 0.0)], &[], DType::C128);
    let eq = one
        .to_dtype(DType::BF16)
        .try_binary(&z, BinaryOp::Eq)
        .unwrap();
    assert_eq!(eq.to_vec::<bool>(), [true]);
    let ne = z
        .try_binary(one.to_dtype(DType::BF16), BinaryOp::Ne)
        .unwrap();
    assert_eq!(ne.to_vec::<bool>(), [false]);
    // Arithmetic would give complex32, which smelt lacks.
    assert!(h.try_binary(c(1.0, 1.0), BinaryOp::Add).is_err());
}
