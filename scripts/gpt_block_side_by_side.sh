#!/usr/bin/env bash
# `smelt bench gpt_block` beside PyTorch eager and torch.compile of the same block (same sizes,
# same deterministic weights and input: scripts/gpt_block.py anchor), interleaved ROUNDS times
# (default 1) so the machine's noise hits all alike. Scratch tooling, never run by CI:
#   cargo build --release
#   BENCH_PYTHON=/path/to/venv/bin/python scripts/gpt_block_side_by_side.sh /tmp/gpt
# Writes OUTDIR/smelt.jsonl (smelt bench --json lines) and OUTDIR/torch.jsonl (one line per
# system), each line tagged with its round. WORKLOADS overrides the list
# (default: gpt_block gpt_block_bf16). BF16_SHRINK divides the bfloat16 row's sizes (default 1,
# full size: batch 8, sequence 256, width 768, 12 heads, as the float32 row).
set -u
OUTD=$(mkdir -p "${1:?usage: gpt_block_side_by_side.sh OUTDIR}" && cd "$1" && pwd)
cd "$(dirname "$0")/.."
SMELT=${SMELT:-$PWD/target/release/smelt}
PY=${BENCH_PYTHON:-python3}; ROUNDS=${ROUNDS:-1}; REPS=${REPS:-7}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
for r in $(seq 1 "$ROUNDS"); do
  for wl in ${WORKLOADS:-gpt_block gpt_block_bf16}; do
    dtype=float32; s=1; [ "$wl" = gpt_block_bf16 ] && dtype=bfloat16 && s=${BF16_SHRINK:-1}
    w=$((768 / s)); h=1; [ $((w % 64)) = 0 ] && h=$((w / 64))
    sizes="--batch $((8 / s)) --seq $((256 / s)) --width $w --heads $h"
    echo "[$(date +%H:%M:%S)] r$r $wl smelt ($sizes)"
    "$SMELT" bench "$wl" --shrink "$s" --both --json --reps "$REPS" | sed "s/}$/,\"tag\":\"r$r\"}/" >> "$OUTD/smelt.jsonl"
    echo "[$(date +%H:%M:%S)] r$r $wl torch"
    timeout 900 "$PY" scripts/gpt_block.py anchor --dtype "$dtype" --reps "$REPS" $sizes \
      | sed "s/}$/, \"tag\": \"r$r\"}/" >> "$OUTD/torch.jsonl"
  done
done
echo "[$(date +%H:%M:%S)] done"; cat "$OUTD/smelt.jsonl" "$OUTD/torch.jsonl"
