//! A GPT-2-style pre-norm transformer block, written as a user writes it with smelt's public
//! API: layer norm, one QKV projection split into heads with `view`/`transpose`, causal
//! attention (a `triu` mask, `masked_fill`, softmax, scaled by `1/√d`), the output projection
//! and residual, layer norm, an MLP with tanh GELU and residual. `examples/gpt_block.rs`,
//! `tests/gpt_block.rs` and the `gpt_block` benchmark rows all run this one definition;
//! `scripts/gpt_block.py` is the same block in PyTorch.
//!
//! Weights follow GPT-2's checkpoint layout (`Conv1D`: a projection's weight is
//! `[in, out]`, `y = x @ w + b`) and names (`ln_1.weight`, `attn.c_attn.weight`, …), so a
//! block of a GPT-2 safetensors file loads with its prefix (`h.0.`).

use smelt_frontend::{DType, Error, Result, Tensor};
use std::collections::BTreeMap;

/// The block's sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    pub batch: usize,
    pub seq: usize,
    pub width: usize,
    pub heads: usize,
}

impl Config {
    /// The test's sizes: batch 2, sequence 16, width 64, 4 heads.
    pub const SMALL: Config = Config {
        batch: 2,
        seq: 16,
        width: 64,
        heads: 4,
    };
    /// GPT-2 small's block at batch 8, sequence 256 (the benchmark).
    pub const BENCH: Config = Config {
        batch: 8,
        seq: 256,
        width: 768,
        heads: 12,
    };

    /// Floating-point operations of one forward pass counted as the matrix products' (a
    /// multiply and an add per term): 24·C² per token for the four projections, 4·T·C per
    /// token for the two attention products.
    pub fn flops(&self) -> u64 {
        let (b, t, c) = (self.batch as u64, self.seq as u64, self.width as u64);
        b * t * (24 * c * c + 4 * t * c)
    }
}

/// The names of the block's tensors, in the order their deterministic values are seeded.
pub const NAMES: [&str; 12] = [
    "ln_1.weight",
    "ln_1.bias",
    "attn.c_attn.weight",
    "attn.c_attn.bias",
    "attn.c_proj.weight",
    "attn.c_proj.bias",
    "ln_2.weight",
    "ln_2.bias",
    "mlp.c_fc.weight",
    "mlp.c_fc.bias",
    "mlp.c_proj.weight",
    "mlp.c_proj.bias",
];

/// The shape of weight `name` in a block of width `c`.
fn shape_of(name: &str, c: usize) -> Vec<usize> {
    match name {
        "attn.c_attn.weight" => vec![c, 3 * c],
        "attn.c_attn.bias" => vec![3 * c],
        "attn.c_proj.weight" => vec![c, c],
        "mlp.c_fc.weight" => vec![c, 4 * c],
        "mlp.c_fc.bias" => vec![4 * c],
        "mlp.c_proj.weight" => vec![4 * c, c],
        _ => vec![c],
    }
}

/// The block's weights, by name ([`NAMES`]), all of one dtype.
#[derive(Clone, Debug)]
pub struct Weights {
    pub width: usize,
    pub tensors: BTreeMap<String, Tensor>,
}

/// `n` integers in [-128, 127]: the top byte of murmur3's `fmix32` of `k + seed·0x9E3779B9`.
/// `scripts/gpt_block.py` computes the same.
pub fn hash_values(n: usize, seed: u32) -> impl Iterator<Item = i32> {
    (0..n).map(move |k| {
        let mut h = (k as u32).wrapping_add(seed.wrapping_mul(0x9E37_79B9));
        h ^= h >> 16;
        h = h.wrapping_mul(0x85EB_CA6B);
        h ^= h >> 13;
        h = h.wrapping_mul(0xC2B2_AE35);
        h ^= h >> 16;
        (h >> 24) as i32 - 128
    })
}

/// Deterministic float32 weights for a block of width `c`: projection weights are multiples
/// of 2^-10 in [-1/8, 1/8), biases of 2^-11, layer-norm weights 1 plus a multiple of 2^-9,
/// from [`hash_values`] seeded by each name's place in [`NAMES`] (from 1).
pub fn init(c: usize) -> Weights {
    let tensors = NAMES
        .iter()
        .zip(1u32..)
        .map(|(&name, seed)| {
            let shape = shape_of(name, c);
            let n = shape.iter().product();
            let values: Vec<f32> = hash_values(n, seed)
                .map(|v| {
                    let v = v as f32;
                    if name.starts_with("ln_") && name.ends_with("weight") {
                        1.0 + v / 512.0
                    } else if name.ends_with("weight") {
                        v / 1024.0
                    } else {
                        v / 2048.0
                    }
                })
                .collect();
            (name.to_string(), Tensor::from_vec(values, &shape))
        })
        .collect();
    Weights { width: c, tensors }
}

