#!/usr/bin/env bash
# `../shared/tools/anchors/side_by_side.sh` with every smelt row timed twice: as that script
# times it (`smelt bench`, the caches emptied before each repetition) and back to back without
# emptying them (`--warm`), which is how its `bench.py` times PyTorch and the hand C (no flush
# between calls: on a 32 MiB L3, part of a 26 MiB input is still cached at the next call).
# Scratch tooling, never run by CI:
#   cargo build --release
#   BENCH_PYTHON=/path/to/venv/bin/python scripts/side_by_side_warm.sh /tmp/sbs
# Writes OUTDIR/smelt.jsonl, OUTDIR/anchors.jsonl (as side_by_side.sh) and OUTDIR/warm/ (the
# `--warm` rows as smelt.jsonl beside a link to the same anchors), then prints both tables.
set -u
OUTD=$(mkdir -p "${1:?usage: side_by_side_warm.sh OUTDIR}" && cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ANCHORS=$ROOT/../shared/tools/anchors
BIN=$(cd "$(dirname "${SMELT:-$ROOT/target/release/smelt}")" && pwd)/$(basename "${SMELT:-smelt}")
mkdir -p "$OUTD/warm"
ln -sf ../anchors.jsonl "$OUTD/warm/anchors.jsonl"
# The wrapper side_by_side.sh calls as its smelt: the run it asked for on stdout, then (for a
# timed workload) the `--warm` run into warm/smelt.jsonl, with bench.py's 25 repetitions: the
# warm rows then time the same calls of a process as bench.py does (its first call and three
# warm-ups untimed, as `--warm`'s four untimed repetitions, then 25), which matters on a host
# whose last-level cache holds a workload's data only after many calls.
cat > "$OUTD/smelt" <<EOF
#!/usr/bin/env bash
"$BIN" "\$@"
rc=\$?
if [ "\$1" = bench ] && [[ " \$* " == *" --reps "* ]]; then
  args=() prev=
  for a in "\$@"; do
    if [ "\$prev" = --reps ]; then args+=(25); else args+=("\$a"); fi
    prev=\$a
  done
  "$BIN" "\${args[@]}" --warm 2>/dev/null >> "$OUTD/warm/smelt.jsonl"
fi
exit \$rc
EOF
chmod +x "$OUTD/smelt"
SMELT="$OUTD/smelt" "$ANCHORS/side_by_side.sh" "$OUTD"
echo "## caches emptied before each smelt repetition (side_by_side.sh as it is)"
python3 "$ANCHORS/sbs_summary.py" "$OUTD"
echo "## smelt --warm (back to back, as bench.py times PyTorch)"
python3 "$ANCHORS/sbs_summary.py" "$OUTD/warm"
