//! Device-resident CUDA tensors. Without a usable GPU every CUDA entry point returns a `device`
//! error naming what is missing and never panics; with one, tensors placed on `cuda:0` stay
//! there through elementwise chains, reductions, views, in-place writes, matmuls and library
//! routines, match the host's values, and a realisation copies nothing between host and device.

use smelt::prelude::*;
use smelt_runtime::transfers;

fn values(n: usize, seed: usize) -> Vec<Scalar> {
    (0..n)
        .map(|i| Scalar::Float(((i * 5 + seed) % 9) as f64 - 4.0))
        .collect()
}

fn gpu() -> Option<Device> {
    (smelt_runtime::cuda::device_count() > 0).then_some(Device::Cuda(0))
}

#[test]
fn without_a_gpu_cuda_is_a_device_error_never_a_panic() {
    if gpu().is_some() {
        return;
    }
    let x = Tensor::new([[1.0f32, -2.0], [3.0, 4.0]]);
    let e = x.try_to(Device::Cuda(0)).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Device, "{e}");
    assert!(e.message.contains("unavailable"), "{e}");
    // Host data made on a default CUDA device must be copied there: the same error.
    let e = smelt::with_default_device(Device::Cuda(0), || {
        Tensor::try_from_scalars(&values(4, 0), &[2, 2], DType::F32)
    })
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Device, "{e}");
    // A factory records lazily on the default device; realising it is the error.
    let z = smelt::with_default_device(Device::Cuda(0), || Tensor::zeros(&[3], None) + 1.0);
    assert_eq!(z.device(), Device::Cuda(0));
    let e = z.try_to_scalars().unwrap_err();
    assert_eq!(e.kind, ErrorKind::Device, "{e}");
    assert!(!smelt_runtime::cuda::report().is_empty());
    assert!(x.try_to(Device::Cpu).is_ok());
}

/// `y` computed on `dev` equals `y` computed on the host (exactly: the same ops in the same
/// order, except where `tol` allows).
fn same_on_device(
    dev: Device,
    make: &dyn Fn(&[Tensor]) -> Tensor,
    inputs: &[Tensor],
    tol: f64,
) -> Tensor {
    let want = make(inputs).to_vec::<f64>();
    let on_dev: Vec<Tensor> = inputs.iter().map(|t| t.to(dev)).collect();
    let y = make(&on_dev);
    assert_eq!(y.device(), dev, "results stay on the device");
    let got = y.to_vec::<f64>();
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let ok = g == w || (g.is_nan() && w.is_nan()) || (g - w).abs() <= tol * w.abs().max(1.0);
        assert!(ok, "element {i}: device {g} vs host {w}");
    }
    y
}

#[test]
fn device_tensors_stay_on_the_device_and_match_the_host() {
    let Some(dev) = gpu() else { return };
    let x = Tensor::from_scalars(&values(64 * 33, 1), &[64, 33], DType::F32);
    let w = Tensor::from_scalars(&values(33, 2), &[33], DType::F32);
    // An elementwise chain, a softmax and a layernorm-like row program.
    let chain = |t: &[Tensor]| ((&t[0] * 0.5 + &t[1]).relu() * 2.0 - 1.0).exp();
    same_on_device(dev, &chain, &[x.clone(), w.clone()], 1e-6);
    let softmax = |t: &[Tensor]| t[0].softmax(1, None);
    same_on_device(dev, &softmax, std::slice::from_ref(&x), 1e-6);
    let norm = |t: &[Tensor]| {
        let m = t[0].mean(&[1], true, None);
        let v = t[0].var(&[1], 1.0, true);
        (&t[0] - &m) / (v + 1e-5).sqrt()
    };
    same_on_device(dev, &norm, std::slice::from_ref(&x), 1e-5);
    // A realisation of device tensors copies nothing between host and device.
    let (xd, wd) = (x.to(dev), w.to(dev));
    let before = transfers();
    let y = chain(&[xd.clone(), wd.clone()]);
    y.realize();
    assert_eq!(
        transfers().since(before).count(),
        0,
        "copies during a realisation"
    );
    // Reading the values is one copy to the host.
    let _ = y.to_vec::<f32>();
    assert_eq!(transfers().since(before).device_to_host, 1);
    // A second run of the same plan allocates nothing new from the driver.
    let raw = smelt_runtime::cuda::memory_stats(0)
        .unwrap()
        .raw_allocations;
    for _ in 0..3 {
        chain(&[xd.clone(), wd.clone()]).realize();
    }
    let after = smelt_runtime::cuda::memory_stats(0).unwrap();
    assert!(after.raw_allocations <= raw + 1, "{after:?}");
    assert!(after.peak_in_use > 0 && after.held >= after.in_use);
}

