//! The optimising middle on the WORKLOADS.md programs: kernel counts fused and unfused, bytes
//! moved equal to the ideal of a perfectly fused kernel, and fused results equal to unfused.
//! Then multi-output kernels: several tensors realised together, their kernel counts, bytes
//! and values on every backend against the unfused reference run.

use smelt::prelude::{DType, Generator, Tensor};
use smelt::{Device, Target, realize_with};
use smelt::{Explain, Mode, explain_mode};
use smelt_harness::workloads::{NAMES, build};
mod common;
use common::assert_no_jit_refusals;

const SHRINK: usize = 16;

fn expected_fused(name: &str, device: Device) -> usize {
    match (name, device) {
        // On the cpu backend the bias and the relu run inside the product's row blocks
        // (`fold_bias`); CUDA's products run on cuBLAS, then the epilogue kernel.
        ("matmul_bias_relu", Device::Cpu) => 1,
        ("matmul_bias_relu", Device::Cuda(_)) => 2,
        // The library product, then its epilogue.
        ("spmm", _) => 2,
        _ => 1,
    }
}

#[test]
fn fused_kernel_counts_match_the_targets() {
    for name in NAMES {
        let w = build(name, SHRINK).expect("known workload");
        let plan = explain_mode(&w.output, Mode::Fused);
        let want = expected_fused(name, w.output.device());
        assert_eq!(plan.kernels.len(), want, "{name}:\n{plan}");
    }
}

#[test]
fn unfused_runs_one_kernel_per_op() {
    for name in NAMES {
        let w = build(name, SHRINK).expect("known workload");
        let plan = explain_mode(&w.output, Mode::Unfused);
        for k in &plan.kernels {
            assert_eq!(
                k.ops.len(),
                1,
                "{name}: an unfused kernel computes one op\n{plan}"
            );
        }
        let expected = match *name {
            "ew_chain" => Some(5),
            "transpose_add" => Some(1),
            "permute_scale" => Some(3),
            "softmax_rows" => Some(6),
            "sum_sq_diff" => Some(3),
            _ => None,
        };
        if let Some(n) = expected {
            assert_eq!(plan.kernels.len(), n, "{name}\n{plan}");
        }
    }
}

#[test]
fn memory_bound_workloads_move_the_ideal_bytes() {
    for name in NAMES {
        let w = build(name, SHRINK).expect("known workload");
        if let Some(ideal) = w.ideal_bytes {
            let plan = explain_mode(&w.output, Mode::Fused);
            // The SpMM library call stores its product, which the epilogue kernel reads back:
            // the ideal plus that buffer (the output's size) written and read once.
            let boundary = match *name {
                "spmm" => 2 * (w.output.numel() * w.output.dtype().size()) as u64,
                _ => 0,
            };
            assert_eq!(plan.bytes_moved, ideal + boundary, "{name}:\n{plan}");
        }
    }
}

#[test]
fn explain_names_the_rule_at_each_boundary() {
    let w = build("spmm", SHRINK).expect("known workload");
    let plan = smelt::explain(&w.output);
    assert_eq!(plan.boundaries.len(), 1, "{plan}");
    assert!(plan.boundaries[0].reason.contains("library call"), "{plan}");
    let json = plan.to_json("spmm");
    let device = w.output.device().to_string();
    let head = format!(
        "{{\"workload\":\"spmm\",\"mode\":\"fused\",\"device\":\"{device}\",\"kernels\":2,\"bytes_moved\":"
    );
    assert!(json.starts_with(&head), "{json}");
}

#[test]
fn a_copying_reshape_fuses_into_its_consumer() {
    use smelt::prelude::*;
    let x = Tensor::arange(0, 12, 1, Some(DType::F32)).view(&[3, 4]);
    let y = x.t().reshape(&[12]).exp();
    let plan = smelt::explain(&y);
    assert_eq!(plan.kernels.len(), 1, "{plan}");
    let unfused = explain_mode(&y, Mode::Unfused);
    assert_eq!(unfused.kernels.len(), 2, "{unfused}");
    let want: Vec<f32> = [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]
        .iter()
        .map(|&v: &i32| (v as f32).exp())
        .collect();
    let got = y.to_vec::<f32>();
    assert_no_jit_refusals();
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-6 * w, "{got:?} vs {want:?}");
    }
}

// Multi-output kernels: several tensors realised together (`smelt::realize`), planned with
// `smelt::explain_all`, checked on every backend against the unfused reference run.

/// Builds the program's outputs afresh (same data every call).
type Program = fn() -> Vec<Tensor>;

/// Realized random inputs (a draw left lazy would fuse into the programs under test).
fn data(seed: u64, shape: &[usize]) -> Tensor {
    let t = Generator::new(seed).randn(shape, Some(DType::F32));
    t.realize();
    t
}

