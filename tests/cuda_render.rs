//! Golden CUDA C for the WORKLOADS.md programs (built with sizes / 16), for one small
//! program per dtype and for multi-output kernels: a refactor of the renderer cannot silently
//! change generated code.
//! Re-bless with `SMELT_BLESS=1 cargo test --test cuda_render`. Blessing writes without
//! comparing, so the change is reviewed in `git diff tests/golden/cuda` before it is committed
//! (docs/testing.md).

use smelt::prelude::*;
use smelt_codegen::cuda::render;
use smelt_codegen::cuda::render::{WARP_ROW_MAX_WIDTH, WARP_ROW_MIN_ROWS};
use smelt_harness::workloads;
use smelt_ir::Kernel;
use smelt_runtime::record::record_kernels;
use std::path::PathBuf;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/cuda")
}

/// The kernels realizing `t` runs (its inputs already realized), with the passes a CUDA
/// target runs (`smelt::device_disables`: no `fold_bias`, whose `matmul_add` calls CUDA
/// leaves to cuBLAS and a kernel).
fn kernels_of(t: &Tensor) -> Vec<Kernel> {
    let off = smelt::device_disables(Device::Cuda(0));
    let realize = || smelt::realize(&[t]);
    let (result, kernels) = record_kernels(|| smelt_passes::with_disabled(off, realize));
    result.unwrap_or_else(|e| panic!("realisation failed: {e}"));
    kernels
}

fn snapshot(kernels: &[Kernel]) -> String {
    let mut s = String::new();
    for (i, k) in kernels.iter().enumerate() {
        let c = render(k);
        let scalars: Vec<String> = c.scalars.iter().map(|(n, v)| format!("{n}={v}")).collect();
        s.push_str(&format!(
            "// kernel {i}: {} grid {} block {}{}\n// scalars: {}\n{}\n",
            k.name,
            c.grid,
            c.block,
            if c.vectorized { " float4" } else { "" },
            scalars.join(" "),
            c.body
        ));
    }
    s
}

/// Compares `actual` with the golden file `name`, or writes it under `SMELT_BLESS=1`.
fn check(name: &str, actual: &str) {
    let path = golden_dir().join(name);
    if std::env::var("SMELT_BLESS").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(golden_dir()).expect("create golden dir");
        if std::fs::read_to_string(&path).ok().as_deref() != Some(actual) {
            std::fs::write(&path, actual).expect("write golden file");
            eprintln!(
                "cuda_render: blessed {}; review `git diff tests/golden/cuda` before committing",
                path.display()
            );
        }
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {} ({e}); run with SMELT_BLESS=1 to create it",
            path.display()
        )
    });
    assert!(
        expected == actual,
        "{name}: rendered CUDA C differs from {}; re-bless with SMELT_BLESS=1 if intended and review the diff.\n--- actual ---\n{actual}",
        path.display()
    );
}

#[test]
fn workloads_render_as_golden_cuda() {
    for name in workloads::NAMES {
        let w = workloads::build(name, 16).expect("known workload");
        let kernels = kernels_of(&w.output);
        assert!(!kernels.is_empty(), "{name}: no kernels");
        check(&format!("{name}.cu"), &snapshot(&kernels));
    }
}

/// One elementwise chain, one reduction and one softmax-like multi-pass row per real dtype.
#[test]
fn every_dtype_renders_as_golden_cuda() {
    for dtype in DType::REAL {
        let a = Tensor::arange(0.0, 12.0, 1.0, Some(DType::I64))
            .reshape(&[3, 4])
            .to_dtype(dtype);
        let b = Tensor::full(&[3, 4], 3, Some(dtype));
        a.realize();
        b.realize();
        let mut kernels = vec![];
        kernels.extend(kernels_of(&(&a * &b + &a)));
        kernels.extend(kernels_of(&a.sum(&[1], false, None)));
        kernels.extend(kernels_of(&a.maximum(&b).to_dtype(DType::F32)));
        if dtype.is_float() {
            kernels.extend(kernels_of(&a.softmax(-1, None)));
        }
        check(&format!("dtype_{}.cu", dtype.name()), &snapshot(&kernels));
    }
}

