#!/usr/bin/env bash
# Installs NVRTC (libnvrtc) and ptxas from NVIDIA's PyPI wheels into .tools/cuda (git-ignored),
# so `cargo test --test cuda_compile` can compile every generated kernel without a GPU or a
# CUDA toolkit. Prints the folder to export as SMELT_CUDA_TOOLS. Never fails the caller: without
# network or pip it says so and exits 0, and the test reports it: it fails where SMELT_CUDA_TOOLS
# is set (as .ci/run sets it) and skips with a message where it is not.
set -uo pipefail
cd "$(dirname "$0")/.."
dest=".tools/cuda"
version="12.9.86"
nvrtc="$dest/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
ptxas="$dest/nvidia/cuda_nvcc/bin/ptxas"
if [ -f "$nvrtc" ] && [ -x "$ptxas" ]; then
    echo "cuda tools: present in $dest"
    exit 0
fi
echo "cuda tools: installing nvidia-cuda-nvrtc-cu12 and nvidia-cuda-nvcc-cu12 $version into $dest"
if ! python3 -m pip --version >/dev/null 2>&1; then
    echo "cuda tools: python3 -m pip is not available; cuda_compile fails where SMELT_CUDA_TOOLS asks for the tools"
    exit 0
fi
if ! python3 -m pip install --quiet --disable-pip-version-check --no-deps --upgrade \
    --target "$dest" "nvidia-cuda-nvrtc-cu12==$version" "nvidia-cuda-nvcc-cu12==$version"; then
    echo "cuda tools: pip could not install the wheels (no network?); cuda_compile fails where SMELT_CUDA_TOOLS asks for the tools"
    exit 0
fi
if [ -f "$nvrtc" ] && [ -x "$ptxas" ]; then
    echo "cuda tools: installed in $dest"
else
    echo "cuda tools: the wheels installed but $nvrtc or $ptxas is missing; cuda_compile fails where SMELT_CUDA_TOOLS asks for the tools"
fi
exit 0