/// The values of `program`'s outputs realised together in `mode` on `backend`.
fn values(program: Program, mode: Mode, backend: Target) -> Vec<Vec<f64>> {
    let outs = program();
    let refs: Vec<&Tensor> = outs.iter().collect();
    realize_with(&refs, mode, backend)
        .unwrap_or_else(|e| panic!("{} {}: {e}", mode.name(), backend.name()));
    outs.iter()
        .map(|t| t.to_scalars().iter().map(|s| s.as_f64()).collect())
        .collect()
}

/// Asserts that the outputs `got` on `backend` equal `want` (NaN equals NaN) or lie within
/// `1e-6 · (1 + |want|)`, and that the cpu backend compiled every kernel it ran.
fn assert_agree(got: &[Vec<f64>], want: &[Vec<f64>], backend: Target) {
    assert_no_jit_refusals();
    assert_eq!(got.len(), want.len(), "outputs on {}", backend.name());
    for (o, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.len(), w.len(), "output {o} on {}", backend.name());
        for (i, (a, b)) in g.iter().zip(w).enumerate() {
            let close =
                a == b || a.is_nan() && b.is_nan() || (a - b).abs() <= 1e-6 * (1.0 + b.abs());
            assert!(
                close,
                "output {o} element {i} on {}: {a} vs {b}",
                backend.name()
            );
        }
    }
}

/// The fused plan of `program`, after checking its values on every backend against every
/// op run on its own on the reference interpreter.
fn plan_checked(program: Program) -> Explain {
    let want = values(program, Mode::Unfused, Target::Reference);
    for backend in Target::HOST {
        assert_agree(&values(program, Mode::Fused, backend), &want, backend);
    }
    let outs = program();
    smelt::explain_all(&outs.iter().collect::<Vec<_>>())
}

/// An f32 linear layer, `relu(x @ w + b)` with `x` [2, 150, 64] (its batch folds into 300
/// rows, which two or more threads split): on the cpu backend one `matmul_add_relu` call, whose
/// threads add the bias and clamp in their row blocks; its values those of the ops run one by
/// one on the reference interpreter (f64 sums) within f32's error over K = 64, and equal to
/// zero exactly where the reference's are.
#[test]
fn an_f32_linear_layer_and_its_relu_are_one_library_call() {
    let program: Program = || {
        let x = data(7, &[2, 150, 64]);
        let (w, b) = (data(8, &[64, 80]), data(9, &[80]));
        vec![(x.matmul(&w) + &b).relu()]
    };
    let outs = program();
    let plan = smelt::explain_all(&outs.iter().collect::<Vec<_>>());
    if outs[0].device() == Device::Cpu {
        assert_eq!(plan.kernels.len(), 1, "{plan}");
        assert!(
            plan.kernels[0].ir.contains("library matmul_add_relu"),
            "{plan}"
        );
    }
    let want = values(program, Mode::Unfused, Target::Reference);
    for backend in Target::HOST {
        let got = values(program, Mode::Fused, backend);
        for (i, (&a, &b)) in got[0].iter().zip(&want[0]).enumerate() {
            let close = (a - b).abs() <= 1e-5 * (1.0 + b.abs()) && (a == 0.0) == (b == 0.0);
            assert!(close, "element {i} on {}: {a} vs {b}", backend.name());
        }
    }
}

/// Bytes of `n` f32 elements.
fn f32s(n: usize) -> u64 {
    4 * n as u64
}

#[test]
fn outputs_sharing_an_intermediate_are_one_kernel() {
    let plan = plan_checked(|| {
        let a = data(1, &[64, 48]);
        let m = &a * 2.0;
        vec![&m + 1.0, m.exp()]
    });
    assert_eq!(plan.kernels.len(), 1, "{plan}");
    assert_eq!(plan.kernels[0].outputs.len(), 2, "{plan}");
    // `a` read once, `y` and `z` written once; `a*2` stays in registers.
    assert_eq!(plan.bytes_moved, 3 * f32s(64 * 48), "{plan}");
    assert!(plan.boundaries.is_empty(), "{plan}");
}

#[test]
fn sibling_row_reductions_are_one_kernel() {
    let plan = plan_checked(|| {
        let x = data(2, &[32, 40]);
        vec![x.sum(&[1], false, None), (&x * &x).sum(&[1], false, None)]
    });
    assert_eq!(plan.kernels.len(), 1, "{plan}");
    assert_eq!(
        plan.kernels[0].ir.matches("= reduce_sum").count(),
        2,
        "{plan}"
    );
    assert_eq!(plan.bytes_moved, f32s(32 * 40) + 2 * f32s(32), "{plan}");
}

