//! A GPT-2-style block (`smelt_harness::gpt`) against PyTorch: `tests/fixtures/gpt_block.safetensors`
//! holds an input and the block's output from torch 2.15 (recorded once by
//! `scripts/gpt_block.py fixture`; the weights are the deterministic `gpt::init`, which the
//! script reproduces bit for bit). Fused and unfused on the cpu backend, on the reference
//! interpreter, under `SMELT_CHECK=1`, in float32 and bfloat16 (against PyTorch's bfloat16 run);
//! with `SMELT_DEVICE=cuda` on a GPU, the same on the device.

use smelt::prelude::*;
use smelt::{Mode, Target, explain, explain_mode, realize_with};
use smelt_harness::gpt::{self, Config, Weights};
use std::collections::BTreeMap;
use std::sync::Once;
mod common;
use common::assert_no_jit_refusals;

fn fixture() -> BTreeMap<String, Tensor> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/gpt_block.safetensors"
    );
    Tensor::load_safetensors(path)
}

/// The fixture's input and expected output in `dtype`, and the block's output on that input
/// (lazy).
fn case(dtype: DType) -> (Tensor, Tensor) {
    let f = fixture();
    let key = if dtype == DType::BF16 {
        "out_bf16"
    } else {
        "out_f32"
    };
    let want = f[key].clone();
    let w = gpt::init(Config::SMALL.width).to_dtype(dtype);
    let x = f["x"].to_dtype(dtype);
    let y = gpt::forward(&w, &x, Config::SMALL.heads).expect("the fixture's sizes");
    (y, want)
}

/// `|got − want| ≤ atol + rtol·|want|` everywhere (PyTorch's `assert_close` rule), or the
/// first element that is not, with the largest error seen.
fn assert_close(got: &Tensor, want: &Tensor, rtol: f32, atol: f32, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}");
    assert_eq!(got.dtype(), want.dtype(), "{what}");
    let g = got.to_dtype(DType::F32).to_vec::<f32>();
    let w = want.to_dtype(DType::F32).to_vec::<f32>();
    let worst = g
        .iter()
        .zip(&w)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(
            (a - b).abs() <= atol + rtol * b.abs(),
            "{what}: element {i}: {a} vs PyTorch {b} (largest error {worst})"
        );
    }
}

/// float32: PyTorch's `assert_close` defaults, the conformance suite's for float32 (smelt's
/// largest error on the fixture is 8.3e-7).
const F32_TOL: (f32, f32) = (1.3e-6, 1e-5);
/// bfloat16: PyTorch's `assert_close` defaults for bfloat16, about two bf16 ulps (smelt's output
/// equals PyTorch's bit for bit on the fixture; a matmul accumulated in another order may round
/// an element the other way).
const BF16_TOL: (f32, f32) = (1.6e-2, 1e-5);

/// Where a block on `y`'s device runs: the cpu backend and the reference interpreter on the
/// host; the device itself under `SMELT_DEVICE=cuda` (the interpreter reads host buffers).
fn targets(y: &Tensor) -> Vec<Target> {
    match y.device() {
        Device::Cpu => vec![Target::Cpu, Target::Reference],
        Device::Cuda(n) => vec![Target::Cuda(n)],
    }
}

#[test]
fn float32_matches_pytorch_fused_unfused_and_on_the_reference() {
    for target in targets(&case(DType::F32).0) {
        for mode in [Mode::Fused, Mode::Unfused] {
            let (y, want) = case(DType::F32);
            realize_with(&[&y], mode, target).expect("realizes");
            let what = format!("f32 {} on {target:?}", mode.name());
            assert_close(&y, &want, F32_TOL.0, F32_TOL.1, &what);
        }
    }
    assert_no_jit_refusals();
}

#[test]
fn bfloat16_matches_pytorch_fused_and_unfused() {
    for mode in [Mode::Fused, Mode::Unfused] {
        let (y, want) = case(DType::BF16);
        realize_with(&[&y], mode, targets(&y)[0]).expect("realizes");
        let what = format!("bf16 {}", mode.name());
        assert_close(&y, &want, BF16_TOL.0, BF16_TOL.1, &what);
    }
    assert_no_jit_refusals();
}