/// Row kernels give a row a warp where rows are at most 1024 wide and at least 256 many, else a
/// block (`codegen/src/cuda/render.rs`); both sides of each bound, widths that are not a
/// multiple of a warp, row-level stores (a sum, a mean kept beside the normalised rows), and
/// broadcasts over permuted views, whose indices unravel by the host's dividers.
#[test]
fn row_kernels_on_a_warp_or_a_block_match_the_host() {
    let Some(dev) = gpu() else { return };
    let softmax = |t: &[Tensor]| t[0].softmax(1, None);
    let sums = |t: &[Tensor]| t[0].sum(&[1], false, None) + t[0].amax(&[1], false);
    let norm = |t: &[Tensor]| {
        let m = t[0].mean(&[1], true, None);
        let v = t[0].var(&[1], 0.0, true);
        (&t[0] - &m) / (v + 1e-5).sqrt() + m
    };
    for (rows, width) in [(300, 33), (257, 1024), (256, 1025), (255, 64), (1000, 1)] {
        let x = Tensor::from_scalars(&values(rows * width, rows), &[rows, width], DType::F32);
        for f in [&softmax as &dyn Fn(&[Tensor]) -> Tensor, &sums, &norm] {
            same_on_device(dev, f, std::slice::from_ref(&x), 1e-5);
        }
    }
    let x =
        Tensor::from_scalars(&values(300 * 768, 3), &[300, 768], DType::F32).to_dtype(DType::BF16);
    let w = Tensor::from_scalars(&values(768, 4), &[768], DType::F32).to_dtype(DType::BF16);
    let ln = |t: &[Tensor]| t[0].layer_norm(&[768], Some(&t[1]), Some(&t[1]), 1e-5);
    same_on_device(dev, &ln, &[x, w], 1e-2);
    let x = Tensor::from_scalars(&values(5 * 7 * 33, 5), &[5, 7, 33], DType::F32);
    let b = Tensor::from_scalars(&values(7, 6), &[7], DType::F32);
    let permuted = |t: &[Tensor]| (t[0].permute(&[2, 0, 1]) + &t[1]) * 3.0;
    same_on_device(dev, &permuted, &[x, b], 0.0);
}

#[test]
fn device_views_and_in_place_writes_share_storage() {
    let Some(dev) = gpu() else { return };
    let x = Tensor::from_scalars(&values(24, 3), &[4, 6], DType::F32).to(dev);
    let t = x.t();
    assert!(t.shares_storage(&x) && t.device() == dev);
    x.narrow(1, 2, 3).add_(10.0);
    x.select(0, 1).mul_(-1.0);
    let mut want: Vec<f32> = values(24, 3).iter().map(|v| v.as_f64() as f32).collect();
    for r in 0..4 {
        for c in 2..5 {
            want[r * 6 + c] += 10.0;
        }
    }
    for c in 0..6 {
        want[6 + c] *= -1.0;
    }
    assert_eq!(x.to_vec::<f32>(), want);
    assert_eq!(t.contiguous().to(Device::Cpu).stride(), vec![4, 1]);
    // Mixing devices is PyTorch's error; a 0-dim host tensor joins like a scalar. (Made on
    // the host whatever the default device: `SMELT_DEVICE=cuda` runs this file too.)
    let host = smelt::with_default_device(Device::Cpu, || Tensor::ones(&[4, 6], None));
    let e = x.try_add(&host).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Device, "{e}");
    let two = Tensor::scalar(2.0, DType::F32).to(Device::Cpu);
    assert_eq!(two.device(), Device::Cpu);
    assert_eq!(x.mul(&two).device(), dev);
}

