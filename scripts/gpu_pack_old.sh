#!/bin/bash
# Packs a release `smelt` built from REV (default: HEAD~1) into .gpu/smelt_old.xz, so that one
# call on a lent GPU can time that build beside this one (`bash scripts/gpu_session.sh old`).
# Run after ../shared/tools/gpu/prepare.sh, which empties .gpu. Scratch tooling, not CI: the
# build happens in a temporary git worktree with its own target folder (kept for next time).
set -euo pipefail
rev=${1:-HEAD~1}
root=$(git rev-parse --show-toplevel); cd "$root"
[ -d .gpu/bin ] || { echo "run ../shared/tools/gpu/prepare.sh first" >&2; exit 2; }
sha=$(git rev-parse --short "$rev")
tree=$(mktemp -d /tmp/smelt-old-XXXXXX)
git worktree add --detach "$tree" "$sha" >/dev/null
trap 'git worktree remove --force "$tree"' EXIT
# The worktree sits beside no ../shared; the build does not need it.
CARGO_TARGET_DIR=${OLD_TARGET_DIR:-/tmp/smelt-old-target} cargo build --release --bin smelt \
  --manifest-path "$tree/Cargo.toml"
bin=${OLD_TARGET_DIR:-/tmp/smelt-old-target}/release/smelt
cp "$bin" .gpu/smelt_old && strip .gpu/smelt_old
xz -T2 -6 -f .gpu/smelt_old
echo "$sha" > .gpu/smelt_old.rev
ls -la .gpu/smelt_old.xz; du -sh .gpu
