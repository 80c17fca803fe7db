//! The benchmark workloads of WORKLOADS.md, built at any scale: `smelt explain`, `smelt bench`
//! and the tests share this one list.

use crate::gpt;
use smelt_frontend::{DType, Generator, Layout, Tensor};

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

/// The workload names, in WORKLOADS.md order (memory- and compute-bound programs), then the
/// random draws of issue 31 (a fill with nothing to read, and dropout fused with its mask), then
/// the sparse × dense product of issue 30.
pub const NAMES: &[&str] = &[
    "ew_chain",
    "gelu_tanh",
    "transpose_add",
    "permute_scale",
    "softmax_rows",
    "sum_sq_diff",
    "layernorm",
    "matmul_bias_relu",
    "rand_fill",
    "dropout",
    "spmm",
];

/// Workloads beyond WORKLOADS.md's list, run only when named (`smelt bench sum_cols`):
/// reductions whose layout is not a contiguous row, an elementwise kernel of two dtypes
/// (type promotion), a normal fill (the distribution with a logarithm and a cosine per value),
/// and a GPT-2-style transformer block (`gpt.rs`: batch 8, sequence 256, width 768, 12 heads)
/// in float32 and bfloat16.
pub const EXTRA_NAMES: &[&str] = &[
    "sum_cols",
    "sum_all",
    "softmax_cols",
    "promote_add",
    "randn_fill",
    "gpt_block",
    "gpt_block_bf16",
];

/// Every workload [`build`] knows: [`NAMES`], then [`EXTRA_NAMES`].
pub fn all_names() -> impl Iterator<Item = &'static str> {
    NAMES.iter().chain(EXTRA_NAMES).copied()
}

/// Bytes a perfectly fused kernel moves for workload `name`: each input read once, `output`
/// written once; `None` for the compute-bound matmul.
pub fn ideal_bytes(name: &str, inputs: &[Tensor], output: &Tensor) -> Option<u64> {
    let bytes = |t: &Tensor| match t.layout() {
        // A sparse operand is read as stored: its indices and values.
        Layout::SparseCoo => {
            let (i, v) = (t.stored_indices(), t.stored_values());
            (i.numel() * i.dtype().size() + v.numel() * v.dtype().size()) as u64
        }
        Layout::Strided => (t.numel() * t.dtype().size()) as u64,
    };
    match name {
        "matmul_bias_relu" | "gpt_block" | "gpt_block_bf16" => None,
        // The generator's state, an int64 [seed, offset], is read too; rand_fill's input only
        // carries the shape and is never read.
        "rand_fill" | "randn_fill" => Some(bytes(output) + 16),
        "dropout" => Some(inputs.iter().map(bytes).sum::<u64>() + bytes(output) + 16),
        _ => Some(inputs.iter().map(bytes).sum::<u64>() + bytes(output)),
    }
}

/// Floating-point operations of workload `name`'s matrix product (a multiply and an add per
/// term); `None` for the memory-bound workloads.
pub fn flops(name: &str, inputs: &[Tensor]) -> Option<u64> {
    match (name, inputs) {
        ("matmul_bias_relu", [a, b, ..]) => {
            let (sa, sb) = (a.shape(), b.shape());
            Some(2 * (sa.first()? * sa.last()? * sb.last()?) as u64)
        }
        ("gpt_block" | "gpt_block_bf16", [x, ..]) => Some(gpt_config(x.shape(), inputs)?.flops()),
        ("spmm", [a, b, ..]) => Some(2 * (a.try_nnz().ok()? * b.shape().last()?) as u64),
        _ => None,
    }
}

/// The program of workload `name` as WORKLOADS.md writes it.
pub fn source(name: &str) -> Option<&'static str> {
    Some(match name {
        "ew_chain" => "relu(a*b + c) * 0.5 + a",
        "gelu_tanh" => "0.5*x*(1+tanh(0.7978845608*(x+0.044715*x^3)))",
        "transpose_add" => "a.t() + b",
        "permute_scale" => "x.permute(0,2,3,1).contiguous()*2+1",
        "softmax_rows" => "softmax(x, dim=-1)",
        "sum_sq_diff" => "((a-b)^2).sum(dim=1)",
        "layernorm" => "(x-mean)/sqrt(var+1e-5)*w+b over the last dim",
        "matmul_bias_relu" => "relu(A@B + bias)",
        "sum_cols" => "x.sum(dim=0)",
        "sum_all" => "x.sum()",
        "softmax_cols" => "softmax(x, dim=0)",
        "promote_add" => "a + b, a float32 and b float64 (promoted to float64)",
        "gpt_block" => "x + mlp(ln_2(x + attn(ln_1(x)))), GPT-2's block, float32",
        "gpt_block_bf16" => "GPT-2's block in bfloat16",
        "rand_fill" => "torch.rand(4096, 4096)",
        "randn_fill" => "torch.randn(4096, 4096)",
        "dropout" => "dropout(x, p=0.1, training=True)",
        "spmm" => "relu(A@B + bias), A sparse COO 4096x4096 at 1% density, B 4096x256",
        _ => return None,
    })
}

