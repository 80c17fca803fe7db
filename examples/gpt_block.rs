//! A GPT-2-style transformer block end to end (`smelt_harness::gpt`: layer norm, QKV
//! projection, heads by `view`/`transpose`, causal softmax attention, output projection and
//! residual, layer norm, tanh-GELU MLP and residual), in float32 and bfloat16:
//!
//! ```sh
//! cargo run --release --example gpt_block [WEIGHTS.safetensors [PREFIX]] [--small] [--reps N]
//! ```
//!
//! Weights come from a safetensors file in GPT-2's layout (`ln_1.weight`,
//! `attn.c_attn.weight` as `[in, out]`, …, each under PREFIX, e.g. `h.0.` for a GPT-2
//! checkpoint's first block), else from the deterministic `gpt::init`. The input is a fixed
//! hash of [8, 256, width] (`--small`: [2, 16, 64] with 4 heads). Prints, per dtype, the
//! output's checksum (the sum of its elements), the plan `explain` gives (kernel count fused
//! and unfused, each boundary with its reason) and the median time of a forward pass.

use smelt::{DType, Mode, Tensor, explain, explain_mode};
use smelt_harness::gpt::{self, Config, Weights};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    let reps = args
        .iter()
        .position(|a| a == "--reps")
        .and_then(|i| args.get(i + 1)?.parse::<usize>().ok())
        .unwrap_or(5)
        .max(1);
    let positional: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| !a.starts_with("--") && (*i == 0 || args[i - 1] != "--reps"))
        .map(|(_, a)| a)
        .collect();
    let mut cfg = if flag("--small") {
        Config::SMALL
    } else {
        Config::BENCH
    };
    let weights = match positional.first() {
        Some(path) => {
            let prefix = positional.get(1).map_or("", |p| p.as_str());
            match Weights::load(path, prefix) {
                Ok(w) => {
                    println!("weights: {path} (prefix {prefix:?}, width {})", w.width);
                    cfg.width = w.width;
                    cfg.heads = (w.width / 64).max(1);
                    w.to_dtype(DType::F32)
                }
                Err(e) => {
                    eprintln!("gpt_block: {e}");
                    std::process::exit(2);
                }
            }
        }
        None => gpt::init(cfg.width),
    };
    println!(
        "GPT-2-style block: batch {}, sequence {}, width {}, {} heads; {:.2} GFLOP per forward",
        cfg.batch,
        cfg.seq,
        cfg.width,
        cfg.heads,
        cfg.flops() as f64 / 1e9
    );
    for dtype in [DType::F32, DType::BF16] {
        let w = weights.to_dtype(dtype);
        let x = gpt::input(&cfg, dtype);
        let block = || gpt::forward(&w, &x, cfg.heads).expect("the block's sizes");
        let y = block();
        let plan = explain(&y);
        let unfused = explain_mode(&y, Mode::Unfused).kernels.len();
        let t = Instant::now();
        y.realize();
        let first = t.elapsed().as_secs_f64() * 1e3;
        let checksum = checksum(&y);
        let mut times: Vec<f64> = (0..reps)
            .map(|_| {
                let y = block();
                let t = Instant::now();
                y.realize();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let ms = times[times.len() / 2];
        println!(
            "\n{} (batch {}, sequence {}):",
            dtype.name(),
            cfg.batch,
            cfg.seq
        );
        println!("  checksum (sum of the output): {checksum:.4}");
        println!(
            "  {} kernels fused ({unfused} unfused); boundaries:",
            plan.kernels.len()
        );
        for b in &plan.boundaries {
            println!("    {} -> {}: {}", b.producer, b.consumer, b.reason);
        }
        println!(
            "  {ms:.2} ms per forward pass (median of {reps}; first {first:.1} ms, compiling \
             included), {:.2} GFLOP/s",
            cfg.flops() as f64 / (ms / 1e3) / 1e9
        );
    }
}

/// The sum of the output's elements, in f64.
fn checksum(y: &Tensor) -> f64 {
    y.to_dtype(DType::F32)
        .to_vec::<f32>()
        .iter()
        .map(|&v| v as f64)
        .sum()
}
