#!/usr/bin/env python3
"""The GPT-2-style block of `harness/src/gpt.rs` in PyTorch: its test fixture and its anchors.

Scratch tooling, run by hand outside CI; PyTorch is never a project dependency.

    python scripts/gpt_block.py fixture   # writes tests/fixtures/gpt_block.safetensors
    python scripts/gpt_block.py anchor [--batch 8 --seq 256 --width 768 --heads 12]
                                       [--dtype float32|bfloat16] [--reps 7] [--threads N]
                                       [--device cpu|cuda]

`fixture` was run ONCE, with torch 2.15.0 (CPU), to record the committed file: batch 2,
sequence 16, width 64, 4 heads; the input `x` (torch.randn, seed 0), the f32 output `out_f32`
and the output of the same block run in bfloat16 (`out_bf16`: weights and input rounded to
bf16, then PyTorch's bf16 CPU kernels). The weights are not stored: both sides build them with
`init_weights` below, an integer hash that Rust reproduces bit for bit (`gpt::init`), and
every weight is a multiple of 2^-10 that bfloat16 holds exactly (layer norm's weights, 1 +
a multiple of 2^-9, round to bf16 the same way on both sides).

`anchor` times PyTorch eager and torch.compile of the same module, on the same sizes and
weights as `smelt bench gpt_block`, each call on a fresh output; it prints one JSON line per
system with the median ms, GFLOP/s (matmul FLOPs, as the smelt row counts them) and the
output's sum (compare with `cargo run --release --example gpt_block`'s checksum). With
`--device cuda` each call is timed with CUDA events, as `smelt bench --device cuda` times its
realisations, after the same warm-up.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

import numpy as np

MASK32 = 0xFFFFFFFF

# Tensor names and their seeds, as harness/src/gpt.rs lists them (GPT-2's Conv1D layout:
# projection weights are [in, out], y = x @ w + b).
NAMES = [
    "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
    "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
    "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias",
]


def shapes(c):
    return {
        "ln_1.weight": (c,), "ln_1.bias": (c,),
        "attn.c_attn.weight": (c, 3 * c), "attn.c_attn.bias": (3 * c,),
        "attn.c_proj.weight": (c, c), "attn.c_proj.bias": (c,),
        "ln_2.weight": (c,), "ln_2.bias": (c,),
        "mlp.c_fc.weight": (c, 4 * c), "mlp.c_fc.bias": (4 * c,),
        "mlp.c_proj.weight": (4 * c, c), "mlp.c_proj.bias": (c,),
    }


def hash_values(n, seed):
    """Integers in [-128, 127]: the top byte of murmur3's fmix32 of (k + seed·golden)."""
    h = (np.arange(n, dtype=np.uint64) + np.uint64((seed * 0x9E3779B9) & MASK32)) & MASK32
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & MASK32
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & MASK32
    h ^= h >> np.uint64(16)
    return (h >> np.uint64(24)).astype(np.int64) - 128


def init_weights(c):
    """The deterministic weights of `gpt::init` (f32 numpy arrays)."""
    out = {}
    for seed, name in enumerate(NAMES, start=1):
        shape = shapes(c)[name]
        v = hash_values(int(np.prod(shape)), seed).astype(np.float64)
        if name.startswith("ln_") and name.endswith("weight"):
            w = 1.0 + v / 512.0
        elif name.endswith("weight"):
            w = v / 1024.0
        else:
            w = v / 2048.0
        out[name] = w.astype(np.float32).reshape(shape)
    return out