/// Builds workload `name` with its sizes divided by `shrink` along each dim (1 = WORKLOADS.md).
pub fn build(name: &str, shrink: usize) -> Option<Workload> {
    let inputs = inputs(name, shrink)?;
    let output = program(name, &inputs)?;
    let ideal_bytes = ideal_bytes(name, &inputs, &output);
    let name = all_names().find(|n| *n == name)?;
    Some(Workload {
        name,
        inputs,
        output,
        ideal_bytes,
    })
}

/// The seed of the random workloads' draws.
const RAND_SEED: u64 = 0x5eed_0031;

/// The realized random inputs of workload `name`.
pub fn inputs(name: &str, shrink: usize) -> Option<Vec<Tensor>> {
    let s = |n: usize| (n / shrink).max(1);
    let mut g = Generator::new(0x5eed);
    let mut rand = |shape: &[usize], dtype: DType| {
        let t = g.randn(shape, Some(dtype));
        t.realize();
        t
    };
    let shapes: Vec<Vec<usize>> = match name {
        "ew_chain" => vec![vec![s(4096), s(4096)]; 3],
        "gelu_tanh" | "softmax_rows" | "sum_cols" | "sum_all" | "softmax_cols" => {
            vec![vec![s(4096), s(4096)]]
        }
        "transpose_add" | "sum_sq_diff" => vec![vec![s(4096), s(4096)]; 2],
        "permute_scale" => vec![vec![s(32), s(64), s(56), s(56)]],
        "layernorm" => vec![vec![s(8192), s(1024)], vec![s(1024)], vec![s(1024)]],
        "matmul_bias_relu" => vec![
            vec![s(1024), s(1024)],
            vec![s(1024), s(1024)],
            vec![s(1024)],
        ],
        "promote_add" => {
            let (a, b) = (vec![s(4096), s(4096)], vec![s(4096), s(4096)]);
            return Some(vec![rand(&a, DType::F32), rand(&b, DType::F64)]);
        }
        // Nothing to read: the input is a stride-0 [4096, 4096] tensor (4 bytes of storage)
        // that gives the program its shape.
        "rand_fill" | "randn_fill" => {
            let shape =
                Tensor::zeros(&[1], Some(DType::F32)).expand(&[s(4096) as i64, s(4096) as i64]);
            shape.realize();
            return Some(vec![shape]);
        }
        "dropout" => vec![vec![s(4096), s(4096)]],
        "gpt_block" | "gpt_block_bf16" => {
            let dtype = match name {
                "gpt_block" => DType::F32,
                _ => DType::BF16,
            };
            let cfg = gpt_bench_config(shrink);
            let w = gpt::init(cfg.width).to_dtype(dtype);
            let mut inputs = vec![gpt::input(&cfg, dtype)];
            inputs.extend(gpt::NAMES.iter().map(|n| w.tensors[*n].clone()));
            return Some(inputs);
        }
        // A coalesced sparse A with 1% of its entries stored (at random places, summed where
        // two draws land on one), a dense B and a bias.
        "spmm" => {
            let (m, k, n) = (s(4096), s(4096), s(256));
            let nnz = (m * k / 100).max(1);
            let mut places = Generator::new(0x5eed_0030);
            let index = Tensor::stack(
                &[
                    places.randint(0, m as i64, &[nnz]),
                    places.randint(0, k as i64, &[nnz]),
                ],
                0,
            );
            let a = Tensor::sparse_coo_tensor(
                &index,
                &rand(&[nnz], DType::F32),
                Some(&[m as i64, k as i64]),
            )
            .coalesce();
            a.realize();
            return Some(vec![a, rand(&[k, n], DType::F32), rand(&[n], DType::F32)]);
        }
        _ => return None,
    };
    Some(shapes.iter().map(|sh| rand(sh, DType::F32)).collect())
}