#[test]
fn mean_and_var_of_the_same_rows_are_one_kernel() {
    let plan = plan_checked(|| {
        let x = data(3, &[16, 24]);
        vec![
            x.mean(&[1], false, None),
            x.var(&[1], 1.0, false),
            x.std(&[1], 0.0, false),
        ]
    });
    assert_eq!(plan.kernels.len(), 1, "{plan}");
    assert_eq!(plan.kernels[0].outputs.len(), 3, "{plan}");
    assert_eq!(plan.bytes_moved, f32s(16 * 24) + 3 * f32s(16), "{plan}");
}

#[test]
fn a_requested_intermediate_is_stored_by_the_kernel_that_computes_it() {
    // exp(x) is requested and summed: one kernel stores the row sums and the exps.
    let plan = plan_checked(|| {
        let x = data(4, &[8, 33]);
        let e = x.exp();
        let s = e.sum(&[1], false, None);
        vec![e, s]
    });
    assert_eq!(plan.kernels.len(), 1, "{plan}");
    assert_eq!(plan.bytes_moved, 2 * f32s(8 * 33) + f32s(8), "{plan}");
    // A softmax whose row maxima are requested too.
    let plan = plan_checked(|| {
        let x = data(5, &[8, 33]);
        vec![x.softmax(-1, None), x.amax(&[1], false)]
    });
    assert_eq!(plan.kernels.len(), 1, "{plan}");
    // The requested maxima and the softmax's own are one pass over each row.
    assert_eq!(
        plan.kernels[0].ir.matches("= reduce_max").count(),
        1,
        "{plan}"
    );
}

#[test]
fn a_buffer_a_library_call_reads_is_stored_by_the_kernel_that_computes_it() {
    let plan = plan_checked(|| {
        let x = data(6, &[12, 12]);
        let w = data(7, &[12, 12]);
        let m = &x * 2.0;
        vec![m.exp(), m.matmul(&w)]
    });
    // One kernel stores exp(m) and m; the matmul reads m.
    assert_eq!(plan.kernels.len(), 2, "{plan}");
    let fused = plan.kernels.iter().find(|k| k.outputs.len() == 2);
    assert!(fused.is_some(), "{plan}");
}

#[test]
fn merging_that_would_make_a_cycle_stays_apart() {
    // m feeds the matmul, whose result feeds the kernel that would store m: m stays a kernel
    // of its own.
    let plan = plan_checked(|| {
        let x = data(8, &[12, 12]);
        let w = data(9, &[12, 12]);
        let m = &x * 2.0;
        vec![m.exp() + m.matmul(&w)]
    });
    assert_eq!(plan.kernels.len(), 3, "{plan}");
    assert!(
        plan.boundaries.iter().any(|b| b.reason.contains("cycle")),
        "{plan}"
    );
    // y and z read the same x over the same space, but y → matmul → z: two kernels.
    let plan = plan_checked(|| {
        let x = data(10, &[12, 12]);
        let w = data(11, &[12, 12]);
        let y = x.exp();
        let z = &x + y.matmul(&w);
        vec![y, z]
    });
    assert_eq!(plan.kernels.len(), 3, "{plan}");
    assert!(plan.kernels.iter().all(|k| k.outputs.len() == 1), "{plan}");
}

#[test]
fn outputs_sharing_no_input_stay_apart() {
    // No buffer is read by both: merging would save no memory traffic.
    let plan = plan_checked(|| vec![data(12, &[16, 16]).exp(), data(13, &[16, 16]).exp()]);
    assert_eq!(plan.kernels.len(), 2, "{plan}");
}

#[test]
fn outputs_of_different_dtypes_share_a_kernel() {
    let plan = plan_checked(|| {
        let a = data(14, &[7, 9]);
        vec![a.gt(0.0), a.abs(), a.to_dtype(DType::F16)]
    });
    assert_eq!(plan.kernels.len(), 1, "{plan}");
    assert_eq!(plan.kernels[0].outputs.len(), 3, "{plan}");
}

#[test]
fn in_place_updates_next_to_multi_output_kernels() {
    let plan = plan_checked(|| {
        let x = data(15, &[6, 10]);
        let t = x.deep_clone();
        let u = &t + 1.0;
        t.mul_(2.0);
        let v = t.exp();
        let w = &t + &u;
        t.select(0, 3).add_(u.select(0, 0));
        vec![u, v, w, t.clone(), t.sum(&[1], false, None)]
    });
    assert!(
        plan.kernels.iter().any(|k| k.ir.contains("update from")),
        "{plan}"
    );
    assert!(plan.kernels.iter().any(|k| k.outputs.len() > 1), "{plan}");
}

#[test]
fn large_multi_output_kernels_split_rows_across_threads() {
    // Past the cpu backend's grain, rows of dim 0 run in parallel; every output's stores move
    // along dim 0.
    plan_checked(|| {
        let x = data(16, &[512, 160]);
        let m = &x * 2.0;
        vec![
            &m + 1.0,
            m.exp(),
            x.sum(&[1], false, None),
            (&x * &x).sum(&[1], false, None),
        ]
    });
}

