//! The optimising middle on the WORKLOADS.md programs: kernel counts fused and unfused, bytes
//! moved equal to the ideal of a perfectly fused kernel, and fused results equal to unfused.

use smelt::workloads::{NAMES, build};
use smelt::{Mode, explain_mode};

const SHRINK: usize = 16;

fn expected_fused(name: &str) -> usize {
    match name {
        "matmul_bias_relu" => 2,
        _ => 1,
    }
}

#[test]
fn fused_kernel_counts_match_the_targets() {
    for name in NAMES {
        let w = build(name, SHRINK).expect("known workload");
        let plan = explain_mode(&w.output, Mode::Fused);
        assert_eq!(plan.kernels.len(), expected_fused(name), "{name}:\n{plan}");
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
            "softmax_rows" => Some(5),
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
            assert_eq!(plan.bytes_moved, ideal, "{name}:\n{plan}");
        }
    }
}

#[test]
fn explain_names_the_rule_at_each_boundary() {
    let w = build("matmul_bias_relu", SHRINK).expect("known workload");
    let plan = smelt::explain(&w.output);
    assert_eq!(plan.boundaries.len(), 1, "{plan}");
    assert!(plan.boundaries[0].reason.contains("library call"), "{plan}");
    let json = plan.to_json("matmul_bias_relu");
    assert!(
        json.starts_with(
            "{\"workload\":\"matmul_bias_relu\",\"mode\":\"fused\",\"kernels\":2,\"bytes_moved\":"
        ),
        "{json}"
    );
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
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-6 * w, "{got:?} vs {want:?}");
    }
}
