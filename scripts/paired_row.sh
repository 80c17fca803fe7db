#!/usr/bin/env bash
# One workload, smelt (`--warm`) and torch.compile (with and without huge pages) back to back,
# PAIRS times, so that each pair sees the same phase of a machine whose memory bandwidth moves
# from one minute to the next; prints each pair and how many smelt won. Scratch tooling:
#   BENCH_PYTHON=/path/to/venv/bin/python SMELT=target/release/smelt scripts/paired_row.sh sum_sq_diff 10
set -u
wl=${1:?usage: paired_row.sh WORKLOAD [PAIRS]}; pairs=${2:-10}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${SMELT:-$ROOT/target/release/smelt}; PY=${BENCH_PYTHON:-python3}
ANCHORS=$ROOT/../shared/tools/anchors
export OMP_NUM_THREADS=2
out=$(mktemp -d)
for p in $(seq 1 "$pairs"); do
  "$BIN" bench "$wl" --warm --reps 15 --json 2>/dev/null | grep '"fused"' | sed "s/}$/,\"pair\":$p}/" >> "$out/smelt.jsonl"
  (cd "$ANCHORS" && timeout 300 "$PY" bench.py --system torch_compile --workload "$wl" --tag "p$p" --out "$out/torch.jsonl" >/dev/null 2>>"$out/stderr.log")
  (cd "$ANCHORS" && timeout 300 "$PY" bench.py --system torch_compile --workload "$wl" --thp --tag "p$p" --out "$out/torch_thp.jsonl" >/dev/null 2>>"$out/stderr.log")
done
python3 - "$out" <<'PY'
import json, sys, statistics
d = sys.argv[1]
rows = lambda f: [json.loads(l) for l in open(f"{d}/{f}")]
s = [r["median_ms"] for r in rows("smelt.jsonl")]
t = [r["median_ms"] for r in rows("torch.jsonl")]
h = [r["median_ms"] for r in rows("torch_thp.jsonl")]
for i, (a, b, c) in enumerate(zip(s, t, h), 1):
    print(f"pair {i}: smelt {a:.2f}  torch.compile {b:.2f}  +THP {c:.2f} ms")
# Each torch.compile variant against smelt in the same pair, then the better of the two (the
# minimum of two noisy runs against one of smelt's, which leans towards torch).
both = [min(b, c) for b, c in zip(t, h)]
for name, other in [("torch.compile", t), ("torch.compile + THP", h), ("the better of both", both)]:
    ratios = [o / a for a, o in zip(s, other)]
    won = sum(r > 1 for r in ratios)
    print(f"vs {name}: smelt ahead in {won} of {len(ratios)} pairs, "
          f"median {name} / smelt {statistics.median(ratios):.2f}x")
PY
echo "raw rows: $out"