/// The lazy result of workload `name` on `inputs` (nothing runs); a fresh graph every call.
pub fn program(name: &str, inputs: &[Tensor]) -> Option<Tensor> {
    let x = |i: usize| inputs.get(i).cloned();
    Some(match name {
        "ew_chain" => {
            let (a, b, c) = (x(0)?, x(1)?, x(2)?);
            ((&a * &b + &c).relu() * 0.5) + &a
        }
        "gelu_tanh" => {
            let x = x(0)?;
            let inner = (&x + x.pow(3.0) * 0.044715) * 0.7978845608;
            &x * 0.5 * (inner.tanh() + 1.0)
        }
        "transpose_add" => x(0)?.t() + &x(1)?,
        "permute_scale" => x(0)?.permute(&[0, 2, 3, 1]).contiguous() * 2.0 + 1.0,
        "softmax_rows" => x(0)?.softmax(-1, None),
        "sum_sq_diff" => (&x(0)? - &x(1)?).pow(2.0).sum(&[1], false, None),
        "layernorm" => {
            let (x, w, b) = (x(0)?, x(1)?, x(2)?);
            let mean = x.mean(&[-1], true, None);
            let var = x.var(&[-1], 0.0, true);
            (&x - &mean) / (var + 1e-5).sqrt() * &w + &b
        }
        "matmul_bias_relu" => (x(0)?.matmul(&x(1)?) + &x(2)?).relu(),
        "sum_cols" => x(0)?.sum(&[0], false, None),
        "sum_all" => x(0)?.sum(&[] as &[i64], false, None),
        "softmax_cols" => x(0)?.softmax(0, None),
        "promote_add" => &x(0)? + &x(1)?,
        // Each build draws the same values (a generator of a fixed seed), so every run of a
        // benchmark computes, and is checked against, the same result.
        "rand_fill" => Generator::new(RAND_SEED).rand(x(0)?.shape(), Some(DType::F32)),
        "randn_fill" => Generator::new(RAND_SEED).randn(x(0)?.shape(), Some(DType::F32)),
        "dropout" => {
            let x = x(0)?;
            smelt_frontend::with_generator(&mut Generator::new(RAND_SEED), || x.dropout(0.1, true))
        }
        "gpt_block" | "gpt_block_bf16" => {
            let x = x(0)?;
            let cfg = gpt_config(x.shape(), inputs)?;
            let tensors = gpt::NAMES
                .iter()
                .zip(&inputs[1..])
                .map(|(n, t)| (n.to_string(), t.clone()))
                .collect();
            let w = gpt::Weights {
                width: cfg.width,
                tensors,
            };
            gpt::forward(&w, &x, cfg.heads).ok()?
        }
        "spmm" => (x(0)?.mm(&x(1)?) + &x(2)?).relu(),
        _ => return None,
    })
}

/// The benchmark block's sizes ([`gpt::Config::BENCH`]) with batch, sequence and width
/// divided by `shrink`, and [`gpt_heads`] heads.
fn gpt_bench_config(shrink: usize) -> gpt::Config {
    let c = gpt::Config::BENCH;
    let width = (c.width / shrink).max(1);
    gpt::Config {
        batch: (c.batch / shrink).max(1),
        seq: (c.seq / shrink).max(1),
        width,
        heads: gpt_heads(width),
    }
}

/// GPT-2's heads of 64 dims where the width allows, else one head.
fn gpt_heads(width: usize) -> usize {
    if width.is_multiple_of(64) {
        width / 64
    } else {
        1
    }
}

/// The sizes of a `gpt_block` workload from its input `x` (`[batch, seq, width]`) and its
/// inputs (`x`, then the weights in [`gpt::NAMES`] order).
fn gpt_config(x: &[usize], inputs: &[Tensor]) -> Option<gpt::Config> {
    let &[batch, seq, width] = x else { return None };
    (inputs.len() == 1 + gpt::NAMES.len()).then_some(gpt::Config {
        batch,
        seq,
        width,
        heads: gpt_heads(width),
    })
}

/// What workload `name`'s result is checked against when that is another program than its
/// own: the sparse product against the dense product of `to_dense()`.
pub fn oracle(name: &str, inputs: &[Tensor]) -> Option<Tensor> {
    let x = |i: usize| inputs.get(i).cloned();
    match name {
        "spmm" => Some((x(0)?.to_dense().mm(&x(1)?) + &x(2)?).relu()),
        _ => None,
    }
}