/// Found by a long run of `random_programs_agree_fused_and_unfused`: `simplify` merges var's
/// own `t2 - mean` with the user's identical one, whose product with 1.5 (`t4`, held by a
/// tensor, so stored) feeds row reductions of the merged group around the shared node. That
/// group already stores eight outputs, so `t4` became a kernel of its own, reading the group
/// and read by it: the cycle check of a merged group missed paths that come back into it.
#[test]
fn a_group_that_a_path_leaves_and_reenters_is_not_kept() {
    let run = |mode: Mode, backend: Target| -> Vec<Vec<f64>> {
        let x = Tensor::from_vec(
            (0..24)
                .map(|i| (i as f32 * 0.37).sin())
                .collect::<Vec<f32>>(),
            &[4, 6],
        );
        let t1 = x.tanh();
        let s2 = t1.sum(&[1][..], false, None);
        let t2 = t1.abs();
        let v = t2.var(&[1][..], 1.0, true);
        // Held, not requested: the realisation stores it because a tensor can still read it.
        let t4 = (&t2 - t2.mean(&[1][..], true, None)) * 1.5;
        let t5 = (&t4 - t4.mean(&[1][..], true, None)).relu();
        let s3 = t5.sum(&[1][..], false, None);
        let s4 = t5.exp().sum(&[1][..], false, None);
        let outs = [&s2, &v, &s3, &s4];
        realize_with(&outs, mode, backend)
            .unwrap_or_else(|e| panic!("{} {}: {e}", mode.name(), backend.name()));
        outs.iter()
            .chain([&&t4])
            .map(|t| t.to_scalars().iter().map(|s| s.as_f64()).collect())
            .collect()
    };
    let want = run(Mode::Unfused, Target::Reference);
    for backend in Target::HOST {
        assert_agree(&run(Mode::Fused, backend), &want, backend);
    }
}

/// The cpu backend emits `1 + tanh(u)` and `1 − tanh(u)` as one idiom, 2/(1 + e^(∓2u)), and
/// GELU's tail `(x·½)·(1 + tanh(u))` as x/(1 + e^(−2u))
/// (`codegen/src/cpu/translate/idioms.rs`): in elementwise kernels (GELU's tanh form), a
/// transposed walk, row reductions and softmax's row passes it agrees with every op run on its
/// own. Inputs reach ±9, where tanh saturates and the op-by-op sum cancels.
#[test]
fn one_plus_tanh_idiom_agrees_in_every_kernel_form() {
    plan_checked(|| {
        let x = data(21, &[48, 300]) * 3.0;
        let gelu = &x * 0.5 * ((&x * 0.8).tanh() + 1.0);
        let one = Tensor::full(&[1], 1.0, None);
        let minus = one - x.t().tanh();
        vec![
            gelu.sum(&[1], false, None),
            gelu.softmax(-1, None),
            minus.contiguous(),
            (x.tanh() + 1.0).amax(&[0], false),
            gelu,
        ]
    });
}

/// A row reduction and its prologue and epilogue stay one kernel when the rows' leading dims
/// have size 1 (a batch of one, a single head): layer norm and softmax of `[1, 32, 96]` and
/// `[1, 1, 32, 32]` fuse as they do at `[2, 32, 96]`, and equal the unfused reference.
#[test]
fn rows_with_unit_leading_dims_fuse_whole() {
    let mut g = Generator::new(7);
    for shape in [vec![2usize, 32, 96], vec![1, 32, 96], vec![1, 1, 32, 32]] {
        let x = g.randn(&shape, Some(DType::F32));
        x.realize();
        let n = *shape.last().unwrap();
        let w = Tensor::ones(&[n as i64], Some(DType::F32));
        let ln = || x.layer_norm(&[n], Some(&w), None, 1e-5);
        let sm = || (&x * 0.125).softmax(-1, None);
        for (what, y) in [("layer_norm", ln()), ("softmax", sm())] {
            let plan = explain_mode(&y, Mode::Fused);
            assert_eq!(plan.kernels.len(), 1, "{what} of {shape:?}:\n{plan}");
            let want = if what == "softmax" { sm() } else { ln() };
            realize_with(&[&y], Mode::Fused, Target::Cpu).expect("realizes");
            realize_with(&[&want], Mode::Unfused, Target::Reference).expect("realizes");
            let (a, b) = (y.to_vec::<f32>(), want.to_vec::<f32>());
            for (i, (p, q)) in a.iter().zip(&b).enumerate() {
                assert!(
                    (p - q).abs() <= 1e-6 + 1e-5 * q.abs(),
                    "{what} {shape:?} at {i}: {p} vs {q}"
                );
            }
        }
    }
    assert_no_jit_refusals();
}
