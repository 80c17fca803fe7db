//! The benchmark workloads of WORKLOADS.md, built at any scale: `smelt explain`, `smelt bench`
//! and the tests share this one list.

use smelt_frontend::{DType, Generator, Tensor};

/// One workload: its inputs (realized) and the lazy result.
#[derive(Debug)]
pub struct Workload {
    pub name: &'static str,
    pub inputs: Vec<Tensor>,
    pub output: Tensor,
    /// Bytes a perfectly fused kernel moves (each input read once, the output written once);
    /// `None` where the workload is compute-bound.
    pub ideal_bytes: Option<u64>,
}

/// The workload names, in WORKLOADS.md order (memory- and compute-bound programs).
pub const NAMES: &[&str] = &[
    "ew_chain",
    "gelu_tanh",
    "transpose_add",
    "permute_scale",
    "softmax_rows",
    "sum_sq_diff",
    "layernorm",
    "matmul_bias_relu",
];

fn bytes(ts: &[&Tensor]) -> u64 {
    ts.iter()
        .map(|t| (t.numel() * t.dtype().size()) as u64)
        .sum()
}

/// Builds workload `name` with its sizes divided by `shrink` along each dim (1 = WORKLOADS.md).
pub fn build(name: &str, shrink: usize) -> Option<Workload> {
    let s = |n: usize| (n / shrink).max(1);
    let mut g = Generator::new(0x5eed);
    let mut rand = |shape: &[usize]| {
        let t = g.randn(shape, Some(DType::F32));
        t.realize();
        t
    };
    let (inputs, output) = match name {
        "ew_chain" => {
            let (a, b, c) = (
                rand(&[s(4096), s(4096)]),
                rand(&[s(4096), s(4096)]),
                rand(&[s(4096), s(4096)]),
            );
            let y = ((&a * &b + &c).relu() * 0.5) + &a;
            (vec![a, b, c], y)
        }
        "gelu_tanh" => {
            let x = rand(&[s(4096), s(4096)]);
            let inner = (&x + x.pow(3.0) * 0.044715) * 0.7978845608;
            let y = &x * 0.5 * (inner.tanh() + 1.0);
            (vec![x], y)
        }
        "transpose_add" => {
            let (a, b) = (rand(&[s(4096), s(4096)]), rand(&[s(4096), s(4096)]));
            let y = a.t() + &b;
            (vec![a, b], y)
        }
        "permute_scale" => {
            let x = rand(&[s(32), s(64), s(56), s(56)]);
            let y = x.permute(&[0, 2, 3, 1]).contiguous() * 2.0 + 1.0;
            (vec![x], y)
        }
        "softmax_rows" => {
            let x = rand(&[s(4096), s(4096)]);
            let y = x.softmax(-1, None);
            (vec![x], y)
        }
        "sum_sq_diff" => {
            let (a, b) = (rand(&[s(4096), s(4096)]), rand(&[s(4096), s(4096)]));
            let y = (&a - &b).pow(2.0).sum(&[1], false, None);
            (vec![a, b], y)
        }
        "layernorm" => {
            let (x, w, b) = (
                rand(&[s(8192), s(1024)]),
                rand(&[s(1024)]),
                rand(&[s(1024)]),
            );
            let mean = x.mean(&[-1], true, None);
            let var = x.var(&[-1], 0.0, true);
            let y = (&x - &mean) / (var + 1e-5).sqrt() * &w + &b;
            (vec![x, w, b], y)
        }
        "matmul_bias_relu" => {
            let (a, b, bias) = (
                rand(&[s(1024), s(1024)]),
                rand(&[s(1024), s(1024)]),
                rand(&[s(1024)]),
            );
            let y = (a.matmul(&b) + &bias).relu();
            (vec![a, b, bias], y)
        }
        _ => return None,
    };
    let ideal_bytes = match name {
        "matmul_bias_relu" => None,
        _ => Some(bytes(&inputs.iter().collect::<Vec<_>>()) + bytes(&[&output])),
    };
    let name = NAMES.iter().find(|n| **n == name).copied()?;
    Some(Workload {
        name,
        inputs,
        output,
        ideal_bytes,
    })
}