impl Weights {
    /// The block's tensors from a safetensors file, each named `prefix` + a name of [`NAMES`]
    /// (`""` for a file of one block, `"h.0."` for a GPT-2 checkpoint's first block); every
    /// tensor must be there with the block's shapes and one dtype.
    pub fn load(path: &str, prefix: &str) -> Result<Weights> {
        let mut all = Tensor::try_load_safetensors(path)?;
        let ln = all
            .get(&format!("{prefix}ln_1.weight"))
            .ok_or_else(|| Error::value(format!("{path}: no tensor {prefix}ln_1.weight")))?;
        let c = ln.shape().first().copied().unwrap_or(0);
        let dtype = ln.dtype();
        let mut tensors = BTreeMap::new();
        for name in NAMES {
            let key = format!("{prefix}{name}");
            let t = all
                .remove(&key)
                .ok_or_else(|| Error::value(format!("{path}: no tensor {key}")))?;
            if t.shape() != shape_of(name, c) || t.dtype() != dtype {
                return Err(Error::shape(format!(
                    "{path}: {key} is {:?} {}, a block of width {c} needs {:?} {}",
                    t.shape(),
                    t.dtype().name(),
                    shape_of(name, c),
                    dtype.name()
                )));
            }
            tensors.insert(name.to_string(), t);
        }
        Ok(Weights { width: c, tensors })
    }

    /// The weights converted to `dtype` and realized.
    pub fn to_dtype(&self, dtype: DType) -> Weights {
        let tensors: BTreeMap<String, Tensor> = self
            .tensors
            .iter()
            .map(|(k, t)| (k.clone(), t.to_dtype(dtype)))
            .collect();
        let all: Vec<&Tensor> = tensors.values().collect();
        smelt_frontend::realize(&all).expect("weights on one device realize");
        Weights {
            width: self.width,
            tensors,
        }
    }

    /// The weights' dtype.
    pub fn dtype(&self) -> DType {
        self.w("ln_1.weight").dtype()
    }

    fn w(&self, name: &str) -> &Tensor {
        &self.tensors[name]
    }
}

/// The block on `x` (`[batch, seq, width]`) with `heads` heads: a lazy result, nothing run.
pub fn forward(w: &Weights, x: &Tensor, heads: usize) -> Result<Tensor> {
    let &[b, t, c] = x.shape() else {
        return Err(Error::shape(format!(
            "gpt block: expected x of [batch, seq, width], got {:?}",
            x.shape()
        )));
    };
    if c != w.width || heads == 0 || c % heads != 0 {
        return Err(Error::shape(format!(
            "gpt block: width {c} with {heads} heads and weights of width {}",
            w.width
        )));
    }
    let (b, t, c, nh) = (b as i64, t as i64, c as i64, heads as i64);
    let hd = c / nh;
    let norm = |x: &Tensor, ln: &str| {
        let (wt, bs) = (w.w(&format!("{ln}.weight")), w.w(&format!("{ln}.bias")));
        x.try_layer_norm(&[c as usize], Some(wt), Some(bs), 1e-5)
    };
    let linear = |x: &Tensor, layer: &str| {
        x.try_matmul(w.w(&format!("{layer}.weight")))?
            .try_add(w.w(&format!("{layer}.bias")))
    };

    // Attention.
    let h = norm(x, "ln_1")?;
    let qkv = linear(&h, "attn.c_attn")?;
    let heads_of = |part: &Tensor| part.try_view(&[b, t, nh, hd])?.try_transpose(1, 2);
    let parts = qkv.try_split(c, 2)?;
    let (q, k, v) = (
        heads_of(&parts[0])?,
        heads_of(&parts[1])?,
        heads_of(&parts[2])?,
    );
    let scores = q
        .try_matmul(&k.try_transpose(-2, -1)?)?
        .try_mul(1.0 / (hd as f64).sqrt())?;
    let mask = Tensor::try_ones(&[t, t], Some(DType::Bool))?.try_triu(1)?;
    let att = scores
        .try_masked_fill(&mask, f64::NEG_INFINITY)?
        .try_softmax(-1, None)?;
    let y = att
        .try_matmul(&v)?
        .try_transpose(1, 2)?
        .contiguous()
        .try_view(&[b, t, c])?;
    let x = x.try_add(linear(&y, "attn.c_proj")?)?;

    // MLP.
    let h = norm(&x, "ln_2")?;
    let h = linear(&h, "mlp.c_fc")?.try_gelu("tanh")?;
    x.try_add(linear(&h, "mlp.c_proj")?)
}

/// The seed of [`input`]'s values.
const INPUT_SEED: u32 = 100;

/// A deterministic `[batch, seq, width]` input in `dtype`, realized: multiples of 2^-6 in
/// [-2, 2) from [`hash_values`] (`scripts/gpt_block.py` builds the same for its anchors).
pub fn input(cfg: &Config, dtype: DType) -> Tensor {
    let n = cfg.batch * cfg.seq * cfg.width;
    let values: Vec<f32> = hash_values(n, INPUT_SEED)
        .map(|v| v as f32 / 64.0)
        .collect();
    let x = Tensor::from_vec(values, &[cfg.batch, cfg.seq, cfg.width]).to_dtype(dtype);
    x.realize();
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_values_match_the_python_script() {
        // scripts/gpt_block.py: hash_values(5, 1), hash_values(3, 12).
        assert_eq!(
            hash_values(5, 1).collect::<Vec<_>>(),
            [18, 22, 52, 109, -40]
        );
        assert_eq!(hash_values(3, 12).collect::<Vec<_>>(), [-126, -108, 119]);
    }

    #[test]
    fn forward_refuses_wrong_shapes() {
        let w = init(8);
        let x = Tensor::zeros(&[2, 3, 8], Some(DType::F32));
        assert!(forward(&w, &x, 3).is_err());
        assert!(forward(&w, &x.view(&[6, 8]), 2).is_err());
        let y = forward(&w, &x, 2).expect("valid sizes");
        assert_eq!(y.shape(), [2, 3, 8]);
    }
}
