#!/bin/bash
# One call on a lent GPU, sized for a 15-minute lease (device side; scratch tooling, not CI).
# Here first: ../shared/tools/gpu/prepare.sh cuda_device matmul gpt_block
# Then the device tool: carry [".gpu"], command `bash scripts/gpu_session.sh [check] [time]`.
#   check  every packed test binary under SMELT_DEVICE=cuda and the conformance suite with
#          SMELT_DEVICE=cuda, all at once (correctness only, so they may share the GPU)
#   time   alone and one after another: smelt info, `smelt bench --both --json --device
#          cuda` (WORKLOADS.md rows, then gpt_block and gpt_block_bf16), the GPT block in
#          PyTorch eager and torch.compile (scripts/gpt_block.py --device cuda) and the
#          PyTorch anchors of .gpu/torch_gpu.py
#   gpt    only the matmul rows of `smelt bench --device cuda` (matmul_bias_relu, gpt_block,
#          gpt_block_bf16), fused and unfused
#   prof   each step of the GPT block timed alone on the device (SMELT_DUMP=timing)
#   ab     the GPT block rows three times with attention's products looped
#          (SMELT_CUBLAS_LOOP_MACS=0) and copied dense (the default), alternated, then
#          PyTorch's block once: the comparison in one run
#   old    this build and an older one (.gpu/smelt_old.xz, packed by scripts/gpu_pack_old.sh
#          REV after prepare.sh) one after the other: the GPT block rows (--both, 15
#          repetitions) and the WORKLOADS.md rows (fused), then PyTorch's block; each JSON line
#          gets a "build" of "new" or the old revision
# Every step has its own time limit; `check time` stays under ten minutes at worst (the
# device tool's limit for one call) and took 4.5 minutes on an H200. Logs go to $OUT.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"; G=.gpu; T0=$(date +%s)
log() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
steps=${*:-check time}
chmod +x $G/bin/*
check() {
  log "== tests and conformance under SMELT_DEVICE=cuda, in parallel"
  rm -rf /tmp/conf /tmp/tests; mkdir -p /tmp/conf /tmp/tests
  pids=()
  for t in $G/bin/t_*; do
    n=$(basename "$t"); filter=; [ "$n" = t_runtime_lib ] && filter=cuda
    SMELT_DEVICE=cuda timeout -k 5 100 "$t" $filter --test-threads 2 > /tmp/tests/$n.out 2>&1 &
    pids+=($!)
  done
  # A file of many programs (each compiles its own kernels) runs as chunks of 105 cases, so
  # that no process outlives the limit.
  for f in $G/conformance/*.jsonl; do
    n=$(basename "$f" .jsonl); mkdir -p /tmp/conf/split; split -l 105 -d "$f" /tmp/conf/split/$n.
    for c in /tmp/conf/split/$n.*; do
      part=$(basename "$c"); mkdir -p /tmp/conf/$part; cp "$c" /tmp/conf/$part/$part.jsonl
      SMELT_DEVICE=cuda timeout -k 5 100 $G/bin/smelt conformance /tmp/conf/$part --verbose \
        > /tmp/conf/$part.out 2>&1 &
      pids+=($!)
    done
  done
  for p in "${pids[@]}"; do wait "$p"; done
  for f in /tmp/tests/*.out; do
    echo "-- $(basename "$f" .out): $(grep -E '^test result' "$f" | tail -1)"
    grep -E '^test .* FAILED$|panicked|^failures:' "$f" | head -12
  done
  for f in /tmp/conf/*.out; do
    echo "$(basename "$f" .out): $(tail -1 "$f")"; grep -E 'FAIL|PANIC|rror' "$f" | head -6
  done
  cat /tmp/conf/*.out | grep -E '^[0-9]+ passed, [0-9]+ failed$' \
    | awk '{p += $1; f += $3} END {print "conformance in all: " p " passed, " f " failed"}'
  cat /tmp/tests/*.out > "$O/tests_cuda.txt"
  cat /tmp/conf/*.out > "$O/conformance_cuda.txt"
}
timing() {
  log "== smelt info"
  timeout -k 5 20 $G/bin/smelt info
  log "== smelt bench --both --json --device cuda"
  timeout -k 5 100 $G/bin/smelt bench --both --json --device cuda 2>&1 | tee "$O/bench_cuda.jsonl"
  log "== smelt bench gpt_block gpt_block_bf16 --both --json --device cuda"
  timeout -k 5 70 $G/bin/smelt bench gpt_block gpt_block_bf16 --both --json --device cuda 2>&1 \
    | tee "$O/bench_gpt_cuda.jsonl"
  log "== the GPT block in PyTorch on the same GPU"
  for d in float32 bfloat16; do
    PYTHONUNBUFFERED=1 timeout -k 5 70 python3 scripts/gpt_block.py anchor --device cuda \
      --dtype $d --reps 20 2>&1 | grep -v -i warn | tee -a "$O/torch_gpt_cuda.jsonl"
  done
  log "== PyTorch anchors (.gpu/torch_gpu.py --compile)"
  PYTHONUNBUFFERED=1 timeout -k 5 100 python3 $G/torch_gpu.py --compile --reps 30 2>&1 \
    | grep -v -i warn | tee "$O/torch_gpu.jsonl"
}
gpt() {
  log "== smelt bench matmul_bias_relu gpt_block gpt_block_bf16 --both --json --device cuda"
  timeout -k 5 100 $G/bin/smelt bench matmul_bias_relu gpt_block gpt_block_bf16 --both --json \
    --device cuda 2>&1 | tee "$O/bench_gpt_cuda.jsonl"
}
prof() {
  log "== SMELT_DUMP=timing: the GPT block's steps, each timed alone on the device"
  for w in gpt_block gpt_block_bf16; do
    SMELT_DUMP=timing timeout -k 5 60 $G/bin/smelt bench $w --device cuda --reps 1 2>&1 \
      | tee "$O/prof_$w.txt" | tail -25
  done
}
ab() {
  log "== GPT block: looped vs dense-copied attention products, alternated, then PyTorch"
  for r in 1 2 3; do
    for macs in 0 default; do
      env=(); [ $macs = 0 ] && env=(SMELT_CUBLAS_LOOP_MACS=0)
      env "${env[@]}" timeout -k 5 60 $G/bin/smelt bench gpt_block gpt_block_bf16 --json \
        --device cuda 2>&1 | sed "s/}$/,\"loop_macs\":\"$macs\",\"round\":$r}/" \
        | tee -a "$O/ab_gpt_cuda.jsonl"
    done
  done
  for d in float32 bfloat16; do
    PYTHONUNBUFFERED=1 timeout -k 5 70 python3 scripts/gpt_block.py anchor --device cuda \
      --dtype $d --reps 20 2>&1 | grep -v -i warn | tee -a "$O/ab_gpt_cuda.jsonl"
  done
}
old() {
  [ -f $G/smelt_old.xz ] || { log "no $G/smelt_old.xz: run scripts/gpu_pack_old.sh REV here"; return; }
  xz -d -k -f $G/smelt_old.xz && chmod +x $G/smelt_old
  local rev; rev=$(cat $G/smelt_old.rev 2>/dev/null || echo old)
  log "== this build against $rev: the GPT block, then the rows, then PyTorch's block"
  for what in "gpt_block gpt_block_bf16 --both --reps 15" \
      "ew_chain gelu_tanh transpose_add permute_scale softmax_rows sum_sq_diff layernorm matmul_bias_relu"; do
    for b in new "$rev"; do
      bin=$G/bin/smelt; [ "$b" = new ] || bin=$G/smelt_old
      # Everything to the log (a row that fails says why there), the JSON rows labelled.
      timeout -k 5 90 $bin bench $what --json --device cuda 2>&1 | tee -a "$O/old_new_cuda.log" \
        | grep '^{' | sed "s/}$/,\"build\":\"$b\"}/" | tee -a "$O/old_new_cuda.jsonl"
      grep -v '^{' "$O/old_new_cuda.log" | grep -i -E 'fail|error|mismatch' | tail -3
    done
  done
  for d in float32 bfloat16; do
    PYTHONUNBUFFERED=1 timeout -k 5 70 python3 scripts/gpt_block.py anchor --device cuda \
      --dtype $d --reps 30 2>&1 | grep '^{' | tee -a "$O/old_new_cuda.jsonl"
  done
}
main() {
  for s in $steps; do case $s in
    check) check ;;
    time) timing ;;
    gpt) gpt ;;
    prof) prof ;;
    ab) ab ;;
    old) old ;;
    *) echo "unknown step $s" ;;
  esac; done
  log "== done"
}
main 2>&1 | tee "$O/log.txt"