/// `SMELT_CHECK=1` for this whole process from here on: every realisation also runs one
/// kernel per op and each of those kernels on the reference interpreter, and compares.
#[test]
fn both_dtypes_match_pytorch_under_check() {
    static ONCE: Once = Once::new();
    // SAFETY: `set_var` races only with concurrent reads of the environment; the variable is
    // set once, under `Once`, and smelt reads it only while realizing. Other tests of this
    // binary that realize afterwards are checked too, which only adds checks.
    ONCE.call_once(|| unsafe { std::env::set_var("SMELT_CHECK", "1") });
    for (dtype, (rtol, atol)) in [(DType::F32, F32_TOL), (DType::BF16, BF16_TOL)] {
        let (y, want) = case(dtype);
        y.try_realize().expect("passes SMELT_CHECK");
        assert_close(
            &y,
            &want,
            rtol,
            atol,
            &format!("{dtype:?} under SMELT_CHECK"),
        );
    }
    assert_no_jit_refusals();
}

/// Weights saved to a safetensors file and loaded back (under a checkpoint's prefix) give the
/// same block; a file missing a tensor or with a wrong shape is an error naming it.
#[test]
fn weights_load_from_safetensors() {
    let w = gpt::init(Config::SMALL.width);
    let dir = std::env::temp_dir().join(format!("smelt-gpt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("block.safetensors");
    let named: Vec<(String, &Tensor)> = w
        .tensors
        .iter()
        .map(|(k, t)| (format!("h.0.{k}"), t))
        .collect();
    Tensor::save_safetensors(&path, named.iter().map(|(k, t)| (k.as_str(), *t)));
    let p = path.to_str().expect("utf-8 path");
    let loaded = Weights::load(p, "h.0.").expect("a whole block");
    assert_eq!(loaded.width, Config::SMALL.width);
    for (k, t) in &w.tensors {
        assert_eq!(loaded.tensors[k].to_vec::<f32>(), t.to_vec::<f32>(), "{k}");
    }
    let e = Weights::load(p, "").unwrap_err();
    assert!(e.message.contains("no tensor ln_1.weight"), "{e}");
    let missing: Vec<_> = named
        .iter()
        .filter(|(k, _)| k != "h.0.mlp.c_fc.bias")
        .collect();
    Tensor::save_safetensors(&path, missing.iter().map(|(k, t)| (k.as_str(), *t)));
    let e = Weights::load(p, "h.0.").unwrap_err();
    assert!(e.message.contains("no tensor h.0.mlp.c_fc.bias"), "{e}");
    let bad = Tensor::zeros(&[3], Some(DType::F32));
    let wrong = named
        .iter()
        .map(|(k, t)| (k.as_str(), if k == "h.0.ln_2.bias" { &bad } else { *t }));
    Tensor::save_safetensors(&path, wrong);
    let e = Weights::load(p, "h.0.").unwrap_err();
    assert!(e.message.contains("h.0.ln_2.bias is [3]"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The block's four bias adds run inside their products on the cpu backend (`fold_bias`:
/// `matmul_add`, rounded as the two ops), fused, in bfloat16 and in f32; unfused, every
/// product and add is its own step. The outputs of both match PyTorch
/// (`bfloat16_matches_pytorch_fused_and_unfused`).
#[test]
fn biases_fold_into_their_products() {
    let (y, _) = case(DType::BF16);
    let calls = |mode| {
        explain_mode(&y, mode)
            .kernels
            .iter()
            .filter(|k| k.ir.contains("library matmul_add"))
            .count()
    };
    // On a CUDA device products run on cuBLAS and `fold_bias` is off (`explain` says so).
    let folded = match y.device() {
        Device::Cpu => 4,
        Device::Cuda(_) => 0,
    };
    assert_eq!(calls(Mode::Fused), folded);
    assert_eq!(calls(Mode::Unfused), 0);
    // f32 products add their biases in their row blocks on the cpu backend too.
    let (y32, _) = case(DType::F32);
    let f32_calls = explain(&y32)
        .kernels
        .iter()
        .filter(|k| k.ir.contains("library matmul_add"))
        .count();
    assert_eq!(f32_calls, folded);
}

/// What the passes make of the block: fewer kernels fused than unfused, every boundary with
/// its reason, and the fusions this block relies on.
#[test]
fn fused_plan_cuts_the_block_into_few_kernels() {
    let (y, _) = case(DType::F32);
    let fused = explain(&y);
    let unfused = explain_mode(&y, Mode::Unfused);
    assert!(
        fused.kernels.len() * 2 < unfused.kernels.len(),
        "{} fused vs {} unfused kernels",
        fused.kernels.len(),
        unfused.kernels.len()
    );
    assert!(fused.boundaries.iter().all(|b| !b.reason.is_empty()));
}