/// Kernels with several outputs: an elementwise pair through the `float4` path, sibling row
/// sums, a softmax with its row maxima, a row value and the elements it normalises.
#[test]
fn multi_output_kernels_render_as_golden_cuda() {
    let x = Tensor::arange(0.0, 48.0, 1.0, Some(DType::F32)).reshape(&[6, 8]);
    x.realize();
    let together = |outs: Vec<Tensor>| {
        let refs: Vec<&Tensor> = outs.iter().collect();
        let (result, kernels) = record_kernels(|| smelt::realize(&refs));
        result.unwrap_or_else(|e| panic!("realisation failed: {e}"));
        assert_eq!(kernels.len(), 1, "one multi-output kernel");
        assert!(kernels[0].outputs().len() > 1, "{}", kernels[0]);
        kernels
    };
    // Each program's temporaries are dropped before it runs (a tensor still held would be
    // requested, hence stored, too).
    let pair = {
        let m = &x * 2.0;
        vec![&m + 1.0, m.exp()]
    };
    let mut kernels = together(pair);
    let sums = vec![x.sum(&[1], false, None), (&x * &x).sum(&[1], false, None)];
    kernels.extend(together(sums));
    let softmax = vec![x.softmax(-1, None), x.amax(&[1], false)];
    kernels.extend(together(softmax));
    let normalised = {
        let s = x.sum(&[1], true, None);
        vec![&x / &s, s]
    };
    kernels.extend(together(normalised));
    check("multi_output.cu", &snapshot(&kernels));
}

/// The source depends on the structure only, sizes travel as parameters, except for one
/// structural choice sizes make: a row reduction gives each row a warp where rows are narrow
/// (at most `WARP_ROW_MAX_WIDTH`) and many (at least `WARP_ROW_MIN_ROWS`), else a block.
#[test]
fn rendering_is_pure_and_size_independent() {
    let softmax = |shrink| {
        let w = workloads::build("softmax_rows", shrink).expect("workload");
        let k = kernels_of(&w.output).remove(0);
        (k.shape.clone(), render(&k))
    };
    let (small_shape, small) = softmax(16);
    let (large_shape, large) = softmax(4);
    assert_eq!(small_shape, [256, 256]);
    assert_eq!(large_shape, [1024, 1024]);
    assert_eq!(
        small.body, large.body,
        "the source depends on structure only"
    );
    assert_ne!(small.scalars, large.scalars, "sizes travel as parameters");
    assert!(small.body.contains("sm_warp_allreduce(") && !small.body.contains("sm_block_reduce("));
    assert_eq!((small.grid, small.block), (256 / 8, 256));
    let (few_shape, few) = softmax(64);
    assert!(few_shape[0] < WARP_ROW_MIN_ROWS as usize);
    assert!(few.body.contains("sm_block_reduce(") && !few.body.contains("sm_warp_allreduce("));
    assert_eq!((few.grid, few.block), (64, 64));
    let (wide_shape, wide) = softmax(2);
    assert!(wide_shape[1] as u64 > WARP_ROW_MAX_WIDTH);
    assert!(wide.body.contains("sm_block_reduce("));
    assert_eq!(
        render(&kernels_of(&workloads::build("softmax_rows", 16).unwrap().output)[0]),
        small
    );
}

/// Complex kernels: a chain reading a conjugate view (the conjugation folds into the load),
/// a reduction, and real results (`abs`, `real`), per complex dtype.
#[test]
fn complex_dtypes_render_as_golden_cuda() {
    for dtype in [DType::C64, DType::C128] {
        let re = Tensor::arange(0.0, 12.0, 1.0, Some(DType::F64)).reshape(&[3, 4]);
        let im = Tensor::arange(-6.0, 6.0, 1.0, Some(DType::F64)).reshape(&[3, 4]);
        let a = Tensor::complex(&re, &im).to_dtype(dtype);
        let b = Tensor::complex(&im, &re).to_dtype(dtype);
        a.realize();
        b.realize();
        let mut kernels = vec![];
        kernels.extend(kernels_of(&((&a * &b.conj() + 2.0) / &a).exp()));
        kernels.extend(kernels_of(&a.sum(&[1], false, None)));
        kernels.extend(kernels_of(&(a.abs() + b.real())));
        check(&format!("dtype_{}.cu", dtype.name()), &snapshot(&kernels));
    }
}