#[test]
fn device_matmuls_and_library_routines_match_the_host() {
    let Some(dev) = gpu() else { return };
    let a = Tensor::from_scalars(&values(12, 1), &[3, 4], DType::F32);
    let b = Tensor::from_scalars(&values(20, 2), &[5, 4], DType::F32);
    let bias = Tensor::from_scalars(&values(5, 3), &[5], DType::F32);
    let mm = |t: &[Tensor]| (t[0].matmul(&t[1].t()) + &t[2]).relu();
    same_on_device(dev, &mm, &[a.clone(), b.clone(), bias.clone()], 0.0);
    for dtype in [DType::F64, DType::F16, DType::BF16, DType::I64] {
        let tol = if matches!(dtype, DType::F16 | DType::BF16) {
            1e-2
        } else {
            0.0
        };
        let ins = [a.to_dtype(dtype), b.to_dtype(dtype)];
        // A transposed output view and a sliced operand: copy kernels around cuBLAS.
        let f = |t: &[Tensor]| t[0].matmul(&t[1].narrow(0, 1, 4).t()).t() * 2.0;
        same_on_device(dev, &f, &ins, tol);
    }
    let x = Tensor::from_scalars(&values(60, 4), &[5, 12], DType::F32);
    let idx = Tensor::new([[0i64, 3, 11], [2, 2, 1]]);
    let routines: Vec<(&str, Box<dyn Fn(&[Tensor]) -> Tensor>)> = vec![
        (
            "gather",
            Box::new(|t| t[0].gather(1, &t[1].expand(&[5, 3]).contiguous())),
        ),
        (
            "index_select",
            Box::new(|t| t[0].index_select(1, &t[1].flatten(0, -1))),
        ),
        ("take", Box::new(|t| t[0].take(&t[1]))),
        ("cumsum", Box::new(|t| t[0].cumsum(1, None))),
        ("cumprod", Box::new(|t| (&t[0] * 0.25).cumprod(0, None))),
        ("argmax", Box::new(|t| t[0].argmax(Some(1), false))),
        ("argmin", Box::new(|t| t[0].argmin(None, false))),
        ("sort", Box::new(|t| t[0].sort(1, true).0)),
        ("sort indices", Box::new(|t| t[0].sort(0, false).1)),
    ];
    for (name, f) in &routines {
        eprintln!("{name}");
        let ins = [x.clone(), idx.narrow(0, 0, 1)];
        same_on_device(dev, f.as_ref(), &ins, 0.0);
    }
    // Advanced indexing: a read and a write with repeated indices (the last write wins).
    let rows = Tensor::new([4i64, 0, 4]);
    let read = |t: &[Tensor]| {
        t[0].try_index(&[TensorIndex::Tensor(t[1].clone())])
            .unwrap()
    };
    same_on_device(dev, &read, &[x.clone(), rows.clone()], 0.0);
    let write = |t: &[Tensor]| {
        let y = t[0].deep_clone();
        let v = Tensor::from_scalars(&values(36, 5), &[3, 12], DType::F32).to(t[0].device());
        y.try_index_put(&[TensorIndex::Tensor(t[1].clone())], Operand::from(v))
            .unwrap();
        y
    };
    same_on_device(dev, &write, &[x.clone(), rows], 0.0);
    // A data-dependent size: a round trip through the host, the result on the device.
    let picked = |t: &[Tensor]| t[0].masked_select(&t[0].gt(0.0));
    same_on_device(dev, &picked, &[x], 0.0);
}