def block_module(torch, c, heads):
    import torch.nn.functional as F

    class Block(torch.nn.Module):
        """GPT-2's pre-norm block, written op by op as harness/src/gpt.rs writes it."""

        def __init__(self, weights):
            super().__init__()
            for name, w in weights.items():
                self.register_buffer(name.replace(".", "_"), w)

        def forward(self, x):
            b, t, _ = x.shape
            hd = c // heads
            h = F.layer_norm(x, (c,), self.ln_1_weight, self.ln_1_bias, 1e-5)
            qkv = h @ self.attn_c_attn_weight + self.attn_c_attn_bias
            q, k, v = qkv.split(c, dim=2)
            q = q.view(b, t, heads, hd).transpose(1, 2)
            k = k.view(b, t, heads, hd).transpose(1, 2)
            v = v.view(b, t, heads, hd).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
            att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
            x = x + (y @ self.attn_c_proj_weight + self.attn_c_proj_bias)
            h = F.layer_norm(x, (c,), self.ln_2_weight, self.ln_2_bias, 1e-5)
            h = F.gelu(h @ self.mlp_c_fc_weight + self.mlp_c_fc_bias, approximate="tanh")
            return x + (h @ self.mlp_c_proj_weight + self.mlp_c_proj_bias)

    return Block


def fixture(torch):
    from safetensors.torch import save_file

    b, t, c, heads = 2, 16, 64, 4
    weights = {k: torch.from_numpy(v) for k, v in init_weights(c).items()}
    torch.manual_seed(0)
    x = torch.randn(b, t, c)
    block = block_module(torch, c, heads)
    with torch.no_grad():
        out = block(weights)(x)
        w16 = {k: v.to(torch.bfloat16) for k, v in weights.items()}
        out16 = block(w16)(x.to(torch.bfloat16))
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures",
                        "gpt_block.safetensors")
    save_file({"x": x, "out_f32": out.contiguous(), "out_bf16": out16.contiguous()}, path,
              metadata={"torch": torch.__version__, "batch": str(b), "seq": str(t),
                        "width": str(c), "heads": str(heads)})
    print(f"wrote {os.path.normpath(path)} (torch {torch.__version__}); "
          f"sum out_f32 {out.sum().item():.6f}, out_bf16 {out16.float().sum().item():.6f}")


def anchor(torch, args):
    b, t, c, heads = args.batch, args.seq, args.width, args.heads
    dtype = getattr(torch, args.dtype)
    dev = torch.device(args.device)
    weights = {k: torch.from_numpy(v).to(dev, dtype) for k, v in init_weights(c).items()}
    # gpt::input: multiples of 2^-6 in [-2, 2), seed 100.
    x = torch.from_numpy((hash_values(b * t * c, 100) / 64.0).astype(np.float32))
    x = x.view(b, t, c).to(dev, dtype)
    flops = b * t * (24 * c * c + 4 * t * c)
    block = block_module(torch, c, heads)(weights).eval()
    systems = [("torch_eager", block), ("torch_compile", torch.compile(block))]
    cuda = dev.type == "cuda"

    def timed(fn):
        if not cuda:
            t0 = time.perf_counter()
            out = fn(x)
            return out, time.perf_counter() - t0
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        out = fn(x)
        e.record()
        e.synchronize()
        return out, s.elapsed_time(e) / 1e3

    for name, fn in systems:
        with torch.no_grad():
            t0 = time.perf_counter()
            out = fn(x)
            if cuda:
                torch.cuda.synchronize()
            cold = time.perf_counter() - t0
            for _ in range(2):
                fn(x)
            times = []
            for _ in range(args.reps):
                out, secs = timed(fn)
                times.append(secs)
        ms = statistics.median(times) * 1e3
        print(json.dumps({
            "workload": "gpt_block" if dtype == torch.float32 else "gpt_block_bf16",
            "system": name, "torch": torch.__version__,
            "device": torch.cuda.get_device_name(dev) if cuda else "cpu",
            "threads": torch.get_num_threads(),
            "median_ms": round(ms, 3), "min_ms": round(min(times) * 1e3, 3),
            "gflops": round(flops / (ms / 1e3) / 1e9, 2), "first_call_ms": round(cold * 1e3, 1),
            "checksum": round(out.float().sum().item(), 4),
        }), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["fixture", "anchor"])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--width", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = p.parse_args()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.what == "fixture":
        fixture(torch)
    else:
        anchor(torch, args)


if __name__ == "__main__":
    sys.exit(main())
