//! CUDA entry points without a usable GPU return `device` errors naming what is missing, and
//! never panic; with one, `SMELT_DEVICE=cuda` runs the kernels (and matmuls, on cuBLAS) there
//! and matches the host.

use smelt::prelude::*;

#[test]
fn cuda_entry_points_report_device_errors_or_work() {
    let x = Tensor::new([[1.0f32, -2.0], [3.0, 4.0]]);
    let expected = (&x * 2.0 + 1.0)
        .relu()
        .sum(&[1], false, None)
        .to_vec::<f32>();
    // relu(a @ bᵀ + bias) in f32 and a batched, transposed-output matmul in f64: cuBLAS gemms
    // followed by fused epilogue kernels.
    let values = |n: usize, seed: usize| -> Vec<Scalar> {
        (0..n)
            .map(|i| Scalar::Float(((i * 5 + seed) % 9) as f64 - 4.0))
            .collect()
    };
    let a = Tensor::from_scalars(&values(12, 1), &[3, 4], DType::F32);
    let b = Tensor::from_scalars(&values(20, 2), &[5, 4], DType::F32);
    let bias = Tensor::from_scalars(&values(5, 3), &[5], DType::F32);
    let p = Tensor::from_scalars(&values(2 * 3 * 4, 4), &[2, 3, 4], DType::F64);
    let q = Tensor::from_scalars(&values(4 * 5, 5), &[4, 5], DType::F64);
    let mm = || {
        (
            (a.matmul(&b.t()) + &bias).relu(),
            p.matmul(&q).transpose(1, 2) * 2.0,
        )
    };
    let (mm32, mm64) = mm();
    let (expected32, expected64) = (mm32.to_vec::<f32>(), mm64.to_vec::<f64>());
    let available = smelt_runtime::cuda::status(0);
    match x.try_to(Device::Cuda(0)) {
        Ok(_) => panic!("tensors cannot be placed on CUDA yet"),
        Err(e) => match &available {
            Err(_) => {
                assert_eq!(e.kind, ErrorKind::Device, "{e}");
                assert!(e.message.contains("unavailable"), "{e}");
            }
            Ok(_) => assert_eq!(e.kind, ErrorKind::Unsupported, "{e}"),
        },
    }
    assert!(x.try_to(Device::Cpu).is_ok());
    // SAFETY: this binary's only test sets it; nothing else reads the environment meanwhile.
    unsafe { std::env::set_var("SMELT_DEVICE", "cuda") };
    let y = (&x * 2.0 + 1.0).relu().sum(&[1], false, None);
    let result = smelt::frontend::realize(&[&y]);
    let (mm32, mm64) = mm();
    let mm_result = smelt::frontend::realize(&[&mm32, &mm64]);
    // SAFETY: as above.
    unsafe { std::env::remove_var("SMELT_DEVICE") };
    let cublas = available
        .clone()
        .and_then(|_| smelt_runtime::cuda::cublas_status());
    match (&cublas, mm_result) {
        (Err(why), Err(e)) => {
            assert_eq!(e.kind, ErrorKind::Device, "{e}");
            eprintln!("no usable CUDA device or cuBLAS, checked the matmul error only: {why}");
        }
        (Err(why), Ok(())) => panic!("matmul realized on cuda although {why}"),
        (Ok(()), r) => {
            r.unwrap_or_else(|e| panic!("cuda matmul realisation failed: {e}"));
            assert_eq!(mm32.to_vec::<f32>(), expected32);
            assert_eq!(mm64.to_vec::<f64>(), expected64);
        }
    }
    match (&available, result) {
        (Err(_), Err(e)) => assert_eq!(e.kind, ErrorKind::Device, "{e}"),
        (Err(_), Ok(())) => panic!("realized on cuda without a device"),
        (Ok(_), r) => {
            r.unwrap_or_else(|e| panic!("cuda realisation failed: {e}"));
            assert_eq!(y.to_vec::<f32>(), expected);
        }
    }
}
