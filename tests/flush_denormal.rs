//! `set_flush_denormal` (process-wide, so alone in this test binary) and
//! `set_default_tensor_type`.

use smelt::{DType, ErrorKind, Mode, Target, Tensor, realize_with};

/// PyTorch's example: with flushing on, `torch.tensor([1e-323], dtype=torch.float64)` is 0.
/// JIT kernels split over the worker threads and the reference interpreter flush too, and
/// turning it off brings the denormals back.
#[test]
fn flushing_denormals_reaches_creation_kernels_and_workers() {
    let n = 1 << 20;
    let tiny = Tensor::from_vec(vec![1e-310f64; n], &[n]);
    tiny.realize();
    let product = |target: Target| {
        let y = &tiny * 1.0;
        realize_with(&[&y], Mode::Fused, target).expect("runs");
        y.to_vec::<f64>()
    };
    assert!(smelt::set_flush_denormal(true), "x86_64 supports it");
    assert!(smelt::flush_denormal());
    assert_eq!(Tensor::new([1e-323f64]).to_vec::<f64>(), [0.0]);
    assert_eq!(Tensor::new([-1e-40f32]).to_vec::<f32>(), [-0.0]);
    assert_eq!(
        Tensor::new([1e-300f64]).to_vec::<f64>(),
        [1e-300],
        "normal values stay"
    );
    for target in [Target::Cpu, Target::Reference] {
        assert!(
            product(target).iter().all(|&x| x == 0.0),
            "{}: denormal operands read as 0",
            target.name()
        );
    }
    assert!(smelt::set_flush_denormal(false));
    assert_eq!(Tensor::new([1e-323f64]).to_vec::<f64>(), [1e-323]);
    for target in [Target::Cpu, Target::Reference] {
        assert!(
            product(target).iter().all(|&x| x == 1e-310),
            "{}",
            target.name()
        );
    }
}

#[test]
fn default_tensor_types_set_the_default_dtype() {
    smelt::set_default_tensor_type("torch.DoubleTensor");
    assert_eq!(Tensor::zeros(&[2], None).dtype(), DType::F64);
    assert_eq!(Tensor::arange(0, 3, 1, None).exp().dtype(), DType::F64);
    smelt::set_default_tensor_type("torch.HalfTensor");
    assert_eq!(smelt::get_default_dtype(), DType::F16);
    let e = smelt::try_set_default_tensor_type("torch.LongTensor").unwrap_err();
    assert_eq!(e.kind, ErrorKind::DType);
    assert!(e.to_string().contains("only floating-point types"), "{e}");
    let e = smelt::try_set_default_tensor_type("torch.Tensorish").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Value);
    assert_eq!(
        smelt::get_default_dtype(),
        DType::F16,
        "a failed call changes nothing"
    );
    smelt::set_default_tensor_type("torch.FloatTensor");
    assert_eq!(smelt::get_default_dtype(), DType::F32);
}
