//! CUDA entry points without a usable GPU return `device` errors naming what is missing, and
//! never panic; with one, `SMELT_DEVICE=cuda` runs the kernels there and matches the reference.

use smelt::prelude::*;

#[test]
fn cuda_entry_points_report_device_errors_or_work() {
    let x = Tensor::new([[1.0f32, -2.0], [3.0, 4.0]]);
    let expected = (&x * 2.0 + 1.0)
        .relu()
        .sum(&[1], false, None)
        .to_vec::<f32>();
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
    // SAFETY: as above.
    unsafe { std::env::remove_var("SMELT_DEVICE") };
    match (&available, result) {
        (Err(_), Err(e)) => assert_eq!(e.kind, ErrorKind::Device, "{e}"),
        (Err(_), Ok(())) => panic!("realized on cuda without a device"),
        (Ok(_), r) => {
            r.unwrap_or_else(|e| panic!("cuda realisation failed: {e}"));
            assert_eq!(y.to_vec::<f32>(), expected);
        }
    }
}
