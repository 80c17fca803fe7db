#!/usr/bin/env bash
# The hand-fused C yardstick (scripts/handc/kernels.c) next to `smelt bench`, in one run:
#   scripts/handc.sh [REPS] [WORKLOAD...]
# Needs a C compiler with OpenMP (gcc); smelt itself never does. Both sides use two threads
# and 128-bit SIMD; both check their results before timing them. Run it on an idle machine
# and compare rows measured together, never across runs.
set -euo pipefail
cd "$(dirname "$0")/.."
reps="${1:-7}"
shift || true
cc="${CC:-cc}"
mkdir -p target
"$cc" -O2 -mavx2 -mfma -fopenmp -o target/handc scripts/handc/kernels.c -lm
threads="${SMELT_THREADS:-2}"
cargo build --release --quiet
OMP_NUM_THREADS="$threads" target/handc "$reps" "$@"
SMELT_THREADS="$threads" target/release/smelt bench --reps "$reps" "$@"
